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

import hmac
import logging
import time
from contextlib import asynccontextmanager
from http import HTTPStatus
from pathlib import Path
from typing import Any, Literal, Union
from urllib.parse import urlsplit

from fastapi import Body, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr
from starlette.exceptions import HTTPException as StarletteHTTPException

from neardup_solr.solr.documents import META_DATASET, read_index_settings
from neardup_solr.errors import (
    DocumentNotFoundError,
    InvalidParameterError,
    NeardupError,
    SolrUnavailableError,
    outcome_of,
)
from neardup_solr.engine.online import (
    Match,
    check_and_add,
    delete_dataset,
    delete_documents,
    is_reserved_id,
)
from neardup_solr.options import DEFAULT_SPLIT_BUCKET, ThresholdOptions, option_names
from neardup_solr.solr.client import RetryPolicy, SolrClient
from neardup_solr.solr.ttl import check_ttl
from neardup_solr.validation import check_id, check_int, check_label, id_problem
from neardup_solr.service import lookups
from neardup_solr.service.body_limit import ChunkedBodyLimit, too_large_detail
from neardup_solr.service.config import ServiceConfig
from neardup_solr.service.jobs import PAIRS_FILE, JobStore, pairs_as_jsonl, run_report, threshold_report_params
from neardup_solr.service.metrics import Metrics

log = logging.getLogger(__name__)

TOKEN_COOKIE = "neardup_token"
OPEN_PATHS = {"/health", "/login"}
MAX_RECORDS = 10_000
PROBLEM = "application/problem+json"


# ----------------------------------------------------------------------------------------------- models


class DocumentIn(BaseModel):
    """A record to index."""

    model_config = ConfigDict(extra="forbid")
    id: Union[StrictStr, StrictInt]
    text: StrictStr
    dataset: StrictStr | None = None
    ttl: StrictStr | None = Field(None, description="time to live, Solr date math (e.g. +30DAYS): Solr deletes the "
                                                     "document that long after it is indexed")


class LookupOptions(BaseModel):
    """Lookup options, as the command line's ``near-dups`` has them (see the lookups module)."""

    model_config = ConfigDict(extra="forbid")
    mode: Literal["shingles", "minhash", "lsh"] | None = Field(None, description="candidate query (default shingles)")
    max_edit_distance: StrictInt | None = Field(None, description="word edit distance limit (default: none)")
    min_jaccard: float | None = Field(
        None, description="keep candidates with exact Jaccard >= this (default: the collection's threshold)")
    rows: StrictInt | None = Field(None, description="candidates asked from Solr (default: all, paged)")
    first_word_filter: StrictBool | None = Field(
        None, description="only candidates with the same first word (the write-up's filter; default off)")
    num_hashes: StrictInt | None = Field(None, description="MinHash values to query with (mode minhash)")
    threshold: float | None = Field(None, description="every document with similarity >= this (no row cap)")
    similarity: Literal["jaccard", "idf"] | None = Field(None, description="threshold lookups: jaccard or idf")
    min_share: float | None = Field(None, description="every document holding this share of the shingles")
    with_text: StrictBool = Field(False, description="include each result's text")


class TextLookup(LookupOptions):
    text: StrictStr


class CheckRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: Union[StrictStr, StrictInt]
    text: StrictStr
    threshold: float | None = Field(None, description="Jaccard similarity (default: the collection's lsh_threshold)")
    add: StrictBool = True
    dataset: StrictStr | None = None
    ttl: StrictStr | None = Field(None, description="time to live of the added text, Solr date math (e.g. +30DAYS)")
    with_text: StrictBool = False


class BulkDelete(BaseModel):
    """Exactly one of ``ids`` and ``dataset``."""

    model_config = ConfigDict(extra="forbid")
    ids: list[Union[StrictStr, StrictInt]] | None = Field(None, max_length=MAX_RECORDS)
    dataset: StrictStr | None = None


class ReportRequest(BaseModel):
    """A whole-collection report: with ``threshold``, every pair at or above it (``method`` exact or lsh);
    without, one lookup per document with the lookup options (optionally over ``start_id``..``end_id``)."""

    model_config = ConfigDict(extra="forbid")
    threshold: float | None = None
    similarity: Literal["jaccard", "idf"] | None = None
    method: Literal["exact", "lsh"] | None = None
    dataset: StrictStr | None = None
    field_weights: dict[StrictStr, float] | None = Field(
        None, description="similarity idf on records of several text columns: column -> weight")
    idf_tokens: Literal["words", "grams"] | None = Field(
        None, description="similarity idf: weigh the words (default) or the words and their character 4-grams")
    split_bucket: StrictInt | None = Field(
        None, description="method lsh: band buckets of more members than this are verified in place when small "
                          "or dense and split by further signature values when large and sparse (default "
                          f"{DEFAULT_SPLIT_BUCKET})")
    start_id: Union[StrictStr, StrictInt, None] = None
    end_id: Union[StrictStr, StrictInt, None] = None
    workers: StrictInt | None = None
    mode: Literal["shingles", "minhash", "lsh"] | None = None
    max_edit_distance: StrictInt | None = None
    min_jaccard: float | None = None
    rows: StrictInt | None = None
    first_word_filter: StrictBool | None = None
    num_hashes: StrictInt | None = None


# ----------------------------------------------------------------------------------------------- errors


def problem(status: int, detail: str, **extra: Any) -> JSONResponse:
    """An RFC 9457 problem document."""
    body = {"type": "about:blank", "title": HTTPStatus(status).phrase, "status": status, "detail": detail, **extra}
    headers = {"Retry-After": "5"} if status == 503 else None
    return JSONResponse(body, status_code=status, media_type=PROBLEM, headers=headers)


def _status_of(exc: BaseException) -> int:
    """The HTTP status of a library error: the table the command line takes its exit codes from."""
    return outcome_of(exc).http_status


def _install_error_handlers(app: FastAPI, metrics: Metrics) -> None:
    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = []
        for err in exc.errors():
            where = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "body"
            errors.append({"field": where, "message": err.get("msg", "invalid")})
        detail = "; ".join(f"{e['field']}: {e['message']}" for e in errors[:5])
        return problem(422, f"invalid request: {detail}", errors=errors)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        detail = exc.detail if isinstance(exc.detail, str) else HTTPStatus(exc.status_code).phrase
        if exc.status_code == 404 and detail == "Not Found":
            detail = f"no such endpoint: {request.method} {request.url.path} (see /docs)"
        if exc.status_code == 405:
            detail = f"{request.method} is not allowed on {request.url.path} (see /docs)"
        return problem(exc.status_code, detail)

    async def library_error(request: Request, exc: Exception) -> JSONResponse:
        status = _status_of(exc)
        if isinstance(exc, SolrUnavailableError):
            metrics.solr_error(type(exc).__name__)
        if status == 500:
            # A bug: the details go to the log, never to the client.
            log.error("internal error on %s %s", request.method, request.url.path, exc_info=exc)
            return problem(500, "internal error in the service; the details are in its log")
        if isinstance(exc, InvalidParameterError):
            return problem(status, str(exc), parameter=exc.param)
        return problem(status, str(exc) or type(exc).__name__)

    # Registered per class (Starlette's handler for plain Exception runs only after the response is lost):
    # the package's errors and the ValueError/TypeError the library raises for a request it cannot serve.
    for error_class in (NeardupError, ValueError, TypeError):
        app.add_exception_handler(error_class, library_error)

    @app.exception_handler(Exception)
    async def internal_error(request: Request, exc: Exception) -> JSONResponse:
        log.error("internal error on %s %s", request.method, request.url.path, exc_info=exc)
        return problem(500, "internal error in the service; the details are in its log")


# ----------------------------------------------------------------------------------------------- helpers


def _match_dict(m: Match, with_text: bool) -> dict[str, Any]:
    return m.as_dict(with_content=with_text)


def _user_id(doc_id: Any, name: str = "id") -> str:
    checked = check_id(doc_id, name)
    if is_reserved_id(checked):
        raise DocumentNotFoundError(f"no document with id {checked!r}")
    return checked


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


# ----------------------------------------------------------------------------------------------- the guard


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


# ----------------------------------------------------------------------------------------------- the app


def create_app(config: ServiceConfig | None = None, client: SolrClient | None = None) -> FastAPI:
    """The service. ``config`` defaults to :meth:`ServiceConfig.load` (environment and config file); ``client``
    to a client on ``config.solr_url`` (else ``SOLR_URL``, else the local Solr) that waits at most
    ``config.solr_max_wait`` seconds for an absent Solr before answering 503."""
    config = config or ServiceConfig.load()
    if client is None:
        client = SolrClient(config.solr_url, timeout=config.solr_timeout,
                            retry=RetryPolicy(max_wait=config.solr_max_wait), min_replicas=config.min_replicas)
    jobs = JobStore(config.resolved_jobs_dir())
    metrics = Metrics()
    searchers = lookups.SearcherCache(client)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        yield
        client.close()

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
    _install_error_handlers(app, metrics)

    if config.cors_origins:
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(CORSMiddleware, allow_origins=config.cors_origins, allow_methods=["GET", "POST", "DELETE"],
                           allow_headers=["Authorization", "Content-Type"])

    # Added before the guard, so inside it: the token is checked before a chunked body is read, and its 413 is
    # counted in the metrics like any other answer.
    app.add_middleware(ChunkedBodyLimit, max_body_bytes=config.max_body_bytes,
                       too_large=lambda detail: problem(413, detail))

    app.add_middleware(Guard, config=config, metrics=metrics)

    # ------------------------------------------------------------------ health
    @app.get("/health", tags=["health"], summary="Liveness: the service answers (no Solr call, no token)")
    async def health() -> Response:
        return JSONResponse({"status": "ok"})  # on the event loop: no thread, no Solr

    @app.get("/ready", tags=["health"], summary="Readiness: Solr reachable, collection ours, settings readable")
    def ready() -> Response:
        try:
            client.check()
            from neardup_solr.solr.maintenance import require_neardup_schema

            require_neardup_schema(client, installed_ok=True)  # a user's own collection after install too
            settings = read_index_settings(client)
        except (NeardupError, ValueError) as exc:
            return problem(503, f"not ready: {exc}")
        return JSONResponse({"status": "ready", "solr": client.url, "cloud": bool(client.is_cloud),
                             "settings": settings.__dict__ if settings else None})

    @app.get("/metrics", tags=["health"], summary="Prometheus text format: requests, latency, Solr errors",
             response_class=PlainTextResponse)
    def prometheus() -> PlainTextResponse:
        return PlainTextResponse(metrics.render(), media_type="text/plain; version=0.0.4")

    # ------------------------------------------------------------------ documents
    @app.post("/v1/documents", tags=["documents"],
              summary="Index records; each is reported indexed, rejected (with the reason) or replaced")
    def add_documents(records: list[DocumentIn] = Body(..., max_length=MAX_RECORDS)) -> dict[str, Any]:
        try:
            return _index_records(client, records)
        finally:
            searchers.invalidate()  # the first records of an empty collection store its settings

    @app.post("/v1/documents/delete", tags=["documents"], summary="Delete by ids, or every document of a data set")
    def bulk_delete(request: BulkDelete) -> dict[str, Any]:
        if (request.ids is None) == (request.dataset is None):
            raise InvalidParameterError("ids", "given, or dataset given, but not both and not neither", None,
                                        show_value=False)
        searchers.invalidate()
        if request.ids is None:
            count = delete_dataset(client, request.dataset)
            return {"dataset": request.dataset, "deleted": count}
        result = delete_documents(client, [str(i) for i in request.ids])
        return {"deleted": len(result.deleted), "deleted_ids": result.deleted, "missing": result.missing}

    @app.get("/v1/documents/{doc_id:path}/near-dups", tags=["lookups"],
             summary="Near duplicates of a stored document, best first")
    def near_dups_of_id(
        doc_id: str,
        mode: Literal["shingles", "minhash", "lsh"] | None = None,
        max_edit_distance: int | None = None,
        min_jaccard: float | None = None,
        rows: int | None = None,
        first_word_filter: bool | None = None,
        num_hashes: int | None = None,
        threshold: float | None = None,
        similarity: Literal["jaccard", "idf"] | None = None,
        min_share: float | None = None,
        with_text: bool = False,
    ) -> Response:
        lookup = lookups.resolve(dict(mode=mode, max_edit_distance=max_edit_distance, min_jaccard=min_jaccard,
                                      rows=rows, first_word_filter=first_word_filter, num_hashes=num_hashes,
                                      threshold=threshold, similarity=similarity, min_share=min_share))
        searcher = searchers.get()
        source = searcher.get_by_id(_user_id(doc_id))
        query = searcher.prepare(source.content, source.id)
        matches = lookups.run(searcher, query, lookup)
        return JSONResponse({"query": {"id": source.id}, "options": lookup.describe(),
                             "results": [_match_dict(m, with_text) for m in matches]})

    @app.get("/v1/documents/{doc_id:path}", tags=["documents"], summary="One stored document")
    def get_document(doc_id: str) -> dict[str, Any]:
        doc = searchers.get().get_by_id(_user_id(doc_id))
        return {"id": doc.id, "text": doc.content, "dataset": doc.dataset, "num_words": doc.num_words,
                "md5_hash": doc.md5_hash}

    @app.delete("/v1/documents/{doc_id:path}", tags=["documents"], summary="Delete one document")
    def delete_document(doc_id: str) -> dict[str, Any]:
        result = delete_documents(client, [_user_id(doc_id)])
        if not result.deleted:
            raise DocumentNotFoundError(f"no document with id {doc_id!r} in {client.url}")
        return {"deleted": 1, "deleted_ids": result.deleted}

    @app.post("/v1/near-dups", tags=["lookups"], summary="Near duplicates of a new text, best first")
    def near_dups_of_text(request: TextLookup) -> Response:
        options = request.model_dump(exclude={"text", "with_text"})
        lookup = lookups.resolve(options)
        searcher = searchers.get()
        query = searcher.prepare(request.text)
        matches = lookups.run(searcher, query, lookup)
        # A JSONResponse is sent as it is: no second hop to the thread pool to validate and serialise a dict.
        return JSONResponse({"query": {"text": request.text}, "options": lookup.describe(),
                             "results": [_match_dict(m, request.with_text) for m in matches]})

    @app.post("/v1/check", tags=["lookups"],
              summary="Online dedup: the near duplicates >= threshold; the text is added only when there are none")
    def check(request: CheckRequest) -> Response:
        searcher = searchers.get_stored()
        result = check_and_add(client, request.id, request.text, request.threshold, add=request.add,
                               dataset=request.dataset, ttl=request.ttl, searcher=searcher,
                               commit_within_ms=config.check_commit_ms)
        if result.added and searcher is None:
            searchers.invalidate()  # this check stored the collection's first settings
        return JSONResponse({"id": result.id, "added": result.added, "status": result.status,
                             "threshold": result.threshold,
                             "results": [_match_dict(m, request.with_text) for m in result.matches]})

    # ------------------------------------------------------------------ reports
    @app.post("/v1/reports", tags=["reports"], status_code=202,
              summary="Start a whole-collection or threshold report as a background job")
    def start_report(request: ReportRequest) -> dict[str, Any]:
        params = _report_params(request)
        job = jobs.create("report", params)
        directory = jobs.root / job
        jobs.start(job, lambda update: run_report(client, directory, params))
        return {"job": job, "status": "queued", "links": _report_links(job)}

    @app.get("/v1/reports/{job}", tags=["reports"], summary="A report's progress and, when done, its downloads")
    def report_status(job: str) -> dict[str, Any]:
        state = jobs.get(job)
        if state is None or state.get("kind") != "report":
            raise DocumentNotFoundError(f"no report job {job!r}")
        state.pop("pid", None)
        state["links"] = _report_links(job) if state["status"] == "done" else {}
        return state

    @app.get("/v1/reports/{job}/pairs.tsv", tags=["reports"], summary="The pairs as TSV (when the job is done)",
             response_class=PlainTextResponse)
    def report_tsv(job: str) -> Response:
        path = _finished_pairs(jobs, job)
        return PlainTextResponse(path.read_text(encoding="utf-8"), media_type="text/tab-separated-values")

    @app.get("/v1/reports/{job}/pairs.jsonl", tags=["reports"], summary="The pairs as JSON lines (when done)")
    def report_jsonl(job: str) -> Response:
        path = _finished_pairs(jobs, job)
        return StreamingResponse(pairs_as_jsonl(path), media_type="application/x-ndjson")

    from neardup_solr.service.web import install as install_web

    install_web(app)
    return app


def _report_links(job: str) -> dict[str, str]:
    return {"status": f"/v1/reports/{job}", "tsv": f"/v1/reports/{job}/pairs.tsv",
            "jsonl": f"/v1/reports/{job}/pairs.jsonl"}


def _finished_pairs(jobs: JobStore, job: str) -> Path:
    state = jobs.get(job)
    if state is None or state.get("kind") != "report":
        raise DocumentNotFoundError(f"no report job {job!r}")
    if state["status"] != "done":
        raise StarletteHTTPException(409, f"report {job} is {state['status']}"
                                          + (f": {state['error']}" if state.get("error") else
                                             "; poll /v1/reports/" + job + " until it is done"))
    return jobs.root / job / PAIRS_FILE


def _report_params(request: ReportRequest) -> dict[str, Any]:
    """The report's options checked as the command line's ``report`` checks them (the same options classes)."""
    if request.threshold is not None:
        search = {k: getattr(request, k) for k in ("start_id", "end_id", *lookups.SEARCH_OPTIONS)}
        given = [k for k, v in search.items() if v is not None]
        if given:
            raise lookups.OptionError(given, "with threshold, which compares every document with every other one")
        return threshold_report_params({k: getattr(request, k) for k in option_names(ThresholdOptions)})
    given = [k for k in ("similarity", "method", "dataset", "field_weights", "idf_tokens", "split_bucket")
             if getattr(request, k) is not None]
    if given:
        raise lookups.OptionError(given, "without threshold (they choose the threshold report)")
    workers = check_int("workers", request.workers if request.workers is not None else 1, "workers")
    lookup = lookups.resolve({k: getattr(request, k) for k in lookups.SEARCH_OPTIONS}, report=True)
    for name in ("start_id", "end_id"):
        value = getattr(request, name)
        if value is not None and id_problem(value):
            check_id(value, name)
    return {"kind": "lookups", "threshold": None, "mode": lookup.mode, "max_distance": lookup.max_distance,
            "rows": lookup.rows, "first_word_filter": lookup.first_word_filter, "num_hashes": lookup.num_hashes,
            "min_jaccard": lookup.min_jaccard, "workers": workers,
            "start_id": None if request.start_id is None else str(request.start_id),
            "end_id": None if request.end_id is None else str(request.end_id)}


def _index_records(client: SolrClient, records: list[DocumentIn]) -> dict[str, Any]:
    """Index a request's records: one status per record, in the request's order. An id given twice keeps its
    last record (as files do); the earlier ones are reported ``replaced``."""
    from neardup_solr.solr.indexer import Indexer

    results: list[dict[str, Any]] = [{"index": i, "id": r.id} for i, r in enumerate(records)]
    last = {}
    for i, r in enumerate(records):
        last[str(r.id)] = i
    groups: dict[tuple[str | None, str | None], list[int]] = {}
    for i, r in enumerate(records):
        if last[str(r.id)] != i:
            results[i].update(status="replaced", reason="a later record of this request has the same id (the last "
                                                        "one is kept)")
            continue
        try:
            if r.dataset is not None:
                check_label("dataset", r.dataset, reserved=(META_DATASET,))
            ttl = check_ttl(r.ttl)
        except InvalidParameterError as exc:
            results[i].update(status="rejected", reason=str(exc))
            continue
        if is_reserved_id(str(r.id)):
            results[i].update(status="rejected", reason="ids starting with '__neardup_' are reserved for neardup-solr")
            continue
        groups.setdefault((r.dataset, ttl), []).append(i)
    for (dataset, ttl), positions in groups.items():
        indexer = Indexer(client, dataset=dataset, ttl=ttl)
        summary = indexer.index_records([(records[i].id, records[i].text) for i in positions])
        refused = {r.line: r.reason for r in summary.rejections}
        for line, i in enumerate(positions, start=1):
            if line in refused:
                results[i].update(status="rejected", reason=refused[line])
            else:
                results[i]["status"] = "indexed"
    counts = {s: sum(1 for r in results if r["status"] == s) for s in ("indexed", "rejected", "replaced")}
    return {**counts, "results": results}


def _version() -> str:
    from neardup_solr.version import package_version

    return package_version()
