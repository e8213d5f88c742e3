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

:func:`sign_on_executors` goes one step further for a dedup (:func:`neardup_solr.spark.jobs.dedup_file`): each
task signs the records it has just parsed and hands Spark the signatures, its summary and its band slices, in one
output, so the texts are neither staged nor read a second time. At a million documents this took the read and
the signing from 25 to 19 seconds of wall time on two cores (benchmarks/spark.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from neardup_solr.errors import InvalidRecordError
from neardup_solr.io.readers import Record, RecordReader
from neardup_solr.spark.signing import document_builder, fixed_rows, for_executors, sign_arrays
from neardup_solr.spark.buckets import slices_per_band, slice_batch

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

    from neardup_solr.pairs.lsh import LSHParams
    from neardup_solr.signing.builder import DocumentBuilder
    from neardup_solr.signing.settings import IndexSettings

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

    ranges = plan_ranges(spark, path)
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
    offsets, rejected, read = line_numbers(small, len(ranges), path)
    offset_of = spark.createDataFrame(sorted(offsets.items()), "chunk long, offset long")
    records = (spark.read.parquet(target).join(F.broadcast(offset_of), "chunk")
               .select("id", "text", (F.col("offset") + F.col("local")).alias("line")))
    return records, rejected, read


def plan_ranges(spark: "SparkSession", path: Path) -> list[tuple[int, int]]:
    """The byte ranges the executors read ``path`` in: two a core at least, none over :data:`RANGE_BYTES`."""
    size = path.stat().st_size
    return byte_ranges(size, max(spark.sparkContext.defaultParallelism * 2, -(-size // RANGE_BYTES)))


def line_numbers(summaries: list, ranges: int, path: Path) -> tuple[dict[int, int], list[InvalidRecordError], int]:
    """From the ranges' summary rows (:func:`parse_range`): the line number before each range's first line, the
    rejections with their real line numbers (in line order), and the records read, rejected ones included."""
    lines = {row["chunk"]: row["lines"] for row in summaries if row["lines"] is not None}
    read = sum(row["local"] for row in summaries if row["lines"] is not None)
    offsets, before = {}, 0
    for chunk in range(ranges):
        offsets[chunk] = before
        before += lines.get(chunk, 0)
    rejected = sorted((InvalidRecordError(row["reason"], source=str(path), line=offsets[row["chunk"]] + row["local"],
                                          record_id=row["record_id"])
                       for row in summaries if row["reason"] is not None), key=lambda error: error.line or 0)
    return offsets, rejected, read + len(rejected)


def sign_on_executors(spark: "SparkSession", path: Path, fmt: str, id_field: str, text_field: str,
                      on_decode_error: str, settings: "IndexSettings", params: "LSHParams") -> "SignedFile":
    """Read ``path`` in byte ranges and sign each range's records in the task that read them: the texts go from
    the file to the signer without crossing into Spark (no staging, no second read), and the band keys go
    straight into the band-major slices the band buckets are found in
    (:func:`~neardup_solr.spark.buckets.slice_batch`), never into Spark rows of their own."""
    from pyspark.sql import functions as F

    ranges = plan_ranges(spark, path)
    location = str(path.resolve())
    # The slices' parts from the file's size (the records are not counted yet): 512 bytes a record at least.
    parts = slices_per_band(path.stat().st_size // 512)
    settings = for_executors(settings)

    def parse_and_sign(batches: Iterator["pa.RecordBatch"]) -> Iterator["pa.RecordBatch"]:
        reader = RecordReader(location, fmt, id_field=id_field, text_field=text_field,
                              on_decode_error=on_decode_error)
        builder = document_builder(settings)
        for batch in batches:
            for chunk in batch.column("id").to_pylist():
                yield from _read_and_sign_range(reader, builder, params, location, chunk, ranges[chunk], parts)

    cached = (spark.range(0, len(ranges), numPartitions=len(ranges)).mapInArrow(parse_and_sign, SIGNED_FILE_SCHEMA)
              .cache())
    cached.count()  # the read and the signing, under the caller's stage name (a collect is named after its line)
    small = (cached.filter(F.col("kind") == _SUMMARY).select("chunk", "local", "reason", "record_id", "lines")
             .collect())
    offsets, rejected, read = line_numbers(small, len(ranges), path)
    signed = cached.filter(F.col("kind") == _RECORD).select("id", "signature", "shingles", "problem", "row",
                                                            "length")
    slices = cached.filter(F.col("kind") == _SLICE).select("band", "part", "keys", "rows")
    return SignedFile(signed, slices, cached, rejected, read, offsets)


@dataclass
class SignedFile:
    """A file read and signed by :func:`sign_on_executors`. ``signed``: a row per record (``id, signature,
    shingles, problem, row, length``: :data:`~neardup_solr.spark.signing.SIGNED_SCHEMA` without the band keys,
    ``row`` the range's number times 2**32 plus the line's number in the range, so rows are in line order, and
    ``length`` the text's length in code points, for ``--representative longest``); ``slices``:
    the valid records' band keys, band-major (:data:`~neardup_solr.spark.buckets.SLICE_SCHEMA`); both computed
    from ``cached``, the tasks' cached output; ``rejected`` and ``read`` as :func:`read_on_executors` gives them;
    ``offsets``: the line number before each range (:meth:`line_of` a row)."""

    signed: "DataFrame"
    slices: "DataFrame"
    cached: "DataFrame"
    rejected: list[InvalidRecordError]
    read: int
    offsets: dict[int, int]

    def line_of(self, row: int) -> int:
        """The file's line number of the record numbered ``row``."""
        return self.offsets[row >> 32] + (row & 0xFFFFFFFF)


# Records signed at a time in a task of sign_on_executors (the size of Spark's own Arrow batches).
SIGN_BATCH = 10_000
# The kinds of rows a task of sign_on_executors writes into one output: a record, a range's summary, a slice.
_RECORD, _SUMMARY, _SLICE = 0, 1, 2
SIGNED_FILE_SCHEMA = ("kind byte, id string, signature array<int>, shingles array<int>, problem string, row long, "
                      "chunk long, local long, reason string, record_id string, lines long, "
                      "band int, part int, keys binary, rows binary, length long")


def _read_and_sign_range(reader: RecordReader, builder: "DocumentBuilder", params: "LSHParams", location: str,
                         chunk: int, byte_range: tuple[int, int], parts: int) -> Iterator["pa.RecordBatch"]:
    """One range's records signed (``kind`` 0), its summary (1) and its valid records' band slices (2)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    table, summary = parse_range(reader, location, chunk, *byte_range)
    keys, rows = [], []
    for piece in table.to_batches(max_chunksize=SIGN_BATCH):
        signed = sign_arrays(builder, params, piece.column("id").to_pylist(), piece.column("text").to_pylist())
        row = (np.int64(chunk) << np.int64(32)) | piece.column("local").to_numpy(zero_copy_only=False)
        valid = signed.column("problem").is_null().to_numpy(zero_copy_only=False)
        if valid.any():
            keys.append(fixed_rows(signed.column("band_keys"), params.bands).view(np.uint64))
            rows.append(row[valid])
        yield _kind_batch(_RECORD, signed.num_rows, {
            **{name: signed.column(name) for name in ("id", "signature", "shingles", "problem")},
            "row": pa.array(row, pa.int64()), "chunk": piece.column("chunk"), "local": piece.column("local"),
            "length": pc.utf8_length(piece.column("text")).cast(pa.int64())})
    yield _kind_batch(_SUMMARY, summary.num_rows, {name: summary.column(name) for name in summary.schema.names})
    if rows:
        slices = slice_batch(np.concatenate(keys), np.concatenate(rows), parts)
        yield _kind_batch(_SLICE, slices.num_rows, {name: slices.column(name) for name in slices.schema.names})


def _kind_batch(kind: int, n: int, given: dict) -> "pa.RecordBatch":
    """``n`` rows of :data:`SIGNED_FILE_SCHEMA` of the ``kind``: the ``given`` columns, every other one null."""
    import pyarrow as pa

    columns = [pa.array([kind] * n, pa.int8())]
    names = ["kind"]
    for field in _file_fields()[1:]:
        names.append(field.name)
        columns.append(given[field.name] if field.name in given else pa.nulls(n, field.type))
    return pa.RecordBatch.from_arrays(columns, names=names)


def _file_fields() -> list:
    import pyarrow as pa

    return [pa.field("kind", pa.int8()), pa.field("id", pa.string()), pa.field("signature", pa.list_(pa.int32())),
            pa.field("shingles", pa.list_(pa.int32())), pa.field("problem", pa.string()),
            pa.field("row", pa.int64()), pa.field("chunk", pa.int64()), pa.field("local", pa.int64()),
            pa.field("reason", pa.string()), pa.field("record_id", pa.string()), pa.field("lines", pa.int64()),
            pa.field("band", pa.int32()), pa.field("part", pa.int32()), pa.field("keys", pa.binary()),
            pa.field("rows", pa.binary()), pa.field("length", pa.int64())]
