"""Every result says which version of the tool produced it: pairs and report files in their header, benchmark
results with the Python, the time and the machine's load too (and no benchmark writes its results around the
stamp)."""

from __future__ import annotations

import ast
import json

from benchmarks.provenance import rewrite_result_files, write_result_files
from neardup_solr.engine.report import report_lines
from neardup_solr.pairs.evaluate import read_pairs
from neardup_solr.pairs.groups import read_distance_pairs
from neardup_solr.pairs.similar_pairs import SimilarPair, pair_lines
from neardup_solr.version import package_version
from repo_paths import REPO

BENCHMARKS = REPO / "benchmarks"


def test_results_carry_the_version_in_the_json_and_under_the_markdown_title(tmp_path):
    stamp = write_result_files(tmp_path / "2026-11-25-x", {"docs": 10}, "# Results\n\n| a |\n")
    data = json.loads((tmp_path / "2026-11-25-x.json").read_text())
    assert data["docs"] == 10 and data["provenance"]["version"] == package_version() == stamp["version"]
    assert data["provenance"]["load_average_when_written"] is not None
    lines = (tmp_path / "2026-11-25-x.md").read_text().splitlines()
    assert lines[0] == "# Results" and f"neardup-solr {package_version()}" in lines[2] and "load average" in lines[2]
    assert lines[4] == "| a |"


def test_a_rewrite_keeps_the_provenance_of_the_run_that_measured(tmp_path):
    measured = {"docs": 1, "provenance": {"tool": "neardup-solr", "version": "0.0.1", "commit": "abc1234",
                                          "python": "3.11.0", "cpus": 2, "written_utc": "2026-01-01 00:00",
                                          "load_average_when_written": [0.1, 0.2, 0.3]}}
    rewrite_result_files(tmp_path / "r", measured, "# R\n")
    assert "neardup-solr 0.0.1, commit abc1234" in (tmp_path / "r.md").read_text()
    assert json.loads((tmp_path / "r.json").read_text())["provenance"]["version"] == "0.0.1"


def _writes_results_directly(call: ast.Call) -> bool:
    """``X.write_text(json.dumps(...))`` or ``X.with_suffix(".md"/".json").write_text(...)``."""
    if not (isinstance(call.func, ast.Attribute) and call.func.attr == "write_text"):
        return False
    dumps = bool(call.args) and isinstance(call.args[0], ast.Call) and isinstance(call.args[0].func, ast.Attribute) \
        and call.args[0].func.attr == "dumps"
    receiver = call.func.value
    suffixed = isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute) \
        and receiver.func.attr == "with_suffix" and bool(receiver.args) \
        and isinstance(receiver.args[0], ast.Constant) and receiver.args[0].value in (".md", ".json")
    return dumps or suffixed


def test_no_benchmark_writes_a_result_around_the_stamp():
    offenders = []
    for path in sorted(BENCHMARKS.glob("*.py")):
        if path.name == "provenance.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and _writes_results_directly(node):
                offenders.append(f"{path.name}:{node.lineno}")
    # Data files (a corpus's meta.json) are written by the generators with a name of their own, not a result stem.
    allowed = {name for name in offenders if name.split(":")[0] in ("corpus.py", "clustered.py")}
    assert sorted(set(offenders) - allowed) == [], "write results with benchmarks.provenance.write_result_files"


def test_pairs_and_report_files_name_the_version_under_their_column_names_and_read_back(tmp_path):
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("".join(pair_lines([SimilarPair("a", "b", 0.9)])), encoding="utf-8")
    lines = pairs.read_text(encoding="utf-8").splitlines()
    assert lines[:2] == ["# id\tneighbor_id\tsimilarity", f"# written by neardup-solr {package_version()}"]
    assert read_pairs(pairs) == {("a", "b")} and read_distance_pairs(pairs) == [("a", "b", 0.9)]
    report = "".join(report_lines([("3", "536", 1, 6.0)])).splitlines()
    assert report[:2] == ["# id\tneighbor_id\tedit_distance\tscore", f"# written by neardup-solr {package_version()}"]
