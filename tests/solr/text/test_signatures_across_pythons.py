"""One collection, two Pythons (issue 35): a collection indexed with normaliser version 3 on Python 3.10 finds its
near duplicates from 3.13, although their Unicode versions differ; with version 2 it does not, and says why. The
interpreters and their virtualenvs come from ``pythons.py`` (shared with unit/signing/test_signature_stability.py)."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from pythons import ROOT, find_python, venv_python

pytestmark = [pytest.mark.solr, pytest.mark.slow]

# -- one collection, two Pythons -----------------------------------------------------------------------------------

# Texts holding characters Unicode 13 (Python 3.10) did not have: Vithkuqi capitals (Unicode 14: 3.11+ folds them to
# small letters), U+061D ARABIC END OF TEXT MARK inside a word (punctuation from Unicode 14 on), Kawi and Nag
# Mundari letters and digits (Unicode 15).
NEW_SINCE_13 = ("Ledger \U00010570\U00010571\U00010572 entry \u0628\u061d\u062a kawi \U00011f12\U00011f13 "
                "numbers \U0001e4f1\U0001e4f2 from the harbour office of the northern district")
RECORDS = {
    "original": NEW_SINCE_13,
    "near": NEW_SINCE_13.replace("northern", "eastern"),
    "other": "A different text about \U00010577\U00010578 trains that leave the central station every hour",
}


def _cli(python: str, *args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([python, "-m", "neardup_solr.cli", *args], env=env, capture_output=True, text=True,
                          cwd=ROOT, timeout=300)


def test_a_version_3_collection_indexed_on_3_10_finds_its_duplicates_from_3_13(solr, solr_url, tmp_path):
    pythons = {v: find_python(v) for v in ("3.10", "3.13")}
    missing = [v for v, p in pythons.items() if p is None]
    if missing:
        pytest.skip(f"Python {', '.join(missing)} not found (not on the PATH, not in pyenv)")
    oldest, newest = (venv_python(v, p) for v, p in pythons.items() if p is not None)
    env = {k: v for k, v in os.environ.items() if k not in ("NEARDUP_SOLR_KERNEL", "SOLR_URL")}
    env["PYTHONPATH"] = str(ROOT)
    records = tmp_path / "records.jsonl"
    records.write_text("".join(json.dumps({"id": k, "text": t}) + "\n" for k, t in RECORDS.items()))

    def near_dups_from_3_13() -> tuple[dict, str]:
        proc = _cli(newest, "near-dups", "--text", NEW_SINCE_13, "--min-jaccard", "0.3", "--json",
                    "--solr-url", solr_url, env=env)
        assert proc.returncode == 0, proc.stderr
        return {m["id"]: m for m in json.loads(proc.stdout)}, proc.stderr

    indexed = _cli(oldest, "index", str(records), "-q", "--solr-url", solr_url, env=env)
    assert indexed.returncode == 0, indexed.stderr
    found, warnings = near_dups_from_3_13()
    assert found["original"]["exact"] and "near" in found and not found["near"]["exact"]
    assert "other" not in found and "Unicode" not in warnings

    # The same with version 2 (each Python's own Unicode): the copy is no longer exact from 3.13, and it says why.
    indexed = _cli(oldest, "index", str(records), "-q", "--clear-all", "--normalizer-version", "2",
                   "--solr-url", solr_url, env=env)
    assert indexed.returncode == 0, indexed.stderr
    found, warnings = near_dups_from_3_13()
    assert not found.get("original", {}).get("exact", False)
    assert "Unicode 13.0.0" in warnings and "Unicode 15.1.0" in warnings
