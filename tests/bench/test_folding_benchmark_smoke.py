"""Smoke run of benchmarks/folding.py at a tiny N (issue 46): the three query sets are chosen by how much of the
collection they match, every mode is timed on each, and what the fast fold gives up against the exact one is
written with the rest (the script starts its own Solr)."""

from __future__ import annotations

import pytest

from bench_run import run_benchmark

pytestmark = [pytest.mark.solr, pytest.mark.slow]

DEFAULT, LISTED, EXACT = ("folded fast (default, copies not listed)", "folded fast, copies listed (copies=10)",
                           "folded exact (copies=10)")
MODES = {"plain, every hit counted", "plain", DEFAULT, LISTED, EXACT}


def test_tiny_run_measures_every_mode_on_the_three_query_sets(tmp_path):
    report, json_path = run_benchmark("folding.py", "folding", "--docs", "3000", "--queries", "8", "--warmup", "3",
                                      "--rounds", "2", "--heap", "1g", tmp_path=tmp_path)
    (result,) = report["results"]
    assert result["docs"] == 3000 and result["writeback"]["updated"] == 3000
    assert set(result["search"]) == {"broad", "medium", "narrow"}
    for name, figures in result["search"].items():
        assert set(figures["modes"]) == MODES
        assert figures["queries"] > 0, name
        assert all(m["n"] == figures["queries"] and m["p50_ms"] <= m["p99_ms"] for m in figures["modes"].values())
        # Two rounds of plain and the default fold (the other modes one): p50/p99 of each query's median, beside
        # every time and each round's p99.
        assert figures["rounds"] == 2
        for mode, m in figures["modes"].items():
            rounds = 2 if mode in ("plain", DEFAULT) else 1
            assert m["every_time"]["n"] == rounds * figures["queries"] and len(m["round_p99_ms"]) == rounds, mode
            assert m["p99_ms"] <= m["every_time"]["max_ms"], mode
        assert len(figures["fast_p99_over_plain_p99_per_round"]) == 2
        # Every hit counted means exact counts; the exact fold's count is exact too (collapse sees every match).
        assert figures["modes"]["plain, every hit counted"]["found_exact_share"] == 1.0
        assert figures["modes"][EXACT]["found_exact_share"] == 1.0
        # The default lists no copies; with copies=10, the same hits and counts (and two more requests).
        alone, listed = figures["modes"][DEFAULT], figures["modes"][LISTED]
        assert alone["copies_listed_per_query"] == 0 and alone["hits_per_query"] == listed["hits_per_query"]
        assert alone["found_per_query"] == listed["found_per_query"]
        assert figures["fast_p99_over_plain_p99"] and figures["fast_copies_listed_p99_over_plain_p99"]
        versus = figures["fast_against_exact"]
        assert 0.0 <= versus["strict_share"] <= versus["share"] <= 1.0 and versus["exact_page1_groups"] > 0
    # The broad set matches over half the collection, the narrow one under 0.1% (3 documents at most here).
    broad = result["search"]["broad"]["modes"]["plain, every hit counted"]["found_per_query"]
    narrow = result["search"]["narrow"]["modes"]["plain, every hit counted"]["found_per_query"]
    assert broad > 1500 and narrow < 3
    md = json_path.with_suffix(".md").read_text()
    assert md.startswith("# Groups written back and the folded search") and "## Searches at 3,000 documents" in md
