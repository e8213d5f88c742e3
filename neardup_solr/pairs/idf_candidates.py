"""Candidate pairs by IDF-weighted Jaccard over token sets, in memory: every pair at or above a low similarity.

The record recipe's measure (``docs/records.md``: IDF over words and their 4-grams), computed exactly without
Solr, for record matching over a file (:mod:`neardup_solr.engine.records`). It is a candidate generator: the
threshold is set low for recall, and a field-by-field model decides.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Mapping, Sequence

from neardup_solr.errors import InvalidParameterError

__all__ = ["idf_weights", "weighted_candidates"]


def idf_weights(token_sets: Sequence[set[str]]) -> dict[str, float]:
    """ln(N / document frequency) of each token, over the given sets (a token in every set weighs 0)."""
    df: dict[str, int] = defaultdict(int)
    for tokens in token_sets:
        for t in tokens:
            df[t] += 1
    n = len(token_sets)
    return {t: math.log(n / d) for t, d in df.items()}


def weighted_candidates(left: Sequence[set[str]], right: Sequence[set[str]] | None, weights: Mapping[str, float],
                        low: float) -> dict[tuple[int, int], float]:
    """(i, j) -> IDF-weighted Jaccard of every pair >= ``low``: within ``left`` (i < j) when ``right`` is None,
    else ``left`` x ``right``.

    A pair reaching ``low`` shares one of A's heaviest tokens that together hold more than (1 - low) of A's
    weight (the union weighs at least w(A)), so only those tokens' postings are read: a prefix filter."""
    if not 0.0 < low <= 1.0:
        raise InvalidParameterError("low", "a similarity in (0, 1]", low)
    other = left if right is None else right
    postings: dict[str, list[int]] = defaultdict(list)
    for j, tokens in enumerate(other):
        for t in tokens:
            postings[t].append(j)
    # Verified as shared / (w(A) + w(B) - shared), the totals summed once per set, the size filter first
    # (the similarity is at most the lighter total over the heavier): the intersections are small.
    other_totals = [sum(weights.get(t, 0.0) for t in s) for s in other]
    out: dict[tuple[int, int], float] = {}
    for i, a in enumerate(left):
        total = sum(weights.get(t, 0.0) for t in a)
        rest = total
        seen: set[int] = set()
        for t in sorted(a, key=lambda t: (-weights.get(t, 0.0), t)):
            if rest < low * total - 1e-12:
                break
            seen.update(postings[t])
            rest -= weights.get(t, 0.0)
        for j in seen:
            if right is None and j <= i:
                continue
            total_b = other_totals[j]
            heavier = max(total, total_b)
            if heavier <= 0.0:
                if a == other[j]:
                    out[(i, j)] = 1.0
                continue
            if min(total, total_b) < low * heavier - 1e-12:
                continue
            shared = sum(weights.get(t, 0.0) for t in a & other[j])
            sim = shared / (total + total_b - shared)
            if sim >= low:
                out[(i, j)] = sim
    return out
