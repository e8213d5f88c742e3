"""Reading a line-format file (lines, TSV, JSONL; not compressed) on the executors, in byte ranges, with the
reader ``index`` uses (:meth:`~neardup_solr.io.readers.RecordReader.parse_line`), so that a record, a rejection
and its reason are the ones indexing the file gives.

A line belongs to the range it starts in: a task seeks to its range's start, skips the rest of a line begun
before it, and reads the lines that start before its range's end. Each task numbers its lines from 1 and counts
them; the driver turns the counts of the ranges before a range into the line numbers of its records (a rejection
names its line as ``index`` would). Each task writes its records as a Parquet file into the staging directory
with pyarrow and hands Spark only its summary; the job then reads the records from those files.

The executors must see the input file and write to the staging directory: any local paths in local mode, shared
storage on a cluster.
:func:`neardup_solr.spark.io.read_records` chooses this path for local masters, or when asked.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from neardup_solr.errors import InvalidRecordError
from neardup_solr.io.readers import Record, RecordReader

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

RANGE_BYTES = 32 * 2**20
SUMMARY_SCHEMA = "chunk long, local long, reason string, record_id string, lines long"


def byte_ranges(size: int, parts: int) -> list[tuple[int, int]]:
    """``parts`` ranges ``[start, end)`` that cover ``size`` bytes (fewer when the file is small)."""
    parts = max(1, min(parts, size))
    edges = [size * i // parts for i in range(parts + 1)]
    return [(edges[i], edges[i + 1]) for i in range(parts) if edges[i + 1] > edges[i]] or [(0, 0)]


def lines_in_range(path: str | Path, start: int, end: int) -> Iterator[bytes]:
    """The raw lines (with their line ends) that start in ``[start, end)``."""
    with open(path, "rb") as fh:
        if start > 0:
            fh.seek(start - 1)
            fh.readline()  # the end of a line that started before the range (or only the newline at start - 1)
        position = fh.tell()
        while position < end:
            raw = fh.readline()
            if not raw:
                return
            yield raw
            position += len(raw)


def parse_range(reader: RecordReader, path: str | Path, chunk: int, start: int, end: int
                ) -> tuple["pa.Table", "pa.RecordBatch"]:
    """One range's records (``chunk, local, id, text``; ``local`` numbers the range's lines from 1) and its
    summary: its rejections (``local``, reason, id) and a last row with its line count and, in ``local``, how many
    of them are records."""
    import pyarrow as pa

    records: dict[str, list] = {"local": [], "id": [], "text": []}
    summary: dict[str, list] = {"local": [], "reason": [], "record_id": [], "lines": []}
    local = 0
    for local, raw in enumerate(lines_in_range(path, start, end), start=1):
        # Only the file's first line may start with a BOM; elsewhere the number only names lines in messages,
        # which the driver rebuilds with the real line numbers.
        item = reader.parse_line(raw, 1 if start == 0 and local == 1 else local + 1)
        if isinstance(item, Record):
            records["local"].append(local)
            records["id"].append(item.id)
            records["text"].append(item.text)
        elif isinstance(item, InvalidRecordError):
            for name, value in (("local", local), ("reason", item.reason), ("record_id", item.record_id),
                                ("lines", None)):
                summary[name].append(value)
    for name, value in (("local", len(records["id"])), ("reason", None), ("record_id", None), ("lines", local)):
        summary[name].append(value)
    table = pa.table({"chunk": pa.array([chunk] * len(records["id"]), pa.int64()),
                      "local": pa.array(records["local"], pa.int64()),
                      "id": pa.array(records["id"], pa.string()), "text": pa.array(records["text"], pa.string())})
    batch = pa.RecordBatch.from_pydict({"chunk": [chunk] * len(summary["local"]), **summary}, schema=pa.schema([
        ("chunk", pa.int64()), ("local", pa.int64()), ("reason", pa.string()), ("record_id", pa.string()),
        ("lines", pa.int64())]))
    return table, batch


def read_on_executors(spark: "SparkSession", path: Path, fmt: str, staging_dir: Path, id_field: str,
                      text_field: str, on_decode_error: str
                      ) -> tuple["DataFrame", list[InvalidRecordError], int]:
    """``(records, rejected, read)``: the records as ``id, text, line``, the rejections with their lines, and
    the number of records read (rejected ones included), as reading the file on the driver gives them."""
    import os

    from pyspark.sql import functions as F

    size = path.stat().st_size
    ranges = byte_ranges(size, max(spark.sparkContext.defaultParallelism * 2, -(-size // RANGE_BYTES)))
    location = str(path.resolve())
    staged = staging_dir / f"{path.name}.ranges"
    staged.mkdir(parents=True, exist_ok=True)
    for old in staged.glob("part-*.parquet"):
        old.unlink()
    target = str(staged.resolve())

    def parse(batches: Iterator["pa.RecordBatch"]) -> Iterator["pa.RecordBatch"]:
        import pyarrow.parquet as pq

        reader = RecordReader(location, fmt, id_field=id_field, text_field=text_field,
                              on_decode_error=on_decode_error)
        for batch in batches:
            for chunk in batch.column("id").to_pylist():
                table, summary = parse_range(reader, location, chunk, *ranges[chunk])
                # Written here, by pyarrow, not handed to the JVM to write: the texts never cross into Spark's
                # rows until the job reads them. A retried task replaces its own file.
                part = os.path.join(target, f"part-{chunk:06d}.parquet")
                pq.write_table(table, part + ".tmp", compression="none")
                os.replace(part + ".tmp", part)
                yield summary

    small = (spark.range(0, len(ranges), numPartitions=len(ranges)).mapInArrow(parse, SUMMARY_SCHEMA).collect())
    lines = {row["chunk"]: row["lines"] for row in small if row["lines"] is not None}
    read = sum(row["local"] for row in small if row["lines"] is not None)
    offsets, before = {}, 0
    for chunk in range(len(ranges)):
        offsets[chunk] = before
        before += lines.get(chunk, 0)
    rejected = sorted((InvalidRecordError(row["reason"], source=str(path), line=offsets[row["chunk"]] + row["local"],
                                          record_id=row["record_id"]) for row in small if row["reason"] is not None),
                      key=lambda error: error.line or 0)
    offset_of = spark.createDataFrame(sorted(offsets.items()), "chunk long, offset long")
    records = (spark.read.parquet(target).join(F.broadcast(offset_of), "chunk")
               .select("id", "text", (F.col("offset") + F.col("local")).alias("line")))
    return records, rejected, read + len(rejected)
