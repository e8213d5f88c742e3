"""Checks and inserts without a commit each: this process sees its own adds at once (neardup_solr.solr.recent), other
processes within commitWithin, and the single-core claim-and-add request never lets a refused claim's document in.
Against a real Solr; the buffer's own bookkeeping is tested without one."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import numpy as np
import pytest

from neardup_solr import IndexSettings, Indexer, NearDupIndex
from neardup_solr.solr.documents import META_DATASET
from neardup_solr.engine.online import check_and_add, claim_id, delete_documents
from neardup_solr.errors import DocumentExistsError
from neardup_solr.solr.recent import GRACE_SECONDS, RecentAdd, RecentAdds, recent_adds
from neardup_solr.solr.searcher import Searcher
from neardup_solr.solr.client import SolrClient

BASE = ("the quick brown fox jumps over the lazy dog near the river bank while the farmer watches from "
        "his old wooden porch and the sun sets slowly behind the distant hills of the valley")
NEAR = BASE.replace("lazy", "sleepy")
LONG_WAIT_MS = 600_000  # Solr's own commit will not come during a test: only the buffer can make adds visible


def entry(doc_id: str, hashes: list[int], bands: tuple[str, ...] = (), added_at: float = 0.0,
          dataset: str | None = None) -> RecentAdd:
    return RecentAdd(doc_id, dataset, "text", "md5-" + doc_id, np.array(sorted(hashes), dtype=np.uint64), bands,
                     added_at, added_at + 1.0)


# ------------------------------------------------------------------------------------------ the buffer alone


def test_buffer_finds_entries_by_band_or_by_shared_shingle_and_forgets():
    buffer = RecentAdds()
    buffer.add(entry("a", [1, 2, 3], ("b0_x", "b1_y")))
    buffer.add(entry("b", [3, 4], ("b0_z",)))
    assert {e.id for e in buffer.candidates(band_tokens=["b1_y"])} == {"a"}
    assert {e.id for e in buffer.candidates(band_tokens=["b9_q"])} == set()
    assert {e.id for e in buffer.candidates(hash_set=np.array([3], dtype=np.uint64))} == {"a", "b"}
    assert {e.id for e in buffer.candidates(hash_set=np.array([4, 9], dtype=np.uint64))} == {"b"}
    buffer.forget(["a"])
    assert {e.id for e in buffer.candidates(hash_set=np.array([3], dtype=np.uint64))} == {"b"}
    assert buffer.candidates(band_tokens=["b1_y"]) == []


def test_buffer_replaces_an_id_and_drops_what_a_commit_covers():
    buffer = RecentAdds()
    buffer.add(entry("a", [1, 2], ("b0_x",), added_at=1.0))
    buffer.add(entry("a", [7, 8], ("b0_w",), added_at=2.0))  # the same id again: the old tokens go
    assert buffer.candidates(band_tokens=["b0_x"]) == [] and len(buffer) == 1
    buffer.add(entry("b", [5], added_at=3.0, dataset="news"))
    assert buffer.drop_added_before(2.5) == 1
    assert [e.id for e in buffer.candidates(hash_set=np.array([5], dtype=np.uint64))] == ["b"]
    buffer.forget_dataset("news")
    assert len(buffer) == 0


# ------------------------------------------------------------------------------------------ against Solr


def searchable(client: SolrClient, doc_id: str) -> bool:
    """Whether a query (not a real-time get) finds the document: what Solr's current searcher shows."""
    return client.count("{!term f=id v=$i}", params=[("i", doc_id)]) == 1


@pytest.mark.solr
def test_a_check_sees_the_previous_uncommitted_add_of_this_process(solr):
    assert check_and_add(solr, "a", BASE, 0.5, commit_within_ms=LONG_WAIT_MS).added
    assert not searchable(solr, "a")  # no commit has happened: only this process knows
    near = check_and_add(solr, "b", NEAR, 0.5, commit_within_ms=LONG_WAIT_MS)
    assert not near.added and [m.id for m in near.matches] == ["a"]
    assert near.matches[0].edit_distance == 1 and 0.5 <= near.matches[0].similarity < 1.0
    exact = check_and_add(solr, "c", BASE, 0.5, commit_within_ms=LONG_WAIT_MS)
    assert not exact.added and exact.matches[0].exact


@pytest.mark.solr
def test_lsh_collection_check_sees_uncommitted_adds_through_bands(solr):
    Indexer(solr, IndexSettings(fields=("lsh",))).index_records([("seed", "unrelated seed text for the settings")])
    index = NearDupIndex(solr, threshold=0.8, commit_within_ms=LONG_WAIT_MS)
    assert index.check_and_add("a", BASE).added and not searchable(solr, "a")
    near = index.check_and_add("b", BASE + " again")
    assert not near.added and near.matches[0].id == "a"
    assert index.query(BASE) == ["a"]  # query sees it too


@pytest.mark.solr
def test_insert_is_visible_to_this_process_query_at_once(solr):
    index = NearDupIndex(solr, threshold=0.5, commit_within_ms=LONG_WAIT_MS)
    index.insert("a", BASE)
    assert not searchable(solr, "a")
    assert index.query(NEAR) == ["a"]
    assert not index.check_and_add("b", NEAR).added


@pytest.mark.solr
def test_deleted_or_replaced_recent_adds_are_not_reported(solr):
    index = NearDupIndex(solr, threshold=0.5, commit_within_ms=LONG_WAIT_MS)
    index.insert("a", BASE)
    delete_documents(solr, ["a"])
    assert index.query(NEAR) == []
    assert index.check_and_add("b", NEAR).added
    # Deleted behind the buffer's back (a plain delete, as another process would): the real-time get notices.
    solr.delete_ids(["b"])
    assert index.query(BASE) == [] and index.check_and_add("c", BASE).added
    assert len(recent_adds(solr)) >= 1


@pytest.mark.solr
def test_another_process_sees_the_add_only_after_a_commit(solr, solr_url):
    probe = ("import sys; from neardup_solr import NearDupIndex, SolrClient; "
             "print(NearDupIndex(SolrClient(sys.argv[1]), threshold=0.5).query(sys.argv[2]))")
    # Solr keeps a commit that an earlier test's commitWithin scheduled (an explicit commit does not cancel it:
    # CommitTracker.didCommit is empty), and it may fall inside this window. Whether one did is checked after the
    # probe, with this process's own query (which only a commit can answer); such a run proves nothing and is
    # repeated on an empty core.
    for attempt in range(3):
        index = NearDupIndex(solr, threshold=0.5, commit_within_ms=LONG_WAIT_MS)
        assert index.check_and_add("a", BASE).added
        other = subprocess.run([sys.executable, "-c", probe, solr_url, NEAR], capture_output=True, text=True,
                               check=True)
        if not searchable(solr, "a"):
            break
        solr.delete_all()
    else:
        pytest.fail("a commit scheduled before this test came inside its window three times")
    assert other.stdout.strip() == "[]"  # the documented window: not committed yet
    index.flush()
    assert len(recent_adds(solr)) == 0  # the soft commit covers every add before it
    other = subprocess.run([sys.executable, "-c", probe, solr_url, NEAR], capture_output=True, text=True,
                           check=True)
    assert other.stdout.strip() == "['a']"


@pytest.mark.solr
def test_overdue_adds_are_committed_by_the_next_lookup(solr):
    assert check_and_add(solr, "a", BASE, 0.5, commit_within_ms=1).added
    # Solr commits within 1 ms on its own; wait past the grace period so the buffer must settle.
    time.sleep(GRACE_SECONDS + 0.2)
    assert len(recent_adds(solr)) == 1
    assert not check_and_add(solr, "b", NEAR, 0.5, commit_within_ms=1).added
    assert len(recent_adds(solr)) == 0 and searchable(solr, "a")


@pytest.mark.solr
def test_refused_claim_lets_no_document_in_on_a_single_core(solr):
    assert solr.is_single_core()
    assert check_and_add(solr, "a", BASE, 0.9, commit_within_ms=LONG_WAIT_MS).added
    md5 = Searcher(solr).get_by_id("a").md5_hash
    # A claim held by an owner whose add is under way (within the lease): the one-request claim-and-add of "b"
    # is refused at the claim, and its document must not be written.
    solr.delete_ids(["a", claim_id(md5)])
    solr.add([{"id": claim_id(md5), "dataset": META_DATASET,
               "content": json.dumps({"owner": "someone", "md5": md5, "claimed_at": time.time()})}])
    solr.commit()
    result = check_and_add(solr, "b", BASE, 0.9, commit_within_ms=LONG_WAIT_MS)
    assert not result.added and result.matches[0].id == "someone" and result.matches[0].pending
    assert solr.get_by_ids(["b"], "id") == []


@pytest.mark.solr
def test_id_conflict_leaves_no_claim_behind(solr):
    assert check_and_add(solr, "a", BASE, 0.9, commit_within_ms=LONG_WAIT_MS).added
    other = "a completely different sentence about tax forms and the paperwork that comes with them"
    with pytest.raises(DocumentExistsError):
        check_and_add(solr, "a", other, 0.9, commit_within_ms=LONG_WAIT_MS)
    other_md5 = Searcher(solr).prepare(other).md5_hash
    assert solr.get_by_ids([claim_id(other_md5)], "id") == []  # its claim was removed again
    assert check_and_add(solr, "b", other, 0.9, commit_within_ms=LONG_WAIT_MS).added
