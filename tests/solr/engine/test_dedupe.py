"""dedupe_file against a real Solr: the same records as index + report --method lsh + groups --keep
--with-singletons + filtering the input (docs/recipes.md's steps), in every input format, compressed too; the
records' own bytes; rejected records named and left out; a stopped run resumed to the same output."""

from __future__ import annotations

import gzip
import json

import pytest

from benchmarks.corpus import generate, iter_documents
from dedupe_reference import expected_output, run_commands, serialise, write_input
from neardup_solr import SolrClient
from neardup_solr.engine.dedupe import dedupe_file
from neardup_solr.errors import IndexingInterrupted, SolrUnavailableError
from neardup_solr.io import restaurants
from neardup_solr.solr.indexer import Indexer

pytestmark = pytest.mark.solr

THRESHOLD = 0.8
DOCS = 3000


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> list[tuple[str, str]]:
    """benchmarks/corpus.py's planted near duplicates (texts with line breaks)."""
    out = tmp_path_factory.mktemp("corpus")
    generate(DOCS, 7, out)
    return list(iter_documents(out))


def flat(records: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The texts on one line, for the formats with one record a line (the same words, so the same shingles)."""
    return [(doc_id, " ".join(text.split("\n"))) for doc_id, text in records]


@pytest.fixture(scope="module")
def references(corpus, solr_url, tmp_path_factory):
    """The recipe's keep set for the corpus, with its line breaks and on one line."""
    work = tmp_path_factory.mktemp("reference")
    found = {}
    for name, records, fmt in (("multiline", corpus, "jsonl"), ("flat", flat(corpus), "tsv")):
        path = work / f"{name}.{fmt}"
        write_input(path, serialise(records, fmt), fmt)
        found[name] = run_commands(path, work / name, solr_url, THRESHOLD)
    return found


def test_the_corpus_has_near_duplicates_to_drop(references):
    for reference in references.values():
        assert 0.8 * DOCS < len(reference.keep) < 0.97 * DOCS


@pytest.mark.parametrize("fmt, variant", [("jsonl", "multiline"), ("csv", "multiline"), ("lines", "flat"),
                                          ("tsv", "flat")])
def test_out_equals_the_recipes_records_in_each_line_format(fmt, variant, corpus, references, solr_url, tmp_path):
    records = corpus if variant == "multiline" else flat(corpus)
    serialised = serialise(records, fmt)
    source = tmp_path / f"in.{fmt}"
    write_input(source, serialised, fmt)
    out = tmp_path / f"out.{fmt}"
    summary = dedupe_file(SolrClient(solr_url), source, out, THRESHOLD, clear="all")
    keep = references[variant].keep
    assert out.read_bytes() == expected_output(serialised, fmt, keep)
    assert (summary.records, summary.kept, summary.rejected) == (DOCS, len(keep), 0)
    assert summary.dropped == DOCS - len(keep) and summary.groups > 0
    assert not (tmp_path / f"out.{fmt}.dedupe-run").exists()  # the run's work is removed once it completed


def test_compressed_input_and_output(corpus, references, solr_url, tmp_path):
    serialised = serialise(corpus, "jsonl")
    source = tmp_path / "in.jsonl.gz"
    source.write_bytes(gzip.compress(b"".join(line for _, line in serialised)))
    out = tmp_path / "out.jsonl.gz"
    dedupe_file(SolrClient(solr_url), source, out, THRESHOLD, clear="all")
    assert gzip.decompress(out.read_bytes()) == expected_output(serialised, "jsonl", references["multiline"].keep)


def test_parquet_in_parquet_out(corpus, references, solr_url, tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    table = pa.table({"id": [i for i, _ in corpus], "text": [t for _, t in corpus],
                      "n": pa.array(range(len(corpus)), type=pa.int32())})
    source = tmp_path / "in.parquet"
    pq.write_table(table, source, row_group_size=1000)
    out = tmp_path / "out.parquet"
    summary = dedupe_file(SolrClient(solr_url), source, out, THRESHOLD, clear="all")
    result = pq.read_table(out)
    keep = references["multiline"].keep
    assert result.schema == table.schema
    assert result.to_pylist() == [row for row in table.to_pylist() if row["id"] in keep]
    assert summary.kept == len(keep)


@pytest.mark.parametrize("fmt", ["lines", "csv"])
def test_restaurants_at_a_lower_threshold_with_the_longest_kept(fmt, solr_url, tmp_path):
    records = [(str(i), text) for i, text in restaurants.read_records(restaurants.fodors_path(),
                                                                       restaurants.zagats_path())]
    serialised = serialise(records, fmt)
    source = tmp_path / f"restaurants.{fmt}"
    write_input(source, serialised, fmt)
    reference = run_commands(source, tmp_path / "reference", solr_url, 0.5, representative="longest")
    out = tmp_path / f"out.{fmt}"
    summary = dedupe_file(SolrClient(solr_url), source, out, 0.5, representative="longest", clear="all",
                          pairs_out=tmp_path / "pairs.tsv", groups_out=tmp_path / "groups.jsonl",
                          keep_out=tmp_path / "keep.txt")
    assert summary.groups > 0 and summary.kept == len(reference.keep) < len(records)
    assert out.read_bytes() == expected_output(serialised, fmt, reference.keep)
    # The files written beside it are the commands' own.
    assert (tmp_path / "pairs.tsv").read_bytes() == reference.pairs
    assert (tmp_path / "groups.jsonl").read_bytes() == reference.groups
    assert (tmp_path / "keep.txt").read_bytes() == reference.keep_list


ODD = (b"x1 The harbour road closes for the winter storms again this year\n"
       b"x2 The  harbour road   closes for the winter storms again this year  \r\n"
       b"x3 Caf\xc3\xa9 na\xc3\xafve r\xc3\xa9sum\xc3\xa9 \xe2\x80\x94 completely different words\there today\n"
       b"x4 Latin-1 \xe9t\xe9 bytes in a line of their own with some other words\n"
       b"#bad an id that starts with a hash cannot be written to a TSV output\n"
       b"x5\n"
       b"\n"
       b"x6 The harbour road closes for the winter storms again this year\n")


def test_odd_lines_are_kept_byte_for_byte_and_rejected_records_named(solr_url, tmp_path):
    source = tmp_path / "odd.txt"
    source.write_bytes(ODD)
    out = tmp_path / "out.txt"
    summary = dedupe_file(SolrClient(solr_url), source, out, THRESHOLD, clear="all")
    assert out.read_bytes() == (b"x1 The harbour road closes for the winter storms again this year\n"
                                b"x3 Caf\xc3\xa9 na\xc3\xafve r\xc3\xa9sum\xc3\xa9 \xe2\x80\x94 completely different "
                                b"words\there today\n"
                                b"x4 Latin-1 \xe9t\xe9 bytes in a line of their own with some other words\n")
    assert (summary.records, summary.kept, summary.dropped, summary.rejected) == (7, 3, 2, 2)
    named = {(r.line, r.id) for r in summary.rejections}
    assert named == {(5, "#bad"), (6, "x5")}
    assert summary.rejects_path == str(tmp_path / "out.txt.rejects.jsonl")
    reasons = [json.loads(line)["reason"] for line in open(summary.rejects_path, encoding="utf-8")]
    assert len(reasons) == 2 and any("empty" in r for r in reasons)
    assert "rejected 2 (not written; reasons in" in summary.format()


def test_a_repeated_id_is_written_once_from_its_last_record(solr_url, tmp_path):
    source = tmp_path / "repeated.tsv"
    source.write_bytes(b"r1\tfirst version of a record about the harbour road\n"
                       b"r2\ta text about something else entirely, the market square\n"
                       b"r1\tsecond version of a record about the harbour road, the one indexed\n")
    summary = dedupe_file(SolrClient(solr_url), source, tmp_path / "out.tsv", THRESHOLD, clear="all")
    assert (tmp_path / "out.tsv").read_bytes() == (
        b"r2\ta text about something else entirely, the market square\n"
        b"r1\tsecond version of a record about the harbour road, the one indexed\n")
    assert (summary.kept, summary.dropped, summary.repeated_ids) == (2, 1, 1)


def test_pairs_with_documents_the_input_does_not_hold_are_left_out(solr_url, solr, tmp_path):
    Indexer(solr).index_records([("other", "The harbour road closes for the winter storms again this year")])
    source = tmp_path / "in.txt"
    source.write_bytes(b"x1 The harbour road closes for the winter storms again this year\n"
                       b"x2 A different text about the market square and its stalls\n")
    summary = dedupe_file(SolrClient(solr_url), source, tmp_path / "out.txt", THRESHOLD)
    assert (tmp_path / "out.txt").read_bytes() == source.read_bytes()
    assert summary.foreign_pairs == 1 and summary.pairs == 0


def test_a_run_stopped_after_indexing_resumes_without_indexing_again(corpus, references, solr_url, tmp_path,
                                                                     monkeypatch):
    serialised = serialise(corpus, "jsonl")
    source = tmp_path / "in.jsonl"
    write_input(source, serialised, "jsonl")
    out = tmp_path / "out.jsonl"

    def solr_gone(*args, **kwargs):
        raise SolrUnavailableError("Solr went away (test)")

    monkeypatch.setattr("neardup_solr.engine.dedupe.find_pairs", solr_gone)  # where dedupe looks it up
    with pytest.raises(SolrUnavailableError):
        dedupe_file(SolrClient(solr_url), source, out, THRESHOLD, clear="all")
    assert not out.exists() and (tmp_path / "out.jsonl.dedupe-run" / "run.json").exists()
    monkeypatch.undo()

    def index_again(*args, **kwargs):
        raise AssertionError("the resumed run indexed the input again")

    monkeypatch.setattr(Indexer, "index_file", index_again)
    summary = dedupe_file(SolrClient(solr_url), source, out, THRESHOLD, resume=True)
    assert summary.resumed
    assert out.read_bytes() == expected_output(serialised, "jsonl", references["multiline"].keep)
    assert not (tmp_path / "out.jsonl.dedupe-run").exists()


def test_a_run_stopped_while_indexing_resumes_to_the_same_output(corpus, references, solr_url, tmp_path):
    records = flat(corpus)
    serialised = serialise(records, "lines")
    # A rejected record among them: counted once however often the resumed indexer meets it.
    serialised.insert(10, ("#bad", b"#bad a record whose id cannot be indexed\n"))
    source = tmp_path / "in.txt"
    write_input(source, serialised, "lines")
    out = tmp_path / "out.txt"
    client = SolrClient(solr_url)
    real_add = client.add
    calls = {"n": 0}

    def add_then_fail(docs, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] > 3:
            raise SolrUnavailableError("Solr went away (test)")
        return real_add(docs, *args, **kwargs)

    client.add = add_then_fail  # type: ignore[method-assign]
    with pytest.raises(IndexingInterrupted):
        dedupe_file(client, source, out, THRESHOLD, clear="all", batch_size=200, workers=1)
    assert not out.exists()
    summary = dedupe_file(SolrClient(solr_url), source, out, THRESHOLD, resume=True)
    keep = references["flat"].keep
    assert summary.resumed and out.read_bytes() == expected_output(serialised, "lines", keep)
    assert (summary.records, summary.kept, summary.rejected) == (DOCS + 1, len(keep), 1)


def test_refusals_before_any_solr_work(solr_url, tmp_path):
    source = tmp_path / "in.jsonl"
    source.write_bytes(b'{"id": "1", "text": "one"}\n')
    client = SolrClient(solr_url)
    with pytest.raises(ValueError, match="csv"):
        dedupe_file(client, source, tmp_path / "out.csv", THRESHOLD)
    with pytest.raises(ValueError, match="input"):
        dedupe_file(client, source, source, THRESHOLD)
    with pytest.raises(ValueError, match="standard input"):
        dedupe_file(client, "-", tmp_path / "out.jsonl", THRESHOLD)
    with pytest.raises(ValueError, match="pairs_out"):
        dedupe_file(client, source, tmp_path / "out.jsonl", THRESHOLD, pairs_out=tmp_path / "out.jsonl")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]


def test_a_dataset_of_its_own_keeps_the_corpus_apart(solr_url, solr, tmp_path):
    Indexer(solr).index_records([("other", "The harbour road closes for the winter storms again this year")])
    source = tmp_path / "in.txt"
    source.write_bytes(b"x1 The harbour road closes for the winter storms again this year\n"
                       b"x2 The harbour road closes for the winter storms again this year!\n"
                       b"x3 A different text about the market square and its stalls\n")
    for _ in range(2):  # clear="dataset" deletes the data set's documents only, the other one stays
        summary = dedupe_file(SolrClient(solr_url), source, tmp_path / "out.txt", THRESHOLD, dataset="mine",
                              clear="dataset")
        assert (tmp_path / "out.txt").read_bytes() == (b"x1 The harbour road closes for the winter storms again "
                                                       b"this year\nx3 A different text about the market square "
                                                       b"and its stalls\n")
        assert (summary.pairs, summary.foreign_pairs, summary.kept, summary.dropped) == (1, 0, 2, 1)
    assert solr.count("id:other") == 1


def test_a_new_collection_gets_only_what_dedupe_reads_with_the_same_output_as_every_field(corpus, solr_url, solr,
                                                                                         tmp_path):
    """Issue 48: dedupe indexes the LSH keys beside the signature and text, not the shingle and word fields (which
    grow with the text); the pairs, groups, keep list and kept records are those of a run with every field."""
    from neardup_solr.engine.dedupe import DEDUPE_SETTINGS
    from neardup_solr.signing.settings import DEFAULT_TOKEN_FIELDS, IndexSettings
    from neardup_solr.solr.settings_store import read_index_settings

    source = tmp_path / "in.jsonl"
    write_input(source, serialise(corpus, "jsonl"), "jsonl")
    outputs = {}
    for name, settings in (("lean", None), ("every field", IndexSettings(fields=DEFAULT_TOKEN_FIELDS + ("minhash",)))):
        run = tmp_path / name
        run.mkdir()
        summary = dedupe_file(SolrClient(solr_url), source, run / "out.jsonl", THRESHOLD, clear="all",
                              settings=settings, pairs_out=run / "pairs.tsv", groups_out=run / "groups.jsonl",
                              keep_out=run / "keep.txt")
        assert summary.text_bytes == sum(len(text.encode()) for _, text in corpus)
        assert read_index_settings(solr).fields == (DEDUPE_SETTINGS.fields if settings is None else settings.fields)
        outputs[name] = {f: (run / f).read_bytes() for f in ("out.jsonl", "pairs.tsv", "groups.jsonl", "keep.txt")}
    assert DEDUPE_SETTINGS.fields == ("lsh",)
    assert outputs["lean"] == outputs["every field"] and outputs["lean"]["pairs.tsv"].count(b"\n") > 100

    # A collection that already holds documents keeps its settings: dedupe of another data set adds to it as is.
    dedupe_file(SolrClient(solr_url), source, tmp_path / "again.jsonl", THRESHOLD, dataset="second", clear="dataset")
    assert read_index_settings(solr).fields == DEFAULT_TOKEN_FIELDS + ("minhash",)
    assert (tmp_path / "again.jsonl").read_bytes() == outputs["lean"]["out.jsonl"]
