"""Corpus scale (issue 40, point 2): a planted corpus of N documents through every path a corpus builder runs, each
step timed with the peak memory of every process and the disk it takes, and the sizing formulas of the docs checked
against the run.

    flock /tmp/bench.lock python -m benchmarks.corpus_scale --docs 1000000
    python -m benchmarks.corpus_scale --table        # the cost-growth table of every size measured so far

Corpus
    benchmarks/corpus.py's planted corpus (the generator benchmarks/run.py uses, seed 1 by default) in
    ``benchmarks/work/corpus-<N>-s<seed>``, reused when it is there (run.py's corpora are the same files). The
    generator writes it as a stream: only the open planted clusters are held, never the corpus.

Steps, each the command a user types, in a process of its own
    1. ``index --fields lsh`` with its end-of-run check (every acknowledged id looked up after the final commit),
       into a dedicated local Solr (a fresh data directory under ``benchmarks/work/scale-<N>/``; ``--heap``), then
       ``optimize`` (one segment).
    2. ``report --threshold 0.8 --method lsh``: recall and precision against the PLANTED truth, the pairs of
       ``truth.tsv`` (every pair inside a planted cluster, with its exact Jaccard) at J >= 0.8. At 10M documents
       the exact all-pairs ground truth (benchmarks/exact_pairs.py, ~10 GB of RAM at 1M) is too costly, so the
       planted pairs are the reference at every size: a reported pair outside them is a chance near duplicate
       between unrelated documents (its similarity is verified exactly), counted as ``found_outside_planted``.
    3. Lookups: benchmarks/run.py's lookup section (300 timed lookups after 30 warm-up ones, by id and by new text,
       mode lsh, ``Searcher.find_near_dups``) in a process of its own; p50/p95/p99.
    4. ``spark dedup --groups --keep`` on ``local[2]`` (after Solr is stopped and its index deleted, unless
       ``--keep-solr``: at 10M the disk would not hold both); its pairs compared with the report's (byte-equal
       files, and the pair sets), its recall against the planted truth.

What is measured
    Wall time of each command, documents/s and milliseconds a document. Peak memory: the command's own ``VmHWM``,
    sampled (not ``ru_maxrss``, which a child inherits from the process that starts it: :func:`run_command`);
    Solr's JVM by its ``VmHWM`` (reset through ``/proc/<pid>/clear_refs`` at each step's start) and a 0.25 s
    sampler of its RSS; for ``spark dedup`` the driver's Python, the JVM (driver and
    executors in local mode) and the Python workers, sampled as benchmarks/spark.py does (``TreeRSS``), before and
    after the pairs are written (the groups and keep list are the second phase). Disk: the Solr index
    (``sizeInBytes`` after each step, and the data directory's peak during it: optimize rewrites the index), the
    signature store of ``report --method lsh`` (its ``TMPDIR``, sampled, and its own ``work_dir_mib``), Spark's
    temporary space (staging, ``spark.local.dir`` and ``TMPDIR``, one directory, sampled) and the output files.
    Spark's task time, shuffle bytes and cached bytes come from its event log (``spark.eventLog.*`` through
    ``PYSPARK_SUBMIT_ARGS``), split at the moment ``spark dedup`` prints its pairs line.

Sizing check
    :data:`FORMULAS` holds every sizing formula of docs/benchmarks.md and docs/spark.md (constants, and the doc
    line they come from); each is evaluated for this run's N and printed beside the measured value, flagged when
    they differ by more than 20%.

Results: ``benchmarks/results/<date>-corpus-scale-<machine>-<N>.{json,md}`` (with the load average at the start of
each step). ``--table`` merges every such file into ``<date>-corpus-scale-table-<machine>.{json,md}``: cost a
document, memory and disk a document by size, with the growth from one size to the next, and the driver's memory.
"""

from __future__ import annotations

import argparse
import datetime as dt
import fcntl
import hashlib
import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.provenance import load_average_text, write_result_files  # noqa: E402
from benchmarks.run import core_status, du_bytes, machine_tag, memory_gib, sec_corpus  # noqa: E402
from benchmarks.spark import TreeRSS  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"
THRESHOLD = 0.8
MIB = 2**20
# A measured value further than this from its formula's prediction is flagged.
TOLERANCE = 0.20
# Steps 1-3, which need the Solr index; a resumed run redoes them together or not at all.
SOLR_STEPS = ("index", "optimize", "report", "lookup")
# The results so far, in benchmarks/work/scale-<N>/, rewritten as each step ends.
PARTIAL = "partial.json"


# ---------------------------------------------------------------------------------------------------------------
# The sizing formulas of the docs, in one place
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Formula:
    """A sizing formula of the docs: ``predict(n, run)`` for a run of ``n`` documents (``run``: this run's report,
    for the quantities a formula takes from the run itself), the value it is checked against (``measure(run)``),
    and where it is written (``phrase`` is quoted from ``doc`` at ``line``; tests/bench/test_corpus_scale.py
    checks it is still there)."""

    name: str
    unit: str
    doc: str
    line: int
    phrase: str
    formula: str
    predict: Callable[[int, dict], float]
    measure: Callable[[dict], "float | None"]
    note: str = ""


def _get(run: dict, *path: str) -> "float | None":
    value: object = run
    for key in path:
        if not isinstance(value, dict) or value.get(key) is None:
            return None
        value = value[key]
    return float(value)  # type: ignore[arg-type]


def _at(*path: str, per: float = 1.0) -> Callable[[dict], "float | None"]:
    """The measured value at ``path`` in a run's report, divided by ``per`` (bytes to MB, ms to s)."""
    def measure(run: dict) -> "float | None":
        value = _get(run, *path)
        return None if value is None else value / per
    return measure


# docs/benchmarks.md, "Whole-collection dedup, client memory": one band partition (~160 MB) + one verification slice
# (~300 MB) + the candidate arrays (146,000 candidates a million documents, 8 bytes each in 3-4 arrays).
REPORT_PARTITION_MB = 160
REPORT_SLICE_MB = 300
REPORT_CANDIDATES_PER_DOC = 146_000 / 1_000_000
REPORT_CANDIDATE_BYTES = 8 * 4
# Found at 10M (617 MiB where the three terms above give 483; 452 at 1M): a per-document term, not traced yet.
REPORT_BYTES_PER_DOC = 18
# docs/benchmarks.md, the sizing formula under the cluster table.
INDEX_BYTES_PER_DOC = 2_354.5
SHARD_MAX_BYTES = 50.0e9
# One node's indexing rate with `index --fields lsh`, as this script indexes: the 1M run's (6,400 at 10M; the
# formula's 4,887.9 is benchmarks/cloud.py's, which indexes every field).
NODE_INDEXING_RATE_LSH_FIELDS = 7_950
SIGNING_RATE = 25_800
DEDUP_SECONDS_PER_MILLION = 34.3
# ... times this when a shard's heap, index and signature store exceed the machine's RAM (the 10M run on 24 GiB).
DEDUP_OUT_OF_CACHE_FACTOR = 1.57
SIGNATURE_STORE_BYTES_PER_DOC = 780.0
# docs/spark.md, "Sizing a cluster".
SPARK_TASK_MS_PER_DOC = 0.059
SPARK_SHUFFLE_BYTES_PER_DOC = 590
SPARK_CACHE_BYTES_PER_DOC = 1_655
# The same two when the cache does not fit in a local driver's storage memory and spills to disk (10M, 12g).
SPARK_SPILLED_TASK_MS_PER_DOC = 0.088
SPARK_SPILLED_CACHE_BYTES_PER_DOC = 3_041
SPARK_WORKERS_MIB = 860
# docs/spark.md: "The driver's own memory: 151 MiB at 100k": nothing per document, so the same at any N.
SPARK_DRIVER_PYTHON_MIB = 151


def _heap_bytes(run: dict) -> float:
    from neardup_solr.solr.backends.local import parse_heap_mb

    return parse_heap_mb(run.get("solr_heap", "2g")) * MIB


def _fits_in_ram(n: int, run: dict) -> bool:
    """Whether one shard's heap, index and the report's signature store fit in the RAM of the run's machine (its
    tag, e.g. 2core-24g; else this machine's): the page cache then holds what the report reads."""
    tagged = re.search(r"-(\d+)g$", run.get("machine") or "")
    ram_gib = float(tagged.group(1)) if tagged else memory_gib()
    return _heap_bytes(run) + n * (INDEX_BYTES_PER_DOC + SIGNATURE_STORE_BYTES_PER_DOC) <= ram_gib * 2**30


def _cache_fits(n: int, run: dict) -> bool:
    """Whether a local run's cache fits in Spark's storage memory: 60% of the driver's heap less 300 MiB, Spark's
    unified memory (``spark.memory.fraction``), which execution may take back."""
    from neardup_solr.solr.backends.local import parse_heap_mb

    memory = run.get("spark_driver_memory") or "1g"
    return n * SPARK_CACHE_BYTES_PER_DOC <= 0.6 * (parse_heap_mb(memory) - 300) * MIB


def _shards(index_bytes: float) -> int:
    return max(1, math.ceil(index_bytes / SHARD_MAX_BYTES))


SPARK = ("steps", "spark_dedup")
FORMULAS: tuple[Formula, ...] = (
    Formula("report --method lsh client memory", "MiB", "docs/benchmarks.md", 93, "the projection is about 2.7 GB",
            "160 MB partition + 300 MB verification slice + N x 0.146 candidates x 8 B x 4 arrays + N x 18 B",
            lambda n, run: (REPORT_PARTITION_MB * 1e6 + REPORT_SLICE_MB * 1e6
                            + n * (REPORT_CANDIDATES_PER_DOC * REPORT_CANDIDATE_BYTES + REPORT_BYTES_PER_DOC)) / MIB,
            _at("steps", "report", "memory_mib", "client"),
            "the partition and the slice are caps, reached from about 1M documents; below that the run holds less"),
    Formula("signature store (report's TMPDIR)", "MB", "docs/benchmarks.md", 90, "about 780 bytes a",
            "N x 780 B", lambda n, run: n * SIGNATURE_STORE_BYTES_PER_DOC / 1e6,
            _at("steps", "report", "disk_bytes", "signature_store_peak", per=1e6)),
    Formula("report --method lsh time", "s", "docs/benchmarks.md", 127, "whole-collection dedup time = N x [34.3 s",
            "N x 34.3 s per million, x 1.57 when heap + index + signature store exceed RAM",
            lambda n, run: n / 1e6 * DEDUP_SECONDS_PER_MILLION * (1.0 if _fits_in_ram(n, run) else
                                                                  DEDUP_OUT_OF_CACHE_FACTOR),
            _at("steps", "report", "seconds"), "34.3 s is the 2-shard run's; one core took 40.2 s"),
    Formula("index size after optimize", "MB", "docs/benchmarks.md", 123, "index bytes a document B = [2,354.5]",
            "N x 2,354.5 B", lambda n, run: n * INDEX_BYTES_PER_DOC / 1e6,
            _at("steps", "optimize", "disk_bytes", "index_after", per=1e6)),
    Formula("shards (one node each)", "shards", "docs/benchmarks.md", 123, "shards = ceil(N x B / 50.0 GB)",
            "ceil(N x 2,354.5 B / 50 GB)", lambda n, run: _shards(n * INDEX_BYTES_PER_DOC),
            lambda run: None if _get(run, "steps", "optimize", "disk_bytes", "index_after") is None else
            _shards(run["steps"]["optimize"]["disk_bytes"]["index_after"]),
            "measured: the same rule on the measured index size"),
    Formula("Solr RAM (heap + index)", "MiB", "docs/benchmarks.md", 124, "RAM per shard = heap [2.0 GB]",
            "this run's heap + N x 2,354.5 B", lambda n, run: (_heap_bytes(run) + n * INDEX_BYTES_PER_DOC) / MIB,
            _at("solr_jvm_peak_rss_mib"),
            "measured: the JVM's peak RSS (heap in use + index pages mapped); the formula counts the whole index "
            "in the page cache, conservative by design"),
    Formula("indexing rate (one node)", "docs/s", "docs/benchmarks.md", 125, "indexing docs/s = min(shards x",
            "min(shards x 7,950 (--fields lsh), 25,800)",
            lambda n, run: min(_shards(n * INDEX_BYTES_PER_DOC) * NODE_INDEXING_RATE_LSH_FIELDS, SIGNING_RATE),
            _at("steps", "index", "docs_per_s"), "measured: with the end-of-run check"),
    Formula("spark task time (pairs)", "s", "docs/spark.md", 329, "N x 0.059 ms",
            "N x 0.059 ms, x 0.088 when the cache spills", lambda n, run: n * (
                SPARK_TASK_MS_PER_DOC if _cache_fits(n, run) else SPARK_SPILLED_TASK_MS_PER_DOC) / 1000,
            _at(*SPARK, "spark", "pairs", "task_ms", per=1000)),
    Formula("spark shuffle (pairs)", "MB", "docs/spark.md", 330, "N x 590 B", "N x 590 B",
            lambda n, run: n * SPARK_SHUFFLE_BYTES_PER_DOC / 1e6,
            _at(*SPARK, "spark", "pairs", "shuffle_write_bytes", per=1e6),
            "measured: every stage before the pairs line (the groups' shuffles are reported apart)"),
    Formula("spark cache (after the pairs)", "MB", "docs/spark.md", 331, "N x 1,655 B",
            "N x 1,655 B, x 3,041 B when it spills",
            lambda n, run: n * (SPARK_CACHE_BYTES_PER_DOC if _cache_fits(n, run) else SPARK_SPILLED_CACHE_BYTES_PER_DOC)
            / 1e6,
            _at(*SPARK, "spark", "cached_bytes_after_pairs", per=1e6),
            "measured as benchmarks/spark.py did: the cached blocks once the pairs are written"),
    Formula("spark Python workers", "MiB", "docs/spark.md", 332, "860 MiB for 2 workers at 1M",
            "860 MiB for 2 workers (not per N)", lambda n, run: SPARK_WORKERS_MIB,
            _at(*SPARK, "memory_mib", "python_workers")),
    Formula("spark driver Python", "MiB", "docs/spark.md", 313, "The driver's own memory: 151 MiB at 100k",
            "151 MiB at any N (nothing per document or pair)", lambda n, run: SPARK_DRIVER_PYTHON_MIB,
            _at(*SPARK, "memory_mib", "driver_python"),
            "measured: the spark dedup command's Python process (benchmarks/spark.py measured its own process)"),
)


def sizing_check(n: int, run: dict) -> list[dict]:
    """Every formula's prediction for ``n`` documents beside the measured value, with the ratio and a flag."""
    rows = []
    for f in FORMULAS:
        predicted = f.predict(n, run)
        measured = f.measure(run)
        ratio = measured / predicted if measured is not None and predicted else None
        rows.append({"quantity": f.name, "unit": f.unit, "formula": f.formula, "source": f"{f.doc}:{f.line}",
                     "predicted": round(predicted, 1), "measured": None if measured is None else round(measured, 1),
                     "ratio": None if ratio is None else round(ratio, 3),
                     "flag": ratio is not None and abs(ratio - 1) > TOLERANCE, "note": f.note})
    return rows


# ---------------------------------------------------------------------------------------------------------------
# Measuring a command
# ---------------------------------------------------------------------------------------------------------------


def _status_kib(pid: int, key: str) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def disk_read_bytes() -> int | None:
    """Bytes the whole machine has read from its block devices since boot (``pgpgin`` of /proc/vmstat, in KiB):
    over a step, what did not come from the page cache (an index larger than the memory left for it)."""
    try:
        for line in Path("/proc/vmstat").read_text().splitlines():
            if line.startswith("pgpgin "):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


class Watch:
    """During one step, in a thread: the peak RSS of Solr's JVM (and its ``VmHWM``, reset at the start), the
    peak size of some directories, and the bytes the machine read from disk."""

    def __init__(self, solr_pid: int | None, dirs: dict[str, Path], interval: float = 0.25):
        self.pid = solr_pid
        self.dirs = dirs
        self.peak_rss_kib = 0
        self.peak_disk = {name: 0 for name in dirs}
        if solr_pid is not None:
            try:  # "5" resets the high-water mark to the current RSS (proc(5)); our own process, so allowed
                Path(f"/proc/{solr_pid}/clear_refs").write_text("5")
            except OSError:
                pass
        self.read_at_start = disk_read_bytes()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(interval,), daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        if self.pid is not None:
            self.peak_rss_kib = max(self.peak_rss_kib, _status_kib(self.pid, "VmRSS") or 0)
        for name, path in self.dirs.items():
            try:
                self.peak_disk[name] = max(self.peak_disk[name], du_bytes(path) or 0)
            except OSError:  # a file went away while it was being summed: the next sample counts again
                pass

    def _run(self, interval: float) -> None:
        while not self._stop.wait(interval):
            self._sample()

    def stop(self) -> dict:
        self._stop.set()
        self._thread.join()
        self._sample()
        read = disk_read_bytes()
        out: dict = {"disk_peak": dict(self.peak_disk),
                     "read_from_disk": None if read is None or self.read_at_start is None else read - self.read_at_start}
        if self.pid is not None:
            hwm = _status_kib(self.pid, "VmHWM") or 0
            out["solr_jvm_mib"] = round(max(self.peak_rss_kib, hwm) / 1024, 1)
        return out


@dataclass
class Finished:
    seconds: float
    exit_code: int
    peak_rss_mib: float  # the command's own peak RSS (VmHWM), sampled
    lines: list[tuple[float, str]]  # standard output, each line with the time.time() it was read
    started: float


class PhasedTreeRSS(TreeRSS):
    """benchmarks/spark.py's sampler of a process tree, with the peaks split in two at :meth:`mark`."""

    first: dict | None = None

    def mark(self) -> None:
        self.first = {f"peak_{k}_mib": round(v, 1) for k, v in self.peaks.items()}
        # The sampler thread may still write one sample into the old dict: one sample lost, not a wrong peak.
        self.peaks = {k: 0.0 for k in self.peaks}


def failure_reason(log_text: str, finished: "Finished") -> str:
    """One line on why a command failed: Spark's error class (``[AGGREGATE_OUT_OF_MEMORY] ...``) when its log
    has one, else the last line the command printed."""
    classed = re.search(r"\[([A-Z][A-Z_]{4,})\][^\n]{0,160}", log_text)
    if classed:
        return classed.group(0).strip()
    said = [line for _, line in finished.lines if line.strip()] or log_text.strip().splitlines() or ["no output"]
    return said[-1][:300]


def run_command(cmd: list[str], log_path: Path, env: dict | None = None,
                on_start: Callable[[int], None] | None = None,
                on_line: Callable[[str], None] | None = None) -> Finished:
    """Run ``cmd`` to its end: its wall time, exit code, peak RSS and standard output lines with the time each was
    read (standard error goes to ``log_path``); ``on_start(pid)`` once it runs, ``on_line(line)`` for each line as
    it is printed.

    The peak RSS is the process's ``VmHWM`` (its memory's high-water mark), read every 0.1 s until it ends, not
    ``ru_maxrss``: Linux carries the parent's high-water mark into a child across fork (or vfork) and exec, so a
    command started by this process would report at least this process's size."""
    lines: list[tuple[float, str]] = []
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "w", encoding="utf-8") as err:
        started = time.time()
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=err, text=True,
                                env={**os.environ, **(env or {})})
        if on_start is not None:
            on_start(proc.pid)

        def read() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.append((time.time(), line.rstrip("\n")))
                if on_line is not None:
                    on_line(line)

        peak_kib = [0]
        done = threading.Event()

        def high_water() -> None:
            # The process stays a zombie, its /proc/<pid>/status readable, until it is waited for below.
            while not done.wait(0.1):
                peak_kib[0] = max(peak_kib[0], _status_kib(proc.pid, "VmHWM") or 0)

        reader = threading.Thread(target=read, daemon=True)
        sampler = threading.Thread(target=high_water, daemon=True)
        reader.start()
        sampler.start()
        os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)  # ended, not yet reaped
        done.set()
        sampler.join()
        peak_kib[0] = max(peak_kib[0], _status_kib(proc.pid, "VmHWM") or 0)
        proc.wait()
        seconds = time.perf_counter() - t0
        reader.join()
    return Finished(seconds, proc.returncode, round(peak_kib[0] / 1024, 1), lines, started)


def _json_line(finished: Finished) -> dict:
    """The last JSON object a ``--json`` command printed."""
    for _, line in reversed(finished.lines):
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError("the command printed no JSON summary")


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "neardup_solr.cli", *args]


def _shown(cmd: list[str], root: Path) -> str:
    """The command as a user types it (``neardup-solr ...``), paths relative to the repository where they can be."""
    words = ["neardup-solr"] + cmd[3:] if cmd[1:3] == ["-m", "neardup_solr.cli"] else cmd
    out = []
    for w in words:
        try:
            w = str(Path(w).relative_to(root)) if w.startswith(str(root)) else w
        except ValueError:
            pass
        out.append(shlex.quote(w))
    return " ".join(out)


def _per_doc(seconds: float, n: int) -> dict:
    return {"seconds": round(seconds, 2), "docs_per_s": round(n / seconds, 1) if seconds else None,
            "ms_per_doc": round(seconds * 1000 / n, 4)}


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# ---------------------------------------------------------------------------------------------------------------
# Planted truth
# ---------------------------------------------------------------------------------------------------------------


def _code(a: str, b: str) -> int:
    # Corpus ids are "d" + a zero-padded number: one int64 a pair, the smaller number first.
    x, y = int(a[1:]), int(b[1:])
    return (min(x, y) << 32) | max(x, y)


def planted_pairs(corpus_dir: Path, threshold: float = THRESHOLD) -> np.ndarray:
    """The planted pairs (``truth.tsv``) with exact Jaccard >= ``threshold``, as sorted int64 codes."""
    from benchmarks.corpus import iter_truth

    return np.unique(np.fromiter((_code(a, b) for a, b, j in iter_truth(corpus_dir) if j >= threshold),
                                 dtype=np.int64))


def pairs_file_codes(path: Path) -> np.ndarray:
    """The pairs of a pairs file (``report`` / ``spark dedup --out``), as sorted int64 codes."""
    from neardup_solr.validation import parse_tsv_id

    def codes():
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("#") or not line.strip():
                    continue
                a, b, _ = line.rstrip("\n").split("\t")
                yield _code(parse_tsv_id(a), parse_tsv_id(b))

    return np.unique(np.fromiter(codes(), dtype=np.int64))


def against_planted(found: np.ndarray, planted: np.ndarray) -> dict:
    hit = int(np.intersect1d(found, planted, assume_unique=True).size)
    return {"pairs": int(found.size), "planted_pairs": int(planted.size), "true_positives": hit,
            "recall": round(hit / planted.size, 6) if planted.size else None,
            "precision": round(hit / found.size, 6) if found.size else None,
            "found_outside_planted": int(found.size) - hit}


# ---------------------------------------------------------------------------------------------------------------
# Spark's event log
# ---------------------------------------------------------------------------------------------------------------


def spark_event_summary(events_dir: Path, boundary: float | None) -> dict:
    """Task time, shuffle and spill bytes of the stages submitted before ``boundary`` (``time.time()``: the pairs
    written) and after it (the groups and keep list), and the cached RDD blocks (memory + disk): their peak and
    their total when the first stage after ``boundary`` was submitted."""
    # One file per application, or (rolling logs, Spark 4's default) a directory of events_<n>_<app> files.
    logs = sorted((p for p in events_dir.rglob("*") if p.is_file() and not p.name.startswith((".", "appstatus"))),
                  key=lambda p: (p.parent.name, int(p.name.split("_")[1]) if p.name.startswith("events_") else 0))
    if not logs:
        return {"error": f"no event log in {events_dir}"}
    cut = boundary * 1000 if boundary is not None else float("inf")
    stage_phase: dict[int, str] = {}
    phases = {name: {"stages": 0, "tasks": 0, "task_ms": 0, "shuffle_write_bytes": 0, "spilled_disk_bytes": 0,
                     "spilled_memory_bytes": 0} for name in ("pairs", "groups_and_keep")}
    named: dict[str, int] = {}
    blocks: dict[tuple, int] = {}
    cached = peak = 0
    after_pairs = None

    def events():
        for path in logs:
            with open(path, encoding="utf-8") as fh:
                for line in fh:
                    yield json.loads(line)

    for event in events():
        kind = event.get("Event")
        if kind == "SparkListenerStageSubmitted":
            info = event["Stage Info"]
            submitted = info.get("Submission Time") or 0
            phase = "pairs" if submitted < cut else "groups_and_keep"
            if phase == "groups_and_keep" and after_pairs is None:
                after_pairs = cached
            stage_phase[info["Stage ID"]] = phase
            phases[phase]["stages"] += 1
        elif kind == "SparkListenerTaskEnd":
            phase = stage_phase.get(event.get("Stage ID"), "pairs")
            metrics = event.get("Task Metrics") or {}
            p = phases[phase]
            p["tasks"] += 1
            p["task_ms"] += int(metrics.get("Executor Run Time", 0))
            p["shuffle_write_bytes"] += int((metrics.get("Shuffle Write Metrics") or {}).get(
                "Shuffle Bytes Written", 0))
            p["spilled_disk_bytes"] += int(metrics.get("Disk Bytes Spilled", 0))
            p["spilled_memory_bytes"] += int(metrics.get("Memory Bytes Spilled", 0))
        elif kind == "SparkListenerStageCompleted":
            info = event["Stage Info"]
            name = info.get("Stage Name", "").split(" at ")[0]
            runtime = sum(int(a.get("Value", 0)) for a in info.get("Accumulables", [])
                          if a.get("Name") == "internal.metrics.executorRunTime")
            named[name] = named.get(name, 0) + runtime
        elif kind == "SparkListenerUnpersistRDD":
            prefix = f"rdd_{event.get('RDD ID')}_"
            for key in [k for k in blocks if k[1].startswith(prefix)]:
                cached -= blocks.pop(key)
        elif kind == "SparkListenerBlockUpdated":
            info = event["Block Updated Info"]
            block = info.get("Block ID", "")
            if block.startswith("rdd_"):
                key = (json.dumps(info.get("Block Manager ID"), sort_keys=True), block)
                size = int(info.get("Memory Size", 0)) + int(info.get("Disk Size", 0))
                cached += size - blocks.get(key, 0)
                blocks[key] = size
                peak = max(peak, cached)
    heaviest = sorted(named.items(), key=lambda kv: -kv[1])[:8]
    return {**phases, "cached_bytes_peak": peak,
            "cached_bytes_after_pairs": after_pairs if after_pairs is not None else cached,
            "heaviest_stage_names_task_ms": dict(heaviest), "event_log_bytes": sum(p.stat().st_size for p in logs)}


# ---------------------------------------------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------------------------------------------


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def solr_steps(args: argparse.Namespace, report: dict, base: Path, corpus_dir: Path, docs_path: Path,
               fresh_dir: Path, planted: np.ndarray, say: Callable[[str], None],
               save_partial: Callable[[], None]) -> None:
    """Steps 1-3 (index, optimize, report, lookups) against a dedicated Solr started here, each saved into
    ``report["steps"]`` (and the partial results) as it ends; Solr is stopped, and its index deleted unless
    ``--keep-solr``."""
    from neardup_solr.solr.backends.local import LocalSolr

    n = args.docs
    steps = report["steps"]
    out, logs = base / "out", base / "logs"
    solr = LocalSolr(port=0, data_dir=base / "solr", heap=args.heap)
    say(f"starting Solr (heap {args.heap}, data {solr.data_dir})")
    started = solr.start()
    core_url = started.url
    pid = solr.pid()
    report["solr_start_seconds"] = round(started.seconds, 1)
    solr_dirs = {"solr_data": solr.data_dir}
    solr_peaks: list[float] = []
    try:
        def solr_step(name: str, cmd: list[str], dirs: dict[str, Path], env: dict | None = None) -> tuple[dict, dict]:
            say(f"{name}: {_shown(cmd, ROOT)}")
            load = _load()
            watch = Watch(pid, dirs)
            finished = run_command(cmd, logs / f"{name}.log", env)
            watched = watch.stop()
            solr_peaks.append(watched.get("solr_jvm_mib", 0.0))
            if finished.exit_code != 0:
                raise RuntimeError(f"{name} exited with {finished.exit_code}: see {logs / (name + '.log')}")
            say(f"{name}: {finished.seconds:.1f} s")
            step = {"command": _shown(cmd, ROOT), **_per_doc(finished.seconds, n),
                    "memory_mib": {"client": finished.peak_rss_mib, "solr_jvm": watched.get("solr_jvm_mib")},
                    "load_average_start_end": [load[0], _load()[0]], "read_from_disk": watched["read_from_disk"]}
            return step, {"finished": finished, "disk_peak": watched["disk_peak"]}

        def index_now() -> dict:
            status = core_status(core_url)
            # Solr's update log sits beside the index in the data directory; it is trimmed at hard commits.
            tlog = sum(du_bytes(d) or 0 for d in solr.data_dir.rglob("tlog") if d.is_dir())
            return {"index_after": int(status["index"]["sizeInBytes"]),
                    "segments_after": status["index"].get("segmentCount"), "update_log_after": tlog}

        # 1. index --fields lsh, with its end-of-run check; then optimize.
        step, raw = solr_step("index", _cli("index", str(docs_path), "--fields", "lsh", "--clear-all", "--json",
                                            "-q", "--solr-url", core_url), solr_dirs)
        summary = _json_line(raw["finished"])
        check = summary.get("verification") or {}
        step["result"] = {"indexed": summary["indexed"], "rejected": summary["rejected"],
                          "end_of_run_check": {"ok": check.get("ok"), "seconds": check.get("seconds")}}
        now = index_now()
        step["disk_bytes"] = {**now, "solr_data_peak": raw["disk_peak"]["solr_data"],
                              "index_bytes_per_doc": round(now["index_after"] / n, 1)}
        steps["index"] = step
        save_partial()

        step, raw = solr_step("optimize", _cli("optimize", "--json", "--solr-url", core_url), solr_dirs)
        step["result"] = _json_line(raw["finished"])
        now = index_now()
        step["disk_bytes"] = {**now, "solr_data_peak": raw["disk_peak"]["solr_data"],
                              "index_bytes_per_doc": round(now["index_after"] / n, 1)}
        steps["optimize"] = step
        save_partial()

        # 2. report --threshold 0.8 --method lsh; its signature store in a TMPDIR of its own, to be measured.
        tmp = base / "report-tmp"
        tmp.mkdir()
        pairs_path = out / "report-pairs.tsv"
        step, raw = solr_step("report", _cli("report", "--threshold", str(THRESHOLD), "--method", "lsh", "--out",
                                             str(pairs_path), "--json", "-q", "--solr-url", core_url),
                              {**solr_dirs, "signature_store": tmp}, env={"TMPDIR": str(tmp)})
        summary = _json_line(raw["finished"])
        stats = summary.get("stats") or {}
        report_codes = pairs_file_codes(pairs_path)
        step["result"] = {**against_planted(report_codes, planted),
                          "candidates": stats.get("candidate_pairs"), "verified_documents":
                          stats.get("fetched_documents"), "report_stats_ru_maxrss_mib": stats.get("peak_rss_mib")}
        # A small run's store can come and go between two samples: then the store's own figure stands in.
        store_peak = max(raw["disk_peak"]["signature_store"], int((stats.get("work_dir_mib") or 0) * MIB))
        step["disk_bytes"] = {"signature_store_peak": store_peak,
                              "signature_store_own_mib": stats.get("work_dir_mib"),
                              "pairs_file": pairs_path.stat().st_size,
                              "signature_store_bytes_per_doc": round(store_peak / n, 1)}
        steps["report"] = step
        save_partial()

        # 3. Lookups: run.py's lookup section, in a process of its own.
        budget = max(300.0, n / 1e6 * 600)
        code = ("import json, sys, time\n"
                "from benchmarks.run import sec_lookup\n"
                f"out = sec_lookup(deadline=time.time() + {budget}, core_url={core_url!r}, "
                f"corpus_dir={str(corpus_dir)!r}, fresh_dir={str(fresh_dir)!r}, lookups={args.lookups}, "
                f"warmup={args.warmup}, seed={args.seed}, rows=50)\n"
                "print(json.dumps(out))\n")
        step, raw = solr_step("lookup", [sys.executable, "-c", code], solr_dirs, env={"PYTHONPATH": str(ROOT)})
        step["command"] = (f"benchmarks/run.py's lookup section: {args.lookups} timed lookups after {args.warmup}, "
                           "mode lsh, by id and by new text")
        looked = _json_line(raw["finished"])
        lsh = looked["modes"]["lsh"]
        step["result"] = {"by_text": lsh["by_text"], "by_id": lsh["by_id"], "status": looked.get("status", "ok")}
        # Its wall time includes sampling the corpus; the figures that matter are the latencies.
        step.pop("docs_per_s")
        step.pop("ms_per_doc")
        steps["lookup"] = step
        save_partial()
    finally:
        report["solr_jvm_peak_rss_mib"] = max(solr_peaks, default=None)
        solr.stop()
    if not args.keep_solr:
        shutil.rmtree(solr.data_dir, ignore_errors=True)


def run(args: argparse.Namespace) -> dict:
    import psutil

    n = args.docs
    work = args.work_dir.resolve()
    work.mkdir(parents=True, exist_ok=True)
    corpus_dir = work / f"corpus-{n}-s{args.seed}"
    docs_path = corpus_dir / "docs.jsonl"
    base = work / f"scale-{n}"
    # Two runs of one size would clear each other's Solr and files.
    lock = open(work / f"scale-{n}.lock", "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise SystemExit(f"another corpus_scale run of {n} documents is using {base}")
    partial_path = base / PARTIAL
    command = "python -m benchmarks.corpus_scale " + " ".join(
        shlex.quote(a) for a in (args.argv if args.argv is not None else sys.argv[1:]))
    resumed = json.loads(partial_path.read_text()) if args.resume and partial_path.exists() else None
    if resumed is None and base.exists():
        shutil.rmtree(base)
    out, logs = base / "out", base / "logs"
    out.mkdir(parents=True, exist_ok=True)

    def say(message: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)

    if resumed is not None:
        report = resumed
        report.setdefault("resumed", []).append({"command": command, "at": dt.datetime.now().isoformat("T", "minutes"),
                                                 "load_average": load_average_text()})
        report["spark_driver_memory"] = args.spark_driver_memory
        say(f"resuming {partial_path}: done already {', '.join(report['steps']) or 'nothing'}")
    else:
        report = {"benchmark": "corpus_scale", "docs": n, "seed": args.seed, "threshold": THRESHOLD,
                  "date": dt.date.today().isoformat(), "machine": args.machine or machine_tag(), "command": command,
                  "load_average_start": load_average_text(), "solr_heap": args.heap,
                  "spark_master": args.master, "spark_driver_memory": args.spark_driver_memory, "steps": {},
                  "failed_attempts": []}
    steps = report["steps"]

    def save_partial() -> None:
        # What a failed step would otherwise take with it: a --resume run starts from here. Written beside and
        # renamed over, so a run killed mid-write leaves the previous state rather than half a file.
        unfinished = partial_path.with_name(partial_path.name + ".tmp")
        with open(unfinished, "w", encoding="utf-8") as handle:
            json.dump(report, handle)
        os.replace(unfinished, partial_path)

    say(f"corpus of {n:,} documents in {corpus_dir}")
    t0 = time.perf_counter()
    corpus = sec_corpus(deadline=None, corpus_dir=str(corpus_dir), docs=n, seed=args.seed, with_truth=False)
    corpus["seconds"] = round(time.perf_counter() - t0, 2)
    planted = planted_pairs(corpus_dir)
    if resumed is None:
        report["corpus"] = {k: corpus[k] for k in ("reused", "generate_s", "docs", "copies", "clusters", "bytes")}
        report["corpus"]["bytes_per_doc"] = round(corpus["bytes"] / n, 1)
    report["planted_truth"] = {
        "pairs_ge_0.8": int(planted.size),
        "note": "the pairs inside planted clusters (truth.tsv) with exact Jaccard >= 0.8: the reference at every "
                "size, as the exact all-pairs ground truth is too costly at 10M documents; a reported pair outside "
                "them is a chance near duplicate (verified exactly), counted as found_outside_planted"}

    fresh_dir = work / f"fresh-s{args.seed}"
    if not (fresh_dir / "docs.jsonl").exists():  # run.py's unseen texts for the lookups
        from benchmarks.corpus import generate

        generate(1000, args.seed + 10_000, fresh_dir)

    if all(name in steps for name in SOLR_STEPS):
        say("the Solr steps are done already; on to spark dedup")
    else:
        for name in SOLR_STEPS:  # a resumed run redoes them together: the index may be gone
            steps.pop(name, None)
        solr_steps(args, report, base, corpus_dir, docs_path, fresh_dir, planted, say, save_partial)
        save_partial()  # with Solr's peak over the steps, known once it is stopped
    report_codes = pairs_file_codes(out / "report-pairs.tsv")

    # 4. spark dedup --groups --keep, local[2].
    spark_tmp, events = base / "spark-temp", base / "spark-events"
    for fresh in (spark_tmp, events):  # a resumed run's are the failed attempt's
        shutil.rmtree(fresh, ignore_errors=True)
        fresh.mkdir()
    spark_pairs = out / "spark-pairs.tsv"
    cmd = _cli("spark", "dedup", str(docs_path), "--threshold", str(THRESHOLD), "--out", str(spark_pairs),
               "--groups", str(out / "groups.jsonl"), "--keep", str(out / "keep.txt"), "--master", args.master,
               "--driver-memory", args.spark_driver_memory, "--shuffle-partitions", str(args.shuffle_partitions),
               "--staging-dir", str(spark_tmp))
    env = {"TMPDIR": str(spark_tmp), "SPARK_LOCAL_DIRS": str(spark_tmp),
           "PYSPARK_SUBMIT_ARGS": " ".join([
               "--conf spark.eventLog.enabled=true", f"--conf spark.eventLog.dir={events.as_uri()}",
               "--conf spark.eventLog.compress=false", "--conf spark.eventLog.rolling.enabled=false",
               "--conf spark.eventLog.logBlockUpdates.enabled=true",
               "pyspark-shell"])}
    say(f"spark dedup: {_shown(cmd, ROOT)}")
    load = _load()
    watch = Watch(None, {"spark_temp": spark_tmp})
    trees: list[PhasedTreeRSS] = []

    def pairs_written(line: str) -> None:
        if " pairs with " in line and trees and trees[0].first is None:
            trees[0].mark()

    finished = run_command(cmd, logs / "spark_dedup.log", env,
                           on_start=lambda child: trees.append(PhasedTreeRSS(process=psutil.Process(child))),
                           on_line=pairs_written)
    tree = trees[0]
    boundary = next((t for t, line in finished.lines if " pairs with " in line), None)
    second = tree.stop()
    first = tree.first or second
    memory = {k: max(first[k], second[k]) for k in second}
    peaks = {"driver_python": memory["peak_driver_python_mib"], "jvm": memory["peak_jvm_mib"],
             "python_workers": memory["peak_python_workers_mib"]}
    watched = watch.stop()
    if finished.exit_code != 0:
        error = failure_reason((logs / "spark_dedup.log").read_text(encoding="utf-8", errors="replace"), finished)
        report["failed_attempts"].append({
            "step": "spark_dedup", "command": _shown(cmd, ROOT), "exit_code": finished.exit_code,
            "seconds": round(finished.seconds, 1), "error": error, "memory_mib": peaks,
            "load_average_start_end": [load[0], _load()[0]]})
        save_partial()
        raise SystemExit(f"spark dedup exited with {finished.exit_code} ({error}): "
                         f"see {logs / 'spark_dedup.log'}. The steps before it are kept in {partial_path}; run the "
                         "same command with --resume (and, for an executor out of memory, a larger "
                         "--spark-driver-memory) to run only what is left.")
    say(f"spark dedup: {finished.seconds:.1f} s")
    spark_codes = pairs_file_codes(spark_pairs)
    events_summary = spark_event_summary(events, boundary)
    steps["spark_dedup"] = {
        "command": _shown(cmd, ROOT), **_per_doc(finished.seconds, n),
        "pairs_seconds": round(boundary - finished.started, 2) if boundary else None,
        "memory_mib": {**peaks, "total": memory["peak_total_mib"],
                       "by_phase": {"pairs": first, "groups_and_keep": second if tree.first else None}},
        "result": {**against_planted(spark_codes, planted),
                   "pairs_file_identical_to_report": _sha256(spark_pairs) == _sha256(out / "report-pairs.tsv"),
                   "pairs_only_in_spark": int(np.setdiff1d(spark_codes, report_codes).size),
                   "pairs_only_in_report": int(np.setdiff1d(report_codes, spark_codes).size),
                   "said": [line for _, line in finished.lines if line.strip()][-3:]},
        "disk_bytes": {"spark_temp_peak": watched["disk_peak"]["spark_temp"],
                       "spark_temp_bytes_per_doc": round(watched["disk_peak"]["spark_temp"] / n, 1),
                       "pairs_file": spark_pairs.stat().st_size, "groups_file": (out / "groups.jsonl").stat().st_size,
                       "keep_file": (out / "keep.txt").stat().st_size},
        "spark": events_summary, "load_average_start_end": [load[0], _load()[0]],
        "read_from_disk": watched["read_from_disk"]}
    report["load_average_end"] = load_average_text()
    report["sizing"] = sizing_check(n, report)
    report["extrapolated"] = {str(target): extrapolate(report, target) for target in (1_000_000, 10_000_000)
                              if target > n}
    if not args.keep_work:
        shutil.rmtree(base, ignore_errors=True)
    return report


def extrapolate(report: dict, target: int) -> dict:
    """This run's costs scaled linearly to ``target`` documents: wall time a step, and the disk at the fullest
    moment (the corpus, plus the index while Solr runs with the larger of optimize's rewrite and the signature
    store beside it, or Spark's temporary space after the index is deleted)."""
    n = report["docs"]
    scale = target / n
    s = report["steps"]
    seconds = {name: round(s[name]["seconds"] * scale, 0) for name in ("index", "optimize", "report", "spark_dedup")}
    seconds["lookup"] = s["lookup"]["seconds"]  # a fixed number of lookups (plus one pass over the corpus)
    corpus = report["corpus"]["bytes"] * scale
    index = s["optimize"]["disk_bytes"]["index_after"] * scale
    solr_phase = max(s["index"]["disk_bytes"]["solr_data_peak"], s["optimize"]["disk_bytes"]["solr_data_peak"]) * scale
    report_phase = index + s["report"]["disk_bytes"]["signature_store_peak"] * scale
    spark_phase = s["spark_dedup"]["disk_bytes"]["spark_temp_peak"] * scale
    outputs = sum(s["spark_dedup"]["disk_bytes"][k] for k in ("pairs_file", "groups_file", "keep_file")) * scale \
        + s["report"]["disk_bytes"]["pairs_file"] * scale
    peak = corpus + outputs + max(solr_phase, report_phase, spark_phase)
    return {"seconds": seconds, "total_seconds": sum(seconds.values()),
            "corpus_generation_seconds": round(report["corpus"]["generate_s"] * scale)
            if report["corpus"].get("generate_s") else None,
            "disk_gb": {"corpus": round(corpus / 1e9, 1), "solr_peak": round(solr_phase / 1e9, 1),
                        "index_plus_signature_store": round(report_phase / 1e9, 1),
                        "spark_temp": round(spark_phase / 1e9, 1), "outputs": round(outputs / 1e9, 2),
                        "peak": round(peak / 1e9, 1)}}


# ---------------------------------------------------------------------------------------------------------------
# Rendering
# ---------------------------------------------------------------------------------------------------------------


def _mib(value) -> str:
    return "–" if value is None else f"{value:,.0f}"


def _mb(value) -> str:
    return "–" if value is None else f"{value / 1e6:,.1f}"


def render(report: dict) -> str:
    n = report["docs"]
    s = report["steps"]
    c = report["corpus"]
    lines = [f"# Corpus scale: {n:,} documents", "",
             f"{report['date']}, {report['machine']}; `{report['command']}`. Load average (1/5/15 min) "
             f"{report['load_average_start']} at the start, {report['load_average_end']} at the end; each step's "
             "1-minute load at its start and end is in the JSON. Solr heap "
             f"{report['solr_heap']}; Spark `{report['spark_master']}`, driver memory {report['spark_driver_memory']}.",
             "",
             f"Corpus: {c['docs']:,} documents, {c['copies']:,} planted copies in {c['clusters']:,} clusters, "
             f"{c['bytes'] / 1e6:,.1f} MB ({c['bytes_per_doc']:,} B a document)"
             + (", reused." if c["reused"] else f", generated in {c['generate_s']} s."),
             f"Reference: the {report['planted_truth']['pairs_ge_0.8']:,} planted pairs with exact Jaccard >= 0.8 "
             "(truth.tsv), not the exact all-pairs ground truth, which is too costly at 10M documents; a pair found "
             "outside them is a chance near duplicate, its similarity verified exactly.", "",
             "| step | wall s | docs/s | ms a document | peak memory MiB | disk | result |",
             "|---|---:|---:|---:|---|---|---|"]
    i, o, r, lk, sp = s["index"], s["optimize"], s["report"], s["lookup"], s["spark_dedup"]
    ck = i["result"]["end_of_run_check"]
    lines.append(f"| `index --fields lsh` (end-of-run check {ck['seconds']} s, ok: {ck['ok']}) | {i['seconds']} | "
                 f"{i['docs_per_s']:,} | {i['ms_per_doc']} | client {_mib(i['memory_mib']['client'])}, Solr JVM "
                 f"{_mib(i['memory_mib']['solr_jvm'])} | index {_mb(i['disk_bytes']['index_after'])} MB "
                 f"({i['disk_bytes']['index_bytes_per_doc']:,} B a doc, {i['disk_bytes']['segments_after']} segments), "
                 f"data dir peak {_mb(i['disk_bytes']['solr_data_peak'])} MB | {i['result']['indexed']:,} indexed |")
    lines.append(f"| `optimize` | {o['seconds']} | {o['docs_per_s']:,} | {o['ms_per_doc']} | client "
                 f"{_mib(o['memory_mib']['client'])}, Solr JVM {_mib(o['memory_mib']['solr_jvm'])} | index "
                 f"{_mb(o['disk_bytes']['index_after'])} MB ({o['disk_bytes']['index_bytes_per_doc']:,} B a doc), "
                 f"data dir peak {_mb(o['disk_bytes']['solr_data_peak'])} MB | "
                 f"{o['result'].get('segments_before')} -> {o['result'].get('segments_after')} segments |")
    rr = r["result"]
    lines.append(f"| `report --threshold 0.8 --method lsh` | {r['seconds']} | {r['docs_per_s']:,} | {r['ms_per_doc']} | "
                 f"client {_mib(r['memory_mib']['client'])}, Solr JVM {_mib(r['memory_mib']['solr_jvm'])} | "
                 f"signature store peak {_mb(r['disk_bytes']['signature_store_peak'])} MB "
                 f"({r['disk_bytes']['signature_store_bytes_per_doc']:,} B a doc), pairs file "
                 f"{_mb(r['disk_bytes']['pairs_file'])} MB | {rr['pairs']:,} pairs, recall {rr['recall']}, precision "
                 f"{rr['precision']} ({rr['found_outside_planted']:,} outside the planted pairs) |")
    bt, bi = lk["result"]["by_text"], lk["result"]["by_id"]
    lines.append(f"| lookups, mode lsh ({bt.get('n')} by new text, {bi.get('n')} by id) | {lk['seconds']} | | | "
                 f"client {_mib(lk['memory_mib']['client'])}, Solr JVM {_mib(lk['memory_mib']['solr_jvm'])} | | "
                 f"by text p50 / p95 / p99 {bt.get('p50_ms')} / {bt.get('p95_ms')} / **{bt.get('p99_ms')}** ms; "
                 f"by id {bi.get('p50_ms')} / {bi.get('p95_ms')} / {bi.get('p99_ms')} ms |")
    m, sr, d = sp["memory_mib"], sp["result"], sp["disk_bytes"]
    lines.append(f"| `spark dedup --groups --keep` ({report['spark_master']}; pairs written after "
                 f"{sp['pairs_seconds']} s) | {sp['seconds']} | {sp['docs_per_s']:,} | {sp['ms_per_doc']} | driver "
                 f"Python {_mib(m['driver_python'])}, JVM {_mib(m['jvm'])}, Python workers "
                 f"{_mib(m['python_workers'])} | Spark temp peak {_mb(d['spark_temp_peak'])} MB "
                 f"({d['spark_temp_bytes_per_doc']:,} B a doc); pairs {_mb(d['pairs_file'])}, groups "
                 f"{_mb(d['groups_file'])}, keep {_mb(d['keep_file'])} MB | {sr['pairs']:,} pairs, recall "
                 f"{sr['recall']}, precision {sr['precision']}; pairs file identical to the report's: "
                 f"**{sr['pairs_file_identical_to_report']}** |")
    lines += ["", f"Solr's JVM peak RSS over the run: {_mib(report['solr_jvm_peak_rss_mib'])} MiB. Solr started in "
              f"{report['solr_start_seconds']} s (not in the steps)."]
    reads = {name: step.get("read_from_disk") for name, step in s.items() if step.get("read_from_disk") is not None}
    if reads:
        lines += ["", "Read from disk during each step (the whole machine, /proc/vmstat `pgpgin`; what the page cache "
                      "did not hold): " + ", ".join(f"{name} {value / 1e9:,.2f} GB" for name, value in reads.items())
                  + "."]
    for failed in report.get("failed_attempts", []):
        m_f = failed["memory_mib"]
        lines += ["", f"**A failed attempt** (kept, not hidden): `{failed['command']}` exited with "
                      f"{failed['exit_code']} after {failed['seconds']} s: {failed['error']} (peak driver Python "
                      f"{_mib(m_f['driver_python'])}, JVM {_mib(m_f['jvm'])}, Python workers "
                      f"{_mib(m_f['python_workers'])} MiB)."]
    for again in report.get("resumed", []):
        lines += ["", f"Resumed at {again['at']} (load average {again['load_average']}): `{again['command']}` ran "
                      "the steps the failed attempt had not finished; the others are from the first run."]
    ph = m.get("by_phase") or {}
    ev = sp.get("spark") or {}
    if ph.get("groups_and_keep") and "pairs" in ev:
        a, b = ph["pairs"], ph["groups_and_keep"]
        lines += ["", "| spark dedup phase | driver Python MiB | JVM MiB | Python workers MiB | task s | shuffle write MB "
                  "| spilled to disk MB |", "|---|---:|---:|---:|---:|---:|---:|"]
        for name, peaks in (("pairs (read, sign, band join, verify, pairs file)", a),
                            ("groups and keep list (on the executors)", b)):
            key = "pairs" if name.startswith("pairs") else "groups_and_keep"
            e = ev[key]
            lines.append(f"| {name} | {_mib(peaks['peak_driver_python_mib'])} | {_mib(peaks['peak_jvm_mib'])} | "
                         f"{_mib(peaks['peak_python_workers_mib'])} | {e['task_ms'] / 1000:,.1f} | "
                         f"{_mb(e['shuffle_write_bytes'])} | {_mb(e['spilled_disk_bytes'])} |")
        lines += ["", f"Cached blocks (memory + disk): {_mb(ev['cached_bytes_after_pairs'])} MB once the pairs were "
                  f"written, {_mb(ev['cached_bytes_peak'])} MB at the peak."]
    lines += ["", "## Sizing formulas of the docs, checked", "",
              f"Predicted for {n:,} documents by the formulas as the docs state them (constants in "
              "`benchmarks/corpus_scale.py`, FORMULAS); flagged when the measured value is more than "
              f"{TOLERANCE:.0%} off.", "",
              "| quantity | formula | source | predicted | measured | measured / predicted | |",
              "|---|---|---|---:|---:|---:|---|"]
    for row in report["sizing"]:
        flag = "**off by more than 20%**" if row["flag"] else ""
        note = f" ({row['note']})" if row["note"] else ""
        lines.append(f"| {row['quantity']} ({row['unit']}) | {row['formula']}{note} | {row['source']} | "
                     f"{row['predicted']:,} | {'–' if row['measured'] is None else format(row['measured'], ',')} | "
                     f"{'–' if row['ratio'] is None else row['ratio']} | {flag} |")
    for target, ex in report.get("extrapolated", {}).items():
        lines += ["", _extrapolation_line(int(target), {**ex, "fit": "this run scaled linearly, its fixed costs "
                                                                     "too: an upper bound (--table fits two sizes)"})]
    return "\n".join(lines) + "\n"


def _extrapolation_line(target: int, ex: dict) -> str:
    dg = ex["disk_gb"]
    return (f"Extrapolated to {target:,} documents ({ex['fit']}): {ex['total_seconds'] / 60:,.0f} min for the steps ("
            + ", ".join(f"{k} {v / 60:,.1f} min" for k, v in ex["seconds"].items()) + ")"
            + (f", plus {ex['corpus_generation_seconds'] / 60:,.0f} min to generate the corpus"
               if ex.get("corpus_generation_seconds") else "")
            + f"; disk at the fullest {dg['peak']} GB (corpus {dg['corpus']}, Solr data during index and optimize "
            f"{dg['solr_peak']}, index + signature store {dg['index_plus_signature_store']}, Spark temp "
            f"{dg['spark_temp']}, outputs {dg['outputs']}).")


# ---------------------------------------------------------------------------------------------------------------
# The cost-growth table across sizes
# ---------------------------------------------------------------------------------------------------------------


def _row(report: dict) -> dict:
    """One size's figures for the growth table."""
    n = report["docs"]
    s = report["steps"]
    sp = s["spark_dedup"]
    return {
        "docs": n, "written": (report.get("provenance") or {}).get("written_utc"),
        "load_average_start": report.get("load_average_start"),
        "ms_per_doc": {k: s[k]["ms_per_doc"] for k in ("index", "optimize", "report", "spark_dedup")},
        "lookup_p99_ms": s["lookup"]["result"]["by_text"].get("p99_ms"),
        "memory_mib": {"index_client": s["index"]["memory_mib"]["client"],
                       "report_client": s["report"]["memory_mib"]["client"],
                       "lookup_client": s["lookup"]["memory_mib"]["client"],
                       "solr_jvm": report.get("solr_jvm_peak_rss_mib"),
                       "spark_driver_python": sp["memory_mib"]["driver_python"],
                       "spark_jvm": sp["memory_mib"]["jvm"],
                       "spark_python_workers": sp["memory_mib"]["python_workers"]},
        "bytes_per_doc": {"corpus": report["corpus"]["bytes_per_doc"],
                          "index": s["optimize"]["disk_bytes"]["index_bytes_per_doc"],
                          "solr_data_peak": round(max(s["index"]["disk_bytes"]["solr_data_peak"],
                                                      s["optimize"]["disk_bytes"]["solr_data_peak"]) / n, 1),
                          "signature_store": s["report"]["disk_bytes"]["signature_store_bytes_per_doc"],
                          "spark_temp": sp["disk_bytes"]["spark_temp_bytes_per_doc"]},
        "recall": {"report": s["report"]["result"]["recall"], "spark": sp["result"]["recall"]},
        "spark_pairs_identical": sp["result"]["pairs_file_identical_to_report"],
        "sizing_flags": [r["quantity"] for r in report.get("sizing", []) if r["flag"]],
    }


def growth_table(out_dir: Path) -> dict:
    """The latest results file of each size in ``out_dir``, as rows, and the growth from each size to the next:
    the ratio of the per-document costs (1.0 = linear) and of the memory peaks (flat = 1.0 for the driver)."""
    latest: dict[int, tuple[str, dict]] = {}
    for path in sorted(out_dir.glob("*-corpus-scale-*.json")):
        if "-corpus-scale-table-" in path.name:
            continue
        report = json.loads(path.read_text())
        if report.get("benchmark") != "corpus_scale":
            continue
        key = (report.get("provenance") or {}).get("written_utc") or path.name
        if report["docs"] not in latest or key >= latest[report["docs"]][0]:
            latest[report["docs"]] = (key, {**_row(report), "file": path.name})
    rows = [latest[n][1] for n in sorted(latest)]
    reports = {n: json.loads((out_dir / latest[n][1]["file"]).read_text()) for n in latest}
    growth = []
    for a, b in zip(rows, rows[1:]):
        def ratios(group: str) -> dict:
            return {k: round(b[group][k] / a[group][k], 3) if a[group].get(k) and b[group].get(k) is not None
                    else None for k in b[group]}
        g = {"from": a["docs"], "to": b["docs"], "ms_per_doc": ratios("ms_per_doc"),
             "bytes_per_doc": ratios("bytes_per_doc"), "memory": ratios("memory_mib")}
        g["grows_faster_than_n"] = sorted(f"{group}.{k}" for group in ("ms_per_doc", "bytes_per_doc")
                                          for k, v in g[group].items() if v is not None and v > 1 + TOLERANCE)
        g["driver_not_flat"] = sorted(k for k in ("spark_driver_python",)
                                      if g["memory"].get(k) is not None and g["memory"][k] > 1 + TOLERANCE)
        growth.append(g)
    # Each size checked again by the formulas as the docs state them now (a results file keeps the check of its day).
    sizing_now = {str(n): sizing_check(n, reports[n]) for n in sorted(reports)}
    return {"benchmark": "corpus_scale_table", "sizes": rows, "growth": growth, "sizing_now": sizing_now,
            "extrapolated": fitted_extrapolation([reports[n] for n in sorted(reports)])}


STEPS_TIMED = ("index", "optimize", "report", "spark_dedup")


def fitted_extrapolation(reports: list[dict], targets=(1_000_000, 10_000_000)) -> dict:
    """Wall time of each step at each target size from the two largest sizes measured, as ``a + b x N`` (a fixed
    cost and a cost a document: a straight line through the two points, so a JVM's start or Spark's fixed
    stages are not multiplied by N), and the disk scaled from the largest run. Targets above the largest only."""
    if not reports:
        return {}
    last = reports[-1]
    out = {}
    for target in targets:
        if target <= last["docs"]:
            continue
        ex = extrapolate(last, target)
        if len(reports) >= 2:
            first = reports[-2]
            n1, n2 = first["docs"], last["docs"]
            for name in STEPS_TIMED:
                t1, t2 = first["steps"][name]["seconds"], last["steps"][name]["seconds"]
                slope = max((t2 - t1) / (n2 - n1), 0.0)
                ex["seconds"][name] = round(t2 + slope * (target - n2), 0)
            ex["total_seconds"] = sum(ex["seconds"].values())
            ex["fit"] = f"straight line through {n1:,} and {n2:,} documents"
        else:
            ex["fit"] = f"{last['docs']:,} documents scaled linearly (fixed costs scaled too: an upper bound)"
        out[str(target)] = ex
    return out


def render_table(table: dict) -> str:
    rows = table["sizes"]
    lines = ["# Corpus scale: cost growth by size", "",
             "From the latest `benchmarks/results/*-corpus-scale-*-<N>.json` of each size "
             "(`python -m benchmarks.corpus_scale --table`). Times are wall times on a machine that may have been "
             "shared: each file states its load average.", "",
             "| docs | index ms/doc | optimize ms/doc | report ms/doc | spark dedup ms/doc | lookup p99 ms (new text) "
             "| recall report / spark | load at start | file |", "|---:|---:|---:|---:|---:|---:|---|---|---|"]
    for r in rows:
        t = r["ms_per_doc"]
        lines.append(f"| {r['docs']:,} | {t['index']} | {t['optimize']} | {t['report']} | {t['spark_dedup']} | "
                     f"{r['lookup_p99_ms']} | {r['recall']['report']} / {r['recall']['spark']} | "
                     f"{r['load_average_start']} | {r['file']} |")
    lines += ["", "| docs | index client | report client | lookup client | Solr JVM | spark driver Python | spark JVM "
              "| spark Python workers |", "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        m = r["memory_mib"]
        lines.append(f"| {r['docs']:,} | " + " | ".join(_mib(m[k]) for k in (
            "index_client", "report_client", "lookup_client", "solr_jvm", "spark_driver_python", "spark_jvm",
            "spark_python_workers")) + " |")
    lines += ["", "Peak memory in MiB.", "", "| docs | corpus B/doc | index B/doc | Solr data peak B/doc | "
              "signature store B/doc | Spark temp B/doc | sizing formulas off by > 20% |",
              "|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        b = r["bytes_per_doc"]
        lines.append(f"| {r['docs']:,} | " + " | ".join(f"{b[k]:,}" for k in (
            "corpus", "index", "solr_data_peak", "signature_store", "spark_temp"))
            + f" | {', '.join(r['sizing_flags']) or 'none'} |")
    if table["growth"]:
        lines += ["", "Growth from one size to the next (ratio of the per-document cost; 1.0 = linear in N; memory: "
                  "ratio of the peaks, 1.0 = flat):", "",
                  "| from -> to | index | optimize | report | spark dedup | index B/doc | signature store B/doc | "
                  "Spark temp B/doc | spark driver Python | spark JVM | report client | faster than N |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        for g in table["growth"]:
            t, b, m = g["ms_per_doc"], g["bytes_per_doc"], g["memory"]
            lines.append(f"| {g['from']:,} -> {g['to']:,} | {t['index']} | {t['optimize']} | {t['report']} | "
                         f"{t['spark_dedup']} | {b['index']} | {b['signature_store']} | {b['spark_temp']} | "
                         f"{m['spark_driver_python']} | {m['spark_jvm']} | {m['report_client']} | "
                         f"{', '.join(g['grows_faster_than_n'] + g['driver_not_flat']) or 'none'} |")
    checks = table.get("sizing_now") or {}
    if checks:
        sizes = list(checks)
        lines += ["", "The sizing formulas as the docs state them now, against each size (measured / predicted; "
                  "**bold**: more than 20% off; the results files keep the check of their day):", "",
                  "| quantity | formula | " + " | ".join(f"{int(n):,}" for n in sizes) + " |",
                  "|---|---|" + "---:|" * len(sizes)]
        for i, row in enumerate(checks[sizes[0]]):
            cells = []
            for n in sizes:
                r = checks[n][i]
                cells.append("" if r["ratio"] is None else f"**{r['ratio']}**" if r["flag"] else str(r["ratio"]))
            lines.append(f"| {row['quantity']} ({row['unit']}) | {row['formula']} | " + " | ".join(cells) + " |")
    for target, ex in table.get("extrapolated", {}).items():
        lines += ["", _extrapolation_line(int(target), ex)]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------------------------


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=None, help="corpus size (required unless --table)")
    ap.add_argument("--table", action="store_true",
                    help="only merge the existing results files into the cost-growth table")
    ap.add_argument("--seed", type=int, default=1, help="corpus seed (default 1, as benchmarks/run.py)")
    ap.add_argument("--heap", default="4g", help="heap of the dedicated Solr (default 4g)")
    ap.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    ap.add_argument("--spark-driver-memory", default="4g", help="spark dedup --driver-memory (default 4g)")
    ap.add_argument("--shuffle-partitions", type=int, default=8,
                    help="spark dedup --shuffle-partitions (default 8, the command's; fewer tasks for a smoke run)")
    ap.add_argument("--lookups", type=int, default=300, help="timed lookups by id and by new text (default 300)")
    ap.add_argument("--warmup", type=int, default=30, help="untimed lookups first (default 30)")
    ap.add_argument("--keep-solr", action="store_true",
                    help="keep the Solr index on disk during the Spark step (default: deleted, to free the disk)")
    ap.add_argument("--resume", action="store_true",
                    help="continue the run of this size that failed: keep the steps its partial results hold "
                         "(benchmarks/work/scale-<N>/partial.json) and run only the others")
    ap.add_argument("--keep-work", action="store_true",
                    help="keep benchmarks/work/scale-<N> (outputs, logs, Spark's event log) after the run")
    ap.add_argument("--work-dir", type=Path, default=BENCH / "work")
    ap.add_argument("--out-dir", type=Path, default=BENCH / "results")
    ap.add_argument("--machine", default=None, help="tag in the output names (default e.g. 2core-24g)")
    args = ap.parse_args(argv)
    if not args.table and args.docs is None:
        ap.error("--docs N is required (or --table)")
    if args.docs is not None and args.docs < 100:
        ap.error("--docs must be at least 100")
    args.argv = list(argv) if argv is not None else None
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    machine = args.machine or machine_tag()
    today = dt.date.today().isoformat()
    if args.table:
        table = growth_table(args.out_dir)
        if not table["sizes"]:
            raise SystemExit(f"no corpus-scale results files in {args.out_dir}")
        markdown = render_table(table)
        write_result_files(args.out_dir / f"{today}-corpus-scale-table-{machine}", table, markdown)
        print(markdown)
        return 0
    report = run(args)
    markdown = render(report)
    write_result_files(args.out_dir / f"{today}-corpus-scale-{machine}-{args.docs}", report, markdown)
    print(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
