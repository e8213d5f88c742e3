"""A search whose results show each group of near duplicates once: the kept document, with its folded copies
listed under it (issue 38).

The groups are those written into the collection (``nd_group``, ``nd_keep``: :mod:`neardup_solr.solr.group_fields`).
On a single core, folding is Solr's collapse post filter on the group, heading each group with its kept document,
and the expand component listing the copies. The user's text is normalised as the index's words are (``content_words``) and
searched by edismax as escaped words (:func:`~neardup_solr.solr.queries.user_text_params`): never pasted into
query syntax.

On a SolrCloud collection collapse and expand only see one shard at a time, so a group whose members sit on two
shards would show once per shard; there result grouping on ``nd_group`` is used instead, which fetches each top
group's documents from every shard (docs/folding.md has the measurements).
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Sequence

from neardup_solr.signing.builder import DocumentBuilder
from neardup_solr.signing.settings import IndexSettings
from neardup_solr.solr.client import SolrClient
from neardup_solr.solr.group_fields import GROUP_FIELD, KEEP_FIELD
from neardup_solr.pairs.similar_pairs import id_sort_key
from neardup_solr.solr.queries import (
    documents_of,
    expand_params,
    filter_params,
    folded,
    grouping_params,
    has_group,
    ungrouped,
    user_text_params,
)
from neardup_solr.solr.settings_store import read_index_settings
from neardup_solr.validation import check_bool, check_int, check_text

log = logging.getLogger(__name__)

__all__ = ["FoldedHit", "FoldedResults", "folded_search", "SEARCH_FIELDS"]

# The fields a user's words are looked for in: the normalised words every default index holds.
SEARCH_FIELDS = ("content_words",)
_FIELDS = f"id,score,content,dataset,{GROUP_FIELD},{KEEP_FIELD}"


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
    """``found``: how many hits (groups, when folded) match; ``hits``: this page of them, best first."""

    query: str
    fold: bool
    found: int
    hits: list[FoldedHit]

    def as_dict(self) -> dict[str, Any]:
        return {"query": self.query, "fold": self.fold, "found": self.found, "hits": [h.as_dict() for h in self.hits]}


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


def folded_search(
    client: SolrClient,
    text: Any,
    *,
    fold: bool = True,
    rows: int = 10,
    start: int = 0,
    copies: int = 10,
    fields: Sequence[str] = SEARCH_FIELDS,
    dataset: str | None = None,
    settings: IndexSettings | None = None,
) -> FoldedResults:
    """Search the collection for ``text`` (a user's words), best first; with ``fold`` each group of near
    duplicates once, headed by its kept document, with up to ``copies`` of its other members matching the text
    listed under it. ``fields``: where to look (``field`` or ``field^boost``); ``dataset``: only its documents.
    ``settings``: the collection's (read from it when not given), for normalising the text as its words are.

    >>> [(h.id, [c.id for c in h.copies]) for h in folded_search(SolrClient(), "art's deli ventura").hits][:1]
    [('3', ['536'])]
    """
    text = check_text(text, "text")
    fold = check_bool("fold", fold)
    rows = check_int("rows", rows, minimum=0, maximum=10_000)
    start = check_int("start", start, minimum=0)
    copies = check_int("copies", copies, minimum=0, maximum=1_000)
    if settings is None:
        settings = read_index_settings(client) or IndexSettings()
    words = DocumentBuilder(settings).word_tokens(text)
    if not words:
        return FoldedResults(text, fold, 0, [])
    base = [*user_text_params(words, fields), ("fl", _FIELDS), ("sort", "score desc,id asc")]
    if not fold:
        data = client.select(base + filter_params(documents_of(dataset)) + [("rows", rows), ("start", start)])
        hits = [_hit(d) for d in data["response"]["docs"]]
        return FoldedResults(text, fold, int(data["response"]["numFound"]), hits)
    # Two searches, merged by score (one query, so the scores compare): the groups, each headed by its kept
    # document, and the documents without a group yet, which the collapse cannot keep (queries.folded says why).
    # Sent side by side: the second search costs no extra round trip.
    depth = [("rows", start + rows), ("start", 0)]
    single_core = client.is_single_core()
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(client.select, base + filter_params(documents_of(dataset) + [ungrouped(GROUP_FIELD)])
                              + depth)
        if single_core:
            heads, found = _collapsed(client, base, documents_of(dataset), depth, copies)
        else:
            heads, found = _grouped(client, base, documents_of(dataset), start + rows, copies)
        alone = pending.result()
    hits = sorted(heads + [_hit(d) for d in alone["response"]["docs"]],
                  key=lambda h: (-h.score, id_sort_key(h.id)))[start:start + rows]
    found += int(alone["response"]["numFound"])
    log.debug("folded search %r: %d of %d hits", text, len(hits), found)
    return FoldedResults(text, fold, found, hits)
