"""The engines' logic over the collection port kept in memory (no JVM): group write-back (numbers, kept documents,
stability across runs, documents gone meanwhile), the promotion of a group's next member when its kept document is
deleted, a signing pass's version-conditional writes, and the add-once protocol under concurrent adds. The same
engines against a real Solr: tests/solr/engine/test_group_writeback.py, test_own_collection.py, test_online.py."""

from __future__ import annotations

import threading

import pytest

from neardup_solr.engine.backfill import UNSEEN, signing_pass
from neardup_solr.engine.backfill_summary import BackfillSummary
from neardup_solr.engine.group_upkeep import GroupUpkeep
from neardup_solr.engine.group_writeback import write_groups
from neardup_solr.signing.builder import DocumentBuilder
from neardup_solr.signing.settings import IndexSettings
from neardup_solr.solr.collection import Selection
from neardup_solr.solr.memory_collection import MemoryCollection


def _collection(ids, texts=None) -> MemoryCollection:
    coll = MemoryCollection()
    coll.add([{"id": i, "content": (texts or {}).get(i, f"text of {i}")} for i in ids])
    coll.commit()
    return coll


def _groups(coll: MemoryCollection) -> dict[str, tuple]:
    return {doc_id: (group, keep) for doc_id, group, keep in coll.read_groups()}


def test_write_groups_numbers_each_group_keeps_its_earliest_and_is_stable_across_runs():
    coll = _collection(["1", "2", "3", "4", "5"])
    summary = write_groups(coll, [("2", "3", 0.1), ("3", "4", 0.2)])
    held = _groups(coll)
    assert held["2"][1] == 1 and held["3"][1] == 0 and held["4"][1] == 0  # "2" is the earliest: kept
    assert held["2"][0] == held["3"][0] == held["4"][0]
    assert len({held["1"][0], held["2"][0], held["5"][0]}) == 3  # loners are groups of their own
    assert (summary.groups, summary.singletons, summary.updated) == (1, 2, 5)
    again = write_groups(coll, [("2", "3", 0.1), ("3", "4", 0.2)])
    assert _groups(coll) == held and again.updated == 0 and again.unchanged == 5


def test_write_groups_leaves_a_document_deleted_meanwhile_deleted():
    coll = _collection(["a", "b", "c"])
    pairs = [("a", "b", 0.1), ("b", "c", 0.1)]

    real_put = coll.put

    def delete_b_first(docs, **options):  # another client deletes "b" just before the groups are written
        if any(d.get("id") == "b" and isinstance(d.get("nd_group"), dict) for d in docs):
            coll.delete(["b"])
            coll.commit()
        return real_put(docs, **options)

    coll.put = delete_b_first  # type: ignore[method-assign]
    summary = write_groups(coll, pairs)
    assert summary.gone == ["b"] and not coll.by_ids(["b"])  # not brought back as a stub of two fields
    assert set(_groups(coll)) == {"a", "c"}


def test_deleting_a_groups_kept_document_promotes_its_earliest_remaining_member():
    coll = _collection(["1", "2", "3", "9"])
    write_groups(coll, [("2", "3", 0.1), ("3", "9", 0.1)])
    group = _groups(coll)["2"][0]
    with GroupUpkeep(coll).deleting(["2"]):
        coll.delete(["2"])
        coll.commit()
    held = _groups(coll)
    assert held["3"] == (group, 1) and held["9"] == (group, 0)
    assert coll.members_of(group) == {"3": 1, "9": 0}


def test_a_signing_pass_writes_at_the_version_read_and_a_document_changed_meanwhile_is_signed_again():
    coll = _collection(["a", "b"], {"a": "the first text here", "b": "the second text here"})
    builder = DocumentBuilder(IndexSettings())
    real_set = coll.set_fields
    changed = []

    def edit_b_first(updates, **options):  # another writer replaces "b" between our read and our write
        if not changed:
            coll.add([{"id": "b", "content": "an edited second text"}])
            coll.commit()
            changed.append(True)
        return real_set(updates, **options)

    coll.set_fields = edit_b_first  # type: ignore[method-assign]
    summary = BackfillSummary()
    signing_pass(coll, builder, UNSEEN, summary)
    assert coll.count(Selection(seen=True)) == 1  # "a"; "b"'s write named a version that had moved on
    assert coll.by_ids(["b"], "content")[0]["content"] == "an edited second text"  # the other writer's text kept
    signing_pass(coll, builder, UNSEEN, BackfillSummary())
    assert coll.count(UNSEEN) == 0
    signed_b = coll.by_ids(["b"], "md5_hash,num_shingles")[0]
    assert signed_b["md5_hash"] == builder.build([("b", "an edited second text")]).documents[0]["md5_hash"]


def test_concurrent_adds_of_one_text_write_exactly_one():
    coll = MemoryCollection()
    winners, start = [], threading.Barrier(8)

    def add(n: int) -> None:
        start.wait()
        outcome = coll.add_once({"id": f"doc{n}", "content": "the same text", "md5_hash": "m" * 32}, "m" * 32)
        if outcome.added:
            winners.append(n)

    threads = [threading.Thread(target=add, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    coll.commit()
    assert len(winners) == 1
    assert coll.count() == 1 and coll.first_page(Selection(), "id", 10)[0]["id"] == f"doc{winners[0]}"


@pytest.mark.parametrize("representative", ["earliest", "longest"])
def test_write_groups_representative_rule(representative):
    coll = _collection(["1", "2"], {"1": "short", "2": "a much longer text than the first"})
    write_groups(coll, [("1", "2", 0.1)], representative=representative)
    kept = [doc_id for doc_id, (_, keep) in _groups(coll).items() if keep == 1]
    assert kept == (["1"] if representative == "earliest" else ["2"])
