"""Benchmark: the IDF join, ``join --similarity idf`` exact against ``--method lsh``, at several sizes, with the
lsh run's time per phase.

For each ``--records N``: N generated person records (``benchmarks/persons.py``, the records
``benchmarks/weighted.py``'s join section uses), the second half indexed as data set ``right`` into a freshly
cleared core, the first half streamed against it at T = ``--threshold``. Exact (``join_pairs``, 2 workers) and
lsh (``idf_lsh_join``) run in this process, each with a fresh ``Searcher`` and ``ThresholdFinder``, so neither
reuses the other's document frequencies; the lsh join runs ``--repeat`` times and the fastest is reported (the
exact join once: it is the slow side, and its time does not depend on a warm start). Reported: wall times,
speed-up, recall of lsh against exact, whether every similarity is identical, and the lsh phases (``export``:
reading the indexed texts and splitting both sides into words; ``weights``: document frequencies from
``/terms``; ``sign``; ``candidates``: bands and the estimate filter; ``verify``).

The CLI adds a fixed cost no in-process figure shows: starting Python and importing the package. It is measured
here once as the wall time of ``python -c "import neardup_solr.cli, neardup_solr.engine.weighted_lsh"``.

    flock /tmp/bench.lock python -m benchmarks.weighted_join --records 10000,100000

Results: ``benchmarks/results/<date>-weighted-join-<machine>.{json,md}``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))

from benchmarks.persons import generate  # noqa: E402
from benchmarks.run import machine_tag, write_results  # noqa: E402
from benchmarks.weighted import _compare, _index, log  # noqa: E402


def import_seconds() -> float:
    """Wall time of a fresh interpreter importing the CLI and the weighted LSH module (best of three)."""
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import neardup_solr.cli, neardup_solr.engine.weighted_lsh"], check=True)
        best = min(best, time.perf_counter() - t0)
    return round(best, 3)


def join_size(client, records: int, threshold: float, workers: int, repeat: int, seed: int) -> dict:
    from neardup_solr.solr.maintenance import clear
    from neardup_solr.solr.searcher import Searcher
    from neardup_solr.engine.threshold import ThresholdFinder, join_pairs
    from neardup_solr.engine.weighted_lsh import idf_lsh_join

    rows, _ = generate(records, seed=seed)
    half = len(rows) // 2
    clear(client, everything=True)
    t0 = time.perf_counter()
    _index(client, rows[half:], dataset="right")
    index_s = time.perf_counter() - t0
    streamed = [(r["id"], r["text"]) for r in rows[:half]]
    log(f"  {records}: indexed {len(rows) - half} in {index_s:.1f} s; exact join")
    t0 = time.perf_counter()
    exact = join_pairs(ThresholdFinder(Searcher(client), threshold=threshold, similarity="idf"), streamed,
                       indexed_dataset="right", workers=workers)
    exact_s = time.perf_counter() - t0
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = idf_lsh_join(ThresholdFinder(Searcher(client), threshold=threshold, similarity="idf"), streamed,
                              indexed_dataset="right")
        runs.append((time.perf_counter() - t0, result))
    lsh_s, best = min(runs, key=lambda run: run[0])
    s = best.stats
    out = {"records": records, "streamed": half, "indexed": len(rows) - half, "threshold": threshold,
           "exact_s": round(exact_s, 2), "lsh_s": round(lsh_s, 3), "lsh_runs_s": [round(r[0], 3) for r in runs],
           "speedup": round(exact_s / lsh_s, 1), **_compare(exact, best.pairs),
           "bands": f"{s.bands}x{s.rows}", "candidates": s.candidate_pairs, "estimated": s.estimated_pairs,
           "distinct_tokens": s.distinct_tokens, "lsh_phases_s": s.seconds}
    log(f"  {records}: exact {exact_s:.1f} s, lsh {lsh_s:.2f} s ({out['speedup']}x), recall {out['recall']}, "
        f"phases {s.seconds}")
    return out


def to_markdown(r: dict) -> str:
    lines = [f"# IDF join, exact against --method lsh ({r['date']}, {r['machine']})", "",
             f"`{r['command']}`; Solr on the same machine, shared with other work: load average (1, 5, 15 min) "
             f"{', '.join(map(str, r['loadavg_before']))} before, {', '.join(map(str, r['loadavg_after']))} after.",
             "", "In-process: `join_pairs` (2 workers) against `idf_lsh_join`, each with fresh document frequencies; "
             f"lsh is the fastest of {r['repeat']} runs. A CLI run adds starting Python and importing the package: "
             f"{r['import_s']} s here.", "",
             "| streamed x indexed | exact, s | lsh, s | speed-up | exact pairs | recall | similarities identical | "
             "bands | candidates | after estimate |",
             "|---|---:|---:|---:|---:|---:|---|---|---:|---:|"]
    for j in r["joins"]:
        lines.append(f"| {j['streamed']:,} x {j['indexed']:,} | {j['exact_s']} | {j['lsh_s']} | {j['speedup']}x | "
                     f"{j['exact_pairs']:,} | {j['recall']} | {'yes' if j['similarities_identical'] else 'NO'} | "
                     f"{j['bands']} | {j['candidates']:,} | {j['estimated']:,} |")
    phases = ["export", "weights", "sign", "candidates", "verify", "total"]
    lines += ["", "Where the lsh join's time goes (seconds):", "",
              "| streamed x indexed | distinct tokens | " + " | ".join(phases) + " |",
              "|---|---:|" + "---:|" * len(phases)]
    for j in r["joins"]:
        lines.append(f"| {j['streamed']:,} x {j['indexed']:,} | {j['distinct_tokens']:,} | "
                     + " | ".join(str(j["lsh_phases_s"].get(p, "-")) for p in phases) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", default="10000", help="comma-separated record counts (half streamed, half indexed)")
    ap.add_argument("--threshold", type=float, default=0.4)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3, help="lsh runs per size (the fastest is reported)")
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--port", type=int, default=8995)
    ap.add_argument("--heap", default="4g")
    ap.add_argument("--solr-url", default=None, help="use this core (it is cleared!) instead of starting a Solr")
    ap.add_argument("--out-dir", default=str(BENCH / "results"))
    ap.add_argument("--machine", default=None)
    args = ap.parse_args(argv)

    from neardup_solr.solr.backends.local import LocalSolr
    from neardup_solr.solr.client import SolrClient

    report: dict = {"date": _dt.date.today().isoformat(), "machine": args.machine or machine_tag(),
                    "command": "python -m benchmarks.weighted_join " + " ".join(argv if argv is not None
                                                                                else sys.argv[1:]),
                    "repeat": args.repeat, "import_s": import_seconds(),
                    "loadavg_before": [round(x, 2) for x in os.getloadavg()], "joins": []}
    data_dir = Path(tempfile.mkdtemp(prefix="neardup-weighted-join-"))
    solr = None if args.solr_url else LocalSolr(port=args.port, data_dir=data_dir, heap=args.heap)
    if solr is not None:
        solr.start()
    url = args.solr_url if solr is None else solr.core_url
    try:
        with SolrClient(url, timeout=600) as client:
            for n in (int(x) for x in args.records.split(",")):
                report["joins"].append(join_size(client, n, args.threshold, args.workers, args.repeat, args.seed))
    finally:
        report["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
        if solr is not None:
            solr.stop()
        shutil.rmtree(data_dir, ignore_errors=True)
    markdown = to_markdown(report)
    write_results(args.out_dir, "weighted-join", report, markdown)
    print(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
