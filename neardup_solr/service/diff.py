"""A word-level diff of two texts for people: which words of the query a candidate lacks (deletions) and which
it adds (insertions).

Words are compared by their normalised form (:func:`neardup_solr.text.normalize`: case, punctuation and HTML
entities do not count, as they do not count for the similarity), and shown as the texts spell them.
"""

from __future__ import annotations

from difflib import SequenceMatcher
from typing import NamedTuple

from neardup_solr.text import normalize


class Segment(NamedTuple):
    """A run of words: ``op`` is ``equal``, ``delete`` (in the query, not the candidate) or ``insert`` (in the
    candidate, not the query)."""

    op: str
    text: str


def word_diff(query: str, candidate: str) -> list[Segment]:
    """The candidate's words against the query's, as segments in reading order."""
    a, b = query.split(), candidate.split()
    matcher = SequenceMatcher(None, [normalize(w) for w in a], [normalize(w) for w in b], autojunk=False)
    out: list[Segment] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            out.append(Segment("equal", " ".join(b[j1:j2])))
            continue
        if op in ("delete", "replace"):
            out.append(Segment("delete", " ".join(a[i1:i2])))
        if op in ("insert", "replace"):
            out.append(Segment("insert", " ".join(b[j1:j2])))
    return out
