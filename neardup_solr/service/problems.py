"""Errors as answers: RFC 9457 problem documents (``application/problem+json``), the status of each library
error from the table the command line takes its exit codes from (:func:`neardup_solr.errors.outcome_of`), and
no stack trace leaving the server."""

from __future__ import annotations

import logging
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from neardup_solr.errors import InvalidParameterError, NeardupError, SolrUnavailableError, outcome_of
from neardup_solr.service.metrics import Metrics

log = logging.getLogger(__name__)

PROBLEM = "application/problem+json"


def problem(status: int, detail: str, **extra: Any) -> JSONResponse:
    """An RFC 9457 problem document."""
    body = {"type": "about:blank", "title": HTTPStatus(status).phrase, "status": status, "detail": detail, **extra}
    headers = {"Retry-After": "5"} if status == 503 else None
    return JSONResponse(body, status_code=status, media_type=PROBLEM, headers=headers)


def _status_of(exc: BaseException) -> int:
    """The HTTP status of a library error: the table the command line takes its exit codes from."""
    return outcome_of(exc).http_status


def install_error_handlers(app: FastAPI, metrics: Metrics) -> None:
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
