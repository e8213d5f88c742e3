"""One field record matched against a collection of person records (issue 39, online): p50/p99 at 1,000,000.

    flock /tmp/bench.lock python benchmarks/records_online.py --records 1000000

Starts its own local Solr (free port, throwaway data dir), then:

1. generates ``--records`` + ``--matches`` person records (:mod:`benchmarks.persons`, ``--profile``) and holds
   ``--matches`` of them out: half are the second record of a person whose first is indexed (each should match
   it), half the only record of a person (each should match nothing);
2. indexes the others with ``index_field_records`` (``index-records``: fields and candidate grams), timed;
3. trains the model on the collection and stores it (``train_stored_model``, ``train-records``), timed;
4. starts a ``SolrRecordMatcher`` (it reads the document frequency of every shared candidate token once), timed;
5. one client, sequential: ``--warmup`` lookups of other held-out records, then the held-out records, one
   ``match(record)`` each (one Solr request): p50/p95/p99 of the call as a user of the Python API sees it, and
   how many found their partner first / matched nothing.

Writes ``benchmarks/results/<date>-records-online-<machine>.json`` and ``.md`` (``--out-dir``, ``--machine``).
``--phase prepare`` runs steps 1-3 into ``--work-dir`` and stops; ``--phase match`` runs steps 4-5 on what it left
(the index and train times then are those of the prepare run, on however busy a machine it had).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from datetime import date
from pathlib import Path
from typing import Sequence

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from benchmarks.own_collection import percentiles  # noqa: E402
from benchmarks.persons import generate  # noqa: E402
from benchmarks.provenance import load_average_text, write_result_files  # noqa: E402
from neardup_solr import SolrClient  # noqa: E402
from neardup_solr.engine.records_online import (  # noqa: E402
    SolrRecordMatcher,
    index_field_records,
    train_stored_model,
)
from neardup_solr.solr.backends.local import LocalSolr  # noqa: E402
from neardup_solr.solr.maintenance import merge_segments  # noqa: E402

FIELDS = "name:name,address:text,born:date,phone:code"
COLUMNS = ("id", "name", "address", "born", "phone")


def held_out(rows: list[dict], truth: list[tuple[str, str]], count: int,
             seed: int) -> tuple[list[dict], list[dict], dict[str, str]]:
    """(indexed rows, query rows, query id -> the id it should match): half of the queries are the second record
    of a pair whose first stays indexed, half the only record of a person."""
    rng = np.random.default_rng(seed)
    in_pairs = {i for pair in truth for i in pair}
    pairs = [truth[i] for i in rng.permutation(len(truth))[: count // 2]]
    singles = [r["id"] for r in rows if r["id"] not in in_pairs]
    singles = [singles[i] for i in rng.permutation(len(singles))[: count - len(pairs)]]
    expected = {second: first for first, second in pairs}
    out = set(expected) | set(singles)
    by_id = {r["id"]: r for r in rows}
    queries = [{k: by_id[i].get(k) for k in COLUMNS} for i in list(expected) + singles]
    order = rng.permutation(len(queries))
    return [r for r in rows if r["id"] not in out], [queries[i] for i in order], expected


def prepare(client: SolrClient, args: argparse.Namespace) -> dict:
    """Steps 1-3: the records generated and indexed, the model trained and stored; what the timed lookups need."""
    started = time.perf_counter()
    rows, truth = generate(args.records + args.matches + args.warmup, seed=args.seed, profile=args.profile)
    indexed, queries, expected = held_out(rows, truth, args.matches + args.warmup, args.seed)
    warmup, queries = queries[: args.warmup], queries[args.warmup:]
    generate_s = time.perf_counter() - started
    del rows

    started = time.perf_counter()
    summary = index_field_records(client, ({k: r.get(k) for k in COLUMNS} for r in indexed), FIELDS,
                                  progress=args.progress)
    index_s = time.perf_counter() - started
    # A bulk load leaves 20 or so segments, and every lookup seeks each of its terms in every segment: merged
    # into one as the docs advise after a bulk load (neardup-solr optimize).
    merged = merge_segments(client)
    started = time.perf_counter()
    stored = train_stored_model(client, queries=args.train_queries, seed=args.seed)
    train_s = time.perf_counter() - started
    assert stored.model is not None
    training = stored.model.training
    result = {
        "records": summary.indexed, "rejected": summary.rejected, "profile": args.profile, "seed": args.seed,
        "generate_s": round(generate_s, 1),
        "index": {"seconds": round(index_s, 1), "docs_per_s": round(summary.indexed / index_s) if index_s else None},
        "optimize": {"seconds": merged.seconds, "segments_before": merged.segments_before,
                     "segments_after": merged.segments_after},
        "train": {"seconds": round(train_s, 1), "queries": training["queries"],
                  "candidate_pairs": training["candidate_pairs"], "random_pairs": training["random_pairs"],
                  "lambda": round(stored.model.lambda_, 4), "em_iterations": training["em_iterations"],
                  "revision": stored.revision},
    }
    return {"result": result, "warmup": warmup, "queries": queries, "expected": expected}


def measure(client: SolrClient, prepared: dict) -> dict:
    """Steps 4-5: the matcher started, then the timed single-record matches."""
    warmup, queries, expected = prepared["warmup"], prepared["queries"], prepared["expected"]
    started = time.perf_counter()
    matcher = SolrRecordMatcher(client)
    start_s = time.perf_counter() - started

    for record in warmup:
        matcher.match(record)
    seconds, partner_first, partner_found, singles_clean = [], 0, 0, 0
    for record in queries:
        began = time.perf_counter()
        found = matcher.match(record)
        seconds.append(time.perf_counter() - began)
        partner = expected.get(record["id"])
        ids = [m.id for m in found]
        if partner is None:
            singles_clean += not ids
        else:
            partner_first += bool(ids) and ids[0] == partner
            partner_found += partner in ids
    duplicates = sum(1 for q in queries if q["id"] in expected)
    return {
        **prepared["result"],
        "matcher_start": {"seconds": round(start_s, 2), "shared_tokens": matcher.shared_tokens},
        "match": {**percentiles(seconds), "warmup": len(warmup), "duplicates": duplicates,
                  "partner_first": partner_first, "partner_found": partner_found,
                  "singles": len(queries) - duplicates, "singles_without_match": singles_clean},
    }


def markdown(report: dict) -> str:
    r = report["result"]
    m, t = r["match"], r["train"]
    lines = ["# One field record matched online against the collection", "",
             f"Machine: {report['machine']}; Solr {report['solr_heap']} heap, one core; load average when started "
             f"{report['load_at_start']}"
             + (f" (indexing and training ran earlier, load average {report['load_while_prepared']})"
                if report.get("load_while_prepared") else "")
             + f". Person records, profile {r['profile']}, seed {r['seed']}; fields "
             f"`{FIELDS}`.", "",
             "| records | index s (docs/s) | train s (queries, candidate pairs) | matcher start s | "
             "match p50 / p95 / p99 ms | partner first | singles without a match |",
             "|---|---|---|---|---|---|---|",
             f"| {r['records']:,} | {r['index']['seconds']} ({r['index']['docs_per_s']:,}) | {t['seconds']} "
             f"({t['queries']:,}, {t['candidate_pairs']:,}) | {r['matcher_start']['seconds']} | {m['p50_ms']} / "
             f"{m['p95_ms']} / {m['p99_ms']} | {m['partner_first']} of {m['duplicates']} | "
             f"{m['singles_without_match']} of {m['singles']} |", "",
             f"Match: one client, sequential, {m['n']} lookups after {m['warmup']} warm-up lookups, "
             "`SolrRecordMatcher.match(record)` (one Solr request each; the model scores the candidates in the "
             "client). Half the lookups are the second record of a person whose first is indexed, half the only "
             "record of a person."
             + (f" The index was merged from {r['optimize']['segments_before']} segments into "
                f"{r['optimize']['segments_after']} after the load (`neardup-solr optimize`)." if r.get("optimize") else ""),
             "", "```json", json.dumps(r, indent=2), "```", ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000, help="person records indexed")
    parser.add_argument("--matches", type=int, default=1000, help="timed single-record matches")
    parser.add_argument("--warmup", type=int, default=100, help="matches before the timed ones")
    parser.add_argument("--train-queries", type=int, default=20_000,
                        help="records whose candidates the model is trained on")
    parser.add_argument("--profile", choices=["standard", "hard"], default="hard")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--heap", default="4g")
    parser.add_argument("--progress", action="store_true")
    parser.add_argument("--work-dir", type=Path, default=None)
    parser.add_argument("--out-dir", type=Path, default=Path("benchmarks/results"))
    parser.add_argument("--machine", default=f"{os.cpu_count()}core")
    parser.add_argument("--phase", choices=["all", "prepare", "match"], default="all",
                        help="prepare: generate, index and train into --work-dir, then stop; match: time the "
                             "matches on what prepare left there (so that only they need a quiet machine)")
    args = parser.parse_args(argv)
    if args.phase != "all" and args.work_dir is None:
        parser.error("--phase prepare/match needs --work-dir")
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="neardup-bench-records-online-"))
    work.mkdir(parents=True, exist_ok=True)
    saved = work / "prepared.json"
    load_at_start = load_average_text()
    solr = LocalSolr(port=0, data_dir=work / "solr", heap=args.heap)
    solr.start()
    try:
        client = SolrClient(solr.core_url, timeout=600)
        if args.phase == "match":
            prepared = json.loads(saved.read_text())
        else:
            prepared = prepare(client, args)
            prepared["load_at_start"] = load_at_start
        if args.phase == "prepare":
            with saved.open("w", encoding="utf-8") as state:  # the run's state, not a result
                json.dump(prepared, state)
            print(f"prepared in {work}: {json.dumps(prepared['result'])}; time the matches with --phase match")
            return 0
        result = measure(client, prepared)
    finally:
        solr.stop()
    report = {"benchmark": "records-online", "machine": args.machine, "platform": platform.platform(),
              "solr_heap": args.heap, "load_at_start": load_at_start, "result": result}
    if args.phase == "match":
        report["load_while_prepared"] = prepared.get("load_at_start")
    stem = args.out_dir / f"{date.today().isoformat()}-records-online-{args.machine}"
    write_result_files(stem, report, markdown(report))
    print(markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
