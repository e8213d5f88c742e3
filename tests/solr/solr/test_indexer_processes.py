"""The indexer signing in worker processes against a real Solr: the index holds what signing on the calling
thread gives, repeated ids keep their last version, bad records are rejected with their lines."""

from __future__ import annotations

import json

import pytest

from neardup_solr.signing import parallel
from neardup_solr.solr.documents import DocumentBuilder, IndexSettings
from neardup_solr.solr.indexer import Indexer
from neardup_solr.solr.settings_store import read_index_settings

pytestmark = pytest.mark.solr

FIELDS = "id,content,md5_hash,num_words,first_word,num_shingles,minhash_sig,content_lsh"


def _records(n: int) -> list[dict]:
    records = []
    for i in range(n):
        text = f"record {i} about topic {i % 37} with words {' '.join(str(i * k) for k in range(12))}"
        records.append({"id": f"r{i % (n - 50)}", "text": text})  # the last 50 repeat earlier ids
    records[17]["text"] = "!!! ???"  # no words left
    return records


@pytest.mark.parametrize("processes", [1, 2])
def test_documents_are_the_same_whatever_signs_them(solr, tmp_path, monkeypatch, processes):
    monkeypatch.setattr(parallel, "POOL_AFTER_SECONDS", 0.0)  # the pool from the first batch on
    records = _records(1200)
    path = tmp_path / "in.jsonl"
    lines = [json.dumps(r) + "\n" for r in records]
    lines.insert(149, json.dumps({"text": "a record without an id"}) + "\n")  # line 150: the reader refuses it
    path.write_text("".join(lines))
    settings = IndexSettings(fields=("lsh",))
    summary = Indexer(solr, settings, batch_size=100, sign_processes=processes).index_file(
        path, rejects_path=tmp_path / "rejects.jsonl")
    assert summary.sign_processes == processes
    # In input order, although the refusal of line 18 waits for its batch to be signed, and line 150 is refused by
    # the reader while that batch is still being signed.
    assert [r.line for r in summary.rejections] == [18, 150]
    assert [json.loads(line)["line"] for line in (tmp_path / "rejects.jsonl").read_text().splitlines()] == [18, 150]
    assert summary.duplicate_ids == 50 and summary.indexed == 1200 - 1
    assert summary.verification is not None and summary.verification.ok

    last = {r["id"]: r["text"] for r in records if r["text"] != "!!! ???"}
    builder = DocumentBuilder(read_index_settings(solr))
    expected = {d["id"]: d for d in builder.build(sorted(last.items())).documents}
    stored = {d["id"]: d for d in solr.get_by_ids(sorted(last), FIELDS)}
    assert set(stored) == set(expected) and len(stored) == 1150  # r17 rejected once, then sent again valid
    for doc_id, doc in stored.items():
        want = expected[doc_id]
        assert {k: doc[k] for k in ("content", "md5_hash", "num_words", "first_word", "num_shingles")} == \
               {k: want[k] for k in ("content", "md5_hash", "num_words", "first_word", "num_shingles")}
        assert doc["minhash_sig"] == want["minhash_sig"]
        assert sorted(doc["content_lsh"]) == sorted(want["content_lsh"])
