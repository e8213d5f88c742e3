"""benchmarks/peers.py's long-document side (issue 48): the rensa and datasketch runners, what they write and how it
is read and scored, the throughput columns, and the long corpus made and reused in its own directory.

The runners are run for real on tiny inputs by the interpreter running these tests (the package's ``bench`` extra
has both libraries), behind a stand-in for a peer's virtualenv: a ``bin/python`` that execs this interpreter."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys

import pytest

from benchmarks.corpus import iter_truth
from benchmarks.peers import (_IN_MEMORY_COMMON, planted_pairs, prepare_corpus, read_in_memory_output, render,
                              run_in_memory_peer, score_cluster_pairs, score_removals, scored, throughput,
                              truth_groups)
from repo_paths import REPO

# Exact pairs: a-b-c chained (a and c below the threshold), d-e; f alone (as in test_peers_benchmark.py).
TRUTH = {("a", "b"), ("b", "c"), ("d", "e")}


def _stand_in_venvs(tmp_path, *names):
    """``<venvs>/<name>/bin/python`` running this interpreter, as peer_version and the runners call it."""
    venvs = tmp_path / "venvs"
    for name in names:
        python = venvs / name / "bin" / "python"
        python.parent.mkdir(parents=True)
        python.write_text(f"#!/bin/sh\nexec {sys.executable} \"$@\"\n")
        python.chmod(0o755)
    return venvs


def _common():
    namespace: dict = {}
    exec(compile(_IN_MEMORY_COMMON, "<in-memory common>", "exec"), namespace)
    return namespace


def test_the_runners_shingle_and_group_as_documented(tmp_path):
    common = _common()
    assert common["ngrams"]("The cat, the HAT; sat.", 2) == ["the cat", "cat the", "the hat", "hat sat"]
    assert common["ngrams"]("Two words", 5) == ["two words"]  # shorter than n: one shingle of all its words
    ids = ["a", "b", "c", "d", "e"]
    # Groups in input order, so that "the first of each group" is the earliest document.
    assert common["components"]([(2, 0), (4, 1), (1, 3)], ids) == [[0, 2], [1, 3, 4]]
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps({"id": i, "text": f"text {i}"}) + "\n" for i in ids), encoding="utf-8")
    kept = common["write_outputs"](str(tmp_path), str(docs), ids, {2, 3, 4}, [[0, 2], [1, 3, 4]])
    assert kept == 2
    assert (tmp_path / "removed.txt").read_text().split() == ["c", "d", "e"]
    assert [json.loads(line) for line in (tmp_path / "clusters.jsonl").read_text().splitlines()] == \
        [["a", "c"], ["b", "d", "e"]]
    with gzip.open(tmp_path / "kept.jsonl.gz", "rt", encoding="utf-8") as fh:
        assert [json.loads(line)["id"] for line in fh] == ["a", "b"]


def test_their_output_is_read_and_scored_like_every_tool(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "removed.txt").write_text("b\nc\ne\n")
    (tmp_path / "out" / "clusters.jsonl").write_text('["a", "b", "c"]\n["d", "e"]\n')
    (tmp_path / "run.log").write_text('$ python x.py\nSTAGE_SECONDS {"sign_and_insert": 1.5}\nBANDS_ROWS 9 13\n'
                                      "KEPT 3\n")
    out = read_in_memory_output(tmp_path)
    assert out == {"removed_ids": ["b", "c", "e"], "clusters": [["a", "b", "c"], ["d", "e"]],
                   "stage_seconds": {"sign_and_insert": 1.5}, "bands": 9, "rows": 13, "kept": 3}
    result = scored({"status": "ok", "seconds": 2.0, **out}, truth_groups(TRUTH), TRUTH)
    assert result["documents"] == score_removals({"b", "c", "e"}, truth_groups(TRUTH))
    assert result["documents"]["precision"] == 1.0 and result["documents"]["recall"] == 1.0
    # {a, b, c} claims a-c, which is no exact pair: 3 of 4 claimed pairs are right, all 3 exact pairs inside.
    assert result["pairs_from_clusters"] == score_cluster_pairs([["a", "b", "c"], ["d", "e"]], TRUTH)
    assert result["pairs_from_clusters"]["precision"] == 0.75 and result["pairs_from_clusters"]["recall"] == 1.0
    assert throughput(result, 1000, 15.0)["docs_per_second"] == 500.0
    assert throughput(result, 1000, 15.0)["mb_per_second"] == 7.5
    assert throughput({"status": "failed"}, 1000, 15.0) == {"status": "failed"}


def _tiny_corpus(path):
    """a/b/c near copies (long enough for 5-gram Jaccards near 0.9), d an exact copy of e, f unrelated."""
    words = [f"w{k}" for k in range(300)]
    base = " ".join(words)
    texts = {"a": base, "b": base.replace("w150", "changed", 1), "c": base.replace("w40", "other", 1),
             "d": "Some other page, " + " ".join(f"v{k}" for k in range(200)),
             "e": "Some other page. " + " ".join(f"v{k}" for k in range(200)),
             "f": " ".join(f"u{k}" for k in range(250))}
    path.write_text("".join(json.dumps({"id": k, "text": t}) + "\n" for k, t in texts.items()), encoding="utf-8")
    return {("a", "b"), ("a", "c"), ("b", "c"), ("d", "e")}


@pytest.mark.parametrize("name", ["rensa", "datasketch"])
def test_a_runner_removes_the_copies_of_a_tiny_corpus(tmp_path, name):
    pytest.importorskip(name)
    docs = tmp_path / "docs.jsonl"
    truth = _tiny_corpus(docs)
    venvs = _stand_in_venvs(tmp_path, name)
    result = run_in_memory_peer(name, docs, tmp_path / "run", venvs)
    assert result["status"] == "ok", result
    assert result["version"] and result["n_grams"] == 5 and result["num_perm"] == 128
    # (A process this short may end before the memory sampler's first look: its peak can read 0.)
    assert result["peak_tree_mib"] >= 0 and result["kept"] == 3
    assert sorted(result["removed_ids"]) == ["b", "c", "e"]  # the first of each group is kept
    assert sorted(map(sorted, result["clusters"])) == [["a", "b", "c"], ["d", "e"]]
    s = scored(result, truth_groups(truth), truth)
    assert s["documents"]["precision"] == 1.0 and s["documents"]["recall"] == 1.0
    if name == "datasketch":
        assert (result["bands"], result["rows"]) == (9, 13)
    assert set(result["stage_seconds"]) >= {"write_outputs"}


def test_a_missing_virtualenv_is_reported_not_raised(tmp_path):
    result = run_in_memory_peer("rensa", tmp_path / "docs.jsonl", tmp_path / "run", tmp_path / "no-venvs")
    assert result["status"] == "not run" and "--install-peers" in result["why"]


def test_the_long_corpus_is_made_once_in_its_directory_and_its_planted_pairs_are_the_gold(tmp_path):
    work = tmp_path / "long-c80"
    docs = prepare_corpus("long", 80, 1, work)
    meta = json.loads((work / "meta.json").read_text())
    assert docs == work / "docs.jsonl" and meta["profile"] == "long"
    stamp = docs.stat().st_mtime_ns
    assert prepare_corpus("long", 80, 1, work) == docs and docs.stat().st_mtime_ns == stamp  # reused
    assert planted_pairs(work) == {(a, b) for a, b, j in iter_truth(work) if j >= 0.8}
    # A short corpus asked for in the same place replaces it (and would never be scored as the long one).
    prepare_corpus("short", 80, 1, work)
    assert "profile" not in json.loads((work / "meta.json").read_text())


def test_planted_pairs_keep_the_pairs_at_the_threshold(tmp_path):
    (tmp_path / "truth.tsv").write_text("# id_a\tid_b\tjaccard\nd1\td2\t0.800000\nd1\td3\t0.799999\n"
                                        "d4\td9\t1.000000\n")
    assert planted_pairs(tmp_path) == {("d1", "d2"), ("d4", "d9")}


def _report(results):
    return {"docs": 1000, "seed": 7, "corpus": "benchmarks/work/long-c1000", "corpus_profile": "long",
            "gold": "planted", "corpus_mb": 15.0, "text_bytes_median": 14000, "date": "2026-12-03",
            "machine": "2core-24g", "smoke": True, "peer_ngram": 5, "truth_pairs": 3, "truth_groups": 2,
            "should_remove": 3, "load_average_start": "1 / 1 / 1", "load_average_end": "1 / 1 / 1",
            "command": "python -m benchmarks.peers --corpus long", "results": results}


def test_the_table_has_the_throughput_of_every_row(tmp_path):
    ok = {"status": "ok", "seconds": 4.0, "peak_tree_mib": 100.0, "version": "2.0.0", "n_grams": 5, "bands": 9,
          "rows": 13, "kept": 997, "removed_ids": ["b", "c", "e"], "clusters": [["a", "b", "c"], ["d", "e"]]}
    groups = truth_groups(TRUTH)
    results = {"datasketch": throughput(scored(ok, groups, TRUTH), 1000, 15.0),
               "rensa": {"status": "not run", "why": "no rensa virtualenv"}}
    text = render(_report(results))
    lines = text.splitlines()
    assert "1,000 long documents" in lines[0] and "SMOKE RUN" in lines[0]
    header = next(line for line in lines if line.startswith("| tool |"))
    assert header.split(" | ")[1:4] == ["wall s", "docs/s", "MB/s"]
    row = next(line for line in lines if line.startswith("| datasketch 2.0.0, MinHashLSH 9 x 13"))
    assert row.split(" | ")[1:4] == ["4.0", "250", "3.75"]
    assert len(row.split(" | ")) == len(header.split(" | "))
    assert any(line.startswith("| rensa ") and "not run" in line for line in lines)
    assert "the planted pairs at J >= 0.8" in text and "benchmarks/long_corpus.py" in text


@pytest.mark.slow
def test_tiny_long_run_of_the_in_memory_peers_end_to_end(tmp_path):
    pytest.importorskip("rensa")
    pytest.importorskip("datasketch")
    venvs = _stand_in_venvs(tmp_path, "rensa", "datasketch")
    out_dir = tmp_path / "results"
    proc = subprocess.run([sys.executable, "-m", "benchmarks.peers", "--corpus", "long", "--docs", "150", "--work",
                           str(tmp_path / "long-c150"), "--only", "rensa,datasketch", "--venvs", str(venvs),
                           "--out-dir", str(out_dir), "--machine", "smoke", "--smoke"],
                          cwd=REPO, capture_output=True, text=True, timeout=600, env={**os.environ})
    assert proc.returncode == 0, proc.stderr[-3000:]
    (json_path,) = out_dir.glob("*-peers-long-smoke-150-smoke.json")
    report = json.loads(json_path.read_text())
    assert report["corpus_profile"] == "long" and report["gold"] == "planted" and report["truth_pairs"] > 0
    for name in ("rensa", "datasketch"):
        result = report["results"][name]
        assert result["status"] == "ok", result
        assert result["docs_per_second"] > 0 and result["mb_per_second"] > 0
        assert result["documents"]["removed"] > 0
