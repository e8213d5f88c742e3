"""Smoke runs of the benchmark scripts: run one at a tiny size into the test's folder and read its results file
back, with the provenance and load average every results file carries checked once here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from repo_paths import REPO


def run_benchmark(script: str, name: str, *args: str, tmp_path: Path, timeout: float = 900) -> tuple[dict, Path]:
    """``benchmarks/<script> ARGS`` with ``--work-dir``, ``--out-dir`` and ``--machine smoke`` under ``tmp_path``;
    returns its JSON report and the report's path (``<date>-<name>-smoke.json``; the .md beside it)."""
    out_dir = tmp_path / "results"
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / script), *args, "--work-dir",
                           str(tmp_path / "work"), "--out-dir", str(out_dir), "--machine", "smoke"],
                          cwd=REPO, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (json_path,) = out_dir.glob(f"*-{name}-smoke.json")
    report = json.loads(json_path.read_text())
    assert report["provenance"]["tool"] == "neardup-solr"
    assert report["load_average"]["start"] and report["load_average"]["end"]
    return report, json_path
