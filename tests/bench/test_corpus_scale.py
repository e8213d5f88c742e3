"""benchmarks/corpus_scale.py: the sizing formulas it checks are still the docs' (pure), the event-log reading
(pure), and a smoke run at 2,000 documents (its own Solr and Spark) that writes every step with sane recall, and the
growth table over its file."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from benchmarks.corpus_scale import FORMULAS, growth_table, sizing_check, spark_event_summary
from repo_paths import REPO


def test_every_formula_constant_is_quoted_from_its_doc_line():
    for formula in FORMULAS:
        lines = (REPO / formula.doc).read_text(encoding="utf-8").splitlines()
        # The line cited, or near it (a paragraph added above shifts it): the phrase must still be there.
        near = "\n".join(lines[max(0, formula.line - 6):formula.line + 5])
        assert formula.phrase in near, (formula.name, formula.doc, formula.line)


def test_sizing_check_flags_a_measurement_more_than_20_percent_off():
    run = {"solr_heap": "2g", "steps": {"report": {"disk_bytes": {"signature_store_peak": 780e6 * 1.1},
                                                   "seconds": 34.3 * 1.5}}}
    rows = {r["quantity"]: r for r in sizing_check(1_000_000, run)}
    store = rows["signature store (report's TMPDIR)"]
    assert store["predicted"] == 780.0 and store["ratio"] == 1.1 and not store["flag"]
    assert rows["report --method lsh time"]["ratio"] == 1.5 and rows["report --method lsh time"]["flag"]
    assert rows["spark shuffle (pairs)"]["measured"] is None and not rows["spark shuffle (pairs)"]["flag"]


def test_event_log_split_at_the_pairs_line(tmp_path):
    app = tmp_path / "eventlog_v2_local-1"
    app.mkdir()
    events = [
        {"Event": "SparkListenerStageSubmitted", "Stage Info": {"Stage ID": 0, "Submission Time": 1000}},
        {"Event": "SparkListenerTaskEnd", "Stage ID": 0, "Task Metrics": {
            "Executor Run Time": 40, "Shuffle Write Metrics": {"Shuffle Bytes Written": 500}}},
        {"Event": "SparkListenerBlockUpdated", "Block Updated Info": {
            "Block Manager ID": {"Executor ID": "driver"}, "Block ID": "rdd_3_0", "Memory Size": 700, "Disk Size": 0}},
        {"Event": "SparkListenerBlockUpdated", "Block Updated Info": {
            "Block Manager ID": {"Executor ID": "driver"}, "Block ID": "rdd_4_0", "Memory Size": 300, "Disk Size": 0}},
        {"Event": "SparkListenerUnpersistRDD", "RDD ID": 4},
        {"Event": "SparkListenerStageSubmitted", "Stage Info": {"Stage ID": 1, "Submission Time": 5000}},
        {"Event": "SparkListenerTaskEnd", "Stage ID": 1, "Task Metrics": {"Executor Run Time": 7,
                                                                         "Disk Bytes Spilled": 9}},
    ]
    (app / "events_1_local-1").write_text("".join(json.dumps(e) + "\n" for e in events))
    out = spark_event_summary(tmp_path, boundary=4.0)  # the pairs line at 4 s: stage 1 is the groups'
    assert out["pairs"]["task_ms"] == 40 and out["pairs"]["shuffle_write_bytes"] == 500
    assert out["groups_and_keep"]["task_ms"] == 7 and out["groups_and_keep"]["spilled_disk_bytes"] == 9
    assert out["cached_bytes_peak"] == 1000 and out["cached_bytes_after_pairs"] == 700


@pytest.mark.solr
@pytest.mark.slow
def test_tiny_run_writes_every_step_with_sane_recall(tmp_path):
    pytest.importorskip("pyspark", reason="PySpark is not installed (pip install 'neardup-solr[spark]')")
    from neardup_solr.spark.session import java_executable

    if java_executable() is None:
        pytest.skip("no Java for Spark")
    out_dir = tmp_path / "results"

    def corpus_scale(*extra: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "benchmarks.corpus_scale", "--docs", "2000", "--lookups", "20",
                               "--warmup", "2", "--heap", "1g", "--shuffle-partitions", "2", "--work-dir",
                               str(tmp_path / "work"), "--out-dir", str(out_dir), "--machine", "smoke", *extra],
                              cwd=REPO, capture_output=True, text=True, timeout=900)

    # A Spark step that fails (a JVM that cannot start) keeps the Solr steps; --resume runs only what is left.
    proc = corpus_scale("--spark-driver-memory", "1x")
    assert proc.returncode != 0 and "--resume" in proc.stderr, proc.stderr[-3000:]
    assert not list(out_dir.glob("*-corpus-scale-smoke-2000.json"))
    partial = json.loads((tmp_path / "work" / "scale-2000" / "partial.json").read_text())
    assert set(partial["steps"]) == {"index", "optimize", "report", "lookup"}
    assert [f["step"] for f in partial["failed_attempts"]] == ["spark_dedup"]
    proc = corpus_scale("--spark-driver-memory", "1g", "--resume")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "starting Solr" not in proc.stderr
    (json_path,) = out_dir.glob("*-corpus-scale-smoke-2000.json")
    report = json.loads(json_path.read_text())
    assert report["steps"]["index"] == partial["steps"]["index"]
    assert len(report["failed_attempts"]) == 1 and len(report["resumed"]) == 1
    assert "A failed attempt" in json_path.with_suffix(".md").read_text()
    assert report["provenance"]["load_average_when_written"] and report["load_average_start"]
    steps = report["steps"]
    assert set(steps) == {"index", "optimize", "report", "lookup", "spark_dedup"}
    for name in ("index", "optimize", "report", "spark_dedup"):
        assert steps[name]["seconds"] > 0 and steps[name]["ms_per_doc"] > 0, name
        assert all(v is not None and v > 0 for v in steps[name]["memory_mib"].values() if not isinstance(v, dict)), name
    assert steps["index"]["result"]["indexed"] == 2000 and steps["index"]["result"]["end_of_run_check"]["ok"]
    assert steps["optimize"]["result"]["segments_after"] == 1
    assert steps["optimize"]["disk_bytes"]["index_after"] > 0
    assert steps["report"]["disk_bytes"]["signature_store_peak"] > 0
    planted = report["planted_truth"]["pairs_ge_0.8"]
    assert planted > 50
    for name in ("report", "spark_dedup"):
        result = steps[name]["result"]
        assert result["planted_pairs"] == planted
        assert result["recall"] >= 0.95 and result["precision"] >= 0.95, (name, result)
    assert steps["spark_dedup"]["result"]["pairs_file_identical_to_report"]
    assert 0 < steps["lookup"]["result"]["by_text"]["p50_ms"] <= steps["lookup"]["result"]["by_text"]["p99_ms"]
    spark = steps["spark_dedup"]
    assert spark["spark"]["pairs"]["task_ms"] > 0 and spark["spark"]["cached_bytes_after_pairs"] > 0
    assert spark["memory_mib"]["by_phase"]["groups_and_keep"]["peak_driver_python_mib"] > 0
    assert spark["disk_bytes"]["spark_temp_peak"] > 0 and spark["disk_bytes"]["keep_file"] > 0
    assert {row["quantity"] for row in report["sizing"]} == {f.name for f in FORMULAS}
    assert all(row["predicted"] > 0 for row in report["sizing"])
    assert json_path.with_suffix(".md").read_text().startswith("# Corpus scale: 2,000 documents")

    table = growth_table(out_dir)
    assert [row["docs"] for row in table["sizes"]] == [2000] and table["growth"] == []
    proc = subprocess.run([sys.executable, "-m", "benchmarks.corpus_scale", "--table", "--out-dir", str(out_dir),
                           "--machine", "smoke"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (next(out_dir.glob("*-corpus-scale-table-smoke.md")).read_text()
            .startswith("# Corpus scale: cost growth by size"))
