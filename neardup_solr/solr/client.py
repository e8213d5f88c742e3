"""A small, careful HTTP client for one Solr core.

Why not pysolr: we need JSON update bodies (several times faster to build than pysolr's XML), the /export
stream, the Schema API, per-call timeouts, and one retry policy for every call. ``requests`` gives all of
that in a few lines; pysolr remains a fine choice for users' own scripts against the same core.

Every call has a timeout. Connection failures, timeouts, 502/503/504 answers and the 500s Solr gives while it
recovers (update-log replay, leader election) are retried with exponential backoff and full jitter for up to
``max_wait`` seconds (2 minutes by default), logging that it waits; then the call raises
:class:`~neardup_solr.errors.SolrUnavailableError`, whose message says where we looked and how to start Solr.
Any other 5xx raises :class:`~neardup_solr.errors.SolrServerError` at once, naming the cause (full disk,
exhausted heap, closed index writer) and the way out; a 4xx raises
:class:`~neardup_solr.errors.SolrRequestError` (the request itself is at fault).
Credentials (HTTP basic auth) come from arguments, ``SOLR_USERNAME``/``SOLR_PASSWORD``, or a config file, and
never appear in messages or logs.
"""

from __future__ import annotations

import configparser
import json
import logging
import os
import random
import socket
import re
import threading
import time
from pathlib import Path
from typing import Any, Iterable, Iterator
from urllib.parse import unquote, urlencode, urlsplit, urlunsplit

import requests

from neardup_solr.solr import settings
from neardup_solr.solr.transport import DirectTransport
from neardup_solr.errors import (
    ClientClosedError,
    InvalidParameterError,
    ParameterTypeError,
    SolrAuthError,
    ReplicationShortfallError,
    SolrCoreNotFoundError,
    SolrRequestError,
    SolrServerError,
    SolrTimeoutError,
    SolrUnavailableError,
)
from neardup_solr.validation import Limit, check_float, check_int, env_float, env_int

log = logging.getLogger(__name__)

_RETRY_STATUS = {502, 503, 504}
DEFAULT_CONFIG_FILE = Path.home() / ".config" / "neardup-solr" / "config.ini"


def redact_url(url: str) -> str:
    """The URL without any ``user:password@`` part, for messages and logs."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))


def load_credentials(config_file: str | Path | None = None) -> tuple[str, str] | None:
    """Basic-auth credentials: ``SOLR_USERNAME``/``SOLR_PASSWORD``, else the ``[solr]`` section of the config
    file (``NEARDUP_CONFIG`` or ``~/.config/neardup-solr/config.ini``: keys ``username`` and ``password``)."""
    user, password = os.environ.get("SOLR_USERNAME"), os.environ.get("SOLR_PASSWORD")
    if user and password is not None:
        return user, password
    named = os.environ.get("NEARDUP_CONFIG")
    # A NEARDUP_CONFIG naming no file means "no config file" (the tests and CI set it so, to keep a developer's
    # own credentials out): not an error, but said in the debug log.
    if config_file is None and named and not Path(named).is_file():
        log.debug("NEARDUP_CONFIG names no file (%s): no credentials from a config file", named)
    path = Path(config_file or named or DEFAULT_CONFIG_FILE)
    if path.is_file():
        parser = configparser.ConfigParser()
        parser.read(path)
        if parser.has_option("solr", "username") and parser.has_option("solr", "password"):
            return parser.get("solr", "username"), parser.get("solr", "password")
    return None


DEFAULT_MAX_WAIT = 120.0


def default_max_wait() -> float:
    """Seconds a job waits out Solr being away or loading: ``NEARDUP_SOLR_MAX_WAIT``, else 120."""
    return env_float("NEARDUP_SOLR_MAX_WAIT", DEFAULT_MAX_WAIT, "max_wait")


def default_pool_size() -> int:
    """Connections one client opens to Solr at most: ``NEARDUP_SOLR_MAX_CONNECTIONS``, else 4."""
    return env_int("NEARDUP_SOLR_MAX_CONNECTIONS", DEFAULT_POOL_SIZE, "pool_size")


DEFAULT_POOL_SIZE = 4


class RetryPolicy:
    """Exponential backoff with full jitter, bounded by time: attempt k waits uniform(0, min(cap, base * 2**k)),
    and no wait starts that would end more than ``max_wait`` seconds after the first failure.

    A count of attempts is a poor bound: six quick retries add up to nine seconds, less than a core takes to
    load after a restart. ``attempts`` can still cap the count (tests use it to fail fast).
    """

    def __init__(self, max_wait: float | None = None, base: float = 0.5, cap: float = 10.0,
                 attempts: int | None = None, seed: int | None = None):
        self.attempts: int | None = check_int("attempts", attempts, minimum=1, maximum=10**6, none_ok=True)
        self.max_wait: float = (default_max_wait() if max_wait is None
                                else check_float("max_wait", max_wait, "max_wait"))
        self.base: float = check_float("base", base, "commit_seconds")
        self.cap: float = check_float("cap", cap, "commit_seconds")
        self._random = random.Random(check_int("seed", seed, "seed", none_ok=True))

    def delay(self, attempt: int) -> float:
        """The random pause before retry ``attempt + 1`` (before the ``max_wait`` bound)."""
        return self._random.uniform(0, min(self.cap, self.base * (2**attempt)))

    def next_wait(self, attempt: int, waited: float) -> float | None:
        """The pause before attempt ``attempt + 1``, or None when the policy gives up."""
        if self.attempts is not None and attempt + 1 >= self.attempts:
            return None
        if waited >= self.max_wait:
            return None
        return min(self.delay(attempt), self.max_wait - waited)


def _core_urls(raw: str, param: str) -> list[str]:
    """The comma-separated core URLs in ``raw``, each checked: http(s), a host, a valid port and a path that
    names the core or collection (``/solr/<name>``). Errors name ``param`` (``url`` or ``SOLR_URL``)."""
    example = "http://127.0.0.1:8983/solr/neardup"
    given = [u.strip().rstrip("/") for u in raw.split(",") if u.strip()]
    if not given:
        raise InvalidParameterError(param, f"a Solr core URL such as {example}", raw)
    for url in given:
        parts = urlsplit(url)
        shown = redact_url(url)
        try:
            port_ok = parts.port is None or parts.port > 0
        except ValueError:  # "host:abc" or a port over 65535
            port_ok = False
        if parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
            raise InvalidParameterError(param, f"a Solr core URL such as {example}", shown,
                                        "expected http(s)://host:port/solr/<core or collection>")
        segments = [seg for seg in parts.path.split("/") if seg]
        if len(segments) < 2:
            base = redact_url(urlunsplit((parts.scheme, parts.netloc, "", "", "")))
            suggestion = "/".join([base, *(segments or ["solr"]), settings.CORE_NAME])
            raise InvalidParameterError(
                param, "the URL of a core or collection, ending in /solr/<its name>", shown,
                f"it names no core or collection: add its name, e.g. {suggestion}")
    return given


class SolrClient:
    """One Solr core, or one collection of a SolrCloud.

    ``url`` is the core or collection URL, e.g. ``http://127.0.0.1:8983/solr/neardup``, or several URLs of the
    same collection on different nodes separated by commas
    (``http://127.0.0.1:8983/solr/neardup,http://127.0.0.1:8984/solr/neardup``).

    On a SolrCloud the client also learns the cluster's live nodes itself (Collections API ``CLUSTERSTATUS``),
    at :meth:`check` and again when a node stops answering; a node that refuses connections or times out is
    then left for another live node at once instead of being waited for. A single core (no cluster) is talked
    to exactly as before: one URL, no extra request per call.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        username: str | None = None,
        password: str | None = None,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        verify: bool | str = True,
        pool_size: int | None = None,
        min_replicas: int = 1,
    ):
        if url is not None and not isinstance(url, str):
            raise ParameterTypeError("url", "a Solr core URL (str) or None", url)
        if not isinstance(verify, (bool, str)):
            raise ParameterTypeError("verify", "True, False or the path of a CA bundle", verify)
        self.timeout: float = check_float("timeout", timeout, "timeout")
        # Write concern: an update counts only when this many replicas of each shard acknowledged it (Solr's
        # achieved replication factor, "rf" in every SolrCloud update response); fewer is retried as a transient
        # failure, then raised as ReplicationShortfallError.
        self.min_replicas: int = check_int("min_replicas", min_replicas, Limit("int", 1, 100))
        if retry is not None and not isinstance(retry, RetryPolicy):
            raise ParameterTypeError("retry", "a RetryPolicy or None", retry)
        # pool_size (or NEARDUP_SOLR_MAX_CONNECTIONS) of 0 made every request wait forever for a connection.
        self.pool_size: int = (default_pool_size() if pool_size is None
                               else check_int("pool_size", pool_size, "pool_size"))
        raw = url if url is not None else settings.solr_url()
        given = _core_urls(raw, "url" if url is not None else "SOLR_URL" if not settings.solr_url_is_local()
                           else "NEARDUP_SOLR_PORT")
        bases: list[str] = []
        collections = set()
        for raw_url in given:
            parts = urlsplit(raw_url)
            base, _, name = parts.path.rstrip("/").rpartition("/")
            if parts.username and username is None:
                username, password = unquote(parts.username), unquote(parts.password or "")
            collections.add(name)
            node = redact_url(urlunsplit((parts.scheme, parts.netloc, base, "", "")))
            if node not in bases:
                bases.append(node)
        if len(collections) > 1:
            raise ValueError(f"the URLs name different cores or collections ({', '.join(sorted(collections))}); "
                             "give URLs of one collection on several nodes")
        # Messages name what the user gave; requests go to the node in use.
        self.url = ", ".join(redact_url(u) for u in given) if len(given) > 1 else redact_url(given[0])
        self.collection = collections.pop()
        self._scheme = urlsplit(given[0]).scheme
        self._lock = threading.Lock()
        self._nodes = bases           # every node known to serve the collection: the user's first, then learned
        self._node = bases[0]         # the node requests go to now
        self._cloud: bool | None = None   # None until the node has been asked (see _discover)
        self._live: set[str] | None = None
        self._shard_nodes: dict[str, list[str]] = {}
        self._shard_leaders: dict[str, str] = {}
        self._closed = False
        self.retry = retry or RetryPolicy()
        self.session = requests.Session()
        # https certificates are verified unless the caller passes verify=False or a CA bundle path.
        self.session.verify = verify
        # pool_block: however many worker threads share this client, at most pool_size connections are open
        # to Solr at once; extra requests wait for a free connection instead of opening more.
        adapter = requests.adapters.HTTPAdapter(pool_connections=1, pool_maxsize=self.pool_size, pool_block=True)
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)
        if username is None:
            creds = load_credentials()
            if creds:
                username, password = creds
        if username is not None:
            self.session.auth = (username, password or "")
        # requests re-reads the environment (proxy variables, REQUESTS_CA_BUNDLE, ~/.netrc) on every call while
        # trust_env is on: profiled, that was the largest share of the client's CPU in a lookup. The environment
        # is read once per node instead (_environment) and passed explicitly, with the same precedence.
        self.session.trust_env = False
        self._environments: dict[str, dict[str, Any]] = {}
        self._switches_said: set[tuple[str, str]] = set()  # node switches already warned of (see _fail_over)
        # Plain calls (a body of bytes, a whole answer) skip requests' per-call work: see http_transport.
        self._direct = DirectTransport(self.session)
        # The stored field with the text: "content" in our own collections; in a user's collection prepared by
        # `install`, their field, which every read then gets under the name "content" (Solr's field alias in fl),
        # so no reader needs to know. Set by read_index_settings from the stored settings.
        self.text_field: str = "content"

    @classmethod
    def from_zookeeper(cls, zk_host: str, collection: str = settings.CORE_NAME, **kwargs: Any) -> "SolrClient":
        """A client on ``collection`` through every live node ZooKeeper at ``zk_host`` lists
        (``HOST:PORT[/chroot]``): for a cluster none of whose node URLs is known to be up. The node list is read
        once; the client then follows the cluster itself (see the class docstring)."""
        from neardup_solr.solr.zookeeper import live_node_urls

        retry = kwargs.get("retry") or RetryPolicy()
        started, attempt = time.monotonic(), 0
        while True:
            nodes = live_node_urls(zk_host)
            if nodes:
                return cls(",".join(f"{node}/{collection}" for node in nodes), **kwargs)
            wait = retry.next_wait(attempt, time.monotonic() - started)
            if wait is None:
                raise SolrUnavailableError(f"ZooKeeper at {zk_host} lists no live Solr node: start the cluster's "
                                           "nodes, then run the same command again")
            log.warning("ZooKeeper at %s lists no live Solr node yet; asking again in %.1f s", zk_host, wait)
            time.sleep(wait)
            attempt += 1

    def __repr__(self) -> str:
        return f"SolrClient({self.url!r})"

    def close(self) -> None:
        """Close the client's connections. Calls after this raise ClientClosedError; closing twice is fine."""
        self._closed = True
        self.session.close()

    def __enter__(self) -> "SolrClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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

    # ------------------------------------------------------------------ the cluster
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

    # ------------------------------------------------------------------ transport
    def request(
        self,
        method: str,
        path: str,
        *,
        params: dict | list | None = None,
        data: Any = None,
        json_body: Any = None,
        timeout: float | None = None,
        stream: bool = False,
        retry: bool = True,
        headers: dict | None = None,
    ) -> requests.Response:
        """One HTTP call to the collection (``path`` relative to it), with the retry policy (unless ``retry`` is
        False) and the error mapping described in the module docstring."""
        if self._closed:
            raise ClientClosedError(f"this SolrClient for {self.url} is closed; create a new one")
        attempt = 0
        started = time.monotonic()
        node = self._node
        tried: set[str] = set()
        while True:
            url = f"{node}/{self.collection}/{path.lstrip('/')}" if path else f"{node}/{self.collection}"
            shard_state: object = None
            shortfall: int | None = None
            timed_out = False
            try:
                resp = self._send(node, method, url, params=params, data=data, json_body=json_body,
                                  headers=headers, timeout=timeout or self.timeout, stream=stream)
            except (requests.ConnectionError, requests.Timeout) as exc:
                reason = _short_reason(exc)
                timed_out = isinstance(exc, requests.Timeout)
                if len(self._nodes) > 1 or self._cloud:
                    other = self._fail_over(node, reason, tried)
                    if other is not None:
                        # Another node serves the same collection: go there now instead of waiting for this one.
                        node = other
                        continue
            else:
                if resp.status_code in (401, 403):
                    raise SolrAuthError(
                        f"Solr at {self.url} refused the request (HTTP {resp.status_code}): check the credentials "
                        "(SOLR_USERNAME/SOLR_PASSWORD or the [solr] section of your neardup-solr config file)."
                    )
                if resp.status_code < 400 and self.min_replicas > 1:
                    shortfall = self._replication_shortfall(method, path, resp)
                if resp.status_code < 400 and shortfall is None:
                    if self._switches_said:
                        self._switches_said.clear()
                    return resp
                if shortfall is not None:
                    # Transient like a recovering replica: the same wait, and the update sent again after it.
                    reason = (f"update acknowledged by {shortfall} of the {self.min_replicas} replicas asked "
                              "(min_replicas)")
                elif resp.status_code == 404:
                    raise self._not_found(node, path, resp)
                else:
                    solr_message = _solr_error_text(resp)
                    if resp.status_code < 500:
                        raise SolrRequestError(f"Solr at {self.url} answered HTTP {resp.status_code}: "
                                               f"{solr_message}", status=resp.status_code)
                    state = _transient_state(resp.status_code, solr_message)
                    if state is None:
                        raise self._server_error(resp.status_code, solr_message)
                    reason = state
                    shard_state = _shard_without_replica(solr_message)
                    if shard_state is None and solr_message.startswith(FORWARD_FAILED):
                        shard_state = _LEADER_UNREACHABLE
            # Every node known has been tried in this round: wait before the next round, from the start.
            tried.clear()
            waited = time.monotonic() - started
            wait = self.retry.next_wait(attempt, waited) if retry else None
            if wait is None:
                if shortfall is not None:
                    raise ReplicationShortfallError(
                        f"Solr at {self.url} acknowledged an update on only {shortfall} of the {self.min_replicas} "
                        f"replicas asked (min_replicas) after {waited:.0f} s of retries: a replica is down or "
                        "recovering. Those documents are not counted as indexed; once the replicas are back, run "
                        "the same command with --resume (resume=True in Python).", shortfall, self.min_replicas)
                if shard_state is _LEADER_UNREACHABLE:
                    raise SolrUnavailableError(self._leader_message(reason, attempt + 1, waited))
                if shard_state is not None:
                    raise SolrUnavailableError(self._shard_message(str(shard_state), reason, attempt + 1, waited))
                if timed_out:
                    raise self._timeout_error(timeout or self.timeout, attempt + 1, waited)
                raise SolrUnavailableError(self._unavailable_message(reason, attempt + 1, waited))
            log.warning("Solr at %s: %s; waiting for it (%.0f of at most %.0f s so far), next try in %.1f s",
                        self.url, reason, waited, self.retry.max_wait, wait)
            time.sleep(wait)
            attempt += 1
            node = self._node

    def _replication_shortfall(self, method: str, path: str, resp: requests.Response) -> int | None:
        """The replicas that acknowledged an update when fewer than ``min_replicas`` did, else None."""
        if method != "POST" or path.split("?")[0].strip("/") not in ("update", "update/json"):
            return None
        try:
            achieved = resp.json().get("responseHeader", {}).get("rf")
        except ValueError:
            return None
        if achieved is None:  # a commit or a single core: nothing replicated to count
            return None
        return int(achieved) if int(achieved) < self.min_replicas else None

    def _send(self, node: str, method: str, url: str, *, params: Any, data: Any, json_body: Any,
              headers: dict | None, timeout: float, stream: bool) -> requests.Response:
        """One attempt: straight through the session's pool when the call is plain, else through requests."""
        environment = self._environment(node)
        auth = environment.get("auth", self.session.auth)
        # Basic credentials (a pair) are sent directly too; any other requests auth object keeps requests' path.
        if not stream and (data is None or isinstance(data, bytes)) and (auth is None or isinstance(auth, tuple)):
            pool = self._direct.pool(node, environment)
            if pool is not None:
                return self._direct.send(pool, method, url, params=params, data=data, json_body=json_body,
                                         headers=headers, timeout=timeout, auth=auth)
        return self.session.request(method, url, params=params, data=data, json=json_body, headers=headers,
                                    timeout=timeout, stream=stream, **environment)

    def _environment(self, node: str) -> dict[str, Any]:
        """What requests would take from the environment for ``node`` (its proxies; the CA bundle of
        REQUESTS_CA_BUNDLE or CURL_CA_BUNDLE when certificates are verified; ~/.netrc credentials when none were
        given), read once per node."""
        found = self._environments.get(node)
        if found is None:
            found = {"proxies": requests.utils.get_environ_proxies(node)}
            bundle = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE")
            if self.session.verify is True and bundle:
                found["verify"] = bundle  # still verified, against the bundle the environment names
            if self.session.auth is None:
                netrc = requests.utils.get_netrc_auth(node)
                if netrc:
                    found["auth"] = netrc
            self._environments[node] = found
        return found

    def _server_error(self, status: int, solr_message: str) -> SolrServerError:
        kind, advice = _server_failure(solr_message)
        return SolrServerError(
            f"Solr at {self.url} failed on its side (HTTP {status}: {solr_message}). {advice}",
            status=status, kind=kind,
        )

    def _timeout_error(self, timeout: float, attempts: int, seconds: float) -> SolrTimeoutError:
        """Solr took longer than the timeout: not the same as Solr being down, so not "start it"."""
        what = (f"timed out: Solr at {self.url} did not answer within {timeout:g} s per request ({attempts} "
                f"attempt(s) over {seconds:.1f} s). If Solr is busy or the request is large, give it more time "
                "with a larger timeout")
        tail = "; if it never answers, check its log and that the URL names the right host and port."
        return SolrTimeoutError(f"{what} (SolrClient(timeout=SECONDS)){tail}", timeout,
                                cli_message=f"{what} (--timeout SECONDS){tail}")

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
            return self._core_missing_error()
        return SolrRequestError(f"Solr at {self.url} answered HTTP 404 for {path}: {_solr_error_text(resp)}",
                                status=404)

    def _core_missing_error(self) -> SolrCoreNotFoundError:
        if self._cloud is None:
            self._discover()
        name, node = self.collection, self._node
        if self._cloud:
            return SolrCoreNotFoundError(
                f"SolrCloud is running at {node}, but it has no collection {name!r} (HTTP 404): create it with "
                f"'neardup-solr solr create-collection {name} --solr-url {node}', or set SOLR_URL to an "
                "existing collection"
            )
        hint = (
            "'neardup-solr solr start' creates it on the local Solr"
            if settings.solr_url_is_local() and name == settings.CORE_NAME
            else "create it from solr_config/configsets/neardup, or set SOLR_URL to an existing core"
        )
        return SolrCoreNotFoundError(f"Solr is running at {node}, but it has no core {name!r} (HTTP 404): {hint}.")

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
            if settings.solr_url_is_local()
            else "Check that the Solr named by SOLR_URL is up"
        )
        return (
            f"Solr is not answering at {self.url} ({reason}; {attempts} attempt(s) over {seconds:.1f} s). "
            f"{hint}, or set SOLR_URL to your Solr core's URL."
        )

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

    def get_json(self, path: str, params: dict | list | None = None, *, timeout: float | None = None,
                 retry: bool = True) -> dict:
        """GET ``path`` with ``params`` and return Solr's JSON answer."""
        return self.request("GET", path, params=_with_json(params), timeout=timeout, retry=retry).json()

    def post_form(self, path: str, params: dict | list, *, timeout: float | None = None,
                  retry: bool = True) -> dict:
        """POST parameters as a form body: shingle queries of long documents outgrow any URL."""
        # Encoded here: given a list, requests checks it against its runtime protocols several times on every
        # request, which cost more than the encoding itself (a tenth of a millisecond a lookup).
        body = urlencode([(k, v) for k, v in _with_json(params) if v is not None], doseq=True).encode("ascii")
        return self.request("POST", path, data=body, headers=_FORM, timeout=timeout, retry=retry).json()

    # ------------------------------------------------------------------ core operations
    def ping(self, retry: bool = False) -> bool:
        """True when the core answers its ping with OK; False when Solr is unavailable (never raises that)."""
        try:
            return self.get_json("admin/ping", retry=retry, timeout=10).get("status") == "OK"
        except SolrUnavailableError:
            return False

    def check(self, *, wait_if_refused: bool = True) -> None:
        """Raise SolrUnavailableError (one clear line) unless the core or collection answers a ping; then learn
        whether it is a SolrCloud collection (and its live nodes) or a single core.

        The first request rides out what every later one does: a node that refuses connections is left for the
        other URLs given, and when none answers the ping is retried within the retry policy's ``max_wait`` (a
        node restarting, a cluster whose node in the URL is down for a while). ``wait_if_refused=False`` fails
        at once on a refused connection instead: the command line passes it when the URL is the local
        launcher's and nothing was started there, so that a user who has not started Solr is told so at once.
        A ping that times out raises SolrTimeoutError (the timeout is too short, or Solr is stuck); a missing
        core raises SolrCoreNotFoundError naming it."""
        ping_timeout = min(self.timeout, 10)
        try:
            self.get_json("admin/ping", retry=False, timeout=ping_timeout)
        except SolrUnavailableError as exc:
            refused = "connection refused" in str(exc)
            if isinstance(exc, (SolrTimeoutError, SolrCoreNotFoundError)) or (refused and not wait_if_refused):
                raise
            self.get_json("admin/ping", timeout=ping_timeout)
        if self._cloud is None:
            # Once per client: a cluster's other nodes are what the client falls back on when this one dies.
            self._discover()
        if self.min_replicas > 1 and self._cloud is False:
            raise InvalidParameterError("min_replicas", "1 on a single Solr core (replicas are SolrCloud's)",
                                        self.min_replicas, f"{self.url} is not a SolrCloud collection")

    def add(self, docs: list[dict], *, commit_within_ms: int | None = None, timeout: float | None = None) -> None:
        """Send documents (JSON) to the update handler; SolrRequestError when Solr refuses them as bad."""
        params = {"commitWithin": commit_within_ms} if commit_within_ms else None
        body = json.dumps(docs, ensure_ascii=False).encode("utf-8")
        self.request(
            "POST",
            "update",
            params=_with_json(params),
            data=body,
            timeout=timeout,
            headers={"Content-Type": "application/json"},
        )

    def commit(self, *, open_searcher: bool = True) -> None:
        """Hard commit (durable); ``open_searcher=False`` skips making the documents visible (cheaper)."""
        self.get_json("update", {"commit": "true", "openSearcher": str(open_searcher).lower()}, timeout=600)

    def delete_all(self) -> None:
        """Delete every document, stored settings included, and commit. Unguarded: see maintenance.clear."""
        self.delete_by_query("*:*")

    def delete_by_query(self, query: str, params: list | None = None) -> None:
        """Delete what ``query`` matches and commit. User values never go into ``query`` as query syntax: use a
        parser that takes them literally, such as ``"{!term f=dataset}" + value``. Not ``$name`` references in
        ``params``: a SolrCloud forwards a delete-by-query to the other shard leaders without the request's
        parameters, so only the receiving node's shard would be cleared."""
        self.request("POST", "update", params=[("commit", "true"), ("wt", "json"), *(params or [])],
                     json_body={"delete": {"query": query}})

    def delete_ids(self, ids: Iterable[str]) -> None:
        """Delete these ids (no commit)."""
        self.request("POST", "update", params={"wt": "json"}, json_body={"delete": list(ids)})

    def select(self, params: dict | list) -> dict:
        """A /select request (POSTed: long queries outgrow URLs); Solr's JSON answer."""
        return self.post_form("select", self._aliased(params))

    def _aliased(self, params: dict | list) -> dict | list:
        """``params`` with "content" in fl read from the user's text field (see text_field)."""
        if self.text_field == "content":
            return params
        items = list(params.items()) if isinstance(params, dict) else list(params)
        return [(k, self._text_fl(v) if k == "fl" else v) for k, v in items]

    def _text_fl(self, fields: str) -> str:
        if self.text_field == "content":
            return fields
        names = [f.strip() for f in str(fields).split(",")]
        aliased = [f"content:{self.text_field}" if name == "content" else name for name in names]
        if "*" in names and "content" not in names:
            aliased.append(f"content:{self.text_field}")
        return ",".join(aliased)

    def get_by_ids(self, ids: list[str], fields: str = "*", params: list | None = None) -> list[dict]:
        """Real-time get: exact id lookup with no query parsing, so any id (quotes, colons...) is safe."""
        if not ids:
            return []
        data = self.post_form("get", [("ids", ",".join(_escape_get_id(i) for i in ids)), ("fl", self._text_fl(fields)),
                                      *(params or [])])
        docs = data.get("response", {}).get("docs", [])
        # A SolrCloud answers shard by shard; give the documents back in the order asked (missing ones left out).
        position = {doc_id: i for i, doc_id in reversed(list(enumerate(ids)))}
        return sorted(docs, key=lambda d: position.get(d.get("id"), len(ids)))

    def count(self, query: str = "*:*", filters: Iterable[str] = (), params: list | None = None) -> int:
        """How many documents match ``query`` and ``filters`` (user values go in ``params``, as ``$name``)."""
        params = [("q", query), ("rows", 0), *[("fq", f) for f in filters], *(params or [])]
        return int(self.select(params)["response"]["numFound"])

    def export(self, fields: list[str], query: str = "*:*", filters: Iterable[str] = (), sort: str = "id asc") -> Iterator[dict]:
        """Stream every matching document through /export (needs docValues on every field)."""
        params = _with_json([("q", query), ("fl", ",".join(fields)), ("sort", sort), *[("fq", f) for f in filters]])
        resp = self.request("POST", "export", data=params, stream=True, timeout=max(self.timeout, 600))
        try:
            payload = resp.json()
        finally:
            resp.close()
        yield from payload.get("response", {}).get("docs", [])

    def schema_fields(self) -> dict[str, dict]:
        """The schema's fields by name (Schema API, with defaults shown)."""
        data = self.get_json("schema/fields", {"showDefaults": "true"})
        return {f["name"]: f for f in data["fields"]}

    def schema_field_types(self) -> dict[str, dict]:
        """The schema's field types by name."""
        data = self.get_json("schema/fieldtypes")
        return {t["name"]: t for t in data["fieldTypes"]}


_FORM = {"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"}


def _with_json(params: dict | list | None) -> list:
    if params is None:
        items: list = []
    elif isinstance(params, dict):
        items = list(params.items())
    else:
        items = list(params)
    if not any(k == "wt" for k, _ in items):
        items.append(("wt", "json"))
    return items


def _escape_get_id(doc_id: str) -> str:
    # /get splits the ids parameter on commas; Solr's StrUtils.splitSmart honours backslash escapes.
    return str(doc_id).replace("\\", "\\\\").replace(",", "\\,")


def _short_reason(exc: Exception) -> str:
    text = str(exc)
    if "Connection refused" in text:
        return "connection refused"
    if isinstance(exc, requests.Timeout):
        return "timed out"
    return type(exc).__name__


def _solr_error_text(resp: requests.Response) -> str:
    """Solr's own message (its JSON error, else the first line of the body), kept short.

    On a SolrCloud a document that belongs to another shard is refused by that shard's leader, and the node we
    sent the batch to wraps the leader's answer: "Async exception during distributed update: Error from server
    at <leader>: null ... Remote error message: <the real reason>" (the "null" is the HTTP/2 reason phrase,
    which does not exist). The real reason is what the user needs, so it is taken out of the wrapper."""
    trace = ""
    try:
        error = resp.json().get("error", {})
        trace = str(error.get("trace") or "")
        msg = error.get("msg") or trace.strip().split("\n", 1)[0]
    except (ValueError, AttributeError):
        msg = None
    if not msg:
        msg = resp.text.strip().splitlines()[0] if resp.text.strip() else resp.reason
    msg = _distributed_reason(msg) or msg
    cause = _root_cause(trace)
    if cause and cause.lower() not in msg.lower():
        # "Error opening new searcher" says nothing; its cause ("No space left on device") says what to do.
        msg = f"{msg} (caused by {cause})"
    # "No registered leader ... slice: shard2 saw state=DocCollection(...)={" is followed by the whole
    # collection state as JSON: the shard is the news, the state is noise.
    msg = msg.split(" saw state=", 1)[0]
    return msg[:500]


def _root_cause(trace: str) -> str:
    """The innermost "Caused by:" of a Java stack trace, shortened; empty when there is none."""
    causes = [line.strip()[len("Caused by:"):].strip() for line in trace.splitlines()
              if line.strip().startswith("Caused by:")]
    return causes[-1][:200] if causes else ""


_ASYNC_PREFIX = re.compile(r"^\s*(?:\d+ )?Async exceptions? during distributed update:\s*", re.IGNORECASE)
_REMOTE_MESSAGE = re.compile(r"Remote error message: *(.*)")
_REMOTE_SERVER = re.compile(r"Error from server at (\S+?):(?: |$)", re.MULTILINE)
# What a forwarding node says when the other node did not answer at all (it died, or its socket was cut).
_FORWARD_FAILURES = ("connectexception", "connection refused", "connection reset", "socketexception",
                     "timeoutexception", "timed out", "eofexception", "closedchannelexception", "broken pipe",
                     "closed", "no route to host", "ioexception")
FORWARD_FAILED = "forwarding to another shard's leader failed"
_LEADER_UNREACHABLE = object()


def _distributed_reason(msg: str) -> str | None:
    """The reasons inside Solr's "Async exception(s) during distributed update" wrapper, or None for any other
    message. One reason per failed sub-request, each with the node that gave it."""
    head = _ASYNC_PREFIX.match(msg)
    if not head:
        return None
    body = msg[head.end():]
    reasons: list[str] = []
    # Each sub-error starts on its own line: "Error from server at URL: ..." (the remote node answered) or a
    # Java exception (it did not); the remote's own message follows on a "Remote error message:" line.
    entries = re.split(r"\n(?=Error from server at |[\w$]+(?:\.[\w$]+)+: )", body.strip())
    for entry in entries:
        server = _REMOTE_SERVER.search(entry)
        remote = _REMOTE_MESSAGE.search(entry)
        if remote and remote.group(1).strip():
            where = f" (refused by another shard's leader, at {server.group(1)})" if server else ""
            reason = remote.group(1).strip() + where
        elif server:
            reason = (f"another shard's leader, at {server.group(1)}, refused it without giving a reason "
                      f"({entry.strip().splitlines()[0]})")
        else:
            first = entry.strip().splitlines()[0] if entry.strip() else "no detail"
            reason = f"{FORWARD_FAILED}: {first}"
        if reason not in reasons:
            reasons.append(reason)
    return "; ".join(reasons) if reasons else None


# Solr answers these while it is coming back, not because anything is broken: a core still loading (503), an
# update log still being replayed after a crash (the update handler's log is not open yet, so every update
# fails with a NullPointerException naming lookupLog), a shard whose leader is being elected.
_RECOVERING_MARKERS = (
    ("lookuplog", "Solr is recovering: it is replaying its update log after a restart"),
    ("no registered leader", "a shard of the collection is electing its leader"),
    ("is not the leader", "a shard of the collection is changing its leader"),
    ("core is loading", "Solr is loading the core"),
    ("solrcore is loading", "Solr is loading the core"),
    ("recovering", "the replica is recovering"),
    # Solr's node-to-node update stream gives up on a peer that took no data for its stall time (20 s in Solr
    # 9): that peer is cut off or dead, which the cluster notices and routes around; the request is whole or
    # absent, and a retry of a create is checked by the caller (check_and_add reads back a 409).
    ("task queue processing has stalled", "a node stopped answering the node forwarding its update"),
)
_NO_REPLICA = (
    re.compile(r"no (?:active )?servers hosting shard:? *([\w.-]+)", re.IGNORECASE),
    re.compile(r"no registered leader was found.*?slice: *([\w.-]+)", re.IGNORECASE | re.DOTALL),
)


def _shard_without_replica(message: str) -> str | None:
    """The shard a "no servers hosting shard" / "no registered leader" answer names, if any."""
    for pattern in _NO_REPLICA:
        found = pattern.search(message)
        if found:
            return found.group(1)
    return None


def _transient_state(status: int, message: str) -> str | None:
    """Why this 5xx answer is worth waiting out, or None when Solr has failed and waiting will not help."""
    lowered = message.lower()
    shard = _shard_without_replica(message)
    if shard is not None and "no registered leader" not in lowered:
        return f"shard {shard} has no live replica right now (HTTP {status})"
    if shard is not None:
        return f"shard {shard} has no leader right now (HTTP {status})"
    if lowered.startswith(FORWARD_FAILED) and all(
            any(word in part.lower() for word in _FORWARD_FAILURES) for part in message.split("; ")):
        # The node we talk to could not reach another shard's leader: that node died or is dying. ZooKeeper
        # notices within its session timeout and another replica takes the lead; until then, wait.
        return (f"another shard's leader is not answering (its node may be down; a new leader is elected once "
                f"ZooKeeper notices) (HTTP {status})")
    for marker, state in _RECOVERING_MARKERS:
        if marker in lowered:
            return f"{state} (HTTP {status})"
    if status in _RETRY_STATUS:
        return f"HTTP {status}"
    return None


def _server_failure(message: str) -> tuple[str, str]:
    """The kind of a server-side failure and what the user should do about it."""
    lowered = message.lower()
    if "no space left on device" in lowered or "disk full" in lowered:
        return "disk_full", ("Solr's disk is full: free space on the file system of its data directory, restart "
                             "Solr, then run the same command with --resume (resume=True in Python).")
    if "outofmemoryerror" in lowered or "java heap space" in lowered:
        return "out_of_memory", ("Solr ran out of memory: restart it with a larger heap "
                                 "('neardup-solr solr start --heap 4g'), then run the same command with --resume (resume=True in Python).")
    if "indexwriter is closed" in lowered or "alreadyclosedexception" in lowered:
        return "writer_closed", ("Solr's index writer is closed after an earlier failure (a full disk or an "
                                 "exhausted heap): restart Solr, then run the same command with --resume (resume=True in Python).")
    return "server", "This is Solr's failure, not the record's: check Solr's log, then run the same command with --resume (resume=True in Python)."
