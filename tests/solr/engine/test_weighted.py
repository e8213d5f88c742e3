"""Weighted MinHash (ICWS and integer boosts) and IDF matching at LSH speed against a real Solr."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

from neardup_solr.errors import InvalidParameterError, InvalidTextError, SignatureMismatchError
from neardup_solr.text import MinHash, estimate_jaccard
from neardup_solr.text.weighted import (
    BoostedMinHash,
    WeightedMinHash,
    WeightedSignature,
    estimate_weighted_jaccard,
    exact_weighted_jaccard,
    token_hashes,
)
from neardup_solr.pairs.weighted import weighted_jaccard
from repo_paths import REPO


def _pairs(n: int = 1500, seed: int = 5):
    """Token -> weight maps in pairs whose weighted Jaccard spreads over [0, 1]; one weight per token, as IDF."""
    rng = np.random.default_rng(seed)
    vocab = [f"t{i}" for i in range(4000)]
    weight = {t: float(w) for t, w in zip(vocab, rng.exponential(2.0, len(vocab)) + 0.05)}
    out = []
    for _ in range(n):
        a = set(rng.choice(len(vocab), int(rng.integers(2, 20))).tolist())
        keep = list(a)[: int(rng.integers(0, len(a) + 1))]
        b = set(keep) | set(rng.choice(len(vocab), int(rng.integers(0, 8))).tolist()) or {0}
        out.append(({vocab[i]: weight[vocab[i]] for i in a}, {vocab[i]: weight[vocab[i]] for i in b}))
    return out


@pytest.mark.parametrize("signer", [WeightedMinHash(128, seed=3), BoostedMinHash(128, seed=3, scale=8)],
                         ids=["icws", "boost"])
def test_estimate_tracks_exact_weighted_jaccard(signer):
    pairs = _pairs()
    sigs = signer.signatures([m for p in pairs for m in p])
    exact = np.array([exact_weighted_jaccard(a, b) for a, b in pairs])
    est = np.array([estimate_weighted_jaccard(sigs[2 * i], sigs[2 * i + 1]) for i in range(len(pairs))])
    # One position agrees with probability J: the estimate is Binomial(k, J)/k, mean absolute error about
    # 0.8 * sqrt(J(1-J)/k). Allow 25% over that, and no bias beyond a few standard errors of the mean.
    expected_mae = float(np.mean(0.8 * np.sqrt(exact * (1 - exact) / 128)))
    assert np.mean(np.abs(est - exact)) <= 1.25 * expected_mae + 0.002
    assert abs(float(np.mean(est - exact))) < 0.01
    assert exact.min() < 0.2 and exact.max() == 1.0  # the pairs do spread


def test_exact_weighted_jaccard_is_the_verifiers_number():
    for a, b in _pairs(200):
        weights = {**a, **b}
        assert exact_weighted_jaccard(a, b) == pytest.approx(weighted_jaccard(a, b, weights), abs=1e-12)


def test_icws_signatures_are_deterministic_and_carry_seed_length_scheme():
    maps = [m for p in _pairs(50) for m in p]
    one = WeightedMinHash(64, seed=9).signatures(maps)
    two = WeightedMinHash(64, seed=9).signatures(list(reversed(maps)))[::-1]
    assert np.array_equal(one, two)  # the same map gives the same signature, whatever else is in the batch
    assert np.array_equal(WeightedMinHash(64, seed=9).signature(maps[3]), one[3])
    other_seed = WeightedMinHash(64, seed=10).signatures(maps)
    assert np.mean(np.asarray(one) == np.asarray(other_seed)) < 0.2
    assert isinstance(one, WeightedSignature) and one.seed == 9 and one.scheme == "icws" and one.num_hashes == 64
    row = pickle.loads(pickle.dumps(one[0]))
    assert row.seed == 9 and row.scheme == "icws"
    # Scaling every weight by the same factor keeps every weighted Jaccard, and the estimate stays unbiased.
    a, b = _pairs(1)[0]
    assert estimate_weighted_jaccard(WeightedMinHash(seed=1).signature(a), WeightedMinHash(seed=1).signature(a)) == 1.0


def test_icws_keeps_the_sample_of_least_ln_a_at_every_position():
    # The batch signer finds the winners through packed rank keys; written out here per map, the sample of
    # least ln a (its code) must be what each position holds.
    maps = [m for p in _pairs(40) for m in p]
    signer = WeightedMinHash(64, seed=4)
    batch = np.asarray(signer.signatures(maps))
    for row, m in zip(batch, maps):
        tokens = [t for t, w in m.items() if w > 0]
        ln_a, codes = signer._sample(token_hashes(tokens), np.array([m[t] for t in tokens]))
        assert np.array_equal(row, codes[np.arange(64), np.argmin(ln_a, axis=1)])


def test_mixing_signatures_is_refused():
    m = {"arts": 3.0, "deli": 1.5}
    icws = WeightedMinHash(64, seed=1).signature(m)
    with pytest.raises(SignatureMismatchError, match="different seeds"):
        estimate_weighted_jaccard(icws, WeightedMinHash(64, seed=2).signature(m))
    with pytest.raises(SignatureMismatchError, match="different lengths"):
        estimate_weighted_jaccard(icws, WeightedMinHash(32, seed=1).signature(m))
    with pytest.raises(SignatureMismatchError, match="different schemes"):
        estimate_weighted_jaccard(icws, BoostedMinHash(64, seed=1).signature(m))
    plain = MinHash(64, seed=1).signature("arts deli")
    with pytest.raises(SignatureMismatchError, match="different schemes"):
        estimate_jaccard(plain, icws)


def test_bad_weights_and_empty_maps_are_refused_by_name():
    signer = WeightedMinHash(16)
    with pytest.raises(InvalidParameterError, match="'b' of document 1"):
        signer.signatures([{"a": 1.0}, {"a": 1.0, "b": -2.0}])
    with pytest.raises(InvalidParameterError, match="finite"):
        signer.signature({"a": float("nan")})
    with pytest.raises(InvalidTextError, match="document 1 has no token of positive weight"):
        signer.signatures([{"a": 1.0}, {"b": 0.0}])
    with pytest.raises(InvalidParameterError, match=r"use signature\(\) for one map"):
        signer.signatures({"a": 1.0})  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="num_hashes"):
        WeightedMinHash(0)
    with pytest.raises(InvalidParameterError, match="scale"):
        BoostedMinHash(scale=0)
    # Zero-weight tokens are left out: they change no weighted Jaccard, so they change no signature.
    assert np.array_equal(signer.signature({"a": 1.0, "z": 0.0}), signer.signature({"a": 1.0}))


# ---------------------------------------------------------------------------------------------------------------
# Against a real Solr
# ---------------------------------------------------------------------------------------------------------------


def _compare(exact_pairs, lsh_pairs) -> float:
    """Recall of lsh against exact; every pair lsh reports must carry exact's similarity, to the last bit."""
    exact = {(p.id, p.neighbor_id): p.similarity for p in exact_pairs}
    lsh = {(p.id, p.neighbor_id): p.similarity for p in lsh_pairs}
    assert set(lsh) <= set(exact)  # verified exactly: nothing below the threshold gets in
    for pair, sim in lsh.items():
        assert sim == exact[pair]
    return len(lsh) / len(exact)


@pytest.fixture()
def persons(solr):
    from benchmarks.persons import generate

    from neardup_solr.solr.indexer import Indexer

    rows, truth = generate(2000, seed=4)
    Indexer(solr).index_records([(r["id"], r["text"]) for r in rows])
    return rows, truth


@pytest.mark.solr
def test_idf_lsh_report_on_person_records_matches_exact(solr, persons, tmp_path):
    from neardup_solr.solr.searcher import Searcher
    from neardup_solr.engine.threshold import ThresholdFinder, threshold_pairs
    from neardup_solr.engine.weighted_lsh import IdfSnapshot, idf_lsh_pairs, snapshot_path

    searcher = Searcher(solr)
    exact = threshold_pairs(ThresholdFinder(searcher, threshold=0.4, similarity="idf"), workers=2)
    out = tmp_path / "pairs.tsv"
    result = idf_lsh_pairs(ThresholdFinder(searcher, threshold=0.4, similarity="idf"), out=out)
    assert len(exact) > 300
    assert _compare(exact, result.pairs) >= 0.99
    assert result.stats.documents == 2000 and result.stats.candidate_pairs >= len(result.pairs)
    # The pairs file is written as the exact method writes it (same order when the sets agree).
    lines = out.read_text().splitlines()
    assert lines[0].startswith("# id") and len(lines) == len(result.pairs) + 2  # column names, version
    if len(result.pairs) == len(exact):
        assert [(p.id, p.neighbor_id) for p in result.pairs] == [(p.id, p.neighbor_id) for p in exact]
    # The snapshot the run signed with is recorded beside it and signs identically when reused.
    snap = IdfSnapshot.load(snapshot_path(out))
    assert snap.num_docs == 2000 and snap.scheme == "icws" and len(snap.df) == result.stats.distinct_tokens
    again = idf_lsh_pairs(ThresholdFinder(searcher, threshold=0.4, similarity="idf"), snapshot=snap)
    assert again.pairs == result.pairs and again.stats.snapshot_digest == result.stats.snapshot_digest


@pytest.mark.solr
def test_idf_lsh_on_restaurants_report_and_join(solr):
    from neardup_solr.solr.indexer import Indexer
    from neardup_solr.io.restaurants import FODORS_COUNT, _read_guides, fodors_path, zagats_path
    from neardup_solr.solr.searcher import Searcher
    from neardup_solr.engine.threshold import ThresholdFinder, join_pairs, threshold_pairs
    from neardup_solr.engine.weighted_lsh import idf_lsh_join, idf_lsh_pairs

    fodors, zagats = _read_guides(fodors_path(), zagats_path())
    assert len(fodors) == FODORS_COUNT
    Indexer(solr, dataset="fodors").index_records([(str(i), t) for i, t in fodors])
    Indexer(solr, dataset="zagats").index_records([(str(i), t) for i, t in zagats])
    searcher = Searcher(solr)

    def finder():
        return ThresholdFinder(searcher, threshold=0.4, similarity="idf")

    exact = threshold_pairs(finder())
    assert _compare(exact, idf_lsh_pairs(finder()).pairs) >= 0.99
    streamed = [(str(i), t) for i, t in fodors]
    for one in (False, True):
        exact_join = join_pairs(finder(), streamed, indexed_dataset="zagats", one_to_one=one)
        lsh_join = idf_lsh_join(finder(), streamed, indexed_dataset="zagats", one_to_one=one).pairs
        # Every pair, in the exact join's order (issue 40, point 5: the faster signing loses none).
        assert _compare(exact_join, lsh_join) == 1.0 and lsh_join == exact_join
        assert all(int(p.neighbor_id) > FODORS_COUNT for p in lsh_join)
    assert len(exact_join) > 100


@pytest.mark.solr
def test_idf_lsh_join_on_person_records_finds_every_exact_pair(solr):
    # The join of benchmarks/weighted_join.py at a smaller size: half of the records indexed, half streamed.
    # The lsh join must give the exact join's pairs, in its order, with its similarities (issue 40, point 5).
    from benchmarks.persons import generate

    from neardup_solr.solr.indexer import Indexer
    from neardup_solr.solr.searcher import Searcher
    from neardup_solr.engine.threshold import ThresholdFinder, join_pairs
    from neardup_solr.engine.weighted_lsh import idf_lsh_join

    rows, _ = generate(3000, seed=3)
    half = len(rows) // 2
    Indexer(solr, dataset="right").index_records([(r["id"], r["text"]) for r in rows[half:]])
    streamed = [(r["id"], r["text"]) for r in rows[:half]]

    def finder():
        return ThresholdFinder(Searcher(solr), threshold=0.4, similarity="idf")

    exact = join_pairs(finder(), streamed, indexed_dataset="right", workers=2)
    lsh = idf_lsh_join(finder(), streamed, indexed_dataset="right")
    assert len(exact) > 250
    assert _compare(exact, lsh.pairs) == 1.0 and lsh.pairs == exact
    assert lsh.stats.streamed == half and lsh.stats.documents == len(rows) - half


@pytest.mark.solr
def test_idf_lsh_schemes_and_refusals(solr):
    from neardup_solr.solr.indexer import Indexer
    from neardup_solr.solr.searcher import Searcher
    from neardup_solr.engine.threshold import ThresholdFinder
    from neardup_solr.engine.weighted_lsh import idf_lsh_pairs

    Indexer(solr).index_records([("1", "a b c d"), ("2", "a b c d"), ("3", "a b e f"), ("4", "g h i j")])
    for scheme in ("icws", "boost"):  # either signer finds the twins, verified exactly
        found = idf_lsh_pairs(ThresholdFinder(Searcher(solr), threshold=0.5, similarity="idf"), scheme=scheme)
        assert [(p.id, p.neighbor_id, p.similarity) for p in found.pairs] == [("1", "2", 1.0)]
        assert found.snapshot.scheme == scheme and found.snapshot.num_docs == 4
    with pytest.raises(InvalidParameterError, match="similarity='idf'"):
        idf_lsh_pairs(ThresholdFinder(Searcher(solr), threshold=0.5))
    with pytest.raises(InvalidParameterError, match="scheme"):
        idf_lsh_pairs(ThresholdFinder(Searcher(solr), threshold=0.5, similarity="idf"), scheme="bogus")


@pytest.mark.solr
def test_cli_idf_lsh_report_and_join(solr, solr_url, tmp_path, capsys):
    from neardup_solr.cli import main
    from neardup_solr.solr.indexer import Indexer

    left = [("L1", "Art's Delicatessen 12224 Ventura Blvd. Studio City"),
            ("L2", "Arnie Morton's of Chicago 435 S. La Cienega Blvd. Los Angeles"),
            ("L3", "Cafe Bizou 14016 Ventura Blvd. Sherman Oaks")]
    right = [("R1", "Art's Deli 12224 Ventura Blvd. Studio City"),
             ("R2", "Arnie Morton's of Chicago 435 S. La Cienega Blvd. Los Angeles"),
             ("R3", "Campanile 624 S. La Brea Ave. Los Angeles")]
    Indexer(solr, dataset="left").index_records(left)
    Indexer(solr, dataset="right").index_records(right)
    out = tmp_path / "idf.tsv"
    base = ["--solr-url", solr_url]
    assert main(["report", "--threshold", "0.4", "--similarity", "idf", "--method", "lsh", "--out", str(out), "-q",
                 *base]) == 0
    said = capsys.readouterr().out
    assert "verified exactly" in said and "idf.tsv.idf.json" in said
    lsh_lines = out.read_text()
    assert main(["report", "--threshold", "0.4", "--similarity", "idf", "--out", str(tmp_path / "e.tsv"), "-q",
                 *base]) == 0
    assert lsh_lines == (tmp_path / "e.tsv").read_text()
    snapshot = json.loads((tmp_path / "idf.tsv.idf.json").read_text())
    assert snapshot["num_docs"] == 6 and snapshot["field"] == "content_words"
    # Signing with the recorded snapshot gives the same file.
    assert main(["report", "--threshold", "0.4", "--similarity", "idf", "--method", "lsh", "--out",
                 str(tmp_path / "again.tsv"), "--idf-snapshot", str(tmp_path / "idf.tsv.idf.json"), "-q", *base]) == 0
    assert (tmp_path / "again.tsv").read_text() == lsh_lines

    records = tmp_path / "left.tsv"
    records.write_text("".join(f"{i}\t{t}\n" for i, t in left))
    joined = tmp_path / "join.tsv"
    assert main(["join", str(records), "--format", "tsv", "--threshold", "0.4", "--similarity", "idf", "--method",
                 "lsh", "--indexed-dataset", "right", "--out", str(joined), "-q", *base]) == 0
    assert [line.split("\t")[:2] for line in joined.read_text().splitlines() if not line.startswith("#")] == \
        [["L1", "R1"], ["L2", "R2"]]


@pytest.mark.solr
@pytest.mark.parametrize("argv, message", [
    (["report", "--threshold", "0.4", "--similarity", "idf", "--method", "lsh", "--workers", "2"],
     "--workers does not apply to --method lsh"),
    (["report", "--threshold", "0.4", "--similarity", "idf", "--method", "lsh", "--resume"],
     "does not resume"),
    (["report", "--threshold", "0.4", "--method", "lsh", "--field-weights", "name=2"],
     "--field-weights applies to --similarity idf only"),
    (["report", "--threshold", "0.4", "--similarity", "idf", "--idf-snapshot", "x.json"],
     "--idf-snapshot signs weighted signatures"),
    (["report", "--threshold", "0.4", "--similarity", "idf", "--method", "lsh", "--idf-snapshot", "missing.json"],
     "--idf-snapshot must be an IDF snapshot"),
    (["join", "FILE", "--threshold", "0.4", "--similarity", "idf", "--method", "lsh", "--bloom-fp-rate", "0.1"],
     "--bloom-fp-rate and --no-bloom apply to join --method lsh with plain Jaccard only"),
    (["join", "FILE", "--threshold", "0.4", "--similarity", "idf", "--method", "lsh", "--workers", "3"],
     "--workers does not apply to --similarity idf --method lsh"),
])
def test_cli_refusals_are_one_line(solr_url, tmp_path, capsys, monkeypatch, argv, message):
    from neardup_solr.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "FILE").write_text("1\tsome text\n")
    code = main([*argv, "--out", str(tmp_path / "o.tsv"), "--solr-url", solr_url])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert message in err and len(err.splitlines()) == 1
    assert not (tmp_path / "o.tsv").exists()


def _smoke_run(module: str, args: list[str], solr_url: str, out_dir) -> tuple[dict, str]:
    """Run ``python -m benchmarks.<module>`` on small data into ``out_dir``; its JSON report and markdown."""
    import subprocess
    import sys

    cmd = [sys.executable, "-m", f"benchmarks.{module}", *args, "--solr-url", solr_url, "--out-dir", str(out_dir),
           "--machine", "smoke"]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (result,) = out_dir.glob(f"*-{module.replace('_', '-')}-smoke.json")
    return json.loads(result.read_text()), result.with_suffix(".md").read_text()


@pytest.mark.solr
def test_weighted_benchmark_smoke_run(solr_url, tmp_path):
    report, markdown = _smoke_run("weighted", ["--records", "600", "--join-records", "400"], solr_url, tmp_path)
    assert report["report"]["similarities_identical"] and report["join"]["similarities_identical"]
    assert report["report"]["recall"] >= 0.95 and report["report"]["exact_pairs"] > 20
    assert set(report["estimator"]["schemes"]) == {"icws", "boost x2", "boost x4", "boost x8"}
    assert report["recipe"]["restaurants"]["lsh"]["f1"] > 0.9
    assert set(report["recipe"]["persons"]) == {"seed 3", "seed 7"} and "restaurants" in report["recipe"]["sweep"]
    assert markdown.startswith("# weighted MinHash")


@pytest.mark.solr
def test_weighted_join_benchmark_smoke_run(solr_url, tmp_path):
    report, markdown = _smoke_run("weighted_join", ["--records", "400,600", "--repeat", "1"], solr_url, tmp_path)
    assert [j["streamed"] for j in report["joins"]] == [200, 300]
    for join in report["joins"]:
        assert join["similarities_identical"] and join["recall"] >= 0.95 and join["exact_pairs"] > 10
        assert set(join["lsh_phases_s"]) >= {"export", "weights", "sign", "candidates", "verify", "total"}
        # The command-line runs, each its own process with its own peak RSS (not this benchmark's).
        cli = join["cli"]
        assert cli["same_pairs_file"] and cli["exact_s"] > 0 and len(cli["lsh_runs_s"]) == 1
        assert 20 < cli["lsh_peak_rss_mib"] < 1000 and 20 < cli["exact_peak_rss_mib"] < 1000
    assert report["import_s"] > 0 and report["package"].startswith(str(REPO))
    assert markdown.startswith("# IDF join") and "As the command line runs it" in markdown
