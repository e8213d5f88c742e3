"""Soak with faults (issue 47, point 2): several processes run ``check_and_add`` for minutes while Solr is killed
with SIGKILL and restarted; at the end nothing acknowledged is lost and no near-duplicate pair was admitted twice.

    flock /tmp/bench.lock python benchmarks/soak.py                      # 4 processes x 10 minutes, 2 kills
    flock /tmp/bench.lock python benchmarks/soak.py --no-strict          # the same without the band locks

Starts its own local Solr (a free port, a throwaway data directory under ``--work-dir``) and stores the
collection's settings (``IndexSettings()`` unless ``--fields``). Then:

1. ``--processes`` worker processes each walk the same sequence of text *families*, step by step, and send one
   text per step through ``check_and_add(strict=True)`` (``--no-strict``: ``commit_within_ms=1000``, what
   ``NearDupIndex`` sends) under an id of their own (``p<worker>-<step>``). Which text a worker sends at a
   step is a pure function of ``--seed``, the worker and the step (:class:`TextStream`), so the run can be
   replayed and checked from the journals alone. A step's family is one of

   - *contest* (60%): every worker sends a member of the same family at about the same moment: its original,
     an exact copy (the same normalised text: other case, punctuation or spacing) or a near copy (one word
     replaced, a position of the worker's own: J about 0.94 with the original, 0.88 between two near copies
     of ``--words`` 100). Exactly one member should be admitted;
   - *new* (25%): every worker sends a text nobody else sends. Each should be admitted;
   - *late* (15%): every worker sends an exact or near copy of a contest family 3-300 steps back, whose
     member was admitted long ago (and across restarts). Each should be refused.

   A worker may be at most one step ahead of the slowest (it waits up to 5 s for it): the workers race on the
   same family within milliseconds, as the issue asks ("interleaved on purpose"), without a hard barrier a
   worker stuck in retries would hold everyone at.
2. Each worker appends every outcome to its journal (``journal-p<worker>.jsonl``, one JSON line, flushed at
   once): id, family, kind, ``added`` / ``exact`` / ``near`` / ``already_indexed`` (what it was refused for and
   the best match) or ``error`` (the exception; the worker waits a second and goes on with its next step: an
   unacknowledged call is never counted as added), and when the call started and ended.
3. Meanwhile a fault thread SIGKILLs Solr ``--kills`` times, spread over the run (evenly, each moved by up to a
   fifth of the spacing; never within 5 s of the last restart), leaves it dead ``--down-seconds`` and restarts
   it on the same port and data directory (``LocalSolr.start``, which returns once the update log is
   replayed). The workers ride it out on the client's own retries (exponential backoff, up to 2 minutes).
4. After ``--minutes`` the workers finish their call in flight and stop; then, with Solr up: a hard commit, and

   - every acknowledged add fetched by id (real-time get): present with the text sent, present with another
     text, or absent; documents present that no journal acknowledges are listed too;
   - *pairs admitted twice*: the collection's report at the threshold (``find_pairs`` with method exact: every
     pair of documents in the collection with shingle Jaccard >= threshold; each of its documents was admitted
     by a check, so every pair is a near-duplicate pair admitted twice), and, independently, the library's
     all-pairs join (:func:`~neardup_solr.pairs.allpairs.prefix_join`) over the texts of the acknowledged adds.
     Each pair says whether the two texts share an LSH band key (what strict exclusion covers), whether their
     calls overlapped and whether one overlapped an outage;
   - the *single-process replay*: a fresh core on the same node, the same settings, the acknowledged adds sent
     through ``check_and_add`` by one process in the order they were acknowledged, then its report. The two
     reports should be equal; the differences are listed;
   - faults survived: a kill counts as survived when Solr came back and every worker got an acknowledged
     answer after it; the longest outage a worker saw (the longest time between two acknowledged answers
     around a kill), Solr's own down time, the errors and the client's retry warnings of each worker;
   - ``check_and_add`` calls per second and the latency per outcome (all calls, and the calls that overlapped
     no outage).

Writes ``benchmarks/results/<date>-soak-<machine>.json`` and ``.md`` (``-soak-no-strict-`` without strict;
``--out-dir``, ``--machine``, default this machine's tag such as ``2core-24g``). Exit code 0 when the run
completed, whatever it measured (the files say which goal was met); non-zero only when the script itself failed.
The journals stay in the work directory; Solr's data is deleted unless ``--work-dir`` was given.
"""

from __future__ import annotations

import argparse
import json
import logging
import multiprocessing as mp
import os
import platform
import random
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, Iterable, Sequence

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.provenance import git_commit, load_average_text, write_result_files  # noqa: E402
from benchmarks.run import machine_tag, percentiles  # noqa: E402
from neardup_solr.engine.find import find_pairs  # noqa: E402
from neardup_solr.engine.online import ADDED, ALREADY_INDEXED, CheckResult, check_and_add  # noqa: E402
from neardup_solr.engine.report import iter_documents  # noqa: E402
from neardup_solr.options import ThresholdOptions  # noqa: E402
from neardup_solr.pairs.allpairs import prefix_join, token_sets  # noqa: E402
from neardup_solr.processes import process_alive  # noqa: E402
from neardup_solr.signing.settings import IndexSettings  # noqa: E402
from neardup_solr.solr import settings as solr_settings  # noqa: E402
from neardup_solr.solr.backends.local import LocalSolr  # noqa: E402
from neardup_solr.solr.band_locks import LOCK_PREFIX, lock_info  # noqa: E402
from neardup_solr.solr.claims import CLAIM_PREFIX, claim_id, claim_info  # noqa: E402
from neardup_solr.solr.client import SolrClient  # noqa: E402
from neardup_solr.solr.maintenance import require_neardup_schema  # noqa: E402
from neardup_solr.solr.searcher import Searcher  # noqa: E402
from neardup_solr.solr.settings_store import ensure_index_settings  # noqa: E402
from tests.netutil import free_port  # noqa: E402

log = logging.getLogger("benchmarks.soak")

LOG_FORMAT = "%(asctime)s %(processName)s %(name)s %(levelname)s: %(message)s"

# What a step's family is (see the module docstring), with the share of steps of each.
CONTEST, NEW, LATE = "contest", "new", "late"
FAMILY_SHARES = ((CONTEST, 0.60), (NEW, 0.25), (LATE, 0.15))
# What a worker sends in a contest family, with its weight.
CONTEST_ROLES = (("original", 0.3), ("exact", 0.3), ("near", 0.4))
# How far back a late copy's family is: far enough that its member was admitted well before, near enough that
# some of them fall on the other side of a restart.
LATE_BACK_MIN, LATE_BACK_MAX, LATE_TRIES = 3, 300, 20
VOCABULARY_SIZE = 5000
# Near copies replace a word this far from either end or more, so every replaced word changes three shingles.
EDGE_WORDS = 5

# A worker starts step k only when every other worker has started step k - 1, waiting at most this long (a worker
# held in retries or in a long wait for band locks must not hold the others for as long).
PACE_LAG_STEPS = 1
PACE_WAIT_SECONDS = 5.0
PACE_POLL_SECONDS = 0.002
# After a call that raised: a pause before the next step, so that a worker does not spin through steps while Solr
# answers nothing.
ERROR_PAUSE_SECONDS = 1.0
# What NearDupIndex sends without strict (its default): used by --no-strict, and by the single-process replay,
# which sees its own adds at once through the process's memory of recent adds.
NON_STRICT_COMMIT_WITHIN_MS = 1000
# The fault thread never kills Solr sooner than this after it came back, nor later than this before the end.
MIN_UP_SECONDS = 5.0
RESTART_ATTEMPTS = 3
# How long the end of the run waits for the workers to finish their call in flight: the client's retries (2
# minutes by default), a strict check's wait for its band locks (1 minute) and the start of a restart.
WORKER_JOIN_SECONDS = 420.0
PROGRESS_EVERY_SECONDS = 15.0
REPLAY_CORE = "soak_replay"
# Pairs and differences listed one by one in the results (all are counted).
LISTED = 30
GET_CHUNK = 200
DONE_STEP = 2**62  # a finished worker's progress: nobody waits for it


# ---------------------------------------------------------------------------------------------- the texts
@dataclass(frozen=True)
class Item:
    """One text a worker sends: its id, its family, what it is (``new``, ``original``, ``exact``, ``near``,
    ``late-exact``, ``late-near``) and the text itself."""

    id: str
    family: str
    kind: str
    text: str


class TextStream:
    """The deterministic texts of the soak: ``item(worker, step)`` depends on the seed, the number of workers,
    the number of words, the worker and the step only, so any process computes any worker's text.

    Built like ``tests/strict_pairs.py``'s lockstep pairs (random words from a shared vocabulary; a near copy
    replaces one word by one no text holds), but each family is seeded on its own instead of drawn from one
    stream, so a family is computed without the ones before it, and texts are longer: with 60 words two near
    copies of one original are at J 0.81, where 1.4% of such pairs share no LSH band and so fall outside what
    strict exclusion guarantees; with 100 words they are at 0.88 (1 in 20,000)."""

    def __init__(self, seed: int, processes: int, words: int):
        self.seed, self.processes, self.words = seed, processes, words
        rng = random.Random(f"{seed}:vocabulary")
        self.vocabulary = [f"w{rng.getrandbits(40):010x}" for _ in range(VOCABULARY_SIZE)]

    def _rng(self, *parts: object) -> random.Random:
        return random.Random(":".join(str(p) for p in (self.seed, *parts)))

    @staticmethod
    def _draw_kind(rng: random.Random) -> str:
        x, total = rng.random(), 0.0
        for kind, share in FAMILY_SHARES:
            total += share
            if x < total:
                return kind
        return FAMILY_SHARES[-1][0]

    def drawn_kind(self, step: int) -> str:
        """The kind drawn for ``step`` (a late step without an earlier contest to copy is sent as a contest)."""
        return self._draw_kind(self._rng("family", step))

    def _late_target(self, rng: random.Random, step: int) -> int | None:
        for _ in range(LATE_TRIES):
            target = step - rng.randint(LATE_BACK_MIN, LATE_BACK_MAX)
            if target >= 0 and self.drawn_kind(target) == CONTEST:
                return target
        return None

    def original_words(self, family: str) -> list[str]:
        return self._rng("words", family).sample(self.vocabulary, self.words)

    def original(self, family: str) -> str:
        return " ".join(self.original_words(family))

    def near_copy(self, family: str, slot: int) -> str:
        """The original with one word replaced, at a position of ``slot``'s own (slots 0..2P-1 never share one)."""
        positions = self._rng("positions", family).sample(range(EDGE_WORDS, self.words - EDGE_WORDS),
                                                          2 * self.processes)
        words = self.original_words(family)
        words[positions[slot]] = f"x{self._rng('new word', family, slot).getrandbits(40):010x}"
        return " ".join(words)

    @staticmethod
    def exact_copy(text: str, rng: random.Random) -> str:
        """The same normalised text written otherwise: what the claims on a text's MD5 must recognise."""
        style = rng.choice(("upper", "punctuation", "spacing"))
        if style == "upper":
            return text.upper()
        if style == "punctuation":
            return ", ".join(text.split()) + "!"
        return "  " + "   ".join(text.split()) + " "

    def item(self, worker: int, step: int) -> Item:
        rng = self._rng("family", step)
        kind = self._draw_kind(rng)
        doc_id = f"p{worker}-{step:06d}"
        target = self._late_target(rng, step) if kind == LATE else None
        if kind == NEW:
            family = f"n{step}-{worker}"
            return Item(doc_id, family, "new", self.original(family))
        if target is not None:
            family = f"f{target}"
            exact = [rng.random() < 0.5 for _ in range(self.processes)][worker]
            if exact:
                return Item(doc_id, family, "late-exact",
                            self.exact_copy(self.original(family), self._rng("surface", step, worker)))
            return Item(doc_id, family, "late-near", self.near_copy(family, self.processes + worker))
        family = f"f{step}"
        names, weights = zip(*CONTEST_ROLES)
        role = [rng.choices(names, weights)[0] for _ in range(self.processes)][worker]
        if role == "original":
            return Item(doc_id, family, "original", self.original(family))
        if role == "exact":
            return Item(doc_id, family, "exact", self.exact_copy(self.original(family),
                                                                  self._rng("surface", step, worker)))
        return Item(doc_id, family, "near", self.near_copy(family, worker))


# ---------------------------------------------------------------------------------------------- the workers
@dataclass(frozen=True)
class WorkerSetup:
    """What a worker process needs (picklable: workers are spawned)."""

    worker: int
    url: str
    seed: int
    processes: int
    words: int
    threshold: float | None
    strict: bool
    journal: str
    log_level: int


class MessageCounter(logging.Handler):
    """Counts the library's log records by message template: the client's retry warnings, lock and claim
    takeovers, checks that found their locks lapsed."""

    def __init__(self) -> None:
        super().__init__(level=logging.INFO)
        self.counts: Counter[str] = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        self.counts[f"{record.levelname} {str(record.msg)[:90]}"] += 1


def _configure_logging(level: int) -> MessageCounter:
    root = logging.getLogger()
    if not any(getattr(h, "_soak", False) for h in root.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(LOG_FORMAT))
        handler.setLevel(level)  # the library's INFO records reach the counter, not the terminal
        handler._soak = True  # type: ignore[attr-defined]
        root.addHandler(handler)
    root.setLevel(min(level, logging.INFO))
    counter = MessageCounter()
    library = logging.getLogger("neardup_solr")
    library.setLevel(logging.INFO)
    library.addHandler(counter)
    return counter


def _outcome(result: CheckResult) -> dict[str, Any]:
    """What a call's answer says: added, or refused for what (an identical text, a near one) and for whom."""
    if result.added:
        return {"outcome": "added"}
    if result.status == ALREADY_INDEXED:
        return {"outcome": "already_indexed"}
    if not result.matches:
        return {"outcome": "refused"}
    best = result.matches[0]
    return {"outcome": "exact" if best.exact else "near", "match": best.id, "similarity": round(best.similarity, 4),
            **({"pending": True} if best.pending else {})}


def _keep_pace(progress, worker: int, step: int, stop_at: float) -> tuple[float, bool]:
    """Wait until every other worker has started step ``step - PACE_LAG_STEPS``; (seconds waited, gave up)."""
    started = time.monotonic()
    while time.time() < stop_at:
        slowest = min((progress[q] for q in range(len(progress)) if q != worker), default=DONE_STEP)
        if slowest >= step - PACE_LAG_STEPS:
            return time.monotonic() - started, False
        if time.monotonic() - started >= PACE_WAIT_SECONDS:
            return time.monotonic() - started, True
        time.sleep(PACE_POLL_SECONDS)
    return time.monotonic() - started, False


def run_worker(setup: WorkerSetup, progress, counters, ready, start, stop_at, stop) -> None:
    """One worker process: the loop of the module docstring, step 1-2."""
    counter = _configure_logging(setup.log_level)
    stream = TextStream(setup.seed, setup.processes, setup.words)
    client = SolrClient(setup.url)
    searcher = Searcher(client)  # reads the stored settings now, while Solr is surely up
    commit_within_ms = None if setup.strict else NON_STRICT_COMMIT_WITHIN_MS
    with ready.get_lock():
        ready.value += 1
    start.wait()
    deadline = stop_at.value
    paced_seconds, pace_gave_up = 0.0, 0
    step = 0
    base = 4 * setup.worker  # this worker's counters: calls, added, refused, errors
    with open(setup.journal, "a", encoding="utf-8") as journal:
        while time.time() < deadline and not stop.is_set():
            waited, gave_up = _keep_pace(progress, setup.worker, step, deadline)
            paced_seconds += waited
            pace_gave_up += gave_up
            if time.time() >= deadline:
                break
            progress[setup.worker] = step
            item = stream.item(setup.worker, step)
            began, t0 = time.time(), time.perf_counter()
            try:
                answer = _outcome(check_and_add(client, item.id, item.text, setup.threshold, searcher=searcher,
                                                strict=setup.strict, commit_within_ms=commit_within_ms))
            except Exception as exc:  # noqa: BLE001 - every failure is an outcome to record, then go on
                message = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""
                answer = {"outcome": "error", "error": type(exc).__name__, "message": message}
            seconds = time.perf_counter() - t0
            line = {"worker": setup.worker, "step": step, "id": item.id, "family": item.family, "kind": item.kind,
                    **answer, "started": round(began, 4), "ended": round(time.time(), 4),
                    "seconds": round(seconds, 5)}
            journal.write(json.dumps(line) + "\n")
            journal.flush()
            counters[base] += 1
            if answer["outcome"] in (ADDED, ALREADY_INDEXED):
                counters[base + 1] += 1
            elif answer["outcome"] == "error":
                counters[base + 3] += 1
                log.warning("worker %d: %s %s failed (%s: %s); going on", setup.worker, item.kind, item.id,
                            answer["error"], answer["message"][:120])
                time.sleep(ERROR_PAUSE_SECONDS)
            else:
                counters[base + 2] += 1
            step += 1
        progress[setup.worker] = DONE_STEP
        summary = {"worker": setup.worker, "steps": step, "pace_wait_s": round(paced_seconds, 2),
                   "pace_waits_given_up": pace_gave_up, "library_messages": dict(counter.counts.most_common())}
        journal.write(json.dumps({"summary": summary}) + "\n")
        journal.flush()


# ---------------------------------------------------------------------------------------------- the faults
def kill_moments(duration_s: float, kills: int, seed: int) -> list[float]:
    """Seconds after the start at which to kill: evenly spread, each moved by up to a fifth of the spacing."""
    spacing = duration_s / (kills + 1)
    rng = random.Random(f"{seed}:kills")
    return [spacing * (i + 1) + rng.uniform(-0.2, 0.2) * spacing for i in range(kills)]


class FaultInjector(threading.Thread):
    """SIGKILLs the local Solr at the given moments and restarts it on the same port and data directory; each
    kill's record says when, how long Solr was away and whether it came back."""

    def __init__(self, solr: LocalSolr, moments: Sequence[float], down_seconds: float, started_at: float,
                 stop_at: float):
        super().__init__(name="fault-injector", daemon=True)
        self.solr, self.moments, self.down_seconds = solr, list(moments), down_seconds
        self.started_at, self.stop_at = started_at, stop_at  # wall clock, as the journals
        self.kills: list[dict[str, Any]] = []
        self.skipped: list[dict[str, Any]] = []
        self.halt = threading.Event()

    def run(self) -> None:
        back_at = self.started_at
        for number, moment in enumerate(self.moments, 1):
            at = max(self.started_at + moment, back_at + MIN_UP_SECONDS)
            if at > self.stop_at - MIN_UP_SECONDS:
                self.skipped.append({"kill": number, "planned_s": round(moment, 1),
                                     "why": "Solr came back too late for it to fall inside the run"})
                continue
            if self.halt.wait(max(0.0, at - time.time())):
                return
            record = self.kill_and_restart(number)
            self.kills.append(record)
            back_at = record.get("back_at") or time.time()

    def kill_and_restart(self, number: int) -> dict[str, Any]:
        record: dict[str, Any] = {"kill": number}
        pid = self.solr.pid()
        if pid is None:
            record["killed"] = False
            record["why"] = "Solr was not running at the moment of the kill"
        else:
            record["pid"] = pid
            record["killed_at"] = time.time()
            os.kill(pid, signal.SIGKILL)
            record["killed"] = True
            gone_by = time.monotonic() + 30
            while process_alive(pid) and time.monotonic() < gone_by:
                time.sleep(0.05)
            log.warning("kill %d: Solr (pid %d) killed with SIGKILL at %.1f s", number, pid,
                        record["killed_at"] - self.started_at)
            time.sleep(self.down_seconds)
        errors = []
        for _ in range(RESTART_ATTEMPTS):
            began = time.time()
            try:
                started = self.solr.start()
            except Exception as exc:  # noqa: BLE001 - recorded; the next attempt may succeed
                errors.append(f"{type(exc).__name__}: {str(exc)[:300]}")
                log.warning("kill %d: restart failed (%s); trying again", number, errors[-1])
                continue
            record.update(restarted=True, back_at=time.time(), restart_s=round(time.time() - began, 2),
                          replay_wait_s=round(started.replay_wait, 2), new_pid=self.solr.pid())
            if "killed_at" in record:
                record["solr_down_s"] = round(record["back_at"] - record["killed_at"], 2)
            log.warning("kill %d: Solr back after %.1f s (update log replay %.1f s)", number,
                        record.get("solr_down_s", 0.0), started.replay_wait)
            break
        else:
            record["restarted"] = False
        if errors:
            record["restart_errors"] = errors
        return record


# ---------------------------------------------------------------------------------------------- the run
@dataclass
class RunOutcome:
    """What the running phase left: the journals, the faults, the workers' exits and the clock."""

    journals: list[Path]
    started_at: float
    ended_at: float
    kills: list[dict]
    skipped_kills: list[dict]
    exit_codes: list[int | None]
    killed_workers: list[int] = field(default_factory=list)


def run_soak(args: argparse.Namespace, solr: LocalSolr, run_dir: Path, threshold: float | None) -> RunOutcome:
    """Start the workers, let them run ``--minutes`` while the fault thread kills Solr, and wait for them."""
    ctx = mp.get_context("spawn")
    n = args.processes
    progress = ctx.RawArray("q", n)
    counters = ctx.RawArray("q", 4 * n)
    ready, stop_at = ctx.Value("i", 0), ctx.Value("d", 0.0)
    start, stop = ctx.Event(), ctx.Event()
    journals = [run_dir / f"journal-p{w}.jsonl" for w in range(n)]
    level = logging.INFO if args.progress else logging.WARNING
    workers = [ctx.Process(target=run_worker, name=f"soak-worker-{w}",
                           args=(WorkerSetup(w, solr.core_url, args.seed, n, args.words, threshold, not args.no_strict,
                                             str(journals[w]), level), progress, counters, ready, start, stop_at,
                                 stop))
               for w in range(n)]
    for worker in workers:
        worker.start()
    injector: FaultInjector | None = None
    killed_workers: list[int] = []
    try:
        ready_by = time.monotonic() + 300
        while ready.value < n:
            dead = [w.name for w in workers if not w.is_alive()]
            if dead or time.monotonic() > ready_by:
                raise RuntimeError(f"the soak's workers did not get ready (ended: {', '.join(dead) or 'none'}; "
                                   "see their messages above)")
            time.sleep(0.05)
        duration = args.minutes * 60.0
        started_at = time.time()
        stop_at.value = started_at + duration
        injector = FaultInjector(solr, kill_moments(duration, args.kills, args.seed), args.down_seconds, started_at,
                                 stop_at.value)
        injector.start()
        start.set()
        log.info("soak started: %d workers, %.1f minutes, %d kill(s) at %s s", n, args.minutes, args.kills,
                 ", ".join(f"{m:.0f}" for m in injector.moments) or "-")
        join_by = stop_at.value + WORKER_JOIN_SECONDS
        next_progress = time.monotonic() + PROGRESS_EVERY_SECONDS
        while any(w.is_alive() for w in workers) and time.time() < join_by:
            time.sleep(0.2)
            if args.progress and time.monotonic() >= next_progress:
                next_progress += PROGRESS_EVERY_SECONDS
                totals = [sum(counters[4 * w + k] for w in range(n)) for k in range(4)]
                log.info("%.0f s: %d calls, %d added, %d refused, %d errors; %d kill(s) done", time.time() - started_at,
                         *totals, len(injector.kills))
        for w, worker in enumerate(workers):
            if worker.is_alive():
                log.warning("worker %d did not stop %.0f s after the end of the run; killing it", w,
                            WORKER_JOIN_SECONDS)
                worker.kill()
                killed_workers.append(w)
        ended_at = time.time()
    finally:
        stop.set()
        start.set()  # a worker still waiting to start goes and stops at once
        for worker in workers:
            worker.join(timeout=30)
            if worker.is_alive():
                worker.kill()
                worker.join(timeout=10)
        if injector is not None:
            injector.halt.set()
            injector.join(timeout=600)  # a restart under way finishes first
    return RunOutcome(journals, started_at, ended_at, injector.kills, injector.skipped,
                      [w.exitcode for w in workers], killed_workers)


# ---------------------------------------------------------------------------------------------- the checks
def read_journals(paths: Iterable[Path]) -> tuple[list[dict], dict[int, dict], int]:
    """Every call recorded (in journal order), each worker's closing summary, and lines that could not be read
    (a worker killed while writing)."""
    calls, summaries, unreadable = [], {}, 0
    for path in paths:
        if not path.exists():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                unreadable += 1
                continue
            if "summary" in entry:
                summaries[entry["summary"]["worker"]] = entry["summary"]
            else:
                calls.append(entry)
    return calls, summaries, unreadable


def _chunks(items: Sequence, size: int) -> Iterable[Sequence]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


def check_presence(client: SolrClient, adds: Sequence[dict], texts: dict[str, str]) -> dict[str, list[str]]:
    """Each acknowledged add fetched by id: present with the text sent, present with another, or absent."""
    found: dict[str, list[str]] = {"present": [], "changed": [], "absent": []}
    for chunk in _chunks([a["id"] for a in adds], GET_CHUNK):
        docs = {d["id"]: d for d in client.get_by_ids(list(chunk), "id,content")}
        for doc_id in chunk:
            doc = docs.get(doc_id)
            key = "absent" if doc is None else "present" if doc.get("content") == texts[doc_id] else "changed"
            found[key].append(doc_id)
    return found


def leftovers(client: SolrClient, held: dict, ended_at: float) -> dict[str, Any]:
    """What the online mode's own documents say after the run: the band locks left (whose, how old at the end),
    the claims, and the documents whose text holds no claim (a later identical text is then not excluded by the
    claim, only by the lookup)."""
    locks = client.select([("q", "{!prefix f=id v=$p}"), ("p", LOCK_PREFIX), ("fl", "id,content"), ("rows", 10_000)])
    owners: Counter[str] = Counter()
    ages = []
    for doc in locks["response"]["docs"]:
        info = lock_info(doc)
        owners[str(info.get("owner", "?"))] += 1
        if isinstance(info.get("held_at"), (int, float)):
            ages.append(ended_at - info["held_at"])
    unclaimed = []
    docs = list(held.values())
    for chunk in _chunks(docs, GET_CHUNK):
        claims = {d["id"]: claim_info(d).get("owner")
                  for d in client.get_by_ids([claim_id(x.md5_hash) for x in chunk], "id,content")}
        unclaimed += [x.id for x in chunk if claim_id(x.md5_hash) not in claims]
    return {"band_locks": locks["response"]["numFound"], "band_lock_owners": dict(owners.most_common(LISTED)),
            "band_lock_age_at_end_s": [round(min(ages), 1), round(max(ages), 1)] if ages else None,
            "claims": client.count("{!prefix f=id v=$p}", params=[("p", CLAIM_PREFIX)]),
            "documents_without_a_claim": len(unclaimed), "documents_without_a_claim_listed": unclaimed[:LISTED],
            "note": "one claim per admitted text is expected; band locks of a check cut off by a kill expire after "
                    "their lease, and Solr's time to live removes them later"}


def _overlaps(a: dict, b: dict) -> bool:
    return a["started"] < b["ended"] and b["started"] < a["ended"]


def _in_outage(call: dict, kills: Sequence[dict]) -> bool:
    return any(k.get("killed_at") and call["started"] < k.get("back_at", float("inf")) and
               call["ended"] > k["killed_at"] for k in kills)


def describe_pair(a: str, b: str, similarity: float, calls_by_id: dict[str, dict], texts: dict[str, str],
                  searcher: Searcher, kills: Sequence[dict]) -> dict[str, Any]:
    """One pair admitted twice: what each side was, whether the texts share an LSH band key (the case strict
    exclusion covers), whether the calls ran at the same time and whether one overlapped an outage."""
    pair: dict[str, Any] = {"ids": [a, b], "similarity": round(float(similarity), 4)}
    sides = [calls_by_id.get(x) for x in (a, b)]
    pair["sides"] = [{"kind": c["kind"], "family": c["family"], "outcome": c["outcome"]} if c else
                     {"outcome": "not in any journal"} for c in sides]
    if all(x in texts for x in (a, b)):
        keys = [set(searcher.band_keys_of(searcher.prepare(texts[x])).tolist()) for x in (a, b)]
        pair["share_an_lsh_band"] = bool(keys[0] & keys[1])
    if all(sides):
        pair["calls_overlapped"] = _overlaps(sides[0], sides[1])
        pair["a_call_overlapped_an_outage"] = any(_in_outage(c, kills) for c in sides)
    return pair


def replay(solr: LocalSolr, settings: IndexSettings, admitted: Sequence[tuple[str, str]],
           threshold: float) -> tuple[dict[str, Any], dict[tuple[str, str], float]]:
    """The single-process replay: a fresh core on the same node, the same settings, the admitted texts sent
    through check_and_add one after the other, then its report at the threshold."""
    replay_node = LocalSolr(port=solr.port, data_dir=solr.data_dir, heap=solr.heap, core=REPLAY_CORE)
    replay_node.start()  # the node runs: this only creates the core
    client = SolrClient(replay_node.core_url)
    if client.count() > 0:
        raise RuntimeError(f"the replay core {replay_node.core_url} is not empty; give the soak a fresh --work-dir")
    ensure_index_settings(client, settings)
    searcher = Searcher(client)
    refused = []
    started = time.perf_counter()
    for doc_id, text in admitted:
        result = check_and_add(client, doc_id, text, threshold, searcher=searcher,
                               commit_within_ms=NON_STRICT_COMMIT_WITHIN_MS)
        if not result.added:
            refused.append({"id": doc_id, "status": result.status,
                            "matches": [[m.id, round(m.similarity, 4)] for m in result.matches[:3]]})
    client.commit()
    seconds = time.perf_counter() - started
    pairs = {(p.id, p.neighbor_id): p.similarity
             for p in find_pairs(client, ThresholdOptions(threshold=threshold, method="exact")).pairs}
    return ({"core": REPLAY_CORE, "texts": len(admitted), "added": len(admitted) - len(refused),
             "refused": len(refused), "refused_examples": refused[:LISTED], "seconds": round(seconds, 1),
             "pairs": len(pairs)}, pairs)


def latency_by_outcome(calls: Sequence[dict]) -> dict[str, dict]:
    """p50/p95/p99 of the calls of each outcome, and of every acknowledged call."""
    by: dict[str, list[float]] = defaultdict(list)
    for c in calls:
        by[c["outcome"]].append(c["seconds"])
        if c["outcome"] != "error":
            by["acknowledged"].append(c["seconds"])
    return {k: percentiles(v) for k, v in sorted(by.items())}


def faults_survived(kills: Sequence[dict], calls: Sequence[dict], workers: int) -> list[dict]:
    """Each kill with what the workers saw of it: the time between the last acknowledged answer before the kill
    and the first after it, per worker, and whether every worker got one after Solr came back."""
    acks: dict[int, list[dict]] = defaultdict(list)
    for c in calls:
        if c["outcome"] != "error":
            acks[c["worker"]].append(c)
    for worker_acks in acks.values():
        worker_acks.sort(key=lambda c: c["ended"])
    out = []
    for kill in kills:
        record = dict(kill)
        killed_at, back_at = kill.get("killed_at"), kill.get("back_at")
        if killed_at is not None:
            record["at_s"] = None  # filled by the caller, who knows the start
            gaps, answered_after = {}, {}
            for w in range(workers):
                before = [c["ended"] for c in acks[w] if c["ended"] <= killed_at]
                # An answer after the kill: a call begun after it, or one in flight that ended once Solr was back.
                after = [c["ended"] for c in acks[w] if c["started"] >= killed_at or
                         (back_at is not None and c["ended"] >= back_at)]
                answered_after[w] = bool(after)
                if before and after:
                    gaps[w] = round(after[0] - before[-1], 2)
            record["worker_outage_s"] = gaps
            record["every_worker_answered_after"] = all(answered_after.values())
        record["survived"] = bool(kill.get("killed") and kill.get("restarted") and
                                  record.get("every_worker_answered_after"))
        out.append(record)
    return out


def analyse(args: argparse.Namespace, solr: LocalSolr, outcome: RunOutcome, threshold: float) -> dict[str, Any]:
    """Everything step 4 of the module docstring measures, with Solr up."""
    if not solr.is_running():
        log.warning("Solr is not running at the end of the run; starting it for the checks")
        solr.start()
    client = SolrClient(solr.core_url)
    client.commit()
    searcher = Searcher(client)
    settings = searcher.settings
    stream = TextStream(args.seed, args.processes, args.words)
    calls, summaries, unreadable = read_journals(outcome.journals)
    calls_by_id = {c["id"]: c for c in calls}
    texts = {c["id"]: stream.item(c["worker"], c["step"]).text for c in calls}
    acknowledged = [c for c in calls if c["outcome"] != "error"]
    # Adds in the order they were acknowledged (ties: by id, for a stable replay).
    adds = sorted((c for c in calls if c["outcome"] in (ADDED, ALREADY_INDEXED)), key=lambda c: (c["ended"], c["id"]))
    presence = check_presence(client, adds, texts)

    held = {d.id: d for d in iter_documents(searcher)}
    acknowledged_ids = {a["id"] for a in adds}
    unacknowledged_present = sorted(set(held) - acknowledged_ids)
    left = leftovers(client, held, outcome.ended_at)

    # Pairs admitted twice: the collection's report, and the all-pairs join over the acknowledged texts.
    report_started = time.perf_counter()
    collection_pairs = {(p.id, p.neighbor_id): p.similarity
                        for p in find_pairs(client, ThresholdOptions(threshold=threshold, method="exact")).pairs}
    report_seconds = time.perf_counter() - report_started
    present = set(presence["present"])
    admitted = [(a["id"], texts[a["id"]]) for a in adds if a["id"] in present]
    joined_pairs: dict[tuple[str, ...], float] = {}
    if len(admitted) > 1:
        i, j, sim = prefix_join(token_sets(searcher.builder.shingler, [t for _, t in admitted]), threshold)
        joined_pairs = {tuple(sorted((admitted[x][0], admitted[y][0]))): float(s) for x, y, s in zip(i, j, sim)}
    pair_details = [describe_pair(a, b, s, calls_by_id, texts, searcher, outcome.kills)
                    for (a, b), s in sorted(collection_pairs.items())]
    families_admitted: Counter[str] = Counter(calls_by_id[x]["family"] for x in held if x in calls_by_id)

    replay_summary, replay_pairs = replay(solr, settings, admitted, threshold)
    only_collection = sorted(set(collection_pairs) - set(replay_pairs))
    only_replay = sorted(set(replay_pairs) - set(collection_pairs))
    replay_summary.update(
        equal=not only_collection and not only_replay,
        collection_pairs=len(collection_pairs),
        only_in_collection=[[a, b, round(collection_pairs[(a, b)], 4)] for a, b in only_collection[:LISTED]],
        only_in_replay=[[a, b, round(replay_pairs[(a, b)], 4)] for a, b in only_replay[:LISTED]],
        differences=len(only_collection) + len(only_replay))

    kills = faults_survived(outcome.kills, calls, args.processes)
    for kill in kills:
        if kill.get("killed_at"):
            kill["at_s"] = round(kill["killed_at"] - outcome.started_at, 1)
    worker_outages = [g for k in kills for g in k.get("worker_outage_s", {}).values()]
    phase_seconds = (max((c["ended"] for c in calls), default=outcome.ended_at) - outcome.started_at)
    quiet = [c for c in calls if not _in_outage(c, outcome.kills)]

    outcomes_by_kind: dict[str, Counter] = defaultdict(Counter)
    for c in calls:
        outcomes_by_kind[c["kind"]][c["outcome"]] += 1
    errors_by_worker = {}
    for w in range(args.processes):
        errors = [c for c in calls if c["worker"] == w and c["outcome"] == "error"]
        messages = summaries.get(w, {}).get("library_messages", {})
        errors_by_worker[w] = {
            "calls": sum(1 for c in calls if c["worker"] == w), "errors": len(errors),
            "by_type": dict(Counter(c["error"] for c in errors)),
            "examples": [f"{c['id']}: {c['error']}: {c['message']}" for c in errors[:3]],
            "client_retry_warnings": sum(v for k, v in messages.items() if "waiting for it" in k),
            "other_library_warnings": {k: v for k, v in messages.items()
                                       if k.startswith(("WARNING", "ERROR")) and "waiting for it" not in k},
            "library_messages": messages,
            "pace_wait_s": summaries.get(w, {}).get("pace_wait_s"),
            "pace_waits_given_up": summaries.get(w, {}).get("pace_waits_given_up"),
            "exit_code": outcome.exit_codes[w], "summary_written": w in summaries}

    figures = {
        "calls": len(calls), "acknowledged_calls": len(acknowledged),
        "error_calls": len(calls) - len(acknowledged),
        "acknowledged_adds": len(adds),
        "acknowledged_adds_already_indexed": sum(1 for a in adds if a["outcome"] == ALREADY_INDEXED),
        "acknowledged_present": len(presence["present"]), "acknowledged_absent": len(presence["absent"]),
        "acknowledged_present_with_other_text": len(presence["changed"]),
        "collection_documents": len(held), "present_not_acknowledged": len(unacknowledged_present),
        "pairs_admitted_twice": len(collection_pairs),
        "pairs_admitted_twice_among_acknowledged": len(joined_pairs),
        "pairs_admitted_twice_sharing_an_lsh_band": sum(1 for p in pair_details if p.get("share_an_lsh_band")),
        "families_admitted_more_than_once": sum(1 for f, k in families_admitted.items() if k > 1),
        "report_equals_replay": replay_summary["equal"],
        "kills_requested": args.kills, "kills_done": sum(1 for k in kills if k.get("killed")),
        "restarts": sum(1 for k in kills if k.get("restarted")),
        "kills_survived": sum(1 for k in kills if k["survived"]),
        "longest_outage_s": max(worker_outages, default=None),
        "longest_solr_down_s": max((k.get("solr_down_s", 0.0) for k in kills), default=None),
        "workers_ended_normally": sum(1 for code in outcome.exit_codes if code == 0),
        "calls_per_s": round(len(calls) / phase_seconds, 2) if phase_seconds > 0 else None,
        "acknowledged_calls_per_s": round(len(acknowledged) / phase_seconds, 2) if phase_seconds > 0 else None,
        "run_phase_s": round(phase_seconds, 1),
    }
    strict = not args.no_strict
    goals = {
        "every_acknowledged_add_present": {
            "goal": "all", "met": figures["acknowledged_absent"] == 0 and
            figures["acknowledged_present_with_other_text"] == 0},
        "no_near_duplicate_pair_admitted_twice": {
            "goal": "0" if strict else "none without strict (measured)",
            "met": figures["pairs_admitted_twice"] == 0 if strict else None},
        "report_equals_single_process_replay": {"goal": "equal", "met": replay_summary["equal"]},
        "every_kill_survived": {"goal": str(args.kills), "met": figures["kills_survived"] == args.kills},
        "every_worker_ended_normally": {"goal": str(args.processes),
                                        "met": figures["workers_ended_normally"] == args.processes},
    }
    return {
        "figures": figures, "goals": goals,
        "presence": {"absent": presence["absent"][:LISTED], "present_with_other_text": presence["changed"][:LISTED],
                     "present_not_acknowledged": [
                         {"id": x, "journal": ({k: calls_by_id[x].get(k) for k in ("kind", "family", "outcome", "error",
                                                                                    "message")}
                                               if x in calls_by_id else "not in any journal")}
                         for x in unacknowledged_present[:LISTED]]},
        "pairs": {"threshold": threshold, "report_method": "exact", "report_seconds": round(report_seconds, 1),
                  "collection_report": len(collection_pairs), "join_over_acknowledged_texts": len(joined_pairs),
                  "listed": pair_details[:LISTED]},
        "replay": replay_summary,
        "faults": {"kills": kills, "skipped": outcome.skipped_kills, "down_seconds": args.down_seconds},
        "workers": errors_by_worker,
        "outcomes_by_kind": {k: dict(v) for k, v in sorted(outcomes_by_kind.items())},
        "latency": {"all_calls": latency_by_outcome(calls), "calls_outside_outages": latency_by_outcome(quiet)},
        "leftovers": left,
        "journals": {"files": [str(p) for p in outcome.journals], "unreadable_lines": unreadable},
        "collection_settings": asdict(settings),
    }


# ---------------------------------------------------------------------------------------------- the results
def _met(met: bool | None) -> str:
    return "–" if met is None else "met" if met else "**not met**"


def _ms(p: dict, key: str) -> str:
    return f"{p[key]:,.1f}" if key in p else "–"


def markdown(report: dict) -> str:
    f, g, r = report["figures"], report["goals"], report["replay"]
    mode = "strict (band locks in Solr)" if report["strict"] else "not strict (commit_within_ms=1000)"
    lines = [
        f"# Soak with faults: check_and_add, {report['processes']} processes x {report['minutes']} min, "
        f"{report['kills']} kill(s) ({report['date']}, {report['machine']})", "",
        f"`{report['command']}`", "",
        f"Mode: {mode}; threshold {report['threshold']}; index fields {', '.join(report['collection_settings']['fields'])};"
        f" texts of {report['words']} words, seed {report['seed']}; Solr {report['solr_version']} (one local node, heap "
        f"{report['heap']}), killed with SIGKILL and restarted after {report['down_seconds']} s. Code: commit "
        f"{report.get('commit_at_start')} when the run started. Load average (1/5/15 min) at start "
        f"{report['load_average']['start']}, at end {report['load_average']['end']}.", "",
        "| figure | goal | measured | |", "|---|---|---|---|",
        f"| adds acknowledged | | {f['acknowledged_adds']:,} | |",
        f"| acknowledged adds present in Solr (with the text sent) | all | {f['acknowledged_present']:,} | "
        f"{_met(g['every_acknowledged_add_present']['met'])} |",
        f"| acknowledged adds absent | 0 | {f['acknowledged_absent']:,} | "
        f"{_met(f['acknowledged_absent'] == 0)} |",
        f"| acknowledged adds present with another text | 0 | {f['acknowledged_present_with_other_text']:,} | "
        f"{_met(f['acknowledged_present_with_other_text'] == 0)} |",
        f"| near-duplicate pairs admitted twice (the collection's report, J >= {report['threshold']}) | "
        f"{g['no_near_duplicate_pair_admitted_twice']['goal']} | {f['pairs_admitted_twice']:,} | "
        f"{_met(g['no_near_duplicate_pair_admitted_twice']['met'])} |",
        f"| the same among the acknowledged adds (all-pairs join of the texts sent) | "
        f"{g['no_near_duplicate_pair_admitted_twice']['goal']} | {f['pairs_admitted_twice_among_acknowledged']:,} | "
        f"{_met(f['pairs_admitted_twice_among_acknowledged'] == 0 if report['strict'] else None)} |",
        f"| the collection's report equals a single-process replay of the admitted texts | equal | "
        f"{'equal' if r['equal'] else str(r['differences']) + ' pair(s) differ'} | "
        f"{_met(g['report_equals_single_process_replay']['met'])} |",
        f"| kills survived (Solr back, every worker answered after it) | {report['kills']} | "
        f"{f['kills_survived']} of {f['kills_done']} done ({f['restarts']} restart(s)) | "
        f"{_met(g['every_kill_survived']['met'])} |",
        f"| worker processes that ended normally | {report['processes']} | {f['workers_ended_normally']} | "
        f"{_met(g['every_worker_ended_normally']['met'])} |",
        f"| longest outage a worker saw (between acknowledged answers) / Solr down (kill to restarted) | | "
        f"{f['longest_outage_s']} s / {f['longest_solr_down_s']} s | |",
        f"| check_and_add calls / s (all / acknowledged), {f['calls']:,} calls in {f['run_phase_s']} s | | "
        f"{f['calls_per_s']} / {f['acknowledged_calls_per_s']} | |",
        f"| calls that raised (after the client's retries) | | {f['error_calls']:,} | |",
        f"| documents present that no journal acknowledges | | {f['present_not_acknowledged']:,} | |",
        "",
        "## Latency of check_and_add by outcome (ms)", "",
        "| outcome | calls | p50 | p95 | p99 | max | outside outages: calls | p50 | p99 |",
        "|---|---|---|---|---|---|---|---|---|"]
    quiet = report["latency"]["calls_outside_outages"]
    for outcome, p in report["latency"]["all_calls"].items():
        q = quiet.get(outcome, {"n": 0})
        lines.append(f"| {outcome} | {p['n']:,} | {_ms(p, 'p50_ms')} | {_ms(p, 'p95_ms')} | {_ms(p, 'p99_ms')} | "
                     f"{_ms(p, 'max_ms')} | {q['n']:,} | {_ms(q, 'p50_ms')} | {_ms(q, 'p99_ms')} |")
    kinds = report["outcomes_by_kind"]
    names = sorted({o for v in kinds.values() for o in v})
    lines += ["", "## Outcomes by what was sent", "",
              "Expected: `new` added; of a contest family (`original`, `exact`, `near`) one member added; `late-*` "
              "refused.", "", "| sent | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for kind, counts in kinds.items():
        lines.append(f"| {kind} | " + " | ".join(f"{counts.get(o, 0):,}" for o in names) + " |")
    lines += ["", "## Faults", "",
              "| kill | at s | pid | Solr down s | restart s | update log replay s | outage per worker s | survived |",
              "|---|---|---|---|---|---|---|---|"]
    for k in report["faults"]["kills"]:
        outages = ", ".join(f"p{w}: {s}" for w, s in k.get("worker_outage_s", {}).items()) or "–"
        lines.append(f"| {k['kill']} | {k.get('at_s', '–')} | {k.get('pid', '–')} | {k.get('solr_down_s', '–')} | "
                     f"{k.get('restart_s', '–')} | {k.get('replay_wait_s', '–')} | {outages} | "
                     f"{'yes' if k['survived'] else '**no**'} |")
    for s in report["faults"]["skipped"]:
        lines.append(f"| {s['kill']} | planned {s['planned_s']} | skipped: {s['why']} | | | | | |")
    lines += ["", "| worker | calls | errors | by type | client retry warnings | pace wait s | exit code |",
              "|---|---|---|---|---|---|---|"]
    for w, x in report["workers"].items():
        by_type = ", ".join(f"{k} {v}" for k, v in x["by_type"].items()) or "–"
        lines.append(f"| {w} | {x['calls']:,} | {x['errors']} | {by_type} | {x['client_retry_warnings']} | "
                     f"{x['pace_wait_s']} | {x['exit_code']} |")
    examples = [e for x in report["workers"].values() for e in x["examples"]]
    if examples:
        lines += ["", "Errors (first of each worker):", ""] + [f"- `{e}`" for e in examples]
    warnings = [f"- worker {w}, {n}x: `{m}`" for w, x in report["workers"].items()
                for m, n in x["other_library_warnings"].items()]
    if warnings:
        lines += ["", "The library's other warnings (message templates):", ""] + warnings
    pairs = report["pairs"]
    lines += ["", "## Pairs admitted twice", "",
              f"The collection's report (`find_pairs`, method exact, J >= {pairs['threshold']}): "
              f"{pairs['collection_report']:,} pair(s), {pairs['report_seconds']} s; the all-pairs join over the "
              f"texts of the acknowledged adds: {pairs['join_over_acknowledged_texts']:,}; families with more than one "
              f"document in the collection: {f['families_admitted_more_than_once']:,}."]
    if pairs["listed"]:
        lines += ["", "| ids | J | sent | share an LSH band | calls overlapped | during an outage |",
                  "|---|---|---|---|---|---|"]
        for p in pairs["listed"]:
            sent = "; ".join(f"{s.get('kind', '?')} {s.get('family', '')} {s['outcome']}" for s in p["sides"])
            lines.append(f"| {', '.join(p['ids'])} | {p['similarity']} | {sent} | {p.get('share_an_lsh_band', '–')} | "
                         f"{p.get('calls_overlapped', '–')} | {p.get('a_call_overlapped_an_outage', '–')} |")
    lines += ["", "## Single-process replay", "",
              f"{r['texts']:,} admitted texts (acknowledged and present) sent through check_and_add by one process, in "
              f"the order they were acknowledged, into the fresh core `{r['core']}`: {r['added']:,} added, "
              f"{r['refused']:,} refused, {r['seconds']} s; its report {r['pairs']:,} pair(s), the collection's "
              f"{r['collection_pairs']:,}: {'equal' if r['equal'] else 'different'}."]
    if not r["equal"]:
        lines += ["", "Only in the collection's report: " + (", ".join(f"{a}-{b} ({s})" for a, b, s in
                                                                    r["only_in_collection"]) or "–"),
                  "", "Only in the replay's: " + (", ".join(f"{a}-{b} ({s})" for a, b, s in r["only_in_replay"]) or "–")]
    if r["refused_examples"]:
        lines += ["", "Refused by the replay: " + ", ".join(
            f"{x['id']} ({', '.join(f'{m}: {s}' for m, s in x['matches']) or x['status']})"
            for x in r["refused_examples"])]
    p = report["presence"]
    if p["absent"] or p["present_with_other_text"] or p["present_not_acknowledged"]:
        lines += ["", "## Not as acknowledged", ""]
        if p["absent"]:
            lines.append(f"- Absent: {', '.join(p['absent'])}")
        if p["present_with_other_text"]:
            lines.append(f"- Present with another text: {', '.join(p['present_with_other_text'])}")
        for x in p["present_not_acknowledged"]:
            lines.append(f"- Present, not acknowledged: {x['id']}: {json.dumps(x['journal'])}")
    left = report["leftovers"]
    owners = ", ".join(f"{o} ({n})" for o, n in left["band_lock_owners"].items())
    lines += ["", f"Left in the collection after the run: {left['band_locks']} band lock(s)"
              + (f" of {owners}, held since {left['band_lock_age_at_end_s']} s before the end" if owners else "")
              + f"; {left['claims']} claim(s); {left['documents_without_a_claim']} document(s) whose text holds no "
              f"claim" + (f" ({', '.join(left['documents_without_a_claim_listed'])})"
                          if left["documents_without_a_claim"] else "")
              + f" ({left['note']}). Journals: {', '.join(report['journals']['files'])}"
              + (f" ({report['journals']['unreadable_lines']} unreadable line(s))"
                 if report["journals"]["unreadable_lines"] else "") + ".", ""]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------- main
def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, default=4, help="worker processes running check_and_add")
    parser.add_argument("--minutes", type=float, default=10.0, help="how long the workers run (a fraction is fine)")
    parser.add_argument("--kills", type=int, default=2, help="times Solr is killed with SIGKILL and restarted")
    parser.add_argument("--down-seconds", type=float, default=2.0, help="how long Solr stays dead after each kill")
    parser.add_argument("--threshold", type=float, default=None,
                        help="check_and_add's and the reports' Jaccard threshold (default: the collection's)")
    parser.add_argument("--fields", default=None,
                        help="the collection's token fields, comma-separated (default: IndexSettings()'s)")
    parser.add_argument("--words", type=int, default=100, help="words of each text")
    parser.add_argument("--no-strict", action="store_true", help="check without the band locks (strict=False)")
    parser.add_argument("--heap", default="2g", help="Solr's heap")
    parser.add_argument("--seed", type=int, default=47)
    parser.add_argument("--progress", action="store_true", help="say what the run is doing every 15 s")
    parser.add_argument("--work-dir", type=Path, default=None,
                        help="where the journals and Solr's data go (default: a temporary directory, whose Solr "
                             "data is deleted at the end)")
    parser.add_argument("--out-dir", type=Path, default=Path("benchmarks/results"))
    parser.add_argument("--machine", default=None, help="default: this machine's tag (e.g. 2core-24g)")
    args = parser.parse_args(argv)
    if args.processes < 1:
        parser.error("--processes must be 1 or more")
    if not args.minutes > 0:
        parser.error("--minutes must be more than 0")
    if args.kills < 0 or args.down_seconds < 0:
        parser.error("--kills and --down-seconds cannot be negative")
    if args.words < 2 * EDGE_WORDS + 2 * args.processes:
        parser.error(f"--words must be at least {2 * EDGE_WORDS + 2 * args.processes} for {args.processes} processes "
                     "(each near copy replaces a word of its own, away from the ends)")
    if args.threshold is not None and not 0 < args.threshold <= 1:
        parser.error("--threshold must be a Jaccard similarity in (0, 1]")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    _configure_logging(logging.INFO if args.progress else logging.WARNING)
    settings = (IndexSettings(fields=tuple(x.strip() for x in args.fields.split(",") if x.strip()))
                if args.fields else IndexSettings())
    machine = args.machine or machine_tag()
    temporary = args.work_dir is None
    work = Path(tempfile.mkdtemp(prefix="neardup-soak-")) if temporary else args.work_dir
    run_dir = work / time.strftime("soak-%Y%m%d-%H%M%S")
    run_dir.mkdir(parents=True, exist_ok=False)
    commit_at_start = git_commit()
    load_start = load_average_text()
    solr = LocalSolr(port=free_port(), data_dir=run_dir / "solr", heap=args.heap)
    log.info("starting a local Solr on port %d (data in %s)", solr.port, solr.data_dir)
    solr.start()
    try:
        client = SolrClient(solr.core_url)
        require_neardup_schema(client)
        settings = ensure_index_settings(client, settings)  # before the workers: none of them races to store it
        threshold = args.threshold if args.threshold is not None else settings.lsh_threshold
        outcome = run_soak(args, solr, run_dir, args.threshold)
        log.info("run over after %.0f s; checking", outcome.ended_at - outcome.started_at)
        measured = analyse(args, solr, outcome, threshold)
    finally:
        solr.stop()
        if temporary:
            shutil.rmtree(solr.data_dir, ignore_errors=True)
    command = " ".join(["python benchmarks/soak.py", *(argv if argv is not None else sys.argv[1:])])
    report = {"benchmark": "soak", "issue": "47, point 2", "date": date.today().isoformat(), "machine": machine,
              "command": command, "processes": args.processes, "minutes": args.minutes, "kills": args.kills,
              "down_seconds": args.down_seconds, "strict": not args.no_strict, "threshold": threshold,
              "words": args.words, "seed": args.seed, "heap": args.heap, "solr_version": solr_settings.SOLR_VERSION,
              "cpus": os.cpu_count(), "platform": platform.platform(), "commit_at_start": commit_at_start,
              "work_dir": str(run_dir), "load_average": {"start": load_start, "end": load_average_text()},
              **measured}
    stem = args.out_dir / f"{report['date']}-soak{'' if report['strict'] else '-no-strict'}-{machine}"
    text = markdown(report)
    write_result_files(stem, report, text)
    print(text)
    print(f"-> {stem}.json, {stem}.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
