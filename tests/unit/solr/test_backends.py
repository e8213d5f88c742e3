"""Every backend has the shape of ``Backend``: start, stop, status and core_url, with a StartResult from start.
Checked on instances that are not running (starting each is what the launcher, cloud and docker tests do); and when
the launcher counts as built, and what a node that ends during its start is reported with."""

from __future__ import annotations

import inspect
import os
import subprocess

import pytest

from neardup_solr.solr.backends import Backend, StartResult, local
from neardup_solr.errors import LauncherError
from neardup_solr.solr.backends.cloud import LocalSolrCloud, _wait_for_start
from neardup_solr.solr.backends.docker import DockerSolr, docker_available
from neardup_solr.solr.backends.local import LocalSolr


def _backends(tmp_path):
    return [
        LocalSolr(port=18999, data_dir=tmp_path / "single"),
        LocalSolrCloud(port=18998, data_dir=tmp_path / "cloud"),
        DockerSolr(port=18997, name="neardup-solr-protocol-test"),
    ]


@pytest.mark.parametrize("index", range(3), ids=["local", "cloud", "docker"])
def test_each_backend_is_a_backend(index, tmp_path):
    backend = _backends(tmp_path)[index]
    assert isinstance(backend, Backend)
    assert inspect.signature(backend.start).return_annotation in (StartResult, "StartResult")
    assert backend.core_url.startswith("http://127.0.0.1:") and backend.core_url.endswith("/solr/neardup")


@pytest.mark.parametrize("index", range(3), ids=["local", "cloud", "docker"])
def test_status_of_a_backend_that_is_not_running(index, tmp_path):
    backend = _backends(tmp_path)[index]
    if isinstance(backend, DockerSolr) and docker_available():
        pytest.skip("a Docker engine is available here: the container's state is the engine's")
    status = backend.status()
    assert status["running"] is False
    assert status["core_url"] is None


def test_something_else_is_not_a_backend():
    class HalfBackend:
        core_url = "http://127.0.0.1:1/solr/neardup"

        def start(self, timeout=1.0):
            raise NotImplementedError

    assert not isinstance(HalfBackend(), Backend)


def test_the_launcher_is_built_once_after_a_source_change_even_when_maven_rewrites_nothing(tmp_path, monkeypatch):
    """Maven leaves the classpath file alone when the jars are the same: the build must still count as newer than
    the changed source, or every start runs Maven again (it did, 3-4 CPU-seconds a start, after Launcher.java
    changed)."""
    launcher = tmp_path / "launcher"
    source = launcher / "src" / "main" / "java" / "Launcher.java"
    jar = tmp_path / "solr-core.jar"
    for path in (launcher / "pom.xml", source, jar):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    solr = LocalSolr(port=1, data_dir=tmp_path / "data")
    solr.launcher_dir = launcher
    solr._main_class().parent.mkdir(parents=True)
    solr._main_class().write_bytes(b"class")
    solr._classpath_file().write_text(str(jar))
    for built in (solr._main_class(), solr._classpath_file()):
        os.utime(built, (1_000_000, 1_000_000))  # built long before the source was edited
    runs = []
    monkeypatch.setattr(local.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(local.subprocess, "run",
                        lambda cmd, **kw: runs.append(cmd) or subprocess.CompletedProcess(cmd, 0, "", ""))
    assert solr.build().endswith(str(jar))
    assert solr.build().endswith(str(jar))
    assert len(runs) == 1 and runs[0][0] == "/usr/bin/mvn"


def test_a_node_that_exits_during_start_up_is_reported_with_the_errors_of_its_solr_log(tmp_path):
    out_file, solr_log = tmp_path / "launcher.out", tmp_path / "solr.log"
    out_file.write_text("java.lang.IllegalStateException: The CoreContainer is unavailable!\n")
    solr_log.write_text(
        "2026-12-07T04:01:24,100 INFO  (main) [o.a.s.c.CoreContainer] starting\n"
        "2026-12-07T04:01:24,201 ERROR (main) [o.a.s.s.CoreContainerProvider] Could not start Solr.\n"
        "java.lang.RuntimeException: Bad PublicKeyHandler configuration.\n"
        "\tat org.apache.solr.security.SolrNodeKeyPair.createKeyPair(SolrNodeKeyPair.java:60)\n"
        "Caused by: java.security.spec.InvalidKeySpecException: invalid key format\n")
    exited = subprocess.Popen(["false"])
    exited.wait()
    with pytest.raises(LauncherError) as raised:
        _wait_for_start(exited, lambda: False, "Solr node 1", out_file, float("inf"), "late", 0.01,
                        solr_log=solr_log)
    said = str(raised.value)
    assert said.startswith("Solr node 1 exited during start-up (code 1)") and "CoreContainer is unavailable" in said
    assert said.endswith(f"{solr_log} says:\n"
                         "2026-12-07T04:01:24,201 ERROR (main) [o.a.s.s.CoreContainerProvider] Could not start Solr.\n"
                         "java.lang.RuntimeException: Bad PublicKeyHandler configuration.\n"
                         "Caused by: java.security.spec.InvalidKeySpecException: invalid key format")
