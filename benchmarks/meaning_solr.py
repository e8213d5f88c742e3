"""Near duplicates by meaning in Solr (issue 50): what the vectors cost and what a cosine finds on the planted corpus.

    flock /tmp/bench.lock python benchmarks/meaning_solr.py --docs 100000

Starts its own local Solr (free port, throwaway data dir). For each N, on the planted corpus of
:mod:`benchmarks.corpus` (pseudo-words: a lexical corpus, the kind the cosine must not flood):

1. ``index`` without an encoder, then, into an emptied core, with ``--encoder wordllama``: documents/s of each, and
   the index size of each after a commit and a merge to one segment (the growth a document's vector costs);
2. lookups by meaning: ``--lookups`` documents chosen at random, each looked up at ``--threshold`` through Solr's
   HNSW graph (``similar_by_meaning``, what ``near-dups --similarity cosine`` runs): p50/p99;
3. the whole collection at several cosines, counted exactly in the client (every vector against every other, in
   blocks): pairs, and the recall of the planted near-duplicate pairs, beside ``report --threshold 0.8 --method
   lsh`` (Jaccard) on the same corpus: how many more pairs the cosine reports at the recall Jaccard reaches;
4. ``report --similarity cosine`` at ``--threshold`` with method exact and knn: time, pairs, and the share of the
   exact pairs the graph walk finds (up to ``--knn-max`` documents: knn is one graph walk a document).

Writes ``benchmarks/results/<date>-meaning-solr-<machine>.json`` and ``.md`` (``--out-dir``, ``--machine``).
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import sys
import tempfile
import time
from datetime import date
from pathlib import Path
from typing import Sequence

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.corpus import generate, iter_documents  # noqa: E402
from benchmarks.own_collection import index_bytes, percentiles  # noqa: E402
from benchmarks.provenance import load_average_text, write_result_files  # noqa: E402
from neardup_solr import Indexer, IndexSettings, SolrClient  # noqa: E402
from neardup_solr.engine.find import find_pairs  # noqa: E402
from neardup_solr.engine.meaning import similar_by_meaning, stored_vectors  # noqa: E402
from neardup_solr.options import ThresholdOptions  # noqa: E402
from neardup_solr.signing.encoder import in_package_encoder  # noqa: E402
from neardup_solr.solr.backends.local import LocalSolr  # noqa: E402
from neardup_solr.solr.searcher import Searcher  # noqa: E402

COSINES = (0.9, 0.93, 0.95, 0.96, 0.97, 0.98, 0.99)
_BLOCK_CELLS = 16_000_000


def planted_pairs(corpus: Path) -> set[tuple[str, str]]:
    pairs = set()
    with open(corpus / "truth.tsv", encoding="utf-8") as fh:
        for line in fh:
            if line.startswith(("#", "id")) or not line.strip():
                continue
            a, b = line.split("\t")[:2]
            pairs.add((min(a, b), max(a, b)))
    return pairs


def count_by_cosine(ids: list[str], matrix: np.ndarray, cosines: Sequence[float],
                    planted: set[tuple[str, str]]) -> dict[float, dict]:
    """Pairs at or above each cosine, and the planted pairs among them, counted by blocks (never held)."""
    n = len(ids)
    block = max(1, _BLOCK_CELLS // max(1, n))
    counts = {c: {"pairs": 0, "planted_found": 0} for c in cosines}
    row_of = {doc_id: i for i, doc_id in enumerate(ids)}
    planted_rows = {(min(row_of[a], row_of[b]), max(row_of[a], row_of[b]))
                    for a, b in planted if a in row_of and b in row_of}
    planted_cos = {pair: float(np.dot(matrix[pair[0]], matrix[pair[1]])) for pair in planted_rows}
    lowest = min(cosines)
    for start in range(0, n, block):
        products = matrix[start:start + block] @ matrix[start:].T
        rows, cols = np.nonzero(products >= lowest)
        later = cols > rows
        values = products[rows[later], cols[later]]
        for c in cosines:
            counts[c]["pairs"] += int(np.count_nonzero(values >= c))
    for c in cosines:
        counts[c]["planted_found"] = sum(1 for v in planted_cos.values() if v >= c)
        counts[c]["planted_recall"] = round(counts[c]["planted_found"] / max(1, len(planted_rows)), 4)
        counts[c]["other_pairs"] = counts[c]["pairs"] - counts[c]["planted_found"]
    return counts


def run_size(solr: LocalSolr, n: int, work: Path, args: argparse.Namespace) -> dict:
    corpus = work / f"corpus-{n}"
    if not (corpus / "docs.jsonl").exists():
        generate(n, args.seed, corpus)
    docs = list(iter_documents(corpus))
    planted = planted_pairs(corpus)
    client = SolrClient(f"{solr.base_url}/{solr.core}")
    out: dict = {"docs": n, "planted_pairs": len(planted)}

    # 1. index without and with the encoder
    encoder = in_package_encoder()
    for label, settings in (("words only", IndexSettings()), ("with vectors", IndexSettings(encoder=encoder.spec))):
        client.delete_all()
        started = time.monotonic()
        Indexer(client, settings).index_records(docs)
        seconds = time.monotonic() - started
        client.get_json("update", {"optimize": "true", "maxSegments": "1", "waitSearcher": "true"})
        out[label] = {"seconds": round(seconds, 1), "docs_per_s": round(n / seconds), "index_bytes":
                      index_bytes(solr.base_url, solr.core)}
        if label == "words only":
            jaccard = find_pairs(client, ThresholdOptions(threshold=0.8, method="lsh"))
            found = {(min(p.id, p.neighbor_id), max(p.id, p.neighbor_id)) for p in jaccard.pairs}
            out["jaccard_0.8_lsh"] = {"pairs": len(found), "planted_found": len(found & planted),
                                      "planted_recall": round(len(found & planted) / max(1, len(planted)), 4),
                                      "seconds": round(jaccard.seconds, 1)}
    grown = out["with vectors"]["index_bytes"] - out["words only"]["index_bytes"]
    out["growth_bytes_per_doc"] = round(grown / n)
    out["encode_docs_per_s"] = _encode_rate(encoder, [t for _, t in docs[:20_000]])

    # 2. lookups by meaning
    searcher = Searcher(client)
    rng = random.Random(args.seed)
    sample = rng.sample([doc_id for doc_id, _ in docs], min(args.lookups, n))
    out.update(time_lookups(searcher, sample, args.threshold))

    # 3. pairs and planted recall by cosine, exactly
    ids, matrix = stored_vectors(searcher)
    started = time.monotonic()
    out["by_cosine"] = {str(c): v for c, v in count_by_cosine(ids, matrix, COSINES, planted).items()}
    out["count_seconds"] = round(time.monotonic() - started, 1)

    # 4. the report, exact and knn (knn is one graph walk a document: up to --knn-max documents)
    reports: dict = {}
    for method in ("exact", "knn", "hybrid") if n <= args.knn_max else ("exact",):
        result = find_pairs(client, ThresholdOptions(threshold=args.threshold, similarity="cosine", method=method,
                                                     workers=None if method == "exact" else 2))
        reports[method] = {"seconds": round(result.seconds, 1), "pairs": len(result.pairs),
                           "set": {(p.id, p.neighbor_id) for p in result.pairs}}
    exact = reports["exact"].pop("set")
    for method in ("knn", "hybrid"):
        if method in reports:
            found = reports[method].pop("set")
            reports[method]["share_of_exact_pairs"] = round(len(exact & found) / max(1, len(exact)), 4)
    out["report_at_threshold"] = reports
    return out


def time_lookups(searcher: Searcher, sample: list[str], threshold: float) -> dict:
    """p50/p99 of the lookups by meaning of ``sample`` (stored documents), by each method: knn (the graph walk)
    and hybrid (the walk and the documents sharing an LSH band), and how many matches each found."""
    out: dict = {}
    for method in ("knn", "hybrid"):
        for doc_id in sample[:20]:  # warm-up
            similar_by_meaning(searcher, threshold, doc_id=doc_id, method=method)
        times, found_counts = [], []
        for doc_id in sample:
            started = time.perf_counter()
            found_counts.append(len(similar_by_meaning(searcher, threshold, doc_id=doc_id, method=method)))
            times.append(time.perf_counter() - started)
        key = "lookup" if method == "knn" else "hybrid_lookup"
        out[f"{key}_ms"] = percentiles(times)
        out[f"{key}_matches_mean"] = round(float(np.mean(found_counts)), 2)
    return out


def run_lookups_only(solr: LocalSolr, n: int, work: Path, args: argparse.Namespace) -> dict:
    """At sizes where comparing every pair is out of reach (a million vectors): index with vectors (the default
    token fields too, for the hybrid lookups), then the lookups' latencies; no exact counts, no reports."""
    corpus = work / f"corpus-{n}"
    if not (corpus / "docs.jsonl").exists():
        generate(n, args.seed, corpus)
    client = SolrClient(f"{solr.base_url}/{solr.core}")
    client.delete_all()
    encoder = in_package_encoder()
    started = time.monotonic()
    Indexer(client, IndexSettings(encoder=encoder.spec)).index_records(iter_documents(corpus))
    seconds = time.monotonic() - started
    client.get_json("update", {"optimize": "true", "maxSegments": "1", "waitSearcher": "true"}, timeout=7200)
    out: dict = {"docs": n, "lookups_only": True,
                 "with vectors": {"seconds": round(seconds, 1), "docs_per_s": round(n / seconds),
                                  "index_bytes": index_bytes(solr.base_url, solr.core)}}
    rng = random.Random(args.seed)
    sample = [doc_id for doc_id, _ in rng.sample(list(iter_documents(corpus)), min(args.lookups, n))]
    out.update(time_lookups(Searcher(client), sample, args.threshold))
    return out


def _encode_rate(encoder, texts: list[str]) -> int:
    started = time.monotonic()
    encoder.encode(texts)
    return round(len(texts) / (time.monotonic() - started))


def markdown(report: dict) -> str:
    lines = [f"# Near duplicates by meaning in Solr ({report['machine']})", "",
             f"`python benchmarks/meaning_solr.py --docs {','.join(str(r['docs']) for r in report['results'])}"
             f"{' --lookups-only' if report.get('lookups_only') else ''} "
             f"--threshold {report['threshold']}`; encoder {report['encoder']}; Solr heap {report['solr_heap']}, one "
             f"core; load average at start {report['load_average']['start']}, at end {report['load_average']['end']}.",
             "", "The corpus is `benchmarks/corpus.py`'s planted one: pseudo-word texts with planted near-duplicate "
             "copies (Jaccard 0.5-1). Pseudo-words mean nothing to an encoder trained on real language, so this is "
             "the lexical case a cosine mode must not flood.", ""]
    for r in report["results"]:
        if r.get("lookups_only"):
            v = r["with vectors"]
            lines += [f"## {r['docs']:,} documents (lookups only)", "",
                      f"Indexed with vectors (`--encoder wordllama`, default token fields) at {v['docs_per_s']:,} "
                      f"documents/s ({v['seconds']:,} s); index {v['index_bytes'] / 1e6:,.1f} MB after a merge to one "
                      "segment. Every pair is out of reach for the exact count at this size, so only lookups "
                      "were timed.", "", *_lookup_lines(r, report), ""]
            continue
        w, v = r["words only"], r["with vectors"]
        lines += [f"## {r['docs']:,} documents", "",
                  "| | index docs/s | index size |", "|---|---:|---:|",
                  f"| words only (default fields) | {w['docs_per_s']:,} | {w['index_bytes'] / 1e6:,.1f} MB |",
                  f"| with vectors (`--encoder wordllama`) | {v['docs_per_s']:,} | {v['index_bytes'] / 1e6:,.1f} MB |",
                  "", f"A vector costs {r['growth_bytes_per_doc']:,} bytes of index a document (stored and HNSW); "
                  f"encoding alone runs at {r['encode_docs_per_s']:,} documents/s.", "",
                  *_lookup_lines(r, report), "",
                  f"Every pair by cosine, counted exactly ({r['count_seconds']} s), against the "
                  f"{r['planted_pairs']:,} planted pairs; Jaccard (`report --threshold 0.8 --method lsh`): "
                  f"{r['jaccard_0.8_lsh']['pairs']:,} pairs, planted recall "
                  f"{r['jaccard_0.8_lsh']['planted_recall']}.", "",
                  "| cosine >= | pairs | planted found | planted recall | other pairs |", "|---:|---:|---:|---:|---:|"]
        for c, row in r["by_cosine"].items():
            lines.append(f"| {c} | {row['pairs']:,} | {row['planted_found']:,} | {row['planted_recall']} | "
                         f"{row['other_pairs']:,} |")
        rep = r["report_at_threshold"]
        knn = ("; ".join(f"method {m} {rep[m]['seconds']} s ({rep[m]['pairs']:,} pairs, "
                         f"{rep[m]['share_of_exact_pairs']:.2%} of the exact ones)" for m in ("knn", "hybrid")
                         if m in rep)
               or f"methods knn and hybrid measured up to {report['knn_max']:,} documents (one graph walk a "
                  "document)")
        lines += ["", f"`report --similarity cosine --threshold {report['threshold']}`: method exact "
                  f"{rep['exact']['seconds']} s ({rep['exact']['pairs']:,} pairs), {knn}.", ""]
    return "\n".join(lines) + "\n"


def _lookup_lines(r: dict, report: dict) -> list[str]:
    lines = []
    for key, what in (("lookup", "knn: the graph walk"), ("hybrid_lookup", "hybrid: the walk and the LSH bands")):
        if f"{key}_ms" in r:
            lines.append(f"- Lookups by meaning at cosine >= {report['threshold']}, method {what}, verified: p50 "
                         f"{r[key + '_ms']['p50_ms']} ms, p99 {r[key + '_ms']['p99_ms']} ms over {report['lookups']} "
                         f"documents ({r[key + '_matches_mean']} matches on average).")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", default="100000", help="comma-separated collection sizes")
    parser.add_argument("--threshold", type=float, default=0.97)
    parser.add_argument("--lookups", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--knn-max", type=int, default=20_000,
                        help="compare the exact and knn reports up to this many documents")
    parser.add_argument("--lookups-only", action="store_true",
                        help="index with vectors and time the lookups only (sizes where every pair is out of reach)")
    parser.add_argument("--heap", default="2g")
    parser.add_argument("--work-dir", type=Path, default=None)
    parser.add_argument("--out-dir", type=Path, default=Path("benchmarks/results"))
    parser.add_argument("--machine", default=f"{os.cpu_count()}core")
    parser.add_argument("--suffix", default="", help="appended to the results' file names (a run beside another)")
    args = parser.parse_args(argv)
    sizes = [int(x) for x in args.docs.split(",") if x.strip()]
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="neardup-bench-meaning-"))
    work.mkdir(parents=True, exist_ok=True)
    load_at_start = load_average_text()
    solr = LocalSolr(port=0, data_dir=work / "solr", heap=args.heap)
    solr.start()
    try:
        results = [(run_lookups_only if args.lookups_only else run_size)(solr, n, work, args) for n in sizes]
    finally:
        solr.stop()
    report = {"benchmark": "meaning-solr", "machine": args.machine, "platform": platform.platform(),
              "solr_heap": args.heap, "threshold": args.threshold, "lookups_only": args.lookups_only,
              "lookups": args.lookups, "knn_max": args.knn_max,
              "encoder": in_package_encoder().spec,
              "load_average": {"start": load_at_start, "end": load_average_text()}, "results": results}
    stem = args.out_dir / (f"{date.today().isoformat()}-meaning-solr-{args.machine}"
                           + ("-lookups" if args.lookups_only else "") + args.suffix)
    write_result_files(stem, report, markdown(report))
    print(markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
