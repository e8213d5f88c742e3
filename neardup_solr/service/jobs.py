"""Background jobs of the service: whole-collection reports and file uploads to index.

A job lives in its own directory under the jobs directory (``status.json``, its input, its output), not in
the memory of the worker process that started it: with ``serve --workers N`` the next request for the job may
reach another worker, and it reads the same files. The job itself runs on a thread of the worker that
accepted it; if that process dies, the job is reported as failed (its pid is recorded).

Progress of a report comes from the report's own progress file (``pairs.tsv.partial.progress.json``, written by
:class:`~neardup_solr.io.outputs.ResumableOutput` about once a second), so the library is used as it is, with no
callback of its own.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
import uuid
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Iterator

from neardup_solr.options import LookupReportOptions, ReportOptions, ThresholdOptions, option_names
from neardup_solr.processes import process_alive
from neardup_solr.io.outputs import PROGRESS_SUFFIX
from neardup_solr.solr.collection import SolrCollection
from neardup_solr.solr.client import SolrClient
from neardup_solr.validation import parse_tsv_id
from neardup_solr.engine.find import run_report
from neardup_solr.solr.searcher import Searcher
from neardup_solr.errors import InvalidRecordError
from neardup_solr.solr.indexer import Indexer
from neardup_solr.io.readers import RecordReader

log = logging.getLogger(__name__)

_JOB_ID = re.compile(r"^[0-9a-f]{32}$")
PAIRS_FILE = "pairs.tsv"
MAX_REASONS = 100


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class JobStore:
    """Jobs as directories under ``root``; every method is safe to call from any worker process."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    def directory(self, job_id: str) -> Path | None:
        """The job's directory, or None for an id that is not a job's (never a path outside the root)."""
        if not isinstance(job_id, str) or not _JOB_ID.match(job_id):
            return None
        path = self.root / job_id
        return path if (path / "status.json").is_file() else None

    def create(self, kind: str, params: dict[str, Any]) -> str:
        job_id = uuid.uuid4().hex
        (self.root / job_id).mkdir()
        self._write(job_id, {"job": job_id, "kind": kind, "status": "queued", "params": params, "created": _now(),
                             "started": None, "finished": None, "done": 0, "total": None, "error": None,
                             "pid": os.getpid()})
        return job_id

    def _write(self, job_id: str, state: dict[str, Any]) -> None:
        path = self.root / job_id / "status.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, path)

    def update(self, job_id: str, **changes: Any) -> None:
        with self._lock:
            state = json.loads((self.root / job_id / "status.json").read_text(encoding="utf-8"))
            state.update(changes)
            self._write(job_id, state)

    def get(self, job_id: str) -> dict[str, Any] | None:
        """The job's state, with live progress while it runs; None when there is no such job."""
        directory = self.directory(job_id)
        if directory is None:
            return None
        state = json.loads((directory / "status.json").read_text(encoding="utf-8"))
        if state["status"] in ("queued", "running"):
            progress = directory / (PAIRS_FILE + PROGRESS_SUFFIX)
            if progress.is_file():
                try:
                    live = json.loads(progress.read_text(encoding="utf-8"))
                    state.update(done=live.get("done", 0), total=live.get("total"), pairs=live.get("pairs"))
                except (OSError, ValueError):
                    pass  # being replaced at this instant: the next poll reads it
            pid = int(state.get("pid", 0))
            # A state without a pid is not judged: kill(0)/waitpid(0) would mean our own process group.
            if pid > 0 and not process_alive(pid):
                state.update(status="failed", error="the service process running this job exited")
        return state

    def start(self, job_id: str, work: Callable[[Callable[..., None]], dict[str, Any]]) -> None:
        """Run ``work(update)`` on a thread; its returned dict is merged into the final state."""

        def run() -> None:
            self.update(job_id, status="running", started=_now())
            try:
                result = work(lambda **kw: self.update(job_id, **kw))
            except Exception as exc:  # the job's failure is its state, for the client to read
                log.warning("job %s failed: %s", job_id, exc)
                self.update(job_id, status="failed", finished=_now(), error=str(exc) or type(exc).__name__)
                return
            self.update(job_id, status="done", finished=_now(), **result)

        threading.Thread(target=run, name=f"neardup-job-{job_id[:8]}", daemon=True).start()


# ----------------------------------------------------------------------------------------------- the work


def report_params(options: ReportOptions) -> dict[str, Any]:
    """A report job's parameters (kept in its state, shown to clients): the options by their keys, and the
    kind of report they ask for."""
    if isinstance(options, ThresholdOptions):
        return {"kind": "threshold", **asdict(options)}
    # Ids as the report reads them (str); max_distance: max_edit_distance's older name, kept for clients reading
    # it (deprecated).
    return {"kind": "lookups", "threshold": None, **asdict(options),
            "start_id": None if options.start_id is None else str(options.start_id),
            "end_id": None if options.end_id is None else str(options.end_id),
            "max_distance": options.max_edit_distance}


def report_options(params: dict[str, Any]) -> ReportOptions:
    """The options of a report job from its parameters (:func:`report_params`)."""
    cls = ThresholdOptions if params.get("kind") == "threshold" else LookupReportOptions
    return cls(**{k: params[k] for k in option_names(cls) if k in params})


def run_report_job(client: SolrClient, directory: Path, params: dict[str, Any]) -> dict[str, Any]:
    """One report into ``directory/pairs.tsv``, through :func:`neardup_solr.engine.find.run_report`, the one
    the command line's ``report`` runs."""

    options = report_options(params)
    result = run_report(Searcher(client), options, directory / PAIRS_FILE,
                 work_dir=directory if isinstance(options, ThresholdOptions) else None)
    documents = result.documents
    if documents is None:
        documents = SolrCollection(client).count()
    final: dict[str, Any] = {"pairs": result.pairs, "done": documents, "total": documents}
    if isinstance(result.options, ThresholdOptions):
        final["stats"] = result.stats
    return final


def threshold_report_params(options: dict[str, Any]) -> dict[str, Any]:
    """The parameters of a threshold report job, checked as the command line's ``report --threshold`` checks them
    (the same options class): what the web page's report form starts."""
    return report_params(ThresholdOptions(**{k: v for k, v in options.items() if v is not None}))


def pairs_as_jsonl(path: Path) -> Iterator[str]:
    """A pairs TSV (its ``#`` header names the columns) as JSON lines; numbers stay numbers."""
    with open(path, encoding="utf-8") as fh:
        header = fh.readline().lstrip("#").strip().split("\t")
        for line in fh:
            if not line.strip() or line.startswith("#"):
                continue
            values = line.rstrip("\n").split("\t")
            record: dict[str, Any] = {}
            for name, value in zip(header, values):
                record[name] = _number(value) if name not in ("id", "neighbor_id") else parse_tsv_id(value)
            yield json.dumps(record, ensure_ascii=False) + "\n"


def _number(value: str) -> Any:
    try:
        return int(value)
    except ValueError:
        try:
            return float(value)
        except ValueError:
            return value


def run_index(client: SolrClient, path: Path, fmt: str | None, dataset: str | None,
              update: Callable[..., None], chunk: int = 2000) -> dict[str, Any]:
    """Index an uploaded file, a chunk of records at a time so that progress can be shown; every rejected record
    is counted and the first :data:`MAX_REASONS` reasons are kept."""

    with open(path, "rb") as fh:
        total = sum(1 for _ in fh)
    update(total=total)
    indexer = Indexer(client, dataset=dataset)
    reader = RecordReader(path, fmt)
    counts = {"indexed": 0, "rejected": 0}
    reasons: list[dict[str, Any]] = []
    batch: list[tuple[str, str]] = []
    lines: list[int] = []

    def flush() -> None:
        if not batch:
            return
        summary = indexer.index_records(list(batch))
        counts["indexed"] += summary.indexed
        counts["rejected"] += summary.rejected
        for r in summary.rejections[: max(0, MAX_REASONS - len(reasons))]:
            line = lines[r.line - 1] if r.line and r.line <= len(lines) else None
            reasons.append({"line": line, "id": r.id, "reason": r.reason})
        batch.clear()
        lines.clear()
        update(done=reader.stats.lines, **counts, rejections=reasons)

    for item in reader:
        if isinstance(item, InvalidRecordError):
            counts["rejected"] += 1
            if len(reasons) < MAX_REASONS:
                reasons.append({"line": item.line, "id": item.record_id, "reason": item.reason})
            continue
        batch.append((item.id, item.text))
        lines.append(item.line)
        if len(batch) >= chunk:
            flush()
    flush()
    return {"done": total, "total": total, **counts, "rejections": reasons}
