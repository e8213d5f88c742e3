"""Whole-collection LSH keeps the pairs of large version clusters (issue 24): a small clustered corpus
(``benchmarks/clustered.py``) indexed in a real Solr, ``report --method lsh`` (``dedupe_collection``) against the
exact all-pairs join of the same shingle sets, at T = 0.5 and 0.7, and the refinement's counters in the stats."""

from __future__ import annotations

import pytest

from benchmarks.clustered import generate
from benchmarks.exact_pairs import exact_pairs, shingle_sets
from neardup_solr.engine.collection import dedupe_collection
from neardup_solr.pairs.similar_pairs import id_sort_key
from neardup_solr.solr.documents import IndexSettings
from neardup_solr.solr.indexer import Indexer
from neardup_solr.text import Shingler

pytestmark = pytest.mark.solr


def test_lsh_keeps_the_pairs_of_large_clusters(solr):
    # 25 bases with 10-60 versions each (~900 documents of 150-400 words) and 250 unrelated documents.
    records = list(generate(25, 250, seed=4, min_words=150, max_words=400))
    summary = Indexer(solr, IndexSettings(fields=()), batch_size=500).index_records(records)
    assert summary.indexed == len(records)
    ids = [i for i, _ in records]
    sets = shingle_sets([t for _, t in records], Shingler(ngram=3))
    for threshold in (0.5, 0.7):
        truth = {tuple(sorted((a, b), key=id_sort_key)) for a, b, _ in exact_pairs(sets, ids, threshold)}
        assert len(truth) > 300  # clusters of tens of near duplicates: the case that used to lose pairs
        result = dedupe_collection(solr, threshold)
        found = {(p.id, p.neighbor_id) for p in result.pairs}
        assert found <= truth
        refinement = result.stats.refinement()
        assert len(found) / len(truth) >= 0.99, (threshold, len(found), len(truth), refinement)
        assert refinement["verified_buckets"] > 0  # the clusters' buckets were verified in place, not split
        assert refinement["candidates_avoided"] == refinement["oversized_pairs"] - refinement["oversized_emitted"]
        unrefined = dedupe_collection(solr, threshold, split_bucket=None)
        assert {(p.id, p.neighbor_id) for p in unrefined.pairs} >= found
