"""The band buckets of a dedup as one shuffle and a sort: pairs of small buckets, members of large ones.

Every record has one row per band (``band, key, id``: 21 rows a record at ``t = 0.8``), and nearly every bucket
holds one record. Grouping the rows with ``collect_list`` makes Spark aggregate tens of millions of mostly
single-row groups with object buffers (its object hash aggregate falls back to sorting after 128 keys), which was
the most expensive stage of a dedup. Here each row gets one 64-bit bucket number (``xxhash64(band, key)``), the
rows are hash-partitioned by it and sorted within each partition by it alone (a sort on one long, which Spark
does by radix sort), and one Arrow UDF walks the sorted rows with NumPy: a run of equal bucket numbers is a
bucket. Sorting on ``(band, key, id)`` instead compared whole rows, strings included, and took longer than the
grouping it replaced. Two different buckets share a number with probability ~2**-64 per pair of buckets; that
would only add candidates, which the estimate and the exact verification then judge as any other.

Only ``bucket, id`` is shuffled (the band and the key would make every row half again as large, for the few
buckets that need them): the UDF emits, in one DataFrame of :data:`BUCKET_ROWS_SCHEMA`,

- for a bucket of 2 to ``split_bucket`` members, every pair ``a, b`` of its members, ``a`` the smaller id in
  Spark's string order (so a pair found in several bands is the same row), with ``bucket`` null;
- for a larger bucket, one row per member (``a`` = its id, ``b`` null) with its ``bucket``, to be judged with the
  members' signatures (:func:`~neardup_solr.pairs.candidates.bucket_candidates`) once :func:`large_bucket_members`
  has found the band and key of those rows again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

import numpy as np

from neardup_solr.pairs._arrays import concat_ranges, run_pairs

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

BUCKET_ROWS_SCHEMA = "a string, b string, bucket bigint"


def bucket_rows(bands: "DataFrame", split_bucket: int) -> "DataFrame":
    """``bands`` (``id``, ``band``, ``key``) as the pairs of small buckets and the members of large ones (module
    docstring)."""
    from pyspark.sql import functions as F

    rows = (bands.select(bucket_number().alias("bucket"), "id")
            .repartition("bucket").sortWithinPartitions("bucket"))

    def walk(batches: Iterator["pa.RecordBatch"]) -> Iterator["pa.RecordBatch"]:
        import pyarrow as pa

        pending: "pa.RecordBatch | None" = None
        for batch in batches:
            if pending is not None and pending.num_rows:
                batch = pa.Table.from_batches([pending, batch]).combine_chunks().to_batches()[0]
            # The last run may go on in the next batch: it is held back until the next one starts.
            done, pending = _complete_runs(batch)
            if done.num_rows:
                yield _emit(done, split_bucket)
        if pending is not None and pending.num_rows:
            yield _emit(pending, split_bucket)

    return rows.mapInArrow(walk, BUCKET_ROWS_SCHEMA)


def bucket_number():
    """The 64-bit number of a band bucket, from the ``band`` and ``key`` columns."""
    from pyspark.sql import functions as F

    return F.xxhash64("band", "key")


def large_bucket_members(large: "DataFrame", bands: "DataFrame", broadcast: bool = True) -> "DataFrame":
    """``band, key, id`` of the members of large buckets (``large``: ``id, bucket``), found again among the band
    rows (``bands``: ``id, band, key``), through a broadcast of those members when they are few: a pass over the
    band rows only when a dedup has large buckets."""
    from pyspark.sql import functions as F

    keyed = bands.select("id", "band", "key", bucket_number().alias("bucket"))
    return keyed.join(F.broadcast(large) if broadcast else large, ["id", "bucket"]).select("band", "key", "id")


def _run_starts(batch: "pa.RecordBatch") -> np.ndarray:
    bucket = batch.column("bucket").to_numpy(zero_copy_only=False)
    change = bucket[1:] != bucket[:-1]
    return np.concatenate(([0], np.flatnonzero(change) + 1)) if batch.num_rows else np.empty(0, dtype=np.int64)


def _complete_runs(batch: "pa.RecordBatch") -> tuple["pa.RecordBatch", "pa.RecordBatch"]:
    """The rows of the runs that end in ``batch`` and the rows of its last run."""
    starts = _run_starts(batch)
    last = int(starts[-1]) if starts.size else 0
    return batch.slice(0, last), batch.slice(last)


def _emit(batch: "pa.RecordBatch", split_bucket: int) -> "pa.RecordBatch":
    import pyarrow as pa
    import pyarrow.compute as pc

    starts = _run_starts(batch)
    sizes = np.diff(np.append(starts, batch.num_rows))
    ids = batch.column("id")
    small = (sizes >= 2) & (sizes <= split_bucket)
    a, b = run_pairs(starts[small], sizes[small])
    large = sizes > split_bucket
    members = concat_ranges(starts[large], sizes[large])
    npairs, nmembers = a.size, members.size

    def take(column: "pa.Array", rows: np.ndarray, to: "pa.DataType") -> "pa.Array":
        return pc.take(column, pa.array(rows, type=pa.int64())).cast(to)

    first, second = take(ids, a, pa.string()), take(ids, b, pa.string())
    swap = pc.greater(first, second)  # binary order of the UTF-8 bytes, as Spark compares strings
    first, second = pc.if_else(swap, second, first), pc.if_else(swap, first, second)
    return pa.RecordBatch.from_arrays(
        [pa.concat_arrays([first, take(ids, members, pa.string())]),
         pa.concat_arrays([second, pa.nulls(nmembers, pa.string())]),
         pa.concat_arrays([pa.nulls(npairs, pa.int64()), take(batch.column("bucket"), members, pa.int64())])],
        names=["a", "b", "bucket"])

