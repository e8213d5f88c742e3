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

__all__ = ["WeightedIndex", "idf_weights", "weighted_candidates"]


def idf_weights(token_sets: Sequence[set[str]]) -> dict[str, float]:
    """ln(N / document frequency) of each token, over the given sets (a token in every set weighs 0)."""
    df: dict[str, int] = defaultdict(int)
    for tokens in token_sets:
        for t in tokens:
            df[t] += 1
    n = len(token_sets)
    return {t: math.log(n / d) for t, d in df.items()}


class WeightedIndex:
    """Token sets with their postings and IDF-weighted totals, queried for the sets similar to a new one."""

    def __init__(self, token_sets: Sequence[set[str]], weights: Mapping[str, float]):
        self.weights = weights
        self.sets: list[set[str]] = []
        self.totals: list[float] = []
        self.postings: dict[str, list[int]] = defaultdict(list)
        for tokens in token_sets:
            self.add(tokens)

    def add(self, tokens: set[str]) -> int:
        """Index one more set (weighed with the index's weights); returns its position."""
        j = len(self.sets)
        self.sets.append(tokens)
        self.totals.append(sum(self.weights.get(t, 0.0) for t in tokens))
        for t in tokens:
            self.postings[t].append(j)
        return j

    def query(self, tokens: set[str], low: float, *, after: int = -1,
              unseen_weight: float = 0.0) -> dict[int, float]:
        """position -> IDF-weighted Jaccard of each indexed set (past ``after``) similar to ``tokens`` by at least
        ``low``. ``unseen_weight`` is the weight of a token no indexed set has (a new record's own).

        A set reaching ``low`` shares one of the heaviest tokens that together hold more than (1 - low) of the
        query's weight (the union weighs at least that), so only those tokens' postings are read: a prefix
        filter. Verified as shared / (w(A) + w(B) - shared), the size filter first (the similarity is at most
        the lighter total over the heavier): the intersections are small."""
        if not 0.0 < low <= 1.0:
            raise InvalidParameterError("low", "a similarity in (0, 1]", low)
        w = self.weights

        def weight(t: str) -> float:
            return w.get(t, unseen_weight)

        total = sum(weight(t) for t in tokens)
        rest = total
        seen: set[int] = set()
        for t in sorted(tokens, key=lambda t: (-weight(t), t)):
            if rest < low * total - 1e-12:
                break
            seen.update(self.postings.get(t, ()))
            rest -= weight(t)
        out: dict[int, float] = {}
        for j in seen:
            if j <= after:
                continue
            total_b = self.totals[j]
            heavier = max(total, total_b)
            if heavier <= 0.0:
                if tokens == self.sets[j]:
                    out[j] = 1.0
                continue
            if min(total, total_b) < low * heavier - 1e-12:
                continue
            shared = sum(weight(t) for t in tokens & self.sets[j])
            sim = shared / (total + total_b - shared)
            if sim >= low:
                out[j] = sim
        return out


def weighted_candidates(left: Sequence[set[str]], right: Sequence[set[str]] | None, weights: Mapping[str, float],
                        low: float) -> dict[tuple[int, int], float]:
    """(i, j) -> IDF-weighted Jaccard of every pair >= ``low``: within ``left`` (i < j) when ``right`` is None,
    else ``left`` x ``right`` (:meth:`WeightedIndex.query`)."""
    index = WeightedIndex(left if right is None else right, weights)
    out: dict[tuple[int, int], float] = {}
    for i, tokens in enumerate(left):
        for j, sim in index.query(tokens, low, after=i if right is None else -1).items():
            out[(i, j)] = sim
    return out
