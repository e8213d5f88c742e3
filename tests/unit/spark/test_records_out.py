"""The pure parts of spark/records_out.py: a CSV file's rows found where the reader finds its records, and the
one-pass copy of the records that end on given lines (compressed input, byte order mark, line ends). No JVM."""

from __future__ import annotations

import gzip
import io

from neardup_solr.io.readers import Record, RecordReader
from neardup_solr.io.kept_records import write_bytes_atomically
from neardup_solr.spark.records_out import copy_lines, csv_rows

CSV = (b"\xef\xbb\xbfid,text\r\n"
       b"c1,\"quoted, with \"\"quotes\"\"\"\r\n"
       b"\r\n"
       b"c2,\"over\r\nthree lines\n\nwith an empty one\"\n"
       b"   ,  \n"
       b"1,2,3\n"
       b"c3,caf\xe9 in latin-1\n"
       b"c4,last without a line end")


def test_csv_rows_end_where_the_reader_numbers_its_records(tmp_path):
    path = tmp_path / "in.csv"
    path.write_bytes(CSV)
    records = {item.line: item.id for item in RecordReader(path) if isinstance(item, Record)}
    rows = dict(csv_rows(io.BytesIO(CSV)))
    assert set(records) <= set(rows)
    assert rows[1] == b"id,text"  # the header, without its byte order mark and line end
    by_id = {records[line]: rows[line] for line in records}
    assert by_id == {"c1": b'c1,"quoted, with ""quotes"""', "c2": b'c2,"over\nthree lines\n\nwith an empty one"',
                     "c3": b"c3,caf\xe9 in latin-1", "c4": b"c4,last without a line end"}


def test_copy_lines_of_a_compressed_file_and_of_csv(tmp_path):
    lines = tmp_path / "in.jsonl.gz"
    lines.write_bytes(gzip.compress(b'\xef\xbb\xbf{"id": "a", "text": "x"}\r\n\n{"id": "b", "text": "y"}\n'
                                    b'{"id": "c", "text": "z"}'))
    part = str(tmp_path / "part")
    assert copy_lines(str(lines), "jsonl", iter([1, 4]), part) == 2
    assert (tmp_path / "part").read_bytes() == b'{"id": "a", "text": "x"}\n{"id": "c", "text": "z"}\n'

    csv_path = tmp_path / "in.csv"
    csv_path.write_bytes(CSV)
    assert copy_lines(str(csv_path), "csv", iter([7, 11]), part) == 2
    assert (tmp_path / "part").read_bytes() == (b'id,text\nc2,"over\nthree lines\n\nwith an empty one"\n'
                                               b"c4,last without a line end\n")
    assert copy_lines(str(csv_path), "csv", iter(()), part) == 0  # nothing kept: the header still
    assert (tmp_path / "part").read_bytes() == b"id,text\n"


def test_outputs_compressed_by_name_the_same_bytes_each_time(tmp_path, capfdbinary):
    write_bytes_atomically("-", [b"to standard output\n"])
    assert capfdbinary.readouterr().out == b"to standard output\n"
    for name in ("a.txt.gz", "b.txt.gz"):
        write_bytes_atomically(tmp_path / name, [b"one\n", b"two\n"])
    assert (tmp_path / "a.txt.gz").read_bytes() == (tmp_path / "b.txt.gz").read_bytes()
    assert gzip.decompress((tmp_path / "a.txt.gz").read_bytes()) == b"one\ntwo\n"
    write_bytes_atomically(tmp_path / "c.txt", [b"plain\n"])
    assert (tmp_path / "c.txt").read_bytes() == b"plain\n" and not list(tmp_path.glob("*.tmp"))
