"""The Docker backend: exercised where an engine exists, skipped cleanly where there is none."""

from __future__ import annotations

import pytest

from neardup_solr import settings
from neardup_solr.errors import LauncherError
from neardup_solr.backends.docker import IMAGE, DockerSolr, docker_available


def test_docker_backend_pins_the_launcher_version():
    assert IMAGE == f"solr:{settings.SOLR_VERSION}"


@pytest.mark.skipif(docker_available(), reason="a Docker engine is available here")
def test_without_an_engine_the_error_says_what_to_use_instead():
    with pytest.raises(LauncherError, match="neardup-solr solr start"):
        DockerSolr(port=18983).start(timeout=5)


@pytest.mark.skipif(not docker_available(), reason="no Docker engine on this machine")
def test_docker_solr_answers_ping():  # pragma: no cover - needs an engine
    solr = DockerSolr(port=18983, name="neardup-solr-sdk-test")
    try:
        result = solr.start()
        assert result.url.endswith("/solr/neardup")
    finally:
        solr.stop()
