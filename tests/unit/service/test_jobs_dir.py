"""Where the service keeps its jobs: a configured directory outlives the service, a temporary one made because
none was configured is removed when the service stops (it had been left in /tmp by every run)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the service's extra packages are not installed")
from fastapi.testclient import TestClient  # noqa: E402

from neardup_solr.service import ServiceConfig, create_app  # noqa: E402

NO_SOLR = "http://127.0.0.1:9/solr/none"


def test_a_temporary_jobs_dir_is_removed_when_the_service_stops(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.delenv("NEARDUP_SERVICE_JOBS_DIR", raising=False)
    config = ServiceConfig(solr_url=NO_SOLR)
    with TestClient(create_app(config)) as http:
        assert http.get("/health").status_code == 200
        jobs_dir = config.jobs_dir
        assert jobs_dir is not None and jobs_dir.parent == tmp_path and jobs_dir.is_dir()
    assert not jobs_dir.exists()


def test_a_configured_jobs_dir_and_its_jobs_stay(tmp_path):
    config = ServiceConfig(solr_url=NO_SOLR, jobs_dir=tmp_path / "jobs")
    with TestClient(create_app(config)) as http:
        http.get("/health")
        (Path(config.jobs_dir) / "kept").write_text("a job's file")
    assert (tmp_path / "jobs" / "kept").read_text() == "a job's file"
