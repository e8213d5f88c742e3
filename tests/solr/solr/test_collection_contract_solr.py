"""The collection port's contract (``tests/collection_contract.py``) held to :class:`SolrCollection` on a real core
(the session's) and on a SolrCloud collection of two shards (the shared local cluster,
``tests/conftest.py::shared_cloud``): the same functions that ``tests/unit/solr/test_collection_contract.py``
runs against the collection in memory, so that what the engines are tested on without a JVM is what Solr does.

Every test of the module runs on both; the module is in the shared cluster's worker group (it asks for the
cluster only when a ``cloud`` test runs, so the group is named here rather than found by conftest.py), and the
cloud's half is marked slow like the other cluster modules."""

from __future__ import annotations

import pytest

from collection_contract import *  # noqa: F401,F403 (the contract's test functions, collected here)
from neardup_solr.solr.collection import SolrCollection

pytestmark = [pytest.mark.solr, pytest.mark.xdist_group("shared-cloud")]


@pytest.fixture(params=["core", pytest.param("cloud", marks=pytest.mark.slow)])
def coll(request) -> SolrCollection:
    if request.param == "core":
        client = request.getfixturevalue("solr")  # emptied for each test
    else:
        client = request.getfixturevalue("shared_cloud_client")
        client.delete_all()
    collection = SolrCollection(client)
    collection.forget_group_numbers()  # the blocks are kept by url, and every test here has the same one
    return collection
