"""The person-record generator's corruption profiles (benchmarks/persons.py): the hard profile corrupts as its
docstring says, deterministically, and the standard profile did not change."""

from __future__ import annotations

import hashlib
import json
import re

import pytest

from benchmarks.persons import generate


def _digest(rows, truth) -> str:
    return hashlib.sha256(json.dumps([rows, truth], sort_keys=True).encode()).hexdigest()


def test_the_standard_profile_is_the_generator_before_profiles():
    # Recorded from the generator before the profiles existed (commit f1d95c6, generate(500, seed=3)).
    assert _digest(*generate(500, seed=3)) == _digest(*generate(500, seed=3, profile="standard")) == STANDARD_500_SEED_3


def test_the_hard_profile_is_deterministic_and_harder():
    rows, truth = generate(3000, seed=11, profile="hard")
    assert _digest(rows, truth) == _digest(*generate(3000, seed=11, profile="hard"))
    by_id = {r["id"]: r for r in rows}
    seconds = [by_id[b] for _, b in truth]
    texts = " ".join(r["text"] for r in seconds)
    assert re.search(r"\b\d{2}\.\d{2}\.\d{4}\b", texts)  # 07.03.1984
    assert re.search(r"\b(January|February|March|April|May|June|July|August|September|October|November|December) "
                     r"\d{1,2}, \d{4}\b", texts)
    assert re.search(r"\b\d{1,2} [A-Z][a-z]{2} \d{2}\b", texts)  # 7 Mar 84
    assert sum(1 for r in seconds if not r["born"]) > 0.02 * len(seconds)  # dates of birth left out
    # More of the pairs differ in several places than with the standard profile.
    assert _share_far_apart(rows, truth) > _share_far_apart(*generate(3000, seed=11)) + 0.1


def _share_far_apart(rows, truth) -> float:
    by_id = {r["id"]: r["name"] for r in rows}
    return sum(_edits(by_id[a], by_id[b]) >= 3 for a, b in truth) / len(truth)


def _edits(a: str, b: str) -> int:
    from rapidfuzz.distance import Levenshtein

    return Levenshtein.distance(a, b)


def test_an_unknown_profile_is_refused():
    with pytest.raises(ValueError, match="profile"):
        generate(10, profile="worst")


STANDARD_500_SEED_3 = "f7e893e9dd682c05614fc21d557f7a722a822471aeb8daec3e5108e4d8a406fb"
