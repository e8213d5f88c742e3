"""sorted_distinct is np.unique by sorting (NumPy 2.x's hash-based unique is slow on shingle keys)."""

import numpy as np
import pytest

from neardup_solr.pairs._arrays import sorted_distinct


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
