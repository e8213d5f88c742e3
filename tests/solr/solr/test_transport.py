"""The direct transport (http_transport.DirectTransport) answers exactly as requests does, against a real Solr, and
fails with requests' own exceptions, so SolrClient's retries and error messages are the same on both paths."""

from __future__ import annotations

import http.server
import socket
import threading

import pytest
import requests
from netutil import free_port

from neardup_solr.errors import SolrRequestError, SolrTimeoutError, SolrUnavailableError
from neardup_solr.solr.transport import DirectTransport
from neardup_solr.solr.client import RetryPolicy, SolrClient

pytestmark = pytest.mark.solr


def _both(client: SolrClient, method: str, path: str, **kw):
    """The same call through the direct transport and through requests."""
    node = client._node
    url = f"{node}/{client.collection}/{path}"
    pool = client._direct.pool(node, client._environment(node))
    assert pool is not None
    direct = client._direct.send(pool, method, url, params=kw.get("params"), data=kw.get("data"),
                                 json_body=kw.get("json_body"), headers=kw.get("headers"), timeout=30, auth=None)
    via_requests = client.session.request(method, url, params=kw.get("params"), data=kw.get("data"),
                                          json=kw.get("json_body"), headers=kw.get("headers"), timeout=30)
    return direct, via_requests


def test_answers_match_requests(solr):
    solr.add([{"id": "transport-1", "content": "a text for the transport test"}], commit_within_ms=None)
    solr.commit()
    cases = [
        ("GET", "select", {"params": [("q", "id:transport-1"), ("fl", "id"), ("wt", "json")]}),
        ("POST", "select", {"data": b"q=id%3Atransport-1&fl=id&wt=json",
                            "headers": {"Content-Type": "application/x-www-form-urlencoded"}}),
        ("POST", "get", {"params": [("wt", "json")], "data": b"ids=transport-1",
                         "headers": {"Content-Type": "application/x-www-form-urlencoded"}}),
    ]
    for method, path, kw in cases:
        direct, via_requests = _both(solr, method, path, **kw)
        assert direct.status_code == via_requests.status_code == 200
        body, expected = direct.json(), via_requests.json()
        for answer in (body, expected):
            answer.get("responseHeader", {}).pop("QTime", None)  # the only part that may differ
        assert body == expected, (method, path)
        assert direct.headers["content-type"] == via_requests.headers["content-type"]
        assert direct.encoding == via_requests.encoding and direct.url == via_requests.url


def test_json_body_and_errors_match_requests(solr):
    # A bad query: the same 400 and the same Solr message on both paths.
    direct, via_requests = _both(solr, "GET", "select", params=[("q", "id:("), ("wt", "json")])
    assert direct.status_code == via_requests.status_code == 400
    assert direct.json()["error"]["msg"] == via_requests.json()["error"]["msg"]
    # A JSON update body, as delete_ids sends it.
    direct, _ = _both(solr, "POST", "update", params={"wt": "json"}, json_body={"delete": ["no-such-id"]})
    assert direct.status_code == 200 and direct.json()["responseHeader"]["status"] == 0
    with pytest.raises(SolrRequestError, match="HTTP 400"):
        solr.get_json("select", {"q": "id:("})


def test_refused_connection_is_requests_connection_error():
    port = free_port()  # nothing listens there
    client = SolrClient(f"http://127.0.0.1:{port}/solr/none", retry=RetryPolicy(max_wait=0))
    pool = client._direct.pool(client._node, client._environment(client._node))
    with pytest.raises(requests.ConnectionError) as info:
        client._direct.send(pool, "GET", f"{client._node}/none/select", params=None, data=None, json_body=None,
                            headers=None, timeout=5, auth=None)
    assert not isinstance(info.value, requests.Timeout)
    with pytest.raises(SolrUnavailableError, match="connection refused"):
        client.get_json("select", {"q": "*:*"})


def test_silent_server_is_a_read_timeout():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    accepted: list[socket.socket] = []
    threading.Thread(target=lambda: accepted.append(server.accept()[0]), daemon=True).start()
    port = server.getsockname()[1]
    client = SolrClient(f"http://127.0.0.1:{port}/solr/c", timeout=0.5, retry=RetryPolicy(max_wait=0))
    try:
        with pytest.raises(SolrTimeoutError):
            client.get_json("select", {"q": "*:*"})
        pool = client._direct.pool(client._node, client._environment(client._node))
        with pytest.raises(requests.ReadTimeout):
            client._direct.send(pool, "GET", f"{client._node}/c/select", params=None, data=None, json_body=None,
                                headers=None, timeout=0.3, auth=None)
    finally:
        server.close()
        for conn in accepted:
            conn.close()


def test_proxies_and_foreign_adapters_keep_the_requests_path(solr):
    node = solr._node
    transport = DirectTransport(solr.session)
    assert transport.pool(node, {"proxies": {"http": "http://proxy.invalid:3128"}}) is None

    class CustomAdapter(requests.adapters.HTTPAdapter):
        pass

    session = requests.Session()
    session.mount("http://", CustomAdapter())
    assert DirectTransport(session).pool(node, {}) is None


def test_direct_calls_share_the_session_pool(solr):
    # The connection limit of SolrClient (pool_size, blocking) lives in the session's pool; the direct transport
    # must use that very pool, not one of its own.
    node = solr._node
    pool = solr._direct.pool(node, solr._environment(node))
    probe = requests.PreparedRequest()
    probe.url = node
    adapter = solr.session.get_adapter(node)
    # The verify setting requests would use for this node: the environment's CA bundle when one is named.
    verify = solr._environment(node).get("verify", solr.session.verify)
    assert pool is adapter.get_connection_with_tls_context(probe, verify, proxies={}, cert=None)
    assert pool.pool.maxsize == solr.pool_size and pool.block is True


class _Ping(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - the handler's API
        body = b'{"responseHeader":{"status":0},"status":"OK"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_a_node_switch_is_warned_of_once_while_every_node_is_down(caplog):
    # Two URLs of one collection. The first answers once (before that, a client does not wait: issue 45), then
    # nothing listens on either: the retry rounds go back and forth between them.
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Ping)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    first, second = server.server_address[1], free_port()
    client = SolrClient(f"http://127.0.0.1:{first}/solr/c,http://127.0.0.1:{second}/solr/c",
                        retry=RetryPolicy(max_wait=3, base=0.05, cap=0.2))
    try:
        client.get_json("admin/ping")
    finally:
        server.shutdown()
        server.server_close()
    with caplog.at_level("DEBUG", logger="neardup_solr.solr.client"):
        with pytest.raises(SolrUnavailableError):
            client.get_json("select", {"q": "*:*"})
    switches = [r for r in caplog.records if "is not answering" in r.getMessage()]
    warned = [r for r in switches if r.levelname == "WARNING"]
    assert len(switches) > len(warned)  # the rounds did switch again...
    assert 1 <= len(warned) <= 2  # ...but each switch was warned of once
    assert len({r.getMessage() for r in warned}) == len(warned)


def test_after_a_call_to_another_host_the_direct_path_uses_the_sessions_new_pool(solr):
    # The session keeps one urllib3 pool (pool_connections=1): a call to another host (here the same Solr as
    # "localhost") replaces the pool of the node in use. The direct path must then use the session's new pool,
    # not keep the old one, which would escape the connection limit and never be closed with the session.
    node = solr._node
    solr.get_json("select", {"q": "*:*", "rows": 0})
    before = solr._direct.pool(node, solr._environment(node))
    other = node.replace("127.0.0.1", "localhost")
    assert other != node
    assert solr.session.get(f"{other}/{solr.collection}/admin/ping", params={"wt": "json"},
                            **solr._environment(other)).status_code == 200
    assert solr.get_json("select", {"q": "*:*", "rows": 0})["responseHeader"]["status"] == 0
    now = solr._direct.pool(node, solr._environment(node))
    assert now is not before
    managed = list(solr.session.get_adapter(node).poolmanager.pools._container.values())
    assert managed == [now]
