"""What this process added to a collection that Solr's searcher may not show yet.

``check_and_add`` and ``NearDupIndex.insert`` send each document with ``commitWithin`` rather than a commit of
its own: a soft commit per add cost more than the rest of a check together (it opens a new searcher and empties
Solr's caches on every call). Until Solr's next soft commit, a query does not find such a document; a real-time
get does, but only by id. So the process remembers what it added, and its lookups search here too, with the
rule the Solr query uses (a shared LSH band, or a shared shingle for the complete threshold search) and the
same exact Jaccard. A lookup in this process therefore sees every add of this process at once; other processes
see it within ``commit_within_ms``.

Entries leave once a soft commit is known to cover them. Solr's own ``commitWithin`` commit should, but nothing
reports when it happened, so :meth:`RecentAdds.settle` sends one soft commit (waiting for the new searcher) when
the oldest entry is older than its ``commitWithin`` plus :data:`GRACE_SECONDS`, or when the buffer holds
``max_entries``; everything added before that commit was sent is then dropped. While streaming, that is one
extra soft commit every few seconds instead of one per document.

Buffers are per collection URL and shared by every thread (and every ``NearDupIndex``) of the process.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Iterable

import numpy as np

from neardup_solr.solr.client import SolrClient

log = logging.getLogger(__name__)

__all__ = ["GRACE_SECONDS", "RecentAdd", "RecentAdds", "recent_adds"]

# How long past its commitWithin an add may still be invisible before this process commits for it: Solr's commit
# tracker fires after commitWithin, and opening the new searcher takes a little longer on a busy node.
GRACE_SECONDS = 2.0
DEFAULT_MAX_ENTRIES = 5000


@dataclass
class RecentAdd:
    """One document this process added and Solr may not show yet: what a lookup needs to match and verify it."""

    id: str
    dataset: str | None
    content: str
    md5_hash: str
    hash_set: np.ndarray  # sorted unique shingle hashes
    band_tokens: tuple[str, ...]
    added_at: float  # time.monotonic()
    visible_by: float  # added_at + commitWithin + grace


class RecentAdds:
    """The recent adds of one collection, indexed by band token and by shingle hash (see the module docstring)."""

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES):
        self.max_entries = max_entries
        self._lock = threading.Lock()
        self._settling = threading.Lock()
        self._entries: dict[str, RecentAdd] = {}
        self._by_band: dict[str, set[str]] = {}
        self._by_shingle: dict[int, set[str]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def add(self, entry: RecentAdd) -> None:
        """Remember an add (replacing an older entry of the same id)."""
        with self._lock:
            self._remove(entry.id)
            self._entries[entry.id] = entry
            for token in entry.band_tokens:
                self._by_band.setdefault(token, set()).add(entry.id)
            for value in entry.hash_set.tolist():
                self._by_shingle.setdefault(value, set()).add(entry.id)

    def entries(self) -> list[RecentAdd]:
        """Every entry, oldest first (a copy: NearDupIndex counts and lists them without a commit)."""
        with self._lock:
            return list(self._entries.values())

    def forget(self, ids: Iterable[str]) -> None:
        """Drop these ids (they were deleted)."""
        with self._lock:
            for doc_id in ids:
                self._remove(doc_id)

    def forget_dataset(self, dataset: str | None) -> None:
        """Drop the entries of ``dataset`` (None: the unlabelled ones), which was deleted."""
        with self._lock:
            for doc_id in [e.id for e in self._entries.values() if e.dataset == dataset]:
                self._remove(doc_id)

    def clear(self) -> None:
        """Drop every entry (the collection was cleared)."""
        with self._lock:
            self._entries.clear()
            self._by_band.clear()
            self._by_shingle.clear()

    def drop_added_before(self, moment: float) -> int:
        """Drop the entries added before ``moment`` (monotonic): a soft commit sent at ``moment`` covers them."""
        with self._lock:
            old = [e.id for e in self._entries.values() if e.added_at < moment]
            for doc_id in old:
                self._remove(doc_id)
            return len(old)

    def candidates(self, *, band_tokens: Iterable[str] | None = None,
                   hash_set: np.ndarray | None = None) -> list[RecentAdd]:
        """Entries sharing a band token (the LSH rule) or, when ``band_tokens`` is None, a shingle hash."""
        with self._lock:
            if not self._entries:
                return []
            ids: set[str] = set()
            if band_tokens is not None:
                for token in band_tokens:
                    ids.update(self._by_band.get(token, ()))
            elif hash_set is not None:
                for value in hash_set.tolist():
                    ids.update(self._by_shingle.get(value, ()))
            return [self._entries[i] for i in ids]

    def settle(self, client: SolrClient) -> None:
        """Soft-commit once when an entry is overdue or the buffer is full, then drop what that commit covers.
        A thread that finds another one settling goes on: the entries stay searchable here meanwhile."""
        now = time.monotonic()
        with self._lock:
            if not self._entries:
                return
            overdue = len(self._entries) >= self.max_entries or any(
                e.visible_by <= now for e in self._oldest(8))
        if not overdue or not self._settling.acquire(blocking=False):
            return
        try:
            sent_at = time.monotonic()
            client.get_json("update", {"softCommit": "true"})
            dropped = self.drop_added_before(sent_at)
            log.debug("soft commit at %s covers %d recent adds", client.url, dropped)
        finally:
            self._settling.release()

    def _oldest(self, count: int) -> list[RecentAdd]:
        # Insertion order is add order (dict order; a re-added id moves to the end), so the head is the oldest.
        out = []
        for entry in self._entries.values():
            out.append(entry)
            if len(out) >= count:
                break
        return out

    def _remove(self, doc_id: str) -> None:
        entry = self._entries.pop(doc_id, None)
        if entry is None:
            return
        for token in entry.band_tokens:
            holders = self._by_band.get(token)
            if holders is not None:
                holders.discard(doc_id)
                if not holders:
                    del self._by_band[token]
        for value in entry.hash_set.tolist():
            holders_ = self._by_shingle.get(value)
            if holders_ is not None:
                holders_.discard(doc_id)
                if not holders_:
                    del self._by_shingle[value]


_registry: dict[str, RecentAdds] = {}
_registry_lock = threading.Lock()


def recent_adds(client: SolrClient) -> RecentAdds:
    """The process's buffer of recent adds to ``client``'s collection."""
    with _registry_lock:
        buffer = _registry.get(client.url)
        if buffer is None:
            buffer = _registry[client.url] = RecentAdds()
        return buffer
