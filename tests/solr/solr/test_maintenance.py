"""merge_segments / ``neardup-solr optimize``: the index ends in the asked number of segments and loses nothing;
lookups answer as before."""

from __future__ import annotations

import json

import pytest

from neardup_solr.cli import main
from neardup_solr.errors import InvalidParameterError
from neardup_solr.solr.indexer import Indexer
from neardup_solr.solr import maintenance
from neardup_solr.solr.maintenance import merge_advice, merge_segments, segment_count
from neardup_solr.solr.searcher import Searcher
from neardup_solr.solr.idf import IdfWeights

pytestmark = pytest.mark.solr

TEXTS = [f"record {i} of the merge test about segments and lookups number {i % 7}" for i in range(60)]


def _index_in_batches(solr, batches: int = 4) -> None:
    indexer = Indexer(solr)
    size = len(TEXTS) // batches
    for b in range(batches):
        # One commit per batch: each batch becomes a segment of its own.
        indexer.index_records([(f"m{i}", TEXTS[i]) for i in range(b * size, (b + 1) * size)])
        solr.commit()


def test_merge_leaves_one_segment_and_every_document(solr):
    _index_in_batches(solr)
    before = segment_count(solr)
    assert before >= 4
    near_before = [(m.id, m.jaccard) for m in Searcher(solr).find_near_dups("m8")]
    summary = merge_segments(solr)
    assert (summary.segments_before, summary.segments_after) == (before, 1) and summary.seconds >= 0
    assert segment_count(solr) == 1
    assert solr.count("id:m*") == len(TEXTS)
    assert [(m.id, m.jaccard) for m in Searcher(solr).find_near_dups("m8")] == near_before


def test_merge_makes_document_frequencies_exact_after_deletes(solr):
    _index_in_batches(solr)
    words = IdfWeights(solr)
    before = words.document_frequencies(["segments"])["segments"]
    assert before == len(TEXTS)
    solr.delete_ids([f"m{i}" for i in range(10)])
    solr.commit()
    # Deleted documents still count in the term statistics until their segments are merged away.
    assert IdfWeights(solr).document_frequencies(["segments"])["segments"] == before
    merge_segments(solr)
    assert IdfWeights(solr).document_frequencies(["segments"])["segments"] == len(TEXTS) - 10


def test_cli_optimize_json(solr, solr_url, capsys):
    _index_in_batches(solr, batches=3)
    assert main(["optimize", "--max-segments", "2", "--json", "--solr-url", solr_url]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["segments_before"] >= 3 and summary["segments_after"] <= 2


def test_merge_refuses_a_bad_count(solr):
    with pytest.raises(InvalidParameterError, match="max_segments"):
        merge_segments(solr, 0)


def test_index_gives_merge_advice_when_the_segments_are_many(solr, solr_url, tmp_path, capsys, monkeypatch):
    _index_in_batches(solr, batches=4)
    count = segment_count(solr)
    assert count >= 4
    assert f"{count} segments" in merge_advice(solr, many=count)
    assert merge_advice(solr, many=count + 1) is None
    merge_segments(solr)
    assert merge_advice(solr, many=2) is None
    # The CLI says it after a load that leaves as many segments as the threshold (lowered here to one).
    path = tmp_path / "more.txt"
    path.write_text("".join(f"x{i} another record {i} for the advice test\n" for i in range(30)))
    monkeypatch.setattr(maintenance, "SEGMENTS_WORTH_MERGING", 1)
    assert main(["index", str(path), "--solr-url", solr_url]) == 0
    assert "neardup-solr optimize" in capsys.readouterr().err
    assert main(["index", str(path), "--solr-url", solr_url, "--quiet"]) == 0
    assert "optimize" not in capsys.readouterr().err
