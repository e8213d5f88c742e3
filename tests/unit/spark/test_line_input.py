"""Reading a line-format file in byte ranges (the Spark jobs' parallel input): every line read once, by the range
it starts in, whatever the range edges; and each line parsed as reading the whole file parses it."""

from __future__ import annotations

import pytest

from neardup_solr.errors import InvalidRecordError
from neardup_solr.io.readers import Record, RecordReader
from neardup_solr.spark.line_input import byte_ranges, lines_in_range, parse_range


def test_ranges_cover_the_file_without_gaps_or_overlap():
    for size, parts in ((0, 4), (1, 4), (10, 3), (1000, 7), (5, 5)):
        ranges = byte_ranges(size, parts)
        assert ranges[0][0] == 0 and ranges[-1][1] == size
        assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
        assert len(ranges) <= max(1, min(parts, size))


@pytest.mark.parametrize("content", [
    b"a 1\nb 2\r\nc 3\n\nd 4",          # CRLF, a blank line, no newline at the end
    b"\n\n\nx y\n",                      # blank lines first
    b"\xef\xbb\xbfa 1\nb 2\n",           # a BOM
    b"one-line-without-newline",
])
def test_every_line_is_read_once_by_the_range_it_starts_in(tmp_path, content):
    path = tmp_path / "f.txt"
    path.write_bytes(content)
    whole = content.splitlines(keepends=True)
    for parts in range(1, len(content) + 2):
        lines = [raw for start, end in byte_ranges(len(content), parts) for raw in lines_in_range(path, start, end)]
        assert lines == whole, parts


def test_a_range_parses_as_the_whole_file_does_and_counts_its_lines(tmp_path):
    path = tmp_path / "r.jsonl"
    rows = ['{"id": "a", "text": "one two"}', "not json", '{"id": 3.5, "text": "x"}', "",
            '{"id": "b", "text": "three"}', '{"id": "c", "text": 7}']
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    whole = [item for item in RecordReader(path, "jsonl")]
    reader = RecordReader(path, "jsonl")
    size = path.stat().st_size
    for parts in (1, 2, 3, 5):
        records, reasons, lines, counted = [], [], 0, 0
        for chunk, (start, end) in enumerate(byte_ranges(size, parts)):
            table, summary = parse_range(reader, path, chunk, start, end)
            records += list(zip(table.column("id").to_pylist(), table.column("text").to_pylist()))
            assert set(table.column("chunk").to_pylist()) <= {chunk}
            batch = summary.to_pydict()
            for i in range(summary.num_rows):
                if batch["lines"][i] is not None:
                    lines += batch["lines"][i]
                    counted += batch["local"][i]
                else:
                    reasons.append((batch["reason"][i], batch["record_id"][i]))
        assert lines == len(rows) and counted == len(records)
        assert records == [(r.id, r.text) for r in whole if isinstance(r, Record)]
        assert reasons == [(e.reason, e.record_id) for e in whole if isinstance(e, InvalidRecordError)]


def test_parse_line_refuses_formats_that_are_not_one_record_a_line(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text("id,text\n1,a\n", encoding="utf-8")
    with pytest.raises(Exception, match="line format"):
        RecordReader(path, "csv").parse_line(b"1,a\n", 2)
