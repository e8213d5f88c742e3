"""check_and_add(strict=True) on a local SolrCloud (issue 47, point 1): the lockstep test of test_strict_check.py
on the shared cluster (2 nodes, a collection of 2 shards x 1 replica). A text's band locks are spread over both
shards by the hash of their ids, so taking them is one update request the receiving node splits between two
leaders, and reading them back asks both."""

from __future__ import annotations

import time

import pytest

from strict_pairs import admitted_per_group, check_in_lockstep, near_duplicate_groups

from neardup_solr.engine.online import check_and_add
from neardup_solr.errors import BandLocksBusyError
from neardup_solr.solr.band_locks import LOCK_PREFIX, acquire, release
from neardup_solr.solr.collection import SolrCollection
from neardup_solr.solr.client import SolrClient
from neardup_solr.solr.searcher import Searcher

pytestmark = [pytest.mark.solr, pytest.mark.slow]


@pytest.fixture(scope="module")
def cluster(shared_cloud_client):
    client = shared_cloud_client
    assert check_and_add(client, "seed", "seed text that stores the collection settings first").added
    return client


def lock_documents(client: SolrClient) -> list[str]:
    SolrCollection(client).commit(soft=True)
    docs = client.select([("q", "{!prefix f=id v=$p}"), ("p", LOCK_PREFIX), ("fl", "id"), ("rows", 1000)])
    return [d["id"] for d in docs["response"]["docs"]]


def test_band_locks_span_both_shards(cluster):
    assert not cluster.is_single_core()
    text = near_duplicate_groups(1, seed=60)[0][0]
    searcher = Searcher(cluster)
    held = acquire(cluster, searcher.band_keys_of(searcher.prepare(text)), "probe")
    try:
        SolrCollection(cluster).commit(soft=True)
        found = cluster.select([("q", "{!prefix f=id v=$p}"), ("p", LOCK_PREFIX), ("fl", "id,[shard]"),
                                ("rows", 100)])["response"]["docs"]
        assert {d["id"] for d in found} == set(held.versions)
        assert len({d["[shard]"] for d in found}) == 2
        # Every lock is held: a second taker of the same bands waits, then gives up.
        with pytest.raises(BandLocksBusyError, match="'probe'"):
            acquire(cluster, searcher.band_keys_of(searcher.prepare(text)), "other", wait_seconds=0.3)
    finally:
        assert release(cluster, held)
    assert lock_documents(cluster) == []


def test_two_processes_in_lockstep_admit_each_pair_exactly_once(cluster):
    groups = near_duplicate_groups(200, seed=61)
    started = time.perf_counter()
    answers = check_in_lockstep(cluster.url, groups, strict=True, prefix="s")
    elapsed = time.perf_counter() - started
    counts = admitted_per_group(answers, len(groups))
    assert counts == [1] * len(groups), [i for i, c in enumerate(counts) if c != 1]
    assert lock_documents(cluster) == []
    seconds = sorted(s for *_, s in answers)
    print(f"\ncloud, strict, 2 processes, {len(groups)} pairs: {sum(counts)} added in {elapsed:.1f} s; check p50 "
          f"{1000 * seconds[len(seconds) // 2]:.1f} ms, p95 {1000 * seconds[int(len(seconds) * 0.95)]:.1f} ms")


def test_without_strict_both_may_be_added(cluster):
    groups = near_duplicate_groups(40, seed=62)
    counts = admitted_per_group(check_in_lockstep(cluster.url, groups, strict=False, prefix="n"), len(groups))
    assert all(c in (1, 2) for c in counts)
    print(f"\ncloud, not strict, 2 processes, {len(groups)} pairs: {counts.count(2)} admitted twice")
