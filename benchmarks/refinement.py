"""Recall of whole-collection LSH against the exact pairs, under each rule for oversized band buckets, on three
kinds of corpus: large version clusters (``benchmarks/clustered.py``), planted copies (``benchmarks/corpus.py``)
and person records (``benchmarks/persons.py``).

For each corpus the texts are shingled and signed exactly as the indexer does (``IndexSettings()``: word
3-shingles, 128 MinHash values), the exact pairs at each threshold come from the all-pairs join
(``benchmarks/exact_pairs.py``), and the LSH pairs are what ``report --threshold T --method lsh`` reports from
the same signatures: the candidates of :func:`~neardup_solr.pairs.candidates.candidate_pairs` (the bands
``dedupe_collection`` chooses), those whose estimate reaches the bar, and of those the pairs whose exact
Jaccard reaches T. No Solr: the Solr path reads the same signatures back (``tests/solr/engine/test_collection_recall.py``
runs it end to end at small size).

Rules: ``split`` (every bucket over 10 members split by further values: the rule before issue 24), ``judged``
(the default: small or dense buckets verified in place, large sparse ones split) and ``none`` (no refinement).

    flock /tmp/bench.lock python -m benchmarks.refinement --corpora clustered,planted,persons

Results: ``benchmarks/results/<date>-refinement-<machine>.{json,md}``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import sys
import time
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))

from benchmarks import clustered, corpus, persons  # noqa: E402
from benchmarks.exact_pairs import exact_pairs, shingle_sets  # noqa: E402
from benchmarks.run import machine_tag, write_results  # noqa: E402
from neardup_solr.pairs.candidates import (  # noqa: E402
    DEFAULT_FALSE_NEGATIVE_WEIGHT,
    CollectionStats,
    candidate_pairs,
    estimate_margin,
    matching_positions,
    min_matches,
)
from neardup_solr.pairs.lsh import optimal_params  # noqa: E402
from neardup_solr.solr.documents import DocumentBuilder, IndexSettings  # noqa: E402

THRESHOLDS = (0.5, 0.6, 0.7, 0.8, 0.9)
RULES = {"split": {"split_bucket": 10}, "judged": {"split_bucket": 10, "judge": True}, "none": {"split_bucket": None}}


def load(name: str, size: int, seed: int, work: Path) -> list[tuple[str, str]]:
    if name == "clustered":
        bases = max(1, size // 40)
        return list(clustered.generate(bases, size // 4, seed))
    if name == "planted":
        out = work / f"planted-{size}-{seed}"
        if not (out / "docs.jsonl").exists():
            corpus.generate(size, seed, out, workers=0)
        return list(corpus.iter_documents(out))
    rows, _ = persons.generate(size, seed=seed)
    return [(r["id"], r["text"]) for r in rows]


def run_corpus(name: str, docs: list[tuple[str, str]], thresholds, rules) -> list[dict]:
    settings = IndexSettings()
    builder = DocumentBuilder(settings)
    ids = [i for i, _ in docs]
    t0 = time.perf_counter()
    sets = shingle_sets([t for _, t in docs], builder.shingler)
    sigs = np.asarray(builder.minhash.signatures_from_hashes(sets))
    sign_seconds = time.perf_counter() - t0
    index = {doc_id: i for i, doc_id in enumerate(ids)}
    k = settings.num_hashes
    rows = []
    for t in thresholds:
        t0 = time.perf_counter()
        exact = {(index[a], index[b]) if index[a] < index[b] else (index[b], index[a]): j
                 for a, b, j in exact_pairs(sets, ids, t)}
        exact_seconds = time.perf_counter() - t0
        # The bands dedupe_collection chooses (its default false-negative weight).
        params = optimal_params(t, k, 1.0 - DEFAULT_FALSE_NEGATIVE_WEIGHT, DEFAULT_FALSE_NEGATIVE_WEIGHT)
        need = min_matches(t, k, estimate_margin(t, k))
        for rule in rules:
            kwargs = dict(RULES[rule])
            judge = kwargs.pop("judge", False)
            stats = CollectionStats()
            t0 = time.perf_counter()
            codes = candidate_pairs(sigs, params, stats=stats, keep_matches=need if judge else None, **kwargs)
            seconds = time.perf_counter() - t0
            a, b = np.divmod(codes, np.int64(len(ids)))
            kept = matching_positions(sigs, a, b) >= need
            estimated = set(zip(a[kept].tolist(), b[kept].tolist()))
            found = estimated & exact.keys()  # exact verification keeps those with Jaccard >= t
            rows.append({"corpus": name, "documents": len(ids), "threshold": t, "rule": rule,
                         "bands": params.bands, "rows": params.rows, "exact_pairs": len(exact),
                         "lsh_pairs": len(found), "recall": round(len(found) / len(exact), 5) if exact else 1.0,
                         "missed": len(exact) - len(found), "candidates": int(codes.size),
                         "candidate_seconds": round(seconds, 2), "exact_seconds": round(exact_seconds, 2),
                         "sign_seconds": round(sign_seconds, 2), "refinement": stats.refinement()})
            print({key: rows[-1][key] for key in ("corpus", "threshold", "rule", "exact_pairs", "recall",
                                                   "candidates", "candidate_seconds")}, flush=True)
    return rows


def markdown(report: dict) -> str:
    lines = [f"# Recall of whole-collection LSH by refinement rule ({report['date']}, {report['machine']})", "",
             f"`{report['command']}`; load average at start {report['load_average']}.", "",
             "| corpus | docs | T | exact pairs | " + " | ".join(f"recall {r}" for r in report["rules"])
             + " | " + " | ".join(f"candidates {r}" for r in report["rules"]) + " | at risk (judged, est.) |",
             "|---|---:|---:|---:|" + "---:|" * (2 * len(report["rules"]) + 1)]
    by = {(r["corpus"], r["threshold"], r["rule"]): r for r in report["rows"]}
    for name in report["corpora"]:
        for t in report["thresholds"]:
            cells = [by.get((name, t, rule)) for rule in report["rules"]]
            if not cells[0]:
                continue
            first = cells[0]
            risk = by.get((name, t, "judged"), {}).get("refinement", {}).get("pairs_at_risk", "")
            lines.append(f"| {name} | {first['documents']:,} | {t} | {first['exact_pairs']:,} | "
                         + " | ".join(f"{c['recall']:.4f}" for c in cells) + " | "
                         + " | ".join(f"{c['candidates']:,}" for c in cells) + f" | {risk} |")
    lines += ["", "Recall: LSH pairs (candidates whose estimate reaches the bar, then exact Jaccard >= T) over the "
              "exact all-pairs join's pairs, on the same shingle sets and signatures."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpora", default="clustered,planted,persons")
    ap.add_argument("--sizes", default="clustered=24000,planted=20000,persons=20000",
                    help="documents per corpus (clustered: about size/40 bases with their versions + size/4 "
                         "unrelated)")
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--thresholds", default=",".join(map(str, THRESHOLDS)))
    ap.add_argument("--rules", default="split,judged,none")
    ap.add_argument("--work", default=str(BENCH / "work"))
    ap.add_argument("--out-dir", default=str(BENCH / "results"))
    args = ap.parse_args(argv)
    sizes = dict((k, int(v)) for k, v in (item.split("=") for item in args.sizes.split(",")))
    corpora = args.corpora.split(",")
    thresholds = [float(x) for x in args.thresholds.split(",")]
    rules = args.rules.split(",")
    report = {"date": _dt.date.today().isoformat(), "machine": machine_tag(),
              "load_average": tuple(round(x, 2) for x in os.getloadavg()),
              "command": "python -m benchmarks.refinement " + " ".join(sys.argv[1:] if argv is None else argv),
              "corpora": corpora, "thresholds": thresholds, "rules": rules, "seed": args.seed, "rows": []}
    for name in corpora:
        docs = load(name, sizes[name], args.seed, Path(args.work))
        report["rows"] += run_corpus(name, docs, thresholds, rules)
        write_results(args.out_dir, "refinement", report, markdown(report))
    print(markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
