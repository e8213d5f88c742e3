"""check_and_add(strict=True) against a real Solr core (issue 47, point 1): of two different near-duplicate texts
checked at the same moment by different processes, exactly one is added; band locks of a crashed holder are taken
over after their lease (and what it added is seen); locks never show in lookups, reports or counts; deletes keep
working. The same lockstep test on a local SolrCloud: test_strict_check_cloud.py."""

from __future__ import annotations

import itertools
import multiprocessing as mp
import os
import threading
import time

import pytest

from strict_pairs import admitted_per_group, check_in_lockstep, near_duplicate_groups

from neardup_solr import NearDupIndex, ThresholdOptions, find_pairs
from neardup_solr.engine import online
from neardup_solr.engine.online import check_and_add, delete_documents
from neardup_solr.errors import BandLocksBusyError, InvalidParameterError
from neardup_solr.solr import band_locks
from neardup_solr.solr.band_locks import LOCK_PREFIX, acquire, lock_ids, release
from neardup_solr.solr.collection import SolrCollection
from neardup_solr.solr.client import SolrClient
from neardup_solr.solr.searcher import Searcher

pytestmark = pytest.mark.solr

SEED_TEXT = "seed text that stores the collection settings first"


def lock_documents(client: SolrClient) -> list[str]:
    """Every band lock the searcher shows after a soft commit (none should be left once checks are done)."""
    SolrCollection(client).commit(soft=True)
    docs = client.select([("q", "{!prefix f=id v=$p}"), ("p", LOCK_PREFIX), ("fl", "id"), ("rows", 1000)])
    return [d["id"] for d in docs["response"]["docs"]]


def band_keys(client: SolrClient, text: str) -> set[int]:
    searcher = Searcher(client)
    return set(searcher.band_keys_of(searcher.prepare(text)).tolist())


def every_pair_shares_a_band(client: SolrClient, texts: list[str]) -> bool:
    keys = [band_keys(client, t) for t in texts]
    return all(a & b for a, b in itertools.combinations(keys, 2))


@pytest.fixture()
def seeded(solr):
    assert check_and_add(solr, "seed", SEED_TEXT).added  # stores the default settings (threshold 0.8)
    return solr


def test_two_processes_in_lockstep_admit_each_pair_exactly_once(seeded):
    groups = near_duplicate_groups(200)
    # The guarantee covers the pairs whose signatures share an LSH band; at J = 0.9 that is 1 - 8e-6 of them.
    assert all(every_pair_shares_a_band(seeded, g) for g in groups)
    started = time.perf_counter()
    answers = check_in_lockstep(seeded.url, groups, strict=True)
    elapsed = time.perf_counter() - started
    counts = admitted_per_group(answers, len(groups))
    assert counts == [1] * len(groups), [i for i, c in enumerate(counts) if c != 1]
    for doc_id, added, matches, _ in answers:
        if not added:  # the loser names its own group's winner, and nothing else
            group = doc_id.split("-")[0]
            assert len(matches) == 1 and matches[0].startswith(group + "-"), (doc_id, matches)
    assert lock_documents(seeded) == []
    seconds = sorted(s for *_, s in answers)
    print(f"\nstrict, 2 processes, {len(groups)} pairs: {sum(counts)} added, {elapsed:.1f} s; check p50 "
          f"{1000 * seconds[len(seconds) // 2]:.1f} ms, p95 {1000 * seconds[int(len(seconds) * 0.95)]:.1f} ms")


def test_four_processes_in_lockstep_admit_one_text_of_each_group(seeded):
    candidates = near_duplicate_groups(60, size=4, seed=48)
    groups = [g for g in candidates if every_pair_shares_a_band(seeded, g)][:50]
    assert len(groups) >= 40
    answers = check_in_lockstep(seeded.url, groups, strict=True)
    assert admitted_per_group(answers, len(groups)) == [1] * len(groups)
    assert lock_documents(seeded) == []


def test_without_strict_both_may_be_added(seeded):
    """The race strict closes, measured (not asserted: it depends on timing)."""
    groups = near_duplicate_groups(40, seed=49)
    answers = check_in_lockstep(seeded.url, groups, strict=False)
    counts = admitted_per_group(answers, len(groups))
    assert all(c in (1, 2) for c in counts)
    print(f"\nnot strict, 2 processes, {len(groups)} pairs: {counts.count(2)} admitted twice")


def _hold_and_crash(url: str, text: str, add_too: bool, lease: float, ready) -> None:
    """A holder that dies holding its band locks (and, with ``add_too``, after adding its text without a commit)."""
    client = SolrClient(url)
    searcher = Searcher(client)
    query = searcher.prepare(text, "crashed")
    acquire(client, searcher.band_keys_of(query), "crashed", lease_seconds=lease)
    if add_too:
        document = searcher.builder.build_prepared("crashed", text, query.processed, query.signature, None,
                                                   band_keys_row=searcher.band_keys_of(query))
        assert SolrCollection(client).create_only(document, commit_within_ms=3_600_000)  # invisible to searches for an hour
    ready.set()
    os._exit(1)  # no release, no commit


def _crash_holding(url: str, text: str, *, add_too: bool, lease: float) -> float:
    ctx = mp.get_context("spawn")
    ready = ctx.Event()
    holder = ctx.Process(target=_hold_and_crash, args=(url, text, add_too, lease, ready))
    holder.start()
    assert ready.wait(timeout=120)
    crashed_at = time.monotonic()
    holder.join(timeout=60)
    return crashed_at


def test_a_crashed_holders_locks_are_taken_over_after_their_lease(seeded):
    text, near = near_duplicate_groups(1, seed=50)[0]
    crashed_at = _crash_holding(seeded.url, text, add_too=False, lease=3.0)
    result = check_and_add(seeded, "after", near, strict=True)
    waited = time.monotonic() - crashed_at
    assert result.added  # the crashed holder never added its text
    assert waited >= 2.0  # it waited for the lease (3 s from the holder's acquisition)
    # The crashed holder's locks in the bands the two texts do not share are still there: Solr's time to live
    # deletes them later, or a check in one of those bands takes them over, as the next one does.
    left = seeded.get_by_ids(lock_documents(seeded), "id,content,expire_at")
    assert left and {band_locks.lock_info(d)["owner"] for d in left} == {"crashed"}
    assert all(d.get("expire_at") for d in left)
    again = check_and_add(seeded, "again", text, strict=True)
    assert not again.added and [m.id for m in again.matches] == ["after"]
    assert lock_documents(seeded) == []


def test_what_a_crashed_holder_added_is_seen_by_the_check_that_takes_its_locks_over(seeded):
    text, near = near_duplicate_groups(1, seed=51)[0]
    _crash_holding(seeded.url, text, add_too=True, lease=2.0)
    result = check_and_add(seeded, "after", near, strict=True)
    assert not result.added and [m.id for m in result.matches] == ["crashed"]


def test_a_check_waits_for_a_live_holder_and_gives_up_after_its_wait(seeded):
    text, near = near_duplicate_groups(1, seed=52)[0]
    searcher = Searcher(seeded)
    keys = searcher.band_keys_of(searcher.prepare(text))
    held = acquire(seeded, keys, "holder")
    # Another check of a near duplicate gives up after its wait, leaving nothing of its own behind.
    with pytest.raises(BandLocksBusyError, match="'holder'"):
        acquire(seeded, band_keys(seeded, near), "impatient", wait_seconds=0.3)
    seen = {d["id"]: d for d in seeded.get_by_ids(lock_ids(keys), "id,content")}
    assert set(seen) == set(held.versions)
    assert {band_locks.lock_info(d)["owner"] for d in seen.values()} == {"holder"}
    # A strict check waits while the lock is held and goes on as soon as it is released.
    answers = []
    waiter = threading.Thread(target=lambda: answers.append(check_and_add(SolrClient(seeded.url), "near", near,
                                                                          strict=True)))
    started = time.monotonic()
    waiter.start()
    time.sleep(0.5)
    assert answers == []
    assert release(seeded, held)
    waiter.join(timeout=60)
    assert answers and answers[0].added and time.monotonic() - started >= 0.5
    assert lock_documents(seeded) == []


def test_locks_never_show_in_lookups_reports_or_counts(seeded):
    text, twin, third = near_duplicate_groups(1, size=3, seed=53)[0]
    assert check_and_add(seeded, "kept", text, strict=True).added
    index = NearDupIndex(seeded)
    index.insert("twin", twin)  # no check: a pair for the report
    index.flush()
    searcher = Searcher(seeded)
    held = acquire(seeded, searcher.band_keys_of(searcher.prepare(third)), "pending")
    try:
        assert len(lock_documents(seeded)) == len(held.versions) > 0  # there, and visible to the searcher
        assert len(index) == 3 and sorted(index.keys()) == ["kept", "seed", "twin"]
        assert sorted(index.query(third, threshold=0.5)) == ["kept", "twin"]
        assert sorted(m.id for m in searcher.find_near_dups_of_text(third, mode="lsh")) == ["kept", "twin"]
        pairs = find_pairs(seeded, ThresholdOptions(threshold=0.5, method="lsh"))
        assert [(p.id, p.neighbor_id) for p in pairs] == [("kept", "twin")]
        only = check_and_add(seeded, "probe", third, add=False)
        assert sorted(m.id for m in only.matches) == ["kept", "twin"]
    finally:
        assert release(seeded, held)
    assert lock_documents(seeded) == []


def test_deletes_keep_working_and_lock_ids_are_reserved(seeded):
    text, near = near_duplicate_groups(1, seed=54)[0]
    assert check_and_add(seeded, "a", text, strict=True).added
    assert not check_and_add(seeded, "b", near, strict=True).added
    lock = lock_ids(band_keys(seeded, text))[0]
    result = delete_documents(seeded, ["a", lock])
    assert result.deleted == ["a"] and result.missing == [lock]
    assert check_and_add(seeded, "b", near, strict=True).added  # its near duplicate is gone
    with pytest.raises(InvalidParameterError, match="reserved"):
        check_and_add(seeded, lock, "any text at all", strict=True)
    assert lock_documents(seeded) == []


def test_near_dup_index_strict_option_and_pickling(seeded):
    import pickle

    text, near = near_duplicate_groups(1, seed=55)[0]
    index = NearDupIndex(seeded, strict=True)
    copy = pickle.loads(pickle.dumps(index))
    assert copy.strict is True
    assert index.check_and_add("a", text).added
    assert not copy.check_and_add("b", near).added
    assert index.check_and_add("c", near, strict=False, threshold=0.99).added
    with pytest.raises(InvalidParameterError):
        NearDupIndex(seeded, strict="yes")


def test_a_holder_whose_locks_lapsed_checks_again_and_yields(seeded, monkeypatch):
    """A hold that outlived its lease: another check took a lock over and added a near duplicate meanwhile.
    The holder finds out when it releases, checks again under the locks and removes its own add."""
    text, near = near_duplicate_groups(1, seed=56)[0]
    searcher = Searcher(seeded)
    real_release = band_locks.release
    calls = []

    def release_after_a_takeover(client, held):
        if not calls:
            calls.append(held.owner)
            # What the taker did while our locks had lapsed: it looked up before our add was visible, and added.
            query = searcher.prepare(near, "taker")
            document = searcher.builder.build_prepared("taker", near, query.processed, query.signature, None,
                                                       band_keys_row=searcher.band_keys_of(query))
            assert SolrCollection(seeded).create_only(document)  # soft-committed
            real_release(client, held)
            return False
        return real_release(client, held)

    monkeypatch.setattr(online.band_locks, "release", release_after_a_takeover)
    result = check_and_add(seeded, "holder", text, strict=True)
    assert calls == ["holder"]
    assert not result.added and result.status == "duplicate" and [m.id for m in result.matches] == ["taker"]
    assert seeded.get_by_ids(["holder"]) == [] and seeded.get_by_ids(["taker"])


def test_a_lock_write_retried_past_the_lease_counts_as_lapsed_when_released(seeded, monkeypatch):
    """A lock write that Solr took only after the client retried it through an outage carries the stamp of its
    first attempt, so another check may take it over at once and be done before the holder releases. The
    holder's release must then say the hold lapsed (it finds its locks gone), not take them for deleted by a
    retried request of its own: that was how the soak benchmark admitted near-duplicate pairs twice."""
    text, near = near_duplicate_groups(1, seed=57)[0]
    keys_a = band_keys(seeded, text)
    keys_b = band_keys(seeded, near)
    assert keys_a & keys_b
    lease = 1.0
    real_write = band_locks._write
    delayed = []

    def write_after_an_outage(client, docs):
        if not delayed:  # the holder's first write: built before the outage, sent after it
            delayed.append(True)
            time.sleep(lease + 0.5)
        return real_write(client, docs)

    monkeypatch.setattr(band_locks, "_write", write_after_an_outage)
    holder = acquire(seeded, keys_a, "holder", lease_seconds=lease)
    assert delayed and holder.versions
    taker = acquire(seeded, keys_b, "taker", lease_seconds=lease)
    assert taker.taken_over  # the holder's fresh write already looked stale
    assert release(seeded, taker)
    assert release(seeded, holder) is False
    assert lock_documents(seeded) == []
