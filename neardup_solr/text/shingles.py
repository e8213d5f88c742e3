"""Shingling: a normalised text cut into word or character n-grams and their 32-bit hashes.

Shingle hashes
    Every value is a MurmurHash3_x86_32 (``mmh3``) hash with the shingler's seed. A character shingle is
    ``mmh3.hash(shingle)``. A word shingle is hashed in two steps so that each word is hashed once rather than
    once per shingle it is part of: each word gets ``mmh3.hash(word)``, and the shingle gets ``mmh3.hash`` of
    the little-endian bytes of its words' hashes (position-sensitive, since Murmur folds its blocks in order).
    ``Shingler.hash_shingle`` computes exactly that with plain ``mmh3`` calls, for one shingle string.

    Batches do not call ``mmh3`` per word: Python-level work per word (a function call or a dict lookup
    on a fresh string, ~70 ns) would cost more than all the rest of the pipeline. Instead the texts are
    encoded into one UTF-8 buffer, word (or character shingle) boundaries are found with NumPy, and the same
    MurmurHash3_x86_32 is evaluated for all spans at once in uint32 arithmetic. Single texts use ``mmh3``
    through a bounded cache (cheaper than ~100 NumPy calls on small arrays). The tests check that both paths
    give ``mmh3``'s values. Where the compiled kernel is built, ``batch_hashes`` goes through it (the same
    values; ``neardup_solr.text.kernel``) and the NumPy batch path is the reference it is tested against.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import mmh3
import numpy as np

from neardup_solr.errors import InvalidTextError
from neardup_solr.validation import check_choice, check_int
from neardup_solr.text import kernel
from neardup_solr.text.murmur import _concat_ranges, _murmur3_spans, _murmur3_words, _offsets, _scrambled
from neardup_solr.text.normalizer import DEFAULT_NORMALIZER, Normalizer, _check_str, split_normalized

logger = logging.getLogger(__name__)

_U32 = np.uint32

class _HashCache(dict):
    """str -> ``mmh3.hash(str, seed)``, computed on first lookup, emptied when it reaches ``limit`` entries.

    ``map(cache.__getitem__, words)`` stays in C for hits, and a few thousand words cover most of any text.
    """

    def __init__(self, seed: int, limit: int):
        super().__init__()
        self.seed = seed
        self.limit = limit

    def __missing__(self, key: str) -> int:
        if len(self) >= self.limit:
            logger.debug("shingle hash cache reached %d entries; emptying it", self.limit)
            self.clear()
        value = mmh3.hash(key, self.seed, False)
        self[key] = value
        return value


@dataclass
class ProcessedText:
    """Everything the indexer needs from one text, computed once."""

    normalized: str
    words: list[str]
    shingles: list[str]
    shingle_hashes: np.ndarray = field(repr=False)

    @property
    def first_word(self) -> str:
        """The first word ('' when there is none)."""
        return self.words[0] if self.words else ""

    @property
    def num_words(self) -> int:
        """How many words the normalised text has."""
        return len(self.words)

    @property
    def has_shingles(self) -> bool:
        """False when nothing was left to shingle (empty or punctuation-only text)."""
        return bool(self.shingles)


def distinct_in_order(values: np.ndarray) -> np.ndarray:
    if values.size <= 1:
        return values
    _, first = np.unique(values, return_index=True)
    return values[np.sort(first)]


def hash_tokens(hashes: np.ndarray, modulus: int = 1) -> list[str]:
    """The distinct shingle hashes of one text as tokens (lowercase hex, no leading zeros), first-seen order,
    those 0 modulo ``modulus`` only: the ``shingle_tokens="hash"`` spelling of its shingles."""
    kept = distinct_in_order(np.asarray(hashes, dtype=np.uint32))
    if modulus != 1:
        kept = kept[kept % modulus == 0]
    return list(map(_HEX, kept.tolist()))


def joined_hash_tokens(hashes: np.ndarray, offsets: np.ndarray, modulus: int = 1) -> tuple[list[str], np.ndarray]:
    """:func:`hash_tokens` of every text of a batch (``hashes[offsets[d]:offsets[d+1]]``), each joined by spaces
    (one value of a whitespace-tokenized field), and each text's number of distinct hashes. The compiled kernel
    does it where it is built."""
    if kernel.available():
        return kernel.distinct_hex(hashes, offsets, modulus)
    joined, counts = [], np.empty(len(offsets) - 1, dtype=np.int64)
    for d in range(len(offsets) - 1):
        distinct = distinct_in_order(hashes[offsets[d]:offsets[d + 1]])
        counts[d] = distinct.size
        joined.append(" ".join(hash_tokens(distinct, modulus)))
    return joined, counts


_HEX = "{:x}".format


def raise_for_texts_without_shingles(texts: Sequence[str], counts: np.ndarray) -> None:
    """InvalidTextError naming the first text whose shingle count is 0."""
    empty = np.flatnonzero(counts == 0)
    if empty.size:
        i = int(empty[0])
        raise InvalidTextError(
            f"text at index {i} has no shingles (empty, or only punctuation/control characters): "
            f"{_preview(texts[i])}; drop it or give it some words"
        )


def _preview(text, limit: int = 60) -> str:
    shown = repr(text)
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


class Shingler:
    """Turns a text into shingles and 32-bit shingle hashes.

    ``unit="word"``: n-grams of consecutive words (``ngram`` words each, joined by single spaces).
    ``unit="char"``: k-grams of consecutive characters of the normalised text, spaces included (k = ``ngram``).

    A text with at least one but fewer than ``ngram`` units yields exactly one shingle, the whole normalised
    text, so short texts (names, addresses) stay comparable. A text with nothing left after normalisation has
    no shingles.

    Hash values are ``mmh3``'s with ``seed`` (see the module docstring for how word shingles are hashed).
    ``batch_hashes`` hashes many texts at once in NumPy; single-text methods call ``mmh3`` through a cache of
    at most ``cache_size`` words (or character shingles), emptied when full.
    """

    UNITS = ("word", "char")

    def __init__(self, ngram: int = 3, unit: str = "word", seed: int = 42, cache_size: int = 200_000,
                 normalizer: Normalizer | None = None):
        self.ngram: int = check_int("ngram", ngram, "ngram")
        self.unit: str = check_choice("unit", unit, self.UNITS)
        self.seed: int = check_int("seed", seed, "seed")
        if normalizer is not None and not isinstance(normalizer, Normalizer):
            raise TypeError(f"normalizer must be a Normalizer or None, got {type(normalizer).__name__}")
        self.normalizer: Normalizer = normalizer if normalizer is not None else DEFAULT_NORMALIZER
        self._cache = _HashCache(self.seed, check_int("cache_size", cache_size, minimum=1, maximum=10**8))

    def __repr__(self) -> str:
        return f"Shingler(ngram={self.ngram}, unit={self.unit!r}, seed={self.seed}, normalizer={self.normalizer!r})"

    def __eq__(self, other) -> bool:
        if not isinstance(other, Shingler):
            return NotImplemented
        return (self.ngram, self.unit, self.seed, self.normalizer) == (other.ngram, other.unit, other.seed,
                                                                       other.normalizer)

    def __hash__(self) -> int:
        return hash((self.ngram, self.unit, self.seed, self.normalizer))

    # -- strings -------------------------------------------------------------------------------------------------

    def shingles_of(self, normalized: str, ws: list[str] | None = None) -> list[str]:
        """Distinct shingles of a text already normalised (``ws``: its words, when already split)."""
        n = self.ngram
        grams: Iterable[str]
        if self.unit == "word":
            units = ws if ws is not None else split_normalized(normalized)
            if not units:
                return []
            if len(units) < n:
                return [normalized]
            grams = map(" ".join, zip(*[units[i:] for i in range(n)]))
        else:
            if not normalized:
                return []
            if len(normalized) < n:
                return [normalized]
            grams = (normalized[i : i + n] for i in range(len(normalized) - n + 1))
        return list(dict.fromkeys(grams))

    def shingles(self, text: str) -> list[str]:
        """Distinct shingles of ``text`` in order of first appearance."""
        return self.shingles_of(self.normalizer.normalize(text))

    # -- hashes --------------------------------------------------------------------------------------------------

    def hash_shingle(self, shingle: str) -> int:
        """Hash of one shingle string, the same value ``shingle_hashes`` produces for it (plain ``mmh3``).

        Character shingles: ``mmh3.hash(shingle, seed)``. Word shingles: ``mmh3.hash`` (same seed) of the
        little-endian uint32 ``mmh3.hash(word, seed)`` of its words; the shingle is normalised first, so any
        spelling of it gives the same hash.
        """
        _check_str(shingle)
        if self.unit == "char":
            return mmh3.hash(shingle, self.seed, False)
        ws = self.normalizer.words(shingle)
        if not ws:
            raise InvalidTextError(f"shingle {_preview(shingle)} has no words after normalisation")
        packed = np.array([mmh3.hash(w, self.seed, False) for w in ws], dtype="<u4").tobytes()
        return mmh3.hash(packed, self.seed, False)

    def _hash_prepared(self, prepared: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Shingle hashes (duplicates kept) of texts already through ``normalize`` (or ``_prepare`` for words).

        Returns the concatenated hashes and per-text offsets; a text without shingles gets an empty slice.
        All texts are encoded into one buffer so that hashing costs a fixed number of NumPy calls per batch
        rather than Python work per word.
        """
        lengths = np.fromiter(
            (len(p) if p.isascii() else len(p.encode("utf-8")) for p in prepared), dtype=np.int64, count=len(prepared)
        )
        data = " ".join(prepared).encode("utf-8") + b"\0\0\0\0"
        # Byte offset where each text starts in ``data`` (texts are separated by one space).
        doc_starts = _offsets(lengths + 1)[:-1]
        buf = np.frombuffer(data, dtype=np.uint8, count=len(data) - 4)
        if self.unit == "word":
            return self._hash_words(data, buf, doc_starts, len(prepared))
        return self._hash_chars(data, buf, doc_starts, lengths)

    def _hash_words(self, data: bytes, buf: np.ndarray, doc_starts: np.ndarray, ndocs: int):
        solid = np.zeros(len(buf) + 2, dtype=bool)
        np.not_equal(buf, 32, out=solid[1:-1])
        edges = np.flatnonzero(solid[1:] != solid[:-1])
        word_starts = edges[0::2]
        word_lengths = edges[1::2] - word_starts
        # Every word lies inside its text's byte range, so text d's first word is the first one starting at or
        # after doc_starts[d]: one binary search per text instead of one per word.
        first_word = np.searchsorted(word_starts, doc_starts)
        lengths = np.diff(np.append(first_word, len(word_starts)))
        word_hashes = _murmur3_spans(data, word_starts, word_lengths, self.seed)
        return self._word_shingle_hashes(word_hashes, lengths)

    def _word_shingle_hashes(self, word_hashes: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Word n-gram hashes of texts whose words' hashes lie back to back, ``lengths[d]`` words for text d.

        Returns the concatenated shingle hashes (duplicates kept) and their per-text offsets.
        """
        n = self.ngram
        offsets = _offsets(lengths)
        blocks = _scrambled(word_hashes)
        counts = np.where(lengths >= n, lengths - n + 1, np.minimum(lengths, 1))
        out_offsets = _offsets(counts)
        out = np.empty(int(out_offsets[-1]), dtype=_U32)
        full = np.where(lengths >= n, counts, 0)
        if len(lengths) == 1 and full[0]:
            m = len(blocks) - n + 1
            out[:] = _murmur3_words([blocks[j : j + m] for j in range(n)], self.seed)
        elif full.any():
            m = len(blocks) - n + 1
            # Windows are computed at every word position, then only those that stay inside one text are kept.
            windows = _murmur3_words([blocks[j : j + m] for j in range(n)], self.seed)
            out[_concat_ranges(out_offsets[:-1], full)] = windows[_concat_ranges(offsets[:-1], full)]
        short = np.flatnonzero((lengths > 0) & (lengths < n))
        if short.size:
            # A text shorter than one shingle is one shingle: its k < n word hashes as a k-block key.
            width = lengths[short]
            for k in np.unique(width):
                sel = short[width == k]
                first = offsets[sel]
                out[out_offsets[sel]] = _murmur3_words([blocks[first + j] for j in range(int(k))], self.seed)
        return out, out_offsets

    def _hash_chars(self, data: bytes, buf: np.ndarray, doc_starts: np.ndarray, byte_lengths: np.ndarray):
        k = self.ngram
        # Byte offset of every character: UTF-8 continuation bytes look like 0b10xxxxxx.
        char_pos = np.flatnonzero((buf & 0xC0) != 0x80)
        char_pos = np.append(char_pos, len(buf))
        first_char = np.searchsorted(char_pos, doc_starts)
        nchars = np.searchsorted(char_pos, doc_starts + byte_lengths) - first_char
        counts = np.where(nchars >= k, nchars - k + 1, np.minimum(nchars, 1))
        out_offsets = _offsets(counts)
        span_starts = np.empty(int(out_offsets[-1]), dtype=np.int64)
        span_ends = np.empty_like(span_starts)
        full = np.where(nchars >= k, counts, 0)
        if full.any():
            ci = _concat_ranges(first_char, full)
            dst = _concat_ranges(out_offsets[:-1], full)
            span_starts[dst] = char_pos[ci]
            # A k-shingle ends where the (i+k)-th character starts (the separator or buffer end for the last).
            span_ends[dst] = char_pos[ci + k]
        short = np.flatnonzero((nchars > 0) & (nchars < k))
        span_starts[out_offsets[short]] = doc_starts[short]
        span_ends[out_offsets[short]] = doc_starts[short] + byte_lengths[short]
        return _murmur3_spans(data, span_starts, span_ends - span_starts, self.seed), out_offsets

    def batch_hashes(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Shingle hashes of many texts, concatenated, and the offsets of each text's slice (length n+1).

        Duplicates within a text are kept (signing does not need them removed). Raises InvalidTextError naming
        the first text without shingles.
        """
        if kernel.available():
            hashes, offsets = kernel.hashes(texts, self.kernel_arguments())
        else:
            hashes, offsets = self._numpy_batch_hashes(texts)
        raise_for_texts_without_shingles(texts, np.diff(offsets))
        return hashes, offsets

    def kernel_arguments(self) -> kernel.ShinglerArguments:
        """What the compiled kernel needs to shingle and hash as this shingler does (after the texts)."""
        normalizer = self.normalizer
        # The kernel normalises plain ASCII itself: that is ``prepare`` exactly unless digits are folded.
        return (normalizer.kernel_prepare, normalizer.kernel_islands, not normalizer.fold_digits, self.unit == "word",
                self.ngram, self.seed)

    def _numpy_batch_hashes(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """``batch_hashes`` without the compiled kernel: the reference the kernel is tested against."""
        prepared = []
        prepare, normalize = self.normalizer.prepare, self.normalizer.normalize
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"text at index {i} is a {type(text).__name__}, not a str; decode it first")
            # Character shingles see the spaces, so they need the collapsed text; words only need separators.
            prepared.append(prepare(text) if self.unit == "word" else normalize(text))
        return self._hash_prepared(prepared)

    def _hash_one(self, normalized: str, ws: list[str] | None = None) -> np.ndarray:
        """Shingle hashes (duplicates kept) of one normalised text.

        One text is too small to amortise the ~100 NumPy calls of the batch path, so words (or character
        shingles) go through ``mmh3`` via a bounded cache instead; tests check both paths agree.
        """
        if self.unit == "char":
            k = self.ngram
            if len(normalized) < k:
                grams = [normalized] if normalized else []
            else:
                grams = [normalized[i : i + k] for i in range(len(normalized) - k + 1)]
            return np.fromiter(map(self._cache.__getitem__, grams), dtype=_U32, count=len(grams))
        ws = split_normalized(normalized) if ws is None else ws
        if not ws:
            return np.empty(0, dtype=_U32)
        word_hashes = np.fromiter(map(self._cache.__getitem__, ws), dtype=_U32, count=len(ws))
        return self._word_shingle_hashes(word_hashes, np.array([len(ws)], dtype=np.int64))[0]

    def shingle_hashes(self, text: str) -> np.ndarray:
        """Distinct uint32 hashes of the shingles of ``text``, in order of first appearance."""
        return distinct_in_order(self._hash_one(self.normalizer.normalize(text)))

    def process(self, text: str) -> ProcessedText:
        """Normalised text, words, shingles and shingle hashes of ``text`` in one go.

        Does not raise for texts without shingles: their ``shingles`` is empty and ``has_shingles`` is False.
        """
        normalized = self.normalizer.normalize(text)
        ws = split_normalized(normalized)
        return ProcessedText(
            normalized=normalized,
            words=ws,
            shingles=self.shingles_of(normalized, ws),
            shingle_hashes=distinct_in_order(self._hash_one(normalized, ws)),
        )

