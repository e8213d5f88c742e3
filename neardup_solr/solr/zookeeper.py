"""The live Solr nodes of a SolrCloud, read from its ZooKeeper: how a client that knows no node which is up
finds the collection (SolrJ's cloud client does the same with ``zkHost``).

Only reads, and only two things: the children of ``/live_nodes`` (one ephemeral node per running Solr node,
named ``host:port_context``) and the cluster property ``urlScheme`` (``/clusterprops.json``). After that the
client talks HTTP to the nodes and learns the rest (shards, replicas, leaders) from the Collections API, as it
does when given node URLs. The ZooKeeper client is kazoo (``pip install 'neardup-solr[cloud]'``).
"""

from __future__ import annotations

import json
import logging
from urllib.parse import unquote

from neardup_solr.errors import InvalidParameterError, SolrUnavailableError

log = logging.getLogger(__name__)
# kazoo logs every refused connection attempt as a warning; the one line that matters is our own error.
_kazoo_log = logging.getLogger(__name__ + ".kazoo")
_kazoo_log.setLevel(logging.ERROR)


def check_zk_host(zk_host: str, param: str = "zk_host") -> str:
    """``HOST:PORT[,HOST:PORT...][/chroot]``, as Solr's ``zkHost`` writes it."""
    text = zk_host.strip() if isinstance(zk_host, str) else ""
    hosts, _, chroot = text.partition("/")
    ok = bool(hosts) and all(h.rpartition(":")[0] and h.rpartition(":")[2].isdigit() for h in hosts.split(","))
    if not ok:
        raise InvalidParameterError(param, "ZooKeeper's HOST:PORT[,HOST:PORT...][/chroot]", zk_host,
                                    "e.g. 127.0.0.1:9983 or zk1:2181,zk2:2181/solr")
    return text


def node_url(node_name: str, scheme: str = "http") -> str:
    """``http://127.0.0.1:8983/solr`` from the live node name ``127.0.0.1:8983_solr``."""
    host, _, context = node_name.partition("_")
    return f"{scheme}://{host}/{unquote(context)}".rstrip("/")


def live_node_urls(zk_host: str, *, timeout: float = 10.0) -> list[str]:
    """The base URLs of the live Solr nodes registered in ZooKeeper at ``zk_host``, sorted; an empty list when
    none is running. Raises SolrUnavailableError when ZooKeeper does not answer within ``timeout``."""
    zk_host = check_zk_host(zk_host)
    try:
        from kazoo.client import KazooClient
        from kazoo.exceptions import NoNodeError
        from kazoo.handlers.threading import KazooTimeoutError
    except ImportError:
        raise InvalidParameterError("zk_host", "usable with the ZooKeeper client installed", zk_host,
                                    "pip install 'neardup-solr[cloud]' (kazoo), or give node URLs instead") from None
    # Read-only, no retries of its own: the caller's retry policy decides how long to wait for a cluster.
    zk = KazooClient(hosts=zk_host, timeout=timeout, read_only=True, connection_retry=None, command_retry=None,
                     logger=_kazoo_log)
    try:
        zk.start(timeout=timeout)
    except KazooTimeoutError:
        zk.close()
        raise SolrUnavailableError(f"ZooKeeper at {zk_host} did not answer within {timeout:.0f} s: check the "
                                   "--zk-host address (HOST:PORT[/chroot]) and that ZooKeeper runs") from None
    try:
        try:
            names = zk.get_children("/live_nodes")
        except NoNodeError:
            raise SolrUnavailableError(f"ZooKeeper at {zk_host} holds no /live_nodes: is this the cluster's "
                                       "ZooKeeper, with the right chroot (e.g. host:2181/solr)?") from None
        scheme = "http"
        try:
            data, _ = zk.get("/clusterprops.json")
            scheme = json.loads(data.decode("utf-8") or "{}").get("urlScheme", "http")
        except (NoNodeError, ValueError):
            pass
    finally:
        zk.stop()
        zk.close()
    return sorted(node_url(name, scheme) for name in names)
