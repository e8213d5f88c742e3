"""Bulk insert of short texts: ``NearDupIndex``'s ``insertion_session`` and ``insert_many`` beside datasketch's
``MinHashLSH.insertion_session``, in one run on the same texts.

    flock /tmp/bench.lock python benchmarks/bulk_insert.py --docs 10000 --solr-url URL

The texts: ``--docs`` short texts (8 to 24 words from a made-up vocabulary of 3,000 words, Zipf-distributed,
seeded), unlike each other (issue 47 measured its insert loop on such texts). Each system is timed as its users
run it, from the texts to an index that answers queries:

- datasketch: ``MinHash(num_perm=128)`` of each text's word 3-shingles (the shingles neardup-solr signs, made by
  its ``Shingler``, so both sign the same sets; that time counts in datasketch's total), inserted through
  ``MinHashLSH(threshold=0.8, num_perm=128).insertion_session()``, in memory, in this process;
- neardup-solr ``insertion_session()``: ``session.insert(key, text)`` for each text, into an emptied collection with
  the default settings (word 3-shingles, 128 values, the shingle, LSH and word token fields); the time ends when
  the session has sent, committed and verified everything (every process's queries then see it);
- neardup-solr ``insert_many(pairs)``: the same, in one call;
- for reference, the ``insert`` loop (one create-only add per text, ``commitWithin``) on the first
  ``--loop-docs`` texts.

The three bulk runs repeat ``--repeat`` times, interleaved (datasketch, session, insert_many, then again), so that
a change in the machine's load falls on all of them; the table gives each run and the median. The load average
is recorded at the start and at the end.

Writes ``benchmarks/results/<date>-bulk-insert-<machine>.json`` and ``.md`` (``--out-dir``, ``--machine``). The
collection is cleared before each neardup-solr run: point ``--solr-url`` at a core of its own.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys
import time
from datetime import date
from pathlib import Path
from typing import Callable, Sequence

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.provenance import write_result_files  # noqa: E402
from neardup_solr import NearDupIndex, SolrClient  # noqa: E402
from neardup_solr.text import Shingler  # noqa: E402

THRESHOLD = 0.8
NUM_PERM = 128


def short_texts(count: int, seed: int) -> list[tuple[str, str]]:
    """``count`` (key, text) pairs: 8-24 words each, drawn Zipf-like from 3,000 made-up words."""
    rng = random.Random(seed)
    syllables = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
    vocabulary = sorted({"".join(rng.choice(syllables) for _ in range(rng.randint(1, 4))) for _ in range(4000)})[:3000]
    weights = [1.0 / (rank + 1) ** 1.05 for rank in range(len(vocabulary))]
    texts = []
    for i in range(count):
        words = rng.choices(vocabulary, weights, k=rng.randint(8, 24))
        texts.append((f"t{i}", " ".join(words).capitalize() + "."))
    return texts


def timed(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def run_datasketch(texts: list[tuple[str, str]]) -> float:
    from datasketch import MinHash, MinHashLSH

    shingler = Shingler(ngram=3)

    def insert_all() -> None:
        lsh = MinHashLSH(threshold=THRESHOLD, num_perm=NUM_PERM)
        with lsh.insertion_session() as session:
            for key, text in texts:
                m = MinHash(num_perm=NUM_PERM)
                m.update_batch([s.encode("utf-8") for s in shingler.shingles(text)])
                session.insert(key, m)

    return timed(insert_all)


def fresh_index(url: str) -> NearDupIndex:
    client = SolrClient(url)
    client.delete_all()
    return NearDupIndex(client, threshold=THRESHOLD)


def run_session(url: str, texts: list[tuple[str, str]]) -> float:
    index = fresh_index(url)

    def insert_all() -> None:
        with index.insertion_session() as session:
            for key, text in texts:
                session.insert(key, text)

    seconds = timed(insert_all)
    assert len(index) == len(texts), (len(index), len(texts))
    return seconds


def run_insert_many(url: str, texts: list[tuple[str, str]]) -> float:
    index = fresh_index(url)
    seconds = timed(lambda: index.insert_many(texts))
    assert len(index) == len(texts), (len(index), len(texts))
    return seconds


def run_insert_loop(url: str, texts: list[tuple[str, str]]) -> float:
    index = fresh_index(url)

    def insert_all() -> None:
        for key, text in texts:
            index.insert(key, text)

    seconds = timed(insert_all)
    index.flush()
    assert len(index) == len(texts)
    return seconds


def summary(docs: int, seconds: Sequence[float]) -> dict:
    rates = [docs / s for s in seconds]
    return {"docs": docs, "seconds": [round(s, 3) for s in seconds],
            "docs_per_second": [round(r) for r in rates], "median_docs_per_second": round(statistics.median(rates))}


def markdown(report: dict) -> str:
    results = report["results"]
    peer = results["datasketch MinHashLSH insertion_session (in memory)"]["median_docs_per_second"]
    lines = [f"# Bulk insert of {report['docs']:,} short texts ({report['date']}, {report['machine']})", "",
             f"`{report['command']}`", "",
             f"datasketch {report['datasketch_version']}; texts of 8-24 words; {NUM_PERM} values, threshold "
             f"{THRESHOLD}. Load average (1, 5, 15 min) at the start / at the end: "
             f"{report['load_average_start_end'][0]} / {report['load_average_start_end'][1]}.", "",
             "| system | docs | runs (docs/s) | median docs/s | vs datasketch |", "|---|---|---|---|---|"]
    for name, r in results.items():
        runs = ", ".join(f"{x:,}" for x in r["docs_per_second"])
        lines.append(f"| {name} | {r['docs']:,} | {runs} | {r['median_docs_per_second']:,} | "
                     f"{r['median_docs_per_second'] / peer:.2f}x |")
    lines += ["", "Each run ends with an index that answers queries: datasketch's in this process; neardup-solr's "
              "in Solr, committed and verified (every id looked up), for every process."]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=10_000, help="short texts inserted by each bulk run")
    parser.add_argument("--loop-docs", type=int, default=1000, help="texts of the insert-loop reference run (0: none)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each bulk insert, interleaved")
    parser.add_argument("--seed", type=int, default=47)
    parser.add_argument("--solr-url", default=os.environ.get("SOLR_URL"), required="SOLR_URL" not in os.environ)
    parser.add_argument("--out-dir", type=Path, default=Path("benchmarks/results"))
    parser.add_argument("--machine", default=f"{os.cpu_count()}core")
    args = parser.parse_args(argv)

    from importlib.metadata import version

    texts = short_texts(args.docs, args.seed)
    load_start = os.getloadavg()
    timings: dict[str, list[float]] = {"datasketch": [], "session": [], "insert_many": []}
    for run in range(args.repeat):
        timings["datasketch"].append(run_datasketch(texts))
        timings["session"].append(run_session(args.solr_url, texts))
        timings["insert_many"].append(run_insert_many(args.solr_url, texts))
        print(f"run {run + 1}: " + ", ".join(f"{name} {args.docs / t[-1]:,.0f} docs/s" for name, t in timings.items()),
              file=sys.stderr)
    results = {
        "datasketch MinHashLSH insertion_session (in memory)": summary(args.docs, timings["datasketch"]),
        "neardup-solr NearDupIndex.insertion_session": summary(args.docs, timings["session"]),
        "neardup-solr NearDupIndex.insert_many": summary(args.docs, timings["insert_many"]),
    }
    if args.loop_docs:
        loop = texts[: args.loop_docs]
        results["neardup-solr NearDupIndex.insert, one at a time (reference)"] = summary(
            len(loop), [run_insert_loop(args.solr_url, loop)])
    load_end = os.getloadavg()
    report = {"date": date.today().isoformat(), "machine": args.machine, "docs": args.docs, "seed": args.seed,
              "threshold": THRESHOLD, "num_perm": NUM_PERM, "python": platform.python_version(),
              "datasketch_version": version("datasketch"),
              "command": "python benchmarks/bulk_insert.py " + " ".join(
                  "URL" if a.startswith("http") else a for a in (argv if argv is not None else sys.argv[1:])),
              "load_average_start_end": [[round(x, 2) for x in load_start], [round(x, 2) for x in load_end]],
              "results": results}
    args.out_dir.mkdir(parents=True, exist_ok=True)
    write_result_files(args.out_dir / f"{report['date']}-bulk-insert-{args.machine}", report, markdown(report))
    print(markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
