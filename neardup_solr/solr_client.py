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
import time
from pathlib import Path
from typing import Any, Iterable, Iterator
from urllib.parse import unquote, urlsplit, urlunsplit

import requests

from . import settings
from .errors import SolrAuthError, SolrCoreNotFoundError, SolrRequestError, SolrServerError, SolrUnavailableError

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
    path = Path(config_file or os.environ.get("NEARDUP_CONFIG") or DEFAULT_CONFIG_FILE)
    if path.is_file():
        parser = configparser.ConfigParser()
        parser.read(path)
        if parser.has_option("solr", "username") and parser.has_option("solr", "password"):
            return parser.get("solr", "username"), parser.get("solr", "password")
    return None


DEFAULT_MAX_WAIT = 120.0


def default_max_wait() -> float:
    """Seconds a job waits out Solr being away or loading: ``NEARDUP_SOLR_MAX_WAIT``, else 120."""
    raw = os.environ.get("NEARDUP_SOLR_MAX_WAIT")
    if raw is None:
        return DEFAULT_MAX_WAIT
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"NEARDUP_SOLR_MAX_WAIT must be a number of seconds, got {raw!r}") from None
    if not 0 <= value < float("inf"):
        raise ValueError(f"NEARDUP_SOLR_MAX_WAIT must be a finite number of seconds >= 0, got {raw!r}")
    return value


class RetryPolicy:
    """Exponential backoff with full jitter, bounded by time: attempt k waits uniform(0, min(cap, base * 2**k)),
    and no wait starts that would end more than ``max_wait`` seconds after the first failure.

    A count of attempts is a poor bound: six quick retries add up to nine seconds, less than a core takes to
    load after a restart. ``attempts`` can still cap the count (tests use it to fail fast).
    """

    def __init__(self, max_wait: float | None = None, base: float = 0.5, cap: float = 10.0,
                 attempts: int | None = None, seed: int | None = None):
        if attempts is not None and attempts < 1:
            raise ValueError("attempts must be at least 1")
        self.max_wait = default_max_wait() if max_wait is None else float(max_wait)
        if not 0 <= self.max_wait < float("inf"):
            raise ValueError(f"max_wait must be a finite number of seconds >= 0, got {max_wait!r}")
        self.attempts = attempts
        self.base = base
        self.cap = cap
        self._random = random.Random(seed)

    def delay(self, attempt: int) -> float:
        return self._random.uniform(0, min(self.cap, self.base * (2**attempt)))

    def next_wait(self, attempt: int, waited: float) -> float | None:
        """The pause before attempt ``attempt + 1``, or None when the policy gives up."""
        if self.attempts is not None and attempt + 1 >= self.attempts:
            return None
        if waited >= self.max_wait:
            return None
        return min(self.delay(attempt), self.max_wait - waited)


class SolrClient:
    """One Solr core. ``url`` is the core URL, e.g. ``http://127.0.0.1:8983/solr/neardup``."""

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
    ):
        raw_url = (url or settings.solr_url()).rstrip("/")
        parts = urlsplit(raw_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not a Solr core URL: {redact_url(raw_url)!r} (expected http(s)://host:port/solr/core)")
        if parts.username and username is None:
            username, password = unquote(parts.username), unquote(parts.password or "")
        self.url = redact_url(raw_url)
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self.session = requests.Session()
        # https certificates are verified unless the caller passes verify=False or a CA bundle path.
        self.session.verify = verify
        # pool_block: however many worker threads share this client, at most pool_size connections are open
        # to Solr at once; extra requests wait for a free connection instead of opening more.
        self.pool_size = pool_size or int(os.environ.get("NEARDUP_SOLR_MAX_CONNECTIONS", "4"))
        adapter = requests.adapters.HTTPAdapter(pool_connections=1, pool_maxsize=self.pool_size, pool_block=True)
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)
        if username is None:
            creds = load_credentials()
            if creds:
                username, password = creds
        if username is not None:
            self.session.auth = (username, password or "")

    def __repr__(self) -> str:
        return f"SolrClient({self.url!r})"

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
        url = f"{self.url}/{path.lstrip('/')}" if path else self.url
        attempt = 0
        started = time.monotonic()
        while True:
            try:
                resp = self.session.request(
                    method,
                    url,
                    params=params,
                    data=data,
                    json=json_body,
                    headers=headers,
                    timeout=timeout or self.timeout,
                    stream=stream,
                )
            except (requests.ConnectionError, requests.Timeout) as exc:
                reason = _short_reason(exc)
            else:
                if resp.status_code in (401, 403):
                    raise SolrAuthError(
                        f"Solr at {self.url} refused the request (HTTP {resp.status_code}): check the credentials "
                        "(SOLR_USERNAME/SOLR_PASSWORD or the [solr] section of your neardup-solr config file)."
                    )
                if resp.status_code < 400:
                    return resp
                solr_message = _solr_error_text(resp)
                if resp.status_code < 500:
                    raise SolrRequestError(f"Solr at {self.url} answered HTTP {resp.status_code}: {solr_message}",
                                           status=resp.status_code)
                state = _transient_state(resp.status_code, solr_message)
                if state is None:
                    raise self._server_error(resp.status_code, solr_message)
                reason = state
            waited = time.monotonic() - started
            wait = self.retry.next_wait(attempt, waited) if retry else None
            if wait is None:
                raise SolrUnavailableError(self._unavailable_message(reason, attempt + 1, waited))
            log.warning("Solr at %s: %s; waiting for it (%.0f of at most %.0f s so far), next try in %.1f s",
                        self.url, reason, waited, self.retry.max_wait, wait)
            time.sleep(wait)
            attempt += 1

    def _server_error(self, status: int, solr_message: str) -> SolrServerError:
        kind, advice = _server_failure(solr_message)
        return SolrServerError(
            f"Solr at {self.url} failed on its side (HTTP {status}: {solr_message}). {advice}",
            status=status, kind=kind,
        )

    def _unavailable_message(self, reason: str, attempts: int, seconds: float) -> str:
        hint = (
            "Start the local one with 'neardup-solr solr start'"
            if settings.solr_url_is_local()
            else "Check that the Solr named by SOLR_URL is up"
        )
        return (
            f"Solr is not answering at {self.url} ({reason}; {attempts} attempt(s) over {seconds:.1f} s). "
            f"{hint}, or set SOLR_URL to your Solr core's URL."
        )

    def get_json(self, path: str, params: dict | list | None = None, **kw) -> dict:
        params = _with_json(params)
        return self.request("GET", path, params=params, **kw).json()

    def post_form(self, path: str, params: dict | list, **kw) -> dict:
        """POST parameters as a form body: shingle queries of long documents outgrow any URL."""
        return self.request("POST", path, data=_with_json(params), **kw).json()

    # ------------------------------------------------------------------ core operations
    def ping(self, retry: bool = False) -> bool:
        try:
            return self.get_json("admin/ping", retry=retry, timeout=10).get("status") == "OK"
        except SolrUnavailableError:
            return False

    def check(self) -> None:
        """Raise SolrUnavailableError (one clear line) unless the core answers a ping.

        Nothing listening fails at once (the user has to start Solr); a Solr that answers but is still loading
        or recovering is waited for, as every other call does."""
        try:
            try:
                self.get_json("admin/ping", retry=False, timeout=10)
            except SolrUnavailableError as exc:
                if "connection refused" in str(exc):
                    raise
                self.get_json("admin/ping", timeout=10)
        except SolrRequestError as exc:
            if exc.status != 404:
                raise
            base, _, core = self.url.rpartition("/")
            hint = (
                "'neardup-solr solr start' creates it on the local Solr"
                if settings.solr_url_is_local() and core == settings.CORE_NAME
                else "create it from solr_config/configsets/neardup, or set SOLR_URL to an existing core"
            )
            raise SolrCoreNotFoundError(
                f"Solr is running at {redact_url(base)}, but it has no core {core!r} (HTTP 404): {hint}."
            ) from None

    def add(self, docs: list[dict], *, commit_within_ms: int | None = None, timeout: float | None = None) -> None:
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
        self.get_json("update", {"commit": "true", "openSearcher": str(open_searcher).lower()}, timeout=600)

    def delete_all(self) -> None:
        self.delete_by_query("*:*")

    def delete_by_query(self, query: str, params: list | None = None) -> None:
        """Delete what ``query`` matches and commit. User values belong in ``params`` (``$name`` references),
        never pasted into ``query``."""
        self.request("POST", "update", params=[("commit", "true"), ("wt", "json"), *(params or [])],
                     json_body={"delete": {"query": query}})

    def delete_ids(self, ids: Iterable[str]) -> None:
        self.request("POST", "update", params={"wt": "json"}, json_body={"delete": list(ids)})

    def select(self, params: dict | list) -> dict:
        return self.post_form("select", params)

    def get_by_ids(self, ids: list[str], fields: str = "*") -> list[dict]:
        """Real-time get: exact id lookup with no query parsing, so any id (quotes, colons...) is safe."""
        if not ids:
            return []
        data = self.post_form("get", [("ids", ",".join(_escape_get_id(i) for i in ids)), ("fl", fields)])
        return data.get("response", {}).get("docs", [])

    def count(self, query: str = "*:*", filters: Iterable[str] = (), params: list | None = None) -> int:
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
        data = self.get_json("schema/fields", {"showDefaults": "true"})
        return {f["name"]: f for f in data["fields"]}

    def schema_field_types(self) -> dict[str, dict]:
        data = self.get_json("schema/fieldtypes")
        return {t["name"]: t for t in data["fieldTypes"]}


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
    """Solr's own message (its JSON error, else the first line of the body), kept short."""
    try:
        error = resp.json().get("error", {})
        msg = error.get("msg") or error.get("trace", "").strip().split("\n", 1)[0]
    except (ValueError, AttributeError):
        msg = None
    if not msg:
        msg = resp.text.strip().splitlines()[0] if resp.text.strip() else resp.reason
    return msg[:500]


# Solr answers these while it is coming back, not because anything is broken: a core still loading (503), an
# update log still being replayed after a crash (the update handler's log is not open yet, so every update
# fails with a NullPointerException naming lookupLog), a shard whose leader is being elected.
_RECOVERING_MARKERS = (
    ("lookuplog", "Solr is recovering: it is replaying its update log after a restart"),
    ("no servers hosting shard", "a shard of the collection has no live replica right now"),
    ("no registered leader", "a shard of the collection is electing its leader"),
    ("is not the leader", "a shard of the collection is changing its leader"),
    ("core is loading", "Solr is loading the core"),
    ("solrcore is loading", "Solr is loading the core"),
    ("recovering", "the replica is recovering"),
)


def _transient_state(status: int, message: str) -> str | None:
    """Why this 5xx answer is worth waiting out, or None when Solr has failed and waiting will not help."""
    lowered = message.lower()
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
                             "Solr, then run the same command with --resume.")
    if "outofmemoryerror" in lowered or "java heap space" in lowered:
        return "out_of_memory", ("Solr ran out of memory: restart it with a larger heap "
                                 "('neardup-solr solr start --heap 4g'), then run the same command with --resume.")
    if "indexwriter is closed" in lowered or "alreadyclosedexception" in lowered:
        return "writer_closed", ("Solr's index writer is closed after an earlier failure (a full disk or an "
                                 "exhausted heap): restart Solr, then run the same command with --resume.")
    return "server", "This is Solr's failure, not the record's: check Solr's log, then run the same command with --resume."
