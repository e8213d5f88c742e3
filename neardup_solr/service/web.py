"""The web page for people: look up a text or an id and see the near duplicates ranked, each with its similarity,
edit distance and a word-level diff against the query; upload a file to index and watch its progress; run a
report and watch it, then see the histogram of its similarities, the pairs nearest the threshold side by side,
and its groups with each member's words against the representative's (``/reports``); search the collection for
words, each group of near duplicates shown once with its copies and their word diffs under the kept document, or
not folded (``/search``, the same search as ``GET /v1/search``); and the S-curve of the collection's LSH bands
against a threshold (``/tune``, the ``tune`` command's plot). Pictures are inline SVG.
Server-rendered with Jinja2 templates (autoescaped), no JavaScript and no build step:
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

from neardup_solr.signing.settings import META_DATASET
from neardup_solr.errors import InvalidParameterError, InvalidTextError, NeardupError
from neardup_solr.io.readers import FORMATS
from neardup_solr.options import AnyLookup
from neardup_solr.solr.folded_search import FoldedHit, folded_search
from neardup_solr.solr.searcher import DocumentNotFoundError
from neardup_solr.validation import check_label, parse_value
from neardup_solr.engine.weighted_lsh import weighted_band_params
from neardup_solr.service import lookups
from neardup_solr.pairs.groups import group_pairs, read_distance_pairs
from neardup_solr.service.charts import Curve, histogram_svg, s_curve_svg, similarity_histogram
from neardup_solr.service.diff import word_diff
from neardup_solr.service.jobs import PAIRS_FILE, run_index, run_report_job, threshold_report_params

TEMPLATES = Jinja2Templates(directory=str(Path(__file__).parent / "templates"))
WEB_MODES = ("threshold", "meaning", "lsh", "shingles", "minhash")
UPLOAD_SUFFIXES = {".txt", ".tsv", ".jsonl", ".json", ".csv"}
NEAR_THRESHOLD_PAIRS = 10  # the borderline pairs a report page shows side by side
LARGEST_GROUPS = 10
GROUP_MEMBERS_SHOWN = 50
SEARCH_ROWS = 20  # hits a search page shows
SEARCH_COPIES = 10  # folded copies listed under each kept document


def _texts(searcher: Any, ids: list) -> dict[str, str]:
    """The stored texts of these ids, in one real-time get (ids no longer indexed are left out)."""
    unique = list(dict.fromkeys(str(i) for i in ids))
    return {str(doc["id"]): doc.get("content", "") for doc in searcher.client.get_by_ids(unique, "id,content")}


def _percent(state: dict[str, Any]) -> int:
    """How far a job is, from its ``done`` and ``total``."""
    total = state.get("total") or 0
    return min(100, int(100 * (state.get("done") or 0) / total)) if total else 0


def _similarity_pairs(directory: Path) -> list[tuple[Any, Any, float]]:
    """``(id, neighbor_id, similarity)`` of a finished threshold report: its file's third column."""
    pairs = []
    for a, b, similarity in read_distance_pairs(directory / PAIRS_FILE):
        if similarity is None:
            raise ValueError(f"{directory / PAIRS_FILE}: the pair {a}, {b} has no similarity column")
        pairs.append((a, b, float(similarity)))
    return pairs


def _groups(pairs: list[tuple[Any, Any, float]]) -> list:
    """The report's groups, as ``groups`` makes them from its file (distance 1 - similarity)."""
    return group_pairs([(a, b, round(1 - s, 6)) for a, b, s in pairs])


def _report_view(searcher: Any, directory: Path, params: dict[str, Any]) -> dict[str, Any]:
    """What a finished threshold report's page shows: the histogram of its similarities, the pairs nearest the
    threshold with their texts and word diffs, and its largest groups."""
    threshold = float(params["threshold"])
    pairs = _similarity_pairs(directory)
    histogram = similarity_histogram([s for _, _, s in pairs], threshold, 0.025 if threshold >= 0.5 else 0.05)
    borderline = sorted(pairs, key=lambda pair: (pair[2], str(pair[0]), str(pair[1])))[:NEAR_THRESHOLD_PAIRS]
    texts = _texts(searcher, [i for a, b, _ in borderline for i in (a, b)])
    near = [{"a": a, "b": b, "similarity": s, "text_a": texts.get(str(a), ""),
             "segments": word_diff(texts.get(str(a), ""), texts.get(str(b), ""))} for a, b, s in borderline]
    groups = sorted(_groups(pairs), key=lambda g: (-len(g.members), g.group_id))
    return {"svg": Markup(histogram_svg(histogram, threshold)), "histogram": histogram, "near": near,
            "groups": groups[:LARGEST_GROUPS], "group_count": len(groups), "pair_count": len(pairs)}


def _search_hit(hit: FoldedHit) -> dict[str, Any]:
    """A search result as the page shows it: under a kept document, each folded copy with its words against the
    kept text."""
    return {"id": hit.id, "score": hit.score, "text": hit.content, "dataset": hit.dataset, "group": hit.group,
            "kept": hit.kept, "copy_count": hit.copy_count,
            "copies": [{"id": c.id, "score": c.score, "dataset": c.dataset,
                        "segments": word_diff(hit.content, c.content)} for c in hit.copies]}


def _form_lookup(mode: str, threshold: str, max_edit_distance: str) -> AnyLookup:
    if mode not in WEB_MODES:
        raise InvalidParameterError("mode", "one of " + ", ".join(WEB_MODES), mode)
    value = parse_value("threshold", threshold or "0.5", "threshold")
    if mode == "threshold":
        return lookups.resolve({"threshold": value})
    if mode == "meaning":
        return lookups.resolve({"threshold": value, "similarity": "cosine"})
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
                    options=lookups.options_in_force(chosen))

    @app.get("/search", response_class=HTMLResponse, include_in_schema=False)
    def search(request: Request, q: str = "", fold: str = "") -> HTMLResponse:
        # A GET form, so a search is a link. The words go only to folded_search, which escapes them as plain
        # words for edismax: nothing typed here becomes query syntax.
        form = {"words": q, "folded": bool(fold)}
        if not q.strip():
            return page(request, "search.html", form=form)
        try:
            settings = request.app.state.searchers.get().settings
            found = folded_search(request.app.state.client, q, fold=bool(fold), rows=SEARCH_ROWS,
                                  copies=SEARCH_COPIES, settings=settings)
        except (InvalidParameterError, InvalidTextError, ValueError) as exc:
            return page(request, "search.html", 422, form=form, error=str(exc))
        except NeardupError as exc:
            return page(request, "search.html", 503, form=form, error=str(exc))
        return page(request, "search.html", form=form, found=found.found, found_exact=found.found_exact,
                    copy_counts_exact=found.copy_counts_exact, hits=[_search_hit(h) for h in found.hits])

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
        return page(request, "upload_job.html", job=state, percent=_percent(state),
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

    @app.get("/reports", response_class=HTMLResponse, include_in_schema=False)
    def report_form(request: Request) -> HTMLResponse:
        settings = request.app.state.searchers.get().settings
        return page(request, "reports.html", form={"threshold": f"{settings.lsh_threshold:g}", "similarity": "jaccard",
                                                   "method": "lsh"})

    @app.post("/reports", include_in_schema=False)
    def report_start(request: Request, threshold: str = Form(""), similarity: str = Form("jaccard"),
                     method: str = Form("lsh")) -> Response:
        form = {"threshold": threshold, "similarity": similarity, "method": method}
        try:
            value = parse_value("threshold", threshold, "threshold")
            params = threshold_report_params({"threshold": value, "similarity": similarity, "method": method})
        except (InvalidParameterError, ValueError, TypeError) as exc:
            return page(request, "reports.html", 422, form=form, error=str(exc))
        jobs, client = request.app.state.jobs, request.app.state.client
        job = jobs.create("report", params)
        directory = jobs.root / job
        jobs.start(job, lambda update: run_report_job(client, directory, params))
        return RedirectResponse(f"/reports/{job}", status_code=303)

    def _report_state(request: Request, job: str) -> dict[str, Any] | None:
        state = request.app.state.jobs.get(job)
        return state if state is not None and state.get("kind") == "report" else None

    def _no_report(request: Request, error: str) -> HTMLResponse:
        return page(request, "reports.html", 404, form={"threshold": "", "similarity": "jaccard", "method": "lsh"},
                    error=error)

    @app.get("/reports/{job}", response_class=HTMLResponse, include_in_schema=False)
    def report_page(request: Request, job: str) -> HTMLResponse:
        state = _report_state(request, job)
        if state is None:
            return _no_report(request, f"no report job {job!r}")
        view = None
        if state["status"] == "done" and state["params"].get("kind") == "threshold":
            view = _report_view(request.app.state.searchers.get(), request.app.state.jobs.root / job, state["params"])
        return page(request, "report_job.html", job=state, percent=_percent(state), view=view,
                    running=state["status"] in ("queued", "running"))

    @app.get("/reports/{job}/groups/{group_id}", response_class=HTMLResponse, include_in_schema=False)
    def report_group(request: Request, job: str, group_id: int) -> HTMLResponse:
        state = _report_state(request, job)
        if state is None or state["status"] != "done" or state["params"].get("kind") != "threshold":
            return _no_report(request, f"no finished threshold report {job!r}")
        pairs = _similarity_pairs(request.app.state.jobs.root / job)
        group = next((g for g in _groups(pairs) if g.group_id == group_id), None)
        if group is None:
            return _no_report(request, f"report {job} has no group {group_id}")
        shown = group.members[:GROUP_MEMBERS_SHOWN]
        texts = _texts(request.app.state.searchers.get(), shown)
        representative = str(group.representative)
        similarity = {frozenset((str(a), str(b))): s for a, b, s in pairs}
        members = [{"id": m, "similarity": similarity.get(frozenset((representative, str(m)))),
                    "segments": word_diff(texts.get(representative, ""), texts.get(str(m), ""))}
                   for m in shown if str(m) != representative]
        return page(request, "report_group.html", job=state, group=group, representative=representative,
                    representative_text=texts.get(representative, ""), members=members,
                    hidden=len(group.members) - len(shown))

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
