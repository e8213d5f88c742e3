"""The band buckets of a dedup, band by band, as a few large NumPy arrays instead of one Spark row per band key.

Every valid record has a row number (``row``, a long unique in the job) and one 64-bit key per band (21 at
``t = 0.8``). A bucket is a ``(band, key)`` shared by two or more records. Exploding the keys into one Spark row
each (``row, band, key``: 21 million rows at a million records) and shuffling and sorting those rows was the most
expensive part of a dedup: the JVM handled every row, then handed every row to Python. Here

1. each task of the signed records turns its partition band-major (:func:`band_slices`): for each band and each
   ``part`` (``key mod parts``: slices of a band, so no task holds a whole band of a large corpus) one row with
   the partition's keys and row numbers as two binary blobs. A million records make a few hundred such rows. (A
   file signed as it is read makes them in the reading task: :func:`~neardup_solr.spark.line_input.sign_on_executors`);
2. the slices of one ``(band, part)`` meet in one group (``applyInArrow``) and :func:`bucket_rows_of_slice`
   sorts its keys with NumPy: a run of equal keys is a bucket. It emits, in :data:`BUCKET_ROWS_SCHEMA`,

   - for a bucket of 2 to ``split_bucket`` members, every pair ``a < b`` of its members' row numbers (a pair
     found in several bands is the same row, for a distinct), ``band`` and ``key`` null;
   - for a larger bucket, one row per member (``a`` = its row number, ``b`` null) with its ``band`` and ``key``,
     to be judged with the members' signatures (:func:`~neardup_solr.pairs.candidates.bucket_candidates`).

Keys are compared whole (64 bits), as the single process compares Solr's band tokens: no hash of a hash.
At a million documents this took the band buckets from 31 to 9 seconds of task time (benchmarks/spark.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

import numpy as np

from neardup_solr.pairs._arrays import concat_ranges, run_pairs
from neardup_solr.spark.signing import fixed_rows

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

SLICE_SCHEMA = "band int, part int, keys binary, rows binary"
BUCKET_ROWS_SCHEMA = "a long, b long, band int, key long"
# Records per slice of a band: a group's keys and row numbers (16 bytes a record) stay near 32 MB.
SLICE_RECORDS = 2_000_000


def slices_per_band(records: int) -> int:
    """How many parts each band's keys are cut into for ``records`` records."""
    return max(1, -(-records // SLICE_RECORDS))


def band_slices(signed: "DataFrame", bands: int, parts: int) -> "DataFrame":
    """``signed`` (``row``, ``band_keys``; valid records only) as :data:`SLICE_SCHEMA` rows: per partition, one row
    per band and part holding those keys (uint64 bytes) and the row numbers (int64 bytes) of their records."""

    def transpose(batches: Iterator["pa.RecordBatch"]) -> Iterator["pa.RecordBatch"]:
        keys, rows = [], []
        for batch in batches:
            if batch.num_rows:
                rows.append(batch.column("row").to_numpy(zero_copy_only=False).astype(np.int64))
                keys.append(fixed_rows(batch.column("band_keys"), bands).view(np.uint64))
        if rows:
            yield slice_batch(np.concatenate(keys), np.concatenate(rows), parts)

    return signed.select("row", "band_keys").mapInArrow(transpose, SLICE_SCHEMA)


def slice_batch(keys: np.ndarray, rows: np.ndarray, parts: int) -> "pa.RecordBatch":
    """The :data:`SLICE_SCHEMA` rows of one partition: ``keys`` (records x bands, uint64), ``rows`` (int64)."""
    import pyarrow as pa

    out: dict[str, list] = {"band": [], "part": [], "keys": [], "rows": []}
    for band in range(keys.shape[1]):
        column = keys[:, band]
        if parts == 1:
            pieces = [(0, column, rows)]
        else:
            part = (column % np.uint64(parts)).astype(np.int64)
            order = np.argsort(part, kind="stable")
            bounds = np.searchsorted(part[order], np.arange(parts + 1))
            pieces = [(p, column[order[bounds[p]:bounds[p + 1]]], rows[order[bounds[p]:bounds[p + 1]]])
                      for p in range(parts) if bounds[p + 1] > bounds[p]]
        for p, piece_keys, piece_rows in pieces:
            out["band"].append(band)
            out["part"].append(p)
            out["keys"].append(np.ascontiguousarray(piece_keys).tobytes())
            out["rows"].append(np.ascontiguousarray(piece_rows).tobytes())
    return pa.RecordBatch.from_pydict(out, schema=pa.schema([("band", pa.int32()), ("part", pa.int32()),
                                                             ("keys", pa.binary()), ("rows", pa.binary())]))


def bucket_rows(signed: "DataFrame", bands: int, records: int, split_bucket: int, *,
                slices: "DataFrame | None" = None, excluded: np.ndarray | None = None) -> "DataFrame":
    """The pairs of small buckets and the members of large ones (module docstring) of ``signed``'s band keys, or
    of ``slices`` when they were made as the records were signed
    (:func:`~neardup_solr.spark.line_input.sign_on_executors`); the row numbers in ``excluded`` (records dropped
    after they were sliced) are left out."""
    if slices is None:
        slices = band_slices(signed, bands, slices_per_band(records))

    def walk(table: "pa.Table") -> "pa.Table":
        return bucket_rows_of_slice(table, split_bucket, excluded)

    return slices.groupBy("band", "part").applyInArrow(walk, BUCKET_ROWS_SCHEMA)


def bucket_rows_of_slice(table: "pa.Table", split_bucket: int, excluded: np.ndarray | None = None) -> "pa.Table":
    """One ``(band, part)`` group's slices (:data:`SLICE_SCHEMA`) as :data:`BUCKET_ROWS_SCHEMA` rows, without the
    records whose row numbers are in ``excluded``."""
    import pyarrow as pa

    band = table.column("band")[0].as_py()
    keys = np.concatenate([np.frombuffer(blob, dtype=np.uint64) for blob in table.column("keys").to_pylist()])
    rows = np.concatenate([np.frombuffer(blob, dtype=np.int64) for blob in table.column("rows").to_pylist()])
    if excluded is not None and excluded.size:
        kept = ~np.isin(rows, excluded)
        keys, rows = keys[kept], rows[kept]
    order = np.argsort(keys, kind="stable")
    keys, rows = keys[order], rows[order]
    starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1]))) if keys.size else np.empty(0, np.int64)
    sizes = np.diff(np.append(starts, keys.size))
    small = (sizes >= 2) & (sizes <= split_bucket)
    first, second = run_pairs(starts[small], sizes[small])
    a, b = np.minimum(rows[first], rows[second]), np.maximum(rows[first], rows[second])
    large = sizes > split_bucket
    members = concat_ranges(starts[large], sizes[large])
    npairs, nmembers = a.size, members.size
    return pa.table({
        "a": pa.array(np.concatenate((a, rows[members])), pa.int64()),
        "b": pa.concat_arrays([pa.array(b, pa.int64()), pa.nulls(nmembers, pa.int64())]),
        "band": pa.concat_arrays([pa.nulls(npairs, pa.int32()), pa.array(np.full(nmembers, band, np.int32))]),
        "key": pa.concat_arrays([pa.nulls(npairs, pa.int64()), pa.array(keys[members].view(np.int64))]),
    })
