"""Dirty input against a real Solr: every bad record is named and rejected, every good one indexed."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from netutil import client_connections

from neardup_solr.solr.documents import WRITE_UP_TOKEN_FIELDS, IndexSettings
from neardup_solr.solr.indexer import Indexer
from neardup_solr.solr.searcher import Searcher

pytestmark = pytest.mark.solr

SYNTAX_TEXT = 'He said "AND" (or) {!lucene} a:b \\ back* slash? [x TO y] } OR id:* -not +plus ~fuzzy ^boost'
ODD_IDS = ["with space", 'quote"d', "co:lon", "sla/sh", "naïve-ünïcödé", "back\\slash", "com,ma", "*", "{!x}"]


def _index_lines(solr, tmp_path, content: bytes, name="in.txt", **kw):
    path = tmp_path / name
    path.write_bytes(content)
    rejects = tmp_path / "rejects.jsonl"
    summary = Indexer(solr).index_file(path, rejects_path=rejects, **kw)
    rejected = [json.loads(l) for l in rejects.read_text().splitlines()] if rejects.exists() else []
    return summary, rejected


def test_each_bad_line_is_rejected_with_file_line_and_reason_and_the_rest_is_indexed(solr, tmp_path):
    big = "word " * 2_000_000  # 10 MB
    content = (
        "1 a perfectly normal first record\n"
        "2 \n"                           # empty text
        "3    \t  \n"                    # whitespace only
        "4 !!! ... ??? ;;;\n"            # punctuation only
        "5 tiny\n"                       # shorter than the shingle size: one shingle
        " starts with a space, no id\n"  # a line without an id
        "7 caf&eacute; \x01control\x7f chars &amp; entities\n"
        f"8 {big}\n"
        "9 the last good record\n"
    ).encode("utf-8")
    summary, rejected = _index_lines(solr, tmp_path, content)
    assert summary.read == 9
    assert summary.indexed == 5
    assert summary.rejected == 4
    reasons = {r["line"]: r for r in rejected}
    assert set(reasons) == {2, 3, 4, 6}
    assert "no words left" in reasons[2]["reason"] and reasons[2]["id"] == "2"
    assert "punctuation" in reasons[4]["reason"]
    assert "has no id" in reasons[6]["reason"] and reasons[6]["id"] is None
    assert all(r["source"].endswith("in.txt") for r in rejected)
    docs = {d["id"]: d for d in solr.get_by_ids(["1", "5", "7", "8", "9"], "id,num_shingles,num_words,first_word")}
    assert set(docs) == {"1", "5", "7", "8", "9"}
    assert docs["5"]["num_shingles"] == 1
    assert docs["7"]["first_word"] == "café"
    assert docs["8"]["num_words"] == 2_000_000


def test_invalid_utf8_is_decoded_as_latin1_and_counted(solr, tmp_path):
    summary, rejected = _index_lines(solr, tmp_path, b"1 Caf\xe9 Bleu 12 Main St\n2 plain ascii text here\n")
    assert (summary.indexed, summary.rejected, summary.recoded_lines) == (2, 0, 1)
    assert Searcher(solr).get_by_id("1").content == "Café Bleu 12 Main St"

    summary, rejected = _index_lines(solr, tmp_path, b"3 Caf\xe9 Noir\n4 fine\n", name="strict.txt",
                                     on_decode_error="reject")
    assert summary.indexed == 1 and rejected[0]["line"] == 1 and "not valid UTF-8" in rejected[0]["reason"]


def test_duplicate_ids_last_one_wins_and_are_counted(solr, tmp_path):
    lines = "".join(f"{i % 7} text number {i} with some words\n" for i in range(20)).encode()
    path = tmp_path / "dups.txt"
    path.write_bytes(lines)
    summary = Indexer(solr, batch_size=3, workers=3).index_file(path)
    assert summary.read == 20 and summary.duplicate_ids == 13 and summary.indexed + 0 >= 7
    searcher = Searcher(solr)
    for doc_id in range(7):
        last = max(i for i in range(20) if i % 7 == doc_id)
        assert searcher.get_by_id(str(doc_id)).content == f"text number {last} with some words"
    assert solr.count(filters=["-dataset:__meta__"]) == 7


def test_odd_ids_and_query_syntax_are_stored_and_found_verbatim(solr, tmp_path):
    rows = [{"id": doc_id, "text": f"{SYNTAX_TEXT} {n}"} for n, doc_id in enumerate(ODD_IDS)]
    path = tmp_path / "odd.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    summary = Indexer(solr).index_file(path)
    assert summary.indexed == len(ODD_IDS) and summary.rejected == 0
    searcher = Searcher(solr)
    for n, doc_id in enumerate(ODD_IDS):
        assert searcher.get_by_id(doc_id).content == f"{SYNTAX_TEXT} {n}"
        found = {m.id for m in searcher.find_near_dups(doc_id, max_edit_distance=None, rows=50)}
        assert found == set(ODD_IDS) - {doc_id}


def test_queries_built_to_inject_match_nothing_they_should_not(solr, tmp_path):
    Indexer(solr, IndexSettings(fields=WRITE_UP_TOKEN_FIELDS)).index_records(
        [("a", "alpha beta gamma delta"), ("b", "epsilon zeta eta theta")])
    searcher = Searcher(solr)
    for attack in ["*:*", "} OR id:*", "{!lucene}*:*", '" OR *:* OR "', "id:* OR content_ng:*", "\\", "*"]:
        for mode in ("shingles", "minhash", "lsh"):
            assert searcher.find_near_dups_of_text(attack + " x", mode=mode, max_edit_distance=None,
                                                   first_word_filter=True) == []
        with pytest.raises(Exception) as info:
            searcher.get_by_id(attack)
        assert "no document with id" in str(info.value)


def test_empty_file_and_csv_problems(solr, tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    summary = Indexer(solr).index_file(empty)
    assert (summary.read, summary.indexed, summary.rejected) == (0, 0, 0)

    csv_path = tmp_path / "r.csv"
    csv_path.write_text("key,body\n1,first good text\n2\n3,third good text\n", encoding="utf-8")
    rejects = tmp_path / "csv.rejects.jsonl"
    summary = Indexer(solr).index_file(csv_path, id_field="key", text_field="body", rejects_path=rejects)
    assert summary.indexed == 2 and summary.rejected == 1
    assert "missing column 'body'" in rejects.read_text()

    from neardup_solr.errors import InvalidRecordError

    with pytest.raises(InvalidRecordError, match="no column 'text'"):
        Indexer(solr).index_file(csv_path, id_field="key")


def test_cli_exits_non_zero_and_summarises_when_records_are_rejected(solr, tmp_path):
    path = tmp_path / "mixed.txt"
    path.write_text("1 good text one\n2 ...\n3 good text three\n", encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "neardup_solr.cli", "index", str(path), "--solr-url", solr.url, "-q",
         "--rejects", str(tmp_path / "rej.jsonl")],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    assert "read 3, indexed 2, rejected 1" in proc.stdout
    assert (tmp_path / "rej.jsonl").read_text().count("\n") == 1


def test_reindexing_the_same_file_is_idempotent(solr, tmp_path):
    path = tmp_path / "same.txt"
    path.write_text("".join(f"{i} record {i} has a few words\n" for i in range(50)), encoding="utf-8")
    Indexer(solr).index_file(path)
    first = solr.select({"q": "*:*", "fl": "id,md5_hash,minhash_sig", "rows": 100, "sort": "id asc"})
    Indexer(solr).index_file(path)
    second = solr.select({"q": "*:*", "fl": "id,md5_hash,minhash_sig", "rows": 100, "sort": "id asc"})
    assert first["response"]["docs"] == second["response"]["docs"]
    assert second["response"]["numFound"] == 51  # 50 records and the settings document


def test_several_indexing_workers_give_the_same_index_as_one(solr, tmp_path):
    path = tmp_path / "many.txt"
    path.write_text("".join(f"{i} document {i} says w{i % 11} w{i % 17} w{i % 23} again\n" for i in range(3000)))
    fields = "id,content,md5_hash,num_shingles,minhash_sig"

    def snapshot():
        return solr.select({"q": "*:*", "sort": "id asc", "rows": 5000, "fl": fields})["response"]["docs"]

    Indexer(solr, batch_size=100, workers=1).index_file(path)
    one = snapshot()
    solr.delete_all()
    summary = Indexer(solr, batch_size=100, workers=4).index_file(path)
    assert summary.indexed == 3000
    assert snapshot() == one


def test_connection_limit_is_respected_with_many_workers(solr_url, tmp_path):
    import threading
    from urllib.parse import urlsplit

    from neardup_solr.solr.client import SolrClient

    port = urlsplit(solr_url).port
    baseline = client_connections(port)
    client = SolrClient(solr_url, pool_size=2)
    client.delete_all()
    peak, done = [0], threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], client_connections(port) - baseline)
            done.wait(0.005)

    sampler = threading.Thread(target=sample)
    sampler.start()
    path = tmp_path / "many.txt"
    path.write_text("".join(f"{i} text {i} w{i % 5} w{i % 7}\n" for i in range(3000)))
    try:
        summary = Indexer(client, batch_size=50, workers=8).index_file(path)
    finally:
        done.set()
        sampler.join()
    assert summary.indexed == 3000
    assert 1 <= peak[0] <= 2
