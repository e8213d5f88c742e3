"""Benchmark section ``cloud``: one core against a SolrCloud collection of 2 shards, in one run, on one corpus.

For each corpus size and each backend (a local single core; a local cluster of ZooKeeper and 2 nodes, each
node its own JVM, collection of ``--shards`` x 1 replica) it measures, every step in a fresh child process:

- indexing (LSH profile: ``minhash_sig``, the band tokens and the content; the end-of-run check included),
- LSH lookups of edited copies of indexed documents (p50/p99 over ``--lookups`` texts, after a warm-up),
- whole-collection dedup at J >= 0.8 with exact verification: wall time and the client's peak RSS,
- the index on disk per shard, and the resident memory of every Solr JVM,

and checks that the cluster's pair file equals the single core's. Results go to
``benchmarks/results/<date>-cloud-<machine>.{json,md}``, with a sizing table for 10M and 100M documents
computed from the measured per-shard figures (formula in the table's notes).

    python -m benchmarks.cloud --sizes 100000,1000000

Both backends share this machine's cores (2 on the reference machine): the cluster's nodes compete for the
same CPUs, so its figures here are a floor for what a cluster of separate machines does.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import json
import math
import multiprocessing as mp
import os
import random
import shutil
import sys
import time
from pathlib import Path

import requests

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))

from benchmarks.provenance import write_result_files  # noqa: E402

THRESHOLD = 0.8
TARGETS = (10_000_000, 100_000_000)


class RSSSampler:
    """Peak RSS of this process, sampled every 10 ms. Not ru_maxrss: Linux carries the high-water mark across
    fork and exec, so a child started by a large parent would report the parent's size."""

    def __init__(self) -> None:
        import threading

        import psutil

        self._proc = psutil.Process()
        self.peak = self._proc.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.01):
            self.peak = max(self.peak, self._proc.memory_info().rss)

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._proc.memory_info().rss)
        return round(self.peak / 2**20, 1)


def _child(fn_name: str, kwargs: dict, conn) -> None:
    try:
        result = globals()[fn_name](**kwargs)
        conn.send(("ok", result))
    except BaseException as exc:  # reported to the parent, which records it in the result file
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


def in_child(fn_name: str, **kwargs) -> dict:
    """Run ``fn_name(**kwargs)`` in a fresh process: its peak RSS is the step's own, not the run's so far."""
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(fn_name, kwargs, child))
    proc.start()
    child.close()
    status, payload = parent.recv()
    proc.join()
    if status != "ok":
        return {"status": "error", "error": payload}
    return payload


# ----------------------------------------------------------------------------------------------------- steps
def step_index(core_url: str, docs_path: str) -> dict:
    from neardup_solr.solr.documents import IndexSettings
    from neardup_solr.solr.indexer import Indexer
    from neardup_solr.solr.client import SolrClient

    client = SolrClient(core_url, timeout=600)
    client.check()
    client.delete_all()
    indexer = Indexer(client, IndexSettings(fields=("lsh",)), batch_size=500, workers=2)
    t0 = time.perf_counter()
    summary = indexer.index_file(docs_path, "jsonl", checkpoint_path=None)
    wall = time.perf_counter() - t0
    return {"docs": summary.indexed, "rejected": summary.rejected, "seconds": round(wall, 2),
            "docs_per_s": round(summary.indexed / wall, 1),
            "verify_seconds": round(summary.verification.seconds, 2), "num_found": client.count()}


def step_lookups(core_url: str, docs_path: str, lookups: int, warmup: int, seed: int) -> dict:
    import numpy as np

    from neardup_solr.solr.searcher import Searcher
    from neardup_solr.solr.client import SolrClient

    from benchmarks.run import _edited

    rng = random.Random(seed)
    lines = _sample_lines(docs_path, lookups + warmup, rng)
    texts = [(doc["id"], _edited(doc["text"], rng)) for doc in lines]
    searcher = Searcher(SolrClient(core_url))
    latencies, found = [], 0
    for i, (doc_id, text) in enumerate(texts):
        t0 = time.perf_counter()
        results = searcher.find_near_dups(text=text, mode="lsh", max_edit_distance=None, min_jaccard=THRESHOLD,
                                          rows=50, first_word_filter=False)
        dt = time.perf_counter() - t0
        if i >= warmup:
            latencies.append(dt * 1000)
            found += any(r.id == doc_id for r in results)
    lat = np.asarray(latencies)
    return {"lookups": len(latencies), "p50_ms": round(float(np.percentile(lat, 50)), 2),
            "p99_ms": round(float(np.percentile(lat, 99)), 2), "mean_ms": round(float(lat.mean()), 2),
            "original_found": found}


def step_dedup(core_url: str, pairs_path: str) -> dict:
    from dataclasses import asdict

    from neardup_solr.engine.collection import dedupe_collection
    from neardup_solr.solr.client import SolrClient

    sampler = RSSSampler()
    t0 = time.perf_counter()
    result = dedupe_collection(SolrClient(core_url, timeout=600), THRESHOLD)
    wall = time.perf_counter() - t0
    peak = sampler.stop()
    with open(pairs_path, "w", encoding="utf-8") as f:
        for p in result.pairs:
            f.write(f"{p.id}\t{p.neighbor_id}\t{p.similarity:.6f}\n")
    digest = hashlib.sha256(Path(pairs_path).read_bytes()).hexdigest()[:16]
    stats = asdict(result.stats)
    return {"seconds": round(wall, 2), "pairs": len(result.pairs), "pairs_sha256": digest,
            "peak_rss_mib": peak, "work_dir_mib": stats["work_dir_mib"],
            "phases": stats["seconds"], "candidates": stats["candidate_pairs"],
            "estimated": stats["estimated_pairs"], "fetched_documents": stats["fetched_documents"]}


def _sample_lines(docs_path: str, k: int, rng: random.Random) -> list[dict]:
    with open(docs_path, encoding="utf-8") as f:
        total = sum(1 for _ in f)
    wanted = set(rng.sample(range(total), min(k, total)))
    out = []
    with open(docs_path, encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i in wanted:
                out.append(json.loads(line))
    rng.shuffle(out)
    return out


# ----------------------------------------------------------------------------------------------------- Solr side
def core_sizes(node_urls: list[str]) -> list[dict]:
    """Every core on the given nodes: name, documents, index bytes (Core Admin STATUS)."""
    out = []
    for node in node_urls:
        data = requests.get(f"{node}/admin/cores", params={"action": "STATUS", "wt": "json"}, timeout=60).json()
        for name, st in sorted(data.get("status", {}).items()):
            idx = st.get("index", {})
            out.append({"node": node, "core": name, "docs": idx.get("numDocs"),
                        "bytes": idx.get("sizeInBytes")})
    return out


def jvm_rss_mib(pids: list[int | None]) -> list[float | None]:
    import psutil

    out = []
    for pid in pids:
        try:
            out.append(round(psutil.Process(pid).memory_info().rss / 2**20, 1) if pid else None)
        except psutil.Error:
            out.append(None)
    return out


def run_backend(kind: str, n: int, corpus: Path, work: Path, args, log) -> dict:
    from neardup_solr.solr.backends.cloud import LocalSolrCloud
    from neardup_solr.solr.backends.local import LocalSolr

    data_dir = work / f"{kind}-{n}"
    shutil.rmtree(data_dir, ignore_errors=True)
    t0 = time.perf_counter()
    if kind == "core":
        solr = LocalSolr(port=args.port, data_dir=data_dir, heap=args.core_heap)
        solr.start()
        url, nodes = solr.core_url, [solr.core_url.rsplit("/", 1)[0]]
    else:
        solr = LocalSolrCloud(port=args.port + 10, data_dir=data_dir, nodes=args.nodes, shards=args.shards,
                              replicas=1, heap=args.node_heap)
        solr.start()
        url, nodes = solr.collection_url, solr.node_urls
    out: dict = {"start_s": round(time.perf_counter() - t0, 1), "url": url}
    try:
        docs_path = str(corpus / "docs.jsonl")
        log(f"{kind} {n:,}: indexing")
        out["indexing"] = in_child("step_index", core_url=url, docs_path=docs_path)
        log(f"{kind} {n:,}: {out['indexing'].get('docs_per_s')} docs/s; lookups")
        out["lookup"] = in_child("step_lookups", core_url=url, docs_path=docs_path, lookups=args.lookups,
                                 warmup=args.warmup, seed=args.seed)
        log(f"{kind} {n:,}: p50 {out['lookup'].get('p50_ms')} ms; whole-collection dedup")
        out["dedup"] = in_child("step_dedup", core_url=url, pairs_path=str(work / f"pairs-{kind}-{n}.tsv"))
        log(f"{kind} {n:,}: dedup {out['dedup'].get('seconds')} s, {out['dedup'].get('pairs')} pairs")
        out["cores"] = core_sizes(nodes)
        pids = [solr.pid()] if kind == "core" else solr.node_pids()
        out["jvm_rss_mib"] = jvm_rss_mib(pids)
    finally:
        solr.stop()
        shutil.rmtree(data_dir, ignore_errors=True)
    return out


# ----------------------------------------------------------------------------------------------------- report
def sizing(report: dict) -> dict:
    """Nodes, shards, RAM and disk per shard, rates, for each target size, from the largest measured run."""
    n = max(int(k) for k in report["sizes"])
    run = report["sizes"][str(n)]
    cloud, core = run["cloud"], run["core"]
    shard_cores = [c for c in cloud["cores"] if c["docs"]]
    bytes_per_doc = sum(c["bytes"] for c in shard_cores) / max(1, sum(c["docs"] for c in shard_cores))
    work_per_doc = cloud["dedup"]["work_dir_mib"] * 2**20 / n
    dedup_per_doc = cloud["dedup"]["seconds"] / n
    core_rate = core["indexing"]["docs_per_s"]
    p50 = cloud["lookup"]["p50_ms"]
    rows = []
    for target in TARGETS:
        shards = max(1, math.ceil(target * bytes_per_doc / (report["shard_disk_gb"] * 1e9)))
        disk_per_shard = target * bytes_per_doc / shards
        rows.append({
            "docs": target, "shards": shards, "nodes": shards, "replicas": 1,
            "disk_per_shard_gb": round(disk_per_shard / 1e9, 1),
            "ram_per_shard_gb": round(report["node_heap_gb"] + disk_per_shard / 1e9, 1),
            "indexing_docs_per_s": round(min(shards * core_rate, report["client_sign_rate"])),
            "lookup_p50_ms": p50,
            "dedup_minutes": round(target * dedup_per_doc / 60, 1),
            "dedup_client_disk_gb": round(target * work_per_doc / 1e9, 1),
        })
    return {"measured_at": n, "bytes_per_doc": round(bytes_per_doc, 1), "work_bytes_per_doc": round(work_per_doc, 1),
            "dedup_s_per_million": round(dedup_per_doc * 1e6, 1), "single_node_docs_per_s": core_rate,
            "rows": rows}


def render(report: dict) -> str:
    lines = [f"# Cloud benchmark: one core vs a {report['shards']}-shard cluster ({report['date']}, {report['machine']})",
             "", f"Command: `{report['command']}`  ", f"Machine: {report['machine_note']}", "",
             "| docs | backend | start s | index docs/s | LSH lookup p50 / p99 ms | originals found | "
             "dedup s | dedup peak RSS MiB | pairs | pair file |",
             "|---:|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for n, run in sorted(report["sizes"].items(), key=lambda kv: int(kv[0])):
        for kind, label in (("core", "one core"), ("cloud", f"{report['shards']} shards x 1 replica")):
            r = run.get(kind, {})
            ix, lk, dd = r.get("indexing", {}), r.get("lookup", {}), r.get("dedup", {})
            same = "" if kind == "core" else ("identical" if run.get("identical_pairs") else "**differs**")
            lines.append(f"| {int(n):,} | {label} | {r.get('start_s', '–')} | {ix.get('docs_per_s', '–'):,} | "
                         f"{lk.get('p50_ms', '–')} / {lk.get('p99_ms', '–')} | {lk.get('original_found', '–')}"
                         f"/{lk.get('lookups', '–')} | {dd.get('seconds', '–')} | {dd.get('peak_rss_mib', '–')} | "
                         f"{dd.get('pairs', '–'):,} | {dd.get('pairs_sha256', '')} {same} |")
    lines += ["", "Per shard (largest size): " + "; ".join(
        f"{c['core']} {c['docs']:,} docs {c['bytes'] / 1e9:.2f} GB"
        for c in report["sizes"][str(max(int(k) for k in report["sizes"]))]["cloud"]["cores"] if c["docs"])]
    s = report.get("sizing")
    if s:
        lines += ["", f"## Sizing (computed from the {s['measured_at']:,}-document cluster run)", "",
                  "| docs | shards = nodes | disk per shard GB | RAM per shard GB | indexing docs/s | "
                  "lookup p50 ms | whole-collection dedup min | dedup client disk GB |",
                  "|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for r in s["rows"]:
            lines.append(f"| {r['docs']:,} | {r['shards']} | {r['disk_per_shard_gb']} | {r['ram_per_shard_gb']} | "
                         f"{r['indexing_docs_per_s']:,} | {r['lookup_p50_ms']} | {r['dedup_minutes']} | "
                         f"{r['dedup_client_disk_gb']} |")
        lines += ["", "Formula (N documents, measured figures in brackets):", "",
                  f"- index bytes a document B = [{s['bytes_per_doc']:,}] (sum of shard sizes / documents); "
                  f"shards = ceil(N x B / {report['shard_disk_gb']} GB), one shard per node, 1 replica "
                  "(double nodes and disk for 2 replicas);",
                  f"- RAM per shard = heap [{report['node_heap_gb']} GB] + the shard's index (kept in the OS page "
                  "cache so lookups never wait on disk);",
                  f"- indexing docs/s = min(shards x one node's rate [{s['single_node_docs_per_s']:,}], the client's "
                  f"signing rate [{report['client_sign_rate']:,} docs/s on one core]): nodes on their own machines "
                  "index in parallel, the signer is the next limit (run more indexer processes on disjoint files);",
                  "- lookup p50: one LSH lookup touches every shard once, in parallel, so it stays near the "
                  "measured value while each shard's index is in memory; throughput grows with replicas;",
                  f"- whole-collection dedup time = N x [{s['dedup_s_per_million']} s per million]: linear (the "
                  "cursor read dominates); client disk = N x "
                  f"[{s['work_bytes_per_doc']:,} bytes]; client memory does not follow N (see "
                  "`neardup_solr/engine/collection.py`, Memory): it follows the candidate and reported pairs."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="100000,1000000")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--shards", type=int, default=2)
    ap.add_argument("--nodes", type=int, default=2)
    ap.add_argument("--port", type=int, default=8970)
    ap.add_argument("--core-heap", default="4g")
    ap.add_argument("--node-heap", default="2g")
    ap.add_argument("--lookups", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--shard-disk-gb", type=float, default=50.0,
                    help="index size a shard is allowed in the sizing table (default 50 GB)")
    ap.add_argument("--client-sign-rate", type=int, default=25_800,
                    help="docs/s the signer reaches on one core (from the main benchmark's signing section)")
    ap.add_argument("--work-dir", type=Path, default=BENCH / "work")
    ap.add_argument("--out-dir", type=Path, default=BENCH / "results")
    ap.add_argument("--machine", default=None)
    args = ap.parse_args(argv)

    from benchmarks.run import machine_tag
    from benchmarks.corpus import generate

    started = time.perf_counter()

    def log(msg: str) -> None:
        print(f"[{time.perf_counter() - started:7.1f}s] {msg}", file=sys.stderr, flush=True)

    work = args.work_dir.resolve() / "cloud"
    work.mkdir(parents=True, exist_ok=True)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    machine = args.machine or machine_tag()
    date = _dt.date.today().isoformat()
    stem = args.out_dir / f"{date}-cloud-{machine}"
    report = {"date": date, "machine": machine, "shards": args.shards, "nodes": args.nodes,
              "command": "python -m benchmarks.cloud " + " ".join(argv if argv is not None else sys.argv[1:]),
              "machine_note": f"{os.cpu_count()} cores shared by the client and every Solr JVM; core heap "
                              f"{args.core_heap}, node heap {args.node_heap}",
              "node_heap_gb": float(args.node_heap.rstrip("gG")), "shard_disk_gb": args.shard_disk_gb,
              "client_sign_rate": args.client_sign_rate, "sizes": {}}
    for n in [int(s) for s in args.sizes.split(",")]:
        corpus = args.work_dir.resolve() / f"corpus-{n}-s{args.seed}"
        meta = corpus / "meta.json"
        if not (meta.exists() and json.loads(meta.read_text()).get("parameters", {}).get("docs") == n):
            log(f"generating {n:,} documents")
            generate(n, args.seed, corpus)
        run = report["sizes"][str(n)] = {}
        for kind in ("core", "cloud"):
            run[kind] = run_backend(kind, n, corpus, work, args, log)
            write_result_files(stem, report)
        run["identical_pairs"] = (run["core"]["dedup"].get("pairs_sha256") is not None
                                  and run["core"]["dedup"].get("pairs_sha256") == run["cloud"]["dedup"].get("pairs_sha256"))
    report["sizing"] = sizing(report)
    write_result_files(stem, report, render(report))
    print(render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
