"""Real-time get of several ids while soft commits come and go: every acknowledged document comes back.

Solr's /get looks each id up in its update log and, for the ids not there, in one realtime searcher that it takes
at the first such id and keeps for the rest of the request. A soft commit that completes meanwhile moves the later
ids out of the log into a newer searcher, so Solr's own answer can lack documents acknowledged before the request
(seen as claims and deletes that missed documents). ``SolrClient.get_by_ids`` asks for the missing ids once more;
this test writes and soft-commits without pause and checks its answers, while counting how often Solr's own first
answer fell short (the race this guards against)."""

from __future__ import annotations

import threading
import time

import pytest
import requests

from neardup_solr.solr.client import SolrClient

pytestmark = pytest.mark.solr

WANTED_RACES = 3
MAX_SECONDS = 40.0


def test_every_acknowledged_document_comes_back_while_soft_commits_land(solr: SolrClient):
    acknowledged: list[str] = []
    stop = threading.Event()
    errors: list[BaseException] = []

    def write() -> None:
        writer = SolrClient(solr.url)
        n = 0
        try:
            while not stop.is_set():
                batch = [{"id": f"rtg-{n + k:06d}", "content": f"document {n + k}"} for k in range(20)]
                writer.add(batch)
                acknowledged.extend(d["id"] for d in batch)
                n += len(batch)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    def soft_commit() -> None:
        committer = requests.Session()
        try:
            while not stop.is_set():
                committer.get(f"{solr.url}/update", params={"softCommit": "true", "wt": "json"},
                              timeout=60).raise_for_status()
                time.sleep(0.005)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=write, daemon=True), threading.Thread(target=soft_commit, daemon=True)]
    for t in threads:
        t.start()
    raw = requests.Session()
    races = reads = 0
    started = time.monotonic()
    try:
        while races < WANTED_RACES and time.monotonic() - started < MAX_SECONDS and not errors:
            known = list(acknowledged)
            if len(known) < 200:
                time.sleep(0.01)
                continue
            ids = known[-200:]  # the newest: in the update log's maps, or just moved out by a soft commit
            answer = raw.post(f"{solr.url}/get", data={"ids": ",".join(ids), "fl": "id", "wt": "json"}, timeout=60)
            answer.raise_for_status()
            if len(answer.json()["response"]["docs"]) < len(ids):
                races += 1
            ids = list(acknowledged)[-200:]
            found = [d["id"] for d in solr.get_by_ids(ids, "id")]
            assert found == ids, f"acknowledged documents missing from get_by_ids: {sorted(set(ids) - set(found))[:5]}"
            reads += 1
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=30)
    assert not errors, errors
    if races == 0:
        pytest.skip(f"Solr's own answer never fell short in {reads} reads of {MAX_SECONDS:.0f} s: the race was not "
                    "met on this machine, so the check proved nothing")
    assert reads > 0
