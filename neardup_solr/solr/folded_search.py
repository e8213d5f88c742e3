"""A search whose results show each group of near duplicates once: the kept document, with its folded copies
listed under it (issue 38), at the speed of a plain search (issue 46).

The groups are those written into the collection (``nd_group``, ``nd_keep``: :mod:`neardup_solr.solr.group_fields`).
The user's text is normalised as the index's words are (``content_words``) and searched by edismax as escaped words
(:func:`~neardup_solr.solr.queries.user_text_params`): never pasted into query syntax.

Three ways to search (``fold``):

``fast`` (the default when folding)
    The representative of every group was chosen ahead of time (``nd_keep`` = 1), so one hit per group is a
    filter: every document that is not a folded copy (``-nd_keep:0``: the kept ones, the documents on their own,
    and those indexed since the groups were written, which have no group yet and are never hidden). Solr caches
    the filter, pages natively and ends the search early (``minExactCount``), as a plain search does: one request.
    The copies are not listed by default, as a web search says "similar results omitted" and lists them when
    asked; ``copies=N`` lists up to N under each hit, found by two more requests once the page is known (the
    folded copies of the page's groups that match the words, best first, and how many there are,
    ``copy_count``, exact). They cost more than the page at 1M documents (the group field has no index, so
    finding a group's members walks every copy: benchmarks/results/2026-12-02-folding-2core.md). What it
    gives up against ``exact``
    (measured in benchmarks/folding.py): a group whose kept document does not match the words, but a copy does,
    is not shown. With a ``dataset`` the kept document may sit in another data set, so a search of one data set
    folds exactly.
``exact``
    Solr's collapse on the group (the kept document heads it among those that match; any member when the kept one
    does not) and the expand component listing the copies; on a SolrCloud, result grouping, which sees a group
    whole across shards (collapse and expand see one shard at a time). Every match is scored and its group read:
    its cost grows with the number of matches (collapse asks Lucene for every hit, which turns early termination
    off).
``False``
    Not folded: every match.

Hit counts: Solr counts the first :data:`EXACT_COUNT` hits exactly and may stop counting after them (early
termination); ``found`` is then a lower bound and ``found_exact`` False (Solr's ``numFoundExact``).
``exact_count=True`` counts them all, at the cost of scoring every match.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Sequence

from neardup_solr.signing.builder import word_tokens
from neardup_solr.signing.settings import IndexSettings
from neardup_solr.solr.client import SolrClient
from neardup_solr.solr.group_fields import GROUP_FIELD, KEEP_FIELD
from neardup_solr.pairs.similar_pairs import id_sort_key
from neardup_solr.solr.queries import (
    documents_of,
    expand_params,
    filter_params,
    folded,
    copies_params,
    grouping_params,
    has_group,
    ids_in,
    in_groups,
    is_a_copy,
    not_a_copy,
    select_params,
    ungrouped,
    user_text_params,
)
from neardup_solr.solr.settings_store import read_index_settings
from neardup_solr.errors import InvalidParameterError
from neardup_solr.validation import check_bool, check_int, check_text

log = logging.getLogger(__name__)

__all__ = ["FoldedHit", "FoldedResults", "folded_search", "fold_mode", "SEARCH_FIELDS", "FOLD_MODES", "EXACT_COUNT"]

# The fields a user's words are looked for in: the normalised words every default index holds.
SEARCH_FIELDS = ("content_words",)
_FIELDS = f"id,score,content,dataset,{GROUP_FIELD},{KEEP_FIELD}"
FAST, EXACT = "fast", "exact"
FOLD_MODES = (FAST, EXACT)
# Hits counted exactly before Solr may stop counting (its minExactCount): enough for any count a page shows as a
# number, small enough that a broad query ends early. A page further down than that raises it.
EXACT_COUNT = 1000


@dataclass
class FoldedHit:
    """One result: ``group`` and ``kept`` as written (None before the groups were), and under a kept document
    of a folded search its ``copies`` (up to the number asked for) and how many there are (``copy_count``)."""

    id: str
    score: float
    content: str
    dataset: str | None = None
    group: int | None = None
    kept: bool | None = None
    copies: list["FoldedHit"] = field(default_factory=list)
    copy_count: int = 0

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "score": round(self.score, 6), "text": self.content,
                               "group": self.group, "kept": self.kept}
        if self.dataset is not None:
            out["dataset"] = self.dataset
        if self.copies or self.copy_count:
            out["copies"] = [c.as_dict() for c in self.copies]
            out["copy_count"] = self.copy_count
        return out


@dataclass
class FoldedResults:
    """``found``: how many hits (groups, when folded) match, a lower bound when ``found_exact`` is False; ``hits``:
    this page of them, best first. ``mode``: ``"fast"`` or ``"exact"`` when folded, None when not.
    ``copy_counts_exact``: whether each hit's ``copy_count`` counts all its matching copies (both modes count
    them when copies are asked for; with ``copies=0`` none are counted)."""

    query: str
    fold: bool
    found: int
    hits: list[FoldedHit]
    mode: str | None = None
    found_exact: bool = True
    copy_counts_exact: bool = True

    def as_dict(self) -> dict[str, Any]:
        return {"query": self.query, "fold": self.fold, "mode": self.mode, "found": self.found,
                "found_exact": self.found_exact, "copy_counts_exact": self.copy_counts_exact,
                "hits": [h.as_dict() for h in self.hits]}


def fold_mode(fold: Any) -> str | None:
    """``fold`` as a mode: True or ``"fast"`` -> ``"fast"``, ``"exact"`` -> ``"exact"``, False/None -> None (not
    folded). Also takes the words a URL or a command line gives (``true``, ``false``, ``1``, ``0``, ``yes``, ``no``,
    ``on``, ``off``)."""
    if fold is None or isinstance(fold, bool):
        return FAST if fold else None
    if isinstance(fold, str):
        word = fold.strip().lower()
        if word in FOLD_MODES:
            return word
        if word in ("true", "1", "yes", "on"):
            return FAST
        if word in ("false", "0", "no", "off", ""):
            return None
    raise InvalidParameterError("fold", "true (fast), 'fast', 'exact' or false", fold)


def _hit(doc: dict) -> FoldedHit:
    keep = doc.get(KEEP_FIELD)
    return FoldedHit(str(doc["id"]), float(doc.get("score", 0.0)), doc.get("content", ""), doc.get("dataset"),
                     doc.get(GROUP_FIELD), None if keep is None else bool(keep))


def _collapsed(client: SolrClient, base: list, filters: list, depth: list, copies: int) -> tuple[list[FoldedHit], int]:
    """A single core: collapse on the group (kept document first), expand for the copies."""
    data = client.select(base + filter_params(filters + [folded(GROUP_FIELD, KEEP_FIELD)]) + depth
                         + (expand_params(copies, GROUP_FIELD, filters) + [("expand.sort", "score desc,id asc")]
                            if copies else []))
    hits = [_hit(d) for d in data["response"]["docs"]]
    expanded = data.get("expanded") or {}
    for hit in hits:
        folded_copies = expanded.get(str(hit.group))
        if folded_copies:
            hit.copies = [_hit(d) for d in folded_copies.get("docs", [])]
            hit.copy_count = int(folded_copies.get("numFound", len(hit.copies)))
    return hits, int(data["response"]["numFound"])


def _grouped(client: SolrClient, base: list, filters: list, groups: int, copies: int) -> tuple[list[FoldedHit], int]:
    """A SolrCloud collection: result grouping, which sees a group whole across shards (collapse does not)."""
    data = client.select(base + filter_params(filters + [has_group(GROUP_FIELD)])
                         + grouping_params(GROUP_FIELD, KEEP_FIELD, groups, 1 + copies))
    grouped = data["grouped"][GROUP_FIELD]
    hits = []
    for group in grouped.get("groups", []):
        docs = group["doclist"]["docs"]
        if not docs:
            continue
        head = _hit(docs[0])
        head.copies = [_hit(d) for d in docs[1:]]
        head.copy_count = int(group["doclist"]["numFound"]) - 1
        hits.append(head)
    return hits, int(grouped.get("ngroups", len(hits)))


_side_pool: ThreadPoolExecutor | None = None
_side_pool_lock = threading.Lock()


def _side_requests() -> ThreadPoolExecutor:
    """The threads that send a folded search's second request while the first is under way: kept for the process
    rather than started for each search, whose requests take a few milliseconds."""
    global _side_pool
    with _side_pool_lock:
        if _side_pool is None:
            _side_pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="neardup-folded-search")
        return _side_pool


def _count_params(start: int, rows: int, exact_count: bool) -> list[tuple[str, object]]:
    """Early termination: count the first EXACT_COUNT hits (or the page's end, if further) exactly, then stop."""
    return [] if exact_count else [("minExactCount", max(EXACT_COUNT, start + rows))]


# The copies of a page's groups listed by id before the words are searched among them; groups with more copies
# between them are searched with the group filter (exact too, slower on broad words).
COPIES_LISTED_BY_ID = 2_000


def _found(data: dict) -> tuple[int, bool]:
    response = data["response"]
    return int(response["numFound"]), response.get("numFoundExact", True) is not False


def _fast(client: SolrClient, base: list, filters: list, start: int, rows: int, copies: int,
          exact_count: bool) -> FoldedResults:
    """One hit per group by the kept flag (a cached filter, early termination intact); then, when copies are
    asked for, those of the page's groups (:func:`_copies_of`)."""
    page = client.select(base + filter_params(filters + [not_a_copy(KEEP_FIELD)])
                         + [("rows", rows), ("start", start)] + _count_params(start, rows, exact_count))
    hits = [_hit(d) for d in page["response"]["docs"]]
    if copies:
        _copies_of(client, base, filters, hits, copies)
    found, found_exact = _found(page)
    return FoldedResults("", True, found, hits, FAST, found_exact, copy_counts_exact=copies > 0)


def _copies_of(client: SolrClient, base: list, filters: list, hits: list[FoldedHit], copies: int) -> None:
    """List under each kept hit up to ``copies`` of its group's copies that match the words, best first, and
    count them all (``copy_count``, exact), in two small requests: the ids of the page's groups' copies (the
    cached copies filter leads, so only the copies have their group read), then the words searched among those
    ids alone, grouped by group.

    Why not one request, the words filtered to the page's groups: the group field has no index, so the words'
    matches (98% of the collection on broad queries) are scored before their group is checked: 60-75 ms a search
    at 1M documents, 10-15x a plain search's p99 (benchmarks/results/2026-12-02-folding-2core-one-grouped-request.md).
    That remains the way for groups with more than :data:`COPIES_LISTED_BY_ID` copies between them."""
    groups = sorted({h.group for h in hits if h.group is not None and h.kept})
    if not groups:
        return
    restrict = in_groups(GROUP_FIELD, groups)
    # The groups as an uncached filter beside the cached copies filter: Solr walks the copies and reads their
    # group (as the main query instead, it took 1.25-1.5x as long at 300,000 documents).
    members = client.select(select_params([is_a_copy(KEEP_FIELD), restrict], fields="id",
                                          rows=COPIES_LISTED_BY_ID))
    ids = [str(d["id"]) for d in members["response"]["docs"]]
    if not ids:
        return
    if int(members["response"]["numFound"]) <= len(ids):
        restrict = ids_in(ids, cached=False) or restrict
    data = client.select(base + filter_params(filters + [is_a_copy(KEEP_FIELD), restrict])
                         + copies_params(GROUP_FIELD, len(groups), copies))
    by_group: dict[int, tuple[list[FoldedHit], int]] = {}
    for group in data["grouped"][GROUP_FIELD].get("groups", []):
        listed = group["doclist"]
        by_group[group["groupValue"]] = ([_hit(d) for d in listed.get("docs", [])], int(listed["numFound"]))
    for hit in hits:
        if hit.kept and hit.group in by_group:
            hit.copies, hit.copy_count = by_group[hit.group]


def folded_search(
    client: SolrClient,
    text: Any,
    *,
    fold: bool | str | None = True,
    rows: int = 10,
    start: int = 0,
    copies: int = 0,
    fields: Sequence[str] = SEARCH_FIELDS,
    dataset: str | None = None,
    settings: IndexSettings | None = None,
    exact_count: bool = False,
) -> FoldedResults:
    """Search the collection for ``text`` (a user's words), best first; folded (``fold`` True or ``"fast"``, or
    ``"exact"``: the module docstring tells them apart) each group of near duplicates once, headed by its kept
    document, with up to ``copies`` of its other members matching the text listed under it (none by default: one
    request, a plain search's cost; ``copy_count`` is then 0 and ``copy_counts_exact`` False). ``fields``: where to
    look (``field`` or ``field^boost``); ``dataset``: only its documents. ``settings``: the collection's (read from
    it when not given), for normalising the text as its words are. ``exact_count``: count every hit (``found``)
    instead of stopping after :data:`EXACT_COUNT`.

    >>> found = folded_search(SolrClient(), "art's deli ventura", copies=10)
    >>> [(h.id, [c.id for c in h.copies]) for h in found.hits][:1]
    [('3', ['536'])]
    """
    text = check_text(text, "text")
    mode = fold_mode(fold)
    rows = check_int("rows", rows, minimum=0, maximum=10_000)
    start = check_int("start", start, minimum=0)
    copies = check_int("copies", copies, minimum=0, maximum=1_000)
    exact_count = check_bool("exact_count", exact_count)
    if settings is None:
        settings = read_index_settings(client) or IndexSettings()
    words = word_tokens(settings.normalizer(), text)
    if not words:
        return FoldedResults(text, mode is not None, 0, [], mode)
    # Ranked by score alone, ties in index order: a second sort key (id) would make Solr collect with a field
    # comparator, which skips fewer non-competitive hits (p50 5.8 ms against 2.5 ms at 200,000 documents).
    base = [*user_text_params(words, fields), ("fl", _FIELDS)]
    filters = documents_of(dataset)
    if mode is None:
        data = client.select(base + filter_params(filters) + [("rows", rows), ("start", start)]
                             + _count_params(start, rows, exact_count))
        found, found_exact = _found(data)
        return FoldedResults(text, False, found, [_hit(d) for d in data["response"]["docs"]], None, found_exact)
    if mode == FAST and dataset is None:
        result = _fast(client, base, filters, start, rows, copies, exact_count)
        result.query = text
        log.debug("folded search (fast) %r: %d of %d hits", text, len(result.hits), result.found)
        return result
    # Exact: two searches, merged by score (one query, so the scores compare): the groups, each headed by its kept
    # document, and the documents without a group yet, which the collapse cannot keep (queries.folded says why).
    # Sent side by side: the second search costs no extra round trip.
    base = base + [("sort", "score desc,id asc")]
    depth = [("rows", start + rows), ("start", 0)]
    single_core = client.is_single_core()
    pending = _side_requests().submit(client.select, base + filter_params(filters + [ungrouped(GROUP_FIELD)]) + depth)
    if single_core:
        heads, found = _collapsed(client, base, filters, depth, copies)
    else:
        heads, found = _grouped(client, base, filters, start + rows, copies)
    alone = pending.result()
    hits = sorted(heads + [_hit(d) for d in alone["response"]["docs"]],
                  key=lambda h: (-h.score, id_sort_key(h.id)))[start:start + rows]
    found += int(alone["response"]["numFound"])
    log.debug("folded search (exact) %r: %d of %d hits", text, len(hits), found)
    return FoldedResults(text, True, found, hits, EXACT, copy_counts_exact=copies > 0)
