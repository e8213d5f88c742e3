"""The documentation site builds with ``mkdocs build --strict``: every page in the nav exists, every link and
every API reference (mkdocstrings, from the docstrings) resolves."""

import os
import shutil
import subprocess
import sys

import pytest

from repo_paths import REPO as ROOT


pytest.importorskip("mkdocs", reason="the docs extra is not installed (pip install -e '.[docs]')")


def test_the_site_builds_strictly(tmp_path):
    site = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})  # Material's notice, not ours
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert (site / "cli" / "report" / "index.html").exists()
    api = (site / "api" / "index.html").read_text(encoding="utf-8")
    assert "NearDupIndex" in api and "dedupe_collection" in api


def test_a_broken_link_fails_the_build(tmp_path):
    copy = tmp_path / "project"
    shutil.copytree(ROOT / "docs", copy / "docs")
    shutil.copy(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
    page = copy / "docs" / "index.md"
    page.write_text(page.read_text(encoding="utf-8") + "\n[gone](no-such-page.md)\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "s")],
                          cwd=copy, capture_output=True, text=True, timeout=600, env={"PYTHONPATH": str(ROOT),
                                                                                        "PATH": "/usr/bin:/bin",
                                                                                        "NO_MKDOCS_2_WARNING": "1"})
    assert proc.returncode != 0
    assert "no-such-page.md" in proc.stderr
