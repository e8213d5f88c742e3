"""The benchmark corpus generator and the exact all-pairs join that serves as ground truth."""

from __future__ import annotations

import json
import subprocess
import sys
from itertools import combinations

import numpy as np
import pytest

from benchmarks.corpus import generate, iter_documents, iter_truth
from benchmarks.exact_pairs import exact_pairs, main as exact_pairs_main, pairs_path, shingle_sets
from neardup_solr.text import Shingler
from repo_paths import REPO

FILES = ("docs.jsonl", "truth.tsv", "meta.json")


def _read_corpus(path):
    ids, texts = zip(*iter_documents(path))
    return list(ids), list(texts)


def _brute_force(sets, ids, threshold):
    """The definition, pair by pair: O(n^2) set intersections."""
    py = [set(np.asarray(s).tolist()) for s in sets]
    out = []
    for a, b in combinations(range(len(py)), 2):
        if not py[a] or not py[b]:
            continue
        inter = len(py[a] & py[b])
        j = inter / (len(py[a]) + len(py[b]) - inter)
        if j >= threshold:
            out.append((ids[a], ids[b], j))
    return out


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    out = tmp_path_factory.mktemp("corpus")
    meta = generate(300, 11, out, workers=0)
    return out, meta


@pytest.fixture(scope="module")
def dense(tmp_path_factory):
    """More copies than the default, so every threshold has pairs to find."""
    out = tmp_path_factory.mktemp("dense")
    generate(600, 3, out, dup_share=0.4, workers=0)
    ids, texts = _read_corpus(out)
    sh = Shingler(ngram=3)
    return out, ids, [sh.shingle_hashes(t) for t in texts]


def test_same_seed_same_files_inline_or_worker(corpus, tmp_path):
    out, _ = corpus
    generate(300, 11, tmp_path / "again", workers=1)
    for name in FILES:
        assert (tmp_path / "again" / name).read_bytes() == (out / name).read_bytes(), name
    generate(300, 12, tmp_path / "other", workers=0)
    assert (tmp_path / "other" / "docs.jsonl").read_bytes() != (out / "docs.jsonl").read_bytes()


def test_documents_are_well_formed(corpus):
    out, meta = corpus
    lines = (out / "docs.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    assert [r["id"] for r in records] == [f"d{i:07d}" for i in range(1, 301)]
    lengths = [len(r["text"].split()) for r in records]
    assert min(lengths) >= 50 and max(lengths) <= 400
    assert meta["counts"]["words_min"] == min(lengths) and meta["counts"]["words_max"] == max(lengths)
    assert sum(lengths) == meta["counts"]["words_total"]
    assert list(iter_documents(out)) == list(iter_documents(out / "docs.jsonl"))
    text = records[0]["text"]
    assert text[0].isupper() and text.rstrip()[-1] in ".?!"
    # Zipf: the top word is far more common than a mid-rank one, and the vocabulary is wide.
    words = [w.strip(",.;?!:").lower() for r in records for w in r["text"].split()]
    _, counts = np.unique(words, return_counts=True)
    counts = np.sort(counts)[::-1]
    assert counts[0] > 50 * counts[100] and len(counts) > 5_000


def test_truth_jaccard_is_exact(corpus):
    out, meta = corpus
    ids, texts = _read_corpus(out)
    by_id = dict(zip(ids, texts))
    sh = Shingler(ngram=3)
    truth = list(iter_truth(out))
    c = meta["counts"]
    assert len(truth) == c["truth_pairs"] > 0
    assert c["originals"] + c["copies"] == 300 and c["copies"] > 0
    assert sum((m * (m - 1)) // 2 * k for m, k in
               ((int(m), k) for m, k in c["clusters_by_members"].items())) == len(truth)
    for a, b, j in truth:
        assert a < b
        x, y = set(sh.shingle_hashes(by_id[a]).tolist()), set(sh.shingle_hashes(by_id[b]).tolist())
        assert j == pytest.approx(len(x & y) / len(x | y), abs=1e-6)


def test_batch_shingle_sets_match_the_definition(corpus):
    _, texts = _read_corpus(corpus[0])
    sh = Shingler(ngram=3)
    for got, text in zip(shingle_sets(texts, batch=64), texts):
        assert set(got.tolist()) == set(sh.shingle_hashes(text).tolist())


@pytest.mark.parametrize("threshold", [0.5, 0.8, 0.9, 1.0])
def test_exact_pairs_equals_brute_force_on_text(dense, threshold):
    _, ids, sets = dense
    got = exact_pairs(sets, ids, threshold)
    assert got == _brute_force(sets, ids, threshold)
    assert got, "the dense corpus should have pairs at every threshold"


def _random_sets(n, rng):
    """Sets from a small universe, many derived from earlier ones, so Jaccards fall on and around thresholds."""
    universe = rng.choice(1 << 32, 400, replace=False).astype(np.uint32)
    sets = []
    for i in range(n):
        if i and rng.random() < 0.6:
            base = sets[int(rng.integers(0, i))]
            keep = base[rng.random(base.size) > rng.choice([0.0, 0.05, 0.15, 0.3])]
            extra = universe[rng.integers(0, universe.size, int(rng.integers(0, 4)))]
            s = np.concatenate([keep, extra])
        else:
            s = universe[rng.integers(0, universe.size, int(rng.integers(0, 50)))]
        sets.append(s)  # duplicates inside a set on purpose: exact_pairs must treat it as a set
    return sets


def test_exact_pairs_equals_brute_force_on_random_sets():
    rng = np.random.default_rng(5)
    sets = _random_sets(1500, rng)
    ids = [f"r{i}" for i in range(len(sets))]
    # Brute force for all thresholds at once: a dense incidence matrix product gives every intersection.
    distinct = [np.unique(s) for s in sets]
    universe = np.unique(np.concatenate(distinct))
    inc = np.zeros((len(sets), universe.size), dtype=np.float64)
    for i, s in enumerate(distinct):
        inc[i, np.searchsorted(universe, s)] = 1
    inter = np.rint(inc @ inc.T).astype(np.int64)
    size = inc.sum(axis=1).astype(np.int64)
    a, b = np.triu_indices(len(sets), 1)
    union = size[a] + size[b] - inter[a, b]
    ok = (size[a] > 0) & (size[b] > 0)
    jac = np.where(ok, inter[a, b] / np.maximum(union, 1), 0.0)
    for t in (0.3, 0.5, 0.7, 0.8, 0.9, 1.0):
        hit = ok & (jac >= t)
        expected = [(ids[i], ids[j], float(x)) for i, j, x in zip(a[hit], b[hit], jac[hit])]
        got = exact_pairs(sets, ids, t)
        assert got == expected, t
        assert len(expected) > 50, t
    # Tokens that are not 32-bit hashes go through a renumbering path; the pairs must not change.
    signed = [s.astype(np.int64) - (1 << 31) for s in sets]
    assert exact_pairs(signed, ids, 0.8) == exact_pairs(sets, ids, 0.8)


def test_planted_pairs_above_threshold_are_all_found(dense):
    out, ids, sets = dense
    found = {(a, b): j for a, b, j in exact_pairs(sets, ids, 0.8)}
    planted = [(a, b, j) for a, b, j in iter_truth(out) if j >= 0.8]
    assert len(planted) > 20
    for a, b, j in planted:
        assert found[(a, b)] == pytest.approx(j, abs=1e-6)
    spread = [j for _, _, j in iter_truth(out)]
    assert min(spread) < 0.65 and max(spread) == 1.0


def test_exact_pairs_cli(corpus, tmp_path):
    out, _ = corpus
    exact_pairs_main([str(out), "--threshold", "0.8"])
    lines = pairs_path(out, 0.8).read_text().splitlines()
    assert pairs_path(out, 0.8).name == "exact_0.8.tsv" and lines[0].startswith("#")
    ids, texts = _read_corpus(out)
    sh = Shingler(ngram=3)
    expected = exact_pairs([sh.shingle_hashes(t) for t in texts], ids, 0.8)
    assert lines[1:] == [f"{a}\t{b}\t{j:.6f}" for a, b, j in expected]
    # As a script from anywhere (no install, no PYTHONPATH): the path bootstrap must work.
    res = subprocess.run([sys.executable, str(REPO / "benchmarks" / "exact_pairs.py"), str(out), "--threshold",
                          "0.9", "--out", str(tmp_path / "p.tsv")], cwd=tmp_path, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "p.tsv").read_text().startswith("# id_a")


def test_rejects_bad_arguments(tmp_path):
    with pytest.raises(ValueError):
        exact_pairs([np.array([1], dtype=np.uint32)], ["a"], 0.0)
    with pytest.raises(ValueError):
        exact_pairs([np.array([1], dtype=np.uint32)], ["a", "b"], 0.8)
    with pytest.raises(ValueError):
        generate(10, 0, tmp_path, dup_share=1.0)
    assert exact_pairs([], [], 0.8) == []
    assert exact_pairs([np.array([], dtype=np.uint32)] * 3, ["a", "b", "c"], 0.5) == []
