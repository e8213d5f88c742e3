"""A client's first contact fails fast (issue 45): a closed port, a host name that never resolves, a server that
answers 404 to everything and one that answers a web page each raise one clear error naming the URL within
seconds, not after max_wait of retries; the retries start once Solr has answered the client. The command line
advises starting the local Solr only for the local launcher's default URL.

The 5-second bounds are behavioural (no retries with backoff happened), not benchmarks."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from typing import Iterator

import pytest
from netutil import free_port

from neardup_solr.errors import SolrCoreNotFoundError, SolrUnavailableError
from neardup_solr.solr.client import RetryPolicy, SolrClient

FAST = 5.0  # seconds: a first contact that took longer was retried
# A max_wait far above FAST: a first contact that waited at all shows as a failed bound, not as a slow pass.
PATIENT = RetryPolicy(max_wait=60, cap=1.0)


def _handler(answer):
    """A request handler that answers every GET and POST with ``answer(path) -> (status, content type, body)``."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def _reply(self):
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            status, content_type, body = answer(self.path)
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _reply

        def log_message(self, *args):
            pass

    return Handler


@contextmanager
def _serving(answer) -> Iterator[http.server.ThreadingHTTPServer]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(answer))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _not_found(path):
    return 404, "text/html;charset=iso-8859-1", b"<html><body><h2>HTTP ERROR 404 Not Found</h2></body></html>"


def _web_page(path):
    return 200, "text/html; charset=utf-8", b"<html><head><title>Welcome to nginx!</title></head><body></body></html>"


def _json(body: dict, status: int = 200):
    return status, "application/json;charset=utf-8", json.dumps(body).encode()


def _solr_node(path):
    """Just enough of a Solr node with the cores a and b (no core 'nosuch'), as check() and the 404 probe ask."""
    if "/solr/admin/info/system" in path:
        return _json({"responseHeader": {"status": 0}, "mode": "std", "lucene": {"solr-spec-version": "9.10.1"}})
    if "/solr/admin/cores" in path:
        return _json({"responseHeader": {"status": 0}, "status": {"b": {"name": "b"}, "a": {"name": "a"}}})
    if "/solr/admin/collections" in path:
        return _json({"error": {"msg": "Solr instance is not running in SolrCloud mode."}}, 400)
    if path.startswith(("/solr/a/", "/solr/b/")) and "/admin/ping" in path:
        return _json({"responseHeader": {"status": 0}, "status": "OK"})
    return _not_found(path)


def _raises_fast(call, error=SolrUnavailableError) -> str:
    started = time.monotonic()
    with pytest.raises(error) as caught:
        call()
    assert time.monotonic() - started < FAST
    return str(caught.value)


def test_a_closed_port_is_a_refused_connection_at_once():
    url = f"http://127.0.0.1:{free_port()}/solr/x"  # nothing listens there
    message = _raises_fast(SolrClient(url, retry=PATIENT).check)
    assert f"connection refused at {url}" in message and "not retried" in message
    # Not only check(): any first request (NearDupIndex's, a Searcher's) fails as fast.
    message = _raises_fast(SolrClient(url, retry=PATIENT, timeout=5).count)
    assert f"connection refused at {url}" in message


def test_a_host_that_never_resolves_is_named():
    url = "http://solr.example.invalid:8983/solr/x"  # RFC 2606: .invalid never resolves
    message = _raises_fast(SolrClient(url, retry=PATIENT).check)
    assert "could not resolve host solr.example.invalid" in message and url in message


def test_a_server_answering_404_to_everything_is_not_taken_for_solr():
    with _serving(_not_found) as server:
        url = f"http://127.0.0.1:{server.server_address[1]}/solr/x"
        message = _raises_fast(SolrClient(url, retry=PATIENT).check)
        assert f"{url} answered HTTP 404" in message and "does not answer as a Solr node does" in message
        assert "host, port and path" in message and "<html" not in message.lower()
        _raises_fast(SolrClient(url, retry=PATIENT).count)


def test_a_web_page_is_not_solrs_answer():
    with _serving(_web_page) as server:
        url = f"http://127.0.0.1:{server.server_address[1]}/solr/x"
        message = _raises_fast(SolrClient(url, retry=PATIENT).check)
        assert f"{url}/admin/ping answered HTTP 200 with a web page ('Welcome to nginx!')" in message
        assert "host, port and path" in message
        message = _raises_fast(SolrClient(url, retry=PATIENT).count)
        assert f"{url}/select answered HTTP 200" in message


def test_a_missing_core_on_a_solr_node_lists_the_cores_there():
    with _serving(_solr_node) as server:
        node = f"http://127.0.0.1:{server.server_address[1]}/solr"
        message = _raises_fast(SolrClient(f"{node}/nosuch", retry=PATIENT).check, SolrCoreNotFoundError)
        assert f"{node}/nosuch answered HTTP 404" in message and "no core 'nosuch'" in message
        assert "cores there: a, b" in message
        SolrClient(f"{node}/a", retry=PATIENT).check()  # the node itself is fine


def test_after_a_first_answer_a_refused_connection_is_waited_out_within_max_wait():
    with _serving(_solr_node) as server:
        client = SolrClient(f"http://127.0.0.1:{server.server_address[1]}/solr/a",
                            retry=RetryPolicy(max_wait=1.5, cap=0.3))
        client.check()
    # Solr has answered this client; now nothing listens on its port (a restart, say): the retries apply.
    started = time.monotonic()
    with pytest.raises(SolrUnavailableError) as caught:
        client.get_json("admin/ping")
    waited = time.monotonic() - started
    assert 1.4 < waited < FAST
    assert "connection refused" in str(caught.value) and "attempt(s) over" in str(caught.value)
    assert "not retried" not in str(caught.value)


def _cli(args: list[str], tmp_path, **env: str) -> tuple[subprocess.CompletedProcess, float]:
    environment = {k: v for k, v in os.environ.items() if k != "SOLR_URL"}
    environment.update(HOME=str(tmp_path), NEARDUP_SOLR_HOME=str(tmp_path / "solr"), **env)
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "neardup_solr.cli", *args], capture_output=True, text=True,
                          timeout=60, env=environment)
    return proc, time.monotonic() - started


def test_the_command_line_names_another_url_and_does_not_advise_starting_the_local_solr(tmp_path):
    url = f"http://127.0.0.1:{free_port()}/solr/x"
    # --max-wait far above the bound: the first contact does not wait, whatever it allows.
    proc, took = _cli(["near-dups", "1", "--solr-url", url, "--max-wait", "60"], tmp_path)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 3 and len(lines) == 1, proc.stderr
    assert f"connection refused at {url}" in lines[0] and "host, port and path" in lines[0]
    assert "solr start" not in lines[0] and "waiting for it" not in proc.stderr
    assert took < 20  # the interpreter's start included; without the fail-fast it is 60 s of retries


def test_the_command_line_advises_starting_the_local_solr_for_its_default_url(tmp_path):
    port = free_port()
    proc, took = _cli(["near-dups", "1", "--max-wait", "60"], tmp_path, NEARDUP_SOLR_PORT=str(port))
    assert proc.returncode == 3 and "neardup-solr solr start" in proc.stderr, proc.stderr
    assert f"connection refused at http://127.0.0.1:{port}/solr/neardup" in proc.stderr
    assert took < 20
