"""The whole benchmark in one run: signing, indexing, lookups, Solr's own MinHash, whole-collection dedup.

    python benchmarks/run.py --docs 100000 [--sizes 100000,1000000] [--seed 1] [--quick]

writes ``benchmarks/results/<YYYY-MM-DD>-<machine>.json`` (every number), ``.md`` (the tables) and ``.png``
(lookup latency and throughput against corpus size). ``machine`` is a tag like ``2core-24g``.

Sections, per corpus size unless said otherwise
    signing        once, on the first corpus's texts, one core: ours vs datasketch vs rensa (benchmarks/signing.py)
    indexing       our Indexer from docs.jsonl to a committed index, docs/s end to end
    index_size     CoreAdmin STATUS ``index.sizeInBytes`` of the core, per document
    lookup         p50/p95/p99 of single near-dup lookups by id and by new text, modes shingles/minhash/lsh
    solr_minhash   Solr's MinHashFilter + ``{!min_hash}`` (a second core on the same Solr holding id, content and
                   content_mh) against our LSH lookup + exact verification: recall, precision, latency
    collection     all pairs >= 0.8: ours (``neardup_solr.engine.collection.dedupe_collection``) vs datasketch
                   MinHashLSH in memory; wall time, peak RSS, recall/precision against the exact pairs

Every section runs in its own spawned process with a time box: a section that fails or overruns is recorded
in the JSON (status, error) and the run goes on. A fresh process per section also makes its peak RSS
(``ru_maxrss``) the section's own, which is what the whole-collection comparison reports.

Solr: a dedicated local one (port 8996, data under benchmarks/work/solr, 6 GB heap) is started and stopped
unless ``--solr-url`` or ``SOLR_URL`` names a core. THE CORE IS CLEARED: point it at a throwaway core only.
Corpora and their exact pairs are generated once under benchmarks/work/ and reused.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import multiprocessing
import os
import platform
import random
import resource
import shlex
import sys
import threading
import time
import traceback
from pathlib import Path

if __package__ in (None, ""):
    # Run as a script (and in spawned section processes): the repository root must be importable.
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from benchmarks.provenance import rewrite_result_files, write_result_files  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "benchmarks"
THRESHOLD = 0.8
NUM_HASHES = 128
MODES = ("shingles", "minhash", "lsh")
SECTIONS = ("signing", "indexing_writeup", "indexing_lsh", "indexing", "index_size", "lookup", "solr_minhash",
            "collection")
# Sections that score against the exact all-pairs ground truth (costly to compute at 1,000,000 documents).
TRUTH_SECTIONS = {"solr_minhash", "collection"}
MH_CORE_SUFFIX = "_bench_mh"
SOLR_PORT = 8996

# ---------------------------------------------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------------------------------------------


def machine_tag() -> str:
    return f"{os.cpu_count()}core-{round(memory_gib())}g"


def percentiles(values) -> dict:
    if not values:
        return {"n": 0}
    a = np.asarray(values, dtype=np.float64) * 1000.0
    return {
        "n": int(a.size),
        "mean_ms": round(float(a.mean()), 3),
        "p50_ms": round(float(np.percentile(a, 50)), 3),
        "p95_ms": round(float(np.percentile(a, 95)), 3),
        "p99_ms": round(float(np.percentile(a, 99)), 3),
        "max_ms": round(float(a.max()), 3),
    }


def pr(found: set, truth: set) -> dict:
    tp = len(found & truth)
    return {
        "pairs_found": len(found),
        "pairs_true": len(truth),
        "true_positives": tp,
        "recall": round(tp / len(truth), 6) if truth else None,
        "precision": round(tp / len(found), 6) if found else None,
    }


def ordered(a: str, b: str) -> tuple[str, str]:
    # Corpus ids are zero-padded, so string order is corpus order (the order exact_pairs writes).
    return (a, b) if a <= b else (b, a)


def read_exact_pairs(path) -> set[tuple[str, str]]:
    out = set()
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("#") or not line.strip():
                continue
            a, b, _ = line.split("\t")
            out.add(ordered(a, b))
    return out


def neighbours(pairs: set[tuple[str, str]]) -> dict[str, set[str]]:
    nb: dict[str, set[str]] = {}
    for a, b in pairs:
        nb.setdefault(a, set()).add(b)
        nb.setdefault(b, set()).add(a)
    return nb


def read_ids(docs_path) -> list[str]:
    ids = []
    with open(docs_path, encoding="utf-8") as fh:
        for line in fh:
            # '{"id": "d0000001", ...': the generator writes the id first, so no JSON parse is needed.
            start = line.index('"id": "') + 7
            ids.append(line[start : line.index('"', start)])
    return ids


def sample_documents(docs_path, k: int, rng: random.Random) -> list[tuple[str, str]]:
    """``(id, text)`` of ``k`` documents drawn by ``rng.sample`` over the file's lines, in draw order: the same draw
    as ``rng.sample(read_ids(docs_path), k)``, but streamed, so a 10M-document corpus's ids are never all held."""
    with open(docs_path, "rb") as fh:
        n = sum(1 for _ in fh)
    picks = rng.sample(range(n), min(n, k))
    wanted = set(picks)
    found: dict[int, tuple[str, str]] = {}
    with open(docs_path, encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            if i in wanted:
                rec = json.loads(line)
                found[i] = (rec["id"], rec["text"])
    return [found[i] for i in picks]


class PeakRSS:
    """Samples this process's RSS every 20 ms; ru_maxrss is the authority, this shows the shape if needed."""

    def __init__(self):
        import psutil

        self.proc = psutil.Process()
        self.baseline = self.proc.memory_info().rss
        self.peak = self.baseline
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, self.proc.memory_info().rss)

    def stop(self) -> dict:
        self._stop.set()
        self._thread.join()
        ru_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
        peak = max(self.peak, ru_kib * 1024)
        return {
            "peak_rss_mib": round(peak / 2**20, 1),
            "baseline_rss_mib": round(self.baseline / 2**20, 1),
            "peak_minus_baseline_mib": round((peak - self.baseline) / 2**20, 1),
        }


def solr_admin(core_url: str) -> tuple[str, str]:
    base, core = core_url.rstrip("/").rsplit("/", 1)
    return f"{base}/admin/cores", core


def core_status(core_url: str) -> dict:
    import requests

    admin, core = solr_admin(core_url)
    resp = requests.get(admin, params={"action": "STATUS", "core": core, "wt": "json"}, timeout=60)
    resp.raise_for_status()
    return resp.json().get("status", {}).get(core, {})


def ensure_mh_core(core_url: str) -> str:
    """A second core from the same configset for Solr's own MinHash, so neither index pays for the other."""
    import requests

    admin, core = solr_admin(core_url)
    name = core + MH_CORE_SUFFIX
    url = f"{admin.rsplit('/admin/cores', 1)[0]}/{name}"
    st = requests.get(admin, params={"action": "STATUS", "core": name, "wt": "json"}, timeout=60).json()
    if not st.get("status", {}).get(name, {}).get("name"):
        resp = requests.get(admin, params={"action": "CREATE", "name": name, "configSet": "neardup",
                                           "instanceDir": name, "wt": "json"}, timeout=300)
        if resp.status_code != 200:
            raise RuntimeError(f"could not create core {name}: {resp.text[:400]}")
    return url


def drop_mh_core(core_url: str) -> None:
    import requests

    admin, core = solr_admin(core_url)
    requests.get(admin, params={"action": "UNLOAD", "core": core + MH_CORE_SUFFIX, "deleteIndex": "true",
                                "deleteDataDir": "true", "deleteInstanceDir": "true", "wt": "json"}, timeout=300)


def du_bytes(path) -> int | None:
    p = Path(path)
    if not p.exists():
        return None
    return sum(f.stat().st_size for f in p.rglob("*") if f.is_file())


# ---------------------------------------------------------------------------------------------------------------
# Section runner: one spawned process per section, with a time box
# ---------------------------------------------------------------------------------------------------------------


def _section_child(fn_name: str, kwargs: dict, conn, deadline: float) -> None:
    import logging

    logging.basicConfig(level=logging.WARNING)
    t0 = time.perf_counter()
    try:
        out = globals()[fn_name](deadline=deadline, **kwargs)
        out = {"status": out.pop("status", "ok"), **out}
    except Exception as exc:  # recorded, never fatal: the run goes on with the next section
        out = {"status": "error", "error": f"{type(exc).__name__}: {exc}",
               "traceback": traceback.format_exc()[-3000:]}
    out["section_seconds"] = round(time.perf_counter() - t0, 3)
    conn.send(out)
    conn.close()


def run_section(name: str, fn, budget: float, log, **kwargs) -> dict:
    """``fn(deadline=..., **kwargs)`` in a spawned process; cooperative deadline at ``budget``, killed at 1.2x."""
    log(f"[{name}] start (time box {budget:.0f} s)")
    ctx = multiprocessing.get_context("spawn")
    recv, send = ctx.Pipe(duplex=False)
    t0 = time.perf_counter()
    proc = ctx.Process(target=_section_child, args=(fn.__name__, kwargs, send, time.time() + budget),
                       name=f"bench-{name}")
    load_start = os.getloadavg()
    proc.start()
    send.close()
    hard = budget * 1.2 + 30
    result = None
    try:
        if recv.poll(hard):
            try:
                result = recv.recv()
            except EOFError:
                result = None
    finally:
        if result is None and proc.is_alive():
            proc.terminate()
            proc.join(10)
            if proc.is_alive():
                proc.kill()
        proc.join(30)
    if result is None:
        if time.perf_counter() - t0 >= hard:
            result = {"status": "timeout", "error": f"killed after {hard:.0f} s (time box {budget:.0f} s)"}
        else:
            result = {"status": "error", "error": f"section process died (exit code {proc.exitcode})"}
        result["section_seconds"] = round(time.perf_counter() - t0, 3)
    # The machine may be shared: the load average says whether a section had the CPUs to itself.
    result["loadavg_1m_start_end"] = [round(load_start[0], 2), round(os.getloadavg()[0], 2)]
    log(f"[{name}] {result['status']} in {result['section_seconds']:.1f} s"
        + (f": {result.get('error')}" if result["status"] not in ("ok", "partial") else ""))
    return result


# ---------------------------------------------------------------------------------------------------------------
# Sections (each runs in its own process; ``deadline`` is a time.time() value)
# ---------------------------------------------------------------------------------------------------------------


def sec_corpus(*, deadline, corpus_dir: str, docs: int, seed: int, with_truth: bool = True) -> dict:
    from benchmarks.corpus import generate
    from benchmarks.exact_pairs import exact_pairs, pairs_path, shingle_sets, write_pairs
    from benchmarks.corpus import iter_documents

    out = Path(corpus_dir)
    meta_path = out / "meta.json"
    reused = False
    meta = None
    if meta_path.exists() and (out / "docs.jsonl").exists():
        meta = json.loads(meta_path.read_text())
        p = meta.get("parameters", {})
        reused = p.get("docs") == docs and p.get("seed") == seed
    gen_s = None
    if not reused:
        t0 = time.perf_counter()
        meta = generate(docs, seed, out)
        gen_s = round(time.perf_counter() - t0, 2)
    exact = pairs_path(out, THRESHOLD)
    exact_s = None
    if with_truth and not exact.exists():
        t0 = time.perf_counter()
        ids, texts = [], []
        for doc_id, text in iter_documents(out):
            ids.append(doc_id)
            texts.append(text)
        sets = shingle_sets(texts)
        del texts
        pairs = exact_pairs(sets, ids, THRESHOLD)
        write_pairs(exact, pairs, THRESHOLD)
        exact_s = round(time.perf_counter() - t0, 2)
    npairs = (sum(1 for line in open(exact, encoding="utf-8") if not line.startswith("#"))
              if exact.exists() else None)
    c = meta.get("counts", {})
    return {"dir": str(out), "reused": reused, "generate_s": gen_s, "exact_pairs_s": exact_s,
            "docs": c.get("docs", docs), "copies": c.get("copies"), "clusters": c.get("clusters"),
            "bytes": (out / "docs.jsonl").stat().st_size, "exact_pairs_ge_0.8": npairs}


def sec_signing(*, deadline, corpus_dir: str, docs: int, repeats: int) -> dict:
    from benchmarks.corpus import iter_documents
    from benchmarks.signing import OURS_NUMPY, RENSA_AS_USED, run_signing_benchmark

    texts = []
    for _, text in iter_documents(corpus_dir):
        texts.append(text)
        if len(texts) >= docs:
            break
    report = run_signing_benchmark(texts, NUM_HASHES, repeats=repeats)
    res = report["results"]
    ours = res.get("neardup_solr (batch)")

    def best(names):
        have = [(n, res[n]) for n in names if n in res]
        return max(have, key=lambda kv: kv[1]["docs_per_s"]) if have else (None, None)

    ds_name, ds = best(["datasketch update_batch", "datasketch bulk"])
    # rensa as its users feed it (plain Python shingles into its fastest call), and, apart, rensa fed our own
    # shingle strings: the second's time is mostly ours, so it flattered rensa's speed less honestly.
    rs_name, rs = best([RENSA_AS_USED])
    fed_name, fed = best(["rensa RMinHash.update", "rensa digest_matrix"])
    numpy_path = res.get(OURS_NUMPY)
    report["summary"] = {
        "ours_docs_per_s": ours["docs_per_s"] if ours else None,
        "ours_mb_per_s": ours["mb_per_s"] if ours else None,
        "best_datasketch": ds_name,
        "best_datasketch_docs_per_s": ds["docs_per_s"] if ds else None,
        "best_rensa": rs_name,
        "best_rensa_docs_per_s": rs["docs_per_s"] if rs else None,
        "ours_vs_datasketch_x": round(ours["docs_per_s"] / ds["docs_per_s"], 3) if ours and ds else None,
        "ours_vs_rensa_x": round(ours["docs_per_s"] / rs["docs_per_s"], 3) if ours and rs else None,
        "best_rensa_fed_our_shingles": fed_name,
        "ours_vs_rensa_fed_our_shingles_x": round(ours["docs_per_s"] / fed["docs_per_s"], 3) if ours and fed else None,
        "ours_vs_numpy_path_x": round(ours["docs_per_s"] / numpy_path["docs_per_s"], 3) if ours and numpy_path else None,
        "signing_path": report.get("signing_path"),
    }
    return report


def _client_build_rate(docs_path: str, settings, docs: int = 10_000) -> dict:
    """Documents/s the client alone turns into JSON update bodies (one thread): the Indexer's ceiling on the
    Python side, to tell client cost from Solr cost."""
    from benchmarks.corpus import iter_documents
    from neardup_solr.solr.documents import DocumentBuilder

    items = []
    for item in iter_documents(docs_path):
        items.append(item)
        if len(items) >= docs:
            break
    builder = DocumentBuilder(settings)
    t0 = time.perf_counter()
    for lo in range(0, len(items), 500):
        json.dumps(builder.build(items[lo : lo + 500]).documents, ensure_ascii=False).encode("utf-8")
    wall = time.perf_counter() - t0
    return {"docs": len(items), "seconds": round(wall, 3), "docs_per_s": round(len(items) / wall, 1)}


def _cpu_seconds(pid: int | None) -> float | None:
    if pid is None:
        return None
    try:
        import psutil

        t = psutil.Process(pid).cpu_times()
        return t.user + t.system
    except Exception:  # noqa: BLE001 - Solr elsewhere, or gone: the split is simply not reported
        return None


def sec_indexing(*, deadline, core_url: str, docs_path: str, batch_size: int, workers: int,
                 settings=None, solr_pid: int | None = None) -> dict:
    """``neardup-solr index`` of the corpus into an emptied core with ``settings`` (default: the defaults)."""
    from neardup_solr.solr.documents import IndexSettings
    from neardup_solr.solr.indexer import Indexer
    from neardup_solr.solr.client import SolrClient

    client = SolrClient(core_url, timeout=600)
    client.delete_all()
    settings = settings or IndexSettings()
    indexer = Indexer(client, settings, batch_size=batch_size, workers=workers)
    solr_cpu0 = _cpu_seconds(solr_pid)
    own0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    summary = indexer.index_file(docs_path, "jsonl", checkpoint_path=str(Path(docs_path).parent / "bench.ckpt"))
    wall = time.perf_counter() - t0
    own1 = resource.getrusage(resource.RUSAGE_SELF)
    solr_cpu1 = _cpu_seconds(solr_pid)
    mb = Path(docs_path).stat().st_size / 1e6
    # Where the CPU went: on 2 cores, client + Solr CPU seconds per wall second shows which side is the limit.
    cpu = {"client_cpu_s": round(own1.ru_utime + own1.ru_stime - own0.ru_utime - own0.ru_stime, 1),
           "solr_cpu_s": round(solr_cpu1 - solr_cpu0, 1) if solr_cpu0 is not None and solr_cpu1 is not None
           else None}
    return {"cpu": cpu,
        "docs": summary.indexed, "rejected": summary.rejected, "seconds": round(wall, 3),
        "docs_per_s": round(summary.indexed / wall, 1), "mb_per_s": round(mb / wall, 3),
        "batch_size": batch_size, "workers": workers, "settings": json.loads(settings.to_json()),
        "num_found": client.count(), "client_build_one_thread": _client_build_rate(docs_path, settings),
        # The end-of-run proof (every acknowledged id looked up after the final commit) is part of ``seconds``.
        "verify_seconds": round(summary.verification.seconds, 3),
        "verify_share": round(summary.verification.seconds / wall, 4),
    }


def sec_index_size(*, deadline, core_url: str, docs: int) -> dict:
    st = core_status(core_url)
    idx = st.get("index", {})
    size = idx.get("sizeInBytes")
    data_dir = st.get("dataDir")
    return {
        "size_in_bytes": size, "size": idx.get("size"), "num_docs": idx.get("numDocs"),
        "segment_count": idx.get("segmentCount"), "bytes_per_doc": round(size / docs, 1) if size else None,
        "data_dir": data_dir, "du_data_dir_bytes": du_bytes(data_dir) if data_dir else None,
    }


def _edited(text: str, rng: random.Random) -> str:
    """A new text close to ``text``: a few words dropped and one repeated, so it is not in the index verbatim."""
    words = text.split(" ")
    for _ in range(min(3, max(0, len(words) - 10))):
        words.pop(rng.randrange(len(words)))
    k = rng.randrange(len(words))
    words.insert(k, words[k])
    return " ".join(words)


def sec_lookup(*, deadline, core_url: str, corpus_dir: str, fresh_dir: str, lookups: int, warmup: int,
               seed: int, rows: int) -> dict:
    from neardup_solr.solr.searcher import Searcher
    from neardup_solr.solr.client import SolrClient
    from benchmarks.corpus import iter_documents

    rng = random.Random(seed)
    docs_path = Path(corpus_dir) / "docs.jsonl"
    drawn = sample_documents(docs_path, warmup + lookups, rng)
    sample = [doc_id for doc_id, _ in drawn]
    texts = dict(drawn)
    fresh = [t for _, t in iter_documents(fresh_dir)]
    # New texts: half near copies of indexed documents, half unseen documents (most lookups find nothing).
    new_texts = []
    for i, doc_id in enumerate(sample):
        new_texts.append(_edited(texts[doc_id], rng) if i % 2 == 0 else fresh[i % len(fresh)])
    searcher = Searcher(SolrClient(core_url))
    kw = dict(max_edit_distance=None, min_jaccard=THRESHOLD, rows=rows, first_word_filter=False)
    out = {"params": {**kw, "lookups": lookups, "warmup": warmup}, "modes": {}}
    truncated = False
    for mode in MODES:
        if mode not in searcher.settings.fields:  # minhash tokens are opt-in
            out["modes"][mode] = {"status": "skipped", "error": f"the index has no {mode} tokens"}
            continue
        for kind in ("by_id", "by_text"):
            inputs = sample if kind == "by_id" else new_texts
            lat, found = [], 0
            for i, item in enumerate(inputs):
                if time.time() > deadline:
                    truncated = True
                    break
                t0 = time.perf_counter()
                if kind == "by_id":
                    res = searcher.find_near_dups(item, mode=mode, **kw)
                else:
                    res = searcher.find_near_dups(text=item, mode=mode, **kw)
                dt = time.perf_counter() - t0
                if i >= warmup:
                    lat.append(dt)
                    found += bool(res)
            out["modes"].setdefault(mode, {})[kind] = {**percentiles(lat), "with_match": found}
    if truncated:
        out["status"] = "partial"
        out["note"] = "time box reached before every lookup ran"
    return out


def _mh_index(mh_url: str, docs_path: Path, batch: int = 1000) -> dict:
    from concurrent.futures import ThreadPoolExecutor

    from benchmarks.corpus import iter_documents
    from neardup_solr.solr.client import SolrClient
    from neardup_solr.text import normalize

    client = SolrClient(mh_url, timeout=600)
    client.delete_all()
    t0 = time.perf_counter()
    n = 0
    pending = []
    with ThreadPoolExecutor(2) as pool:
        buf = []
        for doc_id, text in iter_documents(docs_path):
            # The analysis chain (whitespace tokenizer, word 3-shingles) sees the text our Shingler sees.
            buf.append({"id": doc_id, "content": text, "content_mh": normalize(text)})
            if len(buf) >= batch:
                pending.append(pool.submit(client.add, buf))
                n += len(buf)
                buf = []
                while len(pending) > 2:
                    pending.pop(0).result()
        if buf:
            pending.append(pool.submit(client.add, buf))
            n += len(buf)
        for f in pending:
            f.result()
    client.commit()
    wall = time.perf_counter() - t0
    return {"docs": n, "seconds": round(wall, 3), "docs_per_s": round(n / wall, 1)}


def sec_solr_minhash(*, deadline, core_url: str, corpus_dir: str, queries: int, seed: int, rows: int,
                     tps: list) -> dict:
    from neardup_solr.solr.searcher import Searcher
    from neardup_solr.solr.client import SolrClient
    from neardup_solr.text import Shingler, normalize

    corpus = Path(corpus_dir)
    docs_path = corpus / "docs.jsonl"
    truth = read_exact_pairs(corpus / f"exact_{THRESHOLD:g}.tsv")
    nb = neighbours(truth)
    ids = read_ids(docs_path)
    rng = random.Random(seed + 1)
    # Half the queries have a true near duplicate (recall needs them), half are drawn from all documents.
    with_nb = sorted(nb)
    q = rng.sample(with_nb, min(len(with_nb), queries // 2))
    chosen = set(q)
    rest = [i for i in rng.sample(ids, min(len(ids), queries)) if i not in chosen]
    q += rest[: queries - len(q)]
    rng.shuffle(q)

    mh_url = ensure_mh_core(core_url)
    out: dict = {"mh_core": mh_url, "queries": len(q), "rows": rows,
                 "queries_with_true_neighbour": sum(1 for x in q if x in nb)}
    out["solr_minhash_indexing"] = _mh_index(mh_url, docs_path)
    st = core_status(mh_url).get("index", {})
    out["solr_minhash_index_bytes"] = st.get("sizeInBytes")
    out["solr_minhash_index_bytes_per_doc"] = round(st["sizeInBytes"] / len(ids), 1) if st.get("sizeInBytes") else None

    shingler = Shingler(ngram=3)

    def score(pred: dict[str, set]) -> dict:
        found = {ordered(a, b) for a, bs in pred.items() for b in bs}
        true = {ordered(a, b) for a in pred for b in nb.get(a, ())}
        return pr(found, true)

    warm = min(20, len(q))
    methods: dict = {}
    # Ours: LSH band-key candidates, then exact shingle Jaccard on the client.
    searcher = Searcher(SolrClient(core_url))
    lat, pred = [], {}
    for i, doc_id in enumerate(q[:warm] + q):
        if time.time() > deadline:
            break
        t0 = time.perf_counter()
        res = searcher.find_near_dups(doc_id, mode="lsh", max_edit_distance=None, min_jaccard=THRESHOLD, rows=rows,
                                      first_word_filter=False)
        dt = time.perf_counter() - t0
        if i >= warm:
            lat.append(dt)
            pred[doc_id] = {m.id for m in res}
    methods["ours lsh + exact verify"] = {**score(pred), "latency": percentiles(lat)}

    mh = SolrClient(mh_url)
    for tp in tps:
        lat_raw, lat_ver, pred_raw, pred_ver = [], [], {}, {}
        for i, doc_id in enumerate(q[:warm] + q):
            if time.time() > deadline:
                break
            t0 = time.perf_counter()
            text = mh.get_by_ids([doc_id], "content")[0]["content"]
            resp = mh.select([("q", f"{{!min_hash field=content_mh sim={THRESHOLD} tp={tp} v=$qq}}"),
                              ("qq", normalize(text)), ("rows", rows), ("fl", "id,score,content")])
            docs = [d for d in resp["response"]["docs"] if d["id"] != doc_id]
            t1 = time.perf_counter()
            qh = np.unique(shingler.shingle_hashes(text))
            keep = set()
            for d in docs:
                oh = np.unique(shingler.shingle_hashes(d.get("content", "")))
                inter = np.intersect1d(qh, oh, assume_unique=True).size
                if inter / (qh.size + oh.size - inter) >= THRESHOLD:
                    keep.add(d["id"])
            t2 = time.perf_counter()
            if i >= warm:
                lat_raw.append(t1 - t0)
                lat_ver.append(t2 - t0)
                pred_raw[doc_id] = {d["id"] for d in docs}
                pred_ver[doc_id] = keep
        methods[f"solr min_hash tp={tp}"] = {**score(pred_raw), "latency": percentiles(lat_raw)}
        methods[f"solr min_hash tp={tp} + exact verify"] = {**score(pred_ver), "latency": percentiles(lat_ver)}
    out["methods"] = methods
    if any(m["latency"].get("n", 0) < len(q) for m in methods.values()):
        out["status"] = "partial"
        out["note"] = "time box reached before every query ran"
    return out


def _normalise_pairs(pairs) -> set[tuple[str, str]]:
    out = set()
    for p in pairs:
        if isinstance(p, dict):
            a = p.get("id_a", p.get("a"))
            b = p.get("id_b", p.get("b"))
        elif isinstance(p, (tuple, list)):
            a, b = p[0], p[1]
        else:
            for ka, kb in (("id", "neighbor_id"), ("id_a", "id_b"), ("a", "b")):
                if hasattr(p, ka) and hasattr(p, kb):
                    a, b = getattr(p, ka), getattr(p, kb)
                    break
            else:
                raise TypeError(f"do not know how to read a pair from {p!r}")
        out.add(ordered(str(a), str(b)))
    return out


def sec_collection_ours(*, deadline, core_url: str, corpus_dir: str) -> dict:
    try:
        from neardup_solr.engine.collection import dedupe_collection
    except ImportError as exc:
        return {"status": "not available", "error": f"neardup_solr.engine.collection is not there yet ({exc})"}
    from neardup_solr.solr.client import SolrClient

    truth = read_exact_pairs(Path(corpus_dir) / f"exact_{THRESHOLD:g}.tsv")
    mem = PeakRSS()
    t0 = time.perf_counter()
    result = dedupe_collection(SolrClient(core_url, timeout=600), threshold=THRESHOLD, exact=True, progress=False)
    wall = time.perf_counter() - t0
    memory = mem.stop()
    stats = result.stats
    if hasattr(stats, "__dataclass_fields__"):
        from dataclasses import asdict

        stats = asdict(stats)
    elif not isinstance(stats, dict):
        stats = {"repr": repr(stats)}
    found = _normalise_pairs(result.pairs)
    return {"seconds": round(wall, 3), **memory, **pr(found, truth),
            "stats": json.loads(json.dumps(stats, default=str)),
            "memory_note": "client process only; Solr's JVM (which does the export) is not counted"}


def sec_collection_datasketch(*, deadline, corpus_dir: str, params: list | None = None) -> dict:
    from datasketch import LeanMinHash, MinHash, MinHashLSH

    from benchmarks.corpus import iter_documents
    from neardup_solr.text import Shingler

    corpus = Path(corpus_dir)
    truth = read_exact_pairs(corpus / f"exact_{THRESHOLD:g}.tsv")
    n = sum(1 for _ in open(corpus / "docs.jsonl", "rb"))
    mem = PeakRSS()
    shingler = Shingler(ngram=3)
    template = MinHash(num_perm=NUM_HASHES, seed=1)
    lsh = MinHashLSH(threshold=THRESHOLD, num_perm=NUM_HASHES, params=tuple(params) if params else None)
    # Signatures kept as one uint64 matrix (datasketch's own dtype), not as n MinHash objects.
    sigs = np.empty((n, NUM_HASHES), dtype=np.uint64)
    ids: list[str] = []
    t_sign = t_insert = 0.0
    t_start = time.perf_counter()
    with lsh.insertion_session(buffer_size=50_000) as session:
        for doc_id, text in iter_documents(corpus):
            if time.time() > deadline:
                raise TimeoutError(f"time box reached after signing {len(ids):,} of {n:,} documents")
            t0 = time.perf_counter()
            m = MinHash(num_perm=NUM_HASHES, permutations=template.permutations, scheme=template.scheme)
            m.update_batch([s.encode("utf-8") for s in shingler.shingles(text)])
            i = len(ids)
            sigs[i] = m.hashvalues
            ids.append(doc_id)
            t1 = time.perf_counter()
            session.insert(i, m, check_duplication=False)
            t_insert += time.perf_counter() - t1
            t_sign += t1 - t0
    t0 = time.perf_counter()
    cand = set()
    for i in range(n):
        if i % 10_000 == 0 and time.time() > deadline:
            raise TimeoutError(f"time box reached after querying {i:,} of {n:,} documents")
        for j in lsh.query(LeanMinHash(seed=1, hashvalues=sigs[i], scheme=template.scheme)):
            if j != i:
                cand.add((i, j) if i < j else (j, i))
    t_query = time.perf_counter() - t0
    t0 = time.perf_counter()
    a = np.fromiter((p[0] for p in cand), dtype=np.int64, count=len(cand))
    b = np.fromiter((p[1] for p in cand), dtype=np.int64, count=len(cand))
    est = (sigs[a] == sigs[b]).mean(axis=1) if len(cand) else np.empty(0)
    t_est = time.perf_counter() - t0
    # Exact verification as ours does it: shingle sets of the documents in candidate pairs only.
    t0 = time.perf_counter()
    need = set(a.tolist()) | set(b.tolist())
    hashes = {}
    for i, (doc_id, text) in enumerate(iter_documents(corpus)):
        if i in need:
            hashes[i] = np.unique(shingler.shingle_hashes(text))
    verified = set()
    for x, y in zip(a.tolist(), b.tolist()):
        hx, hy = hashes[x], hashes[y]
        inter = np.intersect1d(hx, hy, assume_unique=True).size
        if inter / (hx.size + hy.size - inter) >= THRESHOLD:
            verified.add((ids[x], ids[y]))
    t_verify = time.perf_counter() - t0
    wall = time.perf_counter() - t_start
    memory = mem.stop()
    raw = {(ids[x], ids[y]) for x, y in cand}
    est_pairs = {(ids[x], ids[y]) for x, y, e in zip(a.tolist(), b.tolist(), est.tolist()) if e >= THRESHOLD}
    return {
        "seconds": round(wall, 3), **memory, **pr(verified, truth),
        "bands_rows": [lsh.b, lsh.r],
        "timings_s": {"sign": round(t_sign, 3), "insert": round(t_insert, 3), "query": round(t_query, 3),
                      "estimate": round(t_est, 3), "exact_verify": round(t_verify, 3)},
        "candidates": pr(raw, truth),
        "estimated_jaccard_filter": pr(est_pairs, truth),
        "memory_note": "one process: texts streamed, signatures (uint64) + MinHashLSH tables in memory",
    }


# ---------------------------------------------------------------------------------------------------------------
# Report: markdown and plot
# ---------------------------------------------------------------------------------------------------------------


def _f(v, fmt="{:,.0f}", none="–"):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return none
    try:
        return fmt.format(v)
    except (ValueError, TypeError):
        return str(v)


def _ok(sec: dict | None) -> bool:
    return bool(sec) and sec.get("status") in ("ok", "partial")


def _status_note(sec: dict | None) -> str:
    if not sec:
        return "not run"
    return f"{sec.get('status')}: {sec.get('error', '')}".strip().rstrip(":")


def evaluate_goals(report: dict) -> list[dict]:
    goals = []
    sig = report.get("signing") or {}
    s = sig.get("summary", {}) if _ok(sig) else {}
    goals.append({"goal": "signing: ours >= 5x datasketch (docs/s, one core)",
                  "measured": s.get("ours_vs_datasketch_x"), "unit": "x",
                  "met": None if s.get("ours_vs_datasketch_x") is None else s["ours_vs_datasketch_x"] >= 5})
    goals.append({"goal": "signing: ours >= 2x rensa as its users feed it (docs/s, one core)",
                  "measured": s.get("ours_vs_rensa_x"), "unit": "x",
                  "met": None if s.get("ours_vs_rensa_x") is None else s["ours_vs_rensa_x"] >= 2})
    goals.append({"goal": "signing: compiled kernel >= 5x our NumPy path (docs/s, one core)",
                  "measured": s.get("ours_vs_numpy_path_x"), "unit": "x",
                  "met": None if s.get("ours_vs_numpy_path_x") is None else s["ours_vs_numpy_path_x"] >= 5})
    sizes = report.get("sizes", {})
    for size in sorted(sizes, key=int):
        ix = sizes[size].get("indexing")
        v = ix.get("docs_per_s") if _ok(ix) else None
        goals.append({"goal": f"indexing >= 3,000 docs/s at {int(size):,}, default token fields", "measured": v,
                      "unit": "docs/s", "met": None if v is None else v >= 3000})
        lean = sizes[size].get("indexing_lsh_only")
        v = lean.get("docs_per_s") if _ok(lean) else None
        if v is not None:
            goals.append({"goal": f"indexing >= 3,000 docs/s at {int(size):,}, LSH profile (--fields lsh)",
                          "measured": v, "unit": "docs/s", "met": v >= 3000})
        share = lean.get("verify_share") if _ok(lean) else None
        if share is not None:
            goals.append({"goal": f"end-of-run index check < 10% of indexing time at {int(size):,} (LSH profile)",
                          "measured": round(100 * share, 2), "unit": "%", "met": share < 0.10})
    big = "1000000" if "1000000" in sizes else (max(sizes, key=int) if sizes else None)
    if big:
        lk = sizes[big].get("lookup")
        p99 = None
        if _ok(lk):
            vals = [lk["modes"].get("lsh", {}).get(k, {}).get("p99_ms") for k in ("by_id", "by_text")]
            vals = [x for x in vals if x is not None]
            p99 = max(vals) if vals else None
        goals.append({"goal": f"LSH lookup p99 < 20 ms at 1M (measured at {int(big):,})", "measured": p99,
                      "unit": "ms",
                      "met": None if p99 is None else p99 < 20, "at_1m": big == "1000000"})
        col = (sizes[big].get("collection") or {}).get("ours")
        okc = _ok(col)
        wall = col.get("seconds") if okc else None
        rec = col.get("recall") if okc else None
        mem = col.get("peak_rss_mib") if okc else None
        goals.append({"goal": f"whole-collection < 15 min at 1M (measured at {int(big):,})", "measured": wall,
                      "unit": "s",
                      "met": None if wall is None else wall < 900, "at_1m": big == "1000000"})
        goals.append({"goal": f"whole-collection recall >= 0.98 (at {int(big):,})", "measured": rec, "unit": "",
                      "met": None if rec is None else rec >= 0.98, "at_1m": big == "1000000"})
        goals.append({"goal": f"whole-collection peak memory < 2 GiB (at {int(big):,})", "measured": mem,
                      "unit": "MiB",
                      "met": None if mem is None else mem < 2048, "at_1m": big == "1000000"})
    return goals


def render_markdown(report: dict) -> str:
    m = report["meta"]
    L = [f"# neardup-solr benchmark, {m['date']} ({m['machine']})", "",
         "Command" + ("s (merged runs, oldest first)" if m.get("earlier_runs") else "") + ": "
         + "; ".join(f"`{c}`" for c in [e.get("command") for e in m.get("earlier_runs", [])] + [m["command"]] if c)
         + "  ", *([f"{m['note']}  "] if m.get("note") else []), f"Solr {m['solr_version']} ({m['solr']}), Python {m['python']}, "
         f"NumPy {m['numpy']}, {m['cpus']} CPUs, {m['memory_gib']} GiB RAM. Threshold J >= {THRESHOLD}, "
         f"{NUM_HASHES} hashes, word 3-shingles.", ""]
    sizes = report.get("sizes", {})
    order = sorted(sizes, key=int)
    L += ["## Corpora", "", "| docs | MB | planted copies | exact pairs J>=0.8 |", "|---:|---:|---:|---:|"]
    for s in order:
        c = sizes[s].get("corpus", {})
        L.append(f"| {int(s):,} | {_f(c.get('bytes', 0) / 1e6, '{:,.1f}')} | {_f(c.get('copies'))} | "
                 f"{_f(c.get('exact_pairs_ge_0.8'))} |")
    sig = report.get("signing")
    L += ["", "## Signing (text -> 128-value MinHash, one core)", ""]
    if _ok(sig):
        L += [f"{sig['docs']:,} corpus documents, {sig['mb']:.1f} MB, best of {m.get('signing_repeats')} runs.", "",
              "| method | docs/s | MB/s | ours is x faster |", "|---|---:|---:|---:|"]
        for name, r in sig["results"].items():
            L.append(f"| {name} | {_f(r['docs_per_s'])} | {_f(r['mb_per_s'], '{:.2f}')} | "
                     f"{_f(r['ours_speedup'], '{:.2f}')} |")
        if sig.get("skipped"):
            L.append(f"\nnot installed: {', '.join(sig['skipped'])}")
    else:
        L.append(f"_{_status_note(sig)}_")
    if order:
        head = "| | " + " | ".join(f"{int(s):,} docs" for s in order) + " |"
        sep = "|---|" + "---:|" * len(order)
        L += ["", "## Indexing, index size and lookups", "", head, sep]

        def row(label, fn):
            cells = []
            for s in order:
                try:
                    cells.append(fn(sizes[s]))
                except (KeyError, TypeError, AttributeError):
                    cells.append("–")
            L.append(f"| {label} | " + " | ".join(cells) + " |")

        row("indexing, our Indexer (docs/s, file -> committed)",
            lambda z: _f(z["indexing"]["docs_per_s"]) if _ok(z.get("indexing")) else _status_note(z.get("indexing")))
        row("indexing (MB/s)", lambda z: _f(z["indexing"]["mb_per_s"], "{:.2f}"))
        row("CPU seconds during indexing: client / Solr",
            lambda z: f"{_f(z['indexing']['cpu']['client_cpu_s'])} / {_f(z['indexing']['cpu']['solr_cpu_s'])}")
        row("client only: build + JSON-encode, one thread (docs/s)",
            lambda z: _f(z["indexing"]["client_build_one_thread"]["docs_per_s"]))
        row("indexing with only the LSH + signature fields (docs/s)",
            lambda z: _f(z["indexing_lsh_only"]["docs_per_s"]))
        row("indexing with every write-up field, shingles as text (the defaults before; docs/s)",
            lambda z: _f(z["indexing_writeup"]["docs_per_s"]))
        row("Solr min_hash core: id, content, content_mh (docs/s)",
            lambda z: _f(z["solr_minhash"]["solr_minhash_indexing"]["docs_per_s"]))
        row("index size (MB)", lambda z: _f(z["index_size"]["size_in_bytes"] / 1e6, "{:,.1f}"))
        row("index bytes per doc", lambda z: _f(z["index_size"]["bytes_per_doc"]))
        for mode in MODES:
            for kind, label in (("by_id", "by id"), ("by_text", "by new text")):
                row(f"lookup {mode} {label}: p50 / p95 / p99 ms",
                    lambda z, mode=mode, kind=kind: "{} / {} / {}".format(
                        *(_f(z["lookup"]["modes"][mode][kind][k], "{:.1f}") for k in ("p50_ms", "p95_ms", "p99_ms"))))
        L += ["", "## Solr's own MinHash (`{!min_hash}` on content_mh) vs ours, lookups by id", "",
              "| docs | method | recall | precision | p50 ms | p95 ms | p99 ms |", "|---:|---|---:|---:|---:|---:|---:|"]
        for s in order:
            sm = sizes[s].get("solr_minhash")
            if not _ok(sm):
                L.append(f"| {int(s):,} | {_status_note(sm)} | | | | | |")
                continue
            for name, r in sm["methods"].items():
                lt = r["latency"]
                L.append(f"| {int(s):,} | {name} | {_f(r['recall'], '{:.3f}')} | {_f(r['precision'], '{:.3f}')} | "
                         f"{_f(lt.get('p50_ms'), '{:.1f}')} | {_f(lt.get('p95_ms'), '{:.1f}')} | "
                         f"{_f(lt.get('p99_ms'), '{:.1f}')} |")
        notes = []
        for s in order:
            sm = sizes[s].get("solr_minhash")
            if _ok(sm):
                ix = sm.get("solr_minhash_indexing", {})
                notes.append(f"{int(s):,} docs: {sm['queries']} query documents ({sm['queries_with_true_neighbour']} "
                             f"with a true neighbour), rows={sm['rows']}; the min_hash core indexed "
                             f"{_f(ix.get('docs_per_s'))} docs/s, {_f(sm.get('solr_minhash_index_bytes_per_doc'))} "
                             "bytes/doc.")
        if notes:
            L += [""] + notes
        L += ["", "## Whole-collection dedup (all pairs J >= 0.8)", "",
              "| docs | method | wall s | peak RSS MiB | recall | precision | pairs |", "|---:|---|---:|---:|---:|---:|---:|"]
        for s in order:
            col = sizes[s].get("collection") or {}
            for name, key in (("ours (dedupe_collection, exact verify)", "ours"),
                              ("datasketch MinHashLSH in memory + exact verify", "datasketch"),
                              ("datasketch, our bands x rows, + exact verify", "datasketch_our_bands")):
                r = col.get(key)
                if r is None and key != "ours":
                    continue
                if r and _ok(r) and r.get("bands_rows"):
                    name += f" ({r['bands_rows'][0]}x{r['bands_rows'][1]})"
                if not _ok(r):
                    L.append(f"| {int(s):,} | {name} | {_status_note(r)} | | | | |")
                    continue
                L.append(f"| {int(s):,} | {name} | {_f(r['seconds'], '{:,.1f}')} | {_f(r['peak_rss_mib'], '{:,.0f}')} | "
                         f"{_f(r['recall'], '{:.4f}')} | {_f(r['precision'], '{:.4f}')} | {_f(r['pairs_found'])} |")
    goals = report.get("goals", [])
    if goals:
        L += ["", "## Goals", "", "| goal | measured | met |", "|---|---:|:---:|"]
        for g in goals:
            met = {True: "yes", False: "**no**", None: "not measured"}[g["met"]]
            fmt = "{:.4f}" if g.get("unit") == "" else "{:,.2f}"
            L.append(f"| {g['goal']} | {_f(g['measured'], fmt)} {g.get('unit', '')} | {met} |")
    return "\n".join(L) + "\n"


def render_plot(report: dict, path: Path) -> str | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = report.get("sizes", {})
    order = sorted(sizes, key=int)
    if not order:
        return None
    xs = [int(s) for s in order]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    colours = {"shingles": "C0", "minhash": "C1", "lsh": "C2"}
    for mode in MODES:
        for kind, ls in (("by_id", "-"), ("by_text", "--")):
            for pct, marker, alpha in (("p50_ms", "o", 0.45), ("p99_ms", "^", 1.0)):
                ys = []
                for s in order:
                    lk = sizes[s].get("lookup")
                    try:
                        ys.append(float(lk["modes"][mode][kind][pct]) if _ok(lk) else np.nan)
                    except (KeyError, TypeError):
                        ys.append(np.nan)
                if not all(np.isnan(ys)):
                    ax1.plot(xs, ys, ls=ls, marker=marker, color=colours[mode], alpha=alpha,
                             label=f"{mode} {kind.replace('_', ' ')} {pct[:3]}")
    ax1.axhline(20, color="grey", lw=0.8, ls=":")
    ax1.set_xscale("log")
    ax1.set_yscale("log")
    ax1.set_xlabel("corpus size (docs)")
    ax1.set_ylabel("lookup latency (ms)")
    ax1.set_title("single near-dup lookup latency")
    if ax1.get_legend_handles_labels()[0]:
        ax1.legend(fontsize=6, ncol=2)
    series = {
        "indexing, ours, default token fields (docs/s)": lambda z: z["indexing"]["docs_per_s"],
        "indexing, ours, --fields lsh (docs/s)": lambda z: z["indexing_lsh_only"]["docs_per_s"],
        "indexing, Solr min_hash core (docs/s)": lambda z: z["solr_minhash"]["solr_minhash_indexing"]["docs_per_s"],
        "whole-collection dedup, ours (docs/s)": lambda z: int(z["corpus"]["docs"]) / z["collection"]["ours"]["seconds"],
        "whole-collection, datasketch (docs/s)":
            lambda z: int(z["corpus"]["docs"]) / z["collection"]["datasketch"]["seconds"],
    }
    for label, fn in series.items():
        ys = []
        for s in order:
            try:
                ys.append(float(fn(sizes[s])))
            except (KeyError, TypeError, ZeroDivisionError):
                ys.append(np.nan)
        if not all(np.isnan(ys)):
            ax2.plot(xs, ys, "-o", label=label)
    ax2.axhline(3000, color="grey", lw=0.8, ls=":")
    ax2.set_xscale("log")
    ax2.set_yscale("log")
    ax2.set_xlabel("corpus size (docs)")
    ax2.set_ylabel("docs/s")
    ax2.set_title("throughput")
    if ax2.get_legend_handles_labels()[0]:
        ax2.legend(fontsize=7)
    fig.suptitle(f"neardup-solr {report['meta']['date']} {report['meta']['machine']}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return str(path)


# ---------------------------------------------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------------------------------------------


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=100_000, help="corpus size (default 100,000)")
    ap.add_argument("--sizes", default=None, help="comma-separated corpus sizes; overrides --docs")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="few lookups and repeats: a smoke run")
    ap.add_argument("--sections", default=None, help=f"subset of {','.join(SECTIONS)} (default: all)")
    ap.add_argument("--solr-url", default=os.environ.get("SOLR_URL"),
                    help="use this core (IT IS CLEARED) instead of starting a dedicated local Solr")
    ap.add_argument("--port", type=int, default=SOLR_PORT, help="port of the dedicated Solr (default 8996)")
    ap.add_argument("--heap", default="6g", help="heap of the dedicated Solr (default 6g)")
    ap.add_argument("--work-dir", type=Path, default=BENCH / "work")
    ap.add_argument("--out-dir", type=Path, default=BENCH / "results")
    ap.add_argument("--machine", default=None, help="tag in the output names (default e.g. 2core-24g)")
    ap.add_argument("--merge", action="store_true",
                    help="keep other sizes (and signing, if not re-run) from today's existing result file")
    ap.add_argument("--lookups", type=int, default=None, help="timed lookups per mode and kind (default 300)")
    ap.add_argument("--peer-queries", type=int, default=None, help="query docs for the Solr MinHash comparison")
    ap.add_argument("--signing-docs", type=int, default=None, help="corpus texts for signing (default 20,000)")
    ap.add_argument("--rows", type=int, default=50, help="candidates asked from Solr per lookup (default 50)")
    ap.add_argument("--min-hash-tp", default="0.95,1.0", help="tp values of the {!min_hash} peer")
    ap.add_argument("--batch-size", type=int, default=500)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--variant-max-docs", type=int, default=200_000,
                    help="in a run of all sections, time LSH-only indexing up to this corpus size (default "
                         "200,000); naming indexing_lsh in --sections runs it at any size")
    ap.add_argument("--no-datasketch-our-bands", dest="datasketch_our_bands", action="store_false",
                    help="skip the second datasketch run that uses our (bands, rows) instead of its own choice")
    ap.add_argument("--update-readme", action="store_true",
                    help="also put the tables into benchmarks/README.md (between its results markers)")
    ap.add_argument("--render", metavar="JSON", help="only re-render the .md/.png of this result file")
    ap.add_argument("--budget-scale", type=float, default=1.0, help="multiply every time box by this")
    return ap.parse_args(argv)


def budgets(n: int, scale: float) -> dict:
    """Seconds per section for an n-document corpus: generous, so only a real hang or a blow-up trips them."""
    k = n / 1e6
    return {k_: v * scale for k_, v in {
        "corpus": 300 + 1800 * k, "signing": 900, "indexing": 120 + 3600 * k, "index_size": 120,
        "lookup": 600 + 300 * k, "solr_minhash": 300 + 2400 * k, "collection_ours": 300 + 1800 * k,
        "collection_datasketch": 300 + 3600 * k,
    }.items()}


def render_only(args) -> int:
    """Re-write the .md/.png (and README block) of an existing result JSON, e.g. after editing its notes."""
    path = Path(args.render)
    report = json.loads(path.read_text())
    report["goals"] = evaluate_goals(report)
    stem = path.with_suffix("")
    rewrite_result_files(stem, report, render_markdown(report))
    render_plot(report, stem.with_suffix(".png"))
    if args.update_readme:
        update_readme(BENCH / "README.md", report, stem)
    print(render_markdown(report))
    return 0


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.render:
        return render_only(args)
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else [args.docs]
    sections = [s.strip() for s in args.sections.split(",") if s.strip()] if args.sections else list(SECTIONS)
    unknown = set(sections) - set(SECTIONS)
    if unknown:
        raise SystemExit(f"unknown section(s): {', '.join(sorted(unknown))}")
    quick = args.quick
    lookups = args.lookups or (10 if quick else 300)
    warmup = 3 if quick else 30
    peer_queries = args.peer_queries or (10 if quick else 300)
    signing_repeats = 1 if quick else 3
    tps = [float(x) for x in args.min_hash_tp.split(",") if x]
    work = args.work_dir.resolve()
    work.mkdir(parents=True, exist_ok=True)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    date = _dt.date.today().isoformat()
    machine = args.machine or machine_tag()
    stem = args.out_dir / f"{date}-{machine}"
    started = time.perf_counter()

    def log(msg):
        print(f"[{time.perf_counter() - started:7.1f}s] {msg}", file=sys.stderr, flush=True)

    import numpy

    from neardup_solr.solr import settings as nd_settings
    from neardup_solr.text import kernel
    from neardup_solr.version import package_version

    cmd = "python " + " ".join(shlex.quote(a) for a in ([os.path.relpath(__file__, REPO)] +
                                                         (sys.argv[1:] if argv is None else list(argv))))
    report: dict = {
        "meta": {"date": date, "machine": machine, "command": cmd, "neardup_solr": package_version(),
                 "signing_path": kernel.describe(), "python": platform.python_version(),
                 "numpy": numpy.__version__, "cpus": os.cpu_count(), "platform": platform.platform(),
                 "memory_gib": round(memory_gib(), 1), "solr_version": nd_settings.SOLR_VERSION, "seed": args.seed,
                 "quick": quick, "threshold": THRESHOLD, "num_hashes": NUM_HASHES, "lookups": lookups,
                 "warmup": warmup, "peer_queries": peer_queries, "signing_repeats": signing_repeats,
                 "sections": sections, "sizes_run": sizes, "started": _dt.datetime.now().isoformat(timespec="seconds")},
        "sizes": {},
    }
    json_path = stem.with_suffix(".json")
    if args.merge and json_path.exists():
        old = json.loads(json_path.read_text())
        # Section-level: a size re-run with some sections keeps the others from the earlier run.
        report["sizes"] = old.get("sizes", {})
        if "signing" not in sections and "signing" in old:
            report["signing"] = old["signing"]
        report["meta"]["merged_from"] = old.get("meta", {}).get("command")
        report["meta"]["earlier_runs"] = old.get("meta", {}).get("earlier_runs", []) + [old.get("meta", {})]

    # Two runs on one work dir would clear each other's core and stop each other's Solr mid-run.
    import fcntl

    lock = open(work / "run.lock", "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise SystemExit(f"another benchmarks/run.py is using {work}; wait for it or pass another --work-dir")
    solr = None
    core_url = args.solr_url.rstrip("/") if args.solr_url else None
    report["meta"]["solr"] = "given core" if core_url else f"dedicated local Solr on 127.0.0.1:{args.port}"
    fresh_dir = work / f"fresh-s{args.seed}"
    needs_solr = bool(set(sections) - {"signing"})
    solr_pid = None
    try:
        if needs_solr and core_url is None:
            from neardup_solr.solr.backends.local import LocalSolr

            solr = LocalSolr(port=args.port, data_dir=work / "solr", heap=args.heap)
            log(f"starting Solr on 127.0.0.1:{args.port} (heap {args.heap}, data {solr.data_dir})")
            res = solr.start()
            core_url = res.url
            log(f"Solr ready at {core_url} ({res.seconds:.1f} s)")
            solr_pid = solr.pid()
            if res.already_running:
                # Someone else's Solr on our data dir: use it, but stopping it is theirs to do.
                log("that Solr was already running: it will be left running")
                solr = None
        if needs_solr and not (fresh_dir / "docs.jsonl").exists():
            from benchmarks.corpus import generate

            generate(1000, args.seed + 10_000, fresh_dir)

        from neardup_solr.solr.documents import WRITE_UP_TOKEN_FIELDS, IndexSettings

        for i, n in enumerate(sizes):
            b = budgets(n, args.budget_scale)
            corpus_dir = str(work / f"corpus-{n}-s{args.seed}")
            docs_path = str(Path(corpus_dir) / "docs.jsonl")
            per: dict = report["sizes"].get(str(n), {})
            report["sizes"][str(n)] = per
            earlier_corpus = per.get("corpus") or {}
            per["corpus"] = run_section(f"{n}/corpus", sec_corpus, b["corpus"], log, corpus_dir=corpus_dir,
                                        docs=n, seed=args.seed, with_truth=bool(TRUTH_SECTIONS & set(sections)))
            if _ok(per["corpus"]) and per["corpus"].get("exact_pairs_ge_0.8") is None:
                # A run that needs no ground truth keeps the count an earlier run of this size computed.
                per["corpus"]["exact_pairs_ge_0.8"] = earlier_corpus.get("exact_pairs_ge_0.8")
            if not _ok(per["corpus"]):
                log(f"no corpus for {n:,} docs: skipping that size")
                _write(report, stem, log)
                continue
            if i == 0 and "signing" in sections:
                report["signing"] = run_section(
                    "signing", sec_signing, b["signing"], log, corpus_dir=corpus_dir,
                    docs=min(n, args.signing_docs or (300 if quick else 20_000)), repeats=signing_repeats)
                _write(report, stem, log)
            # The LSH profile: in a default run only up to --variant-max-docs; always when asked for by name.
            # First of the indexing runs, so the JVM the two after it are compared in is equally warm for both.
            if "indexing_lsh" in sections and (n <= args.variant_max_docs or args.sections):
                per["indexing_lsh_only"] = run_section(
                    f"{n}/indexing lsh only", sec_indexing, b["indexing"], log, core_url=core_url,
                    docs_path=docs_path, batch_size=args.batch_size, workers=args.workers,
                    settings=IndexSettings(fields=("lsh",)), solr_pid=solr_pid)
            if "indexing_writeup" in sections and (n <= args.variant_max_docs or args.sections):
                # Before minhash became opt-in and shingles were hashed: every write-up mode, shingles as text.
                per["indexing_writeup"] = run_section(
                    f"{n}/indexing write-up fields", sec_indexing, b["indexing"], log, core_url=core_url,
                    docs_path=docs_path, batch_size=args.batch_size, workers=args.workers, solr_pid=solr_pid,
                    settings=IndexSettings(fields=WRITE_UP_TOKEN_FIELDS, shingle_tokens="text"))
            if "indexing" in sections:
                per["indexing"] = run_section(f"{n}/indexing", sec_indexing, b["indexing"], log, core_url=core_url,
                                              docs_path=docs_path, batch_size=args.batch_size, workers=args.workers,
                                              solr_pid=solr_pid)
            if "index_size" in sections:
                per["index_size"] = run_section(f"{n}/index_size", sec_index_size, b["index_size"], log,
                                                core_url=core_url, docs=n)
            # A run without the indexing section works on whatever the core already holds.
            indexed = _ok(per.get("indexing")) if "indexing" in sections else _core_has_docs(core_url)
            if "lookup" in sections:
                per["lookup"] = (run_section(f"{n}/lookup", sec_lookup, b["lookup"], log, core_url=core_url,
                                             corpus_dir=corpus_dir, fresh_dir=str(fresh_dir), lookups=lookups,
                                             warmup=warmup, seed=args.seed, rows=args.rows)
                                 if indexed else {"status": "skipped", "error": "indexing did not succeed"})
            _write(report, stem, log)
            if "solr_minhash" in sections:
                per["solr_minhash"] = (run_section(f"{n}/solr_minhash", sec_solr_minhash, b["solr_minhash"], log,
                                                   core_url=core_url, corpus_dir=corpus_dir, queries=peer_queries,
                                                   seed=args.seed, rows=args.rows, tps=tps)
                                       if indexed else {"status": "skipped", "error": "indexing did not succeed"})
                try:
                    drop_mh_core(core_url)  # its index is not needed any more, and 1M documents' worth is big
                except Exception as exc:  # noqa: BLE001 - cleanup only
                    log(f"could not unload the min_hash core: {exc}")
                _write(report, stem, log)
            if "collection" in sections:
                col = {}
                col["ours"] = (run_section(f"{n}/collection ours", sec_collection_ours, b["collection_ours"], log,
                                           core_url=core_url, corpus_dir=corpus_dir)
                               if indexed else {"status": "skipped", "error": "indexing did not succeed"})
                col["datasketch"] = run_section(f"{n}/collection datasketch", sec_collection_datasketch,
                                                b["collection_datasketch"], log, corpus_dir=corpus_dir)
                if args.datasketch_our_bands:
                    from neardup_solr.solr.documents import IndexSettings

                    lp = IndexSettings().lsh_params()
                    col["datasketch_our_bands"] = run_section(
                        f"{n}/collection datasketch {lp.bands}x{lp.rows}", sec_collection_datasketch,
                        b["collection_datasketch"], log, corpus_dir=corpus_dir, params=[lp.bands, lp.rows])
                per["collection"] = col
                _write(report, stem, log)
    finally:
        if solr is not None:
            log("stopping Solr")
            solr.stop()
    report["meta"]["finished"] = _dt.datetime.now().isoformat(timespec="seconds")
    report["meta"]["wall_s"] = round(time.perf_counter() - started, 1)
    _write(report, stem, log, final=True)
    if args.update_readme:
        update_readme(BENCH / "README.md", report, stem)
        log("updated benchmarks/README.md")
    print(render_markdown(report))
    return 0


def update_readme(readme: Path, report: dict, stem: Path) -> None:
    """Put the run's tables between the results markers of the README, headings one level down."""
    text = readme.read_text()
    start, end = "<!-- results:start -->", "<!-- results:end -->"
    if start not in text or end not in text:
        raise ValueError(f"{readme} has no {start} ... {end} block")
    md = render_markdown(report).replace("\n## ", "\n#### ").replace("# neardup-solr benchmark, ", "### Run of ", 1)
    rel = os.path.relpath(stem, REPO)
    block = f"{start}\nFrom `{rel}.json` (plot: `{rel}.png`).\n\n{md}{end}"
    head, rest = text.split(start, 1)
    readme.write_text(head + block + rest.split(end, 1)[1])


def _core_has_docs(core_url: str) -> bool:
    from neardup_solr.solr.client import SolrClient

    try:
        return SolrClient(core_url).count() > 1
    except Exception:  # noqa: BLE001 - an unreachable core simply has nothing to benchmark
        return False


def memory_gib() -> float:
    """This machine's RAM in GiB."""
    try:
        import psutil

        return psutil.virtual_memory().total / 2**30
    except ImportError:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30


def write_results(out_dir: str | Path, name: str, report: dict, markdown: str) -> Path:
    """A benchmark's result files ``<out_dir>/<date>-<name>-<machine>.{json,md}``; returns the stem."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"{report['date']}-{name}-{report['machine']}"
    write_result_files(stem, report, markdown)
    return stem


def _write(report: dict, stem: Path, log, final: bool = False) -> None:
    """Written after every size, so an interrupted run still leaves its numbers behind."""
    report["goals"] = evaluate_goals(report)
    write_result_files(stem, report, render_markdown(report))
    if final:
        try:
            render_plot(report, stem.with_suffix(".png"))
        except Exception as exc:  # noqa: BLE001 - a missing plot must not lose the numbers
            log(f"plot failed: {exc}")
    log(f"wrote {stem}.json/.md" + ("/.png" if final else ""))


if __name__ == "__main__":
    sys.exit(main())
