"""neardup_solr.solr.indexer without a Solr: a batch Solr refuses is split until only the bad documents are
rejected (Solr's refusal as a real Solr gives it, tests/solr_replay.py), Solr's own failures stop the run
instead, and the run's bookkeeping (checkpoint, rejects file, in-memory records, the summary's text). Whole runs
against a real Solr are tests/solr/solr/test_indexer_rejects.py's and the fault tests'."""

from __future__ import annotations

import json

import pytest
import requests

from neardup_solr.errors import InvalidParameterError, InvalidRecordError, SolrUnavailableError
from neardup_solr.io.readers import Record
from neardup_solr.solr.indexer import (
    IndexSummary,
    Indexer,
    RECORDS_SOURCE,
    _checked_records,
    _Checkpoint,
    _ids_up_to,
    _Rejects,
)
from neardup_solr.solr.verify import VerifyResult
from solr_replay import SETTINGS, ReplayClient, recorded, response

BAD_FIELD = "no_such_field"


def _solr_refusing_unknown_fields(request):
    """Solr's answers to an update: its recorded 400 when a document has a field the schema lacks, else its 200."""
    if any(BAD_FIELD in doc for doc in request["json"]):
        refused = recorded("add_refused")[0]
        return response(refused["status"], refused["body"])
    return response(200, recorded("add")[0]["body"])


def _docs_and_records(ids, bad):
    docs = [{"id": i, "content": f"text {i}", **({BAD_FIELD: "x"} if i in bad else {})} for i in ids]
    return docs, {i: Record(i, f"text {i}", "input.txt", n) for n, i in enumerate(ids, start=1)}


def test_a_refused_batch_is_split_until_only_the_bad_documents_are_rejected():
    client = ReplayClient(answer=_solr_refusing_unknown_fields)
    ids = [str(n) for n in range(1, 9)]
    docs, records = _docs_and_records(ids, bad={"3", "8"})
    indexed, refused = Indexer(client, SETTINGS)._send(docs, records)
    assert indexed == [(i, records[i].line) for i in ids if i not in {"3", "8"}]
    assert [(doc_id, record.line) for doc_id, record, _ in refused] == [("3", 3), ("8", 8)]
    assert all(f"unknown field '{BAD_FIELD}'" in reason for _, _, reason in refused)
    # Every good document was acknowledged in exactly one accepted request.
    accepted = [doc["id"] for r in client.sent if not any(BAD_FIELD in d for d in r["json"]) for doc in r["json"]]
    assert sorted(accepted) == sorted(i for i in ids if i not in {"3", "8"})


def test_a_batch_solr_accepts_is_sent_once():
    client = ReplayClient(answer=_solr_refusing_unknown_fields)
    docs, records = _docs_and_records(["1", "2", "3"], bad=set())
    indexed, refused = Indexer(client, SETTINGS)._send(docs, records)
    assert (len(indexed), refused, len(client.sent)) == (3, [], 1)


def test_solr_going_away_stops_the_batch_instead_of_rejecting_its_documents():
    def away(request):
        raise requests.ConnectionError("[Errno 111] Connection refused")

    client = ReplayClient(answer=away, max_wait=0)
    docs, records = _docs_and_records(["1", "2"], bad=set())
    with pytest.raises(SolrUnavailableError):
        Indexer(client, SETTINGS)._send(docs, records)
    assert len(client.sent) == 1  # not bisected: the documents are not at fault


def test_bad_settings_of_the_run_are_refused_before_anything_is_sent():
    client = ReplayClient()
    for bad in ({"batch_size": 0}, {"workers": 0}, {"ttl": "30 days"}):
        with pytest.raises(InvalidParameterError):
            Indexer(client, SETTINGS, **bad)
    assert client.sent == []


def test_in_memory_records_are_checked_one_by_one_and_bad_ones_named():
    checked = list(_checked_records([("1", "a text"), (2, "another"), (None, "no id"), ("4", None), "not a pair",
                                     (5, "x", "extra")]))
    assert [(c.id, c.line) for c in checked if isinstance(c, Record)] == [("1", 1), ("2", 2)]
    bad = [c for c in checked if isinstance(c, InvalidRecordError)]
    assert [(e.line, e.record_id, e.source) for e in bad] == [(3, None, RECORDS_SOURCE), (4, "4", RECORDS_SOURCE),
                                                              (5, None, RECORDS_SOURCE), (6, None, RECORDS_SOURCE)]
    assert all(e.reason for e in bad)


def test_the_checkpoint_belongs_to_one_version_of_the_input(tmp_path):
    source = tmp_path / "input.txt"
    source.write_text("1\tone\n2\ttwo\n")
    checkpoint = _Checkpoint(tmp_path / "input.checkpoint.json", source)
    assert checkpoint.load() == 0  # none yet
    checkpoint.save(2)
    assert _Checkpoint(checkpoint.path, source).load() == 2
    assert not (tmp_path / "input.checkpoint.tmp").exists()  # written aside, then moved over
    source.write_text("1\tone\n2\ttwo\n3\tthree\n")  # the input changed: its old checkpoint does not apply
    assert _Checkpoint(checkpoint.path, source).load() == 0
    checkpoint.path.write_text("{not json")
    assert _Checkpoint(checkpoint.path, source).load() == 0
    checkpoint.clear()
    checkpoint.clear()
    assert not checkpoint.path.exists()


def test_rejects_go_to_a_jsonl_file_and_the_first_ones_stay_on_the_summary(tmp_path):
    kept: list = []
    rejects = _Rejects(tmp_path / "out" / "rejects.jsonl", kept)
    rejects.write(source="in.txt", line=3, record_id="7", reason="empty text", text="")
    rejects.write(source="<records>", line=4, record_id=None, reason="text is not a str", text=b"\x00")
    rejects.close()
    lines = [json.loads(line) for line in (tmp_path / "out" / "rejects.jsonl").read_text().splitlines()]
    assert lines == [{"source": "in.txt", "line": 3, "id": "7", "reason": "empty text", "text": ""},
                     {"source": "<records>", "line": 4, "id": None, "reason": "text is not a str", "text": "b'\\x00'"}]
    assert rejects.count == 2 and [k.id for k in kept] == ["7", None]


def test_resume_checks_the_ids_of_the_lines_before_the_checkpoint_only():
    items = [Record("a", "t", "f", 1), InvalidRecordError("bad", source="f", line=2), Record("c", "t", "f", 3),
             Record("d", "t", "f", 4)]
    assert list(_ids_up_to(items, 3)) == [("a", 1), ("c", 3)]


def test_the_summary_says_what_to_do_next():
    summary = IndexSummary(source="in.txt", read=10, indexed=8, rejected=2, seconds=2.0, rejects_path="rej.jsonl",
                           text_bytes=5_000_000)
    text = summary.format()
    assert text.startswith("read 10, indexed 8, rejected 2 in 2.0 s (4 docs/s, 2.5 MB/s)")
    assert "rejected records with reasons: rej.jsonl" in text
    summary.interrupted = "Solr is not answering"
    assert "STOPPED: Solr is not answering" in summary.format() and "--resume" in summary.format()
    incomplete = IndexSummary(source="in.txt", read=3, indexed=3,
                              verification=VerifyResult(checked=3, missing=1, first_bad_line=2))
    assert "INDEX INCOMPLETE" in incomplete.format() and "--resume" in incomplete.format()
    assert IndexSummary(source="x").docs_per_second == 0.0
