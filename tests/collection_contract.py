"""The contract of the collection port (neardup_solr/solr/collection.py), as test functions that take a ``coll``
fixture: an empty :class:`~neardup_solr.solr.collection.Collection`. Imported by the modules that give the
fixture: ``unit/solr/test_collection_contract.py`` (a MemoryCollection, no Solr) and
``solr/solr/test_collection_contract_solr.py`` (a SolrCollection on the session's core and on the shared
SolrCloud), so one suite holds every implementation to the same behaviour.

What it covers: counts, pages, real-time and search reads by id, and the highest value, for each field of a
Selection; the committed view of searches against the real-time view of reads by id; writes with each
``_version_`` rule, a refusal (409) at its document with the earlier ones written, skipped conflicts, atomic
updates that keep the other fields, whole documents that replace, deletes; the add-once claim protocol (won once,
lost to an owner, pending, stale and taken over, released, a confirmation against a takeover, add_once's
outcomes and its one add among concurrent ones); and the group numbers and fields (blocks disjoint across two
"processes", groups in use, write-back with gone ids, members, reads).

A collection that is not one core (a SolrCloud collection of two shards) writes one request's documents shard
by shard, so what follows a refused document may be written there: those assertions ask ``is_single_core()``.
"""

from __future__ import annotations

import json
import threading
import time
from datetime import datetime, timedelta, timezone

import pytest

from neardup_solr.errors import DocumentExistsError, SolrRequestError
from neardup_solr.signing.settings import GROUP_COUNTER_ID, META_DATASET
from neardup_solr.solr import claims
from neardup_solr.solr.claims import (
    CLAIM_LEASE_SECONDS,
    claim,
    claim_document,
    claim_holder,
    claim_id,
    confirm_claim,
    release,
)
from neardup_solr.solr.group_fields import GROUP_FIELD, KEEP_FIELD, group_update
from neardup_solr.solr.selection import Selection, field_update

MD5 = "0123456789abcdef0123456789abcdef"
OTHER_MD5 = "f" * 32
FUTURE = "2099-01-01T00:0{}:00Z"  # dates the TTL deleter (expire_at in the past) never removes


def ids_of(docs) -> list[str]:
    return [str(d["id"]) for d in docs]


def paged_ids(coll, selection: Selection, page_size: int = 2) -> list[str]:
    return [str(d["id"]) for page in coll.pages(selection, "id", page_size) for d in page]


def version(coll, doc_id: str) -> int:
    return int(coll.by_ids([doc_id], "id,_version_")[0]["_version_"])


def refused(coll, docs, **options) -> SolrRequestError:
    with pytest.raises(SolrRequestError) as caught:
        coll.put(docs, **options)
    assert caught.value.status == 409
    return caught.value


# --------------------------------------------------------------------------------------------------- selections
def _some_documents(coll) -> None:
    """a, b (data set d1), c (d2, never signed), d (no data set), the package's own document, and groups 7 and 8."""
    coll.put([
        {"id": "a", "dataset": "d1", "md5_hash": "1" * 32, "num_shingles": 5, "content": "text a"},
        {"id": "b", "dataset": "d1", "md5_hash": "2" * 32, "num_shingles": 0, "content": "text b"},
        {"id": "c", "dataset": "d2", "content": "text c"},
        {"id": "d", "md5_hash": "4" * 32, "num_shingles": 1, "content": "text d"},
        {"id": "__ours__", "dataset": META_DATASET, "md5_hash": "5" * 32, "num_shingles": 9, "content": "{}"},
    ])
    coll.put([group_update("a", 7, True), group_update("c", 7, False), group_update("d", 8, True)], soft_commit=True)


SELECTIONS = [
    (Selection(), ["a", "b", "c", "d"]),
    (Selection(dataset="d1"), ["a", "b"]),
    (Selection(dataset="d2"), ["c"]),
    (Selection(dataset="none of them"), []),
    (Selection(seen=True), ["a", "b", "d"]),
    (Selection(seen=False), ["c"]),
    (Selection(signed=True), ["a", "d"]),
    (Selection(signed=False), ["b", "c"]),
    (Selection(except_id="b"), ["a", "c", "d"]),
    (Selection(group=7), ["a", "c"]),
    (Selection(group=8), ["d"]),
    (Selection(group=9), []),
    (Selection(dataset="d1", signed=True), ["a"]),
    (Selection(seen=True, signed=False, except_id="a"), ["b"]),
]


def _named(selection: Selection) -> str:
    given = {k: v for k, v in vars(selection).items() if v != getattr(Selection(), k)}
    return ",".join(f"{k}={v}" for k, v in given.items()) or "every"


@pytest.mark.parametrize("selection,expected", SELECTIONS, ids=[_named(s) for s, _ in SELECTIONS])
def test_count_and_pages_select_the_users_documents(coll, selection, expected):
    _some_documents(coll)
    assert coll.count(selection) == len(expected)
    assert paged_ids(coll, selection, page_size=1) == expected
    assert paged_ids(coll, selection, page_size=2) == expected
    assert paged_ids(coll, selection, page_size=500) == expected
    assert ids_of(coll.first_page(selection, "id", 1)) == expected[:1]


def test_pages_come_in_id_order_and_end_on_a_short_page(coll):
    ids = ["b10", "a", "b2", "B", "b1", "_x", "é", "z"]
    coll.put([{"id": i, "content": i} for i in ids], soft_commit=True)
    pages = list(coll.pages(Selection(), "id,content", 3))
    assert [len(p) for p in pages] == [3, 3, 2]
    assert [d["id"] for p in pages for d in p] == sorted(ids)  # code point order: B < _x < a < b1 < b10 < b2 < z < é
    assert all(d["content"] == d["id"] for p in pages for d in p)
    assert list(coll.pages(Selection(dataset="nothing"), "id", 3)) == []


def test_pages_give_exactly_the_fields_asked_for(coll):
    coll.put([{"id": "a", "content": "text", "md5_hash": MD5, "num_shingles": 3}], soft_commit=True)
    [[doc]] = coll.pages(Selection(), "id,md5_hash", 10)
    assert doc == {"id": "a", "md5_hash": MD5}
    [[doc]] = coll.pages(Selection(), "md5_hash, num_shingles", 10)
    assert doc == {"md5_hash": MD5, "num_shingles": 3}
    [[doc]] = coll.pages(Selection(), "*", 10)
    assert {k: doc[k] for k in ("id", "content", "md5_hash", "num_shingles")} == \
        {"id": "a", "content": "text", "md5_hash": MD5, "num_shingles": 3}
    assert isinstance(doc["_version_"], int) and doc["_version_"] == version(coll, "a")


def test_reads_by_id_see_the_packages_own_documents_and_leave_out_missing_ids(coll):
    _some_documents(coll)
    found = coll.by_ids(["d", "missing", "__ours__", "a"], "id,dataset,content")
    assert found == [{"id": "d", "content": "text d"}, {"id": "__ours__", "dataset": META_DATASET, "content": "{}"},
                     {"id": "a", "dataset": "d1", "content": "text a"}]
    assert coll.by_ids([], "id") == []
    searched = coll.search_ids(["a", "missing", "c"], f"id,{GROUP_FIELD},{KEEP_FIELD}")
    assert sorted(searched, key=lambda d: d["id"]) == [{"id": "a", GROUP_FIELD: 7, KEEP_FIELD: 1},
                                                       {"id": "c", GROUP_FIELD: 7, KEEP_FIELD: 0}]
    assert coll.search_ids([], "id") == []


def test_group_fields_are_searched_not_read_by_id(coll):
    coll.put([{"id": "a", "content": "text"}])
    coll.put([group_update("a", 3, True)])
    named = f"id,{GROUP_FIELD},{KEEP_FIELD}"
    assert coll.by_ids(["a"], named) == [{"id": "a"}]  # real-time get leaves out docValues not used as stored
    coll.commit()
    assert coll.by_ids(["a"], named) == [{"id": "a"}]
    assert GROUP_FIELD not in coll.by_ids(["a"], "*")[0]
    assert coll.search_ids(["a"], named) == [{"id": "a", GROUP_FIELD: 3, KEEP_FIELD: 1}]
    assert coll.first_page(Selection(), named, 5) == [{"id": "a", GROUP_FIELD: 3, KEEP_FIELD: 1}]
    assert GROUP_FIELD not in coll.search_ids(["a"], "*")[0]
    assert coll.first_page(Selection(), "id,score", 5) == [{"id": "a", "score": 1.0}]  # searches are filters


def test_reads_by_id_answer_each_id_asked(coll):
    coll.put([{"id": "a", "content": "text"}, {"id": "b", "content": "text"}], soft_commit=True)
    assert sorted(ids_of(coll.by_ids(["b", "a", "b"], "id"))) == ["a", "b", "b"]  # (in which order, unsaid)
    assert sorted(ids_of(coll.search_ids(["b", "a", "b"], "id"))) == ["a", "b"]


def test_a_time_to_live_gives_the_document_its_expiry(coll):
    coll.put([{"id": "a", "content": "text", "ttl": "+1DAYS"}, {"id": "b", "content": "text"}])
    [doc] = coll.by_ids(["a"], "ttl,expire_at")
    expires = datetime.fromisoformat(doc["expire_at"].replace("Z", "+00:00"))
    assert doc["ttl"] == "+1DAYS"
    assert abs((expires - datetime.now(timezone.utc)) - timedelta(days=1)) < timedelta(minutes=1)
    assert coll.by_ids(["b"], "id,expire_at") == [{"id": "b"}]
    assert claim(coll, MD5, "a", ttl="+1DAYS").won
    assert coll.by_ids([claim_id(MD5)], "expire_at")[0]["expire_at"][:10] == doc["expire_at"][:10]
    with pytest.raises(SolrRequestError) as caught:
        coll.put([{"id": "c", "ttl": "30 days"}])
    assert caught.value.status == 400 and coll.by_ids(["c"], "id") == []


def test_changed_after_is_exclusive_less_its_margin_and_at_or_before_inclusive(coll):
    coll.put([{"id": "a", "content": "1"}, {"id": "b", "content": "2"}], soft_commit=True)
    ab = max(version(coll, "a"), version(coll, "b"))
    assert coll.highest_version() == ab
    time.sleep(0.02)  # c's version is of a clock at least 20 ms later (a version is milliseconds << 20)
    coll.put([{"id": "c", "content": "3"}], soft_commit=True)
    at_c = version(coll, "c")
    assert at_c > ab and coll.highest_version() == at_c
    assert paged_ids(coll, Selection(changed_after=at_c)) == []
    assert paged_ids(coll, Selection(changed_after=at_c - 1)) == ["c"]
    assert paged_ids(coll, Selection(changed_after=ab)) == ["c"]
    assert paged_ids(coll, Selection(at_or_before=at_c)) == ["a", "b", "c"]
    assert paged_ids(coll, Selection(at_or_before=ab)) == ["a", "b"]
    assert paged_ids(coll, Selection(at_or_before=at_c - 1)) == ["a", "b"]
    # The margin moves the lower end back by its milliseconds: 5 ms after c, less 10 ms, takes c in, not a or b.
    five_after = at_c + (5 << 20)
    assert coll.count(Selection(changed_after=five_after)) == 0
    assert paged_ids(coll, Selection(changed_after=five_after, margin_s=0.01)) == ["c"]
    assert coll.count(Selection(changed_after=at_c, margin_s=3600)) == 3  # an hour's margin takes in every one
    assert coll.count(Selection(changed_after=ab, at_or_before=at_c)) == 1


def test_a_rewrite_moves_a_document_past_changed_after(coll):
    coll.put([{"id": "a", "content": "1"}, {"id": "b", "content": "2"}], soft_commit=True)
    before = coll.highest_version()
    coll.put([field_update("a", None, {"md5_hash": MD5})], soft_commit=True)
    assert paged_ids(coll, Selection(changed_after=before)) == ["a"]
    assert paged_ids(coll, Selection(at_or_before=before)) == ["b"]


def test_dated_since_takes_the_date_field_from_the_instant_less_the_margin(coll):
    coll.put([{"id": "x", "expire_at": FUTURE.format(0)}, {"id": "y", "expire_at": FUTURE.format(1)},
              {"id": "z", "content": "no date"}], soft_commit=True)
    assert paged_ids(coll, Selection(dated_since=("expire_at", "2099-01-01T00:01:30.000Z", 60))) == ["y"]
    assert paged_ids(coll, Selection(dated_since=("expire_at", "2099-01-01T00:01:30.000Z", 90))) == ["x", "y"]
    assert paged_ids(coll, Selection(dated_since=("expire_at", "2099-01-01T00:01:00.000Z", 0))) == ["y"]
    assert coll.count(Selection(dated_since=("expire_at", "2099-01-01T00:01:00.001Z", 0))) == 0


def test_highest_of_a_field(coll):
    assert coll.highest("num_shingles") is None and coll.highest_version() is None
    _some_documents(coll)
    assert coll.highest("num_shingles", Selection()) == 5
    assert coll.highest("num_shingles", Selection(dataset="d1", signed=False)) == 0
    assert coll.highest("num_shingles", None) == 9  # the package's own documents count when no selection is given
    assert coll.highest(GROUP_FIELD, Selection()) == 8
    assert coll.highest(GROUP_FIELD, Selection(except_id="d")) == 7
    assert coll.highest("num_shingles", Selection(dataset="d2")) is None
    assert coll.highest_version() == max(version(coll, i) for i in ("a", "b", "c", "d", "__ours__"))


# ----------------------------------------------------------------------------------------------------- the views
def test_searches_see_only_what_was_committed_reads_by_id_everything(coll):
    coll.put([{"id": "a", "content": "text"}])
    assert ids_of(coll.by_ids(["a"], "id")) == ["a"]
    assert coll.count() == 0 and paged_ids(coll, Selection()) == [] and coll.search_ids(["a"], "id") == []
    assert coll.highest("_version_") is None
    coll.commit()
    assert coll.count() == 1 and ids_of(coll.search_ids(["a"], "id")) == ["a"]
    assert coll.highest_version() == version(coll, "a")

    coll.put([{"id": "b", "content": "text"}], commit_within_ms=60_000)
    assert ids_of(coll.by_ids(["b"], "id")) == ["b"] and coll.count() == 1
    coll.commit(visible=False)  # durable only: no new view
    assert coll.count() == 1
    coll.commit(soft=True)
    assert coll.count() == 2

    coll.put([{"id": "c", "content": "text"}], soft_commit=True)
    assert coll.count() == 3


def test_a_committed_view_keeps_the_values_it_was_committed_with(coll):
    coll.put([{"id": "a", "content": "old", "md5_hash": MD5}], soft_commit=True)
    coll.put([field_update("a", None, {"content": "new"})])
    assert coll.by_ids(["a"], "content") == [{"content": "new"}]
    assert coll.search_ids(["a"], "content") == [{"content": "old"}]
    assert coll.first_page(Selection(), "id,content", 5) == [{"id": "a", "content": "old"}]
    coll.commit()
    assert coll.search_ids(["a"], "content") == [{"content": "new"}]


def test_deletes_are_read_at_once_and_searched_after_a_commit(coll):
    coll.put([{"id": i, "content": i} for i in ("a", "b", "c")], soft_commit=True)
    coll.delete(["a", "never there"])
    assert coll.by_ids(["a", "b"], "id") == [{"id": "b"}]
    assert coll.count() == 3
    coll.commit()
    assert coll.count() == 2
    coll.delete(["b"], soft_commit=True)
    assert coll.count() == 1
    coll.delete_now("c")
    assert coll.count() == 0 and coll.by_ids(["a", "b", "c"], "id") == []
    coll.delete([])


# ------------------------------------------------------------------------------------------------------- versions
def test_each_write_gives_a_new_higher_version(coll):
    coll.put([{"id": "a", "content": "1"}])
    first = version(coll, "a")
    coll.put([{"id": "b", "content": "1"}])
    coll.put([{"id": "a", "content": "2"}])
    second = version(coll, "a")
    coll.put([field_update("a", None, {"md5_hash": MD5})])
    third = version(coll, "a")
    assert first < second < third
    assert version(coll, "b") > first


def test_version_minus_one_writes_only_while_the_id_is_free(coll):
    assert coll.create({"id": "k", "content": "first"}, -1)
    assert not coll.create({"id": "k", "content": "second"}, -1)
    assert coll.by_ids(["k"], "content") == [{"content": "first"}]
    error = refused(coll, [{"id": "k", "content": "third", "_version_": -1}])
    assert "k" in str(error)
    coll.delete(["k"])
    assert coll.create({"id": "k", "content": "again"}, -1)  # free again once deleted


def test_version_one_writes_only_while_the_document_exists(coll):
    refused(coll, [{"id": "m", "content": "x", "_version_": 1}])
    assert coll.by_ids(["m"], "id") == []
    coll.put([{"id": "m", "content": "x"}])
    assert coll.create({"id": "m", "content": "y"}, 1)
    assert coll.by_ids(["m"], "content") == [{"content": "y"}]


def test_a_version_above_one_writes_only_at_that_version(coll):
    coll.put([{"id": "v", "content": "1"}])
    read_at = version(coll, "v")
    assert coll.create({"id": "v", "content": "2"}, read_at)
    assert not coll.create({"id": "v", "content": "3"}, read_at)  # the version moved on
    assert coll.by_ids(["v"], "content") == [{"content": "2"}]
    assert coll.create({"id": "v", "content": "4"}, version(coll, "v"))
    assert not coll.create({"id": "nobody", "content": "5"}, read_at)  # no document is at any version
    assert coll.by_ids(["nobody"], "id") == []


def test_a_refused_write_stops_the_request_at_its_document(coll):
    coll.put([{"id": "k", "content": "held"}])
    error = refused(coll, [{"id": "p1", "content": "1"}, {"id": "k", "content": "over", "_version_": -1},
                           {"id": "p3", "content": "3"}])
    assert "k" in str(error)
    assert coll.by_ids(["k"], "content") == [{"content": "held"}]
    assert ids_of(coll.by_ids(["p1"], "id")) == ["p1"]  # written before the refused one
    if coll.is_single_core():
        assert coll.by_ids(["p3"], "id") == []  # a core stops at the refusal


def test_a_refused_request_is_not_committed_by_its_soft_commit(coll):
    coll.put([{"id": "k", "content": "held"}], soft_commit=True)
    refused(coll, [{"id": "p1", "content": "1"}, {"id": "k", "content": "over", "_version_": -1}],
            soft_commit=True)
    assert ids_of(coll.by_ids(["p1"], "id")) == ["p1"]
    if coll.is_single_core():
        assert coll.count() == 1  # Solr commits after the request's last document, which it never reached
    coll.commit()
    assert coll.count() == 2


def test_skipped_conflicts_leave_the_refused_documents_and_write_the_rest(coll):
    coll.put([{"id": "k", "content": "held"}])
    stale = version(coll, "k")
    coll.put([{"id": "k", "content": "moved on"}])
    coll.put([{"id": "p1", "content": "1"},
              {"id": "k", "content": "over", "_version_": -1},
              {"id": "k", "content": "stale", "_version_": stale},
              {"id": "gone", GROUP_FIELD: {"set": 1}, "_version_": 1},
              {"id": "p3", "content": "3"}], skip_conflicts=True, soft_commit=True)
    assert coll.by_ids(["k"], "content") == [{"content": "moved on"}]
    assert coll.by_ids(["gone"], "id") == []
    assert paged_ids(coll, Selection()) == ["k", "p1", "p3"]


def test_set_fields_skips_documents_that_moved_on(coll):
    coll.put([{"id": "a", "content": "1"}, {"id": "b", "content": "2"}])
    read = {d["id"]: int(d["_version_"]) for d in coll.by_ids(["a", "b"], "id,_version_")}
    coll.put([{"id": "b", "content": "changed meanwhile"}])
    coll.set_fields([field_update("a", read["a"], {"md5_hash": MD5}), field_update("b", read["b"], {"md5_hash": MD5}),
                     field_update("gone", None, {"md5_hash": MD5})])
    docs = {d["id"]: d for d in coll.by_ids(["a", "b", "gone"], "id,content,md5_hash")}
    assert docs["a"] == {"id": "a", "content": "1", "md5_hash": MD5}
    assert docs["b"] == {"id": "b", "content": "changed meanwhile"}
    assert docs["gone"] == {"id": "gone", "md5_hash": MD5}  # an update without a version makes the document


# ------------------------------------------------------------------------------------------ atomic and whole writes
def test_an_atomic_set_keeps_the_other_fields_and_none_removes_one(coll):
    coll.put([{"id": "a", "content": "text", "md5_hash": MD5, "num_shingles": 4, "dataset": "d"}])
    coll.put([field_update("a", version(coll, "a"), {"md5_hash": OTHER_MD5, "num_shingles": None})])
    assert coll.by_ids(["a"], "id,content,md5_hash,num_shingles,dataset") == \
        [{"id": "a", "content": "text", "md5_hash": OTHER_MD5, "dataset": "d"}]
    refused(coll, [field_update("a", 12345, {"md5_hash": MD5})])  # at a version it is not at
    coll.put([{"id": "a", "num_shingles": {"set": 2}}], soft_commit=True)
    assert coll.search_ids(["a"], "content,md5_hash,num_shingles") == \
        [{"content": "text", "md5_hash": OTHER_MD5, "num_shingles": 2}]


def test_a_whole_document_replaces_the_one_of_its_id(coll):
    coll.put([{"id": "a", "content": "text", "md5_hash": MD5, "dataset": "d"}])
    coll.put([{"id": "a", "content": "another"}])
    assert coll.by_ids(["a"], "id,content,md5_hash,dataset") == [{"id": "a", "content": "another"}]


def test_group_updates_in_place_keep_the_document(coll):
    coll.put([{"id": "a", "content": "text", "md5_hash": MD5, "num_shingles": 4}])
    coll.put([group_update("a", 3, True)], soft_commit=True)
    coll.put([group_update("a", 3, False)], soft_commit=True)
    assert coll.search_ids(["a"], f"id,content,md5_hash,num_shingles,{GROUP_FIELD},{KEEP_FIELD}") == \
        [{"id": "a", "content": "text", "md5_hash": MD5, "num_shingles": 4, GROUP_FIELD: 3, KEEP_FIELD: 0}]
    refused(coll, [group_update("gone", 3, True)])
    assert coll.by_ids(["gone"], "id") == []  # a deleted document does not come back as a stub


# ---------------------------------------------------------------------------------------------------- the claims
def test_create_only_never_overwrites(coll):
    assert coll.create_only({"id": "k", "content": "first"})  # soft-committed: visible at once
    assert coll.count() == 1
    assert not coll.create_only({"id": "k", "content": "second"})
    assert coll.by_ids(["k"], "content")[0]["content"] == "first"
    assert coll.create_only({"id": "later", "content": "x"}, commit_within_ms=60_000)
    assert coll.by_ids(["later"], "id")  # real-time reads see it before any commit


def test_a_claim_is_won_once_and_names_its_owner(coll):
    won = claim(coll, MD5, "a")
    assert won.won and claim_holder(coll, MD5) == "a"
    stored = coll.by_ids([claim_id(MD5)], "dataset,content")[0]
    assert stored["dataset"] == META_DATASET and json.loads(stored["content"])["owner"] == "a"
    coll.commit()
    assert coll.count() == 0  # a claim is the package's own document
    # The owner's document is not there yet: another text's check sees the add under way.
    lost = claim(coll, MD5, "b")
    assert not lost.won and lost.owner == "a" and lost.pending and lost.owner_document is None
    # Once the owner's document holds the text, the claim names it.
    coll.add([{"id": "a", "content": "the text", "md5_hash": MD5}])
    lost = claim(coll, MD5, "b")
    assert not lost.won and lost.owner == "a" and not lost.pending and lost.owner_document["content"] == "the text"
    # The same record claiming again (an earlier attempt whose answer was lost) goes on.
    coll.delete(["a"])
    assert claim(coll, MD5, "a").won


def _stale_claim_of(coll, owner: str) -> int:
    """A claim of ``owner`` older than the lease, as an add delayed by retries leaves it; returns its version."""
    old = time.time() - CLAIM_LEASE_SECONDS - 1
    coll.add([{"id": claim_id(MD5), "dataset": META_DATASET,
               "content": json.dumps({"owner": owner, "md5": MD5, "claimed_at": old})}])
    return version(coll, claim_id(MD5))


def test_a_stale_claim_is_taken_over_and_a_released_one_is_gone(coll):
    _stale_claim_of(coll, "gone")
    assert claim(coll, MD5, "new").won
    assert claim_holder(coll, MD5) == "new"
    release(coll, claim_id(MD5))
    assert claim_holder(coll, MD5) is None
    assert claim(coll, MD5, "third").won  # a released text is free again


def test_a_claim_whose_owner_changed_text_is_stale(coll):
    old = time.time() - CLAIM_LEASE_SECONDS - 1
    coll.add([{"id": claim_id(MD5), "dataset": META_DATASET,
               "content": json.dumps({"owner": "a", "md5": MD5, "claimed_at": old})},
              {"id": "a", "content": "a text changed since", "md5_hash": OTHER_MD5}])
    assert claim(coll, MD5, "b").won and claim_holder(coll, MD5) == "b"


def test_a_delayed_owner_that_confirms_first_shuts_out_a_takeover_read_before_its_add(coll):
    # The taker read the stale claim (version v) and found no document "a"; then "a" went in and confirmed.
    version_the_taker_read = _stale_claim_of(coll, "a")
    coll.add([{"id": "a", "content": "the text", "md5_hash": MD5}])
    assert confirm_claim(coll, MD5, "a") == "a"
    assert not coll.create(claim_document(MD5, "b", None), version_the_taker_read)  # 409: the version moved on
    assert claim_holder(coll, MD5) == "a"
    # Reading again, the taker finds a fresh claim whose owner's document holds the text.
    lost = claim(coll, MD5, "b")
    assert not lost.won and lost.owner == "a" and not lost.pending


def test_a_delayed_owner_whose_claim_was_taken_over_first_is_told_the_holder(coll):
    version_the_taker_read = _stale_claim_of(coll, "a")
    assert coll.create(claim_document(MD5, "b", None), version_the_taker_read)
    assert confirm_claim(coll, MD5, "a") == "b"
    assert claim_holder(coll, MD5) == "b"  # the confirmation never rewrote another's claim


def test_a_confirmation_claims_again_a_claim_released_under_it(coll):
    assert confirm_claim(coll, MD5, "a") == "a"
    assert claim_holder(coll, MD5) == "a"


def test_a_resent_claim_and_create_that_meets_its_own_first_attempt_took_effect(coll, monkeypatch):
    """The answer of the first attempt lost (Solr killed after it wrote both), the client sends the same request
    again and Solr refuses it (409) because of that attempt's own claim: the add took effect, the claim stays."""
    if not coll.is_single_core():
        pytest.skip("claim_and_create is the single core's way (add_once claims and adds apart elsewhere)")
    real_put = coll.put

    def first_answer_lost(docs, **options):
        real_put(docs, **options)
        return real_put(docs, **options)  # the client's retry of the same request

    monkeypatch.setattr(coll, "put", first_answer_lost)
    document = {"id": "resent", "md5_hash": MD5, "content": "a text whose add was sent twice"}
    assert claims.claim_and_create(coll, MD5, "resent", document, None, None) is True
    monkeypatch.undo()
    assert claim_holder(coll, MD5) == "resent"
    assert coll.by_ids(["resent"], "md5_hash")[0]["md5_hash"] == MD5


def test_a_claim_and_create_refused_by_another_document_under_the_id_raises_exists(coll):
    if not coll.is_single_core():
        pytest.skip("claim_and_create is the single core's way (add_once claims and adds apart elsewhere)")
    assert coll.create_only({"id": "taken", "md5_hash": OTHER_MD5, "content": "another text"})
    document = {"id": "taken", "md5_hash": MD5, "content": "this text"}
    # Our claim goes in, the document after it is refused: the claim is removed and the error names the id.
    with pytest.raises(DocumentExistsError, match="'taken'"):
        claims.claim_and_create(coll, MD5, "taken", document, None, None)
    assert claim_holder(coll, MD5) is None


def test_add_once_adds_a_text_once_and_names_its_owner_after(coll):
    first = coll.add_once({"id": "a", "md5_hash": MD5, "content": "the text"}, MD5)
    assert first.added and first.owner is None
    assert claim_holder(coll, MD5) == "a"
    assert coll.count() == 1  # visible at once (no commit_within_ms)
    again = coll.add_once({"id": "b", "md5_hash": MD5, "content": "the text"}, MD5)
    assert not again.added and again.owner == "a" and not again.pending
    assert again.owner_document is not None and again.owner_document["content"] == "the text"
    assert coll.by_ids(["b"], "id") == []
    # The same add sent again (its first answer lost) finds its own text under its own id.
    same = coll.add_once({"id": "a", "md5_hash": MD5, "content": "the text"}, MD5)
    assert not same.added and same.owner == "a"
    later = coll.add_once({"id": "c", "md5_hash": OTHER_MD5, "content": "another text"}, OTHER_MD5,
                          commit_within_ms=60_000)
    assert later.added and coll.by_ids(["c"], "id") == [{"id": "c"}]


def test_add_once_reports_an_add_under_way(coll):
    assert claim(coll, MD5, "a").won  # a's add has not gone in yet
    pending = coll.add_once({"id": "b", "md5_hash": MD5, "content": "the text"}, MD5)
    assert not pending.added and pending.pending and pending.owner == "a" and pending.owner_document is None
    assert coll.by_ids(["b"], "id") == []


def test_add_once_takes_over_a_stale_claim(coll):
    _stale_claim_of(coll, "gone")
    assert coll.add_once({"id": "b", "md5_hash": MD5, "content": "the text"}, MD5).added
    assert claim_holder(coll, MD5) == "b"


def test_add_once_over_another_text_under_its_id_raises_exists_and_keeps_no_claim(coll):
    assert coll.create_only({"id": "taken", "md5_hash": OTHER_MD5, "content": "another text"})
    with pytest.raises(DocumentExistsError, match="'taken'"):
        coll.add_once({"id": "taken", "md5_hash": MD5, "content": "this text"}, MD5)
    assert claim_holder(coll, MD5) is None
    assert coll.by_ids(["taken"], "md5_hash") == [{"md5_hash": OTHER_MD5}]


def test_concurrent_adds_of_one_text_add_it_once(coll):
    outcomes: dict[str, object] = {}
    start = threading.Barrier(6)

    def add(doc_id: str) -> None:
        start.wait()
        outcomes[doc_id] = coll.add_once({"id": doc_id, "md5_hash": MD5, "content": "one text"}, MD5)

    threads = [threading.Thread(target=add, args=(f"r{i}",)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    added = [i for i, o in outcomes.items() if o.added]  # type: ignore[attr-defined]
    assert len(outcomes) == 6 and len(added) == 1
    assert claim_holder(coll, MD5) == added[0]
    coll.commit()
    assert paged_ids(coll, Selection()) == added


# ----------------------------------------------------------------------------------------------- group numbers
def test_group_numbers_are_disjoint_across_two_processes(coll):
    blocks: list[list[tuple[int, int]]] = [[], []]
    start = threading.Barrier(2)

    def reserve(mine: list[tuple[int, int]]) -> None:
        start.wait()
        for size in (1, 3, 5, 2) * 3:
            mine.append((coll.allocate_groups(size), size))

    threads = [threading.Thread(target=reserve, args=(b,)) for b in blocks]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    numbers = [first + i for mine in blocks for first, size in mine for i in range(size)]
    assert len(numbers) == 2 * 3 * 11 and len(set(numbers)) == len(numbers)
    assert min(numbers) == 1 and max(numbers) == len(numbers)  # one run, no number skipped
    assert coll.allocate_groups(0) == 0


def test_the_counter_starts_above_the_groups_held(coll):
    coll.put([{"id": "a", "content": "x"}])
    coll.write_groups([group_update("a", 41, True)], soft_commit=True)
    assert coll.allocate_groups(2) == 42
    assert coll.allocate_groups(1) == 44
    counter = coll.by_ids([GROUP_COUNTER_ID], "id,dataset")
    assert counter == [{"id": GROUP_COUNTER_ID, "dataset": META_DATASET}]
    coll.commit()
    assert coll.count() == 1  # the counter is the package's own document


def test_groups_in_use_once_a_counter_exists(coll):
    coll.forget_group_numbers()
    assert not coll.groups_in_use()
    first = coll.new_group_number()
    assert coll.groups_in_use()  # this process holds a block
    assert coll.new_group_number() == first + 1
    coll.forget_group_numbers()
    assert coll.groups_in_use()  # the counter says so
    assert coll.new_group_number() > first + 1  # a new block after the last


def test_write_groups_returns_the_ids_gone_and_writes_the_rest(coll):
    coll.put([{"id": i, "dataset": "d1" if i != "c" else "d2", "content": i} for i in ("a", "b", "c", "d")])
    gone = coll.write_groups([group_update("a", 1, True), group_update("gone", 1, False),
                              group_update("b", 1, False), group_update("c", 2, True)], soft_commit=True)
    assert gone == ["gone"]
    assert coll.by_ids(["gone"], "id") == []
    assert coll.groups_of(["a", "b", "c", "d", "gone"]) == \
        {"a": (1, 1), "b": (1, 0), "c": (2, 1), "d": (None, None)}
    assert coll.members_of(1) == {"a": 1, "b": 0}
    assert coll.members_of(3) == {}
    assert list(coll.read_groups()) == [("a", 1, 1), ("b", 1, 0), ("c", 2, 1), ("d", None, None)]
    assert list(coll.read_groups("d2", page_size=1)) == [("c", 2, 1)]
    assert list(coll.read_groups(page_size=1)) == list(coll.read_groups())
    assert coll.count(Selection(group=1)) == 2
    assert coll.write_groups([]) == []


def test_group_writes_are_searched_after_a_commit(coll):
    coll.put([{"id": "a", "content": "x"}], soft_commit=True)
    assert coll.write_groups([group_update("a", 5, True)]) == []
    assert coll.groups_of(["a"]) == {"a": (None, None)}
    coll.commit()
    assert coll.groups_of(["a"]) == {"a": (5, 1)}


__all__ = [name for name in dict(globals()) if name.startswith("test_")]
