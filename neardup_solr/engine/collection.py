"""Whole-collection deduplication: every pair of documents whose shingle sets have Jaccard >= t.

One lookup per document (:mod:`neardup_solr.engine.report`, :mod:`neardup_solr.engine.threshold`) costs a million HTTP round
trips for a million documents. Here Solr only serves data in bulk and the similarity search runs in NumPy:

1. **Signatures.** ``(id, minhash_sig)`` of every document (or of one data set) is streamed with cursor
   paging over ``/select`` (``sort=id asc``, ~10,000 rows a page: one request per page, never per
   document; on a SolrCloud collection the cursor runs over every shard). Each page goes straight to a
   :class:`~neardup_solr.pairs.signature_store.SignatureStore` on disk: signatures, ids, and the page's ``b`` band
   keys (:func:`~neardup_solr.pairs.lsh.band_keys`), split by the key's top bits into partitions of about 4 million
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

Bands and rows, the refinement of oversized buckets and the estimate margin are explained in
:mod:`neardup_solr.pairs.candidates`, where they are computed.

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
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from neardup_solr.engine.group_writeback import WritebackSummary, write_groups
from neardup_solr.pairs.groups import REPRESENTATIVES
from neardup_solr.pairs.candidates import (
    log_refinement,
    DEFAULT_FALSE_NEGATIVE_WEIGHT,
    DEFAULT_MAX_BUCKET,
    DEFAULT_SPLIT_BUCKET,
    CollectionStats,
    check_split_bucket,
    exact_jaccard,
    estimate_margin,
    min_matches,
    store_candidate_pairs,
    store_matching_positions,
)
from neardup_solr.pairs.lsh import LSHParams, optimal_params
from neardup_solr.pairs.signature_store import SignatureStore
from neardup_solr.pairs.similar_pairs import SimilarPair, id_sort_key
from neardup_solr.solr.collection import Selection, SolrClient, collection_of
from neardup_solr.signing.builder import DocumentBuilder
from neardup_solr.signing.settings import IndexSettings
from neardup_solr.solr.settings_store import read_index_settings
from neardup_solr.solr.signatures import fetch_shingle_sets, parallel_pages, shard_readers, signature_pages
from neardup_solr.validation import Limit, check_bool, check_choice, check_float, check_int

log = logging.getLogger(__name__)

__all__ = ["CollectionResult", "CollectionStats", "dedupe_collection"]

# Texts (their shingle sets) held at once during exact verification: pairs are verified in slices of half as
# many pairs, so a slice never needs more documents than this.
VERIFY_DOCUMENTS = 200_000


@dataclass
class CollectionResult:
    """``pairs``: every pair once, smaller id (numeric-aware order) first, sorted by (id, neighbor_id)."""

    pairs: list[SimilarPair]
    stats: CollectionStats
    threshold: float
    exact: bool
    # With to_solr=True: what writing the groups into the collection did.
    groups: WritebackSummary | None = None


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
    to_solr: bool = False,
    representative: str = "earliest",
) -> CollectionResult:
    """Every pair of documents (of ``dataset``, or of the whole collection) with Jaccard >= ``threshold``.

    ``exact=True`` verifies candidates on the stored texts and reports the exact Jaccard; ``exact=False``
    reports pairs whose MinHash *estimate* reaches the threshold, with the estimate. ``false_negative_weight``
    (in (0, 1); the false-positive weight is its complement) steers the LSH bands towards recall, see
    :func:`~neardup_solr.pairs.lsh.optimal_params`; ``lsh_params`` sets bands and rows directly. Buckets larger
    than ``max_bucket`` are split (logged, counted in the stats). ``page_size`` is the cursor page size.
    ``work_dir`` holds the signature store (default: the system's temporary directory; about
    ``4 * num_hashes + 12 * bands + 8 + len(id)`` bytes a document, removed at the end).
    ``verify_documents`` caps the texts held at once during exact verification.
    ``to_solr=True`` then writes every document's group and kept flag into the collection (the kept one chosen by
    ``representative``, ``earliest`` or ``longest``): :func:`~neardup_solr.engine.group_writeback.write_groups`,
    its summary in ``result.groups``.

    >>> result = dedupe_collection(SolrClient(), 0.8)
    >>> result.pairs[:1], result.stats.candidate_pairs
    ([SimilarPair(id='d0000012', neighbor_id='d0004711', similarity=0.8523)], 1204)
    """
    threshold = check_float("threshold", threshold, "threshold")
    false_negative_weight = check_float("false_negative_weight", false_negative_weight,
                                        Limit("float", 0.0, 1.0, open_min=True, open_max=True))
    max_bucket = check_int("max_bucket", max_bucket, minimum=2)
    check_split_bucket(split_bucket)
    verify_documents = check_int("verify_documents", verify_documents, minimum=2)
    to_solr = check_bool("to_solr", to_solr)
    representative = check_choice("representative", representative, REPRESENTATIVES)
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
    expected = collection_of(client).count(Selection(dataset=dataset))
    stats.requests += 1
    with SignatureStore(k, params, expected_documents=expected, directory=work_dir) as store:
        stats.partitions = store.partitions

        # 1. signatures, spilled to disk page by page
        t0 = time.perf_counter()
        readers = shard_readers(client)
        if readers:
            log.info("reading the signatures of %d shards side by side: %s", len(readers),
                     ", ".join(f"{name} from {reader.url}" for name, reader in readers))
            pages = parallel_pages([signature_pages(reader, k, dataset=dataset, page_size=page_size, stats=stats,
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

        # 2. candidates (the bar an estimate must reach is known first: oversized buckets are judged by it)
        stats.margin = estimate_margin(threshold, k) if exact else 0.0
        agreeing = min_matches(threshold, k, stats.margin)
        t0 = time.perf_counter()
        with _bar(progress, desc=f"LSH {params.bands}x{params.rows}", total=params.bands * store.partitions,
                  unit=" slices") as bar:
            codes = store_candidate_pairs(store, max_bucket=max_bucket, split_bucket=split_bucket, stats=stats,
                                          on_partition=bar.update if bar else None, keep_matches=agreeing)
        log_refinement(stats, split_bucket)
        stats.candidate_pairs = int(codes.size)
        stats.seconds["candidates"] = round(time.perf_counter() - t0, 3)
        log.info("%d candidate pairs from %d bands of %d rows in %.1f s", codes.size, params.bands, params.rows,
                 stats.seconds["candidates"])

        # 3. estimate
        t0 = time.perf_counter()
        a, b = np.divmod(codes, np.int64(max(n, 1)))
        del codes
        matches = store_matching_positions(store, a, b)
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
                    keyed, sizes, found = fetch_shingle_sets(client, shingler, need_ids, stats, bar.update if bar else None)
                    missing = int(need.size - found.sum())
                    stats.missing_documents += missing
                    both = found[x] & found[y]
                    x, y = x[both], y[both]
                    similarity = exact_jaccard(keyed, sizes, x, y)
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
    result = CollectionResult(pairs=pairs, stats=stats, threshold=threshold, exact=exact)
    if to_solr:
        result.groups = write_groups(client, pairs, representative=representative, dataset=dataset)
    return result


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
