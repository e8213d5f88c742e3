"""Shingles indexed as hashes (the default since shingle_tokens="hash") answer exactly what shingles indexed as
text answer, and collections indexed as text keep working: their stored settings say so."""

from __future__ import annotations

import json

import pytest

from neardup_solr.engine.threshold import ThresholdFinder, threshold_pairs
from neardup_solr.errors import ForeignCollectionError
from neardup_solr.io.restaurants import prepare_default
from neardup_solr.solr.documents import (
    META_DATASET,
    SETTINGS_DOC_ID,
    WRITE_UP_TOKEN_FIELDS,
    IndexSettings,
    read_index_settings,
)
from neardup_solr.solr.indexer import Indexer
from neardup_solr.solr.maintenance import require_token_fields
from neardup_solr.solr.searcher import Searcher

pytestmark = pytest.mark.solr


@pytest.fixture(scope="module")
def restaurants(tmp_path_factory):
    path = tmp_path_factory.mktemp("restaurants") / "addresses.txt"
    prepare_default(path)
    return [tuple(line.split(" ", 1)) for line in path.read_text(encoding="utf-8").splitlines()]  # "id text"


def _answers(solr, records, form: str) -> dict:
    solr.delete_all()
    Indexer(solr, IndexSettings(shingle_tokens=form, fields=WRITE_UP_TOKEN_FIELDS)).index_records(records)
    searcher = Searcher(solr)
    assert searcher.settings.shingle_tokens == form
    lookups = {doc_id: [(m.id, m.score, m.jaccard, m.edit_distance) for m in
                        searcher.find_near_dups(doc_id, max_edit_distance=None, min_jaccard=None, rows=20)]
               for doc_id, _ in records}
    shares = {doc_id: searcher.find_by_shingle_share(text, 0.3) for doc_id, text in records[:200]}
    pairs = threshold_pairs(ThresholdFinder(searcher, threshold=0.5), strategy="queries")
    return {"lookups": lookups, "shares": shares,
            "pairs": sorted((p.id, p.neighbor_id, round(p.similarity, 12)) for p in pairs)}


def test_hashed_shingles_answer_every_shingle_query_as_text_shingles_do(solr, restaurants):
    hashed, text = _answers(solr, restaurants, "hash"), _answers(solr, restaurants, "text")
    assert sum(map(len, hashed["lookups"].values())) > 2000 and len(hashed["pairs"]) > 50
    assert hashed == text


def test_a_collection_stored_before_the_hash_form_keeps_its_text_shingles(solr, restaurants):
    old = IndexSettings(fields=WRITE_UP_TOKEN_FIELDS, shingle_tokens="text")
    Indexer(solr, old).index_records(restaurants[:400])
    # Stored as a version without shingle_tokens stored it.
    stored = {k: v for k, v in json.loads(old.to_json()).items() if k != "shingle_tokens"}
    solr.add([{"id": SETTINGS_DOC_ID, "dataset": META_DATASET, "content": json.dumps(stored)}])
    solr.commit()
    assert read_index_settings(solr) == old
    Indexer(solr).index_records(restaurants[400:])  # no settings given: the collection's own
    hits = solr.select({"q": "content_ng:*", "rows": 0})["response"]["numFound"]
    assert hits == len(restaurants) and solr.select({"q": "content_nh:*", "rows": 0})["response"]["numFound"] == 0
    found = Searcher(solr).find_near_dups("3", max_edit_distance=None, min_jaccard=0.3)
    assert "536" in [m.id for m in found]  # the write-up's pair, one document from each run


class _SchemaWithout:
    """A collection made from an older configset: every field but ``missing``."""

    url = "http://solr.example/solr/old"

    def __init__(self, client, missing: str):
        self.fields = {k: v for k, v in client.schema_fields().items() if k != missing}

    def schema_fields(self):
        return self.fields


def test_an_older_schema_without_the_hash_field_is_refused_before_anything_is_written(solr):
    old_schema = _SchemaWithout(solr, "content_nh")
    with pytest.raises(ForeignCollectionError, match=r"no field 'content_nh' \('shingles' tokens\).*older neardup"):
        require_token_fields(old_schema, IndexSettings())
    require_token_fields(old_schema, IndexSettings(shingle_tokens="text"))  # what such a collection was made for
    require_token_fields(old_schema, IndexSettings(fields=("lsh", "words")))


def test_flags_that_differ_from_a_text_form_collection_are_refused_with_the_flags_that_keep_it(solr, solr_url,
                                                                                              tmp_path, capsys):
    from neardup_solr.cli import main as cli

    Indexer(solr, IndexSettings(fields=WRITE_UP_TOKEN_FIELDS, shingle_tokens="text")).index_records(
        [("1", "a text indexed the way collections were before")])
    more = tmp_path / "more.txt"
    more.write_text("2 another text for the same collection\n", encoding="utf-8")
    base = ["index", str(more), "--format", "lines", "--solr-url", solr_url, "-q"]
    assert cli(base + ["--ngram", "3"]) == 2
    err = capsys.readouterr().err
    assert "differ in fields, shingle_tokens" in err
    assert "--fields shingles,minhash,lsh,words --shingle-tokens text" in err
    assert cli(base + ["--ngram", "3", "--fields", "shingles,minhash,lsh,words", "--shingle-tokens", "text"]) == 0
    assert cli(base) == 0  # no settings flags: the collection's own
    assert solr.count() == 3
