"""neardup_solr.solr.searcher without a Solr: the candidate query it writes for a lookup, and the re-ranking of
the candidates Solr gave back (real answers to those very requests, recorded by tests/data/capture_solr_answers.py
and played back by tests/solr_replay.py). Lookups on real indexes are tests/solr/'s (test_lookup_defaults.py,
test_restaurant_writeup.py, test_threshold.py ...).

The recorded index holds "Art's Deli 12224 Ventura Blvd. Studio City" as ids 3 and 10, and as id 536 the same
with "Delicatessen"; every text has 8 words, so 6 word 3-shingles.
"""

from __future__ import annotations

import math

import pytest

from neardup_solr.errors import DocumentNotFoundError, ParameterTypeError
from neardup_solr.signing.tokens import text_token
from neardup_solr.solr.searcher import Searcher, cursor_docs
from solr_replay import SETTINGS, ReplayClient, recorded, response

NEW_TEXT = "Art's Deli 12224 Ventura Boulevard Studio City"  # "Boulevard" for "Blvd.": 3 of 6 shingles differ
# 3 shared shingles out of 6 + 6 - 3.
J_ONE_WORD_CHANGED = 3 / 9


def _searcher(*scenarios: str, answer=None) -> Searcher:
    return Searcher(ReplayClient(*scenarios, answer=answer), settings=SETTINGS)


def _answering(scenario: str):
    """Any request answered with the recorded answer of ``scenario`` (for requests that differ only in what
    the test is about)."""
    body = recorded(scenario)[-1]["body"]
    return lambda request: response(200, body)


def test_a_text_lookup_asks_for_its_distinct_shingle_tokens_and_nothing_of_the_text():
    searcher = _searcher("lookup_text_rows")
    matches = searcher.find_near_dups(text=NEW_TEXT, rows=10, min_jaccard=None)
    form = dict(map(tuple, searcher.client.sent[0]["form"]))
    terms = form["q"].split(" ")
    assert len(terms) == len(set(terms)) == 6
    assert all(t.startswith('"') and t.endswith('"') for t in terms)
    assert "Boulevard" not in form["q"] and "Ventura" not in form["q"]
    assert (form["rows"], form["sort"], form["df"]) == ("10", "score desc,id asc", SETTINGS.token_field("shingles"))
    # Both candidates changed one word; equal in every measure, they come in numeric id order.
    assert [(m.id, m.edit_distance, m.exact, m.score) for m in matches] == [("3", 1, False, 3.0), ("10", 1, False, 3.0)]
    assert all(m.jaccard == pytest.approx(J_ONE_WORD_CHANGED) for m in matches)


def test_without_a_row_cap_the_candidates_are_paged_and_a_short_page_ends_the_paging():
    searcher = _searcher("lookup_text_all")
    matches = searcher.find_near_dups(text=NEW_TEXT, min_jaccard=None, max_edit_distance=2)
    assert [m.id for m in matches] == ["3", "10"]
    (sent,) = searcher.client.sent  # one page, shorter than the page size: no request to confirm the end
    assert ["cursorMark", "*"] in sent["form"]


def test_candidates_beyond_the_edit_distance_or_under_the_jaccard_are_dropped():
    searcher = _searcher(answer=_answering("lookup_text_all"))
    assert searcher.find_near_dups(text=NEW_TEXT, min_jaccard=None, max_edit_distance=0) == []
    assert searcher.find_near_dups(text=NEW_TEXT, min_jaccard=0.34) == []
    assert len(searcher.find_near_dups(text=NEW_TEXT, min_jaccard=0.33)) == 2


def test_the_collections_threshold_becomes_a_bound_on_shared_tokens_sent_with_the_query():
    searcher = _searcher(answer=_answering("lookup_text_rows"))
    # Solr's answer without the bound: the candidates share 3 shingles, the bound needs ceil(0.8 * 6) = 5.
    assert searcher.find_near_dups(text=NEW_TEXT, rows=10) == []
    fq = [v for k, v in searcher.client.sent[0]["form"] if k == "fq"]
    assert fq == [f"{{!frange l={math.ceil(SETTINGS.lsh_threshold * 6)}}}query($q)"]


def test_a_stored_documents_lookup_leaves_it_out_and_finds_its_exact_copy_first():
    searcher = _searcher("lookup_id")
    matches = searcher.find_near_dups("3", min_jaccard=None)
    assert [(m.id, m.edit_distance, m.exact) for m in matches] == [("10", 0, True), ("536", 1, False)]
    assert matches[0].jaccard == 1.0 and matches[1].jaccard == pytest.approx(J_ONE_WORD_CHANGED)
    assert [r["path"] for r in searcher.client.sent] == ["get", "select"]


def test_an_unknown_id_is_named():
    searcher = _searcher("lookup_missing_id")
    with pytest.raises(DocumentNotFoundError, match="'no-such-id'"):
        searcher.find_near_dups("no-such-id")


def test_only_greater_ids_compares_ids_as_numbers():
    searcher = _searcher()
    docs = recorded("lookup_id")[1]["body"]["response"]["docs"]
    text = docs[0]["content"]
    after_3 = searcher.rerank(searcher.prepare(text, "3"), docs, max_edit_distance=None, only_greater_ids=True)
    assert [m.id for m in after_3] == ["10", "536"]  # "10" sorts before "3" as a string, after it as a number
    after_536 = searcher.rerank(searcher.prepare(text, "536"), docs, max_edit_distance=None, only_greater_ids=True)
    assert after_536 == []
    assert searcher.client.sent == []


def test_user_values_reach_solr_as_parameters_never_as_query_syntax():
    searcher = _searcher()
    hostile = 'x") OR *:* OR ("'
    query = searcher.prepare(f"{hostile} deli ventura studio")
    params = searcher.candidate_params(query, "shingles", rows=5, first_word_filter=True,
                                       other_datasets_than=hostile)
    fqs = [v for k, v in params if k == "fq"]
    assert fqs == ["{!term f=first_word v=$nd.fw}", "-{!term f=dataset v=$nd.other}"]
    assert ("nd.other", hostile) in params
    assert ("nd.fw", text_token(query.processed.words[0])) in params
    assert all("*:*" not in str(v) for k, v in params if k != "nd.other")


def test_cursor_paging_follows_solrs_cursor_to_the_short_last_page():
    client = ReplayClient("cursor_pages")
    ids = [doc["id"] for doc in cursor_docs(client, [("q", "*:*"), ("fl", "id"), ("sort", "id asc")], page_size=3)]
    pages = recorded("cursor_pages")
    assert ids == [d["id"] for page in pages for d in page["body"]["response"]["docs"]]
    assert len(client.sent) == 3 and len(set(ids)) == len(ids)


def test_a_searcher_refuses_what_is_not_a_client_or_settings():
    with pytest.raises(ParameterTypeError):
        Searcher("http://127.0.0.1:8983/solr/neardup")  # type: ignore[arg-type]
    with pytest.raises(ParameterTypeError):
        Searcher(ReplayClient(), settings={"ngram": 3})  # type: ignore[arg-type]
