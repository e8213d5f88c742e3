"""The client-side all-pairs join (allpairs): against brute force on random sets, and against the per-document
exact method on a real Solr, pair for pair and digit for digit, at every threshold from 0.3 to 0.9."""

from __future__ import annotations

import random

import numpy as np
import pytest

from neardup_solr.pairs.allpairs import AllPairsStats, TokenSets, brute_force_pairs, prefix_join, token_sets
from neardup_solr.solr.documents import IndexSettings
from neardup_solr.errors import InvalidParameterError
from neardup_solr.solr.indexer import Indexer
from neardup_solr.solr.searcher import Searcher
from neardup_solr.text import Shingler
from neardup_solr.engine.threshold import ThresholdFinder, threshold_pairs

THRESHOLDS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


def _random_sets(rng: np.random.Generator, n: int) -> TokenSets:
    """Families of overlapping sets (a base set, thinned and topped up), some empty, some equal."""
    bases = [rng.choice(300, size=int(rng.integers(1, 40)), replace=False) for _ in range(n // 3 + 1)]
    sets = []
    for _ in range(n):
        base = bases[int(rng.integers(len(bases)))]
        kept = base[rng.random(base.size) < rng.uniform(0.5, 1.0)]
        sets.append(np.unique(np.r_[kept, rng.choice(300, size=int(rng.integers(0, 5)))]).astype(np.uint32))
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum([s.size for s in sets], out=offsets[1:])
    return TokenSets(np.concatenate(sets), offsets)


@pytest.mark.parametrize("seed", range(12))
def test_prefix_join_equals_brute_force(seed):
    rng = np.random.default_rng(seed)
    sets = _random_sets(rng, int(rng.integers(2, 150)))
    for t in THRESHOLDS + (0.25, 0.75, 1.0):
        stats = AllPairsStats()
        x, y, sim = prefix_join(sets, t, stats=stats)
        assert list(zip(x.tolist(), y.tolist(), sim.tolist())) == brute_force_pairs(sets, t), t
        # The filters did cut: fewer pairs verified than exist.
        assert stats.candidates <= sets.sizes.size * (sets.sizes.size - 1) // 2


def test_prefix_join_chunks_give_the_same_pairs(monkeypatch):
    import neardup_solr.pairs.allpairs as allpairs

    sets = _random_sets(np.random.default_rng(3), 120)
    whole = prefix_join(sets, 0.5)
    monkeypatch.setattr(allpairs, "_PAIR_CHUNK", 7)  # many tiny chunks, entries split across them
    chunked = prefix_join(sets, 0.5)
    assert all(np.array_equal(a, b) for a, b in zip(whole, chunked)) and whole[0].size


def test_token_sets_are_the_distinct_hashes_process_gives():
    shingler = Shingler(ngram=3)
    texts = ["the cat sat on the mat the cat sat", "a b", "", "one two three four five"]
    sets = token_sets(shingler, texts)
    for i, text in enumerate(texts):
        got = sets.hashes[sets.offsets[i]:sets.offsets[i + 1]]
        want = np.unique(shingler.process(text).shingle_hashes) if text else np.empty(0, dtype=np.uint32)
        assert np.array_equal(got, want)


def test_bad_threshold_and_strategy_are_refused(solr):
    with pytest.raises(ValueError, match="threshold"):
        prefix_join(_random_sets(np.random.default_rng(0), 5), 1.5)
    Indexer(solr, IndexSettings(num_hashes=16)).index_records([("a", "one two three four")])
    finder = ThresholdFinder(Searcher(solr), 0.5, similarity="idf")
    with pytest.raises(InvalidParameterError, match="strategy must be"):
        threshold_pairs(finder, strategy="client")
    with pytest.raises(InvalidParameterError, match="strategy must be one of"):
        threshold_pairs(finder, strategy="fast")


def _word_corpus(seed: int, n_sources: int) -> dict[str, str]:
    """Zipf-drawn sources and edited copies: similarities spread over every threshold tested."""
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(1500)]
    weights = [1 / (r + 1) for r in range(len(vocab))]
    docs = {}
    for s in range(n_sources):
        words = rng.choices(vocab, weights, k=rng.randint(8, 120))
        docs[f"s{s:03d}"] = words
        for c in range(rng.randint(0, 4)):
            edited = list(words)
            for _ in range(rng.randint(0, len(words) // 2)):
                edited[rng.randrange(len(edited))] = rng.choice(vocab)
            if rng.random() < 0.3:
                edited = edited[: rng.randint(len(edited) // 2, len(edited))]  # shorter copies: length filter
            docs[f"s{s:03d}c{c}"] = edited
    docs["dup1"] = docs["dup2"] = docs["s000"]  # exact duplicates, J = 1
    return {k: " ".join(v) for k, v in docs.items()}


def _char_corpus(seed: int, n: int) -> dict[str, str]:
    """Short person-like records with typos, character shingles: many shared frequent tokens."""
    rng = random.Random(seed)
    first = ["anna", "peter", "maria", "john", "lena", "paul", "sara", "mark"]
    last = ["smith", "meyer", "jones", "brown", "klein", "weber", "wolf"]
    docs = {}
    for i in range(n):
        text = f"{rng.choice(first)} {rng.choice(last)} {rng.randint(1, 99)} main street {rng.randint(1950, 2000)}"
        docs[str(i)] = text
        if rng.random() < 0.4:
            chars = list(text)
            for _ in range(rng.randint(0, 4)):
                chars[rng.randrange(len(chars))] = rng.choice("abcdefghij")
            docs[f"{i}x"] = "".join(chars)
    return docs


def _pairs(finder, **kw):
    return [(p.id, p.neighbor_id, p.similarity) for p in threshold_pairs(finder, **kw)]


@pytest.mark.solr
@pytest.mark.parametrize("kind", ["words", "chars"])
def test_client_join_returns_exactly_the_per_document_pairs(solr, kind):
    if kind == "words":
        docs, settings = _word_corpus(seed=21, n_sources=45), IndexSettings(ngram=3, num_hashes=16)
    else:
        docs, settings = _char_corpus(seed=8, n=160), IndexSettings(ngram=3, unit="char", num_hashes=16)
    Indexer(solr, settings).index_records(docs.items())
    searcher = Searcher(solr)
    for threshold in THRESHOLDS:
        finder = ThresholdFinder(searcher, threshold=threshold)
        client = _pairs(finder)  # the default: the client join
        queries = _pairs(finder, strategy="queries")
        assert client == queries, threshold
        assert client, f"no pairs at {threshold}: the corpus does not exercise it"
    # And against the method before prefix filtering, once.
    old = ThresholdFinder(searcher, threshold=0.5, prefix_filter=False)
    assert _pairs(ThresholdFinder(searcher, threshold=0.5)) == _pairs(old, strategy="queries")


@pytest.mark.solr
def test_client_join_within_a_data_set_and_its_pairs_file(solr, tmp_path, capsys):
    docs = _word_corpus(seed=4, n_sources=25)
    items = sorted(docs.items())
    Indexer(solr, IndexSettings(num_hashes=16), dataset="a").index_records(items[::2])
    Indexer(solr, IndexSettings(num_hashes=16), dataset="b").index_records(items[1::2])
    searcher = Searcher(solr)
    for dataset in ("a", "b", None):
        finder = ThresholdFinder(searcher, threshold=0.4)
        client_out, queries_out = tmp_path / f"c{dataset}.tsv", tmp_path / f"q{dataset}.tsv"
        assert _pairs(finder, dataset=dataset, out=client_out, progress=True) == _pairs(
            finder, dataset=dataset, strategy="queries", out=queries_out)
        assert client_out.read_bytes() == queries_out.read_bytes()
        shown = capsys.readouterr().err
        assert "reading texts" in shown and "all-pairs verify" in shown


@pytest.mark.solr
@pytest.mark.parametrize("similarity", ["jaccard", "idf"])
def test_join_reads_document_frequencies_in_bulk_with_the_same_pairs(solr, similarity, monkeypatch):
    from neardup_solr.engine.threshold import join_pairs

    docs = _word_corpus(seed=12, n_sources=40)
    indexed = {k: v for k, v in docs.items() if "c" not in k}
    streamed = [(k, v) for k, v in docs.items() if "c" in k]
    Indexer(solr, IndexSettings(num_hashes=16), dataset="sources").index_records(indexed.items())
    searcher = Searcher(solr)
    threshold = 0.5 if similarity == "jaccard" else 0.4
    terms_calls = []
    real = type(solr).post_form

    def counting(self, handler, *args, **kw):
        if handler == "terms":
            terms_calls.append(1)
        return real(self, handler, *args, **kw)

    monkeypatch.setattr(type(solr), "post_form", counting)
    bulk = join_pairs(ThresholdFinder(searcher, threshold, similarity=similarity), streamed,
                      indexed_dataset="sources", workers=2)
    # One read ahead covers every streamed record here; IDF verification still reads the weights of candidate
    # words the record lacks, a request for some candidates (it was one per record and more before).
    assert len(streamed) > 50 and len(terms_calls) <= (2 if similarity == "jaccard" else len(streamed) // 4)
    assert bulk == join_pairs(ThresholdFinder(searcher, threshold, similarity=similarity, prefix_filter=False),
                              streamed, indexed_dataset="sources") and bulk
