"""The lookup options of the service (and its web page), resolved and checked once, then run through the library.

The options and their meaning are the command line's (``near-dups``): ``mode`` shingles|minhash|lsh with
``max_edit_distance``, ``min_jaccard``, ``rows``, ``first_word_filter`` and ``num_hashes`` (minhash mode); or
``threshold`` with ``similarity`` jaccard|idf (every document at or above it, no row cap); or ``min_share``.
Lookups have the library's honest defaults (:meth:`neardup_solr.solr.searcher.Searcher.find_near_dups`): every
candidate at the collection's threshold, no edit-distance limit, no first-word filter, no row cap; an option
left out (or null) takes its default, and a negative edit distance is refused as it is in Python and on the
command line. Reports keep the write-up's ranking by default, as ``report`` does
(:data:`neardup_solr.options.WRITEUP_LOOKUP`). Options that do not apply to the chosen lookup are refused,
never ignored, as on the command line.
"""

from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass
from typing import Any

from neardup_solr.errors import OptionError  # noqa: F401 (defined in errors, importable here too)
from neardup_solr.solr.documents import IndexSettings, read_index_settings
from neardup_solr.engine.online import Match, describe, sort_matches
from neardup_solr.options import (
    COLLECTION_THRESHOLD,
    MODES,
    SIMILARITIES,
    WRITEUP_LOOKUP,
    LookupOptions,
    MinJaccard,
    option_names,
)
from neardup_solr.solr.searcher import Query, Searcher
from neardup_solr.solr.client import SolrClient
from neardup_solr.validation import check_bool, check_choice, check_float, check_int

SEARCH_OPTIONS = tuple(option_names(LookupOptions))


@dataclass
class Lookup:
    """Resolved lookup options: ``kind`` is ``search``, ``threshold`` or ``share``."""

    kind: str
    mode: str | None = None
    max_distance: int | None = None
    min_jaccard: MinJaccard = None
    rows: int | None = None
    first_word_filter: bool | None = None
    num_hashes: int | None = None
    threshold: float | None = None
    similarity: str | None = None
    min_share: float | None = None

    def describe(self) -> dict[str, Any]:
        """The options in force, as the answer reports them."""
        if self.kind == "threshold":
            return {"threshold": self.threshold, "similarity": self.similarity}
        if self.kind == "share":
            return {"min_share": self.min_share}
        return {"mode": self.mode, "max_edit_distance": self.max_distance,
                "min_jaccard": self.min_jaccard, "rows": self.rows, "first_word_filter": self.first_word_filter,
                "num_hashes": self.num_hashes}


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


def resolve(options: dict[str, Any], *, report: bool = False) -> Lookup:
    """Check the given options (None: not given) and fill the defaults: a lookup's, or with ``report`` the
    write-up's ranking that reports keep; raises InvalidParameterError."""
    given = {k: v for k, v in options.items() if v is not None}
    search_given = [k for k in SEARCH_OPTIONS if k in given]
    if "threshold" in given:
        if search_given or "min_share" in given:
            raise OptionError(search_given + (["min_share"] if "min_share" in given else []),
                              "with threshold, which returns every document at or above it (no row cap, no "
                              "first-word filter, no edit-distance limit)")
        return Lookup("threshold", threshold=check_float("threshold", given["threshold"], "threshold"),
                      similarity=check_choice("similarity", given.get("similarity", "jaccard"), SIMILARITIES))
    if "similarity" in given:
        raise OptionError(["similarity"], "without threshold (it chooses the threshold lookup's similarity)")
    if "min_share" in given:
        if search_given:
            raise OptionError(search_given, "with min_share, which lists every document holding that share of "
                                            "the text's shingles")
        return Lookup("share", min_share=check_float("min_share", given["min_share"], "min_share"))
    mode = check_choice("mode", given.get("mode", "shingles"), MODES)
    # Reports keep the write-up's ranking, in every mode as the command line's report does; lookups have the
    # library's defaults. Both come from neardup_solr.options, the one place the CLI reads them too.
    defaults: dict[str, Any] = asdict(WRITEUP_LOOKUP if report else LookupOptions())
    distance = check_int("max_edit_distance", given.get("max_edit_distance", defaults["max_edit_distance"]),
                         "max_edit_distance", none_ok=True)
    num_hashes = check_int("num_hashes", given["num_hashes"], "num_hashes") if "num_hashes" in given else None
    if num_hashes is not None and mode != "minhash":
        raise OptionError(["num_hashes"], "outside mode minhash")
    min_jaccard = given.get("min_jaccard", defaults["min_jaccard"])
    if min_jaccard != COLLECTION_THRESHOLD:
        min_jaccard = check_float("min_jaccard", min_jaccard, "min_jaccard", none_ok=True)
    return Lookup(
        "search", mode=mode, max_distance=distance, min_jaccard=min_jaccard,
        rows=check_int("rows", given.get("rows", defaults["rows"]), "rows", none_ok=True),
        first_word_filter=check_bool("first_word_filter", given.get("first_word_filter",
                                                                    defaults["first_word_filter"])),
        num_hashes=num_hashes)


def run(searcher: Searcher, query: Query, lookup: Lookup) -> list[Match]:
    """The near duplicates of ``query`` (a stored document's when ``query.id`` is set, which is left out)."""
    # resolve() fills every option of the lookup's kind; the asserts say so to the type checker.
    if lookup.kind == "threshold":
        from neardup_solr.engine.threshold import ThresholdFinder

        assert lookup.threshold is not None and lookup.similarity is not None
        finder = ThresholdFinder(searcher, threshold=lookup.threshold, similarity=lookup.similarity)
        found = finder.similar_to_text(query.text, exclude_id=query.id)
        return describe(searcher, query, found)
    if lookup.kind == "share":
        assert lookup.min_share is not None
        shared = [(i, s) for i, s in searcher.find_by_shingle_share(query.text, lookup.min_share) if i != query.id]
        return describe(searcher, query, shared)
    assert lookup.mode is not None and lookup.first_word_filter is not None
    candidates = searcher.search(query, mode=lookup.mode, max_distance=lookup.max_distance, rows=lookup.rows,
                                 first_word_filter=lookup.first_word_filter, num_hashes=lookup.num_hashes,
                                 min_jaccard=lookup.min_jaccard)
    # The library's ranking (edit distance, then Jaccard, then overlap) is kept: it is the lookup's own.
    return [Match(m.id, m.jaccard, m.edit_distance, m.exact, m.dataset, m.content) for m in candidates]


__all__ = ["Lookup", "OptionError", "SearcherCache", "resolve", "run", "sort_matches", "SIMILARITIES"]
