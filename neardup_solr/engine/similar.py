"""Lookups by similarity: the indexed documents whose shingle Jaccard with a text reaches a threshold, described
as :class:`Match` objects (edit distance, exactness, data set, text), best first.

:func:`find_similar` is what :func:`~neardup_solr.engine.online.check_and_add` looks up before it adds, and what
the group upkeep (:mod:`neardup_solr.engine.group_upkeep`) asks for a new document's nearest kept neighbour; it sits
below both so that neither imports the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from rapidfuzz.distance import Levenshtein

from neardup_solr.errors import InvalidParameterError
from neardup_solr.pairs._arrays import sorted_jaccard
from neardup_solr.pairs.similar_pairs import id_sort_key
from neardup_solr.signing.settings import META_DATASET
from neardup_solr.solr.collection import collection_of
from neardup_solr.solr.recent import RecentAdd, recent_adds
from neardup_solr.solr.searcher import Query, Searcher
from neardup_solr.engine.threshold import ThresholdFinder

__all__ = ["Match", "describe", "find_similar", "lsh_matches", "recent_matches", "sort_matches"]


@dataclass
class Match:
    """One near duplicate: its id, shingle Jaccard with the query (``similarity``), word edit distance, whether
    the normalised texts are identical (``exact``), its data set and text. ``pending`` marks an owner of an
    identical text whose add is still under way (seen through its claim only)."""

    id: str
    similarity: float
    edit_distance: int
    exact: bool
    dataset: str | None = None
    content: str = ""
    pending: bool = False

    def as_dict(self, with_content: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "similarity": round(self.similarity, 6),
                               "edit_distance": self.edit_distance, "exact": self.exact}
        if self.dataset is not None:
            out["dataset"] = self.dataset
        if self.pending:
            out["pending"] = True
        if with_content:
            out["text"] = self.content
        return out



def describe(searcher: Searcher, query: Query, found: Iterable[tuple[str, float]]) -> list[Match]:
    """Matches (edit distance, exactness, data set, text) for ``(id, similarity)`` pairs, best first. The texts
    are read with one real-time get; ids no longer in the collection are dropped."""
    found = list(found)
    if not found:
        return []
    docs = {d["id"]: d for d in collection_of(searcher.client).by_ids([i for i, _ in found],
                                                                      "id,content,md5_hash,dataset")}
    matches = []
    for doc_id, similarity in found:
        doc = docs.get(doc_id)
        if doc is None or doc.get("dataset") == META_DATASET:
            continue
        content = doc.get("content", "")
        exact = doc.get("md5_hash") == query.md5_hash
        distance = 0 if exact else int(Levenshtein.distance(query.processed.words,
                                                            searcher.builder.shingler.process(content).words))
        matches.append(Match(doc_id, 1.0 if exact else float(similarity), distance, exact, doc.get("dataset"),
                             content))
    return sort_matches(matches)


def sort_matches(matches: list[Match]) -> list[Match]:
    """Best first: highest similarity, then smallest edit distance, then id (numbers as numbers)."""
    return sorted(matches, key=lambda m: (-m.similarity, m.edit_distance, id_sort_key(m.id)))


def find_similar(searcher: Searcher, query: Query, threshold: float, *, exclude_id: str | None = None,
                 dataset: str | None = None) -> list[Match]:
    """Every indexed document whose shingle Jaccard with ``query`` is >= ``threshold``, best first.

    With shingle tokens in the index this is the threshold search of :mod:`neardup_solr.engine.threshold`: complete,
    no row cap, no first-word filter. A collection indexed with LSH tokens only is searched through its bands
    (no first-word filter, no edit-distance cap, no row cap), and every candidate's Jaccard is computed exactly.
    Documents this process added that Solr's searcher does not show yet are searched too (:mod:`.recent`), by
    the same rule."""

    settings = searcher.settings
    client = searcher.client
    recent = recent_adds(client)
    recent.settle(client)  # before the query: whatever that commit covers, the query then finds
    if "shingles" in settings.fields and settings.sample_mod == 1:
        finder = ThresholdFinder(searcher, threshold=threshold)
        found = finder.similar_to_text(query.text, exclude_id=exclude_id, dataset=dataset)
        matches = describe(searcher, query, found)
        pending = recent.candidates(hash_set=query.hash_set)
    elif "lsh" in settings.fields:
        matches = [m for m in lsh_matches(searcher, query, threshold, dataset) if m.id != exclude_id]
        pending = recent.candidates(band_tokens=searcher.query_tokens(query, "lsh"))
    else:
        raise InvalidParameterError(
            "threshold", "used on a collection indexed with shingle or LSH tokens", threshold,
            f"this one holds only {', '.join(settings.fields) or 'no'} tokens; re-index with --fields including "
            "shingles or lsh")
    if pending:
        skip: set[str | None] = {m.id for m in matches}
        skip.add(exclude_id)
        matches += recent_matches(searcher, query, threshold, pending, skip, dataset)
    return sort_matches(matches)


def lsh_matches(searcher: Searcher, query: Query, threshold: float | None, dataset: str | None) -> list[Match]:
    """Every document sharing an LSH band with ``query`` (of ``dataset``), verified by its exact Jaccard and kept
    from ``threshold`` on (None: all): no first-word filter, no edit-distance cap, no row cap."""
    near = searcher.search(query, mode="lsh", max_edit_distance=None, rows=None, first_word_filter=False,
                           min_jaccard=threshold)
    return [Match(m.id, m.jaccard, m.edit_distance, m.exact, m.dataset, m.content) for m in near
            if dataset is None or m.dataset == dataset]


def recent_matches(searcher: Searcher, query: Query, threshold: float | None, pending: list[RecentAdd],
                   skip: set[str | None] | set[str], dataset: str | None) -> list[Match]:
    """Recent adds (not yet searchable in Solr) that reach ``threshold`` (None: all), those in ``skip`` left out,
    each confirmed by a real-time get: one deleted or replaced since, here or by another process, is dropped rather
    than reported, and forgotten."""
    found: list[Match] = []
    for entry in pending:
        if entry.id in skip or (dataset is not None and entry.dataset != dataset):
            continue
        if entry.md5_hash == query.md5_hash:
            found.append(Match(entry.id, 1.0, 0, True, entry.dataset, entry.content))
            continue
        similarity = sorted_jaccard(query.hash_set, entry.hash_set)
        if threshold is None or similarity >= threshold:
            words = searcher.builder.shingler.process(entry.content).words
            found.append(Match(entry.id, similarity, int(Levenshtein.distance(query.processed.words, words)), False,
                               entry.dataset, entry.content))
    if not found:
        return []
    md5_of = {e.id: e.md5_hash for e in pending}
    present = {d["id"] for d in collection_of(searcher.client).by_ids([m.id for m in found], "id,md5_hash")
               if d.get("md5_hash") == md5_of[d["id"]]}
    gone = [m.id for m in found if m.id not in present]
    if gone:
        recent_adds(searcher.client).forget(gone)
    return [m for m in found if m.id in present]
