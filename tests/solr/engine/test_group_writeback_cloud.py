"""Folded search on a local SolrCloud (issue 38): groups written back across shards, why collapse is not enough
there, and that the grouping the cluster uses instead shows each group once with its kept document.

The module starts its own SolrCloud (ZooKeeper, 2 nodes, a collection of 2 shards x 1 replica), whatever
``NEARDUP_TEST_BACKEND`` says; documents are spread over the shards by the hash of their id, so the members of a
group usually sit on different shards. ``-s`` prints the latencies of the three searches (p50 over the groups).
"""

from __future__ import annotations

import statistics
import time
from collections import defaultdict

import pytest

from neardup_solr.engine.collection import dedupe_collection
from neardup_solr.io import restaurants
from neardup_solr.signing.settings import IndexSettings
from neardup_solr.solr.folded_search import folded_search
from neardup_solr.solr.collection import SolrCollection
from neardup_solr.solr.indexer import Indexer

pytestmark = [pytest.mark.solr, pytest.mark.slow]


@pytest.fixture(scope="module")
def cluster(shared_cloud_client):
    return shared_cloud_client


@pytest.fixture(scope="module")
def written(cluster):
    records = {str(i): t for i, t in restaurants.read_records(restaurants.fodors_path(), restaurants.zagats_path())}
    Indexer(cluster, IndexSettings()).index_records(list(records.items()))
    result = dedupe_collection(cluster, 0.5, to_solr=True)
    held = {i: (g, k) for i, g, k in SolrCollection(cluster).read_groups()}
    members: dict[int, list[str]] = defaultdict(list)
    for doc_id, (number, _) in held.items():
        members[number].append(doc_id)
    return records, result, held, {n: m for n, m in members.items() if len(m) > 1}


def test_the_writeback_covers_every_shard(cluster, written):
    records, result, held, groups = written
    assert not cluster.is_single_core()
    assert result.groups is not None and result.groups.updated == len(records) == len(held)
    assert len(groups) == result.groups.groups > 20


def test_collapse_alone_shows_a_split_group_once_per_shard(cluster, written):
    records, _, held, groups = written
    twice = 0
    for number, ids in groups.items():
        kept = next(i for i in ids if held[i][1] == 1)
        data = cluster.select([("defType", "edismax"), ("qf", "content_words"), ("q", _escaped(records[kept])),
                               ("rows", 100), ("fl", "id,nd_group"), ("fq", "{!collapse field=nd_group max=nd_keep}")])
        numbers = [d["nd_group"] for d in data["response"]["docs"]]
        twice += len(numbers) != len(set(numbers))
    assert twice > len(groups) // 2  # most groups span both shards, and collapse folds each shard on its own


def _escaped(text: str) -> str:
    from neardup_solr.signing.builder import DocumentBuilder
    from neardup_solr.solr.queries import escaped_words

    return escaped_words(DocumentBuilder(IndexSettings()).word_tokens(text))


@pytest.mark.parametrize("fold", ["fast", "exact"])
def test_folded_search_on_the_cluster_shows_each_group_once_with_its_kept_document(cluster, written, fold):
    """Groups straddle the shards: the fast fold's kept flag is one document per group whatever the shard, and the
    exact fold groups across shards."""
    records, _, held, groups = written
    seconds: dict[str, list[float]] = defaultdict(list)
    for number, ids in groups.items():
        kept = next(i for i in ids if held[i][1] == 1)
        started = time.perf_counter()
        found = folded_search(cluster, records[kept], rows=100, fold=fold, copies=10)
        seconds[f"folded ({fold})"].append(time.perf_counter() - started)
        shown = [h.group for h in found.hits]
        assert len(shown) == len(set(shown)), (kept, shown)
        head = next(h for h in found.hits if h.group == number)
        assert head.id == kept and head.kept
        assert {c.id for c in head.copies} <= set(ids) - {kept} and head.copy_count >= 1
        started = time.perf_counter()
        folded_search(cluster, records[kept], rows=100, fold=False)
        seconds["not folded"].append(time.perf_counter() - started)
    print({name: f"p50 {statistics.median(s) * 1000:.1f} ms" for name, s in seconds.items()})
