"""neardup_solr.solr.failover without a cluster: a client given several URLs of one core moves from a node that
refuses connections to one that answers, and learns that it talks to a single core. SolrCloud's fail-over
(live nodes, shard leaders) is tests/solr/faults/test_cloud_faults.py's, on a real cluster."""

from __future__ import annotations

import logging

import pytest
from netutil import free_port

from neardup_solr.errors import SolrUnavailableError
from neardup_solr.solr.client import RetryPolicy, SolrClient


def test_a_refusing_node_is_left_for_one_that_answers(solr, caplog):
    dead = f"http://127.0.0.1:{free_port()}/solr/{solr.collection}"
    client = SolrClient(f"{dead},{solr.url}", retry=RetryPolicy(max_wait=5))
    assert client.nodes == [dead.rsplit("/", 1)[0], solr.node_url]
    with caplog.at_level(logging.WARNING, logger="neardup_solr.solr.client"):
        assert client.count() == 0
        assert client.count() == 0  # the second call goes straight to the node that answered
    assert client.node_url == solr.node_url
    assert client.is_cloud is False and client.is_single_core()
    switched = [r.getMessage() for r in caplog.records if "is not answering" in r.getMessage()]
    assert len(switched) == 1 and solr.node_url in switched[0]


def test_with_every_node_down_the_message_names_the_urls_and_the_attempts():
    first, second = free_port(), free_port()
    client = SolrClient(f"http://127.0.0.1:{first}/solr/c,http://127.0.0.1:{second}/solr/c",
                        retry=RetryPolicy(max_wait=0.5, base=0.05, cap=0.1))
    with pytest.raises(SolrUnavailableError) as caught:
        client.count()
    message = str(caught.value)
    assert f"127.0.0.1:{first}" in message and f"127.0.0.1:{second}" in message
    assert "connection refused" in message and "attempt(s)" in message
    assert client.is_cloud is None  # no node ever answered: still unknown
