"""Record matching field by field: candidates by the record recipe, scored by a Fellegi-Sunter model.

Records are read with their fields (``--fields-from name:name,born:date,...``: each column and its kind,
:mod:`neardup_solr.pairs.comparisons`). Candidate pairs are those whose IDF-weighted Jaccard over the words and
their 4-grams of all the compared fields reaches a low similarity (the record recipe's tokens, set low for
recall: nothing to write per data set, unlike blocking rules). Each candidate pair is then compared field by
field and scored by a model (:mod:`neardup_solr.pairs.fellegi_sunter`) trained on these records without labels:
u from random pairs, m by EM on the candidates. A pair is a match when its probability reaches the threshold.

In Python::

    result = match_records(rows, "name:name,address:text,born:date,phone:code")
    result.pairs      # SimilarPair(id, neighbor_id, probability), best first
    result.model.save("model.json")

The command line: ``neardup-solr match-records records.jsonl --fields-from name:name,... --out pairs.tsv``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np

from neardup_solr.errors import InvalidParameterError, InvalidRecordError
from neardup_solr.io.readers import RecordReader
from neardup_solr.pairs.comparisons import FieldComparison, comparison_vectors, parse_field_kinds, prepare_records
from neardup_solr.pairs.fellegi_sunter import FellegiSunterModel, train
from neardup_solr.pairs.idf_candidates import WeightedIndex, idf_weights, weighted_candidates
from neardup_solr.pairs.similar_pairs import SimilarPair, id_sort_key, one_to_one as pick_one_to_one
from neardup_solr.signing.builder import DocumentBuilder
from neardup_solr.signing.settings import IndexSettings

log = logging.getLogger(__name__)

__all__ = ["RecordMatcher", "RecordMatches", "match_records", "train_model", "read_field_records",
           "DEFAULT_CANDIDATE_THRESHOLD", "DEFAULT_MATCH_PROBABILITY"]

# The IDF-weighted Jaccard over grams a pair needs to be scored. The recipe matches at 0.37 (0.22 on carelessly
# typed records); candidates go lower, since the model, not this number, decides.
DEFAULT_CANDIDATE_THRESHOLD = 0.15
DEFAULT_MATCH_PROBABILITY = 0.5
DEFAULT_RANDOM_PAIRS = 50_000

Records = Sequence[Mapping[str, object]]


@dataclass
class RecordMatches:
    """The matched pairs (``similarity`` is the match probability), the model that scored them, and counts."""

    pairs: list[SimilarPair]
    model: FellegiSunterModel
    candidates: int
    seconds: float
    # Every candidate's probability, (id, neighbor_id) -> p, for choosing a threshold afterwards.
    probabilities: dict[tuple[str, str], float] = field(default_factory=dict, repr=False)


def _comparisons(fields: str | Sequence[FieldComparison]) -> list[FieldComparison]:
    return parse_field_kinds(fields) if isinstance(fields, str) else list(fields)


def read_field_records(path: str | Path, fields: str | Sequence[FieldComparison], *, fmt: str | None = None,
                       id_field: str = "id") -> tuple[list[dict], list[InvalidRecordError]]:
    """The records of a CSV, JSONL or Parquet file as ``{"id": ..., column: value}`` dicts with the compared
    columns, and the records rejected (each error names the file, the line and the reason)."""
    comparisons = _comparisons(fields)
    names = [c.field for c in comparisons]
    reader = RecordReader(path, fmt, id_field=id_field, text_field=",".join(names))
    rows: list[dict] = []
    rejected: list[InvalidRecordError] = []
    lines: dict[str, int] = {}
    for item in reader:
        if isinstance(item, InvalidRecordError):
            log.warning("%s", item)
            rejected.append(item)
            continue
        if item.id in lines:
            error = InvalidRecordError(f"its id is the record's of line {lines[item.id]} too (the first one is "
                                       "kept)", source=item.source, line=item.line, record_id=item.id)
            log.warning("%s", error)
            rejected.append(error)
            continue
        lines[item.id] = item.line
        values = item.fields if item.fields is not None else {names[0]: item.text}
        rows.append({"id": item.id, **{n: values.get(n, "") for n in names}})
    return rows, rejected


def _ids(records: Records, what: str) -> list[str]:
    ids = []
    seen: dict[str, int] = {}
    for n, r in enumerate(records):
        rid = r.get("id")
        if rid is None or str(rid).strip() == "":
            raise InvalidParameterError(f"{what}[{n}]", "a record with an 'id'", dict(r))
        rid = str(rid)
        if rid in seen:
            # Pairs are named by id: two records with one id could not be told apart in the matches.
            raise InvalidParameterError(f"{what}[{n}]", f"a record whose id is its own (id {rid!r} is also "
                                        f"{what}[{seen[rid]}]'s)", rid, show_value=False)
        seen[rid] = n
        ids.append(rid)
    return ids


class _Side:
    """One list of records: ids, prepared values per field, and gram token sets over the compared fields."""

    def __init__(self, records: Records, comparisons: Sequence[FieldComparison], builder: DocumentBuilder,
                 what: str):
        self.ids = _ids(records, what)
        self.values = prepare_records(comparisons, records)
        self.tokens = [candidate_tokens(builder, comparisons, values) for values in self.values]


def candidate_tokens(builder: DocumentBuilder, comparisons: Sequence[FieldComparison],
                     values: Sequence[str]) -> set[str]:
    """The grams of a record's prepared values (dates in one form) that the candidate search weighs."""
    return set(builder.gram_tokens(" ".join(c.candidate_text(v) for c, v in zip(comparisons, values))))


def random_pair_positions(n_left: int, n_right: int | None, count: int,
                          rng: np.random.Generator) -> list[tuple[int, int]]:
    """``count`` random pairs of positions: two different records of one list (``n_right`` None), or one of
    each list; u is estimated from their comparison levels."""
    if n_right is None:
        if n_left < 2:
            return []
        i = rng.integers(0, n_left, size=count)
        j = (i + rng.integers(1, n_left, size=count)) % n_left  # never i itself
    else:
        if n_left == 0 or n_right == 0:
            return []
        i, j = rng.integers(0, n_left, size=count), rng.integers(0, n_right, size=count)
    return list(zip(i.tolist(), j.tolist()))


def _candidates(left: _Side, right: _Side | None, low: float) -> dict[tuple[int, int], float]:
    sets = left.tokens + (right.tokens if right is not None else [])
    return weighted_candidates(left.tokens, None if right is None else right.tokens, idf_weights(sets), low)


def train_model(records: Records, fields: str | Sequence[FieldComparison], *, right: Records | None = None,
                candidate_threshold: float = DEFAULT_CANDIDATE_THRESHOLD, random_pairs: int = DEFAULT_RANDOM_PAIRS,
                seed: int = 0) -> FellegiSunterModel:
    """A model for ``fields`` trained on these records (and ``right``'s, when linking two sources) without
    labels: u from ``random_pairs`` random pairs, m by EM on the candidate pairs."""
    return _run(records, _comparisons(fields), right, None, candidate_threshold, random_pairs, seed,
                DEFAULT_MATCH_PROBABILITY, False).model


def match_records(records: Records, fields: str | Sequence[FieldComparison] | None = None, *,
                  right: Records | None = None, model: FellegiSunterModel | None = None,
                  threshold: float = DEFAULT_MATCH_PROBABILITY,
                  candidate_threshold: float = DEFAULT_CANDIDATE_THRESHOLD, one_to_one: bool = False,
                  random_pairs: int = DEFAULT_RANDOM_PAIRS, seed: int = 0,
                  candidates: Iterable[tuple[str, str]] | None = None) -> RecordMatches:
    """The pairs of ``records`` (or of ``records`` x ``right``) whose match probability reaches ``threshold``.

    ``fields`` (``"name:name,born:date"`` or :class:`FieldComparison` s) are the compared columns; with a trained
    ``model`` they are the model's and ``fields`` may be left out. Without a model one is trained on these
    records first (:func:`train_model`). ``one_to_one`` keeps each id in one pair at most (two sources that
    each list an entity once).

    ``candidates`` replaces the in-memory candidate search with given id pairs: the pairs a Solr ``report`` or
    ``join`` found (``idf_lsh_pairs`` over the collection's grams at a low threshold, or a pairs file read with
    ``read_pairs``). Pairs naming an id that is not among the records are left out and counted in the log."""
    if model is None and fields is None:
        raise InvalidParameterError("fields", "given when no trained model is", None)
    comparisons = model.comparisons if model is not None else _comparisons(fields or [])
    if model is not None and fields is not None and \
            [(c.field, c.kind) for c in _comparisons(fields)] != [(c.field, c.kind) for c in comparisons]:
        raise InvalidParameterError("fields", "the model's fields (or left out)", fields,
                                    f"the model compares {', '.join(f'{c.field}:{c.kind}' for c in comparisons)}")
    if not 0.0 <= threshold <= 1.0:
        raise InvalidParameterError("threshold", "a probability in [0, 1]", threshold)
    return _run(records, comparisons, right, model, candidate_threshold, random_pairs, seed, threshold, one_to_one,
                candidates)


def _given_pairs(given: Iterable[tuple[str, str]], left: _Side, other: _Side | None) -> list[tuple[int, int]]:
    """The positions of given id pairs: within ``left``, or one id in each side (in either order)."""
    left_at = {rid: i for i, rid in enumerate(left.ids)}
    right_at = left_at if other is None else {rid: j for j, rid in enumerate(other.ids)}
    out: set[tuple[int, int]] = set()
    unknown = 0
    for a, b in given:
        a, b = str(a), str(b)
        if a in left_at and b in right_at:
            i, j = left_at[a], right_at[b]
        elif b in left_at and a in right_at:
            i, j = left_at[b], right_at[a]
        else:
            unknown += 1
            continue
        if other is None:
            if i == j:
                continue
            i, j = min(i, j), max(i, j)
        out.add((i, j))
    if unknown:
        log.warning("%d given candidate pairs name an id that is not among the records: left out", unknown)
    return sorted(out)


def _run(records: Records, comparisons: list[FieldComparison], right: Records | None,
         model: FellegiSunterModel | None, candidate_threshold: float, random_pairs: int, seed: int,
         threshold: float, one_to_one: bool, given: Iterable[tuple[str, str]] | None = None) -> RecordMatches:
    started = time.perf_counter()
    builder = DocumentBuilder(IndexSettings())
    left = _Side(records, comparisons, builder, "records")
    other = _Side(right, comparisons, builder, "right") if right is not None else None
    pairs = _given_pairs(given, left, other) if given is not None else sorted(_candidates(left, other,
                                                                                          candidate_threshold))
    levels = comparison_vectors(comparisons, left.values, (other or left).values, pairs)
    log.info("%d candidate pairs%s", len(pairs), " given" if given is not None else
             f" at IDF-weighted Jaccard >= {candidate_threshold:g}")
    if model is None:
        if not pairs:
            n = len(left.ids) + (len(other.ids) if other is not None else 0)
            raise InvalidParameterError("candidate_threshold", "low enough for some pairs to train on",
                                        candidate_threshold, f"no pair of the {n} records reaches it: train on more "
                                        "records, or pass a trained model")
        sampled = random_pair_positions(len(left.ids), None if other is None else len(other.ids), random_pairs,
                                        np.random.default_rng(seed))
        random_levels = comparison_vectors(comparisons, left.values, (other or left).values, sampled)
        model = train(comparisons, levels, random_levels)
        model.training["candidate_threshold"] = candidate_threshold
        log.info("trained on %d candidates and %d random pairs: lambda %.4f, EM %d iterations",
                 len(pairs), len(sampled), model.lambda_, model.training["em_iterations"])
    probabilities = model.probabilities(levels) if pairs else np.zeros(0)
    right_ids = (other or left).ids
    scored = {(left.ids[i], right_ids[j]): float(p) for (i, j), p in zip(pairs, probabilities)}
    matched = [SimilarPair(a, b, p) for (a, b), p in scored.items() if p >= threshold]
    if one_to_one:
        matched = pick_one_to_one(matched)
    matched.sort(key=lambda p: (-p.similarity, id_sort_key(p.id), id_sort_key(p.neighbor_id)))
    return RecordMatches(matched, model, len(pairs), time.perf_counter() - started, scored)


class RecordMatcher:
    """One new record at a time against records held in memory, scored with a trained model: ``match(record)``
    gives the records it matches, best first, and ``add(record)`` keeps it for the next ones.

    The IDF weights are counted over the records given at the start (a token no record has weighs as a token of
    one record), so a match's candidates are those ``match_records`` would find with the same records."""

    def __init__(self, records: Records, model: FellegiSunterModel, *,
                 candidate_threshold: float = DEFAULT_CANDIDATE_THRESHOLD):
        self.model = model
        self.comparisons = model.comparisons
        self.candidate_threshold = candidate_threshold
        self._builder = DocumentBuilder(IndexSettings())
        side = _Side(records, self.comparisons, self._builder, "records")
        self.ids, self.values = side.ids, side.values
        self._unseen = float(np.log(max(len(side.ids), 1)))
        self._index = WeightedIndex(side.tokens, idf_weights(side.tokens))

    def __len__(self) -> int:
        return len(self.ids)


    def match(self, record: Mapping[str, object], *, threshold: float = DEFAULT_MATCH_PROBABILITY,
              limit: int | None = 10) -> list[SimilarPair]:
        """The held records ``record`` matches with probability >= ``threshold`` (its id, when it has one, as
        ``id``; each match's as ``neighbor_id``), best first, at most ``limit``."""
        values = prepare_records(self.comparisons, [record])
        tokens = candidate_tokens(self._builder, self.comparisons, values[0])
        found = self._index.query(tokens, self.candidate_threshold, unseen_weight=self._unseen)
        own = str(record.get("id", ""))
        positions = [j for j in found if self.ids[j] != own]
        if not positions:
            return []
        levels = comparison_vectors(self.comparisons, values, self.values, [(0, j) for j in positions])
        probabilities = self.model.probabilities(levels)
        matches = [SimilarPair(own, self.ids[j], float(p)) for j, p in zip(positions, probabilities) if p >= threshold]
        matches.sort(key=lambda p: (-p.similarity, id_sort_key(p.neighbor_id)))
        return matches[:limit] if limit is not None else matches

    def add(self, record: Mapping[str, object]) -> None:
        """Hold ``record`` too (it needs an ``id``), weighed with the weights counted at the start."""
        side = _Side([record], self.comparisons, self._builder, "record")
        self.ids += side.ids
        self.values += side.values
        self._index.add(side.tokens[0])
