"""Field records in a Solr collection, matched one at a time (engine/records_online.py, solr/record_model.py):
the online lookup agrees with match_records over the same records, the stored model is versioned and refused
when it does not fit, bad records are named, and check_and_add reports a matching record instead of adding it."""

from __future__ import annotations

import json
import re

import pytest

from benchmarks.persons import generate
from neardup_solr.engine.records import match_records
from neardup_solr.engine.records_online import (
    ADDED,
    ALREADY_INDEXED,
    CHECKED,
    DUPLICATE,
    MAX_CLAUSES,
    SolrRecordMatcher,
    index_field_records,
    train_stored_model,
)
from neardup_solr.errors import InvalidRecordError, RecordModelError, SettingsConflictError
from neardup_solr.pairs.evaluate import evaluate
from neardup_solr.pairs.similar_pairs import id_sort_key
from neardup_solr.signing.settings import META_DATASET, RECORD_MODEL_DOC_ID
from neardup_solr.solr.record_model import read_stored_records, store_record_model

pytestmark = pytest.mark.solr

FIELDS = "name:name,address:text,born:date,phone:code"


@pytest.fixture(scope="module")
def persons():
    return generate(900, seed=31, profile="hard")


@pytest.fixture()
def trained(solr, persons):
    rows, _ = persons
    summary = index_field_records(solr, rows, FIELDS)
    assert summary.indexed == len(rows) and summary.rejected == 0
    stored = train_stored_model(solr, seed=1)
    return stored


@pytest.fixture()
def sent(solr, monkeypatch) -> list:
    """The parameters of every /select request sent through ``solr`` from here on."""
    requests: list = []
    select = solr.select

    def recording(params):
        requests.append(params)
        return select(params)

    monkeypatch.setattr(solr, "select", recording)
    return requests


def _pair(a: str, b: str) -> tuple[str, str]:
    return (a, b) if id_sort_key(a) <= id_sort_key(b) else (b, a)


def test_online_matches_agree_with_the_batch_match(solr, persons, trained):
    rows, truth = persons
    assert trained.revision == 1 and trained.trained_on == len(rows)
    matcher = SolrRecordMatcher(solr)
    # Every candidate of every record, at probability 0 and above: the pairs match_records scores in memory.
    online: dict[tuple[str, str], float] = {}
    for row in rows:
        for m in matcher.match(row, threshold=0.0, limit=None):
            pair = _pair(row["id"], m.id)
            assert online.setdefault(pair, m.probability) == pytest.approx(m.probability, abs=1e-12)
    batch = match_records(rows, model=trained.model)
    in_memory = {_pair(a, b): p for (a, b), p in batch.probabilities.items()}
    assert len(online) > len(truth)
    # The same candidates (the IDF-weighted Jaccard over the same tokens, with the collection's frequencies)...
    assert set(online) == set(in_memory)
    # ... scored alike, so the same matches.
    assert all(online[p] == pytest.approx(in_memory[p], abs=1e-9) for p in online)
    matched = {p for p, prob in online.items() if prob >= 0.5}
    assert matched == {_pair(p.id, p.neighbor_id) for p in batch.pairs}
    found = evaluate(sorted(matched), truth)
    assert found.precision >= 0.97 and found.recall >= 0.95, found.format()


def test_the_stored_model_is_versioned_and_a_stale_write_refused(solr, persons, trained):
    matcher = SolrRecordMatcher(solr)
    assert matcher.revision == 1 and matcher.model.to_dict() == trained.model.to_dict()
    assert not matcher.refresh()
    again = train_stored_model(solr, seed=2)
    assert again.revision == 2 and again.model.training["queries"] == len(persons[0])
    assert matcher.refresh() and matcher.revision == 2
    # A write based on what was read before the retraining would overwrite it: refused.
    with pytest.raises(SettingsConflictError, match="changed while training"):
        store_record_model(solr, trained.model, trained_at="x", trained_on=1, expected=trained)
    assert read_stored_records(solr).revision == 2
    doc = solr.get_by_ids([RECORD_MODEL_DOC_ID], "id,dataset")[0]
    assert doc["dataset"] == META_DATASET  # never counted or looked up as a record
    assert solr.count(params=[("fq", f"-dataset:{META_DATASET}")]) == len(persons[0])


def test_a_model_that_does_not_fit_the_records_is_refused(solr, persons, trained):
    rows, _ = persons
    with pytest.raises(RecordModelError, match=r"compares 'email', which the records .* do not have .* "
                                               r"name:name,address:text,born:date,phone:code"):
        train_stored_model(solr, "name:name,email:code")
    # Fewer columns, or other kinds, of the indexed ones: a model of its own, stored as the next revision.
    narrow = train_stored_model(solr, "name:name,born:date")
    assert [c.field for c in narrow.model.comparisons] == ["name", "born"] and narrow.revision == 2
    assert SolrRecordMatcher(solr).match(rows[0], threshold=0.0, limit=None) is not None
    # Records with other fields are not mixed into the collection.
    with pytest.raises(SettingsConflictError, match="indexed with the fields name:name,address:text"):
        index_field_records(solr, rows[:5], "name:name,phone:code")
    # A model written by another release (another format version) is refused, saying to train again.
    stored = json.loads(solr.get_by_ids([RECORD_MODEL_DOC_ID], "content")[0]["content"])
    stored["model"]["version"] = 99
    solr.add([{"id": RECORD_MODEL_DOC_ID, "dataset": META_DATASET, "content": json.dumps(stored)}])
    solr.commit()
    with pytest.raises(RecordModelError, match="cannot be read .*model version 99.*train it again"):
        SolrRecordMatcher(solr)
    # ... and training again replaces it.
    assert train_stored_model(solr).revision == 3
    assert SolrRecordMatcher(solr).revision == 3


def test_no_model_or_no_records_is_said(solr, persons):
    with pytest.raises(RecordModelError, match="holds no field records: index them first"):
        SolrRecordMatcher(solr)
    with pytest.raises(RecordModelError, match="holds no field records"):
        train_stored_model(solr)
    index_field_records(solr, persons[0][:50], FIELDS)
    with pytest.raises(RecordModelError, match="no trained model yet"):
        SolrRecordMatcher(solr)


def test_bad_records_are_rejected_naming_the_record(solr, persons, trained, tmp_path):
    rows, _ = persons
    bad = [{"id": "b1", "name": ["Ann", "Lee"], "born": "1984-03-07"}, {"name": "No Id"},
           {"id": "b3", "phone": "", "nmae": "Typo Column"}, {"id": "b4", "name": "Ann Lee", "born": True},
           {"id": "__neardup_settings__", "name": "Ann Lee"}, {"id": "ok1", "name": "Ann Lee", "born": 1984}]
    summary = index_field_records(solr, bad, FIELDS, rejects_path=tmp_path / "rejects.jsonl")
    assert summary.indexed == 1 and summary.rejected == 5
    reasons = {(r.line, r.id): r.reason for r in summary.rejections}
    assert "field 'name' must be a text or a number, not list" in reasons[(1, "b1")]
    assert reasons[(2, None)] == "the id is missing (None)"
    assert "none of the fields name, address, born, phone has a value" in reasons[(3, "b3")]
    assert "field 'born' must be a text or a number, not bool" in reasons[(4, "b4")]
    assert "reserved" in reasons[(5, "__neardup_settings__")]
    assert len((tmp_path / "rejects.jsonl").read_text().splitlines()) == 5
    matcher = SolrRecordMatcher(solr)
    with pytest.raises(InvalidRecordError, match=r"id 'x'.*field 'phone' must be a text or a number, not dict"):
        matcher.match({"id": "x", "name": "Ann Lee", "phone": {"home": "555"}})
    with pytest.raises(InvalidRecordError, match="none of the fields name, address, born, phone has a value"):
        matcher.match({"nmae": rows[0]["name"]})
    with pytest.raises(InvalidRecordError, match="the id is missing"):
        matcher.check_and_add({"name": rows[0]["name"]})
    # A file's bad line is named by its line; the others are indexed.
    path = tmp_path / "more.jsonl"
    path.write_text(json.dumps({"id": "f1", "name": "Bo Chan", "born": "1990-01-01"}) + "\n"
                    + json.dumps({"id": "f2", "name": 42}) + "\n" + "{not json\n", encoding="utf-8")
    summary = index_field_records(solr, path, FIELDS)
    assert summary.indexed == 1 and summary.rejected == 2
    assert {r.line for r in summary.rejections} == {2, 3}


def test_check_and_add_reports_a_matching_record_instead_of_adding_it(solr, persons, trained):
    rows, truth = persons
    matcher = SolrRecordMatcher(solr)
    first, second = truth[0]
    duplicate = {**next(r for r in rows if r["id"] == second), "id": "new-1"}
    result = matcher.check_and_add(duplicate)
    assert result.status == DUPLICATE and not result.added
    assert second in {m.id for m in result.matches} and all(m.probability >= 0.5 for m in result.matches)
    assert solr.get_by_ids(["new-1"], "id") == []
    newcomer = {"id": "new-2", "name": "Quintessa Oyelaran", "address": "77 Nowhere Lane, Zed City",
                "born": "1911-11-11", "phone": "999-000-1111"}
    assert matcher.check_and_add(newcomer, add=False).status == CHECKED
    added = matcher.check_and_add(newcomer)
    assert added.status == ADDED and added.added and not added.matches
    # At once visible to the next lookup: its duplicate is now reported.
    again = matcher.check_and_add({**newcomer, "id": "new-3", "name": "Quintesa Oyelaran"})
    assert again.status == DUPLICATE and again.matches[0].id == "new-2"
    assert again.matches[0].fields["name"] == "Quintessa Oyelaran"
    # A retried check of the added record is not an error, and adds nothing.
    assert matcher.check_and_add(newcomer).status == ALREADY_INDEXED


def test_a_long_record_stays_within_the_boolean_clause_limit(solr, persons, trained, sent):
    words = [f"w{i}x{i * 7919 % 10007}" for i in range(900)]
    long_text = " ".join(words)
    index_field_records(solr, [{"id": "long-1", "name": "Ann Lee", "address": long_text}], FIELDS)
    matcher = SolrRecordMatcher(solr)
    found = matcher.match({"id": "long-2", "name": "Ann Lee", "address": " ".join(words[:-3])}, threshold=0.0)
    assert [m.id for m in found][:1] == ["long-1"]
    query = dict(sent[-1])["q"]
    assert query.count('"') // 2 == MAX_CLAUSES  # far more grams than that; the heaviest are queried


def test_only_the_rarest_tokens_are_queried(solr, persons, trained, sent):
    # The prefix: the heaviest grams, enough that a record holding none of them cannot reach the candidate bound.
    # The frequent grams (a city, a street type, a century's digits) are left out of the query, and the matches
    # stay those of the batch match (test_online_matches_agree_with_the_batch_match).
    rows, _ = persons
    matcher = SolrRecordMatcher(solr)
    record = dict(rows[0], id="new-1")
    found = matcher.match(record, threshold=0.0, limit=None)
    assert rows[0]["id"] in {m.id for m in found}
    queried = set(re.findall(r'"([^"]+)"', dict(sent[-1])["q"]))
    search = matcher._search
    tokens = search.tokens({k: v for k, v in record.items() if k != "id"})
    left_out = tokens - queried
    assert queried < tokens and left_out
    # Every left-out token is at least as frequent as every queried one, and together they weigh less than the
    # candidate bound.
    assert min(search.frequencies.get(t, 0) for t in left_out) >= max(search.frequencies.get(t, 0) for t in queried)
    total = sum(search.weight(t) for t in tokens)
    assert sum(search.weight(t) for t in left_out) < matcher.candidate_threshold * total
