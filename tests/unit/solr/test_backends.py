"""Every backend has the shape of ``Backend``: start, stop, status and core_url, with a StartResult from start.
Checked on instances that are not running (starting each is what the launcher, cloud and docker tests do)."""

from __future__ import annotations

import inspect

import pytest

from neardup_solr.solr.backends import Backend, StartResult
from neardup_solr.solr.backends.cloud import LocalSolrCloud
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
