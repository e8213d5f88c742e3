"""The package's types: mypy is clean over it (CI runs this), its annotations ship (py.typed), and a user's
script written against the public API type-checks while a misuse of it is caught."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from repo_paths import REPO

EXAMPLE = '''
from neardup_solr import (
    Indexer, IndexSettings, InvalidParameterError, MinHash, Signature, SolrClient, estimate_jaccard,
)

minhash = MinHash(num_hashes=64, seed=7)
a: Signature = minhash.signature("Art's Deli 12224 Ventura Blvd. Studio City")
b: Signature = minhash.signature("Art's Delicatessen 12224 Ventura Blvd. Studio City")
similarity: float = estimate_jaccard(a, b)
settings = IndexSettings(ngram=3, num_hashes=128, lsh_threshold=0.8)


def index(url: str) -> int:
    with SolrClient(url, timeout=5.0) as client:
        summary = Indexer(client, settings, batch_size=100).index_records([("1", "some text"), (2, "more")])
        reasons: list[str] = [r.reason for r in summary.rejections]
        return summary.indexed + len(reasons)


try:
    IndexSettings(lsh_threshold=1.5)
except InvalidParameterError as exc:
    name: str = exc.param
'''

MISUSE = '''
from neardup_solr import MinHash, SolrClient

MinHash(num_hashes="128")
SolrClient(timeout="fast")
'''


def _mypy(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    pytest.importorskip("mypy", reason="mypy is in the test extra: pip install -e '.[test]'")
    return subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml"), *args],
                          capture_output=True, text=True, cwd=cwd, timeout=600)


def test_mypy_is_clean_over_the_package():
    proc = _mypy()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Success: no issues found" in proc.stdout


def test_a_script_using_the_api_type_checks_and_a_misuse_is_caught(tmp_path):
    good = tmp_path / "example.py"
    good.write_text(EXAMPLE)
    proc = _mypy(str(good))
    assert proc.returncode == 0, proc.stdout + proc.stderr

    bad = tmp_path / "misuse.py"
    bad.write_text(MISUSE)
    proc = _mypy(str(bad))
    assert proc.returncode == 1, proc.stdout
    assert 'Argument "num_hashes" to "MinHash" has incompatible type "str"' in proc.stdout
    assert 'Argument "timeout" to "SolrClient" has incompatible type "str"' in proc.stdout


def test_the_annotations_ship_with_the_package():
    assert (REPO / "neardup_solr" / "py.typed").is_file()
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "py.typed" in config["tool"]["setuptools"]["package-data"]["neardup_solr"]
    assert "mypy" in " ".join(config["project"]["optional-dependencies"]["test"])
