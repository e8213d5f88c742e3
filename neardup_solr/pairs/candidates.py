"""Candidate pairs from LSH bands, pure NumPy: band buckets, their refinement, and the estimate that filters
them. No Solr here: :mod:`neardup_solr.engine.collection` feeds these functions signatures read from Solr,
and the weighted and Spark paths feed them their own.

Choice of bands and rows
    A pair of similarity ``s`` becomes a candidate with probability ``1 - (1 - s**r)**b``. The default
    ``false_negative_weight=0.998`` makes :func:`~neardup_solr.pairs.lsh.optimal_params` choose ``b=21, r=6`` for
    t = 0.8 and 128 values: P(0.80) = 0.998, P(0.75) = 0.984, P(0.5) = 0.28. Missing a pair is final,
    whereas a surplus candidate costs one vectorised comparison of two signatures, and one band of a
    million documents (keys, sort, buckets) takes ~0.35 s, so the extra bands over the error-area optimum
    (9 x 13, P(0.8) = 0.40) are cheap. On the 100,000-document benchmark corpus (6,930 pairs >= 0.8):
    12 x 10 finds 94.9% of them, 18 x 7 99.86%, 21 x 6 99.97%, 25 x 5 and 32 x 4 100%, with 13,395 to
    17,309 candidates for all four of the latter. ``lsh_params`` overrides the choice.

Oversized buckets
    A bucket of m members costs m(m-1)/2 candidates, and at low thresholds, where a band has only 2 or 3 rows,
    unrelated documents fill large buckets: a common token (a street type, a big city) that wins both positions
    of a band for every document holding it, or common 3-grams shared by names and addresses. Measured on
    100,000 generated person records: at T = 0.4 (IDF, 42 x 2) 54 buckets of over 300 members (the largest
    5,123) made 25.5 million of the 31 million band pairs, and the candidates grew with the square of the
    records (355 thousand at 10,000, 28.8 million at 100,000). A record has only a few near duplicates, so
    past ``split_bucket`` members a bucket is mostly unrelated documents. Its members' keys then fold in their
    next signature value (positions outside the band, in order, :func:`~neardup_solr.pairs.lsh.extension_positions`),
    and sub-buckets still above the limit fold in the next: an unrelated pair (similarity ~0.1) survives each
    extra value with probability ~0.1, a pair at the threshold with probability >= t, and only in the bands
    where it fell into a large bucket. Measured at 100,000 records, ``split_bucket=10``: 0.55 million
    candidates instead of 28.8 million at T = 0.4 (IDF), 2.0 million instead of 32.8 million at T = 0.5
    (3-shingles), and 2 of the 26,506 (IDF) and 2 of the 32,359 (plain) pairs the unrefined bands found were
    lost (the IDF run's recall against the exact method: 0.99985, 26,504 of 26,508).
    The candidates per record still grow, but slowly (x1.28 per doubling of the records instead of x2).
    ``split_bucket=None`` turns the refinement off.

Margin
    The number of equal positions of two signatures is close to Binomial(k, J) (``k = num_hashes``; see
    :mod:`neardup_solr.text` for the measured error). Before exact verification a candidate is kept when its
    estimate is at least ``t - margin`` with ``margin = 3 * sqrt(t(1 - t)/k)`` (at least ``1/k``): a pair at
    exactly ``t`` falls below that with probability ~0.13%, a pair above ``t`` less often (its spread is
    smaller and its mean higher). For t = 0.8 and k = 128 the margin is 0.106: estimates >= 0.695 are
    verified.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Callable, Iterator, Sequence

import numpy as np

from neardup_solr.errors import InvalidTextError
from neardup_solr.pairs._arrays import concat_ranges, set_intersections, sorted_distinct
from neardup_solr.pairs.lsh import LSHParams, band_keys, extend_keys, extension_positions
from neardup_solr.pairs.signature_store import SignatureStore
from neardup_solr.text import Shingler
from neardup_solr.validation import check_int

log = logging.getLogger(__name__)

__all__ = [
    "CollectionStats",
    "candidate_pairs",
    "store_candidate_pairs",
    "matching_positions",
    "store_matching_positions",
    "estimate_margin",
    "min_matches",
]

DEFAULT_FALSE_NEGATIVE_WEIGHT = 0.998
DEFAULT_MAX_BUCKET = 5000
# Members above which a band bucket is refined by further signature values (see "Oversized buckets" above).
DEFAULT_SPLIT_BUCKET = 10
# One-sided z of the estimate margin: P(Binomial estimate < t - margin | J = t) ~ 0.13%.
MARGIN_Z = 3.0
# Pairs materialised at once when expanding buckets (int64 temporaries of this length).
_PAIR_CHUNK = 4_000_000
# Candidate pairs compared at once: two gathered (chunk, num_hashes) uint32 blocks, 32 MB each at 128 values.
_ESTIMATE_CHUNK = 65_536
# Token lookups per exact-verification batch (a few int64 temporaries of this length).
_VERIFY_LOOKUPS = 4_000_000


@dataclass
class CollectionStats:
    documents: int = 0
    skipped_documents: int = 0  # no or malformed minhash_sig
    bands: int = 0
    rows: int = 0
    candidate_pairs: int = 0  # distinct pairs sharing at least one band
    estimated_pairs: int = 0  # candidates whose estimate passed (>= t - margin, or >= t without exact)
    verified_pairs: int = 0  # pairs reported
    margin: float = 0.0
    oversized_buckets: int = 0
    pairs_not_generated: int = 0  # pairs inside oversized buckets that were not emitted
    refined_buckets: int = 0  # buckets over split_bucket, refined by further signature values
    refined_members: int = 0  # documents (per band) in those buckets
    deepest_refinement: int = 0  # most extra signature values one bucket needed
    fetched_documents: int = 0  # texts fetched for exact verification (a text needed by two slices: twice)
    missing_documents: int = 0  # gone (deleted) between reading signatures and fetching texts
    requests: int = 0  # HTTP requests to Solr
    exact: bool = True
    seconds: dict[str, float] = field(default_factory=dict)
    peak_rss_mib: float = 0.0  # peak resident memory of this process so far (not Solr's)
    partitions: int = 1  # slices of each band's keys read one at a time (see signature_store)
    work_dir_mib: float = 0.0  # disk taken by the signature store




# Reads the extension values of some members of a band: (positions into the band's key array) ->
# (len(positions), len(extension_positions)) signature values, one column per extra row in order of use.
ExtensionReader = Callable[[np.ndarray], np.ndarray]


def _bucket_sizes(keys: np.ndarray) -> np.ndarray:
    """Size of the bucket (run of equal keys) each element of ``keys`` is in."""
    _, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
    return counts[inverse.reshape(-1)]


def _split_oversized(keys: np.ndarray, split_bucket: int, extension: ExtensionReader,
                     stats: CollectionStats) -> np.ndarray:
    """``keys`` where every bucket of more than ``split_bucket`` members is refined: its members' keys fold in
    their next signature value (:func:`~neardup_solr.pairs.lsh.extend_keys`), and sub-buckets still too large fold in
    the next, until each is small enough or the values run out (identical signatures: the caller's
    ``max_bucket`` blocks take over)."""
    sizes = _bucket_sizes(keys)
    active = np.flatnonzero(sizes > split_bucket)
    if not active.size:
        return keys
    stats.refined_buckets += int(np.unique(keys[active]).size)
    stats.refined_members += int(active.size)
    keys = keys.copy()
    values = extension(active)
    depth = 0
    while active.size and depth < values.shape[1]:
        refined = extend_keys(keys[active], values[:, depth])
        keys[active] = refined
        depth += 1
        still = _bucket_sizes(refined) > split_bucket
        active, values = active[still], values[still]
    stats.deepest_refinement = max(stats.deepest_refinement, depth)
    return keys


def _bucket_pairs(
    keys: np.ndarray,
    max_bucket: int,
    stats: CollectionStats,
    ordinals: np.ndarray | None = None,
    total: int | None = None,
    split_bucket: int | None = None,
    extension: ExtensionReader | None = None,
) -> Iterator[np.ndarray]:
    """Codes ``i * total + j`` (i < j) of every pair of documents with equal keys, in chunks.

    ``ordinals`` (ascending) name the documents whose keys these are (default: 0, 1, 2...); ``total`` is the
    number of documents the codes are counted over (default: ``keys.size``). With ``split_bucket`` and
    ``extension``, buckets of more members are first refined by further signature values
    (:func:`_split_oversized`)."""
    n = keys.size
    if n < 2:
        return
    if split_bucket is not None and extension is not None and n > split_bucket:
        keys = _split_oversized(keys, split_bucket, extension, stats)
    labels = ordinals if ordinals is not None else np.arange(n, dtype=np.int64)
    total = n if total is None else total
    # Stable: equal keys keep ascending ordinal order, so the first of two members is the smaller ordinal.
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    boundary = np.empty(n, dtype=bool)
    boundary[0] = True
    np.not_equal(sorted_keys[1:], sorted_keys[:-1], out=boundary[1:])
    del sorted_keys
    starts = np.flatnonzero(boundary)
    sizes = np.diff(np.append(starts, n))
    big = np.flatnonzero(sizes > max_bucket)
    if big.size:
        m = sizes[big].astype(np.int64)
        full, rest = np.divmod(m, max_bucket)
        emitted = full * (max_bucket * (max_bucket - 1) // 2) + rest * (rest - 1) // 2
        lost = int((m * (m - 1) // 2 - emitted).sum())
        stats.oversized_buckets += int(big.size)
        stats.pairs_not_generated += lost
        log.warning(
            "%d bucket(s) of up to %d documents share one band key (limit max_bucket=%d): they are split into "
            "blocks and %d pairs across blocks are not generated (other bands may still find them)",
            big.size, int(m.max()), max_bucket, lost,
        )
        for s, size in zip(starts[big].tolist(), m.tolist()):
            boundary[s : s + size : max_bucket] = True
        starts = np.flatnonzero(boundary)
        sizes = np.diff(np.append(starts, n))
    del boundary
    multi = sizes > 1
    starts, sizes = starts[multi], sizes[multi]
    if not starts.size:
        return
    # Each member except a bucket's last pairs with every later member of its bucket.
    positions = concat_ranges(starts, sizes - 1)
    later = np.repeat(starts + sizes, sizes - 1) - positions - 1
    cum = np.cumsum(later)
    lo = 0
    while lo < positions.size:
        base = int(cum[lo - 1]) if lo else 0
        hi = max(lo + 1, int(np.searchsorted(cum, base + _PAIR_CHUNK, side="right")))
        pos, cnt = positions[lo:hi], later[lo:hi]
        first = np.repeat(pos, cnt)
        step = np.arange(first.size, dtype=np.int64) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        yield labels[order[first]] * np.int64(total) + labels[order[first + 1 + step]]
        lo = hi


def _merge_unique(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Union of two sorted distinct int64 arrays (sorted, distinct)."""
    if not a.size:
        return b
    if not b.size:
        return a
    merged = np.concatenate((a, b))
    merged.sort(kind="stable")  # two sorted runs: timsort merges them in linear time
    keep = np.empty(merged.size, dtype=bool)
    keep[0] = True
    np.not_equal(merged[1:], merged[:-1], out=keep[1:])
    return merged[keep]


def _partition_candidates(
    keys: np.ndarray, ordinals: np.ndarray | None, total: int, max_bucket: int, stats: CollectionStats,
    split_bucket: int | None = None, extension: ExtensionReader | None = None,
) -> np.ndarray:
    """Sorted distinct codes of the pairs sharing a key within one band (or one partition of a band)."""
    chunks = [sorted_distinct(codes) for codes in _bucket_pairs(keys, max_bucket, stats, ordinals, total,
                                                                 split_bucket, extension)]
    if not chunks:
        return np.empty(0, dtype=np.int64)
    return chunks[0] if len(chunks) == 1 else sorted_distinct(np.concatenate(chunks))


def candidate_pairs(
    signatures: np.ndarray,
    params: LSHParams,
    *,
    max_bucket: int = DEFAULT_MAX_BUCKET,
    split_bucket: int | None = DEFAULT_SPLIT_BUCKET,
    stats: CollectionStats | None = None,
    on_band: Callable[[], None] | None = None,
) -> np.ndarray:
    """Sorted distinct codes ``i * n + j`` (i < j, rows of ``signatures``) of pairs sharing a band (in memory;
    :func:`store_candidate_pairs` does the same from a store on disk). Buckets of more than ``split_bucket``
    members are refined by further signature values (``None``: never)."""
    if max_bucket < 2:
        raise ValueError(f"max_bucket must be at least 2, got {max_bucket}")
    check_split_bucket(split_bucket)
    stats = stats if stats is not None else CollectionStats()
    sigs = np.asarray(signatures)
    if sigs.ndim != 2 or sigs.shape[1] < params.num_hashes:
        raise ValueError(f"{params} needs (n, >= {params.num_hashes}) signatures, got shape {sigs.shape}")
    one_band = LSHParams(1, params.rows)
    seen = np.empty(0, dtype=np.int64)
    for band in range(params.bands):
        # One band at a time keeps a single (n,) key array alive instead of (n, bands). The keys are only
        # compared within their band, so every band may use band_keys' first-band seed.
        keys = band_keys(sigs[:, band * params.rows : (band + 1) * params.rows], one_band)[:, 0]
        columns = extension_positions(band, params, sigs.shape[1])
        extension = lambda positions, columns=columns: sigs[positions][:, columns]  # noqa: E731
        seen = _merge_unique(seen, _partition_candidates(keys, None, sigs.shape[0], max_bucket, stats,
                                                         split_bucket, extension))
        del keys
        if on_band:
            on_band()
    return seen


def store_candidate_pairs(
    store: SignatureStore,
    *,
    max_bucket: int = DEFAULT_MAX_BUCKET,
    split_bucket: int | None = DEFAULT_SPLIT_BUCKET,
    stats: CollectionStats | None = None,
    on_partition: Callable[[], None] | None = None,
) -> np.ndarray:
    """Sorted distinct codes ``i * n + j`` (i < j, ordinals of ``store``) of pairs sharing a band, reading one
    (band, partition) of keys at a time: memory follows the partition size and the candidates, not ``n``.
    Oversized buckets are refined as in :func:`candidate_pairs`, their members' signatures read from the store."""
    if max_bucket < 2:
        raise ValueError(f"max_bucket must be at least 2, got {max_bucket}")
    check_split_bucket(split_bucket)
    stats = stats if stats is not None else CollectionStats()
    seen = np.empty(0, dtype=np.int64)
    for band, keys, ordinals in store.band_partitions():
        columns = extension_positions(band, store.params, store.num_hashes)
        # Ordinals are ascending, so the members' rows come back from the store in one ordered pass.
        extension = lambda positions, ordinals=ordinals, columns=columns: (  # noqa: E731
            store.signatures(ordinals[positions])[:, columns])
        seen = _merge_unique(seen, _partition_candidates(keys, ordinals, store.count, max_bucket, stats,
                                                         split_bucket, extension))
        del keys, ordinals
        if on_partition:
            on_partition()
    return seen


def check_split_bucket(split_bucket: int | None) -> None:
    if split_bucket is not None:
        check_int("split_bucket", split_bucket, minimum=2)



# ---------------------------------------------------------------------------------------------------------------
# 3. Estimate
# ---------------------------------------------------------------------------------------------------------------


def matching_positions(signatures: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Number of equal signature values of each pair (a[i], b[i]), computed in chunks."""
    out = np.empty(a.size, dtype=np.int32)
    for lo in range(0, a.size, _ESTIMATE_CHUNK):
        hi = lo + _ESTIMATE_CHUNK
        out[lo:hi] = np.count_nonzero(signatures[a[lo:hi]] == signatures[b[lo:hi]], axis=1)
    return out


def store_matching_positions(store: SignatureStore, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """:func:`matching_positions` with the signatures read from ``store``, chunk by chunk."""
    out = np.empty(a.size, dtype=np.int32)
    for lo in range(0, a.size, _ESTIMATE_CHUNK):
        hi = lo + _ESTIMATE_CHUNK
        rows, inverse = np.unique(np.concatenate((a[lo:hi], b[lo:hi])), return_inverse=True)
        sigs = store.signatures(rows)
        m = hi - lo if hi <= a.size else a.size - lo
        out[lo:hi] = np.count_nonzero(sigs[inverse[:m]] == sigs[inverse[m:]], axis=1)
    return out


def estimate_margin(threshold: float, num_hashes: int, z: float = MARGIN_Z) -> float:
    """How far below ``threshold`` an estimate may fall and still be verified (see the module docstring)."""
    return max(z * math.sqrt(threshold * (1.0 - threshold) / num_hashes), 1.0 / num_hashes)


def min_matches(threshold: float, num_hashes: int, margin: float) -> int:
    """Agreeing signature positions a candidate needs to be verified: ``ceil((threshold - margin) * k)``. The
    one rule every LSH path (collection, weighted, Spark) applies, so they keep the same candidates."""
    # The epsilon keeps a product that lands a hair above an integer (0.8 * 128) from asking one more position.
    return math.ceil((threshold - margin) * num_hashes - 1e-9)



def shingle_sets(shingler: Shingler, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Concatenated shingle hashes of ``texts`` (duplicates kept) and each text's offsets."""
    try:
        return shingler.batch_hashes(texts)
    except InvalidTextError:
        # A text without shingles (none indexed ones, but a changed document may be): one at a time.
        parts = [shingler.shingle_hashes(t) for t in texts]
        offsets = np.zeros(len(parts) + 1, dtype=np.int64)
        np.cumsum([p.size for p in parts], out=offsets[1:])
        return (np.concatenate(parts) if parts else np.empty(0, dtype=np.uint32)), offsets




def exact_jaccard(keyed: np.ndarray, sizes: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Jaccard of the sets of slots x[i] and y[i] (``keyed`` is sorted by slot, then hash)."""
    inter = set_intersections(keyed, sizes, x, y, _VERIFY_LOOKUPS)
    union = sizes[x] + sizes[y] - inter
    return inter / np.maximum(union, 1)

