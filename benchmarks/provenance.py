"""Where a benchmark's numbers come from, stamped into every results file: the tool's version and commit, Python,
the machine, when it was written and the load average then (numbers from a busy machine say so themselves).

Every benchmark writes its files through :func:`write_result_files`; ``tests/unit/base/test_provenance.py`` checks
that no benchmark writes a results file any other way.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import time
from pathlib import Path
from typing import Any

from neardup_solr.version import package_version

ROOT = Path(__file__).resolve().parents[1]


def git_commit() -> str | None:
    """The checkout's commit (short), with ``-dirty`` when it has uncommitted changes; None outside a checkout."""
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                                timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return commit + ("-dirty" if dirty else "") if commit else None


def load_average_text() -> str:
    """The 1/5/15-minute load averages now, as a results file states them ("1.17 / 1.47 / 1.80"): for a run that
    records the load when it started, beside the one the stamp records when it was written."""
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def provenance() -> dict[str, Any]:
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {"tool": "neardup-solr", "version": package_version(), "commit": git_commit(),
            "python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform(),
            "written_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
            "load_average_when_written": [round(x, 2) for x in load] if load else None}


def provenance_line(stamp: dict[str, Any]) -> str:
    """One Markdown line for the top of a results file."""
    commit = f", commit {stamp['commit']}" if stamp.get("commit") else ""
    load = stamp.get("load_average_when_written")
    load_text = f"; load average {' / '.join(f'{x:.2f}' for x in load)} (1/5/15 min) when written" if load else ""
    return (f"_{stamp['tool']} {stamp['version']}{commit}; Python {stamp['python']} on {stamp['cpus']} CPUs; "
            f"written {stamp['written_utc']} UTC{load_text}._")


def stamped_markdown(markdown: str, stamp: dict[str, Any]) -> str:
    """The Markdown with the provenance line after its title (or first, when it has no title)."""
    lines = markdown.splitlines(keepends=True)
    at = 1 if lines and lines[0].startswith("#") else 0
    return "".join(lines[:at]) + ("\n" if at else "") + provenance_line(stamp) + "\n\n" + "".join(lines[at:]).lstrip("\n")


def write_result_files(stem: str | Path, report: dict[str, Any] | list | None, markdown: str | None = None,
                       *, json_path: str | Path | None = None, indent: int = 2) -> dict[str, Any]:
    """Write ``<stem>.json`` (the report, with a ``provenance`` entry) and, when given, ``<stem>.md`` (with the
    provenance line under its title). ``json_path`` writes the JSON elsewhere (a ``--json FILE`` option). Returns
    the stamp."""
    stamp = provenance()
    stem = Path(stem)
    if report is not None:
        stamped = {**report, "provenance": stamp} if isinstance(report, dict) else {"results": report,
                                                                                     "provenance": stamp}
        target = Path(json_path) if json_path is not None else stem.with_suffix(".json")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(stamped, indent=indent, default=str) + "\n", encoding="utf-8")
    if markdown is not None:
        stem.parent.mkdir(parents=True, exist_ok=True)
        stem.with_suffix(".md").write_text(stamped_markdown(markdown, stamp), encoding="utf-8")
    return stamp


def rewrite_result_files(stem: str | Path, report: dict[str, Any], markdown: str) -> None:
    """Write a result again (its notes edited, its Markdown re-rendered) under the provenance of the run that
    measured it, not of this rewrite; a result from before provenance was stamped stays unstamped."""
    stem = Path(stem)
    stem.with_suffix(".json").write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")
    stamp = report.get("provenance")
    stem.with_suffix(".md").write_text(stamped_markdown(markdown, stamp) if stamp else markdown, encoding="utf-8")
