"""``/health`` (the service answers), ``/ready`` (Solr reachable, the collection ours) and ``/metrics``."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response

from neardup_solr.errors import NeardupError
from neardup_solr.service.problems import problem
from neardup_solr.solr.settings_store import read_index_settings
from neardup_solr.solr.maintenance import require_neardup_schema

router = APIRouter(tags=["health"])


@router.get("/health", summary="Liveness: the service answers (no Solr call, no token)")
async def health() -> Response:
    return JSONResponse({"status": "ok"})  # on the event loop: no thread, no Solr


@router.get("/ready", summary="Readiness: Solr reachable, collection ours, settings readable")
def ready(request: Request) -> Response:
    client = request.app.state.client
    try:
        client.check()

        require_neardup_schema(client, installed_ok=True)  # a user's own collection after install too
        settings = read_index_settings(client)
    except (NeardupError, ValueError) as exc:
        return problem(503, f"not ready: {exc}")
    return JSONResponse({"status": "ready", "solr": client.url, "cloud": bool(client.is_cloud),
                         "settings": settings.__dict__ if settings else None})


@router.get("/metrics", summary="Prometheus text format: requests, latency, Solr errors",
            response_class=PlainTextResponse)
def prometheus(request: Request) -> PlainTextResponse:
    return PlainTextResponse(request.app.state.metrics.render(), media_type="text/plain; version=0.0.4")
