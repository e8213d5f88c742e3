"""Weighted Jaccard of token sets: ``sum(w in A & B) / sum(w in A | B)`` (write-up 001's token boosts, made
exact). The weights come from anywhere; from the index, :class:`neardup_solr.solr.idf.IdfWeights`."""

from __future__ import annotations

import math
from typing import Iterable, Mapping

__all__ = ["weighted_jaccard"]


def weighted_jaccard(a: Iterable[str], b: Iterable[str], weight: Mapping[str, float]) -> float:
    """Weighted Jaccard of two token sets; 1.0 for two sets of zero total weight that are equal."""
    sa, sb = set(a), set(b)
    # fsum is exact, so the result does not depend on set iteration order (which PYTHONHASHSEED changes):
    # a resumed run, another process, must give the same similarities to the last bit as a clean one.
    union = math.fsum(weight.get(t, 0.0) for t in sa | sb)
    if union <= 0.0:
        return 1.0 if sa == sb else 0.0
    return math.fsum(weight.get(t, 0.0) for t in sa & sb) / union
