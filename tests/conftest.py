"""Shared fixtures. Integration tests talk to a real Solr: ``SOLR_URL`` if set, otherwise a local Solr that
this session starts (from Maven Central jars, on 127.0.0.1, free port, throwaway data dir) and stops at the end.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from neardup_solr.solr_client import SolrClient
from neardup_solr.solr_local import LocalSolr


@pytest.fixture(scope="session")
def local_solr():
    """The LocalSolr this session started, or None when SOLR_URL points elsewhere."""
    if os.environ.get("SOLR_URL"):
        yield None
        return
    data_dir = Path(tempfile.mkdtemp(prefix="neardup-test-solr-"))
    solr = LocalSolr(port=0, data_dir=data_dir)
    solr.start()
    try:
        yield solr
    finally:
        solr.stop()


@pytest.fixture(scope="session")
def solr_url(local_solr) -> str:
    return os.environ["SOLR_URL"].rstrip("/") if local_solr is None else local_solr.core_url


@pytest.fixture()
def solr(solr_url) -> SolrClient:
    """A client on an empty core (every test starts from nothing)."""
    client = SolrClient(solr_url)
    client.delete_all()
    return client
