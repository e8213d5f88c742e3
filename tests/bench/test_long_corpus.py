"""benchmarks/long_corpus.py: web pages of 5-50 KB, deterministic, with exact truth Jaccards, boilerplate shared
across unrelated pages, and no near-duplicate pair at 0.8 but the planted ones (the gold of the long peers run)."""

from __future__ import annotations

import json
import re
from collections import Counter

import numpy as np
import pytest

from benchmarks.corpus import _TextModel, iter_documents, iter_truth
from benchmarks.exact_pairs import exact_pairs, shingle_sets
from benchmarks.long_corpus import (FOOTER_MAX_WORDS, HEADER_MAX_WORDS, MAX_BYTES, MIN_BYTES, SHARED_MAX_WORDS,
                                    LongTextModel, generate)
from neardup_solr.text import Shingler

FILES = ("docs.jsonl", "truth.tsv", "meta.json")
DOCS = 300


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    out = tmp_path_factory.mktemp("long")
    meta = generate(DOCS, 11, out, workers=0)
    ids, texts = zip(*iter_documents(out))
    return out, meta, list(ids), list(texts)


@pytest.fixture(scope="module")
def dense(tmp_path_factory):
    """Many copies, so that planted pairs fall on both sides of 0.8."""
    out = tmp_path_factory.mktemp("long-dense")
    generate(500, 3, out, dup_share=0.4, workers=0)
    ids, texts = zip(*iter_documents(out))
    return out, list(ids), shingle_sets(list(texts))


def test_same_seed_same_files_inline_or_worker(corpus, tmp_path):
    out = corpus[0]
    generate(DOCS, 11, tmp_path / "again", workers=1)
    for name in FILES:
        assert (tmp_path / "again" / name).read_bytes() == (out / name).read_bytes(), name
    generate(DOCS, 12, tmp_path / "other", workers=0)
    assert (tmp_path / "other" / "docs.jsonl").read_bytes() != (out / "docs.jsonl").read_bytes()


def test_pages_are_web_page_sized(corpus):
    out, meta, ids, texts = corpus
    assert ids == [f"d{i:07d}" for i in range(1, DOCS + 1)]
    sizes = np.array([len(t.encode("utf-8")) for t in texts])
    assert sizes.min() >= MIN_BYTES and sizes.max() <= MAX_BYTES
    assert 11_000 <= np.median(sizes) <= 17_000
    assert sizes.max() > 2 * np.median(sizes) and sizes.min() < np.median(sizes) / 1.5  # a spread, not one size
    c = meta["counts"]
    assert (c["text_bytes_min"], c["text_bytes_max"], c["text_bytes_median"]) == \
        (sizes.min(), sizes.max(), int(np.median(sizes)))
    words = [len(t.split()) for t in texts]
    assert (c["words_min"], c["words_max"], c["words_total"]) == (min(words), max(words), sum(words))
    assert min(words) >= 900
    assert meta["profile"] == "long" and meta["generator"] == "benchmarks/long_corpus.py"
    # Written as corpus.py writes: one JSON object per line, ASCII, the same reader.
    first = (out / "docs.jsonl").read_text(encoding="ascii").splitlines()[0]
    assert json.loads(first) == {"id": ids[0], "text": texts[0]}


def test_every_page_carries_one_to_three_blocks_some_shared_by_unrelated_pages(corpus):
    out, meta, ids, texts = corpus
    c = meta["counts"]
    blocks = sum(c["pages_with_block"].values())
    assert DOCS <= blocks <= 3 * DOCS and all(v > 0 for v in c["pages_with_block"].values())
    assert c["largest_sites"][0]["pages"] > 10 and c["commonest_shared_blocks"][0]["pages"] > 20
    # A paragraph (block) that many pages of different planted clusters carry, verbatim.
    cluster_of = {}
    for a, b, _ in iter_truth(out):
        cluster_of[b] = cluster_of.get(a, a)
        cluster_of.setdefault(a, a)
    paragraphs = Counter(p for t in texts for p in set(t.split("\n\n")))
    common, count = paragraphs.most_common(1)[0]
    holders = {cluster_of.get(i, i) for i, t in zip(ids, texts) if common in t.split("\n\n")}
    assert count >= 20 and len(holders) >= 20


def test_boilerplate_blocks_stay_within_the_sizes_the_argument_assumes():
    model = LongTextModel(_TextModel(np.random.default_rng(0)), seed=5)
    assert max(len(b.split()) for b in model.shared_blocks) <= SHARED_MAX_WORDS
    for site in range(300):
        header, footer = model.site_blocks(site)
        assert len(header.split()) <= HEADER_MAX_WORDS and len(footer.split()) <= FOOTER_MAX_WORDS
        assert model.site_blocks(site) == (header, footer)  # the same for every page of the site
        assert re.fullmatch(r"[A-Za-z0-9 ,.;:?!\n]+", header + footer)  # JSON-safe without escaping but \n


def test_page_length_is_known_before_rendering_and_copies_stay_in_bounds():
    model = LongTextModel(_TextModel(np.random.default_rng(1)), seed=1)
    rng = np.random.default_rng(2)
    _, _, body = model.model.originals(rng, 20, median_words=2700, sigma=0.5, min_words=1000, max_target=9480)
    for d in range(20):
        page = model.fit(model.new_page(rng, body(d)), rng)
        assert len(model.render(page)) == model.page_chars(page)
        for target in (0.55, 0.8, 0.95, 1.0):
            copy = model.copy(page, rng, target)
            text = model.render(copy)
            assert len(text) == model.page_chars(copy) and MIN_BYTES <= len(text) <= MAX_BYTES


def test_truth_jaccard_is_exact(corpus):
    out, meta, ids, texts = corpus
    by_id = dict(zip(ids, texts))
    sh = Shingler(ngram=3)
    truth = list(iter_truth(out))
    c = meta["counts"]
    assert len(truth) == c["truth_pairs"] > 0 and c["copies"] > 0
    assert sum((int(m) * (int(m) - 1)) // 2 * k for m, k in c["clusters_by_members"].items()) == len(truth)
    for a, b, j in truth:
        assert a < b
        x, y = set(sh.shingle_hashes(by_id[a]).tolist()), set(sh.shingle_hashes(by_id[b]).tolist())
        assert j == pytest.approx(len(x & y) / len(x | y), abs=1e-6)


def test_exact_pairs_at_0_8_are_the_planted_pairs_at_0_8(dense):
    out, ids, sets = dense
    planted = {(a, b): j for a, b, j in iter_truth(out)}
    at_08 = {pair: j for pair, j in planted.items() if j >= 0.8}
    assert len(at_08) > 30 and min(planted.values()) < 0.7  # pairs on both sides of the threshold
    found = {(a, b): j for a, b, j in exact_pairs(sets, ids, 0.8)}
    assert found.keys() == at_08.keys()
    for pair, j in found.items():
        assert j == pytest.approx(at_08[pair], abs=1e-6)
    # With a wide margin: no pair of unrelated pages reaches even 0.3, boilerplate or not.
    assert {(a, b) for a, b, _ in exact_pairs(sets, ids, 0.3)} <= planted.keys()


def test_rejects_bad_arguments(tmp_path):
    with pytest.raises(ValueError):
        generate(0, 0, tmp_path)
    with pytest.raises(ValueError):
        generate(10, 0, tmp_path, dup_share=1.0)
