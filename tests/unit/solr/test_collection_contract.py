"""The collection port's contract (``tests/collection_contract.py``) held to :class:`MemoryCollection`, with no Solr
and no JVM; ``tests/solr/solr/test_collection_contract_solr.py`` holds a real core and a SolrCloud collection to
the same functions. Below them, what only the collection in memory does: its name, its reading of ``fl``, and its
lock under many threads."""

from __future__ import annotations

import threading

import pytest

from collection_contract import *  # noqa: F401,F403 (the contract's test functions, collected here)
from neardup_solr.solr.collection import Collection, collection_of
from neardup_solr.solr.group_fields import GROUP_FIELD, KEEP_FIELD, group_update
from neardup_solr.solr.memory_collection import MemoryCollection
from neardup_solr.solr.selection import Selection


@pytest.fixture()
def coll() -> MemoryCollection:
    return MemoryCollection()


def test_a_collection_in_memory_is_a_collection_with_a_name_of_its_own():
    first, second = MemoryCollection(), MemoryCollection()
    assert isinstance(first, Collection) and collection_of(first) is first
    assert first.url.startswith("memory://") and first.url != second.url  # group-number blocks are kept by url
    assert MemoryCollection("mine").url == "memory://mine"
    assert first.is_single_core() and first.ensure_group_fields() == []


def test_fields_are_read_as_solr_reads_fl(coll):
    coll.put([{"id": "a", "content": "text", "nd_note_s": "x", "md5_hash": "m"}], soft_commit=True)
    coll.put([group_update("a", 3, True)], soft_commit=True)
    assert coll.by_ids(["a"], "id score content") == [{"id": "a", "content": "text"}]
    assert set(coll.by_ids(["a"], "*")[0]) == {"id", "content", "nd_note_s", "md5_hash", "_version_"}
    assert coll.by_ids(["a"], "nd_*") == [{"nd_note_s": "x"}]  # docValues not used as stored: named only
    assert coll.search_ids(["a"], f"id,{GROUP_FIELD},{KEEP_FIELD}") == [{"id": "a", GROUP_FIELD: 3, KEEP_FIELD: 1}]
    assert coll.search_ids(["a"], "nd_*") == [{"nd_note_s": "x"}]
    assert set(coll.by_ids(["a"], "")[0]) == set(coll.by_ids(["a"], "*")[0])
    with pytest.raises(ValueError):
        coll.by_ids(["a"], "text:content")


def test_a_time_to_live_is_solr_date_math(coll):
    coll.put([{"id": "a", "ttl": "+1MONTH/DAY"}])
    assert coll.by_ids(["a"], "expire_at")[0]["expire_at"].endswith("T00:00:00Z")


def test_what_is_read_is_a_copy(coll):
    coll.put([{"id": "a", "tags": ["x"]}], soft_commit=True)
    coll.by_ids(["a"], "tags")[0]["tags"].append("y")
    next(coll.pages(Selection(), "tags", 5))[0]["tags"].append("z")
    assert coll.by_ids(["a"], "tags") == [{"tags": ["x"]}] == coll.search_ids(["a"], "tags")


def test_atomic_operations_beyond_set(coll):
    coll.put([{"id": "a", "tags": ["x"], "n": 1}])
    coll.put([{"id": "a", "tags": {"add": ["y", "x"]}, "n": {"inc": 2}}])
    assert coll.by_ids(["a"], "tags,n") == [{"tags": ["x", "y", "x"], "n": 3}]
    coll.put([{"id": "a", "tags": {"remove": "x"}}])
    coll.put([{"id": "a", "tags": {"add-distinct": ["y", "z"]}}])
    assert coll.by_ids(["a"], "tags") == [{"tags": ["y", "z"]}]


def test_many_threads_write_and_read_at_once(coll):
    def write(n: int) -> None:
        for i in range(200):
            coll.put([{"id": f"{n}-{i}", "num_shingles": i}], soft_commit=i % 10 == 0)
            coll.count(Selection(signed=True))
            list(coll.pages(Selection(), "id", 50))

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    coll.commit()
    assert coll.count() == 800
    versions = [d["_version_"] for page in coll.pages(Selection(), "_version_", 1000) for d in page]
    assert len(set(versions)) == 800
