"""Whole-collection deduplication: every pair of documents whose shingle sets have Jaccard >= t.

One lookup per document (:mod:`neardup_solr.report`, :mod:`neardup_solr.threshold`) costs a million HTTP round
trips for a million documents. Here Solr only serves data in bulk and the similarity search runs in NumPy:

1. **Signatures.** ``(id, minhash_sig)`` of every document (or of one data set) is streamed with cursor
   paging over ``/select`` (``sort=id asc``, ~10,000 rows a page: one request per page, never per
   document; on a SolrCloud collection the cursor runs over every shard). Each page goes straight to a
   :class:`~neardup_solr.signature_store.SignatureStore` on disk: signatures, ids, and the page's ``b`` band
   keys (:func:`~neardup_solr.lsh.band_keys`), split by the key's top bits into partitions of about 4 million
   records.
2. **Candidates.** One (band, partition) of keys is read at a time; its keys are sorted, runs of equal keys
   are buckets, and every pair inside a bucket is a candidate, encoded as ``i * n + j`` (int64, ordinals,
   ``i < j``) and de-duplicated across bands by sorting. Equal keys always share a partition, so nothing is
   lost by the split. A bucket of more than ``split_bucket`` members (default 10) is first refined by further
   signature values (see *Oversized buckets*). A bucket still larger than ``max_bucket`` after that (thousands
   of documents with equal signatures: mass-produced boilerplate) would emit millions of pairs; it is split
   into blocks of ``max_bucket`` and the pairs between blocks are not generated. That is logged and counted
   (``stats.oversized_buckets``, ``stats.pairs_not_generated``), never silent.
3. **Estimate.** The share of equal signature positions estimates the Jaccard similarity; it is computed for
   the candidates in chunks (their signatures read back from the store) and only pairs that can plausibly
   reach ``t`` go on (see *Margin*).
4. **Exact verification** (``exact=True``, the default). The texts of the documents in surviving pairs are
   fetched (a slice of at most ``verify_documents`` documents at a time) in batches of 500 ids (one ``{!terms f=id}`` query each, two requests in flight), shingled with
   the index's own :class:`~neardup_solr.text.Shingler` and the exact Jaccard of the distinct shingle-hash
   sets is computed for every pair, vectorised; pairs with Jaccard >= t are reported with that Jaccard. With
   ``exact=False`` nothing is fetched: pairs whose *estimate* reaches ``t`` are reported with the estimate,
   which is off by about ``sqrt(J(1-J)/num_hashes)`` (0.035 at J = 0.8 with 128 values), so pairs near the
   threshold are missed or wrongly included about as often.

Choice of bands and rows
    A pair of similarity ``s`` becomes a candidate with probability ``1 - (1 - s**r)**b``. The default
    ``false_negative_weight=0.998`` makes :func:`~neardup_solr.lsh.optimal_params` choose ``b=21, r=6`` for
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
    next signature value (positions outside the band, in order, :func:`~neardup_solr.lsh.extension_positions`),
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

Memory
    Nothing in the client is sized by ``documents x hashes``: a cursor page (10,000 signatures, 5 MB), the band
    keys of up to 100,000 documents waiting to be written (8 bytes a band each), one (band, partition) of keys
    (<= ~4 million records, ~160 MB with the sort's temporaries), the candidate codes (8 bytes a candidate
    pair), and during verification the shingle hashes of one slice of documents (8 bytes a shingle). What
    grows with the collection is the disk: ``4 * num_hashes + 12 * bands + 8 + len(id)`` bytes a document
    (~0.8 GB a million at 128 values and 21 bands), and the candidates and pairs, which follow the number of
    near duplicates rather than the number of documents. Before the store this module held every signature
    in one array: 512 MB a million documents, which would be 51 GB at 100 million.

Cost (2 cores shared with Solr, 128 values, t = 0.8, exact verification)
    100,000 benchmark documents: 6.3 s (signatures 4.2 s, candidates 0.4 s, verification of 13,333
    documents 1.6 s), 174 MiB peak RSS, recall 0.9997 against the exact all-pairs join, every reported
    similarity exact. The in-memory stages on 1,000,000 synthetic signatures: candidates 7.7 s, 706 MiB peak.

Similarities are Jaccard similarities of the sets of 32-bit shingle hashes, the sets every other part of the
package (and ``benchmarks/exact_pairs.py``) compares.
"""

from __future__ import annotations

import logging
import math
import sys
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterator, Sequence

import numpy as np

from ._arrays import concat_ranges, set_intersections, sorted_distinct
from .documents import (
    META_DATASET,
    SETTINGS_DOC_ID,
    DocumentBuilder,
    IndexSettings,
    decode_signatures,
    read_index_settings,
)
from .errors import InvalidTextError, SolrUnavailableError
from .validation import Limit, check_float, check_int
from .lsh import LSHParams, band_keys, extend_keys, extension_positions, optimal_params
from .searcher import id_sort_key
from .signature_store import SignatureStore
from .solr_client import SolrClient
from .text import Shingler
from .threshold import SimilarPair

log = logging.getLogger(__name__)

__all__ = [
    "CollectionResult",
    "CollectionStats",
    "dedupe_collection",
    "fetch_signatures",
    "signature_pages",
    "candidate_pairs",
    "store_candidate_pairs",
    "matching_positions",
    "store_matching_positions",
    "estimate_margin",
]

DEFAULT_FALSE_NEGATIVE_WEIGHT = 0.998
DEFAULT_MAX_BUCKET = 5000
# Members above which a band bucket is refined by further signature values (see "Oversized buckets" above).
DEFAULT_SPLIT_BUCKET = 10
# One-sided z of the estimate margin: P(Binomial estimate < t - margin | J = t) ~ 0.13%.
MARGIN_Z = 3.0
FETCH_BATCH = 500
FETCH_WORKERS = 2
# Batches fetched ahead of the one being shingled: keeps both connections busy without piling up texts.
_FETCH_AHEAD = 4
# Pairs materialised at once when expanding buckets (int64 temporaries of this length).
_PAIR_CHUNK = 4_000_000
# Candidate pairs compared at once: two gathered (chunk, num_hashes) uint32 blocks, 32 MB each at 128 values.
_ESTIMATE_CHUNK = 65_536
# Token lookups per exact-verification batch (a few int64 temporaries of this length).
_VERIFY_LOOKUPS = 4_000_000
# Texts (their shingle sets) held at once during exact verification: pairs are verified in slices of half as
# many pairs, so a slice never needs more documents than this.
VERIFY_DOCUMENTS = 200_000


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


@dataclass
class CollectionResult:
    """``pairs``: every pair once, smaller id (numeric-aware order) first, sorted by (id, neighbor_id)."""

    pairs: list[SimilarPair]
    stats: CollectionStats
    threshold: float
    exact: bool


# ---------------------------------------------------------------------------------------------------------------
# 1. Signatures
# ---------------------------------------------------------------------------------------------------------------


def signature_pages(
    client: SolrClient,
    num_hashes: int,
    *,
    dataset: str | None = None,
    page_size: int = 10_000,
    stats: CollectionStats | None = None,
    local: bool = False,
) -> Iterator[tuple[list[str], np.ndarray]]:
    """Ids and ``(len(ids), num_hashes)`` uint32 signatures of every document (of ``dataset``), one cursor page
    at a time, in id order. Documents whose ``minhash_sig`` is missing or of another length are skipped,
    counted in ``stats.skipped_documents`` and named (the first five) in a warning. ``local``: read only the
    core ``client`` names (``distrib=false``: one shard's replica)."""
    if page_size < 1:
        raise ValueError(f"page_size must be at least 1, got {page_size}")
    stats = stats if stats is not None else CollectionStats()
    # base64 of 4 * num_hashes bytes; anything else was written with other settings or is damaged.
    expected_chars = 4 * math.ceil(4 * num_hashes / 3)
    params: list[tuple[str, object]] = [
        ("q", "*:*"),
        ("fq", "-{!term f=dataset v=$nd.meta}"),
        ("nd.meta", META_DATASET),
        ("sort", "id asc"),
        ("rows", page_size),
        ("fl", "id,minhash_sig"),
    ]
    if dataset is not None:
        params += [("fq", "{!term f=dataset v=$nd.ds}"), ("nd.ds", dataset)]
    if local:
        params.append(("distrib", "false"))
    cursor = "*"
    bad: list[str] = []
    while True:
        data = client.select(params + [("cursorMark", cursor)])
        stats.requests += 1
        ids, values = [], []
        for doc in data["response"]["docs"]:
            value = doc.get("minhash_sig")
            if doc["id"] == SETTINGS_DOC_ID:
                continue
            if not isinstance(value, str) or len(value) != expected_chars:
                bad.append(doc["id"])
                continue
            ids.append(doc["id"])
            values.append(value)
        yield ids, (decode_signatures(values, num_hashes) if values
                    else np.empty((0, num_hashes), dtype=np.uint32))
        next_cursor = data.get("nextCursorMark", cursor)
        if next_cursor == cursor:
            break
        cursor = next_cursor
    if bad:
        log.warning(
            "%d document(s) without a usable minhash_sig of %d values were skipped (indexed by another version "
            "or with other settings?), e.g. %s", len(bad), num_hashes, ", ".join(map(repr, bad[:5])),
        )
    stats.skipped_documents += len(bad)


def shard_readers(client: SolrClient) -> list[tuple[str, SolrClient]]:
    """On a SolrCloud collection, ``(shard, client)`` for every active shard, the client on one active replica
    of it (the leader when it is live); ``[]`` on a single core.

    A cursor over the collection is a distributed query: every page asks each shard for its next ids, then
    asks again for their fields, all through one node. Read shard by shard on a replica's own core
    (``distrib=false``), each page is one local request and the shards are read side by side. Shards that are
    not active (the parent of a finished split) are skipped: their documents live in the sub-shards."""
    if client.is_cloud is None:
        client.check()
    if not client.is_cloud:
        return []
    from .backends.cloud import cluster_status

    auth = client.session.auth if isinstance(client.session.auth, tuple) else None
    cluster = cluster_status(client.node_url, client.collection, auth=auth)
    live = set(cluster.get("live_nodes", []))
    shards = cluster.get("collections", {}).get(client.collection, {}).get("shards", {})
    readers = []
    for name, body in sorted(shards.items()):
        if body.get("state", "active") != "active":
            continue
        replicas = [r for r in body.get("replicas", {}).values()
                    if r.get("state") == "active" and r.get("node_name") in live and r.get("base_url")]
        if not replicas:
            raise SolrUnavailableError(
                f"shard {name} of collection {client.collection!r} has no active replica on a live node; start "
                "the node that hosts it (neardup-solr solr status lists them), then run the dedup again")
        replicas.sort(key=lambda r: (str(r.get("leader", "")).lower() != "true", r.get("core", "")))
        core_url = f"{replicas[0]['base_url'].rstrip('/')}/{replicas[0]['core']}"
        username, password = auth if auth else (None, None)
        readers.append((name, SolrClient(core_url, username=username, password=password, timeout=client.timeout,
                                         retry=client.retry)))
    return readers


def _parallel_pages(
    sources: list[Iterator[tuple[list[str], np.ndarray]]],
) -> Iterator[tuple[list[str], np.ndarray]]:
    """Pages of several page iterators, each drained by its own thread, as they come (at most a few pages
    waiting per source, so a slow consumer does not let them pile up)."""
    import queue
    import threading

    pages: queue.Queue = queue.Queue(maxsize=2 * len(sources))
    done = object()
    stop = threading.Event()

    def drain(source):
        try:
            for page in source:
                if stop.is_set():
                    return
                pages.put(page)
        except BaseException as exc:  # handed to the consumer, which raises it
            pages.put(exc)
        finally:
            pages.put(done)

    threads = [threading.Thread(target=drain, args=(src,), daemon=True, name=f"shard-reader-{i}")
               for i, src in enumerate(sources)]
    for t in threads:
        t.start()
    remaining = len(threads)
    try:
        while remaining:
            item = pages.get()
            if item is done:
                remaining -= 1
            elif isinstance(item, BaseException):
                raise item
            else:
                yield item
    finally:
        stop.set()
        while any(t.is_alive() for t in threads):  # unblock readers waiting on a full queue
            try:
                pages.get_nowait()
            except queue.Empty:
                time.sleep(0.01)


def fetch_signatures(
    client: SolrClient,
    num_hashes: int,
    *,
    dataset: str | None = None,
    page_size: int = 10_000,
    stats: CollectionStats | None = None,
    on_page: Callable[[int], None] | None = None,
) -> tuple[list[str], np.ndarray]:
    """Ids and ``(n, num_hashes)`` uint32 signatures of every document (of ``dataset``), in id order, in memory
    (``4 * num_hashes`` bytes a document). :func:`dedupe_collection` does not use this: it spills the pages to
    a :class:`~neardup_solr.signature_store.SignatureStore`."""
    ids: list[str] = []
    pages: list[np.ndarray] = []
    for page_ids, page in signature_pages(client, num_hashes, dataset=dataset, page_size=page_size, stats=stats):
        ids.extend(page_ids)
        pages.append(page)
        if on_page:
            on_page(len(page_ids))
    return ids, (np.concatenate(pages) if pages else np.empty((0, num_hashes), dtype=np.uint32))


# ---------------------------------------------------------------------------------------------------------------
# 2. Candidates
# ---------------------------------------------------------------------------------------------------------------


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
    their next signature value (:func:`~neardup_solr.lsh.extend_keys`), and sub-buckets still too large fold in
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
    _check_split(split_bucket)
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
    _check_split(split_bucket)
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


def _check_split(split_bucket: int | None) -> None:
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


# ---------------------------------------------------------------------------------------------------------------
# 4. Exact verification
# ---------------------------------------------------------------------------------------------------------------


def _shingle_sets(shingler: Shingler, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Concatenated shingle hashes of ``texts`` (duplicates kept) and each text's offsets."""
    try:
        return shingler.batch_hashes(texts)
    except InvalidTextError:
        # A text without shingles (none indexed ones, but a changed document may be): one at a time.
        parts = [shingler.shingle_hashes(t) for t in texts]
        offsets = np.zeros(len(parts) + 1, dtype=np.int64)
        np.cumsum([p.size for p in parts], out=offsets[1:])
        return (np.concatenate(parts) if parts else np.empty(0, dtype=np.uint32)), offsets


# Candidate separators for the id list of a {!terms} query, which splits on the separator verbatim (no escaping).
_SEPARATORS = ("\u001f", "\u001e", "\n", "\t", ",")


def _fetch_texts(client: SolrClient, doc_ids: Sequence[str]) -> list[dict]:
    """``id`` and ``content`` of the given documents in one request.

    A ``{!terms}`` query over ``/select`` measured 2.3x faster than real-time get (``/get``) for batches of
    500 ids (0.09 s against 0.21 s); ``/get`` remains the fallback for ids containing every separator.
    """
    separator = next((s for s in _SEPARATORS if not any(s in i for i in doc_ids)), None)
    if separator is None:
        return client.get_by_ids(list(doc_ids), "id,content")
    data = client.select([
        ("q", "{!terms f=id separator=$nd.sep v=$nd.ids}"),
        ("nd.sep", separator),
        ("nd.ids", separator.join(doc_ids)),
        ("rows", len(doc_ids)),
        ("fl", "id,content"),
    ])
    return data["response"]["docs"]


def _fetch_sets(
    client: SolrClient,
    shingler: Shingler,
    doc_ids: Sequence[str],
    stats: CollectionStats,
    on_batch: Callable[[int], None] | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct shingle hashes of each document of ``doc_ids`` as ``keyed`` = sorted ``slot << 32 | hash``
    (slot = position in ``doc_ids``), the set sizes, and which documents were found."""
    count = len(doc_ids)
    sizes = np.zeros(count, dtype=np.int64)
    found = np.zeros(count, dtype=bool)
    parts: list[np.ndarray] = []
    batches = [(lo, doc_ids[lo : lo + FETCH_BATCH]) for lo in range(0, count, FETCH_BATCH)]

    def fetch(batch):
        return _fetch_texts(client, batch[1])

    with ThreadPoolExecutor(max_workers=FETCH_WORKERS, thread_name_prefix="collection-fetch") as pool:
        pending: deque = deque()
        queue = iter(batches)
        for batch in queue:
            pending.append((batch, pool.submit(fetch, batch)))
            if len(pending) >= _FETCH_AHEAD:
                break
        while pending:
            (lo, batch_ids), future = pending.popleft()
            docs = future.result()
            stats.requests += 1
            nxt = next(queue, None)
            if nxt is not None:
                pending.append((nxt, pool.submit(fetch, nxt)))
            content = {d["id"]: d.get("content") for d in docs}
            slots, texts = [], []
            for i, doc_id in enumerate(batch_ids):
                text = content.get(doc_id)
                if isinstance(text, str):
                    slots.append(lo + i)
                    texts.append(text)
            if texts:
                hashes, offsets = _shingle_sets(shingler, texts)
                slot_arr = np.asarray(slots, dtype=np.int64)
                keyed = np.repeat(slot_arr << 32, np.diff(offsets)) | hashes.astype(np.int64)
                keyed = sorted_distinct(keyed)  # sorted, and each hash once per document (see sorted_distinct)
                sizes[slot_arr] = np.bincount((keyed >> 32) - lo, minlength=len(batch_ids))[slot_arr - lo]
                found[slot_arr] = True
                parts.append(keyed)
                stats.fetched_documents += len(texts)
            if on_batch:
                on_batch(len(batch_ids))
    # Batches cover increasing slots, so their sorted parts concatenate into one sorted array.
    keyed = np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)
    return keyed, sizes, found


def _exact_jaccard(keyed: np.ndarray, sizes: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Jaccard of the sets of slots x[i] and y[i] (``keyed`` is sorted by slot, then hash)."""
    inter = set_intersections(keyed, sizes, x, y, _VERIFY_LOOKUPS)
    union = sizes[x] + sizes[y] - inter
    return inter / np.maximum(union, 1)


# ---------------------------------------------------------------------------------------------------------------
# The whole run
# ---------------------------------------------------------------------------------------------------------------


def dedupe_collection(
    client: SolrClient,
    threshold: float = 0.8,
    *,
    exact: bool = True,
    dataset: str | None = None,
    progress: bool = False,
    false_negative_weight: float = DEFAULT_FALSE_NEGATIVE_WEIGHT,
    lsh_params: LSHParams | None = None,
    max_bucket: int = DEFAULT_MAX_BUCKET,
    split_bucket: int | None = DEFAULT_SPLIT_BUCKET,
    page_size: int = 10_000,
    work_dir: str | None = None,
    verify_documents: int = VERIFY_DOCUMENTS,
) -> CollectionResult:
    """Every pair of documents (of ``dataset``, or of the whole collection) with Jaccard >= ``threshold``.

    ``exact=True`` verifies candidates on the stored texts and reports the exact Jaccard; ``exact=False``
    reports pairs whose MinHash *estimate* reaches the threshold, with the estimate. ``false_negative_weight``
    (in (0, 1); the false-positive weight is its complement) steers the LSH bands towards recall, see
    :func:`~neardup_solr.lsh.optimal_params`; ``lsh_params`` sets bands and rows directly. Buckets larger
    than ``max_bucket`` are split (logged, counted in the stats). ``page_size`` is the cursor page size.
    ``work_dir`` holds the signature store (default: the system's temporary directory; about
    ``4 * num_hashes + 12 * bands + 8 + len(id)`` bytes a document, removed at the end).
    ``verify_documents`` caps the texts held at once during exact verification.

    >>> result = dedupe_collection(SolrClient(), 0.8)
    >>> result.pairs[:1], result.stats.candidate_pairs
    ([SimilarPair(id='d0000012', neighbor_id='d0004711', similarity=0.8523)], 1204)
    """
    threshold = check_float("threshold", threshold, "threshold")
    false_negative_weight = check_float("false_negative_weight", false_negative_weight,
                                        Limit("float", 0.0, 1.0, open_min=True, open_max=True))
    max_bucket = check_int("max_bucket", max_bucket, minimum=2)
    _check_split(split_bucket)
    verify_documents = check_int("verify_documents", verify_documents, minimum=2)
    started = time.perf_counter()
    settings = read_index_settings(client)
    if settings is None:
        log.warning("no index settings in %s (nothing indexed yet?): assuming the defaults", client.url)
        settings = IndexSettings()
    k = settings.num_hashes
    params = lsh_params or optimal_params(threshold, k, 1.0 - false_negative_weight, false_negative_weight)
    if params.num_hashes > k:
        raise ValueError(f"{params} needs {params.num_hashes} signature values; the index holds {k}")
    stats = CollectionStats(bands=params.bands, rows=params.rows, exact=exact)
    expected = client.count("*:*", _dataset_filters(dataset))
    stats.requests += 1
    with SignatureStore(k, params, expected_documents=expected, directory=work_dir) as store:
        stats.partitions = store.partitions

        # 1. signatures, spilled to disk page by page
        t0 = time.perf_counter()
        readers = shard_readers(client)
        if readers:
            log.info("reading the signatures of %d shards side by side: %s", len(readers),
                     ", ".join(f"{name} from {reader.url}" for name, reader in readers))
            pages = _parallel_pages([signature_pages(reader, k, dataset=dataset, page_size=page_size, stats=stats,
                                                     local=True) for _, reader in readers])
        else:
            pages = signature_pages(client, k, dataset=dataset, page_size=page_size, stats=stats)
        with _bar(progress, desc="signatures", total=expected, unit=" docs", unit_scale=True) as bar:
            for page_ids, page in pages:
                store.append(page_ids, page)
                if bar:
                    bar.update(len(page_ids))
            store.finish()
        n = stats.documents = store.count
        stats.work_dir_mib = round(store.disk_bytes() / 2**20, 1)
        stats.seconds["signatures"] = round(time.perf_counter() - t0, 3)
        log.info("read %d signatures in %.1f s (%d requests; %.0f MiB in %s)", n, stats.seconds["signatures"],
                 stats.requests, stats.work_dir_mib, store.path)

        # 2. candidates
        t0 = time.perf_counter()
        with _bar(progress, desc=f"LSH {params.bands}x{params.rows}", total=params.bands * store.partitions,
                  unit=" slices") as bar:
            codes = store_candidate_pairs(store, max_bucket=max_bucket, split_bucket=split_bucket, stats=stats,
                                          on_partition=bar.update if bar else None)
        stats.candidate_pairs = int(codes.size)
        stats.seconds["candidates"] = round(time.perf_counter() - t0, 3)
        log.info("%d candidate pairs from %d bands of %d rows in %.1f s", codes.size, params.bands, params.rows,
                 stats.seconds["candidates"])

        # 3. estimate
        t0 = time.perf_counter()
        a, b = np.divmod(codes, np.int64(max(n, 1)))
        del codes
        matches = store_matching_positions(store, a, b)
        stats.margin = estimate_margin(threshold, k) if exact else 0.0
        agreeing = min_matches(threshold, k, stats.margin)
        keep = matches >= agreeing
        a, b, matches = a[keep], b[keep], matches[keep]
        stats.estimated_pairs = int(a.size)
        stats.seconds["estimate"] = round(time.perf_counter() - t0, 3)
        log.info("%d pairs with estimate >= %.3f (%d of %d values)", a.size, agreeing / k, agreeing, k)

        # 4. exact verification, a slice of pairs at a time so that at most verify_documents texts are held
        t0 = time.perf_counter()
        pairs: list[SimilarPair] = []
        step = verify_documents // 2
        slices = [(lo, min(lo + step, a.size)) for lo in range(0, a.size, step)]
        shingler = DocumentBuilder(settings).shingler if exact else None
        # The bar's total costs a pass over every slice's ids: only paid when the bar is shown.
        if progress and exact and a.size:
            total_docs = sum(np.unique(np.concatenate((a[lo:hi], b[lo:hi]))).size for lo, hi in slices)
        else:
            total_docs = 0
        with _bar(progress and exact, desc="verifying", total=total_docs, unit=" docs", unit_scale=True) as bar:
            for lo, hi in slices:
                need, inverse = np.unique(np.concatenate((a[lo:hi], b[lo:hi])), return_inverse=True)
                x, y = inverse[: hi - lo], inverse[hi - lo :]
                need_ids = store.ids(need)
                if shingler is not None:
                    keyed, sizes, found = _fetch_sets(client, shingler, need_ids, stats, bar.update if bar else None)
                    missing = int(need.size - found.sum())
                    stats.missing_documents += missing
                    both = found[x] & found[y]
                    x, y = x[both], y[both]
                    similarity = _exact_jaccard(keyed, sizes, x, y)
                    del keyed
                else:
                    similarity = matches[lo:hi] / k
                pairs.extend(_pairs(need_ids, x, y, similarity, threshold))
        if stats.missing_documents:
            log.warning("%d document(s) disappeared before their texts were read; their pairs are dropped",
                        stats.missing_documents)
        stats.seconds["verify"] = round(time.perf_counter() - t0, 3)

    pairs.sort(key=lambda p: (id_sort_key(p.id), id_sort_key(p.neighbor_id)))
    stats.verified_pairs = len(pairs)
    stats.seconds["total"] = round(time.perf_counter() - started, 3)
    stats.peak_rss_mib = round(_peak_rss_mib(), 1)
    log.info("%d pairs >= %g (%s) among %d documents in %.1f s, peak RSS %.0f MiB", len(pairs), threshold,
             "exact" if exact else "estimated", n, stats.seconds["total"], stats.peak_rss_mib)
    return CollectionResult(pairs=pairs, stats=stats, threshold=threshold, exact=exact)


def _pairs(ids: list[str], x: np.ndarray, y: np.ndarray, similarity: np.ndarray, threshold: float) -> list[SimilarPair]:
    """The pairs ``(ids[x[i]], ids[y[i]])`` whose similarity reaches ``threshold``, smaller id first."""
    keep = similarity >= threshold
    out = []
    for i, j, sim in zip(x[keep].tolist(), y[keep].tolist(), similarity[keep].tolist()):
        first, second = ids[i], ids[j]
        if id_sort_key(second) < id_sort_key(first):
            first, second = second, first
        out.append(SimilarPair(first, second, sim))
    return out


@contextmanager
def _bar(enabled: bool, **kw) -> Iterator:
    """A tqdm bar for one phase (closed when the phase ends), or None."""
    if not enabled:
        yield None
        return
    from tqdm import tqdm

    bar = tqdm(dynamic_ncols=True, **kw)
    try:
        yield bar
    finally:
        bar.close()


def _dataset_filters(dataset: str | None) -> list[str]:
    filters = [f"-dataset:{META_DATASET}"]
    if dataset is not None:
        filters.append("{!term f=dataset}" + dataset)
    return filters


def _peak_rss_mib() -> float:
    try:
        import resource
    except ImportError:  # Windows: psutil's peak working set, when psutil is there
        try:
            import psutil

            info = psutil.Process().memory_info()
            return getattr(info, "peak_wset", info.rss) / 2**20
        except ImportError:
            return 0.0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024  # bytes on macOS, KiB on Linux
