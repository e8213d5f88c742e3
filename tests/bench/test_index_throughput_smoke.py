"""Smoke run of benchmarks/index_throughput.py at a tiny size: index (default fields and --fields lsh) and dedupe on
both corpora, each run's split of its time read from the commands' own --json summaries, and the signer alone."""

from __future__ import annotations

import pytest

from bench_run import run_benchmark

pytestmark = [pytest.mark.solr, pytest.mark.slow]


def test_tiny_run_splits_every_run_into_its_parts(tmp_path):
    report, json_path = run_benchmark("index_throughput.py", "index-throughput", "--short-docs", "400",
                                      "--long-docs", "40", "--rounds", "1", "--heap", "1g", tmp_path=tmp_path)
    assert set(report["corpora"]) == {"short", "long"}
    for profile, corpus in report["corpora"].items():
        assert corpus["documents"] == (400 if profile == "short" else 40)
        for name in ("default", "lsh"):
            (run,) = corpus["index"][name]
            summary = run["summary"]
            assert summary["indexed"] == corpus["documents"] and summary["status"] == "complete"
            # The parts are measured inside the run, so they fit in it.
            assert 0 < summary["signing_seconds"] and summary["solr_wait_seconds"] >= 0
            assert summary["signing_seconds"] + summary["solr_wait_seconds"] <= summary["seconds"]
            assert run["solr_cpu_seconds"] > 0 and run["client_cpu_seconds"] > 0
            assert corpus["signer_alone"][name]["documents"] == corpus["documents"]
        (dedupe,) = corpus["dedupe"]
        stages = dedupe["summary"]["stages"]
        assert dedupe["summary"]["records"] == corpus["documents"]
        assert {"indexing", "signing", "finding pairs", "verifying", "grouping", "writing"} <= set(stages)
    markdown = json_path.with_suffix(".md").read_text()
    assert "| long (40 docs," in markdown and "dedupe (lean default: --fields lsh)" in markdown
