"""Many documents' token sets held compactly: each distinct token once, documents as int32 ordinals into it.

A million person records have about twelve words each but only a few hundred thousand distinct words. As Python
lists of strings they take ~1 KiB a record (every tokenisation makes new string objects); as ordinals, 4 bytes a
token plus the vocabulary once. Weighted runs over a whole collection (``report --similarity idf --method lsh``)
hold every record's tokens from export to verification, so this is what keeps them within a fixed memory budget.
"""

from __future__ import annotations

import math
from array import array
from typing import Iterable, Sequence

import numpy as np

__all__ = ["TokenSets"]


class TokenSets:
    """Documents' distinct tokens, appended one document at a time (:meth:`add`), numbered 0, 1, 2... .

    ``vocabulary[o]`` is the token of ordinal ``o``; :meth:`ordinals` gives a document's ordinals (in first-seen
    order). Memory: 4 bytes a token occurrence, 8 a document, and the vocabulary's strings once.

    >>> sets = TokenSets()
    >>> sets.add(["arts", "deli", "arts"]), sets.add(["deli", "ventura"])
    (0, 1)
    >>> sets.vocabulary, sets.ordinals(1).tolist()
    (['arts', 'deli', 'ventura'], [1, 2])
    """

    def __init__(self) -> None:
        self.vocabulary: list[str] = []
        self._ordinal_of: dict[str, int] | None = {}
        self._ordinals = array("i")
        self._offsets = array("q", [0])

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def add(self, tokens: Iterable[str]) -> int:
        """Append one document's tokens (duplicates counted once); returns its number."""
        ordinal_of, vocabulary = self._ordinal_of, self.vocabulary
        if ordinal_of is None:
            raise RuntimeError("these token sets are sealed: no document can be added any more")
        for token in dict.fromkeys(tokens):
            ordinal = ordinal_of.get(token)
            if ordinal is None:
                ordinal = ordinal_of[token] = len(vocabulary)
                vocabulary.append(token)
            self._ordinals.append(ordinal)
        self._offsets.append(len(self._ordinals))
        return len(self._offsets) - 2

    def seal(self) -> None:
        """Drop the token -> ordinal lookup, which only :meth:`add` needs (a hash table over the whole
        vocabulary: ~70 MB at 900,000 distinct tokens); nothing can be added afterwards."""
        self._ordinal_of = None

    def ordinals(self, document: int) -> np.ndarray:
        """The token ordinals of ``document``."""
        return self.arrays()[0][self._offsets[document] : self._offsets[document + 1]]

    def tokens(self, document: int) -> list[str]:
        """The tokens of ``document``."""
        return [self.vocabulary[o] for o in self.ordinals(document).tolist()]

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """``(ordinals, offsets)``: every document's ordinals back to back (int32) and where each document's
        start (int64, ``len(self) + 1`` entries). Views of the stored buffers: valid until the next :meth:`add`."""
        return (np.frombuffer(self._ordinals, dtype=np.int32) if len(self._ordinals) else np.empty(0, np.int32),
                np.frombuffer(self._offsets, dtype=np.int64))

    def weighted_jaccards(self, a: np.ndarray, b: np.ndarray, weights: Sequence[float]) -> np.ndarray:
        """Weighted Jaccard of documents ``a[i]`` and ``b[i]`` with ``weights[o]`` the weight of ordinal ``o``:
        the same number, to the last bit, as :func:`neardup_solr.pairs.weighted.weighted_jaccard` of their token
        strings (both sum with ``math.fsum``, which does not depend on the order of the terms)."""
        ordinals, offsets = self.arrays()
        starts = offsets.tolist()
        out = np.empty(len(a), dtype=np.float64)
        for n, (i, j) in enumerate(zip(np.asarray(a).tolist(), np.asarray(b).tolist())):
            sa = set(ordinals[starts[i] : starts[i + 1]].tolist())
            sb = set(ordinals[starts[j] : starts[j + 1]].tolist())
            union = math.fsum(weights[o] for o in sa | sb)
            if union <= 0.0:
                out[n] = 1.0 if sa == sb else 0.0
            else:
                out[n] = math.fsum(weights[o] for o in sa & sb) / union
        return out
