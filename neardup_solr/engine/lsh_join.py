"""Asymmetric similarity join with LSH bands: a streamed file against the index, skipping hopeless records.

Each streamed record is signed with the collection's own settings; its LSH band keys are the tokens the
indexed documents carry in ``content_lsh``. A record becomes a Solr query (``{!terms f=content_lsh}`` over its
band tokens, candidates verified with the exact Jaccard of the shingle-hash sets) only when one of its keys
can be on the indexed side: a :class:`~neardup_solr.pairs.bloom.BloomFilter` of every indexed band key, built once
from the exported signatures (:func:`~neardup_solr.solr.signatures.signature_pages`, one cursor over
``minhash_sig``), answers that in memory. A Bloom filter has no false negatives, so skipping changes no result:
a record skipped had no candidate to verify. When most streamed records have no partner (a large feed against
a small catalogue), most queries are never sent.

Like every LSH method this finds pairs with a probability given by the bands' S-curve (see :mod:`.lsh`); the
complete method is :func:`neardup_solr.engine.threshold.join_pairs`. Every reported similarity is exact.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from neardup_solr.pairs.allpairs import TOLERANCE, token_sets
from neardup_solr.pairs.bloom import BloomFilter
from neardup_solr.pairs.lsh import band_keys, band_tokens
from neardup_solr.io.readers import Record, record_item
from neardup_solr.engine.report import ordered_map
from neardup_solr.pairs._arrays import sorted_jaccard
from neardup_solr.solr.candidates import sharing_a_band
from neardup_solr.solr.collection import Selection, collection_of
from neardup_solr.solr.searcher import Searcher
from neardup_solr.pairs.similar_pairs import id_sort_key, SimilarPair, one_to_one as greedy_one_to_one
from neardup_solr.validation import check_bool, check_float, check_int
from neardup_solr.solr.signatures import signature_pages

log = logging.getLogger(__name__)

__all__ = ["LshJoinSummary", "lsh_join", "build_band_bloom"]

DEFAULT_FP_RATE = 0.01
# Streamed records signed (and checked against the filter) at once.
_SIGN_BATCH = 2000


@dataclass
class LshJoinSummary:
    """What a join did: ``skipped`` records had no band key the Bloom filter holds (no Solr query),
    ``no_shingles`` had nothing to sign, ``queried`` went to Solr."""

    records: int = 0
    skipped: int = 0
    no_shingles: int = 0
    queried: int = 0
    candidates: int = 0
    pairs: int = 0
    bloom_keys: int = 0
    bloom_bytes: int = 0
    bloom_seconds: float = 0.0
    seconds: float = 0.0

    def format(self) -> str:
        """One line for people."""
        share = self.skipped / self.records if self.records else 0.0
        text = (f"{self.pairs} pairs; {self.records} records streamed, {self.queried} queried, "
                f"{self.skipped} skipped by the Bloom filter ({share:.1%})")
        if self.no_shingles:
            text += f", {self.no_shingles} without shingles"
        if self.bloom_keys:
            text += (f"; filter of {self.bloom_keys:,} band keys, {self.bloom_bytes / 2**20:.1f} MiB, built in "
                     f"{self.bloom_seconds:.1f} s")
        return text + f"; {self.seconds:.1f} s"


def build_band_bloom(searcher: Searcher, dataset: str | None = None,
                     fp_rate: float = DEFAULT_FP_RATE) -> BloomFilter:
    """A Bloom filter of the band keys of every indexed document (of ``dataset``), from their stored
    signatures (the keys in ``content_lsh`` are ``band_keys`` of ``minhash_sig`` with the collection's bands).
    ``fp_rate`` is per streamed record: the chance that a record sharing no band is still let through."""

    settings = searcher.settings
    params = settings.lsh_params()
    count = collection_of(searcher.client).count(Selection(dataset=dataset))
    # A record is queried when any of its b keys hits, so each key gets rate 1 - (1 - p)^(1/b) ~ p/b: then a
    # record without a partner is queried with probability fp_rate (measured: sized per key at 1%, 16 bands
    # let 15% of hopeless records through). It costs 1.44 * log2(b) bits a key more.
    bloom = BloomFilter(count * params.bands, 1.0 - (1.0 - fp_rate) ** (1.0 / params.bands))
    for _, page in signature_pages(searcher.client, settings.num_hashes, dataset=dataset):
        if page.size:
            bloom.add(band_keys(page, params))
    return bloom


def lsh_join(
    searcher: Searcher,
    records: Iterable[Record] | Iterable[tuple[str, str]],
    threshold: float = 0.8,
    indexed_dataset: str | None = None,
    *,
    bloom: bool = True,
    fp_rate: float = DEFAULT_FP_RATE,
    workers: int = 2,
    progress: bool = False,
    one_to_one: bool = False,
) -> tuple[list[SimilarPair], LshJoinSummary]:
    """Pairs (streamed id, indexed id, Jaccard) with Jaccard >= ``threshold`` among the LSH candidates of each
    streamed record, in the records' order (each record's pairs best first), and the run's summary.

    ``bloom=True`` first builds a Bloom filter of the indexed band keys (a record without any indexed band
    passes it with probability ``fp_rate``) and
    sends no query for a record none of whose keys it holds; ``bloom=False`` queries every record (same pairs).
    """
    threshold = check_float("threshold", threshold, "threshold")
    bloom = check_bool("bloom", bloom)
    workers = check_int("workers", workers, "workers")
    check_float("bloom_fp_rate", fp_rate, "bloom_fp_rate")
    searcher.settings.require("lsh")
    searcher.warn_if_bands_miss(threshold)  # the indexed side's bands were chosen for its own threshold
    started = time.perf_counter()
    summary = LshJoinSummary()
    items = [record_item(r)[:2] for r in records]
    summary.records = len(items)
    filt = None
    if bloom:
        t0 = time.perf_counter()
        filt = build_band_bloom(searcher, indexed_dataset, fp_rate)
        summary.bloom_seconds = round(time.perf_counter() - t0, 3)
        summary.bloom_keys, summary.bloom_bytes = filt.count, filt.size_bytes
        log.info("Bloom filter of %d indexed band keys (%d bytes, %d probes) in %.1f s", filt.count,
                 filt.size_bytes, filt.num_probes, summary.bloom_seconds)
    builder = searcher.builder
    params = builder.lsh

    # Sign the records a batch at a time (vectorised), keep those worth a query.
    todo: list[tuple[str, np.ndarray, list[str]]] = []
    for lo in range(0, len(items), _SIGN_BATCH):
        batch = items[lo:lo + _SIGN_BATCH]
        sets = token_sets(builder.shingler, [text for _, text in batch])
        sizes = sets.sizes
        signable = np.flatnonzero(sizes > 0)
        summary.no_shingles += int(len(batch) - signable.size)
        if not signable.size:
            continue
        hashes = [sets.hashes[sets.offsets[i]:sets.offsets[i + 1]] for i in signable.tolist()]
        keys = band_keys(builder.minhash.signatures_from_hashes(hashes), params)
        if filt is not None:
            maybe = filt.contains(keys).reshape(keys.shape).any(axis=1)
        else:
            maybe = np.ones(len(hashes), dtype=bool)
        summary.skipped += int((~maybe).sum())
        for row in np.flatnonzero(maybe).tolist():
            todo.append((batch[int(signable[row])][0], hashes[row], band_tokens(keys[row])))
    summary.queried = len(todo)

    lock = threading.Lock()

    def lookup(item: tuple[str, np.ndarray, list[str]]) -> list[tuple[str, float]]:
        found, candidates = _candidates(searcher, item[1], item[2], threshold, indexed_dataset)
        with lock:  # += is not atomic across worker threads
            summary.candidates += candidates
        return found

    pairs: list[SimilarPair] = []
    for (rid, _, _), found in zip(todo, ordered_map(lookup, todo, workers, progress=progress, label="lsh join")):
        pairs.extend(SimilarPair(rid, other, sim) for other, sim in found)
    if one_to_one:
        pairs = greedy_one_to_one(pairs)
    summary.pairs = len(pairs)
    summary.seconds = round(time.perf_counter() - started, 3)
    log.info("lsh join: %s", summary.format())
    return pairs, summary


def _candidates(searcher: Searcher, hashes: np.ndarray, tokens: Sequence[str], threshold: float,
                dataset: str | None) -> tuple[list[tuple[str, float]], int]:
    """Indexed documents sharing a band with the record, verified: (id, Jaccard >= threshold), best first;
    and how many candidates there were."""
    docs = sharing_a_band(searcher.client, tokens, dataset=dataset, fields="id,content")
    if not docs:
        return [], 0
    sets = token_sets(searcher.builder.shingler, [d.get("content", "") for d in docs])
    out = []
    for i, doc in enumerate(docs):
        sim = sorted_jaccard(hashes, sets.hashes[sets.offsets[i]:sets.offsets[i + 1]])
        if sim >= threshold - TOLERANCE:
            out.append((doc["id"], sim))
    out.sort(key=lambda r: (-r[1], id_sort_key(r[0])))
    return out, len(docs)
