"""The front doors agree: for each kind of request and a grid of options, the command line's file, the
service's answer and the Python API's result hold the same pairs (same ids, same similarities), against a
real Solr holding the restaurant guides (Fodor's and Zagat's, 864 records with 112 known duplicate pairs).

The options come from one place (neardup_solr.options) and the pair-finding engine is chosen in one place
(neardup_solr.engine.find); these tests are what shows that the doors really go through them.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi")

from fastapi.testclient import TestClient  # noqa: E402

from neardup_solr import Indexer, IndexSettings, Searcher  # noqa: E402
from neardup_solr.cli import main  # noqa: E402
from neardup_solr.engine.find import find_cross_pairs, find_pairs, run_report  # noqa: E402
from neardup_solr.engine.report import report_near_dups  # noqa: E402
from neardup_solr.io import restaurants  # noqa: E402
from neardup_solr.options import (  # noqa: E402
    JoinOptions,
    LookupOptions,
    LookupReportOptions,
    ThresholdOptions,
    lookup_from_given,
)
from neardup_solr.service import ServiceConfig, create_app  # noqa: E402
from neardup_solr.solr.documents import WRITE_UP_TOKEN_FIELDS  # noqa: E402

pytestmark = [pytest.mark.solr, pytest.mark.filterwarnings("ignore::DeprecationWarning")]


@pytest.fixture(scope="module")
def guides(solr_url, tmp_path_factory):
    """Both guides indexed (with the grams tokens the record recipe needs): Fodor's as data set 'fodors',
    Zagat's as 'zagats'; and Fodor's as a file to join against Zagat's."""
    from neardup_solr.solr.client import SolrClient

    client = SolrClient(solr_url)
    client.delete_all()
    fodors, zagats = restaurants._read_guides(restaurants.fodors_path(), restaurants.zagats_path())
    settings = IndexSettings(fields=(*WRITE_UP_TOKEN_FIELDS, "grams"))
    Indexer(client, settings, dataset="fodors").index_records([(str(i), t) for i, t in fodors])
    Indexer(client, settings, dataset="zagats").index_records([(str(i), t) for i, t in zagats])
    left = tmp_path_factory.mktemp("join") / "fodors.tsv"
    left.write_text("".join(f"f{i}\t{t}\n" for i, t in fodors), encoding="utf-8")
    return client, left


@pytest.fixture(scope="module")
def service(guides, tmp_path_factory):
    client, _ = guides
    app = create_app(ServiceConfig(solr_url=client.url, jobs_dir=tmp_path_factory.mktemp("jobs")))
    with TestClient(app) as http:
        yield http


def read_pairs_file(text: str) -> list[tuple[str, ...]]:
    return sorted(tuple(line.split("\t")) for line in text.splitlines() if line and not line.startswith("#"))


def cli_file(args: list[str], solr_url: str, out: Path) -> list[tuple[str, ...]]:
    assert main([*args, "--out", str(out), "--solr-url", solr_url, "-q"]) == 0
    return read_pairs_file(out.read_text(encoding="utf-8"))


def service_report(http: TestClient, body: dict) -> list[tuple[str, ...]]:
    response = http.post("/v1/reports", json=body)
    assert response.status_code == 202, response.text
    job = response.json()["job"]
    deadline = time.monotonic() + 180
    while True:
        state = http.get(f"/v1/reports/{job}").json()
        if state["status"] in ("done", "failed"):
            break
        assert time.monotonic() < deadline, state
        time.sleep(0.1)
    assert state["status"] == "done", state
    params = state["params"]
    if params["kind"] == "lookups":  # the options by their keys, and the edit distance by its older name too
        assert params["max_distance"] == params["max_edit_distance"]
        assert all(params[k] == v for k, v in body.items() if k not in ("start_id", "end_id", "writeup_ranking"))
    return read_pairs_file(http.get(f"/v1/reports/{job}/pairs.tsv").text)


def flags(options: dict) -> list[str]:
    out = []
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            out.append(flag)
        elif value is False:
            out.append("--no-" + key.replace("_", "-"))
        else:
            out += [flag, str(value)]
    return out


THRESHOLD_GRID = [
    {},  # every door: the collection's threshold (0.8 here, ThresholdOptions' default too), by the exact method
    {"method": "lsh"},
    {"threshold": 0.5},
    {"threshold": 0.5, "method": "lsh"},
    {"threshold": 0.6, "method": "lsh", "split_bucket": 50},
    {"threshold": 0.5, "similarity": "idf"},
    {"threshold": 0.5, "similarity": "idf", "method": "lsh"},
    {"threshold": 0.37, "similarity": "idf", "idf_tokens": "grams"},
    {"threshold": 0.37, "similarity": "idf", "idf_tokens": "grams", "method": "lsh"},
    {"threshold": 0.3, "dataset": "zagats"},
]


@pytest.mark.parametrize("options", THRESHOLD_GRID, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()))
def test_a_threshold_report_is_the_same_through_every_door(guides, service, solr_url, tmp_path, options):
    client, _ = guides
    api = find_pairs(client, ThresholdOptions(**options), out=tmp_path / "api.tsv")
    api_pairs = read_pairs_file((tmp_path / "api.tsv").read_text(encoding="utf-8"))
    assert api_pairs == sorted((p.id, p.neighbor_id, f"{p.similarity:.6f}") for p in api.pairs)
    assert api_pairs, "the grid should ask questions that have answers"
    report = run_report(client, ThresholdOptions(**options), tmp_path / "report.tsv")
    assert report.pairs == len(api_pairs)
    assert read_pairs_file((tmp_path / "report.tsv").read_text(encoding="utf-8")) == api_pairs
    # One rule for the files: the pairs always at OUT, and beside them the IDF snapshot a weighted LSH run used.
    signed = (options.get("similarity"), options.get("method")) == ("idf", "lsh")
    assert api.snapshot == (tmp_path / "api.tsv.idf.json" if signed else None)
    assert (tmp_path / "report.tsv.idf.json").is_file() == signed
    assert cli_file(["report", *flags(options)], solr_url, tmp_path / "cli.tsv") == api_pairs
    assert service_report(service, options) == api_pairs


REPORT_LOOKUP_GRID = [
    {"mode": "shingles"},
    {"mode": "lsh"},
    {"mode": "lsh", "first_word_filter": True},
    {"mode": "lsh", "first_word_filter": False},
    {"mode": "minhash", "num_hashes": 64, "first_word_filter": False, "max_edit_distance": 4},
    {"mode": "shingles", "start_id": "100", "end_id": "300", "min_jaccard": 0.3, "rows": 5},
]


@pytest.mark.parametrize("options", REPORT_LOOKUP_GRID, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()))
def test_a_lookup_report_is_the_same_through_every_door(guides, service, solr_url, tmp_path, options):
    client, _ = guides
    report = run_report(client, LookupReportOptions(**options), tmp_path / "api.tsv")
    api_pairs = read_pairs_file((tmp_path / "api.tsv").read_text(encoding="utf-8"))
    assert api_pairs and report.pairs == len(api_pairs)
    # The report's own keywords (the write-up's ranking under the others) give the same file.
    report_near_dups(Searcher(client), tmp_path / "keywords.tsv", **options)
    assert read_pairs_file((tmp_path / "keywords.tsv").read_text(encoding="utf-8")) == api_pairs
    assert cli_file(["report", "--writeup-ranking", *flags(options)], solr_url, tmp_path / "cli.tsv") == api_pairs
    assert service_report(service, {"writeup_ranking": True, **options}) == api_pairs


def test_the_first_word_filter_changes_an_lsh_report(guides, service):
    # The grid above would pass if the doors all ignored the option: it does change the answer here.
    on = service_report(service, {"writeup_ranking": True, "mode": "lsh", "first_word_filter": True})
    off = service_report(service, {"writeup_ranking": True, "mode": "lsh", "first_word_filter": False})
    assert set(on) < set(off)


LOOKUP_GRID = [
    {},
    {"mode": "lsh"},
    {"mode": "lsh", "first_word_filter": True},
    {"mode": "lsh", "first_word_filter": False, "rows": 1},
    {"mode": "shingles", "min_jaccard": 0.3, "max_edit_distance": 6},
    {"mode": "shingles", "rows": 3, "min_jaccard": 0.2},
    {"mode": "minhash"},
    {"mode": "minhash", "num_hashes": 64, "min_jaccard": 0.4},
    {"mode": "minhash", "max_edit_distance": 3, "min_jaccard": 0.3, "first_word_filter": False},
]
# "Arnie Morton's of Chicago" (in both guides) with a word in front: the first word differs from the copies'.
QUERY = "The Arnie Morton's of Chicago 435 S. La Cienega Blvd. Los Angeles"
# A stored document with a copy in the other guide that every mode finds (2 and 535).
STORED_ID = "2"


def near_dups_cli(argv: list[str], solr_url: str, capsys) -> list[tuple[str, float]]:
    assert main(["near-dups", *argv, "--json", "--solr-url", solr_url]) == 0
    return [(m["id"], round(m["jaccard"], 6)) for m in json.loads(capsys.readouterr().out)]


def service_hits(response) -> list[tuple[str, float]]:
    assert response.status_code == 200, response.text
    return [(m["id"], round(m["similarity"], 6)) for m in response.json()["results"]]


@pytest.mark.parametrize("options", LOOKUP_GRID, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "defaults")
def test_a_lookup_is_the_same_through_every_door(guides, service, solr_url, capsys, options):
    client, _ = guides
    searcher = Searcher(client)
    api = searcher.find_near_dups(text=QUERY, options=LookupOptions(**options))
    api_hits = [(m.id, round(m.jaccard, 6)) for m in api]
    # The Searcher's keywords are the options' keys.
    assert [(m.id, round(m.jaccard, 6)) for m in searcher.find_near_dups(text=QUERY, **options)] == api_hits
    cli_hits = near_dups_cli(["--text", QUERY, *flags(options)], solr_url, capsys)
    response = service.post("/v1/near-dups", json={"text": QUERY, **options})
    assert cli_hits == api_hits == service_hits(response)
    assert response.json()["options"] == dataclasses.asdict(LookupOptions(**options))
    if options.get("first_word_filter"):
        assert api_hits == []  # no candidate starts with "The"
    else:
        assert api_hits


@pytest.mark.parametrize("options", LOOKUP_GRID, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "defaults")
def test_a_lookup_of_a_stored_document_is_the_same_through_every_door(guides, service, solr_url, capsys, options):
    client, _ = guides
    api = Searcher(client).find_near_dups(STORED_ID, options=LookupOptions(**options))
    api_hits = [(m.id, round(m.jaccard, 6)) for m in api]
    cli_hits = near_dups_cli([STORED_ID, *flags(options)], solr_url, capsys)
    response = service.get(f"/v1/documents/{STORED_ID}/near-dups",
                           params={k: str(v).lower() if isinstance(v, bool) else v for k, v in options.items()})
    assert cli_hits == api_hits == service_hits(response)
    assert STORED_ID not in [i for i, _ in api_hits]


@pytest.mark.parametrize("mode", ["shingles", "minhash", "lsh"])
def test_the_write_up_ranking_is_the_same_through_every_door(guides, service, solr_url, capsys, mode):
    client, _ = guides
    from neardup_solr.options import WRITEUP_LOOKUP

    writeup = dataclasses.replace(WRITEUP_LOOKUP, mode=mode)
    api = [(m.id, round(m.jaccard, 6)) for m in Searcher(client).find_near_dups(STORED_ID, options=writeup)]
    assert api
    assert near_dups_cli([STORED_ID, "--writeup-ranking", "--mode", mode], solr_url, capsys) == api
    # JSON's null is "left out" (the collection's threshold): min_jaccard 0 keeps every candidate as None does.
    body = {**dataclasses.asdict(dataclasses.replace(writeup, min_jaccard=0.0)), "num_hashes": None}
    response = service.get(f"/v1/documents/{STORED_ID}/near-dups",
                           params={k: str(v).lower() if isinstance(v, bool) else v for k, v in body.items()
                                   if v is not None})
    assert service_hits(response) == api


def test_a_share_lookup_is_the_same_from_the_command_line_and_the_service(guides, service, solr_url, capsys):
    client, _ = guides
    shared = Searcher(client).find_by_shingle_share(QUERY, 0.3)
    assert shared
    assert main(["near-dups", "--text", QUERY, "--min-share", "0.3", "--json", "--solr-url", solr_url]) == 0
    cli = [(m["id"], round(m["share"], 6)) for m in json.loads(capsys.readouterr().out)]
    assert cli == [(i, round(s, 6)) for i, s in shared]
    response = service.post("/v1/near-dups", json={"text": QUERY, "min_share": 0.3})
    assert response.status_code == 200, response.text
    assert sorted(m["id"] for m in response.json()["results"]) == sorted(i for i, _ in shared)
    assert lookup_from_given({"min_share": 0.3}).min_share == response.json()["options"]["min_share"]


JOIN_GRID = [
    {},  # the collection's threshold (0.8 here, JoinOptions' default too)
    {"method": "lsh"},
    {"threshold": 0.5},
    {"threshold": 0.5, "method": "lsh"},
    {"threshold": 0.5, "method": "lsh", "one_to_one": True},
    {"threshold": 0.5, "similarity": "idf"},
    {"threshold": 0.5, "similarity": "idf", "method": "lsh"},
    {"threshold": 0.37, "similarity": "idf", "idf_tokens": "grams", "one_to_one": True},
]


@pytest.mark.parametrize("options", JOIN_GRID, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()))
def test_a_join_is_the_same_from_the_command_line_and_the_api(guides, solr_url, tmp_path, options):
    client, left = guides
    from neardup_solr.io.readers import Record, RecordReader

    records = [r for r in RecordReader(left, "tsv") if isinstance(r, Record)]
    api = find_cross_pairs(client, records, JoinOptions(indexed_dataset="zagats", **options))
    api_pairs = sorted((p.id, p.neighbor_id, f"{p.similarity:.6f}") for p in api.pairs)
    assert api_pairs and all(a.startswith("f") for a, _, _ in api_pairs)
    args = ["join", str(left), "--format", "tsv", "--indexed-dataset", "zagats",
            *[f for f in flags(options) if f != "--no-one-to-one"]]
    assert cli_file(args, solr_url, tmp_path / "cli.tsv") == api_pairs
