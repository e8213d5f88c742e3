"""Ask Solr for near-duplicate candidates, then re-rank and verify them on the client.

Candidates come from one OR-query over the query document's tokens (its shingles, its MinHash values, or its
LSH band keys); the core scores each candidate by how many of those tokens it shares (BooleanSimilarity, see
the schema). Candidates are then re-ranked: equal MD5 of the normalised text means an exact duplicate
(distance 0, nothing computed); otherwise the word-level Levenshtein distance (rapidfuzz) and the exact
shingle Jaccard are computed from the stored text.

Query safety: user text never reaches Solr's query syntax. Every token is sent as a quoted, escaped term of
the standard parser, and filters use ``{!term f=... v=$param}`` with the value in a separate parameter.

Differences from the write-up, on purpose: it stopped computing edit distances after the first candidate
above the limit (so a good candidate ranked below a bad one was lost); we check every candidate. Its
MinHash query matched bare values, so equal values from different hash functions counted; our tokens carry
their position.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Sequence

import numpy as np
from rapidfuzz.distance import Levenshtein

from neardup_solr.signing.builder import DocumentBuilder
from neardup_solr.signing.settings import SETTINGS_DOC_ID, IndexSettings
from neardup_solr.signing.tokens import md5_hex, signature_tokens, text_token
from neardup_solr.solr.settings_store import read_index_settings
from neardup_solr.errors import DocumentNotFoundError, InvalidParameterError, ParameterTypeError
from neardup_solr.pairs._arrays import sorted_jaccard
from neardup_solr.pairs.groups import id_key
from neardup_solr.pairs.lsh import band_keys, band_tokens
from neardup_solr.solr.client import SolrClient
from neardup_solr.solr.queries import filter_params, not_in_dataset, quoted_term
from neardup_solr.text import ProcessedText
from neardup_solr.validation import check_bool, check_choice, check_float, check_int, check_str, check_text
from neardup_solr.options import COLLECTION_THRESHOLD, MODES, NOT_GIVEN, WRITEUP_LOOKUP, LookupOptions, MinJaccard

log = logging.getLogger(__name__)

# The recall the collection's bands are chosen for at its lsh_threshold (IndexSettings.lsh_params): an LSH lookup
# that finds less of the pairs it asks for is said to be short.
BAND_RECALL = 0.95

_FIELDS = "id,content,md5_hash,num_words,first_word,num_shingles,dataset,fields_json,score"
# Candidates read per request when nothing caps them (rows=None): paged with a cursor.
_PAGE_SIZE = 500

#: The reference write-up's ranking (:data:`neardup_solr.options.WRITEUP_LOOKUP`) as keyword arguments of
#: :meth:`Searcher.find_near_dups`: only candidates with the query's first word, the 10 best-scoring
#: candidates, word edit distance <= 2, no Jaccard filter. Pass it on purpose:
#: ``searcher.find_near_dups(doc_id, **WRITEUP_RANKING)`` (the CLI's ``--writeup-ranking``), or as options:
#: ``searcher.find_near_dups(doc_id, options=WRITEUP_LOOKUP)``.
WRITEUP_RANKING: dict[str, Any] = {k: v for k, v in WRITEUP_LOOKUP.searcher_kwargs().items()
                                   if k in ("max_edit_distance", "rows", "first_word_filter", "min_jaccard")}

# MinHash-mode lookups keep candidates whose agreeing positions reach (threshold - margin) * k: the count is
# close to Binomial(k, J), and a pair at exactly the threshold falls below 3 standard deviations ~0.13% of the time.
_MINHASH_MARGIN_Z = 3.0

__all__ = ["Searcher", "NearDuplicate", "StoredDocument", "MODES", "id_sort_key",
           "cursor_docs", "COLLECTION_THRESHOLD", "WRITEUP_RANKING", "Query"]


@dataclass
class StoredDocument:
    """A document as stored in the collection: its id, original text, MD5 of the normalised text and counts."""

    id: str
    content: str
    md5_hash: str
    num_words: int = 0
    first_word: str = ""
    num_shingles: int = 0
    dataset: str | None = None
    fields: dict | None = None

    @classmethod
    def from_solr(cls, doc: dict) -> "StoredDocument":
        """The document from Solr's JSON answer."""
        return cls(
            id=doc["id"],
            content=doc.get("content", ""),
            md5_hash=doc.get("md5_hash", ""),
            num_words=doc.get("num_words", 0),
            first_word=doc.get("first_word", ""),
            num_shingles=doc.get("num_shingles", 0),
            dataset=doc.get("dataset"),
            fields=json.loads(doc["fields_json"]) if doc.get("fields_json") else None,
        )


@dataclass
class NearDuplicate:
    """One near duplicate found by a lookup: its word edit distance to the query, its overlap ``score`` (shared
    tokens), its exact shingle ``jaccard``, the MinHash estimate in minhash mode, and ``exact`` when the
    normalised texts are identical."""

    id: str
    content: str
    edit_distance: int
    score: float
    jaccard: float
    estimated_jaccard: float | None = None
    exact: bool = False
    dataset: str | None = None


@dataclass
class Query:
    """A prepared query document: its text processed once, its signature computed once."""

    id: str | None
    text: str
    processed: ProcessedText
    md5_hash: str
    signature: np.ndarray
    hash_set: np.ndarray = field(repr=False)
    # The LSH band keys of the signature, once something asks (see Searcher.band_keys_of), and their tokens.
    bands: np.ndarray | None = field(default=None, repr=False, compare=False)
    band_token_list: list[str] | None = field(default=None, repr=False, compare=False)


# Numeric ids compare as numbers ("9" < "10"), others as strings, numbers first.
id_sort_key = id_key


class Searcher:
    """Near-duplicate lookups against one collection.

    By default a lookup returns every indexed document whose exact shingle Jaccard with the query reaches the
    collection's threshold (its stored ``lsh_threshold``), with no word edit-distance cap, no first-word filter
    and no row cap. The write-up's ranking is an explicit choice: ``**WRITEUP_RANKING``.

    The collection's stored settings are read when the searcher is made; while none are stored (nothing
    indexed yet) they are read again at each lookup until they appear, so a searcher made at start-up follows
    what is indexed later. ``settings`` given explicitly are used as they are.

    >>> searcher = Searcher(SolrClient())
    >>> searcher.find_near_dups_by_shingles("3", **WRITEUP_RANKING)
    [NearDuplicate(id='536', content="Art's Deli 12224 Ventura Blvd. Studio City", edit_distance=1, ...)]
    """

    def __init__(self, client: SolrClient | None = None, settings: IndexSettings | None = None):
        if client is not None and not isinstance(client, SolrClient):
            raise ParameterTypeError("client", "a SolrClient or None", client)
        if settings is not None and not isinstance(settings, IndexSettings):
            raise ParameterTypeError("settings", "an IndexSettings or None", settings)
        self.client = client or SolrClient()
        stored = settings if settings is not None else read_index_settings(self.client)
        self._builder: DocumentBuilder | None = DocumentBuilder(stored) if stored is not None else None
        self._default_builder: DocumentBuilder | None = None
        self._warned_band_recall: set[float] = set()

    @property
    def settings(self) -> IndexSettings:
        """The collection's settings: the stored ones once there are any, the defaults while nothing is indexed."""
        return self.builder.settings

    @property
    def builder(self) -> DocumentBuilder:
        """What turns texts into this collection's shingles, signatures and tokens."""
        if self._builder is not None:
            return self._builder
        stored = read_index_settings(self.client)
        if stored is not None:
            log.debug("found the collection's settings at %s: %s", self.client.url, stored)
            self._builder = DocumentBuilder(stored)
            return self._builder
        # Nothing indexed yet, so nothing can be found; the defaults are not remembered.
        if self._default_builder is None:
            self._default_builder = DocumentBuilder(IndexSettings())
        return self._default_builder

    def stored_settings(self) -> IndexSettings | None:
        """The settings stored in the collection, or None while nothing is indexed (read again until then)."""
        builder = self.builder
        return None if builder is self._default_builder else builder.settings

    # ------------------------------------------------------------------ documents
    def get_by_id(self, doc_id: str) -> StoredDocument:
        """The stored document with this id; :class:`DocumentNotFoundError` when there is none."""
        doc_id = _checked_lookup_id(doc_id)
        docs = self.client.get_by_ids([doc_id], _FIELDS.replace(",score", ""))
        if not docs or docs[0]["id"] == SETTINGS_DOC_ID:
            raise DocumentNotFoundError(f"no document with id {doc_id!r} in {self.client.url}")
        return StoredDocument.from_solr(docs[0])

    def prepare(self, text: str, doc_id: str | None = None) -> Query:
        """The query document of ``text``: normalised, shingled and signed once with the collection's settings."""
        builder = self.builder
        processed = builder.process(check_text(text))
        signature = builder.minhash.signature_from_hashes(processed.shingle_hashes)
        return Query(doc_id, text, processed, md5_hex(processed.normalized), signature,
                     np.unique(processed.shingle_hashes))

    # ------------------------------------------------------------------ lookups
    def find_near_dups(
        self,
        doc_id: str | None = None,
        *,
        text: str | None = None,
        options: LookupOptions | None = None,
        mode: str = NOT_GIVEN,
        max_edit_distance: int | None = NOT_GIVEN,
        rows: int | None = NOT_GIVEN,
        first_word_filter: bool = NOT_GIVEN,
        num_hashes: int | None = NOT_GIVEN,
        min_jaccard: MinJaccard = NOT_GIVEN,
        only_greater_ids: bool = False,
        other_datasets_than: str | None = None,
        max_distance: int | None = NOT_GIVEN,
    ) -> list[NearDuplicate]:
        """Near duplicates of a stored document (``doc_id``) or of a new ``text``, best first (smallest edit
        distance, then highest Jaccard).

        The lookup options come as one :class:`~neardup_solr.options.LookupOptions` (``options=``) or as its
        keys, given one by one (the others take the options' defaults); not both:

        - ``mode``: which tokens find the candidates: shared ``shingles`` (default), ``minhash`` values or
          ``lsh`` bands.
        - ``min_jaccard``: keep candidates whose exact shingle Jaccard reaches it; the default
          (``"collection"``) is the collection's threshold, ``None`` keeps every candidate.
        - ``max_edit_distance``: keep candidates within this word edit distance; ``None`` (default): no limit.
          ``max_distance`` is its older name, still accepted (deprecated).
        - ``rows``: how many candidates Solr returns, best overlap first (a stored query document takes one);
          ``None`` (default): all of them, paged.
        - ``first_word_filter``: only candidates with the query's first word (the write-up's filter).
        - ``num_hashes``: in minhash mode, query with the first this many values (default: all).

        ``only_greater_ids``: only neighbours whose id sorts after ``doc_id`` (reports);
        ``other_datasets_than`` leaves out the documents of that data set.

        Bad values raise :class:`~neardup_solr.errors.InvalidParameterError` or
        :class:`~neardup_solr.errors.ParameterTypeError` naming the parameter, before anything is sent.
        """
        if (doc_id is None) == (text is None):
            raise InvalidParameterError("doc_id", "given, or text given instead (exactly one of the two)", doc_id,
                                        show_value=False)
        lookup = LookupOptions.from_keywords(options, dict(
            mode=mode, max_edit_distance=max_edit_distance, rows=rows, first_word_filter=first_word_filter,
            num_hashes=num_hashes, min_jaccard=min_jaccard, max_distance=max_distance), stacklevel=3)
        only_greater_ids, other_datasets_than = _checked_scope(only_greater_ids, other_datasets_than)
        if doc_id is not None:
            source = self.get_by_id(doc_id)
            query = self.prepare(source.content, source.id)
        else:
            query = self.prepare(check_text(text))
        return self._search(query, lookup, only_greater_ids, other_datasets_than)

    def find_near_dups_by_shingles(
        self, doc_id: str, max_distance: int | None = NOT_GIVEN, *, options: LookupOptions | None = None,
        max_edit_distance: int | None = NOT_GIVEN, rows: int | None = NOT_GIVEN,
        first_word_filter: bool = NOT_GIVEN, min_jaccard: MinJaccard = NOT_GIVEN,
        only_greater_ids: bool = False, other_datasets_than: str | None = None,
    ) -> list[NearDuplicate]:
        """Near duplicates of the stored document ``doc_id`` found through shared shingles; the parameters are
        :meth:`find_near_dups`'s (``max_distance``, the second positional one, is ``max_edit_distance``'s
        older name)."""
        lookup = LookupOptions.from_keywords(options, dict(
            max_edit_distance=max_edit_distance, max_distance=max_distance, rows=rows,
            first_word_filter=first_word_filter, min_jaccard=min_jaccard), stacklevel=3)
        return self.find_near_dups(doc_id, options=_in_mode(lookup, "shingles"), only_greater_ids=only_greater_ids,
                                   other_datasets_than=other_datasets_than)

    def find_near_dups_by_minhash(
        self, doc_id: str, max_distance: int | None = NOT_GIVEN, *, options: LookupOptions | None = None,
        max_edit_distance: int | None = NOT_GIVEN, rows: int | None = NOT_GIVEN,
        first_word_filter: bool = NOT_GIVEN, num_hashes: int | None = NOT_GIVEN,
        min_jaccard: MinJaccard = NOT_GIVEN, only_greater_ids: bool = False,
        other_datasets_than: str | None = None,
    ) -> list[NearDuplicate]:
        """Near duplicates of the stored document ``doc_id`` found through shared MinHash values (each match
        carries ``estimated_jaccard``); the parameters are :meth:`find_near_dups`'s."""
        lookup = LookupOptions.from_keywords(options, dict(
            max_edit_distance=max_edit_distance, max_distance=max_distance, rows=rows,
            first_word_filter=first_word_filter, num_hashes=num_hashes, min_jaccard=min_jaccard),
            LookupOptions(mode="minhash"), stacklevel=3)
        return self.find_near_dups(doc_id, options=_in_mode(lookup, "minhash"), only_greater_ids=only_greater_ids,
                                   other_datasets_than=other_datasets_than)

    def find_near_dups_of_text(
        self, text: str, mode: str = NOT_GIVEN, *, options: LookupOptions | None = None,
        max_edit_distance: int | None = NOT_GIVEN, rows: int | None = NOT_GIVEN,
        first_word_filter: bool = NOT_GIVEN, num_hashes: int | None = NOT_GIVEN,
        min_jaccard: MinJaccard = NOT_GIVEN, other_datasets_than: str | None = None,
        max_distance: int | None = NOT_GIVEN,
    ) -> list[NearDuplicate]:
        """The online use: is this new ``text`` a near duplicate of anything indexed? The parameters are
        :meth:`find_near_dups`'s."""
        return self.find_near_dups(text=check_text(text), options=options, mode=mode,
                                   max_edit_distance=max_edit_distance, max_distance=max_distance, rows=rows,
                                   first_word_filter=first_word_filter, num_hashes=num_hashes,
                                   min_jaccard=min_jaccard, other_datasets_than=other_datasets_than)

    def find_by_shingle_share(
        self, text: str, min_share: float = 0.5, *, page_size: int = 500
    ) -> list[tuple[str, float]]:
        """Write-up 003's lookup: every indexed document holding at least ``min_share`` of the new text's
        (sampled) shingles, as (id, share), best first. An equal MD5 is an exact duplicate (share 1.0) and is
        answered without looking at shingles. Nothing is capped: the bound ``overlap >= ceil(min_share * n)``
        is a filter on the overlap score and all matches are paged through.
        """
        min_share = check_float("min_share", min_share, "min_share")
        page_size = check_int("page_size", page_size, minimum=1, maximum=100_000)
        self.settings.require("shingles")
        query = self.prepare(text)
        # Every exact duplicate, not the first 10,000 in whatever order the shards return them.
        exact = cursor_docs(self.client, [("q", "{!term f=md5_hash v=$nd.md5}"), ("nd.md5", query.md5_hash),
                                          ("fl", "id"), ("sort", "id asc")], page_size)
        found = {d["id"]: 1.0 for d in exact if d["id"] != SETTINGS_DOC_ID}
        tokens = list(dict.fromkeys(self.builder.shingle_tokens(query.processed)))
        if tokens:
            bound = math.ceil(min_share * len(tokens) - 1e-9)
            params = [
                ("q", " ".join(quoted_term(t) for t in tokens)), ("defType", "lucene"), ("df", self.settings.token_field("shingles")),
                ("q.op", "OR"), ("fq", f"{{!frange l={bound}}}query($q)"), ("fl", "id,score"),
                ("sort", "score desc,id asc"),
            ]
            for doc in cursor_docs(self.client, params, page_size):
                found.setdefault(doc["id"], min(1.0, doc["score"] / len(tokens)))
        found.pop(SETTINGS_DOC_ID, None)
        return sorted(found.items(), key=lambda kv: (-kv[1], id_sort_key(kv[0])))

    # ------------------------------------------------------------------ the query
    def query_tokens(self, query: Query, mode: str, num_hashes: int | None = None) -> list[str]:
        """The tokens of ``query`` that ``mode``'s OR-query sends (shingles, MinHash values or band keys)."""
        mode = check_choice("mode", mode, MODES)
        self.settings.require(mode)
        if mode == "shingles":
            return self.builder.shingle_tokens(query.processed)
        if mode == "minhash":
            return signature_tokens(query.signature, self._hash_count(num_hashes))
        if query.band_token_list is None:
            # A band lookup asks twice (the query, then counting shared bands): formatting them is not free.
            query.band_token_list = band_tokens(self.band_keys_of(query))
        return list(query.band_token_list)

    def band_keys_of(self, query: Query) -> np.ndarray:
        """The LSH band keys of ``query``'s signature, computed once per query."""
        if query.bands is None:
            query.bands = band_keys(query.signature[None, :], self.builder.lsh)[0]
        return query.bands

    def _hash_count(self, num_hashes: int | None) -> int:
        held = self.settings.num_hashes
        count = held if num_hashes is None else num_hashes
        if count > held:
            # Not a bad value as such but one this collection cannot serve (the service answers it with 400).
            raise ValueError(f"the index holds {held} MinHash values; asked for {count}")
        return count

    def candidate_params(
        self, query: Query, mode: str, rows: int | None, first_word_filter: bool, num_hashes: int | None = None,
        other_datasets_than: str | None = None, min_overlap: int | None = None,
    ) -> list[tuple[str, object]]:
        """The candidate query's parameters (``rows`` None: none, for paging with :func:`cursor_docs`);
        ``min_overlap`` keeps only candidates sharing at least that many tokens."""
        tokens = self.query_tokens(query, mode, num_hashes)
        params: list[tuple[str, object]] = [
            ("q", " ".join(quoted_term(t) for t in dict.fromkeys(tokens))),
            ("defType", "lucene"),
            ("df", self.settings.token_field(mode)),
            ("q.op", "OR"),
            # The row cap must cut at the same place on every shard layout. Without a sort, candidates with equal
            # overlap come in internal document order, which depends on indexing order, segment merges and (on
            # SolrCloud) on which shard holds them. With "id asc" as the tie-breaker each shard returns its best
            # `rows` in this order and the coordinator merges them by the same order, so one core and any cluster
            # keep exactly the same candidates. (Solr compares ids as strings here: "10" < "9". That only decides
            # which tied candidates fit under the cap; rerank() orders the survivors numerically.) The same sort
            # lets the cursor page through every candidate when nothing caps them.
            ("sort", "score desc,id asc"),
            ("fl", _FIELDS),
        ]
        if rows is not None:
            params.insert(4, ("rows", rows))
        if min_overlap is not None and min_overlap > 1:
            params += [("fq", f"{{!frange l={int(min_overlap)}}}query($q)")]
        if first_word_filter and query.processed.words:
            params += [("fq", "{!term f=first_word v=$nd.fw}"), ("nd.fw", text_token(query.processed.words[0]))]
        if other_datasets_than is not None:
            params += filter_params([not_in_dataset(other_datasets_than)])
        return params

    def search(
        self,
        query: Query,
        *,
        options: LookupOptions | None = None,
        mode: str = NOT_GIVEN,
        max_edit_distance: int | None = NOT_GIVEN,
        rows: int | None = NOT_GIVEN,
        first_word_filter: bool = NOT_GIVEN,
        num_hashes: int | None = NOT_GIVEN,
        min_jaccard: MinJaccard = NOT_GIVEN,
        only_greater_ids: bool = False,
        other_datasets_than: str | None = None,
        max_distance: int | None = NOT_GIVEN,
    ) -> list[NearDuplicate]:
        """The near duplicates of a prepared :class:`Query` (see :meth:`prepare`); the parameters and their
        defaults are :meth:`find_near_dups`'s."""
        lookup = LookupOptions.from_keywords(options, dict(
            mode=mode, max_edit_distance=max_edit_distance, rows=rows, first_word_filter=first_word_filter,
            num_hashes=num_hashes, min_jaccard=min_jaccard, max_distance=max_distance), stacklevel=3)
        only_greater_ids, other_datasets_than = _checked_scope(only_greater_ids, other_datasets_than)
        return self._search(query, lookup, only_greater_ids, other_datasets_than)

    def _min_jaccard(self, options: LookupOptions) -> float | None:
        """``options.min_jaccard`` as a number (the collection's threshold for ``"collection"``) or None."""
        if options.min_jaccard == COLLECTION_THRESHOLD:
            return self.settings.lsh_threshold
        return None if options.min_jaccard is None else float(options.min_jaccard)

    def _min_overlap(self, query: Query, options: LookupOptions) -> int | None:
        """The fewest shared tokens a candidate needs to reach ``min_jaccard`` (None: no such bound)."""
        threshold = self._min_jaccard(options)
        if not threshold:
            return None
        if options.mode == "shingles" and self.settings.sample_mod == 1:
            # J(A, B) >= t implies |A n B| >= t * |A|, and the overlap score is |A n B| (BooleanSimilarity).
            return math.ceil(threshold * query.hash_set.size - 1e-9)
        if options.mode == "minhash":
            count = self._hash_count(options.num_hashes)
            margin = max(_MINHASH_MARGIN_Z * math.sqrt(threshold * (1.0 - threshold) / count), 1.0 / count)
            return max(1, math.ceil((threshold - margin) * count - 1e-9))
        return None  # lsh: one shared band makes a candidate

    def _search(self, query: Query, options: LookupOptions, only_greater_ids: bool = False,
                other_datasets_than: str | None = None) -> list[NearDuplicate]:
        docs: Iterable[dict]
        min_jaccard = self._min_jaccard(options)
        if options.mode == "lsh" and min_jaccard:
            self.warn_if_bands_miss(min_jaccard)
        if options.mode == "lsh" and options.rows is None:
            docs = self._every_band_candidate(query, options, other_datasets_than)
            return self.rerank(query, docs, max_edit_distance=options.max_edit_distance, min_jaccard=min_jaccard,
                               only_greater_ids=only_greater_ids)
        params = self.candidate_params(query, options.mode, options.rows, options.first_word_filter,
                                       options.num_hashes, other_datasets_than,
                                       min_overlap=self._min_overlap(query, options))
        if options.rows is None:
            docs = cursor_docs(self.client, params, _PAGE_SIZE)
        else:
            docs = self.client.select(params)["response"]["docs"]
        matches = self.rerank(query, docs, max_edit_distance=options.max_edit_distance, min_jaccard=min_jaccard,
                              only_greater_ids=only_greater_ids)
        if options.mode == "minhash":
            # With position-tagged MinHash tokens the overlap score counts agreeing hash functions.
            count = self._hash_count(options.num_hashes)
            for match in matches:
                match.estimated_jaccard = min(1.0, match.score / count)
        return matches

    def band_recall(self, threshold: float) -> float:
        """The chance that a document at Jaccard ``threshold`` shares a band with the query (1 - (1 - t^r)^b for
        the collection's ``b`` bands of ``r`` rows): what an LSH lookup at that threshold finds of such pairs."""
        return float(self.builder.lsh.probability(threshold))

    def warn_if_bands_miss(self, threshold: float) -> None:
        """Say so (once per threshold) when an LSH lookup asks for pairs at a similarity the collection's bands
        were not chosen for: below its ``lsh_threshold`` fewer than 95% of them share a band, and the lookup would
        otherwise come back short without a word (issue 47)."""
        settings = self.settings
        if threshold >= settings.lsh_threshold or threshold in self._warned_band_recall:
            return  # every lookup at the collection's threshold stops here, before any arithmetic
        recall = self.band_recall(threshold)
        if recall >= BAND_RECALL:
            return
        self._warned_band_recall.add(threshold)
        params = self.builder.lsh
        log.warning(
            "LSH lookup at Jaccard >= %g: this collection's %d bands of %d rows are chosen for %g, and find a pair "
            "at %g with probability %.0f%%, so some are missed. For all of them, look up by shingles (a collection "
            "indexed with --fields including shingles) or index with --lsh-threshold %g", threshold, params.bands,
            params.rows, settings.lsh_threshold, threshold, 100 * recall, threshold)

    def band_candidate_params(self, query: Query, first_word_filter: bool = False,
                              other_datasets_than: str | None = None) -> list[tuple[str, object]]:
        """The parameters of the query for every document sharing an LSH band with ``query`` (unscored, sorted by
        id for cursor paging; each document's band keys come back in ``content_lsh``)."""
        bands = self.query_tokens(query, "lsh")
        params: list[tuple[str, object]] = [
            ("q", "{!terms f=content_lsh v=$nd.bands}"), ("nd.bands", ",".join(bands)), ("sort", "id asc"),
            ("fl", _FIELDS.replace(",score", ",content_lsh"))]
        if first_word_filter and query.processed.words:
            params += [("fq", "{!term f=first_word v=$nd.fw}"), ("nd.fw", text_token(query.processed.words[0]))]
        if other_datasets_than is not None:
            params += filter_params([not_in_dataset(other_datasets_than)])
        return params

    def _every_band_candidate(self, query: Query, options: LookupOptions,
                              other_datasets_than: str | None) -> Iterator[dict]:
        """Every document sharing a band with ``query``, each with ``score`` = the bands it shares: what the
        OR-query scores, without scoring. With no row cap nothing needs the score order, and a constant-score
        terms query paged by id cost Solr a third of the scored, score-sorted one (QTime p50 1 ms against 3 ms
        at 1,000,000 documents); the shared bands are counted here from the band keys the document returns."""
        wanted = set(self.query_tokens(query, "lsh"))
        params = self.band_candidate_params(query, options.first_word_filter, other_datasets_than)
        for doc in cursor_docs(self.client, params, _PAGE_SIZE):
            doc["score"] = float(len(wanted.intersection(doc.pop("content_lsh", ()))))
            yield doc

    def rerank(
        self,
        query: Query,
        docs: Iterable[dict],
        *,
        max_edit_distance: int | None,
        min_jaccard: float | None = None,
        only_greater_ids: bool = False,
    ) -> list[NearDuplicate]:
        """Candidates (Solr documents) checked against ``query``: exact by MD5, else the exact shingle Jaccard
        and the word edit distance computed from the stored text; best first."""
        results = []
        source_key = id_sort_key(query.id) if query.id is not None else None
        shingler = self.builder.shingler
        for doc in docs:
            doc_id = doc["id"]
            if doc_id == SETTINGS_DOC_ID or doc_id == query.id:
                continue
            if only_greater_ids and source_key is not None and id_sort_key(doc_id) <= source_key:
                continue
            content = doc.get("content", "")
            exact = doc.get("md5_hash") == query.md5_hash
            if exact:
                distance, jac = 0, 1.0
            else:
                other = shingler.process(content)
                jac = sorted_jaccard(query.hash_set, np.unique(other.shingle_hashes))
                if min_jaccard is not None and jac < min_jaccard:
                    continue  # checked before the edit distance, which costs more
                distance = Levenshtein.distance(query.processed.words, other.words)
                if max_edit_distance is not None and distance > max_edit_distance:
                    continue
            results.append(NearDuplicate(
                id=doc_id, content=content, edit_distance=distance, score=float(doc.get("score", 0.0)),
                jaccard=jac, exact=exact, dataset=doc.get("dataset"),
            ))
        results.sort(key=lambda m: (m.edit_distance, -m.jaccard, -m.score, id_sort_key(m.id)))
        return results


def _checked_scope(only_greater_ids: Any, other_datasets_than: Any) -> tuple[bool, str | None]:
    """Which documents a lookup may answer with (not lookup options: reports and joins set them)."""
    return (check_bool("only_greater_ids", only_greater_ids),
            check_str("other_datasets_than", other_datasets_than, none_ok=True))


def _in_mode(options: LookupOptions, mode: str) -> LookupOptions:
    """``options`` of a lookup whose method names its mode (find_near_dups_by_minhash): refused in another."""
    if options.mode != mode:
        raise InvalidParameterError("options", f"options in mode {mode!r} (this lookup's mode)", options.mode)
    return options


def _checked_lookup_id(doc_id: Any) -> str:
    """An id to look up: a str or an int. Not the indexing rules: older indexes may hold ids they now refuse."""
    if isinstance(doc_id, bool) or not isinstance(doc_id, (str, int, np.integer)):
        raise ParameterTypeError("doc_id", "a str or an int", doc_id)
    text = str(doc_id)
    if not text:
        raise InvalidParameterError("doc_id", "a non-empty id", doc_id)
    return text


def cursor_docs(client: SolrClient, params: Sequence[tuple[str, object]], page_size: int = 500) -> Iterator[dict]:
    """Every document a query matches, page by page with a cursor (``params`` must sort on a unique key last).

    A page shorter than ``page_size`` is the last one: stopping there saves the extra request that would only
    confirm an unchanged cursor, which for a one-page answer (the usual case of a bounded candidate query) halves
    the requests, and on SolrCloud each request is a distributed round trip to every shard.
    """
    for page in client.cursor_pages(list(params), page_size, until_short_page=True):
        yield from page
