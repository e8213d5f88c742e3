"""Prefix filtering: the lemma on random sets (pure), and identical pairs with and without it on a real Solr."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup_solr.solr.documents import IndexSettings
from neardup_solr.solr.indexer import Indexer
from neardup_solr.pairs.prefix_filter import count_prefix, prefix_size, rarest_first, weighted_prefix
from neardup_solr.solr.searcher import Searcher
from neardup_solr.engine.threshold import ThresholdFinder, join_pairs, threshold_pairs

tokens = st.sets(st.integers(0, 40).map(lambda i: f"t{i}"), min_size=1, max_size=25)


@settings(max_examples=300, deadline=None)
@given(a=tokens, b=tokens, frequencies=st.dictionaries(st.integers(0, 40).map(lambda i: f"t{i}"),
                                                       st.integers(0, 9)),
       t=st.floats(0.05, 1.0))
def test_a_set_reaching_the_overlap_bound_always_shares_a_prefix_token(a, b, frequencies, t):
    min_overlap = math.ceil(t * len(a) - 1e-9)
    prefix = count_prefix(sorted(a), frequencies, min_overlap)
    if len(a & b) >= min_overlap:
        assert set(prefix) & b
    # Never longer than needed: with one token fewer, the set of A's other tokens reaches the bound and misses it.
    if prefix and min_overlap > 0:
        shorter = set(prefix[:-1])
        rest = set(a) - shorter
        assert len(rest) >= min_overlap and not rest & shorter


@settings(max_examples=300, deadline=None)
@given(a=st.dictionaries(st.integers(0, 30).map(lambda i: f"t{i}"), st.floats(0.0, 5.0), min_size=1, max_size=20),
       b=tokens, t=st.floats(0.05, 1.0))
def test_a_weighted_set_reaching_the_bound_always_shares_a_prefix_token(a, b, t):
    bound = t * math.fsum(a.values())
    prefix = weighted_prefix(a, {}, bound)
    overlap = math.fsum(w for token, w in a.items() if token in b)
    if overlap >= bound and overlap > 0:
        assert set(prefix) & b
    assert all(a[token] > 0 for token in prefix)


def test_prefix_sizes_and_order():
    assert prefix_size(300, 240) == 61  # t = 0.8 on 300 shingles
    assert prefix_size(10, 0) == 10 and prefix_size(10, 11) == 0 and prefix_size(0, 1) == 0
    assert rarest_first(["b", "a", "c", "a"], {"a": 5, "b": 1}) == ["c", "b", "a"]  # unseen counts as 0
    assert weighted_prefix({"x": 1.0, "y": 3.0, "z": 0.0}, {}, 0.5) == ["y", "x"]
    assert weighted_prefix({"x": 1.0, "y": 3.0}, {}, 1.5) == ["y"]
    with pytest.raises(ValueError):
        weighted_prefix({"x": float("nan")}, {}, 0.5)


def _corpus(seed: int, n_sources: int = 30):
    """Sources from a Zipf-like vocabulary (frequent words give long posting lists, as in text) and edited
    copies, so similarities spread over the whole range the thresholds below test."""
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(2000)]
    weights = [1 / (r + 1) for r in range(len(vocab))]
    docs = {}
    for s in range(n_sources):
        words = rng.choices(vocab, weights, k=rng.randint(20, 90))
        docs[f"s{s:03d}"] = words
        for c in range(rng.randint(0, 4)):
            edited = list(words)
            for _ in range(rng.randint(0, len(words) // 2)):
                edited[rng.randrange(len(edited))] = rng.choice(vocab)
            docs[f"s{s:03d}c{c}"] = edited
    return {k: " ".join(v) for k, v in docs.items()}


@pytest.mark.solr
@pytest.mark.parametrize("similarity", ["jaccard", "idf"])
def test_the_exact_method_finds_the_same_pairs_with_and_without_the_prefix(solr, similarity):
    docs = _corpus(seed=5)
    Indexer(solr, IndexSettings(ngram=3, num_hashes=32)).index_records(docs.items())
    searcher = Searcher(solr)
    for threshold in (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9):
        found = {}
        for prefix in (True, False):
            finder = ThresholdFinder(searcher, threshold=threshold, similarity=similarity, prefix_filter=prefix)
            found[prefix] = [(p.id, p.neighbor_id, p.similarity)
                             for p in threshold_pairs(finder, strategy="queries")]
        assert found[True] == found[False], threshold
        assert found[True], f"no pairs at {threshold}: the corpus does not exercise it"


@pytest.mark.solr
def test_a_join_finds_the_same_pairs_with_and_without_the_prefix(solr):
    docs = _corpus(seed=9, n_sources=40)
    indexed = {k: v for k, v in docs.items() if "c" not in k}
    streamed = [(k, v) for k, v in docs.items() if "c" in k]
    Indexer(solr, IndexSettings(ngram=3, num_hashes=32), dataset="sources").index_records(indexed.items())
    searcher = Searcher(solr)
    for similarity, threshold in (("jaccard", 0.5), ("idf", 0.4)):
        results = [join_pairs(ThresholdFinder(searcher, threshold=threshold, similarity=similarity,
                                              prefix_filter=prefix), streamed, indexed_dataset="sources")
                   for prefix in (True, False)]
        assert results[0] == results[1] and results[0]


@pytest.mark.solr
def test_long_texts_skip_the_overlap_filter_and_still_find_the_same_pairs(solr):
    from neardup_solr.engine.threshold import OVERLAP_FILTER_MAX_TOKENS

    rng = random.Random(4)
    vocab = [f"w{i}" for i in range(3000)]
    clause = [rng.choice(vocab) for _ in range(300)]  # boilerplate every document shares
    docs = {}
    for s in range(6):
        words = [rng.choice(vocab) for _ in range(OVERLAP_FILTER_MAX_TOKENS + 200)] + clause
        docs[f"s{s}"] = words
        for c in range(2):
            edited = list(words)
            for _ in range(rng.randint(5, 20) if c == 0 else rng.randint(100, 400)):
                edited[rng.randrange(len(edited))] = rng.choice(vocab)
            docs[f"s{s}c{c}"] = edited
    Indexer(solr).index_records((k, " ".join(v)) for k, v in docs.items())
    searcher = Searcher(solr)
    for threshold in (0.3, 0.6, 0.9):
        results = [[(p.id, p.neighbor_id, p.similarity) for p in threshold_pairs(
            ThresholdFinder(searcher, threshold=threshold, prefix_filter=prefix), strategy="queries")]
            for prefix in (True, False)]
        assert results[0] == results[1] and results[0], threshold
