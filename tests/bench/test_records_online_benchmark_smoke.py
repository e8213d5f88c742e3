"""Smoke run of benchmarks/records_online.py at a tiny N: indexed, trained, stored, and the single-record
matches timed and checked against the held-out partners, written with provenance (the script starts its own
Solr)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from repo_paths import REPO

pytestmark = [pytest.mark.solr, pytest.mark.slow]


def test_tiny_run_times_the_matches_and_finds_the_partners(tmp_path):
    out_dir = tmp_path / "results"
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "records_online.py"), "--records", "1500",
                           "--matches", "60", "--warmup", "10", "--heap", "1g", "--work-dir", str(tmp_path / "work"),
                           "--out-dir", str(out_dir), "--machine", "smoke"],
                          cwd=REPO, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (json_path,) = out_dir.glob("*-records-online-smoke.json")
    report = json.loads(json_path.read_text())
    assert report["provenance"]["tool"] == "neardup-solr"
    result = report["result"]
    assert result["records"] == 1500 and result["rejected"] == 0 and result["train"]["revision"] == 1
    match = result["match"]
    assert match["n"] == 60 and 0 < match["p50_ms"] <= match["p99_ms"] < 60_000
    # The held-out second records find their indexed first one; the held-out single people match nothing.
    assert match["partner_first"] >= 0.9 * match["duplicates"] and match["duplicates"] >= 25
    assert match["singles_without_match"] >= 0.9 * match["singles"]
    assert json_path.with_suffix(".md").read_text().startswith("# One field record matched online")
