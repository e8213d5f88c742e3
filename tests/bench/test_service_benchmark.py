"""Smoke run of the service benchmark on tiny data: both paths at two client counts and two worker counts against a
real Solr and a real `neardup-solr serve`, the same answers through both, the CPU of each component counted, and the
result files written."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from repo_paths import REPO

pytest.importorskip("fastapi", reason="the service extra is not installed (pip install '.[service]')")
pytest.importorskip("httpx")

pytestmark = pytest.mark.solr


def test_service_benchmark_smoke(solr_url, tmp_path):
    out_dir = tmp_path / "results"
    cmd = [sys.executable, "-m", "benchmarks.service", "--docs", "300", "--requests", "100", "--clients", "1,3",
           "--workers", "1,2", "--optimize", "--profile-lookups", "10", "--solr-url", solr_url, "--work-dir", str(tmp_path / "work"),
           "--out-dir", str(out_dir), "--machine", "smoke"]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (json_path,) = out_dir.glob("*-service-merged-smoke.json")
    report = json.loads(json_path.read_text())
    assert json_path.with_suffix(".md").read_text().startswith("# neardup-solr service benchmark")
    assert report["index"]["docs"] == 300
    assert report["index"]["segments"]["merged"] and report["index"]["segments"]["count"] == 1
    assert [(level["workers"], level["clients"]) for level in report["levels"]] == [(1, 1), (1, 3), (2, 1), (2, 3)]
    for level in report["levels"]:
        cpu = level["cpu_ms_per_lookup"]
        # Solr answers both paths; only the HTTP path runs in the service's processes (with 2 workers, in its
        # children, which are counted too). Process CPU times tick in 10 ms steps: over 100+ calls Solr and the
        # service use several ticks, the lean load generator (~0.25 ms a call) may still read as 0.
        assert cpu["python_api"]["solr"] > 0 and cpu["http_service"]["solr"] > 0, cpu
        assert "service" not in cpu["python_api"] and cpu["http_service"]["service"] > 0, cpu
        assert cpu["python_api"]["callers"] > cpu["http_service"]["callers"] >= 0, cpu
        for path in ("python_api", "http_service"):
            r = level[path]
            assert r["n"] == 100 and r["errors"] == 0, (path, r)
            assert 0 < r["p50_ms"] <= r["p95_ms"] <= r["p99_ms"] and r["requests_per_s"] > 0
        assert level["overhead_p50_ms"] == pytest.approx(
            level["http_service"]["p50_ms"] - level["python_api"]["p50_ms"], abs=0.002)
    agreement = report["agreement"]
    assert agreement["compared"] == 100 and agreement["different"] == 0
    assert report["lookup"]["mode"] == "lsh" and report["lookup"]["first_word_filter"] is False
    assert report["profile"]["client_cpu_ms"] > 0 and report["profile"]["top_self_time_ms_per_lookup"]
    assert {g["goal"].split(" ")[1] for g in report["goals"]} >= {"overhead", ">="}
