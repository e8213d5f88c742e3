"""Waiting for a Solr that is starting is asked for, not the default (issue 45, which reverses issue 26's
default): ``check(wait_if_refused=True)`` waits within max_wait for a node that refuses connections, and says
so; a plain ``check()`` and the command line fail at once on a URL that has never answered, and a local
launcher URL where nothing was ever started says how to start it. tests/unit/solr/test_first_contact.py has
the other first-contact failures (an unknown host, a 404, a page that is not Solr's)."""

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


def test_check_waits_for_a_node_that_comes_back_when_asked_to():
    port = free_port()
    servers = _serve_later(port, 1.5)
    try:
        client = SolrClient(f"http://127.0.0.1:{port}/solr/neardup", retry=RetryPolicy(max_wait=20, cap=0.5))
        started = time.monotonic()
        client.check(wait_if_refused=True)
        assert 1.0 < time.monotonic() - started < 15
    finally:
        for server in servers:
            server.shutdown()


def test_waiting_when_asked_still_stops_after_max_wait(caplog):
    client = SolrClient(f"http://127.0.0.1:{free_port()}/solr/neardup", retry=RetryPolicy(max_wait=1, cap=0.3))
    started = time.monotonic()
    with caplog.at_level("WARNING", logger="neardup_solr.solr.client"):
        with pytest.raises(SolrUnavailableError, match="connection refused"):
            client.check(wait_if_refused=True)
    assert 0.9 < time.monotonic() - started < 10
    assert any("connection refused; waiting for it" in r.getMessage() for r in caplog.records)
    started = time.monotonic()
    with pytest.raises(SolrUnavailableError, match="connection refused.*not retried"):
        client.check()  # the default: at once
    assert time.monotonic() - started < 5


def test_the_command_line_does_not_wait_for_a_url_that_never_answered(tmp_path):
    url = f"http://127.0.0.1:{free_port()}/solr/neardup"
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "neardup_solr.cli", "settings", "--solr-url", url,
                           "--max-wait", "30"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3
    assert time.monotonic() - started < 20  # --max-wait 30 was not spent
    assert "waiting for it" not in proc.stderr and f"connection refused at {url}" in proc.stderr


def test_the_local_default_url_with_nothing_started_fails_at_once(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "NEARDUP_SOLR_PORT": str(free_port()),
           "NEARDUP_SOLR_HOME": str(tmp_path / "solr")}
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "neardup_solr.cli", "settings"], capture_output=True, text=True,
                          timeout=60, env=env)
    assert proc.returncode == 3
    assert time.monotonic() - started < 20
    assert "waiting for it" not in proc.stderr and "solr start" in proc.stderr
