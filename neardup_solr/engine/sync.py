"""Keeping the signatures current while other clients write the collection: ``neardup-solr sync [--follow]``.

What another writer can do to a document, and how a pass finds it:

- **added, or replaced whole** (a plain JSON post, CSV, SolrJ's ``add``): the new document has none of our
  fields, so it is found by their absence (the same pass as ``backfill``);
- **text edited in place** (an atomic update of the user's text field): our fields stay, stale. Found by the
  digest of the text it was signed from (``md5_hash``, the MD5 of the normalised text) compared with the
  current text's. A single pass (``sync``) compares every signed document; the passes of ``follow`` only those
  whose ``_version_`` (the update log's version, which every update of a document raises) is above the highest
  version seen when the previous pass began, so an idle pass reads nothing. With ``changed_field`` (a date the
  user's pipeline sets on each change, e.g. ``last_modified``), that date chooses instead. The documents last
  changed before ``follow`` began are compared once by a catch-up thread beside the passes: on a large
  collection that comparison takes a while (a minute at a million documents on 2 cores), and new documents
  must not wait for it;
- **deleted**: its fields of ours go with it; nothing to do.

Once the collection's groups are written (``groups --to-solr``), what a pass signs gets its near-duplicate group
as ``check_and_add`` gives one (:class:`~neardup_solr.engine.group_upkeep.GroupUpkeep`); a document
edited in place keeps the group it holds until the next write-back.

Every write is an atomic update at the version read (:mod:`neardup_solr.solr.atomic`), so sync never overwrites a
newer version of a user's document. ``follow`` repeats the pass every ``interval`` seconds; an idle pass costs
a count query and two small queries that find nothing (``full_scan`` reads every text on every pass instead).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable

from neardup_solr.errors import InvalidParameterError
from neardup_solr.engine.backfill import (
    UNSEEN,
    BackfillSummary,
    count_unseen,
    resolve_own_collection,
    settings_of,
    signing_pass,
)
from neardup_solr.engine.companion_sync import CompanionSyncer
from neardup_solr.engine.group_upkeep import GroupUpkeep
from neardup_solr.solr.collection import Selection, SolrClient, collection_of
from neardup_solr.solr.companion import read_source_schema
from neardup_solr.signing.builder import DocumentBuilder
from neardup_solr.signing.tokens import md5_hex
from neardup_solr.solr.schema_install import require_atomic_updates
from neardup_solr.validation import Limit, check_float, check_int

log = logging.getLogger(__name__)

# With changed_field, a pass reads what changed since this long before the previous pass began.
_CLOCK_MARGIN_S = 30


@dataclass
class SyncSummary:
    """One sync pass: documents signed because they had no fields of ours (``added``: new or replaced), because
    their text changed in place (``edited``), how many signed texts were compared (``checked``), and the time."""

    added: int = 0
    edited: int = 0
    checked: int = 0
    refused: int = 0
    solr_refused: int = 0
    grouped: int = 0
    seconds: float = 0.0
    started_at: str = ""

    def format(self) -> str:
        return (f"sync: {self.added} new or replaced, {self.edited} edited in place (of {self.checked} checked)"
                + (f", {self.refused} with nothing to sign" if self.refused else "")
                + (f", {self.solr_refused} refused by Solr (see the log)" if self.solr_refused else "")
                + (f", {self.grouped} given their near-duplicate group" if self.grouped else "")
                + f" in {self.seconds:.2f} s")


class Syncer:
    """Sync passes over one collection (see the module docstring). ``changed_field``: the user's date field set on
    every change, which chooses the documents to compare instead of their versions; ``full_scan``: compare every
    signed document's text on every pass; ``version_margin_s``: how much further back than the previous pass's
    start a pass looks by version, for shard leaders whose clocks differ a little."""

    def __init__(self, client: SolrClient, *, changed_field: str | None = None, full_scan: bool = False,
                 batch_size: int = 500, version_margin_s: float = 5.0):
        self.client = client
        self.settings = settings_of(client)
        require_atomic_updates(client)
        if changed_field is not None:
            schema = read_source_schema(client)
            found = schema.field(changed_field)
            field_class = schema.type_class(found) if found is not None else ""
            if found is None or "Date" not in field_class:
                raise InvalidParameterError("changed_field", "a date field of the collection that the writers set "
                                            "on every change", changed_field, f"{client.url} has no such date field")
        self.changed_field = changed_field
        self.full_scan = full_scan
        self.version_margin_s = check_float("version_margin_s", version_margin_s, Limit("float", 0, 86_400))
        self.batch_size = check_int("batch_size", batch_size, minimum=1, maximum=100_000)
        self.builder = DocumentBuilder(self.settings)
        self._since: str | None = None
        self._since_version: int | None = None

    def run_once(self) -> SyncSummary:
        """One pass: sign what has no fields of ours, then what changed in place."""
        started = time.monotonic()
        # Read before the pass: a change made while the pass runs is seen by the next one.
        now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        version = collection_of(self.client).highest_version()
        summary = SyncSummary(started_at=now)
        work = BackfillSummary()
        upkeep = GroupUpkeep(self.client, self.settings)
        if count_unseen(self.client):
            signing_pass(self.client, self.builder, UNSEEN, work, batch_size=self.batch_size, upkeep=upkeep)
            summary.added = work.signed
        changed = Selection(seen=True)
        if self.full_scan:
            pass  # every signed document, every pass
        elif self.changed_field and self._since is not None:
            # The field name was checked against the schema; the date is ours. Documents changed a little
            # before the last pass began are read again (clocks differ); the digest keeps them from being
            # signed twice.
            changed = Selection(seen=True, dated_since=(self.changed_field, self._since, _CLOCK_MARGIN_S))
        elif self._since_version is not None:
            changed = Selection(seen=True, changed_after=self._since_version, margin_s=self.version_margin_s)
        edited = BackfillSummary()
        signing_pass(self.client, self.builder, changed, edited, batch_size=self.batch_size,
                     select=self._changed(summary), upkeep=upkeep)
        summary.edited = edited.signed
        # New and replaced documents, and edited ones that hold no group, get one; edited ones keep theirs.
        summary.grouped = upkeep.group_signed(refused={**work.solr_refused, **edited.solr_refused})
        summary.refused = work.refused + edited.refused
        summary.solr_refused = len(work.solr_refused) + len(edited.solr_refused)
        self._since, self._since_version = now, version
        summary.seconds = round(time.monotonic() - started, 3)
        if summary.added or summary.edited:
            log.info("%s: %s", self.client.url, summary.format())
        return summary

    def _changed(self, summary: SyncSummary) -> Callable[[list[dict]], list[dict]]:
        normalize = self.builder.shingler.normalizer.normalize

        def select(page: list[dict]) -> list[dict]:
            summary.checked += len(page)
            return [d for d in page
                    if d.get("md5_hash") != md5_hex(normalize(d["content"] if isinstance(d.get("content"), str)
                                                              else ""))]
        return select

    def follow(self, interval: float = 1.0, stop: threading.Event | None = None,
               on_pass: Callable[[SyncSummary], None] | None = None) -> None:
        """Pass after pass, ``interval`` seconds apart, until ``stop`` is set (or KeyboardInterrupt). The first
        pass already looks only at what changed since ``follow`` began; what changed in place before is compared
        by a catch-up thread beside the passes (see the module docstring)."""
        interval = check_float("interval", interval, Limit("float", 0.05, 86_400))
        stop = stop or threading.Event()
        catch_up = self._start_catch_up(stop) if self._first_pass_compares_everything() else None
        try:
            while not stop.is_set():
                summary = self.run_once()
                if on_pass is not None:
                    on_pass(summary)
                stop.wait(interval)
        finally:
            stop.set()
            if catch_up is not None:
                catch_up.join()

    def _first_pass_compares_everything(self) -> bool:
        return not self.full_scan and self._since is None and self._since_version is None

    def _start_catch_up(self, stop: threading.Event) -> threading.Thread:
        """Compare, once, every signed document last changed before now; the passes then start from now."""
        now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        version = collection_of(self.client).highest_version()
        self._since, self._since_version = now, version
        summary = SyncSummary(started_at=now)
        compare = self._changed(summary)

        def select(page: list[dict]) -> list[dict]:
            if stop.is_set():
                raise _Stopped
            return compare(page)

        def run() -> None:
            started = time.monotonic()
            edited = BackfillSummary()
            before = Selection(seen=True, at_or_before=version)
            try:
                signing_pass(self.client, self.builder, before, edited, batch_size=self.batch_size, select=select)
            except _Stopped:
                log.info("%s: sync stopped before its catch-up had compared every signed document (%d so far); "
                         "the next sync compares them", self.client.url, summary.checked)
                return
            except Exception:  # noqa: BLE001 - a thread's failure must reach the log, not vanish
                log.exception("%s: the catch-up comparison of the documents changed before sync began failed "
                              "after %d; 'neardup-solr sync' (one pass) compares every signed document",
                              self.client.url, summary.checked)
                return
            summary.edited, summary.seconds = edited.signed, round(time.monotonic() - started, 3)
            log.info("%s: catch-up of the documents changed before sync began: %s", self.client.url,
                     summary.format())

        thread = threading.Thread(target=run, name="neardup-sync-catch-up", daemon=True)
        thread.start()
        return thread


class _Stopped(Exception):
    """The catch-up comparison was stopped with its follow."""


def open_syncer(client: SolrClient, *, changed_field: str | None = None, full_scan: bool = False,
                batch_size: int = 500, reconcile_interval: float = 60.0):
    """The syncer for ``client``'s collection: a :class:`~neardup_solr.engine.companion_sync.CompanionSyncer` for a
    user's collection that ``install`` prepared (or its companion), a :class:`Syncer` for a collection of ours
    that other clients post to. Both have ``run_once()`` and ``follow()``."""
    target = resolve_own_collection(client)
    if target is not None:
        return CompanionSyncer(target, changed_field=changed_field, full_scan=full_scan, batch_size=batch_size,
                               reconcile_interval=reconcile_interval)
    return Syncer(client, changed_field=changed_field, full_scan=full_scan, batch_size=batch_size)


def sync(client: SolrClient, *, changed_field: str | None = None, full_scan: bool = False,
         batch_size: int = 500):
    """One sync pass over ``client``'s collection (see :func:`open_syncer`)."""
    return open_syncer(client, changed_field=changed_field, full_scan=full_scan, batch_size=batch_size).run_once()
