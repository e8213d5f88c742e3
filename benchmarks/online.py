"""Online dedup latency: ``NearDupIndex.check_and_add`` against a Solr holding N documents, next to datasketch.

    flock /tmp/bench.lock python benchmarks/online.py --docs 100000 --checks 1000 --solr-url URL

Generates the synthetic corpus of :mod:`benchmarks.corpus` (N + checks documents, 10% planted near
duplicates), indexes the first N with the LSH profile (``IndexSettings(fields=("lsh",))``: band keys only, the
profile for large collections), then sends the last ``checks`` documents one at a time through
``check_and_add`` at the collection's threshold (0.8), and times each call: first as shipped (adds sent with
``commitWithin``, seen by this process at once), then with ``commit_within_ms=0`` (a soft commit per add, what
strict exclusion across processes needs). The same run times the parts of a call alone on the same texts
(signing, the candidate query with exact verification, one round trip, one small update, a soft commit). The peer, in the same run on the same texts: datasketch's
in-memory ``MinHashLSH`` (same threshold and number of values) holding the same N documents, timed for
"MinHash the text, query, insert if nothing was found", which is what ``check_and_add`` does.

Writes ``benchmarks/results/<date>-online-<machine>.json`` and ``.md`` (``--out-dir``, ``--machine``).
The collection is cleared first: point ``--solr-url`` at a core of its own.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from datetime import date
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.corpus import generate, iter_documents  # noqa: E402
from neardup_solr import IndexSettings, Indexer, NearDupIndex, SolrClient  # noqa: E402
from neardup_solr.engine.online import claim_id, delete_documents, find_similar  # noqa: E402
from neardup_solr.text import Shingler  # noqa: E402
from benchmarks.provenance import write_result_files  # noqa: E402

THRESHOLD = 0.8
NUM_HASHES = 128


def percentiles(seconds: Sequence[float]) -> dict:
    """n, p50/p95/p99 and mean in milliseconds."""
    ms = np.asarray(seconds) * 1000.0
    return {"n": int(ms.size), "p50_ms": round(float(np.percentile(ms, 50)), 3),
            "p95_ms": round(float(np.percentile(ms, 95)), 3), "p99_ms": round(float(np.percentile(ms, 99)), 3),
            "mean_ms": round(float(ms.mean()), 3)}


def timed(items: Sequence, call: Callable) -> tuple[list[float], list]:
    """Each call's wall time and result."""
    times, results = [], []
    for item in items:
        start = time.perf_counter()
        results.append(call(item))
        times.append(time.perf_counter() - start)
    return times, results


def run_ours(url: str, indexed: list[tuple[str, str]], checks: list[tuple[str, str]]) -> dict:
    client = SolrClient(url)
    client.delete_all()
    started = time.perf_counter()
    settings = IndexSettings(num_hashes=NUM_HASHES, lsh_threshold=THRESHOLD, fields=("lsh",))
    summary = Indexer(client, settings).index_records(indexed)
    index_seconds = time.perf_counter() - started
    index = NearDupIndex(client, threshold=THRESHOLD)
    searcher = index.searcher
    # Parts, each on its own, on the same texts (nothing is added by these).
    sign_times, queries = timed(checks, lambda item: searcher.prepare(item[1], item[0]))
    lookup_times, _ = timed(queries, lambda q: find_similar(searcher, q, THRESHOLD))
    rtg_times, _ = timed(checks[: min(200, len(checks))], lambda item: client.get_by_ids(
        [claim_id(item[0])], "id"))
    update_times, _ = timed(range(200), lambda i: client.add(
        [{"id": f"__neardup_claim__:bench-{i}", "dataset": "__meta__"}], commit_within_ms=1000))
    soft_times, _ = timed(range(50), lambda _: client.get_json("update", {"softCommit": "true"}))
    # The real thing: adds with commitWithin (the default), then the strict variant that soft-commits each add.
    call_times, results = timed(checks, lambda item: index.check_and_add(item[0], item[1]))
    delete_documents(client, [r.id for r in results if r.added])  # the strict run starts from the same index
    strict = NearDupIndex(client, threshold=THRESHOLD, commit_within_ms=0)
    strict_times, strict_results = timed(checks, lambda item: strict.check_and_add("strict-" + item[0], item[1]))
    added = sum(r.added for r in results)
    return {
        "indexed": summary.indexed, "index_seconds": round(index_seconds, 1), "added": added,
        "duplicates": len(results) - added,
        "check_and_add": percentiles(call_times),
        "strict": {"check_and_add": percentiles(strict_times), "added": sum(r.added for r in strict_results),
                   "duplicates": sum(not r.added for r in strict_results)},
        "parts": {"sign (client)": percentiles(sign_times), "candidates + exact verify": percentiles(lookup_times),
                  "one round trip (real-time get of one id)": percentiles(rtg_times),
                  "one update request (a small document, commitWithin)": percentiles(update_times),
                  "a soft commit alone": percentiles(soft_times)},
    }


def run_datasketch(indexed: list[tuple[str, str]], checks: list[tuple[str, str]]) -> dict:
    from datasketch import MinHash, MinHashLSH

    shingler = Shingler(ngram=3)

    def signature(text: str) -> MinHash:
        m = MinHash(num_perm=NUM_HASHES, seed=1)
        m.update_batch([s.encode("utf-8") for s in shingler.shingles(text)])
        return m

    started = time.perf_counter()
    lsh = MinHashLSH(threshold=THRESHOLD, num_perm=NUM_HASHES)
    for doc_id, text in indexed:
        lsh.insert(doc_id, signature(text))
    build_seconds = time.perf_counter() - started

    def check(item: tuple[str, str]) -> bool:
        m = signature(item[1])
        if lsh.query(m):
            return False
        lsh.insert(item[0], m)
        return True

    call_times, results = timed(checks, check)
    return {"indexed": len(indexed), "index_seconds": round(build_seconds, 1), "added": sum(results),
            "duplicates": len(results) - sum(results), "check_and_add": percentiles(call_times),
            "note": "in memory, in this process; LSH candidates are not verified (datasketch returns them)"}


def markdown(report: dict) -> str:
    lines = [f"# online check_and_add, {report['docs']:,} documents indexed ({report['date']}, {report['machine']})",
             "", f"`{report['command']}`", "",
             f"Load average (1, 5, 15 min) before / after: {report['load_average_before_after'][0]} / "
             f"{report['load_average_before_after'][1]}.", "",
             "| system | p50 ms | p95 ms | p99 ms | mean ms | added | duplicates |", "|---|---|---|---|---|---|---|"]
    for name, r in report["results"].items():
        c = r["check_and_add"]
        lines.append(f"| {name} | {c['p50_ms']} | {c['p95_ms']} | {c['p99_ms']} | {c['mean_ms']} | {r['added']} | "
                     f"{r['duplicates']} |")
        if "strict" in r:
            c = r["strict"]["check_and_add"]
            added = r["strict"]["added"]
            lines.append(f"| {name}, commit_within_ms=0 (a soft commit per add) | {c['p50_ms']} | {c['p95_ms']} | "
                         f"{c['p99_ms']} | {c['mean_ms']} | {added} | {r['strict']['duplicates']} |")
    lines += ["", "Parts of one neardup-solr call, each timed alone on the same texts:", "",
              "| part | p50 ms | p95 ms | p99 ms |", "|---|---|---|---|"]
    for part, p in report["results"]["neardup-solr NearDupIndex"]["parts"].items():
        lines.append(f"| {part} | {p['p50_ms']} | {p['p95_ms']} | {p['p99_ms']} |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=100_000, help="documents indexed before the checks")
    parser.add_argument("--checks", type=int, default=1000, help="check_and_add calls timed")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--solr-url", default=os.environ.get("SOLR_URL"), required="SOLR_URL" not in os.environ)
    parser.add_argument("--work-dir", type=Path, default=Path("benchmarks/work/online"))
    parser.add_argument("--out-dir", type=Path, default=Path("benchmarks/results"))
    parser.add_argument("--machine", default=f"{os.cpu_count()}core")
    parser.add_argument("--no-peer", action="store_true", help="leave datasketch out")
    args = parser.parse_args(argv)

    corpus_dir = args.work_dir / f"c{args.docs + args.checks}-s{args.seed}"
    if not (corpus_dir / "docs.jsonl").exists():
        generate(args.docs + args.checks, args.seed, corpus_dir)
    docs = list(iter_documents(corpus_dir))
    indexed, checks = docs[: args.docs], docs[args.docs:]
    print(f"corpus: {len(indexed):,} to index, {len(checks):,} to check", file=sys.stderr)

    load_before = os.getloadavg()
    results = {"neardup-solr NearDupIndex": run_ours(args.solr_url, indexed, checks)}
    if not args.no_peer:
        results["datasketch MinHashLSH (in memory)"] = run_datasketch(indexed, checks)
    report = {"date": date.today().isoformat(), "machine": args.machine, "docs": args.docs, "checks": args.checks,
              "threshold": THRESHOLD, "num_hashes": NUM_HASHES, "python": platform.python_version(),
              "command": "python benchmarks/online.py " + " ".join("URL" if a.startswith("http") else a
                                                                   for a in (argv or sys.argv[1:])),
              "load_average_before_after": [[round(x, 2) for x in load_before],
                                            [round(x, 2) for x in os.getloadavg()]],
              "results": results}
    args.out_dir.mkdir(parents=True, exist_ok=True)
    stem = args.out_dir / f"{report['date']}-online-{args.machine}"
    write_result_files(stem, report, markdown(report))
    print(markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
