"""Benchmark section ``peers``: the near-duplicate removal of corpus builders' own tools beside ours, on one planted
corpus, against one exact ground truth (issue 40, point 3; long documents: issue 48, point 3).

    flock /tmp/bench.lock python -m benchmarks.peers --docs 1000000 --install-peers
    flock /tmp/bench.lock python -m benchmarks.peers --corpus long --docs 100000 --install-peers

``--corpus short`` (the default) is ``benchmarks/corpus.py``'s corpus of ~900-byte documents in
``benchmarks/work/c<docs>``, scored against the exact all-pairs join (``benchmarks/exact_pairs.py``). ``--corpus long``
is ``benchmarks/long_corpus.py``'s web pages of 5-50 KB (median ~14 KB, boilerplate shared across sites) in
``benchmarks/work/long-c<docs>``, scored against its planted pairs at J >= 0.8: the exact join of 100,000 long
documents needs more memory than this machine has, and on this generator the exact pairs at 0.8 are the planted ones
(measured and argued in ``benchmarks/long_corpus.py``; ``--gold exact`` asks for the join anyway).

Who runs, each as a separate process tree, as its own users run it:

``datatrove``
    datatrove 0.10.1's MinHash example pipeline (``examples/minhash_deduplication.py`` of its repository: signature,
    buckets, cluster and filter stages; ``JsonlReader`` in, ``JsonlWriter`` out, the removed documents through the
    filter's ``exclusion_writer``) on ``LocalPipelineExecutor`` with 2 tasks and 2 workers, its default tokenizer and
    normaliser (``Languages.english``, word 5-grams, 64-bit hashes: its defaults). Twice: with the example's
    14 buckets x 8 hashes (its default; the S-curve's midpoint is near J = 0.72) and with the 112 hashes split into
    the bands that minimise false positives + false negatives at 0.8 (the rule text-dedup and datasketch use for a
    threshold; datatrove's docs name no threshold, only buckets and hashes per bucket). The cluster stage keeps
    cluster ids (``save_cluster_id``), so pairs can be scored too. The input is the corpus cut into 2 files (one per
    task: one file would leave the second task idle). ``TokensCounter`` of the example is left out: it loads a
    tokenizer from the Hugging Face hub, which is out of reach here, and counts tokens only.
``text-dedup``
    text-dedup 0.4.1's MinHash (``python -m text_dedup.minhash`` reading ``config.toml``: its README's MinHash
    config, 240 permutations, word 5-grams, false positives checked) on the corpus as a local JSON file, threshold
    0.8, 2 processes, the hub switched off (``HF_DATASETS_OFFLINE``). When it cannot run (not installed, or it needs
    the network) the results file says why instead of a number.
``rensa``
    rensa 0.5.0 as its README's "Keep unique documents" runs it: ``RMinHashDeduplicator(threshold=0.8, num_perm=128,
    use_lsh=True)`` (its default bands and seed 42) fed batches of 1,000 ``(id, RMinHash)`` pairs through
    ``add_pairs``, which keeps a document unless an LSH candidate among the kept ones reaches 0.8 in estimated
    Jaccard; the RMinHash objects come from ``RMinHash.from_token_sets(..., num_perm=128, seed=42)`` (its README's
    other example), so that ``get_duplicates`` can name the kept documents each removed one matched (the clusters
    the scoring needs; ``matches_of_removed`` in its stage times). One process.
``datasketch``
    datasketch 2.0.0 as its docs show MinHash LSH: ``MinHash(num_perm=128).update_batch`` of the shingles' UTF-8
    bytes per document, ``MinHashLSH(threshold=0.8, num_perm=128)`` (it chooses 9 bands x 13 rows) filled through
    ``insertion_session()``; then every document is queried, the answers join documents into groups, and each group
    keeps its first document. No verification (its docs return the candidates as the answer). One process.

    Both read the JSONL line by line, lower-case each text, cut it into words on non-word characters (text-dedup's
    tokenisation; their READMEs' toy examples use ``str.split()``, which leaves punctuation on words) and hash word
    5-grams (``--peer-ngram``), and write the kept records gzipped in input order, as ``dedupe`` does.
``ours``
    ``neardup-solr index --fields lsh`` into a local Solr this script starts (``LocalSolr``; its start is not
    timed), ``report --threshold 0.8 --method lsh`` and ``groups --keep``: timed one by one and together; and
    ``neardup-solr dedupe`` (the same in one command, writing the kept records, gzipped, as the peers write theirs);
    ``neardup-solr spark dedup --master local[2] --groups --keep --records-out`` on the same file. The peers write
    the deduplicated corpus; ``index`` + ``report`` + ``groups`` stop at the keep list.

Peers live in virtualenvs of their own under ``benchmarks/work/peer-venvs/`` (never dependencies of this package):
``--install-peers`` creates what is missing, or by hand::

    python3.11 -m venv benchmarks/work/peer-venvs/datatrove && \\
        benchmarks/work/peer-venvs/datatrove/bin/pip install 'datatrove[io,processing]==0.10.1' spacy
    python3.12 -m venv benchmarks/work/peer-venvs/text-dedup && \\
        benchmarks/work/peer-venvs/text-dedup/bin/pip install 'text-dedup==0.4.1'
    python3.11 -m venv benchmarks/work/peer-venvs/rensa && benchmarks/work/peer-venvs/rensa/bin/pip install rensa==0.5.0
    python3.11 -m venv benchmarks/work/peer-venvs/datasketch && \\
        benchmarks/work/peer-venvs/datasketch/bin/pip install datasketch==2.0.0

(text-dedup 0.4.1 requires Python >= 3.12.)

Measured for each: wall time, peak memory of the whole process tree (RSS of the process and all its descendants
summed, sampled every 0.2 s; our Solr JVM is not a descendant of the CLI and is sampled beside it), the removal set
and the clusters, scored against the gold pairs at J >= 0.8 (exact, or planted for ``--corpus long``) by
:func:`score_removals` and :func:`score_cluster_pairs` (their docstrings define the measures, the same for every
tool). Throughput: documents and MB (the input JSONL's bytes / 1e6) per wall second of each row. Results:
``benchmarks/results/<date>-peers-<machine>-<docs>.{json,md}``, ``<date>-peers-long-<machine>-<docs>.{json,md}`` with
``--corpus long`` (``-ngram<N>`` added with ``--peer-ngram N``, ``-smoke`` with ``--smoke``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import json
import math
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Iterable, Sequence

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.corpus import generate  # noqa: E402
from benchmarks.exact_pairs import pairs_path  # noqa: E402
from benchmarks.provenance import load_average_text, write_result_files  # noqa: E402
from neardup_solr.io.kept_records import GZIP_LEVEL  # noqa: E402

THRESHOLD = 0.8
ROOT = Path(__file__).resolve().parents[1]
VENVS = ROOT / "benchmarks" / "work" / "peer-venvs"
# What each peer's users install, and the Python it needs (text-dedup 0.4.1: >= 3.12). datatrove's JsonlReader asks
# for its ``io`` extra (orjson) and its English word tokenizer for spaCy (``pip install spacy``, its error says).
# rensa and datasketch: their current PyPI releases (the package's own bench extra pins neither here: a venv each
# keeps the peers' versions apart from the ones signing.py compares against).
PEERS = {"datatrove": {"requirements": ["datatrove[io,processing]==0.10.1", "spacy"], "python": "3.11"},
         "text-dedup": {"requirements": ["text-dedup==0.4.1"], "python": "3.12"},
         "rensa": {"requirements": ["rensa==0.5.0"], "python": "3.11"},
         "datasketch": {"requirements": ["datasketch==2.0.0"], "python": "3.11"}}
DATATROVE_HASHES = 112  # the example's 14 buckets x 8 hashes
SAMPLE_SECONDS = 0.2
# A tool still running after this many seconds is killed and recorded as timed out (--tool-timeout).
TOOL_TIMEOUT = {"seconds": 4 * 3600.0}


# ---------------------------------------------------------------------------------------------------------------
# Scoring: the same definitions for every tool
# ---------------------------------------------------------------------------------------------------------------


def truth_groups(truth_pairs: Iterable[tuple[str, str]]) -> list[list[str]]:
    """The connected components of the exact pairs (every group has >= 2 documents), members sorted."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in truth_pairs:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    groups: dict[str, list[str]] = {}
    for x in parent:
        groups.setdefault(find(x), []).append(x)
    return sorted(sorted(g) for g in groups.values())


def score_removals(removed: Iterable[str], groups: Sequence[Sequence[str]]) -> dict:
    """Document level: how well a removal set deduplicates, whichever member of a group a tool keeps.

    A group of the exact truth (connected component of the pairs at J >= 0.8) of size s should lose s - 1 documents.
    A removal is *correct* while its group has lost at most s - 1: correct = sum over groups of
    min(removed in the group, s - 1). Precision = correct / removed; recall = correct / sum(s - 1). A removed document
    in no group, or the last member of a group (the whole group gone), counts against precision; ``groups_lost``
    counts the groups of which nothing is kept.
    """
    removed = set(removed)
    group_of = {doc: k for k, g in enumerate(groups) for doc in g}
    hits = Counter(group_of[d] for d in removed if d in group_of)
    correct = sum(min(n, len(groups[k]) - 1) for k, n in hits.items())
    should = sum(len(g) - 1 for g in groups)
    return {"removed": len(removed), "should_remove": should, "correct_removals": correct,
            "removed_outside_groups": sum(1 for d in removed if d not in group_of),
            "groups_lost": sum(1 for k, n in hits.items() if n >= len(groups[k])),
            "precision": round(correct / len(removed), 5) if removed else None,
            "recall": round(correct / should, 5) if should else None}


def score_cluster_pairs(clusters: Iterable[Iterable[str]], truth_pairs: set[tuple[str, str]]) -> dict:
    """Pair level: every two documents a tool puts in one cluster are a pair it claims (sum of C(k, 2) over its
    clusters, counted without listing them). Precision = claimed pairs that are exact pairs / claimed pairs; recall =
    exact pairs inside one cluster / exact pairs. A tool that joins transitively is charged for every pair its
    clusters imply, ours (groups of verified pairs) too."""
    label: dict[str, int] = {}
    claimed = 0
    sizes = []
    for k, members in enumerate(clusters):
        members = set(members)
        if len(members) < 2:
            continue
        sizes.append(len(members))
        claimed += len(members) * (len(members) - 1) // 2
        for doc in members:
            label[doc] = k
    hit = sum(1 for a, b in truth_pairs if a in label and label.get(a) == label.get(b))
    return {"clusters": len(sizes), "largest_cluster": max(sizes, default=0), "claimed_pairs": claimed,
            "true_pairs_inside": hit, "truth_pairs": len(truth_pairs),
            "precision": round(hit / claimed, 5) if claimed else None,
            "recall": round(hit / len(truth_pairs), 5) if truth_pairs else None}


def score_pairs(found: set[tuple[str, str]], truth_pairs: set[tuple[str, str]]) -> dict:
    """The pairs a tool lists (ours only: the peers list none), ordered (a, b) with a < b."""
    hit = len(found & truth_pairs)
    return {"pairs": len(found), "precision": round(hit / len(found), 5) if found else None,
            "recall": round(hit / len(truth_pairs), 5) if truth_pairs else None}


def lsh_bands_for(threshold: float, num_perm: int, fp_weight: float = 0.5, fn_weight: float = 0.5) -> tuple[int, int]:
    """(bands, rows) with bands * rows <= num_perm minimising the weighted areas of false positives (below the
    threshold, under the S-curve 1 - (1 - s^r)^b) and false negatives (above it): the usual choice of a MinHash LSH
    for a threshold, integrated numerically."""
    def area(f, lo: float, hi: float, steps: int = 200) -> float:
        h = (hi - lo) / steps
        return sum(f(lo + (i + 0.5) * h) for i in range(steps)) * h

    best, best_err = (1, num_perm), math.inf
    for b in range(1, num_perm + 1):
        for r in range(1, num_perm // b + 1):
            fp = area(lambda s: 1 - (1 - s ** r) ** b, 0.0, threshold)
            fn = area(lambda s: (1 - s ** r) ** b, threshold, 1.0)
            err = fp_weight * fp + fn_weight * fn
            if err < best_err:
                best, best_err = (b, r), err
    return best


# ---------------------------------------------------------------------------------------------------------------
# Running a process tree and measuring it
# ---------------------------------------------------------------------------------------------------------------


def run_measured(cmd: Sequence[str], *, log_path: Path, cwd: Path | None = None, env: dict | None = None,
                 beside: Sequence[int] = (), timeout: float | None = None) -> dict:
    """Run ``cmd`` to its end, its output to ``log_path``; wall seconds, exit code and the peak of the summed RSS of
    the process and all its descendants (MiB), and of each pid in ``beside`` (a server it talks to)."""
    import psutil

    timeout = TOOL_TIMEOUT["seconds"] if timeout is None else timeout
    timed_out = False
    log_path.parent.mkdir(parents=True, exist_ok=True)
    peak_tree = 0
    peak_beside = 0
    with open(log_path, "w", encoding="utf-8") as log:
        log.write("$ " + " ".join(cmd) + "\n")
        log.flush()
        t0 = time.perf_counter()
        proc = subprocess.Popen(list(cmd), cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT)
        top = psutil.Process(proc.pid)
        while proc.poll() is None:
            total = 0
            try:
                for p in [top, *top.children(recursive=True)]:
                    try:
                        total += p.memory_info().rss
                    except psutil.Error:
                        continue
            except psutil.Error:
                pass
            peak_tree = max(peak_tree, total)
            side = 0
            for pid in beside:
                try:
                    side += psutil.Process(pid).memory_info().rss
                except psutil.Error:
                    continue
            peak_beside = max(peak_beside, side)
            if not timed_out and time.perf_counter() - t0 > timeout:
                timed_out = True
                for p in [*top.children(recursive=True), top]:
                    try:
                        p.kill()
                    except psutil.Error:
                        pass
            time.sleep(SAMPLE_SECONDS)
        wall = time.perf_counter() - t0
    out = {"seconds": round(wall, 2), "returncode": proc.returncode, "peak_tree_mib": round(peak_tree / 2**20, 1),
           "log": str(log_path.relative_to(ROOT) if log_path.is_relative_to(ROOT) else log_path)}
    if timed_out:
        out["timed_out_after_s"] = timeout
    if beside:
        out["peak_server_mib"] = round(peak_beside / 2**20, 1)
    return out


def log_tail(path: Path, lines: int = 15) -> str:
    return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])


def last_json_line(path: Path) -> dict:
    """The summary a command printed with --json: the last line of its log that is a JSON object (a warning
    logged after it may follow)."""
    for line in reversed(path.read_text(encoding="utf-8", errors="replace").splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise ValueError(f"{path} holds no JSON summary")


# ---------------------------------------------------------------------------------------------------------------
# Peer virtualenvs
# ---------------------------------------------------------------------------------------------------------------


def venv_python(name: str, venvs: Path = VENVS) -> Path:
    return venvs / name / "bin" / "python"


def peer_version(name: str, venvs: Path = VENVS) -> str | None:
    """The installed version of the peer in its virtualenv, or None when it is not there."""
    python = venv_python(name, venvs)
    if not python.exists():
        return None
    dist = PEERS[name]["requirements"][0].split("[")[0].split("=")[0]
    proc = subprocess.run([str(python), "-c", f"import importlib.metadata as m; print(m.version({dist!r}))"],
                          capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else None


def find_python(version: str) -> str | None:
    """An interpreter of ``version`` (``python3.12`` on PATH, else a pyenv install)."""
    for candidate in [shutil.which(f"python{version}"),
                      *sorted(Path.home().glob(f".pyenv/versions/{version}*/bin/python{version}"), reverse=True)]:
        if candidate and subprocess.run([str(candidate), "--version"], capture_output=True).returncode == 0:
            return str(candidate)
    return None


def install_peer(name: str, venvs: Path = VENVS) -> str | None:
    """Create the peer's virtualenv and pip-install it as its users do; None when done, else why not."""
    spec = PEERS[name]
    python = find_python(spec["python"])
    if python is None:
        return f"no Python {spec['python']} found for {spec['requirements'][0]}"
    target = venvs / name
    if not venv_python(name, venvs).exists():
        subprocess.run([python, "-m", "venv", str(target)], check=True)
    proc = subprocess.run([str(venv_python(name, venvs)), "-m", "pip", "install", "-q", *spec["requirements"]],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return f"pip install {' '.join(spec['requirements'])} failed: {proc.stderr.strip()[-500:]}"
    return None


# ---------------------------------------------------------------------------------------------------------------
# datatrove
# ---------------------------------------------------------------------------------------------------------------

# Its example pipeline (examples/minhash_deduplication.py) on the local executor; the stages run in order as
# ``depends`` would, each timed. Written to a file and run by the datatrove virtualenv's Python.
DATATROVE_PIPELINE = '''\
import json, sys, time
from datatrove.executor import LocalPipelineExecutor
from datatrove.pipeline.dedup import MinhashDedupSignature
from datatrove.pipeline.dedup.minhash import (MinhashConfig, MinhashDedupBuckets, MinhashDedupCluster,
                                              MinhashDedupFilter)
from datatrove.pipeline.readers import JsonlReader
from datatrove.pipeline.writers.jsonl import JsonlWriter
from datatrove.utils.typeshelper import Languages

# The local executor starts its workers with multiprocessing: the module must be importable without running.
if __name__ == "__main__":
    input_dir, base, buckets, per_bucket, tasks, workers, n_grams = sys.argv[1:8]
    buckets, per_bucket, tasks, workers = int(buckets), int(per_bucket), int(tasks), int(workers)
    # 64-bit hashes and word 5-grams by default; n_grams only when the run asks for another size.
    minhash_config = MinhashConfig(num_buckets=buckets, hashes_per_bucket=per_bucket,
                                   **({} if n_grams == "default" else {"n_grams": int(n_grams)}))
    INPUT_READER = JsonlReader(input_dir)
    stages = {
        "signatures": LocalPipelineExecutor(
            pipeline=[INPUT_READER, MinhashDedupSignature(output_folder=f"{base}/signatures", config=minhash_config,
                                                          language=Languages.english)],
            tasks=tasks, workers=workers, logging_dir=f"{base}/logs/signatures"),
        "buckets": LocalPipelineExecutor(
            pipeline=[MinhashDedupBuckets(input_folder=f"{base}/signatures", output_folder=f"{base}/buckets",
                                          config=minhash_config)],
            tasks=minhash_config.num_buckets, workers=workers, logging_dir=f"{base}/logs/buckets"),
        "cluster": LocalPipelineExecutor(
            pipeline=[MinhashDedupCluster(input_folder=f"{base}/buckets", output_folder=f"{base}/remove_ids",
                                          config=minhash_config, save_cluster_id=True)],
            tasks=1, logging_dir=f"{base}/logs/clusters"),
        "filter": LocalPipelineExecutor(
            pipeline=[INPUT_READER,
                      MinhashDedupFilter(input_folder=f"{base}/remove_ids",
                                         exclusion_writer=JsonlWriter(f"{base}/removed"), load_cluster_ids=True),
                      JsonlWriter(output_folder=f"{base}/deduplicated_output")],
            tasks=tasks, workers=workers, logging_dir=f"{base}/logs/filter"),
    }
    seconds = {}
    for name, stage in stages.items():
        t0 = time.perf_counter()
        stage.run()
        seconds[name] = round(time.perf_counter() - t0, 2)
    print("STAGE_SECONDS " + json.dumps(seconds))
'''


def shard_corpus(docs_path: Path, out_dir: Path, parts: int) -> Path:
    """The corpus cut into ``parts`` consecutive files (one per datatrove task), reused when already there. The
    marker of a complete cut lies beside the folder: its reader would read any file inside it."""
    marker = out_dir.with_name(out_dir.name + ".complete")
    if marker.exists() and marker.read_text() == f"{docs_path.stat().st_size}:{parts}":
        return out_dir
    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir(parents=True)
    with open(docs_path, encoding="utf-8") as fh:
        lines = fh.readlines()
    per = math.ceil(len(lines) / parts)
    for k in range(parts):
        (out_dir / f"part-{k:04d}.jsonl").write_text("".join(lines[k * per:(k + 1) * per]), encoding="utf-8")
    marker.write_text(f"{docs_path.stat().st_size}:{parts}")
    return out_dir


def read_jsonl_dir(folder: Path) -> Iterable[dict]:
    for path in sorted(folder.rglob("*.jsonl*")):
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    yield json.loads(line)


def run_datatrove(docs_path: Path, run_dir: Path, buckets: int, per_bucket: int, workers: int,
                  venvs: Path, ngram: int | None = None) -> dict:
    version = peer_version("datatrove", venvs)
    if version is None:
        return {"status": "not run", "why": f"no datatrove virtualenv in {venvs} (run with --install-peers)"}
    shards = shard_corpus(docs_path, run_dir.parent / f"datatrove-input-{workers}", workers)
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    script = run_dir / "pipeline.py"
    script.write_text(DATATROVE_PIPELINE, encoding="utf-8")
    measured = run_measured([str(venv_python("datatrove", venvs)), str(script), str(shards), str(run_dir / "out"),
                             str(buckets), str(per_bucket), str(workers), str(workers),
                             "default" if ngram is None else str(ngram)],
                            log_path=run_dir / "run.log", cwd=run_dir)
    out: dict = {"version": version, "buckets": buckets, "hashes_per_bucket": per_bucket,
                 "n_grams": ngram or 5, **measured}
    if measured["returncode"] != 0:
        return {**out, "status": "failed", "why": log_tail(run_dir / "run.log")}
    for line in (run_dir / "run.log").read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("STAGE_SECONDS "):
            out["stage_seconds"] = json.loads(line.split(" ", 1)[1])
    removed, clusters = set(), {}
    for doc in read_jsonl_dir(run_dir / "out" / "removed"):
        removed.add(doc["id"])
        cid = doc.get("metadata", {}).get("minhash_cluster_id")
        if cid is not None:
            clusters.setdefault(cid, []).append(doc["id"])
    kept = 0
    for doc in read_jsonl_dir(run_dir / "out" / "deduplicated_output"):
        kept += 1
        cid = doc.get("metadata", {}).get("minhash_cluster_id")
        if cid is not None and cid >= 0 and cid in clusters:
            clusters[cid].append(doc["id"])
    out.update(status="ok", kept=kept, removed_ids=sorted(removed), clusters=list(clusters.values()))
    return out


# ---------------------------------------------------------------------------------------------------------------
# text-dedup
# ---------------------------------------------------------------------------------------------------------------

# The MinHash config of its README (num_perm 240, word 5-grams, 64-bit hashes, clusters checked for false positives),
# with the benchmark's threshold and a local JSON file in; it reads ``config.toml`` from the directory it runs in.
TEXT_DEDUP_CONFIG = '''\
[input]
input_type = "local_files"
file_type = "json"

[input.read_arguments]
path = "json"
data_files = "{data}"
split = "train"

[algorithm]
algorithm_name = "minhash"
text_column = "text"
seed = 42
batch_size = 10000
num_perm = 240
threshold = {threshold}
false_positive_weight = 0.5
false_negative_weight = 0.5
hash_bits = 64
ngram_size = {ngram}
check_false_positive = true
num_proc = {workers}

[output]
output_dir = "{out}"
clean_cache = false
save_clusters = true

[debug]
enable_profiling = false
'''


def run_text_dedup(docs_path: Path, run_dir: Path, workers: int, venvs: Path, ngram: int | None = None) -> dict:
    version = peer_version("text-dedup", venvs)
    if version is None:
        return {"status": "not run", "why": f"no text-dedup virtualenv in {venvs} (run with --install-peers; "
                                            "text-dedup 0.4.1 needs Python >= 3.12)"}
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    config = run_dir / "config.toml"  # where text-dedup looks for it
    config.write_text(TEXT_DEDUP_CONFIG.format(data=docs_path, threshold=THRESHOLD, workers=workers,
                                               ngram=ngram or 5, out=run_dir / "out"), encoding="utf-8")
    # Offline as this machine is: the hub is never asked, a local file is read.
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "HF_HOME": str(run_dir / "hf-home")}
    measured = run_measured([str(venv_python("text-dedup", venvs)), "-m", "text_dedup.minhash"],
                            log_path=run_dir / "run.log", cwd=run_dir, env=env)
    out: dict = {"version": version, "n_grams": ngram or 5, **measured}
    if measured["returncode"] != 0:
        return {**out, "status": "failed", "why": log_tail(run_dir / "run.log")}
    return {**out, **read_text_dedup_output(run_dir / "out", docs_path, venvs)}


def read_text_dedup_output(out_dir: Path, docs_path: Path, venvs: Path) -> dict:
    """The kept records (a saved ``datasets`` dataset) and the clusters (index -> cluster parent, the row index in
    the input) it writes, as ids: read with the peer's own ``datasets`` in its virtualenv."""
    code = ("import json, pickle, sys, pathlib\n"
            "from datasets import load_from_disk\n"
            "out = pathlib.Path(sys.argv[1])\n"
            "ds = load_from_disk(str(out))\n"
            "kept = list(ds['id'])\n"
            "clusters = {}\n"
            "for p in out.rglob('clusters.pickle'):\n"
            "    clusters = {int(k): int(v) for k, v in pickle.load(open(p, 'rb')).items()}\n"
            "json.dump({'kept': kept, 'parents': clusters}, sys.stdout)\n")
    proc = subprocess.run([str(venv_python("text-dedup", venvs)), "-c", code, str(out_dir)], capture_output=True,
                          text=True)
    if proc.returncode != 0:
        return {"status": "failed", "why": "its output could not be read: " + proc.stderr.strip()[-800:]}
    data = json.loads(proc.stdout)
    ids = [json.loads(line)["id"] for line in open(docs_path, encoding="utf-8")]
    kept = set(data["kept"])
    groups: dict[int, list[str]] = {}
    for index, parent in data["parents"].items():
        groups.setdefault(parent, []).append(ids[int(index)])
    return {"status": "ok", "kept": len(kept), "removed_ids": sorted(set(ids) - kept),
            "clusters": [g for g in groups.values() if len(g) > 1]}


# ---------------------------------------------------------------------------------------------------------------
# rensa and datasketch: in-memory MinHash LSH in one Python process, as their READMEs/docs show it
# ---------------------------------------------------------------------------------------------------------------

# What both scripts share, written at the top of each: the corpus streamed line by line, each text lower-cased and
# cut into words on non-word characters (text-dedup's tokenisation; the READMEs' toy examples call str.split(),
# which would keep punctuation on words and part copies our normaliser and the other peers treat as equal), then
# word n-grams joined by spaces; the kept records written gzipped in input order, as `dedupe` writes them; the
# removal set and the clusters written for scoring (``removed.txt``, ``clusters.jsonl``: one JSON list of ids per
# cluster of two or more).
_IN_MEMORY_COMMON = '''\
import gzip, json, re, sys, time

WORD = re.compile(r"\\w+")


def ngrams(text, n):
    words = WORD.findall(text.lower())
    if len(words) <= n:
        return [" ".join(words)]
    return [" ".join(words[i:i + n]) for i in range(len(words) - n + 1)]


def records(path):
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                record = json.loads(line)
                yield record["id"], record["text"], line


def components(edges, ids):
    """Groups of the ids joined by ``edges`` (pairs of positions), each in input order, the first one kept."""
    parent = list(range(len(ids)))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in edges:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    groups = {}
    for i in range(len(ids)):
        groups.setdefault(find(i), []).append(i)
    return [g for g in groups.values() if len(g) > 1]


def write_outputs(out_dir, docs_path, ids, removed, clusters):
    with open(f"{out_dir}/removed.txt", "w", encoding="utf-8") as fh:
        fh.writelines(ids[i] + "\\n" for i in sorted(removed))
    with open(f"{out_dir}/clusters.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps([ids[i] for i in g]) + "\\n" for g in clusters)
    kept = 0
    # At dedupe's gzip level (neardup_solr.io.kept_records.GZIP_LEVEL, gzip's default): the same write for all.
    with gzip.open(f"{out_dir}/kept.jsonl.gz", "wt", encoding="utf-8", compresslevel=GZIP_LEVEL) as out:
        for i, (_, _, line) in enumerate(records(docs_path)):
            if i not in removed:
                out.write(line)
                kept += 1
    return kept
'''.replace("GZIP_LEVEL", str(GZIP_LEVEL))

# rensa's README ("Keep unique documents"): RMinHashDeduplicator(threshold, num_perm=128, use_lsh=True) and
# ``keep = dedup.add_pairs((key, tokens) ...)``; it keeps a document unless its LSH candidates among the kept ones
# reach the threshold in estimated (sketch) Jaccard. Here ``add_pairs`` gets each batch's RMinHash objects, made by
# ``RMinHash.from_token_sets`` (its README's similarity example) with the deduplicator's own seed 42: the same
# signatures add_pairs would make from the tokens, kept so that ``get_duplicates`` can name the kept documents a
# removed one matched (the clusters the scoring needs; one query per removed document).
RENSA_SCRIPT = _IN_MEMORY_COMMON + '''

if __name__ == "__main__":
    from rensa import RMinHash, RMinHashDeduplicator

    docs_path, out_dir, ngram, threshold, num_perm = sys.argv[1:6]
    ngram, threshold, num_perm = int(ngram), float(threshold), int(num_perm)
    batch_size = 1000
    seconds = {"tokenise": 0.0, "sign_and_dedup": 0.0, "matches_of_removed": 0.0}
    dedup = RMinHashDeduplicator(threshold=threshold, num_perm=num_perm, use_lsh=True)
    ids, position_of, removed, edges = [], {}, set(), []

    def flush(batch):
        t0 = time.perf_counter()
        keys = [key for key, _ in batch]
        minhashes = RMinHash.from_token_sets([tokens for _, tokens in batch], num_perm=num_perm, seed=42)
        keep = dedup.add_pairs(zip(keys, minhashes))
        t1 = time.perf_counter()
        for k, (kept, minhash) in enumerate(zip(keep, minhashes)):
            if not kept:
                me = len(ids) - len(batch) + k
                removed.add(me)
                edges.extend((me, position_of[m]) for m in dedup.get_duplicates(minhash))
        seconds["sign_and_dedup"] += t1 - t0
        seconds["matches_of_removed"] += time.perf_counter() - t1

    batch = []
    for doc_id, text, _ in records(docs_path):
        position_of[doc_id] = len(ids)
        ids.append(doc_id)
        t0 = time.perf_counter()
        batch.append((doc_id, ngrams(text, ngram)))
        seconds["tokenise"] += time.perf_counter() - t0
        if len(batch) == batch_size:
            flush(batch)
            batch = []
    if batch:
        flush(batch)
    t0 = time.perf_counter()
    kept = write_outputs(out_dir, docs_path, ids, removed, components(edges, ids))
    seconds["write_outputs"] = time.perf_counter() - t0
    print("STAGE_SECONDS " + json.dumps({k: round(v, 2) for k, v in seconds.items()}))
    print(f"KEPT {kept}")
'''

# datasketch's documented use: a MinHash(num_perm=128) per document updated with its shingles' UTF-8 bytes
# (update_batch), inserted into MinHashLSH(threshold=0.8, num_perm=128) through insertion_session(); then every
# document queried, and each group of documents joined by the answers keeps its first member. No verification: its
# docs return the LSH candidates as the answer.
DATASKETCH_SCRIPT = _IN_MEMORY_COMMON + '''

if __name__ == "__main__":
    from datasketch import MinHash, MinHashLSH

    docs_path, out_dir, ngram, threshold, num_perm = sys.argv[1:6]
    ngram, threshold, num_perm = int(ngram), float(threshold), int(num_perm)
    t0 = time.perf_counter()
    lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
    ids, minhashes = [], []
    with lsh.insertion_session() as session:
        for doc_id, text, _ in records(docs_path):
            m = MinHash(num_perm=num_perm)
            m.update_batch([s.encode("utf-8") for s in ngrams(text, ngram)])
            session.insert(len(ids), m)
            ids.append(doc_id)
            minhashes.append(m)
    t1 = time.perf_counter()
    edges = [(i, j) for i, m in enumerate(minhashes) for j in lsh.query(m) if j != i]
    clusters = components(edges, ids)
    removed = {i for g in clusters for i in g[1:]}
    t2 = time.perf_counter()
    kept = write_outputs(out_dir, docs_path, ids, removed, clusters)
    seconds = {"sign_and_insert": t1 - t0, "query_and_group": t2 - t1, "write_outputs": time.perf_counter() - t2}
    print("STAGE_SECONDS " + json.dumps({k: round(v, 2) for k, v in seconds.items()}))
    print(f"BANDS_ROWS {lsh.b} {lsh.r}")
    print(f"KEPT {kept}")
'''

IN_MEMORY_PEERS = {"rensa": RENSA_SCRIPT, "datasketch": DATASKETCH_SCRIPT}
NUM_PERM = 128


def read_in_memory_output(run_dir: Path) -> dict:
    """The removal set, the clusters and the kept count that the rensa and datasketch scripts write."""
    out_dir = run_dir / "out"
    removed = [line.strip() for line in open(out_dir / "removed.txt", encoding="utf-8") if line.strip()]
    clusters = [json.loads(line) for line in open(out_dir / "clusters.jsonl", encoding="utf-8") if line.strip()]
    out: dict = {"removed_ids": sorted(removed), "clusters": clusters}
    for line in (run_dir / "run.log").read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("STAGE_SECONDS "):
            out["stage_seconds"] = json.loads(line.split(" ", 1)[1])
        elif line.startswith("KEPT "):
            out["kept"] = int(line.split()[1])
        elif line.startswith("BANDS_ROWS "):
            out["bands"], out["rows"] = (int(x) for x in line.split()[1:3])
    return out


def run_in_memory_peer(name: str, docs_path: Path, run_dir: Path, venvs: Path, ngram: int | None = None) -> dict:
    """rensa or datasketch, one Python process of its own virtualenv, on the JSONL corpus."""
    version = peer_version(name, venvs)
    if version is None:
        return {"status": "not run", "why": f"no {name} virtualenv in {venvs} (run with --install-peers)"}
    shutil.rmtree(run_dir, ignore_errors=True)
    (run_dir / "out").mkdir(parents=True)
    script = run_dir / f"{name}_dedup.py"
    script.write_text(IN_MEMORY_PEERS[name], encoding="utf-8")
    measured = run_measured([str(venv_python(name, venvs)), str(script), str(docs_path), str(run_dir / "out"),
                             str(ngram or 5), str(THRESHOLD), str(NUM_PERM)], log_path=run_dir / "run.log",
                            cwd=run_dir)
    out: dict = {"version": version, "n_grams": ngram or 5, "num_perm": NUM_PERM, **measured}
    if measured["returncode"] != 0:
        return {**out, "status": "failed", "why": log_tail(run_dir / "run.log")}
    return {**out, "status": "ok", **read_in_memory_output(run_dir)}


# ---------------------------------------------------------------------------------------------------------------
# ours
# ---------------------------------------------------------------------------------------------------------------


def neardup_cli() -> str:
    here = Path(sys.executable).parent / "neardup-solr"
    return str(here) if here.exists() else shutil.which("neardup-solr") or "neardup-solr"


def read_groups(path: Path) -> tuple[set[str], list[list[str]]]:
    """The removal set (every member but the representative) and the clusters of a ``groups --out`` file."""
    removed: set[str] = set()
    clusters = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            group = json.loads(line)
            members = [str(m) for m in group["members"]]
            clusters.append(members)
            removed.update(m for m in members if m != str(group["representative"]))
    return removed, clusters


def read_pairs(path: Path) -> set[tuple[str, str]]:
    found = set()
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("#") or not line.strip():
                continue
            a, b = line.split("\t")[:2]
            found.add((a, b) if a <= b else (b, a))
    return found


def run_ours_solr(docs_path: Path, run_dir: Path, solr_url: str, solr_pid: int | None) -> dict:
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    cli = neardup_cli()
    beside = [solr_pid] if solr_pid else []
    steps = {
        "index": [cli, "index", str(docs_path), "--fields", "lsh", "--clear-all", "-q", "--json", "--solr-url",
                  solr_url],
        "report": [cli, "report", "--threshold", str(THRESHOLD), "--method", "lsh", "--out",
                   str(run_dir / "pairs.tsv"), "-q", "--solr-url", solr_url],
        "groups": [cli, "groups", str(run_dir / "pairs.tsv"), "--out", str(run_dir / "groups.jsonl"), "--keep",
                   str(run_dir / "keep.txt")],
    }
    out: dict = {"steps": {}}
    for name, cmd in steps.items():
        measured = run_measured(cmd, log_path=run_dir / f"{name}.log", cwd=ROOT, beside=beside)
        out["steps"][name] = measured
        if measured["returncode"] != 0:
            return {**out, "status": "failed", "why": f"{name}: " + log_tail(run_dir / f"{name}.log")}
    s = out["steps"]
    # index's own split of its time (its --json summary, the last line of its log): issue 48, point 4.
    index_summary = last_json_line(run_dir / "index.log")
    out["stage_seconds"] = {"signing": index_summary["signing_seconds"],
                            "waiting for Solr": index_summary["solr_wait_seconds"]}
    out["seconds_without_index"] = round(s["report"]["seconds"] + s["groups"]["seconds"], 2)
    out["seconds"] = round(out["seconds_without_index"] + s["index"]["seconds"], 2)
    out["peak_tree_mib"] = max(st["peak_tree_mib"] for st in s.values())
    if beside:  # a Solr given by URL may be anywhere: its memory is not measured
        out["peak_server_mib"] = max(st["peak_server_mib"] for st in s.values())
    removed, clusters = read_groups(run_dir / "groups.jsonl")
    return {**out, "status": "ok", "removed_ids": sorted(removed), "clusters": clusters,
            "found_pairs": read_pairs(run_dir / "pairs.tsv")}


def count_lines(path: Path) -> int:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return sum(1 for _ in fh)


def run_ours_dedupe(docs_path: Path, run_dir: Path, solr_url: str, solr_pid: int | None) -> dict:
    """``dedupe``: from the corpus to the deduplicated corpus in one command (index, pairs, groups, kept records),
    the like of what the peers' pipelines write. Gzipped out, as datatrove's JsonlWriter writes by default."""
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    cmd = [neardup_cli(), "dedupe", str(docs_path), "--threshold", str(THRESHOLD), "--out",
           str(run_dir / "kept.jsonl.gz"), "--groups", str(run_dir / "groups.jsonl"), "--pairs",
           str(run_dir / "pairs.tsv"), "--fields", "lsh", "--clear-all", "-q", "--json", "--solr-url", solr_url]
    measured = run_measured(cmd, log_path=run_dir / "run.log", cwd=ROOT, beside=[solr_pid] if solr_pid else [])
    if measured["returncode"] != 0:
        return {**measured, "status": "failed", "why": log_tail(run_dir / "run.log")}
    removed, clusters = read_groups(run_dir / "groups.jsonl")
    # Where its time went (issue 48, point 4): the stages of its --json summary, the last line of its log.
    summary = last_json_line(run_dir / "run.log")
    return {**measured, "status": "ok", "stage_seconds": summary["stages"],
            "kept": count_lines(run_dir / "kept.jsonl.gz"),
            "removed_ids": sorted(removed), "clusters": clusters, "found_pairs": read_pairs(run_dir / "pairs.tsv")}


def run_ours_spark(docs_path: Path, run_dir: Path, master: str, driver_memory: str) -> dict:
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    cmd = [neardup_cli(), "spark", "dedup", str(docs_path), "--threshold", str(THRESHOLD), "--out",
           str(run_dir / "pairs.tsv"), "--master", master, "--driver-memory", driver_memory,
           "--groups", str(run_dir / "groups.jsonl"), "--keep", str(run_dir / "keep.txt"),
           "--records-out", str(run_dir / "kept.jsonl.gz")]
    measured = run_measured(cmd, log_path=run_dir / "run.log", cwd=ROOT)
    out: dict = {"master": master, **measured}
    if measured["returncode"] != 0:
        return {**out, "status": "failed", "why": log_tail(run_dir / "run.log")}
    removed, clusters = read_groups(run_dir / "groups.jsonl")
    return {**out, "status": "ok", "kept": count_lines(run_dir / "kept.jsonl.gz"), "removed_ids": sorted(removed),
            "clusters": clusters,
            "found_pairs": read_pairs(run_dir / "pairs.tsv")}


# ---------------------------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------------------------


def scored(result: dict, groups: list[list[str]], truth: set[tuple[str, str]]) -> dict:
    """The result with its removal set and clusters replaced by their scores."""
    if result.get("status") != "ok":
        return result
    result = dict(result)
    result["documents"] = score_removals(result.pop("removed_ids"), groups)
    result["pairs_from_clusters"] = score_cluster_pairs(result.pop("clusters"), truth)
    if "found_pairs" in result:
        result["pairs_listed"] = score_pairs(result.pop("found_pairs"), truth)
    return result


ROW_NAMES = {
    "datatrove_default": "datatrove {v}, example pipeline, 14 x 8 buckets (its default), 2 tasks / 2 workers",
    "datatrove_0.8": "datatrove {v}, example pipeline, {b} x {r} buckets (set for 0.8), 2 tasks / 2 workers",
    "text_dedup": "text-dedup {v} MinHash (its README config), threshold 0.8, 2 processes",
    "rensa": "rensa {v}, RMinHashDeduplicator with LSH (its README), 128 perm, threshold 0.8, word {n}-grams",
    "datasketch": "datasketch {v}, MinHashLSH {b} x {r} (its threshold 0.8), insertion_session, query each, first of "
                  "each group kept, word {n}-grams",
    "ours_lsh": "ours: index --fields lsh + report --method lsh + groups --keep",
    "ours_dedupe": "ours: dedupe (index, pairs, groups, kept records gzipped), one command",
    "ours_spark": "ours: spark dedup --groups --keep --records-out (gzipped), local[2]",
}
CORPORA = ("short", "long")


def ngram_note(peer_ngram: int) -> str:
    if peer_ngram == 5:
        return ("The truth is the Jaccard of word 3-shingles (ours signs those); the peers hash word 5-grams (their "
                "default), and an edit changes more 5-grams than 3-grams, so their 0.8 is a stricter bar on this "
                "truth (`--peer-ngram 3` runs them on 3-grams).")
    return (f"The peers hash word {peer_ngram}-grams here (`--peer-ngram {peer_ngram}`; their default is 5); the "
            "truth is the Jaccard of word 3-shingles, with our normaliser (theirs tokenise and normalise otherwise).")


def throughput(result: dict, docs: int, megabytes: float) -> dict:
    """The result with documents/s and MB/s (the input JSONL's size, 1e6 bytes) over its wall seconds."""
    if result.get("status") != "ok" or not result.get("seconds"):
        return result
    return {**result, "docs_per_second": round(docs / result["seconds"], 1),
            "mb_per_second": round(megabytes / result["seconds"], 3)}


def corpus_line(report: dict) -> str:
    truth = (f"{report['truth_pairs']:,} pairs in {report['truth_groups']:,} groups, {report['should_remove']:,} "
             "documents to remove")
    size = f"{report['corpus_mb']:,.1f} MB" if "corpus_mb" in report else ""
    if report.get("corpus_profile") == "long":
        text = (f"long-document corpus `{report['corpus']}` (benchmarks/long_corpus.py, seed {report['seed']}: web "
                f"pages of 5-50 KB, median {report.get('text_bytes_median', 0) / 1000:,.1f} KB, {size}, with site "
                "headers, footers and licence/cookie blocks shared across unrelated pages)")
    else:
        text = (f"planted corpus `{report['corpus']}` (benchmarks/corpus.py, seed {report['seed']}"
                f"{', ' + size if size else ''})")
    if report.get("gold") == "planted":
        gold = (f"gold at J >= {THRESHOLD}: the planted pairs at J >= {THRESHOLD} (each with its exact Jaccard; the "
                "exact all-pairs join returns exactly these on this generator, see the docstring of "
                f"benchmarks/long_corpus.py): {truth}")
    else:
        gold = f"exact truth at J >= {THRESHOLD}: {truth}"
    return f"{text}; {gold}"


def render(report: dict) -> str:
    title = f"# Corpus builders' dedup side by side: {report['docs']:,} documents"
    if report.get("corpus_profile") == "long":
        title = f"# Corpus builders' dedup side by side: {report['docs']:,} long documents (web pages of 5-50 KB)"
    if report.get("smoke"):
        title += " (SMOKE RUN: small size, busy machine; not a result)"
    lines = [title, "",
             f"{report['date']}, {report['machine']}; {corpus_line(report)}. Load average at the start "
             f"{report['load_average_start']} (1/5/15 min).", "",
             "Documents: a removal is correct while its gold group keeps at least one member "
             "(precision = correct / removed, recall = correct / should remove). Pairs from clusters: every two "
             "documents in one cluster count as a claimed pair. Throughput: documents and MB of the input JSONL "
             "per wall second, from the file to the tool's output.", "",
             ngram_note(report.get("peer_ngram", 5)), "",
             "| tool | wall s | docs/s | MB/s | peak MiB (process tree) | kept records written | removed | "
             "doc precision | doc recall | groups lost | cluster-pair precision | cluster-pair recall |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    notes = []
    for key, result in report["results"].items():
        name = ROW_NAMES[key].format(v=result.get("version", ""), b=result.get("buckets", result.get("bands")),
                                     r=result.get("hashes_per_bucket", result.get("rows")),
                                     n=result.get("n_grams", 5))
        if result.get("status") != "ok":
            lines.append(f"| {name} | {result.get('status')} | | | | | | | | | | |")
            notes.append(f"- {name}: {result.get('status')}: {str(result.get('why', '')).splitlines()[-1:]}")
            continue
        d, c = result["documents"], result["pairs_from_clusters"]
        wall = result["seconds"]
        memory = f"{result['peak_tree_mib']:,}"
        if "peak_server_mib" in result and key != "ours_lsh":
            memory += f" + Solr JVM {result['peak_server_mib']:,}"
        if key == "ours_lsh":
            st = result["steps"]
            wall = (f"{result['seconds']} (index {st['index']['seconds']}, report {st['report']['seconds']}, "
                    f"groups {st['groups']['seconds']})")
            memory += (f" + Solr JVM {result['peak_server_mib']:,}" if "peak_server_mib" in result
                       else " (Solr given by URL: not measured)")
        kept = f"{result['kept']:,}" if "kept" in result else "(keep list)"
        rate = f"{result['docs_per_second']:,.0f}" if "docs_per_second" in result else ""
        mbs = f"{result['mb_per_second']:,.2f}" if "mb_per_second" in result else ""
        lines.append(f"| {name} | {wall} | {rate} | {mbs} | {memory} | {kept} | {d['removed']:,} | {d['precision']} | "
                     f"{d['recall']} | {d['groups_lost']:,} | {c['precision']} | {c['recall']} |")
        if "stage_seconds" in result:
            notes.append(f"- {name}: stages {result['stage_seconds']} s.")
        if "pairs_listed" in result:
            p = result["pairs_listed"]
            notes.append(f"- {name}: the pairs it lists: {p['pairs']:,}, precision {p['precision']}, "
                         f"recall {p['recall']}.")
    lines += ["", *notes, "", f"Command: `{report['command']}`. Load average at the end {report['load_average_end']}.",
              ""]
    return "\n".join(lines)


def planted_pairs(work: Path, threshold: float = THRESHOLD) -> set[tuple[str, str]]:
    """The planted pairs at J >= ``threshold`` of a corpus directory's ``truth.tsv`` (ids in corpus order)."""
    from benchmarks.corpus import iter_truth

    return {(a, b) if a <= b else (b, a) for a, b, j in iter_truth(work) if j >= threshold}


def prepare_corpus(profile: str, docs: int, seed: int, work: Path) -> Path:
    """The corpus of ``profile`` in ``work``, generated unless the one there has the same profile, size and seed."""
    meta = work / "meta.json"
    made = json.loads(meta.read_text()) if meta.exists() else {}
    params = made.get("parameters", {})
    if (not (work / "docs.jsonl").exists() or made.get("profile", "short") != profile
            or (params.get("docs"), params.get("seed")) != (docs, seed)):
        pairs_path(work, THRESHOLD).unlink(missing_ok=True)  # the truth of the corpus it replaces
        if profile == "long":
            from benchmarks.long_corpus import generate as generate_long

            generate_long(docs, seed, work)
        else:
            generate(docs, seed, work)
    return work / "docs.jsonl"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--corpus", choices=CORPORA, default="short",
                    help="short: benchmarks/corpus.py (~900-byte documents); long: benchmarks/long_corpus.py (web "
                         "pages of 5-50 KB)")
    ap.add_argument("--work", type=Path, default=None, help="corpus directory (default benchmarks/work/c<docs>, "
                                                           "the one benchmarks/spark.py uses; long-c<docs> for "
                                                           "--corpus long)")
    ap.add_argument("--gold", choices=("auto", "exact", "planted"), default="auto",
                    help="the pairs scored against: exact (all pairs J >= 0.8 by benchmarks/exact_pairs.py) or "
                         "planted (truth.tsv's pairs at J >= 0.8); auto: exact for short, planted for long (the "
                         "exact join of 100,000 long documents does not fit in memory here)")
    ap.add_argument("--venvs", type=Path, default=VENVS, help="the peers' virtualenvs")
    ap.add_argument("--install-peers", action="store_true", help="create the peers' virtualenvs that are missing")
    ap.add_argument("--only", default=None, help="comma-separated subset of: " + ",".join(ROW_NAMES))
    ap.add_argument("--workers", type=int, default=2, help="peers' workers / processes (default 2)")
    ap.add_argument("--solr-url", default=None, help="a core to use (it is cleared); default: a local Solr of "
                                                     "this run's own")
    ap.add_argument("--heap", default="4g", help="heap of the local Solr")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--machine", default=None)
    ap.add_argument("--out-dir", type=Path, default=ROOT / "benchmarks" / "results")
    ap.add_argument("--peer-ngram", type=int, default=None,
                    help="word n-gram size for the peers (default: theirs, 5); 3 is the truth's own shingle size")
    ap.add_argument("--tool-timeout", type=float, default=TOOL_TIMEOUT["seconds"],
                    help="seconds after which a tool is killed and recorded as timed out (default 4 h)")
    ap.add_argument("--smoke", action="store_true", help="label the results a smoke run (small size, not a result)")
    ap.add_argument("--suffix", default="", help="appended to the results' file name (a run of part of the tools)")
    args = ap.parse_args(argv)
    TOOL_TIMEOUT["seconds"] = args.tool_timeout
    chosen = [k for k in ROW_NAMES if args.only is None or k in args.only.split(",")]

    import psutil

    from benchmarks.spark import ground_truth

    started_load = load_average_text()
    default_work = f"{'long-' if args.corpus == 'long' else ''}c{args.docs}"
    work = (args.work or ROOT / "benchmarks" / "work" / default_work).resolve()
    docs_path = prepare_corpus(args.corpus, args.docs, args.seed, work)
    gold = args.gold if args.gold != "auto" else ("planted" if args.corpus == "long" else "exact")
    truth = planted_pairs(work) if gold == "planted" else ground_truth(work)[0]
    groups = truth_groups(truth)
    corpus_meta = json.loads((work / "meta.json").read_text())
    megabytes = docs_path.stat().st_size / 1e6
    runs = work / "peers"
    if args.install_peers:
        for name in PEERS:
            if not any(key.replace("_", "-").startswith(name) for key in chosen):
                continue  # not run this time (--only)
            if peer_version(name, args.venvs) is None:
                why = install_peer(name, args.venvs)
                if why:
                    print(f"{name}: {why}", file=sys.stderr)

    results: dict = {}
    if "datatrove_default" in chosen:
        results["datatrove_default"] = run_datatrove(docs_path, runs / "datatrove-default", 14, 8, args.workers,
                                                     args.venvs, args.peer_ngram)
    if "datatrove_0.8" in chosen:
        bands, rows = lsh_bands_for(THRESHOLD, DATATROVE_HASHES)
        results["datatrove_0.8"] = run_datatrove(docs_path, runs / "datatrove-0.8", bands, rows, args.workers,
                                                 args.venvs, args.peer_ngram)
    if "text_dedup" in chosen:
        results["text_dedup"] = run_text_dedup(docs_path, runs / "text-dedup", args.workers, args.venvs,
                                               args.peer_ngram)
    for name in IN_MEMORY_PEERS:
        if name in chosen:
            results[name] = run_in_memory_peer(name, docs_path, runs / name, args.venvs, args.peer_ngram)
    if "ours_lsh" in chosen or "ours_dedupe" in chosen:
        solr = None
        url, pid = args.solr_url, None
        if url is None:
            from neardup_solr.solr.backends.local import LocalSolr

            solr = LocalSolr(port=0, data_dir=runs / "solr", heap=args.heap)
            solr.start()
            url, pid = solr.core_url, solr.pid()
        try:
            if "ours_lsh" in chosen:
                results["ours_lsh"] = run_ours_solr(docs_path, runs / "ours-lsh", url, pid)
            if "ours_dedupe" in chosen:
                results["ours_dedupe"] = run_ours_dedupe(docs_path, runs / "ours-dedupe", url, pid)
        finally:
            if solr is not None:
                solr.stop()
    if "ours_spark" in chosen:
        results["ours_spark"] = run_ours_spark(docs_path, runs / "ours-spark", args.master, args.driver_memory)

    machine = args.machine or f"{psutil.cpu_count()}core-{round(psutil.virtual_memory().total / 2**30)}g"
    report = {"benchmark": "peers", "docs": args.docs, "seed": args.seed, "corpus": str(work.relative_to(ROOT))
              if work.is_relative_to(ROOT) else str(work), "corpus_profile": args.corpus, "gold": gold,
              "corpus_mb": round(megabytes, 1),
              "date": dt.date.today().isoformat(), "machine": machine,
              "smoke": args.smoke, "threshold": THRESHOLD, "peer_ngram": args.peer_ngram or 5,
              "truth_pairs": len(truth), "truth_groups": len(groups),
              "should_remove": sum(len(g) - 1 for g in groups), "load_average_start": started_load,
              "command": "python -m benchmarks.peers " + " ".join(sys.argv[1:] if argv is None else argv),
              "results": {k: throughput(scored(v, groups, truth), args.docs, megabytes) for k, v in results.items()},
              "load_average_end": load_average_text()}
    if args.corpus == "long":
        report["text_bytes_median"] = corpus_meta["counts"]["text_bytes_median"]
    variant = f"-ngram{args.peer_ngram}" if args.peer_ngram else ""
    profile = "long-" if args.corpus == "long" else ""
    stem = (args.out_dir / f"{report['date']}-peers-{profile}{machine}-{args.docs}{variant}"
                           f"{'-smoke' if args.smoke else ''}{args.suffix}")
    write_result_files(stem, report, render(report))
    print(render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
