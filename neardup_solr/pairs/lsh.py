"""Locality-sensitive hashing by banding MinHash signatures.

A signature of ``b * r`` values is cut into ``b`` bands of ``r`` rows. Each band is hashed to one 64-bit key,
and two documents become candidates when they share the key of at least one band. If the Jaccard similarity
of two documents is ``s``, one MinHash position agrees with probability ``s``, a band with ``s**r`` and at
least one band with::

    P(s) = 1 - (1 - s**r)**b

an S-curve whose steep part sits near ``(1/b)**(1/r)``. ``optimal_params`` picks ``b`` and ``r`` by minimising
the weighted area of false positives (``P`` below the threshold) plus false negatives (``1 - P`` above it).

The keys go to Solr as strings ``"<band>_<hex key>"`` in the multi-valued field ``content_lsh``; the band index
is part of the token (and of the key) because equal values in different bands are no evidence of similarity.
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = [
    "LSHParams",
    "collision_probability",
    "optimal_params",
    "band_keys",
    "band_tokens",
    "extend_keys",
    "extension_positions",
    "curve_table",
    "plot_s_curve",
]

DEFAULT_SIMILARITIES = (0.2, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 1.0)

# Points per side of the threshold for the trapezoid integrals: the error of the areas is far below the
# differences between neighbouring (b, r), and a finer grid only slows down the search.
_GRID = 1001


def collision_probability(s, bands: int, rows: int):
    """Probability ``1 - (1 - s**rows)**bands`` that two documents of Jaccard similarity ``s`` share a band.

    Works on floats and NumPy arrays (element-wise).
    """
    if isinstance(s, np.ndarray):
        return 1.0 - (1.0 - s**rows) ** bands
    return 1.0 - (1.0 - float(s) ** rows) ** bands


@dataclass(frozen=True)
class LSHParams:
    """Banding of a signature: ``bands`` bands of ``rows`` rows each (uses the first ``bands * rows`` values)."""

    bands: int
    rows: int

    def __post_init__(self):
        for name in ("bands", "rows"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
                raise ValueError(f"LSHParams.{name} must be an integer >= 1, got {value!r}")

    @property
    def num_hashes(self) -> int:
        """Signature values the banding uses (``bands * rows``)."""
        return self.bands * self.rows

    @property
    def threshold(self) -> float:
        """Approximate similarity where the S-curve is steepest, ``(1/b)**(1/r)``."""
        return (1.0 / self.bands) ** (1.0 / self.rows)

    def probability(self, s):
        return collision_probability(s, self.bands, self.rows)


def _check_fraction(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def optimal_params(
    threshold: float,
    num_hashes: int,
    false_positive_weight: float = 0.5,
    false_negative_weight: float = 0.5,
) -> LSHParams:
    """The (bands, rows) with ``bands * rows <= num_hashes`` minimising the weighted error areas.

    Error = ``false_positive_weight * integral_0^t P(s) ds + false_negative_weight * integral_t^1 (1 - P(s)) ds``
    with ``t = threshold``. Raise the false-negative weight to miss fewer near-duplicates at the cost of more
    candidates to verify.
    """
    t = _check_fraction("threshold", threshold)
    if not 0.0 <= t <= 1.0:
        raise ValueError(f"threshold must be a Jaccard similarity between 0 and 1, got {threshold!r}")
    if isinstance(num_hashes, bool) or not isinstance(num_hashes, numbers.Integral) or num_hashes < 1:
        raise ValueError(f"num_hashes must be an integer >= 1 (the signature length), got {num_hashes!r}")
    fp = _check_fraction("false_positive_weight", false_positive_weight)
    fn = _check_fraction("false_negative_weight", false_negative_weight)
    if fp < 0 or fn < 0 or fp + fn == 0:
        raise ValueError(
            f"weights must be >= 0 and not both 0, got false_positive_weight={false_positive_weight!r}, "
            f"false_negative_weight={false_negative_weight!r}"
        )
    bands, rows = _optimal_params(t, int(num_hashes), fp, fn)
    return LSHParams(bands, rows)


def recall_params(threshold: float, num_hashes: int, min_recall: float = 0.95) -> LSHParams:
    """The (bands, rows) that finds a pair of similarity ``threshold`` with probability >= ``min_recall`` and,
    among those, lets the fewest dissimilar pairs through (least area under the curve below ``threshold``).

    The error-area choice of :func:`optimal_params` centres the S-curve on the threshold, so a pair exactly
    at the threshold is found less than half the time (b=9, r=13 for 0.8 and 128 values: P(0.8) = 0.40). A
    lookup tool asked for "J >= 0.8" must find those pairs, so indexes choose their bands with this instead.
    """
    t = _check_fraction("threshold", threshold)
    if not 0.0 < t <= 1.0:
        raise ValueError(f"threshold must be in (0, 1], got {threshold!r}")
    if isinstance(num_hashes, bool) or not isinstance(num_hashes, numbers.Integral) or num_hashes < 1:
        raise ValueError(f"num_hashes must be an integer >= 1 (the signature length), got {num_hashes!r}")
    below = np.linspace(0.0, t, _GRID)
    best = None
    for rows in range(1, int(num_hashes) + 1):
        bands = int(num_hashes) // rows  # more bands only raise recall; the FP area is then the smallest per r
        if collision_probability(t, bands, rows) < min_recall:
            continue
        fp_area = float(np.trapezoid(collision_probability(below, bands, rows), below))
        if best is None or fp_area < best[0]:
            best = (fp_area, bands, rows)
    if best is None:  # not reachable at this length: take the highest-recall choice, one row per band
        return LSHParams(int(num_hashes), 1)
    return LSHParams(best[1], best[2])


@functools.lru_cache(maxsize=256)
def _optimal_params(t: float, num_hashes: int, fp_weight: float, fn_weight: float) -> tuple[int, int]:
    below = np.linspace(0.0, t, _GRID)
    above = np.linspace(t, 1.0, _GRID)
    best = (math.inf, 1, 1)
    with np.errstate(divide="ignore", over="ignore", under="ignore", invalid="ignore"):
        for rows in range(1, num_hashes + 1):
            bands = np.arange(1, num_hashes // rows + 1, dtype=np.float64)[:, None]
            # (1 - s**r)**b as exp(b * log1p(-s**r)) evaluates every b of this r in one broadcast.
            miss_below = np.exp(bands * np.log1p(-(below**rows)))
            miss_above = np.exp(bands * np.log1p(-(above**rows)))
            fp_area = np.trapezoid(1.0 - miss_below, below, axis=1)
            fn_area = np.trapezoid(miss_above, above, axis=1)
            error = fp_weight * fp_area + fn_weight * fn_area
            i = int(np.argmin(error))
            if error[i] < best[0]:
                best = (float(error[i]), i + 1, rows)
    return best[1], best[2]


# splitmix64 / Stafford "Mix13" constants: a well-tested 64-bit finaliser, cheap in uint64 NumPy arithmetic.
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix64(x: np.ndarray) -> np.ndarray:
    x = x ^ (x >> np.uint64(30))
    x *= _M1
    x ^= x >> np.uint64(27)
    x *= _M2
    x ^= x >> np.uint64(31)
    return x


def band_keys(signatures: np.ndarray, params: LSHParams) -> np.ndarray:
    """64-bit key of every band of every signature: ``(n, num_hashes)`` uint32 -> ``(n, bands)`` uint64.

    Within a band the values are folded in order (position-sensitive), and each band starts from its own
    seed, so equal values in different bands give different keys. A 1-D signature is treated as one row.
    """
    sigs = np.asarray(signatures)
    if sigs.ndim == 1:
        sigs = sigs[None, :]
    if sigs.ndim != 2:
        raise ValueError(f"signatures must be a (n, num_hashes) array, got shape {sigs.shape}")
    if not np.issubdtype(sigs.dtype, np.integer):
        raise ValueError(f"signatures must hold integers (MinHash values), got dtype {sigs.dtype}")
    if sigs.shape[1] < params.num_hashes:
        raise ValueError(
            f"{params} needs signatures of at least {params.num_hashes} values, got {sigs.shape[1]}; "
            "use optimal_params(threshold, num_hashes) with the signature length"
        )
    n = sigs.shape[0]
    values = sigs[:, : params.num_hashes].astype(np.uint64).reshape(n, params.bands, params.rows)
    with np.errstate(over="ignore"):
        band_seeds = _mix64((np.arange(params.bands, dtype=np.uint64) + np.uint64(1)) * _GOLDEN)
        keys = np.broadcast_to(band_seeds, (n, params.bands)).copy()
        for j in range(params.rows):
            keys = _mix64((keys ^ values[:, :, j]) + _GOLDEN)
    return keys


def extend_keys(keys: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Band keys with one more signature value folded in (the same fold :func:`band_keys` applies per row):
    two keys stay equal only when their documents also agree on ``values``. ``keys`` uint64, ``values`` any
    integer array of the same length; returns a new uint64 array."""
    with np.errstate(over="ignore"):
        return _mix64((np.asarray(keys, dtype=np.uint64) ^ np.asarray(values).astype(np.uint64)) + _GOLDEN)


def extension_positions(band: int, params: LSHParams, num_hashes: int) -> np.ndarray:
    """Signature positions that refine the keys of ``band`` (see ``collection``'s bucket splitting), in the
    order they are used: every position outside the band, starting right after it and wrapping around."""
    start = (band + 1) * params.rows
    return (start + np.arange(num_hashes - params.rows)) % num_hashes


def band_tokens(keys_row) -> list[str]:
    """Solr tokens ``"<band>_<16 hex digits>"`` for the band keys of one document."""
    keys = np.asarray(keys_row, dtype=np.uint64)
    if keys.ndim != 1:
        raise ValueError(f"band_tokens takes the keys of one document (1-D), got shape {keys.shape}")
    return [f"{band}_{key:016x}" for band, key in enumerate(keys.tolist())]


def curve_table(
    params: LSHParams, similarities: Sequence[float] = DEFAULT_SIMILARITIES
) -> list[tuple[float, float]]:
    """``[(similarity, candidate probability), ...]`` for a quick look at an S-curve."""
    return [(float(s), float(collision_probability(float(s), params.bands, params.rows))) for s in similarities]


def plot_s_curve(params: LSHParams, path, threshold: float | None = None) -> Path:
    """Write a PNG of the S-curve of ``params`` to ``path``, shading the false positive/negative areas
    around ``threshold`` (default: ``params.threshold``). Needs matplotlib."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise ImportError(
            "plot_s_curve needs matplotlib, which is not installed: pip install matplotlib "
            "(or pip install 'neardup-solr[plot]')"
        ) from exc
    t = params.threshold if threshold is None else _check_fraction("threshold", threshold)
    s = np.linspace(0.0, 1.0, 501)
    p = collision_probability(s, params.bands, params.rows)

    # Figure + Agg canvas directly: no pyplot global state, no GUI backend picked up from the environment.
    fig = Figure(figsize=(6.4, 4.4))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.plot(s, p, color="tab:blue", label=f"b={params.bands}, r={params.rows}")
    ax.fill_between(s, 0, p, where=s <= t, color="tab:red", alpha=0.25, label="false positives")
    ax.fill_between(s, p, 1, where=s >= t, color="tab:orange", alpha=0.25, label="false negatives")
    ax.axvline(t, color="grey", linestyle="--", label=f"threshold {t:.2f}")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("Jaccard similarity")
    ax.set_ylabel("probability of becoming a candidate")
    ax.set_title(f"LSH S-curve: 1 - (1 - s^{params.rows})^{params.bands}")
    ax.legend(loc="upper left")
    ax.grid(alpha=0.3)
    out = Path(path)
    fig.savefig(out, dpi=100, format="png")
    return out
