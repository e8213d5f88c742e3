"""Field records in a Solr collection, matched one at a time with a model stored there (issue 39, online).

Three steps, each one call (and one command):

1. :func:`index_field_records` (``neardup-solr index-records FILE --fields-from name:name,born:date,...``)
   indexes records with their fields: each field's value stays retrievable (``fields_json``), and the record's
   candidate tokens, the words and 4-grams of its values with dates in one form (what ``match_records`` searches
   in memory), are indexed in ``content_grams``; ``content`` holds the candidate text they are made of. The
   fields and their kinds are stored with the collection (:mod:`neardup_solr.solr.record_model`), so every later
   record is tokenised the same way, and records with other fields are refused.
2. :func:`train_stored_model` (``neardup-solr train-records``) trains a Fellegi-Sunter model as ``match_records``
   does (u from random pairs, m, u and lambda by EM on the candidate pairs) and stores it as the collection's
   next revision. The candidate pairs are those the online lookup finds for up to ``queries`` records drawn
   at random from the collection (all of them in a smaller one): the pairs it will score, at a cost that does
   not grow with the collection. Run it again whenever the records have changed enough to matter.
3. :class:`SolrRecordMatcher` (``POST /v1/match``, ``neardup-solr match-online``) matches one record against the
   collection: ``match(record)`` gives the indexed records it matches, each with its match probability.

One Solr request per lookup. The matcher holds the document frequency of every candidate token that two or more
records share (one ``/terms`` request when it starts, :func:`neardup_solr.solr.idf.frequent_terms`); a token it
does not hold is in one record or none, and weighs ``ln N``, as in ``match_records``. The request asks for the
``3 x rows`` records with the highest IDF-weighted overlap with the record's prefix: its heaviest tokens, enough
that a record holding none of them cannot reach the candidate threshold (:mod:`neardup_solr.pairs.prefix_filter`;
each token a query clause boosted by its weight, at most :data:`MAX_CLAUSES`), sorted by that overlap alone so
that Lucene can skip the records that cannot enter them; Solr adds each one's overlap with the other tokens.
The ``rows`` with the highest whole overlap that can reach the candidate threshold are checked with the exact
IDF-weighted Jaccard over all their tokens and compared field by field; the model gives the probability. The
candidates are therefore those ``match_records`` finds over the same records with the same threshold, as long
as a candidate is among the ``3 x rows`` records that overlap the prefix most and no more than ``rows`` of those
overlap the whole record more (a person's records share little with other people's; raise ``rows`` for data
where many records look alike). The weights are those of the records indexed when the matcher started:
:meth:`SolrRecordMatcher.refresh` reads them again, with the model when a new revision was stored.
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import math
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np

from neardup_solr.engine.records import (
    DEFAULT_CANDIDATE_THRESHOLD,
    DEFAULT_MATCH_PROBABILITY,
    DEFAULT_RANDOM_PAIRS,
    random_pair_positions,
    read_field_records,
)
from neardup_solr.errors import (
    DocumentExistsError,
    InvalidParameterError,
    InvalidRecordError,
    ParameterTypeError,
    RecordModelError,
)
from neardup_solr.io.readers import ReadItem, Record
from neardup_solr.pairs.comparisons import FieldComparison, comparison_vectors, parse_field_kinds
from neardup_solr.pairs.fellegi_sunter import FellegiSunterModel, train
from neardup_solr.pairs.prefix_filter import weighted_prefix
from neardup_solr.pairs.similar_pairs import SimilarPair, id_sort_key
from neardup_solr.signing.builder import DocumentBuilder
from neardup_solr.signing.settings import RESERVED_IDS, IndexSettings
from neardup_solr.solr.candidates import most_overlapping
from neardup_solr.solr.collection import Selection, SolrClient, collection_of
from neardup_solr.solr.idf import frequent_terms
from neardup_solr.solr.indexer import RECORDS_SOURCE, Indexer, IndexSummary
from neardup_solr.solr.record_model import (
    StoredRecords,
    check_fields_fit,
    read_stored_records,
    store_record_fields,
    store_record_model,
)
from neardup_solr.solr.settings_store import read_index_settings
from neardup_solr.validation import Limit, check_bool, check_float, check_int, id_problem

log = logging.getLogger(__name__)

__all__ = ["SolrRecordMatcher", "RecordMatch", "RecordCheckResult", "OnlineMatches", "index_field_records",
           "train_stored_model", "match_file_online", "RECORD_TOKEN_FIELDS", "DEFAULT_TRAINING_QUERIES",
           "DEFAULT_ROWS"]

# The token fields of a new collection of field records: the candidate tokens (grams), and LSH band keys so that
# the collection's own reports (report --method lsh) work on it too.
RECORD_TOKEN_FIELDS = ("lsh", "grams")
# Records whose candidates train the model (all of them in a smaller collection).
DEFAULT_TRAINING_QUERIES = 20_000
# Candidates a lookup reads at most, the best weighted overlaps first: a record rarely has more than a few
# that reach the candidate threshold.
DEFAULT_ROWS = 20
# Records read a lookup, for each of the `rows` verified: ranked again by their whole overlap (see search).
RANKED_PER_ROW = 3
# The field of the answer holding a record's overlap with the tokens left out of the search.
_REST_OVERLAP = "nd_rest"
# Clauses of the overlap query at most: Solr refuses more than its maxBooleanClauses (1024 unless configured;
# neardup-solr's configset allows more, a collection of your own may not).
MAX_CLAUSES = 1000
# Lucene adds the boosts as 32-bit floats (see neardup_solr.engine.threshold): the bound is lowered by this
# share per clause, so that rounding never drops a record exactly on it.
_FLOAT32_SLACK = 2.0 ** -23
_PAGE = 2000
PROBABILITY = Limit("float", 0.0, 1.0, unit="a match probability")

Fields = Sequence[FieldComparison] | str


def _comparisons(fields: Fields) -> list[FieldComparison]:
    if isinstance(fields, str):
        return parse_field_kinds(fields)
    if isinstance(fields, (list, tuple)) and fields and all(isinstance(c, FieldComparison) for c in fields):
        return list(fields)
    raise ParameterTypeError("fields", "'column:kind,...' or a list of FieldComparison", fields)


# ----------------------------------------------------------------------------------------------- records


def candidate_text(comparisons: Sequence[FieldComparison], values: Mapping[str, Any]) -> str:
    """The text a record's candidate tokens are made of: its prepared values (dates in ISO form), in the
    fields' order, as ``match_records`` makes them."""
    return " ".join(c.candidate_text(c.prepare(values.get(c.field))) for c in comparisons)


def _value_problem(name: str, value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            (isinstance(value, float) and not math.isfinite(value)):
        return f"field {name!r} must be a text or a number, not {type(value).__name__} ({value!r:.40})"
    return None


def record_values(record: Any, comparisons: Sequence[FieldComparison], *, source: object = RECORDS_SOURCE,
                  line: int | None = None, id_required: bool = True) -> tuple[str | None, dict[str, str]]:
    """(id, {field: value as text}) of a record given as a mapping, or
    :class:`~neardup_solr.errors.InvalidRecordError` naming the record and the reason: not a mapping, no usable
    id, a value that is neither text nor number, none of the fields with a value. Other keys are ignored."""
    if not isinstance(record, Mapping):
        raise InvalidRecordError(f"a record must be a mapping of field names to values, not {type(record).__name__}",
                                 source=source, line=line)
    raw_id = record.get("id")
    shown_id = raw_id if isinstance(raw_id, (str, int)) and not isinstance(raw_id, bool) else None
    doc_id: str | None = None
    if raw_id is not None or id_required:
        problem = id_problem(raw_id)
        if problem is None and str(raw_id) in RESERVED_IDS:
            problem = f"the id {raw_id!r} is reserved for neardup-solr"
        if problem is not None:
            raise InvalidRecordError(problem, source=source, line=line, record_id=shown_id)
        doc_id = str(raw_id)
    values: dict[str, str] = {}
    for c in comparisons:
        value = record.get(c.field)
        problem = _value_problem(c.field, value)
        if problem is not None:
            raise InvalidRecordError(problem, source=source, line=line, record_id=shown_id)
        values[c.field] = "" if value is None else str(value)
    if not any(v.strip() for v in values.values()):
        raise InvalidRecordError(f"none of the fields {', '.join(c.field for c in comparisons)} has a value",
                                 source=source, line=line, record_id=shown_id)
    return doc_id, values


def _as_indexed(comparisons: Sequence[FieldComparison]) -> Callable[[ReadItem], ReadItem]:
    """A read record as the one indexed: its candidate text, and its fields as given."""
    names = [c.field for c in comparisons]

    def transform(item: ReadItem) -> ReadItem:
        if isinstance(item, InvalidRecordError):
            return item
        values = item.fields if item.fields is not None else {names[0]: item.text}
        kept = {n: values.get(n) or "" for n in names}
        if not any(v.strip() for v in kept.values()):
            return InvalidRecordError(f"none of the fields {', '.join(names)} has a value", source=item.source,
                                      line=item.line, record_id=item.id)
        return Record(item.id, candidate_text(comparisons, kept), item.source, item.line, kept)

    return transform


def _rows_as_records(rows: Iterable[Any], comparisons: Sequence[FieldComparison]) -> Iterator[ReadItem]:
    for number, row in enumerate(rows, start=1):
        try:
            doc_id, values = record_values(row, comparisons, line=number)
        except InvalidRecordError as exc:
            yield exc
            continue
        assert doc_id is not None
        yield Record(doc_id, candidate_text(comparisons, values), RECORDS_SOURCE, number, values)


def _record_settings(client: SolrClient, settings: IndexSettings | None) -> IndexSettings | None:
    """The settings to index with: None (the collection's own, which must index grams), else ``settings`` or
    the defaults for field records."""
    stored = read_index_settings(client)
    if stored is not None and collection_of(client).count() > 0:
        if "grams" not in stored.fields:
            raise InvalidParameterError(
                "settings", "those of a collection indexed with 'grams' tokens", stored.fields,
                f"{client.url} holds documents indexed without the candidate tokens of field records "
                "(content_grams): index the records into an empty collection (clear it first)", show_value=False)
        return None if settings is None else settings
    chosen = settings or IndexSettings(fields=RECORD_TOKEN_FIELDS)
    if "grams" not in chosen.fields:
        raise InvalidParameterError("settings", "token fields including 'grams' (the candidate tokens)",
                                    chosen.fields)
    return chosen


def index_field_records(client: SolrClient, records: str | Path | Iterable[Mapping[str, Any]], fields: Fields, *,
                        fmt: str | None = None, id_field: str = "id", settings: IndexSettings | None = None,
                        rejects_path: str | Path | None = None, progress: bool = False, batch_size: int = 500,
                        workers: int = 2, resume: bool = False) -> IndexSummary:
    """Index field records (a CSV, JSONL or Parquet file, or mappings with an ``id`` and the fields) into the
    collection, each with its fields and its candidate tokens (the module docstring). ``fields`` are the
    columns and their kinds (``"name:name,born:date"``); a collection holding records indexed with other fields
    refuses them (:class:`~neardup_solr.errors.SettingsConflictError`). A record without an id, without any of
    the fields, or with a value that is neither text nor number is rejected with its reason (the summary's
    ``rejections``, and ``rejects_path``); the others are indexed. ``settings`` seed an empty collection (default:
    ``lsh`` and ``grams`` tokens). Re-indexing a record replaces it; a file's run can be resumed (``resume``)."""
    if not isinstance(client, SolrClient):
        raise ParameterTypeError("client", "a SolrClient", client)
    comparisons = _comparisons(fields)
    chosen = _record_settings(client, settings)
    empty = collection_of(client).count() == 0
    store_record_fields(client, comparisons, replace=empty)
    indexer = Indexer(client, chosen, batch_size=batch_size, workers=workers, progress=progress)
    if isinstance(records, (str, Path)):
        return indexer.index_file(records, fmt, id_field=id_field, text_field=",".join(c.field for c in comparisons),
                                  rejects_path=rejects_path, resume=resume, transform=_as_indexed(comparisons))
    if isinstance(records, Mapping) or not isinstance(records, Iterable):
        raise ParameterTypeError("records", "a file path or an iterable of mappings (one per record)", records)
    return indexer.index_read_records(_rows_as_records(records, comparisons), rejects_path=rejects_path)


# ----------------------------------------------------------------------------------------------- candidates


class _CandidateSearch:
    """The candidates of a record in the collection, in one request (the module docstring)."""

    def __init__(self, client: SolrClient, settings: IndexSettings, indexed: Sequence[FieldComparison],
                 threshold: float, rows: int):
        settings.require("grams")
        self.client = client
        self.indexed = list(indexed)
        self.threshold = threshold
        self.rows = rows
        self.builder = DocumentBuilder(settings)
        self.field = settings.token_field("grams")
        started = time.perf_counter()
        self.frequencies = frequent_terms(client, self.field, 2)
        self.num_docs = max(1, collection_of(client).count())
        self._log_n = math.log(self.num_docs)
        # Each token's weight once: the frequencies and N are fixed for this search's life.
        self._weights: dict[str, float] = {}
        log.info("%s: document frequencies of %d shared candidate tokens over %d records read in %.2f s",
                 client.url, len(self.frequencies), self.num_docs, time.perf_counter() - started)

    def weight(self, token: str) -> float:
        """ln(N / df); a token not held is in one record or none (df 1)."""
        weight = self._weights.get(token)
        if weight is None:
            df = self.frequencies.get(token)
            weight = self._log_n if df is None else math.log(self.num_docs / min(df, self.num_docs))
            self._weights[token] = weight
        return weight

    def tokens(self, values: Mapping[str, Any]) -> set[str]:
        return set(self.builder.gram_tokens(candidate_text(self.indexed, values)))

    def search(self, values: Mapping[str, Any], exclude_id: str | None) -> list[tuple[str, dict, float]]:
        """(id, fields, IDF-weighted Jaccard) of the records whose similarity with ``values`` reaches the
        threshold, most similar first."""
        tokens = self.tokens(values)
        weight = self.weight
        weights = {t: weight(t) for t in tokens}
        total = math.fsum(weights.values())
        if total <= 0:
            return []
        boosted = sorted(((t, w) for t, w in weights.items() if w > 0), key=lambda tw: (-tw[1], tw[0]))
        kept = boosted[:MAX_CLAUSES]
        # J >= t needs an overlap of at least t * total (the union weighs at least the record's own total). The
        # overlap with the tokens left out of the query is at most their weight, so the bound over the kept ones
        # is lowered by it; and by Lucene's float32 rounding of the summed boosts.
        left_out = math.fsum(w for _, w in boosted[MAX_CLAUSES:])
        bound = self.threshold * total * (1 - _FLOAT32_SLACK * len(kept)) - left_out
        # Only the prefix is searched: the heaviest (so rarest) tokens, enough that a record holding none of them
        # cannot reach the bound (neardup_solr.pairs.prefix_filter). The frequent grams left out (a city, a street
        # type, a century's digits) have the longest posting lists: searching every token made Solr walk a large
        # share of the collection for each lookup (at 1,000,000 records, p99 59 ms against 27 ms). Ranked by the
        # prefix's overlap alone, though, a candidate sharing many frequent grams can fall behind `rows` others
        # (5% of the candidate pairs of 5,000 person records did): so RANKED_PER_ROW times the rows are read,
        # each with its overlap with the other tokens (computed by Solr for those records only), and ranked by
        # the whole overlap here. Solr's rerank would do the same, but it counts every hit exactly, slower than
        # searching every token.
        prefix = set(weighted_prefix(dict(kept), self.frequencies, bound)) if bound > 0 else {t for t, _ in kept}
        rest = [(t, w) for t, w in kept if t not in prefix]
        searched = [(t, w) for t, w in kept if t in prefix]
        # The record itself (when indexed) is skipped here rather than filtered out in Solr: a filter on its id
        # would be a filter cache entry (a bitset over the collection) per lookup.
        scored = []
        for doc in most_overlapping(self.client, self.field, searched, rest, RANKED_PER_ROW * self.rows + 1,
                                    fields="id,content,fields_json,score", rest_name=_REST_OVERLAP):
            overlap = float(doc.get("score", 0.0)) + float(doc.get(_REST_OVERLAP, 0.0))
            if str(doc["id"]) != exclude_id and overlap >= bound:
                scored.append((overlap, doc))
        scored.sort(key=lambda od: -od[0])  # stable: Solr's order among equal overlaps
        docs = [doc for _, doc in scored]
        if len(docs) >= self.rows:
            log.debug("%d or more records reach the overlap bound; the %d best are verified", len(docs), self.rows)
        found = []
        for doc in docs[: self.rows]:
            try:
                fields = json.loads(doc.get("fields_json") or "null")
            except ValueError:
                fields = None
            if not isinstance(fields, dict):
                continue  # not a field record (a text indexed into the same collection)
            # The stored text is the record's candidate text: its tokens, without preparing its fields again.
            other = set(self.builder.gram_tokens(doc.get("content") or ""))
            shared = math.fsum(weights[t] for t in tokens & other)
            union = total + math.fsum(weight(t) for t in other) - shared
            similarity = shared / union if union > 0 else float(tokens == other)
            if similarity >= self.threshold - 1e-12:
                found.append((str(doc["id"]), fields, similarity))
        found.sort(key=lambda f: (-f[2], id_sort_key(f[0])))
        return found


# ----------------------------------------------------------------------------------------------- training


def _sample_records(client: SolrClient, size: int, seed: int) -> tuple[list[tuple[str, dict]], int]:
    """Up to ``size`` indexed field records drawn at random (a reservoir over every record, in id order), and
    how many there are."""
    rng = np.random.default_rng(seed)
    sample: list[tuple[str, dict]] = []
    seen = 0
    for page in collection_of(client).pages(Selection(), "id,fields_json", _PAGE):
        for doc in page:
            try:
                fields = json.loads(doc.get("fields_json") or "null")
            except ValueError:
                continue
            if not isinstance(fields, dict):
                continue
            seen += 1
            if len(sample) < size:
                sample.append((str(doc["id"]), fields))
            else:
                slot = int(rng.integers(0, seen))
                if slot < size:
                    sample[slot] = (str(doc["id"]), fields)
    return sample, seen


def _stored_or_refuse(client: SolrClient, *, unreadable_model_ok: bool = False) -> StoredRecords:
    stored = read_stored_records(client, unreadable_model_ok=unreadable_model_ok)
    if stored is None:
        raise RecordModelError(
            f"{client.url} holds no field records: index them first with index_field_records(client, FILE, fields)",
            cli_message=f"{client.url} holds no field records: index them first with 'neardup-solr index-records "
                        "FILE --fields-from COLUMN:KIND,...'")
    return stored


def train_stored_model(client: SolrClient, fields: Fields | None = None, *,
                       queries: int = DEFAULT_TRAINING_QUERIES, random_pairs: int = DEFAULT_RANDOM_PAIRS,
                       seed: int = 0, candidate_threshold: float = DEFAULT_CANDIDATE_THRESHOLD,
                       rows: int = DEFAULT_ROWS) -> StoredRecords:
    """Train a model on the indexed field records and store it as the collection's next revision; returns what
    is stored. ``fields`` (default: the fields the records were indexed with) may compare fewer of the indexed
    columns, or with other kinds; a column the records lack is refused
    (:class:`~neardup_solr.errors.RecordModelError`). Candidates: those the online lookup finds for ``queries``
    records drawn at random with ``seed``; u starts from ``random_pairs`` random pairs of those records."""
    if not isinstance(client, SolrClient):
        raise ParameterTypeError("client", "a SolrClient", client)
    queries = check_int("queries", queries, minimum=2, maximum=10_000_000)
    random_pairs = check_int("random_pairs", random_pairs, minimum=1, maximum=10_000_000)
    candidate_threshold = check_float("candidate_threshold", candidate_threshold, "threshold")
    rows = check_int("rows", rows, minimum=1, maximum=10_000)
    stored = _stored_or_refuse(client, unreadable_model_ok=True)  # training replaces an unreadable model
    comparisons = stored.fields if fields is None else _comparisons(fields)
    started = time.perf_counter()
    settings = read_index_settings(client)
    if settings is None:
        raise RecordModelError(f"{client.url} has record fields stored but no index settings: index the records "
                               "again")
    sample, total = _sample_records(client, queries, seed)
    if total < 2:
        raise RecordModelError(f"{client.url} holds {total} field record(s): a model needs at least two to train on")
    check_fields_fit(comparisons, stored.fields, client.url)  # before the work
    search = _CandidateSearch(client, settings, stored.fields, candidate_threshold, rows)
    # Each pair once, by id order, whichever of its records found it.
    pairs: dict[tuple[str, str], tuple[dict, dict]] = {}
    for doc_id, values in sample:
        for other_id, other, _ in search.search(values, doc_id):
            if id_sort_key(doc_id) <= id_sort_key(other_id):
                pairs[(doc_id, other_id)] = (values, other)
            else:
                pairs[(other_id, doc_id)] = (other, values)
    if not pairs:
        raise RecordModelError(f"no two of the {total} field records in {client.url} are candidates (IDF-weighted "
                               f"Jaccard >= {candidate_threshold:g}): nothing to train on")
    ordered = sorted(pairs)
    left = [[c.prepare(pairs[p][0].get(c.field)) for c in comparisons] for p in ordered]
    right = [[c.prepare(pairs[p][1].get(c.field)) for c in comparisons] for p in ordered]
    levels = comparison_vectors(comparisons, left, right, [(i, i) for i in range(len(ordered))])
    prepared = [[c.prepare(v.get(c.field)) for c in comparisons] for _, v in sample]
    sampled = random_pair_positions(len(sample), None, random_pairs, np.random.default_rng(seed))
    random_levels = comparison_vectors(comparisons, prepared, prepared, sampled)
    model = train(comparisons, levels, random_levels)
    model.training.update({"candidate_threshold": candidate_threshold, "queries": len(sample),
                           "records": total, "seconds": round(time.perf_counter() - started, 3)})
    log.info("trained on the candidates of %d of %d records (%d pairs) and %d random pairs: lambda %.4f",
             len(sample), total, len(ordered), len(sampled), model.lambda_)
    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    return store_record_model(client, model, trained_at=now, trained_on=total, expected=stored)


# ----------------------------------------------------------------------------------------------- matching


@dataclass
class RecordMatch:
    """An indexed record a record matches: its ``id``, the match ``probability`` (the model's), the candidate
    ``similarity`` (IDF-weighted Jaccard of their tokens) and its ``fields`` as indexed."""

    id: str
    probability: float
    similarity: float
    fields: dict = field(default_factory=dict)

    def as_dict(self, with_fields: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "probability": round(self.probability, 6),
                               "similarity": round(self.similarity, 6)}
        if with_fields:
            out["fields"] = self.fields
        return out


# What RecordCheckResult.status says (the words of neardup_solr.engine.online's CheckResult).
ADDED, DUPLICATE, CHECKED, ALREADY_INDEXED = "added", "duplicate", "checked", "already_indexed"


@dataclass
class RecordCheckResult:
    """What :meth:`SolrRecordMatcher.check_and_add` did: ``added`` only when this call added the record;
    ``matches`` the indexed records it matches at or above ``threshold``; ``status`` added, duplicate, checked
    (add=False) or already_indexed (this id already holds these very fields)."""

    id: str
    added: bool
    status: str
    threshold: float
    matches: list[RecordMatch] = field(default_factory=list)


class SolrRecordMatcher:
    """Field records in a collection, matched one new record at a time with the model stored there.

    >>> matcher = SolrRecordMatcher(SolrClient())
    >>> matcher.match({"name": "Jon Smith", "born": "1984-03-07", "phone": "555-0134"})
    [RecordMatch(id='17', probability=0.998..., similarity=0.41..., fields={...})]

    Raises :class:`~neardup_solr.errors.RecordModelError` when the collection holds no field records, no trained
    model, or a model that does not fit its records. ``candidate_threshold`` and ``rows``: see the module
    docstring. Safe to share between threads."""

    def __init__(self, client: SolrClient | None = None, *,
                 candidate_threshold: float = DEFAULT_CANDIDATE_THRESHOLD, rows: int = DEFAULT_ROWS):
        if client is not None and not isinstance(client, SolrClient):
            raise ParameterTypeError("client", "a SolrClient or None", client)
        self.client = client or SolrClient()
        self.candidate_threshold = check_float("candidate_threshold", candidate_threshold, "threshold")
        self.rows = check_int("rows", rows, minimum=1, maximum=10_000)
        self._lock = threading.Lock()
        self._load()

    def _load(self) -> None:
        stored = _stored_or_refuse(self.client)
        model = stored.require_model(self.client.url)
        check_fields_fit(model.comparisons, stored.fields, self.client.url)
        settings = read_index_settings(self.client)
        if settings is None:
            raise RecordModelError(f"{self.client.url} has a record model but no index settings: index the "
                                   "records again")
        self._search = _CandidateSearch(self.client, settings, stored.fields, self.candidate_threshold, self.rows)
        self.model: FellegiSunterModel = model
        self.revision: int = stored.revision
        self.fields: list[FieldComparison] = stored.fields
        self._settings = settings

    def refresh(self) -> bool:
        """Read the document frequencies again, and the model when another revision is stored; True when the
        revision changed."""
        before = self.revision
        with self._lock:
            self._load()
        return self.revision != before

    def __len__(self) -> int:
        """The records the weights were counted over (when the matcher started or was refreshed)."""
        return self._search.num_docs

    @property
    def shared_tokens(self) -> int:
        """How many candidate tokens (held by two records or more) the matcher holds a frequency for."""
        return len(self._search.frequencies)

    def match(self, record: Mapping[str, Any], *, threshold: float = DEFAULT_MATCH_PROBABILITY,
              limit: int | None = 10) -> list[RecordMatch]:
        """The indexed records ``record`` matches with probability >= ``threshold``, best first, at most
        ``limit`` (None: all). ``record`` maps the fields to their values (text or numbers; missing or None:
        unknown); its ``id``, when it has one, is left out of the matches. A record without any of the fields,
        or with a value of another type, raises :class:`~neardup_solr.errors.InvalidRecordError` naming it."""
        threshold = check_float("threshold", threshold, PROBABILITY)
        limit = check_int("limit", limit, minimum=1, maximum=10_000, none_ok=True)
        own_id, values = record_values(record, self.fields, id_required=False)
        return self._match(own_id, values, threshold, limit)

    def _match(self, own_id: str | None, values: dict[str, str], threshold: float,
               limit: int | None) -> list[RecordMatch]:
        found = self._search.search(values, own_id)
        if not found:
            return []
        comparisons = self.model.comparisons
        query = [[c.prepare(values.get(c.field)) for c in comparisons]]
        others = [[c.prepare(f.get(c.field)) for c in comparisons] for _, f, _ in found]
        levels = comparison_vectors(comparisons, query, others, [(0, j) for j in range(len(found))])
        probabilities = self.model.probabilities(levels)
        matches = [RecordMatch(doc_id, float(p), similarity, fields)
                   for (doc_id, fields, similarity), p in zip(found, probabilities) if p >= threshold]
        matches.sort(key=lambda m: (-m.probability, id_sort_key(m.id)))
        return matches[:limit] if limit is not None else matches

    def check_and_add(self, record: Mapping[str, Any], threshold: float | None = None, *,
                      add: bool = True) -> RecordCheckResult:
        """Add ``record`` (it needs an ``id``) only when it matches no indexed record with probability >=
        ``threshold`` (default 0.5); otherwise it is reported as a duplicate of those it matches. The add is
        create-only (an id holding other fields raises :class:`~neardup_solr.errors.DocumentExistsError`) and
        soft-committed, so the next lookup sees it. Checks through one matcher run one at a time, so two
        duplicates sent at once through it are never both added; through several processes they can be."""
        threshold = check_float("threshold", DEFAULT_MATCH_PROBABILITY if threshold is None else threshold,
                                PROBABILITY)
        add = check_bool("add", add)
        doc_id, values = record_values(record, self.fields, id_required=True)
        assert doc_id is not None
        with self._lock:
            matches = self._match(doc_id, values, threshold, None)
            if matches:
                return RecordCheckResult(doc_id, False, DUPLICATE, threshold, matches)
            if not add:
                return RecordCheckResult(doc_id, False, CHECKED, threshold, [])
            built = self._search.builder.build([(doc_id, candidate_text(self.fields, values), values)])
            if built.rejected:
                raise InvalidRecordError(built.rejected[0][1], source=RECORDS_SOURCE, record_id=doc_id)
            document = built.documents[0]
            if not collection_of(self.client).create_only(document):
                held = collection_of(self.client).by_ids([doc_id], "id,fields_json")
                if held and held[0].get("fields_json") == document["fields_json"]:
                    return RecordCheckResult(doc_id, False, ALREADY_INDEXED, threshold, [])
                raise DocumentExistsError(f"the id {doc_id!r} already holds another record in {self.client.url}; a "
                                          "check never overwrites it: delete it first, or choose another id", doc_id)
        return RecordCheckResult(doc_id, True, ADDED, threshold, [])


# ----------------------------------------------------------------------------------------------- a file


@dataclass
class OnlineMatches:
    """The pairs a file's records matched in the collection (``similarity`` is the probability; each pair once,
    by id order), how many records were read and rejected (each error names its line), the model revision."""

    pairs: list[SimilarPair]
    records: int
    rejected: list[InvalidRecordError]
    revision: int
    seconds: float


def match_file_online(client: SolrClient, path: str | Path, *, threshold: float = DEFAULT_MATCH_PROBABILITY,
                      fmt: str | None = None, id_field: str = "id",
                      matcher: SolrRecordMatcher | None = None) -> OnlineMatches:
    """Match every record of a file against the collection, one lookup each (what ``neardup-solr match-online``
    runs): the pairs whose probability reaches ``threshold``."""

    started = time.perf_counter()
    matcher = matcher or SolrRecordMatcher(client)
    rows, rejected = read_field_records(path, matcher.fields, fmt=fmt, id_field=id_field)
    best: dict[tuple[str, str], float] = {}
    for row in rows:
        try:
            own_id, values = record_values(row, matcher.fields, source=path)
        except InvalidRecordError as exc:
            rejected.append(exc)
            continue
        assert own_id is not None
        for m in matcher._match(own_id, values, threshold, None):
            key = (own_id, m.id) if id_sort_key(own_id) <= id_sort_key(m.id) else (m.id, own_id)
            best[key] = max(best.get(key, 0.0), m.probability)
    pairs = [SimilarPair(a, b, p) for (a, b), p in best.items()]
    pairs.sort(key=lambda p: (-p.similarity, id_sort_key(p.id), id_sort_key(p.neighbor_id)))
    return OnlineMatches(pairs, len(rows), rejected, matcher.revision, time.perf_counter() - started)
