"""Smoke run of benchmarks/online.py at tiny N against a real Solr: every variant (not strict, strict, a soft commit
per add) timed from 1 and from 2 client processes, the peer timed, the parts reported, the table written."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from repo_paths import REPO

pytestmark = pytest.mark.solr

CHECKS = 40
VARIANTS = ("not strict", "strict", "soft commit per add")


def sane(figures: dict) -> None:
    latency = figures["check_and_add"]
    assert latency["n"] == CHECKS and 0 < latency["p50_ms"] <= latency["p95_ms"] <= latency["p99_ms"], figures
    assert figures["calls_per_s"] > 0, figures
    assert figures["added"] + figures["refused"] == CHECKS and figures["added"] > 0, figures


def test_online_benchmark_times_every_variant_from_one_and_several_clients(solr, solr_url, tmp_path):
    out_dir = tmp_path / "results"
    cmd = [sys.executable, str(REPO / "benchmarks" / "online.py"), "--docs", "300", "--checks", str(CHECKS),
           "--clients", "2", "--solr-url", solr_url, "--work-dir", str(tmp_path / "work"), "--out-dir", str(out_dir),
           "--machine", "smoke"]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (json_path,) = out_dir.glob("*-online-smoke.json")
    report = json.loads(json_path.read_text())
    ours = report["results"]["neardup-solr NearDupIndex"]
    peer = report["results"]["datasketch MinHashLSH (in memory)"]
    assert ours["indexed"] == 300
    assert set(report["load_average"]) == {"start", "end"}

    by_key = {(v["variant"], v["clients"]): v for v in ours["variants"]}
    assert set(by_key) == {(name, clients) for name in VARIANTS for clients in (1, 2)}
    for figures in [*by_key.values(), peer]:
        sane(figures)
    # Every strict check released its band locks; every variant's adds were deleted before the next one.
    assert all(v["locks_left"] == 0 and v["left_after_delete"] >= 0 for v in by_key.values())
    # One client checks the texts in the same order whatever the variant, and sees its own adds: the same decisions.
    assert len({by_key[(name, 1)]["added"] for name in VARIANTS}) == 1
    # The indexed documents are the same for every variant: a text refused as a near duplicate of one is refused
    # by all.
    assert ours["disagreements"]["count"] == 0, ours["disagreements"]
    assert [row["clients"] for row in ours["cost_ratios"]] == [1, 2]
    assert all(ratio > 0 for row in ours["cost_ratios"] for ratio in row.values())
    assert set(ours["parts"]) >= {"sign (client)", "candidates + exact verify", "a soft commit alone"}

    md = json_path.with_suffix(".md").read_text()
    assert md.startswith("# online check_and_add")
    assert "| variant | clients | p50 ms | p95 ms | p99 ms | mean ms | calls/s | added | refused |" in md
    for name in VARIANTS:
        for clients in (1, 2):
            assert f"| {name} | {clients} | " in md
    assert "Cost of strict" in md and "Load average" in md
