"""Document building: the lean NumPy path and the full path produce the same fields."""

from __future__ import annotations

import random

import pytest

from neardup_solr.solr.documents import DocumentBuilder, IndexSettings, decode_signatures, encode_signature

COMMON = ["id", "content", "md5_hash", "num_words", "first_word", "num_shingles", "minhash_sig"]


def _items(n=300, seed=5):
    rng = random.Random(seed)
    vocab = ["alpha", "beta", "Gamma", "delta's", "café", "x-ray", "&amp;", "naïve", "zeta", "eta", "theta"]
    items = []
    for i in range(n):
        k = rng.choice([0, 1, 2, 3, 8, 40])
        items.append((f"d{i}", " ".join(rng.choice(vocab) for _ in range(k)) + rng.choice(["", "!!", " . "])))
    return items


@pytest.mark.parametrize("fields", [(), ("lsh",), ("lsh", "minhash"), ("minhash",)])
def test_lean_path_equals_full_path(fields):
    items = _items()
    lean = DocumentBuilder(IndexSettings(fields=fields)).build(items)
    full = DocumentBuilder(IndexSettings()).build(items)
    assert lean.rejected == full.rejected and lean.rejected  # some texts are empty or punctuation only
    keys = COMMON + [f for f, kind in (("content_lsh", "lsh"), ("content_sg", "minhash")) if kind in fields]
    assert [{k: d[k] for k in keys} for d in lean.documents] == [{k: d[k] for k in keys} for d in full.documents]
    assert all("content_ng" not in d and "content_words" not in d for d in lean.documents)


def test_signature_encoding_round_trips():
    builder = DocumentBuilder(IndexSettings(num_hashes=16))
    docs = builder.build([("a", "one two three four"), ("b", "five six")]).documents
    sigs = decode_signatures([d["minhash_sig"] for d in docs], 16)
    assert [encode_signature(s) for s in sigs] == [d["minhash_sig"] for d in docs]
    assert sigs.shape == (2, 16)


@pytest.mark.parametrize("fields", [("lsh",), ("lsh", "minhash"), ("shingles", "minhash", "lsh", "words"),
                                    ("words",)])
@pytest.mark.parametrize("unit", ["word", "char"])
def test_build_prepared_equals_build(fields, unit):
    """A check adds the document it built from its prepared query: it must be the indexer's, field for field."""
    from neardup_solr.solr.searcher import Searcher
    from neardup_solr.solr.client import SolrClient

    settings = IndexSettings(fields=fields, unit=unit, ngram=3 if unit == "word" else 4)
    builder = DocumentBuilder(settings)
    items = [(i, t) for i, t in _items(120) if t.strip(" .!") and any(c.isalnum() for c in t)]
    built = builder.build(items, dataset="news")
    assert len(built.documents) > 50
    searcher = Searcher(SolrClient("http://127.0.0.1:9/solr/unused"), settings)  # signs only: never connects
    by_id = {d["id"]: d for d in built.documents}
    for doc_id, text in items:
        if doc_id not in by_id:
            continue
        query = searcher.prepare(text, doc_id)
        assert builder.build_prepared(doc_id, text, query.processed, query.signature, "news") == by_id[doc_id]
