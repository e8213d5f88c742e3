"""datasketch's own MinHashLSH tests (``test/test_lsh.py`` of github.com/ekzhu/datasketch, read at commit 8d4bda1),
written again for NearDupIndex against a real Solr: one test here for each test there, under the same name.

A datasketch test inserts ``MinHash`` objects of tiny sets (``m1.update(b"a")``). Here the same sets are texts
indexed as sets of single words (``IndexSettings(ngram=1)``) with the test's ``num_perm=16`` as ``num_hashes=16``,
so "a" and "b" are the same one-element sets. Where NearDupIndex differs on purpose, the test says so and either
asserts what NearDupIndex does instead or is marked ``xfail(strict=True)`` with the reason (it then fails exactly
the way the reason says: a missing method, a refused argument). docs/coming-from-datasketch.md lists every one:

- MinHash objects of another length (``MinHash(18)`` in a 16-value index) cannot reach an index: it signs every
  text with the collection's stored settings (``test_insert``, ``test_query``).
- ``weights``, ``params`` and ``storage_config`` are refused with the setting to use; Solr is the storage that
  datasketch's Redis tests stand in for (``test_init``, the ``*_redis`` tests).
- Keys are str: ``lsh.insert(0, m)`` is refused (``test_query_buffer_matches_query_candidates``).
- No query buffer, no ``get_counts``, no ``merge`` (xfail), and no weighted MinHash sets (xfail).
- ``lsh.keys`` is datasketch's key storage, an attribute; NearDupIndex's ``keys()`` is a method.
"""

from __future__ import annotations

import pickle
import random

import pytest

from neardup_solr import (
    DocumentNotFoundError,
    IndexSettings,
    NearDupIndex,
    ParameterTypeError,
    SolrClient,
    WeightedMinHash,
)
from neardup_solr.errors import DocumentExistsError

pytestmark = pytest.mark.solr

# datasketch's tests: MinHashLSH(threshold=0.5, num_perm=16) over one-element sets.
TINY = IndexSettings(ngram=1, num_hashes=16, lsh_threshold=0.5)

NO_QUERY_BUFFER = ("NearDupIndex has no query buffer (add_to_query_buffer / collect_query_buffer batch datasketch's "
                   "Redis round trips): call query() for each text; each is one Solr request")
NO_GET_COUNTS = ("NearDupIndex keeps no hash tables in memory: the band keys are Solr terms of content_lsh, whose "
                 "bucket sizes a facet on that field gives; there is no get_counts")
NO_MERGE = ("NearDupIndex has no merge: an index is a Solr collection that every process writing to it already "
            "shares; to combine two collections, insert one's texts into the other (insert_many)")
NO_WEIGHTED_SETS = ("NearDupIndex indexes texts (their shingle sets), not weighted MinHash objects: weighted Jaccard "
                    "over token weights is neardup_solr's IDF-weighted LSH (idf_lsh_pairs, WeightedMinHash)")


def tiny_index(client: SolrClient) -> NearDupIndex:
    return NearDupIndex(client, threshold=0.5, settings=TINY)


def with_a_and_b(client: SolrClient) -> NearDupIndex:
    """The index most datasketch tests start from: "a" and "b" inserted (their sets {a} and {b})."""
    index = tiny_index(client)
    index.insert("a", "a")
    index.insert("b", "b")
    return index


def band_tokens(client: SolrClient, key: str) -> list[str]:
    """The LSH band keys stored for ``key`` (datasketch: ``lsh.keys[key]``, one per hash table), each
    ``"<band>_<16 hex digits>"``."""
    return list(client.get_by_ids([key], "id,content_lsh")[0]["content_lsh"])


def hash_sizes(tokens: list[str]) -> list[int]:
    """The length of each band key's hash (datasketch's H), without the band number before it."""
    return [len(token.partition("_")[2]) for token in tokens]


def holders_of_band(client: SolrClient, token: str) -> set[str]:
    """The keys indexed under one band key (datasketch: ``lsh.hashtables[i][H]``); the token travels as a
    parameter of the term parser, never as query syntax."""
    found = client.select([("q", "{!term f=content_lsh v=$nd.band}"), ("nd.band", token), ("fl", "id"),
                           ("rows", 1000)])
    return {d["id"] for d in found["response"]["docs"]}


def assert_like_test_insert(client: SolrClient, index: NearDupIndex, keys: tuple[str, ...]) -> None:
    """What datasketch's test_insert checks after inserting: each key is in the index, in every one of its bands'
    tables, and its band keys number the index's bands."""
    bands = index.searcher.settings.lsh_params().bands
    index.flush()  # datasketch's tables change at once; Solr's searches see an insert after a commit
    for key in keys:
        assert key in index
        tokens = band_tokens(client, key)
        assert len(tokens) == bands
        for token in tokens:
            assert key in holders_of_band(client, token)


# --------------------------------------------------------------------------------------------------------------
# TestMinHashLSH


def test_init(solr):
    index = NearDupIndex(solr, threshold=0.8)
    assert index.is_empty()
    # datasketch: weights=(0.2, 0.8) shifts its band choice toward recall (more bands, fewer rows). Different on
    # purpose: the bands are chosen for a recall of 0.95 at the collection's threshold, and every candidate's exact
    # Jaccard is checked, so weights is refused, naming the settings that choose bands instead.
    chosen = IndexSettings(lsh_threshold=0.8).lsh_params()
    rows = chosen.rows - 1  # shorter bands, as many as 128 values hold: more recall, like weights=(0.2, 0.8)
    given = IndexSettings(lsh_threshold=0.8, bands=128 // rows, rows=rows).lsh_params()
    assert chosen.bands < given.bands and chosen.rows > given.rows
    with pytest.raises(ParameterTypeError, match=r"IndexSettings\(bands=b, rows=r\)"):
        NearDupIndex(solr, threshold=0.8, weights=(0.2, 0.8))


def test__H(solr):
    # datasketch: every band's hash H has one byte length. Here: every band key of a document has one length,
    # whatever the number of hash values.
    for num_hashes in range(2, 128 + 1, 16):
        solr.delete_all()
        index = NearDupIndex(solr, settings=IndexSettings(num_hashes=num_hashes))
        index.insert("m", "abcdefg 1234567")
        sizes = hash_sizes(band_tokens(solr, "m"))
        assert sizes and all(size == sizes[0] for size in sizes), num_hashes


def test_unpacking(solr):
    # datasketch: params=(b, 4) for b in 2..1024. Here its bands and rows are settings; a sample of the range
    # (each needs an empty collection).
    for bands in (2, 3, 31, 256, 1024):
        solr.delete_all()
        index = NearDupIndex(solr, settings=IndexSettings(num_hashes=bands * 4, bands=bands, rows=4))
        index.insert("m", "abcdefg 1234567")
        sizes = hash_sizes(band_tokens(solr, "m"))
        assert len(sizes) == bands and all(size == sizes[0] for size in sizes), bands


def test_insert(solr):
    index = with_a_and_b(solr)
    assert_like_test_insert(solr, index, ("a", "b"))
    assert {"a", "b"} <= set(index.keys())
    # datasketch: inserting a MinHash(18) into a 16-value index raises ValueError. Different on purpose: texts
    # are signed with the collection's stored settings, so a signature of another length cannot be made. An index
    # asking for 18 values on this collection signs with its 16 and its insert is found by the first index.
    other = NearDupIndex(solr, threshold=0.5, settings=IndexSettings(ngram=1, num_hashes=18, lsh_threshold=0.5))
    other.insert("c", "c")
    assert other.searcher.settings.num_hashes == 16 and index.query("c") == ["c"]
    with pytest.raises(DocumentExistsError):  # the ValueError datasketch gives for a key inserted twice
        index.insert("a", "a")


def test_query(solr):
    index = with_a_and_b(solr)
    assert "a" in index.query("a")
    assert "b" in index.query("b")
    # datasketch: querying with a MinHash(18) raises ValueError; here no such query can be made (see test_insert):
    # an index that asks for 18 values answers with the collection's 16.
    other = NearDupIndex(solr, threshold=0.5, settings=IndexSettings(ngram=1, num_hashes=18, lsh_threshold=0.5))
    assert other.query("a") == ["a"]


@pytest.mark.xfail(strict=True, raises=AttributeError, reason=NO_QUERY_BUFFER)
def test_query_buffer(solr):
    index = with_a_and_b(solr)
    index.add_to_query_buffer("a")  # type: ignore[attr-defined]
    assert "a" in index.collect_query_buffer()  # type: ignore[attr-defined]


def test_query_buffer_matches_query_candidates(solr):
    index = NearDupIndex(solr, threshold=0.5, settings=IndexSettings(ngram=1, num_hashes=32, lsh_threshold=0.5))
    docs = ["a b c", "a b d", "x y z"]
    # datasketch inserts them under the int keys 0, 1, 2. Different on purpose: keys are str (Solr ids are), and
    # an int key is refused rather than coming back as "0", which would make 0 and "0" one key.
    with pytest.raises(ParameterTypeError, match=r"str\(key\) \('0'\)"):
        index.insert(0, docs[0])
    for key, text in enumerate(docs):
        index.insert(str(key), text)
    # Jaccard({a,b,c}, {a,b,d}) = 0.5 reaches the threshold; the answer is exact, not a candidate set.
    assert set(index.query(docs[0])) == {"0", "1"}


@pytest.mark.xfail(strict=True, raises=AttributeError, reason=NO_QUERY_BUFFER)
def test_query_buffer_matches_query_candidates_buffered(solr):
    index = NearDupIndex(solr, threshold=0.5, settings=IndexSettings(ngram=1, num_hashes=32, lsh_threshold=0.5))
    index.insert_many([("0", "a b c"), ("1", "a b d"), ("2", "x y z")])
    index.add_to_query_buffer("a b c")  # type: ignore[attr-defined]
    assert set(index.collect_query_buffer()) == set(index.query("a b c"))  # type: ignore[attr-defined]


def test_remove(solr):
    index = with_a_and_b(solr)
    tokens = band_tokens(solr, "a")
    index.remove("a")
    # datasketch: "a" not in lsh.keys (its key storage, an attribute). keys() is a method here.
    assert "a" not in index and "a" not in set(index.keys())
    for token in tokens:
        assert "a" not in holders_of_band(solr, token)
    assert all(holders_of_band(solr, token) for token in band_tokens(solr, "b"))  # "b"'s tables still hold it
    with pytest.raises(ValueError):
        index.remove("c")
    with pytest.raises(DocumentNotFoundError):  # also a KeyError, as before
        index.remove("c")


def test_pickle(solr):
    index = with_a_and_b(solr)
    index2 = pickle.loads(pickle.dumps(index))
    assert "a" in index2.query("a")
    assert "b" in index2.query("b")


def _refused_storage_config(client: SolrClient) -> None:
    """datasketch's Redis tests pass storage_config; here the storage is the Solr collection, and the argument is
    refused naming it. The tests then run their checks on two NearDupIndex objects over one collection, which is
    what an external store gives: a shared index."""
    with pytest.raises(ParameterTypeError, match=r"NearDupIndex\(SolrClient\("):
        NearDupIndex(client, threshold=0.5, storage_config={"type": "redis",
                                                             "redis": {"host": "localhost", "port": 6379}})


def test_insert_redis(solr, solr_url):
    _refused_storage_config(solr)
    with_a_and_b(solr)
    shared = tiny_index(SolrClient(solr_url))
    assert_like_test_insert(solr, shared, ("a", "b"))


def test_query_redis(solr, solr_url):
    _refused_storage_config(solr)
    with_a_and_b(solr)
    shared = tiny_index(SolrClient(solr_url))
    shared.flush()  # another client's inserts: visible to its searches once committed (within commit_within_ms)
    assert "a" in shared.query("a")
    assert "b" in shared.query("b")


@pytest.mark.xfail(strict=True, raises=AttributeError, reason=NO_QUERY_BUFFER)
def test_query_buffer_redis(solr, solr_url):
    _refused_storage_config(solr)
    with_a_and_b(solr)
    shared = tiny_index(SolrClient(solr_url))
    shared.add_to_query_buffer("a")  # type: ignore[attr-defined]
    assert "a" in shared.collect_query_buffer()  # type: ignore[attr-defined]


def test_insertion_session(solr):
    index = tiny_index(solr)
    data = [("a", "a"), ("b", "b")]
    with index.insertion_session() as session:
        for key, text in data:
            session.insert(key, text)
    assert_like_test_insert(solr, index, ("a", "b"))


def test_deletion_session(solr):
    index = tiny_index(solr)
    for key in "abc":
        index.insert(key, key)
    keys_to_delete = ["a", "b"]
    with index.deletion_session() as session:
        for key in keys_to_delete:
            session.remove(key)
    keys = set(index.keys())
    assert "a" not in keys and "b" not in keys and "c" in keys
    assert index.query("a") == [] and index.query("c") == ["c"]


@pytest.mark.xfail(strict=True, raises=AttributeError, reason=NO_GET_COUNTS)
def test_get_counts(solr):
    index = with_a_and_b(solr)
    counts = index.get_counts()  # type: ignore[attr-defined]
    assert len(counts) == index.searcher.settings.lsh_params().bands


@pytest.mark.xfail(strict=True, raises=AttributeError, reason=NO_MERGE)
def test_merge(solr):
    index = with_a_and_b(solr)
    other = NearDupIndex(solr, threshold=0.5, settings=TINY, dataset="other")
    other.insert("c", "c")
    index.merge(other)  # type: ignore[attr-defined]


@pytest.mark.xfail(strict=True, raises=AttributeError, reason=NO_MERGE)
def test_merge_redis(solr):
    _refused_storage_config(solr)
    index = with_a_and_b(solr)
    index.merge(tiny_index(solr))  # type: ignore[attr-defined]


def test_redis_deletion_session(solr, solr_url):
    _refused_storage_config(solr)
    index = tiny_index(solr)
    for key in "abc":
        index.insert(key, key)
    shared = tiny_index(SolrClient(solr_url))
    with shared.deletion_session() as session:
        for key in ["a", "b"]:
            session.remove(key)
    assert "a" not in index and "b" not in index and "c" in index
    for token in band_tokens(solr, "c"):
        assert holders_of_band(solr, token) <= {"c"}


# --------------------------------------------------------------------------------------------------------------
# TestWeightedMinHashLSH: datasketch's WeightedMinHash sets. What does not depend on the sketch (init, remove,
# pickle) runs with texts of random words; inserting or querying a weighted set is a documented difference.


def _random_texts(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(f"t{rng.randint(1, 10)}" for _ in range(10)) for _ in range(count)]


def test_weighted_init(solr):
    index = NearDupIndex(solr, threshold=0.8)
    assert index.is_empty()
    with pytest.raises(ParameterTypeError, match="datasketch's MinHashLSH"):
        NearDupIndex(solr, threshold=0.8, weights=(0.2, 0.8))


@pytest.mark.xfail(strict=True, raises=ParameterTypeError, reason=NO_WEIGHTED_SETS)
def test_weighted__H(solr):
    signature = WeightedMinHash(num_hashes=128, seed=1).signature({"t1": 2.0, "t2": 0.5})
    NearDupIndex(solr).insert("m", signature)  # type: ignore[arg-type]


@pytest.mark.xfail(strict=True, raises=ParameterTypeError, reason=NO_WEIGHTED_SETS)
def test_weighted_insert(solr):
    signature = WeightedMinHash(num_hashes=4, seed=1).signature({"t1": 2.0, "t2": 0.5})
    NearDupIndex(solr, threshold=0.5).insert("a", signature)  # type: ignore[arg-type]


@pytest.mark.xfail(strict=True, raises=ParameterTypeError, reason=NO_WEIGHTED_SETS)
def test_weighted_query(solr):
    index = NearDupIndex(solr, threshold=0.5)
    index.insert("a", "t1 t2 t3")
    index.query(WeightedMinHash(num_hashes=4, seed=1).signature({"t1": 2.0}))  # type: ignore[arg-type]


def test_weighted_remove(solr):
    index = NearDupIndex(solr, threshold=0.5, settings=IndexSettings(ngram=1, num_hashes=4, lsh_threshold=0.5))
    first, second = _random_texts(2, seed=3)
    index.insert("a", first)
    index.insert("b", second)
    index.remove("a")
    assert "a" not in set(index.keys()) and "b" in index
    with pytest.raises(ValueError):
        index.remove("c")


def test_weighted_pickle(solr):
    index = NearDupIndex(solr, threshold=0.5, settings=IndexSettings(ngram=1, num_hashes=4, lsh_threshold=0.5))
    first, second = _random_texts(2, seed=4)
    index.insert("a", first)
    index.insert("b", second)
    index2 = pickle.loads(pickle.dumps(index))
    assert "a" in index2.query(first)
    assert "b" in index2.query(second)
