"""Locks on LSH band keys, kept as documents in Solr: what makes a strict check-and-add exclusive across
threads, processes and hosts (:func:`neardup_solr.engine.online.check_and_add` with ``strict=True``; the module
docstring of :mod:`neardup_solr.engine.online` describes the protocol as a whole, why it is correct and what it
costs).

A band lock is a small document ``__neardup_lock__:<band key as 16 hex digits>`` in the reserved data set
``__meta__`` (like the claims and the settings), holding no tokens, so no lookup, count or report ever sees
it. Its ``content`` is JSON: the holder's ``token`` (a random nonce per acquisition, which tells this holder's
locks from anyone else's), the ``owner`` (the id being checked, for people reading it), ``held_at`` (wall clock)
and the holder's ``lease`` in seconds.

- :func:`acquire` takes every lock of a text at once or none: it creates them create-only (``_version_ = -1``)
  in one update request. After a refusal (409) or any failure it reads them back with a real-time get from the
  shard leaders, keeps those carrying its token, and writes the free ones again. A lock held by someone else
  within its lease makes it give back exactly its own (deletes conditional on their versions), wait with
  jittered exponential backoff, and start again: a holder never waits while holding, so two checks cannot
  deadlock. A lock older than its lease is taken over with a write conditional on the version read, so of
  several takers exactly one wins, and a crashed holder blocks its bands for one lease at most.
- :func:`release` deletes them, each conditional on the version this holder wrote. It says whether the locks
  were ours to the end: a lock taken over meanwhile (our hold outlived its lease) has another version, and the
  delete of it is refused.

A lock a failed request left behind is removed by the read-back, or expires after its lease. The locks of a
crashed holder in bands nobody checks again are deleted by Solr itself: they carry a time to live
(:data:`LOCK_TTL`, where the collection's schema has the ``ttl`` field, as every neardup configset since time to
live came has), and the update chain's periodic deleter removes them once it has passed.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Iterable

from neardup_solr.errors import BandLocksBusyError, NeardupError, SolrRequestError
from neardup_solr.signing.settings import META_DATASET
from neardup_solr.solr.client import SolrClient
from neardup_solr.solr.queries import FROM_LEADERS

log = logging.getLogger("neardup_solr.engine.online")  # the online mode's log, as the claims use

__all__ = ["LOCK_PREFIX", "LOCK_LEASE_SECONDS", "LOCK_TTL", "LOCK_WAIT_SECONDS", "HeldLocks", "lock_id", "lock_ids",
           "lock_info", "acquire", "release", "release_after_failure"]

LOCK_PREFIX = "__neardup_lock__:"
# Longer than a strict check holds its locks (a lookup and one soft-committed add: milliseconds, a second or two
# on a loaded node), short enough that the near duplicates of a crashed holder's text wait little. A holder that
# outlives it anyway (retries through an outage) finds out when it releases, and checks again (online.py).
LOCK_LEASE_SECONDS = 15.0
# Solr's time to live of a lock document (Solr date math): far longer than any hold, so only abandoned locks
# reach it. Were a hold to outlive it, the holder's release would find the lock gone and check again (online.py).
LOCK_TTL = "+300SECONDS"
# How long a check waits for its band locks before giving up (BandLocksBusyError, HTTP 503): beyond one lease
# only a queue of near duplicates contending for the same bands keeps it waiting.
LOCK_WAIT_SECONDS = 60.0
# The first pause after finding a lock held, doubled each round up to the cap, each drawn uniformly below it
# (full jitter: two waiters that collided do not collide again in step). A holder needs a few milliseconds.
BACKOFF_BASE_SECONDS = 0.004
BACKOFF_CAP_SECONDS = 0.25
# Rounds in a row that found no lock held by another but still could not write them all (they changed between
# the read and the write) before pausing as if one were held.
QUICK_ROUNDS = 4


@dataclass
class HeldLocks:
    """The band locks one check holds: each lock id with the version of the lock document it wrote."""

    token: str
    owner: str
    lease_seconds: float
    versions: dict[str, int] = field(default_factory=dict)
    # time.monotonic() when the oldest of the held locks was stamped (its held_at, which is when others count its
    # lease from): a write retried through an outage lands with a stamp older than the moment it was acknowledged.
    acquired_at: float = 0.0
    taken_over: list[str] = field(default_factory=list)  # stale locks of a holder that outlived its lease
    waited_seconds: float = 0.0


def lock_id(band_key: int) -> str:
    """The id of the lock document of one LSH band key (a 64-bit value; each band has its own seed, so equal
    values in different bands are different keys)."""
    return f"{LOCK_PREFIX}{int(band_key) & 0xFFFFFFFFFFFFFFFF:016x}"


def lock_ids(band_keys: Iterable[int]) -> list[str]:
    """The lock ids of a text's band keys, distinct and sorted (every holder writes them in the same order)."""
    return sorted({lock_id(k) for k in band_keys})


def lock_info(doc: dict) -> dict[str, Any]:
    """What a lock document says (token, owner, held_at, lease); empty for one whose content is unreadable."""
    try:
        info = json.loads(doc.get("content") or "{}")
    except ValueError:
        return {}
    return info if isinstance(info, dict) else {}


def _lock_document(lid: str, token: str, owner: str, lease_seconds: float, expires: bool) -> dict[str, Any]:
    info = {"token": token, "owner": owner, "held_at": time.time(), "lease": lease_seconds}
    return {"id": lid, "dataset": META_DATASET, "content": json.dumps(info), **({"ttl": LOCK_TTL} if expires else {})}


_expiring: dict[str, bool] = {}
_expiring_lock = threading.Lock()


def _locks_expire(client: SolrClient) -> bool:
    """Whether the collection's schema takes a time to live (asked once per collection and process): one made
    before the ``ttl`` field existed would refuse a lock carrying it."""
    with _expiring_lock:
        known = _expiring.get(client.url)
    if known is None:
        known = "ttl" in client.schema_fields()
        with _expiring_lock:
            _expiring[client.url] = known
    return known


def _post(client: SolrClient, body: Any, params: list[tuple[str, object]] | None = None) -> dict:
    """One JSON update request, no commit (locks are read by real-time get, which sees uncommitted documents)."""
    resp = client.request("POST", "update", params=[("wt", "json"), *(params or [])],
                          data=json.dumps(body, ensure_ascii=False).encode("utf-8"),
                          headers={"Content-Type": "application/json"})
    try:
        answer = resp.json()
    except ValueError:
        return {}
    return answer if isinstance(answer, dict) else {}


def _write(client: SolrClient, docs: list[tuple[dict, int]]) -> dict[str, int]:
    """Write lock documents, each conditional on its version (-1: only if absent), in one request. Returns the
    versions Solr reports for them (``versions=true``; a node that forwarded a document to another shard's
    leader may not report it: the caller reads those back). Raises SolrRequestError(409) when one was refused."""
    answer = _post(client, [{**doc, "_version_": version} for doc, version in docs], [("versions", "true")])
    adds = answer.get("adds") or []
    written: dict[str, int] = {}
    for position in range(0, len(adds) - 1, 2):
        try:
            written[str(adds[position])] = int(adds[position + 1])
        except (TypeError, ValueError):
            continue
    return written


def _read(client: SolrClient, ids: list[str]) -> dict[str, dict]:
    """The lock documents of ``ids`` that exist, from each shard leader's real-time view."""
    return {d["id"]: d for d in client.get_by_ids(ids, "id,content,_version_", params=[FROM_LEADERS])}


def _delete(client: SolrClient, versions: dict[str, int]) -> None:
    """Delete lock documents, each only if it still has the version given (409 otherwise)."""
    if versions:
        _post(client, {"delete": [{"id": lid, "_version_": v} for lid, v in sorted(versions.items())]})


def _give_back(client: SolrClient, ids: list[str], token: str) -> None:
    """Delete whichever of ``ids`` carry ``token``, each conditional on the version read. What cannot be read or
    deleted (Solr away) is left to expire after its lease."""
    try:
        for _ in range(3):
            seen = _read(client, ids)
            ours = {lid: int(d["_version_"]) for lid, d in seen.items() if lock_info(d).get("token") == token}
            if not ours:
                return
            try:
                _delete(client, ours)
                return
            except SolrRequestError as exc:
                if exc.status != 409:
                    raise
                # One of ours changed under us (taken over after its lease, or deleted by a retried request of
                # ours): read again and delete what is still ours.
    except NeardupError as exc:
        log.warning("could not give back %d band lock(s) (they expire after their lease): %s", len(ids), exc)


def acquire(client: SolrClient, band_keys: Iterable[int], owner: str, *,
            lease_seconds: float = LOCK_LEASE_SECONDS, wait_seconds: float = LOCK_WAIT_SECONDS,
            rng: random.Random | None = None) -> HeldLocks:
    """Take the locks of every band key in ``band_keys`` (all or none), waiting while another check holds one.

    Raises :class:`~neardup_solr.errors.BandLocksBusyError` when they stay held for ``wait_seconds``, and the
    client's errors when Solr fails (after its retries); either way nothing of this call stays locked but what
    could not be given back, which expires after ``lease_seconds``."""
    ids = lock_ids(band_keys)
    held = HeldLocks(token=uuid.uuid4().hex, owner=owner, lease_seconds=float(lease_seconds))
    if not ids:
        return held
    random_ = rng or random.Random()
    started = time.monotonic()
    deadline = started + wait_seconds
    expected = {lid: -1 for lid in ids}  # the version each write is conditional on (-1: only if absent)
    stale: set[str] = set()
    waits = quick = 0
    expires = _locks_expire(client)
    stamps: dict[str, float] = {}  # lock id -> time.monotonic() no later than the held_at it carries
    try:
        while True:
            pending = [lid for lid in ids if lid not in held.versions]
            refused = False
            written: dict[str, int] = {}
            stamped_at = time.monotonic()  # no later than the held_at the documents below carry
            try:
                written = _write(client, [(_lock_document(lid, held.token, owner, held.lease_seconds, expires),
                                           expected[lid]) for lid in pending])
            except SolrRequestError as exc:
                if exc.status != 409:
                    raise
                refused = True
            if not refused and all(lid in written for lid in pending):
                held.versions.update(written)
                stamps.update(dict.fromkeys(written, stamped_at))
                break
            # Refused (or versions not reported): read back which are ours, which are free, which are held.
            seen = _read(client, pending)
            busy: list[str] = []
            now = time.time()
            for lid in pending:
                doc = seen.get(lid)
                if doc is None:
                    expected[lid] = -1  # free: released since, or never written by a request stopped before it
                    continue
                info = lock_info(doc)
                if info.get("token") == held.token:
                    held.versions[lid] = int(doc["_version_"])
                    # Written by this round's request or an earlier one of this call: its own stamp says when.
                    age = max(0.0, now - _float(info.get("held_at"), now))
                    stamps[lid] = min(stamped_at, time.monotonic() - age)
                    continue
                lease = _float(info.get("lease"), held.lease_seconds)
                if now - _float(info.get("held_at"), 0.0) >= lease:
                    expected[lid] = int(doc["_version_"])  # take it over, if nobody else does first
                    stale.add(lid)
                else:
                    busy.append(lid)
            if len(held.versions) == len(ids):
                break
            if not busy and quick < QUICK_ROUNDS:
                quick += 1
                continue  # write the free and stale ones now
            # Held by another check: give back ours (no waiting while holding, so no deadlock) and wait.
            if held.versions:
                _give_back(client, list(held.versions), held.token)
                held.versions.clear()
            if time.monotonic() >= deadline:
                holders = sorted({str(lock_info(seen[b]).get("owner", "?")) for b in busy if b in seen})
                raise BandLocksBusyError(
                    f"the LSH band locks of {owner!r}'s text stayed held by other checks for {wait_seconds:.0f} s "
                    f"(held for {', '.join(map(repr, holders)) or 'checks that changed them'}) in {client.url}: "
                    "near duplicates of it are being checked without pause; try again")
            pause = random_.uniform(0, min(BACKOFF_CAP_SECONDS, BACKOFF_BASE_SECONDS * 2 ** waits))
            time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
            waits += 1
            quick = 0
            expected = {lid: -1 for lid in ids}
            stale.clear()
    except BaseException:
        # A failed request may have written some of ours (its answer lost): give back exactly those.
        _give_back(client, ids, held.token)
        raise
    now = time.monotonic()
    held.waited_seconds = now - started
    # The hold's age, as a taker judges it, runs from the oldest stamp: a write that Solr took only after the client
    # retried it through an outage is already that old, and may be taken over at once. release() must then not
    # take a lock that is gone for one deleted by a retried request of ours (issue 47: the soak benchmark admitted
    # near-duplicate pairs twice when a restart outlasted the lease).
    held.acquired_at = min((stamps.get(lid, now) for lid in held.versions), default=now)
    held.taken_over = sorted(stale & set(held.versions))
    if held.taken_over:
        log.info("took over %d stale band lock(s) for %r (their holder outlived its lease)", len(held.taken_over),
                 owner)
    if waits:
        log.debug("band locks of %r taken after %d wait(s), %.3f s", owner, waits, held.waited_seconds)
    return held


def release(client: SolrClient, held: HeldLocks) -> bool:
    """Delete the locks, each conditional on the version we wrote. True when they were ours to the end; False
    when one was taken over meanwhile (possible only once the hold outlived the lease), so another check may have
    looked up before our add was visible. Solr being away after the client's retries leaves them to expire, and
    counts as held to the end when the hold was shorter than half the lease (no taker could have come)."""
    if not held.versions:
        return True
    held_for = time.monotonic() - held.acquired_at
    could_be_taken = held_for >= held.lease_seconds / 2  # allows for clocks of different hosts disagreeing
    try:
        _delete(client, held.versions)
        return True
    except SolrRequestError as exc:
        if exc.status != 409:
            log.warning("could not release %d band lock(s) of %r (they expire after their lease): %s",
                        len(held.versions), held.owner, exc)
            return not could_be_taken
    except NeardupError as exc:
        log.warning("could not release %d band lock(s) of %r (they expire after their lease): %s",
                    len(held.versions), held.owner, exc)
        return not could_be_taken
    # Refused: a lock changed since we wrote it. Find out which, and delete exactly what is still ours.
    try:
        seen = _read(client, list(held.versions))
    except NeardupError as exc:
        log.warning("could not read back the band locks of %r (they expire after their lease): %s", held.owner, exc)
        return not could_be_taken
    ours = {lid: int(d["_version_"]) for lid, d in seen.items() if lock_info(d).get("token") == held.token}
    # Another holder's token: taken over. Gone: deleted by a retried request of ours, or taken over and released.
    taken = [lid for lid in held.versions if lid in seen and lid not in ours]
    gone = [lid for lid in held.versions if lid not in seen and could_be_taken]
    if ours:
        _give_back(client, list(ours), held.token)
    if taken or gone:
        # A gone lock counts as lost once the hold could have been taken over: a taker may have come and gone.
        log.warning("band locks of %r after %.1f s (lease %.0f s): %d held by another check, %d gone (taken over "
                    "and released, or deleted by a retried request of ours)", held.owner, held_for,
                    held.lease_seconds, len(taken), len(gone))
    return not (taken or gone)


def release_after_failure(client: SolrClient, held: HeldLocks, make_visible: Any) -> None:
    """After a check failed while holding its locks: make whatever it may have added visible (``make_visible``,
    a soft commit), then release. When that fails too, the locks are left to expire, and the check that takes them
    over soft-commits before it looks up."""
    try:
        make_visible()
    except NeardupError as exc:
        log.warning("could not make %r's add visible after a failure; its band locks expire after %.0f s: %s",
                    held.owner, held.lease_seconds, exc)
        return
    release(client, held)


def _float(value: Any, default: float) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return default
