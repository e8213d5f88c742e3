"""The candidate budget of the refinement of oversized LSH buckets, offline (no Solr): person records signed as
``report --similarity idf --method lsh`` signs them (ICWS over the ``grams`` or ``words`` tokens, IDF counted
over the records themselves), then the candidates of three rules on the same signatures:

- ``split``: the first rule, every bucket over ``split_bucket`` split by further signature values;
- ``judged``: the default rule, each such bucket verified in place when small or dense, split when large and
  sparse (``pairs/candidates.py``, *Oversized buckets*);
- ``none``: no refinement (only up to ``--none-records``: its candidates grow with the square of the records).

For each: candidates, the near pairs among them (estimate at the bar the next stage applies), seconds, the
refinement counters, and the near pairs each refined rule loses against the unrefined bands.

    flock /tmp/bench.lock python -m benchmarks.refinement_budget --records 20000,100000 --threshold 0.4

Results: ``benchmarks/results/<date>-refinement-budget-<machine>.{json,md}``.
"""

from __future__ import annotations

import argparse
import collections
import datetime as _dt
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))

from benchmarks.persons import generate  # noqa: E402
from benchmarks.run import machine_tag, write_results  # noqa: E402
from neardup_solr.engine.weighted_lsh import signing_weights, weighted_band_params, weighted_signer  # noqa: E402
from neardup_solr.pairs.candidates import (  # noqa: E402
    CollectionStats,
    candidate_pairs,
    estimate_margin,
    matching_positions,
    min_matches,
)
from neardup_solr.solr.documents import DocumentBuilder, IndexSettings  # noqa: E402


def signatures(records: int, seed: int, tokens: str, num_hashes: int) -> np.ndarray:
    rows, _ = generate(records, seed=seed)
    builder = DocumentBuilder(IndexSettings())
    token_sets = [builder.gram_tokens(r["text"]) if tokens == "grams" else builder.word_tokens(r["text"])
                  for r in rows]
    df = collections.Counter(t for ts in token_sets for t in ts)
    weights = {t: math.log(records / c) for t, c in df.items()}
    signer = weighted_signer("icws", num_hashes, 1)
    return np.asarray(signer.signatures([signing_weights(ts, weights) for ts in token_sets]))


def measure(sigs: np.ndarray, threshold: float, split_bucket: int, with_none: bool) -> dict:
    k = sigs.shape[1]
    params = weighted_band_params(threshold, k)
    need = min_matches(threshold, k, estimate_margin(threshold, k))
    rules = {"split": {"split_bucket": split_bucket}, "judged": {"split_bucket": split_bucket, "keep_matches": need}}
    if with_none:
        rules["none"] = {"split_bucket": None}
    out: dict = {"bands": params.bands, "rows": params.rows, "keep_matches": need}
    near: dict[str, set] = {}
    for name, kwargs in rules.items():
        stats = CollectionStats()
        t0 = time.perf_counter()
        codes = candidate_pairs(sigs, params, stats=stats, **kwargs)
        seconds = time.perf_counter() - t0
        a, b = np.divmod(codes, np.int64(len(sigs)))
        kept = matching_positions(sigs, a, b) >= need
        near[name] = set(codes[kept].tolist())
        out[name] = {"candidates": int(codes.size), "near_pairs": int(kept.sum()), "seconds": round(seconds, 2),
                     "refinement": stats.refinement()}
    found_by_any = set().union(*near.values())
    for name in near:
        out[name]["near_pairs_lost"] = len(found_by_any - near[name])
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", default="20000,100000", help="comma-separated record counts")
    ap.add_argument("--threshold", type=float, default=0.4)
    ap.add_argument("--tokens", choices=["grams", "words"], default="grams")
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--split-bucket", type=int, default=10)
    ap.add_argument("--none-records", type=int, default=30000, help="run the unrefined rule up to this size")
    ap.add_argument("--out-dir", default=str(BENCH / "results"))
    args = ap.parse_args(argv)
    report = {"date": _dt.date.today().isoformat(), "machine": machine_tag(), "load_average": os.getloadavg(),
              "command": "python -m benchmarks.refinement_budget " + " ".join(sys.argv[1:] if argv is None else argv),
              "threshold": args.threshold, "tokens": args.tokens, "seed": args.seed, "runs": []}
    for records in (int(x) for x in args.records.split(",")):
        t0 = time.perf_counter()
        sigs = signatures(records, args.seed, args.tokens, 128)
        run = {"records": records, "sign_seconds": round(time.perf_counter() - t0, 1)}
        run.update(measure(sigs, args.threshold, args.split_bucket, records <= args.none_records))
        report["runs"].append(run)
        print(run, flush=True)
    lines = [f"# Refinement candidate budget ({report['date']}, {report['machine']})", "",
             f"`{report['command']}`; load average at start {tuple(round(x, 2) for x in report['load_average'])}.",
             f"Person records (seed {args.seed}), IDF over `{args.tokens}`, T = {args.threshold}.", "",
             "| records | rule | candidates | near pairs | near pairs lost | seconds | verified in place | split "
             "| candidates avoided | pairs at risk (estimate) |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for run in report["runs"]:
        for name in ("split", "judged", "none"):
            if name in run:
                r, f = run[name], run[name]["refinement"]
                lines.append(f"| {run['records']:,} | {name} | {r['candidates']:,} | {r['near_pairs']:,} | "
                             f"{r['near_pairs_lost']:,} | {r['seconds']} | {f['verified_buckets']:,} | "
                             f"{f['refined_buckets']:,} | {f['candidates_avoided']:,} | {f['pairs_at_risk']:,} |")
    lines += ["", "Near pairs: candidates whose estimate reaches the bar the next stage applies. Lost: near pairs "
              "another rule found (the unrefined bands where measured) that this rule did not."]
    stem = write_results(args.out_dir, "refinement-budget", report, "\n".join(lines) + "\n")
    print(f"wrote {stem}.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
