"""Normalisation, shingling and MinHash signatures: the one package both the indexer and the searcher use.

Indexer and searcher must turn a text into exactly the same shingles, hashes and signatures, otherwise stored
documents and queries stop being comparable. Everything here is deterministic across processes and machines:
MurmurHash3 (``mmh3``) with a fixed seed for shingles, ``numpy.random.default_rng(seed)`` for the masks.

Pipeline::

    text --normalize--> "art s deli 12224 ..." --Shingler--> shingles --> 32-bit hashes --MinHash--> signature

Modules: :mod:`.normalizer` (the normaliser), :mod:`.pinned_unicode` (the one Unicode version normaliser
version 3 reads, whatever the Python), :mod:`.murmur` (MurmurHash3 vectorised in NumPy),
:mod:`.shingles` (:class:`Shingler`, :class:`ProcessedText`), :mod:`.minhash` (:class:`MinHash`,
:class:`Signature`, :func:`jaccard`, :func:`estimate_jaccard`), :mod:`.weighted` (weighted MinHash:
:class:`~.weighted.WeightedMinHash`, :class:`~.weighted.BoostedMinHash`). Every name of the first four is
importable from here.
"""

from __future__ import annotations

# The underscored names are imported by tests and benchmarks from the single module this package replaced.
from neardup_solr.text.minhash import MinHash, Signature, _as_hashes, estimate_jaccard, jaccard
from neardup_solr.text.murmur import (
    _concat_ranges,
    _fmix32_tail_inplace,
    _murmur3_spans,
    _murmur3_words,
    _offsets,
    _scrambled,
    fmix32,
)
from neardup_solr.text.normalizer import (
    DEFAULT_NORMALIZER,
    LATEST_NORMALIZER_VERSION,
    NORMALIZER_VERSIONS,
    Normalizer,
    _check_str,
    _prepare,
    _prepare_v1,
    split_normalized,
    first_word,
    normalize,
    num_words,
    words,
)
from neardup_solr.text.shingles import ProcessedText, Shingler, distinct_in_order, _HashCache, _preview

__all__ = [
    "Normalizer",
    "NORMALIZER_VERSIONS",
    "LATEST_NORMALIZER_VERSION",
    "normalize",
    "words",
    "first_word",
    "num_words",
    "Shingler",
    "ProcessedText",
    "MinHash",
    "Signature",
    "jaccard",
    "estimate_jaccard",
    "fmix32",
]
