"""Groups written back into the collection and the folded search (issues 38 and 46), at 1,000,000 documents.

    flock /tmp/bench.lock python benchmarks/folding.py --docs 1000000

Starts its own local Solr (free port, throwaway data dir). For each N:

1. the planted corpus of :mod:`benchmarks.corpus` indexed by ``index`` (default settings);
2. the collection's near-duplicate pairs at ``--threshold`` (``dedupe_collection``, the ``report --method lsh``
   path), timed apart from the write-back;
3. ``write_groups`` (what ``groups --to-solr`` and ``dedupe_collection(to_solr=True)`` run): time, Solr's CPU
   seconds, the index size before and after (both after a commit), and a second run over the same pairs (what a
   nightly re-run costs when nothing changed);
4. three query sets chosen from the corpus by how much of the collection they match (counted exactly):
   *broad* (over half: a document's first six words), *medium* (1% to 10%: one or two words of middling
   frequency from a document) and *narrow* (under 0.1%: a document's two rarest words), ``--queries`` each.
   One client searches sequentially, after a warm-up of other queries, in five ways, as a user of the Python API
   (or ``GET /v1/search``) sees them: plain with every hit counted (before early termination), plain (hits
   counted to 1,000, then a lower bound), folded fast (the default: the kept-flag filter, one request), the same
   with the copies listed under each hit (``copies=10``: two more requests for the page's groups) and folded
   exact (collapse + expand, ``copies=10``). Each mode starts from empty caches (a core RELOAD) and a few warm-up
   queries, so that no mode is timed from another's cached answers. The plain and the default folded mode are
   timed ``--rounds`` (3) times, their order swapped each round; p50/p99 of each query's median time (and of every
   time, and each round's p99);
5. what the fast fold gives up, per set: the share of the exact fold's page-1 groups that the fast fold's page 1
   shows too, how often a group both show is headed by a different document, and the hit counts.

``--cloud`` runs the same on a local SolrCloud (2 nodes, a collection of 2 shards), whose groups straddle the
shards (no index size there).

Writes ``benchmarks/results/<date>-folding[-cloud]-<machine>.json`` and ``.md`` (``--out-dir``, ``--machine``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import tempfile
import time
from collections import Counter
from datetime import date
from pathlib import Path
from typing import Any, Sequence

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.corpus import generate, iter_documents  # noqa: E402
from benchmarks.own_collection import cpu_seconds, index_bytes, percentiles  # noqa: E402
from benchmarks.provenance import load_average_text, write_result_files  # noqa: E402
from neardup_solr import Indexer, SolrClient  # noqa: E402
from neardup_solr.engine.collection import dedupe_collection  # noqa: E402
from neardup_solr.engine.group_writeback import write_groups  # noqa: E402
from neardup_solr.solr.backends.cloud import LocalSolrCloud  # noqa: E402
from neardup_solr.solr.backends.local import LocalSolr  # noqa: E402
from neardup_solr.solr.cluster import admin_call  # noqa: E402
from neardup_solr.solr.folded_search import folded_search  # noqa: E402

QUERY_WORDS = 6
MODES: dict[str, dict[str, Any]] = {  # name -> folded_search arguments
    "plain, every hit counted": {"fold": False, "exact_count": True},
    "plain": {"fold": False},
    # The default: one request (the page), the search a search team sends to its own Solr with the kept-flag
    # filter. Listing copies under each hit adds two requests for the page's groups.
    "folded fast (default, copies not listed)": {"fold": "fast"},
    "folded fast, copies listed (copies=10)": {"fold": "fast", "copies": 10},
    "folded exact (copies=10)": {"fold": "exact", "copies": 10},
}
FAST_DEFAULT, FAST_LISTED, EXACT = list(MODES)[2:]
# The modes timed in every round (see search_figures): the default fold and the plain search it is held against.
REPEATED_MODES = ("plain", FAST_DEFAULT)
# Queries (of the warm-up's) that warm each mode again after its caches were emptied.
REWARM_QUERIES = 10
# Query sets: the share of the collection a query must match (exclusive upper bound).
SETS = {"broad": (0.5, 1.01), "medium": (0.01, 0.10), "narrow": (0.0, 0.001)}


def _query(text: str) -> str:
    return " ".join(text.split()[:QUERY_WORDS])


def _document_frequencies(docs: Sequence[tuple[str, str]], sample: int = 20_000) -> tuple[Counter, int]:
    """Each word's document frequency in a sample of the corpus (enough to tell rare from common)."""
    rng = random.Random(11)
    chosen = rng.sample(list(docs), min(sample, len(docs)))
    df: Counter = Counter()
    for _, text in chosen:
        df.update(set(text.split()))
    return df, len(chosen)


def choose_query_sets(client: SolrClient, docs: Sequence[tuple[str, str]], per_set: int,
                      seed: int = 7) -> dict[str, list[str]]:
    """``per_set`` queries for each of :data:`SETS`, each checked by its exact hit count in the collection."""
    df, sampled = _document_frequencies(docs)
    total = client.count()
    rng = random.Random(seed)
    chosen: dict[str, list[str]] = {name: [] for name in SETS}
    seen: set[str] = set()

    def candidate(kind: str, text: str) -> str | None:
        words = [w for w in dict.fromkeys(text.split()) if w.isalpha()]
        if kind == "broad":
            return _query(text)
        if kind == "medium":
            middling = [w for w in words if 0.01 <= df[w] / sampled <= 0.08]
            return " ".join(rng.sample(middling, min(len(middling), rng.choice((1, 2))))) if middling else None
        rare = sorted(words, key=lambda w: df[w])[:2]
        return " ".join(rare) if len(rare) == 2 else None

    for name, (low, high) in SETS.items():
        attempts = 0
        while len(chosen[name]) < per_set and attempts < per_set * 40:
            attempts += 1
            q = candidate(name, rng.choice(docs)[1])
            if not q or q in seen:
                continue
            found = folded_search(client, q, fold=False, rows=0, exact_count=True).found
            if low <= found / total < high:
                chosen[name].append(q)
                seen.add(q)
    return chosen


def _timed_searches(client: SolrClient, queries: Sequence[str], arguments: dict) -> tuple[list[float], dict, list]:
    seconds, hits, folded_copies, docs_found, exact_counts, pages = [], 0, 0, 0, 0, []
    for q in queries:
        started = time.perf_counter()
        found = folded_search(client, q, **{"rows": 10, **arguments})
        seconds.append(time.perf_counter() - started)
        hits += len(found.hits)
        folded_copies += sum(h.copy_count for h in found.hits)
        docs_found += found.found
        exact_counts += found.found_exact
        pages.append(found.hits)
    n = max(1, len(queries))
    return seconds, {"hits_per_query": round(hits / n, 2), "copies_listed_per_query": round(folded_copies / n, 2),
                     "found_per_query": round(docs_found / n, 1), "found_exact_share": round(exact_counts / n, 3)}, pages


def _group_key(hit) -> str:
    return f"g{hit.group}" if hit.group is not None else f"d{hit.id}"


def fast_against_exact(fast_pages: Sequence[list], exact_pages: Sequence[list]) -> dict:
    """What the fast fold gives up: of the exact fold's page-1 groups, the share the fast page 1 shows too, and of
    the groups both show, how often a different document heads it.

    Equal scores are common (the word fields score a match by the words it holds, so every one-word match ties),
    and the two modes order ties differently: the exact fold by id, the fast one in index order (a second sort key
    would cost the early termination). So ``share`` counts the exact page's groups that score above its last
    score as shown when the fast page has them, and those tied at its last score as shown when the fast page has
    as many at that score: either page is then a correct page 1. ``strict_share`` is the plain overlap."""
    wanted = shared = strictly = other_head = 0
    worst = 1.0
    for fast, exact in zip(fast_pages, exact_pages):
        if not exact:
            continue
        exact_heads = {_group_key(h): h for h in exact}
        fast_heads = {_group_key(h): h for h in fast}
        last = min(h.score for h in exact)
        above = [g for g, h in exact_heads.items() if h.score > last]
        tied = len(exact_heads) - len(above)
        fast_tied = sum(1 for g, h in fast_heads.items() if h.score == last and g not in above)
        shown = sum(g in fast_heads for g in above) + min(tied, fast_tied)
        common = set(exact_heads) & set(fast_heads)
        wanted += len(exact_heads)
        shared += shown
        strictly += len(common)
        other_head += sum(exact_heads[g].id != fast_heads[g].id for g in common)
        worst = min(worst, shown / len(exact_heads))
    return {"exact_page1_groups": wanted, "also_on_fast_page1": shared,
            "share": round(shared / wanted, 4) if wanted else 1.0, "worst_query_share": round(worst, 3),
            "strict_share": round(strictly / wanted, 4) if wanted else 1.0,
            "other_head_share": round(other_head / strictly, 4) if strictly else 0.0}


def empty_caches(client: SolrClient) -> None:
    """RELOAD the core (or the SolrCloud collection): its query result and filter caches start empty. Two modes
    can send the same request (the fast fold's page with and without its copies listed): without this the
    second would be timed from Solr's query result cache."""
    base, name = client.url.rstrip("/").rsplit("/", 1)
    if client.is_single_core():
        admin_call(base, "admin/cores", {"action": "RELOAD", "core": name}, f"reload core {name}", timeout=600)
    else:
        admin_call(base, "admin/collections", {"action": "RELOAD", "name": name}, f"reload collection {name}",
                   timeout=600)


def _per_query_medians(rounds: Sequence[Sequence[float]]) -> list[float]:
    """Each query's median time over the rounds (the rounds time the same queries in the same order)."""
    return [float(np.median(times)) for times in zip(*rounds)]


def _p99_ratio(over: dict, under: dict) -> float | None:
    """``over``'s p99 divided by ``under``'s (percentile dicts), to two places; None where ``under`` has none."""
    under_p99 = under.get("p99_ms") or 0.0
    return round((over.get("p99_ms") or 0.0) / under_p99, 2) if under_p99 else None


def search_figures(client: SolrClient, docs: Sequence[tuple[str, str]], args: argparse.Namespace) -> dict:
    """Each set timed in every mode, then ``args.rounds - 1`` times more in the plain and the default folded mode
    (:data:`REPEATED_MODES`), their order swapped from round to round (so that neither always runs first after a
    RELOAD, or last as the machine drifts). A mode's p50/p99 are those of each query's median time over its rounds:
    a p99 of 400 queries is the fourth slowest, and one pause of the JVM or of the machine on one query in one mode
    moved it by a fifth between runs of the same code (the broad set's fast/plain p99 ratio read 0.83, 1.09 and 1.23
    in three single-round runs). The p99 of every time and each round's p99 are kept beside it."""
    sets = choose_query_sets(client, docs, args.queries)
    rng = random.Random(5)
    warm = [_query(t) for _, t in rng.sample(list(docs), args.warmup)]
    for q in warm:
        for arguments in MODES.values():
            folded_search(client, q, **arguments)
    names = list(MODES)
    figures: dict = {}
    for name, queries in sets.items():
        times: dict[str, list[list[float]]] = {mode: [] for mode in names}
        stats: dict[str, dict] = {}
        pages: dict[str, list] = {}
        for round_number in range(args.rounds):
            # The first round times every mode; the others only the two that the ratio compares (the
            # exact fold's broad set alone takes minutes a round at 1M).
            timed = names if round_number == 0 else [m for m in names if m in REPEATED_MODES]
            shift = round_number % len(timed)
            for mode in timed[shift:] + timed[:shift]:
                arguments = MODES[mode]
                # Each mode from empty caches, warmed again by a few other queries (its filters cached, as in use).
                empty_caches(client)
                for q in warm[:REWARM_QUERIES]:
                    folded_search(client, q, **arguments)
                seconds, mode_stats, mode_pages = _timed_searches(client, queries, arguments)
                times[mode].append(seconds)
                if round_number == 0:
                    stats[mode], pages[mode] = mode_stats, mode_pages
        per_mode = {}
        for mode in names:
            every = [t for round_times in times[mode] for t in round_times]
            per_mode[mode] = {**percentiles(_per_query_medians(times[mode])), **stats[mode],
                              "every_time": percentiles(every),
                              "round_p99_ms": [percentiles(r)["p99_ms"] for r in times[mode]]}
        plain, fast = per_mode["plain"], per_mode[FAST_DEFAULT]
        figures[name] = {"queries": len(queries), "rounds": args.rounds, "examples": queries[:3], "modes": per_mode,
                         "fast_p99_over_plain_p99": _p99_ratio(fast, plain),
                         "fast_copies_listed_p99_over_plain_p99": _p99_ratio(per_mode[FAST_LISTED], plain),
                         "fast_p99_over_plain_p99_every_time": _p99_ratio(fast["every_time"], plain["every_time"]),
                         "fast_p99_over_plain_p99_per_round": [
                             _p99_ratio({"p99_ms": f}, {"p99_ms": p})
                             for f, p in zip(fast["round_p99_ms"], plain["round_p99_ms"])],
                         "fast_against_exact": fast_against_exact(pages[FAST_DEFAULT], pages[EXACT])}
    return figures


def _solr_cpu(pids: Sequence[int]) -> float:
    return sum(cpu_seconds(pid) for pid in pids)


def _index_bytes(solr: LocalSolr | LocalSolrCloud) -> int | None:
    return index_bytes(solr.base_url, solr.core) if isinstance(solr, LocalSolr) else None


def run_size(solr: LocalSolr | LocalSolrCloud, n: int, work: Path, args: argparse.Namespace) -> dict:
    if isinstance(solr, LocalSolr):
        url, pids = solr.core_url, [solr.pid()]
    else:
        url, pids = solr.collection_url, solr.node_pids()
    assert all(pid is not None for pid in pids)
    live = [int(pid) for pid in pids if pid is not None]
    corpus_dir = work / f"corpus-{n}"
    if not (corpus_dir / "docs.jsonl").exists():
        generate(n, 41, corpus_dir)
    docs = list(iter_documents(corpus_dir))
    client = SolrClient(url, timeout=600)
    client.delete_all()

    started = time.perf_counter()
    Indexer(client, batch_size=500, progress=args.progress).index_records(docs)
    client.commit()
    index_s = time.perf_counter() - started

    started = time.perf_counter()
    pairs = dedupe_collection(client, args.threshold, progress=args.progress).pairs
    report_s = time.perf_counter() - started

    size_before = _index_bytes(solr)
    cpu, started = _solr_cpu(live), time.perf_counter()
    first = write_groups(client, pairs)
    write_s = time.perf_counter() - started
    write_cpu = _solr_cpu(live) - cpu
    size_after = _index_bytes(solr)
    cpu, started = _solr_cpu(live), time.perf_counter()
    again = write_groups(client, pairs)
    again_s = time.perf_counter() - started
    again_cpu = _solr_cpu(live) - cpu

    searches = search_figures(client, docs, args)

    return {
        "docs": n, "threshold": args.threshold, "pairs": len(pairs),
        "index_s": round(index_s, 1), "report_s": round(report_s, 1),
        "writeback": {"seconds": round(write_s, 1), "docs_per_s": round(first.documents / write_s, 1),
                      "solr_cpu_s": round(write_cpu, 1), "documents": first.documents, "groups": first.groups,
                      "singletons": first.singletons, "updated": first.updated,
                      "index_bytes_before": size_before, "index_bytes_after": size_after,
                      "growth": round(size_after / size_before - 1.0, 4) if size_before and size_after else None},
        "rerun_unchanged": {"seconds": round(again_s, 2), "solr_cpu_s": round(again_cpu, 1),
                            "updated": again.updated, "unchanged": again.unchanged},
        "search": searches,
    }


def _rounds(result: dict) -> int:
    return max((f.get("rounds", 1) for f in result["search"].values()), default=1)


def markdown(report: dict) -> str:
    lines = ["# Groups written back and the folded search", "",
             f"Machine: {report['machine']}; Solr {report['solr_heap']} heap, {report.get('solr', 'one core')}; load "
             f"average when started {report['load_at_start']}.", "",
             "| docs | pairs (J >= T) | write-back s (docs/s) | Solr CPU s | index growth | re-run, nothing changed |",
             "|---|---|---|---|---|---|"]
    for r in report["results"]:
        w = r["writeback"]
        lines.append(f"| {r['docs']:,} | {r['pairs']:,} | {w['seconds']} ({w['docs_per_s']:,}) | {w['solr_cpu_s']} | "
                     f"{'–' if w['growth'] is None else format(w['growth'], '.1%')} | {r['rerun_unchanged']['seconds']} s, "
                     f"{r['rerun_unchanged']['updated']} written |")
    lines += ["", "Write-back: every document gets its group number and kept flag (in-place docValues updates), "
              "singletons included.", ""]
    for r in report["results"]:
        lines += [f"## Searches at {r['docs']:,} documents", "",
                  "One client, sequential, rows=10. p50 / p99 ms; plain and the default fold: of each query's "
                  f"median time over {_rounds(r)} rounds (their order swapped each round), the other modes one "
                  "round; *found* is the mean hit count (groups when folded), *exact* the share of answers whose "
                  "count is exact. The p99 ratio is also given over every time and per round.", "",
                  "| set (queries) | " + " | ".join(MODES) + " | fast p99 / plain p99 (copies listed) | exact "
                  "page-1 groups also on the fast page 1, ties counted (worst query) | without ties counted | other "
                  "head |",
                  "|---|" + "---|" * (len(MODES) + 4)]
        for name, f in r["search"].items():
            cells = []
            for mode in MODES:
                m = f["modes"][mode]
                cells.append(f"{m.get('p50_ms', '–')} / {m.get('p99_ms', '–')} (found {m.get('found_per_query', 0):,.0f}, "
                             f"exact {m.get('found_exact_share', 0):.0%})")
            a = f["fast_against_exact"]
            ratios = f"{f['fast_p99_over_plain_p99']} ({f.get('fast_copies_listed_p99_over_plain_p99')})"
            if f.get("fast_p99_over_plain_p99_per_round"):
                ratios += (f"; every time {f['fast_p99_over_plain_p99_every_time']}, per round "
                           f"{', '.join(str(x) for x in f['fast_p99_over_plain_p99_per_round'])}")
            lines.append(f"| {name} ({f['queries']}) | " + " | ".join(cells) + f" | {ratios} | "
                         f"{a['share']:.2%} ({a['worst_query_share']:.0%}) | {a['strict_share']:.2%} | "
                         f"{a['other_head_share']:.2%} |")
        lines.append("")
    lines += ["```json", json.dumps(report["results"], indent=2), "```", ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", default="1000000", help="comma-separated collection sizes")
    parser.add_argument("--threshold", type=float, default=0.8)
    parser.add_argument("--queries", type=int, default=400, help="queries in each set (broad, medium, narrow)")
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3,
                        help="times each set is searched in the plain and the default folded mode (the other "
                             "modes once); p50/p99 of each query's median time")
    parser.add_argument("--heap", default="4g")
    parser.add_argument("--progress", action="store_true")
    parser.add_argument("--cloud", action="store_true",
                        help="on a local SolrCloud (2 nodes, 2 shards; --heap per node) instead of one core")
    parser.add_argument("--work-dir", type=Path, default=None)
    parser.add_argument("--out-dir", type=Path, default=Path("benchmarks/results"))
    parser.add_argument("--machine", default=f"{os.cpu_count()}core")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be 1 or more")
    sizes = [int(x) for x in args.docs.split(",") if x.strip()]
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="neardup-bench-folding-"))
    work.mkdir(parents=True, exist_ok=True)
    load_at_start = load_average_text()
    solr: LocalSolr | LocalSolrCloud
    if args.cloud:
        solr = LocalSolrCloud(port=0, data_dir=work / "cloud", nodes=2, shards=2, replicas=1, heap=args.heap)
        shape = "a local SolrCloud of 2 nodes, collection of 2 shards x 1 replica (both nodes on this machine)"
    else:
        solr = LocalSolr(port=0, data_dir=work / "solr", heap=args.heap)
        shape = "one core"
    solr.start()
    try:
        results = [run_size(solr, n, work, args) for n in sizes]
    finally:
        solr.stop()
    report = {"benchmark": "folding", "machine": args.machine, "platform": platform.platform(),
              "solr_heap": args.heap, "solr": shape, "load_at_start": load_at_start,
              "load_average": {"start": load_at_start, "end": load_average_text()}, "results": results}
    stem = args.out_dir / f"{date.today().isoformat()}-folding{'-cloud' if args.cloud else ''}-{args.machine}"
    write_result_files(stem, report, markdown(report))
    print(markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
