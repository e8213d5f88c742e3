"""Whole-collection deduplication (neardup_solr.engine.collection): the NumPy stages on their own, then end to end
against a real Solr, on hand-made documents and on a 20,000-document generated corpus with exact ground truth."""

from __future__ import annotations

import itertools
import logging

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from benchmarks.corpus import generate, iter_documents
from benchmarks.exact_pairs import exact_pairs, shingle_sets
from neardup_solr.pairs.candidates import (
    CollectionStats,
    exact_jaccard,
    candidate_pairs,
    estimate_margin,
    matching_positions,
    store_candidate_pairs,
    store_matching_positions,
)
from neardup_solr.solr.signatures import fetch_texts
from neardup_solr.engine.collection import dedupe_collection
from neardup_solr.pairs import signature_store
from neardup_solr.pairs.signature_store import SignatureStore
from neardup_solr.solr.documents import IndexSettings
from neardup_solr.solr.indexer import Indexer
from neardup_solr.pairs.lsh import LSHParams, band_keys
from neardup_solr.pairs.similar_pairs import id_sort_key
from neardup_solr.text import Shingler

# Token fields cost indexing time and whole-collection dedup reads only minhash_sig and content.
LEAN = IndexSettings(ngram=3, num_hashes=128, fields=())


# ---------------------------------------------------------------------------------------------------------------
# NumPy stages (no Solr)
# ---------------------------------------------------------------------------------------------------------------


def _brute_force_candidates(sigs: np.ndarray, params: LSHParams) -> set[tuple[int, int]]:
    keys = band_keys(sigs, params)
    return {(i, j) for i, j in itertools.combinations(range(len(sigs)), 2) if (keys[i] == keys[j]).any()}


def _refined_candidates(sigs: np.ndarray, params: LSHParams, split: int) -> set[tuple[int, int]]:
    """Banding with oversized buckets refined, written out directly: a group of more than ``split`` members
    is regrouped by its members' next extension value, recursively, until small or out of values."""
    k, r = sigs.shape[1], params.rows
    out: set[tuple[int, int]] = set()
    for band in range(params.bands):
        extra = [((band + 1) * r + d) % k for d in range(k - r)]
        groups: dict = {}
        for i in range(len(sigs)):
            groups.setdefault(tuple(sigs[i, band * r:(band + 1) * r].tolist()), []).append(i)
        todo = [(members, 0) for members in groups.values()]
        while todo:
            members, depth = todo.pop()
            if len(members) > split and depth < len(extra):
                sub: dict = {}
                for i in members:
                    sub.setdefault(int(sigs[i, extra[depth]]), []).append(i)
                todo.extend((m, depth + 1) for m in sub.values())
            else:
                out.update(itertools.combinations(sorted(members), 2))
    return out


def _decode(codes: np.ndarray, n: int) -> set[tuple[int, int]]:
    return {(int(c) // n, int(c) % n) for c in codes}


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(0, 40),
    values=st.integers(1, 3),
    bands=st.integers(1, 5),
    rows=st.integers(1, 3),
    split=st.integers(2, 6),
    seed=st.integers(0, 2**32 - 1),
)
def test_candidates_equal_brute_force(n, values, bands, rows, split, seed):
    # Few distinct values per position, so buckets of every size occur.
    sigs = np.random.default_rng(seed).integers(0, values, size=(n, bands * rows + 1), dtype=np.uint32)
    params = LSHParams(bands, rows)
    codes = candidate_pairs(sigs, params, split_bucket=None)
    assert codes.dtype == np.int64
    assert np.all(np.diff(codes) > 0)  # sorted and distinct
    assert _decode(codes, n) == _brute_force_candidates(sigs, params)
    refined = candidate_pairs(sigs, params, split_bucket=split)
    assert np.all(np.diff(refined) > 0)
    assert _decode(refined, n) == _refined_candidates(sigs, params, split)
    assert set(refined.tolist()) <= set(codes.tolist())  # refining only ever removes candidates


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(0, 60),
    values=st.integers(1, 3),
    bands=st.integers(1, 4),
    rows=st.integers(1, 3),
    page=st.integers(1, 25),
    partition_entries=st.sampled_from([1, 7, 10**9]),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_disk_store_gives_the_in_memory_candidates_signatures_and_ids(
    n, values, bands, rows, page, partition_entries, seed, tmp_path_factory
):
    """Spilled page by page, split into key partitions (1 entry per partition forces 2**k slices per band) and
    read back one slice at a time: the same candidates, signatures and ids as the arrays in memory."""
    rng = np.random.default_rng(seed)
    sigs = rng.integers(0, values, size=(n, bands * rows + 1), dtype=np.uint32)
    ids = [f"dóc\u00e9{i}\t" * (i % 3 + 1) for i in range(n)]  # unicode, tabs, lengths vary
    params = LSHParams(bands, rows)
    with SignatureStore(bands * rows + 1, params, expected_documents=n,
                        directory=tmp_path_factory.mktemp("store"), partition_entries=partition_entries) as store:
        for lo in range(0, n, page):
            store.append(ids[lo : lo + page], sigs[lo : lo + page])
        assert store.count == n
        slices_needed = -(-max(n, 1) // partition_entries)
        assert store.partitions >= slices_needed and store.partitions < 2 * slices_needed
        codes = store_candidate_pairs(store)
        assert np.array_equal(codes, candidate_pairs(sigs, params))
        if n:
            wanted = np.unique(rng.integers(0, n, size=min(n, 9)))
            assert np.array_equal(store.signatures(wanted), sigs[wanted])
            assert store.ids(wanted) == [ids[i] for i in wanted.tolist()]
            assert store.ids(np.arange(n)) == ids
        a, b = np.divmod(codes, np.int64(max(n, 1)))
        assert np.array_equal(store_matching_positions(store, a, b), matching_positions(sigs, a, b))
        path = store.path
    assert not path.exists()  # removed on close


def test_oversized_buckets_are_split_counted_and_logged(caplog):
    sigs = np.zeros((10, 8), dtype=np.uint32)  # ten identical signatures: one bucket of 10 in every band
    sigs = np.vstack([sigs, np.arange(2 * 8, dtype=np.uint32).reshape(2, 8) + 1])  # two loners
    stats = CollectionStats()
    with caplog.at_level(logging.WARNING, logger="neardup_solr.engine.collection"):
        codes = candidate_pairs(sigs, LSHParams(2, 4), max_bucket=4, stats=stats)
    # Blocks of 4, 4 and 2 members: 6 + 6 + 1 pairs instead of 45.
    assert _decode(codes, 12) == {(i, j) for lo, hi in ((0, 4), (4, 8), (8, 10))
                                  for i, j in itertools.combinations(range(lo, hi), 2)}
    assert stats.oversized_buckets == 2
    assert stats.pairs_not_generated == 2 * (45 - 13)
    assert "max_bucket=4" in caplog.text


def test_matching_positions_and_margin():
    rng = np.random.default_rng(3)
    sigs = rng.integers(0, 2**32, size=(200, 128), dtype=np.uint32)
    sigs[1, :100] = sigs[0, :100]
    a = rng.integers(0, 200, size=100_000)
    b = rng.integers(0, 200, size=100_000)
    a[0], b[0] = 0, 1
    m = matching_positions(sigs, a, b)
    assert m[0] == 100
    assert np.array_equal(m, (sigs[a] == sigs[b]).sum(axis=1))
    assert estimate_margin(0.8, 128) == pytest.approx(3 * (0.8 * 0.2 / 128) ** 0.5)
    assert estimate_margin(1.0, 128) == 1 / 128  # never zero: one position of slack


def test_exact_jaccard_matches_sets():
    rng = np.random.default_rng(5)
    sets = [np.unique(rng.integers(0, 60, size=rng.integers(0, 40))).astype(np.int64) for _ in range(30)]
    sizes = np.array([s.size for s in sets], dtype=np.int64)
    keyed = np.concatenate([(np.int64(slot) << 32) | s for slot, s in enumerate(sets)])
    x, y = np.array(list(itertools.combinations(range(30), 2))).T
    got = exact_jaccard(keyed, sizes, x, y)
    for i, j, value in zip(x, y, got):
        a, b = set(sets[i].tolist()), set(sets[j].tolist())
        expected = len(a & b) / len(a | b) if a | b else 0.0
        assert value == expected


def test_rejects_bad_arguments():
    client = object()  # arguments are checked before Solr is asked anything
    with pytest.raises(ValueError, match="threshold"):
        dedupe_collection(client, 0.0)
    with pytest.raises(ValueError, match="false_negative_weight"):
        dedupe_collection(client, 0.8, false_negative_weight=1.0)


# ---------------------------------------------------------------------------------------------------------------
# Against Solr: hand-made documents
# ---------------------------------------------------------------------------------------------------------------

BASE = " ".join(f"word{i} filler{i % 7}" for i in range(40))  # 80 words, 78 distinct 3-shingles
NEAR = BASE.rsplit(" ", 1)[0] + " changed"  # the last word differs: 3 of 78 shingles change
OTHER = " ".join(f"other{i} thing{i % 5}" for i in range(40))


def _jaccard(x: str, y: str) -> float:
    sh = Shingler(ngram=3)
    a, b = set(sh.shingle_hashes(x).tolist()), set(sh.shingle_hashes(y).tolist())
    return len(a & b) / len(a | b)


@pytest.mark.solr
def test_small_collection(solr):
    # Ids with the {!terms} separators and numeric ids ("9" < "10" by value, though "10" < "9" as strings).
    docs = {"10": BASE, "9": BASE, "a,b": NEAR, 'q"x\\y': OTHER, "loner": "a completely different text here"}
    Indexer(solr, LEAN, dataset="one").index_records(docs.items())
    Indexer(solr, LEAN, dataset="two").index_records([("t1", BASE), ("t2", OTHER)])
    j = _jaccard(BASE, NEAR)
    assert 0.8 <= j < 1.0

    result = dedupe_collection(solr, 0.8)
    got = {(p.id, p.neighbor_id): p.similarity for p in result.pairs}
    assert got == {
        ("9", "10"): 1.0, ("9", "a,b"): j, ("10", "a,b"): j,
        ("9", "t1"): 1.0, ("10", "t1"): 1.0, ("a,b", "t1"): j,
        ('q"x\\y', "t2"): 1.0,
    }
    ordered = [(id_sort_key(p.id), id_sort_key(p.neighbor_id)) for p in result.pairs]
    assert ordered == sorted(ordered) and all(a < b for a, b in ordered)
    stats = result.stats
    assert (stats.documents, stats.verified_pairs, stats.skipped_documents, stats.missing_documents) == (7, 7, 0, 0)
    assert stats.fetched_documents == 6 and stats.exact
    assert set(stats.seconds) == {"signatures", "candidates", "estimate", "verify", "total"}
    assert stats.peak_rss_mib > 0

    only_one = dedupe_collection(solr, 0.8, dataset="one", progress=True)
    assert {(p.id, p.neighbor_id) for p in only_one.pairs} == {("9", "10"), ("9", "a,b"), ("10", "a,b")}
    assert only_one.stats.documents == 5
    only_two = dedupe_collection(solr, 0.8, dataset="two", page_size=1)  # one document per cursor page
    assert [(p.id, p.neighbor_id, p.similarity) for p in only_two.pairs] == []
    assert only_two.stats.documents == 2 and only_two.stats.requests >= 3

    # Identical texts only at threshold 1, and the estimate mode reports estimates without fetching texts.
    assert {(p.id, p.neighbor_id) for p in dedupe_collection(solr, 1.0, dataset="one").pairs} == {("9", "10")}
    estimated = dedupe_collection(solr, 0.8, exact=False, dataset="one")
    assert estimated.stats.fetched_documents == 0 and not estimated.exact
    assert {(p.id, p.neighbor_id): p.similarity for p in estimated.pairs}[("9", "10")] == 1.0
    assert all(p.similarity >= 0.8 and (p.similarity * 128).is_integer() for p in estimated.pairs)


@pytest.mark.solr
def test_empty_collection(solr):
    result = dedupe_collection(solr, 0.8)
    assert result.pairs == [] and result.stats.documents == 0 and result.stats.candidate_pairs == 0


@pytest.mark.solr
def test_fetch_texts_survives_every_separator(solr):
    # The indexer now refuses ids with control characters; an index written before that may still hold them.
    solr.add([{"id": "a\u001f\u001e\n\t,b", "content": "some words to index here"},
              {"id": "plain", "content": "x y z"}])
    solr.commit()
    docs = fetch_texts(solr, ["a\u001f\u001e\n\t,b", "plain", "absent"])  # falls back to real-time get
    assert sorted(d["id"] for d in docs) == ["a\u001f\u001e\n\t,b", "plain"]


# ---------------------------------------------------------------------------------------------------------------
# Against Solr: 20,000 generated documents, exact ground truth
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.solr
@pytest.mark.slow
def test_corpus_recall_and_exact_similarities(solr, tmp_path, monkeypatch):
    generate(20_000, 11, tmp_path)
    records = list(iter_documents(tmp_path))
    ids = [i for i, _ in records]
    truth = {(a, b): j for a, b, j in exact_pairs(shingle_sets([t for _, t in records]), ids, 0.8)}
    truth = {(a, b) if id_sort_key(a) < id_sort_key(b) else (b, a): j for (a, b), j in truth.items()}
    assert len(truth) > 500
    summary = Indexer(solr, LEAN, batch_size=1000).index_records(records)
    assert summary.indexed == 20_000
    del records

    result = dedupe_collection(solr, 0.8)
    found = {(p.id, p.neighbor_id): p.similarity for p in result.pairs}
    recall = len(found.keys() & truth.keys()) / len(truth)
    assert recall >= 0.98, (recall, result.stats)
    # Nothing below the threshold, and the reported similarity is the exact one.
    assert found.keys() <= truth.keys()
    assert all(found[pair] == truth[pair] for pair in found)
    stats = result.stats
    assert stats.documents == 20_000 and (stats.bands, stats.rows) == (21, 6)
    assert stats.candidate_pairs >= stats.estimated_pairs >= stats.verified_pairs == len(found)
    assert stats.oversized_buckets == 0

    # Bands cut into 8 key partitions (~2,500 records each) and 200 texts held at a time: the same pairs.
    monkeypatch.setattr(signature_store, "PARTITION_ENTRIES", 2_500)
    sliced = dedupe_collection(solr, 0.8, verify_documents=200)
    assert sliced.stats.partitions == 8
    assert sliced.pairs == result.pairs
    assert sliced.stats.fetched_documents > stats.fetched_documents  # a text needed by two slices is read twice

    estimated = dedupe_collection(solr, 0.8, exact=False)
    est = {(p.id, p.neighbor_id) for p in estimated.pairs}
    # The estimate errs both ways near the threshold (about 0.035 at J = 0.8), but not by much overall.
    assert len(est & truth.keys()) / len(truth) >= 0.85
    assert len(est & truth.keys()) / len(est) >= 0.85
