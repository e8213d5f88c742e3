"""What every request passes first: the bearer token, the refusal of cross-origin writes and of a declared body
over the limit, and the request metrics."""

from __future__ import annotations

import hmac
import time
from typing import Any
from urllib.parse import urlsplit

from fastapi import Request
from fastapi.responses import JSONResponse

from neardup_solr.service.body_limit import too_large_detail
from neardup_solr.service.config import ServiceConfig
from neardup_solr.service.metrics import Metrics
from neardup_solr.service.problems import problem

TOKEN_COOKIE = "neardup_token"
OPEN_PATHS = {"/health", "/login"}


def _same_origin(request: Request, allowed: list[str]) -> bool:
    origin = request.headers.get("origin")
    if origin is None:
        referer = request.headers.get("referer")
        if referer is None:
            return True  # not a browser's cross-site form post: curl, scripts, the tests
        origin = "{0.scheme}://{0.netloc}".format(urlsplit(referer))
    if origin in allowed:
        return True
    return urlsplit(origin).netloc == request.headers.get("host", "")


class Guard:
    """What every request passes first: the bearer token, the refusal of cross-origin writes and of a declared
    body over the limit, and the request metrics. A plain ASGI middleware: Starlette's ``@app.middleware`` wraps
    every request in a task group and memory streams, which cost more than the rest of a /health answer."""

    def __init__(self, app: Any, config: ServiceConfig, metrics: Metrics) -> None:
        self.app = app
        self.config = config
        self.metrics = metrics

    def _refusal(self, request: Request) -> JSONResponse | None:
        config = self.config
        if config.token is not None and request.url.path not in OPEN_PATHS and request.method != "OPTIONS":
            presented = None
            header = request.headers.get("authorization", "")
            if header[:7].lower() == "bearer ":
                presented = header[7:].strip()
            presented = presented or request.cookies.get(TOKEN_COOKIE)
            if presented is None or not hmac.compare_digest(presented.encode(), config.token.encode()):
                response = problem(401, "this service needs its bearer token: send 'Authorization: Bearer <token>' "
                                        "(a browser can sign in at /login)")
                response.headers["WWW-Authenticate"] = "Bearer"
                return response
        if request.method in ("POST", "PUT", "PATCH", "DELETE"):
            if not _same_origin(request, config.cors_origins):
                return problem(403, "cross-origin requests are refused; configure NEARDUP_SERVICE_CORS_ORIGINS "
                                    "to allow an origin")
            length = request.headers.get("content-length")
            if length is not None and length.isdigit() and int(length) > config.max_body_bytes:
                return problem(413, too_large_detail(int(length), config.max_body_bytes))
        return None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        request = Request(scope)
        refusal = self._refusal(request)
        if refusal is not None:
            if refusal.status_code == 401:
                self.metrics.observe(request.method, "(unauthorised)", 401, time.perf_counter() - started)
            await refusal(scope, receive, send)
            return
        status = 500

        async def sending(message: Any) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            route = scope.get("route")
            self.metrics.observe(request.method, getattr(route, "path", "(no route)"), status,
                                 time.perf_counter() - started)
