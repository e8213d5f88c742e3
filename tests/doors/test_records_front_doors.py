"""Field records matched online give the same matches through every door: the command line (index-records,
train-records, match-online), Python (SolrRecordMatcher.match) and HTTP (POST /v1/match, and /v1/check with a
record), with the same probabilities; and each door refuses a bad record or a missing model in its own terms."""

from __future__ import annotations

import json

import pytest

fastapi = pytest.importorskip("fastapi", reason="the service extra is not installed (pip install '.[service]')")
from fastapi.testclient import TestClient  # noqa: E402

from benchmarks.persons import generate  # noqa: E402
from neardup_solr.cli import main  # noqa: E402
from neardup_solr.engine.records_online import SolrRecordMatcher  # noqa: E402
from neardup_solr.pairs.evaluate import evaluate  # noqa: E402
from neardup_solr.pairs.similar_pairs import id_sort_key  # noqa: E402
from neardup_solr.service import ServiceConfig, create_app  # noqa: E402

pytestmark = [pytest.mark.solr, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

FIELDS = "name:name,address:text,born:date,phone:code"


def _pair(a: str, b: str) -> tuple[str, str]:
    return (a, b) if id_sort_key(a) <= id_sort_key(b) else (b, a)


def _read_scored_pairs(path) -> dict[tuple[str, str], float]:
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            a, b, p = line.split("\t")
            out[_pair(a, b)] = float(p)
    return out


def test_cli_python_and_http_give_the_same_matches(solr, tmp_path, capsys):
    rows, truth = generate(600, seed=41, profile="hard")
    people = tmp_path / "people.jsonl"
    people.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    url = ["--solr-url", solr.url]
    assert main(["index-records", str(people), "--fields-from", FIELDS, "-q", *url]) == 0
    assert "read 600, indexed 600, rejected 0" in capsys.readouterr().out
    assert main(["train-records", *url]) == 0
    out = capsys.readouterr().out
    assert f"model revision 1 stored in {solr.url}: {FIELDS}" in out and "of 600 of 600 records" in out
    assert main(["match-online", str(people), "--out", str(tmp_path / "pairs.tsv"), *url]) == 0
    assert "from 600 records matched one at a time" in capsys.readouterr().out
    from_cli = _read_scored_pairs(tmp_path / "pairs.tsv")

    matcher = SolrRecordMatcher(solr)
    from_python: dict[tuple[str, str], float] = {}
    for row in rows:
        for m in matcher.match(row, limit=None):
            from_python[_pair(row["id"], m.id)] = m.probability

    from_http: dict[tuple[str, str], float] = {}
    with TestClient(create_app(ServiceConfig(solr_url=solr.url, jobs_dir=tmp_path / "jobs"))) as api:
        for row in rows:
            answer = api.post("/v1/match", json={"record": {k: row[k] for k in ("id", "name", "address", "born",
                                                                                   "phone")}, "limit": 10_000})
            assert answer.status_code == 200, answer.text
            body = answer.json()
            assert body["model"] == {"revision": 1} and body["query"] == {"id": row["id"]}
            for m in body["results"]:
                from_http[_pair(row["id"], m["id"])] = m["probability"]

    assert from_python and set(from_cli) == set(from_python) == set(from_http)
    for pair, p in from_python.items():
        assert from_cli[pair] == pytest.approx(p, abs=1e-6) and from_http[pair] == pytest.approx(p, abs=1e-6)
    found = evaluate(sorted(from_python), truth)
    assert found.f1 >= 0.95, found.format()


def test_http_check_with_a_record_and_its_refusals(solr, tmp_path):
    rows, truth = generate(300, seed=43, profile="hard")
    with TestClient(create_app(ServiceConfig(solr_url=solr.url, jobs_dir=tmp_path / "jobs"))) as api:
        answer = api.post("/v1/match", json={"record": {"name": "Ann Lee"}})
        assert answer.status_code == 409 and "holds no field records" in answer.json()["detail"]
        assert main(["train-records", "--solr-url", solr.url]) == 2  # nothing indexed yet: said, not crashed
        people = tmp_path / "people.jsonl"
        people.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        assert main(["index-records", str(people), "--fields-from", FIELDS, "-q", "--solr-url", solr.url]) == 0
        answer = api.post("/v1/match", json={"record": {"name": "Ann Lee"}})
        assert answer.status_code == 409 and "no trained model yet" in answer.json()["detail"]
        assert main(["train-records", "--solr-url", solr.url]) == 0

        first, second = truth[0]
        copy = {k: v for k, v in next(r for r in rows if r["id"] == second).items() if k != "text"}
        answer = api.post("/v1/check", json={"id": "c1", "record": {**copy, "id": "c1"}, "with_text": True})
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["status"] == "duplicate" and not body["added"] and body["threshold"] == 0.5
        assert second in [m["id"] for m in body["results"]] and "fields" in body["results"][0]
        newcomer = {"name": "Quintessa Oyelaran", "address": "77 Nowhere Lane, Zed City", "born": "1911-11-11"}
        answer = api.post("/v1/check", json={"id": "c2", "record": newcomer})
        assert answer.json()["status"] == "added", answer.text
        answer = api.post("/v1/match", json={"record": {**newcomer, "name": "Quintesa Oyelaran"}})
        assert [m["id"] for m in answer.json()["results"]] == ["c2"]

        # Refusals: a problem document naming the record and the field, never a 500.
        answer = api.post("/v1/match", json={"record": {"id": "r9", "nmae": "Ann Lee"}})
        assert answer.status_code == 422 and "id 'r9'" in answer.json()["detail"]
        assert "none of the fields name, address, born, phone has a value" in answer.json()["detail"]
        answer = api.post("/v1/match", json={"record": {"name": ["Ann"]}})
        assert answer.status_code == 422 and "record.name" in answer.text
        answer = api.post("/v1/check", json={"id": "c3", "text": "Ann Lee", "record": newcomer})
        assert answer.status_code == 422 and "exactly one of the two" in answer.json()["detail"]
        answer = api.post("/v1/check", json={"id": "c3", "record": {**newcomer, "id": "c4"}})
        assert answer.status_code == 422 and "record.id" in answer.json()["detail"]
        answer = api.post("/v1/match", json={"record": newcomer, "threshold": 1.5})
        assert answer.status_code == 422 and "threshold" in answer.json()["detail"]
