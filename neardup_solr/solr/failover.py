"""The nodes behind one core or collection, and moving between them: whether it is a SolrCloud (Collections API
``CLUSTERSTATUS``), its live nodes and each shard's replicas and leader, the next node to try when the one in use
stops answering, and the messages that say which node or shard is down and how to bring it back.

:class:`NodeFailover` holds that state for :class:`~neardup_solr.solr.client.SolrClient`, whose retry loop asks
it where to go next.
"""

from __future__ import annotations

import logging
import socket
import threading
from typing import Any
from urllib.parse import unquote, urlsplit

import requests

from neardup_solr.errors import SolrCoreNotFoundError, SolrRequestError, SolrUnavailableError
from neardup_solr.solr import settings
from neardup_solr.solr.failures import solr_error_text

log = logging.getLogger("neardup_solr.solr.client")  # the client's log, as before the move


class NodeFailover:
    """The node requests go to, the others known to serve the same collection, and what the cluster says of them.

    A single core (no cluster) is asked once whether it is a SolrCloud and then talked to exactly as before: one
    URL, no extra request per call."""

    url: str
    collection: str
    timeout: float
    session: requests.Session

    def _init_nodes(self, bases: list[str], scheme: str, *, local_default: bool = False) -> None:
        self._scheme = scheme
        # The URL is the local launcher's default: only then is "neardup-solr solr start" the way out to advise.
        self._local_default = local_default
        self._lock = threading.Lock()
        self._nodes = bases           # every node known to serve the collection: the user's first, then learned
        self._node = bases[0]         # the node requests go to now
        self._cloud: bool | None = None   # None until the node has been asked (see _discover)
        self._live: set[str] | None = None
        self._shard_nodes: dict[str, list[str]] = {}
        self._shard_leaders: dict[str, str] = {}
        self._switches_said: set[tuple[str, str]] = set()  # node switches already warned of (see _fail_over)

    def _environment(self, node: str) -> dict[str, Any]:
        raise NotImplementedError  # the client's: what requests takes from the environment for ``node``

    @property
    def is_cloud(self) -> bool | None:
        """True on a SolrCloud, False on a single core, None until the client has asked (at :meth:`check`)."""
        return self._cloud

    def is_single_core(self) -> bool:
        """True when this is known to be a single core, not a SolrCloud collection; asks the node once while
        that is unknown (a node that cannot be asked counts as a cloud: the answer callers take as the safe one)."""
        if self._cloud is None:
            self._discover()
        return self._cloud is False

    @property
    def node_url(self) -> str:
        """The node (``http://host:port/solr``) requests go to now."""
        return self._node

    @property
    def nodes(self) -> list[str]:
        """Every node known to serve the collection: the user's, then the cluster's live nodes."""
        with self._lock:
            return list(self._nodes)

    @property
    def _what(self) -> str:
        if self._cloud:
            return f"collection {self.collection!r}"
        return f"core {self.collection!r}"

    def _discover(self, nodes: list[str] | None = None) -> bool:
        """Ask a node (the one in use, or the first of ``nodes`` that answers) whether it is a SolrCloud, and if
        so which nodes are live and which nodes host each shard. Returns True when some node answered.

        A single node answers 400 ("not running in SolrCloud mode"): from then on the client never asks again."""
        for node in nodes or [self._node]:
            try:
                resp = self.session.get(f"{node}/admin/collections", timeout=min(self.timeout, 10),
                                        params={"action": "CLUSTERSTATUS", "collection": self.collection,
                                                "wt": "json"}, **self._environment(node))
            except (requests.ConnectionError, requests.Timeout):
                continue
            if resp.status_code == 200:
                try:
                    cluster = resp.json().get("cluster", {})
                except ValueError:
                    continue
                self._learn(cluster)
                return True
            if resp.status_code in (400, 404) and self._cloud is None:
                # Not a SolrCloud (400 "not running in SolrCloud mode"; 404 where the Collections API is
                # missing): a single core, as before.
                self._cloud = False
                return True
            if resp.status_code in (401, 403):
                return False
        return False

    def _learn(self, cluster: dict) -> None:
        live = {self._node_url(name) for name in cluster.get("live_nodes", [])}
        coll = cluster.get("collections", {}).get(self.collection, {})
        shard_nodes = {
            shard: sorted({rep.get("node_name", "") for rep in body.get("replicas", {}).values()})
            for shard, body in coll.get("shards", {}).items()
        }
        leaders = {
            shard: rep.get("node_name", "")
            for shard, body in coll.get("shards", {}).items()
            for rep in body.get("replicas", {}).values() if str(rep.get("leader", "")).lower() == "true"
        }
        hosting = {self._node_url(n) for nodes in shard_nodes.values() for n in nodes}
        with self._lock:
            was_cloud = self._cloud
            self._cloud = True
            self._live = live
            self._shard_nodes = shard_nodes
            self._shard_leaders = leaders
            # Any live node routes /solr/<collection>/... to the right cores; the collection's own nodes first.
            for node in sorted(live, key=lambda n: (n not in hosting, n)):
                if node not in self._nodes:
                    self._nodes.append(node)
        if not was_cloud:
            log.info("%s is a SolrCloud collection with %d shard(s); live nodes: %s", self.url, len(shard_nodes),
                     ", ".join(sorted(live)) or "none")

    def _node_url(self, node_name: str) -> str:
        """``http://127.0.0.1:8984/solr`` from ZooKeeper's node name ``127.0.0.1:8984_solr``."""
        host, _, context = node_name.partition("_")
        return f"{self._scheme}://{host}/{unquote(context)}".rstrip("/")

    def _fail_over(self, failed: str, reason: str, tried: set[str]) -> str | None:
        """After ``failed`` stopped answering: the node to try next, or None when no other one is left.

        On a cluster (or an unknown one, given several URLs) the live nodes are read again from another node
        first, so that a dead node is skipped rather than waited for."""
        tried.add(failed)
        with self._lock:
            if self._node != failed and self._node not in tried:
                return self._node  # another thread has already moved on
            others = [n for n in self._nodes if n not in tried]
        if not others or self._cloud is False:
            return None
        self._discover(others)
        with self._lock:
            live = self._live
            candidates = [n for n in self._nodes if n not in tried and (live is None or n in live)]
            if not candidates:
                return None
            self._node = candidates[0]
        # Said once per switch until a request succeeds again: while every node is down, the retry rounds
        # cycle through them, and the same warning every round buried the one line that says what is wrong.
        switch = (failed, candidates[0])
        level = logging.DEBUG if switch in self._switches_said else logging.WARNING
        self._switches_said.add(switch)
        log.log(level, "Solr node %s is not answering (%s); sending the requests for %s to node %s instead",
                failed, reason, self._what, candidates[0])
        return candidates[0]

    def shard_hosts(self, shard: str, refresh: bool = True) -> tuple[list[str], set[str] | None]:
        """The node names hosting ``shard`` and the live nodes (None when unknown), read afresh if ``refresh``."""
        if refresh and self._cloud:
            self._discover([self._node] + [n for n in self.nodes if n != self._node])
        with self._lock:
            live = self._live
            names = list(self._shard_nodes.get(shard, []))
        live_names = None if live is None else {n for n in names if self._node_url(n) in live}
        return names, live_names

    def _unreachable_leaders(self) -> dict[str, str]:
        """Shard -> leader node name, for the shards whose leader (as ZooKeeper has it) takes no connection."""
        if self._cloud:
            self._discover([self._node] + [n for n in self.nodes if n != self._node])
        with self._lock:
            leaders = dict(self._shard_leaders)
        down = {}
        for shard, name in sorted(leaders.items()):
            parts = urlsplit(self._node_url(name))
            try:
                socket.create_connection((parts.hostname, parts.port or 80), timeout=2).close()
            except OSError:
                down[shard] = name
        return down

    def _not_found(self, node: str, path: str, resp: requests.Response) -> Exception:
        """A 404: the core or collection is missing (one line naming it, never Jetty's HTML page), or the core
        is there and only this path is unknown (a short Solr message)."""
        if not path.startswith("admin/ping"):
            try:
                ping = self.session.get(f"{node}/{self.collection}/admin/ping", params={"wt": "json"},
                                        **self._environment(node),
                                        timeout=min(self.timeout, 10))
                core_missing = ping.status_code == 404
            except (requests.ConnectionError, requests.Timeout):
                core_missing = False
        else:
            core_missing = True
        if core_missing:
            return self._core_missing_error(node)
        return SolrRequestError(f"Solr at {self.url} answered HTTP 404 for {path}: {solr_error_text(resp)}",
                                status=404)

    def _core_missing_error(self, node: str) -> SolrUnavailableError:
        """A 404 for the core itself: the node is asked what it is, so that the message says whether Solr runs
        there at all (a wrong host, port or path) and, when it does, which cores or collections it has."""
        name, asked = self.collection, f"{node}/{self.collection}"
        kind, cloud, names = self._node_inventory(node)
        if kind == "other":
            origin = node[: len(node) - len(urlsplit(node).path)]
            elsewhere = (f"{origin}/solr" if node != f"{origin}/solr"
                         and self._node_inventory(f"{origin}/solr")[0] == "solr" else None)
            fix = (f"Solr answers at {elsewhere}: use {elsewhere}/{name}" if elsewhere else
                   "check the host, port and path of the URL (a Solr core's URL looks like "
                   f"http://127.0.0.1:8983/solr/{settings.CORE_NAME})")
            return SolrUnavailableError(
                f"{asked} answered HTTP 404, and {node} does not answer as a Solr node does (no Solr there, or a "
                f"wrong path): {fix}.")
        if cloud is None:
            if self._cloud is None:
                self._discover()
            cloud = bool(self._cloud)
        if names is None:
            listed = ""
        else:
            shown = ", ".join(names[:20]) + (f" and {len(names) - 20} more" if len(names) > 20 else "")
            listed = (f"; {'collections' if cloud else 'cores'} there: {shown}" if names
                      else f"; it has no {'collection' if cloud else 'core'} yet")
        if cloud:
            return SolrCoreNotFoundError(
                f"SolrCloud is running at {node}, but it has no collection {name!r} ({asked} answered HTTP 404"
                f"{listed}): create it with 'neardup-solr solr create-collection {name} --solr-url {node}', or "
                "set SOLR_URL to an existing collection"
            )
        hint = (
            "'neardup-solr solr start' creates it on the local Solr"
            if self._local_default and name == settings.CORE_NAME
            else "create it from solr_config/configsets/neardup, or set SOLR_URL to an existing core"
        )
        return SolrCoreNotFoundError(
            f"Solr is running at {node}, but it has no core {name!r} ({asked} answered HTTP 404{listed}): {hint}.")

    def _node_inventory(self, node: str) -> tuple[str, bool | None, list[str] | None]:
        """What ``node`` is: ("solr", whether it is a SolrCloud, its collections or cores), ("other", None,
        None) when it answers but not as Solr does, or ("unknown", None, None) when it does not answer the
        question (no connection, or credentials the admin API refuses); "solr" may still lack the names."""
        timeout = min(self.timeout, 10)

        def ask(path: str, params: dict) -> requests.Response | None:
            try:
                return self.session.get(f"{node}/{path}", params={**params, "wt": "json"}, timeout=timeout,
                                        **self._environment(node))
            except (requests.ConnectionError, requests.Timeout):
                return None

        info = ask("admin/info/system", {})
        if info is None or info.status_code in (401, 403):
            return "unknown", None, None
        try:
            system = info.json() if info.status_code == 200 else None
        except ValueError:
            system = None
        if not isinstance(system, dict) or not ("mode" in system or "lucene" in system):
            return "other", None, None
        cloud = system.get("mode") == "solrcloud"
        if cloud:
            listing = ask("admin/collections", {"action": "LIST"})
            key = "collections"
        else:
            listing = ask("admin/cores", {"action": "STATUS", "indexInfo": "false"})
            key = "status"
        try:
            found = listing.json().get(key) if listing is not None and listing.status_code == 200 else None
        except (ValueError, AttributeError):
            found = None
        return "solr", cloud, sorted(found) if isinstance(found, (list, dict)) else None

    def _unavailable_message(self, reason: str, attempts: int, seconds: float) -> str:
        if self._cloud:
            return (
                f"Solr is not answering at {self.url}, nor at any other live node of collection "
                f"{self.collection!r} ({reason}; {attempts} attempt(s) over {seconds:.1f} s; nodes tried: "
                f"{', '.join(self.nodes)}). Start the cluster's nodes again"
                + (" ('neardup-solr solr start --cloud' with the cluster's --data-dir)"
                   if settings.solr_url_is_local() else "")
                + ", or set SOLR_URL to the collection's URL on a node that is up (several URLs may be given, "
                "separated by commas)."
            )
        hint = (
            "Start the local one with 'neardup-solr solr start'"
            if self._local_default
            else "Check that the Solr named by SOLR_URL is up"
        )
        return (
            f"Solr is not answering at {self.url} ({reason}; {attempts} attempt(s) over {seconds:.1f} s). "
            f"{hint}, or set SOLR_URL to your Solr core's URL."
        )

    def _first_contact_error(self, failures: dict[str, str], attempts: int, seconds: float) -> SolrUnavailableError:
        """The error for a client that no node has answered yet: what was tried where, and what to check. Not
        retried, since a wrong host, port or path fails the same way every time, and 2 minutes of backoff only
        hid that."""
        tried = "; ".join(reason if reason.startswith("could not resolve") else f"{reason} at {node}/{self.collection}"
                          for node, reason in failures.items())
        head = (f"Solr is not answering at {self.url}: {tried} ({attempts} attempt(s) in {seconds:.1f} s; not "
                "retried: no Solr has answered this client yet).")
        if self._local_default:
            fix = "Start the local Solr with 'neardup-solr solr start', or set SOLR_URL to your Solr core's URL."
            return SolrUnavailableError(f"{head} {fix}", cli_message=f"{head} {fix}")
        check = "Check that Solr is running there and that the URL's host, port and path are right"
        return SolrUnavailableError(
            f"{head} {check} (the url passed to SolrClient, else SOLR_URL). To wait for a Solr that is still "
            "starting, call client.check(wait_if_refused=True) first: it waits up to the retry policy's max_wait.",
            cli_message=f"{head} {check} (--solr-url, else SOLR_URL).")

    def _leader_message(self, reason: str, attempts: int, seconds: float) -> str:
        """One line for updates the node in use could not forward to another shard's leader."""
        down = self._unreachable_leaders()
        if down:
            shards = ", ".join(f"shard {shard}'s leader on node {name}" for shard, name in down.items())
            nodes = sorted(set(down.values()))
            what = f"{shards} does not answer"
            fix = f"start node{'s' if len(nodes) > 1 else ''} {', '.join(nodes)} again"
        else:
            what = "a shard's leader does not answer the node in use"
            fix = "check that every node of the cluster is up"
        if settings.solr_url_is_local():
            fix += " ('neardup-solr solr start --cloud' with the cluster's --data-dir starts the nodes that are down)"
        return (
            f"collection {self.collection!r} cannot take updates: {what}, and no other replica has taken the lead. "
            f"Waited {seconds:.1f} s ({attempts} attempt(s) at {self.url}; last answer: {reason}). "
            f"{fix[0].upper()}{fix[1:]}, or wait until ZooKeeper has moved the lead to another replica."
        )

    def _shard_message(self, shard: str, reason: str, attempts: int, seconds: float) -> str:
        """One line for a shard that has no live replica: which shard, on which node, what to do."""
        names, live = self.shard_hosts(shard)
        down = [n for n in names if live is None or n not in live]
        if len(names) == 1:
            where = f"its only replica is on node {names[0]}, which is " + ("down" if down else "not active yet")
        elif names:
            where = f"its replicas are on nodes {', '.join(names)}" + (f", and {', '.join(down)} down" if down else "")
        else:
            where = "no node of the cluster serves it"
        fix = (f"start node{'s' if len(down) > 1 else ''} {', '.join(down)} again" if down
               else "start the Solr node that hosts it again")
        if settings.solr_url_is_local():
            fix += " ('neardup-solr solr start --cloud' with the cluster's --data-dir starts the nodes that are down)"
        return (
            f"shard {shard} of collection {self.collection!r} has no live replica: {where}. Waited {seconds:.1f} s "
            f"({attempts} attempt(s) at {self.url}; last answer: {reason}). Its documents can be neither indexed "
            f"nor searched until it is back: {fix}."
        )
