"""Where the time goes when documents get long (issue 48, points 2 and 4): ``index`` with the default fields and
with ``--fields lsh``, and ``dedupe``, on short records and on web pages, in documents/s and MB/s, each run split
into its parts.

    flock /tmp/bench.lock python benchmarks/index_throughput.py --short-docs 50000 --long-docs 10000 --machine 2core

The corpora are the peers benchmark's (``benchmarks/corpus.py``: ~900-byte documents; ``benchmarks/long_corpus.py``:
web pages of 5-50 KB, median ~14 KB), made in ``benchmarks/work/`` when missing. One local Solr (``LocalSolr``,
heap ``--heap``) serves every run; its start is not timed. Each command runs as its users run it, a process of its
own (``neardup-solr ... --json -q``), ``--rounds`` times (default 2; the JSON keeps every round, the table the
last, after the JVM is warm). Measured for each run:

- wall seconds, documents/s, MB/s (the input's text bytes, UTF-8, 1e6 bytes a MB: ``index``'s own figure);
- the CPU seconds of the command's process (user + system) and of Solr's JVM over the run (``/proc``);
- ``index``'s own split (its ``--json``): ``signing_seconds`` (normalising, shingling, MinHash and LSH keys,
  summed over the ``sign_processes`` that signed) and ``solr_wait_seconds`` (waiting for Solr's acknowledgements
  with the adds in flight, the hard commits, the final commit and check); the rest is reading and parsing the
  input, shown only where one process signed (with several, signing overlaps the rest);
- ``dedupe``'s stages (its ``--json`` ``stages``: indexing with the same split, then finding pairs with the LSH
  engine's own split: reading the signatures into the signature store, candidate pairs, exact verification, then
  grouping and writing the kept records).

And, without Solr, the signer alone: ``DocumentBuilder.build`` over the whole corpus in batches of 500 in this
process (one core), with each field set, in MB/s: the ceiling ``index`` could reach if Solr cost nothing.
Results: ``benchmarks/results/<date>-index-throughput-<machine><suffix>.{json,md}``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Sequence

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.peers import last_json_line, load_average_text, neardup_cli, prepare_corpus  # noqa: E402
from benchmarks.provenance import write_result_files  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FIELD_SETS = {"default": None, "lsh": "lsh"}
BATCH = 500


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a live process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_command(cmd: list[str], solr_pid: int, log_path: Path) -> dict:
    """Run ``cmd`` (its --json summary on the last line of its output); wall, its CPU and Solr's over the run."""
    solr_before = cpu_seconds(solr_pid)
    started = time.perf_counter()
    with open(log_path, "w", encoding="utf-8") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    solr_cpu = cpu_seconds(solr_pid) - solr_before
    if os.waitstatus_to_exitcode(status) != 0:
        tail = log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-15:]
        raise RuntimeError(f"{' '.join(cmd)} failed:\n" + "\n".join(tail))
    summary = last_json_line(log_path)
    return {"seconds": round(wall, 3), "client_cpu_seconds": round(usage.ru_utime + usage.ru_stime, 2),
            "solr_cpu_seconds": round(solr_cpu, 2), "summary": summary}


def signer_alone(docs_path: Path, fields: str | None) -> dict:
    """``DocumentBuilder.build`` over the corpus in batches, in this process: seconds and MB/s of text."""
    from neardup_solr.signing.builder import DocumentBuilder
    from neardup_solr.signing.settings import IndexSettings

    settings = IndexSettings(fields=(fields,)) if fields else IndexSettings()
    builder = DocumentBuilder(settings)
    nbytes = docs = 0
    spent = 0.0
    batch: list[tuple[str, str]] = []
    with open(docs_path, encoding="utf-8") as fh:
        for line in fh:
            record = json.loads(line)
            batch.append((record["id"], record["text"]))
            nbytes += len(record["text"].encode("utf-8"))
            if len(batch) == BATCH:
                t0 = time.perf_counter()
                docs += len(builder.build(batch).documents)
                spent += time.perf_counter() - t0
                batch = []
    if batch:
        t0 = time.perf_counter()
        docs += len(builder.build(batch).documents)
        spent += time.perf_counter() - t0
    return {"documents": docs, "seconds": round(spent, 3), "docs_per_second": round(docs / spent, 1),
            "mb_per_second": round(nbytes / 1e6 / spent, 2)}


def measure_corpus(profile: str, docs_path: Path, solr_url: str, solr_pid: int, rounds: int, run_dir: Path) -> dict:
    cli = neardup_cli()
    out: dict = {"documents": sum(1 for _ in open(docs_path, encoding="utf-8")),
                 "input_mb": round(docs_path.stat().st_size / 1e6, 1), "signer_alone": {}, "index": {}, "dedupe": []}
    for name, fields in FIELD_SETS.items():
        print(f"{profile}: the signer alone, fields {name}", file=sys.stderr)
        out["signer_alone"][name] = signer_alone(docs_path, fields)
    for name, fields in FIELD_SETS.items():
        cmd = [cli, "index", str(docs_path), "--clear-all", "--json", "-q", "--solr-url", solr_url]
        if fields:
            cmd += ["--fields", fields]
        out["index"][name] = []
        for number in range(rounds):
            print(f"{profile}: index, fields {name}, round {number + 1}", file=sys.stderr)
            out["index"][name].append(run_command(cmd, solr_pid, run_dir / f"{profile}-index-{name}-{number}.log"))
    for number in range(rounds):
        print(f"{profile}: dedupe, round {number + 1}", file=sys.stderr)
        kept = run_dir / f"{profile}-kept.jsonl.gz"
        kept.unlink(missing_ok=True)
        cmd = [cli, "dedupe", str(docs_path), "--threshold", "0.8", "--out", str(kept), "--clear-all", "--json", "-q",
               "--solr-url", solr_url]
        out["dedupe"].append(run_command(cmd, solr_pid, run_dir / f"{profile}-dedupe-{number}.log"))
    return out


def render(report: dict) -> str:
    lines = ["# Where the time goes: index and dedupe on short records and on web pages", "",
             f"{report['date']}, {report['machine']}. Load average at the start {report['load_average']['start']}, "
             f"at the end {report['load_average']['end']} (1/5/15 min). One local Solr (heap {report['heap']}); each "
             f"command a process of its own, {report['rounds']} rounds, the last shown (all in the JSON). MB: the "
             "input's text, UTF-8, 1e6 bytes.", "",
             "| corpus | run | wall s | docs/s | MB/s | signing s (processes) | waiting for Solr s | "
             "reading and the rest s | "
             "client CPU s | Solr CPU s |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for profile, corpus in report["corpora"].items():
        label = f"{profile} ({corpus['documents']:,} docs, {corpus['input_mb']:,} MB)"
        for name in FIELD_SETS:
            run = corpus["index"][name][-1]
            s = run["summary"]
            processes = s.get("sign_processes", 1)
            rest = (f"{s['seconds'] - s['signing_seconds'] - s['solr_wait_seconds']:.1f}" if processes == 1
                    else "(overlapped)")
            lines.append(f"| {label} | index, {'default fields' if name == 'default' else '--fields lsh'} | "
                         f"{run['seconds']:.1f} | {s['docs_per_second']:,.0f} | {s['megabytes_per_second']:.2f} | "
                         f"{s['signing_seconds']:.1f} ({processes}) | {s['solr_wait_seconds']:.1f} | {rest} | "
                         f"{run['client_cpu_seconds']:.1f} | {run['solr_cpu_seconds']:.1f} |")
        run = corpus["dedupe"][-1]
        st = run["summary"]["stages"]
        mb = corpus["input_mb"] / run["seconds"]
        lines.append(f"| {label} | dedupe (lean default: --fields lsh) | {run['seconds']:.1f} | "
                     f"{corpus['documents'] / run['seconds']:,.0f} | {mb:.2f} | {st.get('signing', 0):.1f} "
                     f"({run['summary'].get('sign_processes', 1)}) | "
                     f"{st.get('waiting for Solr', 0):.1f} | | {run['client_cpu_seconds']:.1f} | "
                     f"{run['solr_cpu_seconds']:.1f} |")
    lines += ["", "dedupe's stages (seconds, last round):", "",
              "| corpus | indexing | of it signing | of it waiting for Solr | finding pairs | of it reading signatures "
              "| of it candidate pairs | of it verifying | grouping | writing |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for profile, corpus in report["corpora"].items():
        st = corpus["dedupe"][-1]["summary"]["stages"]
        cells = [st.get(k, 0.0) for k in ("indexing", "signing", "waiting for Solr", "finding pairs",
                                           "reading signatures", "candidate pairs", "verifying", "grouping",
                                           "writing")]
        lines.append(f"| {profile} | " + " | ".join(f"{c:.1f}" for c in cells) + " |")
    lines += ["", "The signer alone (DocumentBuilder.build in one process, no Solr):", "",
              "| corpus | fields | docs/s | MB/s |", "|---|---|---:|---:|"]
    for profile, corpus in report["corpora"].items():
        for name, alone in corpus["signer_alone"].items():
            lines.append(f"| {profile} | {name} | {alone['docs_per_second']:,.0f} | {alone['mb_per_second']:.2f} |")
    lines += ["", f"Command: `{report['command']}`.", ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--short-docs", type=int, default=50_000)
    ap.add_argument("--long-docs", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--heap", default="4g")
    ap.add_argument("--machine", default="2core")
    ap.add_argument("--suffix", default="", help="appended to the results' file name (a run of a change)")
    ap.add_argument("--work-dir", type=Path, default=ROOT / "benchmarks" / "work",
                    help="where the corpora are made (or found) and the runs write")
    ap.add_argument("--out-dir", type=Path, default=ROOT / "benchmarks" / "results")
    args = ap.parse_args(argv)
    if args.rounds < 1 or args.short_docs < 1 or args.long_docs < 1:
        ap.error("--rounds, --short-docs and --long-docs must be at least 1")
    from neardup_solr.solr.backends.local import LocalSolr

    started_load = load_average_text()
    work = args.work_dir.resolve()
    corpora = {"short": prepare_corpus("short", args.short_docs, args.seed, work / f"c{args.short_docs}"),
               "long": prepare_corpus("long", args.long_docs, args.seed, work / f"long-c{args.long_docs}")}
    run_dir = work / "index-throughput"
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    solr = LocalSolr(port=0, data_dir=run_dir / "solr", heap=args.heap)
    solr.start()
    try:
        measured = {profile: measure_corpus(profile, path, solr.core_url, solr.pid(), args.rounds, run_dir)
                    for profile, path in corpora.items()}
    finally:
        solr.stop()
    report = {"benchmark": "index-throughput", "date": dt.date.today().isoformat(), "machine": args.machine,
              "heap": args.heap, "rounds": args.rounds, "seed": args.seed, "corpora": measured,
              "load_average": {"start": started_load, "end": load_average_text()},
              "command": "python benchmarks/index_throughput.py " + " ".join(sys.argv[1:] if argv is None else argv)}
    stem = args.out_dir / f"{report['date']}-index-throughput-{args.machine}{args.suffix}"
    write_result_files(stem, report, render(report))
    print(render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
