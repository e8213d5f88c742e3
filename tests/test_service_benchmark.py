"""Smoke run of the service benchmark on tiny data: both paths at two client counts against a real Solr and a
real `neardup-solr serve`, the same answers through both, and the result files written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the service extra is not installed (pip install '.[service]')")
pytest.importorskip("httpx")

pytestmark = pytest.mark.solr

REPO = Path(__file__).resolve().parents[1]


def test_service_benchmark_smoke(solr_url, tmp_path):
    out_dir = tmp_path / "results"
    cmd = [sys.executable, "-m", "benchmarks.service", "--docs", "300", "--requests", "30", "--clients", "1,3",
           "--profile-lookups", "10", "--solr-url", solr_url, "--work-dir", str(tmp_path / "work"),
           "--out-dir", str(out_dir), "--machine", "smoke"]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (json_path,) = out_dir.glob("*-service-smoke.json")
    report = json.loads(json_path.read_text())
    assert json_path.with_suffix(".md").read_text().startswith("# neardup-solr service benchmark")
    assert report["index"]["docs"] == 300
    assert [level["clients"] for level in report["levels"]] == [1, 3]
    for level in report["levels"]:
        for path in ("python_api", "http_service"):
            r = level[path]
            assert r["n"] == 30 and r["errors"] == 0, (path, r)
            assert 0 < r["p50_ms"] <= r["p95_ms"] <= r["p99_ms"] and r["requests_per_s"] > 0
        assert level["overhead_p50_ms"] == pytest.approx(
            level["http_service"]["p50_ms"] - level["python_api"]["p50_ms"], abs=0.002)
    agreement = report["agreement"]
    assert agreement["compared"] == 100 and agreement["different"] == 0
    assert report["lookup"]["mode"] == "lsh" and report["lookup"]["first_word_filter"] is False
    assert report["profile"]["client_cpu_ms"] > 0 and report["profile"]["top_self_time_ms_per_lookup"]
    assert {g["goal"].split(" ")[1] for g in report["goals"]} >= {"overhead", ">="}
