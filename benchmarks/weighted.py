"""Benchmark section ``weighted``: IDF-weighted Jaccard with ``--method lsh`` (weighted MinHash) against exact.

On generated person records (``benchmarks/persons.py``: names, addresses, dates of birth, phones; about a third of
the records are a mistyped second record of someone), indexed into a fresh local core:

- **estimator**: the weighted MinHash estimate against the exact weighted Jaccard, over the IDF weights of this
  corpus, for ICWS and write-up 001's integer boosts (scales 2, 4, 8), by similarity band; and signing speed
  (token -> weight maps a second, one process);
- **report**: ``report --threshold T --similarity idf`` over all records, exact (``threshold_pairs``, 2 workers)
  and lsh (``idf_lsh_pairs``): wall time, speed-up, recall of lsh against exact, and whether every similarity
  lsh reports equals exact's;
- **join**: half of the records indexed, the other half streamed (``join_pairs`` against ``idf_lsh_join``);
- **drift**: 90% of the records indexed and signed, then the other 10% added: how many pairs among the first
  90% change (appear or vanish) because the IDF moved, and the recall of a run that signs with the old snapshot;
- **recipe**: F1 of the README's record-matching recipe (IDF over words and their character 4-grams, T = 0.37) on
  the person records of two seeds (``--recipe-seeds``; report) and the restaurant data (fodors x zagats join,
  one-to-one), with both methods; the former recipe (IDF words >= 0.31) on the same index; F1 by threshold.

    flock /tmp/bench.lock python -m benchmarks.weighted                 # 10,000 records
    python -m benchmarks.weighted --records 2000 --join-records 2000    # a quick run
    flock /tmp/bench.lock python -m benchmarks.weighted --recipe        # the recipe section alone

``--scale`` measures size instead (no estimator, join, drift or recipe), on ``--records`` records indexed with
character 3-shingles (the plain-Jaccard setting of issue 11's person-record figures; IDF always uses words):

- ``report --threshold T --similarity idf --method lsh`` and plain ``report --threshold T2 --method lsh``, each as
  the CLI in a fresh child process: wall time and the child's own peak RSS (``os.wait4``), so nothing this
  process allocated (the generated records, the indexing) counts;
- with ``--exact-records M`` (M > 0), exact against lsh in this process, as the report section does, on the
  first M records (all of them when M = ``--records``; a sample when exact on all would take too long).

    flock /tmp/bench.lock python -m benchmarks.weighted --scale --records 100000 --exact-records 20000
    flock /tmp/bench.lock python -m benchmarks.weighted --scale --records 1000000 --exact-records 0

Results: ``benchmarks/results/<date>-weighted-<machine>.{json,md}``, with ``--scale``
``<date>-weighted-<records>-<machine>.{json,md}`` (e.g. ``100k``, ``1m``).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))

from benchmarks.persons import generate  # noqa: E402
from benchmarks.run import machine_tag  # noqa: E402
from benchmarks.provenance import write_result_files  # noqa: E402

# The README's record-matching recipe (see "Record matching recipe" there): IDF-weighted Jaccard over the words
# and their character 4-grams, chosen on the restaurant data and the person records of two seeds together.
RECIPE_THRESHOLD = 0.37
RECIPE_TOKENS = "grams"
# The recipe it replaced (IDF over words alone), measured beside it.
BASELINE_RECIPE_THRESHOLD = 0.31
# The thresholds of the recipe's F1-by-threshold table.
RECIPE_SWEEP = tuple(round(0.30 + 0.01 * i, 2) for i in range(21))


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _keyed(pairs) -> dict:
    return {(p.id, p.neighbor_id): p.similarity for p in pairs}


def _compare(exact, lsh) -> dict:
    e, w = _keyed(exact), _keyed(lsh)
    common = set(e) & set(w)
    return {"exact_pairs": len(e), "lsh_pairs": len(w), "recall": round(len(common) / max(len(e), 1), 5),
            "extra_pairs": len(set(w) - set(e)),
            "similarities_identical": all(e[p] == w[p] for p in common)}


def estimator_section(rows: list[dict], truth: list[tuple[str, str]], pairs_count: int, seed: int) -> dict:
    """Estimate vs exact weighted Jaccard over the corpus's own IDF (document frequencies counted here, with
    the index's tokeniser), for record pairs whose similarity spreads over [0, 1]; and signing speed."""
    from neardup_solr.text import Shingler
    from neardup_solr.text.weighted import BoostedMinHash, WeightedMinHash, estimate_weighted_jaccard
    from neardup_solr.pairs.weighted import weighted_jaccard

    shingler = Shingler()
    sets = [list(dict.fromkeys(shingler.process(r["text"]).words)) for r in rows]
    df: dict[str, int] = {}
    for s in sets:
        for t in s:
            df[t] = df.get(t, 0) + 1
    n = len(sets)
    idf = {t: math.log(n / d) for t, d in df.items()}
    rng = np.random.default_rng(seed)
    by_id = {r["id"]: i for i, r in enumerate(rows)}
    chosen = [(by_id[a], by_id[b]) for a, b in truth if a in by_id and b in by_id][: pairs_count // 2]
    while len(chosen) < pairs_count:  # and random pairs (mostly far apart)
        i, j = (int(x) for x in rng.integers(0, n, 2))
        chosen.append((i, j))
    maps = [{t: idf[t] for t in s if idf[t] > 0} or {s[0]: 1.0} for s in sets]
    exact = np.array([weighted_jaccard(maps[i].keys(), maps[j].keys(), {**maps[i], **maps[j]})
                      for i, j in chosen])
    bands = [(0.0, 0.2), (0.2, 0.4), (0.4, 0.6), (0.6, 0.8), (0.8, 1.01)]
    out: dict = {"pairs": len(chosen), "num_hashes": 128, "schemes": {}}
    signers: dict = {"icws": WeightedMinHash(128, seed=42)}
    for scale in (2, 4, 8):
        signers[f"boost x{scale}"] = BoostedMinHash(128, seed=42, scale=scale)
    for name, signer in signers.items():
        best = math.inf
        for _ in range(3):
            t0 = time.perf_counter()
            sigs = signer.signatures(maps)
            best = min(best, time.perf_counter() - t0)
        est = np.array([estimate_weighted_jaccard(sigs[i], sigs[j]) for i, j in chosen])
        err = est - exact
        table = {}
        for lo, hi in bands:
            sel = (exact >= lo) & (exact < hi)
            if sel.any():
                ref = float(np.mean(np.sqrt(exact[sel] * (1 - exact[sel]) / 128)))
                table[f"{lo:.1f}-{min(hi, 1.0):.1f}"] = {
                    "pairs": int(sel.sum()), "mae": round(float(np.mean(np.abs(err[sel]))), 4),
                    "bias": round(float(np.mean(err[sel])), 4), "binomial_sd": round(ref, 4)}
        out["schemes"][name] = {"mae": round(float(np.mean(np.abs(err))), 4),
                                "rmse": round(float(np.sqrt(np.mean(err ** 2))), 4),
                                "bias": round(float(np.mean(err)), 4),
                                "sign_docs_per_s": round(len(maps) / best), "by_similarity": table}
        log(f"  estimator {name}: mae {out['schemes'][name]['mae']}, {out['schemes'][name]['sign_docs_per_s']} docs/s")
    return out


def _index(client, rows, dataset=None):
    from neardup_solr.solr.indexer import Indexer

    return Indexer(client, dataset=dataset).index_records([(r["id"], r["text"]) for r in rows])


def report_section(client, threshold: float, workers: int) -> dict:
    from neardup_solr.solr.searcher import Searcher
    from neardup_solr.engine.threshold import ThresholdFinder, threshold_pairs
    from neardup_solr.engine.weighted_lsh import idf_lsh_pairs

    searcher = Searcher(client)
    t0 = time.perf_counter()
    exact = threshold_pairs(ThresholdFinder(searcher, threshold=threshold, similarity="idf"), workers=workers)
    exact_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    result = idf_lsh_pairs(ThresholdFinder(searcher, threshold=threshold, similarity="idf"))
    lsh_s = time.perf_counter() - t0
    out = {"threshold": threshold, "exact_s": round(exact_s, 2), "lsh_s": round(lsh_s, 2),
           "speedup": round(exact_s / lsh_s, 1), **_compare(exact, result.pairs),
           "bands": f"{result.stats.bands}x{result.stats.rows}", "candidates": result.stats.candidate_pairs,
           "lsh_phases_s": result.stats.seconds}
    log(f"  report: exact {exact_s:.1f} s, lsh {lsh_s:.2f} s, recall {out['recall']}")
    return out


def join_section(client, left_rows, right_rows, threshold: float, workers: int) -> dict:
    from neardup_solr.solr.maintenance import clear
    from neardup_solr.solr.searcher import Searcher
    from neardup_solr.engine.threshold import ThresholdFinder, join_pairs
    from neardup_solr.engine.weighted_lsh import idf_lsh_join

    clear(client, everything=True)
    _index(client, right_rows, dataset="right")
    searcher = Searcher(client)
    streamed = [(r["id"], r["text"]) for r in left_rows]
    t0 = time.perf_counter()
    exact = join_pairs(ThresholdFinder(searcher, threshold=threshold, similarity="idf"), streamed,
                       indexed_dataset="right", workers=workers)
    exact_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    result = idf_lsh_join(ThresholdFinder(searcher, threshold=threshold, similarity="idf"), streamed,
                          indexed_dataset="right")
    lsh_s = time.perf_counter() - t0
    out = {"threshold": threshold, "streamed": len(left_rows), "indexed": len(right_rows),
           "exact_s": round(exact_s, 2), "lsh_s": round(lsh_s, 2), "speedup": round(exact_s / lsh_s, 1),
           **_compare(exact, result.pairs), "candidates": result.stats.candidate_pairs}
    log(f"  join: exact {exact_s:.1f} s, lsh {lsh_s:.2f} s, recall {out['recall']}")
    return out


def drift_section(client, rows, threshold: float) -> dict:
    from neardup_solr.solr.maintenance import clear
    from neardup_solr.solr.searcher import Searcher
    from neardup_solr.engine.threshold import ThresholdFinder
    from neardup_solr.engine.weighted_lsh import idf_lsh_pairs

    clear(client, everything=True)
    cut = int(len(rows) * 10 / 11)  # the last tenth of the first part's size is added later: +10%
    first, added = rows[:cut], rows[cut:]
    _index(client, first)
    before = idf_lsh_pairs(ThresholdFinder(Searcher(client), threshold=threshold, similarity="idf"))
    _index(client, added)
    searcher = Searcher(client)
    old_ids = {r["id"] for r in first}
    after = idf_lsh_pairs(ThresholdFinder(searcher, threshold=threshold, similarity="idf"))
    stale = idf_lsh_pairs(ThresholdFinder(searcher, threshold=threshold, similarity="idf"), snapshot=before.snapshot)
    b = set(_keyed(before.pairs))
    a_old = {p for p in _keyed(after.pairs) if p[0] in old_ids and p[1] in old_ids}
    sims_b, sims_a = _keyed(before.pairs), _keyed(after.pairs)
    moved = [abs(sims_a[p] - sims_b[p]) for p in b & a_old]
    out = {"threshold": threshold, "documents_before": len(first), "documents_added": len(added),
           "pairs_before": len(b), "pairs_after_among_old": len(a_old), "appeared": len(a_old - b),
           "vanished": len(b - a_old), "changed_share": round(len(a_old ^ b) / max(len(b), 1), 4),
           "mean_abs_similarity_change": round(float(np.mean(moved)) if moved else 0.0, 4),
           "stale_snapshot_recall": _compare(after.pairs, stale.pairs)["recall"]}
    log(f"  drift: {out}")
    return out


def _score(pairs, gold) -> dict:
    from neardup_solr.pairs.evaluate import evaluate

    e = evaluate([(p.id, p.neighbor_id) for p in pairs], gold)
    return {"pairs": len(pairs), "precision": round(e.precision, 4), "recall": round(e.recall, 4),
            "f1": round(e.f1, 4)}


def _sweep_f1(pairs, gold, thresholds, one_to_one: bool) -> dict:
    """F1 at each threshold from one exact run at the lowest: the pairs at T are those of that run with similarity
    >= T, with the same similarities (one-to-one is applied after the cut, as a run at T applies it)."""
    from neardup_solr.pairs.similar_pairs import one_to_one as greedy

    out = {}
    for t in thresholds:
        kept = [p for p in pairs if p.similarity >= t - 1e-12]
        out[f"{t:.2f}"] = _score(greedy(kept) if one_to_one else kept, gold)["f1"]
    return out


def recipe_section(client, person_sets: dict[int, tuple[list[dict], list]], threshold: float, workers: int,
                   baseline_threshold: float = BASELINE_RECIPE_THRESHOLD,
                   sweep: tuple[float, ...] = RECIPE_SWEEP) -> dict:
    """The README's recipe (IDF over words and their character 4-grams, ``idf_tokens="grams"``, >= threshold) on
    the person records of every seed in ``person_sets`` (report) and on the restaurant data (fodors x zagats join,
    one-to-one), with the exact method and with lsh; beside it the former recipe (IDF word Jaccard >=
    ``baseline_threshold``, exact) on the same index, and the F1 of the grams recipe at every threshold of
    ``sweep`` (from one exact run at the lowest)."""
    from neardup_solr.solr.documents import DEFAULT_TOKEN_FIELDS, IndexSettings
    from neardup_solr.pairs.evaluate import read_pairs
    from neardup_solr.solr.indexer import Indexer
    from neardup_solr.solr.maintenance import clear
    from neardup_solr.io.restaurants import _read_guides, fodors_path, gold_pairs_path, zagats_path
    from neardup_solr.solr.searcher import Searcher
    from neardup_solr.engine.threshold import ThresholdFinder, join_pairs, threshold_pairs
    from neardup_solr.engine.weighted_lsh import idf_lsh_join, idf_lsh_pairs

    # One index holds both token kinds, so the former recipe is measured on the very same documents.
    settings = IndexSettings(fields=(*DEFAULT_TOKEN_FIELDS, "grams"))
    low = min(sweep)

    def finder(searcher, t: float, tokens: str = RECIPE_TOKENS) -> ThresholdFinder:
        return ThresholdFinder(searcher, threshold=t, similarity="idf", idf_tokens=tokens)

    out: dict = {"threshold": threshold, "similarity": "idf", "tokens": RECIPE_TOKENS,
                 "baseline": {"threshold": baseline_threshold, "tokens": "words"}, "persons": {}, "sweep": {}}
    for seed, (rows, truth) in person_sets.items():
        clear(client, everything=True)
        Indexer(client, settings).index_records([(r["id"], r["text"]) for r in rows])
        searcher = Searcher(client)
        t0 = time.perf_counter()
        exact = threshold_pairs(finder(searcher, threshold), workers=workers)
        exact_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        lsh = idf_lsh_pairs(finder(searcher, threshold)).pairs
        lsh_s = time.perf_counter() - t0
        baseline = threshold_pairs(finder(searcher, baseline_threshold, "words"), workers=workers)
        wide = threshold_pairs(finder(searcher, low), workers=workers)
        key = f"seed {seed}"
        out["persons"][key] = {"records": len(rows), "true_pairs": len(truth),
                               "exact": {**_score(exact, truth), "seconds": round(exact_s, 2)},
                               "lsh": {**_score(lsh, truth), "seconds": round(lsh_s, 2)},
                               "baseline_exact": _score(baseline, truth)}
        out["sweep"][f"persons, {key}"] = _sweep_f1(wide, truth, sweep, one_to_one=False)
        log(f"  recipe persons {key}: {out['persons'][key]}")

    clear(client, everything=True)
    fodors, zagats = _read_guides(fodors_path(), zagats_path())
    Indexer(client, settings, dataset="fodors").index_records([(str(i), t) for i, t in fodors])
    Indexer(client, settings, dataset="zagats").index_records([(str(i), t) for i, t in zagats])
    searcher = Searcher(client)
    gold = read_pairs(gold_pairs_path())
    streamed = [(str(i), t) for i, t in fodors]
    t0 = time.perf_counter()
    exact = join_pairs(finder(searcher, threshold), streamed, indexed_dataset="zagats", one_to_one=True,
                       workers=workers)
    exact_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    lsh = idf_lsh_join(finder(searcher, threshold), streamed, indexed_dataset="zagats", one_to_one=True).pairs
    lsh_s = time.perf_counter() - t0
    baseline = join_pairs(finder(searcher, baseline_threshold, "words"), streamed, indexed_dataset="zagats",
                          one_to_one=True, workers=workers)
    wide = join_pairs(finder(searcher, low), streamed, indexed_dataset="zagats", workers=workers)
    out["restaurants"] = {"exact": {**_score(exact, gold), "seconds": round(exact_s, 2)},
                          "lsh": {**_score(lsh, gold), "seconds": round(lsh_s, 2)},
                          "baseline_exact": _score(baseline, gold)}
    out["sweep"]["restaurants"] = _sweep_f1(wide, gold, sweep, one_to_one=True)
    log(f"  recipe restaurants: {out['restaurants']}")
    return out


def to_markdown(r: dict) -> str:
    lines = [f"# weighted MinHash: IDF matching with --method lsh ({r['date']}, {r['machine']})", "",
             f"`{r['command']}`; Solr on the same machine (shared with other work: timings are upper bounds).", ""]
    est = r["estimator"]
    lines += [f"## Estimator error ({est['pairs']} record pairs, IDF weights, {est['num_hashes']} values)", "",
              "| scheme | mean abs error | RMSE | bias | signing, maps/s |", "|---|---:|---:|---:|---:|"]
    for name, s in est["schemes"].items():
        lines.append(f"| {name} | {s['mae']} | {s['rmse']} | {s['bias']} | {s['sign_docs_per_s']:,} |")
    lines += ["", "By exact similarity (ICWS; binomial sd = mean sqrt(J(1-J)/k)):", "",
              "| weighted Jaccard | pairs | mean abs error | bias | binomial sd |", "|---|---:|---:|---:|---:|"]
    for band, s in est["schemes"]["icws"]["by_similarity"].items():
        lines.append(f"| {band} | {s['pairs']} | {s['mae']} | {s['bias']} | {s['binomial_sd']} |")
    rep, join = r["report"], r["join"]
    lines += ["", f"## IDF threshold report and join, T = {rep['threshold']}", "",
              "| run | records | exact, s | lsh, s | speed-up | exact pairs | recall | similarities identical |",
              "|---|---|---:|---:|---:|---:|---:|---|",
              f"| report | {r['records']:,} | {rep['exact_s']} | {rep['lsh_s']} | {rep['speedup']}x | "
              f"{rep['exact_pairs']:,} | {rep['recall']} | {'yes' if rep['similarities_identical'] else 'NO'} |",
              f"| join | {join['streamed']:,} x {join['indexed']:,} | {join['exact_s']} | {join['lsh_s']} | "
              f"{join['speedup']}x | {join['exact_pairs']:,} | {join['recall']} | "
              f"{'yes' if join['similarities_identical'] else 'NO'} |"]
    d = r["drift"]
    lines += ["", "## IDF drift: 10% more records", "",
              f"{d['documents_before']:,} records, then {d['documents_added']:,} more. Pairs among the first ones at "
              f"T = {d['threshold']}: {d['pairs_before']:,} before, {d['pairs_after_among_old']:,} after "
              f"({d['appeared']} appeared, {d['vanished']} vanished: {d['changed_share']:.2%} changed; similarities "
              f"moved by {d['mean_abs_similarity_change']} on average). Signing with the old snapshot after the "
              f"growth finds {d['stale_snapshot_recall']} of the pairs a fresh run finds."]
    lines += recipe_markdown(r["recipe"])
    return "\n".join(lines) + "\n"


def recipe_markdown(rc: dict) -> list[str]:
    base = rc["baseline"]
    lines = ["", f"## Record matching recipe: IDF over words and their character 4-grams >= {rc['threshold']}", "",
             f"`--similarity idf --idf-tokens {rc['tokens']} --threshold {rc['threshold']}` on an index with "
             f"`--fields shingles,minhash,lsh,words,grams`; the restaurants joined one-to-one. The last column is "
             f"the former recipe (IDF over words alone >= {base['threshold']}, exact) on the same index.", "",
             "| data | method | pairs | precision | recall | F1 | seconds | former recipe F1 |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    rows = [(f"person records ({p['records']:,}, {key}), report", p) for key, p in rc["persons"].items()]
    rows.append(("restaurants, fodors x zagats join, one-to-one", rc["restaurants"]))
    for label, data in rows:
        for m in ("exact", "lsh"):
            s = data[m]
            lines.append(f"| {label} | {m} | {s['pairs']} | {s['precision']} | {s['recall']} | {s['f1']} | "
                         f"{s['seconds']} | {data['baseline_exact']['f1'] if m == 'exact' else ''} |")
    names = list(rc["sweep"])
    lines += ["", "F1 by threshold (grams, exact; each column from one run at the lowest threshold):", "",
              "| T | " + " | ".join(names) + " | lowest |", "|---:|" + "---:|" * (len(names) + 1)]
    for t in next(iter(rc["sweep"].values())):
        f1s = [rc["sweep"][n][t] for n in names]
        lines.append(f"| {t} | " + " | ".join(f"{f:.4f}" for f in f1s) + f" | {min(f1s):.4f} |")
    return lines


def _recipe_run(client, rows, truth, args) -> dict:
    log("recipe")
    seeds = [int(x) for x in args.recipe_seeds.split(",")]
    person_sets = {seed: (rows, truth) if seed == args.seed else generate(args.records, seed=seed) for seed in seeds}
    return recipe_section(client, person_sets, args.recipe_threshold, args.workers)


def recipe_only_markdown(r: dict) -> str:
    lines = [f"# record matching recipe ({r['date']}, {r['machine']})", "",
             f"`{r['command']}`; Solr on the same machine (shared with other work: timings are upper bounds)."]
    return "\n".join(lines + recipe_markdown(r["recipe"])) + "\n"


def _size_tag(n: int) -> str:
    if n % 1_000_000 == 0:
        return f"{n // 1_000_000}m"
    return f"{n // 1000}k" if n % 1000 == 0 else str(n)


def _child_report(solr_url: str, args: list[str], out: Path, timeout: float) -> dict:
    """One ``neardup-solr report`` as its own process: wall time, peak RSS, and its JSON summary. A run still
    going after ``timeout`` seconds is killed and recorded as such (with its peak RSS so far)."""
    cmd = [sys.executable, "-m", "neardup_solr.cli", "report", *args, "--out", str(out), "--json", "-q",
           "--solr-url", solr_url, "--timeout", "600"]
    shown = "neardup-solr report " + " ".join(args) + f" --out {out.name}"
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as stdout, tempfile.TemporaryFile("w+") as stderr:
        proc = subprocess.Popen(cmd, stdout=stdout, stderr=stderr, text=True)
        timed_out = False
        while True:
            # wait4 gives this child's own rusage; ru_maxrss of RUSAGE_CHILDREN would be the largest of all
            # children this process ever waited for.
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - t0 > timeout and not timed_out:
                proc.kill()
                timed_out = True
            time.sleep(0.2)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        stdout.seek(0)
        stderr.seek(0)
        out_text, err_text = stdout.read(), stderr.read()
    for leftover in out.parent.glob(out.name + "*"):  # the pairs, the IDF snapshot beside them, OUT.partial
        leftover.unlink()
    rss = round(usage.ru_maxrss / 1024, 1)
    if timed_out:
        return {"command": shown, "timed_out_after_s": round(wall, 1), "peak_rss_mib": rss}
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {err_text[-2000:]}")
    summary = json.loads([line for line in out_text.splitlines() if line.startswith("{")][-1])
    return {"command": shown, "wall_s": round(wall, 2), "reported_s": summary["seconds"],
            "pairs": summary["pairs"], "peak_rss_mib": rss}


def scale_sections(client, solr_url: str, rows: list[dict], args, out: dict, save: Callable[[], None]) -> None:
    """Fills ``out`` and calls ``save`` after each measurement: a 1M run takes most of an hour, and what was
    measured before a failure (or a time limit) is kept."""
    from neardup_solr.solr.documents import IndexSettings
    from neardup_solr.solr.indexer import Indexer
    from neardup_solr.solr.maintenance import clear

    settings = IndexSettings(unit="char", ngram=3)
    clear(client, everything=True)
    t0 = time.perf_counter()
    Indexer(client, settings).index_records([(r["id"], r["text"]) for r in rows])
    out["index_s"] = round(time.perf_counter() - t0, 1)
    log(f"  indexed {len(rows)} records in {out['index_s']} s")
    save()
    work = Path(tempfile.mkdtemp(prefix="neardup-weighted-scale-"))
    try:
        # Plain first: at 1M records it is the run expected to finish.
        out["plain_lsh"] = _child_report(solr_url, ["--threshold", str(args.plain_threshold), "--method", "lsh"],
                                         work / "plain.tsv", args.child_timeout)
        log(f"  plain lsh: {out['plain_lsh']}")
        save()
        out["idf_lsh"] = _child_report(solr_url, ["--threshold", str(args.threshold), "--similarity", "idf",
                                                  "--method", "lsh"], work / "idf.tsv", args.child_timeout)
        log(f"  idf lsh: {out['idf_lsh']}")
        save()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.exact_records:
        sample = rows[: args.exact_records]
        if len(sample) < len(rows):  # rows are shuffled, so the first M are a random sample
            clear(client, everything=True)
            Indexer(client, settings).index_records([(r["id"], r["text"]) for r in sample])
        log(f"  exact vs lsh on {len(sample)} records")
        out["exact_vs_lsh"] = {"records": len(sample), **report_section(client, args.threshold, args.workers)}


def scale_markdown(r: dict) -> str:
    s = r["scale"]
    load = ", ".join(f"{x:.2f}" for x in r["loadavg_before"])
    load_after = ", ".join(f"{x:.2f}" for x in r.get("loadavg_after", os.getloadavg()))
    lines = [f"# weighted MinHash at {r['records']:,} person records ({r['date']}, {r['machine']})", "",
             f"`{r['command']}`; Solr (heap {r['solr_heap']}) on the same machine, shared with other work: load "
             f"average (1, 5, 15 min) {load} before, {load_after} after; timings are upper bounds.", "",
             f"Indexing {r['records']:,} records (character 3-shingles, 128 values): {s.get('index_s', '-')} s.", "",
             "Each run is the CLI in a fresh process; peak RSS is that process's own (the client; Solr not "
             "counted).", "",
             "| run | pairs | wall, s | peak RSS, MiB |", "|---|---:|---:|---:|"]
    for key in ("idf_lsh", "plain_lsh"):
        if key not in s:
            lines.append(f"| {key}: not measured | | | |")
            continue
        c = s[key]
        if "timed_out_after_s" in c:
            lines.append(f"| `{c['command']}` | killed unfinished | > {c['timed_out_after_s']} | "
                         f"{c['peak_rss_mib']} (when killed) |")
        else:
            lines.append(f"| `{c['command']}` | {c['pairs']:,} | {c['wall_s']} | {c['peak_rss_mib']} |")
    if "exact_vs_lsh" in s:
        e = s["exact_vs_lsh"]
        sample = ("all records" if e["records"] == r["records"]
                  else f"a sample of the first {e['records']:,} of the shuffled records (exact on all would take too long)")
        lines += ["", f"## IDF report, exact against lsh, T = {e['threshold']}, on {sample}", "",
                  "| records | exact, s | lsh, s | speed-up | exact pairs | lsh pairs | recall | similarities identical |",
                  "|---:|---:|---:|---:|---:|---:|---:|---|",
                  f"| {e['records']:,} | {e['exact_s']} | {e['lsh_s']} | {e['speedup']}x | {e['exact_pairs']:,} | "
                  f"{e['lsh_pairs']:,} | {e['recall']} | {'yes' if e['similarities_identical'] else 'NO'} |"]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=10_000, help="person records of the report")
    ap.add_argument("--join-records", type=int, default=10_000, help="records split in two halves for the join")
    ap.add_argument("--threshold", type=float, default=0.4)
    ap.add_argument("--recipe-threshold", type=float, default=RECIPE_THRESHOLD)
    ap.add_argument("--recipe", action="store_true",
                    help="the recipe section only, written to <date>-weighted-recipe-<machine>.{json,md}")
    ap.add_argument("--recipe-seeds", default="3,7",
                    help="seeds of the person records the recipe is measured on (--records each), comma-separated")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--port", type=int, default=8995)
    ap.add_argument("--out-dir", default=str(BENCH / "results"))
    ap.add_argument("--solr-url", default=None, help="use this core (it is cleared!) instead of starting a Solr")
    ap.add_argument("--machine", default=None, help="machine tag of the result file names")
    ap.add_argument("--scale", action="store_true", help="the size sections only (see the module docstring)")
    ap.add_argument("--exact-records", type=int, default=0,
                    help="--scale: compare exact with lsh on the first this many records (0: no exact run)")
    ap.add_argument("--plain-threshold", type=float, default=0.5,
                    help="--scale: threshold of the plain-Jaccard report on character 3-shingles")
    ap.add_argument("--heap", default="4g", help="heap of the Solr this script starts")
    ap.add_argument("--child-timeout", type=float, default=3600.0,
                    help="--scale: kill a child report still running after this many seconds (recorded as such)")
    args = ap.parse_args(argv)

    from neardup_solr.solr.backends.local import LocalSolr
    from neardup_solr.solr.maintenance import clear
    from neardup_solr.solr.client import SolrClient

    t0 = time.perf_counter()
    rows, truth = generate(args.records, seed=args.seed)
    log(f"generated {len(rows)} records in {time.perf_counter() - t0:.1f} s")
    report: dict = {"date": _dt.date.today().isoformat(), "machine": args.machine or machine_tag(),
                    "records": len(rows),
                    "command": "python -m benchmarks.weighted " + " ".join(argv if argv is not None else sys.argv[1:])}
    if not args.scale and not args.recipe:
        log("estimator")
        report["estimator"] = estimator_section(rows, truth, 2000, args.seed)
    data_dir = Path(tempfile.mkdtemp(prefix="neardup-weighted-bench-"))
    solr = None if args.solr_url else LocalSolr(port=args.port, data_dir=data_dir, heap=args.heap)
    if solr is not None:
        solr.start()
    url: str = args.solr_url if solr is None else solr.core_url
    report["solr_heap"] = args.heap if solr is not None else "external"
    report["loadavg_before"] = [round(x, 2) for x in os.getloadavg()]
    scale_name = f"{report['date']}-weighted-{_size_tag(len(rows))}-{report['machine']}"
    try:
        with SolrClient(url, timeout=600) as client:
            if args.scale:
                report["scale"] = {}
                scale_sections(client, url, rows, args, report["scale"],
                               lambda: _write(report, args, scale_name, scale_markdown(report)))
            elif args.recipe:
                report["recipe"] = _recipe_run(client, rows, truth, args)
            else:
                clear(client, everything=True)
                _index(client, rows)
                log(f"report, {len(rows)} records")
                report["report"] = report_section(client, args.threshold, args.workers)
                join_rows, _ = generate(args.join_records, seed=args.seed)
                half = len(join_rows) // 2
                log(f"join, {half} x {len(join_rows) - half}")
                report["join"] = join_section(client, join_rows[:half], join_rows[half:], args.threshold, args.workers)
                log("drift")
                report["drift"] = drift_section(client, rows, args.threshold)
                report["recipe"] = _recipe_run(client, rows, truth, args)
    finally:
        report["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
        if solr is not None:
            solr.stop()
        shutil.rmtree(data_dir, ignore_errors=True)
    if args.recipe:
        markdown = recipe_only_markdown(report)
        name = f"{report['date']}-weighted-recipe-{report['machine']}"
    else:
        markdown = scale_markdown(report) if args.scale else to_markdown(report)
        name = scale_name if args.scale else f"{report['date']}-weighted-{report['machine']}"
    _write(report, args, name, markdown)
    print(markdown)
    return 0


def _write(report: dict, args, name: str, markdown: str) -> None:
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = out_dir / name
    write_result_files(stem, report, markdown)
    log(f"wrote {stem}.{{json,md}}")


if __name__ == "__main__":
    sys.exit(main())
