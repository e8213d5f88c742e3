"""`neardup-solr --version` and `index --json`: what scripts read from the command line."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata

import pytest

import neardup_solr
from neardup_solr.version import package_version


def test_version_prints_the_installed_version():
    proc = subprocess.run([sys.executable, "-m", "neardup_solr.cli", "--version"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"neardup-solr {metadata.version('neardup-solr')}"


def test_version_falls_back_to_the_module_attribute(monkeypatch):
    def not_installed(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", not_installed)
    assert package_version() == neardup_solr.__version__


@pytest.mark.solr
def test_index_json_summary_counts_like_the_human_one(solr, solr_url, tmp_path):
    path = tmp_path / "docs.txt"
    path.write_text("1 the first text of a few words\n2 the second text of a few words\n3 \n"
                    "1 the first text of a few words again\n", encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "neardup_solr.cli", "index", str(path), "--json", "-q", "--clear",
         "--rejects", str(tmp_path / "rejects.jsonl"), "--solr-url", solr_url],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr  # one record rejected
    summary = json.loads(proc.stdout)  # standard output holds the JSON document alone
    assert summary["status"] == "complete"
    assert (summary["read"], summary["indexed"], summary["rejected"], summary["duplicate_ids"]) == (4, 2, 1, 1)
    assert summary["rejects_path"] == str(tmp_path / "rejects.jsonl")
    assert summary["verification"]["ok"] is True and summary["verification"]["checked"] == 2
    assert "cleared the documents without a data set" in proc.stderr
