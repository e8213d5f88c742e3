"""NumPy helpers: sorted_distinct is np.unique by sorting (NumPy 2.x's hash-based unique is slow on shingle keys); run_pairs."""

import numpy as np
import pytest

from neardup_solr.pairs._arrays import run_pairs, sorted_distinct


@pytest.mark.parametrize("size", [0, 1, 2, 7, 1000])
def test_sorted_distinct_equals_np_unique(size):
    rng = np.random.default_rng(size)
    # Packed (slot << 32 | hash) keys with repeats, as fetch_shingle_sets and token_sets build them.
    values = (rng.integers(0, 5, size) << 32) | rng.integers(0, 50, size)
    got = sorted_distinct(values)
    assert got.dtype == values.dtype
    np.testing.assert_array_equal(got, np.unique(values))


def test_sorted_distinct_leaves_its_input_alone():
    values = np.array([3, 1, 3, 2], dtype=np.int64)
    sorted_distinct(values)
    np.testing.assert_array_equal(values, [3, 1, 3, 2])


def test_run_pairs_are_every_pair_inside_each_run_in_double_loop_order():
    rng = np.random.default_rng(3)
    sizes = rng.integers(0, 7, size=200)
    starts = np.cumsum(sizes) - sizes + rng.integers(0, 3, size=200).cumsum()  # gaps between runs
    a, b = run_pairs(starts, sizes)
    want = [(s + p, s + q) for s, n in zip(starts.tolist(), sizes.tolist()) for p in range(n) for q in range(p + 1, n)]
    assert list(zip(a.tolist(), b.tolist())) == want
    empty = run_pairs(np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64))
    assert empty[0].size == 0 and empty[1].size == 0
