"""Document building: every token field and shingle form is spelled the same whatever else is indexed, and a
lookup's prepared document is the indexer's."""

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


EVERY_FIELD = ("shingles", "minhash", "lsh", "words", "grams")


@pytest.mark.parametrize("fields", [(), ("lsh",), ("lsh", "minhash"), ("minhash",), ("shingles", "lsh", "words")])
@pytest.mark.parametrize("form", ["hash", "text"])
def test_a_documents_fields_do_not_depend_on_the_other_token_fields(fields, form):
    items = _items()
    some = DocumentBuilder(IndexSettings(fields=fields, shingle_tokens=form)).build(items)
    every = DocumentBuilder(IndexSettings(fields=EVERY_FIELD, shingle_tokens=form)).build(items)
    assert some.rejected == every.rejected and some.rejected  # some texts are empty or punctuation only
    kinds = {"content_lsh": "lsh", "content_sg": "minhash", "content_words": "words",
             IndexSettings(shingle_tokens=form).token_field("shingles"): "shingles"}
    keys = COMMON + [f for f, kind in kinds.items() if kind in fields]
    assert [{k: d[k] for k in keys} for d in some.documents] == [{k: d[k] for k in keys} for d in every.documents]
    absent = {f for f, kind in kinds.items() if kind not in fields} | {"content_grams"}
    assert all(not absent & set(d) for d in some.documents)


@pytest.mark.parametrize("sample_mod", [1, 3])
@pytest.mark.parametrize("unit", ["word", "char"])
def test_hashed_shingle_tokens_are_the_hashes_of_the_shingle_strings(sample_mod, unit):
    """content_nh holds, for each distinct shingle content_ng would hold, the hex of its hash: the same sets."""
    items = _items()
    text = DocumentBuilder(IndexSettings(shingle_tokens="text", unit=unit, sample_mod=sample_mod)).build(items)
    hashed_builder = DocumentBuilder(IndexSettings(unit=unit, sample_mod=sample_mod))
    hashed = hashed_builder.build(items)
    assert len(text.documents) == len(hashed.documents) > 100
    for t, h in zip(text.documents, hashed.documents):
        expected = {format(hashed_builder.shingler.hash_shingle(s), "x") for s in t["content_ng"]}
        tokens = h["content_nh"].split(" ") if h["content_nh"] else []
        assert len(tokens) == len(set(tokens)) and set(tokens) == expected
        assert h["num_shingles"] == t["num_shingles"]  # no two of these shingles share a hash
        assert {k: v for k, v in h.items() if k != "content_nh"} == {k: v for k, v in t.items() if k != "content_ng"}


def test_signature_encoding_round_trips():
    builder = DocumentBuilder(IndexSettings(num_hashes=16))
    docs = builder.build([("a", "one two three four"), ("b", "five six")]).documents
    sigs = decode_signatures([d["minhash_sig"] for d in docs], 16)
    assert [encode_signature(s) for s in sigs] == [d["minhash_sig"] for d in docs]
    assert sigs.shape == (2, 16)


@pytest.mark.parametrize("fields", [("lsh",), ("lsh", "minhash"), ("shingles", "minhash", "lsh", "words"),
                                    ("words",)])
@pytest.mark.parametrize("unit", ["word", "char"])
@pytest.mark.parametrize("form", ["hash", "text"])
def test_build_prepared_equals_build(fields, unit, form):
    """A check adds the document it built from its prepared query: it must be the indexer's, field for field."""
    from neardup_solr.solr.searcher import Searcher
    from neardup_solr.solr.client import SolrClient

    settings = IndexSettings(fields=fields, unit=unit, ngram=3 if unit == "word" else 4, shingle_tokens=form)
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


@pytest.mark.parametrize("settings", [IndexSettings(), IndexSettings(unit="char", ngram=4),
                                      IndexSettings(fold_diacritics=True, fold_digits=True)])
def test_a_search_words_are_the_indexed_words_without_a_builder(settings):
    """folded_search normalises a user's words with word_tokens(normalizer, text) alone: the same distinct words,
    in order, as the builder indexes into content_words."""
    from neardup_solr.signing.builder import word_tokens

    text = "Café  CAFÉ café 42nd St. — the 42nd street café"
    builder = DocumentBuilder(settings)
    indexed = builder.build([("1", text)]).documents[0]["content_words"]
    assert word_tokens(settings.normalizer(), text) == builder.word_tokens(text) == indexed
