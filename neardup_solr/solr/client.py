"""A small, careful HTTP client for one Solr core.

Why not pysolr: we need JSON update bodies (several times faster to build than pysolr's XML), the /export
stream, the Schema API, per-call timeouts, and one retry policy for every call. ``requests`` gives all of
that in a few lines; pysolr remains a fine choice for users' own scripts against the same core.

Every call has a timeout. Connection failures, timeouts, 502/503/504 answers and the 500s Solr gives while it
recovers (update-log replay, leader election) are retried with exponential backoff and full jitter for up to
``max_wait`` seconds (2 minutes by default), logging that it waits; then the call raises
:class:`~neardup_solr.errors.SolrUnavailableError`, whose message says where we looked and how to start Solr.
Until Solr has answered a client once, though, nothing is waited for: a refused connection, a host name that
does not resolve or a timeout on its first contact raises at once, as does an answer that is not Solr's (a web
page, a 404 where no Solr runs), naming the URL and what was tried; :meth:`SolrClient.check` with
``wait_if_refused=True`` waits for a Solr that is still starting.
Any other 5xx raises :class:`~neardup_solr.errors.SolrServerError` at once, naming the cause (full disk,
exhausted heap, closed index writer) and the way out; a 4xx raises
:class:`~neardup_solr.errors.SolrRequestError` (the request itself is at fault).
Credentials (HTTP basic auth) come from arguments, ``SOLR_USERNAME``/``SOLR_PASSWORD``, or a config file, and
never appear in messages or logs.

Which answers are worth waiting out is :mod:`neardup_solr.solr.failures`' rule; the nodes of a SolrCloud and the
move to another one when a node stops answering are :mod:`neardup_solr.solr.failover`'s; holding requests while a
restarted core replays its update log (it answers meanwhile, without the documents not replayed yet) is
:mod:`neardup_solr.solr.update_log`'s.
"""

from __future__ import annotations

import configparser
import json
import logging
import os
import random
import re
import time
from pathlib import Path
from typing import Any, Iterable, Iterator
from urllib.parse import unquote, urlencode, urlsplit, urlunsplit

import requests

from neardup_solr.solr import settings
from neardup_solr.solr.failover import NodeFailover
from neardup_solr.solr.failures import (
    FORWARD_FAILED,
    LEADER_UNREACHABLE,
    server_error,
    shard_without_replica,
    short_reason,
    solr_error_text,
    timeout_error,
    transient_state,
)
from neardup_solr.solr.transport import DirectTransport
from neardup_solr.solr.update_log import LOADING, NO_METRICS, ReplayGuard, core_is_loading, metrics_key, state_of
from neardup_solr.errors import (
    ClientClosedError,
    InvalidParameterError,
    ParameterTypeError,
    SolrAuthError,
    ReplicationShortfallError,
    SolrCoreNotFoundError,
    SolrRequestError,
    SolrTimeoutError,
    SolrUnavailableError,
)
from neardup_solr.validation import Limit, check_float, check_int, env_float, env_int

log = logging.getLogger(__name__)

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


class SolrClient(NodeFailover):
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
        self._init_nodes(bases, urlsplit(given[0]).scheme, local_default=given == [settings.local_core_url()])
        self._closed = False
        # Set once Solr answers (any answer of Solr's, an error included): only then is a connection that fails
        # an outage worth waiting out rather than a wrong URL.
        self._answered = False
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
        # Plain calls (a body of bytes, a whole answer) skip requests' per-call work: see http_transport.
        self._direct = DirectTransport(self.session)
        self._replay_guard = ReplayGuard(self.collection, self._core_state, lambda: self._cloud is True)
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
        return self._request(method, path, params=params, data=data, json_body=json_body, timeout=timeout,
                             stream=stream, retry=retry, headers=headers, wait_for_contact=False)

    def _request(self, method: str, path: str, *, params: dict | list | None, data: Any, json_body: Any,
                 timeout: float | None, stream: bool, retry: bool, headers: dict | None,
                 wait_for_contact: bool) -> requests.Response:
        """:meth:`request`; ``wait_for_contact`` retries a connection that fails even before Solr has answered
        this client (check(wait_if_refused=True))."""
        if self._closed:
            raise ClientClosedError(f"this SolrClient for {self.url} is closed; create a new one")
        attempt = 0
        started = time.monotonic()
        node = self._node
        tried: set[str] = set()
        failures: dict[str, str] = {}  # node -> why it did not answer, for the first contact's message
        sent = 0
        while True:
            url = f"{node}/{self.collection}/{path.lstrip('/')}" if path else f"{node}/{self.collection}"
            shard_state: object = None
            shortfall: int | None = None
            timed_out = False
            try:
                sent += 1
                # After a restart a single core replays its update log while it already answers; a request sent
                # meanwhile would miss what Solr acknowledged before (neardup_solr.solr.update_log). Asking is part
                # of the attempt: a node that does not answer it fails the attempt as the request itself would.
                replaying = self._replay_guard.replaying(node) if retry else None
                if replaying is not None:
                    raise _CoreReplaying(replaying)
                resp = self._send(node, method, url, params=params, data=data, json_body=json_body,
                                  headers=headers, timeout=timeout or self.timeout, stream=stream)
            except _CoreReplaying as exc:
                reason = str(exc)
            except (requests.ConnectionError, requests.Timeout) as exc:
                reason = short_reason(exc)
                timed_out = isinstance(exc, requests.Timeout)
                failures[node] = reason
                self._replay_guard.failed()
                if len(self._nodes) > 1 or self._cloud:
                    other = self._fail_over(node, reason, tried)
                    if other is not None:
                        # Another node serves the same collection: go there now instead of waiting for this one.
                        node = other
                        continue
                if not self._answered and not wait_for_contact:
                    waited = time.monotonic() - started
                    if timed_out:
                        raise timeout_error(self.url, timeout or self.timeout, sent, waited)
                    raise self._first_contact_error(failures, sent, waited)
            else:
                if retry:
                    self._replay_guard.answered()
                if not self._answered:
                    self._first_answer(url, resp, stream)
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
                    solr_message = solr_error_text(resp)
                    if resp.status_code < 500:
                        raise SolrRequestError(f"Solr at {self.url} answered HTTP {resp.status_code}: "
                                               f"{solr_message}", status=resp.status_code)
                    state = transient_state(resp.status_code, solr_message)
                    if state is None:
                        raise server_error(self.url, resp.status_code, solr_message)
                    reason = state
                    self._replay_guard.failed()
                    shard_state = shard_without_replica(solr_message)
                    if shard_state is None and solr_message.startswith(FORWARD_FAILED):
                        shard_state = LEADER_UNREACHABLE
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
                if shard_state is LEADER_UNREACHABLE:
                    raise SolrUnavailableError(self._leader_message(reason, attempt + 1, waited))
                if shard_state is not None:
                    raise SolrUnavailableError(self._shard_message(str(shard_state), reason, attempt + 1, waited))
                if timed_out:
                    raise timeout_error(self.url, timeout or self.timeout, attempt + 1, waited)
                raise SolrUnavailableError(self._unavailable_message(reason, attempt + 1, waited))
            log.warning("Solr at %s: %s; waiting for it (%.0f of at most %.0f s so far), next try in %.1f s",
                        self.url, reason, waited, self.retry.max_wait, wait)
            time.sleep(wait)
            attempt += 1
            node = self._node

    def _core_state(self, node: str) -> int | str | None:
        """The core's state on ``node`` for the replay guard (neardup_solr.solr.update_log): LOADING while the core
        admin API says the core is being loaded, else its update-log state from the metrics API; NO_METRICS when
        the node refuses its metrics, None when it cannot tell now (a 5xx while Solr starts: the request itself then
        meets the same). No connection raises, as a request would."""
        timeout = min(self.timeout, 10.0)
        status = self._send(node, "GET", f"{node}/admin/cores",
                            params=[("action", "STATUS"), ("core", self.collection), ("indexInfo", "false"),
                                    ("wt", "json")], data=None, json_body=None, headers=None, timeout=timeout,
                            stream=False)
        # Refused (core admin closed to these credentials) or unreadable: the metric alone is the best there is.
        if status.status_code == 200 and core_is_loading(_json_or_empty(status), self.collection):
            return LOADING
        resp = self._send(node, "GET", f"{node}/admin/metrics", params=[("key", metrics_key(self.collection)),
                                                                        ("wt", "json")],
                          data=None, json_body=None, headers=None, timeout=timeout, stream=False)
        if resp.status_code in (401, 403, 404):
            return NO_METRICS
        return state_of(_json_or_empty(resp), self.collection) if resp.status_code == 200 else None

    def _first_answer(self, url: str, resp: requests.Response, stream: bool) -> None:
        """Mark the client as answered by Solr, or raise when what answered is not Solr: a web page where Solr's
        JSON was asked for (another server, or a path that is not Solr's API). A 404 is left to _not_found, which
        asks the node what it is."""
        if resp.status_code == 404:
            return
        html = "text/html" in resp.headers.get("Content-Type", "").lower()
        if not html:
            self._answered = True
            return
        if resp.status_code >= 400:
            return  # an error page (a proxy's 502 while Solr restarts): the usual error handling applies
        found = None if stream else _TITLE.search(resp.text[:4096])
        resp.close()
        title = f" ({' '.join(found.group(1).split())[:80]!r})" if found else ""
        shown = url if len(url) <= 200 else url[:200] + "..."
        raise SolrUnavailableError(
            f"{shown} answered HTTP {resp.status_code} with a web page{title}, not Solr's JSON: no Solr core or "
            f"collection answers at {self.url}. Check the host, port and path of the URL (a Solr core's URL looks "
            f"like http://127.0.0.1:8983/solr/{settings.CORE_NAME}).")

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

    def check(self, *, wait_if_refused: bool = False) -> None:
        """Raise SolrUnavailableError (one clear line) unless the core or collection answers a ping; then learn
        whether it is a SolrCloud collection (and its live nodes) or a single core.

        A client that Solr has not answered yet fails at once, as every first request does: a refused
        connection, an unknown host or a timeout means a wrong URL or a Solr that is not running far more
        often than one that is about to answer, and a wrong URL should be said in seconds, not after
        ``max_wait``. The other URLs given are still tried first. ``wait_if_refused=True`` waits instead, within
        the retry policy's ``max_wait``: for scripts that start Solr and the client together. Once Solr has
        answered, the ping rides out what every request does (a node restarting, a core loading). A ping that
        times out raises SolrTimeoutError (the timeout is too short, or Solr is stuck); a missing core raises
        SolrCoreNotFoundError naming it and the cores there."""
        ping_timeout = min(self.timeout, 10)
        try:
            self.get_json("admin/ping", retry=False, timeout=ping_timeout)
        except SolrUnavailableError as exc:
            if isinstance(exc, (SolrTimeoutError, SolrCoreNotFoundError)) or not (self._answered or wait_if_refused):
                raise
            self._request("GET", "admin/ping", params=_with_json(None), data=None, json_body=None,
                          timeout=ping_timeout, stream=False, retry=True, headers=None, wait_for_contact=True)
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

    def cursor_pages(self, params: list, page_size: int, *, until_short_page: bool = False) -> Iterator[list[dict]]:
        """The documents a query matches, a non-empty page at a time, with Solr's cursor (``params`` must sort on
        the unique key last). It ends when a page is empty or the cursor stops moving; ``until_short_page`` also
        ends it at a page shorter than ``page_size``, which saves the request that would only confirm the end (for
        a one-page answer that halves the requests; on SolrCloud each is a round trip to every shard)."""
        cursor = "*"
        while True:
            data = self.select(list(params) + [("rows", page_size), ("cursorMark", cursor)])
            docs = data["response"]["docs"]
            if not docs:
                return
            yield docs
            next_cursor = data.get("nextCursorMark", cursor)
            if next_cursor == cursor or (until_short_page and len(docs) < page_size):
                return
            cursor = next_cursor

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
        """Real-time get: exact id lookup with no query parsing, so any id (quotes, colons...) is safe.

        The ids an answer lacks are asked for once more. Solr's /get looks each id up in its update log, and the
        ones it does not find there in a single realtime searcher, taken at the first such id and kept for the
        rest of the request (RealTimeGetComponent). A soft commit that completes meanwhile moves the later ids
        out of the log into a newer searcher than the one kept, so an answer of several ids can lack documents
        that were acknowledged before it was asked. A second request takes a searcher that holds them. A single
        id cannot meet this (its searcher is taken after its log lookup)."""
        if not ids:
            return []
        docs = self._real_time_get(ids, fields, params)
        if len(ids) > 1:
            missing = _missing_ids(ids, docs)
            if missing is None and len(docs) < len(set(ids)):  # no "id" in fl: ask again, keep the fuller answer
                again = self._real_time_get(ids, fields, params)
                docs = again if len(again) > len(docs) else docs
            elif missing:
                wanted = set(missing)
                docs += [d for d in self._real_time_get(missing, fields, params) if str(d.get("id")) in wanted]
        # A SolrCloud answers shard by shard; give the documents back in the order asked (missing ones left out).
        position = {doc_id: i for i, doc_id in reversed(list(enumerate(ids)))}
        return sorted(docs, key=lambda d: position.get(d.get("id", ""), len(ids)))

    def _real_time_get(self, ids: list[str], fields: str, params: list | None) -> list[dict]:
        data = self.post_form("get", [("ids", ",".join(_escape_get_id(i) for i in ids)), ("fl", self._text_fl(fields)),
                                      *(params or [])])
        return list(data.get("response", {}).get("docs", []))

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
_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)


class _CoreReplaying(Exception):
    """An attempt not sent: the core is replaying its update log (the reason is the message)."""


def _json_or_empty(resp: requests.Response) -> Any:
    """A response's JSON, or {} when it is not JSON (a web page where Solr was expected)."""
    try:
        return resp.json()
    except ValueError:
        return {}


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


def _missing_ids(ids: list[str], docs: list[dict]) -> list[str] | None:
    """The ids asked for that ``docs`` lack, in the order asked; None when a document has no ``id`` to tell by."""
    found = {str(d["id"]) for d in docs if "id" in d}
    if len(found) < len(docs):
        return None
    return [i for i in dict.fromkeys(ids) if str(i) not in found]


def _escape_get_id(doc_id: str) -> str:
    # /get splits the ids parameter on commas; Solr's StrUtils.splitSmart honours backslash escapes.
    return str(doc_id).replace("\\", "\\\\").replace(",", "\\,")
