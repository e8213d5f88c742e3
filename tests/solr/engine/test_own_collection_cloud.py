"""Near-duplicate detection on a user's own collection on a local SolrCloud (issue 45, "on a core and on the local
SolrCloud"): a user's collection of 2 shards x 2 replicas made from tests/data/user_configset, filled by plain
JSON, pysolr and CSV, then install (a companion collection of the same layout), backfill and sync --follow while
more is posted, replaced, edited and deleted; the same report pairs and lookups as the same data indexed by
``index`` into the neardup collection on the same cluster (the scenario of tests/solr/engine/test_own_collection.py).

The module runs on the session's shared cluster (``shared_cloud`` in conftest.py: ZooKeeper and 2 nodes), whatever
``NEARDUP_TEST_BACKEND`` says.
"""

from __future__ import annotations

import pytest
import requests

from neardup_solr.engine import companion_sync
from neardup_solr.engine.sync import open_syncer
from neardup_solr.solr.client import SolrClient
from neardup_solr.solr.cluster import cluster_status, create_collection, list_collections
from test_own_collection import corpus, run_cli, same_pairs_scenario  # noqa: F401 (corpus: a fixture)
from usercoll import USER_CONFIGSET, UserCore

pytestmark = [pytest.mark.solr, pytest.mark.slow]


@pytest.fixture(scope="module")
def cloud(shared_cloud):
    """The session's cluster; the user's collection made on it (2 shards x 2 replicas) is dropped at the end."""
    yield shared_cloud
    for name in ("user_articles", "user_articles_neardup"):
        requests.get(f"{shared_cloud.node_urls[0]}/admin/collections", params={"action": "DELETE", "name": name},
                     timeout=120)


def test_same_pairs_on_a_cloud_collection_of_the_users(cloud, corpus, tmp_path, monkeypatch):  # noqa: F811
    node = cloud.node_urls[0]
    create_collection(node, "user_articles", 2, 2, configset="user_articles", conf_dir=USER_CONFIGSET / "conf")
    user = UserCore(tmp_path, node, "user_articles")
    schema_before = user.schema()
    neardup = SolrClient(cloud.collection_url)
    neardup.delete_all()
    same_pairs_scenario(user, neardup, corpus, tmp_path)
    # The companion has the user's layout.
    shards = cluster_status(node, "user_articles_neardup")["collections"]["user_articles_neardup"]["shards"]
    assert len(shards) == 2 and all(len(s["replicas"]) == 2 for s in shards.values())
    # Deletions found by counting key ranges on both collections (every shard answers the counts).
    monkeypatch.setattr(companion_sync, "_FENCE_EVERY", 10)
    syncer = open_syncer(SolrClient(user.url), reconcile_interval=3600.0)
    assert syncer.reconcile() == 0 and syncer.last_reconcile == "every key"
    keys = sorted(user.docs("id"))
    gone = [keys[5], keys[len(keys) // 2], keys[-1]]
    user.delete(gone)
    assert syncer.reconcile() == 3 and syncer.last_reconcile == "ranges"
    companion = SolrClient(f"{node}/user_articles_neardup")
    assert all(companion.count(filters=["{!term f=id v=$k}"], params=[("k", key)]) == 0 for key in gone)

    documents = user.raw_documents()
    code, _, err = run_cli("uninstall", "--solr-url", user.url)
    assert code == 0, err
    assert "user_articles_neardup" not in list_collections(node)
    assert user.schema() == schema_before and user.raw_documents() == documents
