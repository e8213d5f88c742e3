"""Does the record recipe (IDF over words and their 4-grams, ``--idf-tokens grams``, >= 0.37) hold on harder
person records? Offline, as ``benchmarks/recipe_tokens.py`` measures (IDF counted over each data set, exact
IDF-weighted Jaccard, every pair; no Solr), on person records of ``benchmarks/persons.py`` with the ``hard``
corruption profile and, for comparison, the ``standard`` one.

Seeds are split: the *choose* seeds may pick a better setting (token kind and threshold: the one whose lowest
F1 over the choose seeds is highest), and the *report* seeds, never looked at while choosing, give the numbers
for both the recipe and that setting.

    flock /tmp/bench.lock python -m benchmarks.recipe_hard --records 10000

Results: ``benchmarks/results/<date>-recipe-hard-<machine>.{json,md}``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))

from benchmarks.persons import generate  # noqa: E402
from benchmarks.recipe_tokens import f1_by_threshold, idf, similar_pairs, tokenizer  # noqa: E402
from benchmarks.run import machine_tag, write_results  # noqa: E402

RECIPE = ("grams", "0.37")
THRESHOLDS = [round(0.14 + 0.01 * i, 2) for i in range(39)]  # 0.14 .. 0.52


def scores(kind: str, profile: str, seed: int, records: int) -> dict[str, dict]:
    rows, truth = generate(records, seed=seed, profile=profile)
    tokens = tokenizer(kind)
    sets = [tokens(r["text"]) for r in rows]
    ids = [r["id"] for r in rows]
    found = similar_pairs(sets, None, idf(sets), min(THRESHOLDS))
    return f1_by_threshold(found, ids, ids, truth, THRESHOLDS, one_to_one=False)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=10_000)
    ap.add_argument("--kinds", default="grams,words")
    ap.add_argument("--choose", default="hard:11,hard:12,standard:3", help="profile:seed,... to choose on")
    ap.add_argument("--report", default="hard:13,hard:14,hard:15,standard:4", help="profile:seed,... to report")
    ap.add_argument("--out-dir", default=str(BENCH / "results"))
    args = ap.parse_args(argv)
    kinds = args.kinds.split(",")
    choose = [(p, int(s)) for p, s in (x.split(":") for x in args.choose.split(","))]
    report_sets = [(p, int(s)) for p, s in (x.split(":") for x in args.report.split(","))]
    report = {"date": _dt.date.today().isoformat(), "machine": machine_tag(),
              "load_average": tuple(round(x, 2) for x in os.getloadavg()),
              "command": "python -m benchmarks.recipe_hard " + " ".join(sys.argv[1:] if argv is None else argv),
              "records": args.records, "choose": choose, "report": report_sets, "scores": {}}
    t0 = time.perf_counter()
    for kind in kinds:
        for profile, seed in choose + report_sets:
            report["scores"][f"{kind} {profile}:{seed}"] = scores(kind, profile, seed, args.records)
            print(f"{kind} {profile}:{seed} done ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)

    def lowest(kind: str, t: str, sets) -> float:
        return min(report["scores"][f"{kind} {p}:{s}"][t]["f1"] for p, s in sets)

    best = max(((kind, f"{t:.2f}") for kind in kinds for t in THRESHOLDS),
               key=lambda kt: (lowest(kt[0], kt[1], choose), kt == RECIPE))
    report["chosen"] = {"kind": best[0], "threshold": best[1], "lowest_f1_on_choose": lowest(*best, choose)}
    lines = [f"# The record recipe on hard person records ({report['date']}, {report['machine']})", "",
             f"`{report['command']}`; offline (IDF over each data set, exact weighted Jaccard, all pairs), "
             f"{args.records:,} records a seed; load average at start {report['load_average']}.", "",
             f"Chosen on {', '.join(f'{p}:{s}' for p, s in choose)}: **{best[0]} >= {best[1]}** (lowest F1 there "
             f"{report['chosen']['lowest_f1_on_choose']:.4f}). Reported on the held-out seeds:", "",
             "| data (profile:seed) | role | recipe grams >= 0.37: P / R / F1 | chosen "
             f"{best[0]} >= {best[1]}: P / R / F1 |", "|---|---|---|---|"]
    for role, sets in (("choose", choose), ("report", report_sets)):
        for p, s in sets:
            a = report["scores"][f"{RECIPE[0]} {p}:{s}"][RECIPE[1]]
            b = report["scores"][f"{best[0]} {p}:{s}"][best[1]]
            lines.append(f"| {p}:{s} | {role} | {a['precision']:.4f} / {a['recall']:.4f} / **{a['f1']:.4f}** | "
                         f"{b['precision']:.4f} / {b['recall']:.4f} / **{b['f1']:.4f}** |")
    lines += ["", "Each token kind with its own threshold, chosen on the choose seeds, then on the report seeds:", "",
              "| tokens | T (chosen) | lowest F1, choose | " + " | ".join(f"{p}:{s} F1" for p, s in report_sets)
              + " |", "|---|---:|---:|" + "---:|" * len(report_sets)]
    report["per_kind"] = {}
    for kind in kinds:
        t = max((f"{x:.2f}" for x in THRESHOLDS), key=lambda t: lowest(kind, t, choose))
        report["per_kind"][kind] = {"threshold": t, "lowest_f1_choose": lowest(kind, t, choose),
                                    "report_f1": {f"{p}:{s}": report["scores"][f"{kind} {p}:{s}"][t]["f1"]
                                                  for p, s in report_sets}}
        lines.append(f"| {kind} | {t} | {lowest(kind, t, choose):.4f} | " + " | ".join(
            f"{report['scores'][f'{kind} {p}:{s}'][t]['f1']:.4f}" for p, s in report_sets) + " |")
    lines += ["", "Lowest F1 over the report seeds by threshold:", "", "| T | " + " | ".join(kinds) + " |",
              "|---:|" + "---:|" * len(kinds)]
    for t in THRESHOLDS:
        lines.append(f"| {t:.2f} | " + " | ".join(f"{lowest(k, f'{t:.2f}', report_sets):.4f}" for k in kinds) + " |")
    stem = write_results(args.out_dir, "recipe-hard", report, "\n".join(lines) + "\n")
    print("\n".join(lines[: len(lines) - len(THRESHOLDS) - 4]))
    print(f"wrote {stem}.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
