"""Threshold mode, IDF weighting, joins and LSH lookups against a real Solr."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from neardup_solr.solr.documents import IndexSettings
from neardup_solr.solr.indexer import Indexer
from neardup_solr.solr.searcher import Searcher
from neardup_solr.text import Shingler
from neardup_solr.pairs.similar_pairs import SimilarPair, one_to_one
from neardup_solr.engine.threshold import ThresholdFinder, join_pairs, threshold_pairs
from neardup_solr.solr.idf import IdfWeights
from neardup_solr.pairs.weighted import weighted_jaccard

pytestmark = pytest.mark.solr


def _corpus(n_sources=40, copies=3, seed=7):
    """Random documents plus edited copies, so pair similarities spread over (0, 1]."""
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(3000)]
    docs = {}
    for s in range(n_sources):
        words = [rng.choice(vocab) for _ in range(rng.randint(30, 80))]
        docs[f"s{s}"] = words
        for c in range(rng.randint(0, copies)):
            edited = list(words)
            for _ in range(rng.randint(0, 6)):
                edited[rng.randrange(len(edited))] = rng.choice(vocab)
            docs[f"s{s}c{c}"] = edited
    return {k: " ".join(v) for k, v in docs.items()}


def _brute_force(docs, threshold):
    sh = Shingler(ngram=3)
    sets = {k: set(sh.shingle_hashes(t).tolist()) for k, t in docs.items()}
    out = {}
    for a, b in itertools.combinations(sorted(docs), 2):
        j = len(sets[a] & sets[b]) / len(sets[a] | sets[b])
        if j >= threshold:
            out[tuple(sorted((a, b)))] = j
    return out


def test_threshold_pairs_equal_brute_force(solr):
    docs = _corpus()
    Indexer(solr, IndexSettings(ngram=3, num_hashes=64)).index_records(docs.items())
    for threshold in (0.5, 0.8):
        truth = _brute_force(docs, threshold)
        finder = ThresholdFinder(Searcher(solr), threshold=threshold)
        found = {tuple(sorted((p.id, p.neighbor_id))): p.similarity for p in threshold_pairs(finder, workers=2)}
        assert set(found) == set(truth)
        for pair, sim in found.items():
            assert sim == pytest.approx(truth[pair])
        assert len(truth) > 5


def test_lsh_lookup_finds_close_copies(solr):
    docs = _corpus(seed=11)
    Indexer(solr, IndexSettings(ngram=3, num_hashes=128, lsh_threshold=0.5)).index_records(docs.items())
    truth = _brute_force(docs, 0.8)
    searcher = Searcher(solr)
    hits = 0
    for a, b in truth:
        found = {m.id for m in searcher.find_near_dups(a, mode="lsh", max_edit_distance=None, first_word_filter=False,
                                                        rows=100)}
        hits += b in found
    assert hits / len(truth) >= 0.95


def test_idf_weights_come_from_the_index(solr):
    Indexer(solr).index_records([
        ("1", "common rare1 words here"), ("2", "common other words"), ("3", "common third text"),
    ])
    idf = IdfWeights(solr)
    w = idf.weights(["common", "rare1", "words", "unseen"])
    assert idf.num_docs == 3
    assert w["common"] == pytest.approx(0.0)
    assert w["rare1"] == pytest.approx(np.log(3))
    assert w["words"] == pytest.approx(np.log(3 / 2))
    assert w["unseen"] == pytest.approx(np.log(3))
    assert weighted_jaccard({"common", "rare1"}, {"common", "words"}, w) == 0.0


def test_a_small_field_read_whole_gives_the_frequencies_terms_list_gives(solr, monkeypatch):
    # Issue 40, point 5: a batch run reads a small field's whole term list in one request instead of looking each
    # token up; the numbers must be the very ones the token-by-token lookups (and the exact method) get.
    Indexer(solr).index_records([
        ("1", "common rare1 words here"), ("2", "common other words"), ("3", "common third text"),
        ("4", "common words again"),
    ])
    solr.delete_ids(["4"])  # deleted, not merged away: counted by both ways alike
    solr.commit()
    asked = ["common", "rare1", "words", "unseen", "here", "third", "again"]
    by_list = IdfWeights(solr).document_frequencies(asked)
    whole = IdfWeights(solr)
    asked_solr = []
    post_form = solr.post_form
    monkeypatch.setattr(solr, "post_form", lambda path, params, **kw: (asked_solr.append(path),
                                                                        post_form(path, params, **kw))[1])
    assert whole.read_whole_field(asked)  # the field holds fewer than 2 x 7 terms
    assert whole.document_frequencies(asked) == by_list and by_list["unseen"] == 0 and by_list["common"] >= 3
    assert asked_solr == ["terms"]  # one request; the frequencies then come from what it cached
    # A field with more terms than twice the tokens asked is not read whole (its answer stops at that many).
    assert not IdfWeights(solr).read_whole_field(["common", "rare1"])
    assert not IdfWeights(solr).read_whole_field([])


def test_idf_threshold_join_pairs_only_across_data_sets(solr):
    left = [("L1", "Art's Delicatessen 12224 Ventura Blvd. Studio City"),
            ("L2", "Arnie Morton's of Chicago 435 S. La Cienega Blvd. Los Angeles"),
            ("L3", "Cafe Bizou 14016 Ventura Blvd. Sherman Oaks")]
    right = [("R1", "Art's Deli 12224 Ventura Blvd. Studio City"),
             ("R2", "Arnie Morton's of Chicago 435 S. La Cienega Blvd. Los Angeles"),
             ("R3", "Campanile 624 S. La Brea Ave. Los Angeles")]
    Indexer(solr, dataset="left").index_records(left)
    Indexer(solr, dataset="right").index_records(right)
    finder = ThresholdFinder(Searcher(solr), threshold=0.4, similarity="idf")
    pairs = join_pairs(finder, left, indexed_dataset="right")
    assert {(p.id, p.neighbor_id) for p in pairs} == {("L1", "R1"), ("L2", "R2")}
    assert all(p.neighbor_id.startswith("R") for p in pairs)


def test_one_to_one_keeps_the_best_pair_per_id():
    pairs = [SimilarPair("a", "x", 0.9), SimilarPair("a", "y", 0.8), SimilarPair("b", "x", 0.85),
             SimilarPair("b", "y", 0.5)]
    assert one_to_one(pairs) == [SimilarPair("a", "x", 0.9), SimilarPair("b", "y", 0.5)]


def test_per_field_weights_make_the_name_count_more_than_the_city(solr, tmp_path):
    rows = [
        {"id": "a1", "name": "Golden Dragon Palace", "city": "San Francisco"},
        {"id": "a2", "name": "Golden Dragon Palace", "city": "Oakland"},
        {"id": "b1", "name": "Blue Bayou Grill", "city": "San Francisco"},
        {"id": "b2", "name": "Red Rooster Cafe", "city": "San Francisco"},
        {"id": "c1", "name": "Quiet Corner Bistro", "city": "Los Angeles"},
        {"id": "c2", "name": "Sunny Side Diner", "city": "Los Angeles"},
    ]
    import json as _json

    path = tmp_path / "places.jsonl"
    path.write_text("\n".join(_json.dumps(r) for r in rows) + "\n")
    summary = Indexer(solr).index_file(path, text_field="name,city")
    assert summary.indexed == 6
    searcher = Searcher(solr)
    assert searcher.get_by_id("a2").fields == {"name": "Golden Dragon Palace", "city": "Oakland"}

    def pairs(weights):
        finder = ThresholdFinder(searcher, threshold=0.5, similarity="idf", field_weights=weights)
        return {(p.id, p.neighbor_id) for p in threshold_pairs(finder)}

    # Same name, different city: kept when the name weighs most, lost when the city does.
    assert ("a1", "a2") in pairs({"name": 3.0, "city": 0.3})
    assert ("a1", "a2") not in pairs({"name": 0.1, "city": 5.0})
    # Same city, different names: never similar once the name dominates.
    assert not {("b1", "b2"), ("c1", "c2")} & pairs({"name": 3.0, "city": 0.3})
    assert {("b1", "b2"), ("c1", "c2")} <= pairs({"name": 0.1, "city": 5.0})


def _share_truth(docs, query_text, sample_mod, min_share):
    from neardup_solr.solr.documents import DocumentBuilder

    builder = DocumentBuilder(IndexSettings(sample_mod=sample_mod))
    q = set(builder.shingle_tokens(builder.process(query_text)))
    out = {}
    for doc_id, text in docs.items():
        share = len(q & set(builder.shingle_tokens(builder.process(text)))) / len(q)
        if share >= min_share:
            out[doc_id] = share
    return out


@pytest.mark.parametrize("sample_mod", [1, 4])
def test_share_lookup_matches_a_direct_count_with_and_without_sampling(solr, sample_mod):
    docs = _corpus(seed=21)
    Indexer(solr, IndexSettings(sample_mod=sample_mod)).index_records(docs.items())
    searcher = Searcher(solr)
    query = docs["s3"] + " with a new tail of words"
    for min_share in (0.3, 0.7):
        found = dict(searcher.find_by_shingle_share(query, min_share))
        truth = _share_truth(docs, query, sample_mod, min_share)
        assert set(found) == set(truth) and truth
        for doc_id, share in truth.items():
            assert found[doc_id] == pytest.approx(share)
    exact = searcher.find_by_shingle_share(docs["s5"].upper() + " !!", 0.99)
    assert exact[0] == ("s5", 1.0)
    if sample_mod > 1:
        field = IndexSettings().token_field("shingles")
        stored = solr.select({"q": "*:*", "fl": "id", "rows": 0, "facet": "true", "facet.field": field,
                              "facet.limit": -1})
        terms = stored["facet_counts"]["facet_fields"][field][::2]
        full = {t for text in docs.values() for t in Shingler().shingles(text)}
        assert 0 < len(terms) < len(full) / 2  # about 1 in 4 shingles is indexed
        with pytest.raises(ValueError, match="samples 1 in 4"):
            ThresholdFinder(searcher, threshold=0.8)
