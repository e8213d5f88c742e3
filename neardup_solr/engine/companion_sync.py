"""Filling and following a companion index (:mod:`neardup_solr.solr.companion`): ``backfill`` and ``sync`` of a
collection of the user's that ``install`` prepared.

Both only read the user's collection and only write the companion. A document's text is its text fields joined;
it is signed by the one signer every path uses (:class:`~neardup_solr.signing.builder.DocumentBuilder`) and added
to the companion whole, under the user's key: an add replaces, so writing a document twice is harmless, and
nothing depends on the order two writes land in beyond the last one being the newest text read.

- **backfill** reads every key in key order (a cursor over the key alone), then the documents by key, a page at a
  time. Every few pages the last key of a page whose every predecessor is in goes into the companion's state
  document, so a run that stops resumes after that key, never after a page that is missing.
- **sync** follows what the user's pipeline does. Every add, replacement and in-place edit raises the document's
  ``_version_`` (Solr's update log), so a pass reads the documents whose version is above the highest one the
  previous pass saw (less a margin for shard leaders' clocks), signs those whose normalised text's digest differs
  from the companion's, and writes them. An idle pass is one small query. Deletions leave no version behind: a
  reconciling pass (every ``reconcile_interval`` seconds, and at the end of every single ``sync``) compares the
  companion's ids with the user's keys and deletes what the user deleted.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable, Iterable, Iterator, Sequence, TypeVar

from neardup_solr.engine.backfill_summary import BackfillSummary, Verification
from neardup_solr.engine.group_upkeep import GroupUpkeep
from neardup_solr.engine.key_ranges import KeyRange, fences, find_gone
from neardup_solr.errors import IndexIncomplete, InstallRefused, InvalidParameterError, SolrRequestError
from neardup_solr.io.progress import progress_bar
from neardup_solr.signing.builder import DocumentBuilder
from neardup_solr.signing.settings import IndexSettings
from neardup_solr.signing.tokens import md5_hex
from neardup_solr.batching import chunks
from neardup_solr.solr.collection import EVERY_DOCUMENT, Selection, SolrClient, collection_of
from neardup_solr.solr.companion import (
    KEY_PAGE,
    PageSizing,
    count_between,
    keys_between,
    present_keys,
    read_source_schema,
    source_count,
    source_keys,
    source_pages,
    source_pages_by_key,
)
from neardup_solr.solr.companion_link import SourceLink, SourceState, read_link, read_state, source_client
from neardup_solr.solr.settings_store import read_index_settings
from neardup_solr.validation import Limit, check_float, check_int

log = logging.getLogger(__name__)

_GET_CHUNK = 500
T = TypeVar("T")
# Adds in flight at once during a backfill, and how often (in documents) its resumable position is saved and the
# companion hard-committed: a resumed run signs at most about this many again. Three adds, one more than index's
# workers: while Solr also serves backfill's reads, two left its CPU idle between adds (100k documents side by
# side on one Solr, 2026-12-06: 37.7 s with two, 32.4-33.6 s with three, index 31.9-32.3 s; index itself gained
# nothing from a third, docs/benchmarks.md).
_WRITERS = 3
_STATE_EVERY_DOCS = 20_000
# backfill's read pages (documents fetched by key, see source_pages_by_key): the first of this many documents
# whatever the add batch, then as many as hold about 8M characters of text, up to _MAX_READ_PAGE (PageSizing). The
# adds still go in batches of ``batch_size``.
_MIN_READ_PAGE = 2_000
_MAX_READ_PAGE = 20_000
# A reconciling pass whose counts agree reads no keys; every key is read at a syncer's first pass, then once this
# many reconcile intervals, and at least this many seconds, have passed since the last full read (see
# CompanionSyncer.reconcile): the safety net costs about 5 s of two cores at 1M documents, too much to pay every
# 50 s where the interval is 5 s.
_FULL_RECONCILE_EVERY = 10
_FULL_RECONCILE_AT_LEAST_S = 600.0
# Where a reconciling pass may cut the key space (engine/key_ranges.py): at every this many ids of the last full
# read, at most this many cuts. At 1M documents: 1,000 ranges of 1,000 keys, three rounds of counts for one deletion.
_FENCE_EVERY = 1_000
_MOST_FENCES = 4_096
# The least time between two reconciling passes that a deletion seen in the counts starts (see follow): a deletion
# that Solr has not finished showing everywhere (a SolrCloud's replicas) is not chased pass after pass.
_EARLY_RECONCILE_GAP_S = 1.0


def read_ahead(pages: Iterator[T], depth: int = 1) -> Iterator[T]:
    """``pages`` as they come, fetched by a thread of their own up to ``depth`` ahead, so that reading the next
    page overlaps signing this one (the 1M run: the main thread spent 126 s reading and 220 s signing one after
    the other). The reader's exception is raised here, at the page it failed on; leaving the loop early stops it."""
    ahead: queue.Queue = queue.Queue(maxsize=depth)
    done = object()
    stop = threading.Event()

    def read() -> None:
        try:
            for page in pages:
                while not stop.is_set():
                    try:
                        ahead.put((page, None), timeout=0.5)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            ahead.put((done, None))
        except BaseException as error:  # noqa: BLE001 - handed to the consumer, which raises it
            ahead.put((done, error))

    reader = threading.Thread(target=read, name="neardup-read-ahead", daemon=True)
    reader.start()
    try:
        while True:
            page, error = ahead.get()
            if page is done:
                if error is not None:
                    raise error
                return
            yield page
    finally:
        stop.set()
        with contextlib.suppress(queue.Empty):
            while True:
                ahead.get_nowait()
        reader.join(timeout=5)


class Companion:
    """A companion and what it needs to read its source: the link, a client on the user's collection, the
    settings and the signer."""

    def __init__(self, companion: SolrClient):
        link = read_link(companion)
        if link is None:
            raise InstallRefused(f"{companion.url} is not the companion of a collection of yours: 'neardup-solr "
                                 "install --solr-url URL --text-field FIELD' makes one")
        settings = read_index_settings(companion)
        if settings is None:
            raise InstallRefused(f"the companion {companion.url} has lost its settings: 'neardup-solr uninstall', "
                                 "then install again")
        self.client: SolrClient = companion
        self.collection = collection_of(companion)
        self.link: SourceLink = link
        self.settings: IndexSettings = settings
        self.source: SolrClient = source_client(companion, link)
        self.builder = DocumentBuilder(settings)
        self._normalize = self.builder.shingler.normalizer.normalize

    def digest(self, text: str) -> str:
        """The digest a signed document carries of its text (``md5_hash``)."""
        return md5_hex(self._normalize(text))

    def documents(self, items: Sequence[tuple[str, str]], summary: BackfillSummary) -> list[dict]:
        """The companion documents of ``(key, text)`` items. A text with nothing to sign (no words left, or no text
        field set) becomes a marker with its digest and no signature, so that sync does not read it again until it
        changes and reports leave it out."""
        built = self.builder.build(items)
        docs = list(built.documents)
        for index, reason in built.rejected:
            key, text = items[index]
            summary.refused += 1
            if len(summary.refusals) < 20:
                summary.refusals.append((key, reason))
            log.info("document %r not signed: %s", key, reason)
            if isinstance(key, str) and key:
                docs.append({"id": key, "md5_hash": self.digest(text), "num_words": 0, "num_shingles": 0})
        summary.signed += len(built.documents)
        return docs

    def items(self, page: Iterable[dict]) -> list[tuple[str, str]]:
        key = self.link.key_field
        return [(str(d[key]), self.link.text_of(d)) for d in page if key in d]

    def stored_digests(self, keys: list[str]) -> dict[str, str | None]:
        """``{key: md5_hash}`` of the keys the companion holds (real-time get: what was just written counts)."""
        out: dict[str, str | None] = {}
        for chunk in chunks(keys, _GET_CHUNK):
            out.update({str(d["id"]): d.get("md5_hash") for d in self.collection.by_ids(chunk, "id,md5_hash")})
        return out

    def companion_ids(self) -> list[str]:
        """Every id of the companion's signed documents, in Solr's order."""
        return [str(d["id"]) for page in self.collection.pages(EVERY_DOCUMENT, "id", KEY_PAGE) for d in page]

    def save_state(self, state: SourceState) -> None:
        self.collection.add([state.document()])


def backfill_companion(companion: SolrClient, *, batch_size: int = 500, progress: bool = False,
                       verify: bool = True, restart: bool = False) -> BackfillSummary:
    """Sign every document of the user's collection into its companion (see the module docstring). Resumes an
    unfinished backfill from its last page unless ``restart``. Raises
    :class:`~neardup_solr.errors.IndexIncomplete` when, at the end, a document that was there when the backfill
    started is missing from the companion."""
    batch_size = check_int("batch_size", batch_size, minimum=1, maximum=100_000)
    comp = Companion(companion)
    state = read_state(companion)
    resuming = state.backfill_unfinished and not restart
    if not resuming:
        state = SourceState(backfill_unfinished=True, backfill_started_version=collection_of(comp.source).highest_version()
                            if comp.link.has_version else None, synced_version=state.synced_version)
    summary = BackfillSummary(passes=1)
    upkeep = GroupUpkeep(companion, comp.settings, mirror=True)
    started = time.monotonic()
    total = source_count(comp.source)
    bar = progress_bar(progress, desc=f"signing {comp.link.collection}", total=total)
    if resuming:
        log.info("%s: resuming the backfill after its last page written (key %r)", companion.url,
                 state.backfill_after_key)
    # Each add in flight, with its page's last key and the page's size where it is a page's last batch.
    in_flight: deque[tuple[Future, tuple[str, int] | None]] = deque()
    acknowledged = {"docs": 0, "saved_at": 0}

    def settle(oldest: tuple[Future, tuple[str, int] | None]) -> None:
        """Wait for the oldest add; once every batch up to a page's last is in, that page's last key may be
        saved."""
        future, page_end = oldest
        future.result()
        if page_end is None:
            return
        last_key, page_docs = page_end
        acknowledged["docs"] += page_docs
        if acknowledged["docs"] - acknowledged["saved_at"] >= _STATE_EVERY_DOCS:
            state.backfill_after_key = last_key
            comp.save_state(state)
            # A hard commit without a new searcher with each saved position, as index makes one every 20,000
            # documents. Without it Solr held the whole backfill in its indexing buffer and update log until
            # the end, and spent more on the same adds: 100k documents took 45.9 s and 54.5 s of Solr CPU, with
            # it 38.6 s and 45.5 s (2026-12-06, same machine and run).
            comp.collection.commit(visible=False)
            acknowledged["saved_at"] = acknowledged["docs"]

    try:
        # _WRITERS adds in flight while the next page is read and signed. The key
        # saved for a resume is the last of a page whose every predecessor Solr has acknowledged (adds are
        # settled in order), so a resumed run never skips a page; it may sign a few pages again, harmlessly.
        with ThreadPoolExecutor(max_workers=_WRITERS) as writers:
            first = min(max(batch_size, _MIN_READ_PAGE), _MAX_READ_PAGE)
            sizing = PageSizing(first=first, least=min(batch_size, _MAX_READ_PAGE), most=_MAX_READ_PAGE)
            pages = source_pages_by_key(comp.source, comp.link, sizing=sizing, after_key=state.backfill_after_key)
            for page, last_key in read_ahead(pages):
                batches = list(chunks(page, batch_size))
                for position, batch in enumerate(batches, start=1):
                    items = comp.items(batch)
                    docs = comp.documents(items, summary)
                    upkeep.signed(items)
                    while len(in_flight) >= _WRITERS:
                        settle(in_flight.popleft())
                    # Only a page's last batch carries its key: adds settle in order, so by then the page is in.
                    page_end = (last_key, len(page)) if position == len(batches) else None
                    in_flight.append((writers.submit(companion.add, docs), page_end))
                    bar.update(len(batch))
            while in_flight:
                settle(in_flight.popleft())
    finally:
        bar.close()
    state.backfill_unfinished, state.backfill_after_key, state.backfilled = False, None, True
    if state.synced_version is None:
        state.synced_version = state.backfill_started_version
    comp.save_state(state)
    comp.collection.commit()
    summary.grouped = upkeep.group_signed()
    summary.seconds = round(time.monotonic() - started, 3)
    if verify:
        summary.verification = _verify(comp, state.backfill_started_version)
        if summary.verification.unsigned:
            raise IndexIncomplete(summary)
    log.info("backfill of %s into %s: %s", comp.link.collection, companion.url, summary.format())
    return summary


def _verify(comp: Companion, started_version: int | None) -> Verification:
    """Every document of the user's that was there when the backfill began must be in the companion (those
    posted since are sync's)."""
    held = set(comp.companion_ids())
    missing = [key for key in source_keys(comp.source, comp.link, Selection(at_or_before=started_version))
               if key not in held]
    return Verification(len(missing), missing[:5])


@dataclass
class CompanionSyncSummary:
    """One sync pass over a companion: documents ``added`` (new to the companion), ``edited`` (their text
    changed), ``checked`` (read from the user's collection), ``deleted`` (gone from it), and the time."""

    added: int = 0
    edited: int = 0
    checked: int = 0
    deleted: int = 0
    refused: int = 0
    grouped: int = 0
    reconciled: bool = False
    seconds: float = 0.0
    started_at: str = ""

    @property
    def solr_refused(self) -> int:  # the same summary as a sync of a collection of ours
        return 0

    def format(self) -> str:
        return (f"sync: {self.added} new, {self.edited} changed (of {self.checked} read)"
                + (f", {self.deleted} deleted" if self.reconciled else "")
                + (f", {self.refused} with nothing to sign" if self.refused else "")
                + (f", {self.grouped} given their near-duplicate group" if self.grouped else "")
                + f" in {self.seconds:.2f} s")


class CompanionSyncer:
    """Sync passes from the user's collection into its companion (see the module docstring). ``changed_field``:
    a date field the user's pipeline sets on every change, which chooses the documents to read instead of their
    versions; ``full_scan``: read every document on every pass; ``reconcile_interval``: seconds between the
    passes of :meth:`follow` that also look for deleted documents."""

    def __init__(self, companion: SolrClient, *, changed_field: str | None = None, full_scan: bool = False,
                 batch_size: int = 500, version_margin_s: float = 5.0, reconcile_interval: float = 60.0):
        self.comp = Companion(companion)
        self.client = companion
        self.collection = self.comp.collection
        self.batch_size = check_int("batch_size", batch_size, minimum=1, maximum=100_000)
        self.version_margin_s = check_float("version_margin_s", version_margin_s, Limit("float", 0, 86_400))
        self.reconcile_interval = check_float("reconcile_interval", reconcile_interval,
                                              Limit("float", 0, 7 * 86_400, unit="seconds"))
        if changed_field is not None:
            source = self.comp.source
            schema = read_source_schema(source)
            found = schema.field(changed_field)
            field_class = schema.type_class(found) if found is not None else ""
            if found is None or "Date" not in field_class:
                raise InvalidParameterError("changed_field", "a date field of the collection that the writers set "
                                            "on every change", changed_field, f"{source.url} has no such date field")
        self.changed_field = changed_field
        self.full_scan = full_scan or not self.comp.link.has_version and changed_field is None
        state = read_state(companion)
        self._since_version: int | None = state.synced_version
        self._since_date: str | None = None
        self._last_reconcile = float("-inf")  # a follow reconciles on its first pass
        self._fences: list[str] = []  # cut from the last full read (see reconcile)
        self._last_full_read = float("-inf")
        self._key_is_string: bool | None = None
        self._ranges_refused = False
        self.last_reconcile = ""  # how the last reconciling pass looked: "counts", "ranges" or "every key"
        self._state = state

    def run_once(self, *, reconcile: bool = True) -> CompanionSyncSummary:
        """One pass: what was added, replaced or edited since the last pass; then, when ``reconcile`` (or its
        interval is up), what was deleted."""
        started = time.monotonic()
        now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        # Read before the pass: a change made while the pass runs is read by the next one.
        version = collection_of(self.comp.source).highest_version() if self.comp.link.has_version else None
        summary = CompanionSyncSummary(started_at=now)
        work = BackfillSummary()
        upkeep = GroupUpkeep(self.client, self.comp.settings, mirror=True)
        self._sign_changes(self._changes(), summary, work, upkeep)
        if reconcile:
            if summary.added or summary.edited:
                self.collection.commit()  # the reconcile's counts must see what this pass just signed
            summary.deleted = self.reconcile()
            summary.reconciled = True
        if summary.added or summary.edited or summary.deleted:
            if version is not None:
                self._state.synced_version = version
                self.comp.save_state(self._state)
            self.collection.commit()
            summary.grouped = upkeep.group_signed()
        self._since_version, self._since_date = version, now
        summary.refused = work.refused
        summary.seconds = round(time.monotonic() - started, 3)
        if summary.added or summary.edited or summary.deleted:
            log.info("%s: %s", self.client.url, summary.format())
        return summary

    def _changes(self) -> Selection:
        """What this pass reads of the user's collection: what changed since the last one (every document on a
        full scan, or before the first)."""
        if self.full_scan:
            return EVERY_DOCUMENT
        if self.changed_field is not None:
            return Selection(dated_since=(self.changed_field, self._since_date, 30)) if self._since_date \
                else EVERY_DOCUMENT
        if self._since_version is not None:
            return Selection(changed_after=self._since_version, margin_s=self.version_margin_s)
        return EVERY_DOCUMENT

    def _sign_changes(self, changes: Selection, summary: CompanionSyncSummary, work: BackfillSummary,
                      upkeep: GroupUpkeep) -> None:
        # A pass after a quiet spell reads a page or two, by one cursor; a full scan reads pages as large as
        # backfill's, keys first, as backfill does (a cursor over the texts costs Solr three times as much).
        sizing = PageSizing(first=self.batch_size, least=self.batch_size, most=max(self.batch_size, _MAX_READ_PAGE))
        pages = (source_pages(self.comp.source, self.comp.link, changes, sizing=sizing) if changes != EVERY_DOCUMENT
                 else source_pages_by_key(self.comp.source, self.comp.link, sizing=sizing))
        for page, _ in pages:
            for batch in chunks(page, self.batch_size):
                items = self.comp.items(batch)
                summary.checked += len(items)
                stored = self.comp.stored_digests([key for key, _ in items])
                changed = [(key, text) for key, text in items if stored.get(key, "") != self.comp.digest(text)]
                if not changed:
                    continue
                summary.added += sum(1 for key, _ in changed if key not in stored)
                summary.edited += sum(1 for key, _ in changed if key in stored)
                self.collection.add(self.comp.documents(changed, work))
                upkeep.signed(changed)

    def reconcile(self, *, full: bool = False) -> int:
        """Delete from the companion what the user deleted; returns how many.

        Reading every key of both costs about 5 s at 1M documents (3.6 s of Solr CPU), so a pass first compares the
        two counts and stops when they agree. When they differ it counts both over ranges of the key and reads the
        keys of only the narrow ranges where the companion holds more (:mod:`neardup_solr.engine.key_ranges`; the
        ranges are cut at every 1,000th key of the last full read). It reads every key when ``full``; on a
        syncer's first pass, then once :data:`_FULL_RECONCILE_EVERY` reconcile intervals (and at least
        :data:`_FULL_RECONCILE_AT_LEAST_S` seconds) have passed since the last full read; where the ranges found
        fewer deletions than the companion holds documents too many; and where the user's key is not a string
        field (another type sorts otherwise than the companion's string ids). Equal counts, in all or in a range,
        hide a deletion only while an addition not yet signed balances it; the version passes sign that addition
        within their interval, and the counts of the next reconciling pass differ (the periodic full read bounds
        even a stream of such coincidences). Every key the ranges find gone is looked up in the user's collection
        before it is deleted here."""
        self._last_reconcile = time.monotonic()
        since_full = time.monotonic() - self._last_full_read
        periodic = since_full >= max(_FULL_RECONCILE_EVERY * self.reconcile_interval, _FULL_RECONCILE_AT_LEAST_S)
        if full or periodic:
            self.last_reconcile = "every key"
            gone = self._gone_reading_every_key()
        else:
            held, shown = self._counts()
            if held == shown:
                self.last_reconcile = "counts"
                return 0
            found = self._gone_by_ranges() if self._fences else None
            if found is None or len(found) < held - shown:
                self.last_reconcile = "every key"
                gone = self._gone_reading_every_key()
            else:
                self.last_reconcile = "ranges"
                gone = found
        if not gone:
            return 0
        with GroupUpkeep(self.client, mirror=True).deleting(gone):
            for chunk in chunks(gone, _GET_CHUNK):
                self.collection.delete(chunk)
            self.collection.commit()
        log.info("%s: %d document(s) deleted from %s, deleted here too (found by %s)", self.client.url, len(gone),
                 self.comp.link.collection, self.last_reconcile)
        return len(gone)

    def _gone_reading_every_key(self) -> list[str]:
        """The companion's ids first: a document it holds was in the user's collection before, so one missing from
        the keys read afterwards was deleted (one deleted and added again meanwhile comes back with the next pass,
        by its new version). Also cuts the ranges of the next passes at the ids read."""
        self._last_full_read = time.monotonic()
        ids = sorted(self.comp.companion_ids())
        self._fences = fences(ids, _FENCE_EVERY, _MOST_FENCES)
        held = set(ids)
        for key in source_keys(self.comp.source, self.comp.link):
            held.discard(key)
        return sorted(held)

    def _gone_by_ranges(self) -> list[str] | None:
        """What :func:`~neardup_solr.engine.key_ranges.find_gone` finds between the fences, each key confirmed
        missing from the user's collection; None where ranges cannot be used (the key is not a string field, or
        Solr refused the range query: then this syncer reads every key from then on)."""
        if not self._string_keys():
            return None
        comp = self.comp
        key_field = comp.link.key_field

        def held_in(r: KeyRange) -> int:
            return count_between(self.client, "id", r.low, r.high, companion=True)

        def shown_in(r: KeyRange) -> int:
            return count_between(comp.source, key_field, r.low, r.high)

        def gone_in(r: KeyRange) -> list[str]:
            held = list(keys_between(self.client, "id", r.low, r.high, companion=True))
            shown = set(keys_between(comp.source, key_field, r.low, r.high))
            return [key for key in held if key not in shown]

        try:
            search = find_gone(self._fences, held_in, shown_in, gone_in)
        except SolrRequestError as error:
            log.warning("%s: counting keys by range failed (%s); every reconciling pass reads every key instead",
                        self.client.url, error)
            self._fences = []
            self._ranges_refused = True
            return None
        log.debug("%s: %d range(s) counted on each side, %d read: %d gone", self.client.url,
                  search.ranges_counted, search.ranges_read, len(search.gone))
        present = present_keys(comp.source, comp.link, search.gone)
        return [key for key in search.gone if key not in present]

    def _string_keys(self) -> bool:
        """Whether the user's key is a string field (read once): only then do its ranges sort as the companion's
        string ids do."""
        if self._key_is_string is None:
            schema = read_source_schema(self.comp.source)
            spec = schema.field(self.comp.link.key_field) or {}
            self._key_is_string = schema.type_class(spec).endswith("StrField")
        return self._key_is_string and not self._ranges_refused

    def _counts(self) -> tuple[int, int]:
        """The documents the companion holds, then those the user's collection shows. Only a deletion makes the
        first the larger: the companion holds nothing the user's collection did not show first (the companion is
        counted first, so a document posted in between can only hide it)."""
        return self.collection.count(), source_count(self.comp.source)

    def _companion_ahead(self) -> bool:
        held, shown = self._counts()
        return held > shown

    def follow(self, interval: float = 1.0, stop: threading.Event | None = None,
               on_pass: Callable[[CompanionSyncSummary], None] | None = None) -> None:
        """Pass after pass, ``interval`` seconds apart, until ``stop`` is set (or KeyboardInterrupt). Deletions
        are looked for by a reconciling pass in a thread of its own (it may read every key, about a second at
        100,000 documents, and a document posted meanwhile must not wait for it): every ``reconcile_interval``
        seconds, and at once when a pass finds the companion holding more documents than the user's collection
        shows, which only a deletion does (two counts a pass). A deletion balanced by an addition not signed yet
        waits for the interval."""
        interval = check_float("interval", interval, Limit("float", 0.05, 86_400))
        stop = stop or threading.Event()
        reconciler: threading.Thread | None = None

        def reconcile_now() -> threading.Thread:
            self._last_reconcile = time.monotonic()
            thread = threading.Thread(target=self._reconcile_in_background, args=(on_pass,),
                                      name="neardup-sync-reconcile", daemon=True)
            thread.start()
            return thread

        def may_start(after_s: float) -> bool:
            """No reconciling pass is running, and the last one started at least ``after_s`` seconds ago."""
            idle = reconciler is None or not reconciler.is_alive()
            return idle and time.monotonic() - self._last_reconcile >= after_s

        try:
            while not stop.is_set():
                if may_start(self.reconcile_interval):
                    reconciler = reconcile_now()
                summary = self.run_once(reconcile=False)
                if on_pass is not None:
                    on_pass(summary)
                if may_start(_EARLY_RECONCILE_GAP_S) and self._companion_ahead():
                    reconciler = reconcile_now()
                stop.wait(interval)
        finally:
            if reconciler is not None:
                reconciler.join()

    def _reconcile_in_background(self, on_pass: Callable[[CompanionSyncSummary], None] | None) -> None:
        started = time.monotonic()
        try:
            deleted = self.reconcile()
        except Exception:  # noqa: BLE001 - a thread's failure must reach the log; the next interval tries again
            log.exception("%s: the reconciling pass (deletions) failed; the next one tries again", self.client.url)
            return
        if on_pass is not None:  # a summary of its own: the reconciling pass is not one of the loop's
            on_pass(CompanionSyncSummary(deleted=deleted, reconciled=True,
                                         seconds=round(time.monotonic() - started, 3)))
