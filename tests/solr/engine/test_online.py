"""check_and_add against a real Solr: answers, refusals, and the race-freedom guarantee under real concurrency
(threads in one process and separate processes released at the same instant)."""

from __future__ import annotations

import json
import multiprocessing as mp
import threading
import time

import pytest

from neardup_solr import IndexSettings, Indexer, InvalidParameterError, InvalidTextError, ParameterTypeError
from neardup_solr.solr.documents import META_DATASET
from neardup_solr.engine.online import CLAIM_LEASE_SECONDS, check_and_add, claim_id, delete_dataset, delete_documents
from neardup_solr.errors import DocumentExistsError
from neardup_solr.solr.searcher import Searcher
from neardup_solr.solr.client import SolrClient

pytestmark = pytest.mark.solr

BASE = ("the quick brown fox jumps over the lazy dog near the river bank while the farmer watches from "
        "his old wooden porch and the sun sets slowly behind the distant hills of the valley")


def user_ids(client: SolrClient) -> list[str]:
    docs = client.select([("q", "*:*"), ("fq", "-{!term f=dataset v=$m}"), ("m", META_DATASET),
                          ("fl", "id"), ("rows", 1000)])["response"]["docs"]
    return sorted(d["id"] for d in docs if not d["id"].startswith("__neardup_"))


def test_adds_new_text_and_refuses_near_duplicate(solr):
    first = check_and_add(solr, "a", BASE, 0.5)
    assert first.added and first.status == "added" and first.matches == []
    near = check_and_add(solr, "b", BASE.replace("lazy", "sleepy"), 0.5)
    assert not near.added and near.status == "duplicate"
    assert [m.id for m in near.matches] == ["a"]
    match = near.matches[0]
    assert match.edit_distance == 1 and not match.exact and 0.5 <= match.similarity < 1.0
    # The copy with one extra leading word is found: no first-word filter in a check.
    lead = check_and_add(solr, "c", "breaking " + BASE, 0.5)
    assert not lead.added and lead.matches[0].id == "a" and lead.matches[0].edit_distance == 1
    unrelated = check_and_add(solr, "d", "a completely different sentence about tax forms and paperwork", 0.5)
    assert unrelated.added
    assert user_ids(solr) == ["a", "d"]


def test_check_only_and_threshold_above_similarity(solr):
    check_and_add(solr, "a", BASE, 0.5)
    variant = BASE.replace("quick brown", "slow grey")
    only = check_and_add(solr, "x", variant, 0.5, add=False)
    assert only.status == "checked" and not only.added and only.matches[0].id == "a"
    assert user_ids(solr) == ["a"]
    similarity = only.matches[0].similarity
    strict = check_and_add(solr, "x", variant, min(1.0, similarity + 0.05))
    assert strict.added and strict.matches == []
    assert user_ids(solr) == ["a", "x"]


def test_exact_duplicate_and_retry_of_same_id(solr):
    assert check_and_add(solr, "a", BASE, 0.9).added
    same = check_and_add(solr, "b", BASE.upper() + "!!", 0.9)  # normalises to the same text
    assert not same.added and same.matches[0].id == "a" and same.matches[0].exact
    assert same.matches[0].similarity == 1.0 and same.matches[0].edit_distance == 0
    retry = check_and_add(solr, "a", BASE, 0.9)
    assert retry.status == "already_indexed" and not retry.added


def test_never_overwrites_an_existing_id(solr):
    assert check_and_add(solr, "a", BASE, 0.9).added
    with pytest.raises(DocumentExistsError, match="already holds another document"):
        check_and_add(solr, "a", "another text about something else entirely, nothing alike", 0.9)
    assert Searcher(solr).get_by_id("a").content == BASE
    # The refused text's claim was released: it can be added under a free id.
    assert check_and_add(solr, "b", "another text about something else entirely, nothing alike", 0.9).added


def test_bad_arguments_raise_typed_errors_before_any_write(solr):
    with pytest.raises(InvalidParameterError):
        check_and_add(solr, "a", BASE, 1.5)
    with pytest.raises(InvalidParameterError):
        check_and_add(solr, "a", BASE, float("nan"))
    with pytest.raises(ParameterTypeError):
        check_and_add(solr, "a", None, 0.5)
    with pytest.raises(ParameterTypeError):
        check_and_add(solr, "a", BASE, 0.5, add="yes")
    with pytest.raises(InvalidParameterError):
        check_and_add(solr, "tab\there", BASE, 0.5)
    with pytest.raises(InvalidParameterError, match="reserved"):
        check_and_add(solr, "__neardup_settings__", BASE, 0.5)
    with pytest.raises(InvalidTextError):
        check_and_add(solr, "a", " ... !!! ", 0.5)
    assert user_ids(solr) == []


def test_lsh_only_collection_is_checked_through_bands(solr):
    Indexer(solr, IndexSettings(fields=("lsh",))).index_records([("seed", "unrelated seed text for the settings")])
    assert check_and_add(solr, "a", BASE, 0.8).added
    near = check_and_add(solr, "b", BASE + " again", 0.8)
    assert not near.added and near.matches[0].id == "a"


def test_delete_releases_claims_and_dataset_delete(solr):
    assert check_and_add(solr, "a", BASE, 0.9, dataset="news").added
    assert solr.get_by_ids([claim_id(Searcher(solr).get_by_id("a").md5_hash)])
    result = delete_documents(solr, ["a", "missing", "__neardup_settings__"])
    assert result.deleted == ["a"] and result.missing == ["missing", "__neardup_settings__"]
    assert check_and_add(solr, "a2", BASE, 0.9, dataset="news").added
    assert check_and_add(solr, "z", "other words entirely for the other data set", 0.9, dataset="blog").added
    assert delete_dataset(solr, "news") == 1
    assert user_ids(solr) == ["z"]
    # The claim of a2's text is stale now (owner gone) but within its lease: reported as pending, not added.
    pending = check_and_add(solr, "a3", BASE, 0.9)
    assert not pending.added and pending.matches[0].id == "a2" and pending.matches[0].pending


def test_stale_claim_is_taken_over(solr):
    """A claim whose owner never arrived (a crash between claim and add), older than the lease, is taken over."""
    assert check_and_add(solr, "a", BASE, 0.9).added
    md5 = Searcher(solr).get_by_id("a").md5_hash
    solr.delete_ids(["a"])  # the owner disappears without its claim (deleted by other means)
    solr.commit()
    old = time.time() - CLAIM_LEASE_SECONDS - 1
    solr.add([{"id": claim_id(md5), "dataset": META_DATASET,
               "content": json.dumps({"owner": "a", "md5": md5, "claimed_at": old})}])
    taken = check_and_add(solr, "b", BASE, 0.9)
    assert taken.added
    assert user_ids(solr) == ["b"]


def test_a_claim_left_by_the_same_records_earlier_attempt_lets_it_in(solr):
    """An attempt whose answer was lost left its claim but not its document (a retried create then meets its own
    claim): the record is added, not reported as a duplicate of itself."""
    check_and_add(solr, "seed", "seed text that stores the collection settings first", 0.9)
    md5 = Searcher(solr).prepare(BASE).md5_hash
    solr.add([{"id": claim_id(md5), "dataset": META_DATASET,
               "content": json.dumps({"owner": "x", "md5": md5, "claimed_at": time.time()})}])
    solr.commit()
    assert check_and_add(solr, "x", BASE, 0.9).added
    other = check_and_add(solr, "y", BASE, 0.9)
    assert not other.added and [m.id for m in other.matches] == ["x"]


def test_identical_texts_at_the_same_moment_from_threads(solr):
    check_and_add(solr, "seed", "seed text that stores the collection settings first", 0.8)
    barrier = threading.Barrier(8)
    results = []

    def worker(n: int) -> None:
        client = SolrClient(solr.url)
        barrier.wait()
        results.append(check_and_add(client, f"t{n}", BASE, 0.8))

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    added = [r.id for r in results if r.added]
    assert len(added) == 1
    assert all(r.matches and r.matches[0].id == added[0] for r in results if not r.added)
    assert user_ids(solr) == sorted(["seed", *added])


def test_near_duplicates_at_the_same_moment_from_threads(solr):
    """Different texts that are near duplicates (J >= 0.8): within one process only one is added."""
    check_and_add(solr, "seed", "seed text that stores the collection settings first", 0.8)
    texts = [BASE + f" {suffix}" for suffix in ("alpha", "beta", "gamma", "delta", "epsilon", "zeta")]
    barrier = threading.Barrier(len(texts))
    results = []

    def worker(n: int) -> None:
        client = SolrClient(solr.url)
        barrier.wait()
        results.append(check_and_add(client, f"n{n}", texts[n], 0.8))

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(len(texts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(r.added for r in results) == 1


def _process_worker(url: str, n: int, text: str, barrier, queue) -> None:
    client = SolrClient(url)
    barrier.wait()
    result = check_and_add(client, f"p{n}", text, 0.8)
    queue.put((result.id, result.added, [m.id for m in result.matches]))


def test_identical_texts_at_the_same_moment_from_processes(solr):
    check_and_add(solr, "seed", "seed text that stores the collection settings first", 0.8)
    ctx = mp.get_context("spawn")
    barrier, queue = ctx.Barrier(4), ctx.Queue()
    procs = [ctx.Process(target=_process_worker, args=(solr.url, n, BASE, barrier, queue)) for n in range(4)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    added = [rid for rid, ok, _ in results if ok]
    assert len(added) == 1, results
    assert all(matches == added for rid, ok, matches in results if not ok)
    assert user_ids(solr) == sorted(["seed", *added])
