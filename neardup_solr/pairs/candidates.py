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
    records (355 thousand at 10,000, 28.8 million at 100,000).

    But a large bucket is not always noise. Versions of one contract, licence, template or news story make
    clusters of 20-60 near duplicates, and every band they share is a large bucket of *related* documents.
    The first rule here (split every bucket over ``split_bucket=10`` members by its members' next signature
    values) treated both alike: a pair at similarity s survives each extra value with probability ~s, so on a
    corpus of such clusters it kept 0.918 of the pairs at J >= 0.5, and said nothing.

    So each bucket of more than ``split_bucket`` members is judged from its own signatures
    (:func:`_refine_oversized`):

    - **small** (at most ``VERIFY_IN_PLACE`` = 100 members) or **dense** (of ``DENSITY_SAMPLE`` = 16 members
      spread over it, each compared with every other member, at least ``DENSE_SHARE`` = half of those pairs
      reach the candidate bar): it is *verified in place*: each of its pairs is estimated from the whole
      signatures and becomes a candidate only if it reaches the bar (``keep_matches``, the
      :func:`min_matches` rule the next stage applies anyway). This loses nothing: a pair below the bar would
      be dropped by the estimate a moment later. Its cost is m(m-1)/2 estimates, bounded by 4,950 for a small
      bucket, and for a dense one proportional to the near pairs it holds, which are the output.
    - **large and sparse**: mostly unrelated documents (the person-record case). Its members' keys fold in
      their next signature value (positions outside the band, in order,
      :func:`~neardup_solr.pairs.lsh.extension_positions`) and each sub-bucket still over ``split_bucket`` is
      judged again. Only here can a pair be lost, and only in a band where it sat in such a bucket; the
      sample's near pairs that a split parts are counted and scaled to the bucket (``pairs_at_risk``: an upper
      estimate, since other bands may still find them).

    Why this rule, against the others the issue proposed: several independent extensions (a pair survives with
    ``1 - (1 - s^d)^m``) multiply the cost of every oversized bucket by m and still lose pairs at low s; a
    global candidate budget splits whichever buckets are largest, which is exactly the clusters. Judging each
    bucket by its own pairs splits only what is noise. ``tests/unit/pairs/test_candidates.py`` holds the rule to brute
    force; ``benchmarks/refinement.py`` measures recall against the exact method on clustered, planted-copy and
    person-record corpora (README, "Oversized buckets").

    ``split_bucket=None`` turns the refinement off (every bucket emits all its pairs, up to ``max_bucket``).
    Without a candidate bar (``keep_matches=None``) every oversized bucket is split, the first rule.

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
# Members above which a band bucket is oversized and judged (see "Oversized buckets" above): one default for
# every front door.
from neardup_solr.options import DEFAULT_SPLIT_BUCKET
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
# Oversized buckets of at most this many members are verified in place (at most 4,950 pair estimates each).
VERIFY_IN_PLACE = 100
# Members sampled per oversized bucket (each compared with every other member), and the share of those pairs
# at the candidate bar that makes the bucket a cluster.
DENSITY_SAMPLE = 16
DENSE_SHARE = 0.5
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
    # Refinement of buckets over split_bucket members (counted per band: a pair in two bands counts twice)
    oversized_pairs: int = 0  # pairs inside the buckets over split_bucket, before refinement
    oversized_emitted: int = 0  # of those, the pairs that became candidates
    verified_buckets: int = 0  # oversized buckets (or sub-buckets) verified in place: small or dense
    verified_in_place: int = 0  # pairs estimated in place (emitted only when their estimate reached the bar)
    refined_buckets: int = 0  # oversized buckets (or sub-buckets) split by one more signature value
    refined_members: int = 0  # documents (per band and level) in those buckets
    deepest_refinement: int = 0  # most extra signature values one bucket needed
    pairs_at_risk: float = 0.0  # estimated near pairs the splits parted in some band (other bands may find them)
    fetched_documents: int = 0  # texts fetched for exact verification (a text needed by two slices: twice)
    missing_documents: int = 0  # gone (deleted) between reading signatures and fetching texts
    requests: int = 0  # HTTP requests to Solr
    exact: bool = True
    seconds: dict[str, float] = field(default_factory=dict)
    peak_rss_mib: float = 0.0  # peak resident memory of this process so far (not Solr's)
    partitions: int = 1  # slices of each band's keys read one at a time (see signature_store)
    work_dir_mib: float = 0.0  # disk taken by the signature store

    def refinement(self) -> dict[str, float | int]:
        """What the refinement of oversized buckets did, for logs and ``--json`` stats (see the fields)."""
        return refinement_summary(self)


REFINEMENT_FIELDS = ("oversized_pairs", "oversized_emitted", "verified_buckets", "verified_in_place",
                     "refined_buckets", "refined_members", "deepest_refinement", "pairs_at_risk")


def refinement_summary(stats: object) -> dict[str, float | int]:
    """The refinement counters of ``stats`` (any object with :data:`REFINEMENT_FIELDS`), with
    ``candidates_avoided`` (band pairs of oversized buckets that never became candidates) and ``pairs_at_risk``
    rounded to a whole number of pairs."""
    out: dict[str, float | int] = {name: getattr(stats, name) for name in REFINEMENT_FIELDS}
    out["candidates_avoided"] = int(out["oversized_pairs"]) - int(out["oversized_emitted"])
    out["pairs_at_risk"] = round(float(out["pairs_at_risk"]))
    return out


def log_refinement(stats: object, split_bucket: int | None) -> None:
    """One log line on what the refinement did (INFO), raised to WARNING when splits may have cost pairs."""
    summary = refinement_summary(stats)
    if not summary["oversized_pairs"]:
        return
    level = logging.WARNING if summary["pairs_at_risk"] >= 1 else logging.INFO
    log.log(level,
            "buckets over split_bucket=%s members: %d verified in place (small or dense), %d split by further "
            "signature values; %d of %d band pairs inside them avoided as candidates; estimated near pairs the "
            "splits parted: %d (other bands may still find them; split_bucket=None never splits)",
            split_bucket, summary["verified_buckets"], summary["refined_buckets"], summary["candidates_avoided"],
            summary["oversized_pairs"], summary["pairs_at_risk"])




# Reads whole signatures of some members of a band: (sorted distinct positions into the band's key array) ->
# (len(positions), num_hashes) signature values.
SignatureReader = Callable[[np.ndarray], np.ndarray]

# Reads the extension values of some members of a band: (positions into the band's key array) ->
# (len(positions), len(extension_positions)) signature values, one column per extra row in order of use.
ExtensionReader = Callable[[np.ndarray], np.ndarray]


def _bucket_sizes(keys: np.ndarray) -> np.ndarray:
    """Size of the bucket (run of equal keys) each element of ``keys`` is in."""
    _, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
    return counts[inverse.reshape(-1)]


def _bucket_bounds(sorted_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and size of each run of equal values in ``sorted_keys``."""
    n = sorted_keys.size
    boundary = np.empty(n, dtype=bool)
    boundary[0] = True
    np.not_equal(sorted_keys[1:], sorted_keys[:-1], out=boundary[1:])
    starts = np.flatnonzero(boundary)
    return starts, np.diff(np.append(starts, n))


class _Judge:
    """Decides, bucket by bucket, what an oversized bucket is (see "Oversized buckets" in the module docstring)
    and estimates pairs of members from their whole signatures: ``signatures(positions)`` reads the rows of
    members (positions into the band's key array, any order, repeats allowed)."""

    def __init__(self, signatures: "SignatureReader", keep_matches: int, params: LSHParams):
        self.signatures = signatures
        self.keep_matches = keep_matches
        self.params = params

    def shared_bands(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """How many bands each pair (x[i], y[i]) agrees on entirely (so shares a bucket in, before refinement)."""
        if not x.size:
            return np.zeros(0, dtype=np.int64)
        rows, inverse = np.unique(np.concatenate((x, y)), return_inverse=True)
        sigs = self.signatures(rows)[:, : self.params.num_hashes]
        equal = sigs[inverse[: x.size]] == sigs[inverse[x.size:]]
        return equal.reshape(x.size, self.params.bands, self.params.rows).all(axis=2).sum(axis=1)

    def matches(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Equal signature positions of the member pairs (x[i], y[i])."""
        return _read_matching_positions(self.signatures, x, y)

    @staticmethod
    def sample(starts: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Pairs that sample each bucket ``starts[i]:starts[i] + sizes[i]`` (of an array sorted by bucket): up to
        DENSITY_SAMPLE members spread evenly over the bucket, each with every other member. A member against all
        the others finds its whole cluster where random pairs would miss a small one. The same every run.
        Returns (bucket of each pair, pairs per bucket, first, second) as positions of the sorted array."""
        taken = np.minimum(sizes, DENSITY_SAMPLE)
        bucket_of_member = np.repeat(np.arange(sizes.size), taken)
        i = concat_ranges(np.zeros_like(taken), taken)
        sampled = starts[bucket_of_member] + i * sizes[bucket_of_member] // taken[bucket_of_member]
        others = sizes[bucket_of_member] - 1
        bucket = np.repeat(bucket_of_member, others)
        first = np.repeat(sampled, others)
        offset = concat_ranges(np.ones_like(others), others)  # 1 .. m-1: every other member, wrapping
        second = starts[bucket] + (first - starts[bucket] + offset) % sizes[bucket]
        return bucket, taken * (sizes - 1), first, second


def _refine_oversized(keys: np.ndarray, split_bucket: int, extension: ExtensionReader, judge: "_Judge | None",
                      stats: CollectionStats) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``keys`` with the oversized buckets (more than ``split_bucket`` members) refined, a mask of the members
    whose final bucket is verified in place (its pairs pass :meth:`_Judge.matches` before they become
    candidates), and a mask of the members of the oversized buckets.

    Each oversized bucket is judged on its own: verified in place when it has at most VERIFY_IN_PLACE members,
    or when most of a sample of its pairs already reach the candidate bar (a cluster of near duplicates);
    otherwise its members' keys fold in their next signature value and the sub-buckets still oversized are
    judged again. Without a judge (no threshold known) every oversized bucket is split, level after level."""
    n = keys.size
    in_place = np.zeros(n, dtype=bool)
    oversized = np.zeros(n, dtype=bool)
    sizes = _bucket_sizes(keys)
    active = np.flatnonzero(sizes > split_bucket)
    if not active.size:
        return keys, in_place, oversized
    oversized[active] = True
    stats.oversized_pairs += int((sizes[active] - 1).sum() // 2)  # sum over buckets of m(m-1)/2
    keys = keys.copy()
    values = extension(active)
    depth = 0
    while active.size:
        order = np.argsort(keys[active], kind="stable")
        members, vals = active[order], values[order]
        starts, counts = _bucket_bounds(keys[members])
        settle = np.zeros(counts.size, dtype=bool)
        if depth >= vals.shape[1]:
            settle[:] = True  # identical signatures: nothing left to split on (max_bucket blocks take over)
        elif judge is not None:
            settle |= counts <= VERIFY_IN_PLACE
            large = np.flatnonzero(~settle)
            if large.size:
                bucket, taken, first, second = judge.sample(starts[large], counts[large])
                near = judge.matches(members[first], members[second]) >= judge.keep_matches
                share = np.bincount(bucket, weights=near, minlength=large.size) / taken
                dense = share >= DENSE_SHARE
                settle[large[dense]] = True
                # What splitting the others may cost: their sampled near pairs that the next value parts and that
                # share no other band (where they would meet again), scaled to the bucket's pairs. Another band
                # may part them too, and a pair parted here may meet again deeper: an estimate, not a bound.
                apart = near & (vals[first, depth] != vals[second, depth]) & ~dense[bucket]
                if apart.any():
                    where = np.flatnonzero(apart)
                    apart[where] = judge.shared_bands(members[first[where]], members[second[where]]) <= 1
                m = counts[large].astype(np.float64)
                stats.pairs_at_risk += float((np.bincount(bucket, weights=apart, minlength=large.size) / taken
                                              * m * (m - 1) / 2).sum())
        settled_members = np.repeat(settle, counts)
        if judge is not None:
            stats.verified_buckets += int(settle.sum())
            in_place[members[settled_members]] = True
        stats.refined_buckets += int((~settle).sum())
        split = ~settled_members
        stats.refined_members += int(split.sum())
        members, vals = members[split], vals[split]
        if not members.size:
            break
        keys[members] = extend_keys(keys[members], vals[:, depth])
        depth += 1
        still = _bucket_sizes(keys[members]) > split_bucket
        active, values = members[still], vals[still]
    stats.deepest_refinement = max(stats.deepest_refinement, depth)
    return keys, in_place, oversized


def _bucket_pairs(
    keys: np.ndarray,
    max_bucket: int,
    stats: CollectionStats,
    ordinals: np.ndarray | None = None,
    total: int | None = None,
    split_bucket: int | None = None,
    extension: ExtensionReader | None = None,
    judge: _Judge | None = None,
    cross_at: int | None = None,
) -> Iterator[np.ndarray]:
    """Codes ``i * total + j`` (i < j) of every pair of documents with equal keys, in chunks.

    ``ordinals`` (ascending) name the documents whose keys these are (default: 0, 1, 2...); ``total`` is the
    number of documents the codes are counted over (default: ``keys.size``). With ``split_bucket`` and
    ``extension``, buckets of more members are first refined (:func:`_refine_oversized`); with a ``judge``, the
    pairs of a bucket verified in place are emitted only when their estimate reaches the candidate bar. With
    ``cross_at`` (a join), only pairs ``i < cross_at <= j`` are emitted."""
    n = keys.size
    if n < 2:
        return
    in_place = oversized = None
    if split_bucket is not None and extension is not None and n > split_bucket:
        keys, in_place, oversized = _refine_oversized(keys, split_bucket, extension, judge, stats)
        if not oversized.any():
            in_place = oversized = None
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
        left, right = order[first], order[first + 1 + step]
        if cross_at is not None:
            # A join wants pairs across its two sides only: the others are dropped here, before any is verified
            # in place. At 5,000 x 5,000 person records half of the 111,000 pairs verified in place were within
            # one side, and thrown away after (issue 40, point 5). Which pairs are judged, split or emitted across
            # the sides does not change. Equal keys keep ascending ordinal order, so labels[left] < labels[right].
            cross = (labels[left] < cross_at) & (labels[right] >= cross_at)
            left, right = left[cross], right[cross]
        if oversized is not None:
            if judge is not None and in_place is not None:
                check = np.flatnonzero(in_place[left])
                if check.size:
                    stats.verified_in_place += int(check.size)
                    keep = np.ones(left.size, dtype=bool)
                    keep[check] = judge.matches(left[check], right[check]) >= judge.keep_matches
                    left, right = left[keep], right[keep]
            stats.oversized_emitted += int(np.count_nonzero(oversized[left]))
        yield labels[left] * np.int64(total) + labels[right]
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
    split_bucket: int | None = None, extension: ExtensionReader | None = None, judge: _Judge | None = None,
    cross_at: int | None = None,
) -> np.ndarray:
    """Sorted distinct codes of the pairs sharing a key within one band (or one partition of a band)."""
    chunks = [sorted_distinct(codes) for codes in _bucket_pairs(keys, max_bucket, stats, ordinals, total,
                                                                 split_bucket, extension, judge, cross_at)]
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
    keep_matches: int | None = None,
) -> np.ndarray:
    """Sorted distinct codes ``i * n + j`` (i < j, rows of ``signatures``) of pairs sharing a band (in memory;
    :func:`store_candidate_pairs` does the same from a store on disk). Buckets of more than ``split_bucket``
    members are refined (``None``: never): with ``keep_matches`` (the agreeing positions a candidate needs to
    go on, :func:`min_matches`), small or dense ones are verified in place and only the others split; without
    it, every one is split by further signature values."""
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
        judge = None if keep_matches is None else _Judge(lambda rows: sigs[rows], keep_matches, params)
        seen = _merge_unique(seen, _partition_candidates(keys, None, sigs.shape[0], max_bucket, stats,
                                                         split_bucket, extension, judge))
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
    keep_matches: int | None = None,
    cross_at: int | None = None,
) -> np.ndarray:
    """Sorted distinct codes ``i * n + j`` (i < j, ordinals of ``store``) of pairs sharing a band, reading one
    (band, partition) of keys at a time: memory follows the partition size and the candidates, not ``n``.
    Oversized buckets are refined as in :func:`candidate_pairs`, their members' signatures read from the store.
    ``cross_at``: a join whose first side is ordinals below it; only pairs across the sides (``i < cross_at <=
    j``) are generated, the same ones as without it."""
    if max_bucket < 2:
        raise ValueError(f"max_bucket must be at least 2, got {max_bucket}")
    check_split_bucket(split_bucket)
    stats = stats if stats is not None else CollectionStats()
    seen = np.empty(0, dtype=np.int64)
    for band, keys, ordinals in store.band_partitions():
        columns = extension_positions(band, store.params, store.num_hashes)
        # Ordinals are ascending, so the members' rows come back from the store in one ordered pass.
        def members(rows: np.ndarray, ordinals: np.ndarray = ordinals) -> np.ndarray:
            return store.signatures(ordinals[rows])

        def extension(rows: np.ndarray, columns: np.ndarray = columns,
                      members: SignatureReader = members) -> np.ndarray:
            return members(rows)[:, columns]

        judge = None if keep_matches is None else _Judge(members, keep_matches, store.params)
        seen = _merge_unique(seen, _partition_candidates(keys, ordinals, store.count, max_bucket, stats,
                                                         split_bucket, extension, judge, cross_at))
        del keys, ordinals
        if on_partition:
            on_partition()
    return seen


def bucket_candidates(
    signatures: np.ndarray,
    band: int,
    params: LSHParams,
    *,
    split_bucket: int | None = DEFAULT_SPLIT_BUCKET,
    keep_matches: int | None = None,
    max_bucket: int = DEFAULT_MAX_BUCKET,
    stats: CollectionStats | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The candidate pairs ``(i, j)`` (i < j, rows of ``signatures``) of *one* band bucket whose members'
    signatures are ``signatures``, in the order :func:`candidate_pairs` holds them (ascending ordinal, i.e. id
    order for a store filled by the id-sorted cursor): the same rule, for engines that group buckets themselves
    (the Spark jobs run it on each bucket of more than ``split_bucket`` members)."""
    check_split_bucket(split_bucket)
    stats = stats if stats is not None else CollectionStats()
    sigs = np.asarray(signatures)
    m = sigs.shape[0]
    # One bucket: every member has the same band key, and the refinement only ever compares keys for equality.
    keys = np.zeros(m, dtype=np.uint64)
    columns = extension_positions(band, params, sigs.shape[1])

    def extension(rows: np.ndarray) -> np.ndarray:
        return sigs[rows][:, columns]

    judge = None if keep_matches is None else _Judge(lambda rows: sigs[rows], keep_matches, params)
    codes = _partition_candidates(keys, None, m, max_bucket, stats, split_bucket, extension, judge)
    return np.divmod(codes, np.int64(max(m, 1)))


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
    return _read_matching_positions(store.signatures, a, b)


def _read_matching_positions(read: SignatureReader, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """:func:`matching_positions` with the rows read through ``read`` (sorted distinct rows -> signatures), a
    chunk of pairs at a time, each row read once per chunk."""
    out = np.empty(a.size, dtype=np.int32)
    for lo in range(0, a.size, _ESTIMATE_CHUNK):
        hi = min(lo + _ESTIMATE_CHUNK, a.size)
        rows, inverse = np.unique(np.concatenate((a[lo:hi], b[lo:hi])), return_inverse=True)
        sigs = read(rows)
        out[lo:hi] = np.count_nonzero(sigs[inverse[: hi - lo]] == sigs[inverse[hi - lo:]], axis=1)
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

