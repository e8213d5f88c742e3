"""A stand-in for Solr made of real answers: exchanges recorded with a real Solr (tests/data/solr-answers.json,
written by tests/data/capture_solr_answers.py) played back to a real SolrClient, below its retry and error
handling, so that what the client, the searcher and the indexer do with Solr's answers is tested without a Solr.

A :class:`ReplayClient` answers a request only when it is the one recorded (method, path, parameters and body
alike); any other request fails the test, so a change in what is sent shows as "no recorded answer", and the
capture is run again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable
from urllib.parse import parse_qsl

import requests

from neardup_solr.signing.settings import IndexSettings
from neardup_solr.solr.client import RetryPolicy, SolrClient

ANSWERS = Path(__file__).resolve().parent / "data" / "solr-answers.json"
# The settings the records were indexed with; pinned so that a new default does not change the requests.
SETTINGS = IndexSettings(ngram=3, unit="word", num_hashes=128, seed=42, lsh_threshold=0.8, normalizer_version=2)
CORE_URL = "http://127.0.0.1:8983/solr/neardup"


def _form(data: Any) -> list[list[str]] | None:
    """A form body as its (name, value) pairs: the order in which the client writes them is part of the request."""
    if data is None:
        return None
    text = data.decode("utf-8") if isinstance(data, bytes) else str(data)
    return [list(kv) for kv in parse_qsl(text, keep_blank_values=True)]


def _params(params: Any) -> list[list[str]] | None:
    if params is None:
        return None
    items = params.items() if isinstance(params, dict) else params
    return [[str(k), str(v)] for k, v in items]


def request_of(path: str, method: str, params: Any, data: Any, json_body: Any) -> dict:
    """A request as it is recorded and matched."""
    is_json = isinstance(data, bytes) and data[:1] in (b"[", b"{")
    return {"method": method, "path": path, "params": _params(params),
            "form": None if is_json else _form(data),
            "json": json.loads(data) if is_json else json_body}


def exchange_of(path: str, method: str, params: Any, data: Any, json_body: Any, resp: requests.Response) -> dict:
    """One recorded exchange: the request, and Solr's answer (status, JSON body or text)."""
    try:
        body: Any = resp.json()
    except ValueError:
        body = resp.text
    return {"request": request_of(path, method, params, data, json_body),
            "status": resp.status_code, "body": body}


def recorded(scenario: str) -> list[dict]:
    """The exchanges recorded for ``scenario``, in order."""
    return json.loads(ANSWERS.read_text(encoding="utf-8"))[scenario]


def response(status: int, body: Any, url: str = CORE_URL) -> requests.Response:
    """A requests.Response as the HTTP layer would give it."""
    resp = requests.Response()
    resp.status_code = status
    if isinstance(body, str):
        resp._content = body.encode("utf-8")
        resp.headers["Content-Type"] = "text/html;charset=utf-8"
    else:
        resp._content = json.dumps(body).encode("utf-8")
        resp.headers["Content-Type"] = "application/json;charset=utf-8"
    resp.encoding = "utf-8"
    resp.url = url
    return resp


class ReplayClient(SolrClient):
    """A SolrClient whose requests are answered from recorded exchanges (or by ``answer`` when given) instead of
    the network. ``sent`` keeps every request, as recorded requests are written."""

    def __init__(self, *scenarios: str, answer: Callable[[dict], requests.Response] | None = None,
                 url: str = CORE_URL, max_wait: float = 0.0):
        super().__init__(url, retry=RetryPolicy(max_wait=max_wait, base=0.001, cap=0.001))
        self._cloud = False  # a single core: the client does not ask for the cluster's state
        self.exchanges = [e for name in scenarios for e in recorded(name)]
        self.answer = answer
        self.sent: list[dict] = []

    def _send(self, node, method, url, *, params, data, json_body, headers, timeout, stream):
        request = request_of(url.split(f"/{self.collection}/", 1)[1], method, params, data, json_body)
        self.sent.append(request)
        if self.answer is not None:
            return self.answer(request)
        for exchange in self.exchanges:
            if exchange["request"] == request:
                return response(exchange["status"], exchange["body"], url)
        raise AssertionError(f"no recorded answer for {request} (run tests/data/capture_solr_answers.py again "
                             "if the request changed on purpose)")
