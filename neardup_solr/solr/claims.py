"""Create-only writes and the claims on a text: the update bodies the online mode sends, in one place.

A create-only add carries Solr's optimistic concurrency ``_version_ = -1`` ("only if no document has this id"):
Solr decides it under the id's version lock on the shard leader, uncommitted documents included, and answers
HTTP 409 when the id is taken. A claim is such a create of a small document whose id is derived from the MD5 of
a normalised text (``__neardup_claim__:<md5>``): of any number of concurrent claims on one text exactly one is
written. :func:`neardup_solr.engine.online.check_and_add` claims a text before it adds it;
:meth:`neardup_solr.NearDupIndex.insert` adds create-only. See :mod:`neardup_solr.engine.online` for the
protocol as a whole and its limits.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from neardup_solr.errors import DocumentExistsError, NeardupError, SolrRequestError
from neardup_solr.signing.settings import META_DATASET

if TYPE_CHECKING:
    from neardup_solr.solr.port import CollectionPrimitives as Collection

log = logging.getLogger("neardup_solr.engine.online")  # the online mode's log, as before the move

CLAIM_PREFIX = "__neardup_claim__:"
# Longer than any claim-to-add takes (one soft-committed add of one document), so a live owner is never robbed.
CLAIM_LEASE_SECONDS = 30.0
# Takes of a claim that keeps changing under concurrent checks before giving up.
CLAIM_ATTEMPTS = 8


def claim_id(md5_hash: str) -> str:
    """The id of the claim document of a normalised text's MD5."""
    return CLAIM_PREFIX + md5_hash


def claim_holder(coll: Collection, md5_hash: str) -> str | None:
    """Who holds the claim on a text now, read from the shard leader's real-time view (None: no claim)."""
    found = coll.by_ids([claim_id(md5_hash)], "id,content", from_leaders=True)
    return (str(claim_info(found[0]).get("owner", "")) or None) if found else None


def confirm_claim(coll: Collection, md5_hash: str, doc_id: str, ttl: str | None = None) -> str | None:
    """After ``doc_id``'s document is in: rewrite its claim, conditional on the version just read, and return who
    holds the claim (``doc_id`` when it is still ours).

    Reading the holder is not enough. A check that found our claim stale (our add was delayed past the lease by
    retries through a partition) and our document absent takes the claim over with a write conditional on the
    claim's version; if that write lands after our read, both texts stay. Rewriting the claim changes its version,
    so of our rewrite and such a takeover exactly one succeeds: either the taker gets 409 (and, reading again, finds
    a fresh claim and our document), or we read the taker as the holder and remove our add."""
    cid = claim_id(md5_hash)
    mine: dict[str, Any] | None = None
    for _ in range(CLAIM_ATTEMPTS):
        seen = coll.by_ids([cid], "id,content,_version_", from_leaders=True)
        if seen and mine is not None and seen[0].get("content") == mine["content"]:
            # Our last write took effect and its 409 came from the client sending it again (an answer lost, or
            # fewer replicas than min_replicas acknowledged it): the nonce says it is this very write.
            return doc_id
        if seen:
            owner = str(claim_info(seen[0]).get("owner", ""))
            if owner != doc_id:
                return owner or None
        # Rewrite our claim; with none left (released or expired while our document went in), claim the text again.
        mine = claim_document(md5_hash, doc_id, ttl)
        if coll.create(mine, int(seen[0]["_version_"]) if seen else -1):
            return doc_id
    raise NeardupError(f"could not confirm the claim on {doc_id!r}'s text: it kept changing under concurrent "
                       "checks; try again")


def claim_info(claim: dict) -> dict:
    """What a claim document says (owner, md5, claimed_at, nonce); empty for a claim whose content is unreadable."""
    try:
        info = json.loads(claim.get("content") or "{}")
    except ValueError:
        return {}
    return info if isinstance(info, dict) else {}


def release(coll: Collection, cid: str) -> None:
    """Remove a claim this call made and could not honour; a failure only leaves a claim that goes stale."""
    try:
        coll.delete([cid])
    except NeardupError as exc:
        log.warning("could not remove claim %s (it expires after %.0f s): %s", cid, CLAIM_LEASE_SECONDS, exc)


def claim_document(md5_hash: str, doc_id: str, ttl: str | None) -> dict[str, Any]:
    """The claim of a text for ``doc_id``; ``nonce`` tells this very claim apart from an older one of the same id."""
    owner = {"owner": doc_id, "md5": md5_hash, "claimed_at": time.time(), "nonce": uuid.uuid4().hex}
    return {"id": claim_id(md5_hash), "dataset": META_DATASET, "content": json.dumps(owner),
            **({"ttl": ttl} if ttl is not None else {})}


def exists_error(coll: Collection, doc_id: str) -> DocumentExistsError:
    return DocumentExistsError(
        f"the id {doc_id!r} already holds another document in {coll.url}; a check never overwrites it: delete "
        "it first, or choose another id", doc_id)


def claim_and_create(coll: Collection, md5_hash: str, doc_id: str, document: dict, ttl: str | None,
                     commit_within_ms: int | None) -> bool | None:
    """On a single core, claim the text and add ``document`` in one update request; True when both were added,
    None when the claim was taken (the caller then finds out by whom, through :func:`claim`).

    A single core applies the documents of one request in order and stops at the first one that fails, so when
    the claim is refused (409) the document after it is never written. Whatever went wrong, a real-time get says
    whether this request's claim is there, and it is removed if so. On SolrCloud the two documents may live on
    different shards, which are written independently: there the caller sends them one after the other."""
    claim = claim_document(md5_hash, doc_id, ttl)
    try:
        coll.put([{**claim, "_version_": -1}, {**document, "_version_": -1}],
                 commit_within_ms=commit_within_ms, soft_commit=commit_within_ms is None)
        return True
    except BaseException as exc:
        refused = isinstance(exc, SolrRequestError) and exc.status == 409
        try:
            seen = {d["id"]: d for d in coll.by_ids([claim["id"], doc_id], "id,content,md5_hash")}
        except NeardupError:
            raise exc from None  # Solr is away: a claim written anyway goes stale after the lease
        # This request's own claim (its nonce): written by this very request, or by its first attempt when the
        # answer was lost and the client sent it again, in which case the resend meets its own claim (409).
        ours = seen.get(claim["id"], {}).get("content") == claim["content"]
        there = seen.get(doc_id)
        if ours and there is not None and there.get("md5_hash") == document.get("md5_hash"):
            log.info("the add of %r failed to answer (%s) but both documents are in: it took effect", doc_id, exc)
            return True
        if ours:
            release(coll, claim["id"])
        if refused:
            if ours and there is not None:
                raise exists_error(coll, doc_id) from None
            # Someone else's claim, or our first attempt's claim without its document: claim() sorts it out.
            return None
        raise


def holds_our_text(coll: Collection, document: dict) -> bool:
    """After a create answered "exists" (409): whether the document there is this very add. A create whose answer
    was lost (a link cut after Solr took it) is sent again by the client's retry, and the second attempt finds
    the first; we hold the claim on this text, so the same id with the same text is ours, not another's."""
    found = coll.by_ids([document["id"]], "id,md5_hash")
    return bool(found) and found[0].get("md5_hash") == document.get("md5_hash")


@dataclass
class ClaimOutcome:
    """What :func:`claim` found: ``won`` the claim, or lost it to ``owner`` (an id), whose document
    ``owner_document`` holds the same text (None while its add is under way: ``pending``)."""

    won: bool
    owner: str | None = None
    owner_document: dict | None = None
    pending: bool = False


def claim(coll: Collection, md5_hash: str, doc_id: str, ttl: str | None = None) -> ClaimOutcome:
    """Claim the text for ``doc_id``. When lost, the outcome names the document (or the pending add) that holds
    the claim. A claim made with ``ttl`` expires with the document it was made for."""
    cid = claim_id(md5_hash)
    for attempt in range(CLAIM_ATTEMPTS):
        now = time.time()
        doc = claim_document(md5_hash, doc_id, ttl)
        if coll.create(doc, -1):
            return ClaimOutcome(True)
        seen = coll.by_ids([cid], "id,content,_version_")
        if not seen:
            # Released between our attempt and our read; or Solr refuses the create while a real-time get does not
            # show the claim yet, as it does while it replays its update log after a restart: wait a little.
            time.sleep(min(0.05 * 2 ** attempt, 1.0))
            continue
        info = claim_info(seen[0])
        owner = str(info.get("owner", ""))
        owner_docs = coll.by_ids([owner], "id,content,md5_hash,dataset") if owner else []
        if owner_docs and owner_docs[0].get("md5_hash") == md5_hash:
            return ClaimOutcome(False, owner, owner_docs[0])
        if owner == doc_id:
            # Our own claim, our document not there yet: an earlier attempt of this call whose answer was lost
            # (a retried create meets its own 409), or a concurrent check of the same record. Adding the same
            # id and text again is idempotent, so it is ours to go on with, never a duplicate of itself.
            return ClaimOutcome(True)
        age = now - float(info.get("claimed_at", 0) or 0)
        if owner and age < CLAIM_LEASE_SECONDS:
            # The owner's add is under way (or failed moments ago): report it rather than race it.
            return ClaimOutcome(False, owner, None, pending=True)
        # Stale: the owner was deleted, or changed text, or never arrived. Take it over if nobody else does first.
        if coll.create(doc, int(seen[0]["_version_"])):
            log.info("took over the stale claim %s of %r for %r", cid, owner, doc_id)
            return ClaimOutcome(True)
    raise NeardupError(f"could not claim the text for {doc_id!r}: its claim kept changing under concurrent checks, "
                       "or Solr kept refusing it without showing it (as while it replays its log after a restart); "
                       "try again")


@dataclass
class AddOnceOutcome:
    """What :func:`add_once` did: ``added``, or not, because ``owner`` (an id; this very id when the text is
    already there under it) holds the text; ``owner_document`` is its stored document, None while its add is
    under way (``pending``)."""

    added: bool
    owner: str | None = None
    owner_document: dict | None = None
    pending: bool = False


def add_once(coll: Collection, document: dict, md5_hash: str, *, ttl: str | None = None,
             commit_within_ms: int | None = None) -> AddOnceOutcome:
    """Add ``document`` (a create-only add of its id) unless another document holds its text: the whole
    protocol of the module docstring, claim, add, confirm. Raises
    :class:`~neardup_solr.errors.DocumentExistsError` when its id holds another text."""
    doc_id = str(document["id"])
    if coll.is_single_core():
        added = claim_and_create(coll, md5_hash, doc_id, document, ttl, commit_within_ms)
        if added:
            return AddOnceOutcome(True)
    outcome = claim(coll, md5_hash, doc_id, ttl)
    if not outcome.won and outcome.owner is not None:
        return AddOnceOutcome(False, outcome.owner, outcome.owner_document, outcome.pending)
    try:
        if (not coll.create_only(document, commit_within_ms=commit_within_ms)
                and not holds_our_text(coll, document)):
            raise exists_error(coll, doc_id)
    except BaseException:
        release(coll, claim_id(md5_hash))
        raise
    holder = confirm_claim(coll, md5_hash, doc_id, ttl)
    if holder is not None and holder != doc_id:
        # Our add took longer than the claim's lease (retries through a partition) and another check took the
        # claim over before our confirmation, finding no document of ours yet: the holder keeps the text.
        log.warning("check_and_add: the claim on %r's text passed to %r while its add was delayed; %r is removed "
                    "again", doc_id, holder, doc_id)
        try:
            coll.delete_now(doc_id)
        except NeardupError as exc:
            log.warning("could not remove %r (%s): its text is now indexed twice", doc_id, exc)
        return AddOnceOutcome(False, holder, None, pending=True)
    return AddOnceOutcome(True)
