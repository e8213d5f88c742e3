"""Reading a user's whole collection: one cursor over the documents against the keys first, then the documents by
key (issue 45: what ``backfill`` pays Solr to read what it signs).

    flock /tmp/bench.lock python benchmarks/source_reads.py --docs 100000,1000000

Starts its own local Solr (free port, throwaway data directory) and, for each N, makes a user core from the tests'
user configset (``tests/usercoll.py``: title, body, url, published), posts the planted corpus of
:mod:`benchmarks.corpus` to it as plain JSON (1,000 a request), commits and waits for its merges. Then it reads
every document's key and ``body`` in each way below, ``--rounds`` times in turn (the first pass of all is a warm-up,
reported apart), with Solr's CPU seconds (``/proc``) and the wall time of each:

``cursor over the documents``
    what backfill did until 2026-12-02: ``q=*:*&sort=id asc&fl=id,body`` with ``cursorMark``, pages of
    ``--page`` documents;
``keys, then documents by key``
    what :func:`neardup_solr.solr.companion.source_pages_by_key` does: a cursor over ``fl=id`` alone in pages of
    ``KEY_PAGE`` keys, then each page of ``--page`` keys fetched with a terms query on the key;
``cursor over the keys alone``
    the first half of the above on its own (how much of it is the keys).

Every way must return every document once; the script checks the count. Writes
``benchmarks/results/<date>-source-reads-<machine>.{json,md}``.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from datetime import date
from pathlib import Path
from typing import Callable, Sequence

import requests

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.corpus import generate, iter_documents  # noqa: E402
from benchmarks.own_collection import (POST_BATCH, SETTLE_PAUSE_S, cpu_seconds, load_1m, settle_core,  # noqa: E402
                                       user_doc, wait_quiet)
from benchmarks.provenance import load_average_text, write_result_files  # noqa: E402
from neardup_solr.solr.backends.local import LocalSolr  # noqa: E402
from neardup_solr.solr.client import SolrClient  # noqa: E402
from neardup_solr.solr.companion import KEY_PAGE, PageSizing, SourceLink, source_pages_by_key  # noqa: E402
from tests.usercoll import UserCore  # noqa: E402


def cursor_over_documents(client: SolrClient, page: int) -> int:
    params = [("q", "*:*"), ("fl", "id,body"), ("sort", "id asc")]
    return sum(len(docs) for docs in client.cursor_pages(params, page))


def keys_then_documents(client: SolrClient, page: int) -> int:
    link = SourceLink("user", client.url, "id", ("body",))
    sizing = PageSizing(first=page, least=page, most=page)
    return sum(len(docs) for docs, _ in source_pages_by_key(client, link, sizing=sizing))


def cursor_over_keys(client: SolrClient, _page: int) -> int:
    params = [("q", "*:*"), ("fl", "id"), ("sort", "id asc")]
    return sum(len(docs) for docs in client.cursor_pages(params, KEY_PAGE, until_short_page=True))


WAYS: dict[str, Callable[[SolrClient, int], int]] = {
    "cursor over the documents": cursor_over_documents,
    "keys, then documents by key": keys_then_documents,
    "cursor over the keys alone": cursor_over_keys,
}


def timed(pid: int, read: Callable[[], int], settle_pause: float) -> dict:
    wait_quiet(pid, settle_pause=settle_pause)
    load, solr0, client0, t0 = load_1m(), cpu_seconds(pid), time.process_time(), time.perf_counter()
    count = read()
    return {"docs": count, "seconds": round(time.perf_counter() - t0, 3),
            "solr_cpu_s": round(cpu_seconds(pid) - solr0, 2), "client_cpu_s": round(time.process_time() - client0, 2),
            "load_1m": [load, load_1m()]}


def run_size(solr: LocalSolr, n: int, work: Path, args: argparse.Namespace) -> dict:
    pid = solr.pid()
    assert pid is not None
    corpus_dir = work / f"corpus-{n}"
    if not (corpus_dir / "docs.jsonl").exists():
        generate(n, 37, corpus_dir)
    core = UserCore.create(solr, prefix=f"reads_{n}")
    try:
        session = requests.Session()
        batch: list[dict] = []
        for k, (doc_id, text) in enumerate(iter_documents(corpus_dir)):
            batch.append(user_doc(doc_id, text, k))
            if len(batch) == POST_BATCH:
                session.post(f"{core.url}/update", json=batch, timeout=600).raise_for_status()
                batch = []
        if batch:
            session.post(f"{core.url}/update", json=batch, timeout=600).raise_for_status()
        settle_core(pid, solr.base_url, core.url, core.name, settle_pause=args.settle_pause)
        client = SolrClient(core.url, timeout=600)
        warm = {name: timed(pid, lambda: way(client, args.page), args.settle_pause) for name, way in WAYS.items()}
        rounds: dict[str, list[dict]] = {name: [] for name in WAYS}
        for _ in range(args.rounds):
            for name, way in WAYS.items():
                rounds[name].append(timed(pid, lambda: way(client, args.page), args.settle_pause))
        for name, runs in rounds.items():
            if any(r["docs"] != n for r in runs):
                raise SystemExit(f"{name} read {[r['docs'] for r in runs]} documents of {n}")
        return {"docs": n, "page": args.page, "key_page": KEY_PAGE, "warm_up": warm, "rounds": rounds,
                "median_solr_cpu_s": {k: statistics.median(r["solr_cpu_s"] for r in v) for k, v in rounds.items()},
                "median_seconds": {k: statistics.median(r["seconds"] for r in v) for k, v in rounds.items()}}
    finally:
        core.drop()


def markdown(report: dict) -> str:
    lines = ["# Reading a user's whole collection: cursor over the documents, or keys then documents by key", "",
             f"Machine: {report['machine']} ({report['cpus']} CPUs); Solr {report['heap']} heap, one node; "
             f"load average at start {report['load_average']['start']}, at end {report['load_average']['end']}. "
             f"Command: `{report['command']}`.", "",
             "Each way reads every document's key and `body` (documents of ~900 characters, benchmarks/corpus.py) "
             "from a user core; Solr CPU seconds and wall seconds, the median of the rounds (each round's figures "
             "in the JSON below), after one warm-up pass of every way.", "",
             "| documents | way | Solr CPU s (median) | seconds (median) | rounds: Solr CPU s |",
             "|---|---|---|---|---|"]
    for size in report["results"]:
        for name in WAYS:
            runs = size["rounds"][name]
            lines.append(f"| {size['docs']:,} | {name} | {size['median_solr_cpu_s'][name]} | "
                         f"{size['median_seconds'][name]} | {', '.join(str(r['solr_cpu_s']) for r in runs)} |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", default="100000", help="comma-separated collection sizes")
    parser.add_argument("--page", type=int, default=9_000,
                        help="documents a page (backfill's pages of ~900-character documents hold ~9,000)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--heap", default="4g")
    parser.add_argument("--settle-pause", type=float, default=SETTLE_PAUSE_S,
                        help="seconds between the checks that Solr settled (see benchmarks/own_collection.py)")
    parser.add_argument("--work-dir", type=Path, default=None)
    parser.add_argument("--out-dir", type=Path, default=Path("benchmarks/results"))
    parser.add_argument("--machine", default=f"{os.cpu_count()}core")
    args = parser.parse_args(argv)
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="neardup-bench-reads-"))
    started_load = load_average_text()
    solr = LocalSolr(port=0, data_dir=work / "solr", heap=args.heap)
    solr.start()
    try:
        results = [run_size(solr, int(n), work, args) for n in args.docs.split(",")]
    finally:
        solr.stop()
    report = {"benchmark": "source_reads", "machine": args.machine, "cpus": os.cpu_count(),
              "platform": platform.platform(), "heap": args.heap, "results": results,
              "command": "python benchmarks/source_reads.py " + " ".join(sys.argv[1:] if argv is None else argv),
              "load_average": {"start": started_load, "end": load_average_text()}}
    stem = args.out_dir / f"{date.today().isoformat()}-source-reads-{args.machine}"
    write_result_files(stem, report, markdown(report))
    print(markdown(report))
    print(f"-> {stem}.json, {stem}.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
