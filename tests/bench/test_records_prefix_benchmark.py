"""benchmarks/records_prefix.py on a few hundred hard person records: both queries find the true pairs, and the
prefix query's candidates are a subset of those of the query of every token (it can only lose a candidate that
more than the read rows outrank), with the same matches here."""

from __future__ import annotations

import pytest

from benchmarks.persons import generate
from benchmarks.records_fs import PERSON_FIELDS
from benchmarks.records_prefix import compare

pytestmark = [pytest.mark.solr, pytest.mark.slow]


def test_the_prefix_query_keeps_the_matches_of_the_query_of_every_token(solr):
    rows, truth = generate(400, seed=13, profile="hard")
    result = compare(solr, rows, None, truth, PERSON_FIELDS)
    prefix, every = result["prefix"], result["every_token"]
    assert result["indexed"] == 400 and result["candidates_only_with_prefix"] == 0
    assert prefix["recall"] >= 0.95 and every["recall"] >= 0.95
    assert prefix["true_positives"] == every["true_positives"] and result["true_pairs_lost"] == 0
