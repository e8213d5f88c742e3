"""Benchmark section ``exact``: the complete threshold method with and without prefix filtering, in one run.

Three generated corpora, each indexed into a fresh local core:

- ``words300``: 300-word documents, word 3-shingles, a threshold report at J >= 0.8;
- ``long``: 3,500-word documents (about 3,500 distinct shingles each, licence-text sized) of which about a
  third is boilerplate drawn from a shared pool of clauses, word 3-shingles, at J >= 0.5;
- ``persons``: person records (benchmarks/persons.py: name, address, date of birth, phone; half of the people
  with a second, mistyped record), character 3-shingles, at J >= 0.5.

Words follow a Zipf law over a 20,000-word made-up vocabulary (benchmarks/corpus.py's word builder), so
frequent words give long posting lists as in real text. A quarter of the sources get one or two copies with
a share of their words replaced (0-20%), which spreads pair similarities over the thresholds measured.
Boilerplate and character shingles are where the method before prefix filtering was slowest: their tokens
are in many documents, and an OR-query over all of a text's tokens walks every one of those posting lists.

For each corpus, ``report --threshold T --method exact`` (``threshold_pairs``) runs three ways in one run:
``all_tokens`` (one query per document over every token: the method before prefix filtering),
``prefix`` (one query per document over the prefix: the per-document method as it was before the client
join), and ``client`` (the texts read once and joined in the client, :mod:`neardup_solr.pairs.allpairs`: what the
report runs now). The three pair lists must be equal, to the last digit of every similarity.

``join_bloom``: an asymmetric join where most streamed records have no partner (``--join-indexed`` 300-word
documents indexed, ``--join-streamed`` records streamed, a tenth of them lightly edited copies of indexed
documents and the rest unrelated), ``join --method lsh`` with and without the Bloom filter of the indexed band
keys: the share of records skipped, the time saved, and the pairs (which must be the same).

Results go to ``benchmarks/results/<date>-exact-<machine>.{json,md}``.

    python -m benchmarks.exact                     # the default sizes
    python -m benchmarks.exact --short-docs 500 --long-docs 40 --persons 1000 --join-streamed 1000   # quick
"""

from __future__ import annotations

import argparse
import datetime as _dt
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))

from benchmarks.corpus import build_vocabulary  # noqa: E402
from benchmarks.run import machine_tag, write_results  # noqa: E402

THRESHOLDS = {"words300": 0.8, "long": 0.5, "persons": 0.5}


def generate(num_docs: int, words_per_doc: int, seed: int, boilerplate: float = 0.0) -> list[tuple[str, str]]:
    """``num_docs`` documents: sources of ``words_per_doc`` Zipf-drawn words (``boilerplate`` of them in
    20-word clauses from a pool of 300 shared ones), and edited copies of a quarter of them."""
    rng = np.random.default_rng(seed)
    vocab = np.array(build_vocabulary(rng, 20_000))
    p = 1.0 / np.arange(1, vocab.size + 1) ** 1.1
    p /= p.sum()
    clauses = rng.choice(vocab.size, size=(300, 20), p=p)
    docs: list[tuple[str, str]] = []
    while len(docs) < num_docs:
        source = rng.choice(vocab.size, size=words_per_doc, p=p)
        for start in range(0, words_per_doc - 20, 20):
            if rng.random() < boilerplate:
                source[start : start + 20] = clauses[int(rng.integers(len(clauses)))]
        sid = f"d{len(docs):06d}"
        docs.append((sid, " ".join(vocab[source])))
        if rng.random() < 0.25:
            for c in range(int(rng.integers(1, 3))):
                copy = source.copy()
                edits = rng.random(words_per_doc) < rng.uniform(0.0, 0.2)
                copy[edits] = rng.choice(vocab.size, size=int(edits.sum()), p=p)
                docs.append((f"{sid}c{c}", " ".join(vocab[copy])))
    return docs[:num_docs]


def corpus(name: str, count: int, seed: int) -> tuple[list[tuple[str, str]], dict]:
    """The documents of one case and the index settings it uses."""
    if name == "persons":
        from benchmarks.persons import generate as persons

        rows, _ = persons(count, seed)
        return [(r["id"], r["text"]) for r in rows], {"ngram": 3, "unit": "char"}
    if name == "long":
        return generate(count, 3500, seed, boilerplate=0.35), {}
    return generate(count, 300, seed), {}


def run_case(client, docs, settings: dict, threshold: float, workers: int, log) -> dict:
    from neardup_solr.solr.documents import IndexSettings
    from neardup_solr.solr.indexer import Indexer
    from neardup_solr.solr.maintenance import clear
    from neardup_solr.solr.searcher import Searcher
    from neardup_solr.engine.threshold import ThresholdFinder, threshold_pairs

    clear(client, everything=True)
    t0 = time.perf_counter()
    summary = Indexer(client, IndexSettings(**settings)).index_records(docs)
    out: dict = {"docs": summary.indexed, "index_s": round(time.perf_counter() - t0, 1), "threshold": threshold,
                 "settings": settings}
    searcher = Searcher(client)
    pairs = {}
    for label, prefix, strategy in (("all_tokens", False, "queries"), ("prefix", True, "queries"),
                                    ("client", True, "auto")):
        finder = ThresholdFinder(searcher, threshold=threshold, prefix_filter=prefix)
        t0 = time.perf_counter()
        found = threshold_pairs(finder, workers=workers, strategy=strategy)
        seconds = time.perf_counter() - t0
        pairs[label] = [(p.id, p.neighbor_id, p.similarity) for p in found]
        out[label] = {"seconds": round(seconds, 2), "docs_per_s": round(len(docs) / seconds, 1),
                      "pairs": len(found)}
        log(f"  {label}: {seconds:.1f} s, {len(found)} pairs")
    out["identical_pairs"] = pairs["prefix"] == pairs["all_tokens"] == pairs["client"]
    out["speedup"] = round(out["all_tokens"]["seconds"] / out["prefix"]["seconds"], 2)
    out["client_speedup_vs_all_tokens"] = round(out["all_tokens"]["seconds"] / out["client"]["seconds"], 2)
    out["client_speedup_vs_prefix"] = round(out["prefix"]["seconds"] / out["client"]["seconds"], 2)
    return out


def join_case(client, indexed: int, streamed: int, seed: int, threshold: float, workers: int, log) -> dict:
    """join --method lsh with and without the Bloom filter, most streamed records without a partner."""
    from neardup_solr.solr.documents import IndexSettings
    from neardup_solr.solr.indexer import Indexer
    from neardup_solr.engine.lsh_join import lsh_join
    from neardup_solr.solr.maintenance import clear
    from neardup_solr.solr.searcher import Searcher

    clear(client, everything=True)
    catalogue = generate(indexed, 300, seed)
    Indexer(client, IndexSettings(lsh_threshold=threshold), dataset="catalogue").index_records(catalogue)
    rng = np.random.default_rng(seed + 1)
    partners = streamed // 10
    records = []
    for i in range(partners):
        words = catalogue[int(rng.integers(len(catalogue)))][1].split()
        for j in np.flatnonzero(rng.random(len(words)) < 0.02):
            words[j] = f"edit{int(rng.integers(10**6))}"
        records.append((f"p{i:06d}", " ".join(words)))
    records += [(f"n{i:06d}", text) for i, (_, text) in enumerate(generate(streamed - partners, 300, seed + 2))]
    searcher = Searcher(client)
    out: dict = {"indexed": indexed, "streamed": len(records), "with_partner": partners, "threshold": threshold}
    results = {}
    for label, bloom in (("no_bloom", False), ("bloom", True)):
        t0 = time.perf_counter()
        found, summary = lsh_join(searcher, records, threshold, "catalogue", bloom=bloom, workers=workers)
        seconds = time.perf_counter() - t0
        results[label] = found
        out[label] = {"seconds": round(seconds, 2), "records_per_s": round(len(records) / seconds, 1),
                      "queried": summary.queried, "skipped": summary.skipped, "pairs": len(found),
                      "bloom_seconds": summary.bloom_seconds, "bloom_bytes": summary.bloom_bytes}
        log(f"  join {label}: {seconds:.1f} s, {summary.queried} queried, {summary.skipped} skipped, "
            f"{len(found)} pairs")
    out["skipped_share"] = round(out["bloom"]["skipped"] / len(records), 4)
    out["speedup"] = round(out["no_bloom"]["seconds"] / out["bloom"]["seconds"], 2)
    out["identical_pairs"] = results["bloom"] == results["no_bloom"]
    return out


def to_markdown(report: dict) -> str:
    lines = [
        f"# exact threshold method: prefix filtering and the client join ({report['date']}, {report['machine']})",
        "", f"`{report['command']}`; {report['workers']} lookup workers; Solr on the same machine.", "",
        "`all tokens`: a query per document over every token (before prefix filtering); `prefix`: a query per "
        "document over the prefix (the exact method before the client join); `client`: the texts read once, "
        "all-pairs prefix join in the client (the exact method now).", "",
        "| corpus | docs | threshold | all tokens, s | prefix, s | client, s | client vs all tokens | "
        "client vs prefix | pairs | identical |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name, case in report["cases"].items():
        if name == "join_bloom":
            continue
        lines.append(f"| {name} | {case['docs']:,} | {case['threshold']} | {case['all_tokens']['seconds']} | "
                     f"{case['prefix']['seconds']} | {case['client']['seconds']} | "
                     f"{case['client_speedup_vs_all_tokens']}x | {case['client_speedup_vs_prefix']}x | "
                     f"{case['client']['pairs']:,} | {'yes' if case['identical_pairs'] else 'NO'} |")
    join = report["cases"].get("join_bloom")
    if join:
        lines += [
            "", f"## join --method lsh with a Bloom filter ({join['indexed']:,} indexed, {join['streamed']:,} "
            f"streamed, {join['with_partner']:,} with a partner, J >= {join['threshold']})", "",
            "| | seconds | records/s | queried | skipped | pairs |", "|---|---:|---:|---:|---:|---:|",
        ]
        for label in ("no_bloom", "bloom"):
            r = join[label]
            lines.append(f"| {label.replace('_', ' ')} | {r['seconds']} | {r['records_per_s']} | {r['queried']:,} | "
                         f"{r['skipped']:,} | {r['pairs']:,} |")
        lines += ["", f"Skipped {join['skipped_share']:.1%} of the streamed records; {join['speedup']}x faster "
                      f"(filter built in {join['bloom']['bloom_seconds']} s, {join['bloom']['bloom_bytes']:,} "
                      f"bytes); identical pairs: {'yes' if join['identical_pairs'] else 'NO'}."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--short-docs", type=int, default=5000, help="documents of the words300 corpus")
    ap.add_argument("--long-docs", type=int, default=700, help="documents of the long corpus")
    ap.add_argument("--persons", type=int, default=10_000, help="records of the persons corpus")
    ap.add_argument("--join-indexed", type=int, default=2000, help="indexed documents of the Bloom join")
    ap.add_argument("--join-streamed", type=int, default=20_000, help="streamed records of the Bloom join (0: skip)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--port", type=int, default=8997)
    ap.add_argument("--out-dir", default=str(BENCH / "results"))
    args = ap.parse_args(argv)

    from neardup_solr.solr.backends.local import LocalSolr
    from neardup_solr.solr.client import SolrClient

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    data_dir = Path(tempfile.mkdtemp(prefix="neardup-exact-bench-"))
    solr = LocalSolr(port=args.port, data_dir=data_dir)
    solr.start()
    report: dict = {"date": _dt.date.today().isoformat(), "machine": machine_tag(), "workers": args.workers,
                    "command": "python -m benchmarks.exact " + " ".join(argv if argv is not None else sys.argv[1:]),
                    "cases": {}}
    try:
        with SolrClient(solr.core_url, timeout=600) as client:
            for name, count in (("words300", args.short_docs), ("long", args.long_docs), ("persons", args.persons)):
                if count <= 0:
                    continue
                threshold = THRESHOLDS[name]
                log(f"{name}: {count} documents, J >= {threshold}")
                docs, settings = corpus(name, count, args.seed)
                report["cases"][name] = run_case(client, docs, settings, threshold, args.workers, log)
            if args.join_streamed > 0:
                log(f"join_bloom: {args.join_indexed} indexed, {args.join_streamed} streamed")
                report["cases"]["join_bloom"] = join_case(client, args.join_indexed, args.join_streamed, args.seed,
                                                          0.8, args.workers, log)
    finally:
        solr.stop()
        shutil.rmtree(data_dir, ignore_errors=True)
    markdown = to_markdown(report)
    write_results(args.out_dir, "exact", report, markdown)
    print(markdown)
    return 0 if all(c["identical_pairs"] for c in report["cases"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
