"""Online dedup latency: ``NearDupIndex.check_and_add``, not strict and strict, from 1 and from several clients.

    flock /tmp/bench.lock python benchmarks/online.py --docs 100000 --checks 1000 --clients 8 --solr-url URL

Generates the synthetic corpus of :mod:`benchmarks.corpus` (N + checks documents, 10% planted near
duplicates), indexes the first N with the LSH profile (``IndexSettings(fields=("lsh",))``: band keys only, the
profile for large collections) through the bulk indexer, then sends the last ``checks`` documents through
``check_and_add`` at the collection's threshold (0.8) and times each call. Variants, each run with 1 client
and with ``--clients`` clients:

- **not strict**: ``NearDupIndex(client)`` as shipped (``strict=False``, adds sent with ``commitWithin`` 1 s and
  seen by their own process at once). Near duplicates checked at the same moment by different clients can both
  be added.
- **strict**: ``NearDupIndex(client, strict=True)``: the check holds Solr-side locks on the text's LSH band keys
  while it looks up and adds, and soft-commits its add before it lets go, so of two near duplicates checked at
  the same moment by different processes at most one is added.
- **soft commit per add**: not strict with ``commit_within_ms=0`` (what an earlier version of this script
  called "strict"). Kept because it isolates the soft commit, the larger part of what strict costs: strict
  against it is the price of the band locks alone.

A client is a process of its own (its own ``SolrClient`` and ``NearDupIndex``; threads of one Python process
would measure the GIL rather than Solr). The clients of a variant take disjoint, interleaved shares of the
check texts, wait at a barrier and start together, so their calls overlap; they run on the same machine as
Solr and compete with it for the cores. Per variant: each call's latency (p50/p95/p99/mean), calls per second
over the variant's wall time (first client's start to last client's end), and how many texts were added and
refused. Between variants what the previous one added is deleted (with its claims) and committed, so every
variant starts from the same N documents; the report says when a delete left documents in (see
:func:`return_to_start`) and when band locks were left behind. A text refused as a near duplicate of one of
the N must be refused by every variant: the report counts the texts for which that did not hold (it does not
stop on them). Texts that are near duplicates of other check texts can legitimately be added or refused
depending on the order of the calls (and, not strict with several clients, both of a pair may be added).

The same run times the parts of a call alone on the same texts (signing, the candidate query with exact
verification, one round trip, one small update, a soft commit). The peer, in the same run on the same texts:
datasketch's in-memory ``MinHashLSH`` (same threshold and number of values) holding the same N documents, one
process, timed for "MinHash the text, query, insert if nothing was found", which is what ``check_and_add``
does.

Writes ``benchmarks/results/<date>-online-<machine>.json`` and ``.md`` (``--out-dir``, ``--machine``).
The collection is cleared first: point ``--solr-url`` at a core of its own.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import platform
import queue
import sys
import time
import traceback
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.corpus import generate, iter_documents  # noqa: E402
from neardup_solr import IndexSettings, Indexer, NearDupIndex, SolrClient  # noqa: E402
from neardup_solr.engine.online import claim_id, delete_documents, find_similar  # noqa: E402
from neardup_solr.solr import band_locks  # noqa: E402
from neardup_solr.solr.band_locks import LOCK_PREFIX  # noqa: E402
from neardup_solr.text import Shingler  # noqa: E402
from benchmarks.provenance import load_average_text, write_result_files  # noqa: E402

THRESHOLD = 0.8
NUM_HASHES = 128
OURS = "neardup-solr NearDupIndex"
PEER = "datasketch MinHashLSH (in memory)"
# Spawning a client and importing the package takes a second or two; eight of them on a loaded 2-core machine
# much longer. A client still not at the barrier after this has failed.
BARRIER_SECONDS = 600


@dataclass(frozen=True)
class Variant:
    name: str
    slug: str  # prefixes the ids of what the variant adds, so its adds are told from the indexed documents
    strict: bool
    commit_within_ms: int


VARIANTS = (
    Variant("not strict", "ns", strict=False, commit_within_ms=1000),
    Variant("strict", "st", strict=True, commit_within_ms=1000),  # strict does not use commit_within_ms
    Variant("soft commit per add", "sc", strict=False, commit_within_ms=0),
)


def percentiles(seconds: Sequence[float]) -> dict:
    """n, p50/p95/p99 and mean in milliseconds."""
    ms = np.asarray(seconds) * 1000.0
    return {"n": int(ms.size), "p50_ms": round(float(np.percentile(ms, 50)), 3),
            "p95_ms": round(float(np.percentile(ms, 95)), 3), "p99_ms": round(float(np.percentile(ms, 99)), 3),
            "mean_ms": round(float(ms.mean()), 3)}


def timed(items: Sequence, call: Callable) -> tuple[list[float], list]:
    """Each call's wall time and result."""
    times, results = [], []
    for item in items:
        start = time.perf_counter()
        results.append(call(item))
        times.append(time.perf_counter() - start)
    return times, results


def load_1m() -> float:
    return round(os.getloadavg()[0], 2)


# ----------------------------------------------------------------------------------------------- one client


def check_share(url: str, variant: Variant, clients: int, worker: int, share: list[tuple[str, str]],
                warm_up_text: str, barrier, answers) -> None:
    """One client of a variant (a process of its own): check its share after the barrier, and put
    ``(worker, {"started", "ended", "calls": [(doc id, seconds, added, refused near an indexed document)]})`` on
    ``answers``, or ``(worker, traceback text)`` when it failed."""
    try:
        client = SolrClient(url)
        index = NearDupIndex(client, threshold=THRESHOLD, strict=variant.strict,
                             commit_within_ms=variant.commit_within_ms)
        # One-off costs of a process (the connection, the first lookup, the strict path's one question about the
        # schema) stay out of the timed calls. An indexed text, not one of the share's: the first timed call must
        # not find Solr's caches warmed for it.
        index.query(warm_up_text)
        if variant.strict:
            band_locks.release(client, band_locks.acquire(client, [(1 << 63) + worker], f"warm-up {worker}"))
        prefix = f"{variant.slug}-c{clients}-"
        calls = []
        barrier.wait(timeout=BARRIER_SECONDS)
        started = time.perf_counter()
        for doc_id, text in share:
            call_started = time.perf_counter()
            result = index.check_and_add(prefix + doc_id, text)
            seconds = time.perf_counter() - call_started
            near_indexed = not result.added and any(not m.id.startswith(prefix) for m in result.matches)
            calls.append((doc_id, seconds, result.added, near_indexed))
        ended = time.perf_counter()
        answers.put((worker, {"started": started, "ended": ended, "calls": calls}))
    except BaseException:
        answers.put((worker, traceback.format_exc()))


def collect(workers: list, answers) -> dict[int, dict]:
    """Every client's answer; raises as soon as one failed or died without answering."""
    received: dict[int, dict] = {}
    while len(received) < len(workers):
        try:
            worker, answer = answers.get(timeout=5)
        except queue.Empty:
            silent = [n for n, w in enumerate(workers) if n not in received and not w.is_alive()]
            if silent:
                raise RuntimeError(f"client(s) {silent} exited without an answer (exit codes "
                                   f"{[workers[n].exitcode for n in silent]})") from None
            continue
        if isinstance(answer, str):
            raise RuntimeError(f"client {worker} failed:\n{answer}")
        received[worker] = answer
    return received


def run_variant(url: str, variant: Variant, clients: int, checks: list[tuple[str, str]],
                warm_up_texts: list[str]) -> tuple[dict, dict[str, tuple[bool, bool]]]:
    """Check every text once, spread over ``clients`` processes started together. Returns the variant's figures
    and each check text's outcome ``(added, refused near an indexed document)`` by its corpus id."""
    ctx = mp.get_context("spawn")  # a fresh interpreter per client: nothing of this process's state is shared
    barrier, answers = ctx.Barrier(clients), ctx.Queue()
    workers = [ctx.Process(target=check_share, args=(url, variant, clients, n, checks[n::clients],
                                                     warm_up_texts[n % len(warm_up_texts)], barrier, answers))
               for n in range(clients)]
    load_start = load_1m()
    for worker in workers:
        worker.start()
    try:
        received = collect(workers, answers)
    except BaseException:
        barrier.abort()  # the clients still waiting at the barrier give up now rather than after its timeout
        raise
    finally:
        for worker in workers:
            worker.join(timeout=60)
            if worker.is_alive():
                worker.kill()
    load_end = load_1m()
    calls = [call for answer in received.values() for call in answer["calls"]]
    # perf_counter is the system-wide monotonic clock on Linux, so the clients' readings compare.
    wall = max(a["ended"] for a in received.values()) - min(a["started"] for a in received.values())
    outcomes = {doc_id: (added, near_indexed) for doc_id, _, added, near_indexed in calls}
    added = sum(added for _, _, added, _ in calls)
    figures = {"variant": variant.name, "clients": clients, "strict": variant.strict,
               "commit_within_ms": None if variant.strict else variant.commit_within_ms,
               "check_and_add": percentiles([seconds for _, seconds, _, _ in calls]),
               "wall_seconds": round(wall, 3), "calls_per_s": round(len(calls) / wall, 1),
               "added": added, "refused": len(calls) - added,
               "refused_near_indexed": sum(near for _, _, _, near in calls), "load_1m": [load_start, load_end]}
    figures.update(return_to_start(SolrClient(url), f"{variant.slug}-c{clients}-",
                                   [doc_id for doc_id, _, was_added, _ in calls if was_added]))
    print(f"{variant.name}, {clients} client(s): p50 {figures['check_and_add']['p50_ms']} ms, p99 "
          f"{figures['check_and_add']['p99_ms']} ms, {figures['calls_per_s']} calls/s, {added} added",
          file=sys.stderr)
    return figures, outcomes


def ids_starting_with(client: SolrClient, prefix: str, rows: int) -> list[str]:
    """The ids starting with ``prefix`` (at most ``rows``), after a soft commit: every acknowledged change shown."""
    client.get_json("update", {"softCommit": "true"})
    answer = client.select([("q", "{!prefix f=id v=$p}"), ("p", prefix), ("fl", "id"), ("rows", rows)])
    return [d["id"] for d in answer["response"]["docs"]]


def return_to_start(client: SolrClient, prefix: str, added: list[str]) -> dict:
    """Delete what a variant added (with its claims), so that the next one starts from the same N documents, and
    say what was left behind. ``delete_documents`` finds the documents by real-time get, which Solr can answer
    without some acknowledged documents while a commitWithin soft commit is under way; those it reports missing
    and leaves in. The searcher shows them once its commit is done, so they are looked for there and deleted
    too: the count says how often that happened."""
    ids = [prefix + doc_id for doc_id in added]
    reported_missing = len(delete_documents(client, ids).missing)
    left = ids_starting_with(client, prefix, len(ids) + 1)
    left_after_delete = len(left)
    for _ in range(5):
        if not left:
            break
        delete_documents(client, left)
        left = ids_starting_with(client, prefix, len(ids) + 1)
    if left:
        raise RuntimeError(f"{len(left)} documents of this variant could not be deleted ({left[:5]}): the next "
                           "variant would not start from the same documents")
    # A lock left behind would hold its bands for a lease (15 s) and slow the next variant's near duplicates.
    locks_left = len(ids_starting_with(client, LOCK_PREFIX, 1000))
    return {"delete_reported_missing": reported_missing, "left_after_delete": left_after_delete,
            "locks_left": locks_left}


def disagreements(outcomes: dict[str, dict[str, tuple[bool, bool]]]) -> dict:
    """Texts some variant refused as near duplicates of the indexed documents that another variant added: the
    indexed documents are the same for every variant, so there should be none."""
    near_indexed = {doc_id for by_id in outcomes.values() for doc_id, (_, near) in by_id.items() if near}
    added_anyway = sorted(doc_id for doc_id in near_indexed if any(by_id[doc_id][0] for by_id in outcomes.values()))
    return {"refused_near_indexed_by_some_variant": len(near_indexed), "count": len(added_anyway),
            "examples": [{"id": doc_id, "added_by": [label for label, by_id in outcomes.items() if by_id[doc_id][0]]}
                         for doc_id in added_anyway[:10]]}


def cost_ratios(variants: list[dict]) -> list[dict]:
    """strict against not strict (and against a soft commit per add) at p50 and p99, per number of clients."""
    by_key = {(v["variant"], v["clients"]): v["check_and_add"] for v in variants}
    ratios = []
    for clients in sorted({v["clients"] for v in variants}):
        strict = by_key[("strict", clients)]
        row = {"clients": clients}
        for baseline in ("not strict", "soft commit per add"):
            other = by_key[(baseline, clients)]
            for p in ("p50_ms", "p99_ms"):
                row[f"strict / {baseline}, {p[:3]}"] = round(strict[p] / other[p], 2)
        ratios.append(row)
    return ratios


# ----------------------------------------------------------------------------------------------- the systems


def run_ours(url: str, indexed: list[tuple[str, str]], checks: list[tuple[str, str]], clients: int) -> dict:
    client = SolrClient(url)
    client.delete_all()
    started = time.perf_counter()
    settings = IndexSettings(num_hashes=NUM_HASHES, lsh_threshold=THRESHOLD, fields=("lsh",))
    summary = Indexer(client, settings).index_records(indexed)
    index_seconds = time.perf_counter() - started
    index = NearDupIndex(client, threshold=THRESHOLD)
    searcher = index.searcher
    # Parts, each on its own, on the same texts (nothing is added by these).
    sign_times, queries = timed(checks, lambda item: searcher.prepare(item[1], item[0]))
    lookup_times, _ = timed(queries, lambda q: find_similar(searcher, q, THRESHOLD))
    rtg_times, _ = timed(checks[: min(200, len(checks))], lambda item: client.get_by_ids(
        [claim_id(item[0])], "id"))
    update_times, _ = timed(range(200), lambda i: client.add(
        [{"id": f"__neardup_claim__:bench-{i}", "dataset": "__meta__"}], commit_within_ms=1000))
    soft_times, _ = timed(range(50), lambda _: client.get_json("update", {"softCommit": "true"}))
    # The variants side by side in time at each number of clients: a drifting load on the shared machine then
    # weighs on the pairs that are compared alike.
    warm_up_texts = [text for _, text in indexed[:64]]
    variants, outcomes = [], {}
    for count in sorted({1, clients}):
        for variant in VARIANTS:
            figures, outcomes[f"{variant.name}, {count} client(s)"] = run_variant(url, variant, count, checks,
                                                                                  warm_up_texts)
            variants.append(figures)
    return {
        "indexed": summary.indexed, "index_seconds": round(index_seconds, 1), "variants": variants,
        "disagreements": disagreements(outcomes), "cost_ratios": cost_ratios(variants),
        "parts": {"sign (client)": percentiles(sign_times), "candidates + exact verify": percentiles(lookup_times),
                  "one round trip (real-time get of one id)": percentiles(rtg_times),
                  "one update request (a small document, commitWithin)": percentiles(update_times),
                  "a soft commit alone": percentiles(soft_times)},
    }


def run_datasketch(indexed: list[tuple[str, str]], checks: list[tuple[str, str]]) -> dict:
    from datasketch import MinHash, MinHashLSH

    shingler = Shingler(ngram=3)

    def signature(text: str) -> MinHash:
        m = MinHash(num_perm=NUM_HASHES, seed=1)
        m.update_batch([s.encode("utf-8") for s in shingler.shingles(text)])
        return m

    started = time.perf_counter()
    lsh = MinHashLSH(threshold=THRESHOLD, num_perm=NUM_HASHES)
    for doc_id, text in indexed:
        lsh.insert(doc_id, signature(text))
    build_seconds = time.perf_counter() - started

    def check(item: tuple[str, str]) -> bool:
        m = signature(item[1])
        if lsh.query(m):
            return False
        lsh.insert(item[0], m)
        return True

    started = time.perf_counter()
    call_times, results = timed(checks, check)
    wall = time.perf_counter() - started
    return {"indexed": len(indexed), "index_seconds": round(build_seconds, 1), "clients": 1,
            "check_and_add": percentiles(call_times), "calls_per_s": round(len(checks) / wall, 1),
            "added": sum(results), "refused": len(results) - sum(results),
            "note": "in memory, in this process; LSH candidates are not verified (datasketch returns them)"}


# ----------------------------------------------------------------------------------------------- the report


def table_row(name: str, clients: int, r: dict) -> str:
    c = r["check_and_add"]
    return (f"| {name} | {clients} | {c['p50_ms']} | {c['p95_ms']} | {c['p99_ms']} | {c['mean_ms']} | "
            f"{r['calls_per_s']} | {r['added']} | {r['refused']} |")


def markdown(report: dict) -> str:
    ours = report["results"][OURS]
    lines = [f"# online check_and_add, {report['docs']:,} documents indexed ({report['date']}, {report['machine']})",
             "", f"`{report['command']}`", "",
             f"{report['checks']:,} checks of held-out corpus texts, threshold {report['threshold']}, "
             f"{report['num_hashes']} values (LSH profile). Every variant starts from the same "
             f"{ours['indexed']:,} documents. Clients are processes of their own, on the same machine as Solr, "
             "each checking a disjoint share of the texts, all started together. Load average (1/5/15 min) at "
             f"start {report['load_average']['start']}, at end {report['load_average']['end']}; the run took "
             f"{report['run_seconds']:,} s (indexing {ours['index_seconds']:,} s).", "",
             "| variant | clients | p50 ms | p95 ms | p99 ms | mean ms | calls/s | added | refused |",
             "|---|---|---|---|---|---|---|---|---|"]
    for v in ours["variants"]:
        lines.append(table_row(v["variant"], v["clients"], v))
    if PEER in report["results"]:
        lines.append(table_row(PEER, 1, report["results"][PEER]))
    lines += ["", "Cost of strict (ratio of latencies):", "",
              "| clients | " + " | ".join(k for k in ours["cost_ratios"][0] if k != "clients") + " |",
              "|---" * len(ours["cost_ratios"][0]) + "|"]
    for row in ours["cost_ratios"]:
        lines.append("| " + " | ".join(str(x) for x in row.values()) + " |")
    left = {f"{v['variant']}, {v['clients']} client(s)": v["left_after_delete"] for v in ours["variants"]
            if v["left_after_delete"]}
    if left:
        lines += ["", "Cleaning up between variants: `delete_documents` left documents it was given in the collection "
                  "(Solr's real-time get did not find them): " + "; ".join(f"{k}: {n}" for k, n in left.items())
                  + ". They were found by a query and deleted before the next variant started."]
    locks = {f"{v['variant']}, {v['clients']} client(s)": v["locks_left"] for v in ours["variants"] if v["locks_left"]}
    if locks:
        lines += ["", "Band locks left in the collection after a variant: "
                  + "; ".join(f"{k}: {n}" for k, n in locks.items()) + "."]
    d = ours["disagreements"]
    lines += ["", f"Agreement: {d['refused_near_indexed_by_some_variant']} texts were refused as near duplicates "
              f"of the indexed documents by some variant; {d['count']} of them were added by another variant "
              "(there should be none). Texts refused only as near duplicates of other check texts may differ "
              "between variants: that depends on the order of the calls, and not strict with several clients "
              "can add both texts of a pair checked at the same moment."]
    lines += ["", "Parts of one neardup-solr call, each timed alone on the same texts (one process):", "",
              "| part | p50 ms | p95 ms | p99 ms |", "|---|---|---|---|"]
    for part, p in ours["parts"].items():
        lines.append(f"| {part} | {p['p50_ms']} | {p['p95_ms']} | {p['p99_ms']} |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=100_000, help="documents indexed before the checks")
    parser.add_argument("--checks", type=int, default=1000, help="check_and_add calls timed per variant")
    parser.add_argument("--clients", type=int, default=8, help="concurrent client processes (besides 1 client)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--solr-url", default=os.environ.get("SOLR_URL"), required="SOLR_URL" not in os.environ)
    parser.add_argument("--work-dir", type=Path, default=Path("benchmarks/work/online"))
    parser.add_argument("--out-dir", type=Path, default=Path("benchmarks/results"))
    parser.add_argument("--machine", default=f"{os.cpu_count()}core")
    parser.add_argument("--no-peer", action="store_true", help="leave datasketch out")
    args = parser.parse_args(argv)
    if args.clients < 1 or args.checks < args.clients:
        parser.error("--clients must be at least 1 and at most --checks")

    started = time.perf_counter()
    load_start = load_average_text()
    corpus_dir = args.work_dir / f"c{args.docs + args.checks}-s{args.seed}"
    if not (corpus_dir / "docs.jsonl").exists():
        generate(args.docs + args.checks, args.seed, corpus_dir)
    docs = list(iter_documents(corpus_dir))
    indexed, checks = docs[: args.docs], docs[args.docs:]
    print(f"corpus: {len(indexed):,} to index, {len(checks):,} to check", file=sys.stderr)

    results = {OURS: run_ours(args.solr_url, indexed, checks, args.clients)}
    if not args.no_peer:
        results[PEER] = run_datasketch(indexed, checks)
    report = {"date": date.today().isoformat(), "machine": args.machine, "docs": args.docs, "checks": args.checks,
              "clients": args.clients, "threshold": THRESHOLD, "num_hashes": NUM_HASHES,
              "python": platform.python_version(),
              "command": "python benchmarks/online.py " + " ".join("URL" if a.startswith("http") else a
                                                                   for a in (argv or sys.argv[1:])),
              "load_average": {"start": load_start, "end": load_average_text()},
              "run_seconds": round(time.perf_counter() - started, 1), "results": results}
    args.out_dir.mkdir(parents=True, exist_ok=True)
    stem = args.out_dir / f"{report['date']}-online-{args.machine}"
    write_result_files(stem, report, markdown(report))
    print(markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
