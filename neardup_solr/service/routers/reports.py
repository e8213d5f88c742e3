"""``/v1/reports``: a whole-collection report as a background job (every pair at or above a threshold, the
collection's by default, or the write-up's one lookup per document), its progress, and its pairs as TSV or JSON
lines once done."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import PlainTextResponse, Response, StreamingResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from neardup_solr.errors import DocumentNotFoundError
from neardup_solr.options import report_options_from_given
from neardup_solr.solr.settings_store import read_index_settings
from neardup_solr.service.jobs import PAIRS_FILE, JobStore, pairs_as_jsonl, report_params, run_report_job
from neardup_solr.service.models import ReportRequest

router = APIRouter(tags=["reports"])


@router.post("/v1/reports", status_code=202,
             summary="Start a whole-collection or threshold report as a background job")
def start_report(request: Request, body: ReportRequest) -> dict[str, Any]:
    # Checked as the command line's report checks them: the same options, refused before the job starts; the
    # collection's threshold (and method) where none is given.
    client = request.app.state.client
    params = report_params(report_options_from_given(body.model_dump(), read_index_settings(client)))
    jobs: JobStore = request.app.state.jobs
    job = jobs.create("report", params)
    directory = jobs.root / job
    jobs.start(job, lambda update: run_report_job(client, directory, params))
    return {"job": job, "status": "queued", "links": _report_links(job)}


@router.get("/v1/reports/{job}", summary="A report's progress and, when done, its downloads")
def report_status(request: Request, job: str) -> dict[str, Any]:
    state = request.app.state.jobs.get(job)
    if state is None or state.get("kind") != "report":
        raise DocumentNotFoundError(f"no report job {job!r}")
    state.pop("pid", None)
    state["links"] = _report_links(job) if state["status"] == "done" else {}
    return state


@router.get("/v1/reports/{job}/pairs.tsv", summary="The pairs as TSV (when the job is done)",
            response_class=PlainTextResponse)
def report_tsv(request: Request, job: str) -> Response:
    path = _finished_pairs(request.app.state.jobs, job)
    return PlainTextResponse(path.read_text(encoding="utf-8"), media_type="text/tab-separated-values")


@router.get("/v1/reports/{job}/pairs.jsonl", summary="The pairs as JSON lines (when done)")
def report_jsonl(request: Request, job: str) -> Response:
    path = _finished_pairs(request.app.state.jobs, job)
    return StreamingResponse(pairs_as_jsonl(path), media_type="application/x-ndjson")


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
