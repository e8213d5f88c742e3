"""Near-duplicate detection on a user's own collection (issue 37): backfill rate, index growth, sync lag and idle cost.

    flock /tmp/bench.lock python benchmarks/own_collection.py --docs 100000,1000000

Starts its own local Solr (free port, throwaway data dir) with two cores: a user's collection made from
``tests/data/user_configset`` (fields title, body, url, published; managed schema) and a neardup core made from our
configset. For each N:

1. the synthetic corpus of :mod:`benchmarks.corpus` is posted into the user's core as plain JSON over HTTP (the
   user's own pipeline; timed, and Solr's CPU over it, the reference for "its indexing throughput");
2. ``install --text-field body`` and ``backfill``: documents/s, Solr's CPU seconds, and the index growth
   (``sizeInBytes`` after a commit, before and after);
3. the same documents indexed by ``index`` (:class:`~neardup_solr.Indexer`, same default settings) into the
   neardup core: documents/s, Solr CPU, index size; the goal is that backfill keeps ``index``'s rate, since both
   sign once and write once;
4. ``sync --follow`` (interval ``--interval``) while single documents are posted by plain HTTP, each a near copy of
   an indexed one: the lag from the post to the moment a lookup of its source finds it (p50/p99);
5. ``sync --follow`` idle for ``--idle-seconds``: as shipped (documents chosen by ``_version_``), with
   ``--changed-field published``, and with ``--full-scan`` (every text compared on every pass): Solr's CPU seconds
   per second against its CPU per second while the pipeline posted (step 1).

Writes ``benchmarks/results/<date>-own-collection-<machine>.json`` and ``.md`` (``--out-dir``, ``--machine``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import threading
import time
from datetime import date
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import requests

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.corpus import generate, iter_documents  # noqa: E402
from benchmarks.provenance import write_result_files  # noqa: E402
from neardup_solr import Indexer, SolrClient  # noqa: E402
from neardup_solr.engine.backfill import backfill  # noqa: E402
from neardup_solr.engine.sync import Syncer  # noqa: E402
from neardup_solr.solr.backends.local import LocalSolr  # noqa: E402
from neardup_solr.solr.schema_install import install  # noqa: E402
from neardup_solr.solr.searcher import Searcher  # noqa: E402
from tests.usercoll import UserCore  # noqa: E402

POST_BATCH = 1000


def percentiles(seconds: Sequence[float]) -> dict:
    """n, p50/p95/p99 and mean in milliseconds."""
    if not seconds:
        return {"n": 0}
    ms = np.asarray(seconds) * 1000.0
    return {"n": int(ms.size), "p50_ms": round(float(np.percentile(ms, 50)), 1),
            "p95_ms": round(float(np.percentile(ms, 95)), 1), "p99_ms": round(float(np.percentile(ms, 99)), 1),
            "mean_ms": round(float(ms.mean()), 1)}


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def index_bytes(base_url: str, core: str) -> int:
    resp = requests.get(f"{base_url}/admin/cores", params={"action": "STATUS", "core": core, "wt": "json"},
                        timeout=60)
    return int(resp.json()["status"][core]["index"]["sizeInBytes"])


def user_doc(doc_id: str, text: str, n: int) -> dict:
    return {"id": doc_id, "title": f"Article {doc_id}", "body": text, "url": f"https://example.org/{doc_id}",
            "published": f"2024-01-{1 + n % 28:02d}T00:00:00Z"}


def measure_lag(client: SolrClient, indexed: Sequence[tuple[str, str]], late: Sequence[tuple[str, str]],
                make_doc: Callable[[str, str, int], dict], interval: float) -> list[float]:
    """With ``sync --follow`` running, post each of ``late`` by plain HTTP as a near copy of an indexed document
    (``make_doc(id, text, k)`` the JSON document), then look its source up until the copy is found: the seconds
    from each post to that moment (60 at most)."""
    syncer = Syncer(client)
    stop = threading.Event()
    follower = threading.Thread(target=syncer.follow, args=(interval, stop), daemon=True)
    follower.start()
    searcher = Searcher(SolrClient(client.url))
    session = requests.Session()
    lags = []
    try:
        for k, (doc_id, text) in enumerate(late):
            source_id, source_text = indexed[(k * 7919) % len(indexed)]
            copy_id = f"late-{doc_id}"
            posted = time.perf_counter()
            session.post(f"{client.url}/update", params={"commitWithin": 1000}, timeout=60,
                         json=[make_doc(copy_id, source_text + " " + text[:80], k)]).raise_for_status()
            while not any(d.id == copy_id for d in searcher.find_near_dups(source_id, min_jaccard=0.5)):
                if time.perf_counter() - posted > 60:
                    break
                time.sleep(0.02)
            lags.append(time.perf_counter() - posted)
    finally:
        stop.set()
        follower.join()
    return lags


def run_size(solr: LocalSolr, n: int, work: Path, args: argparse.Namespace) -> dict:
    pid = solr.pid()
    assert pid is not None
    corpus_dir = work / f"corpus-{n}"
    if not (corpus_dir / "docs.jsonl").exists():
        generate(n + args.lag_posts, 37, corpus_dir)
    docs = list(iter_documents(corpus_dir))
    indexed, late = docs[:n], docs[n:]
    core = UserCore.create(solr, prefix=f"articles_{n}")
    session = requests.Session()
    try:
        # 1. The user's pipeline: plain JSON over HTTP.
        cpu, started = cpu_seconds(pid), time.perf_counter()
        for at in range(0, n, POST_BATCH):
            batch = [user_doc(i, t, at + k) for k, (i, t) in enumerate(indexed[at:at + POST_BATCH])]
            session.post(f"{core.url}/update", json=batch, timeout=600).raise_for_status()
        core.commit()
        post = {"seconds": round(time.perf_counter() - started, 2), "solr_cpu_s": round(cpu_seconds(pid) - cpu, 2)}
        post["docs_per_s"] = round(n / post["seconds"], 1)
        post["solr_cpu_per_s"] = round(post["solr_cpu_s"] / post["seconds"], 3)
        size_before = index_bytes(solr.base_url, core.name)

        # 2. install and backfill.
        client = SolrClient(core.url, timeout=600)
        install(client, "body")
        cpu, started = cpu_seconds(pid), time.perf_counter()
        summary = backfill(client, batch_size=args.batch_size, progress=args.progress)
        seconds = time.perf_counter() - started
        size_after = index_bytes(solr.base_url, core.name)
        filled = {"seconds": round(seconds, 2), "docs_per_s": round(summary.signed / seconds, 1),
                  "solr_cpu_s": round(cpu_seconds(pid) - cpu, 2), "passes": summary.passes,
                  "index_bytes_before": size_before, "index_bytes_after": size_after,
                  "index_growth_bytes": size_after - size_before}

        # 3. The same documents through index into a neardup core.
        ours = SolrClient(solr.core_url, timeout=600)
        ours.delete_all()
        cpu, started = cpu_seconds(pid), time.perf_counter()
        result = Indexer(ours, batch_size=args.batch_size, progress=args.progress).index_records(indexed)
        seconds = time.perf_counter() - started
        ours.commit()
        indexing = {"seconds": round(seconds, 2), "docs_per_s": round(result.indexed / seconds, 1),
                    "solr_cpu_s": round(cpu_seconds(pid) - cpu, 2),
                    "index_bytes": index_bytes(solr.base_url, solr.core)}

        # 4. Lag of sync --follow: post, then look up the source until the copy is found.
        lags = measure_lag(client, indexed, late, user_doc, args.interval)

        # 5. Idle cost: as shipped (versions), the changed field, every text on every pass.
        idle = {}
        for name, changed, full in (("versions", None, False), ("changed_field", "published", False),
                                    ("full_scan", None, True)):
            syncer = Syncer(client, changed_field=changed, full_scan=full)
            syncer.run_once()
            stop = threading.Event()
            passes: list = []
            follower = threading.Thread(target=syncer.follow, args=(args.interval, stop, passes.append), daemon=True)
            cpu, started = cpu_seconds(pid), time.perf_counter()
            follower.start()
            time.sleep(args.idle_seconds)
            stop.set()
            follower.join()
            seconds = time.perf_counter() - started
            per_s = (cpu_seconds(pid) - cpu) / seconds
            idle[name] = {"seconds": round(seconds, 1), "passes": len(passes), "solr_cpu_per_s": round(per_s, 4),
                          "share_of_posting_cpu": round(per_s / post["solr_cpu_per_s"], 4)
                          if post["solr_cpu_per_s"] else None,
                          "pass_ms": percentiles([p.seconds for p in passes])}
        return {"docs": n, "user_posting": post, "backfill": filled, "index": indexing,
                "backfill_vs_index_rate": round(filled["docs_per_s"] / indexing["docs_per_s"], 3),
                "growth_vs_own_collection": round(filled["index_growth_bytes"] / indexing["index_bytes"], 3),
                "sync_lag": percentiles(lags), "sync_idle": idle}
    finally:
        core.drop()


def markdown(report: dict) -> str:
    lines = ["# Near-duplicate detection on a user's own collection", "",
             f"Machine: {report['machine']}; Solr {report['solr_heap']} heap; sync interval {report['interval']} s.",
             "", "| docs | user's posting docs/s | backfill docs/s | index docs/s | backfill / index | index growth "
             "(backfill / own collection) | sync lag p50 / p99 ms | idle Solr CPU: versions / changed field / full scan |",
             "|---|---|---|---|---|---|---|---|"]
    for r in report["results"]:
        idle = r["sync_idle"]
        lines.append(f"| {r['docs']:,} | {r['user_posting']['docs_per_s']:,} | {r['backfill']['docs_per_s']:,} | "
                     f"{r['index']['docs_per_s']:,} | {r['backfill_vs_index_rate']} | "
                     f"{r['growth_vs_own_collection']} | {r['sync_lag'].get('p50_ms')} / {r['sync_lag'].get('p99_ms')} | "
                     f"{idle['versions']['share_of_posting_cpu']} / {idle['changed_field']['share_of_posting_cpu']} / "
                     f"{idle['full_scan']['share_of_posting_cpu']} of posting |")
    lines += ["", "Idle cost: Solr's CPU seconds per second while `sync --follow` found nothing to do, as a share of "
              "its CPU per second while the user's pipeline posted the corpus.", "",
              "```json", json.dumps(report["results"], indent=2), "```", ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", default="100000,1000000", help="comma-separated collection sizes")
    parser.add_argument("--batch-size", type=int, default=500)
    parser.add_argument("--interval", type=float, default=0.5, help="sync --follow interval (seconds)")
    parser.add_argument("--lag-posts", type=int, default=100, help="documents posted one by one for the lag")
    parser.add_argument("--idle-seconds", type=float, default=60.0)
    parser.add_argument("--heap", default="4g")
    parser.add_argument("--progress", action="store_true")
    parser.add_argument("--work-dir", type=Path, default=None)
    parser.add_argument("--out-dir", type=Path, default=Path("benchmarks/results"))
    parser.add_argument("--machine", default=f"{os.cpu_count()}core")
    args = parser.parse_args(argv)
    sizes = [int(x) for x in args.docs.split(",") if x.strip()]
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="neardup-bench-own-"))
    work.mkdir(parents=True, exist_ok=True)
    solr = LocalSolr(port=0, data_dir=work / "solr", heap=args.heap)
    solr.start()
    try:
        results = [run_size(solr, n, work, args) for n in sizes]
    finally:
        solr.stop()
    report = {"benchmark": "own_collection", "machine": args.machine, "platform": platform.platform(),
              "solr_heap": args.heap, "interval": args.interval, "results": results}
    stem = args.out_dir / f"{date.today().isoformat()}-own-collection-{args.machine}"
    write_result_files(stem, report, markdown(report))
    print(markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
