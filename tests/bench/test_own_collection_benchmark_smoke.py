"""Smoke run of benchmarks/own_collection.py at a tiny N: every figure issue 45 asks for (the user's index growth,
backfill against index, sync lag from a curl post, deletions, the reconcile's cost, the user's search before and
after) is measured and written with its provenance (the script starts its own Solr); then benchmarks/sync_lag.py
on what it left. (benchmarks/folding.py's smoke run is tests/bench/test_folding_benchmark_smoke.py.)"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from bench_run import run_benchmark
from repo_paths import REPO

pytestmark = [pytest.mark.solr, pytest.mark.slow]


def test_tiny_run_writes_every_figure_of_the_companion(tmp_path):
    report, json_path = run_benchmark("own_collection.py", "own-collection", "--docs", "200", "--lag-posts", "3",
                                      "--deletes", "2", "--reconcile-interval", "1", "--idle-seconds", "2",
                                      "--queries", "10", "--warmup", "3", "--search-repeats", "2", "--rate-rounds",
                                      "2", "--heap", "1g", "--max-load", "1000", "--settle-pause", "0.5",
                                      tmp_path=tmp_path)
    out_dir = json_path.parent
    (result,) = report["results"]
    assert result["docs"] == 200 and len(result["load_1m_start_end"]) == 2 and report["settle_pause"] == 0.5

    # The user's core: nothing of theirs moved (size, counts, version, schema); the companion holds our index.
    sizes = result["sizes"]
    assert sizes["user_growth_bytes"] == 0 and all(sizes["user_core_unchanged"].values()), sizes
    assert sizes["companion_bytes_after_groups"] > 0 and sizes["index_bytes"] > 0
    assert sizes["companion_and_growth_vs_index"] > 0
    # backfill against index, same run: rates, CPU of both, where backfill's time went.
    assert result["backfill"]["signed"] == 200 and result["index"]["indexed"] == 200
    for step in ("backfill", "index"):
        assert result[step]["docs_per_s"] > 0 and result[step]["solr_cpu_s"] >= 0
    assert result["backfill_vs_index_rate"] > 0 and result["backfill"]["where"]["pages"] >= 2  # both rounds
    assert len(result["backfill"]["rounds"]) == 2 == len(result["index"]["rounds"])
    # The untimed warm-up indexed the documents into our core and emptied it again: index's rounds counted 200.
    assert result["warmup"]["docs"] == 200 and report["warmup_docs"] == 20_000
    assert result["groups"]["documents"] == 200 and result["groups"]["user_documents_written_in_place"] == 0
    # sync --follow: curl posts found by a lookup; deletes gone from the companion and the lookups.
    lag = result["sync_lag"]
    assert lag["lag"]["n"] == 3 and not lag["not_found"] and 0 < lag["lag"]["p50_ms"] < 60_000
    assert lag["visible_in_user_core"]["n"] == 3
    deletes = result["deletes"]
    assert deletes["deletes"] == 2 and not deletes["not_gone"]
    assert 0 < deletes["gone_from_companion"]["max_ms"] and 0 < deletes["gone_from_lookups"]["max_ms"]
    assert deletes["reconciles"] >= 1
    # One reconcile pass, its memory; the idle cost of every mode.
    reconcile = result["reconcile"]
    # 200 posted, 3 copies for the lag, 2 deleted, 1 more deleted for the pass that finds one deletion (200
    # documents: no ranges, the keys read).
    assert reconcile["held"] == 200 + 3 - 2 - 1 and reconcile["seconds"] > 0 and reconcile["python_alloc_peak_bytes"] > 0
    assert reconcile["one_deletion_pass"]["deleted"] == 1
    assert reconcile["one_deletion_pass"]["found_by"] == "every key"
    assert reconcile["own_process"]["peak_rss_kib"] >= reconcile["own_process"]["rss_before_kib"] > 0
    for mode in ("versions_no_reconcile", "versions_default_reconcile", "reconcile_every_pass", "changed_field",
                 "full_scan"):
        assert result["sync_idle"][mode]["passes"] >= 1 and result["sync_idle"][mode]["solr_cpu_per_s"] >= 0
    assert result["sync_idle"]["reconcile_every_pass"]["reconciles"] >= 1
    assert result["sync_idle"]["default_reconcile_estimate"]["solr_cpu_per_s"] >= 0
    # The user's plain search, the same queries before and after (and while sync follows).
    for when in ("before", "after", "after_while_following"):
        assert result["search"][when]["n"] == 10 and result["search"][when]["p99_ms"] > 0
        assert result["search"][when]["every_time"]["n"] == 20
    assert set(result["targets"]) >= {"user_growth_at_most_1pct", "backfill_at_least_0.9x_index",
                                      "lag_p50_at_most_1.5s", "lag_p99_at_most_3s", "delete_gone_within_interval",
                                      "user_search_p99_same_within_noise"}
    assert result["targets"]["user_growth_at_most_1pct"]
    assert result["uninstall"]["documents"] == 200  # 200 + 3 copies - 3 deleted
    md = json_path.with_suffix(".md").read_text()
    assert md.startswith("# Near-duplicate detection on a user's own collection")
    assert "Load average (1/5/15 min) at start" in md and "| the user's index growth" in md
    assert "Solr let settle 0.5 s between steps, not 10" in md

    # sync_lag.py on what that run left: our core's 200 documents (from index), the 3 late ones posted again.
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "sync_lag.py"), "--work-dir",
                           str(tmp_path / "work"), "--docs", "200", "--heap", "1g", "--out-dir", str(out_dir),
                           "--machine", "smoke"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (lag_path,) = out_dir.glob("*-sync-lag-smoke.json")
    lag = json.loads(lag_path.read_text())
    assert lag["documents_held"] >= 200 and lag["lag"]["n"] == 3 and 0 < lag["lag"]["p50_ms"] < 60_000
