"""Inputs and outputs of the Spark jobs: the formats ``index`` reads, Parquet, and the pairs file ``report`` writes.

Parquet (a file or a directory of part files, with an id and a text column) is read by Spark itself, so on a
cluster it is read in parallel from shared storage. The line formats (lines, TSV, JSONL) are read by the
executors in parallel byte ranges (:mod:`neardup_solr.spark.line_input`) when they can see the file (a local
master, or ``read_on="executors"``); otherwise, and for CSV or compressed files, they are read on the driver. Both
use :class:`~neardup_solr.io.readers.RecordReader`, the reader ``index`` uses, and stage the records as Parquet in
``staging_dir`` (which the executors must see: local disk in local mode, shared storage on a cluster); the driver
reads in chunks, so it never holds the file. Unreadable records are returned with their line and reason; an id
given twice keeps its last record, as indexing the file would, and the earlier ones are returned as rejected.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from neardup_solr.errors import InvalidParameterError, InvalidRecordError
from neardup_solr.io.readers import FORMATS, RecordReader, input_format as file_format, LINE_FORMATS
from neardup_solr.io.outputs import write_atomically
from neardup_solr.pairs.similar_pairs import pairs_file_header, SimilarPair, pair_lines
from neardup_solr.spark.ordering import id_order_keys
from neardup_solr.validation import check_choice, tsv_id
from neardup_solr.spark.line_input import read_on_executors
from neardup_solr.io.inputs import inspect_input

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

INPUT_FORMATS = FORMATS + ("parquet",)
# Records per Parquet row group while staging a line-format file (~100 MB of text at 2 KB a record).
STAGING_CHUNK = 50_000


@dataclass
class InputRead:
    """``records``: a DataFrame of ``id, text`` (ids unique); ``rejected``: what could not become a record;
    ``lines``: ``id, line`` of a text file's records (the line a record ends on, as the reader numbers them), so
    that its kept records can be copied out in input order (None for Parquet)."""

    records: "DataFrame"
    rejected: list[InvalidRecordError] = field(default_factory=list)
    read: int = 0  # records read, rejected ones included
    lines: "DataFrame | None" = None


def input_format(path: str | Path, fmt: str | None = None) -> str:
    """The format of ``path``: ``fmt`` if given, Parquet for a directory (a data set as Spark writes it), else
    ``index``'s own choice (:func:`neardup_solr.io.readers.input_format`: by name, Parquet by content, compressed
    files read as they are, binary files refused)."""
    if fmt is not None and fmt not in INPUT_FORMATS:
        raise InvalidParameterError("format", f"one of {', '.join(INPUT_FORMATS)}", fmt)
    if Path(path).is_dir():
        return fmt or "parquet"

    return file_format(path, fmt)


READ_ON = ("auto", "driver", "executors")


def read_records(
    spark: "SparkSession",
    path: str | Path,
    fmt: str | None = None,
    *,
    staging_dir: str | Path,
    id_field: str = "id",
    text_field: str = "text",
    on_decode_error: str = "latin-1",
    read_on: str = "auto",
) -> InputRead:
    """The records of ``path`` as a DataFrame ``id, text`` (see the module docstring). ``read_on`` says who reads
    a line-format file: ``executors`` in parallel byte ranges (:mod:`neardup_solr.spark.line_input`; they must
    see the file), ``driver`` in one pass, ``auto`` the executors with a local master and the driver otherwise.
    A compressed or CSV file is always read on the driver."""

    read_on = check_choice("read_on", read_on, READ_ON)
    fmt = input_format(path, fmt)
    if not Path(path).exists():
        raise FileNotFoundError(f"input file not found: {path}")
    if fmt == "parquet":
        return _read_parquet(spark, str(path), id_field, text_field)
    staging = Path(staging_dir)
    staging.mkdir(parents=True, exist_ok=True)
    if reads_on_executors(spark, Path(path), fmt, read_on):
        frame, rejected, read = read_on_executors(spark, Path(path), fmt, staging, id_field, text_field,
                                                  on_decode_error)
        return _keep_last_copies(spark, frame, Path(path), rejected, read)
    if read_on == "executors":
        log.info("%s is compressed or CSV: it is read on the driver", path)
    return _read_staged(spark, Path(path), fmt, staging, id_field, text_field, on_decode_error)


def reads_on_executors(spark: "SparkSession", path: Path, fmt: str, read_on: str) -> bool:
    """Whether the executors read ``path`` in byte ranges (``read_on``: see :func:`read_records`)."""
    return _splittable(path, fmt) and (read_on == "executors" or (
        read_on == "auto" and (spark.sparkContext.master or "").startswith("local")))


def _splittable(path: Path, fmt: str) -> bool:
    """A file the executors can read in byte ranges: one record a line, not compressed."""

    return fmt in LINE_FORMATS and inspect_input(path).compression is None


def _read_parquet(spark: "SparkSession", path: str, id_field: str, text_field: str) -> InputRead:
    from pyspark.sql import functions as F

    frame = spark.read.parquet(path)
    missing = [c for c in (id_field, text_field) if c not in frame.columns]
    if missing:
        raise InvalidParameterError("columns", f"columns {id_field!r} and {text_field!r}", path,
                                    f"{path} has no {', '.join(map(repr, missing))}; its columns: "
                                    f"{', '.join(frame.columns)}", show_value=False)
    records = frame.select(F.col(id_field).cast("string").alias("id"), F.col(text_field).cast("string").alias("text"))
    # Parquet has no line order saying which copy of a repeated id indexing would keep: every copy is refused.
    repeated = records.groupBy("id").count().filter(F.col("count") > 1).collect()
    rejected = [InvalidRecordError(f"the id is given {row['count']} times in the file; give each record its own "
                                   "id", source=path, record_id=row["id"]) for row in repeated]
    if repeated:
        ids = spark.createDataFrame([(row["id"],) for row in repeated], "id string")
        records = records.join(F.broadcast(ids), "id", "left_anti")
    total = records.count() + sum(int(row["count"]) for row in repeated)
    return InputRead(records, rejected, total)


def _read_staged(spark: "SparkSession", path: Path, fmt: str, staging_dir: Path, id_field: str, text_field: str,
                 on_decode_error: str) -> InputRead:
    import pyarrow as pa
    import pyarrow.parquet as pq

    reader = RecordReader(path, fmt, id_field=id_field, text_field=text_field, on_decode_error=on_decode_error)
    staged = staging_dir / f"{path.name}.parquet"
    schema = pa.schema([("id", pa.string()), ("text", pa.string()), ("line", pa.int64())])
    rejected: list[InvalidRecordError] = []
    records: dict[str, list] = {"id": [], "text": [], "line": []}
    read = 0
    with pq.ParquetWriter(staged, schema) as writer:
        def flush() -> None:
            if records["id"]:
                writer.write_table(pa.table(records, schema=schema))
                for column in records.values():
                    column.clear()

        for item in reader:
            read += 1
            if isinstance(item, InvalidRecordError):
                rejected.append(item)
                continue
            records["id"].append(item.id)
            records["text"].append(item.text)
            records["line"].append(item.line)
            if len(records["id"]) >= STAGING_CHUNK:
                flush()
        flush()
    return _keep_last_copies(spark, spark.read.parquet(str(staged)), path, rejected, read)


def _keep_last_copies(spark: "SparkSession", frame: "DataFrame", path: Path, rejected: list[InvalidRecordError],
                      read: int) -> InputRead:
    """``frame`` (``id, text, line``) with only the last copy of a repeated id (:func:`drop_earlier_copies`)."""
    frame, _ = drop_earlier_copies(spark, frame, path, rejected)
    return InputRead(frame.select("id", "text"), rejected, read, frame.select("id", "line"))


def drop_earlier_copies(spark: "SparkSession", frame: "DataFrame", path: Path, rejected: list[InvalidRecordError],
                        *, order: str = "line", line_of: "Callable[[int], int] | None" = None
                        ) -> tuple["DataFrame", list[int]]:
    """``frame`` (with ``id`` and the ``order`` column, in which a later copy of an id has the larger value) with
    only the last copy of a repeated id, as indexing the file keeps it, and the ``order`` values of the dropped
    copies. They join ``rejected`` (sorted by line), named by their line: ``line_of(value)`` (default: the value
    is the line). Repeated ids are found by Spark, not with a map of every id on the driver (its memory grew with
    the file): only the repeated ids and their earlier copies come back to it."""
    from pyspark.sql import functions as F

    line_of = line_of or (lambda value: value)
    # First by a 64-bit hash of the id (Spark aggregates long keys faster than strings); only the records whose
    # hash repeats, usually none, are grouped by the id itself.
    hashes = (frame.groupBy(F.xxhash64("id").alias("hash")).count().filter(F.col("count") > 1)
              .select("hash").collect())
    overwritten: list = []
    if hashes:
        suspects = frame.join(F.broadcast(spark.createDataFrame([(r["hash"],) for r in hashes], "hash long")),
                              F.xxhash64(frame["id"]) == F.col("hash"), "left_semi")
        repeated = (suspects.groupBy("id").agg(F.count("*").alias("copies"), F.max(order).alias("last"))
                    .filter(F.col("copies") > 1).select("id", "last").collect())
        if repeated:
            last = spark.createDataFrame([(row["id"], row["last"]) for row in repeated], "id string, last long")
            overwritten = (frame.join(F.broadcast(last), "id").filter(F.col(order) < F.col("last"))
                           .select("id", order).orderBy(order).collect())
            lost = spark.createDataFrame([(r[order],) for r in overwritten], f"{order} long")
            frame = frame.join(F.broadcast(lost), order, "left_anti")
            rejected.extend(InvalidRecordError("the id is given again later in the file; the later record is kept, "
                                               "as indexing the file would", source=str(path),
                                               line=line_of(r[order]), record_id=r["id"]) for r in overwritten)
    rejected.sort(key=lambda e: e.line or 0)
    return frame, [r[order] for r in overwritten]


def write_pairs_from_executors(pairs: "DataFrame", out: str | Path, staging_dir: str | Path) -> None:
    """The pairs file ``report --threshold`` writes, byte for byte, without the pairs on the driver: the executors
    sort the pairs (by id, then neighbour id, numeric-aware as ``report`` sorts them), format each line with the
    same Python code and write part files into ``staging_dir`` (which the driver must see); the driver then
    streams the parts, in order, behind the header into ``out``, which appears complete or not at all."""
    from pyspark.sql import functions as F

    def lines(frames):  # pandas DataFrames of a partition, in order: one TSV line per pair
        import pandas as pd

        for frame in frames:
            rows = (SimilarPair(a, b, float(s)) for a, b, s in
                    zip(frame["id"], frame["neighbor_id"], frame["similarity"]))
            yield pd.DataFrame({"value": [line[:-1] for line in pair_lines(rows)][1:]}, dtype=object)

    parts = Path(staging_dir) / "pairs-parts"
    (pairs.select("id", "neighbor_id", "similarity")
     .orderBy(*id_order_keys(F.col("id")), *id_order_keys(F.col("neighbor_id")))
     .mapInPandas(lines, "value string")
     .write.mode("overwrite").text(str(parts)))

    _merge_parts(parts, out, pairs_file_header())


def write_keep_list_from_executors(ids: "DataFrame", dropped: "DataFrame", out: str | Path,
                                   staging_dir: str | Path) -> int:
    """The keep list ``groups --keep --with-singletons`` writes (every id of ``ids`` except those of ``dropped``,
    the groups' non-representative members: :attr:`~neardup_solr.spark.groups.SparkGroups.dropped`; one id a
    line, numeric-aware order), byte for byte, sorted and formatted by the executors and streamed into ``out`` as
    :func:`write_pairs_from_executors` does: the driver holds no id. Returns the number of ids written."""
    from pyspark.sql import functions as F

    def lines(frames):
        import pandas as pd

        for frame in frames:
            yield pd.DataFrame({"value": [tsv_id(i) for i in frame["id"]]}, dtype=object)

    parts = Path(staging_dir) / "keep-parts"
    (ids.select("id").join(dropped.select("id"), "id", "left_anti")
     .orderBy(*id_order_keys(F.col("id")))
     .mapInPandas(lines, "value string")
     .write.mode("overwrite").text(str(parts)))
    return _merge_parts(parts, out, "")


def _merge_parts(parts: Path, out: str | Path, header: str) -> int:
    """Stream the text part files of ``parts``, in order, behind ``header`` into ``out`` (atomically); returns the
    number of lines the parts held."""
    count = 0

    def chunks():
        nonlocal count
        if header:
            yield header
        for part in sorted(parts.glob("part-*")):
            with open(part, encoding="utf-8") as fh:
                while True:
                    chunk = fh.read(1 << 20)
                    if not chunk:
                        break
                    count += chunk.count("\n")
                    yield chunk

    write_atomically(out, chunks())
    return count


def write_pairs_parquet(pairs: "DataFrame", out: str | Path) -> None:
    """The pairs as a Parquet directory (``id``, ``neighbor_id``, ``similarity``), replaced if it exists."""
    pairs.select("id", "neighbor_id", "similarity").write.mode("overwrite").parquet(str(out))
