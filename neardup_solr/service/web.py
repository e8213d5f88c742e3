"""The web page for people: look up a text or an id and see the near duplicates ranked, each with its similarity,
edit distance and a word-level diff against the query; and a second view that uploads a file to index and shows
its progress; and the S-curve of the collection's LSH bands against a threshold (``/tune``, the ``tune`` command's
plot), drawn as inline SVG. Server-rendered with Jinja2 templates (autoescaped), no JavaScript and no build step:
the progress page refreshes itself with a meta tag.

Every lookup goes through the same code as the JSON API (:mod:`neardup_solr.service.lookups`), so the page and
``POST /v1/near-dups`` give the same answer for the same options.
"""

from __future__ import annotations

import hmac
import shutil
from pathlib import Path
from typing import Any

from fastapi import FastAPI, File, Form, Request, UploadFile
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from markupsafe import Markup

from neardup_solr.solr.documents import META_DATASET
from neardup_solr.errors import InvalidParameterError, InvalidTextError, NeardupError
from neardup_solr.io.readers import FORMATS
from neardup_solr.solr.searcher import DocumentNotFoundError
from neardup_solr.validation import check_label, parse_value
from neardup_solr.engine.weighted_lsh import weighted_band_params
from neardup_solr.service import lookups
from neardup_solr.service.charts import Curve, s_curve_svg
from neardup_solr.service.diff import word_diff
from neardup_solr.service.jobs import run_index

TEMPLATES = Jinja2Templates(directory=str(Path(__file__).parent / "templates"))
WEB_MODES = ("threshold", "lsh", "shingles", "minhash")
UPLOAD_SUFFIXES = {".txt", ".tsv", ".jsonl", ".json", ".csv"}


def _form_lookup(mode: str, threshold: str, max_edit_distance: str) -> lookups.Lookup:
    if mode not in WEB_MODES:
        raise InvalidParameterError("mode", "one of " + ", ".join(WEB_MODES), mode)
    value = parse_value("threshold", threshold or "0.5", "threshold")
    if mode == "threshold":
        return lookups.resolve({"threshold": value})
    # The page's one similarity field is the least similarity shown in every mode: people judging by eye set it
    # once, whichever query finds the candidates.
    options: dict[str, Any] = {"mode": mode, "min_jaccard": value}
    if max_edit_distance.strip():
        options["max_edit_distance"] = parse_value("max edit distance", max_edit_distance, "max_edit_distance")
    return lookups.resolve(options)


def install(app: FastAPI) -> None:
    """Add the pages to the service."""

    def page(request: Request, name: str, status: int = 200, **context: Any) -> HTMLResponse:
        return TEMPLATES.TemplateResponse(request, name, context, status_code=status)

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index(request: Request) -> HTMLResponse:
        return page(request, "index.html", form={"mode": "threshold", "threshold": "0.5", "text": "", "doc_id": "",
                                                 "max_edit_distance": ""})

    @app.post("/", response_class=HTMLResponse, include_in_schema=False)
    def lookup(request: Request, text: str = Form(""), doc_id: str = Form(""), mode: str = Form("threshold"),
               threshold: str = Form("0.5"), max_edit_distance: str = Form("")) -> HTMLResponse:
        form = {"text": text, "doc_id": doc_id, "mode": mode, "threshold": threshold,
                "max_edit_distance": max_edit_distance}
        try:
            if bool(text.strip()) == bool(doc_id.strip()):
                raise InvalidParameterError("text", "given, or an id given, but not both", None, show_value=False)
            chosen = _form_lookup(mode, threshold, max_edit_distance)
            searcher = request.app.state.searchers.get()  # the service's cached Searcher: no settings read here
            if doc_id.strip():
                source = searcher.get_by_id(doc_id.strip())
                query = searcher.prepare(source.content, source.id)
            else:
                query = searcher.prepare(text)
            matches = lookups.run(searcher, query, chosen)
        except (InvalidParameterError, InvalidTextError, DocumentNotFoundError, ValueError) as exc:
            status = 404 if isinstance(exc, DocumentNotFoundError) else 422
            return page(request, "index.html", status, form=form, error=str(exc))
        except NeardupError as exc:
            return page(request, "index.html", 503, form=form, error=str(exc))
        results = [{"rank": n, "id": m.id, "similarity": m.similarity, "edit_distance": m.edit_distance,
                    "exact": m.exact, "dataset": m.dataset, "segments": word_diff(query.text, m.content)}
                   for n, m in enumerate(matches, start=1)]
        return page(request, "index.html", form=form, query=query.text, query_id=query.id, results=results,
                    options=chosen.describe())

    @app.get("/upload", response_class=HTMLResponse, include_in_schema=False)
    def upload_form(request: Request) -> HTMLResponse:
        return page(request, "upload.html", formats=FORMATS)

    @app.post("/upload", include_in_schema=False)
    def upload(request: Request, file: UploadFile = File(...), format: str = Form(""),
               dataset: str = Form("")) -> Response:
        jobs = request.app.state.jobs
        try:
            fmt = format or None
            if fmt is not None and fmt not in FORMATS:
                raise InvalidParameterError("format", "one of " + ", ".join(FORMATS), fmt)
            label = check_label("dataset", dataset.strip() or None, reserved=(META_DATASET,))
        except InvalidParameterError as exc:
            return page(request, "upload.html", 422, formats=FORMATS, error=str(exc))
        suffix = Path(file.filename or "").suffix.lower()
        job = jobs.create("index", {"filename": file.filename, "format": fmt, "dataset": label})
        target = jobs.root / job / ("input" + (suffix if suffix in UPLOAD_SUFFIXES else ".txt"))
        with open(target, "wb") as out:
            shutil.copyfileobj(file.file, out)
        client = request.app.state.client
        jobs.start(job, lambda update: run_index(client, target, fmt, label, update))
        return RedirectResponse(f"/upload/{job}", status_code=303)

    @app.get("/upload/{job}", response_class=HTMLResponse, include_in_schema=False)
    def upload_progress(request: Request, job: str) -> HTMLResponse:
        state = request.app.state.jobs.get(job)
        if state is None or state.get("kind") != "index":
            return page(request, "upload.html", 404, formats=FORMATS, error=f"no upload job {job!r}")
        total = state.get("total") or 0
        percent = int(100 * (state.get("done") or 0) / total) if total else 0
        return page(request, "upload_job.html", job=state, percent=min(100, percent),
                    running=state["status"] in ("queued", "running"))

    @app.get("/tune", response_class=HTMLResponse, include_in_schema=False)
    def tune(request: Request, threshold: str = "") -> HTMLResponse:
        # The collection's own bands (what LSH lookups query) and those a report at the threshold would choose.
        settings = request.app.state.searchers.get().settings
        collection = settings.lsh_params()
        value, error = settings.lsh_threshold, None
        if threshold.strip():
            try:
                value = parse_value("threshold", threshold, "threshold")
            except InvalidParameterError as exc:
                error = str(exc)
        report = weighted_band_params(value, settings.num_hashes)
        curves = [Curve(collection, "this collection's index", "collection"),
                  Curve(report, f"report --threshold {value:g} --method lsh", "report")]
        near = sorted({round(min(1.0, max(0.0, value + d)), 2) for d in (-0.3, -0.2, -0.1, -0.05, 0, 0.05, 0.1)})
        rows = [{"s": s, "collection": float(collection.probability(s)), "report": float(report.probability(s))}
                for s in near]
        return page(request, "tune.html", 422 if error else 200, threshold=f"{value:g}", error=error,
                    svg=Markup(s_curve_svg(curves, value)), collection=collection, report=report, rows=rows)

    @app.get("/login", response_class=HTMLResponse, include_in_schema=False)
    def login_form(request: Request) -> HTMLResponse:
        return page(request, "login.html")

    @app.post("/login", include_in_schema=False)
    def login(request: Request, token: str = Form("")) -> Response:
        expected = request.app.state.config.token
        if expected is None:
            return RedirectResponse("/", status_code=303)
        if not hmac.compare_digest(token.encode(), expected.encode()):
            return page(request, "login.html", 401, error="that is not this service's token")
        response = RedirectResponse("/", status_code=303)
        response.set_cookie("neardup_token", token, httponly=True, samesite="strict",
                            secure=request.url.scheme == "https")
        return response
