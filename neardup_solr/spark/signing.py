"""Signing inside Spark: an Arrow UDF (``mapInArrow``) that runs the package's own normaliser, shingler and
MinHash batch path on each Arrow batch of ``(id, text)`` records.

Nothing here re-implements text processing: :func:`document_builder` builds the indexer's
:class:`~neardup_solr.signing.builder.DocumentBuilder` from an :class:`~neardup_solr.signing.settings.IndexSettings`, and the
UDF calls its shingler (``batch_hashes``, the vectorised path the indexer's lean build uses), its MinHash and
:func:`~neardup_solr.pairs.lsh.band_keys`. A signature computed here is therefore the indexer's, value for value
(``tests/doors/spark/test_spark_jobs.py`` compares them with the ``minhash_sig`` Solr holds).

Columns of a signed DataFrame (:data:`SIGNED_SCHEMA`):

``id``          the record's id
``signature``   the MinHash values as ``array<int>`` (the uint32 values' bits; :func:`signature_bytes`)
``band_keys``   the 64-bit LSH band keys as ``array<bigint>`` (``band_keys`` of the job's bands and rows)
``shingles``    the distinct 32-bit shingle hashes, sorted, as ``array<int>``: exact verification's sets
``problem``     why the record cannot be signed (its id, a missing or empty text), else null
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

import numpy as np

from neardup_solr.errors import InvalidTextError, SignatureDisagreementError
from neardup_solr.signing.builder import DocumentBuilder, record_problem
from neardup_solr.signing.settings import IndexSettings, unicode_mismatch
from neardup_solr.pairs._arrays import sorted_distinct
from neardup_solr.pairs.lsh import LSHParams, band_keys
from neardup_solr.text import normalize

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

SIGNED_SCHEMA = ("id string, signature array<int>, band_keys array<bigint>, shingles array<int>, "
                 "problem string")
EMPTY_TEXT = "no words left after normalisation (empty, blank or punctuation-only text)"


def document_builder(settings: IndexSettings) -> DocumentBuilder:
    """The indexer's document builder for ``settings``: its shingler and MinHash are the ones every signature
    of the Spark jobs comes from. The one place the jobs turn settings into text processing, so a setting the
    indexer honours (a normaliser version, say) reaches Spark through the builder.

    Called on the executors with the settings the driver made (their ``unicode_version`` is the driver's, or the
    collection's): an executor whose Python has another Unicode version would sign with normaliser version 1 or 2
    differently, so it raises :class:`~neardup_solr.errors.SignatureDisagreementError`, which fails the job with
    that reason instead of writing mixed signatures. Version 3's Unicode is pinned, so it always matches."""
    why = unicode_mismatch(settings)
    if why:
        raise SignatureDisagreementError(f"this Spark executor cannot sign like the driver: {why}. Run the "
                                         "executors on the driver's Python version (PYSPARK_PYTHON)")
    return DocumentBuilder(settings)


def for_executors(settings: IndexSettings) -> IndexSettings:
    """On the driver: ``settings`` as the executors get them, with the Unicode version to sign with (the
    collection's as recorded, else this Python's), which :func:`document_builder` checks theirs against."""
    return settings if settings.unicode_version else settings.signed_here()


def signature_bytes(values) -> bytes:
    """The little-endian uint32 bytes of a signature column value (the bytes ``minhash_sig`` encodes)."""
    return np.asarray(values, dtype="<i4").view("<u4").tobytes()


def sign_arrays(builder: DocumentBuilder, params: LSHParams, ids: list, texts: list) -> "pa.RecordBatch":
    """One Arrow batch of signed records (:data:`SIGNED_SCHEMA`) for the records ``(ids[i], texts[i])``."""
    import pyarrow as pa

    problems: list[str | None] = [record_problem(doc_id, text) for doc_id, text in zip(ids, texts)]
    kept = [i for i, problem in enumerate(problems) if problem is None]
    try:
        signed_arrays = builder.minhash.hashes_and_signatures([texts[i] for i in kept]) if kept else None
    except InvalidTextError:
        # Some text has no words after normalisation (rare): only now is every text normalised on its own, to
        # name those. The kernel normalises in C; a Python pass over every text up front would be a second
        # normalisation of every clean batch.
        for i in kept:
            if not normalize(texts[i]):
                problems[i] = EMPTY_TEXT
        kept = [i for i, problem in enumerate(problems) if problem is None]
        signed_arrays = builder.minhash.hashes_and_signatures([texts[i] for i in kept]) if kept else None
    n = len(ids)
    k = builder.settings.num_hashes
    valid = np.zeros(n, dtype=bool)
    valid[kept] = True
    if signed_arrays is not None:
        hashes, offsets, signed = signed_arrays
        signatures: np.ndarray = signed
        keys = band_keys(signatures, params)
        distinct, counts = _distinct_sets(hashes, offsets)
    else:
        signatures = np.empty((0, k), dtype=np.uint32)
        keys = np.empty((0, params.bands), dtype=np.uint64)
        distinct, counts = np.empty(0, dtype=np.uint32), np.empty(0, dtype=np.int64)
    # Rejected records get null lists: Arrow list offsets repeat and the validity bitmap marks them.
    sizes = np.zeros(n, dtype=np.int32)
    sizes[valid] = counts
    set_offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(sizes, out=set_offsets[1:])
    mask = pa.array(~valid)
    return pa.RecordBatch.from_arrays(
        [
            pa.array(ids, type=pa.string()),
            _fixed_lists(signatures.view(np.int32), valid, mask, pa.int32()),
            _fixed_lists(keys.view(np.int64), valid, mask, pa.int64()),
            pa.ListArray.from_arrays(pa.array(set_offsets), pa.array(distinct.view(np.int32)), mask=mask),
            pa.array(problems, type=pa.string()),
        ],
        names=["id", "signature", "band_keys", "shingles", "problem"],
    )


def fixed_rows(column: "pa.ListArray", width: int) -> np.ndarray:
    """A list column of :func:`sign_arrays` (``signature``, ``band_keys``) as an ``(n, width)`` array: one row per
    non-null value (a rejected record's null has no values, hence no row), in the column's order."""
    return column.flatten().to_numpy(zero_copy_only=False).reshape(-1, width)


def _fixed_lists(rows: np.ndarray, valid: np.ndarray, mask: "pa.Array", value_type: "pa.DataType") -> "pa.Array":
    """A list array with one ``rows`` row per valid record and null for the others."""
    import pyarrow as pa

    width = rows.shape[1] if rows.ndim == 2 else 0
    counts = np.where(valid, width, 0).astype(np.int32)
    offsets = np.zeros(valid.size + 1, dtype=np.int32)
    np.cumsum(counts, out=offsets[1:])
    values = pa.array(np.ascontiguousarray(rows).reshape(-1), type=value_type)
    return pa.ListArray.from_arrays(pa.array(offsets), values, mask=mask)


def _distinct_sets(hashes: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each text's distinct shingle hashes, sorted, concatenated, and their counts."""
    ndocs = len(offsets) - 1
    doc = np.repeat(np.arange(ndocs, dtype=np.uint64), np.diff(offsets))
    # sorted_distinct, not np.unique: NumPy 2.3+'s hash-based unique took 1.0 s of the 1.4 s sign_arrays spent on
    # 10,000 corpus texts (1.7 million values); sorting takes a tenth of that.
    keyed = sorted_distinct((doc << np.uint64(32)) | hashes.astype(np.uint64))
    counts = np.bincount((keyed >> np.uint64(32)).astype(np.int64), minlength=ndocs)
    return (keyed & np.uint64(0xFFFFFFFF)).astype(np.uint32), counts


def sign(records: "DataFrame", settings: IndexSettings, params: LSHParams) -> "DataFrame":
    """``records`` (columns ``id``, ``text``) signed on the executors, one Arrow batch at a time
    (:data:`SIGNED_SCHEMA`); records that cannot be signed keep their row, with ``problem`` set."""

    settings = for_executors(settings)

    def sign_batches(batches: Iterator["pa.RecordBatch"]) -> Iterator["pa.RecordBatch"]:
        builder = document_builder(settings)  # once per task: its word-hash cache is reused across batches
        for batch in batches:
            data = batch.to_pydict()
            yield sign_arrays(builder, params, data["id"], data["text"])

    return records.select("id", "text").mapInArrow(sign_batches, SIGNED_SCHEMA)
