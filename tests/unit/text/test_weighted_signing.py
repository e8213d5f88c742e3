"""How weighted signatures are computed in bulk (issue 40, point 5): the ICWS signer's temporaries are sized by
its block, not by the batch, and the IDF LSH runs sign from arrays of token ordinals with the signatures the
token -> weight maps give. No Solr: the signers and ``engine.weighted_lsh._sign_into`` on generated tokens."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import neardup_solr.text.weighted as weighted
from neardup_solr.engine.weighted_lsh import _sign_into, signing_weights, weighted_signer
from neardup_solr.pairs.token_sets import TokenSets
from neardup_solr.text.weighted import BoostedMinHash, WeightedMinHash, token_hashes


def _documents(n: int, distinct: int, per_document: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(token hashes, weights, offsets) of n documents of per_document distinct tokens out of ``distinct``, one
    weight per token (as IDF)."""
    rng = np.random.default_rng(seed)
    hashes = token_hashes(f"w{i}" for i in range(distinct))
    weights = rng.exponential(2.0, distinct) + 0.05
    chosen = np.concatenate([rng.choice(distinct, per_document, replace=False) for _ in range(n)])
    offsets = np.arange(0, n * per_document + 1, per_document, dtype=np.int64)
    return hashes[chosen], weights[chosen], offsets


def test_icws_signatures_do_not_depend_on_the_block_size_or_threads(monkeypatch):
    hashes, weights, offsets = _documents(600, 3000, 9, seed=1)
    reference = np.asarray(WeightedMinHash(64, seed=5).signatures_from_arrays(hashes, weights, offsets))
    for block, threads in ((1 << 21, 2), (1 << 10, 1), (1 << 12, 2), (64, 2)):
        monkeypatch.setattr(weighted, "_BLOCK_ELEMENTS", block)
        monkeypatch.setattr(weighted, "SIGNING_THREADS", threads)
        again = WeightedMinHash(64, seed=5).signatures_from_arrays(hashes, weights, offsets)
        assert np.array_equal(np.asarray(again), reference), (block, threads)


def test_icws_temporaries_are_sized_by_the_block_not_the_batch():
    # What a batch must hold: a rank key (8 bytes) and a code (4) per (distinct token, position), and the
    # signatures. Blocks of 2**21 elements added ~200 MiB of temporaries to the 5,000 x 5,000 person-record
    # join's signing (its peak was 286 MiB); blocks that fit the caches add a few MiB whatever the batch.
    k, n = 128, 8000
    hashes, weights, offsets = _documents(n, 30_000, 8, seed=2)
    distinct = np.unique(hashes).size
    needed = 12 * k * distinct + 4 * k * n
    signer = WeightedMinHash(k, seed=3)
    tracemalloc.start()
    try:
        signer.signatures_from_arrays(hashes, weights, offsets)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert needed < peak < needed + (24 << 20), (peak >> 20, needed >> 20)


def test_boosted_signatures_from_arrays_equal_those_of_the_maps():
    hashes, weights, offsets = _documents(50, 400, 6, seed=4)
    tokens = {int(h): f"w{i}" for i, h in enumerate(token_hashes(f"w{i}" for i in range(400)))}
    maps = [{tokens[int(h)]: float(w) for h, w in zip(hashes[a:b], weights[a:b])}
            for a, b in zip(offsets[:-1], offsets[1:])]
    signer = BoostedMinHash(64, seed=2, scale=4)
    assert np.array_equal(np.asarray(signer.signatures_from_arrays(hashes, weights, offsets)),
                          np.asarray(signer.signatures(maps)))


class _Collected:
    """The part of a SignatureStore that _sign_into writes to."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.rows: list[np.ndarray] = []
        self.finished = False

    def append(self, ids, signatures) -> None:
        self.ids.extend(ids)
        self.rows.append(np.asarray(signatures))

    def finish(self) -> None:
        self.finished = True


@pytest.mark.parametrize("scheme", ["icws", "boost"])
def test_signing_from_ordinals_gives_the_signatures_of_the_signing_weight_maps(scheme, monkeypatch):
    # The IDF LSH runs sign ordinals and a weight per ordinal; the Spark jobs sign signing_weights' maps. Both
    # must give the same signatures, zero weights included: a document's tokens of weight 0 are left out, and a
    # document whose tokens all weigh 0 is signed with unit weights.
    rng = np.random.default_rng(9)
    vocabulary = [f"t{i}" for i in range(300)]
    weight_of = {t: (0.0 if i % 7 == 0 else float(rng.exponential(2.0) + 0.01)) for i, t in enumerate(vocabulary)}
    zero = [t for t in vocabulary if weight_of[t] == 0.0]
    documents = [list(dict.fromkeys(rng.choice(vocabulary, int(rng.integers(1, 12))).tolist())) for _ in range(250)]
    documents += [zero[:3], zero[3:4], zero[:3]]  # weights all 0: unit weights, and the twins sign alike
    sets = TokenSets()
    for tokens in documents:
        sets.add(tokens)
    by_ordinal = np.array([weight_of[t] for t in sets.vocabulary])
    signer = weighted_signer(scheme, 64, 11)
    expected = np.asarray(signer.signatures([signing_weights(tokens, weight_of) for tokens in documents]))
    monkeypatch.setattr("neardup_solr.engine.weighted_lsh.SIGN_DOCUMENTS", 40)  # several slices
    store = _Collected()
    ids = [f"d{i}" for i in range(len(documents))]
    _sign_into(store, sets, ids, by_ordinal, signer)  # type: ignore[arg-type]
    assert store.finished and store.ids == ids
    assert np.array_equal(np.concatenate(store.rows), expected)
    assert np.array_equal(expected[-3], expected[-1]) and not np.array_equal(expected[-3], expected[-2])
