"""neardup_solr.solr.claims against a real Solr: the create-only add that check_and_add and NearDupIndex.insert
share, and the claim on a text (won, lost to an owner, pending, stale and taken over). The whole protocol under
concurrency is tests/solr/engine/test_online.py's."""

from __future__ import annotations

import json
import time

from neardup_solr.signing.settings import META_DATASET
from neardup_solr.solr.claims import (
    CLAIM_LEASE_SECONDS,
    claim,
    claim_holder,
    claim_document,
    claim_id,
    confirm_claim,
    release,
)
from neardup_solr.solr.collection import SolrCollection

MD5 = "0123456789abcdef0123456789abcdef"


def test_create_only_never_overwrites(solr):
    assert SolrCollection(solr).create_only({"id": "k", "content": "first"})  # soft-committed: visible at once
    assert solr.count("id:k") == 1
    assert not SolrCollection(solr).create_only({"id": "k", "content": "second"})
    assert solr.get_by_ids(["k"], "content")[0]["content"] == "first"
    assert SolrCollection(solr).create_only({"id": "later", "content": "x"}, commit_within_ms=60_000)
    assert solr.get_by_ids(["later"], "id")  # real-time get sees it before any commit


def test_a_claim_is_won_once_and_names_its_owner(solr):
    won = claim(SolrCollection(solr), MD5, "a")
    assert won.won and claim_holder(SolrCollection(solr), MD5) == "a"
    stored = solr.get_by_ids([claim_id(MD5)], "dataset,content")[0]
    assert stored["dataset"] == META_DATASET and json.loads(stored["content"])["owner"] == "a"
    # The owner's document is not there yet: another text's check sees the add under way.
    lost = claim(SolrCollection(solr), MD5, "b")
    assert not lost.won and lost.owner == "a" and lost.pending and lost.owner_document is None
    # Once the owner's document holds the text, the claim names it.
    solr.add([{"id": "a", "content": "the text", "md5_hash": MD5}])
    lost = claim(SolrCollection(solr), MD5, "b")
    assert not lost.won and lost.owner == "a" and not lost.pending and lost.owner_document["content"] == "the text"
    # The same record claiming again (an earlier attempt whose answer was lost) goes on.
    solr.delete_ids(["a"])
    assert claim(SolrCollection(solr), MD5, "a").won


def test_a_stale_claim_is_taken_over_and_a_released_one_is_gone(solr):
    old = time.time() - CLAIM_LEASE_SECONDS - 1
    solr.add([{"id": claim_id(MD5), "dataset": META_DATASET,
               "content": json.dumps({"owner": "gone", "md5": MD5, "claimed_at": old})}])
    assert claim(SolrCollection(solr), MD5, "new").won
    assert claim_holder(SolrCollection(solr), MD5) == "new"
    release(SolrCollection(solr), claim_id(MD5))
    assert claim_holder(SolrCollection(solr), MD5) is None


def _stale_claim_of(solr, owner: str) -> int:
    """A claim of ``owner`` older than the lease, as an add delayed by retries leaves it; returns its version."""
    old = time.time() - CLAIM_LEASE_SECONDS - 1
    solr.add([{"id": claim_id(MD5), "dataset": META_DATASET,
               "content": json.dumps({"owner": owner, "md5": MD5, "claimed_at": old})}])
    return int(solr.get_by_ids([claim_id(MD5)], "_version_")[0]["_version_"])


def test_a_delayed_owner_that_confirms_first_shuts_out_a_takeover_read_before_its_add(solr):
    # The taker read the stale claim (version v) and found no document "a"; then "a" went in and confirmed.
    version_the_taker_read = _stale_claim_of(solr, "a")
    solr.add([{"id": "a", "content": "the text", "md5_hash": MD5}])
    assert confirm_claim(SolrCollection(solr), MD5, "a") == "a"
    assert not SolrCollection(solr).create(claim_document(MD5, "b", None), version_the_taker_read)  # 409: the version moved on
    assert claim_holder(SolrCollection(solr), MD5) == "a"
    # Reading again, the taker finds a fresh claim whose owner's document holds the text.
    lost = claim(SolrCollection(solr), MD5, "b")
    assert not lost.won and lost.owner == "a" and not lost.pending


def test_a_delayed_owner_whose_claim_was_taken_over_first_is_told_the_holder(solr):
    version_the_taker_read = _stale_claim_of(solr, "a")
    assert SolrCollection(solr).create(claim_document(MD5, "b", None), version_the_taker_read)
    assert confirm_claim(SolrCollection(solr), MD5, "a") == "b"
    assert claim_holder(SolrCollection(solr), MD5) == "b"  # the confirmation never rewrote another's claim


def test_a_confirmation_claims_again_a_claim_released_under_it(solr):
    assert confirm_claim(SolrCollection(solr), MD5, "a") == "a"
    assert claim_holder(SolrCollection(solr), MD5) == "a"


def test_a_resent_claim_and_create_that_meets_its_own_first_attempt_took_effect(solr, monkeypatch):
    """The answer of the first attempt lost (Solr killed after it wrote both), the client sends the same request
    again and Solr refuses it (409) because of that attempt's own claim: the add took effect, the claim stays."""
    from neardup_solr.solr import claims

    coll = SolrCollection(solr)
    real_put = coll.put

    def first_answer_lost(docs, **options):
        real_put(docs, **options)
        return real_put(docs, **options)  # the client's retry of the same request

    monkeypatch.setattr(coll, "put", first_answer_lost)
    document = {"id": "resent", "md5_hash": MD5, "content": "a text whose add was sent twice"}
    assert claims.claim_and_create(coll, MD5, "resent", document, None, None) is True
    assert claim_holder(SolrCollection(solr), MD5) == "resent"
    assert solr.get_by_ids(["resent"], "md5_hash")[0]["md5_hash"] == MD5


def test_a_claim_and_create_refused_by_another_document_under_the_id_raises_exists(solr):
    from neardup_solr.errors import DocumentExistsError
    from neardup_solr.solr import claims

    assert SolrCollection(solr).create_only({"id": "taken", "md5_hash": "f" * 32, "content": "another text"})
    document = {"id": "taken", "md5_hash": MD5, "content": "this text"}
    # Our claim goes in, the document after it is refused: the claim is removed and the error names the id.
    try:
        claims.claim_and_create(SolrCollection(solr), MD5, "taken", document, None, None)
    except DocumentExistsError as exc:
        assert "'taken'" in str(exc)
    else:
        raise AssertionError("a create over another document was not refused")
    assert claim_holder(SolrCollection(solr), MD5) is None
