"""Smoke run of benchmarks/online.py at tiny N against a real Solr: both systems timed, parts reported."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from repo_paths import REPO

pytestmark = pytest.mark.solr


def test_online_benchmark_writes_latencies_for_both_systems(solr, solr_url, tmp_path):
    out_dir = tmp_path / "results"
    cmd = [sys.executable, str(REPO / "benchmarks" / "online.py"), "--docs", "300", "--checks", "30",
           "--solr-url", solr_url, "--work-dir", str(tmp_path / "work"), "--out-dir", str(out_dir),
           "--machine", "smoke"]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (json_path,) = out_dir.glob("*-online-smoke.json")
    report = json.loads(json_path.read_text())
    assert json_path.with_suffix(".md").read_text().startswith("# online check_and_add")
    ours = report["results"]["neardup-solr NearDupIndex"]
    peer = report["results"]["datasketch MinHashLSH (in memory)"]
    for result in (ours, peer):
        latency = result["check_and_add"]
        assert latency["n"] == 30 and 0 < latency["p50_ms"] <= latency["p95_ms"] <= latency["p99_ms"]
        assert result["added"] + result["duplicates"] == 30 and result["added"] > 0
    assert ours["indexed"] == 300
    assert set(ours["parts"]) >= {"sign (client)", "candidates + exact verify", "a soft commit alone"}
    # The strict variant checks the same texts under other ids: the same decisions.
    assert ours["strict"]["added"] == ours["added"] and ours["strict"]["check_and_add"]["n"] == 30
