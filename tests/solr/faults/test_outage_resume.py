"""Solr going away mid-run: retries with backoff, a resumable checkpoint, and an index equal to a clean run's.

These tests run their own Solr (a fixed free port, a throwaway data dir) so they can stop and start it
without disturbing the session's Solr.
"""

from __future__ import annotations

import json
import threading

import pytest

from indexcheck import equals_clean_run
from netutil import free_port

from neardup_solr.solr.indexer import Indexer
from neardup_solr.errors import IndexingInterrupted
from neardup_solr.engine.report import report_near_dups
from neardup_solr.io.restaurants import prepare_default
from neardup_solr.solr.searcher import Searcher
from neardup_solr.solr.client import RetryPolicy, SolrClient
from neardup_solr.solr.backends.local import LocalSolr

pytestmark = [pytest.mark.solr, pytest.mark.slow]


@pytest.fixture(scope="module")
def own_solr(tmp_path_factory):
    solr = LocalSolr(port=free_port(), data_dir=tmp_path_factory.mktemp("fault-solr"))
    solr.start()
    yield solr
    solr.stop()


class OutageClient(SolrClient):
    """Stops the Solr once, right before the ``at``-th call of ``method``; optionally restarts it later."""

    def __init__(self, url, local: LocalSolr, method: str, at: int, restart_after: float | None, **kw):
        super().__init__(url, **kw)
        self.local, self.method, self.at, self.restart_after = local, method, at, restart_after
        self.calls = 0
        self.lock = threading.Lock()
        self.restarted = threading.Event()

    def _maybe_break(self):
        with self.lock:
            self.calls += 1
            if self.calls != self.at:
                return
        self.local.stop()
        if self.restart_after is not None:
            def restart():
                self.local.start()
                self.restarted.set()
            threading.Timer(self.restart_after, restart).start()

    def add(self, docs, **kw):
        if self.method == "add":
            self._maybe_break()
        return super().add(docs, **kw)

    def select(self, params):
        if self.method == "select":
            self._maybe_break()
        return super().select(params)


def _records(n=3000):
    return "".join(f"{i} record {i} about topic {i % 97} with words w{i % 13} w{i % 7} and w{i % 5}\n"
                   for i in range(1, n + 1))


def test_outage_stops_with_checkpoint_and_resume_completes_like_a_clean_run(own_solr, tmp_path):
    path = tmp_path / "records.txt"
    path.write_text(_records())
    fast_fail = RetryPolicy(attempts=3, base=0.1, cap=0.3, seed=1)
    SolrClient(own_solr.core_url).delete_all()

    client = OutageClient(own_solr.core_url, own_solr, "add", at=6, restart_after=None, retry=fast_fail)
    with pytest.raises(IndexingInterrupted) as info:
        Indexer(client, batch_size=200, workers=1, commit_every=400).index_file(path)
    summary = info.value.summary
    assert "Solr is not answering" in summary.interrupted and "--resume" in summary.format()
    checkpoint = json.loads(open(summary.checkpoint_path).read())
    # Call 1 stored the index settings, calls 2-5 four batches of 200; Solr went away before call 6. The
    # checkpoint only moves after a hard commit (every 400 documents): acknowledged is not yet durable.
    assert checkpoint["line"] in (400, 800)

    own_solr.start()
    resumed = Indexer(SolrClient(own_solr.core_url), batch_size=200).index_file(path, resume=True)
    assert resumed.skipped_by_resume == checkpoint["line"]
    assert resumed.resume_verification.ok and resumed.verification.ok
    assert resumed.indexed == 3000 - checkpoint["line"] and resumed.rejected == 0
    client = SolrClient(own_solr.core_url)
    assert equals_clean_run(client, path)


def test_short_outage_is_ridden_out_by_backoff(own_solr, tmp_path):
    path = tmp_path / "records.txt"
    path.write_text(_records(2000))
    SolrClient(own_solr.core_url).delete_all()
    patient = RetryPolicy(attempts=12, base=0.5, cap=4.0, seed=2)
    client = OutageClient(own_solr.core_url, own_solr, "add", at=4, restart_after=1.0, retry=patient)
    summary = Indexer(client, batch_size=200, workers=2).index_file(path)
    assert client.restarted.is_set()
    assert summary.indexed == 2000 and summary.interrupted is None
    plain = SolrClient(own_solr.core_url)
    assert equals_clean_run(plain, path)


def test_report_survives_a_restart_with_the_same_result(own_solr, tmp_path):
    path = tmp_path / "addresses.txt"
    prepare_default(path)
    plain = SolrClient(own_solr.core_url)
    plain.delete_all()
    Indexer(plain).index_file(path)
    _, clean = report_near_dups(Searcher(plain), None, mode="shingles")

    patient = RetryPolicy(attempts=12, base=0.5, cap=4.0, seed=3)
    client = OutageClient(own_solr.core_url, own_solr, "select", at=300, restart_after=1.0, retry=patient)
    _, survived = report_near_dups(Searcher(client), None, mode="shingles")
    assert client.restarted.is_set()
    assert survived == clean and len(clean) > 50
