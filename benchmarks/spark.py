"""Benchmark section ``spark``: Spark dedup (neardup_solr.spark) side by side with ``report --threshold 0.8
--method lsh`` (the Solr collection dedup) on the same generated corpus, in the same run.

    flock /tmp/bench.lock python -m benchmarks.spark --docs 100000 --solr-url http://127.0.0.1:8983/solr/neardup

Steps: generate the corpus (benchmarks/corpus.py; reused when DIR/docs.jsonl is there), the exact ground
truth (benchmarks/exact_pairs.py), then the Solr side (index with ``--fields lsh``, then
``dedupe_collection``), then the Spark side in this process (driver) with ``--master`` (default local[2]):
read the JSONL, sign, band join, verify, and the pairs file the executors write. A sampler thread reads the RSS of the process tree every
0.2 s: this Python process (the Spark driver's Python side), the JVM (driver and, in local mode, the
executors) and the Python workers the JVM starts. Spark's own metrics (stages, shuffle bytes, cached
bytes) come from its REST API. Results: ``benchmarks/results/<date>-spark-<docs>.{json,md}``.

``--groups executors`` also times ``spark dedup --groups --keep`` after the pairs (neardup_solr/spark/groups.py:
the components, the groups file and the keep list on the executors) with each process's peak memory in that
phase; ``--groups both`` adds the union-find on the driver it replaced, for comparison.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import threading
import time
import urllib.request
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.corpus import generate  # noqa: E402
from benchmarks.exact_pairs import pairs_path  # noqa: E402
from neardup_solr.pairs.similar_pairs import SimilarPair  # noqa: E402
from benchmarks.provenance import write_result_files  # noqa: E402

THRESHOLD = 0.8
ROOT = Path(__file__).resolve().parents[1]


class TreeRSS:
    """Peak RSS (MiB) of this process (or of ``process``: a ``psutil.Process``, e.g. a ``spark dedup`` command's),
    its JVM child(ren) and the JVM's Python workers, sampled in a thread."""

    def __init__(self, interval: float = 0.2, process=None):
        import psutil

        self.me = process or psutil.Process()
        self.peaks = {"driver_python": 0.0, "jvm": 0.0, "python_workers": 0.0, "total": 0.0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(interval,), daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        import psutil

        try:
            mine = self.me.memory_info().rss
        except psutil.Error:  # the process sampled has ended
            return
        jvm = workers = 0
        for child in self.me.children(recursive=True):
            try:
                rss = child.memory_info().rss
                if "java" in child.name():
                    jvm += rss
                else:
                    workers += rss
            except psutil.Error:
                continue
        for key, value in (("driver_python", mine), ("jvm", jvm), ("python_workers", workers),
                           ("total", mine + jvm + workers)):
            self.peaks[key] = max(self.peaks[key], value / 2**20)

    def _run(self, interval: float) -> None:
        while not self._stop.is_set():
            self._sample()
            time.sleep(interval)

    def stop(self) -> dict:
        self._stop.set()
        self._thread.join()
        return {f"peak_{k}_mib": round(v, 1) for k, v in self.peaks.items()}


def recall_precision(found: set, truth: set) -> dict:
    hit = len(found & truth)
    return {"pairs": len(found), "truth_pairs": len(truth), "recall": round(hit / len(truth), 5) if truth else None,
            "precision": round(hit / len(found), 5) if found else None}


def spark_metrics(spark) -> dict:
    """Stages, shuffle and input bytes and cached bytes of the application, from Spark's REST API."""
    sc = spark.sparkContext
    base = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}"

    def get(path: str):
        with urllib.request.urlopen(base + path, timeout=30) as r:
            return json.load(r)

    stages = [s for s in get("/stages?status=complete")]
    rdds = get("/storage/rdd")
    total = {k: sum(int(s.get(k, 0)) for s in stages)
             for k in ("shuffleWriteBytes", "shuffleReadBytes", "inputBytes", "outputBytes", "executorRunTime")}
    heavy = sorted(stages, key=lambda s: -int(s.get("executorRunTime", 0)))[:8]
    # The jobs name their phases (``neardup: sign``, ...: spark/jobs.py ``_stage``): task time per phase.
    phases: dict[str, dict] = {}
    for st in stages:
        name = st.get("name", "").split(" at ")[0]
        phase = phases.setdefault(name, {"stages": 0, "run_ms": 0, "wall_ms": 0, "shuffle_write_bytes": 0})
        phase["stages"] += 1
        phase["run_ms"] += int(st.get("executorRunTime", 0))
        phase["wall_ms"] += stage_wall_ms(st)
        phase["shuffle_write_bytes"] += int(st.get("shuffleWriteBytes", 0))
    return {"stages": len(stages), **total,
            "cached_memory_bytes": sum(int(r.get("memoryUsed", 0)) for r in rdds),
            "cached_disk_bytes": sum(int(r.get("diskUsed", 0)) for r in rdds),
            "phases": dict(sorted(phases.items(), key=lambda kv: -kv[1]["run_ms"])),
            "timeline": [{"name": st.get("name", "")[:60], "submitted": st.get("submissionTime"),
                          "wall_ms": stage_wall_ms(st), "run_ms": int(st.get("executorRunTime", 0)),
                          "tasks": st.get("numTasks")}
                         for st in sorted(stages, key=lambda st: st.get("submissionTime") or "")],
            "heaviest_stages": [{"name": s.get("name", "")[:60], "tasks": s.get("numTasks"),
                                 "shuffle_write_bytes": int(s.get("shuffleWriteBytes", 0)),
                                 "shuffle_read_bytes": int(s.get("shuffleReadBytes", 0)),
                                 "run_ms": int(s.get("executorRunTime", 0))} for s in heavy]}


def stage_wall_ms(stage: dict) -> int:
    """From a stage's submission to its completion (Spark's REST API times, e.g. ``2026-11-26T01:54:01.123GMT``)."""
    def parse(value: str) -> dt.datetime:
        return dt.datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%fGMT")

    if not stage.get("submissionTime") or not stage.get("completionTime"):
        return 0
    return int((parse(stage["completionTime"]) - parse(stage["submissionTime"])).total_seconds() * 1000)


def run_solr(solr_url: str, docs_path: Path, truth: set) -> dict:
    from neardup_solr.solr.documents import IndexSettings
    from neardup_solr.solr.indexer import Indexer
    from neardup_solr.solr.client import SolrClient

    client = SolrClient(solr_url, timeout=600)
    client.delete_all()
    t0 = time.perf_counter()
    summary = Indexer(client, IndexSettings(fields=("lsh",)), batch_size=1000).index_file(docs_path, "jsonl")
    index_s = time.perf_counter() - t0
    dedup = solr_dedup_in_child(solr_url)
    found = {(a, b) for a, b, _ in dedup["pair_list"]}
    return {"index_seconds": round(index_s, 2), "indexed": summary.indexed, **dedup,
            **recall_precision(found, truth)}


def solr_dedup_in_child(solr_url: str) -> dict:
    """``dedupe_collection`` in a fresh Python process, so that its peak RSS is its own: in this process the
    high-water mark already holds the corpus and the exact ground truth (at 1M documents, about 8 GiB)."""
    code = (
        "import json, resource, sys, time\n"
        "from neardup_solr.engine.collection import dedupe_collection\n"
        "from neardup_solr.solr.client import SolrClient\n"
        "t0 = time.perf_counter()\n"
        f"result = dedupe_collection(SolrClient(sys.argv[1], timeout=600), {THRESHOLD})\n"
        "seconds = time.perf_counter() - t0\n"
        "json.dump({'dedup_seconds': round(seconds, 2), 'client_peak_rss_mib': "
        "round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1), "
        "'candidates': result.stats.candidate_pairs, "
        "'pair_list': sorted((p.id, p.neighbor_id, p.similarity) for p in result.pairs)}, sys.stdout)\n")
    import subprocess

    proc = subprocess.run([sys.executable, "-c", code, solr_url], capture_output=True, text=True, cwd=ROOT,
                          check=True)
    out = json.loads(proc.stdout)
    # As the pairs file writes them (the Spark side is read back from its file): six decimals.
    out["pair_list"] = [(a, b, float(f"{s:.6f}")) for a, b, s in out["pair_list"]]
    return out


def run_groups(result, staging: str, on_driver: bool) -> dict:
    """``spark dedup --groups --keep`` after the pairs: the groups and keep list computed and written by the
    executors (neardup_solr/spark/groups.py), timed, with the peak memory of each process during this phase
    only and the driver's Python RSS before it (flat: it never holds a pair or an id). ``on_driver``: also the
    union-find over the pairs streamed to the driver that it replaced, for comparison."""
    import psutil

    from neardup_solr.spark.groups import executor_groups, write_groups_from_executors
    from neardup_solr.spark.io import write_keep_list_from_executors

    before = round(psutil.Process().memory_info().rss / 2**20, 1)
    rss = TreeRSS()
    t0 = time.perf_counter()
    groups = executor_groups(result.pairs)
    write_groups_from_executors(groups, Path(staging) / "groups.jsonl", staging)
    kept = write_keep_list_from_executors(result.signed, groups.dropped, Path(staging) / "keep.txt", staging)
    out: dict = {"seconds": round(time.perf_counter() - t0, 2), "groups": groups.count,
                 "grouped_ids": groups.members_count, "rounds": groups.rounds, "kept": kept,
                 "driver_python_rss_before_mib": before, **rss.stop()}
    if on_driver:
        from neardup_solr.pairs.groups import group_pairs

        before = round(psutil.Process().memory_info().rss / 2**20, 1)
        rss = TreeRSS()
        t0 = time.perf_counter()
        found = group_pairs((r["id"], r["neighbor_id"], round(1.0 - float(r["similarity"]), 6))
                            for r in result.pairs.toLocalIterator())
        out["on_driver"] = {"seconds": round(time.perf_counter() - t0, 2), "groups": len(found),
                            "driver_python_rss_before_mib": before, **rss.stop()}
        del found
    return out


def run_spark(master: str, docs_path: Path, truth: set, driver_memory: str, partitions: int,
              similarity: str = "jaccard", read_on: str = "auto", groups: str | None = None) -> dict:
    import tempfile

    from neardup_solr.spark import dedup_file, spark_session
    from neardup_solr.spark.io import write_pairs_from_executors
    from neardup_solr.validation import parse_tsv_id

    rss = TreeRSS()
    t0 = time.perf_counter()
    spark = spark_session(master, shuffle_partitions=partitions, driver_memory=driver_memory,
                          config={"spark.ui.enabled": "true"})
    start_s = time.perf_counter() - t0
    with tempfile.TemporaryDirectory(prefix="spark-bench-") as staging:
        t1 = time.perf_counter()
        # As `spark dedup FILE` runs it: read and signed by the same tasks when the executors read the file.
        result, source = dedup_file(spark, docs_path, THRESHOLD, fmt="jsonl", staging_dir=staging, read_on=read_on,
                                    similarity=similarity)
        read_sign_s = result.stats.seconds.get("sign", 0.0) + result.stats.seconds.get("tokens", 0.0)
        pairs_file = Path(staging) / "pairs.tsv"
        write_pairs_from_executors(result.pairs, pairs_file, staging)  # as `spark dedup --out` writes it
        job_s = time.perf_counter() - t1
        memory = rss.stop()  # before the pairs are read back here for recall
        grouped = run_groups(result, staging, groups == "both") if groups else None
        with open(pairs_file, encoding="utf-8") as fh:
            rows = [line.rstrip("\n").split("\t") for line in fh if not line.startswith("#")]
    pairs = [SimilarPair(parse_tsv_id(a), parse_tsv_id(b), float(sim)) for a, b, sim in rows]
    metrics = spark_metrics(spark)
    spark.stop()
    found = {(p.id, p.neighbor_id) for p in pairs}
    n = result.stats.documents
    return {"master": master, "similarity": similarity, "driver_memory": driver_memory, "shuffle_partitions": partitions,
            "read_on": "executors, in byte ranges" if read_on == "executors" or (
                read_on == "auto" and master.startswith("local")) else "driver",
            "signed_as_read": source.records is None,
            "session_start_seconds": round(start_s, 2), "read_and_sign_seconds": round(read_sign_s, 2),
            "job_seconds": round(job_s, 2), "stats": result.stats.__dict__, **memory, **recall_precision(found, truth),
            "spark": metrics, "shuffle_write_bytes_per_doc": round(metrics["shuffleWriteBytes"] / n, 1),
            "cached_bytes_per_doc": round((metrics["cached_memory_bytes"] + metrics["cached_disk_bytes"]) / n, 1),
            "executor_cpu_ms_per_doc": round(metrics["executorRunTime"] / n, 4),
            **({"groups": grouped} if grouped else {}),
            "pair_list": sorted((p.id, p.neighbor_id, p.similarity) for p in pairs)}


def render(report: dict) -> str:
    s, o = report["spark"], report.get("solr")
    lines = [f"# Spark dedup{' --similarity idf' if s.get('similarity') == 'idf' else ''} vs report --threshold "
             f"{THRESHOLD} --method lsh: {report['docs']:,} documents",
             "", f"{report['date']}, {report['machine']}; exact ground truth: {report['truth_pairs']:,} pairs "
             f"(benchmarks/exact_pairs.py in a child process, {report['truth_seconds'] or 'cached'} s).", "",
             "| method | wall s | peak memory MiB | pairs | recall | precision |", "|---|---:|---:|---:|---:|---:|",
             f"| Spark dedup, {s['master']} (read + sign + band join + verify + pairs file) | {s['job_seconds']} | "
             f"{s['peak_total_mib']} (driver Python {s['peak_driver_python_mib']}, JVM {s['peak_jvm_mib']}, "
             f"Python workers {s['peak_python_workers_mib']}) | {s['pairs']:,} | {s['recall']} | {s['precision']} |"]
    if o:
        lines.append(f"| report --method lsh (dedupe_collection; Solr already indexed) | {o['dedup_seconds']} | "
                     f"{o['client_peak_rss_mib']} (client; Solr's JVM not counted) | {o['pairs']:,} | {o['recall']} | "
                     f"{o['precision']} |")
        lines.append(f"| (Solr indexing first, --fields lsh) | {o['index_seconds']} | | | | |")
        lines += ["", f"Pair lists identical (ids and Jaccard): **{report['identical_pairs']}**."]
    g = s.get("groups")
    if g:
        lines += ["", "| groups and keep list (--groups --keep) | wall s | groups | ids in groups | rounds | peak MiB: "
                  "driver Python (before) | JVM | Python workers |", "|---|---:|---:|---:|---:|---:|---:|---:|",
                  f"| on the executors | {g['seconds']} | {g['groups']:,} | {g['grouped_ids']:,} | {g['rounds']} | "
                  f"{g['peak_driver_python_mib']} ({g['driver_python_rss_before_mib']}) | {g['peak_jvm_mib']} | "
                  f"{g['peak_python_workers_mib']} |"]
        d = g.get("on_driver")
        if d:
            lines.append(f"| union-find on the driver (before) | {d['seconds']} | {d['groups']:,} | | | "
                         f"{d['peak_driver_python_mib']} ({d['driver_python_rss_before_mib']}) | {d['peak_jvm_mib']} | "
                         f"{d['peak_python_workers_mib']} |")
    how = (f"the JSONL read by the executors in byte ranges and signed by the tasks that read it, "
           f"{s['read_and_sign_seconds']} s" if s.get("signed_as_read") else
           f"the JSONL read ({s.get('read_on', 'driver')}) and staged as Parquet, then signed "
           f"({s['read_and_sign_seconds']} s of signing)")
    lines += ["", f"Spark session start {s['session_start_seconds']} s (not in the wall time); {how} (in it).", "",
              f"Spark metrics: {s['spark']['stages']} stages, shuffle write {s['spark']['shuffleWriteBytes']:,} bytes "
              f"({s['shuffle_write_bytes_per_doc']} per document), cached {s['cached_bytes_per_doc']} bytes per "
              f"document, executor run time {s['executor_cpu_ms_per_doc']} ms per document; candidates "
              f"{s['stats']['candidate_pairs']:,}, verified after the estimate {s['stats']['estimated_pairs']:,}; "
              f"oversized buckets {s['stats']['oversized_buckets']}.", "",
              "| heaviest stages | tasks | shuffle write | shuffle read | run ms |", "|---|---:|---:|---:|---:|"]
    lines += [f"| {st['name']} | {st['tasks']} | {st['shuffle_write_bytes']:,} | {st['shuffle_read_bytes']:,} | "
              f"{st['run_ms']:,} |" for st in s["spark"]["heaviest_stages"]]
    lines += ["", "| phase (stage name) | stages | task time ms | ms a document | stage wall ms | shuffle write |",
              "|---|---:|---:|---:|---:|---:|"]
    n = max(s["stats"]["documents"], 1)
    lines += [f"| {name} | {p['stages']} | {p['run_ms']:,} | {p['run_ms'] / n:.4f} | {p.get('wall_ms', 0):,} | "
              f"{p['shuffle_write_bytes']:,} |" for name, p in s["spark"].get("phases", {}).items()]
    lines += ["", f"Load average: {report.get('load_average_start')} (1 min) at the start, "
              f"{report.get('load_average_end')} (1, 5, 15 min) at the end; package {report.get('neardup_solr')}."]
    return "\n".join(lines) + "\n"


def ground_truth(work: Path) -> tuple[set, float | None]:
    """The exact pairs of the corpus in ``work`` (computed once, in a child process, into
    ``work/exact_0.8.tsv``): computed here, the all-pairs join's arrays (about 10 GB at 1M documents) would stay
    in this process's RSS, which is the Spark driver's figure."""
    import subprocess

    path = pairs_path(work, THRESHOLD)
    seconds = None
    if not path.exists():
        t0 = time.perf_counter()
        subprocess.run([sys.executable, str(ROOT / "benchmarks" / "exact_pairs.py"), str(work), "--threshold",
                        str(THRESHOLD)], check=True, cwd=ROOT)
        seconds = round(time.perf_counter() - t0, 1)
    with open(path, encoding="utf-8") as fh:
        rows = (line.rstrip("\n").split("\t") for line in fh if not line.startswith("#"))
        return {(a, b) if a <= b else (b, a) for a, b, *_ in rows}, seconds


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--work", default=None, help="corpus directory (default benchmarks/work/c<docs>)")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--shuffle-partitions", type=int, default=8)
    ap.add_argument("--solr-url", default=None, help="core for the side-by-side run (default: $SOLR_URL or the "
                                                     "local launcher's); --no-solr skips it")
    ap.add_argument("--no-solr", action="store_true")
    ap.add_argument("--read-on", choices=("auto", "driver", "executors"), default="auto",
                    help="who reads the JSONL (spark dedup --read-on; auto: the executors with a local master)")
    ap.add_argument("--similarity", choices=("jaccard", "idf"), default="jaccard",
                    help="idf: the IDF-weighted dedup instead (no Solr side; recall is against the plain truth, "
                         "so only its time and memory mean something)")
    ap.add_argument("--groups", choices=("executors", "both"), default=None,
                    help="also time the groups and keep list (spark dedup --groups --keep) with the peak memory of "
                         "each process during them; both: also the union-find on the driver they replaced")
    args = ap.parse_args(argv)

    import platform

    import psutil

    work = Path(args.work or ROOT / "benchmarks" / "work" / f"c{args.docs}")
    if not (work / "docs.jsonl").exists():
        generate(args.docs, args.seed, work)
    docs_path = work / "docs.jsonl"
    truth, truth_s = ground_truth(work)
    from neardup_solr.version import package_version

    report: dict = {"docs": args.docs, "date": dt.date.today().isoformat(), "truth_pairs": len(truth),
                    "neardup_solr": package_version(), "load_average_start": round(os.getloadavg()[0], 2),
                    "truth_seconds": truth_s,
                    "machine": f"{psutil.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GiB, "
                               f"{platform.python_version()}"}
    if not args.no_solr and args.similarity == "jaccard":
        from neardup_solr.solr.client import SolrClient

        report["solr"] = run_solr(SolrClient(args.solr_url).url, docs_path, truth)
    report["spark"] = run_spark(args.master, docs_path, truth, args.driver_memory, args.shuffle_partitions,
                                args.similarity, args.read_on, args.groups)
    report["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    if "solr" in report:
        report["identical_pairs"] = report["solr"]["pair_list"] == report["spark"]["pair_list"]
    for side in ("solr", "spark"):
        if side in report:
            report[side].pop("pair_list")
    # A variant run gets a name of its own, so that it never replaces the day's side-by-side result.
    suffix = "" if args.similarity == "jaccard" else f"-{args.similarity}"
    variant = ("-no-solr" if "solr" not in report and args.similarity == "jaccard" else "") + (
        f"-read-on-{args.read_on}" if args.read_on != "auto" else "") + ("-groups" if args.groups else "")
    out = ROOT / "benchmarks" / "results" / f"{report['date']}-spark{suffix}-{args.docs}{variant}"
    write_result_files(out, report, render(report), indent=1)
    print(render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
