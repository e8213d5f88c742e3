"""TokenSets: documents' tokens as ordinals, and weighted Jaccard over them equal to the string form's."""

import random

import numpy as np

from neardup_solr.pairs.token_sets import TokenSets
from neardup_solr.pairs.weighted import weighted_jaccard


def test_documents_keep_their_distinct_tokens_in_first_seen_order():
    sets = TokenSets()
    assert sets.add(["b", "a", "b"]) == 0
    assert sets.add([]) == 1
    assert sets.add(["c", "a"]) == 2
    assert len(sets) == 3
    assert sets.vocabulary == ["b", "a", "c"]
    assert [sets.tokens(d) for d in range(3)] == [["b", "a"], [], ["c", "a"]]
    ordinals, offsets = sets.arrays()
    assert ordinals.dtype == np.int32 and ordinals.tolist() == [0, 1, 2, 1]
    assert offsets.tolist() == [0, 2, 2, 4]


def test_weighted_jaccards_equal_the_string_form_to_the_last_bit():
    rng = random.Random(7)
    words = [f"w{i}" for i in range(60)]
    weight = {w: rng.choice([0.0, rng.uniform(0.01, 9.0)]) for w in words}
    docs = [rng.sample(words, rng.randint(1, 12)) for _ in range(300)]
    docs += [["w0"], ["w0"]]  # may weigh nothing: equal sets of zero weight are 1.0
    weight["w0"] = 0.0
    sets = TokenSets()
    for doc in docs:
        sets.add(doc)
    a = np.array([rng.randrange(len(docs)) for _ in range(2000)] + [len(docs) - 2])
    b = np.array([rng.randrange(len(docs)) for _ in range(2000)] + [len(docs) - 1])
    got = sets.weighted_jaccards(a, b, [weight[t] for t in sets.vocabulary])
    want = [weighted_jaccard(docs[i], docs[j], weight) for i, j in zip(a.tolist(), b.tolist())]
    assert got.tolist() == want
    assert got[-1] == 1.0


def test_sealed_sets_keep_their_documents_and_refuse_more():
    sets = TokenSets()
    sets.add(["a", "b"])
    sets.seal()
    assert sets.tokens(0) == ["a", "b"] and sets.vocabulary == ["a", "b"]
    import pytest

    with pytest.raises(RuntimeError, match="sealed"):
        sets.add(["c"])
