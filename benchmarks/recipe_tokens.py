"""Which tokens to weigh with IDF for record matching: the candidates for the README's recipe, compared offline.

For each token kind, every record of the restaurant data (fodors x zagats join, one-to-one) and of the generated
person records (``benchmarks/persons.py``, two seeds; all pairs) is turned into a token set, IDF is counted over
the data set itself (``ln(N / df)``, as :class:`neardup_solr.solr.idf.IdfWeights` reads it from a collection
holding exactly these records), and every pair with IDF-weighted Jaccard >= ``--min-threshold`` is found exactly
(weighted prefix filter, then verification). F1 is then read at every threshold, and a kind is judged by its
*lowest* F1 over the data sets: the recipe must hold on all of them with one setting.

Kinds: ``words`` (the normalised words, ``content_words``), ``grams`` (the words padded and their character
4-grams: the ``grams`` token field, ``DocumentBuilder.gram_tokens``), ``grams3``/``grams2`` (the same with
3- and 2-grams), ``text3``/``text4`` (character shingles of the whole normalised text, spaces included).

No Solr is involved; ``benchmarks/weighted.py --recipe`` measures the chosen recipe through Solr, with both
methods. The two agree: the words kind here gives the F1 the Solr runs gave for IDF word Jaccard.

    flock /tmp/bench.lock python -m benchmarks.recipe_tokens                      # 10,000 person records a seed
    python -m benchmarks.recipe_tokens --records 2000 --kinds words,grams         # a quick run

Results: ``benchmarks/results/<date>-recipe-tokens-<machine>.{json,md}``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import math
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Callable

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))

from benchmarks.persons import generate  # noqa: E402
from benchmarks.run import machine_tag, write_results  # noqa: E402

KINDS = ("words", "grams", "grams3", "grams2", "text3", "text4")


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def tokenizer(kind: str) -> Callable[[str], set[str]]:
    from neardup_solr.solr.documents import DocumentBuilder, IndexSettings

    builder = DocumentBuilder(IndexSettings())
    normalizer = builder.shingler.normalizer
    if kind == "words":
        return lambda text: set(builder.word_tokens(text))
    if kind == "grams":
        return lambda text: set(builder.gram_tokens(text))
    if kind.startswith("grams"):
        size = int(kind[5:])

        def word_grams(text: str) -> set[str]:
            out = set()
            for word in normalizer.words(text):
                padded = f"#{word}#"
                out.add(padded)
                out.update(padded[i:i + size] for i in range(len(padded) - size + 1))
            return out
        return word_grams
    if kind.startswith("text"):
        size = int(kind[4:])

        def shingles(text: str) -> set[str]:
            s = normalizer.normalize(text)
            return {s[i:i + size] for i in range(max(1, len(s) - size + 1))}
        return shingles
    raise ValueError(f"unknown token kind {kind!r}; choose from {', '.join(KINDS)}")


def idf(sets: list[set[str]]) -> dict[str, float]:
    df: dict[str, int] = defaultdict(int)
    for s in sets:
        for t in s:
            df[t] += 1
    return {t: math.log(len(sets) / d) for t, d in df.items()}


def weighted_jaccard(a: set[str], b: set[str], w: dict[str, float]) -> float:
    union = math.fsum(w[t] for t in a | b)
    return math.fsum(w[t] for t in a & b) / union if union > 0 else float(a == b)


def similar_pairs(left: list[set[str]], right: list[set[str]] | None, w: dict[str, float],
                  low: float) -> dict[tuple[int, int], float]:
    """(i, j) -> similarity of every pair >= low: within ``left`` (i < j) when ``right`` is None, else left x right.
    A pair reaching ``low`` shares a token among A's heaviest ones holding more than (1 - low) of A's weight
    (the union weighs at least w(A)), so only those tokens' postings are read."""
    other = left if right is None else right
    postings: dict[str, list[int]] = defaultdict(list)
    for j, s in enumerate(other):
        for t in s:
            postings[t].append(j)
    out = {}
    for i, a in enumerate(left):
        total = math.fsum(w[t] for t in a)
        rest = total
        candidates: set[int] = set()
        for t in sorted(a, key=lambda t: (-w[t], t)):
            if rest < low * total - 1e-12:
                break
            candidates.update(postings[t])
            rest -= w[t]
        for j in candidates:
            if right is None and j <= i:
                continue
            sim = weighted_jaccard(a, other[j], w)
            if sim >= low:
                out[(i, j)] = sim
    return out


def f1_by_threshold(found: dict, ids_left: list[str], ids_right: list[str], gold, thresholds,
                    one_to_one: bool) -> dict[str, dict]:
    from neardup_solr.pairs.evaluate import evaluate

    ranked = sorted(found.items(), key=lambda x: (-x[1], x[0]))
    out = {}
    for t in thresholds:
        pairs = [(p, s) for p, s in ranked if s >= t - 1e-12]
        if one_to_one:  # greedy, best first, as neardup_solr.pairs.similar_pairs.one_to_one
            used_l: set[int] = set()
            used_r: set[int] = set()
            kept = []
            for (i, j), s in pairs:
                if i not in used_l and j not in used_r:
                    used_l.add(i)
                    used_r.add(j)
                    kept.append(((i, j), s))
            pairs = kept
        e = evaluate([(ids_left[i], ids_right[j]) for (i, j), _ in pairs], gold)
        out[f"{t:.2f}"] = {"f1": round(e.f1, 4), "precision": round(e.precision, 4), "recall": round(e.recall, 4)}
    return out


def measure(kind: str, person_sets: dict[int, tuple[list[dict], list]], thresholds, low: float) -> dict:
    from neardup_solr.pairs.evaluate import read_pairs
    from neardup_solr.io.restaurants import _read_guides, fodors_path, gold_pairs_path, zagats_path

    tokens = tokenizer(kind)
    out: dict = {}
    fodors, zagats = _read_guides(fodors_path(), zagats_path())
    fsets, zsets = [tokens(t) for _, t in fodors], [tokens(t) for _, t in zagats]
    w = idf(fsets + zsets)  # the collection holds both guides
    t0 = time.perf_counter()
    found = similar_pairs(fsets, zsets, w, low)
    out["restaurants"] = f1_by_threshold(found, [str(i) for i, _ in fodors], [str(i) for i, _ in zagats],
                                         read_pairs(gold_pairs_path()), thresholds, one_to_one=True)
    for seed, (rows, truth) in person_sets.items():
        sets = [tokens(r["text"]) for r in rows]
        ids = [r["id"] for r in rows]
        found = similar_pairs(sets, None, idf(sets), low)
        out[f"persons, seed {seed}"] = f1_by_threshold(found, ids, ids, truth, thresholds, one_to_one=False)
    log(f"  {kind}: {time.perf_counter() - t0:.0f} s")
    return out


def summary(by_data: dict) -> dict:
    """The threshold whose lowest F1 over the data sets is highest (the middle one of a tie), and the thresholds
    where it is >= 0.95."""
    thresholds = list(next(iter(by_data.values())))
    lowest = {t: min(d[t]["f1"] for d in by_data.values()) for t in thresholds}
    top = max(lowest.values())
    tied = [t for t in thresholds if lowest[t] == top]
    best = tied[len(tied) // 2]  # the middle of the best thresholds: furthest from where either side drops
    return {"best_threshold": best, "best_lowest_f1": lowest[best],
            "thresholds_all_at_least_0.95": [t for t in thresholds if lowest[t] >= 0.95],
            "f1_at_best": {name: d[best]["f1"] for name, d in by_data.items()}}


def to_markdown(r: dict) -> str:
    lines = [f"# record matching: which tokens to weigh with IDF ({r['date']}, {r['machine']})", "",
             f"`{r['command']}`; offline (IDF counted over each data set, exact weighted Jaccard, no Solr). "
             f"Restaurants: fodors x zagats join, one-to-one; person records: {r['records']:,} a seed, all pairs. "
             "Lowest: the lowest F1 over the data sets at one threshold.", "",
             "| tokens | best T | lowest F1 there | " + " | ".join(r["data"]) + " | T with lowest F1 >= 0.95 |",
             "|---|---:|---:|" + "---:|" * len(r["data"]) + "---|"]
    for kind, k in r["kinds"].items():
        s = k["summary"]
        ok = s["thresholds_all_at_least_0.95"]
        lines.append(f"| {kind} | {s['best_threshold']} | {s['best_lowest_f1']:.4f} | "
                     + " | ".join(f"{s['f1_at_best'][d]:.4f}" for d in r["data"])
                     + f" | {', '.join(ok) if ok else 'none'} |")
    lines += ["", "F1 by threshold (lowest over the data sets):", "",
              "| T | " + " | ".join(r["kinds"]) + " |", "|---:|" + "---:|" * len(r["kinds"])]
    for t in r["thresholds"]:
        lines.append(f"| {t} | " + " | ".join(
            f"{min(d[t]['f1'] for d in k['by_data'].values()):.4f}" for k in r["kinds"].values()) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=10_000, help="person records of each seed")
    ap.add_argument("--seeds", default="3,7", help="seeds of the person records, comma-separated")
    ap.add_argument("--kinds", default=",".join(KINDS), help=f"token kinds from {', '.join(KINDS)}")
    ap.add_argument("--min-threshold", type=float, default=0.3, help="the lowest threshold measured")
    ap.add_argument("--max-threshold", type=float, default=0.5)
    ap.add_argument("--out-dir", default=str(BENCH / "results"))
    ap.add_argument("--machine", default=None, help="machine tag of the result file names")
    args = ap.parse_args(argv)
    steps = round((args.max_threshold - args.min_threshold) / 0.01)
    thresholds = [round(args.min_threshold + 0.01 * i, 2) for i in range(steps + 1)]
    person_sets = {int(s): generate(args.records, seed=int(s)) for s in args.seeds.split(",")}
    report: dict = {"date": _dt.date.today().isoformat(), "machine": args.machine or machine_tag(),
                    "records": args.records, "thresholds": [f"{t:.2f}" for t in thresholds],
                    "command": "python -m benchmarks.recipe_tokens " + " ".join(argv if argv is not None else sys.argv[1:]),
                    "kinds": {}}
    for kind in args.kinds.split(","):
        by_data = measure(kind, person_sets, thresholds, args.min_threshold)
        report["kinds"][kind] = {"by_data": by_data, "summary": summary(by_data)}
        report["data"] = list(by_data)
    markdown = to_markdown(report)
    stem = write_results(args.out_dir, "recipe-tokens", report, markdown)
    log(f"wrote {stem}.{{json,md}}")
    print(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
