"""Whole-data-set dedup and the similarity join of two data sets as Spark jobs over ``(id, text)`` DataFrames.

The steps are those of :func:`neardup_solr.engine.collection.dedupe_collection` (``report --threshold T --method
lsh``), laid out as write-up 001's band join so that they run on a cluster:

1. **Sign** every record on the executors (:func:`neardup_solr.spark.signing.sign`: the indexer's shingler and
   MinHash), with the band keys of the LSH bands the collection dedup chooses for ``threshold``
   (:func:`~neardup_solr.pairs.lsh.optimal_params` with the same false-negative weight, 21 x 6 for 0.8 and 128
   values), unless ``lsh_params`` is given. :func:`dedup_file` reads a line-format file and signs it in the same
   executor tasks (:func:`neardup_solr.spark.line_input.sign_on_executors`), so its texts never enter Spark.
2. **Band buckets.** In :func:`dedup`, the band keys go band-major in a few large NumPy arrays and each band's
   keys are sorted there (:mod:`neardup_solr.spark.buckets`): a run of equal keys is a bucket, whose pairs come
   out as row numbers and are de-duplicated across bands. (With ``split_bucket=None``, and in :func:`join`, the
   band keys are exploded into ``(id, band, key)`` rows and the members of each bucket joined with each other.)
3. **Exploding buckets.** A bucket with more than ``max_bucket`` members (boilerplate shared by thousands of
   records) is split exactly as ``pairs/candidates.py`` splits it: members in id order, blocks of ``max_bucket``,
   pairs only inside a block. The buckets and the pairs not generated are counted in the stats and logged,
   never dropped silently; other bands may still find those pairs.
   Before that, in :func:`dedup`, each bucket of more than ``split_bucket`` members is judged by the rule of
   ``pairs/candidates.py`` (verified in place when small or dense, split by further signature values when
   large and sparse): its members and signatures go to one Python worker in id order, which runs
   :func:`~neardup_solr.pairs.candidates.bucket_candidates`, the very function the single process runs on
   each bucket, so both give the same candidates. ``split_bucket=None`` turns it off.
4. **Estimate**, then **exact verification**: a candidate whose signatures agree in fewer than
   ``ceil((t - margin) * k)`` positions (``margin`` = :func:`~neardup_solr.pairs.candidates.estimate_margin`) is
   dropped, the others get the exact Jaccard of their distinct shingle-hash sets, and pairs with Jaccard >= t
   are kept: the same test and the same number ``report --threshold T --method lsh`` reports. Both run in one
   Arrow UDF with the single process's NumPy code (:mod:`neardup_solr.spark.verify`); the records of the
   candidates are picked from the cached signed records in one scan, through a broadcast of their ids (or row
   numbers).

``dedup(..., similarity="idf")`` runs the same band join and estimate over weighted MinHash signatures of the
records' words (:mod:`neardup_solr.spark.weighted`) and verifies with the exact IDF-weighted Jaccard: the
steps and numbers of ``report --similarity idf --method lsh`` (:mod:`neardup_solr.engine.weighted_lsh`).

The pairs file is written by the executors (:func:`neardup_solr.spark.io.write_pairs_from_executors`): the driver
streams their part files into place and never holds the pairs. Groups, the keep list and the deduplicated
records are computed and written by the executors too (:mod:`neardup_solr.spark.groups`,
:mod:`neardup_solr.spark.records_out`).
"""

from __future__ import annotations

import logging
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

import numpy as np

from neardup_solr.options import DEFAULT_SPLIT_BUCKET, ThresholdOptions
from neardup_solr.pairs.candidates import (
    DEFAULT_FALSE_NEGATIVE_WEIGHT,
    DEFAULT_MAX_BUCKET,
    check_split_bucket,
    estimate_margin,
    min_matches,
    bucket_candidates,
)
from neardup_solr.signing.settings import IndexSettings
from neardup_solr.errors import InvalidParameterError, ParameterTypeError
from neardup_solr.pairs.lsh import LSHParams
from neardup_solr.pairs.similar_pairs import id_sort_key, SimilarPair
from neardup_solr.validation import check_choice
from neardup_solr.engine.weighted_lsh import IdfSnapshot, weighted_band_params
from neardup_solr.spark.io import (
    READ_ON,
    InputRead,
    drop_earlier_copies,
    input_format,
    read_records,
    reads_on_executors,
)
from neardup_solr.spark.ordering import id_before
from neardup_solr.spark.signing import sign
from neardup_solr.spark.line_input import sign_on_executors
from neardup_solr.spark.matching import one_to_one_pairs
from neardup_solr.spark.weighted import tokenize, frequencies, sign_weighted, weighted_similarity
from neardup_solr.spark.buckets import bucket_rows
from neardup_solr.spark.verify import estimated_pairs

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession


log = logging.getLogger(__name__)

__all__ = ["SparkJobStats", "SparkPairs", "dedup", "dedup_file", "join", "band_params"]


@dataclass
class SparkJobStats:
    """What a job did: records signed and rejected, bands, candidates, exploding buckets, time per stage."""

    documents: int = 0
    rejected: int = 0
    bands: int = 0
    rows: int = 0
    candidate_pairs: int = 0  # distinct pairs sharing at least one band key
    estimated_pairs: int = 0  # candidates whose signatures agree in enough positions to be verified
    verified_pairs: int = 0  # pairs with exact Jaccard >= threshold
    margin: float = 0.0
    oversized_buckets: int = 0
    pairs_not_generated: int = 0  # pairs inside oversized buckets across blocks (pairs/candidates.py's policy)
    seconds: dict[str, float] = field(default_factory=dict)


@dataclass
class SparkPairs:
    """A job's result. ``pairs``: ``id, neighbor_id, similarity`` (dedup: smaller id first, numeric-aware, as
    ``report`` writes them; join: left id, right id); ``signed``: the signed valid records (cached);
    ``rejected``: ``id, problem`` of the records that could not be signed; ``snapshot``: with
    ``similarity="idf"``, the IDF snapshot the records were signed and verified with; ``cached``: other cached
    frames the result's frames are computed from (of :func:`dedup_file`, the reading tasks' output), to unpersist
    with them when the executors' memory is wanted back."""

    pairs: "DataFrame"
    signed: "DataFrame"
    rejected: "DataFrame"
    stats: SparkJobStats
    settings: IndexSettings
    params: LSHParams
    threshold: float
    snapshot: IdfSnapshot | None = None  # similarity="idf": the frequencies and signer the run used
    cached: list = field(default_factory=list)

    def collect(self) -> list[SimilarPair]:
        """The pairs on the driver, sorted as ``report`` sorts them: by id, then neighbour id (numeric-aware)."""
        pairs = [SimilarPair(r["id"], r["neighbor_id"], float(r["similarity"]))
                 for r in self.pairs.toLocalIterator()]
        pairs.sort(key=lambda p: (id_sort_key(p.id), id_sort_key(p.neighbor_id)))
        return pairs


def band_params(threshold: float, settings: IndexSettings,
                false_negative_weight: float = DEFAULT_FALSE_NEGATIVE_WEIGHT) -> LSHParams:
    """The bands and rows ``report --threshold T --method lsh`` uses for ``threshold`` on a collection
    indexed with ``settings``."""
    # The weighted runs' band choice is the plain one; one function keeps the two from drifting apart.
    return weighted_band_params(threshold, settings.num_hashes, false_negative_weight)


def dedup(
    records: "DataFrame",
    threshold: float = 0.8,
    *,
    settings: IndexSettings | None = None,
    lsh_params: LSHParams | None = None,
    false_negative_weight: float = DEFAULT_FALSE_NEGATIVE_WEIGHT,
    max_bucket: int = DEFAULT_MAX_BUCKET,
    similarity: str = ThresholdOptions.similarity,
    snapshot: IdfSnapshot | None = None,
    split_bucket: int | None = DEFAULT_SPLIT_BUCKET,
) -> SparkPairs:
    """Every pair of records of ``records`` (columns ``id``, ``text``) with exact Jaccard >= ``threshold``.

    ``settings`` are the index settings to sign with (default :class:`IndexSettings()`, the indexer's
    default); ``lsh_params`` overrides the bands chosen for ``threshold``; buckets of more than
    ``split_bucket`` members are judged as ``report --method lsh`` judges them (``None``: never), and those
    with more than ``max_bucket`` members are split into blocks (counted in ``stats``). The pairs DataFrame is computed (and cached)
    before this returns, so ``stats`` is complete.

    ``similarity="idf"`` finds the pairs of ``report --similarity idf --method lsh`` instead: IDF-weighted
    Jaccard of the records' distinct words, signed with weighted MinHash (:mod:`neardup_solr.spark.weighted`).
    The document frequencies are counted over ``records`` (N = the valid records), or taken from ``snapshot``
    (an :class:`~neardup_solr.engine.weighted_lsh.IdfSnapshot`, e.g. ``OUT.idf.json`` of a Solr-side run, whose signer
    is then used too), and ``result.snapshot`` is the one used. The signer is otherwise ICWS with the
    settings' ``num_hashes`` and ``seed``, the Solr side's defaults.

    >>> result = dedup(spark.createDataFrame([("1", "a b c d e"), ("2", "a b c d e f")], "id string, text string"),
    ...                threshold=0.5)
    >>> result.collect()
    [SimilarPair(id='1', neighbor_id='2', similarity=0.75)]
    """
    _check_similarity(similarity, snapshot)
    settings, params, t = _checked(threshold, settings, lsh_params, false_negative_weight, max_bucket,
                                   num_hashes=snapshot.num_hashes if snapshot is not None else None)
    stats = SparkJobStats(bands=params.bands, rows=params.rows)
    started = time.perf_counter()
    if similarity == "idf":
        valid, rejected = _tokens(records, settings, stats)
        snapshot = snapshot or _frequencies(valid, settings, stats)
        signed = _signed_weighted(valid, snapshot, params, stats)
    else:
        signed, rejected = _signed(records, settings, params, stats)
    return _dedup_signed(signed, rejected, settings, params, t, stats, started, max_bucket=max_bucket,
                         split_bucket=split_bucket, similarity=similarity, snapshot=snapshot)


def dedup_file(
    spark: "SparkSession",
    path: "str | Path",
    threshold: float = 0.8,
    *,
    fmt: str | None = None,
    staging_dir: "str | Path",
    id_field: str = "id",
    text_field: str = "text",
    on_decode_error: str = "latin-1",
    read_on: str = "auto",
    settings: IndexSettings | None = None,
    lsh_params: LSHParams | None = None,
    false_negative_weight: float = DEFAULT_FALSE_NEGATIVE_WEIGHT,
    max_bucket: int = DEFAULT_MAX_BUCKET,
    similarity: str = ThresholdOptions.similarity,
    snapshot: IdfSnapshot | None = None,
    split_bucket: int | None = DEFAULT_SPLIT_BUCKET,
) -> "tuple[SparkPairs, InputRead]":
    """:func:`dedup` of the records of the file ``path``, read as :func:`~neardup_solr.spark.io.read_records`
    reads it (same parameters), and that read: the records rejected and why, and how many were read.

    A line-format file that the executors read in byte ranges (``read_on``) is signed by the tasks that read it
    (:func:`~neardup_solr.spark.line_input.sign_on_executors`; plain Jaccard): its texts go from the file to the
    signer without being staged or crossing into Spark, and the returned read's ``records`` is None. Any other
    input is read with ``read_records`` and deduplicated with :func:`dedup`; ``records`` is then its DataFrame."""

    read_on = check_choice("read_on", read_on, READ_ON)
    source_format = input_format(path, fmt)
    if not Path(path).exists():
        raise FileNotFoundError(f"input file not found: {path}")
    # Signed as read: plain Jaccard, a file the executors read, and the band buckets made from slices (the
    # default; split_bucket=None explodes the band keys, which such a read does not keep).
    if (similarity != "jaccard" or split_bucket is None
            or not reads_on_executors(spark, Path(path), source_format, read_on)):
        source = read_records(spark, path, fmt, staging_dir=staging_dir, id_field=id_field, text_field=text_field,
                              on_decode_error=on_decode_error, read_on=read_on)
        return dedup(source.records, threshold, settings=settings, lsh_params=lsh_params,
                     false_negative_weight=false_negative_weight, max_bucket=max_bucket, similarity=similarity,
                     snapshot=snapshot, split_bucket=split_bucket), source

    _check_similarity(similarity, snapshot)
    settings, params, t = _checked(threshold, settings, lsh_params, false_negative_weight, max_bucket)
    stats = SparkJobStats(bands=params.bands, rows=params.rows)
    started = time.perf_counter()
    with _stage(spark, "read and sign"):
        signed_file = sign_on_executors(spark, Path(path), source_format, id_field, text_field, on_decode_error,
                                        settings, params)
        signed, dropped = drop_earlier_copies(spark, signed_file.signed, Path(path), signed_file.rejected,
                                              order="row", line_of=signed_file.line_of)
    signed, rejected = _split_signed(signed, stats)
    stats.seconds["sign"] = round(time.perf_counter() - started, 3)
    excluded = np.array(dropped, dtype=np.int64)
    result = _dedup_signed(signed, rejected, settings, params, t, stats, started, max_bucket=max_bucket,
                           split_bucket=split_bucket, similarity=similarity, snapshot=None,
                           slices=signed_file.slices, excluded=excluded)
    result.cached.append(signed_file.cached)
    return result, InputRead(None, signed_file.rejected, signed_file.read)  # type: ignore[arg-type]


def _dedup_signed(signed: "DataFrame", rejected: "DataFrame", settings: IndexSettings, params: LSHParams, t: float,
                  stats: SparkJobStats, started: float, *, max_bucket: int, split_bucket: int | None,
                  similarity: str, snapshot: IdfSnapshot | None, slices: "DataFrame | None" = None,
                  excluded: np.ndarray | None = None) -> SparkPairs:
    """The steps of :func:`dedup` after signing: ``signed`` (valid records with ``row``) to verified pairs.
    ``slices``: the band slices made as the records were signed; ``excluded``: row numbers to leave out of them."""
    from pyspark.sql import functions as F

    if split_bucket is None:
        bands = signed.select("id", F.lit(0).alias("side"), F.posexplode("band_keys").alias("band", "key"))
        candidates, key = _band_join(bands, max_bucket, cross=False, stats=stats), "id"
    else:
        check_split_bucket(split_bucket)
        # The signature's length, not the bands': the estimate compares every value (as _estimated does).
        k = snapshot.num_hashes if snapshot is not None else settings.num_hashes
        need = min_matches(t, k, estimate_margin(t, k))
        candidates = _judged_band_join(signed, params, split_bucket, need, max_bucket, stats, slices=slices,
                                       excluded=excluded)
        key = "row"
    pairs = _verified(candidates, signed, signed, t, settings, snapshot, stats, key=key)
    first = id_before(F.col("a"), F.col("b"))
    pairs = pairs.select(F.when(first, F.col("a")).otherwise(F.col("b")).alias("id"),
                         F.when(first, F.col("b")).otherwise(F.col("a")).alias("neighbor_id"),
                         "similarity").cache()
    with _stage(pairs, "verify"):
        stats.verified_pairs = pairs.count()
    stats.seconds["total"] = round(time.perf_counter() - started, 3)
    log.info("spark dedup (%s): %d pairs >= %g among %d records (%d rejected) in %.1f s", similarity,
             stats.verified_pairs, t, stats.documents, stats.rejected, stats.seconds["total"])
    return SparkPairs(pairs, signed, rejected, stats, settings, params, t, snapshot)


def join(
    left: "DataFrame",
    right: "DataFrame",
    threshold: float = 0.8,
    *,
    settings: IndexSettings | None = None,
    lsh_params: LSHParams | None = None,
    false_negative_weight: float = DEFAULT_FALSE_NEGATIVE_WEIGHT,
    max_bucket: int = DEFAULT_MAX_BUCKET,
    one_to_one_matching: bool = False,
    similarity: str = ThresholdOptions.similarity,
    snapshot: IdfSnapshot | None = None,
) -> SparkPairs:
    """Every pair (left record, right record) with exact Jaccard >= ``threshold``; records of one side are never
    paired with each other. ``one_to_one_matching`` keeps each id in at most one pair, best first (the greedy
    matching of ``join --one-to-one``, :func:`neardup_solr.pairs.similar_pairs.one_to_one`, computed by the
    executors in rounds: :mod:`neardup_solr.spark.matching`).
    A bucket with more than ``max_bucket`` members (both sides together) is split as in :func:`dedup`, and only
    the left-right pairs inside each block are generated (counted in ``stats``). Other parameters as
    :func:`dedup`; ``stats.documents`` counts both sides.

    ``similarity="idf"`` is ``join --similarity idf --method lsh`` with ``right`` in the role of the indexed
    collection: without a ``snapshot``, the document frequencies are counted over the valid ``right`` records
    (a word only ``left`` holds counts as seen once, as a word the collection lacks does on the Solr side)."""
    from pyspark.sql import functions as F

    _check_similarity(similarity, snapshot)
    settings, params, t = _checked(threshold, settings, lsh_params, false_negative_weight, max_bucket,
                                   num_hashes=snapshot.num_hashes if snapshot is not None else None)
    stats = SparkJobStats(bands=params.bands, rows=params.rows)
    started = time.perf_counter()
    if similarity == "idf":
        left_valid, left_rejected = _tokens(left, settings, stats)
        right_valid, right_rejected = _tokens(right, settings, stats)
        snapshot = snapshot or _frequencies(right_valid, settings, stats)
        left_signed = _signed_weighted(left_valid, snapshot, params, stats)
        right_signed = _signed_weighted(right_valid, snapshot, params, stats)
    else:
        left_signed, left_rejected = _signed(left, settings, params, stats)
        right_signed, right_rejected = _signed(right, settings, params, stats)
    bands = (left_signed.select("id", F.lit(0).alias("side"), F.posexplode("band_keys").alias("band", "key"))
             .unionByName(right_signed.select("id", F.lit(1).alias("side"),
                                              F.posexplode("band_keys").alias("band", "key"))))
    candidates = _band_join(bands, max_bucket, cross=True, stats=stats)
    pairs = _verified(candidates, left_signed, right_signed, t, settings, snapshot, stats)
    pairs = pairs.select(F.col("a").alias("id"), F.col("b").alias("neighbor_id"), "similarity")
    if one_to_one_matching:
        pairs = one_to_one_pairs(pairs)
    pairs = pairs.cache()
    with _stage(pairs, "verify"):
        stats.verified_pairs = pairs.count()
    stats.seconds["total"] = round(time.perf_counter() - started, 3)
    rejected = left_rejected.withColumn("side", F.lit("left")).unionByName(
        right_rejected.withColumn("side", F.lit("right")))
    log.info("spark join (%s): %d pairs >= %g across %d records in %.1f s", similarity, stats.verified_pairs, t,
             stats.documents, stats.seconds["total"])
    signed = left_signed.unionByName(right_signed)
    return SparkPairs(pairs, signed, rejected, stats, settings, params, t, snapshot)


# ---------------------------------------------------------------------------------------------------------------


def _checked(threshold: float, settings: IndexSettings | None, lsh_params: LSHParams | None,
             false_negative_weight: float, max_bucket: int,
             num_hashes: int | None = None) -> tuple[IndexSettings, LSHParams, float]:
    """The settings, bands and threshold of a run; ``num_hashes``: the signature length when it is not the
    settings' (a weighted run signing with a snapshot's signer)."""
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0.0 < threshold <= 1.0:
        raise InvalidParameterError("threshold", "a Jaccard similarity in (0, 1]", threshold)
    if settings is None:
        settings = IndexSettings()
    elif not isinstance(settings, IndexSettings):
        raise ParameterTypeError("settings", "an IndexSettings or None", settings)
    if not 0.0 < false_negative_weight < 1.0:
        raise InvalidParameterError("false_negative_weight", "a number in (0, 1)", false_negative_weight)
    if isinstance(max_bucket, bool) or not isinstance(max_bucket, int) or max_bucket < 2:
        raise InvalidParameterError("max_bucket", "an integer of at least 2", max_bucket)
    k = settings.num_hashes if num_hashes is None else num_hashes
    params = lsh_params or weighted_band_params(float(threshold), k, false_negative_weight)
    if params.num_hashes > k:
        raise InvalidParameterError("lsh_params", f"bands x rows <= num_hashes ({k})", params)
    return settings, params, float(threshold)


def _signed(records: "DataFrame", settings: IndexSettings, params: LSHParams,
            stats: SparkJobStats) -> tuple["DataFrame", "DataFrame"]:
    """The signed valid records (cached) and the rejected ones (``id, problem``), counted into ``stats``."""
    from pyspark.sql import functions as F

    t0 = time.perf_counter()
    # ``row`` numbers the records for the band buckets (neardup_solr.spark.buckets): computed once, as cached.
    all_signed = sign(records, settings, params).withColumn("row", F.monotonically_increasing_id()).cache()
    signed, rejected = _split_signed(all_signed, stats)
    stats.seconds["sign"] = round(stats.seconds.get("sign", 0.0) + time.perf_counter() - t0, 3)
    return signed, rejected


def _split_signed(all_signed: "DataFrame", stats: SparkJobStats) -> tuple["DataFrame", "DataFrame"]:
    """``all_signed`` (a row per record, ``problem`` set when it could not be signed) as the valid records and the
    rejected ones (``id, problem``), counted into ``stats``."""
    from pyspark.sql import functions as F

    # Counts, not a collect: PySpark names a collect's jobs after the Python line, over the stage name.
    with _stage(all_signed, "sign"):
        total = all_signed.count()
        bad = all_signed.filter(F.col("problem").isNotNull()).count()
    stats.documents += total - bad
    stats.rejected += bad
    signed = all_signed.filter(F.col("problem").isNull()).drop("problem")
    rejected = all_signed.filter(F.col("problem").isNotNull()).select("id", "problem")
    return signed, rejected


def _check_snapshot(snapshot: IdfSnapshot) -> None:
    """A snapshot the Spark jobs can sign with: plain word frequencies (they read ``id, text`` records, not
    columns, so per-field weights have nothing to apply to)."""
    if not isinstance(snapshot, IdfSnapshot):
        raise ParameterTypeError("snapshot", "an IdfSnapshot (IdfSnapshot.load(path)) or None", snapshot)
    if snapshot.field_weights:
        raise InvalidParameterError("snapshot", "a snapshot of plain word frequencies (no field weights)",
                                    sorted(snapshot.field_weights),
                                    "the Spark jobs weigh the words of one text column")


def _check_similarity(similarity: str, snapshot: IdfSnapshot | None) -> None:
    check_choice("similarity", similarity, ("jaccard", "idf"))
    if snapshot is not None and similarity != "idf":
        raise InvalidParameterError("snapshot", "None unless similarity='idf'", "an IdfSnapshot",
                                    "an IDF snapshot only weighs words for similarity='idf'", show_value=False)
    if snapshot is not None:
        _check_snapshot(snapshot)


def _tokens(records: "DataFrame", settings: IndexSettings,
            stats: SparkJobStats) -> tuple["DataFrame", "DataFrame"]:
    """The valid records' ``id, tokens`` (cached) and the rejected ones (``id, problem``), counted."""
    from pyspark.sql import functions as F

    t0 = time.perf_counter()
    all_tokens = tokenize(records, settings).cache()
    valid = all_tokens.filter(F.col("problem").isNull()).drop("problem")
    rejected = all_tokens.filter(F.col("problem").isNotNull()).select("id", "problem")
    with _stage(records, "tokens"):
        stats.rejected += rejected.count()
    stats.seconds["tokens"] = round(stats.seconds.get("tokens", 0.0) + time.perf_counter() - t0, 3)
    return valid, rejected


def _frequencies(valid: "DataFrame", settings: IndexSettings, stats: SparkJobStats) -> IdfSnapshot:
    """The snapshot of ``valid``'s own frequencies, signed as the Solr side signs by default (ICWS, the
    settings' length and seed)."""

    t0 = time.perf_counter()
    with _stage(valid, "document frequencies"):
        snapshot = frequencies(valid, scheme="icws", num_hashes=settings.num_hashes, seed=settings.seed)
    stats.seconds["weights"] = round(time.perf_counter() - t0, 3)
    log.info("document frequencies of %d words over %d records (snapshot %s)", len(snapshot.df),
             snapshot.num_docs, snapshot.digest())
    return snapshot


def _signed_weighted(valid: "DataFrame", snapshot: IdfSnapshot, params: LSHParams,
                     stats: SparkJobStats) -> "DataFrame":
    """The valid records signed with the snapshot's weights and signer (cached), counted."""
    from pyspark.sql import functions as F

    t0 = time.perf_counter()
    signed = sign_weighted(valid, snapshot, params).withColumn("row", F.monotonically_increasing_id()).cache()
    with _stage(valid, "sign weighted"):
        stats.documents += signed.count()
    stats.seconds["sign"] = round(stats.seconds.get("sign", 0.0) + time.perf_counter() - t0, 3)
    return signed


def _band_join(bands: "DataFrame", max_bucket: int, *, cross: bool, stats: SparkJobStats) -> "DataFrame":
    """Distinct candidate pairs ``a, b`` of records sharing a ``(band, key)``: ``a < b`` (dedup) or ``a`` on
    side 0 and ``b`` on side 1 (``cross``). Oversized buckets are split into blocks (module docstring)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    t0 = time.perf_counter()
    sizes = bands.groupBy("band", "key").agg(F.count("*").alias("size"))
    if cross:  # a bucket with members on one side only yields no cross pair
        sizes = (bands.groupBy("band", "key").agg(F.count("*").alias("size"), F.sum("side").alias("right"))
                 .filter((F.col("right") > 0) & (F.col("right") < F.col("size"))).drop("right"))
    members = bands.join(sizes.filter(F.col("size") > 1), ["band", "key"])
    ordinal = F.row_number().over(Window.partitionBy("band", "key").orderBy("id", "side")) - 1
    members = members.withColumn(
        "block", F.when(F.col("size") > max_bucket, F.floor(ordinal / max_bucket)).otherwise(F.lit(0))).cache()
    with _stage(bands, "oversized buckets"):
        _count_oversized(members, max_bucket, cross, stats)
    a, b = members.alias("a"), members.alias("b")
    on = [F.col("a.band") == F.col("b.band"), F.col("a.key") == F.col("b.key"), F.col("a.block") == F.col("b.block")]
    if cross:
        on += [F.col("a.side") == 0, F.col("b.side") == 1]
    else:
        on.append(F.col("a.id") < F.col("b.id"))
    candidates = a.join(b, on).select(F.col("a.id").alias("a"), F.col("b.id").alias("b")).distinct().cache()
    with _stage(bands, "candidates"):
        stats.candidate_pairs = candidates.count()
    members.unpersist()
    stats.seconds["candidates"] = round(time.perf_counter() - t0, 3)
    log.info("%d candidate pairs from %d bands of %d rows", stats.candidate_pairs, stats.bands, stats.rows)
    return candidates


def _judged_band_join(signed: "DataFrame", params: LSHParams, split_bucket: int, keep_matches: int,
                      max_bucket: int, stats: SparkJobStats, *, slices: "DataFrame | None" = None,
                      excluded: np.ndarray | None = None) -> "DataFrame":
    """Distinct candidate pairs ``a < b`` (row numbers) of a dedup: buckets of at most ``split_bucket`` members
    pair every member, larger ones go whole to :func:`~neardup_solr.pairs.candidates.bucket_candidates` (module
    docstring).

    The band keys go band-major in a few large arrays (:func:`~neardup_solr.spark.buckets.bucket_rows`): the pairs
    of small buckets come out of it directly, the members of large ones with their band and key. Those members
    meet their signatures through a broadcast of their row numbers when they are few enough, so the signed
    records are not shuffled for the few buckets that need them."""
    from pyspark.sql import functions as F

    t0 = time.perf_counter()
    buckets = bucket_rows(signed, params.bands, stats.documents, split_bucket, slices=slices,
                          excluded=excluded).cache()
    paired = buckets.filter(F.col("b").isNotNull()).select("a", "b")
    large = buckets.filter(F.col("b").isNull()).select("band", "key", F.col("a").alias("row"))
    with _stage(signed, "band buckets"):
        members = large.count()
    if members == 0:
        candidates = paired.distinct().cache()
    else:
        signatures = signed.select("row", "id", "signature")
        if members <= _BROADCAST_ROWS:
            signatures = signatures.join(F.broadcast(large.select("row").distinct()), "row")
        judged = (large.join(signatures, "row").groupBy("band", "key")
                  .applyInPandas(_bucket_judge(params, split_bucket, keep_matches, max_bucket), "a long, b long"))
        candidates = paired.unionByName(judged).distinct().cache()
    with _stage(signed, "candidates"):
        stats.candidate_pairs = candidates.count()
    buckets.unpersist()
    stats.seconds["candidates"] = round(time.perf_counter() - t0, 3)
    log.info("%d candidate pairs from %d bands of %d rows (buckets over split_bucket=%d judged)",
             stats.candidate_pairs, stats.bands, stats.rows, split_bucket)
    return candidates


@contextmanager
def _stage(source: "DataFrame | SparkSession", name: str) -> Iterator[None]:
    """Name the Spark jobs run inside the block ``neardup: <name>`` (the call site Spark's UI, its REST API and
    event log show for their stages) instead of the Python line that happened to trigger them."""
    context = (source.sparkSession if hasattr(source, "sparkSession") else source).sparkContext
    label = f"neardup: {name}"
    context.setLocalProperty("callSite.short", label)
    context.setLocalProperty("callSite.long", label)
    try:
        yield
    finally:
        context.setLocalProperty("callSite.short", None)  # type: ignore[arg-type]
        context.setLocalProperty("callSite.long", None)  # type: ignore[arg-type]

# Up to this many ids are broadcast to every executor to pick records out of the signed ones without a shuffle
# (a few tens of MB of ids); more, and the join shuffles as usual.
_BROADCAST_IDS = 1_000_000
# The same for a dedup's row numbers (8-byte longs, a compact hash relation: ~100 MB at the limit). Without the
# broadcast the verification shuffles every signed record, twice (signature and shingles, ~1.3 KB each): at
# 10,000,000 documents 1.3M rows were in a candidate pair, over the ids' limit, and the shuffle wrote 29 GB
# (590 B a document at 1M, 2,900 at 10M) and the verification took 22x its 1M time.
_BROADCAST_ROWS = 4_000_000


def _bucket_judge(params: LSHParams, split_bucket: int, keep_matches: int, max_bucket: int):
    """The function applyInPandas runs on one oversized bucket: its members in id order (the single process's
    ordinal order: Solr's cursor sorts ids by code point, as Python sorts str), their pairs by the shared rule."""

    def judge(bucket):  # a pandas DataFrame: band, key, row, id, signature
        import numpy as np
        import pandas as pd

        bucket = bucket.sort_values("id", kind="stable")
        rows = bucket["row"].to_numpy(dtype=np.int64)
        sigs = np.array(bucket["signature"].tolist(), dtype=np.int64).astype(np.uint32)
        i, j = bucket_candidates(sigs, int(bucket["band"].iloc[0]), params, split_bucket=split_bucket,
                                 keep_matches=keep_matches, max_bucket=max_bucket)
        # As the small buckets give them: the smaller row number first, so a pair of two buckets is one row.
        return pd.DataFrame({"a": np.minimum(rows[i], rows[j]), "b": np.maximum(rows[i], rows[j])})

    return judge


def _count_oversized(members: "DataFrame", max_bucket: int, cross: bool, stats: SparkJobStats) -> None:
    """Count the oversized buckets and the pairs their split does not generate, and say so (as pairs/candidates.py)."""
    from pyspark.sql import functions as F

    big = members.filter(F.col("size") > max_bucket)
    blocks = big.groupBy("band", "key", "block").agg(F.count("*").alias("c"), F.sum("side").alias("r"))
    emitted = (F.col("c") - F.col("r")) * F.col("r") if cross else F.col("c") * (F.col("c") - 1) / 2
    buckets = blocks.groupBy("band", "key").agg(F.sum("c").alias("m"), F.sum("r").alias("r"),
                                                F.sum(emitted).alias("emitted"))
    total = (F.col("m") - F.col("r")) * F.col("r") if cross else F.col("m") * (F.col("m") - 1) / 2
    row = buckets.agg(F.count("*").alias("n"), F.sum(total - F.col("emitted")).alias("lost"),
                      F.max("m").alias("largest")).collect()[0]
    if row["n"]:
        stats.oversized_buckets += int(row["n"])
        stats.pairs_not_generated += int(row["lost"])
        log.warning(
            "%d bucket(s) of up to %d documents share one band key (limit max_bucket=%d): they are split into "
            "blocks and %d pairs across blocks are not generated (other bands may still find them)",
            row["n"], row["largest"], max_bucket, int(row["lost"]))


def _candidate_rows(candidates: "DataFrame", left: "DataFrame", right: "DataFrame", set_column: str,
                    stats: SparkJobStats, key: str = "id") -> tuple["DataFrame", "DataFrame | None"]:
    """The candidates ``a, b`` (values of ``key``: ids, or the row numbers of a dedup's band buckets) as the two
    records' ids ``a, b`` with their signatures and sets (``sig_a, sig_b, set_a, set_b``), and the cached frame of
    picked records to unpersist once the caller has materialised what it needs (or None)."""
    from pyspark.sql import functions as F

    def side(frame: "DataFrame", name: str) -> "DataFrame":
        named = [F.col("id").alias(f"id_{name}")] if key != "id" else []
        return frame.select(F.col(key).alias(name), *named, F.col("signature").alias(f"sig_{name}"),
                            F.col(set_column).alias(f"set_{name}"))

    # Only the records in a candidate pair are joined, found through a broadcast of their ids when they are few
    # enough: the signed records (signature and set, ~1.3 KB each) are then not shuffled whole. A dedup, whose two
    # sides are one set of records, picks them in one scan of the cached records; its records in a pair are
    # counted (near-duplicate clusters share them: 0.9 a candidate pair at 10M documents, not 2).
    picked = None
    limit = _BROADCAST_IDS if key == "id" else _BROADCAST_ROWS
    if left is right and stats.candidate_pairs <= limit:
        # Counted, then computed again for the broadcast: both from the cached candidates, a small job each.
        ids = (candidates.select(F.col("a").alias(key))
               .unionByName(candidates.select(F.col("b").alias(key))).distinct())
        if ids.count() <= limit:
            left = right = picked = left.join(F.broadcast(ids), key).cache()
    elif left is not right and stats.candidate_pairs * 2 <= limit:
        left = left.join(F.broadcast(candidates.select(F.col("a").alias(key)).distinct()), key)
        right = right.join(F.broadcast(candidates.select(F.col("b").alias(key)).distinct()), key)
    both = candidates.join(side(left, "a"), "a").join(side(right, "b"), "b")
    if key != "id":
        both = both.drop("a", "b").withColumnRenamed("id_a", "a").withColumnRenamed("id_b", "b")
    return both, picked


def _estimated(candidates: "DataFrame", left: "DataFrame", right: "DataFrame", threshold: float, k: int,
               set_column: str, stats: SparkJobStats, *, verify: bool = False, key: str = "id") -> "DataFrame":
    """Candidates ``a, b`` whose signatures agree in enough positions to be verified (the margin rule every LSH
    path uses), cached and counted. Without ``verify``: with their sets ``set_a``, ``set_b`` (``set_column`` of each
    side) for an exact verification to come. With ``verify`` (plain Jaccard): as ``a, b, similarity``, the exact
    Jaccard of the shingle sets computed in the same pass by the vectorised UDF of :mod:`neardup_solr.spark.verify`."""
    from pyspark.sql import functions as F

    t0 = time.perf_counter()
    stats.margin = estimate_margin(threshold, k)
    need = min_matches(threshold, k, stats.margin)
    both, picked = _candidate_rows(candidates, left, right, set_column, stats, key)
    if verify:
        estimated, stage = estimated_pairs(both, need).cache(), "estimate and verify"
    else:
        agreeing = F.aggregate(F.zip_with("sig_a", "sig_b", lambda x, y: (x == y).cast("int")), F.lit(0),
                               lambda acc, v: acc + v)
        estimated, stage = both.filter(agreeing >= need).cache(), "estimate"
    with _stage(candidates, stage):
        stats.estimated_pairs = estimated.count()
    candidates.unpersist()
    if picked is not None:
        picked.unpersist()
    stats.seconds["verify"] = round(time.perf_counter() - t0, 3)
    return estimated


def _verified(candidates: "DataFrame", left: "DataFrame", right: "DataFrame", threshold: float,
              settings: IndexSettings, snapshot: IdfSnapshot | None, stats: SparkJobStats,
              key: str = "id") -> "DataFrame":
    """``a, b, similarity`` (ids) of the candidates (values of ``key``) that pass the estimate and, verified
    exactly, the threshold: Jaccard of the shingle sets, or with a ``snapshot`` the IDF-weighted Jaccard of the
    words."""
    from pyspark.sql import functions as F

    if snapshot is None:
        estimated = _estimated(candidates, left, right, threshold, settings.num_hashes, "shingles", stats,
                               verify=True, key=key)
        return estimated.filter(F.col("similarity") >= F.lit(threshold))

    estimated = _estimated(candidates, left, right, threshold, snapshot.num_hashes, "tokens", stats, key=key)
    measure = weighted_similarity(F.col("set_a"), F.col("set_b"), snapshot, left.sparkSession)
    # The Solr side's acceptance test for weighted similarities (sums of logarithms).
    floor = threshold - 1e-12
    return (estimated.select("a", "b", measure.cast("double").alias("similarity"))
            .filter(F.col("similarity") >= F.lit(floor)))
