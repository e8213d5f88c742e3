"""The first request of a command rides out a node that is down, as every later request does (issue 26): the
client's check waits within max_wait for a node that refuses connections, the CLI says so while it waits, and a
local launcher URL where nothing was ever started still fails at once with the way out."""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
import threading
import time

import pytest
from netutil import free_port

from neardup_solr.errors import SolrUnavailableError
from neardup_solr.solr.client import RetryPolicy, SolrClient


class _Core(http.server.BaseHTTPRequestHandler):
    """Just enough of a single Solr core: a ping that answers OK, and no Collections API (not a cloud)."""

    def do_GET(self):  # noqa: N802 - the handler's API
        if "/admin/ping" in self.path:
            body, status = json.dumps({"status": "OK"}).encode(), 200
        else:
            body, status = b'{"error":{"msg":"Solr instance is not running in SolrCloud mode."}}', 400
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def _serve_later(port: int, delay: float) -> list:
    servers: list = []

    def start():
        time.sleep(delay)
        server = http.server.ThreadingHTTPServer(("127.0.0.1", port), _Core)
        servers.append(server)
        server.serve_forever()

    threading.Thread(target=start, daemon=True).start()
    return servers


def test_the_first_request_waits_for_a_node_that_comes_back():
    port = free_port()
    servers = _serve_later(port, 1.5)
    try:
        client = SolrClient(f"http://127.0.0.1:{port}/solr/neardup", retry=RetryPolicy(max_wait=20, cap=0.5))
        started = time.monotonic()
        client.check()
        assert 1.0 < time.monotonic() - started < 15
    finally:
        for server in servers:
            server.shutdown()


def test_the_first_request_still_stops_after_max_wait():
    client = SolrClient(f"http://127.0.0.1:{free_port()}/solr/neardup", retry=RetryPolicy(max_wait=1, cap=0.3))
    started = time.monotonic()
    with pytest.raises(SolrUnavailableError, match="connection refused"):
        client.check()
    assert 0.9 < time.monotonic() - started < 10
    with pytest.raises(SolrUnavailableError, match="connection refused"):
        client.check(wait_if_refused=False)  # at once


def test_the_command_line_waits_and_says_so(tmp_path):
    port = free_port()
    servers = _serve_later(port, 2.0)
    try:
        proc = subprocess.run([sys.executable, "-m", "neardup_solr.cli", "settings", "--solr-url",
                               f"http://127.0.0.1:{port}/solr/neardup", "--max-wait", "30"],
                              capture_output=True, text=True, timeout=60)
    finally:
        for server in servers:
            server.shutdown()
    assert "connection refused; waiting for it" in proc.stderr
    assert "not answering" not in proc.stderr  # it did not give up


def test_the_local_default_url_with_nothing_started_fails_at_once(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "NEARDUP_SOLR_PORT": str(free_port()),
           "NEARDUP_SOLR_HOME": str(tmp_path / "solr")}
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "neardup_solr.cli", "settings"], capture_output=True, text=True,
                          timeout=60, env=env)
    assert proc.returncode == 3
    assert time.monotonic() - started < 20
    assert "waiting for it" not in proc.stderr and "solr start" in proc.stderr
