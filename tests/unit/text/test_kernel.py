"""The compiled signing kernel gives the NumPy path's values bit for bit: on random Unicode, for every normaliser
version and option and both units, and against signatures stored before the kernel existed."""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import threading

import mmh3
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup_solr.errors import InvalidTextError
from neardup_solr.text import MinHash, Normalizer, Shingler, kernel
from repo_paths import DATA

# Where a C compiler exists, setup.sh's pip install builds the kernel: its absence is then a failure, not a skip.
pytestmark = pytest.mark.skipif(shutil.which("cc") is None and not kernel.available(),
                                reason=f"no C compiler, so no compiled kernel: {kernel.describe()}")

NORMALIZERS = [Normalizer(1), Normalizer(2), Normalizer(2, fold_diacritics=True), Normalizer(2, fold_digits=True),
               Normalizer(2, fold_diacritics=True, fold_digits=True), Normalizer(3), Normalizer(3, fold_diacritics=True),
               Normalizer(3, fold_digits=True), Normalizer(3, fold_diacritics=True, fold_digits=True)]
UNITS = [("word", 3), ("word", 1), ("word", 5), ("char", 3), ("char", 1)]
# Characters that exercise every branch of the normalisers: entities, capitals, punctuation, every kind of space,
# format characters, combining marks, compatibility forms, digits of other scripts, surrogates, astral letters.
ALPHABET = list("aAzZ09 -.,;'&#!\t\n\x00\x1f\x7f") + [
    "&amp;", "&lt;", "&#233;", "\u00e9", "e\u0301", "\u00c9", "\u00df", "\u1e9e", "\u03a3", "\u03c2", "\u0390",
    "\u0416", "\u00a0", "\u2028", "\u2029", "\u1680", "\u3000", "\u2003", "\u200b", "\u200d", "\u00ad", "\ufeff",
    "\ufb01", "\uff21", "\uff11", "\u0661", "\u2460", "\u210c", "\u2019", "\u201c", "\u2014", "\u0e2a", "\u0e31",
    "\ud800", "\U0001f600", "\U0001d400", "\u0130", "\u01c5", "\u0085", "\u212a", "\u1100\u1161", "\u0345",
    "\u0301", "\u0308", "\u03a3 ", "\u00c5",
]


def _numpy(fn):
    """Run ``fn`` with the kernel switched off: the reference path."""
    import os
    os.environ[kernel.FORCE_NUMPY_ENV] = "numpy"
    try:
        return fn()
    finally:
        del os.environ[kernel.FORCE_NUMPY_ENV]


def _assert_hashes_as_the_numpy_path(texts: list[str], shingler: Shingler) -> np.ndarray:
    """The kernel's shingle hashes of ``texts`` equal the NumPy path's; returns the offsets."""
    hashes, offsets = kernel.hashes(texts, shingler.kernel_arguments())
    want_hashes, want_offsets = _numpy(lambda: shingler._numpy_batch_hashes(texts))
    assert np.array_equal(offsets, want_offsets) and np.array_equal(hashes, want_hashes)
    return offsets


def _random_texts(rng: random.Random, count: int) -> list[str]:
    texts = []
    for _ in range(count):
        pieces = rng.choices(ALPHABET, k=rng.randint(0, 60))
        # Plain ASCII words too, so the kernel's own ASCII path and the shared prepare both run.
        texts.append(" ".join(pieces) if rng.random() < 0.3 else "".join(pieces))
    texts += ["Art's Deli 12224 Ventura Blvd. Studio City", "the   cat,, sat -- on the mat!!", "A&amp;B co",
              "x" * 300, "a " * 200, "12 345 6,7"]
    return texts


@pytest.mark.parametrize("normalizer", NORMALIZERS, ids=repr)
@pytest.mark.parametrize("unit,ngram", UNITS)
def test_hashes_and_signatures_equal_the_numpy_path_on_random_unicode(normalizer, unit, ngram):
    rng = random.Random(hash((repr(normalizer), unit, ngram)) & 0xFFFF)
    texts = _random_texts(rng, 300)
    shingler = Shingler(ngram=ngram, unit=unit, normalizer=normalizer)
    minhash = MinHash(num_hashes=32, seed=3, shingler=shingler)
    offsets = _assert_hashes_as_the_numpy_path(texts, shingler)
    signable = [t for t, a, b in zip(texts, offsets[:-1], offsets[1:]) if b > a]
    assert len(signable) > 200
    assert np.array_equal(minhash.signatures(signable), _numpy(lambda: minhash.signatures(signable)))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(max_size=80), min_size=1, max_size=5),
       st.sampled_from(NORMALIZERS), st.sampled_from(UNITS))
def test_any_text_hashes_as_the_numpy_path(texts, normalizer, unit_ngram):
    _assert_hashes_as_the_numpy_path(texts, Shingler(ngram=unit_ngram[1], unit=unit_ngram[0], normalizer=normalizer))


@settings(max_examples=400, deadline=None)
@given(st.lists(st.lists(st.sampled_from(ALPHABET + ["word", "Word", " "] * 8), max_size=40).map("".join),
                min_size=1, max_size=4),
       st.sampled_from(NORMALIZERS), st.sampled_from(UNITS))
def test_mostly_ascii_text_with_islands_hashes_as_the_numpy_path(texts, normalizer, unit_ngram):
    # Combining marks right after ASCII letters, compatibility forms and case folding that yields ASCII: the
    # places where normalising island by island could part from normalising the whole text.
    _assert_hashes_as_the_numpy_path(texts, Shingler(ngram=unit_ngram[1], unit=unit_ngram[0], normalizer=normalizer))


def test_signatures_stored_before_the_kernel_are_reproduced():
    stored = json.loads((DATA / "signatures-before-kernel.json").read_text())
    texts = stored["texts"]
    for config in stored["configs"]:
        normalizer = (Normalizer(1) if config["version"] == 1 else
                      Normalizer(2, config["fold_diacritics"], config["fold_digits"]))
        minhash = MinHash(num_hashes=64, seed=7,
                          shingler=Shingler(ngram=config["ngram"], unit=config["unit"], normalizer=normalizer))
        signatures = minhash.signatures([texts[i] for i in config["kept"]])
        digests = [hashlib.blake2b(bytes(np.asarray(row, dtype="<u4")), digest_size=8).hexdigest()
                   for row in signatures]
        assert digests == config["signature_digests"], config


def test_murmur3_is_mmh3():
    rng = random.Random(1)
    for length in range(0, 40):
        data = bytes(rng.getrandbits(8) for _ in range(length))
        for seed in (0, 42, 0xFFFFFFFF):
            assert kernel._kernel.murmur3(data, seed) == mmh3.hash(data, seed, False)


def test_a_text_without_shingles_is_named_and_bad_input_is_refused():
    minhash = MinHash()
    with pytest.raises(InvalidTextError, match="index 1"):
        minhash.signatures(["a real text", " ... !!! "])
    with pytest.raises(TypeError, match="index 1 is a bytes"):
        minhash.signatures(["fine", b"bytes"])
    with pytest.raises(TypeError, match="must return a str"):
        kernel.hashes(["caf\u00e9"], (lambda text: 1, None, True, True, 3, 42))


def test_threads_signing_at_once_get_their_own_results():
    # The normaliser's Python code runs inside the kernel call, where another thread can take over.
    minhash = MinHash()
    texts = [f"caf\u00e9 number {i} with some words \u2019{i % 7}" for i in range(3000)]
    want = minhash.signatures(texts)
    results: list = [None] * 4

    def sign(k: int) -> None:
        results[k] = minhash.signatures(texts)

    threads = [threading.Thread(target=sign, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(np.array_equal(r, want) for r in results)


def test_the_fallback_is_used_when_switched_off():
    assert kernel.describe() == "compiled kernel"
    assert _numpy(kernel.describe).startswith("numpy")


@pytest.mark.parametrize("normalizer", NORMALIZERS[:2], ids=repr)
def test_hashes_and_signatures_in_one_pass_equal_the_two_calls(normalizer):
    texts = [t for t in _random_texts(random.Random(5), 200)
             if Shingler(normalizer=normalizer)._numpy_batch_hashes([t])[0].size]
    minhash = MinHash(num_hashes=16, shingler=Shingler(normalizer=normalizer))
    hashes, offsets, signatures = minhash.hashes_and_signatures(texts)
    want_hashes, want_offsets = _numpy(lambda: minhash.shingler.batch_hashes(texts))
    assert np.array_equal(hashes, want_hashes) and np.array_equal(offsets, want_offsets)
    assert np.array_equal(signatures, _numpy(lambda: minhash.signatures(texts)))
    assert signatures.seed == minhash.seed


def test_sets_already_hashed_sign_as_the_numpy_path():
    rng = np.random.default_rng(3)
    sets = [rng.integers(0, 1 << 32, size=int(n), dtype=np.uint32) for n in rng.integers(1, 400, size=300)]
    minhash = MinHash(num_hashes=64, seed=11)
    assert np.array_equal(minhash.signatures_from_hashes(sets), _numpy(lambda: minhash.signatures_from_hashes(sets)))
    one = minhash.signature_from_hashes(sets[0])
    assert np.array_equal(one, _numpy(lambda: minhash.signature_from_hashes(sets[0])))
    assert np.array_equal(minhash.signature("Art's Deli Ventura Blvd"),
                          _numpy(lambda: minhash.signature("Art's Deli Ventura Blvd")))
    with pytest.raises(ValueError, match="offsets"):
        kernel.sign_hashes(sets[0], np.array([0, 10_000]), minhash.masks)


@pytest.mark.parametrize("modulus", [1, 2, 7])
def test_distinct_hex_is_the_numpy_paths(modulus):
    from neardup_solr.text.shingles import joined_hash_tokens

    rng = np.random.default_rng(modulus)
    # Small values repeat (duplicates to drop), large ones cover every hex length up to ffffffff.
    sets = [rng.integers(0, rng.choice([20, 1 << 32]), size=int(n), dtype=np.uint32)
            for n in rng.integers(0, 300, size=200)]
    sets[0] = np.array([0, 0xFFFFFFFF, 0, 16], dtype=np.uint32)
    hashes = np.concatenate(sets)
    offsets = np.concatenate([[0], np.cumsum([len(x) for x in sets])]).astype(np.int64)
    joined, counts = joined_hash_tokens(hashes, offsets, modulus)
    assert (joined, counts.tolist()) == _numpy(lambda: (lambda j, c: (j, c.tolist()))(
        *joined_hash_tokens(hashes, offsets, modulus)))
    if modulus == 1:
        assert joined[0] == "0 ffffffff 10" and counts[0] == 3
    with pytest.raises(ValueError, match="offsets"):
        kernel.distinct_hex(sets[1], np.array([0, 10_000]), 1)


@pytest.mark.parametrize("fields,sample_mod,form", [(("shingles", "minhash", "lsh", "words"), 1, "text"),
                                                    (("shingles", "minhash", "lsh", "words", "grams"), 3, "text"),
                                                    (("shingles", "lsh", "words"), 1, "hash"),
                                                    (("shingles", "lsh", "words", "grams"), 3, "hash"),
                                                    (("lsh",), 1, "hash"), (("minhash", "lsh"), 1, "hash")])
@pytest.mark.parametrize("path", ["kernel", "numpy"])
def test_a_batch_builds_the_documents_one_text_at_a_time_would(fields, sample_mod, form, path):
    from neardup_solr.solr.documents import DocumentBuilder, IndexSettings

    builder = DocumentBuilder(IndexSettings(fields=fields, sample_mod=sample_mod, shingle_tokens=form))
    texts = [t for t in _random_texts(random.Random(9), 150) if t.strip()]
    items = [(f"d{i}", t) for i, t in enumerate(texts)]
    built = builder.build(items, dataset="set") if path == "kernel" else _numpy(lambda: builder.build(items, "set"))
    by_id = {doc["id"]: doc for doc in built.documents}
    assert len(by_id) > 100 and len(by_id) + len(built.rejected) == len(items)
    for doc_id, text in items:
        if doc_id not in by_id:
            continue
        processed = builder.process(text)
        one = builder.build_prepared(doc_id, text, processed,
                                     _numpy(lambda: builder.minhash.signature_from_hashes(processed.shingle_hashes)),
                                     "set")
        assert by_id[doc_id] == one, doc_id


@pytest.mark.parametrize("normalizer", NORMALIZERS, ids=repr)
def test_the_normalised_texts_the_kernel_hands_back_are_the_normalisers(normalizer):
    rng = random.Random(hash(repr(normalizer)) & 0xFFFF)
    texts = [t for t in _random_texts(rng, 300) if "\ud800" not in t]  # a lone surrogate cannot be UTF-8
    shingler = Shingler(ngram=3, unit="word", normalizer=normalizer)
    normalised: list[str] = []
    kernel.hashes_and_signatures(texts, shingler.kernel_arguments(), MinHash(num_hashes=8, shingler=shingler).masks,
                                 normalised=normalised)
    assert normalised == [normalizer.normalize(t) for t in texts]
    with pytest.raises(TypeError, match="normalised must be a list"):
        kernel.hashes_and_signatures(texts, shingler.kernel_arguments(), np.zeros(8, np.uint32), normalised=())


def test_the_lean_fields_reject_what_the_other_path_rejects_in_input_order():
    from neardup_solr.signing.builder import NO_WORDS_LEFT, DocumentBuilder
    from neardup_solr.signing.settings import IndexSettings

    items = [("a", "!!!"), ("", "no id"), ("c", "the cat sat on the mat"), ("d", " \t "), ("e", None),
             ("f", "the cat sat on a mat")]
    lean = DocumentBuilder(IndexSettings(fields=("lsh",))).build(items)
    full = DocumentBuilder(IndexSettings(fields=("shingles", "lsh", "words"))).build(items)
    assert lean.rejected == full.rejected
    assert [index for index, _ in lean.rejected] == [0, 1, 3, 4]
    assert lean.rejected[0][1] == NO_WORDS_LEFT
    assert [d["id"] for d in lean.documents] == ["c", "f"]
    shared = set(lean.documents[0]) & set(full.documents[0])
    assert {k: lean.documents[0][k] for k in shared} == {k: full.documents[0][k] for k in shared}
