"""The kept records copied out as the input holds them (neardup_solr.io.kept_records): byte for byte for the line
formats, CSV records over several lines and their quoting included; Parquet with the input's schema; compressed
by the output's name; never half written. Pure: no Solr."""

from __future__ import annotations

import bz2
import gzip
import lzma

import pytest

from neardup_solr.errors import InvalidParameterError
from neardup_solr.io.kept_records import check_output_format, write_kept_records
from neardup_solr.io.readers import Record, RecordReader


def keep_ids(*ids: str):
    chosen = set(ids)
    return lambda record: record.id in chosen


def test_lines_are_copied_byte_for_byte_and_end_in_a_newline(tmp_path):
    source = tmp_path / "in.txt"
    source.write_bytes(
        b"\xef\xbb\xbfa1 first   record  with odd  spacing \r\n"  # BOM, CRLF, inner and trailing spaces
        b"\n"
        b"a2 caf\xc3\xa9 \xe2\x80\x94 na\xc3\xafve \xf0\x9f\x99\x82\tand a tab\n"
        b"   starts with white space so it has no id\n"
        b"a3 latin-1 \xe9t\xe9 bytes\n"
        b"a4 dropped\n"
        b"a5 last line without a newline")
    counts = write_kept_records(source, tmp_path / "out.txt", keep_ids("a1", "a2", "a3", "a5"))
    assert (tmp_path / "out.txt").read_bytes() == (
        b"a1 first   record  with odd  spacing \n"
        b"a2 caf\xc3\xa9 \xe2\x80\x94 na\xc3\xafve \xf0\x9f\x99\x82\tand a tab\n"
        b"a3 latin-1 \xe9t\xe9 bytes\n"
        b"a5 last line without a newline\n")
    assert (counts.read, counts.written) == (6, 4)  # the refused line is read (and never written)


def test_jsonl_and_tsv_lines_keep_their_own_spelling(tmp_path):
    jsonl = tmp_path / "in.jsonl"
    lines = [b'{"text": "caf\\u00e9 first", "id": "j1", "extra": [1, 2]}',
             b'{ "id" : "j2" ,  "text":"caf\xc3\xa9 second"}',
             b'{"id": "j3", "text": "third"}']
    jsonl.write_bytes(b"\n".join(lines) + b"\n")
    write_kept_records(jsonl, tmp_path / "out.jsonl", keep_ids("j1", "j2"))
    assert (tmp_path / "out.jsonl").read_bytes() == lines[0] + b"\n" + lines[1] + b"\n"
    tsv = tmp_path / "in.tsv"
    tsv.write_bytes(b"t1\t  text with leading spaces\tand a second tab\nt2\tsecond\n")
    write_kept_records(tsv, tmp_path / "out.tsv", keep_ids("t1"))
    assert (tmp_path / "out.tsv").read_bytes() == b"t1\t  text with leading spaces\tand a second tab\n"


CSV = (b'id,text,source\r\n'
       b'c1,"quoted, with a comma and ""quotes""",web\r\n'
       b'\r\n'
       b'c2,"a text over\r\nthree lines\n\nwith an empty one",scan\r\n'
       b'c3,plain,web\r\n'
       b'  ,  ,  \r\n'
       b'c4,"caf\xc3\xa9 ""\xe2\x80\x94""",web')


def test_csv_records_over_several_lines_and_quoting_are_copied(tmp_path):
    source = tmp_path / "in.csv"
    source.write_bytes(CSV)
    counts = write_kept_records(source, tmp_path / "out.csv", keep_ids("c1", "c2", "c4"))
    assert (tmp_path / "out.csv").read_bytes() == (
        b'id,text,source\n'
        b'c1,"quoted, with a comma and ""quotes""",web\n'
        b'c2,"a text over\nthree lines\n\nwith an empty one",scan\n'
        b'c4,"caf\xc3\xa9 ""\xe2\x80\x94""",web\n')
    assert (counts.read, counts.written) == (4, 3)  # the blank and the white-space-only rows are no records
    # The copy reads back as the same records.
    again = [(r.id, r.text) for r in RecordReader(tmp_path / "out.csv") if isinstance(r, Record)]
    original = [(r.id, r.text) for r in RecordReader(source) if isinstance(r, Record)]
    assert again == [pair for pair in original if pair[0] != "c3"]


def test_csv_header_is_written_when_nothing_is_kept(tmp_path):
    source = tmp_path / "in.csv"
    source.write_bytes(CSV)
    write_kept_records(source, tmp_path / "out.csv", keep_ids())
    assert (tmp_path / "out.csv").read_bytes() == b"id,text,source\n"


@pytest.mark.parametrize("suffix, decompress", [(".gz", gzip.decompress), (".bz2", bz2.decompress),
                                                (".xz", lzma.decompress)])
def test_compressed_in_and_out_by_name(tmp_path, suffix, decompress):
    plain = b'{"id": "1", "text": "one"}\n{"id": "2", "text": "two"}\n{"id": "3", "text": "three"}\n'
    compress = {".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress}[suffix]
    source = tmp_path / f"in.jsonl{suffix}"
    source.write_bytes(compress(plain))
    out = tmp_path / f"out.jsonl{suffix}"
    write_kept_records(source, out, keep_ids("1", "3"))
    assert decompress(out.read_bytes()) == b'{"id": "1", "text": "one"}\n{"id": "3", "text": "three"}\n'
    if suffix == ".gz":  # no name or time stamp in the header: the same records give the same bytes
        first = out.read_bytes()
        write_kept_records(source, out, keep_ids("1", "3"))
        assert out.read_bytes() == first


def test_parquet_keeps_the_schema_and_the_row_order(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    table = pa.table({"id": [f"p{i}" for i in range(5000)], "text": [f"text {i}" for i in range(5000)],
                      "score": pa.array([i / 3 for i in range(5000)], type=pa.float32()),
                      "tags": [[str(i)] for i in range(5000)]})
    source = tmp_path / "in.parquet"
    pq.write_table(table, source, row_group_size=1500)
    kept = {f"p{i}" for i in range(5000) if i % 7 and i != 2100}
    counts = write_kept_records(source, tmp_path / "out.parquet", keep_ids(*kept))
    result = pq.read_table(tmp_path / "out.parquet")
    assert result.schema == table.schema
    assert result.to_pylist() == [row for row in table.to_pylist() if row["id"] in kept]
    assert (counts.read, counts.written) == (5000, len(kept))
    write_kept_records(source, tmp_path / "out.parquet.gz", keep_ids(*kept))
    assert pq.read_table(pa.BufferReader(gzip.decompress((tmp_path / "out.parquet.gz").read_bytes()))) == result


def test_a_failed_copy_leaves_no_output(tmp_path):
    source = tmp_path / "in.txt"
    source.write_bytes(b"a keep\nb boom\n")
    out = tmp_path / "out.txt"
    out.write_bytes(b"an earlier complete result\n")

    def keep(record):
        if record.id == "b":
            raise RuntimeError("stopped")
        return True

    with pytest.raises(RuntimeError):
        write_kept_records(source, out, keep)
    assert out.read_bytes() == b"an earlier complete result\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt", "out.txt"]


def test_an_output_named_for_another_format_is_refused():
    check_output_format("out.jsonl.gz", "jsonl")
    check_output_format("deduplicated.txt", "jsonl")  # a name that says no format
    with pytest.raises(InvalidParameterError, match="csv"):
        check_output_format("out.csv", "jsonl")
