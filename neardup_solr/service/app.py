"""The near-duplicate HTTP service: an ASGI app (FastAPI) over the Python API, on a core or a SolrCloud collection.

Why FastAPI: the request and answer models are declared once and give the validation, the OpenAPI description
(``/openapi.json``, interactive docs at ``/docs``) and the fuzz tests' input space at the same time; it runs on
uvicorn, the ecosystem's default ASGI server. The library is synchronous (``requests``), so the endpoints are
plain ``def`` functions, which FastAPI runs on its thread pool.

Errors are JSON in the shape of RFC 9457 (``application/problem+json``: ``type``, ``title``, ``status``,
``detail``): 422 for a value the API refuses (wrong type, out of range, NaN, an empty text, an option that
does not apply), 404 for an unknown id or job, 409 for a conflict with what is stored, 413 over the body limit,
401 without the token, 503 with ``Retry-After`` while Solr is away. No stack trace leaves the server.

Security: ``serve`` binds 127.0.0.1 unless told otherwise. When a token is configured (``NEARDUP_SERVICE_TOKEN``
or ``token`` in the ``[service]`` section of the config file), every call but ``/health`` (and the ``/login``
form that lets a browser present it) needs ``Authorization: Bearer <token>`` or the cookie ``/login`` sets; the
token is never logged. CORS is off unless origins are configured. Unsafe requests (POST, DELETE) that a browser
sends from another origin are refused, so a web page elsewhere cannot drive a service on 127.0.0.1.
"""

from __future__ import annotations

from contextlib import asynccontextmanager

from fastapi import FastAPI

from neardup_solr.service import lookups
from neardup_solr.service.body_limit import ChunkedBodyLimit
from neardup_solr.service.config import ServiceConfig
from neardup_solr.service.guard import OPEN_PATHS, TOKEN_COOKIE, Guard
from neardup_solr.service.jobs import JobStore
from neardup_solr.service.metrics import Metrics
from neardup_solr.service.models import (  # the request models, importable from here as before
    MAX_RECORDS,
    BulkDelete,
    CheckRequest,
    DocumentIn,
    MatchRequest,
    LookupOptions,
    LookupRequest,
    ReportRequest,
    TextLookup,
)
from neardup_solr.service.problems import PROBLEM, install_error_handlers, problem
from neardup_solr.service.routers import ROUTERS
from neardup_solr.solr.client import RetryPolicy, SolrClient
from neardup_solr.solr.companion_link import resolve_quietly
from neardup_solr.service.web import install as install_web
from neardup_solr.version import package_version

__all__ = ["create_app", "problem", "Guard", "PROBLEM", "TOKEN_COOKIE", "OPEN_PATHS", "MAX_RECORDS", "DocumentIn",
           "LookupRequest", "LookupOptions", "TextLookup", "CheckRequest", "MatchRequest", "BulkDelete",
           "ReportRequest"]


def create_app(config: ServiceConfig | None = None, client: SolrClient | None = None) -> FastAPI:
    """The service. ``config`` defaults to :meth:`ServiceConfig.load` (environment and config file); ``client``
    to a client on ``config.solr_url`` (else ``SOLR_URL``, else the local Solr) that waits at most
    ``config.solr_max_wait`` seconds for an absent Solr before answering 503."""
    config = config or ServiceConfig.load()
    if client is None:
        client = resolve_quietly(SolrClient(config.solr_url, timeout=config.solr_timeout,
                                            retry=RetryPolicy(max_wait=config.solr_max_wait),
                                            min_replicas=config.min_replicas))
    jobs = JobStore(config.resolved_jobs_dir())
    metrics = Metrics()
    searchers = lookups.SearcherCache(client)
    record_matchers = lookups.RecordMatcherCache(client)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        yield
        client.close()
        config.remove_temporary_jobs_dir()

    app = FastAPI(
        title="neardup-solr",
        version=_version(),
        summary="Near-duplicate lookups, online dedup and reports over Apache Solr.",
        lifespan=lifespan,
    )
    app.state.config = config
    app.state.client = client
    app.state.jobs = jobs
    app.state.metrics = metrics
    app.state.searchers = searchers
    app.state.record_matchers = record_matchers
    install_error_handlers(app, metrics)

    if config.cors_origins:
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(CORSMiddleware, allow_origins=config.cors_origins, allow_methods=["GET", "POST", "DELETE"],
                           allow_headers=["Authorization", "Content-Type"])

    # Added before the guard, so inside it: the token is checked before a chunked body is read, and its 413 is
    # counted in the metrics like any other answer.
    app.add_middleware(ChunkedBodyLimit, max_body_bytes=config.max_body_bytes,
                       too_large=lambda detail: problem(413, detail))

    app.add_middleware(Guard, config=config, metrics=metrics)

    for router in ROUTERS:
        app.include_router(router)

    install_web(app)
    return app


def _version() -> str:
    return package_version()
