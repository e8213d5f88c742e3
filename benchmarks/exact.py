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

For each corpus, ``report --threshold T --method exact`` (``threshold_pairs``) runs twice, once querying every
token (the method before prefix filtering) and once querying the prefix; the two pair lists must be equal, to
the last digit of every similarity. Results go to ``benchmarks/results/<date>-exact-<machine>.{json,md}``.

    python -m benchmarks.exact                     # the default sizes
    python -m benchmarks.exact --short-docs 500 --long-docs 40 --persons 1000     # a quick run
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))

from benchmarks.corpus import build_vocabulary  # noqa: E402
from benchmarks.run import machine_tag  # noqa: E402

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
    from neardup_solr.documents import IndexSettings
    from neardup_solr.indexer import Indexer
    from neardup_solr.maintenance import clear
    from neardup_solr.searcher import Searcher
    from neardup_solr.threshold import ThresholdFinder, threshold_pairs

    clear(client, everything=True)
    t0 = time.perf_counter()
    summary = Indexer(client, IndexSettings(**settings)).index_records(docs)
    out: dict = {"docs": summary.indexed, "index_s": round(time.perf_counter() - t0, 1), "threshold": threshold,
                 "settings": settings}
    searcher = Searcher(client)
    pairs = {}
    for label, prefix in (("all_tokens", False), ("prefix", True)):
        finder = ThresholdFinder(searcher, threshold=threshold, prefix_filter=prefix)
        t0 = time.perf_counter()
        found = threshold_pairs(finder, workers=workers)
        seconds = time.perf_counter() - t0
        pairs[label] = [(p.id, p.neighbor_id, p.similarity) for p in found]
        out[label] = {"seconds": round(seconds, 2), "docs_per_s": round(len(docs) / seconds, 1),
                      "pairs": len(found)}
        log(f"  {label}: {seconds:.1f} s, {len(found)} pairs")
    out["identical_pairs"] = pairs["prefix"] == pairs["all_tokens"]
    out["speedup"] = round(out["all_tokens"]["seconds"] / out["prefix"]["seconds"], 2)
    return out


def to_markdown(report: dict) -> str:
    lines = [
        f"# exact threshold method, prefix filtering ({report['date']}, {report['machine']})", "",
        f"`{report['command']}`; {report['workers']} lookup workers; Solr on the same machine.", "",
        "| corpus | docs | threshold | all tokens, s | prefix, s | speed-up | pairs | identical |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name, case in report["cases"].items():
        lines.append(f"| {name} | {case['docs']:,} | {case['threshold']} | {case['all_tokens']['seconds']} | "
                     f"{case['prefix']['seconds']} | {case['speedup']}x | {case['prefix']['pairs']:,} | "
                     f"{'yes' if case['identical_pairs'] else 'NO'} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--short-docs", type=int, default=5000, help="documents of the words300 corpus")
    ap.add_argument("--long-docs", type=int, default=700, help="documents of the long corpus")
    ap.add_argument("--persons", type=int, default=10_000, help="records of the persons corpus")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--port", type=int, default=8997)
    ap.add_argument("--out-dir", default=str(BENCH / "results"))
    args = ap.parse_args(argv)

    from neardup_solr.backends.local import LocalSolr
    from neardup_solr.solr_client import SolrClient

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
    finally:
        solr.stop()
        shutil.rmtree(data_dir, ignore_errors=True)
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = out_dir / f"{report['date']}-exact-{report['machine']}"
    stem.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
    stem.with_suffix(".md").write_text(to_markdown(report))
    print(to_markdown(report))
    return 0 if all(c["identical_pairs"] for c in report["cases"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
