"""Reading a line-format file (lines, TSV, JSONL; not compressed) on the executors, in byte ranges, with the
reader ``index`` uses (:meth:`~neardup_solr.io.readers.RecordReader.parse_line`), so that a record, a rejection
and its reason are the ones indexing the file gives.

A line belongs to the range it starts in: a task seeks to its range's start, skips the rest of a line begun
before it, and reads the lines that start before its range's end. Each task numbers its lines from 1 and counts
them; the driver turns the counts of the ranges before a range into the line numbers of its records (a rejection
names its line as ``index`` would). The parsed records are written as Parquet to the staging directory by the
executors, in parallel, and read back by the job.

The executors must see the input file: any local file in local mode, shared storage on a cluster.
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
PARSED_SCHEMA = ("chunk long, local long, id string, text string, reason string, record_id string, "
                 "lines long")


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


def parse_range(reader: RecordReader, path: str | Path, chunk: int, start: int, end: int) -> "pa.RecordBatch":
    """One range's records and rejections (line numbers local to the range, from 1) and, last, its line count."""
    import pyarrow as pa

    columns: dict[str, list] = {name: [] for name in ("chunk", "local", "id", "text", "reason", "record_id", "lines")}

    def row(local: int, doc_id=None, text=None, reason=None, record_id=None, lines=None) -> None:
        for name, value in (("chunk", chunk), ("local", local), ("id", doc_id), ("text", text), ("reason", reason),
                            ("record_id", record_id), ("lines", lines)):
            columns[name].append(value)

    local = 0
    for local, raw in enumerate(lines_in_range(path, start, end), start=1):
        # Only the file's first line may start with a BOM; elsewhere the number only names lines in messages,
        # which the driver rebuilds with the real line numbers.
        item = reader.parse_line(raw, 1 if start == 0 and local == 1 else local + 1)
        if isinstance(item, Record):
            row(local, doc_id=item.id, text=item.text)
        elif isinstance(item, InvalidRecordError):
            row(local, reason=item.reason, record_id=item.record_id)
    row(0, lines=local)
    return pa.RecordBatch.from_pydict(columns, schema=pa.schema([
        ("chunk", pa.int64()), ("local", pa.int64()), ("id", pa.string()), ("text", pa.string()),
        ("reason", pa.string()), ("record_id", pa.string()), ("lines", pa.int64())]))


def read_on_executors(spark: "SparkSession", path: Path, fmt: str, staging_dir: Path, id_field: str,
                      text_field: str, on_decode_error: str
                      ) -> tuple["DataFrame", list[InvalidRecordError], int]:
    """``(records, rejected, read)``: the records as ``id, text, line``, the rejections with their lines, and
    the number of records read (rejected ones included), as reading the file on the driver gives them."""
    from pyspark.sql import functions as F

    ranges = byte_ranges(path.stat().st_size, max(spark.sparkContext.defaultParallelism * 2,
                                                  -(-path.stat().st_size // RANGE_BYTES)))
    location = str(path.resolve())

    def parse(batches: Iterator["pa.RecordBatch"]) -> Iterator["pa.RecordBatch"]:
        reader = RecordReader(location, fmt, id_field=id_field, text_field=text_field,
                              on_decode_error=on_decode_error)
        for batch in batches:
            for chunk in batch.column("id").to_pylist():
                start, end = ranges[chunk]
                yield parse_range(reader, location, chunk, start, end)

    staged = staging_dir / f"{path.name}.ranges.parquet"
    (spark.range(0, len(ranges), numPartitions=len(ranges)).mapInArrow(parse, PARSED_SCHEMA)
     .write.mode("overwrite").parquet(str(staged)))
    parsed = spark.read.parquet(str(staged))
    counts = {row["chunk"]: row["lines"] for row in parsed.where("lines IS NOT NULL").select("chunk", "lines").collect()}
    offsets, before = {}, 0
    for chunk in range(len(ranges)):
        offsets[chunk] = before
        before += counts.get(chunk, 0)
    offset_of = spark.createDataFrame(sorted(offsets.items()), "chunk long, offset long")
    numbered = (parsed.where("lines IS NULL").join(F.broadcast(offset_of), "chunk")
                .withColumn("line", F.col("offset") + F.col("local")))
    rejected = [InvalidRecordError(row["reason"], source=str(path), line=row["line"], record_id=row["record_id"])
                for row in numbered.where("reason IS NOT NULL").select("reason", "line", "record_id")
                .orderBy("line").collect()]
    records = numbered.where("reason IS NULL").select("id", "text", "line")
    read = records.count() + len(rejected)
    return records, rejected, read
