"""docs/coming-from-datasketch.md runs as written: every python block, in order, in one namespace, against the
session's real Solr (the page's SolrClient() finds it through SOLR_URL)."""

from __future__ import annotations

import re

import pytest

from repo_paths import REPO

pytestmark = pytest.mark.solr

PAGE = REPO / "docs" / "coming-from-datasketch.md"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, re.DOTALL | re.MULTILINE)


def test_the_page_has_side_by_side_blocks():
    blocks = python_blocks(PAGE.read_text(encoding="utf-8"))
    assert sum("datasketch" in b or "lsh." in b or "m1.jaccard" in b for b in blocks) >= 3
    assert sum("NearDupIndex" in b or "index." in b for b in blocks) >= 3


def test_every_code_block_of_the_page_runs(solr, solr_url, monkeypatch, capsys):
    monkeypatch.setenv("SOLR_URL", solr_url)
    namespace: dict = {"__name__": "coming_from_datasketch"}
    for number, block in enumerate(python_blocks(PAGE.read_text(encoding="utf-8")), 1):
        try:
            exec(compile(block, f"{PAGE.name} block {number}", "exec"), namespace)
        except Exception as exc:  # name the block that failed
            raise AssertionError(f"block {number} failed: {exc!r}\n{block}") from exc
    out = capsys.readouterr().out
    assert "['a']" in out and "[0, 2]" in out and "False [('s0', 1.0)]" in out and "refused:" in out
