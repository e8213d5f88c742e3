"""NearDupIndex, the datasketch-style facade, against a real Solr: its verbs, pre-tokenised documents,
streaming inserts, and check_and_add racing in threads and in processes."""

from __future__ import annotations

import multiprocessing as mp
import threading

import pytest

from neardup_solr import (
    DocumentNotFoundError,
    IndexSettings,
    InvalidParameterError,
    MinHash,
    NearDupIndex,
    ParameterTypeError,
    SignatureMismatchError,
    SolrClient,
    estimate_jaccard,
)
from neardup_solr.errors import DocumentExistsError
from neardup_solr.text import normalize

pytestmark = pytest.mark.solr

TEXT = ("the quick brown fox jumps over the lazy dog near the river bank while the farmer watches from "
        "his old wooden porch and the sun sets slowly behind the distant hills of the valley")
NEAR = TEXT.replace("lazy", "sleepy")


def test_insert_query_contains_len_remove_like_datasketch(solr):
    index = NearDupIndex(solr, threshold=0.5, commit_within_ms=60_000)
    assert len(index) == 0 and "a" not in index
    index.insert("a", TEXT)
    assert "a" in index  # real-time get: seen before any commit
    index.insert("b", "a completely different sentence about tax forms and paperwork")
    index.flush()
    assert len(index) == 2
    assert index.query(NEAR) == ["a"]
    assert index.query(NEAR, threshold=0.99) == []
    with pytest.raises(DocumentExistsError):  # datasketch raises ValueError for a key inserted twice
        index.insert("a", "another text")
    assert isinstance(DocumentExistsError("x", "a"), ValueError)
    index.remove("a")
    assert "a" not in index and len(index) == 1 and index.query(NEAR) == []
    with pytest.raises(DocumentNotFoundError):
        index.remove("a")
    assert "__neardup_settings__" not in index


def test_inserts_stream_without_a_commit_each_and_become_visible_within_commit_within(solr):
    import time

    index = NearDupIndex(solr, threshold=0.8, commit_within_ms=200)
    for i in range(20):
        index.insert(str(i), f"{TEXT} record {i} " + " ".join(f"w{i}x{j}" for j in range(40)))
    deadline = time.monotonic() + 10
    while index.query(f"{TEXT} record 7 " + " ".join(f"w7x{j}" for j in range(40))) != ["7"]:
        assert time.monotonic() < deadline, "an insert never became visible"
        time.sleep(0.1)


def test_pre_tokenised_documents_are_signed_and_indexed_as_their_joined_tokens(solr):
    index = NearDupIndex(solr, threshold=0.8)
    tokens = normalize(TEXT).split()
    index.insert("tok", tokens=tokens)
    index.flush()
    assert index.query(TEXT) == ["tok"]  # the same words as a text: an exact duplicate (same MD5)
    assert index.query_matches(tokens=tokens)[0].exact
    assert solr.get_by_ids(["tok"], "content")[0]["content"] == " ".join(tokens)
    assert not index.check_and_add("text", TEXT).added
    for bad in (["Quick"], ["two words"], ["fox,"], [], ["ok", 3]):
        with pytest.raises(InvalidParameterError) as exc:
            index.insert("bad", tokens=bad)
        assert exc.value.param == "tokens"
    with pytest.raises(ParameterTypeError):
        index.insert("bad", tokens="a string is not a token list")
    with pytest.raises(InvalidParameterError):
        index.insert("bad", TEXT, tokens=tokens)  # one or the other
    assert "bad" not in index


def test_check_and_add_follows_the_collection_threshold_and_seeds_settings(solr):
    index = NearDupIndex(solr, settings=IndexSettings(ngram=5, unit="char", lsh_threshold=0.7))
    assert index.check_and_add("1", TEXT).added
    assert index.searcher.settings.unit == "char"  # the seed settings were stored and are followed
    second = index.check_and_add("2", NEAR)
    assert not second.added and second.threshold == 0.7 and [m.id for m in second.matches] == ["1"]


def test_signatures_of_other_seeds_or_lengths_never_mix():
    a = MinHash(num_hashes=64, seed=1).signature(TEXT)
    with pytest.raises(SignatureMismatchError):
        estimate_jaccard(a, MinHash(num_hashes=64, seed=2).signature(TEXT))
    with pytest.raises(SignatureMismatchError):
        estimate_jaccard(a, MinHash(num_hashes=32, seed=1).signature(TEXT))


def test_two_threads_adding_the_same_and_near_same_texts_add_one(solr):
    index = NearDupIndex(solr, threshold=0.8)
    texts = [f"{TEXT} topic {n} " + " ".join(f"t{n}w{j}" for j in range(30)) for n in range(15)]
    results: dict[str, list] = {"a": [], "b": []}
    start = threading.Barrier(2)

    def worker(side: str) -> None:
        start.wait()
        for n, text in enumerate(texts):
            variant = text if side == "a" or n % 2 else text.replace("quick", "quiet")
            results[side].append(index.check_and_add(f"{side}{n}", variant).added)

    threads = [threading.Thread(target=worker, args=(side,)) for side in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    added = [x or y for x, y in zip(results["a"], results["b"])]
    both = [x and y for x, y in zip(results["a"], results["b"])]
    assert all(added) and not any(both)
    assert len(index) == len(texts)


def _process_check(url: str, key: str, text: str, start, out) -> None:
    index = NearDupIndex(SolrClient(url), threshold=0.8)
    start.wait()
    out.put((key, index.check_and_add(key, text).added))


def test_two_processes_adding_the_same_text_add_one(solr, solr_url):
    NearDupIndex(solr).insert("seed", "an unrelated first document so the settings exist already")
    ctx = mp.get_context("spawn")
    for round_ in range(3):
        start, out = ctx.Barrier(2), ctx.Queue()
        text = " ".join(f"r{round_}w{j}" for j in range(40))  # unlike the other rounds' texts
        procs = [ctx.Process(target=_process_check, args=(solr_url, f"p{side}{round_}", text, start, out))
                 for side in "ab"]
        for p in procs:
            p.start()
        answers = [out.get(timeout=120) for _ in procs]
        for p in procs:
            p.join(timeout=60)
        assert sorted(added for _, added in answers) == [False, True], answers
