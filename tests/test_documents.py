"""Document building: the lean NumPy path and the full path produce the same fields."""

from __future__ import annotations

import random

import pytest

from neardup_solr.documents import DocumentBuilder, IndexSettings, decode_signatures, encode_signature

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
