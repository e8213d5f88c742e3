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
from typing import Iterable, Iterator

import numpy as np
from rapidfuzz.distance import Levenshtein

from .documents import (
    SETTINGS_DOC_ID,
    DocumentBuilder,
    IndexSettings,
    md5_hex,
    read_index_settings,
    signature_tokens,
    text_token,
)
from .errors import NeardupError
from .groups import id_key
from .lsh import band_keys, band_tokens
from .solr_client import SolrClient
from .text import ProcessedText

log = logging.getLogger(__name__)

MODES = ("shingles", "minhash", "lsh")
_FIELD_OF_MODE = {"shingles": "content_ng", "minhash": "content_sg", "lsh": "content_lsh"}
_FIELDS = "id,content,md5_hash,num_words,first_word,num_shingles,dataset,fields_json,score"


class DocumentNotFoundError(NeardupError, KeyError):
    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "document not found"


@dataclass
class StoredDocument:
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


# Numeric ids compare as numbers ("9" < "10"), others as strings, numbers first.
id_sort_key = id_key


class Searcher:
    """Near-duplicate lookups against one collection.

    >>> searcher = Searcher(SolrClient())
    >>> searcher.find_near_dups_by_shingles("3", max_distance=2)
    [NearDuplicate(id='536', content="Art's Deli 12224 Ventura Blvd. Studio City", edit_distance=1, ...)]
    """

    def __init__(self, client: SolrClient | None = None, settings: IndexSettings | None = None):
        self.client = client or SolrClient()
        self.settings = settings or read_index_settings(self.client) or IndexSettings()
        self.builder = DocumentBuilder(self.settings)

    # ------------------------------------------------------------------ documents
    def get_by_id(self, doc_id: str) -> StoredDocument:
        docs = self.client.get_by_ids([str(doc_id)], _FIELDS.replace(",score", ""))
        if not docs or docs[0]["id"] == SETTINGS_DOC_ID:
            raise DocumentNotFoundError(f"no document with id {doc_id!r} in {self.client.url}")
        return StoredDocument.from_solr(docs[0])

    def prepare(self, text: str, doc_id: str | None = None) -> Query:
        processed = self.builder.process(text)
        signature = self.builder.minhash.signature_from_hashes(processed.shingle_hashes)
        return Query(doc_id, text, processed, md5_hex(processed.normalized), signature,
                     np.unique(processed.shingle_hashes))

    # ------------------------------------------------------------------ lookups
    def find_near_dups(
        self,
        doc_id: str | None = None,
        *,
        text: str | None = None,
        mode: str = "shingles",
        max_distance: int | None = 2,
        rows: int = 10,
        first_word_filter: bool = True,
        num_hashes: int | None = None,
        min_jaccard: float | None = None,
        only_greater_ids: bool = False,
        other_datasets_than: str | None = None,
    ) -> list[NearDuplicate]:
        """Near duplicates of a stored document (``doc_id``) or of a new ``text``.

        ``rows`` caps the candidates Solr returns (the write-up used 10; a stored query document takes one of
        them itself); ``max_distance`` keeps candidates within that word edit distance (None: no limit);
        ``min_jaccard`` keeps those whose exact shingle Jaccard reaches it.
        """
        if (doc_id is None) == (text is None):
            raise ValueError("give either a document id or a text")
        if doc_id is not None:
            source = self.get_by_id(doc_id)
            query = self.prepare(source.content, source.id)
        else:
            query = self.prepare(text)
        return self.search(
            query, mode=mode, max_distance=max_distance, rows=rows, first_word_filter=first_word_filter,
            num_hashes=num_hashes, min_jaccard=min_jaccard, only_greater_ids=only_greater_ids,
            other_datasets_than=other_datasets_than,
        )

    def find_near_dups_by_shingles(self, doc_id: str, max_distance: int | None = 2, **kw) -> list[NearDuplicate]:
        return self.find_near_dups(doc_id, mode="shingles", max_distance=max_distance, **kw)

    def find_near_dups_by_minhash(self, doc_id: str, max_distance: int | None = 2, **kw) -> list[NearDuplicate]:
        kw.setdefault("num_hashes", None)
        return self.find_near_dups(doc_id, mode="minhash", max_distance=max_distance, **kw)

    def find_near_dups_of_text(self, text: str, mode: str = "shingles", **kw) -> list[NearDuplicate]:
        """The online use: is this new document a near duplicate of anything indexed?"""
        return self.find_near_dups(text=text, mode=mode, **kw)

    def find_by_shingle_share(
        self, text: str, min_share: float = 0.5, *, page_size: int = 500
    ) -> list[tuple[str, float]]:
        """Write-up 003's lookup: every indexed document holding at least ``min_share`` of the new text's
        (sampled) shingles, as (id, share), best first. An equal MD5 is an exact duplicate (share 1.0) and is
        answered without looking at shingles. Nothing is capped: the bound ``overlap >= ceil(min_share * n)``
        is a filter on the overlap score and all matches are paged through.
        """
        if not 0.0 < min_share <= 1.0:
            raise ValueError("min_share must be in (0, 1]")
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
                ("q", " ".join(_quoted(t) for t in tokens)), ("defType", "lucene"), ("df", "content_ng"),
                ("q.op", "OR"), ("fq", f"{{!frange l={bound}}}query($q)"), ("fl", "id,score"),
                ("sort", "score desc,id asc"),
            ]
            for doc in cursor_docs(self.client, params, page_size):
                found.setdefault(doc["id"], min(1.0, doc["score"] / len(tokens)))
        found.pop(SETTINGS_DOC_ID, None)
        return sorted(found.items(), key=lambda kv: (-kv[1], id_sort_key(kv[0])))

    # ------------------------------------------------------------------ the query
    def query_tokens(self, query: Query, mode: str, num_hashes: int | None = None) -> list[str]:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
        self.settings.require(mode)
        if mode == "shingles":
            return self.builder.shingle_tokens(query.processed)
        if mode == "minhash":
            count = num_hashes or self.settings.num_hashes
            if count > self.settings.num_hashes:
                raise ValueError(f"the index holds {self.settings.num_hashes} MinHash values; asked for {count}")
            return signature_tokens(query.signature, count)
        if mode == "lsh":
            return band_tokens(band_keys(query.signature[None, :], self.builder.lsh)[0])
        raise ValueError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")

    def candidate_params(
        self, query: Query, mode: str, rows: int, first_word_filter: bool, num_hashes: int | None = None,
        other_datasets_than: str | None = None,
    ) -> list[tuple[str, object]]:
        tokens = self.query_tokens(query, mode, num_hashes)
        params: list[tuple[str, object]] = [
            ("q", " ".join(_quoted(t) for t in dict.fromkeys(tokens))),
            ("defType", "lucene"),
            ("df", _FIELD_OF_MODE[mode]),
            ("q.op", "OR"),
            ("rows", rows),
            # The row cap must cut at the same place on every shard layout. Without a sort, candidates with equal
            # overlap come in internal document order, which depends on indexing order, segment merges and (on
            # SolrCloud) on which shard holds them. With "id asc" as the tie-breaker each shard returns its best
            # `rows` in this order and the coordinator merges them by the same order, so one core and any cluster
            # keep exactly the same candidates. (Solr compares ids as strings here: "10" < "9". That only decides
            # which tied candidates fit under the cap; rerank() orders the survivors numerically.)
            ("sort", "score desc,id asc"),
            ("fl", _FIELDS),
        ]
        if first_word_filter and query.processed.words:
            params += [("fq", "{!term f=first_word v=$nd.fw}"), ("nd.fw", text_token(query.processed.words[0]))]
        if other_datasets_than is not None:
            params += [("fq", "-{!term f=dataset v=$nd.ds}"), ("nd.ds", other_datasets_than)]
        return params

    def search(
        self,
        query: Query,
        *,
        mode: str = "shingles",
        max_distance: int | None = 2,
        rows: int = 10,
        first_word_filter: bool = True,
        num_hashes: int | None = None,
        min_jaccard: float | None = None,
        only_greater_ids: bool = False,
        other_datasets_than: str | None = None,
    ) -> list[NearDuplicate]:
        params = self.candidate_params(query, mode, rows, first_word_filter, num_hashes, other_datasets_than)
        docs = self.client.select(params)["response"]["docs"]
        matches = self.rerank(query, docs, max_distance=max_distance, min_jaccard=min_jaccard,
                              only_greater_ids=only_greater_ids)
        if mode == "minhash":
            # With position-tagged MinHash tokens the overlap score counts agreeing hash functions.
            count = num_hashes or self.settings.num_hashes
            for match in matches:
                match.estimated_jaccard = min(1.0, match.score / count)
        return matches

    def rerank(
        self,
        query: Query,
        docs: Iterable[dict],
        *,
        max_distance: int | None,
        min_jaccard: float | None = None,
        only_greater_ids: bool = False,
    ) -> list[NearDuplicate]:
        results = []
        source_key = id_sort_key(query.id) if query.id is not None else None
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
                other = self.builder.shingler.process(content)
                distance = Levenshtein.distance(query.processed.words, other.words)
                if max_distance is not None and distance > max_distance:
                    continue
                other_hashes = np.unique(other.shingle_hashes)
                jac = _sorted_jaccard(query.hash_set, other_hashes)
            if min_jaccard is not None and jac < min_jaccard:
                continue
            results.append(NearDuplicate(
                id=doc_id, content=content, edit_distance=distance, score=float(doc.get("score", 0.0)),
                jaccard=jac, exact=exact, dataset=doc.get("dataset"),
            ))
        results.sort(key=lambda m: (m.edit_distance, -m.jaccard, -m.score, id_sort_key(m.id)))
        return results


def cursor_docs(client: SolrClient, params: list[tuple[str, object]], page_size: int = 500) -> Iterator[dict]:
    """Every document a query matches, page by page with a cursor (``params`` must sort on a unique key last).

    A page shorter than ``page_size`` is the last one: stopping there saves the extra request that would only
    confirm an unchanged cursor, which for a one-page answer (the usual case of a bounded candidate query) halves
    the requests, and on SolrCloud each request is a distributed round trip to every shard.
    """
    cursor = "*"
    while True:
        data = client.select(list(params) + [("rows", page_size), ("cursorMark", cursor)])
        docs = data["response"]["docs"]
        yield from docs
        next_cursor = data.get("nextCursorMark", cursor)
        if len(docs) < page_size or next_cursor == cursor:
            return
        cursor = next_cursor


def _quoted(token: str) -> str:
    """A token as a quoted term of the standard query parser; inside quotes only \\ and " are special."""
    return '"' + token.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _sorted_jaccard(a: np.ndarray, b: np.ndarray) -> float:
    if a.size == 0 and b.size == 0:
        return 1.0
    inter = np.intersect1d(a, b, assume_unique=True).size
    return inter / (a.size + b.size - inter)


__all__ = ["Searcher", "NearDuplicate", "StoredDocument", "DocumentNotFoundError", "MODES", "id_sort_key", "cursor_docs"]
