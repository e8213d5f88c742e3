"""Fellegi-Sunter match weights over field comparison levels, trained without labels.

For each field f and agreement level l (:mod:`neardup_solr.pairs.comparisons`):

    m[f][l] = P(level l | the records are the same entity)
    u[f][l] = P(level l | they are not)

A pair's match weight is ``log2(lambda / (1 - lambda)) + sum_f log2(m[f][l_f] / u[f][l_f])`` over the fields it
has on both sides (a missing value adds 0), and its match probability is ``2^w / (1 + 2^w)``. ``lambda`` is the
share of matches among the pairs scored: here the candidate pairs, since only candidates are ever scored.

Training, as Splink does it: u from random pairs of records (nearly all of them non-matches, so their level
frequencies are u), then m and lambda by expectation-maximisation on the candidate pairs. Unlike Splink, the EM
then re-estimates u too (``fix_u=False``, the default), starting from the random pairs' u: the candidates were
chosen for their similarity, so the non-matches among them agree far more often than random pairs do (the same
street, a common surname), and only candidates are ever scored. With u held at the random pairs' values, those
look like matches and EM converges on lambda near 1 (measured on the generated person records: every candidate
a match, precision 0.53).

The EM is written here with numpy rather than taken from Splink: it is twenty lines over the distinct comparison
patterns (a few hundred rows whatever the number of pairs), and scoring one pair must run per lookup on the
online path, where Splink's DuckDB engine (a SQL table per prediction) has no place.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from neardup_solr.errors import InputFormatError, InvalidParameterError
from neardup_solr.pairs.comparisons import MISSING, FieldComparison

log = logging.getLogger(__name__)

MODEL_FORMAT = "neardup-solr fellegi-sunter model"
MODEL_VERSION = 1
# Added to every level's count: a level never seen in training keeps a small probability instead of a zero that
# would make a weight infinite.
PSEUDO_COUNT = 0.5
# Probabilities are clipped to this range before their logarithms are taken.
_FLOOR = 1e-6


@dataclass
class EMResult:
    """How the expectation-maximisation ran: its iterations, whether it converged, lambda at the end."""

    iterations: int
    converged: bool
    lambda_: float


@dataclass
class FellegiSunterModel:
    """A trained model: the comparisons, m and u per field and level, and lambda (the prior among candidates)."""

    comparisons: list[FieldComparison]
    m: list[list[float]]
    u: list[list[float]]
    lambda_: float
    training: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        for c, m, u in zip(self.comparisons, self.m, self.u, strict=True):
            if len(m) != len(c.levels) or len(u) != len(c.levels):
                raise InputFormatError(f"field {c.field!r} ({c.kind}) has {len(c.levels)} levels; the model gives "
                                       f"{len(m)} m and {len(u)} u values: retrain it")
        if not 0.0 < self.lambda_ < 1.0:
            raise InvalidParameterError("lambda_", "between 0 and 1 (exclusive)", self.lambda_)

    def level_weights(self) -> list[np.ndarray]:
        """log2(m / u) of each field's levels."""
        return [np.log2(np.clip(np.asarray(m), _FLOOR, 1.0) / np.clip(np.asarray(u), _FLOOR, 1.0))
                for m, u in zip(self.m, self.u)]

    def match_weights(self, levels: np.ndarray) -> np.ndarray:
        """The match weight (bits) of each row of an (n, fields) level matrix."""
        levels = np.asarray(levels)
        if levels.ndim != 2 or levels.shape[1] != len(self.comparisons):
            raise InvalidParameterError("levels", f"a matrix with one column per field ({len(self.comparisons)})",
                                        levels.shape)
        total = np.full(len(levels), math.log2(self.lambda_ / (1.0 - self.lambda_)))
        for col, weights in enumerate(self.level_weights()):
            column = levels[:, col].astype(np.int64)
            present = column != MISSING
            total[present] += weights[column[present]]
        return total

    def probabilities(self, levels: np.ndarray) -> np.ndarray:
        """The match probability of each row of a level matrix."""
        return 1.0 / (1.0 + np.exp2(-self.match_weights(levels)))

    def to_dict(self) -> dict:
        return {"format": MODEL_FORMAT, "version": MODEL_VERSION,
                "fields": [{"field": c.field, "kind": c.kind, "levels": list(c.levels), "m": m, "u": u}
                           for c, m, u in zip(self.comparisons, self.m, self.u)],
                "lambda": self.lambda_, "training": self.training}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    @classmethod
    def from_dict(cls, data: dict) -> "FellegiSunterModel":
        if not isinstance(data, dict) or data.get("format") != MODEL_FORMAT:
            raise InputFormatError(f"not a {MODEL_FORMAT} (its 'format' is {data.get('format')!r})"
                                   if isinstance(data, dict) else f"not a {MODEL_FORMAT}: a JSON {type(data).__name__}")
        if data.get("version") != MODEL_VERSION:
            raise InputFormatError(f"model version {data.get('version')!r} is not one this release reads "
                                        f"({MODEL_VERSION}): retrain it")
        fields = data["fields"]
        comparisons = [FieldComparison(f["field"], f["kind"]) for f in fields]
        for c, f in zip(comparisons, fields):
            if list(c.levels) != list(f["levels"]):
                raise InputFormatError(f"field {c.field!r}: the model's levels {f['levels']} are not this "
                                            f"release's for kind {c.kind!r} {list(c.levels)}: retrain it")
        return cls(comparisons, [list(map(float, f["m"])) for f in fields],
                   [list(map(float, f["u"])) for f in fields], float(data["lambda"]), data.get("training", {}))

    @classmethod
    def from_json(cls, text: str) -> "FellegiSunterModel":
        return cls.from_dict(json.loads(text))

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json() + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> "FellegiSunterModel":
        return cls.from_json(Path(path).read_text(encoding="utf-8"))


def level_frequencies(levels: np.ndarray, sizes: Sequence[int], weights: np.ndarray | None = None) -> list[list[float]]:
    """Per column, the (weighted) share of each level among the rows where it is not missing, smoothed by
    :data:`PSEUDO_COUNT`."""
    out = []
    w = np.ones(len(levels)) if weights is None else np.asarray(weights, dtype=float)
    for col, size in enumerate(sizes):
        column = levels[:, col].astype(np.int64)
        present = column != MISSING
        counts = np.bincount(column[present], weights=w[present], minlength=size)[:size] + PSEUDO_COUNT
        out.append((counts / counts.sum()).tolist())
    return out


def estimate_u(levels_of_random_pairs: np.ndarray, comparisons: Sequence[FieldComparison]) -> list[list[float]]:
    """u from the levels of random pairs of records (nearly all non-matches)."""
    if len(levels_of_random_pairs) == 0:
        raise InvalidParameterError("random pairs", "at least one, to estimate u from (are there two records?)", 0)
    return level_frequencies(levels_of_random_pairs, [len(c.levels) for c in comparisons])


def _initial_m(comparisons: Sequence[FieldComparison]) -> list[list[float]]:
    # Most matches agree exactly; the rest spread over the other levels, more on the stronger ones.
    out = []
    for c in comparisons:
        n = len(c.levels)
        rest = np.arange(1, n, dtype=float)
        m = np.concatenate([0.1 * rest / rest.sum(), [0.9]]) if n > 1 else np.array([1.0])
        out.append(m.tolist())
    return out


def expectation_maximisation(levels: np.ndarray, comparisons: Sequence[FieldComparison], u: list[list[float]],
                             *, lambda_: float = 0.3, fix_u: bool = False, max_iterations: int = 200,
                             tolerance: float = 1e-6) -> tuple[list[list[float]], list[list[float]], float, EMResult]:
    """m, u and lambda from the levels of candidate pairs, starting from ``u`` (held fixed with ``fix_u``). Runs
    over the distinct rows of ``levels`` with their counts, so its cost does not grow with the number of pairs."""
    if len(levels) == 0:
        raise InvalidParameterError("candidate pairs", "at least one, to train m on", 0)
    patterns, counts = np.unique(np.asarray(levels, dtype=np.int64), axis=0, return_counts=True)
    sizes = [len(c.levels) for c in comparisons]
    m = _initial_m(comparisons)
    present = patterns != MISSING
    safe = np.where(present, patterns, 0)
    iterations, converged = 0, False
    for iterations in range(1, max_iterations + 1):
        log_m = [np.log(np.clip(np.asarray(x), _FLOOR, 1.0)) for x in m]
        log_u = [np.log(np.clip(np.asarray(x), _FLOOR, 1.0)) for x in u]
        # E: the posterior that each pattern is a match.
        log_odds = np.full(len(patterns), math.log(lambda_ / (1.0 - lambda_)))
        for col in range(len(sizes)):
            log_odds += np.where(present[:, col], log_m[col][safe[:, col]] - log_u[col][safe[:, col]], 0.0)
        posterior = 1.0 / (1.0 + np.exp(-np.clip(log_odds, -700, 700)))
        # M: m from the levels of the expected matches, lambda from their number.
        new_m = level_frequencies(patterns, sizes, posterior * counts)
        new_u = u if fix_u else level_frequencies(patterns, sizes, (1.0 - posterior) * counts)
        new_lambda = float(np.clip((posterior * counts).sum() / counts.sum(), _FLOOR, 1.0 - _FLOOR))
        change = max(abs(new_lambda - lambda_), max(float(np.max(np.abs(np.subtract(a, b))))
                                                     for a, b in zip(new_m + new_u, m + u)))
        m, u, lambda_ = new_m, new_u, new_lambda
        if change < tolerance:
            converged = True
            break
    if not converged:
        log.warning("EM stopped after %d iterations without converging (tolerance %g)", iterations, tolerance)
    return m, u, lambda_, EMResult(iterations, converged, lambda_)


def train(comparisons: Sequence[FieldComparison], candidate_levels: np.ndarray, random_levels: np.ndarray,
          **em_options) -> FellegiSunterModel:
    """A model from the levels of candidate pairs (m, u and lambda by EM) and of random pairs (u's start)."""
    random_u = estimate_u(random_levels, comparisons)
    m, u, lambda_, result = expectation_maximisation(candidate_levels, comparisons, random_u, **em_options)
    return FellegiSunterModel(list(comparisons), m, u, lambda_,
                              {"candidate_pairs": int(len(candidate_levels)), "random_pairs": int(len(random_levels)),
                               "em_iterations": result.iterations, "em_converged": result.converged,
                               "u_fixed": bool(em_options.get("fix_u", False)), "random_pairs_u": random_u})
