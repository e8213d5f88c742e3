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


def test_the_spark_verification_batch_keeps_what_the_estimate_passes_with_the_exact_jaccard():
    """The Arrow UDF's one batch (neardup_solr.spark.verify): agreement counted over the whole signatures, the
    Jaccard of the two sorted sets as |A & B| / |A | B| in double precision."""
    import pyarrow as pa

    from neardup_solr.spark.verify import estimate_and_verify

    rng = np.random.default_rng(3)
    # Shingle hashes are uint32, stored as int32 bits and sorted as uint32: half of these are >= 2**31.
    pool = np.concatenate((np.arange(30, dtype=np.uint32), np.uint32(2**32 - 1) - np.arange(30, dtype=np.uint32)))
    k, rows = 16, []
    for i in range(40):
        sig_a = rng.integers(0, 2**32, k).astype(np.uint32)
        sig_b = np.where(rng.random(k) < rng.random(), sig_a, rng.integers(0, 2**32, k).astype(np.uint32))
        set_a = np.unique(rng.choice(pool, rng.integers(1, 30)))
        set_b = np.unique(np.concatenate((set_a[: rng.integers(0, set_a.size + 1)], rng.choice(pool, 5))))
        rows.append((f"a{i}", f"b{i}", sig_a, sig_b, set_a, set_b))
    batch = pa.RecordBatch.from_pydict({
        "a": [r[0] for r in rows], "b": [r[1] for r in rows],
        "sig_a": [r[2].view(np.int32).tolist() for r in rows], "sig_b": [r[3].view(np.int32).tolist() for r in rows],
        "set_a": [r[4].view(np.int32).tolist() for r in rows], "set_b": [r[5].view(np.int32).tolist() for r in rows]},
        schema=pa.schema([("a", pa.string()), ("b", pa.string()), ("sig_a", pa.list_(pa.int32())),
                          ("sig_b", pa.list_(pa.int32())), ("set_a", pa.list_(pa.int32())), ("set_b", pa.list_(pa.int32()))]))
    need = 9
    out = estimate_and_verify(batch, need).to_pydict()
    expected = [(a, b, len(set(sa) & set(sb)) / len(set(sa) | set(sb))) for a, b, x, y, sa, sb in rows
                if np.count_nonzero(x == y) >= need]
    assert 0 < len(expected) < len(rows)
    assert list(zip(out["a"], out["b"], out["similarity"])) == expected
    assert estimate_and_verify(batch.slice(0, 0), need).num_rows == 0
