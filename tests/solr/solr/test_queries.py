"""neardup_solr.solr.queries: Solr's query syntax in one place. The first tests are pure (the strings and
parameters built); the last ones send the filters to a real Solr, with data set names that would be query syntax
if pasted, to show each is taken literally."""

from __future__ import annotations

import pytest

from neardup_solr.signing.settings import META_DATASET, SETTINGS_DOC_ID
from neardup_solr.solr.maintenance import clear
from neardup_solr.solr.queries import (
    ALL_DOCUMENTS,
    UNLABELLED,
    USER_DOCUMENTS,
    Filter,
    boosted_terms,
    dataset_query,
    documents_of,
    filter_params,
    in_dataset,
    not_id,
    not_in_dataset,
    overlap_field,
    overlap_params,
    quoted_term,
    score_at_least,
    select_params,
    terms_query,
    top_overlap_params,
)

# Names a user may give a data set that are query syntax when pasted into a query.
AWKWARD_NAMES = ['a} OR *:*', 'quote"d \\ back', ' spaced ', 'x:y', '$nd.ds']


def test_user_documents_leave_out_the_reserved_data_set():
    assert USER_DOCUMENTS == Filter(f"-dataset:{META_DATASET}")
    assert USER_DOCUMENTS.params == ()  # usable where parameters are not passed on (delete-by-query, /export)
    assert documents_of(None) == [USER_DOCUMENTS]


@pytest.mark.parametrize("name", AWKWARD_NAMES)
def test_a_data_set_name_goes_in_a_parameter_never_in_the_query(name):
    for make in (in_dataset, not_in_dataset):
        f = make(name)
        assert f.query == make("plain").query  # the query is the same whatever the name
        assert [value for _, value in f.params] == [name]
        assert f"${f.params[0][0]}" in f.query
    assert documents_of(name) == [USER_DOCUMENTS, in_dataset(name)]
    assert filter_params(documents_of(name)) == [("fq", "-dataset:__meta__"), ("fq", "{!term f=dataset v=$nd.ds}"),
                                                 ("nd.ds", name)]


def test_filter_params_list_each_reference_once_and_refuse_two_values_for_one():
    assert filter_params([]) == []
    both = filter_params([in_dataset("a"), in_dataset("a"), not_id("7")])
    assert both == [("fq", "{!term f=dataset v=$nd.ds}"), ("nd.ds", "a"), ("fq", "{!term f=dataset v=$nd.ds}"),
                    ("fq", "-{!term f=id v=$nd.self}"), ("nd.self", "7")]
    with pytest.raises(ValueError, match=r"\$nd.ds"):
        filter_params([in_dataset("a"), in_dataset("b")])


def test_a_delete_query_needs_no_parameter():
    # A SolrCloud forwards a delete-by-query to the other shard leaders without the request's parameters.
    assert dataset_query("a} OR *:*") == "{!term f=dataset}a} OR *:*"
    assert dataset_query(None) == "*:* " + UNLABELLED.query == "*:* -dataset:[* TO *]"


def test_quoted_terms_escape_only_what_quotes_make_special():
    assert quoted_term("plain") == '"plain"'
    assert quoted_term('say "hi"') == '"say \\"hi\\""'
    assert quoted_term("back\\slash") == '"back\\\\slash"'
    assert quoted_term("a:b (c) *") == '"a:b (c) *"'


def test_boosted_terms_write_a_boost_only_where_it_is_not_one():
    assert boosted_terms([("a", 1.0), ("b", 2.5), ("c", 1 / 3)]) == '"a" "b"^2.5 "c"^0.333333333'
    assert boosted_terms([]) == ""


def test_terms_query_passes_the_tokens_in_its_parameter():
    f = terms_query("content_lsh", ["0_ab", "1_cd"], "nd.bands")
    assert f == Filter("{!terms f=content_lsh v=$nd.bands}", (("nd.bands", "0_ab,1_cd"),))
    assert terms_query("content_nh", ["x"]).params == (("nd.terms", "x"),)


def test_select_params_take_a_query_with_its_parameters():
    assert select_params() == [("q", ALL_DOCUMENTS)]
    params = select_params(documents_of("d"), query=terms_query("f", ["t"], "nd.t"), sort="id asc", fields="id",
                           rows=5)
    assert params == [("q", "{!terms f=f v=$nd.t}"), ("nd.t", "t"), ("fq", "-dataset:__meta__"),
                      ("fq", "{!term f=dataset v=$nd.ds}"), ("nd.ds", "d"), ("sort", "id asc"), ("fl", "id"),
                      ("rows", 5)]


def test_score_bounds():
    assert score_at_least(3).query == "{!frange l=3}query($q)"
    assert score_at_least(2.5, "nd.overlap", post_filter=True).query == \
        "{!frange l=2.5 cache=false cost=200}query($nd.overlap)"


def test_overlap_params_the_three_shapes():
    tokens = [("a", 1.0), ("b", 2.0)]
    tail = [("defType", "lucene"), ("df", "content_nh"), ("q.op", "OR")]
    # No prefix: the OR-query of every token, scored across the index and bounded by its score.
    assert overlap_params("content_nh", tokens, 2, prefix=None, with_overlap=True) == [
        ("q", '"a" "b"^2'), ("fq", "{!frange l=2}query($q)"), ("sort", "score desc,id asc"), *tail]
    # A prefix and the overlap bound as a post filter.
    assert overlap_params("content_nh", tokens, 2, prefix=["b"], with_overlap=True) == [
        ("q", "{!terms f=content_nh v=$nd.prefix}"), ("nd.prefix", "b"), ("sort", "id asc"),
        ("nd.overlap", '"a" "b"^2'), ("fq", "{!frange l=2 cache=false cost=200}query($nd.overlap)"), *tail]
    # A prefix, no overlap bound: the size filter when asked for, else nothing more.
    assert overlap_params("content_nh", tokens, 2, prefix=["b"], with_overlap=False, min_size=2) == [
        ("q", "{!terms f=content_nh v=$nd.prefix}"), ("nd.prefix", "b"), ("sort", "id asc"),
        ("fq", "num_shingles:[2 TO *]"), *tail]
    assert overlap_params("content_nh", tokens, 2, prefix=["b"], with_overlap=False) == [
        ("q", "{!terms f=content_nh v=$nd.prefix}"), ("nd.prefix", "b"), ("sort", "id asc"), *tail]


# ------------------------------------------------------------------------------------------ against Solr


def _ids(client, filters) -> set[str]:
    docs = client.select(select_params(filters, fields="id", rows=100))["response"]["docs"]
    return {d["id"] for d in docs}


def test_the_filters_take_awkward_names_literally(solr):
    docs = [{"id": SETTINGS_DOC_ID, "dataset": META_DATASET, "content": "{}"}, {"id": "plain", "content": "x"}]
    docs += [{"id": f"d{i}", "dataset": name, "content": "x"} for i, name in enumerate(AWKWARD_NAMES)]
    solr.add(docs)
    solr.commit()
    every = {"plain"} | {f"d{i}" for i in range(len(AWKWARD_NAMES))}
    assert _ids(solr, [USER_DOCUMENTS]) == every
    for i, name in enumerate(AWKWARD_NAMES):
        assert _ids(solr, documents_of(name)) == {f"d{i}"}
        assert _ids(solr, [USER_DOCUMENTS, not_in_dataset(name)]) == every - {f"d{i}"}
        assert solr.count(dataset_query(name)) == 1
    assert _ids(solr, [USER_DOCUMENTS, not_id("plain")]) == every - {"plain"}
    assert solr.count(dataset_query(None)) == 1  # "plain", the one document without a data set


def test_clearing_an_awkward_data_set_deletes_only_it(solr):
    solr.add([{"id": SETTINGS_DOC_ID, "dataset": META_DATASET, "content": "{}"}]
             + [{"id": f"d{i}", "dataset": name, "content": "x"} for i, name in enumerate(AWKWARD_NAMES)])
    solr.commit()
    assert clear(solr, AWKWARD_NAMES[0]) == 1
    assert _ids(solr, [USER_DOCUMENTS]) == {f"d{i}" for i in range(1, len(AWKWARD_NAMES))}
    assert solr.get_by_ids([SETTINGS_DOC_ID], "id")  # the settings stay


def test_overlap_field_gives_each_returned_documents_overlap_with_other_tokens(solr):
    # The online record match searches the rare tokens and asks Solr for the frequent ones' overlap this way.
    solr.add([{"id": "both", "content": "x", "content_grams": ["rare", "common", "other"]},
              {"id": "rare-only", "content": "x", "content_grams": ["rare"]},
              {"id": "common-only", "content": "x", "content_grams": ["common"]}])
    solr.commit()
    field, params = overlap_field([("common", 1.5), ("other", 0.25)])
    assert field == "nd_rest:query($nd.rest,0)" and params == [("nd.rest", '"common"^1.5 "other"^0.25')]
    found = solr.select([*top_overlap_params("content_grams", [("rare", 9.0)], 10), *params,
                         ("fl", "id,score," + field)])["response"]["docs"]
    assert {d["id"]: (d["score"], d["nd_rest"]) for d in found} == {
        "both": (pytest.approx(9.0), pytest.approx(1.75)), "rare-only": (pytest.approx(9.0), pytest.approx(0.0))}
