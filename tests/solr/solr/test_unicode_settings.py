"""The Unicode version a collection is signed with, recorded in its settings and checked (issue 35, point 2):
version 3 records the pinned one; a version 1 or 2 collection records the Python's of its first writer, refuses a
writer whose Python has another Unicode unless told, and warns on lookups; Spark executors refuse to sign with
another Unicode than the driver's."""

from __future__ import annotations

import json
import logging
import unicodedata
from dataclasses import replace

import pytest

from neardup_solr import IndexSettings, Indexer, Searcher
from neardup_solr.errors import InvalidParameterError, SettingsConflictError, SignatureDisagreementError
from neardup_solr.solr.documents import (
    ALLOW_UNICODE_MISMATCH_ENV,
    SETTINGS_DOC_ID,
    UNICODE_NOT_RECORDED,
    read_index_settings,
    unicode_mismatch,
)
from neardup_solr.solr.maintenance import clear
from neardup_solr.spark.signing import document_builder
from neardup_solr.text.pinned_unicode import PINNED_UNICODE_VERSION

MINE = unicodedata.unidata_version
# A Unicode version no supported Python has, so it differs from this one's whatever runs the tests.
OTHER = "12.1.0"
RECORDS = [("1", "Art's Deli 12224 Ventura Blvd. Studio City"), ("2", "Arts Deli 12224 Ventura Blvd Studio City"),
           ("3", "Hotel Bel-Air 701 Stone Canyon Rd. Bel Air")]


def test_settings_carry_the_unicode_version_they_sign_with():
    assert IndexSettings().signed_here().unicode_version == PINNED_UNICODE_VERSION
    assert IndexSettings(normalizer_version=2).signed_here().unicode_version == MINE
    assert IndexSettings(normalizer_version=2, unicode_version=OTHER) == IndexSettings(normalizer_version=2)
    with pytest.raises(InvalidParameterError, match="unicode_version"):
        IndexSettings(unicode_version=OTHER)  # version 3's is pinned
    stored = json.loads(IndexSettings(normalizer_version=2).signed_here().to_json())
    assert stored["unicode_version"] == MINE
    assert IndexSettings.from_json(json.dumps(stored)).unicode_version == MINE
    del stored["unicode_version"]
    assert IndexSettings.from_json(json.dumps(stored)).unicode_version == UNICODE_NOT_RECORDED
    # Not filled in by itself: settings copied to another normaliser version would carry the wrong one.
    assert IndexSettings().unicode_version is None


def test_a_mismatch_is_said_for_versions_1_and_2_only():
    assert unicode_mismatch(IndexSettings(normalizer_version=2)) == ""
    assert unicode_mismatch(IndexSettings(normalizer_version=2, unicode_version=UNICODE_NOT_RECORDED)) == ""
    why = unicode_mismatch(IndexSettings(normalizer_version=1, unicode_version=OTHER))
    assert f"Unicode {OTHER}" in why and f"Unicode {MINE}" in why and "normaliser version 3" in why


def test_a_spark_executor_with_another_unicode_refuses_to_sign():
    document_builder(IndexSettings(normalizer_version=2))
    with pytest.raises(SignatureDisagreementError, match=f"Unicode {OTHER}"):
        document_builder(IndexSettings(normalizer_version=2, unicode_version=OTHER))


def _store(solr, settings: IndexSettings, **changes) -> None:
    data = json.loads(settings.to_json())
    data.update(changes)
    data = {k: v for k, v in data.items() if v is not None}
    solr.add([{"id": SETTINGS_DOC_ID, "dataset": "__meta__", "content": json.dumps(data)}])
    solr.commit()


@pytest.mark.solr
def test_a_version_3_collection_records_the_pinned_unicode(solr):
    Indexer(solr).index_records(RECORDS)
    assert read_index_settings(solr).unicode_version == PINNED_UNICODE_VERSION
    # Emptied and indexed again with version 2 from settings copied off the version-3 ones: the writer's own
    # Unicode is recorded, not the copied one.
    clear(solr, everything=True)
    Indexer(solr, replace(read_index_settings(solr) or IndexSettings(), normalizer_version=2)).index_records(RECORDS)
    assert read_index_settings(solr).unicode_version == MINE


@pytest.mark.solr
def test_a_version_2_collection_records_its_first_writers_unicode_and_refuses_another(solr, caplog, monkeypatch):
    settings = IndexSettings(normalizer_version=2)
    Indexer(solr, settings).index_records(RECORDS[:1])
    _store(solr, settings, unicode_version=None)  # as stored before the version was recorded
    assert read_index_settings(solr).unicode_version == UNICODE_NOT_RECORDED
    Indexer(solr, settings).index_records(RECORDS[1:2])
    assert read_index_settings(solr).unicode_version == MINE

    # Signed by a Python with another Unicode: writing is refused, nothing is added; lookups warn once.
    _store(solr, settings, unicode_version=OTHER)
    with pytest.raises(SettingsConflictError, match=f"Unicode {OTHER}.*{ALLOW_UNICODE_MISMATCH_ENV}"):
        Indexer(solr, settings).index_records(RECORDS[2:])
    solr.commit()
    assert solr.count("id:3") == 0
    with caplog.at_level(logging.WARNING, logger="neardup_solr.solr.documents"):
        first = Searcher(solr).find_near_dups_of_text(RECORDS[0][1], min_jaccard=0.0)
        Searcher(solr).find_near_dups_of_text(RECORDS[0][1], min_jaccard=0.0)
    warnings = [r.getMessage() for r in caplog.records if f"Unicode {OTHER}" in r.getMessage()]
    assert len(warnings) == 1 and "duplicates are missed" in warnings[0]
    assert {m.id for m in first} >= {"1", "2"}

    # Told to write all the same: it does, with a warning, and the recorded version stays.
    monkeypatch.setenv(ALLOW_UNICODE_MISMATCH_ENV, "1")
    Indexer(solr, settings).index_records(RECORDS[2:])
    solr.commit()
    assert solr.count("id:3") == 1 and read_index_settings(solr).unicode_version == OTHER


@pytest.mark.slow
def test_a_spark_job_whose_executors_have_another_unicode_fails_with_that_reason(spark):
    """On the session's SparkSession (``spark`` in tests/conftest.py; this module shares the Spark modules'
    worker)."""
    from neardup_solr.pairs.lsh import LSHParams
    from neardup_solr.spark import sign

    records = spark.createDataFrame(RECORDS, "id string, text string")
    # The driver's settings say Unicode OTHER (as a driver on another Python, or the collection, would):
    # the executor, on this Python, refuses to sign.
    settings = IndexSettings(normalizer_version=2, unicode_version=OTHER)
    with pytest.raises(Exception, match=f"SignatureDisagreementError.*Unicode {OTHER}"):
        sign(records, settings, LSHParams(8, 4)).collect()
    signed = sign(records, IndexSettings(normalizer_version=2), LSHParams(8, 4)).collect()
    assert len(signed) == 3 and all(row.problem is None for row in signed)
