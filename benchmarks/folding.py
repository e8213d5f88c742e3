"""Groups written back into the collection and the folded search (issue 38), at 1,000,000 documents.

    flock /tmp/bench.lock python benchmarks/folding.py --docs 1000000

Starts its own local Solr (free port, throwaway data dir). For each N:

1. the planted corpus of :mod:`benchmarks.corpus` indexed by ``index`` (default settings);
2. the collection's near-duplicate pairs at ``--threshold`` (``dedupe_collection``, the ``report --method lsh``
   path), timed apart from the write-back;
3. ``write_groups`` (what ``groups --to-solr`` and ``dedupe_collection(to_solr=True)`` run): time, Solr's CPU
   seconds, the index size before and after (both after a commit), and a second run over the same pairs (what a
   nightly re-run costs when nothing changed);
4. one client searching sequentially: ``--queries`` user queries (the first words of a document in a group of
   near duplicates, half of them, and of any document, the other half), each folded and not folded, after a
   warm-up of other queries: p50/p99 of the call as a user of the Python API (or ``GET /v1/search``) sees it.

Writes ``benchmarks/results/<date>-folding-<machine>.json`` and ``.md`` (``--out-dir``, ``--machine``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import tempfile
import time
from datetime import date
from pathlib import Path
from typing import Sequence

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.corpus import generate, iter_documents  # noqa: E402
from benchmarks.own_collection import cpu_seconds, index_bytes, percentiles  # noqa: E402
from benchmarks.provenance import load_average_text, write_result_files  # noqa: E402
from neardup_solr import Indexer, SolrClient  # noqa: E402
from neardup_solr.engine.collection import dedupe_collection  # noqa: E402
from neardup_solr.engine.group_writeback import write_groups  # noqa: E402
from neardup_solr.pairs.groups import group_pairs  # noqa: E402
from neardup_solr.solr.backends.local import LocalSolr  # noqa: E402
from neardup_solr.solr.folded_search import folded_search  # noqa: E402

QUERY_WORDS = 6


def _query(text: str) -> str:
    return " ".join(text.split()[:QUERY_WORDS])


def _timed_searches(client: SolrClient, queries: Sequence[str], fold: bool) -> tuple[list[float], dict]:
    seconds, hits, folded_copies, docs_found = [], 0, 0, 0
    for q in queries:
        started = time.perf_counter()
        found = folded_search(client, q, fold=fold, rows=10, copies=10)
        seconds.append(time.perf_counter() - started)
        hits += len(found.hits)
        folded_copies += sum(h.copy_count for h in found.hits)
        docs_found += found.found
    return seconds, {"hits_per_query": round(hits / len(queries), 2),
                     "copies_listed_per_query": round(folded_copies / len(queries), 2),
                     "found_per_query": round(docs_found / len(queries), 1)}


def run_size(solr: LocalSolr, n: int, work: Path, args: argparse.Namespace) -> dict:
    pid = solr.pid()
    assert pid is not None
    corpus_dir = work / f"corpus-{n}"
    if not (corpus_dir / "docs.jsonl").exists():
        generate(n, 41, corpus_dir)
    docs = list(iter_documents(corpus_dir))
    client = SolrClient(solr.core_url, timeout=600)
    client.delete_all()

    started = time.perf_counter()
    Indexer(client, batch_size=500, progress=args.progress).index_records(docs)
    client.commit()
    index_s = time.perf_counter() - started

    started = time.perf_counter()
    pairs = dedupe_collection(client, args.threshold, progress=args.progress).pairs
    report_s = time.perf_counter() - started

    size_before = index_bytes(solr.base_url, solr.core)
    cpu, started = cpu_seconds(pid), time.perf_counter()
    first = write_groups(client, pairs)
    write_s = time.perf_counter() - started
    write_cpu = cpu_seconds(pid) - cpu
    size_after = index_bytes(solr.base_url, solr.core)
    cpu, started = cpu_seconds(pid), time.perf_counter()
    again = write_groups(client, pairs)
    again_s = time.perf_counter() - started
    again_cpu = cpu_seconds(pid) - cpu

    texts = dict(docs)
    rng = random.Random(7)
    grouped_ids = sorted({m for g in group_pairs([(p.id, p.neighbor_id) for p in pairs]) for m in g.members})
    all_ids = [doc_id for doc_id, _ in docs]
    picks = rng.sample(grouped_ids, min(len(grouped_ids), args.queries // 2)) + rng.sample(all_ids, args.queries // 2)
    warm = [_query(texts[i]) for i in rng.sample(all_ids, args.warmup)]
    queries = [_query(texts[i]) for i in picks]
    for q in warm:
        folded_search(client, q, fold=True)
        folded_search(client, q, fold=False)
    # Folded first, then not: the two send different filters, so neither finds the other's answers cached.
    folded_s, folded_stats = _timed_searches(client, queries, True)
    plain_s, plain_stats = _timed_searches(client, queries, False)

    return {
        "docs": n, "threshold": args.threshold, "pairs": len(pairs),
        "index_s": round(index_s, 1), "report_s": round(report_s, 1),
        "writeback": {"seconds": round(write_s, 1), "docs_per_s": round(first.documents / write_s, 1),
                      "solr_cpu_s": round(write_cpu, 1), "documents": first.documents, "groups": first.groups,
                      "singletons": first.singletons, "updated": first.updated,
                      "index_bytes_before": size_before, "index_bytes_after": size_after,
                      "growth": round(size_after / size_before - 1.0, 4)},
        "rerun_unchanged": {"seconds": round(again_s, 2), "solr_cpu_s": round(again_cpu, 1),
                            "updated": again.updated, "unchanged": again.unchanged},
        "search": {"queries": len(queries), "words_per_query": QUERY_WORDS,
                   "folded": {**percentiles(folded_s), **folded_stats},
                   "not_folded": {**percentiles(plain_s), **plain_stats}},
    }


def markdown(report: dict) -> str:
    lines = ["# Groups written back and the folded search", "",
             f"Machine: {report['machine']}; Solr {report['solr_heap']} heap, one core; load average when started "
             f"{report['load_at_start']}.", "",
             "| docs | pairs (J >= T) | write-back s (docs/s) | Solr CPU s | index growth | re-run, nothing changed | "
             "search p50 / p99 ms, folded | not folded |",
             "|---|---|---|---|---|---|---|---|"]
    for r in report["results"]:
        w, s = r["writeback"], r["search"]
        lines.append(f"| {r['docs']:,} | {r['pairs']:,} | {w['seconds']} ({w['docs_per_s']:,}) | {w['solr_cpu_s']} | "
                     f"{w['growth'] * 100:.1f}% | {r['rerun_unchanged']['seconds']} s, "
                     f"{r['rerun_unchanged']['updated']} written | "
                     f"{s['folded']['p50_ms']} / {s['folded']['p99_ms']} | "
                     f"{s['not_folded']['p50_ms']} / {s['not_folded']['p99_ms']} |")
    lines += ["", "Write-back: every document gets its group number and kept flag (in-place docValues updates), "
              "singletons included. Search: one client, sequential, rows=10, copies=10, "
              f"{QUERY_WORDS}-word queries; folded = collapse + expand on the core plus the search for documents "
              "without a group, merged.", "", "```json", json.dumps(report["results"], indent=2), "```", ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", default="1000000", help="comma-separated collection sizes")
    parser.add_argument("--threshold", type=float, default=0.8)
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--heap", default="4g")
    parser.add_argument("--progress", action="store_true")
    parser.add_argument("--work-dir", type=Path, default=None)
    parser.add_argument("--out-dir", type=Path, default=Path("benchmarks/results"))
    parser.add_argument("--machine", default=f"{os.cpu_count()}core")
    args = parser.parse_args(argv)
    sizes = [int(x) for x in args.docs.split(",") if x.strip()]
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="neardup-bench-folding-"))
    work.mkdir(parents=True, exist_ok=True)
    load_at_start = load_average_text()
    solr = LocalSolr(port=0, data_dir=work / "solr", heap=args.heap)
    solr.start()
    try:
        results = [run_size(solr, n, work, args) for n in sizes]
    finally:
        solr.stop()
    report = {"benchmark": "folding", "machine": args.machine, "platform": platform.platform(),
              "solr_heap": args.heap, "load_at_start": load_at_start, "results": results}
    stem = args.out_dir / f"{date.today().isoformat()}-folding-{args.machine}"
    write_result_files(stem, report, markdown(report))
    print(markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
