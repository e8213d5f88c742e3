"""The band buckets of the Spark dedup found band-major with NumPy (neardup_solr.spark.buckets), without Spark: the
slices of several partitions, grouped by band and part as Spark groups them, give every pair of every small bucket
once per bucket and every member of every large one, as grouping the keys in a dict does."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install 'neardup-solr[spark]')")

from neardup_solr.spark.buckets import bucket_rows_of_slice, slice_batch, slices_per_band  # noqa: E402


def _partitions(rng: np.random.Generator, records: int, bands: int, partitions: int):
    # Few distinct keys per band, so buckets of every size occur; row numbers as sign_on_executors makes them.
    keys = rng.integers(0, 40, size=(records, bands)).astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    rows = (np.repeat(np.arange(partitions), -(-records // partitions))[:records].astype(np.int64) << 32) + np.arange(
        records, dtype=np.int64)
    cuts = np.array_split(np.arange(records), partitions)
    return keys, rows, [(keys[c], rows[c]) for c in cuts]


def _expected(keys: np.ndarray, rows: np.ndarray, split: int, excluded: set):
    pairs, members = set(), set()
    for band in range(keys.shape[1]):
        buckets: dict = {}
        for key, row in zip(keys[:, band].tolist(), rows.tolist()):
            if row not in excluded:
                buckets.setdefault(key, []).append(row)
        for key, rows_of in buckets.items():
            if 2 <= len(rows_of) <= split:
                pairs |= {(band, min(a, b), max(a, b)) for a, b in itertools.combinations(rows_of, 2)}
            elif len(rows_of) > split:
                members |= {(band, key, row) for row in rows_of}
    return pairs, members


@pytest.mark.parametrize("parts", [1, 3])
def test_slices_grouped_by_band_and_part_give_every_bucket(parts):
    rng = np.random.default_rng(5)
    bands, split = 4, 12
    keys, rows, partitions = _partitions(rng, 600, bands, partitions=5)
    slices = pa.Table.from_batches([slice_batch(k, r, parts) for k, r in partitions])
    excluded = np.array(rows[[3, 77, 400]], dtype=np.int64)
    pairs, members = set(), set()
    for band in range(bands):
        for part in range(parts):
            group = slices.filter(pa.compute.and_(pa.compute.equal(slices["band"], band),
                                                  pa.compute.equal(slices["part"], part)))
            if group.num_rows == 0:
                continue
            out = bucket_rows_of_slice(group, split, excluded).to_pylist()
            pair_rows = [(band, r["a"], r["b"]) for r in out if r["b"] is not None]
            assert len(pair_rows) == len(set(pair_rows))  # a pair once per band
            assert all(r["band"] is None and r["key"] is None for r in out if r["b"] is not None)
            pairs |= set(pair_rows)
            members |= {(r["band"], r["key"] & 0xFFFFFFFFFFFFFFFF, r["a"]) for r in out if r["b"] is None}
    expected_pairs, expected_members = _expected(keys, rows, split, set(excluded.tolist()))
    assert expected_pairs and expected_members  # both kinds of bucket occurred
    assert pairs == expected_pairs and members == expected_members


def test_a_part_holds_only_its_keys_and_the_parts_follow_the_records():
    keys = np.arange(20, dtype=np.uint64).reshape(10, 2) * np.uint64(7)
    rows = np.arange(10, dtype=np.int64) + 100
    batch = slice_batch(keys, rows, 3).to_pylist()
    assert {(s["band"], s["part"]) for s in batch} <= {(b, p) for b in range(2) for p in range(3)}
    for s in batch:
        got_keys = np.frombuffer(s["keys"], dtype=np.uint64)
        got_rows = np.frombuffer(s["rows"], dtype=np.int64)
        assert np.all(got_keys % np.uint64(3) == s["part"])
        assert np.array_equal(keys[got_rows - 100, s["band"]], got_keys)
    assert sum(len(s["rows"]) // 8 for s in batch) == 20
    assert slices_per_band(1) == 1 and slices_per_band(2_000_001) == 2
