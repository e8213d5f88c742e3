"""Ids that older indexes may hold (tabs, newlines: accepted before the id rules) are written quoted into
every TSV output and read back exactly by every reader."""

from __future__ import annotations

import json

import pytest

from neardup_solr.cli import main
from neardup_solr.solr.documents import DocumentBuilder, IndexSettings, ensure_index_settings
from neardup_solr.pairs.evaluate import read_pairs
from neardup_solr.pairs.groups import read_distance_pairs
from neardup_solr.validation import id_problem, parse_tsv_id, tsv_id

ODD = ["tab\there", "new\nline", "#hash", '"quoted"', " padded ", "line\u2028sep", "cr\rid"]
PLAIN = ["plain", "with space", "naïve", "back\\slash", 'mid"quote', "co:lon"]


@pytest.mark.parametrize("doc_id", ODD + PLAIN)
def test_every_id_reads_back_as_written(doc_id):
    field = tsv_id(doc_id)
    assert "\t" not in field and "\n" not in field and "\r" not in field and "\u2028" not in field
    assert parse_tsv_id(field) == doc_id
    assert (field == doc_id) == (id_problem(doc_id) is None and not doc_id.startswith('"'))


@pytest.mark.solr
def test_an_older_index_with_such_ids_gives_outputs_every_command_reads(solr, solr_url, tmp_path, capsys):
    # Written as an older version did, past today's id rules.
    settings = ensure_index_settings(solr, IndexSettings())
    text = "the same words in both of these documents about a river"
    built = DocumentBuilder(settings).build([("1", text), ("2", text), ("plain", text)])
    built.documents[0]["id"], built.documents[1]["id"] = "tab\there", "new\nline"  # the builder refuses them now
    solr.add(built.documents)
    solr.commit()
    report, threshold, groups = tmp_path / "r.tsv", tmp_path / "t.tsv", tmp_path / "g.jsonl"
    assert main(["report", "--out", str(report), "-q", "--solr-url", solr_url]) == 0
    assert main(["report", "--threshold", "0.9", "--out", str(threshold), "-q", "--solr-url", solr_url]) == 0
    expected = {frozenset(p) for p in [("tab\there", "new\nline"), ("tab\there", "plain"), ("new\nline", "plain")]}
    for path in (report, threshold):
        assert len(path.read_text(encoding="utf-8").splitlines()) == 5  # 2 header lines + 3 pairs, one a line
        assert {frozenset(p[:2]) for p in read_distance_pairs(path)} == expected
        assert {frozenset(p) for p in read_pairs(path)} == expected
    assert main(["groups", str(threshold), "--out", str(groups), "--keep", str(tmp_path / "keep.txt"),
                 "--solr-url", solr_url]) == 0
    (group,) = [json.loads(line) for line in groups.read_text(encoding="utf-8").splitlines()]
    assert sorted(group["members"]) == sorted(["tab\there", "new\nline", "plain"])
    keep = (tmp_path / "keep.txt").read_text(encoding="utf-8").splitlines()
    assert len(keep) == 1 and parse_tsv_id(keep[0]) == group["representative"]
    capsys.readouterr()
