"""Near-duplicate detection on a user's own collection on a local SolrCloud (issue 37, "on a core and on the local
SolrCloud"): a user's collection of 2 shards x 2 replicas made from tests/data/user_configset, filled by plain
JSON, pysolr and CSV, then install, backfill and sync --follow while more is posted, replaced, edited and
deleted; the same report pairs and lookups as the same data indexed by ``index`` into the neardup collection
(2 shards x 1 replica) on the same cluster (the scenario of tests/solr/engine/test_own_collection.py).

The module runs on the session's shared cluster (``shared_cloud`` in conftest.py: ZooKeeper and 2 nodes), whatever
``NEARDUP_TEST_BACKEND`` says.
"""

from __future__ import annotations

import pytest
import requests

from neardup_solr.solr.client import SolrClient
from neardup_solr.solr.documents import SETTINGS_DOC_ID
from neardup_solr.solr.cluster import create_collection
from test_own_collection import (  # noqa: F401 (corpus: a fixture)
    USER_FIELDS, corpus, only_user_fields, run_cli, same_pairs_scenario)
from usercoll import USER_CONFIGSET, UserCore

pytestmark = [pytest.mark.solr, pytest.mark.slow]


@pytest.fixture(scope="module")
def cloud(shared_cloud):
    """The session's cluster; the user's collection made on it (2 shards x 2 replicas) is dropped at the end."""
    yield shared_cloud
    requests.get(f"{shared_cloud.node_urls[0]}/admin/collections", params={"action": "DELETE",
                 "name": "user_articles"}, timeout=120).raise_for_status()


def test_same_pairs_on_a_cloud_collection_of_the_users(cloud, corpus, tmp_path):  # noqa: F811
    node = cloud.node_urls[0]
    create_collection(node, "user_articles", 2, 2, configset="user_articles", conf_dir=USER_CONFIGSET / "conf")
    user = UserCore(tmp_path, node, "user_articles")
    schema_before = user.schema()
    neardup = SolrClient(cloud.collection_url)
    neardup.delete_all()
    same_pairs_scenario(user, neardup, corpus, tmp_path)

    # uninstall leaves the schema as it was, on every replica, and the documents with the user's fields only.
    users_fields = only_user_fields(user.docs())
    users_fields.pop(SETTINGS_DOC_ID)
    code, _, err = run_cli("uninstall", "--solr-url", user.url)
    assert code == 0, err
    assert user.schema() == schema_before
    after = user.docs()
    assert only_user_fields(after) == users_fields
    assert all(set(doc) <= set(USER_FIELDS) | {"_version_"} for doc in after.values())
