"""The HTTP service against a real Solr: every endpoint's answers, its refusals (JSON problems with the right
4xx, never a 500), the token, CORS, concurrent /v1/check calls over real sockets, report jobs, the upload view,
the CLI commands, and a fuzz of the whole API from its OpenAPI description."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import socket
import threading
import time
from pathlib import Path

import pytest

from netutil import free_port

fastapi = pytest.importorskip("fastapi", reason="the service extra is not installed (pip install '.[service]')")
httpx = pytest.importorskip("httpx")
schemathesis = pytest.importorskip("schemathesis")
from fastapi.testclient import TestClient  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

from neardup_solr import Indexer, IndexSettings, Searcher  # noqa: E402
from neardup_solr.solr.documents import WRITE_UP_TOKEN_FIELDS  # noqa: E402
from neardup_solr.service import ServiceConfig, create_app  # noqa: E402
from neardup_solr.solr.client import RetryPolicy, SolrClient  # noqa: E402
from neardup_solr.engine.threshold import ThresholdFinder, threshold_pairs  # noqa: E402
from repo_paths import REPO

pytestmark = [pytest.mark.solr, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

RECORDS = [
    ("1", "Arnie Morton's of Chicago 435 S. La Cienega Blvd. Los Angeles"),
    ("2", "Arnie Morton's of Chicago 435 S. La Cienega Blvd. Los Angeles"),
    ("3", "Art's Delicatessen 12224 Ventura Blvd. Studio City"),
    ("4", "Art's Deli 12224 Ventura Blvd. Studio City"),
    ("5", "Bel-Air Hotel 701 Stone Canyon Rd. Bel Air"),
    ("6", "Hotel Bel-Air 701 Stone Canyon Rd. Bel Air"),
    ("7", "Cafe Bizou 14016 Ventura Blvd. Sherman Oaks"),
]


def make_app(solr: SolrClient, tmp_path: Path, **config):
    return create_app(ServiceConfig(solr_url=solr.url, jobs_dir=tmp_path / "jobs", **config))


@pytest.fixture()
def api(solr, tmp_path):
    # Every write-up mode is looked up through the service below, minhash too: its tokens are opt-in.
    Indexer(solr, IndexSettings(fields=WRITE_UP_TOKEN_FIELDS)).index_records(RECORDS)
    with TestClient(make_app(solr, tmp_path)) as client:
        yield client


def test_a_mode_the_default_index_lacks_is_a_client_error_naming_the_fields(solr, tmp_path):
    Indexer(solr).index_records(RECORDS)
    with TestClient(make_app(solr, tmp_path)) as client:
        answer = client.post("/v1/near-dups", json={"text": RECORDS[3][1], "mode": "minhash"})
        assert 400 <= answer.status_code < 500, answer.text
        assert "--fields including minhash" in answer.text
        assert client.post("/v1/near-dups", json={"text": RECORDS[3][1], "mode": "lsh"}).status_code == 200


def assert_problem(response, status: int, *words: str) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    assert body["status"] == status and body["detail"]
    for word in words:
        assert word in body["detail"]
    assert "Traceback" not in response.text
    return body


# ----------------------------------------------------------------------------------------------- documents


def test_documents_per_record_status(api, solr):
    r = api.post("/v1/documents", json=[
        {"id": "a", "text": "first record text here"},
        {"id": "b", "text": "   ...  "},
        {"id": "bad\tid", "text": "text with a bad id"},
        {"id": 42, "text": "an integer id", "dataset": "ds1"},
        {"id": "a", "text": "first record text, second version"},
        {"id": "c", "text": "data set with a tab", "dataset": "x\ty"},
        {"id": "__neardup_settings__", "text": "reserved"},
    ])
    assert r.status_code == 200
    body = r.json()
    statuses = [(x["id"], x["status"]) for x in body["results"]]
    assert statuses == [("a", "replaced"), ("b", "rejected"), ("bad\tid", "rejected"), (42, "indexed"),
                        ("a", "indexed"), ("c", "rejected"), ("__neardup_settings__", "rejected")]
    assert (body["indexed"], body["rejected"], body["replaced"]) == (2, 4, 1)
    reasons = [x.get("reason", "") for x in body["results"]]
    assert "no words" in reasons[1] and "tab" in reasons[2] and "tab" in reasons[5] and "reserved" in reasons[6]
    assert api.get("/v1/documents/a").json()["text"] == "first record text, second version"
    assert api.get("/v1/documents/42").json()["dataset"] == "ds1"
    assert_problem(api.get("/v1/documents/b"), 404, "'b'")


def test_documents_malformed_requests_are_422(api):
    assert_problem(api.post("/v1/documents", json=[{"id": "x"}]), 422, "text")
    assert_problem(api.post("/v1/documents", json=[{"id": None, "text": "t"}]), 422, "id")
    assert_problem(api.post("/v1/documents", json=[{"id": "x", "text": ["a", "list"]}]), 422, "text")
    assert_problem(api.post("/v1/documents", json={"id": "x", "text": "not a list"}), 422)
    assert_problem(api.post("/v1/documents", content=b"{not json", headers={"content-type": "application/json"}),
                   422)
    assert_problem(api.post("/v1/documents", json=[{"id": "x", "text": "t", "extra": 1}]), 422, "extra")


def test_get_and_delete_documents(api):
    doc = api.get("/v1/documents/3").json()
    assert doc == {"id": "3", "text": RECORDS[2][1], "dataset": None, "num_words": 8, "md5_hash": doc["md5_hash"]}
    assert api.delete("/v1/documents/3").json() == {"deleted": 1, "deleted_ids": ["3"]}
    assert_problem(api.get("/v1/documents/3"), 404)
    assert_problem(api.delete("/v1/documents/3"), 404)
    assert_problem(api.get("/v1/documents/__neardup_settings__"), 404)
    r = api.post("/v1/documents/delete", json={"ids": ["1", "2", "nope"]}).json()
    assert r == {"deleted": 2, "deleted_ids": ["1", "2"], "missing": ["nope"]}
    api.post("/v1/documents", json=[{"id": "d1", "text": "one in a data set", "dataset": "side"},
                                     {"id": "d2", "text": "two in a data set", "dataset": "side"}])
    assert api.post("/v1/documents/delete", json={"dataset": "side"}).json() == {"dataset": "side", "deleted": 2}
    assert_problem(api.get("/v1/documents/d1"), 404)
    assert_problem(api.post("/v1/documents/delete", json={}), 422, "not both and not neither")
    assert_problem(api.post("/v1/documents/delete", json={"ids": ["a"], "dataset": "b"}), 422)
    assert_problem(api.post("/v1/documents/delete", json={"ids": ["a\nb"]}), 422, "newline")


def test_ids_with_slashes_and_spaces(api):
    api.post("/v1/documents", json=[{"id": "a/b c:ü", "text": "Art's Deli 12224 Ventura Blvd. Studio City CA"}])
    assert api.get("/v1/documents/a%2Fb%20c%3A%C3%BC").json()["id"] == "a/b c:ü"
    near = api.get("/v1/documents/a%2Fb%20c%3A%C3%BC/near-dups", params={"mode": "lsh"}).json()
    assert near["query"] == {"id": "a/b c:ü"} and "4" in [m["id"] for m in near["results"]]


# ----------------------------------------------------------------------------------------------- lookups


def test_near_dups_of_id_every_mode(api):
    for mode in ("shingles", "minhash"):
        # J(3, 4) = 0.3, under the collection's threshold (0.8) that lookups apply unless told otherwise.
        assert api.get("/v1/documents/3/near-dups", params={"mode": mode}).json()["results"] == []
        body = api.get("/v1/documents/3/near-dups", params={"mode": mode, "max_edit_distance": 2,
                                                             "min_jaccard": 0.2}).json()
        assert [m["id"] for m in body["results"]] == ["4"], mode
        assert body["results"][0]["edit_distance"] == 1 and not body["results"][0]["exact"]
    # J(3, 4) = 0.3: far below the bands' 0.8, so LSH (rightly) does not offer it; the exact copy it does.
    assert api.get("/v1/documents/3/near-dups", params={"mode": "lsh"}).json()["results"] == []
    lsh = api.get("/v1/documents/2/near-dups", params={"mode": "lsh"}).json()
    assert lsh["results"] == [{"id": "1", "similarity": 1.0, "edit_distance": 0, "exact": True}]
    exact = api.get("/v1/documents/1/near-dups").json()["results"]
    assert exact == [{"id": "2", "similarity": 1.0, "edit_distance": 0, "exact": True}]
    by_threshold = api.get("/v1/documents/5/near-dups", params={"threshold": 0.3}).json()
    assert by_threshold["options"] == {"threshold": 0.3, "similarity": "jaccard"}
    assert [m["id"] for m in by_threshold["results"]] == ["6"]
    assert_problem(api.get("/v1/documents/nope/near-dups"), 404)


def test_near_dups_of_text_defaults_and_options(api):
    text = "Famous Art's Deli 12224 Ventura Blvd. Studio City"  # one extra leading word
    lsh = api.post("/v1/near-dups", json={"text": text, "mode": "lsh"}).json()
    assert lsh["options"]["first_word_filter"] is False  # honest defaults: no filter, no caps
    assert lsh["options"]["max_edit_distance"] is None and lsh["options"]["rows"] is None
    assert [m["id"] for m in lsh["results"]][:1] == ["4"]
    shingles = api.post("/v1/near-dups", json={"text": text}).json()
    assert shingles["options"]["first_word_filter"] is False and shingles["results"][0]["id"] == "4"
    # The write-up's filter, asked for by name, misses the copy with an extra leading word.
    filtered = api.post("/v1/near-dups", json={"text": text, "first_word_filter": True}).json()
    assert filtered["results"] == []
    threshold = api.post("/v1/near-dups", json={"text": text, "threshold": 0.4, "with_text": True}).json()
    assert threshold["results"][0] == {"id": "4", "similarity": pytest.approx(6 / 7, abs=1e-6), "edit_distance": 1,
                                       "exact": False, "text": RECORDS[3][1]}
    sims = [m["similarity"] for m in threshold["results"]]
    assert sims == sorted(sims, reverse=True) and min(sims) >= 0.4
    idf = api.post("/v1/near-dups", json={"text": text, "threshold": 0.3, "similarity": "idf"}).json()
    assert {"3", "4"} <= {m["id"] for m in idf["results"]}
    share = api.post("/v1/near-dups", json={"text": RECORDS[2][1], "min_share": 0.5}).json()
    assert [m["id"] for m in share["results"]] == ["3", "4"]  # 4 holds 3 of 3's 6 shingles
    minhash = api.post("/v1/near-dups", json={"text": RECORDS[3][1], "mode": "minhash", "num_hashes": 64,
                                              "min_jaccard": 0.2}).json()
    assert [m["id"] for m in minhash["results"]] == ["4", "3"]


@pytest.mark.parametrize("body, status, word", [
    ({"text": "x y z", "threshold": 0.5, "rows": 5}, 422, "rows"),
    ({"text": "x y z", "similarity": "idf"}, 422, "similarity"),
    ({"text": "x y z", "num_hashes": 8}, 422, "num_hashes"),
    ({"text": "x y z", "min_share": 0.5, "mode": "lsh"}, 422, "mode"),
    ({"text": "x y z", "threshold": 1.5}, 422, "threshold"),
    ({"text": "x y z", "threshold": 0}, 422, "threshold"),
    ({"text": "x y z", "rows": 0}, 422, "rows"),
    ({"text": "x y z", "rows": 10**12}, 422, "rows"),
    ({"text": "x y z", "rows": 2.5}, 422, "rows"),
    ({"text": "x y z", "max_edit_distance": -2}, 422, "max_edit_distance"),
    ({"text": "x y z", "max_edit_distance": -1}, 422, "max_edit_distance"),
    ({"text": "x y z", "min_jaccard": 2}, 422, "min_jaccard"),
    ({"text": "x y z", "mode": "fuzzy"}, 422, "mode"),
    ({"text": "x y z", "first_word_filter": "yes"}, 422, "first_word_filter"),
    ({"text": "x y z", "treshold": 0.5}, 422, "treshold"),
    ({"text": ""}, 422, "no words"),
    ({"text": " !!! "}, 422, "no words"),
    ({"text": 5}, 422, "text"),
    ({}, 422, "text"),
    ({"text": "x y z", "mode": "minhash", "num_hashes": 4096}, 400, "128"),
])
def test_near_dups_refusals(api, body, status, word):
    assert_problem(api.post("/v1/near-dups", json=body), status, word)


def test_nan_and_infinity_are_refused(api):
    for raw in (b'{"text": "a b c", "threshold": NaN}', b'{"text": "a b c", "min_jaccard": Infinity}'):
        assert_problem(api.post("/v1/near-dups", content=raw, headers={"content-type": "application/json"}), 422)
    assert_problem(api.get("/v1/documents/3/near-dups", params={"threshold": "nan"}), 422, "threshold")
    assert_problem(api.get("/v1/documents/3/near-dups", params={"rows": "ten"}), 422, "rows")


# ----------------------------------------------------------------------------------------------- check


def test_check_adds_only_new_texts(api, solr):
    new = api.post("/v1/check", json={"id": "n1", "text": "Patina 5955 Melrose Ave. Los Angeles", "threshold": 0.5})
    assert new.json() == {"id": "n1", "added": True, "status": "added", "threshold": 0.5, "results": []}
    assert api.get("/v1/documents/n1").status_code == 200
    dup = api.post("/v1/check", json={"id": "n2", "text": "Famous Art's Deli 12224 Ventura Blvd. Studio City",
                                      "threshold": 0.5}).json()
    assert dup["added"] is False and dup["status"] == "duplicate" and dup["results"][0]["id"] == "4"
    assert_problem(api.get("/v1/documents/n2"), 404)
    only = api.post("/v1/check", json={"id": "n3", "text": "Spago 1114 Horn Ave. West Hollywood", "add": False})
    assert only.json()["status"] == "checked" and only.json()["threshold"] == 0.8
    assert_problem(api.get("/v1/documents/n3"), 404)
    assert_problem(api.post("/v1/check", json={"id": "3", "text": "a different text entirely, about nothing"}),
                   409, "already holds")
    assert_problem(api.post("/v1/check", json={"id": "n4", "text": "x", "threshold": -1}), 422, "threshold")
    assert_problem(api.post("/v1/check", json={"text": "no id here"}), 422, "id")


def test_check_is_strict_by_default_and_can_be_turned_off(solr, tmp_path, monkeypatch):
    """/v1/check takes band locks and soft-commits its add unless the request or the service says otherwise."""
    from neardup_solr.service.routers import lookups as routes

    passed: list[bool] = []
    real = routes.check_and_add

    def spy(*args, **kwargs):
        passed.append(kwargs["strict"])
        return real(*args, **kwargs)

    monkeypatch.setattr(routes, "check_and_add", spy)
    with TestClient(make_app(solr, tmp_path)) as client:
        added = client.post("/v1/check", json={"id": "s1", "text": "Patina 5955 Melrose Ave. Los Angeles"}).json()
        assert added["added"] is True
        # Soft-committed before the answer: every searcher shows it at once, other processes' lookups included.
        assert solr.count("{!term f=id v=$i}", params=[("i", "s1")]) == 1
        loose = client.post("/v1/check", json={"id": "s2", "text": "Spago 1114 Horn Ave. West Hollywood",
                                               "strict": False}).json()
        assert loose["added"] is True
        assert_problem(client.post("/v1/check", json={"id": "s3", "record": {"name": "x"}, "strict": True}),
                       422, "strict")
        assert_problem(client.post("/v1/check", json={"id": "s3", "text": "x y z", "strict": "yes"}), 422, "strict")
    with TestClient(make_app(solr, tmp_path, check_strict=False)) as client:
        client.post("/v1/check", json={"id": "s4", "text": "Cafe Bizou 14016 Ventura Blvd. Sherman Oaks"})
        client.post("/v1/check", json={"id": "s5", "text": "Citrus 6703 Melrose Ave. Los Angeles", "strict": True})
    assert passed == [True, False, False, True]


def test_check_strict_setting_from_environment_then_config_file_then_default(monkeypatch, tmp_path):
    from neardup_solr.errors import InvalidParameterError

    monkeypatch.delenv("NEARDUP_SERVICE_CHECK_STRICT", raising=False)
    monkeypatch.setenv("NEARDUP_CONFIG", str(tmp_path / "absent.ini"))
    assert ServiceConfig.load().check_strict is True
    config = tmp_path / "config.ini"
    config.write_text("[service]\ncheck_strict = off\n")
    monkeypatch.setenv("NEARDUP_CONFIG", str(config))
    assert ServiceConfig.load().check_strict is False
    monkeypatch.setenv("NEARDUP_SERVICE_CHECK_STRICT", "TRUE")
    assert ServiceConfig.load().check_strict is True
    assert ServiceConfig.load(check_strict=False).check_strict is False
    monkeypatch.setenv("NEARDUP_SERVICE_CHECK_STRICT", "sometimes")
    with pytest.raises(InvalidParameterError, match="NEARDUP_SERVICE_CHECK_STRICT"):
        ServiceConfig.load()


@contextlib.contextmanager
def serving(app):
    """An app under uvicorn on a free 127.0.0.1 port, in a thread: real sockets, real concurrency."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture()
def live_server(solr, tmp_path):
    Indexer(solr).index_records(RECORDS)
    with serving(make_app(solr, tmp_path)) as url:
        yield url


def test_concurrent_identical_checks_add_once(live_server, solr):
    text = "Chinois on Main 2709 Main St. Santa Monica, the same text sent by ten clients at once"
    barrier = threading.Barrier(10)
    answers = []

    def call(n: int) -> None:
        with httpx.Client(base_url=live_server, timeout=60) as http:
            barrier.wait()
            answers.append(http.post("/v1/check", json={"id": f"c{n}", "text": text, "threshold": 0.8}).json())

    threads = [threading.Thread(target=call, args=(n,)) for n in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    added = [a["id"] for a in answers if a["added"]]
    assert len(added) == 1, answers
    assert all(a["results"][0]["id"] == added[0] for a in answers if not a["added"])
    solr.commit()  # the service's adds carry commitWithin: this test process sees them once they are committed
    found = solr.select([("q", "{!term f=md5_hash v=$h}"), ("h", Searcher(solr).get_by_id(added[0]).md5_hash),
                         ("fl", "id")])["response"]["docs"]
    assert [d["id"] for d in found] == added


# ----------------------------------------------------------------------------------------------- reports


def wait_for_job(api, job: str, seconds: float = 120) -> dict:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        state = api.get(f"/v1/reports/{job}").json()
        if state["status"] in ("done", "failed"):
            return state
        time.sleep(0.2)
    raise AssertionError(f"job {job} did not finish: {state}")


def test_threshold_report_job_matches_the_library(api, solr):
    started = api.post("/v1/reports", json={"threshold": 0.5})
    assert started.status_code == 202
    job = started.json()["job"]
    state = wait_for_job(api, job)
    assert state["status"] == "done" and state["done"] == state["total"] == len(RECORDS)
    expected = threshold_pairs(ThresholdFinder(Searcher(solr), threshold=0.5))
    tsv = api.get(f"/v1/reports/{job}/pairs.tsv").text.splitlines()
    assert tsv[0].startswith("# id\tneighbor_id\tsimilarity")
    assert [tuple(line.split("\t")[:2]) for line in tsv[2:]] == [(p.id, p.neighbor_id) for p in expected]
    lines = [json.loads(x) for x in api.get(f"/v1/reports/{job}/pairs.jsonl").text.splitlines()]
    assert [(x["id"], x["neighbor_id"]) for x in lines] == [(p.id, p.neighbor_id) for p in expected]
    assert all(isinstance(x["similarity"], float) for x in lines) and state["pairs"] == len(expected)


def test_lookup_and_lsh_report_jobs(api):
    lookup = wait_for_job(api, api.post("/v1/reports", json={"writeup_ranking": True, "mode": "shingles"})
                          .json()["job"])
    assert lookup["status"] == "done"
    pairs = {tuple(x.split("\t")[:2]) for x in
             [row for row in api.get(f"/v1/reports/{lookup['job']}/pairs.tsv").text.splitlines() if not row.startswith("#")]}
    assert ("1", "2") in pairs and ("3", "4") in pairs
    lsh = wait_for_job(api, api.post("/v1/reports", json={"threshold": 0.9, "method": "lsh"}).json()["job"])
    assert lsh["status"] == "done"
    assert [json.loads(x)["neighbor_id"] for x in
            api.get(f"/v1/reports/{lsh['job']}/pairs.jsonl").text.splitlines()] == ["2"]


def test_report_refusals(api):
    assert_problem(api.post("/v1/reports", json={"threshold": 0.5, "rows": 3}), 422, "rows")
    assert_problem(api.post("/v1/reports", json={"writeup_ranking": True, "method": "lsh"}), 422, "method")
    assert_problem(api.post("/v1/reports", json={"writeup_ranking": True, "split_bucket": 20}), 422, "split_bucket")
    # The write-up's lookup report is asked for by name; its options alone do not imply it (issue 47).
    assert_problem(api.post("/v1/reports", json={"mode": "lsh"}), 422, "mode", "writeup_ranking")
    assert_problem(api.post("/v1/reports", json={"similarity": "idf"}), 422, "threshold")
    assert_problem(api.post("/v1/reports", json={"threshold": 0.5, "method": "lsh", "split_bucket": 1}), 422,
                   "split_bucket")
    assert_problem(api.post("/v1/reports", json={"workers": 0}), 422, "workers")
    assert_problem(api.get("/v1/reports/0123"), 404)
    assert_problem(api.get("/v1/reports/../../etc/passwd"), 404)
    assert_problem(api.get("/v1/reports/" + "a" * 32 + "/pairs.tsv"), 404)


# ----------------------------------------------------------------------------------------------- security


def test_token_required_except_health_and_never_logged(solr, tmp_path, caplog):
    token = "s3cret-token-value"
    caplog.set_level(logging.DEBUG)
    with TestClient(make_app(solr, tmp_path, token=token)) as client:
        assert client.get("/health").json() == {"status": "ok"}
        for method, path in (("GET", "/v1/documents/1"), ("GET", "/openapi.json"), ("GET", "/"),
                             ("POST", "/v1/near-dups"), ("GET", "/metrics")):
            r = client.request(method, path, json={"text": "a b c"})
            assert_problem(r, 401, "bearer token")
            assert r.headers["www-authenticate"] == "Bearer"
        assert_problem(client.get("/ready", headers={"Authorization": "Bearer wrong"}), 401)
        ok = client.post("/v1/near-dups", json={"text": "a b c"}, headers={"Authorization": f"Bearer {token}"})
        assert ok.status_code == 200
        assert client.post("/login", data={"token": "nope"}, follow_redirects=False).status_code == 401
        signed = client.post("/login", data={"token": token}, follow_redirects=False)
        assert signed.status_code == 303 and "httponly" in signed.headers["set-cookie"].lower()
        assert client.get("/").status_code == 200  # the cookie now stands for the token
    assert token not in caplog.text
    assert token not in repr(ServiceConfig(token=token))


def test_token_from_environment_and_config_file(monkeypatch, tmp_path):
    monkeypatch.setenv("NEARDUP_SERVICE_TOKEN", "from-env")
    assert ServiceConfig.load().token == "from-env"
    monkeypatch.delenv("NEARDUP_SERVICE_TOKEN")
    config = tmp_path / "config.ini"
    config.write_text("[service]\ntoken = from-file\ncors_origins = https://a.example, https://b.example\n")
    monkeypatch.setenv("NEARDUP_CONFIG", str(config))
    loaded = ServiceConfig.load()
    assert loaded.token == "from-file" and loaded.cors_origins == ["https://a.example", "https://b.example"]


def test_integer_settings_from_environment_then_config_file_then_default(monkeypatch, tmp_path):
    from neardup_solr.errors import InvalidParameterError

    monkeypatch.delenv("NEARDUP_SERVICE_CHECK_COMMIT_MS", raising=False)
    monkeypatch.delenv("NEARDUP_SERVICE_MAX_BODY_BYTES", raising=False)
    monkeypatch.setenv("NEARDUP_CONFIG", str(tmp_path / "absent.ini"))
    assert ServiceConfig.load().check_commit_ms == 1000
    config = tmp_path / "config.ini"
    config.write_text("[service]\ncheck_commit_ms = 250\nmax_body_bytes = 4096\n")
    monkeypatch.setenv("NEARDUP_CONFIG", str(config))
    loaded = ServiceConfig.load()
    assert (loaded.check_commit_ms, loaded.max_body_bytes) == (250, 4096)
    monkeypatch.setenv("NEARDUP_SERVICE_CHECK_COMMIT_MS", "0")
    assert ServiceConfig.load().check_commit_ms == 0
    monkeypatch.setenv("NEARDUP_SERVICE_CHECK_COMMIT_MS", "-5")
    with pytest.raises(InvalidParameterError, match="NEARDUP_SERVICE_CHECK_COMMIT_MS"):
        ServiceConfig.load()
    monkeypatch.delenv("NEARDUP_SERVICE_CHECK_COMMIT_MS")
    config.write_text("[service]\ncheck_commit_ms = soon\n")
    with pytest.raises(InvalidParameterError, match="check_commit_ms in the \\[service\\] section"):
        ServiceConfig.load()


def test_cors_off_by_default_and_cross_origin_writes_refused(solr, tmp_path):
    with TestClient(make_app(solr, tmp_path)) as client:
        r = client.get("/health", headers={"Origin": "https://elsewhere.example"})
        assert "access-control-allow-origin" not in r.headers
        assert_problem(client.post("/v1/documents/delete", json={"dataset": "x"},
                                   headers={"Origin": "https://elsewhere.example"}), 403, "cross-origin")
        same = client.post("/v1/near-dups", json={"text": "a b c"}, headers={"Origin": "http://testserver"})
        assert same.status_code == 200
    with TestClient(make_app(solr, tmp_path, cors_origins=["https://app.example"])) as client:
        r = client.get("/health", headers={"Origin": "https://app.example"})
        assert r.headers["access-control-allow-origin"] == "https://app.example"
        assert client.post("/v1/near-dups", json={"text": "a b c"},
                           headers={"Origin": "https://app.example"}).status_code == 200


def test_body_limit_is_413(solr, tmp_path):
    with TestClient(make_app(solr, tmp_path, max_body_bytes=2048)) as client:
        assert_problem(client.post("/v1/near-dups", json={"text": "word " * 1000}), 413, "limit")


def chunked_post(base_url: str, path: str, body: bytes, chunk: int = 512) -> tuple[int, dict]:
    """POST ``body`` with ``Transfer-Encoding: chunked`` and no Content-Length, over a raw socket."""
    host, port = base_url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
                     "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n".encode())
        try:
            for start in range(0, len(body), chunk):
                piece = body[start:start + chunk]
                sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
            sock.sendall(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and closed before the rest was sent: what a limit should do
        reply = b""
        while chunk_in := sock.recv(65536):
            reply += chunk_in
    head, _, payload = reply.partition(b"\r\n\r\n")
    status = int(head.split()[1])
    if b"transfer-encoding: chunked" in head.lower():
        decoded, rest = b"", payload
        while rest:
            size_line, _, rest = rest.partition(b"\r\n")
            size = int(size_line, 16)
            if size == 0:
                break
            decoded, rest = decoded + rest[:size], rest[size + 2:]
        payload = decoded
    return status, json.loads(payload)


def test_body_limit_holds_for_chunked_bodies(solr, tmp_path):
    """No Content-Length to check up front: the limit is counted while the body streams in."""
    Indexer(solr).index_records(RECORDS)
    with serving(make_app(solr, tmp_path, max_body_bytes=4096)) as url:
        status, small = chunked_post(url, "/v1/near-dups", json.dumps({"text": RECORDS[2][1]}).encode())
        assert status == 200 and small["results"][0]["id"] in {"3", "4"}
        # 100 kB: over the limit, and within what the service reads and discards before it answers (1 MiB), so
        # its close after the 413 is clean, not a reset that could discard the answer before the client reads it.
        big = json.dumps({"text": "word " * 20_000}).encode()
        status, problem_doc = chunked_post(url, "/v1/near-dups", big)
        assert status == 413 and problem_doc["status"] == 413
        assert "limit of 4,096 bytes" in problem_doc["detail"] and "smaller parts" in problem_doc["detail"]
        status, listed = chunked_post(url, "/v1/documents", json.dumps(
            [{"id": f"big{i}", "text": "word " * 100} for i in range(20)]).encode())
        assert status == 413
        assert solr.get_by_ids(["big0"]) == []  # nothing of the refused request was indexed


def test_solr_away_is_503_with_retry_after(tmp_path):
    client = SolrClient(f"http://127.0.0.1:{free_port()}/solr/neardup", retry=RetryPolicy(max_wait=0))
    app = create_app(ServiceConfig(jobs_dir=tmp_path), client=client)
    with TestClient(app) as http:
        assert http.get("/health").status_code == 200
        r = http.post("/v1/near-dups", json={"text": "a b c"})
        assert_problem(r, 503, "not answering")
        assert r.headers["retry-after"]
        assert_problem(http.get("/ready"), 503, "not ready")
        metrics = http.get("/metrics").text
    assert 'neardup_solr_errors_total{kind="SolrUnavailableError"}' in metrics
    assert 'route="/v1/near-dups",status="503"' in metrics


def test_metrics_count_requests(api):
    api.get("/v1/documents/3")
    api.get("/v1/documents/nope")
    text = api.get("/metrics").text
    assert 'neardup_requests_total{method="GET",route="/v1/documents/{doc_id:path}",status="200"} 1' in text
    assert 'neardup_requests_total{method="GET",route="/v1/documents/{doc_id:path}",status="404"} 1' in text
    assert 'neardup_request_duration_seconds_count{route="/v1/documents/{doc_id:path}"} 2' in text


def test_openapi_and_docs(api):
    spec = api.get("/openapi.json").json()
    for path in ("/v1/documents", "/v1/documents/{doc_id}", "/v1/documents/{doc_id}/near-dups", "/v1/near-dups",
                 "/v1/check", "/v1/documents/delete", "/v1/reports", "/v1/reports/{job}", "/health", "/ready"):
        assert path in spec["paths"], path
    assert "swagger" in api.get("/docs").text.lower()


# ----------------------------------------------------------------------------------------------- web upload


def test_upload_view_indexes_a_file_and_shows_progress(api, solr):
    data = "u1 Water Grill 544 S. Grand Ave. Los Angeles\nu2\nu3 Valentino 3115 Pico Blvd. Santa Monica\n"
    r = api.post("/upload", files={"file": ("guide.txt", io.BytesIO(data.encode()), "text/plain")},
                 data={"format": "lines", "dataset": "guide"}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].startswith("/upload/")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        page = api.get(r.headers["location"]).text
        if "status: <strong>done" in page:
            break
        assert "refresh" in page  # a running job's page refreshes itself
        time.sleep(0.2)
    assert "indexed 2, rejected 1" in page and "3 of 3 lines" in page
    assert api.get("/v1/documents/u3").json()["dataset"] == "guide"
    bad = api.post("/upload", files={"file": ("x.txt", io.BytesIO(b"a b"), "text/plain")},
                   data={"dataset": "a\tb"})
    assert bad.status_code == 422 and "tab" in bad.text


# ----------------------------------------------------------------------------------------------- CLI


def run_cli(module, argv: list[str]) -> int:
    from neardup_solr.cli.common import Parser

    parser = Parser(prog="neardup-solr")
    parser.add_argument("-v", "--verbose", action="count", default=0)
    module.register(parser.add_subparsers(dest="command", required=True, parser_class=Parser))
    args = parser.parse_args(argv)
    return int(args.func(args))


def test_cli_delete(solr, capsys):
    from neardup_solr.cli import delete_cmd

    Indexer(solr).index_records(RECORDS)
    Indexer(solr, dataset="side").index_records([("s1", "side one text"), ("s2", "side two text")])
    assert run_cli(delete_cmd, ["delete", "1", "nope", "--solr-url", solr.url]) == 1
    out = capsys.readouterr().out
    assert "deleted 1 document" in out and "not found: nope" in out
    assert run_cli(delete_cmd, ["delete", "--dataset", "side", "--solr-url", solr.url, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"dataset": "side", "deleted": 2}
    assert sorted(d["id"] for d in solr.select([("q", "*:*"), ("fl", "id"), ("rows", 100)])["response"]["docs"]
                  if not d["id"].startswith("__")) == ["2", "3", "4", "5", "6", "7"]
    with pytest.raises(SystemExit) as exc:
        run_cli(delete_cmd, ["delete", "--dataset", "a\tb"])
    assert exc.value.code == 2
    from neardup_solr.errors import UsageError

    with pytest.raises(UsageError):
        run_cli(delete_cmd, ["delete", "1", "--dataset", "x", "--solr-url", solr.url])


def test_cli_serve_answers(solr, tmp_path):
    """``serve`` as a user runs it: a subprocess on a free port, then /health and a lookup over HTTP."""
    import os
    import subprocess
    import sys

    Indexer(solr).index_records(RECORDS)
    port = free_port()
    code = ("import sys; from neardup_solr.cli import serve_cmd; from neardup_solr.cli.common import Parser; "
            "p = Parser(prog='neardup-solr'); p.add_argument('-v', dest='verbose', action='count', default=0); "
            "serve_cmd.register(p.add_subparsers(dest='command', parser_class=Parser)); "
            "a = p.parse_args(sys.argv[1:]); sys.exit(a.func(a))")
    env = {**os.environ, "NEARDUP_SERVICE_JOBS_DIR": str(tmp_path / "jobs")}
    proc = subprocess.Popen([sys.executable, "-c", code, "serve", "--port", str(port), "--solr-url", solr.url],
                            cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        r = httpx.post(f"http://127.0.0.1:{port}/v1/near-dups", json={"text": RECORDS[3][1], "threshold": 0.5})
        assert [m["id"] for m in r.json()["results"]] == ["4"]
        listening = subprocess.run(["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True).stdout
        assert [line.split()[3] for line in listening.splitlines()] == [f"127.0.0.1:{port}"]
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=30)
    assert f"http://127.0.0.1:{port}/" in out


# ----------------------------------------------------------------------------------------------- fuzz


def test_fuzz_api_never_500(solr, tmp_path):
    """Inputs generated by schemathesis from the OpenAPI description, valid and not, for every operation: no
    answer is a server error. (A loop over the operations rather than schemathesis' pytest plugin, whose
    fixture loader does not run under this pytest.)"""
    from hypothesis import given
    from hypothesis.errors import Unsatisfiable

    Indexer(solr).index_records(RECORDS)
    schema = schemathesis.openapi.from_asgi("/openapi.json", make_app(solr, tmp_path))
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 12
    calls = {"count": 0}
    from schemathesis import GenerationMode

    for operation, mode in [(op, mode) for op in operations for mode in GenerationMode]:
        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(max_examples=FUZZ_EXAMPLES, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        def no_server_error(case):
            response = case.call()
            calls["count"] += 1
            assert response.status_code < 500, (case.method, case.formatted_path, case.body, response.text)

        try:
            no_server_error()
        except Unsatisfiable:
            # Some operations have no invalid input to generate: no parameters (/health), or only a free string.
            assert mode == GenerationMode.NEGATIVE
    assert calls["count"] >= len(operations)
    print(f"fuzz: {calls['count']} calls over {len(operations)} operations, positive and negative inputs, no 5xx")


FUZZ_EXAMPLES = 40
