"""The no-Docker launcher through the CLI: start, ping, idempotent start/stop, nothing left behind; the JVM
exits on OOM, buffers fit the heap, and start() waits out an update-log replay after a crash."""

from __future__ import annotations

import base64
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from netutil import free_port, listening_addresses
from solr_key_pair import PUBLIC_KEY, key_pair_java_options

from neardup_solr.solr.backends.local import LocalSolr, ram_buffer_mb
from neardup_solr.errors import LauncherError

pytestmark = [pytest.mark.solr, pytest.mark.slow]

BIN_DIR = str(Path(sys.executable).parent)


def _cli(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "neardup_solr.cli", *args], capture_output=True, text=True,
                          timeout=timeout)


def _run_printed(command: str, timeout=120):
    """Run a command exactly as the CLI printed it (``neardup-solr ...`` from this venv's bin)."""
    env = {**os.environ, "PATH": BIN_DIR + os.pathsep + os.environ.get("PATH", "")}
    return subprocess.run(shlex.split(command), capture_output=True, text=True, timeout=timeout, env=env)


def _stop_hint(stdout: str) -> str:
    return stdout.split("stop with: ", 1)[1].split(")", 1)[0]


def _cmdline(pid) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")


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

        # The JVM dies on an OutOfMemoryError instead of running on with a closed IndexWriter, and its
        # indexing buffer is sized from the heap (2g, one core: the 256 MB cap).
        pid = int((data_dir / "solr.pid").read_text())
        cmdline = _cmdline(pid)
        assert "-XX:+ExitOnOutOfMemoryError" in cmdline
        assert "-Dsolr.ramBufferSizeMB=256" in cmdline
    finally:
        # The stop command exactly as `solr start` printed it (it names the non-default data dir).
        hint = _stop_hint(started.stdout)
        assert hint == f"neardup-solr solr stop --port {port} --data-dir {data_dir.resolve()}"
        t0 = time.monotonic()
        stopped = _run_printed(hint)
        stop_seconds = time.monotonic() - t0
    assert stopped.returncode == 0 and "stopped" in stopped.stdout
    assert stop_seconds < 10
    assert _our_java_pids(data_dir) == []
    with pytest.raises(requests.ConnectionError):
        requests.get(f"http://127.0.0.1:{port}/solr/neardup/admin/ping", timeout=5)

    nothing = _cli("solr", "stop", *common)
    assert nothing.returncode == 0 and "nothing to stop" in nothing.stdout
    assert _cli("solr", "status", *common).returncode == 1


def test_ram_buffers_are_sized_from_the_heap_or_refused_with_the_numbers():
    assert ram_buffer_mb("2g", 1) == 256            # capped at the configset's old fixed value
    assert ram_buffer_mb("1g", 4) == 64             # a quarter of the heap shared by 4 cores
    assert ram_buffer_mb("512m", 2) == 64
    with pytest.raises(LauncherError, match=r"512m \(512 MB\) cannot hold the indexing buffers of 16 cores.*--heap 1024m"):
        ram_buffer_mb("512m", 16)
    with pytest.raises(LauncherError, match="too small"):
        ram_buffer_mb("128m", 1)
    refused = _cli("solr", "start", "--port", str(free_port()), "--heap", "100m")
    assert refused.returncode == 2
    assert refused.stderr.strip().count("\n") == 0 and "--heap 256m" in refused.stderr


def test_start_returns_only_when_the_core_accepts_updates_after_a_crash(tmp_path):
    """kill -9 while unflushed updates sit in the update log: on restart Solr replays it while the core already
    answers ping, and until then real-time gets of replayed ids fail with HTTP 500 (lookupLog is null)."""
    port = free_port()
    solr = LocalSolr(port=port, data_dir=tmp_path / "solr")
    solr.start()
    url = solr.core_url
    docs = [{"id": f"d{i}", "content": f"record {i}", "content_ng": [f"t{i}_{j}" for j in range(200)]}
            for i in range(6000)]
    for k in range(0, len(docs), 500):
        requests.post(f"{url}/update", json=docs[k:k + 500], timeout=60).raise_for_status()   # no commit
    os.kill(solr.pid(), signal.SIGKILL)
    time.sleep(0.5)
    try:
        restarted = solr.start()
        assert restarted.replay_wait > 0   # ping answered while the log was still being replayed, and start waited
        # The very first requests after start() returns: a real-time get of a replayed id, then updates.
        got = requests.get(f"{url}/get", params={"id": "d5", "wt": "json"}, timeout=30)
        assert got.status_code == 200, got.text[:300]
        assert got.json()["doc"]["id"] == "d5"
        added = requests.post(f"{url}/update", params={"commit": "true"}, json=docs[:3], timeout=60)
        assert added.status_code == 200, added.text[:300]
        assert solr.update_log_state() == 3   # ACTIVE: the replay is over
        count = requests.get(f"{url}/select", params={"q": "*:*", "rows": 0, "wt": "json"}, timeout=30).json()
        assert count["response"]["numFound"] == len(docs)   # nothing lost with the crash
    finally:
        # `solr stop --port P` finds this node although it runs from a non-default data dir.
        stopped = _cli("solr", "stop", "--port", str(port))
    assert stopped.returncode == 0 and f"Solr on port {port} stopped" in stopped.stdout
    assert not solr.is_running()


def test_a_node_given_a_key_pair_signs_with_it_and_one_it_cannot_read_fails_the_start_at_once(tmp_path,
                                                                                              monkeypatch):
    """solr.xml's pkiHandler*KeyPath properties (what the suite gives every node: tests/solr_key_pair.py). A key
    Solr cannot read ends the launcher's JVM with the reason in the log tail, instead of the start waiting for its
    deadline with Jetty's threads alive."""
    options = key_pair_java_options()
    if not options:
        pytest.skip("openssl is not on PATH to make a key pair")
    base = os.environ.get("NEARDUP_JAVA_OPTIONS", "")
    monkeypatch.setenv("NEARDUP_JAVA_OPTIONS", " ".join([base, *options]))
    solr = LocalSolr(port=free_port(), data_dir=tmp_path / "given", heap="512m")
    solr.start()
    try:
        served = requests.get(f"{solr.base_url}/admin/info/key", params={"wt": "json"}, timeout=10)
        assert served.json()["key"] == base64.b64encode(PUBLIC_KEY.read_bytes()).decode()
    finally:
        solr.stop()

    unreadable = tmp_path / "not-a-key.pem"
    unreadable.write_text("-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n")
    monkeypatch.setenv("NEARDUP_JAVA_OPTIONS", f"{base} -DpkiHandlerPrivateKeyPath={unreadable.as_uri()} "
                                               f"-DpkiHandlerPublicKeyPath={PUBLIC_KEY.as_uri()}")
    broken = LocalSolr(port=free_port(), data_dir=tmp_path / "unreadable", heap="512m")
    with pytest.raises(LauncherError, match=r"(?s)exited during start-up \(code 1\).*Bad PublicKeyHandler"):
        broken.start(timeout=120)
    assert not broken.is_running()
