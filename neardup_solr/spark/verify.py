"""The estimate and the exact Jaccard of candidate pairs in one Arrow UDF, with the single process's NumPy code.

A batch of candidate rows (``a, b, sig_a, sig_b, set_a, set_b``: the two signatures and the two sorted distinct
shingle-hash sets) becomes the rows whose signatures agree in at least ``need`` positions (the margin rule every
LSH path applies, :func:`~neardup_solr.pairs.candidates.min_matches`), each with the exact Jaccard of its two
sets (:func:`~neardup_solr.pairs.candidates.exact_jaccard`, as ``report --method lsh`` verifies): whole arrays at
a time, where Spark SQL's ``zip_with`` and ``array_intersect`` walked every pair's arrays row by row. The Jaccard
is ``intersection / union`` of two integers in double precision, the value the SQL expression gave.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

import numpy as np

from neardup_solr.pairs.candidates import exact_jaccard
from neardup_solr.spark.signing import fixed_rows

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

ESTIMATED_SCHEMA = "a string, b string, similarity double"


def _sets(column: "pa.ListArray") -> tuple[np.ndarray, np.ndarray]:
    """The rows' values (sorted uint32 bits in int32) and their sizes."""
    offsets = column.offsets.to_numpy(zero_copy_only=False)
    values = column.flatten().to_numpy(zero_copy_only=False).view(np.uint32)
    return values, np.diff(offsets).astype(np.int64)


def estimate_and_verify(batch: "pa.RecordBatch", need: int) -> "pa.RecordBatch":
    """The rows of ``batch`` that pass the estimate, with their exact Jaccard (module docstring)."""
    import pyarrow as pa

    n = batch.num_rows
    if n == 0:
        return pa.RecordBatch.from_arrays([pa.array([], pa.string()), pa.array([], pa.string()),
                                           pa.array([], pa.float64())], names=["a", "b", "similarity"])
    width = len(batch.column("sig_a")[0])
    agreeing = np.count_nonzero(fixed_rows(batch.column("sig_a"), width) == fixed_rows(batch.column("sig_b"), width),
                                axis=1)
    keep = np.flatnonzero(agreeing >= need)
    set_a, size_a = _sets(batch.column("set_a"))
    set_b, size_b = _sets(batch.column("set_b"))
    # Slots 0..n-1 are the a sets, n..2n-1 the b sets; each set is sorted, so slot-then-value keys are sorted.
    sizes = np.concatenate((size_a, size_b))
    slots = np.repeat(np.arange(2 * n, dtype=np.int64), sizes)
    keyed = (slots << 32) | np.concatenate((set_a, set_b)).astype(np.int64)  # int64 keys, as allpairs builds them
    similarity = exact_jaccard(keyed, sizes, keep.astype(np.int64), keep.astype(np.int64) + n)
    rows = pa.array(keep, type=pa.int64())
    return pa.RecordBatch.from_arrays([batch.column("a").take(rows), batch.column("b").take(rows),
                                       pa.array(similarity, type=pa.float64())], names=["a", "b", "similarity"])


def estimated_pairs(both: "DataFrame", need: int) -> "DataFrame":
    """``a, b, similarity`` of the candidate rows of ``both`` that pass the estimate (:data:`ESTIMATED_SCHEMA`)."""

    def run(batches: Iterator["pa.RecordBatch"]) -> Iterator["pa.RecordBatch"]:
        for batch in batches:
            yield estimate_and_verify(batch, need)

    return both.select("a", "b", "sig_a", "sig_b", "set_a", "set_b").mapInArrow(run, ESTIMATED_SCHEMA)
