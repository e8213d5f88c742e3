"""neardup_solr.solr.client without a Solr: the requests it writes and what it makes of Solr's answers (real ones,
recorded by tests/data/capture_solr_answers.py and played back by tests/solr_replay.py), its retries and its
checks of the URL it is given. The same calls against a real Solr are tests/solr/solr/test_transport.py's and
the fault tests'."""

from __future__ import annotations

import pytest
import requests

from neardup_solr.errors import (
    ClientClosedError,
    InvalidParameterError,
    SolrAuthError,
    SolrCoreNotFoundError,
    SolrRequestError,
    SolrUnavailableError,
)
from neardup_solr.signing.builder import DocumentBuilder
from neardup_solr.solr.client import SolrClient, redact_url
from solr_replay import SETTINGS, ReplayClient, recorded, response


def test_a_ping_answered_ok_is_true():
    client = ReplayClient("ping")
    assert client.ping() is True
    assert client.sent == [{"method": "GET", "path": "admin/ping", "params": [["wt", "json"]], "form": None,
                            "json": None}]


def test_count_posts_a_query_of_no_rows_and_reads_num_found():
    client = ReplayClient("count")
    assert client.count() == recorded("count")[0]["body"]["response"]["numFound"]
    assert client.sent[0]["form"] == [["q", "*:*"], ["rows", "0"], ["wt", "json"]]


def test_the_documents_go_to_the_update_handler_as_one_json_array():
    # The recorded request is the builder's document for this record: replaying it checks the body byte for
    # byte after JSON parsing, so a change of a field or a token fails here.
    client = ReplayClient("add")
    client.add(DocumentBuilder(SETTINGS).build([("900", "Cafe Bizou 14016 Ventura Boulevard")]).documents)
    (sent,) = client.sent
    assert (sent["method"], sent["path"], sent["params"]) == ("POST", "update", [["wt", "json"]])
    assert [doc["id"] for doc in sent["json"]] == ["900"]


def test_a_refused_document_raises_at_once_with_solrs_own_reason():
    client = ReplayClient("add_refused", max_wait=30)
    with pytest.raises(SolrRequestError) as caught:
        client.add([{"id": "901", "no_such_field": "x"}])
    assert caught.value.status == 400
    assert "unknown field 'no_such_field'" in str(caught.value)
    assert len(client.sent) == 1  # a bad request is not retried, however long the client may wait


def test_documents_come_back_in_the_order_asked_whatever_order_the_shards_answer_in():
    body = recorded("get_by_ids")[0]["body"]
    shards_order = {**body, "response": {**body["response"], "docs": body["response"]["docs"][::-1]}}
    client = ReplayClient(answer=lambda request: response(200, shards_order))
    docs = client.get_by_ids(["536", "missing", "3"], "id,content")
    assert [doc["id"] for doc in docs] == ["536", "3"]


def test_ids_with_commas_and_backslashes_are_escaped_for_the_real_time_get():
    client = ReplayClient(answer=lambda request: response(200, recorded("lookup_missing_id")[0]["body"]))
    assert client.get_by_ids(["a,b", "c\\d", "plain"]) == []
    assert client.sent[0]["form"][0] == ["ids", "a\\,b,c\\\\d,plain"]
    assert client.sent[1]["form"][0] == ["ids", "a\\,b,c\\\\d,plain"]  # none found: asked once more
    assert client.get_by_ids([]) == [] and len(client.sent) == 2  # nothing asked, nothing sent


def _get_answers(*answers: list[dict]):
    """A /get that gives ``answers`` in turn (each a list of documents), the last one from then on."""
    asked: list[list[str]] = []

    def answer(request):
        ids = dict(request["form"])["ids"].split(",")
        asked.append(ids)
        docs = answers[min(len(asked), len(answers)) - 1]
        shown = [d for d in docs if d["id"] in ids]
        return response(200, {"response": {"numFound": len(shown), "start": 0, "docs": shown}})

    return answer, asked


def test_ids_an_answer_lacks_are_asked_for_once_more():
    # Solr's /get keeps the realtime searcher it took at the first id not in its update log: a soft commit during
    # the request hides later ids that were acknowledged. The second request sees them.
    a, b, c = ({"id": i, "content": i.upper()} for i in "abc")
    answer, asked = _get_answers([a], [a, b, c])
    client = ReplayClient(answer=answer)
    assert client.get_by_ids(["c", "a", "b"], "id,content") == [c, a, b]
    assert asked == [["c", "a", "b"], ["c", "b"]]  # only the missing ones, in the order asked
    # Really absent: one more request, and they stay absent.
    answer, asked = _get_answers([a])
    assert ReplayClient(answer=answer).get_by_ids(["a", "zz"], "id") == [a] and asked == [["a", "zz"], ["zz"]]
    # Every one found, or a single id: one request.
    answer, asked = _get_answers([a, b])
    assert ReplayClient(answer=answer).get_by_ids(["a", "b", "a"], "id") == [a, b] and len(asked) == 1
    answer, asked = _get_answers([])
    assert ReplayClient(answer=answer).get_by_ids(["zz"], "id") == [] and len(asked) == 1


def test_without_id_in_fl_a_short_answer_is_asked_again_whole():
    first, second = [{"md5_hash": "1"}], [{"md5_hash": "1"}, {"md5_hash": "2"}]
    calls: list[int] = []

    def answer(request):
        calls.append(1)
        docs = first if len(calls) == 1 else second
        return response(200, {"response": {"numFound": len(docs), "start": 0, "docs": docs}})

    assert ReplayClient(answer=answer).get_by_ids(["a", "b"], "md5_hash") == second and len(calls) == 2


def test_select_leaves_out_parameters_whose_value_is_none():
    client = ReplayClient(answer=lambda request: response(200, recorded("count")[0]["body"]))
    client.select([("q", "*:*"), ("fq", None), ("rows", 0)])
    assert client.sent[0]["form"] == [["q", "*:*"], ["rows", "0"], ["wt", "json"]]


def test_a_missing_core_is_named_in_one_line_not_shown_as_jettys_page():
    client = ReplayClient("missing_core", url="http://127.0.0.1:8983/solr/no_such_core")
    with pytest.raises(SolrCoreNotFoundError) as caught:
        client.get_json("admin/ping", retry=False)
    message = str(caught.value)
    assert "'no_such_core'" in message and "HTTP 404" in message
    assert "<html" not in message and "\n" not in message


def test_refused_credentials_say_where_credentials_come_from():
    client = ReplayClient(answer=lambda request: response(401, ""), max_wait=30)
    with pytest.raises(SolrAuthError, match="SOLR_USERNAME/SOLR_PASSWORD"):
        client.ping(retry=True)
    assert len(client.sent) == 1


def test_a_refused_connection_is_retried_until_solr_answers():
    attempts = []

    def refuse_twice_after_the_first_answer(request):
        attempts.append(request)
        if 2 <= len(attempts) <= 3:
            raise requests.ConnectionError("[Errno 111] Connection refused")
        return response(200, recorded("ping")[0]["body"])

    client = ReplayClient(answer=refuse_twice_after_the_first_answer, max_wait=30)
    assert client.ping() is True  # Solr has answered this client: from now on a refused connection is an outage
    assert client.ping(retry=True) is True
    assert len(attempts) == 4


def test_a_refused_connection_before_solr_ever_answered_is_not_retried():
    # Issue 45: until Solr has answered, a refused connection is a wrong URL or a Solr not started, said at once.
    client = ReplayClient(answer=lambda request: (_ for _ in ()).throw(
        requests.ConnectionError("[Errno 111] Connection refused")), max_wait=30)
    with pytest.raises(SolrUnavailableError, match="connection refused at .* not retried"):
        client.get_json("admin/ping")
    assert len(client.sent) == 1


def test_solr_still_away_after_max_wait_is_reported_with_the_url():
    client = ReplayClient(answer=lambda request: (_ for _ in ()).throw(requests.ConnectionError("refused")),
                          max_wait=0)
    with pytest.raises(SolrUnavailableError) as caught:
        client.count()
    assert client.url in str(caught.value)
    assert len(client.sent) == 1
    assert client.ping() is False  # ping reports an absent Solr as False, never raises it


def test_a_closed_client_refuses_calls_without_sending():
    client = ReplayClient("ping")
    client.close()
    client.close()
    with pytest.raises(ClientClosedError):
        client.ping()
    assert client.sent == []


def test_a_url_without_the_core_suggests_the_url_with_it():
    with pytest.raises(InvalidParameterError) as caught:
        SolrClient("http://127.0.0.1:8983/solr")
    assert "http://127.0.0.1:8983/solr/neardup" in str(caught.value)
    for bad in ("ftp://127.0.0.1/solr/neardup", "http://127.0.0.1:99999/solr/neardup", ""):
        with pytest.raises(InvalidParameterError):
            SolrClient(bad)


def test_credentials_in_the_url_are_used_and_never_shown():
    client = SolrClient("http://solr-user:s3cret%21@127.0.0.1:8983/solr/neardup")
    assert client.session.auth == ("solr-user", "s3cret!")
    assert "s3cret" not in client.url and "s3cret" not in repr(client)
    assert "s3cret" not in redact_url("https://solr-user:s3cret@example.org:8983/solr/neardup")


def test_several_urls_must_name_one_collection():
    client = SolrClient("http://127.0.0.1:8983/solr/neardup, http://127.0.0.1:8984/solr/neardup")
    assert client.collection == "neardup" and len(client.nodes) == 2
    with pytest.raises(ValueError, match="different cores"):
        SolrClient("http://127.0.0.1:8983/solr/neardup,http://127.0.0.1:8984/solr/other")
