"""The near-duplicate engine against a real Solr, on the write-up's restaurant data."""

from __future__ import annotations

import pytest

from neardup_solr.options import LookupReportOptions
from neardup_solr.solr.documents import WRITE_UP_TOKEN_FIELDS, IndexSettings, decode_signatures, signature_tokens
from neardup_solr.pairs.evaluate import evaluate, read_pairs
from neardup_solr.solr.indexer import Indexer
from neardup_solr.engine.report import report_near_dups
from neardup_solr.io.restaurants import gold_pairs_path, prepare_default
from neardup_solr.solr.searcher import WRITEUP_RANKING, Searcher
from neardup_solr.errors import DocumentNotFoundError
from neardup_solr.pairs.similar_pairs import id_sort_key
from neardup_solr.solr.client import SolrClient

pytestmark = pytest.mark.solr


@pytest.fixture(scope="module")
def restaurants(solr_url, tmp_path_factory):
    """The 864 restaurant records indexed once for this module (write-up settings, 128 MinHash values)."""
    client = SolrClient(solr_url)
    client.delete_all()
    path = tmp_path_factory.mktemp("restaurants") / "addresses.txt"
    prepare_default(path)
    settings = IndexSettings(ngram=3, num_hashes=128, fields=WRITE_UP_TOKEN_FIELDS)
    summary = Indexer(client, settings).index_file(path, "lines")
    assert (summary.read, summary.indexed, summary.rejected) == (864, 864, 0)
    return client


@pytest.fixture(scope="module")
def gold():
    return read_pairs(gold_pairs_path())


def _found_set(pairs):
    return {(a, b) if id_sort_key(a) <= id_sort_key(b) else (b, a) for a, b, *_ in pairs}


def test_indexed_fields_of_a_record(restaurants):
    doc = restaurants.get_by_ids(["3"], "id,content,md5_hash,num_words,first_word,num_shingles,minhash_sig")[0]
    assert doc["content"] == "Art's Delicatessen 12224 Ventura Blvd. Studio City"
    assert doc["num_words"] == 8  # art s delicatessen 12224 ventura blvd studio city
    assert doc["first_word"] == "art"
    assert doc["num_shingles"] == 6
    tokens = signature_tokens(decode_signatures([doc["minhash_sig"]], 128)[0])
    assert len(tokens) == 128 and tokens[0].startswith("0_")
    # content_sg is indexed, not stored: it holds exactly these tokens when an OR over them scores 128.
    hits = restaurants.select({"q": " OR ".join(f'content_sg:"{t}"' for t in tokens), "fq": "{!term f=id}3",
                               "fl": "id,score"})["response"]["docs"]
    assert hits == [{"id": "3", "score": 128.0}]


def test_near_dups_of_3_finds_536_at_distance_1(restaurants):
    # The write-up's ranking (a named choice since the defaults look up at the collection's threshold).
    matches = Searcher(restaurants).find_near_dups_by_shingles("3", **WRITEUP_RANKING)
    assert [(m.id, m.edit_distance) for m in matches][:1] == [("536", 1)]
    assert matches[0].jaccard == pytest.approx(1 / 3)
    by_minhash = Searcher(restaurants).find_near_dups_by_minhash("3", num_hashes=20, **WRITEUP_RANKING)
    assert "536" in [m.id for m in by_minhash]


def test_exact_duplicate_is_found_by_md5_with_distance_zero(restaurants):
    searcher = Searcher(restaurants)
    matches = searcher.find_near_dups_of_text("ART'S DELI, 12224 Ventura Blvd.  Studio City!!")
    assert matches[0].id == "536" and matches[0].exact and matches[0].edit_distance == 0


def test_new_text_lookup_and_unknown_id(restaurants):
    searcher = Searcher(restaurants)
    matches = searcher.find_near_dups_of_text("Art's Deli 12224 Ventura Boulevard Studio City", max_edit_distance=3,
                                              min_jaccard=None)
    assert {"3", "536"} & {m.id for m in matches}
    with pytest.raises(DocumentNotFoundError, match="no document with id '99999'"):
        searcher.get_by_id("99999")


def test_writeup_report_finds_the_gold_pairs(restaurants, gold, tmp_path):
    searcher = Searcher(restaurants)
    out = tmp_path / "shingles.tsv"
    summary, pairs = report_near_dups(searcher, out, max_edit_distance=2, mode="shingles", rows=10,
                                      first_word_filter=True)
    shingle_result = evaluate(_found_set(pairs), gold)
    assert shingle_result.true_positives >= 60
    lines = out.read_text().splitlines()
    assert lines[0].startswith("#") and lines[1].startswith("# written by") and len(lines) == len(pairs) + 2
    assert all(id_sort_key(b) > id_sort_key(a) for a, b, *_ in pairs)

    _, mh_pairs = report_near_dups(searcher, None, max_edit_distance=2, mode="minhash", num_hashes=20)
    assert evaluate(_found_set(mh_pairs), gold).true_positives >= 55


def test_report_with_workers_equals_single_worker(restaurants):
    searcher = Searcher(restaurants)
    _, one = report_near_dups(searcher, None, "1", "300", max_edit_distance=2, mode="shingles", workers=1)
    _, many = report_near_dups(searcher, None, options=LookupReportOptions(start_id="1", end_id="300", workers=4))
    assert one == many and len(one) > 10
    # The older positional form (max_distance, mode after the id range) still gives the same report.
    with pytest.warns(DeprecationWarning, match="max_edit_distance"):
        _, positional = report_near_dups(searcher, None, "1", "300", 2, "shingles")
    assert positional == one


def test_run_report_refuses_what_the_other_kind_of_report_takes(tmp_path):
    """Checked before Solr is asked anything (the client points nowhere)."""
    from neardup_solr.engine.find import run_report
    from neardup_solr.errors import InvalidParameterError, ParameterTypeError
    from neardup_solr.options import LookupOptions, LookupReportOptions, ThresholdOptions
    from neardup_solr.solr.client import SolrClient

    nowhere = SolrClient("http://127.0.0.1:9/solr/nothing")
    with pytest.raises(InvalidParameterError) as on_group:
        run_report(nowhere, ThresholdOptions(threshold=0.5), on_group=print)
    assert on_group.value.param == "on_group"
    with pytest.raises(InvalidParameterError) as snapshot:
        run_report(nowhere, LookupReportOptions(), snapshot=object())
    assert snapshot.value.param == "snapshot"
    with pytest.raises(ParameterTypeError):
        run_report(nowhere, LookupOptions())  # a lookup's options: which documents, how many workers?
    with pytest.raises(InvalidParameterError) as resume:
        run_report(nowhere, ThresholdOptions(threshold=0.5, method="lsh"), tmp_path / "p.tsv", resume=True)
    assert resume.value.param == "resume"
