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
from pathlib import Path
from typing import Any, Callable, Iterator

from neardup_solr.processes import process_alive
from neardup_solr.io.outputs import PROGRESS_SUFFIX
from neardup_solr.solr.client import SolrClient
from neardup_solr.validation import parse_tsv_id

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


def run_report(client: SolrClient, directory: Path, params: dict[str, Any]) -> dict[str, Any]:
    """One report into ``directory/pairs.tsv``: a threshold report (:func:`~neardup_solr.engine.find.find_pairs`,
    the engine the command line's ``report --threshold`` uses) when ``params`` are threshold options, else a
    lookup report with the lookup options."""
    from neardup_solr.engine.find import find_pairs
    from neardup_solr.engine.report import report_near_dups
    from neardup_solr.options import ThresholdOptions, option_names
    from neardup_solr.solr.documents import META_DATASET
    from neardup_solr.solr.searcher import Searcher

    out = directory / PAIRS_FILE
    searcher = Searcher(client)
    if params.get("kind") == "threshold":
        options = ThresholdOptions(**{k: params[k] for k in option_names(ThresholdOptions) if k in params})
        result = find_pairs(searcher, options, out=out, work_dir=directory)
        documents = result.stats.get("documents")
        if documents is None:
            documents = client.count("*:*", ["-{!term f=dataset v=$nd.meta}"], [("nd.meta", META_DATASET)])
        return {"pairs": len(result), "done": documents, "total": documents, "stats": result.stats}
    summary, _ = report_near_dups(
        searcher, out, params.get("start_id"), params.get("end_id"), params["max_distance"], params["mode"],
        rows=params["rows"], first_word_filter=params["first_word_filter"], num_hashes=params.get("num_hashes"),
        min_jaccard=params.get("min_jaccard"), workers=params["workers"])
    return {"pairs": summary.pairs, "done": summary.documents, "total": summary.documents}


def threshold_report_params(options: dict[str, Any]) -> dict[str, Any]:
    """The parameters of a threshold report job, checked as the command line's ``report --threshold`` checks them
    (the same options class): what the API's ``POST /v1/reports`` and the web page's report form both start."""
    from dataclasses import asdict

    from neardup_solr.options import ThresholdOptions, option_names

    keys = option_names(ThresholdOptions)
    return {"kind": "threshold",
            **asdict(ThresholdOptions(**{k: v for k, v in options.items() if k in keys and v is not None}))}


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
    from neardup_solr.errors import InvalidRecordError
    from neardup_solr.solr.indexer import Indexer
    from neardup_solr.io.readers import RecordReader

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
