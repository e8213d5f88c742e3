"""The short way to Solr for plain calls: the session's own connection pools, without requests' per-call work.

A lookup is one small POST and one small JSON answer. Measured on the 2-core machine (``benchmarks/service.py``),
``requests.Session.request`` spent about 0.9 ms of CPU on such a call (building and preparing a Request, merging
settings and hooks, wrapping the answer), against 0.35 ms for the same call through urllib3, which requests itself
uses underneath: half of the client's CPU in a lookup. :class:`DirectTransport` sends such calls straight to the
urllib3 pool the session's adapter already keeps for the node, so the connection limit (``pool_size``, blocking),
keep-alive, TLS settings and certificate verification stay exactly the session's, and it hands back a
``requests.Response`` and raises requests' own exceptions, so callers and their error handling do not change.

What it takes: a body of bytes (or none), query parameters, headers and a timeout. Everything else (streamed
answers, proxies from the environment, adapters mounted by the user) goes the usual way through the session:
:meth:`DirectTransport.pool` returns None for those and the caller falls back on ``session.request``.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode, urlsplit

import requests
import urllib3
from requests.structures import CaseInsensitiveDict
from requests.utils import get_encoding_from_headers
from urllib3.exceptions import (
    ConnectTimeoutError,
    NewConnectionError,
    ProtocolError,
    ProxyError,
    ReadTimeoutError,
    SSLError,
)
from urllib3.exceptions import HTTPError as Urllib3Error

_JSON = {"Content-Type": "application/json"}


class DirectTransport:
    """Plain calls of one :class:`requests.Session` through its adapters' urllib3 pools (see the module text)."""

    def __init__(self, session: requests.Session):
        self.session = session
        self._probes: dict[str, requests.PreparedRequest] = {}

    def pool(self, node: str, environment: dict[str, Any]) -> Any | None:
        """The urllib3 pool of the session for ``node`` (scheme://host:port/...), or None when this call must go
        through ``session.request``: a proxy is configured, or the adapter is not requests' own."""
        if environment.get("proxies"):
            return None
        adapter = self.session.get_adapter(node)
        if type(adapter) is not requests.adapters.HTTPAdapter:
            return None
        probe = self._probes.get(node)
        if probe is None:
            probe = requests.PreparedRequest()
            probe.url = node
            self._probes[node] = probe
        verify = environment.get("verify", self.session.verify)
        # Asked of the adapter on every call (17 us): its pool manager keeps one pool and replaces it when another
        # host is called; a pool kept here would outlive that and escape the session's connection limit.
        return adapter.get_connection_with_tls_context(probe, verify, proxies={}, cert=self.session.cert)

    def send(self, pool: Any, method: str, url: str, *, params: Any, data: bytes | None, json_body: Any,
             headers: dict | None, timeout: float, auth: tuple[str, str] | None) -> requests.Response:
        """One call, answered in full (``stream`` is never used here): a Response as requests would build it, or
        requests' ConnectionError / ConnectTimeout / ReadTimeout / SSLError for what went wrong."""
        target = urlsplit(url)
        path = target.path or "/"
        query = urlencode(params, doseq=True) if params else ""
        if target.query:
            query = f"{target.query}&{query}" if query else target.query
        if query:
            path = f"{path}?{query}"
        merged = dict(self.session.headers)
        if json_body is not None:
            data = json.dumps(json_body, allow_nan=False).encode("utf-8")
            merged.update(_JSON)
        if headers:
            merged.update(headers)
        if auth is not None:
            merged.update(urllib3.util.make_headers(basic_auth=f"{auth[0]}:{auth[1]}"))
        try:
            raw = pool.urlopen(method, path, body=data, headers=merged, redirect=False, assert_same_host=False,
                               preload_content=True, decode_content=True, retries=False,
                               timeout=urllib3.Timeout(connect=timeout, read=timeout))
        except ConnectTimeoutError as exc:
            # urllib3's NewConnectionError is a ConnectTimeoutError too; requests calls a refusal a ConnectionError.
            if isinstance(exc, NewConnectionError):
                raise requests.ConnectionError(exc) from exc
            raise requests.ConnectTimeout(exc) from exc
        except ReadTimeoutError as exc:
            raise requests.ReadTimeout(exc) from exc
        except SSLError as exc:
            raise requests.exceptions.SSLError(exc) from exc
        except (ProtocolError, ProxyError, OSError, Urllib3Error) as exc:
            raise requests.ConnectionError(exc) from exc
        response = requests.Response()
        response.status_code = raw.status
        response.reason = raw.reason
        response.headers = CaseInsensitiveDict(raw.headers)
        response.encoding = get_encoding_from_headers(response.headers)
        response.url = url if not query else f"{url.split('?', 1)[0]}?{query}"
        # The body was read in full (preload_content), so the connection is back in the pool already.
        response._content = raw.data
        return response
