"""The no-Docker launcher through the CLI: start, ping, idempotent start/stop, nothing left behind."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
import requests

from netutil import free_port, listening_addresses

pytestmark = [pytest.mark.solr, pytest.mark.slow]


def _cli(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "neardup_solr.cli", *args], capture_output=True, text=True,
                          timeout=timeout)


def _our_java_pids(data_dir) -> list[str]:
    out = subprocess.run(["pgrep", "-f", f"io.neardup.solr.Launcher {data_dir}"], capture_output=True, text=True)
    return out.stdout.split()


def test_start_ping_stop_lifecycle(tmp_path):
    port = free_port()
    data_dir = tmp_path / "solr"
    common = ["--port", str(port), "--data-dir", str(data_dir)]

    started = _cli("solr", "start", *common)
    assert started.returncode == 0, started.stderr
    assert f"http://127.0.0.1:{port}/solr/neardup" in started.stdout
    try:
        ping = requests.get(f"http://127.0.0.1:{port}/solr/neardup/admin/ping", params={"wt": "json"}, timeout=10)
        assert ping.json()["status"] == "OK"

        # The launcher binds the loopback interface only.
        assert listening_addresses(port) == ["127.0.0.1"]

        again = _cli("solr", "start", *common)
        assert again.returncode == 0 and "already running" in again.stdout

        status = _cli("solr", "status", *common)
        assert status.returncode == 0 and "core OK" in status.stdout
    finally:
        t0 = time.monotonic()
        stopped = _cli("solr", "stop", *common)
        stop_seconds = time.monotonic() - t0
    assert stopped.returncode == 0 and "stopped" in stopped.stdout
    assert stop_seconds < 10
    assert _our_java_pids(data_dir) == []
    with pytest.raises(requests.ConnectionError):
        requests.get(f"http://127.0.0.1:{port}/solr/neardup/admin/ping", timeout=5)

    nothing = _cli("solr", "stop", *common)
    assert nothing.returncode == 0 and "nothing to stop" in nothing.stdout
    assert _cli("solr", "status", *common).returncode == 1
