"""The deduplicated corpus (``spark dedup --records-out OUT``), copied out of the input by the executors.

The rules of the single process's ``dedupe`` (``neardup_solr/io/kept_records.py`` there), so the two write the
same bytes. OUT holds exactly the input records whose id is kept (every record in no pair, and each group's
representative), in input order. "The input records" are the records the run used: a line the reader rejects, a
record that cannot be signed (no words) and the earlier copies of a repeated id (the last one is used, as
indexing keeps it) are not among them, so they are never in OUT.

* **Line formats** (lines, TSV, JSONL, CSV): each kept record is its input line byte for byte, without its line
  end, then ``\\n`` (whatever the input's line ends were; a last line without one gets it too); a CSV record over
  several lines is its lines so treated, joined by ``\\n``. A CSV file's header comes first, also when nothing is
  kept. A UTF-8 byte order mark at the start of the input is not copied. Blank lines are not records.
* **Parquet**: Parquet with the input's schema (Arrow), the kept rows in input order (a directory: its files in
  name order, each file's rows in order).
* **Compression** by OUT's name, as the readers accept it (``.gz``, ``.bz2``, ``.xz``, ``.zst``; Parquet
  too); gzip without a file name or time stamp, so the same records give the same bytes.

Input order comes from the read: a file the executors read and signed in byte ranges
(:func:`~neardup_solr.spark.line_input.sign_on_executors`) carries each record's range and line in it, and the
same ranges are read again by the executors, each task copying its kept lines into a part file; a file read in
one pass (compressed, CSV, or read on the driver) carries each record's line number (the line a CSV record ends
on), and one executor task reads it again in one pass with the kept line numbers streamed to it in order. The
driver streams the part files into OUT, which appears complete or not at all, as the pairs file does.
"""

from __future__ import annotations

import csv
import logging
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Iterator

from neardup_solr.io.kept_records import write_bytes_atomically
from neardup_solr.io.outputs import check_output_path
from neardup_solr.spark.io import input_format
from neardup_solr.spark.line_input import plan_ranges, lines_in_range
from neardup_solr.io.inputs import open_input

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

_BOM = b"\xef\xbb\xbf"


def write_kept_records(spark: "SparkSession", path: str | Path, out: str | Path, staging_dir: str | Path, *,
                       signed: "DataFrame", dropped: "DataFrame", lines: "DataFrame | None", fmt: str | None = None,
                       id_field: str = "id", on_decode_error: str = "latin-1") -> int:
    """Write to ``out`` the records of the input ``path`` that a run kept (module docstring). ``signed``: the
    run's signed records (``id``, and ``row`` when the executors read and signed the file in byte ranges);
    ``dropped``: ``id`` of the groups' members that are not their representative; ``lines``: ``id, line`` of a
    file read in one pass (:attr:`~neardup_solr.spark.io.InputRead.lines`), None otherwise. Returns the number of
    records written."""
    from pyspark.sql import functions as F

    fmt = input_format(path, fmt)
    check_output_path(out, name="records-out")
    parts = Path(staging_dir) / "records-parts"
    shutil.rmtree(parts, ignore_errors=True)
    kept = signed.join(dropped.select("id"), "id", "left_anti")
    if fmt == "parquet":
        written = _write_parquet(spark, Path(path), kept.select("id"), parts, id_field)
        write_bytes_atomically(out, _part_bytes(parts, "records.parquet"), name="records-out")
        return written
    parts.mkdir(parents=True)
    if lines is None:
        if "row" not in signed.columns:
            raise ValueError("the records need their row (a file signed as read) or their lines")
        written = _copy_ranges(spark, Path(path), kept.select(F.shiftright("row", 32).alias("chunk"),
                                                              F.col("row").bitwiseAND(F.lit(0xFFFFFFFF))
                                                              .alias("local")), parts)
    else:
        kept_lines = lines.join(kept.select("id"), "id", "left_semi").select("line")
        written = _copy_in_one_pass(Path(path), fmt, kept_lines, parts, on_decode_error)
    write_bytes_atomically(out, _part_bytes(parts), name="records-out")
    return written


def _part_bytes(parts: Path, pattern: str = "part-*") -> Iterator[bytes]:
    for part in sorted(parts.glob(pattern)):
        with open(part, "rb") as fh:
            while chunk := fh.read(1 << 20):
                yield chunk


def _ended(raw: bytes, first: bool = False) -> bytes:
    """A line as it is copied out: without its line end (and, the input's first, its UTF-8 byte order mark),
    then ``\\n``."""
    if first and raw.startswith(_BOM):
        raw = raw[len(_BOM):]
    return raw.rstrip(b"\r\n") + b"\n"


def _copy_ranges(spark: "SparkSession", path: Path, kept: "DataFrame", parts: Path) -> int:
    """Each byte range of ``path`` with kept records copied by one task into ``parts/part-<range>``; ``kept``:
    ``chunk, local`` (the range and the line in it, as :func:`~neardup_solr.spark.line_input.parse_range` numbers
    them). The ranges are the ones the file was read in (:func:`~neardup_solr.spark.line_input.plan_ranges`)."""

    ranges = plan_ranges(spark, path)
    location = str(path.resolve())
    target = str(parts.resolve())

    def copy(frame):  # pandas: chunk, local of one range's kept records
        import numpy as np
        import pandas as pd

        chunk = int(frame["chunk"].iloc[0])
        wanted = np.sort(frame["local"].to_numpy(dtype=np.int64))
        part = os.path.join(target, f"part-{chunk:06d}")
        done = 0
        start = ranges[chunk][0]
        with open(part + ".tmp", "wb") as fh:
            for local, raw in enumerate(lines_in_range(location, *ranges[chunk]), start=1):
                if done == len(wanted):
                    break
                if local == wanted[done]:
                    fh.write(_ended(raw, first=start == 0 and local == 1))
                    done += 1
        os.replace(part + ".tmp", part)  # a retried task replaces its own part
        return pd.DataFrame({"chunk": [chunk], "written": [done]})

    counts = kept.groupBy("chunk").applyInPandas(copy, "chunk long, written long").collect()
    return sum(int(row["written"]) for row in counts)


def _copy_in_one_pass(path: Path, fmt: str, kept_lines: "DataFrame", parts: Path, on_decode_error: str) -> int:
    """``path`` read again in one pass by one task, which copies the records ending on the ``kept_lines``
    (streamed to it in order: the task never holds them all) into ``parts/part-000000``."""
    import pyarrow as pa

    location = str(path.resolve())
    part = str((parts / "part-000000").resolve())

    def copy(batches):
        wanted = (line for batch in batches for line in batch.column(0).to_pylist())
        yield pa.RecordBatch.from_pydict({"written": [copy_lines(location, fmt, wanted, part, on_decode_error)]},
                                         schema=pa.schema([("written", pa.int64())]))

    counts = kept_lines.repartition(1).sortWithinPartitions("line").mapInArrow(copy, "written long").collect()
    if not Path(part).exists():  # no task ran (nothing kept): the header, where the format has one
        return copy_lines(location, fmt, iter(()), part, on_decode_error)
    return sum(int(row["written"]) for row in counts)


def copy_lines(location: str, fmt: str, wanted: Iterator[int], part: str, on_decode_error: str = "latin-1") -> int:
    """Copy from the (possibly compressed) text file ``location`` into ``part`` its header (CSV) and the records
    that end on the line numbers ``wanted`` (ascending, numbered as the reader numbers them); returns how many.
    Reading stops after the last one."""

    done = 0
    with open_input(location) as opened, open(part + ".tmp", "wb") as fh:
        rows: Iterator[tuple[int, bytes]] = iter(csv_rows(opened.stream, on_decode_error) if fmt == "csv"
                                                 else enumerate(opened.stream, start=1))
        if fmt == "csv":
            header = next(rows, None)
            if header is not None:
                fh.write(header[1] + b"\n")
        target = next(wanted, None)
        for number, raw in rows:
            if target is None:
                break
            if number == target:
                fh.write(raw + b"\n" if fmt == "csv" else _ended(raw, first=number == 1))
                done += 1
                target = next(wanted, None)
    os.replace(part + ".tmp", part)
    return done


def csv_rows(stream: BinaryIO, on_decode_error: str = "latin-1") -> Iterator[tuple[int, bytes]]:
    """The rows of a CSV byte stream as ``(line, raw)``: the line number a row ends on (the reader's
    ``line_num``, which names a CSV record) and its lines as read, each without its line end (the first without
    a byte order mark), joined by ``\\n``. The rows are found by the ``csv`` module over the lines decoded as
    :class:`~neardup_solr.io.readers.RecordReader` decodes them (a line that ``on_decode_error="reject"``
    rejects is an empty one to it too), so the boundaries are the reader's; a blank line is a row of its own."""
    pending: list[bytes] = []

    def texts() -> Iterator[str]:
        for number, raw in enumerate(stream, start=1):
            body = raw.rstrip(b"\r\n")
            if number == 1 and body.startswith(_BOM):
                body = body[len(_BOM):]
            pending.append(body)
            try:
                text = body.decode("utf-8")
            except UnicodeDecodeError:
                # Quotes, commas and line ends are ASCII: any decoding that keeps every byte keeps the rows.
                text = "" if on_decode_error == "reject" else body.decode("latin-1")
            yield text + "\n"

    reader = csv.reader(texts())
    for _row in reader:
        yield reader.line_num, b"\n".join(pending)
        pending.clear()


def _write_parquet(spark: "SparkSession", path: Path, kept_ids: "DataFrame", parts: Path, id_field: str) -> int:
    """The kept rows of the Parquet input ``path`` (a file or a directory) in input order, as one Parquet file
    ``parts/records.parquet`` with the input's schema. The executors pick and sort the rows (by file, then row,
    from Spark's ``_metadata``) and write them as parts; the driver copies the parts' batches into the file."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql import functions as F

    frame = spark.read.parquet(str(path))
    columns = frame.columns
    placed = frame.select("*", F.col("_metadata.file_path").alias("__file"),
                          F.col("_metadata.row_index").alias("__row"))
    chosen = placed.join(kept_ids.select(F.col("id").alias("__id")),
                         placed[id_field].cast("string") == F.col("__id"), "left_semi")
    chosen.orderBy("__file", "__row").select(*columns).write.mode("overwrite").parquet(str(parts))

    schema = _input_schema(path)
    written = 0
    with pq.ParquetWriter(parts / "records.parquet", schema) as writer:
        for part in sorted(parts.glob("part-*.parquet")):
            for batch in pq.ParquetFile(part).iter_batches():
                writer.write_table(pa.Table.from_batches([batch]).cast(schema))
                written += batch.num_rows
    return written


def _input_schema(path: Path) -> "pa.Schema":
    """The Arrow schema of a Parquet file, or of a directory's files (the first one's, in name order)."""
    import pyarrow.parquet as pq

    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith(("_", ".")))
        path = files[0]
    return pq.read_schema(path)
