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
here once as the wall time of ``python -c "import neardup_solr.cli, neardup_solr.engine.weighted_lsh"``, from
compiled bytecode as an installed package has it (the children get a bytecode cache of this run, see
``_PYCACHE``). Then
the join runs as a user runs it, ``neardup-solr join FILE --similarity idf --method exact|lsh`` over the
streamed half written as JSON lines, each run its own process: wall time and that process's peak RSS
(``os.wait4``), exact once and lsh ``--repeat`` times (the fastest reported, with the largest peak), and whether
the two pairs files are byte-identical. ``--baseline DIR`` runs the same command-line joins a second time with
the code of another checkout first on ``PYTHONPATH`` (for example ``git archive <commit> | tar -x -C DIR``), so
a change is measured before and after in one run on the same Solr and the same load.

    flock /tmp/bench.lock python -m benchmarks.weighted_join --records 10000,100000
    flock /tmp/bench.lock python -m benchmarks.weighted_join --records 10000 --repeat 5   # issue 40, point 5

Results: ``benchmarks/results/<date>-weighted-join-<machine>.{json,md}``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
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


# Compiled bytecode for the children, in a directory of this run. An installed package has it (pip compiles the
# modules it installs); a checkout installed in editable mode under PYTHONDONTWRITEBYTECODE=1 (this project's
# Dockerfile and shells started from it) has none, and every command-line run compiled the package's ~80 modules
# again: ~0.1 s of CPU, a fixed cost no user of an installed package pays (measured for issue 40, point 5).
_PYCACHE = Path(tempfile.gettempdir()) / f"neardup-weighted-join-pycache-{os.getpid()}"


def import_seconds() -> float:
    """Wall time of a fresh interpreter importing the CLI and the weighted LSH module (best of three, after one
    run that compiles the bytecode)."""
    env, _ = _code_env(None)
    best = float("inf")
    for _ in range(4):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import neardup_solr.cli, neardup_solr.engine.weighted_lsh"], check=True,
                       env=env)
        best = min(best, time.perf_counter() - t0)
    return round(best, 3)


# Runs a command and prints its wall time and its own peak RSS (KiB). A child's ru_maxrss includes the memory of
# the process it was forked from (Linux keeps the larger high-water mark across exec), so a command forked from
# this benchmark, which holds the generated records and a Solr client, would show this process's size whenever
# its own peak is smaller. Started from this small interpreter, the join's figure is its own.
_MEASURE = ("import os, subprocess, sys, time\n"
            "t0 = time.perf_counter()\n"
            "proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
            "_, status, usage = os.wait4(proc.pid, 0)\n"
            "print(time.perf_counter() - t0, usage.ru_maxrss)\n"
            "sys.exit(os.waitstatus_to_exitcode(status))\n")


def _code_env(code: str | None) -> tuple[dict, str | None]:
    """Environment and working directory of a child that runs the package of checkout ``code`` (None: this
    one). ``python -m`` puts the working directory first on sys.path, so the child starts in ``code`` too."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(_PYCACHE)
    if code is None:
        return env, None
    env["PYTHONPATH"] = os.pathsep.join([code, *filter(None, [env.get("PYTHONPATH")])])
    return env, code


def package_file(code: str | None) -> str:
    """Where a child started as :func:`cli_join` starts it imports ``neardup_solr`` from (the report says it);
    the import compiles what the joins run into the bytecode cache, so that no timed run does."""
    env, cwd = _code_env(code)
    return subprocess.run([sys.executable, "-c", "import neardup_solr, neardup_solr.cli, neardup_solr.engine.find, "
                           "neardup_solr.engine.threshold, neardup_solr.engine.weighted_lsh, neardup_solr.engine.lsh_join; "
                           "print(neardup_solr.__file__)"], env=env,
                          cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def cli_join(solr_url: str, records_path: Path, method: str, threshold: float, out: Path,
             code: str | None = None) -> dict:
    """``neardup-solr join`` as its own process (with ``code`` first on PYTHONPATH when given): wall time, its
    own peak RSS, and the pairs file's bytes."""
    cmd = [sys.executable, "-m", "neardup_solr.cli", "join", str(records_path), "--format", "jsonl",
           "--similarity", "idf", "--method", method, "--threshold", str(threshold), "--indexed-dataset", "right",
           "--out", str(out), "-q", "--solr-url", solr_url, "--timeout", "600"]
    env, cwd = _code_env(code)
    proc = subprocess.run([sys.executable, "-c", _MEASURE, *cmd], env=env, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {proc.stderr[-2000:]}")
    wall, max_rss_kib = proc.stdout.split()[-2:]
    pairs = out.read_bytes()
    for written in out.parent.glob(out.name + "*"):  # the pairs and the IDF snapshot beside them
        written.unlink()
    return {"wall_s": round(float(wall), 3), "peak_rss_mib": round(int(max_rss_kib) / 1024, 1), "pairs_file": pairs}


def cli_section(solr_url: str, streamed: list[tuple[str, str]], threshold: float, repeat: int,
                code: str | None = None) -> dict:
    """The command-line joins, exact once and lsh ``repeat`` times, over ``streamed`` written as JSON lines."""
    work = Path(tempfile.mkdtemp(prefix="neardup-weighted-join-cli-"))
    try:
        records_path = work / "streamed.jsonl"
        records_path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in streamed))
        exact = cli_join(solr_url, records_path, "exact", threshold, work / "exact.tsv", code)
        runs = [cli_join(solr_url, records_path, "lsh", threshold, work / "lsh.tsv", code) for _ in range(repeat)]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    lsh = min(runs, key=lambda r: r["wall_s"])
    return {"exact_s": exact["wall_s"], "exact_peak_rss_mib": exact["peak_rss_mib"], "lsh_s": lsh["wall_s"],
            "lsh_runs_s": [r["wall_s"] for r in runs], "lsh_peak_rss_mib": max(r["peak_rss_mib"] for r in runs),
            "speedup": round(exact["wall_s"] / lsh["wall_s"], 1),
            "same_pairs_file": all(r["pairs_file"] == exact["pairs_file"] for r in runs)}


def join_size(client, solr_url: str, records: int, threshold: float, workers: int, repeat: int, seed: int,
              baseline: str | None = None) -> dict:
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
    for name, code in (("cli", None), ("cli_baseline", baseline)):
        if name == "cli" or code is not None:
            out[name] = cli_section(solr_url, streamed, threshold, repeat, code)
            log(f"  {records}: {name}: {out[name]}")
    return out


def to_markdown(r: dict) -> str:
    lines = [f"# IDF join, exact against --method lsh ({r['date']}, {r['machine']})", "",
             f"`{r['command']}`; Solr on the same machine, shared with other work: load average (1, 5, 15 min) "
             f"{', '.join(map(str, r['loadavg_before']))} before, {', '.join(map(str, r['loadavg_after']))} after.",
             "", "In-process: `join_pairs` (2 workers) against `idf_lsh_join`, each with fresh document frequencies; "
             f"lsh is the fastest of {r['repeat']} runs. A CLI run adds starting Python and importing the package "
             f"(compiled): {r['import_s']} s here.", "",
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
    lines += ["", "As the command line runs it: `neardup-solr join FILE --similarity idf --method exact|lsh`, each "
              "run its own process (starting Python and importing included, from compiled bytecode as an installed "
              f"package has it); lsh the fastest of {r['repeat']} "
              "runs, peak RSS the largest" + (f"; baseline: the package at `{r['baseline_package']}`"
                                              if r.get("baseline") else "") + ".", "",
              "| streamed x indexed | code | exact, s | exact peak RSS, MiB | lsh, s | lsh peak RSS, MiB | "
              "speed-up | same pairs file |", "|---|---|---:|---:|---:|---:|---:|---|"]
    for j in r["joins"]:
        for name, label in (("cli_baseline", "baseline"), ("cli", "this")):
            c = j.get(name)
            if c:
                lines.append(f"| {j['streamed']:,} x {j['indexed']:,} | {label} | {c['exact_s']} | "
                             f"{c['exact_peak_rss_mib']} | {c['lsh_s']} | {c['lsh_peak_rss_mib']} | {c['speedup']}x | "
                             f"{'yes' if c['same_pairs_file'] else 'NO'} |")
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
    ap.add_argument("--baseline", default=None, metavar="DIR",
                    help="also run the command-line joins with this checkout's code first on PYTHONPATH")
    args = ap.parse_args(argv)

    from neardup_solr.solr.backends.local import LocalSolr
    from neardup_solr.solr.client import SolrClient

    report: dict = {"date": _dt.date.today().isoformat(), "machine": args.machine or machine_tag(),
                    "command": "python -m benchmarks.weighted_join " + " ".join(argv if argv is not None
                                                                                else sys.argv[1:]),
                    "repeat": args.repeat, "import_s": import_seconds(), "baseline": args.baseline,
                    "package": package_file(None),
                    "baseline_package": package_file(args.baseline) if args.baseline else None,
                    "loadavg_before": [round(x, 2) for x in os.getloadavg()], "joins": []}
    data_dir = Path(tempfile.mkdtemp(prefix="neardup-weighted-join-"))
    solr = None if args.solr_url else LocalSolr(port=args.port, data_dir=data_dir, heap=args.heap)
    if solr is not None:
        solr.start()
    url = args.solr_url if solr is None else solr.core_url
    try:
        with SolrClient(url, timeout=600) as client:
            for n in (int(x) for x in args.records.split(",")):
                report["joins"].append(join_size(client, url, n, args.threshold, args.workers, args.repeat,
                                                 args.seed, args.baseline))
    finally:
        report["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
        if solr is not None:
            solr.stop()
        shutil.rmtree(data_dir, ignore_errors=True)
        shutil.rmtree(_PYCACHE, ignore_errors=True)
    markdown = to_markdown(report)
    write_results(args.out_dir, "weighted-join", report, markdown)
    print(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
