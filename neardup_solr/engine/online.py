"""Online dedup: check a new text against the collection and add it only when it has no near duplicate.

:func:`check_and_add` is the one implementation behind the service's ``POST /v1/check`` (issue 13) and the
Python facade's ``check_and_add`` (issue 17). It answers with the indexed documents whose shingle Jaccard with
the text is at or above ``threshold`` (best first), and adds the text under ``doc_id`` only when there are
none.

Why two identical texts sent at the same moment are never both added
    "Look up, then add if nothing was found" is a race on its own: two callers can both look up before either
    has added, and both add. Before adding, a caller must therefore *claim* the text: it creates a small
    claim document whose id is derived from the MD5 of the normalised text (``__neardup_claim__:<md5>``), sent
    with Solr's optimistic concurrency ``_version_ = -1``, which means "create only if no document with this id
    exists". Solr checks and writes that under the version lock of the id's bucket on the shard leader that owns
    the id, and it sees uncommitted documents (the update log), so of any number of concurrent claims for the
    same text exactly one succeeds and every other one gets HTTP 409. That holds across threads, processes and
    machines, on a single core and on SolrCloud alike (the id decides the shard, and one leader decides). A
    caller that gets 409 reads the claim (real-time get, which also sees uncommitted documents) and answers
    with its owner as an exact duplicate, without adding anything.

    The document itself is then added with ``_version_ = -1`` too: an id that already exists is never
    overwritten by a check (:class:`~neardup_solr.errors.DocumentExistsError`), even when two different texts
    race for one id. On a single core the claim and the document go in one update request, claim first: the
    core applies them in order and stops at the first refusal, so a refused claim never lets its document
    through (after any failure a real-time get says what is there, and this call's claim is removed). On
    SolrCloud they are two requests, because the two ids may belong to different shards, which apply their
    parts independently.

    How the add becomes visible: with ``commit_within_ms`` None it is soft-committed, and every process's next
    lookup sees it. With a number (what ``NearDupIndex`` and the service use) it is sent with that
    ``commitWithin`` and remembered in this process (:mod:`neardup_solr.solr.recent`), so this process's next lookup
    sees it at once and other processes within that time; a soft commit per check cost more than the rest of it.

    A claim whose owner was deleted (or never arrived: a crash between claim and add) is stale: after
    :data:`CLAIM_LEASE_SECONDS` it is taken over, again with optimistic concurrency on the version read, so
    only one taker wins. Within the lease the owner is reported as the duplicate, "being added". An owner whose
    add was delayed past the lease (retries through a partition) could otherwise lose its claim to a taker that
    read the claim before the add and wrote after it, and both texts would stay: so once its document is in, the
    owner rewrites its claim conditional on the version it reads. Of that rewrite and a takeover exactly one
    succeeds; an owner that finds the claim taken over removes its document again and answers "duplicate". Deleting
    documents through :func:`delete_documents` removes their claims at once. Claims carry the reserved data set
    ``__meta__``, like the settings document, so reports, counts, verification and clears of a data set never
    see them; they hold no tokens, so no lookup can return them.

Near but not identical texts, by default
    Two *different* texts that are near duplicates of each other have different MD5s and so different claims.
    Without ``strict``, across processes both can be added when they arrive within one lookup-and-add of each
    other (a few milliseconds), or within ``commit_within_ms`` when adds are not soft-committed, because neither
    is visible to the other's lookup yet (issue 47 measured 40 of 40 lockstep pairs admitted twice with
    ``commit_within_ms=1000``, about 20 of 40 with 0). Within one process the window is closed with high
    probability: checks hold in-process locks striped by the text's LSH band keys, so two texts that share a band
    run one after the other, and the second sees the first.

Strict: near duplicates across processes and hosts (``strict=True``; the service's default)
    The same idea as the in-process stripes, with the locks kept in Solr, where every process and host sees
    them (:mod:`neardup_solr.solr.band_locks`). A strict check

    1. takes the locks of all its LSH band keys: create-only documents ``__neardup_lock__:<band key>`` (``_version_
       = -1``, in the reserved data set ``__meta__``, no tokens), all in one update request, each carrying a
       random owner token and a lease. After a refusal (409) or any failure it reads them back by real-time get
       from the shard leaders and knows by the token which are its own. When another check holds one within its
       lease, it deletes exactly its own (conditional on their versions), backs off with jitter and tries again:
       it never waits while holding, so no two checks deadlock. A lock older than its lease (15 s) is taken over
       with a write conditional on the version read, so of several takers one wins and a crashed holder blocks
       its bands for one lease at most; the taker soft-commits before it looks up, since the crashed holder may
       have added without making it visible;
    2. looks up and adds as every check does (the claim on the MD5 as above), with the add **soft-committed**:
       when the call returns, every process's searcher shows it. ``commit_within_ms`` is not used;
    3. releases the locks, each delete conditional on the version it wrote.

    Why it is correct. Let A and B be near-duplicate texts whose signatures share a band key k (both compute the
    same lock id from it). Solr decides the creates and conditional writes of the document ``lock(k)`` one at a
    time under the id's version lock on the one leader that owns it, uncommitted documents included, so at any
    moment at most one of them holds lock(k) within its lease. Say A takes it first. B gets it only after A
    deleted it, and A deletes it only after its add was soft-committed: B's lookup, which starts after that, sees
    A's document and B is not added. Had A found B instead, the same holds the other way round. The lookup itself
    is complete (the threshold search over every shingle, or every band candidate on an LSH-only collection), so
    B finds A whenever their Jaccard reaches B's threshold. A holder whose hold outlives its lease (retries
    through an outage) may have its lock taken over; its conditional delete is then refused, so it knows, and it
    takes the locks again (the taker has finished by then), looks again and removes its own document if a near
    duplicate was added meanwhile: of the two, one stays.

    What is guaranteed, and what is not. Two texts are serialised exactly when their signatures share an LSH
    band, which is the event that makes the LSH lookups find a pair at all: with the collection's bands and rows
    (chosen for recall 0.95 at its ``lsh_threshold``) the probability is ``1 - (1 - J**rows)**bands``: 0.986 at
    J = 0.8, 0.999 at 0.85 and 0.99999 at 0.9 with the default 128 values (18 bands of 7). Pairs that share no band
    (mostly pairs below ``lsh_threshold``, or a ``threshold`` set below it) can still both be added when they
    arrive at the same moment. Strict checks exclude each other; a non-strict check, ``insert`` or a bulk index
    running at the same time takes no locks and is not held back. Leases compare the holder's and the taker's
    wall clocks, as the claims' do: hosts must agree within a few seconds.

    What it costs. Two more small update requests per check (taking and releasing about 18 lock documents),
    and a soft commit per added text instead of ``commitWithin``: each opens a new searcher and empties Solr's
    caches, which is most of the cost (see docs/python.md for the measured latencies). Duplicates found are
    not added, so they cost no commit. Near duplicates arriving together wait for each other (milliseconds); a
    crashed holder's near duplicates wait up to its lease. A cheaper visibility step, lookups that read the recent
    adds of their bands by real-time get instead of a soft commit per add, would keep ``commitWithin``; it is
    not built yet.

The claims and create-only adds are written by :mod:`neardup_solr.solr.claims`, which
:meth:`~neardup_solr.NearDupIndex.insert` shares.

Deleting: :func:`delete_documents` (by ids) and :func:`delete_dataset` are what ``DELETE /v1/documents`` and
``neardup-solr delete`` call.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

import numpy as np

from neardup_solr.signing.settings import META_DATASET, RESERVED_IDS, IndexSettings
from neardup_solr.solr.settings_store import ensure_index_settings, read_index_settings
from neardup_solr.errors import InvalidParameterError, ParameterTypeError
from neardup_solr.solr.maintenance import clear, require_neardup_schema
from neardup_solr.solr.recent import GRACE_SECONDS, RecentAdd, recent_adds
from neardup_solr.engine.similar import Match, describe, find_similar, sort_matches
from neardup_solr.engine.group_upkeep import GroupUpkeep
from neardup_solr.solr.searcher import Query, Searcher
from neardup_solr.solr.collection import CLAIM_LEASE_SECONDS, CLAIM_PREFIX, SolrClient, claim_id, collection_of
from neardup_solr.solr import band_locks
from neardup_solr.solr.band_locks import LOCK_PREFIX
from neardup_solr.solr.ttl import check_ttl
from neardup_solr.validation import check_bool, check_float, check_id, check_int, check_label, check_text

log = logging.getLogger(__name__)

# Ids starting with these are the online mode's own documents: claims on a text, locks on an LSH band.
RESERVED_ID_PREFIXES = (CLAIM_PREFIX, LOCK_PREFIX)

_STRIPES = 4096
_stripe_locks = [threading.Lock() for _ in range(_STRIPES)]

__all__ = [
    "CLAIM_PREFIX", "CLAIM_LEASE_SECONDS", "LOCK_PREFIX", "RESERVED_ID_PREFIXES", "Match", "CheckResult",
    "DeleteResult",
    "check_and_add", "find_similar", "describe", "delete_documents", "delete_dataset", "is_reserved_id",
    "claim_id", "sort_matches",
]


# What CheckResult.status says.
ADDED = "added"                  # no near duplicate at or above the threshold: the text was added
DUPLICATE = "duplicate"          # near duplicates found (or an identical text claimed): not added
NOT_REQUESTED = "checked"        # add=False: only looked up
ALREADY_INDEXED = "already_indexed"  # this id already holds this very text (a retried check): nothing to do


@dataclass
class CheckResult:
    """What :func:`check_and_add` did: ``added`` is True only when this call added the text; ``matches`` are the
    near duplicates at or above ``threshold``, best first; ``status`` is one of ``added``, ``duplicate``,
    ``checked`` (add=False) and ``already_indexed``."""

    id: str
    added: bool
    status: str
    threshold: float
    matches: list[Match] = field(default_factory=list)


@dataclass
class DeleteResult:
    """Ids deleted, and ids asked for that were not in the collection."""

    deleted: list[str]
    missing: list[str]


def is_reserved_id(doc_id: str) -> bool:
    """Ids the package keeps for itself (the settings document, claims, band locks): never a user's document."""
    return doc_id in RESERVED_IDS or doc_id.startswith(RESERVED_ID_PREFIXES)


def _checked_user_id(doc_id: Any, name: str) -> str:
    checked = check_id(doc_id, name)
    if is_reserved_id(checked):
        raise InvalidParameterError(name, "an id of your own", checked,
                                    "ids starting with '__neardup_' are reserved for neardup-solr")
    return checked


# ----------------------------------------------------------------------------------------------- claims


class _StripeLocks:
    """The in-process locks of a text's LSH bands, taken in index order (so two checks never deadlock)."""

    def __init__(self, searcher: Searcher, query: Query):
        keys = searcher.band_keys_of(query)
        self.indices = sorted({int(k) % _STRIPES for k in np.asarray(keys).tolist()})

    def __enter__(self) -> "_StripeLocks":
        for i in self.indices:
            _stripe_locks[i].acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        for i in reversed(self.indices):
            _stripe_locks[i].release()


def remember_add(client: SolrClient, document: dict, query: Query, commit_within_ms: int) -> None:
    """Keep a document just sent with ``commitWithin`` searchable in this process until a commit covers it."""
    now = time.monotonic()
    recent_adds(client).add(RecentAdd(
        id=document["id"], dataset=document.get("dataset"), content=document["content"],
        md5_hash=document["md5_hash"], hash_set=query.hash_set, band_tokens=tuple(document.get("content_lsh", ())),
        added_at=now, visible_by=now + commit_within_ms / 1000.0 + GRACE_SECONDS))


# ----------------------------------------------------------------------------------------------- the check


def check_and_add(
    client: SolrClient,
    doc_id: Any,
    text: Any,
    threshold: float | None = None,
    *,
    add: bool = True,
    dataset: str | None = None,
    settings: IndexSettings | None = None,
    searcher: Searcher | None = None,
    ttl: str | None = None,
    commit_within_ms: int | None = None,
    strict: bool = False,
) -> CheckResult:
    """Look up ``text``'s near duplicates (shingle Jaccard >= ``threshold``; None: the collection's
    ``lsh_threshold``) and add it under ``doc_id`` (to ``dataset``) only when there are none.

    Race-free for identical texts across threads and processes, and for near duplicates within one process
    (see the module docstring for how, and for the limits). ``strict=True`` makes it race-free for near duplicates
    across processes and hosts too: the check holds Solr-side locks on the text's LSH bands while it looks up and
    adds, and soft-commits its add before it lets go (``commit_within_ms`` is then not used); 1.7 times the
    median latency of a check with ``commit_within_ms=0``, 2.9 to 3.1 times the default's (benchmarks/online.py,
    100,000 documents, 1 and 8 clients). ``add=False`` only looks
    up. The collection's stored settings are used; ``settings`` only seeds an empty collection. ``ttl`` (Solr date
    math, e.g. ``+30DAYS``) makes the added document and its claim expire that long after they are added. Raises
    :class:`~neardup_solr.errors.InvalidParameterError` / :class:`~neardup_solr.errors.ParameterTypeError` for
    bad arguments, :class:`~neardup_solr.errors.InvalidTextError` for a text without words,
    :class:`~neardup_solr.errors.DocumentExistsError` when ``doc_id`` holds another document,
    :class:`~neardup_solr.errors.BandLocksBusyError` when a strict check could not take its band locks within
    :data:`~neardup_solr.solr.band_locks.LOCK_WAIT_SECONDS`, and the client's Solr errors.
    ``searcher``, a :class:`Searcher` on ``client`` kept between calls, saves reading the settings and building
    the signer at every call (what :class:`~neardup_solr.NearDupIndex` does).

    ``commit_within_ms`` None soft-commits the add, so every process's next lookup sees it. A number sends it
    with that ``commitWithin`` instead (about half the time of a check) and remembers it in this process
    (:mod:`neardup_solr.solr.recent`): this process's lookups see it at once, other processes within that time.
    """
    if not isinstance(client, SolrClient):
        raise ParameterTypeError("client", "a SolrClient", client)
    doc_id = _checked_user_id(doc_id, "id")
    text = check_text(text)
    threshold = check_float("threshold", threshold, "threshold", none_ok=True)
    add = check_bool("add", add)
    strict = check_bool("strict", strict)
    dataset = check_label("dataset", dataset, reserved=(META_DATASET,))
    ttl = check_ttl(ttl)
    commit_within_ms = check_int("commit_within_ms", commit_within_ms, minimum=0, maximum=3_600_000,
                                 none_ok=True) or None  # 0: visible at once, which is what a soft commit gives

    if searcher is not None and searcher.client is not client:
        raise InvalidParameterError("searcher", "a Searcher on the same client", searcher, show_value=False)
    stored = read_index_settings(client) if searcher is None else searcher.stored_settings()
    if stored is None and add:
        # First document of an empty collection: store settings before anything else, on a core that is ours.
        require_neardup_schema(client)
        stored = ensure_index_settings(client, settings)
        searcher = None  # made again below, with the settings now stored
    if searcher is None:
        searcher = Searcher(client, stored or settings or IndexSettings())
    if threshold is None:
        threshold = searcher.settings.lsh_threshold
    query = searcher.prepare(text, doc_id)  # InvalidTextError for a text without words

    if not add:
        return CheckResult(doc_id, False, NOT_REQUESTED, threshold, find_similar(searcher, query, threshold,
                                                                                  exclude_id=doc_id))
    # The in-process locks first: threads of this process that share a band queue here rather than on Solr.
    with _StripeLocks(searcher, query):
        if not strict:
            return _look_up_and_add(searcher, query, doc_id, text, threshold, dataset, ttl, commit_within_ms)
        return _strict_look_up_and_add(searcher, query, doc_id, text, threshold, dataset, ttl)


def _strict_look_up_and_add(searcher: Searcher, query: Query, doc_id: str, text: str, threshold: float,
                            dataset: str | None, ttl: str | None) -> CheckResult:
    """The check under the text's band locks in Solr (see the module docstring): look up and add while holding
    them, the add soft-committed, so that whoever takes one of the locks next finds the add in its lookup."""
    client = searcher.client
    held = band_locks.acquire(client, searcher.band_keys_of(query), doc_id)
    try:
        if held.taken_over:
            # Their holder outlived its lease (crashed, or stuck in retries): whatever it added may not be
            # visible yet, and the lookup below must see it.
            collection_of(client).commit(soft=True)
        result = _look_up_and_add(searcher, query, doc_id, text, threshold, dataset, ttl, None)
    except BaseException:
        band_locks.release_after_failure(client, held, lambda: collection_of(client).commit(soft=True))
        raise
    if band_locks.release(client, held) or not result.added:
        return result
    return _check_again_after_losing_locks(searcher, query, doc_id, threshold) or result


def _check_again_after_losing_locks(searcher: Searcher, query: Query, doc_id: str,
                                    threshold: float) -> CheckResult | None:
    """Our hold outlived its lease and another check took a lock over: it may have looked up before our add was
    visible, and added a near duplicate of ours. Take the locks again (it has finished by then, its add visible)
    and look again: a near duplicate found now arrived after our first lookup, so ours goes and it stays. Returns
    the duplicate answer then, None when ours may stay."""
    client = searcher.client
    log.warning("check_and_add: %r held its band locks past their lease and one was taken over; checking again",
                doc_id)
    held = band_locks.acquire(client, searcher.band_keys_of(query), doc_id)
    try:
        # The taker's add, should the taker have failed before making it visible.
        collection_of(client).commit(soft=True)
        matches = find_similar(searcher, query, threshold, exclude_id=doc_id)
        if matches:
            log.warning("check_and_add: %r is removed again: %r, checked while its locks had lapsed, was added "
                        "meanwhile", doc_id, matches[0].id)
            delete_documents(client, [doc_id])
            return CheckResult(doc_id, False, DUPLICATE, threshold, matches)
        return None
    finally:
        band_locks.release(client, held)


def _look_up_and_add(searcher: Searcher, query: Query, doc_id: str, text: str, threshold: float,
                     dataset: str | None, ttl: str | None, commit_within_ms: int | None) -> CheckResult:
    """Look up, and add when nothing reaches ``threshold``: the claim on the text's MD5 and the create-only add."""
    client = searcher.client
    matches = find_similar(searcher, query, threshold, exclude_id=doc_id)
    if matches:
        return CheckResult(doc_id, False, DUPLICATE, threshold, matches)
    document = searcher.builder.build_prepared(doc_id, text, query.processed, query.signature, dataset,
                                               band_keys_row=searcher.band_keys_of(query))
    if ttl is not None:
        document["ttl"] = ttl
    document.update(GroupUpkeep(client).fields_for_new_document(searcher, query, doc_id, threshold))
    outcome = collection_of(client).add_once(document, query.md5_hash, ttl=ttl, commit_within_ms=commit_within_ms)
    if not outcome.added:
        owner_id = outcome.owner
        if owner_id == doc_id and not outcome.pending:
            return CheckResult(doc_id, False, ALREADY_INDEXED, threshold, [])
        if owner_id == doc_id or owner_id is None:
            return CheckResult(doc_id, False, DUPLICATE, threshold, [])
        d = outcome.owner_document
        owner = (Match(owner_id, 1.0, 0, True, pending=True) if d is None
                 else Match(owner_id, 1.0, 0, True, d.get("dataset"), d.get("content", "")))
        return CheckResult(doc_id, False, DUPLICATE, threshold, [owner])
    if commit_within_ms is not None:
        remember_add(client, document, query, commit_within_ms)
    log.debug("check_and_add: added %r (no near duplicate >= %g)", doc_id, threshold)
    return CheckResult(doc_id, True, ADDED, threshold, [])


# ----------------------------------------------------------------------------------------------- deleting


def _chunks(items: list[str], size: int = 500) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def delete_documents(client: SolrClient, ids: Iterable[Any]) -> DeleteResult:
    """Delete the documents with these ids (and their claims) and commit. Ids not in the collection are listed
    in ``missing``; reserved ids (the settings document, claims) are never deleted here and count as missing.
    Refuses a core whose schema is not ours, before any change."""
    if isinstance(ids, (str, bytes)) or not isinstance(ids, Iterable):
        raise ParameterTypeError("ids", "a list of document ids", ids)
    wanted = list(dict.fromkeys(check_id(i, "ids") for i in ids))
    if not wanted:
        return DeleteResult([], [])
    require_neardup_schema(client)
    coll = collection_of(client)
    found: dict[str, dict] = {}
    for chunk in _chunks([i for i in wanted if not is_reserved_id(i)]):
        for doc in coll.by_ids(chunk, "id,md5_hash,dataset"):
            if doc.get("dataset") != META_DATASET:
                found[doc["id"]] = doc
    deleted = [i for i in wanted if i in found]
    missing = [i for i in wanted if i not in found]
    recent_adds(client).forget(wanted)
    targets = deleted + sorted({claim_id(d["md5_hash"]) for d in found.values() if d.get("md5_hash")})
    with GroupUpkeep(client).deleting(deleted):
        for chunk in _chunks(targets):
            coll.delete(chunk)
        if targets:
            coll.commit()
    log.info("deleted %d document(s) from %s (%d not found)", len(deleted), coll.url, len(missing))
    return DeleteResult(deleted, missing)


def delete_dataset(client: SolrClient, dataset: Any) -> int:
    """Delete every document of ``dataset`` and commit; returns how many. Their claims go stale (and are taken
    over by the next check of the same text). A group whose kept document was in the data set gets its earliest
    remaining member as its kept one, as :func:`delete_documents` does. Refuses a core whose schema is not ours."""
    dataset = check_label("dataset", dataset, reserved=(META_DATASET,), none_ok=False)
    require_neardup_schema(client)
    with GroupUpkeep(client).deleting_dataset(dataset):
        count = clear(client, dataset)  # committed
    return count

