"""The package as users install it: the wheel built from this tree, installed into a fresh virtualenv outside
the checkout, starts its own Solr (the configset, solr.xml and the launcher's Maven module come from the
wheel), indexes a file, answers a lookup, and serves /ready and a lookup over HTTP. Everything it starts is
stopped. Solr's jars come from ~/.m2 and the dependencies from pip's cache, so this takes about a minute."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request

import pytest

from netutil import free_port
from repo_paths import REPO

pytestmark = [pytest.mark.slow]


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))}\n{proc.stdout}\n{proc.stderr}"
    return proc


def http(url: str, body: dict | None = None) -> tuple[int, dict]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


@pytest.mark.skipif(shutil.which("mvn") is None or shutil.which("java") is None,
                    reason="needs Java and Maven to build the launcher, as `neardup-solr solr start` does")
def test_wheel_installs_starts_solr_indexes_and_serves(tmp_path):
    wheels = tmp_path / "wheels"
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(REPO)], timeout=300)
    wheel = next(wheels.glob("neardup_solr-*.whl"))
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)], timeout=120)
    python, cli = venv / "bin" / "python", venv / "bin" / "neardup-solr"
    # Without PYTHONPATH: pointing at a checkout (as a run from a worktree does), it shows pip the checkout's
    # neardup_solr.egg-info (written by the wheel build), and pip takes the package for installed already.
    env = {k: v for k, v in os.environ.items() if k not in ("SOLR_URL", "PYTHONPATH", "NEARDUP_SOLR_CONFIG")}
    run([str(python), "-m", "pip", "install", "-q", f"{wheel}[service]"], env=env, timeout=600)

    port, service_port = free_port(), free_port()
    env.update(NEARDUP_SOLR_PORT=str(port), NEARDUP_SOLR_HOME=str(tmp_path / "solr"),
               NEARDUP_SOLR_RUN_DIR=str(tmp_path / "run"), HOME=os.environ.get("HOME", str(tmp_path)))
    work = tmp_path / "work"  # outside the checkout: nothing of the source tree is importable from here
    work.mkdir()
    where = run([str(python), "-c", "import neardup_solr, neardup_solr.solr.settings as s; "
                                    "print(neardup_solr.__file__); print(s.solr_config_dir())"],
                env=env, cwd=work, timeout=60).stdout.split()
    assert where[0].startswith(str(venv)) and where[1].startswith(str(venv)), where
    # The wheel carries the compiled signing kernel (built where a C compiler is, as on every machine here).
    signing = run([str(python), "-c", "from neardup_solr.text import kernel; print(kernel.describe())"],
                  env=env, cwd=work, timeout=60).stdout.strip()
    assert signing == "compiled kernel" or shutil.which("cc") is None, signing
    assert run([str(cli), "--version"], env=env, cwd=work, timeout=60).stdout.strip() == "neardup-solr 0.1.0"

    server = None
    try:
        started = run([str(cli), "solr", "start"], env=env, cwd=work, timeout=300)
        assert f"http://127.0.0.1:{port}/solr/neardup" in started.stdout
        (work / "docs.txt").write_text(
            "1 Art's Delicatessen 12224 Ventura Blvd. Studio City\n"
            "2 Art's Deli 12224 Ventura Blvd. Studio City\n"
            "3 Cafe Bizou 14016 Ventura Blvd. Sherman Oaks\n", encoding="utf-8")
        indexed = run([str(cli), "index", "docs.txt", "--json", "-q"], env=env, cwd=work, timeout=120)
        assert json.loads(indexed.stdout)["indexed"] == 3
        lookup = run([str(cli), "near-dups", "1", "--writeup-ranking"], env=env, cwd=work, timeout=60)
        assert "2: Art's Deli 12224 Ventura Blvd. Studio City" in lookup.stdout

        server = subprocess.Popen([str(cli), "serve", "--port", str(service_port)], env=env, cwd=work,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        base = f"http://127.0.0.1:{service_port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                status, ready = http(f"{base}/ready")
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, server.stdout.read() if server.stdout else ""
                time.sleep(0.3)
        assert status == 200 and ready["status"] == "ready", ready
        status, found = http(f"{base}/v1/near-dups", {"text": "Art's Deli 12224 Ventura Blvd. Studio City",
                                                       "min_jaccard": 0.2})
        assert status == 200 and {r["id"] for r in found["results"]} >= {"1", "2"}, found
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        subprocess.run([str(cli), "solr", "stop"], env=env, cwd=work, capture_output=True, timeout=60)
