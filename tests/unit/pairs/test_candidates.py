"""The refinement of oversized band buckets (neardup_solr.pairs.candidates): a bucket of more than
``split_bucket`` members is verified in place when small or dense, split by further signature values only when
large and sparse, and what it did is counted. No Solr: pure NumPy against brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from neardup_solr.pairs.candidates import (
    VERIFY_IN_PLACE,
    CollectionStats,
    candidate_pairs,
    matching_positions,
    store_candidate_pairs,
)
from neardup_solr.pairs.lsh import LSHParams, band_keys
from neardup_solr.pairs.signature_store import IN_MEMORY_SIGNATURE_BYTES, SignatureStore


def _decode(codes: np.ndarray, n: int) -> set[tuple[int, int]]:
    return {(int(c) // n, int(c) % n) for c in codes}


def _band_buckets(sigs: np.ndarray, params: LSHParams) -> list[dict]:
    keys = band_keys(sigs, params)
    out = []
    for band in range(params.bands):
        buckets: dict = {}
        for i, key in enumerate(keys[:, band].tolist()):
            buckets.setdefault(key, []).append(i)
        out.append(buckets)
    return out


def _near(sigs: np.ndarray, pairs: set[tuple[int, int]], keep: int) -> set[tuple[int, int]]:
    if not pairs:
        return set()
    a, b = (np.array(x, dtype=np.int64) for x in zip(*sorted(pairs)))
    ok = matching_positions(sigs, a, b) >= keep
    return {p for p, good in zip(sorted(pairs), ok.tolist()) if good}


@settings(max_examples=80, deadline=None)
@given(
    n=st.integers(0, 90),
    values=st.integers(1, 4),
    bands=st.integers(1, 5),
    rows=st.integers(1, 3),
    split=st.integers(2, 8),
    keep=st.integers(0, 16),
    seed=st.integers(0, 2**32 - 1),
)
def test_refinement_keeps_small_buckets_and_loses_nothing_it_verifies(n, values, bands, rows, split, keep, seed):
    """Below VERIFY_IN_PLACE members every oversized bucket is verified in place: the candidates that reach the
    bar are exactly those of the unrefined bands that reach it, and every pair of a bucket of at most
    ``split_bucket`` members is a candidate whatever its estimate."""
    sigs = np.random.default_rng(seed).integers(0, values, size=(n, 16), dtype=np.uint32)
    params = LSHParams(bands, rows)
    stats = CollectionStats()
    refined = _decode(candidate_pairs(sigs, params, split_bucket=split, keep_matches=keep, stats=stats), n)
    unrefined = _decode(candidate_pairs(sigs, params, split_bucket=None), n)
    assert refined <= unrefined
    assert _near(sigs, refined, keep) == _near(sigs, unrefined, keep)
    small = {p for buckets in _band_buckets(sigs, params) for members in buckets.values() if len(members) <= split
             for p in itertools.combinations(members, 2)}
    assert small <= refined
    assert stats.refined_buckets == 0 and stats.pairs_at_risk == 0  # nothing was large enough to split
    assert stats.oversized_pairs - stats.oversized_emitted >= 0


def _cluster(rng: np.random.Generator, base: np.ndarray, members: int, agree: float) -> np.ndarray:
    """``members`` signatures that each keep a position of ``base`` with probability ``agree``."""
    out = np.tile(base, (members, 1))
    change = rng.random(out.shape) > agree
    out[change] = rng.integers(1_000_000, 2**31, size=int(change.sum()), dtype=np.uint32)
    return out


def test_a_large_dense_cluster_is_verified_not_split():
    # 300 versions of one document (pairwise ~0.8 of positions agree) and 700 unrelated signatures: every band
    # bucket of the cluster is dense, so it is verified in place and no pair of it is lost.
    rng = np.random.default_rng(5)
    base = rng.integers(0, 2**31, size=128, dtype=np.uint32)
    sigs = np.vstack([_cluster(rng, base, 300, 0.9),
                      rng.integers(0, 2**31, size=(700, 128), dtype=np.uint32)])
    params = LSHParams(16, 8)
    keep = 64
    stats = CollectionStats()
    refined = _decode(candidate_pairs(sigs, params, keep_matches=keep, stats=stats), len(sigs))
    unrefined = _decode(candidate_pairs(sigs, params, split_bucket=None), len(sigs))
    assert _near(sigs, refined, keep) == _near(sigs, unrefined, keep)
    assert stats.verified_buckets > 0 and stats.refined_buckets == 0
    assert stats.pairs_at_risk == 0
    # The old rule (split whatever is oversized) parts the cluster: the loss the judge avoids is real.
    split_only = _decode(candidate_pairs(sigs, params), len(sigs))
    assert len(_near(sigs, split_only, keep)) < len(_near(sigs, unrefined, keep))


def test_a_large_sparse_bucket_is_split_and_the_risk_counted():
    # 400 unrelated signatures that share one band value (a common token winning the band) plus one true pair
    # among them: the bucket is sparse, so it is split; the near pair shares every position, so it survives,
    # and the candidates avoided are counted.
    rng = np.random.default_rng(9)
    sigs = rng.integers(0, 2**31, size=(400, 32), dtype=np.uint32)
    sigs[:, :2] = 7
    sigs[1] = sigs[0]
    params = LSHParams(1, 2)
    stats = CollectionStats()
    refined = _decode(candidate_pairs(sigs, params, keep_matches=20, stats=stats), len(sigs))
    assert (0, 1) in refined
    assert len(refined) < 400 * 399 // 2 // 100
    assert stats.refined_buckets >= 1 and stats.verified_buckets == 0
    summary = stats.refinement()
    assert summary["oversized_pairs"] == 400 * 399 // 2
    assert summary["candidates_avoided"] == summary["oversized_pairs"] - len(refined)


def test_a_mixed_bucket_counts_the_pairs_a_split_may_cost():
    # A cluster of 60 whose members agree on ~60% of positions inside a bucket of 1,000 unrelated members: the
    # sample sees too few near pairs to call the bucket a cluster, so it is split, and the pairs that split
    # parts are estimated (> 0), where the unrefined bands would have kept them all.
    assert VERIFY_IN_PLACE < 1060
    rng = np.random.default_rng(11)
    base = rng.integers(0, 2**31, size=64, dtype=np.uint32)
    sigs = np.vstack([_cluster(rng, base, 60, 0.75), rng.integers(0, 2**31, size=(1000, 64), dtype=np.uint32)])
    sigs[:, :2] = 3
    stats = CollectionStats()
    candidate_pairs(sigs, LSHParams(1, 2), keep_matches=20, stats=stats)
    assert stats.refined_buckets >= 1
    assert stats.pairs_at_risk > 0


# in_memory_bytes 0: every read goes through the file (as in a large store); None: this small store reads its
# signatures into memory once.
@pytest.mark.parametrize("in_memory_bytes", [0, None], ids=["file", "memory"])
@settings(max_examples=30, deadline=None)
@given(n=st.integers(0, 300), values=st.integers(1, 3), keep=st.integers(0, 12), seed=st.integers(0, 2**32 - 1))
def test_the_disk_store_refines_as_memory_does(n, values, keep, seed, in_memory_bytes, tmp_path_factory):
    sigs = np.random.default_rng(seed).integers(0, values, size=(n, 12), dtype=np.uint32)
    params = LSHParams(3, 2)
    with SignatureStore(12, params, expected_documents=n, directory=tmp_path_factory.mktemp("store"),
                        partition_entries=97, in_memory_bytes=in_memory_bytes) as store:
        store.append([f"d{i}" for i in range(n)], sigs)
        from_store = store_candidate_pairs(store, keep_matches=keep)
        assert not store.signatures_in_memory or in_memory_bytes is None
    assert np.array_equal(from_store, candidate_pairs(sigs, params, keep_matches=keep))


def test_a_store_holds_its_signatures_in_memory_only_within_its_bound(tmp_path):
    # Issue 40, point 5: a small run read the same signature rows from the file thousands of times; a store
    # within in_memory_bytes reads them once. Past the bound, reads stay on the file, so a large collection's
    # memory does not grow with it.
    rng = np.random.default_rng(7)
    sigs = rng.integers(0, 2**32, size=(1000, 16), dtype=np.uint32)
    rows = np.sort(rng.choice(1000, 300, replace=False))
    held = {}
    for bound in (sigs.nbytes, sigs.nbytes - 1, 0, None):
        with SignatureStore(16, LSHParams(4, 4), expected_documents=1000, directory=tmp_path,
                            in_memory_bytes=bound) as store:
            store.append([f"d{i}" for i in range(600)], sigs[:600])
            store.append([f"d{i}" for i in range(600, 1000)], sigs[600:])
            assert np.array_equal(store.signatures(rows), sigs[rows])
            assert np.array_equal(store.signatures(rows[::7]), sigs[rows[::7]])
            held[bound] = store.signatures_in_memory
    assert held == {sigs.nbytes: True, sigs.nbytes - 1: False, 0: False, None: True}
    assert IN_MEMORY_SIGNATURE_BYTES // (4 * 128) >= 10_000  # a 5,000 x 5,000 join's 128-value signatures fit


@settings(max_examples=30, deadline=None)
@given(n=st.integers(0, 300), values=st.integers(1, 3), keep=st.integers(0, 12), cut=st.floats(0, 1),
       seed=st.integers(0, 2**32 - 1))
def test_a_join_generates_exactly_the_cross_pairs_of_the_whole(n, values, keep, cut, seed, tmp_path_factory):
    # cross_at (a join's two sides): the pairs within one side are dropped before they are verified in place,
    # and the pairs across are those the whole run finds.
    sigs = np.random.default_rng(seed).integers(0, values, size=(n, 12), dtype=np.uint32)
    cross_at = int(cut * n)
    with SignatureStore(12, LSHParams(3, 2), expected_documents=n,
                        directory=tmp_path_factory.mktemp("store")) as store:
        store.append([f"d{i}" for i in range(n)], sigs)
        whole_stats, join_stats = CollectionStats(), CollectionStats()
        whole = store_candidate_pairs(store, keep_matches=keep, stats=whole_stats)
        join = store_candidate_pairs(store, keep_matches=keep, cross_at=cross_at, stats=join_stats)
    a, b = np.divmod(whole, max(n, 1))
    assert np.array_equal(join, whole[(a < cross_at) & (b >= cross_at)])
    assert join_stats.verified_in_place <= whole_stats.verified_in_place
