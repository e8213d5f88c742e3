"""Small NumPy helpers shared by the all-pairs and collection code."""

from __future__ import annotations

from typing import Callable

import numpy as np


def sorted_distinct(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)`` by sorting: NumPy 2.3's hash-based unique measured 2.7 µs an element on shingle
    keys (1.9 s for 200 long documents, against 0.04 s to sort them)."""
    values = np.sort(values)
    if values.size < 2:
        return values
    return values[np.r_[True, values[1:] != values[:-1]]]


def concat_ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``concatenate([arange(s, s + c) for s, c in zip(starts, counts)])`` without the Python loop."""
    firsts = np.cumsum(counts) - counts
    return np.arange(int(counts.sum()), dtype=np.int64) + np.repeat(starts - firsts, counts)


def run_pairs(starts: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of positions ``(p, q)``, ``p < q``, inside each run ``[start, start + size)``: run by run, ``p``
    ascending, then ``q`` ascending (the order of a double loop over each run)."""
    starts = np.asarray(starts, dtype=np.int64)
    sizes = np.asarray(sizes, dtype=np.int64)
    with_followers = np.maximum(sizes - 1, 0)
    members = concat_ranges(starts, with_followers)
    offsets = concat_ranges(np.zeros_like(starts), with_followers)
    followers = np.repeat(sizes, with_followers) - 1 - offsets
    a = np.repeat(members, followers)
    b = a + 1 + concat_ranges(np.zeros_like(members), followers)
    return a, b


def set_intersections(keyed: np.ndarray, sizes: np.ndarray, x: np.ndarray, y: np.ndarray, chunk: int,
                      on_batch: Callable[[int, int], None] | None = None) -> np.ndarray:
    """``|set(x[i]) & set(y[i])|`` for sets stored as ``keyed`` = ``(set << 32) + value``, sorted by set then
    value, with ``sizes[set]`` values each: every value of the smaller set is binary-searched in the larger
    one, about ``chunk`` lookups at a time. ``on_batch(done, total)`` after each batch of pairs."""
    offsets = np.zeros(sizes.size + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    swap = sizes[x] > sizes[y]
    small, large = np.where(swap, y, x), np.where(swap, x, y)
    counts = sizes[small]
    inter = np.zeros(x.size, dtype=np.int64)
    cum = np.cumsum(counts)
    lo = 0
    while lo < x.size:
        base = int(cum[lo - 1]) if lo else 0
        hi = max(lo + 1, int(np.searchsorted(cum, base + chunk, side="right")))
        xs, ys, cnt = small[lo:hi], large[lo:hi], counts[lo:hi]
        query = keyed[concat_ranges(offsets[xs], cnt)] + np.repeat((ys - xs) << 32, cnt)  # same value, other set
        pos = np.minimum(np.searchsorted(keyed, query), max(keyed.size - 1, 0))
        hit = keyed[pos] == query if keyed.size else np.zeros(query.size, dtype=bool)
        firsts = np.cumsum(cnt) - cnt
        nonempty = cnt > 0
        batch = np.zeros(hi - lo, dtype=np.int64)
        if hit.size:
            batch[nonempty] = np.add.reduceat(hit, firsts[nonempty], dtype=np.int64)
        inter[lo:hi] = batch
        if on_batch:
            on_batch(hi, x.size)
        lo = hi
    return inter


def sorted_jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """Jaccard similarity of two sets held as sorted arrays of distinct values (two empty sets are identical)."""
    if a.size == 0 and b.size == 0:
        return 1.0
    inter = np.intersect1d(a, b, assume_unique=True).size
    return inter / (a.size + b.size - inter)
