"""Documents' time to live, enforced by Solr's DocExpirationUpdateProcessorFactory (the configset's default
update chain): the syntax checked before anything is sent, then real expiry on a core (and on a SolrCloud
collection) whose deleter runs every second, through the indexer, the CLI, check_and_add (whose claim expires
with its document) and the HTTP API."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import requests

from neardup_solr import Indexer, InvalidParameterError, ParameterTypeError
from neardup_solr.engine.online import check_and_add, claim_id
from neardup_solr.solr.client import SolrClient
from neardup_solr.solr.ttl import check_ttl

TEXT = ("the quick brown fox jumps over the lazy dog near the river bank while the farmer watches from "
        "his old wooden porch")
OTHER = "a completely different sentence about tax forms, invoices and the paperwork of a small company"


@pytest.mark.parametrize("given, sent", [("+30DAYS", "+30DAYS"), ("30days", "+30DAYS"), (" 12HOURS ", "+12HOURS"),
                                         ("+1YEAR+6MONTHS", "+1YEAR+6MONTHS"), ("3SECONDS", "+3SECONDS"),
                                         (None, None)])
def test_ttl_syntax_is_normalised(given, sent):
    assert check_ttl(given) == sent


@pytest.mark.parametrize("bad", ["", "30", "DAYS", "-3DAYS", "+3DAYS/DAY", "NOW+3DAYS", "3 DAYS", "+3FORTNIGHTS",
                                 "+0SECONDS", "+1234567890DAYS", "30DAYS; DROP"])
def test_bad_ttl_is_refused_naming_the_value(bad):
    with pytest.raises(InvalidParameterError) as caught:
        check_ttl(bad)
    assert caught.value.param == "ttl" and repr(bad) in str(caught.value) or "more than zero" in str(caught.value)


def test_ttl_of_another_type_is_a_type_error():
    with pytest.raises(ParameterTypeError):
        check_ttl(30)


def test_cli_refuses_a_bad_ttl_before_touching_solr(tmp_path):
    path = tmp_path / "docs.txt"
    path.write_text("1 some text\n")
    proc = subprocess.run([sys.executable, "-m", "neardup_solr.cli", "index", str(path), "--ttl", "30 days",
                           "--solr-url", "http://127.0.0.1:9/solr/nope"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "--ttl must be Solr date math" in proc.stderr and "'30 days'" in proc.stderr


# ----------------------------------------------------------------------------------------------- real expiry


@contextlib.contextmanager
def fast_expiring_collection(solr_url: str, cloud: bool):
    """A new core (or collection) from our configset whose expired-document deleter runs every second."""
    base = solr_url.rsplit("/", 1)[0]
    name = f"ttl_{uuid.uuid4().hex[:8]}"
    prop = {"property.neardup.ttl.deletePeriodSeconds": "1", "wt": "json"}
    if cloud:
        created = requests.get(f"{base}/admin/collections", params={
            "action": "CREATE", "name": name, "numShards": 2, "replicationFactor": 1,
            "collection.configName": "neardup", "waitForFinalState": "true", **prop}, timeout=180)
    else:
        created = requests.get(f"{base}/admin/cores", params={
            "action": "CREATE", "name": name, "configSet": "neardup", "instanceDir": name, **prop}, timeout=120)
    assert created.status_code == 200, created.text
    client = SolrClient(f"{base}/{name}")
    try:
        yield client
    finally:
        client.close()
        if cloud:
            requests.get(f"{base}/admin/collections", params={"action": "DELETE", "name": name}, timeout=120)
        else:
            requests.get(f"{base}/admin/cores", params={"action": "UNLOAD", "core": name, "deleteInstanceDir": "true"},
                         timeout=120)


def is_cloud(url: str) -> bool:
    with SolrClient(url) as client:
        client.check()
        return bool(client.is_cloud)


def present(client: SolrClient, ids: list[str]) -> set[str]:
    return {d["id"] for d in client.get_by_ids(ids, "id")}


def wait_until_gone(client: SolrClient, ids: list[str], seconds: float = 30.0) -> float:
    started = time.monotonic()
    while present(client, ids):
        assert time.monotonic() - started < seconds, f"still there after {seconds} s: {present(client, ids)}"
        time.sleep(0.5)
    return time.monotonic() - started


def exercise_expiry(client: SolrClient, tmp_path: Path) -> None:
    # The indexer: two records with a 3-second TTL; one without, which stays.
    Indexer(client).index_records([("keep", OTHER)])
    Indexer(client, ttl="3SECONDS").index_records([("t1", TEXT), ("t2", TEXT + " and a dog")])
    stored = {d["id"]: d for d in client.get_by_ids(["t1", "keep"], "id,ttl,expire_at")}
    assert stored["t1"]["ttl"] == "+3SECONDS" and stored["t1"]["expire_at"].endswith("Z")
    assert "expire_at" not in stored["keep"]
    # The command line, with the TTL as users write it.
    path = tmp_path / "docs.txt"
    path.write_text("c1 a third text for the command line with its own words\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "neardup_solr.cli", "index", str(path), "--ttl", "3seconds", "-q",
                           "--rejects", str(tmp_path / "r.jsonl"), "--solr-url", client.url],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    # check_and_add: the added document and its claim carry the TTL.
    added = check_and_add(client, "k1", "an online text checked and added with a short time to live", 0.8,
                          ttl="+3SECONDS")
    assert added.added
    claim = claim_id(client.get_by_ids(["k1"], "md5_hash")[0]["md5_hash"])
    assert present(client, [claim]) == {claim}
    waited = wait_until_gone(client, ["t1", "t2", "c1", "k1", claim])
    assert waited < 30
    assert present(client, ["keep"]) == {"keep"}
    # The claim went with its document: the same text can be added again.
    assert check_and_add(client, "k2", "an online text checked and added with a short time to live", 0.8).added


@pytest.mark.solr
def test_documents_expire_on_a_core(local_solr, solr_url, tmp_path):
    with fast_expiring_collection(solr_url, is_cloud(solr_url)) as client:
        exercise_expiry(client, tmp_path)


@pytest.mark.solr
def test_ttl_through_the_http_api(local_solr, solr_url, tmp_path):
    pytest.importorskip("fastapi", reason="the service extra is not installed (pip install '.[service]')")
    from fastapi.testclient import TestClient

    from neardup_solr.service import ServiceConfig, create_app

    with fast_expiring_collection(solr_url, is_cloud(solr_url)) as client:
        app = create_app(ServiceConfig(solr_url=client.url, jobs_dir=tmp_path / "jobs"))
        with TestClient(app) as http:
            r = http.post("/v1/documents", json=[{"id": "a", "text": TEXT, "ttl": "+2SECONDS"},
                                                 {"id": "b", "text": OTHER},
                                                 {"id": "c", "text": "a text with a bad ttl", "ttl": "soon"}])
            statuses = {x["id"]: (x["status"], x.get("reason", "")) for x in r.json()["results"]}
            assert statuses["a"][0] == "indexed" and statuses["b"][0] == "indexed"
            assert statuses["c"][0] == "rejected" and "Solr date math" in statuses["c"][1]
            r = http.post("/v1/check", json={"id": "d", "text": "checked through the API with a ttl of its own",
                                             "ttl": "2SECONDS"})
            assert r.status_code == 200 and r.json()["added"]
            bad = http.post("/v1/check", json={"id": "e", "text": "x y z", "ttl": "+2 SECONDS"})
            assert bad.status_code == 422 and "ttl" in bad.json()["detail"]
            wait_until_gone(client, ["a", "d"])
            assert http.get("/v1/documents/a").status_code == 404
            assert http.get("/v1/documents/b").status_code == 200


@pytest.mark.solr
@pytest.mark.slow
def test_documents_expire_on_solrcloud(shared_cloud, tmp_path):
    """The same configset on a 2-shard SolrCloud: the deleter runs on the first shard's leader and its
    delete-by-query reaches both shards."""
    with fast_expiring_collection(shared_cloud.core_url, True) as client:
        assert is_cloud(client.url)
        exercise_expiry(client, tmp_path)
