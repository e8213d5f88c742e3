"""Smoke run of the benchmark driver at tiny N: every section runs against a real Solr and reports numbers."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from repo_paths import REPO

pytestmark = pytest.mark.solr


def _has_number(value) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return True
    if isinstance(value, dict):
        return any(_has_number(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_number(v) for v in value)
    return False


def test_quick_run_writes_every_section_with_numbers(solr_url, tmp_path):
    out_dir = tmp_path / "results"
    cmd = [sys.executable, str(REPO / "benchmarks" / "run.py"), "--docs", "300", "--quick", "--lookups", "5",
           "--peer-queries", "6", "--solr-url", solr_url, "--work-dir", str(tmp_path / "work"),
           "--out-dir", str(out_dir), "--machine", "smoke"]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]

    (json_path,) = out_dir.glob("*-smoke.json")
    report = json.loads(json_path.read_text())
    assert json_path.with_suffix(".md").read_text().startswith("# neardup-solr benchmark")
    assert json_path.with_suffix(".png").stat().st_size > 0

    signing = report["signing"]
    assert signing["status"] == "ok", signing
    assert signing["summary"]["ours_docs_per_s"] > 0
    assert signing["results"]["neardup_solr (batch)"]["mb_per_s"] > 0

    per = report["sizes"]["300"]
    for name in ("corpus", "indexing", "indexing_writeup", "indexing_lsh_only", "index_size", "lookup", "solr_minhash"):
        assert per[name]["status"] == "ok", (name, per[name])
        assert _has_number(per[name]), name
    assert per["indexing"]["docs"] == 300 and per["indexing"]["docs_per_s"] > 0
    assert per["index_size"]["bytes_per_doc"] > 0
    # The default index has no minhash tokens (opt-in): that mode says so instead of failing the section.
    assert per["lookup"]["modes"]["minhash"] == {"status": "skipped", "error": "the index has no minhash tokens"}
    assert per["indexing_writeup"]["settings"]["fields"] == ["shingles", "minhash", "lsh", "words"]
    for mode in ("shingles", "lsh"):
        for kind in ("by_id", "by_text"):
            lat = per["lookup"]["modes"][mode][kind]
            assert lat["n"] == 5 and 0 < lat["p50_ms"] <= lat["p95_ms"] <= lat["p99_ms"]
    methods = per["solr_minhash"]["methods"]
    assert "ours lsh + exact verify" in methods and any(k.startswith("solr min_hash") for k in methods)
    for r in methods.values():
        assert r["latency"]["n"] == 6 and r["recall"] is not None

    collection = per["collection"]
    ds = collection["datasketch"]
    assert ds["status"] == "ok", ds
    assert ds["seconds"] > 0 and ds["peak_rss_mib"] > 0 and 0 <= ds["recall"] <= 1
    ours = collection["ours"]
    # Until neardup_solr/engine/collection.py exists the section says so instead of failing the run.
    assert ours["status"] in ("ok", "not available"), ours
    if ours["status"] == "ok":
        assert ours["seconds"] > 0 and ours["peak_rss_mib"] > 0 and 0 <= ours["recall"] <= 1

    goals = {g["goal"] for g in report["goals"]}
    assert any(g.startswith("signing") for g in goals) and any(g.startswith("indexing") for g in goals)
