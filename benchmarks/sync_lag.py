"""The lag of ``sync --follow`` on a large collection that is already signed (issue 37).

    flock /tmp/bench.lock python benchmarks/sync_lag.py --work-dir /tmp/neardup-bench-own-XXXX --docs 1000000

Reuses what ``benchmarks/own_collection.py --work-dir DIR`` left in DIR: the corpus (``corpus-N``) and the local
Solr's data, whose neardup core holds the N documents ``index`` put there. ``sync --follow`` is started on that
core, and the late documents of the corpus are posted one by one by plain HTTP, each a near copy of an indexed
one (as :func:`benchmarks.own_collection.measure_lag` does): the lag from each post to the moment a lookup of its
source finds it. The first posts land while ``follow``'s catch-up still compares the documents changed before it
began, the case the catch-up thread was made for.

Writes ``benchmarks/results/<date>-sync-lag-<machine>.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from datetime import date
from pathlib import Path
from typing import Sequence

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.corpus import iter_documents  # noqa: E402
from benchmarks.own_collection import measure_lag, percentiles  # noqa: E402
from benchmarks.provenance import load_average_text, write_result_files  # noqa: E402
from neardup_solr import SolrClient  # noqa: E402
from neardup_solr.solr.backends.local import LocalSolr  # noqa: E402


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work-dir", type=Path, required=True)
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--interval", type=float, default=0.5)
    parser.add_argument("--heap", default="4g")
    parser.add_argument("--out-dir", type=Path, default=Path("benchmarks/results"))
    parser.add_argument("--machine", default=f"{os.cpu_count()}core")
    args = parser.parse_args(argv)
    docs = list(iter_documents(args.work_dir / f"corpus-{args.docs}"))
    indexed, late = docs[:args.docs], docs[args.docs:]
    load_at_start = load_average_text()
    solr = LocalSolr(port=0, data_dir=args.work_dir / "solr", heap=args.heap)
    solr.start()
    try:
        client = SolrClient(solr.core_url, timeout=600)
        client.delete_by_query("id:late-*")
        held = client.count()
        lags = measure_lag(client, indexed, late, lambda doc_id, text, k: {"id": doc_id, "content": text},
                           args.interval)
    finally:
        solr.stop()
    report = {"benchmark": "sync_lag", "machine": args.machine, "platform": platform.platform(),
              "solr_heap": args.heap, "interval": args.interval, "load_at_start": load_at_start,
              "documents_held": held, "lag": percentiles(lags), "lags_s": [round(x, 2) for x in lags]}
    md = "\n".join([
        "# Lag of `sync --follow` on a signed collection", "",
        f"Machine: {args.machine}; Solr {args.heap} heap; interval {args.interval} s; {held:,} documents held "
        f"(indexed by `index`); load average when started {load_at_start}.", "",
        "| documents | posts | lag p50 ms | p95 ms | p99 ms | max s |", "|---:|---:|---:|---:|---:|---:|",
        f"| {held:,} | {len(lags)} | {report['lag'].get('p50_ms')} | {report['lag'].get('p95_ms')} | "
        f"{report['lag'].get('p99_ms')} | {max(lags):.2f} |", "",
        "Each post is a near copy of an indexed document sent by plain HTTP (commitWithin 1 s); the lag runs to "
        "the moment a lookup of its source finds it. `follow` started just before the first post, so its catch-up "
        "(the comparison of every document changed before it began) ran beside the first posts.", "",
        "```json", json.dumps(report, indent=2), "```", ""])
    write_result_files(args.out_dir / f"{date.today().isoformat()}-sync-lag-{args.machine}", report, md)
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
