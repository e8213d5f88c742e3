"""The service's request bodies: the JSON fields each endpoint takes, declared once for the validation and the
OpenAPI description. Their keys are the options' (:mod:`neardup_solr.options`) and none has a default of its own:
a field left out is None, and the options fill it."""

from __future__ import annotations

from typing import Literal, Union

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr

from neardup_solr.options import DEFAULT_SPLIT_BUCKET

MAX_RECORDS = 10_000

class DocumentIn(BaseModel):
    """A record to index."""

    model_config = ConfigDict(extra="forbid")
    id: Union[StrictStr, StrictInt]
    text: StrictStr
    dataset: StrictStr | None = None
    ttl: StrictStr | None = Field(None, description="time to live, Solr date math (e.g. +30DAYS): Solr deletes the "
                                                     "document that long after it is indexed")


class LookupRequest(BaseModel):
    """A lookup's options as JSON fields: the keys of :class:`neardup_solr.options.LookupOptions` (the command
    line's ``near-dups`` flags), or ``threshold`` with ``similarity``, or ``min_share``; null or left out: the
    default there."""

    model_config = ConfigDict(extra="forbid")
    mode: Literal["shingles", "minhash", "lsh"] | None = Field(None, description="candidate query (default shingles)")
    max_edit_distance: StrictInt | None = Field(None, description="word edit distance limit (default: none)")
    min_jaccard: float | None = Field(
        None, description="keep candidates with exact Jaccard >= this (default: the collection's threshold)")
    rows: StrictInt | None = Field(None, description="candidates asked from Solr (default: all, paged)")
    first_word_filter: StrictBool | None = Field(
        None, description="only candidates with the same first word (the write-up's filter; default off)")
    num_hashes: StrictInt | None = Field(None, description="MinHash values to query with (mode minhash)")
    threshold: float | None = Field(None, description="every document with similarity >= this (no row cap)")
    similarity: Literal["jaccard", "idf", "cosine"] | None = Field(
        None, description="threshold lookups: jaccard, idf, or cosine (vectors of meaning; a collection indexed with "
                          "an encoder)")
    method: Literal["exact", "knn", "hybrid"] | None = Field(
        None, description="threshold lookups by cosine: knn (default: the HNSW graph walk) or hybrid (the walk and "
                          "the documents sharing an LSH band); a lookup by words is exact")
    min_share: float | None = Field(None, description="every document holding this share of the shingles")
    with_text: StrictBool = Field(False, description="include each result's text")


class TextLookup(LookupRequest):
    text: StrictStr


# A field record's values: text or numbers, null for unknown (bools, lists and objects are refused).
RecordValue = Union[StrictStr, StrictInt, StrictFloat, None]


class CheckRequest(BaseModel):
    """Exactly one of ``text`` (checked by shingle Jaccard) and ``record`` (field values, checked by the
    collection's record model: POST /v1/match)."""

    model_config = ConfigDict(extra="forbid")
    id: Union[StrictStr, StrictInt]
    text: StrictStr | None = None
    record: dict[StrictStr, RecordValue] | None = Field(
        None, description="a field record instead of a text: matched with the stored record model, added only when "
                          "it matches nothing at or above threshold (then a match probability, default 0.5)")
    threshold: float | None = Field(None, description="Jaccard similarity (default: the collection's lsh_threshold); "
                                                      "with record, a match probability (default 0.5)")
    add: StrictBool = True
    dataset: StrictStr | None = None
    ttl: StrictStr | None = Field(None, description="time to live of the added text, Solr date math (e.g. +30DAYS)")
    strict: StrictBool | None = Field(
        None, description="exclusive for near-duplicate texts across workers and hosts (band locks in Solr, a soft "
                          "commit per added text); default: the service's check_strict, true unless configured off")
    with_text: StrictBool = False


class MatchRequest(BaseModel):
    """One field record matched against the collection's field records with the stored model."""

    model_config = ConfigDict(extra="forbid")
    record: dict[StrictStr, RecordValue] = Field(
        ..., description="the record's fields and their values (its id, when given, is left out of the matches)")
    threshold: float | None = Field(None, description="the match probability a match needs (default 0.5)")
    limit: StrictInt | None = Field(None, description="at most this many matches, best first (default 10)")
    with_fields: StrictBool = Field(False, description="include each match's fields")


class BulkDelete(BaseModel):
    """Exactly one of ``ids`` and ``dataset``."""

    model_config = ConfigDict(extra="forbid")
    ids: list[Union[StrictStr, StrictInt]] | None = Field(None, max_length=MAX_RECORDS)
    dataset: StrictStr | None = None


class ReportRequest(BaseModel):
    """A whole-collection report: every pair at or above ``threshold`` (default: the collection's similarity
    threshold; ``method`` exact or lsh), the keys of :class:`neardup_solr.options.ThresholdOptions`; with
    ``writeup_ranking``, the reference write-up's report instead, one lookup per document with the lookup options
    (optionally over ``start_id``..``end_id``), the keys of :class:`neardup_solr.options.LookupReportOptions`."""

    model_config = ConfigDict(extra="forbid")
    writeup_ranking: StrictBool | None = Field(
        None, description="the reference write-up's report: one lookup per document, first-word filter, 10 rows, "
                          "word edit distance <= 2 (the lookup options given override them)")
    threshold: float | None = Field(None, description="default: the collection's similarity threshold")
    similarity: Literal["jaccard", "idf", "cosine"] | None = None
    method: Literal["exact", "lsh", "knn", "hybrid"] | None = None
    dataset: StrictStr | None = None
    field_weights: dict[StrictStr, float] | None = Field(
        None, description="similarity idf on records of several text columns: column -> weight")
    idf_tokens: Literal["words", "grams"] | None = Field(
        None, description="similarity idf: weigh the words (default) or the words and their character 4-grams")
    split_bucket: StrictInt | None = Field(
        None, description="method lsh: band buckets of more members than this are verified in place when small "
                          "or dense and split by further signature values when large and sparse (default "
                          f"{DEFAULT_SPLIT_BUCKET})")
    start_id: Union[StrictStr, StrictInt, None] = None
    end_id: Union[StrictStr, StrictInt, None] = None
    workers: StrictInt | None = None
    mode: Literal["shingles", "minhash", "lsh"] | None = None
    max_edit_distance: StrictInt | None = None
    min_jaccard: float | None = None
    rows: StrictInt | None = None
    first_word_filter: StrictBool | None = None
    num_hashes: StrictInt | None = None


#: :class:`LookupRequest`'s former name, kept for code importing it (deprecated: it was also the name of the
#: library's options class, :class:`neardup_solr.options.LookupOptions`).
LookupOptions = LookupRequest

__all__ = ["MAX_RECORDS", "DocumentIn", "LookupRequest", "TextLookup", "CheckRequest", "MatchRequest", "BulkDelete",
           "ReportRequest"]
