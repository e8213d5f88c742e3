"""NearDupIndex, the datasketch-style facade, against a real Solr: its verbs, pre-tokenised documents,
streaming inserts, check_and_add racing in threads and in processes, and what a datasketch user expects of it
(bulk inserts, pickling into multiprocessing workers, str keys, its errors, len and keys without a commit, top k).
datasketch's own MinHashLSH tests, ported, are in test_neardup_index_datasketch.py."""

from __future__ import annotations

import multiprocessing as mp
import threading

import pytest

from neardup_solr import (
    DocumentNotFoundError,
    IndexSettings,
    InvalidParameterError,
    InvalidTextError,
    KeyNotFoundError,
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


# --------------------------------------------------------------------------------------------------------------
# For datasketch users (issue 47): bulk inserts, pickling, str keys, errors, len/keys without a commit, top k


def _texts(count: int, prefix: str = "doc") -> list[tuple[str, str]]:
    return [(f"{prefix}{i}", f"{prefix} number {i} " + " ".join(f"w{i}x{j}" for j in range(12)))
            for i in range(count)]


def _visible_to_searches(client) -> int:
    """What Solr's searcher shows (no real-time get): how a commit would be noticed."""
    return client.count(filters=["-dataset:__meta__"])


def test_insert_many_sends_through_the_indexer_and_refuses_taken_keys_naming_them(solr):
    index = NearDupIndex(solr, threshold=0.8)
    items = _texts(1200)
    assert index.insert_many(items, buffer_size=500) == 1200  # three chunks, each through the Indexer
    assert _visible_to_searches(solr) == 1200  # committed once at the end: every process sees them
    assert index.query(items[700][1]) == ["doc700"]
    index.insert("single", "a text inserted one at a time, not yet committed")
    with pytest.raises(DocumentExistsError) as exc:
        index.insert_many([("new1", "a fresh text one"), ("doc3", "other"), ("single", "other"),
                           ("new2", "a fresh text two")])
    assert isinstance(exc.value, ValueError) and exc.value.doc_ids == ["doc3", "single"]
    assert "'doc3'" in str(exc.value) and "'single'" in str(exc.value) and "overwrite=True" in str(exc.value)
    assert "new1" not in index and "new2" not in index  # nothing of the refused chunk was written
    with pytest.raises(DocumentExistsError, match="'dup' is given twice"):
        index.insert_many([("dup", "one text"), ("dup", "another text")])
    assert "dup" not in index
    assert index.insert_many([("doc3", "doc three replaced by a new text"), ("new1", "a fresh text one")],
                             overwrite=True) == 2
    assert solr.get_by_ids(["doc3"], "content")[0]["content"] == "doc three replaced by a new text"
    assert len(index) == 1200 + 2


def test_an_insertion_session_sends_by_buffer_and_at_the_end_even_after_an_exception(solr):
    index = NearDupIndex(solr, threshold=0.8)
    items = _texts(5)
    with index.insertion_session(buffer_size=2) as session:
        for key, text in items[:3]:
            session.insert(key, text)
        assert "doc0" in index and "doc1" in index and "doc2" not in index  # the first buffer went when full
        session.insert("tok", tokens=normalize(TEXT).split())
    assert session.inserted == 4 and "doc2" in index and index.query(TEXT) == ["tok"]
    with pytest.raises(RuntimeError):
        with index.insertion_session() as session:
            session.insert(*items[3])
            raise RuntimeError("the caller's loop failed")
    assert "doc3" in index  # sent when the block ended, as datasketch's session does
    with pytest.raises(InvalidParameterError, match="start a new insertion_session"):
        session.insert(*items[4])
    with pytest.raises(DocumentExistsError) as exc:
        with index.insertion_session() as session:
            session.insert(*items[4])
            session.insert("doc0", "doc0 again")  # looked up when the chunk is sent
    assert exc.value.doc_ids == ["doc0"] and "doc4" not in index


def test_a_deletion_session_removes_together_and_refuses_missing_keys(solr):
    index = NearDupIndex(solr, threshold=0.8)
    index.insert_many(_texts(3))
    with pytest.raises(KeyNotFoundError, match="'nope'"):
        with index.deletion_session() as session:
            session.remove("doc0")
            session.remove("nope")
    assert "doc0" in index  # nothing of that chunk was removed
    with index.deletion_session() as session:
        session.remove("doc0")
        session.remove("doc1")
    assert list(index.keys()) == ["doc2"]


def test_keys_are_str_everywhere_and_other_types_are_refused_naming_str_of_the_key(solr):
    index = NearDupIndex(solr, threshold=0.8)
    index.insert("7", TEXT)
    calls = [lambda: index.insert(7, NEAR), lambda: 7 in index, lambda: index.remove(7),
             lambda: index.check_and_add(7, NEAR), lambda: index.insert_many([(7, NEAR)]),
             lambda: index.insertion_session().insert(7, NEAR), lambda: index.deletion_session().remove(7)]
    for call in calls:
        with pytest.raises(ParameterTypeError) as exc:
            call()
        assert exc.value.param == "key" and "str(key) ('7')" in str(exc.value)
        assert isinstance(exc.value, TypeError)
    with pytest.raises(ParameterTypeError, match="decode it"):
        index.insert(b"bytes", TEXT)
    index.flush()
    assert index.query(NEAR) == ["7"] and list(index.keys()) == ["7"] and "7" in index
    assert len(index) == 1


def test_reserved_keys_are_refused_by_the_prefix_the_message_names(solr):
    index = NearDupIndex(solr, threshold=0.8)
    for key in ("__neardup_settings__", "__neardup_mine", "__neardup_claim__:x"):
        with pytest.raises(InvalidParameterError, match="'__neardup_' are reserved") as exc:
            index.insert(key, TEXT)
        assert exc.value.param == "key"
        with pytest.raises(InvalidParameterError, match="'__neardup_' are reserved"):
            index.check_and_add(key, TEXT)
        assert key not in index
    index.insert("_neardup_is_fine", TEXT)


def test_a_missing_key_on_remove_is_a_value_error_and_a_key_error(solr):
    index = NearDupIndex(solr)
    with pytest.raises(ValueError):  # datasketch's MinHashLSH.remove
        index.remove("missing")
    with pytest.raises(KeyError):  # what callers of earlier releases catch
        index.remove("missing")
    with pytest.raises(DocumentNotFoundError, match="'missing'"):
        index.remove("missing")


def test_empty_text_raises_invalid_text_error_from_every_verb(solr):
    index = NearDupIndex(solr)
    index.insert("seed", TEXT)
    for blank in ("", "   ", "?!"):
        for call in (lambda: index.insert("e", blank), lambda: index.query(blank), lambda: index.query(blank, 3),
                     lambda: index.insert_many([("e", blank)]), lambda: index.check_and_add("e", blank),
                     lambda: index.insertion_session().insert("e", blank)):
            with pytest.raises(InvalidTextError, match="no words left"):
                call()
    with pytest.raises(InvalidTextError, match="the text of key 'e'"):
        index.insert("e", "")
    assert "e" not in index


@pytest.mark.parametrize("name,value,instead", [
    ("num_perm", 128, "IndexSettings(num_hashes=128)"), ("weights", (0.5, 0.5), "IndexSettings(lsh_threshold"),
    ("params", (16, 8), "IndexSettings(bands=b, rows=r)"), ("storage_config", {"type": "redis"}, "SolrClient("),
    ("prepickle", True, "keys are str"), ("hashfunc", hash, "cannot be replaced")])
def test_datasketch_constructor_arguments_say_what_to_use_instead(solr, name, value, instead):
    with pytest.raises(ParameterTypeError) as exc:
        NearDupIndex(solr, threshold=0.5, **{name: value})
    assert exc.value.param == name and instead in str(exc.value) and "datasketch's MinHashLSH" in str(exc.value)
    assert isinstance(exc.value, TypeError)


def test_other_unknown_arguments_and_a_positional_threshold_are_refused_clearly(solr):
    with pytest.raises(TypeError, match="unexpected keyword argument 'treshold'"):
        NearDupIndex(solr, treshold=0.5)
    with pytest.raises(ParameterTypeError, match=r"NearDupIndex\(client, threshold=0.5\)"):
        NearDupIndex(0.5)


def test_len_keys_and_is_empty_count_uncommitted_inserts_without_committing(solr):
    index = NearDupIndex(solr, threshold=0.8, commit_within_ms=60_000)
    labelled = NearDupIndex(solr, threshold=0.8, dataset="other", commit_within_ms=60_000)
    assert index.is_empty() and len(index) == 0 and list(index.keys()) == []
    for key, text in _texts(3):
        index.insert(key, text)
    labelled.insert("x0", "a text of the other data set entirely")
    assert len(index) == 4 and len(labelled) == 1 and not index.is_empty()
    assert _visible_to_searches(solr) == 0  # len and keys did not commit: Solr's searcher still shows nothing
    assert sorted(index.keys()) == ["doc0", "doc1", "doc2", "x0"] and list(labelled.keys()) == ["x0"]
    index.flush()
    assert _visible_to_searches(solr) == 4 and len(index) == 4  # visible now, and not counted twice
    index.insert("doc3", "one more, not yet visible to searches")
    keys = list(index.keys())
    assert keys == ["doc0", "doc1", "doc2", "x0", "doc3"] and len(index) == 5
    index.remove("doc0")
    assert len(index) == 4 and "doc0" not in list(index.keys())


def test_keys_pages_through_a_large_index_with_a_cursor(solr):
    index = NearDupIndex(solr)
    index.insert_many(_texts(2500))
    keys = index.keys()
    assert next(keys) == "doc0"  # lazily, a page at a time
    assert len(set(index.keys())) == 2500 == len(index)


def test_query_k_returns_the_k_most_similar_keys_exactly(solr):
    import random

    from neardup_solr import Shingler

    rng = random.Random(5)
    vocabulary = [f"v{i}" for i in range(60)]
    texts = {f"r{i}": " ".join(rng.choice(vocabulary) for _ in range(rng.randint(8, 30))) for i in range(300)}
    index = NearDupIndex(solr)
    index.insert_many(texts.items())
    shingler = Shingler(ngram=3)
    hashes = {key: set(shingler.shingle_hashes(text).tolist()) for key, text in texts.items()}
    for probe in list(texts)[:15]:
        query = set(shingler.shingle_hashes(texts[probe]).tolist())
        expected = sorted((len(query & h) / len(query | h) for h in hashes.values() if query & h), reverse=True)
        for k in (1, 5, 40):
            got = index.query_matches(texts[probe], k)
            assert [round(m.similarity, 9) for m in got] == [round(s, 9) for s in expected[:k]], (probe, k)
    assert index.query(texts["r0"], 1) == ["r0"]
    assert all(m.similarity >= 0.3 for m in index.query_matches(texts["r0"], 300, threshold=0.3))
    with pytest.raises(ParameterTypeError, match=r"query\(text, threshold=0.5\)"):
        index.query(texts["r0"], 0.5)
    with pytest.raises(InvalidParameterError):
        index.query(texts["r0"], 0)


def test_query_k_sees_this_process_s_uncommitted_inserts_and_works_on_lsh_only_collections(solr):
    index = NearDupIndex(solr, settings=IndexSettings(fields=("lsh",)), commit_within_ms=60_000)
    index.insert("a", TEXT)
    index.insert("b", NEAR)
    index.insert("c", "a completely different sentence about tax forms and paperwork")
    assert index.query(TEXT, 5) == ["a", "b"]  # the candidates that share a band, best first
    index.flush()
    assert index.query(NEAR, 1) == ["b"] and index.query(NEAR, 5, threshold=0.95) == ["b"]


def test_a_threshold_below_what_the_bands_find_is_said_not_silently_short(solr, caplog):
    """Issue 47: in a collection with LSH tokens only, a query threshold below its lsh_threshold finds a pair at
    that similarity only by chance; the lookup says so, with the chance, once per threshold."""
    index = NearDupIndex(solr, settings=IndexSettings(fields=("lsh",)), commit_within_ms=0)
    index.insert("a", TEXT)
    with caplog.at_level("WARNING", logger="neardup_solr.solr.searcher"):
        index.query(NEAR, threshold=0.8)
        assert not caplog.records  # the collection's own threshold: the bands are chosen for it
        index.query(NEAR, threshold=0.3)
        index.query(TEXT, threshold=0.3)
    (warning,) = caplog.records
    message = warning.getMessage()
    assert "at Jaccard >= 0.3" in message and "chosen for 0.8" in message and "probability 0%" in message, message
    assert index.searcher.band_recall(0.8) >= 0.95 > index.searcher.band_recall(0.3)


def _pool_query(index: NearDupIndex, text: str) -> list[str]:
    return index.query(text)


def _pool_insert(index: NearDupIndex, key: str, text: str) -> str:
    index.insert(key, text)
    return key


def test_an_index_pickles_and_reconnects_in_multiprocessing_pool_workers(solr, solr_url):
    import pickle

    items = _texts(4)
    index = NearDupIndex(SolrClient(solr_url, timeout=7), threshold=0.8, dataset="shared", commit_within_ms=5000)
    index.insert_many(items)
    copy = pickle.loads(pickle.dumps(index))  # datasketch's documented way of sharing an index
    assert (copy.client.url, copy.client.timeout, copy.threshold, copy.dataset, copy.commit_within_ms) == (
        solr_url, 7, 0.8, "shared", 5000)
    assert copy.query(items[1][1]) == ["doc1"]
    ctx = mp.get_context("spawn")
    with ctx.Pool(2) as pool:
        assert pool.starmap(_pool_query, [(index, text) for _, text in items]) == [[key] for key, _ in items]
        added = pool.starmap(_pool_insert, [(index, f"w{i}", f"worker text {i} " + TEXT) for i in range(3)])
        with pytest.raises(DocumentExistsError) as exc:  # a worker's error comes back whole
            pool.starmap(_pool_insert, [(index, "doc0", "taken")])
        assert exc.value.doc_ids == ["doc0"]
    assert all(key in index for key in added)  # real-time get: seen before any commit
    index.flush()  # the workers' adds are other processes': len counts them once Solr shows them
    assert len(index) == 7


def test_a_pickled_index_keeps_the_client_s_options_and_credentials(solr_url):
    import pickle

    from neardup_solr.solr.client import RetryPolicy

    client = SolrClient(solr_url, username="reader", password="secret", timeout=9, retry=RetryPolicy(max_wait=3),
                        pool_size=2)
    copy = pickle.loads(pickle.dumps(NearDupIndex(client, settings=IndexSettings(ngram=2))))
    assert copy.client.session.auth == ("reader", "secret") and copy.client.pool_size == 2
    assert copy.client.retry.max_wait == 3 and copy.client.timeout == 9 and copy._seed_settings.ngram == 2
