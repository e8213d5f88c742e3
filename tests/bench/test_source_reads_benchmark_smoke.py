"""Smoke run of benchmarks/source_reads.py at a tiny N: each way of reading a user's collection returns every
document, and the Solr CPU and wall time of each round are written with the results' provenance."""

from __future__ import annotations

import pytest

from bench_run import run_benchmark

pytestmark = [pytest.mark.solr, pytest.mark.slow]


def test_tiny_run_reads_every_document_each_way(tmp_path):
    report, json_path = run_benchmark("source_reads.py", "source-reads", "--docs", "300", "--page", "70",
                                      "--rounds", "2", "--heap", "1g", "--settle-pause", "0.5",
                                      tmp_path=tmp_path)
    (size,) = report["results"]
    assert size["docs"] == 300 and size["page"] == 70
    assert set(size["rounds"]) == {"cursor over the documents", "keys, then documents by key",
                                   "cursor over the keys alone"}
    for runs in size["rounds"].values():
        assert len(runs) == 2 and all(r["docs"] == 300 and r["seconds"] > 0 for r in runs)
    assert "| 300 | keys, then documents by key |" in json_path.with_suffix(".md").read_text()
