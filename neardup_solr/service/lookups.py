"""The service's lookups (and its web page's): the options a request gave, made into the library's options
once, then run through the library.

The options and their meaning are the command line's (``near-dups``) and the Python API's, from one place
(:mod:`neardup_solr.options`): ``mode`` shingles|minhash|lsh with ``max_edit_distance``, ``min_jaccard``,
``rows``, ``first_word_filter`` and ``num_hashes`` (minhash mode), a :class:`~neardup_solr.options.LookupOptions`;
or ``threshold`` with ``similarity`` jaccard|idf|cosine (every document at or above it, no row cap; by cosine
with ``method`` knn|hybrid), a
:class:`~neardup_solr.options.SimilarityLookup`; or ``min_share``, a :class:`~neardup_solr.options.ShareLookup`.
An option left out (or null) takes its default there; options that do not apply to the chosen lookup are
refused, never ignored, as on the command line.
"""

from __future__ import annotations

import threading
import time
from dataclasses import asdict
from typing import Any

from neardup_solr.engine.online import Match, describe, sort_matches
from neardup_solr.engine.records_online import SolrRecordMatcher
from neardup_solr.options import (
    SIMILARITIES,
    AnyLookup,
    LookupOptions,
    ShareLookup,
    SimilarityLookup,
    lookup_from_given,
)
from neardup_solr.solr.client import SolrClient
from neardup_solr.signing.settings import IndexSettings
from neardup_solr.solr.record_model import stored_revision
from neardup_solr.solr.settings_store import read_index_settings
from neardup_solr.solr.searcher import Query, Searcher
from neardup_solr.engine.find import find_similar_documents


class SearcherCache:
    """The service's :class:`Searcher`, shared by its requests. A Searcher reads the collection's settings and
    builds its signer when it is made; once per request that was a Solr round trip and a MinHash set-up on every
    lookup. Here the settings are read again at most every ``max_age`` seconds (a new Searcher only when they
    changed), and at once after this process wrote to the collection (:meth:`invalidate`)."""

    def __init__(self, client: SolrClient, max_age: float = 5.0):
        self.client = client
        self.max_age = max_age
        self._lock = threading.Lock()
        self._searcher: Searcher | None = None
        self._stored = False
        self._read_at = 0.0

    def get(self) -> Searcher:
        """The Searcher for the collection's current settings (the defaults while nothing is stored)."""
        return self._current()[0]

    def get_stored(self) -> Searcher | None:
        """The Searcher when the collection has stored settings, else None (nothing indexed yet)."""
        searcher, stored = self._current()
        return searcher if stored else None

    def _current(self) -> tuple[Searcher, bool]:
        with self._lock:
            now = time.monotonic()
            if self._searcher is None or now - self._read_at > self.max_age:
                stored = read_index_settings(self.client)
                settings = stored or IndexSettings()
                if self._searcher is None or settings != self._searcher.settings:
                    self._searcher = Searcher(self.client, settings)
                self._stored = stored is not None
                self._read_at = now
            return self._searcher, self._stored

    def invalidate(self) -> None:
        """Read the settings again on the next request (this process changed the collection)."""
        with self._lock:
            self._read_at = 0.0


class RecordMatcherCache:
    """The service's :class:`~neardup_solr.engine.records_online.SolrRecordMatcher`, made at the first record
    lookup (it reads the collection's token frequencies once) and shared by the requests. The stored model's
    revision is read again at most every ``max_age`` seconds (one real-time get); a new revision (a retraining)
    makes a new matcher."""

    def __init__(self, client: SolrClient, max_age: float = 5.0):
        self.client = client
        self.max_age = max_age
        self._lock = threading.Lock()
        self._matcher: SolrRecordMatcher | None = None
        self._read_at = 0.0

    def get(self) -> SolrRecordMatcher:
        """The matcher for the stored model (RecordModelError when the collection has none)."""
        with self._lock:
            now = time.monotonic()
            if self._matcher is None:
                self._matcher = SolrRecordMatcher(self.client)
                self._read_at = now
            elif now - self._read_at > self.max_age:
                if stored_revision(self.client) != self._matcher.revision:
                    self._matcher = SolrRecordMatcher(self.client)
                self._read_at = now
            return self._matcher

    def invalidate(self) -> None:
        """Make a new matcher at the next record lookup (the records or the model changed)."""
        with self._lock:
            self._matcher = None


def resolve(options: dict[str, Any]) -> AnyLookup:
    """The lookup a request asks for (None: not given): :func:`neardup_solr.options.lookup_from_given`."""
    return lookup_from_given(options)


def options_in_force(lookup: AnyLookup) -> dict[str, Any]:
    """The options in force, as the answer reports them (the keys the request gives them by). A threshold lookup
    names its method only where there is a choice (by meaning: knn or hybrid); one by words has only its own."""
    options = asdict(lookup)
    if isinstance(lookup, SimilarityLookup):
        options.pop("method")
        if lookup.similarity == "cosine":
            options["method"] = lookup.method_in_force
    return options


def run(searcher: Searcher, query: Query, lookup: AnyLookup) -> list[Match]:
    """The near duplicates of ``query`` (a stored document's when ``query.id`` is set, which is left out)."""
    if isinstance(lookup, SimilarityLookup):
        return describe(searcher, query, find_similar_documents(searcher, lookup, query.text, exclude_id=query.id))
    if isinstance(lookup, ShareLookup):
        shared = [(i, s) for i, s in searcher.find_by_shingle_share(query.text, lookup.min_share) if i != query.id]
        return describe(searcher, query, shared)
    candidates = searcher.search(query, options=lookup)
    # The library's ranking (edit distance, then Jaccard, then overlap) is kept: it is the lookup's own.
    return [Match(m.id, m.jaccard, m.edit_distance, m.exact, m.dataset, m.content) for m in candidates]


__all__ = ["SearcherCache", "RecordMatcherCache", "resolve", "options_in_force", "run", "sort_matches", "SIMILARITIES",
           "LookupOptions"]
