"""IDF-weighted Jaccard at LSH speed: weighted MinHash signatures, LSH bands, then exact verification.

``report --threshold T --similarity idf --method lsh`` (:func:`idf_lsh_pairs`) and ``join ... --similarity idf
--method lsh`` (:func:`idf_lsh_join`) answer the same question as the exact method (every pair with
IDF-weighted word Jaccard >= T) without one Solr query per record:

1. **Documents** are exported in bulk with a cursor (``id``, ``content``, ``fields_json``), as the exact report
   reads them. Their tokens are the exact method's (:meth:`ThresholdFinder.word_tokens`: distinct words, or
   ``column:word`` tokens with per-field weights), held as ordinals into one vocabulary
   (:class:`~neardup_solr.pairs.token_sets.TokenSets`): the run's memory follows the distinct tokens, not the
   records (1,000,000 person records: 967 MiB peak, 3.4 GiB when they were lists of strings).
2. **IDF snapshot.** The document frequency of every distinct token is read once from Solr (``/terms``) with
   the finder's own :class:`~neardup_solr.solr.idf.IdfWeights`, together with ``N``. This
   :class:`IdfSnapshot` fixes the weights the run signs with; it is written beside the pairs
   (``OUT.idf.json``) so the run can be reproduced and later runs can sign with the same weights
   (``snapshot=``, ``--idf-snapshot``).
3. **Signatures.** Each document's token -> weight map (IDF times field weight) is signed with
   :class:`~neardup_solr.text.weighted.WeightedMinHash` (ICWS): one position agrees with probability equal to
   the weighted Jaccard, a slice of documents at a time into a
   :class:`~neardup_solr.pairs.signature_store.SignatureStore` on disk (as the plain path's signatures). Signing
   runs on the client; nothing is stored in Solr, so no schema change.
4. **Bands** are chosen for T exactly as the plain ``--method lsh`` chooses them
   (:func:`~neardup_solr.pairs.lsh.optimal_params` with the false-negative weight 0.998), candidate pairs come from
   :func:`~neardup_solr.pairs.candidates.store_candidate_pairs`, a band partition at a time (buckets of more than ``split_bucket`` records refined by
   further signature values, see ``collection``), and candidates whose estimate is below ``T - margin``
   (:func:`~neardup_solr.pairs.candidates.estimate_margin`) are dropped.
5. **Exact verification** of every remaining candidate with :func:`~neardup_solr.pairs.weighted.weighted_jaccard`
   over the finder's weights: the very function and weights ``--method exact`` reports, so a pair found by both
   methods has the same similarity to the last bit.

IDF drift
    Signatures are only comparable when signed with the same weights. Every run re-reads the frequencies and
    re-signs everything (a few seconds for 10,000 records), so within a run nothing drifts. Reported
    similarities always use the collection's *current* IDF, whatever snapshot was used for signing, so drift
    can only cost recall, never make a number wrong. Measured (``benchmarks/weighted.py``, drift section): 9,090
    person records grown by 10% changed 7 of 2,105 pairs at T = 0.4 (similarities moved by 0.0012 on average),
    and signing with the old snapshot still found every pair. The policy: re-sign on every run (the default,
    no snapshot given); an older snapshot (``snapshot=``) is for comparable signatures while the collection has
    grown by no more than about 10%.

Records whose tokens all weigh 0 (every word in every record) are signed with unit weights: two such records
with the same words have weighted Jaccard 1.0 by definition and must still meet in a bucket.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np

from neardup_solr.pairs.candidates import (
    log_refinement,
    DEFAULT_FALSE_NEGATIVE_WEIGHT,
    DEFAULT_MAX_BUCKET,
    DEFAULT_SPLIT_BUCKET,
    CollectionStats,
    estimate_margin,
    min_matches,
    store_candidate_pairs,
    store_matching_positions,
)
from neardup_solr.errors import InvalidParameterError
from neardup_solr.pairs.lsh import LSHParams, optimal_params
from neardup_solr.io.outputs import write_atomically
from neardup_solr.io.readers import Record, record_item
from neardup_solr.engine.report import iter_documents
from neardup_solr.pairs.similar_pairs import id_sort_key
from neardup_solr.text.weighted import SCHEMES, BoostedMinHash, WeightedMinHash, token_hashes
from neardup_solr.pairs.similar_pairs import SimilarPair, pair_lines
from neardup_solr.engine.threshold import ThresholdFinder
from neardup_solr.pairs.similar_pairs import one_to_one as _one_to_one
from neardup_solr.validation import check_choice, check_float, check_int
from neardup_solr.pairs.signature_store import SignatureStore
from neardup_solr.pairs.token_sets import TokenSets

log = logging.getLogger(__name__)

__all__ = ["IdfSnapshot", "WeightedLshStats", "WeightedLshResult", "idf_lsh_pairs", "idf_lsh_join",
           "signing_weights", "snapshot_path", "weighted_band_params", "weighted_signer"]

SNAPSHOT_SUFFIX = ".idf.json"


def snapshot_path(out: str | Path) -> Path:
    """Where a run writing its pairs to ``out`` records its IDF snapshot: ``OUT.idf.json``."""
    return Path(str(out) + SNAPSHOT_SUFFIX)


@dataclass
class IdfSnapshot:
    """The document frequencies a run signed with: ``num_docs`` (N) and ``df`` per token of ``field``, plus
    the ``field_weights`` and the signer (``scheme``, ``num_hashes``, ``seed``). Signatures made from equal
    snapshots are comparable; :meth:`weights` turns it back into the signing weights."""

    field: str
    num_docs: int
    df: dict[str, int]
    field_weights: dict[str, float] | None = None
    scheme: str = "icws"
    num_hashes: int = 128
    seed: int = 42
    created: str = ""

    def weights(self, tokens: Iterable[str]) -> dict[str, float]:
        """``ln(N / df)`` per token (df clamped to [1, N], as :class:`~neardup_solr.solr.idf.IdfWeights` does; a
        token the snapshot does not hold counts as seen once), times its column's field weight."""
        out = {}
        for t in tokens:
            df = min(max(self.df.get(t, 1), 1), self.num_docs)
            w = math.log(self.num_docs / df)
            if self.field_weights:
                w *= self.field_weights.get(t.split(":", 1)[0], 1.0)
            out[t] = w
        return out

    def digest(self) -> str:
        """A short digest of everything that decides the signatures."""
        body = json.dumps({**self._fields(), "created": ""}, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(body.encode("utf-8")).hexdigest()[:16]

    def save(self, path: str | Path) -> None:
        """Write the snapshot as JSON (atomically)."""
        write_atomically(path, [json.dumps(self._fields(), sort_keys=True, ensure_ascii=False) + "\n"])

    def _fields(self) -> dict:
        # Not dataclasses.asdict: it deep-copies the df dict entry by entry, 0.25 s of a 1 s join at 27,000
        # tokens, for a JSON text that is the same either way (every field is already plain JSON data).
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def load(cls, path: str | Path) -> "IdfSnapshot":
        """A snapshot written by :meth:`save`. Raises InvalidParameterError naming the file when it is not one."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
            snap = cls(**data)
            check_int("num_docs", snap.num_docs, minimum=1)
            if not isinstance(snap.df, dict):
                raise TypeError("df is not an object")
        except (OSError, ValueError, TypeError) as exc:
            raise InvalidParameterError("snapshot", "an IDF snapshot written by an earlier run (OUT.idf.json)",
                                        str(path), f"it cannot be read ({exc})") from None
        return snap


@dataclass
class WeightedLshStats:
    """What a weighted LSH run did: documents signed, candidates, pairs, and seconds per phase."""

    documents: int = 0
    streamed: int = 0  # joins: records of the streamed side
    skipped: int = 0  # records without a token (joins skip them, as the exact join does)
    bands: int = 0
    rows: int = 0
    candidate_pairs: int = 0
    estimated_pairs: int = 0
    verified_pairs: int = 0
    margin: float = 0.0
    distinct_tokens: int = 0
    snapshot_digest: str = ""
    refinement: dict[str, float | int] = field(default_factory=dict)  # see pairs.candidates.refinement_summary
    seconds: dict[str, float] = field(default_factory=dict)


@dataclass
class WeightedLshResult:
    """The pairs (ordered as the exact method writes them), the run's stats and the snapshot it signed with."""

    pairs: list[SimilarPair]
    stats: WeightedLshStats
    snapshot: IdfSnapshot


def weighted_signer(scheme: str, num_hashes: int, seed: int) -> WeightedMinHash | BoostedMinHash:
    """The weighted signer of ``scheme`` (``"icws"`` or ``"boost"``): every path that must produce comparable
    signatures (Solr-side runs, the Spark jobs) builds it here."""
    if scheme == "icws":
        return WeightedMinHash(num_hashes=num_hashes, seed=seed)
    return BoostedMinHash(num_hashes=num_hashes, seed=seed)


def _check_run(finder: ThresholdFinder, scheme: str, num_hashes: int | None, false_negative_weight: float,
               max_bucket: int) -> int:
    if not isinstance(finder, ThresholdFinder) or finder.similarity != "idf":
        raise InvalidParameterError("finder", "a ThresholdFinder with similarity='idf'",
                                    getattr(finder, "similarity", type(finder).__name__),
                                    "plain Jaccard at LSH speed is dedupe_collection (report --method lsh)")
    check_choice("scheme", scheme, SCHEMES)
    check_float("false_negative_weight", false_negative_weight, "min_recall")
    check_int("max_bucket", max_bucket, minimum=2)
    return check_int("num_hashes", num_hashes if num_hashes is not None else 128, "num_hashes")


def _read_snapshot(finder: ThresholdFinder, tokens: Sequence[str], scheme: str, num_hashes: int,
                   seed: int) -> IdfSnapshot:
    """Document frequencies of ``tokens`` from the collection, through the finder's own cache (so the weights
    verification uses are the ones read here)."""
    idf = finder.idf
    assert idf is not None
    # A small field is read whole in one request; else one /terms request per 5,000 tokens instead of per 500
    # (a run asks for every token at once).
    idf.read_whole_field(tokens)
    idf.batch = max(idf.batch, 5000)
    df = idf.document_frequencies(tokens)
    return IdfSnapshot(field=idf.field, num_docs=idf.num_docs, df=df, field_weights=finder.field_weights,
                       scheme=scheme, num_hashes=num_hashes, seed=seed,
                       created=time.strftime("%Y-%m-%dT%H:%M:%S%z"))


def signing_weights(tokens: Iterable[str], weights: Mapping[str, float]) -> dict[str, float]:
    """The token -> weight map a record is signed with: its tokens of positive weight, or unit weights when all
    of them weigh 0."""
    tokens = list(tokens)
    m = {t: weights[t] for t in tokens if weights[t] > 0}
    # Only zero-weight tokens: unit weights, so equal such records (weighted Jaccard 1.0) share buckets.
    return m if m else dict.fromkeys(tokens, 1.0)


def weighted_band_params(threshold: float, num_hashes: int,
                         false_negative_weight: float = DEFAULT_FALSE_NEGATIVE_WEIGHT) -> LSHParams:
    """The bands a weighted LSH run uses for ``threshold`` and ``num_hashes``-value signatures: the plain
    ``--method lsh`` choice."""
    return optimal_params(threshold, num_hashes, 1.0 - false_negative_weight, false_negative_weight)


# Documents signed at once: their token hashes and weights, and the signer's per-token samples, are the run's
# largest temporary, whatever the collection's size.
SIGN_DOCUMENTS = 10_000


def _sign_into(store: SignatureStore, sets: TokenSets, ids: Sequence[str], weights: np.ndarray, signer) -> None:
    """Sign every document of ``sets`` with ``weights[o]`` the weight of ordinal ``o`` (the
    :func:`signing_weights` rule), a slice at a time, appending the signatures to ``store`` in document order.

    The signer is given arrays (``signatures_from_arrays``), not one token -> weight map a document: each
    distinct token is hashed once rather than at every occurrence, and no per-document dicts are built. The
    (token, weight) pairs of each document are the ones :func:`signing_weights` would give, so the signatures
    are the same (the signers do not depend on the order of a document's tokens); at 5,000 x 5,000 person records
    the maps and their flattening were a quarter of the signing time (issue 40, point 5)."""
    ordinals, offsets = sets.arrays()
    hashes = token_hashes(sets.vocabulary)
    for lo in range(0, len(sets), SIGN_DOCUMENTS):
        hi = min(lo + SIGN_DOCUMENTS, len(sets))
        chunk = ordinals[offsets[lo] : offsets[hi]]
        sizes = np.diff(offsets[lo : hi + 1])
        chunk_weights = weights[chunk]
        positive = chunk_weights > 0
        # signing_weights' rule: a document's tokens of positive weight, or all of them at weight 1.0 when none
        # has one (equal such records, weighted Jaccard 1.0, must still share buckets).
        seen = np.concatenate(([0], np.cumsum(positive)))
        per_document = seen[offsets[lo + 1 : hi + 1] - offsets[lo]] - seen[offsets[lo:hi] - offsets[lo]]
        unit = np.repeat(per_document == 0, sizes)
        keep = positive | unit
        kept_weights = np.where(unit, 1.0, chunk_weights)[keep]
        kept_offsets = np.zeros(hi - lo + 1, dtype=np.int64)
        np.cumsum(np.where(per_document > 0, per_document, sizes), out=kept_offsets[1:])
        store.append(ids[lo:hi], np.asarray(signer.signatures_from_arrays(hashes[chunk[keep]], kept_weights,
                                                                           kept_offsets)))
    store.finish()


def _run(finder: ThresholdFinder, sets: TokenSets, ids: list[str], left_count: int | None,
         *, scheme: str, num_hashes: int, seed: int | None, snapshot: IdfSnapshot | None,
         false_negative_weight: float, lsh_params: LSHParams | None, max_bucket: int,
         split_bucket: int | None, work_dir: str | None,
         stats: WeightedLshStats) -> tuple[list[tuple[int, int, float]], IdfSnapshot]:
    """(i, j, similarity) of verified pairs of documents of ``sets``: all pairs (i < j) when ``left_count`` is
    None, else pairs of a document before ``left_count`` (i) with one from there on (j).

    Memory follows the distinct tokens and the candidates, not the documents: tokens are held as ordinals
    (:class:`TokenSets`) and the signatures go to a :class:`SignatureStore` on disk, as the plain path's do."""
    threshold = finder.threshold
    seed = seed if seed is not None else finder.searcher.settings.seed
    t0 = time.perf_counter()
    sets.seal()
    distinct = sets.vocabulary
    stats.distinct_tokens = len(distinct)
    current = _read_snapshot(finder, distinct, scheme, num_hashes, seed)
    verify_weights = finder.token_weights(distinct)  # the exact method's weights (same cache, same numbers)
    if snapshot is not None and snapshot.field != current.field:
        # Another token kind (words against grams): none of its frequencies would apply, and every token would
        # be signed as unseen.
        raise InvalidParameterError("snapshot", f"a snapshot of {current.field} frequencies", snapshot.field,
                                    "it was recorded by a run over other IDF tokens (--idf-tokens)")
    # Weights by ordinal, and no token -> weight maps beyond the snapshot's: at a million records the
    # vocabulary's maps were a third of the run's memory.
    verify_by_ordinal = np.fromiter((verify_weights[t] for t in distinct), dtype=np.float64, count=len(distinct))
    del verify_weights
    finder.idf.forget()  # type: ignore[union-attr]
    if snapshot is not None:
        sign_by_ordinal = np.fromiter(snapshot.weights(distinct).values(), dtype=np.float64, count=len(distinct))
        used = snapshot
        if (snapshot.scheme, snapshot.num_hashes, snapshot.seed) != (scheme, num_hashes, seed):
            log.info("signing with the snapshot's signer (%s, %d values, seed %d)", snapshot.scheme,
                     snapshot.num_hashes, snapshot.seed)
            scheme, num_hashes, seed = snapshot.scheme, snapshot.num_hashes, snapshot.seed
    else:
        sign_by_ordinal, used = verify_by_ordinal, current
    stats.snapshot_digest = used.digest()
    stats.seconds["weights"] = round(time.perf_counter() - t0, 3)

    params = lsh_params or weighted_band_params(threshold, num_hashes, false_negative_weight)
    stats.bands, stats.rows = params.bands, params.rows
    with SignatureStore(num_hashes, params, expected_documents=len(sets), directory=work_dir) as store:
        t0 = time.perf_counter()
        _sign_into(store, sets, ids, sign_by_ordinal, weighted_signer(scheme, num_hashes, seed))
        stats.seconds["sign"] = round(time.perf_counter() - t0, 3)
        log.info("signed %d documents over %d distinct tokens in %.1f s (weights read in %.1f s)", len(sets),
                 len(distinct), stats.seconds["sign"], stats.seconds["weights"])

        t0 = time.perf_counter()
        refinement = CollectionStats()
        stats.margin = estimate_margin(threshold, num_hashes)
        need = min_matches(threshold, num_hashes, stats.margin)
        codes = store_candidate_pairs(store, max_bucket=max_bucket, split_bucket=split_bucket, stats=refinement,
                                      keep_matches=need, cross_at=left_count)
        log_refinement(refinement, split_bucket)
        stats.refinement = refinement.refinement()
        a, b = (x.astype(np.int32) for x in np.divmod(codes, np.int64(max(len(sets), 1))))
        del codes
        stats.candidate_pairs = int(a.size)
        keep = store_matching_positions(store, a, b) >= need
        a, b = a[keep], b[keep]
        stats.estimated_pairs = int(a.size)
        stats.seconds["candidates"] = round(time.perf_counter() - t0, 3)

    t0 = time.perf_counter()
    similarity = sets.weighted_jaccards(a, b, verify_by_ordinal.tolist())
    accepted = similarity >= threshold - 1e-12  # the exact method's acceptance test
    found = list(zip(a[accepted].tolist(), b[accepted].tolist(), similarity[accepted].tolist()))
    stats.verified_pairs = len(found)
    stats.seconds["verify"] = round(time.perf_counter() - t0, 3)
    log.info("weighted LSH %dx%d: %d candidates, %d after the estimate, %d pairs >= %g", params.bands,
             params.rows, stats.candidate_pairs, stats.estimated_pairs, len(found), threshold)
    return found, used


def _indexed_tokens(finder: ThresholdFinder, dataset: str | None, sets: TokenSets, ids: list[str], *,
                    with_shingles_only: bool) -> None:
    """Append the tokens (to ``sets``) and id (to ``ids``) of every indexed document (of ``dataset``) that has
    tokens, in the cursor's order.

    Only what tokenising needs is read, and the data set is filtered by Solr (a join against one of several
    data sets read them all before). Only the tokens are kept, as ordinals: at a million records the texts are
    gigabytes. ``with_shingles_only`` skips documents indexed without shingles, as the report always has."""
    for doc in iter_documents(finder.searcher, 5000, dataset=dataset, fields="id,content,num_shingles,fields_json"):
        if with_shingles_only and not doc.num_shingles:
            continue
        tokens = finder.word_tokens(doc.content, doc.fields)
        if tokens:
            sets.add(tokens)
            ids.append(doc.id)


def _finish(pairs: list[SimilarPair], used: IdfSnapshot, stats: WeightedLshStats, out: str | Path | None,
            started: float) -> WeightedLshResult:
    if out is not None:
        write_atomically(out, pair_lines(pairs))
        if str(out) != "-":
            used.save(snapshot_path(out))
    stats.seconds["total"] = round(time.perf_counter() - started, 3)
    return WeightedLshResult(pairs=pairs, stats=stats, snapshot=used)


def idf_lsh_pairs(
    finder: ThresholdFinder,
    *,
    dataset: str | None = None,
    out: str | Path | None = None,
    scheme: str = "icws",
    num_hashes: int | None = None,
    seed: int | None = None,
    snapshot: IdfSnapshot | None = None,
    false_negative_weight: float = DEFAULT_FALSE_NEGATIVE_WEIGHT,
    lsh_params: LSHParams | None = None,
    max_bucket: int = DEFAULT_MAX_BUCKET,
    split_bucket: int | None = DEFAULT_SPLIT_BUCKET,
    work_dir: str | None = None,
) -> WeightedLshResult:
    """Every pair of the collection (or of one data set) with IDF-weighted Jaccard >= ``finder.threshold``,
    found through weighted MinHash bands and verified exactly (see the module docstring).

    ``finder`` is a ``ThresholdFinder(searcher, threshold, similarity="idf", field_weights=...)``: its tokens
    and weights are the exact method's. ``scheme`` is the signer (``"icws"``, or ``"boost"`` for write-up 001's
    integer boosts), ``num_hashes`` (default 128) and ``seed`` (default: the collection's) its parameters;
    ``snapshot`` signs with an earlier run's frequencies instead of today's. With ``out`` the pairs are written
    there (as ``threshold_pairs`` writes them) and the snapshot to ``OUT.idf.json``. ``work_dir`` holds the
    signatures while the run lasts (default: the system's temporary directory; ``4 * num_hashes + 12 * bands``
    bytes and the id a document).

    >>> finder = ThresholdFinder(Searcher(SolrClient()), threshold=0.4, similarity="idf")
    >>> idf_lsh_pairs(finder).pairs[0]
    SimilarPair(id='3', neighbor_id='536', similarity=0.705...)
    """
    k = _check_run(finder, scheme, num_hashes, false_negative_weight, max_bucket)
    started = time.perf_counter()
    stats = WeightedLshStats()
    t0 = time.perf_counter()
    sets = TokenSets()
    ids: list[str] = []
    _indexed_tokens(finder, dataset, sets, ids, with_shingles_only=True)
    stats.documents = len(ids)
    stats.seconds["export"] = round(time.perf_counter() - t0, 3)
    found, used = _run(finder, sets, ids, None, scheme=scheme, num_hashes=k, seed=seed, snapshot=snapshot,
                       false_negative_weight=false_negative_weight, lsh_params=lsh_params, max_bucket=max_bucket,
                       split_bucket=split_bucket, work_dir=work_dir, stats=stats)
    del sets
    # The exact method's order: by first id, then best first, ties by id; the smaller id first in each pair.
    # The cursor's order is not the numeric-aware one, so only the documents in some pair are ranked by it.
    named = sorted({d for i, j, _ in found for d in (i, j)}, key=lambda d: id_sort_key(ids[d]))
    rank = {d: r for r, d in enumerate(named)}
    ordered = [(i, j, sim) if rank[i] < rank[j] else (j, i, sim) for i, j, sim in found]
    ordered.sort(key=lambda f: (rank[f[0]], -f[2], rank[f[1]]))
    pairs = [SimilarPair(ids[i], ids[j], sim) for i, j, sim in ordered]
    return _finish(pairs, used, stats, out, started)


def idf_lsh_join(
    finder: ThresholdFinder,
    records: Iterable[Record] | Iterable[tuple[str, str]],
    indexed_dataset: str | None = None,
    *,
    one_to_one: bool = False,
    out: str | Path | None = None,
    scheme: str = "icws",
    num_hashes: int | None = None,
    seed: int | None = None,
    snapshot: IdfSnapshot | None = None,
    false_negative_weight: float = DEFAULT_FALSE_NEGATIVE_WEIGHT,
    lsh_params: LSHParams | None = None,
    max_bucket: int = DEFAULT_MAX_BUCKET,
    split_bucket: int | None = DEFAULT_SPLIT_BUCKET,
    work_dir: str | None = None,
) -> WeightedLshResult:
    """Similarity join at LSH speed: every streamed record against the indexed data set (``indexed_dataset``,
    or the whole collection), pairs (streamed id, indexed id) with IDF-weighted Jaccard >= the finder's
    threshold, verified exactly; the same pairs and order as :func:`~neardup_solr.engine.threshold.join_pairs`
    (``one_to_one`` as there). Parameters as :func:`idf_lsh_pairs`."""
    k = _check_run(finder, scheme, num_hashes, false_negative_weight, max_bucket)
    started = time.perf_counter()
    stats = WeightedLshStats()
    t0 = time.perf_counter()
    sets = TokenSets()
    ids: list[str] = []
    for r in records:
        rid, text, fields = record_item(r)
        try:
            tokens = finder.word_tokens(text, fields)
        except ValueError as exc:  # as the exact join: a record without words cannot match
            log.warning("join: record %r skipped: %s", rid, exc)
            tokens = []
        if tokens:
            sets.add(tokens)
            ids.append(rid)
        else:
            stats.skipped += 1
    n = stats.streamed = len(ids)
    _indexed_tokens(finder, indexed_dataset, sets, ids, with_shingles_only=False)
    stats.documents = len(ids) - n
    stats.seconds["export"] = round(time.perf_counter() - t0, 3)
    found, used = _run(finder, sets, ids, n, scheme=scheme, num_hashes=k, seed=seed, snapshot=snapshot,
                       false_negative_weight=false_negative_weight, lsh_params=lsh_params, max_bucket=max_bucket,
                       split_bucket=split_bucket, work_dir=work_dir, stats=stats)
    del sets
    found.sort(key=lambda f: (f[0], -f[2], id_sort_key(ids[f[1]])))
    pairs = [SimilarPair(ids[i], ids[j], sim) for i, j, sim in found]
    if one_to_one:
        pairs = _one_to_one(pairs)
    return _finish(pairs, used, stats, out, started)
