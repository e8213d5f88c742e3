"""Smoke run of benchmarks/own_collection.py at a tiny N: every figure the issue asks for is measured and written
with its provenance (the script starts its own Solr)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from repo_paths import REPO

pytestmark = [pytest.mark.solr, pytest.mark.slow]


def test_tiny_run_writes_backfill_rate_growth_lag_and_idle_cost(tmp_path):
    out_dir = tmp_path / "results"
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "own_collection.py"), "--docs", "200",
                           "--lag-posts", "3", "--idle-seconds", "2", "--heap", "1g", "--work-dir",
                           str(tmp_path / "work"), "--out-dir", str(out_dir), "--machine", "smoke"],
                          cwd=REPO, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (json_path,) = out_dir.glob("*-own-collection-smoke.json")
    report = json.loads(json_path.read_text())
    assert report["provenance"]["tool"] == "neardup-solr"
    (result,) = report["results"]
    assert result["docs"] == 200
    assert result["backfill"]["docs_per_s"] > 0 and result["index"]["docs_per_s"] > 0
    assert result["backfill"]["index_growth_bytes"] > 0
    assert result["sync_lag"]["n"] == 3 and 0 < result["sync_lag"]["p50_ms"] < 60_000
    for mode in ("versions", "changed_field", "full_scan"):
        assert result["sync_idle"][mode]["passes"] >= 1 and result["sync_idle"][mode]["solr_cpu_per_s"] >= 0
    assert json_path.with_suffix(".md").read_text().startswith("# Near-duplicate detection on a user's own")

    # sync_lag.py on what that run left: the neardup core's 200 documents, the 3 late ones posted again.
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "sync_lag.py"), "--work-dir",
                           str(tmp_path / "work"), "--docs", "200", "--heap", "1g", "--out-dir", str(out_dir),
                           "--machine", "smoke"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (lag_path,) = out_dir.glob("*-sync-lag-smoke.json")
    lag = json.loads(lag_path.read_text())
    assert lag["documents_held"] >= 200 and lag["lag"]["n"] == 3 and 0 < lag["lag"]["p50_ms"] < 60_000


def test_tiny_folding_run_writes_writeback_and_search_figures(tmp_path):
    out_dir = tmp_path / "results"
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "folding.py"), "--docs", "400", "--queries",
                           "20", "--warmup", "4", "--heap", "1g", "--work-dir", str(tmp_path / "work"),
                           "--out-dir", str(out_dir), "--machine", "smoke"],
                          cwd=REPO, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (json_path,) = out_dir.glob("*-folding-smoke.json")
    (result,) = json.loads(json_path.read_text())["results"]
    assert result["writeback"]["documents"] == 400 == result["writeback"]["updated"]
    assert result["rerun_unchanged"]["updated"] == 0 and result["rerun_unchanged"]["unchanged"] == 400
    for kind in ("folded", "not_folded"):
        assert result["search"][kind]["n"] == 20 and result["search"][kind]["p50_ms"] > 0
