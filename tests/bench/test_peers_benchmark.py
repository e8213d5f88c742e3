"""benchmarks/peers.py: its scoring on small cases worked out by hand, its band choice against datasketch's known
answers, and a tiny end-to-end run of our side (and of a peer when its virtualenv is there)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from benchmarks.peers import (VENVS, lsh_bands_for, peer_version, score_cluster_pairs, score_pairs,
                              score_removals, truth_groups)
from repo_paths import REPO

# Exact pairs: a-b-c chained (a and c below the threshold), d-e; f alone.
TRUTH = {("a", "b"), ("b", "c"), ("d", "e")}


def test_truth_groups_are_the_components_of_the_pairs():
    assert truth_groups(TRUTH) == [["a", "b", "c"], ["d", "e"]]
    assert truth_groups(set()) == []


def test_removals_are_correct_up_to_all_but_one_member_of_each_group():
    groups = truth_groups(TRUTH)
    # Ideal: two from {a, b, c}, one from {d, e}, whichever are kept.
    ideal = score_removals({"b", "c", "d"}, groups)
    assert ideal == {"removed": 3, "should_remove": 3, "correct_removals": 3, "removed_outside_groups": 0,
                     "groups_lost": 0, "precision": 1.0, "recall": 1.0}
    assert score_removals({"a", "c", "e"}, groups)["precision"] == 1.0  # another choice of kept ones, as good
    # The whole of {d, e} gone, and f (in no group) removed: 2 of 4 removals are right, 2 of 3 needed are made.
    worse = score_removals({"a", "d", "e", "f"}, groups)
    assert worse["correct_removals"] == 2 and worse["groups_lost"] == 1 and worse["removed_outside_groups"] == 1
    assert worse["precision"] == 0.5 and worse["recall"] == round(2 / 3, 5)
    assert score_removals(set(), groups) == {"removed": 0, "should_remove": 3, "correct_removals": 0,
                                             "removed_outside_groups": 0, "groups_lost": 0, "precision": None,
                                             "recall": 0.0}


def test_cluster_pairs_charge_every_pair_a_cluster_implies():
    # {a, b, c} claims 3 pairs of which 2 are exact (a-c is not); {d, e, f} claims 3 with 1 exact.
    scored = score_cluster_pairs([["a", "b", "c"], ["d", "e", "f"], ["g"]], TRUTH)
    assert scored == {"clusters": 2, "largest_cluster": 3, "claimed_pairs": 6, "true_pairs_inside": 3,
                      "truth_pairs": 3, "precision": 0.5, "recall": 1.0}
    split = score_cluster_pairs([["a", "b"], ["c"], ["d", "e"]], TRUTH)
    assert split["precision"] == 1.0 and split["recall"] == round(2 / 3, 5)


def test_listed_pairs():
    assert score_pairs({("a", "b"), ("a", "c")}, TRUTH) == {"pairs": 2, "precision": 0.5,
                                                             "recall": round(1 / 3, 5)}


def test_bands_for_a_threshold_match_datasketchs_choice():
    # datasketch's MinHashLSH(threshold=0.8, num_perm=128) uses 9 bands of 13 rows; text-dedup's optimal_param
    # (datasketch's integral) gives these three answers too.
    assert lsh_bands_for(0.8, 128) == (9, 13)
    assert lsh_bands_for(0.8, 112) == (9, 12)
    assert lsh_bands_for(0.5, 64) == (14, 4)


def _run_peers(tmp_path, only: str, extra: list[str]) -> dict:
    out_dir = tmp_path / "results"
    proc = subprocess.run([sys.executable, "-m", "benchmarks.peers", "--docs", "300", "--work",
                           str(tmp_path / "c300"), "--only", only, "--out-dir", str(out_dir), "--machine", "smoke",
                           "--smoke", "--tool-timeout", "600", *extra],
                          cwd=REPO, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (json_path,) = out_dir.glob("*-peers-smoke-300-smoke.json")
    assert "SMOKE RUN" in json_path.with_suffix(".md").read_text().splitlines()[0]
    return json.loads(json_path.read_text())


@pytest.mark.solr
@pytest.mark.slow
def test_tiny_run_of_our_side_scores_against_the_exact_truth(tmp_path):
    # Its own Solr (as at 1M), whose JVM's memory it measures beside the CLI's process tree. Not ours_spark: a
    # Spark job costs half a minute of CI here, and spark dedup's groups, keep list and kept records are checked
    # against the single process in tests/doors/spark/test_spark_groups.py (the 20k smoke run ran it here).
    report = _run_peers(tmp_path, "ours_lsh,ours_dedupe", ["--heap", "1g"])
    assert report["truth_pairs"] > 0 and report["should_remove"] > 0
    for key in ("ours_lsh", "ours_dedupe"):
        result = report["results"][key]
        assert result["status"] == "ok", result
        # Every pair we list is verified with the exact Jaccard of the truth's own shingles.
        assert result["pairs_listed"]["precision"] == 1.0 and result["pairs_listed"]["recall"] >= 0.9
        assert result["documents"]["precision"] == 1.0 and result["documents"]["groups_lost"] == 0
        assert result["peak_tree_mib"] > 0 and result["seconds"] > 0
    lsh = report["results"]["ours_lsh"]
    assert lsh["steps"]["index"]["seconds"] > 0 and lsh["peak_server_mib"] > 0
    assert lsh["seconds"] == round(lsh["seconds_without_index"] + lsh["steps"]["index"]["seconds"], 2)
    # The same corpus, the same verified pairs: the same groups, whichever way they were computed; the records
    # written are the ones not removed.
    dedupe = report["results"]["ours_dedupe"]
    assert dedupe["documents"] == lsh["documents"]
    assert dedupe["kept"] + dedupe["documents"]["removed"] == 300


@pytest.mark.slow
@pytest.mark.parametrize("peer,key", [("datatrove", "datatrove_default"), ("text-dedup", "text_dedup")])
def test_tiny_run_of_a_peer(tmp_path, peer, key):
    if peer_version(peer) is None:
        pytest.skip(f"no {peer} virtualenv in {VENVS} (python -m benchmarks.peers --install-peers creates it)")
    result = _run_peers(tmp_path, key, [])["results"][key]
    assert result["status"] == "ok", result
    assert result["documents"]["removed"] > 0 and result["documents"]["recall"] > 0
    assert result["peak_tree_mib"] > 0
