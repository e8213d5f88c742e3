"""Results do not depend on chance: not on the order documents were indexed in (so not on which shard or segment
holds them), not on the order pairs arrive in, and not on ``PYTHONHASHSEED`` (the iteration order of sets and
dicts of strings)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap

import pytest

from neardup_solr.pairs.groups import group_pairs
from neardup_solr.solr.documents import WRITE_UP_TOKEN_FIELDS, IndexSettings
from neardup_solr.solr.indexer import Indexer
from neardup_solr.engine.report import report_near_dups
from neardup_solr.io.restaurants import prepare_default
from neardup_solr.solr.searcher import Searcher
from neardup_solr.pairs.similar_pairs import id_sort_key
from neardup_solr.pairs.similar_pairs import SimilarPair, one_to_one

# ---------------------------------------------------------------------------------------------------------------
# Weighted sums and PYTHONHASHSEED (no Solr)
# ---------------------------------------------------------------------------------------------------------------

# Word sets with IDF-like weights, as the threshold search builds them (sets of strings, so their iteration order
# follows the hash seed). For each pair: weighted_jaccard, and for contrast a plain left-to-right sum over the
# union, which is what an order-dependent implementation would compute.
_SEED_SCRIPT = textwrap.dedent("""
    import json, math, random
    from neardup_solr.pairs.weighted import weighted_jaccard

    rng = random.Random(7)
    vocab = [f"w{i}" for i in range(400)]
    weight = {w: math.log(5000 / rng.randint(1, 4999)) for w in vocab}
    out = []
    for _ in range(300):
        a = set(rng.sample(vocab, rng.randint(5, 60)))
        b = set(rng.sample(sorted(a), len(a) // 2)) | set(rng.sample(vocab, rng.randint(0, 40)))
        plain = sum(weight[t] for t in a | b)
        out.append([weighted_jaccard(a, b, weight).hex(), plain.hex()])
    print(json.dumps(out))
""")


def _run_with_seed(seed: str) -> list[list[str]]:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    proc = subprocess.run([sys.executable, "-c", _SEED_SCRIPT], env=env, capture_output=True, text=True, timeout=120,
                          check=True)
    return json.loads(proc.stdout)


def test_weighted_jaccard_is_the_same_to_the_last_bit_under_any_hash_seed():
    runs = {seed: _run_with_seed(seed) for seed in ("1", "2", "3")}
    weighted = {seed: [w for w, _ in rows] for seed, rows in runs.items()}
    assert weighted["1"] == weighted["2"] == weighted["3"]
    # The check has teeth: summing the same sets in their iteration order does give other bits.
    plain = {seed: [p for _, p in rows] for seed, rows in runs.items()}
    assert plain["1"] != plain["2"] or plain["2"] != plain["3"]


# ---------------------------------------------------------------------------------------------------------------
# Python-side orderings (no Solr)
# ---------------------------------------------------------------------------------------------------------------


def test_one_to_one_breaks_equal_similarities_by_id_whatever_the_input_order():
    pairs = [SimilarPair(a, b, s) for a, b, s in [
        ("10", "900", 0.5), ("9", "900", 0.5), ("9", "901", 0.5), ("10", "901", 0.5), ("11", "902", 0.75),
        ("11", "900", 0.75), ("2", "902", 0.5)]]
    expected = one_to_one(pairs)
    # Best first; among equal similarities the smaller id (numerically: 9 before 10) is matched first.
    assert [(p.id, p.neighbor_id) for p in expected] == [("11", "900"), ("2", "902"), ("9", "901")]
    rng = random.Random(3)
    for _ in range(20):
        shuffled = pairs[:]
        rng.shuffle(shuffled)
        assert one_to_one(shuffled) == expected


def test_groups_do_not_depend_on_the_order_of_the_pairs():
    pairs = [("3", "536", 1), ("536", "900", 2), ("7", "8", 0), ("10", "9", 1), ("b", "a", 0), ("900", "4", 1)]
    expected = [g.to_dict() for g in group_pairs(pairs)]
    rng = random.Random(5)
    for _ in range(20):
        shuffled = [tuple(p) if rng.random() < 0.5 else (p[1], p[0], p[2]) for p in pairs]
        rng.shuffle(shuffled)
        assert [g.to_dict() for g in group_pairs(shuffled)] == expected


# ---------------------------------------------------------------------------------------------------------------
# Against Solr: ties at the row cap
# ---------------------------------------------------------------------------------------------------------------

SAME_TEXT = "the very same words in every one of these records"


def _ids(n: int) -> list[str]:
    return [str(i) for i in range(1, n + 1)]


@pytest.mark.solr
def test_candidates_tied_at_the_cap_are_chosen_by_id_not_by_index_order(solr):
    # Thirty documents with one text: every one is a candidate with the same overlap. They are indexed in reverse
    # order, so the internal document order (what Solr falls back on without a sort) is the opposite of id order.
    ids = _ids(30)
    Indexer(solr, IndexSettings(fields=WRITE_UP_TOKEN_FIELDS), batch_size=100, workers=1).index_records(
        [(i, SAME_TEXT) for i in reversed(ids)])
    searcher = Searcher(solr)
    found = searcher.find_near_dups_of_text(SAME_TEXT, rows=5)
    # Solr cuts at the first five ids in its own (string) order; the client then orders them by value.
    assert [m.id for m in found] == sorted(sorted(ids)[:5], key=id_sort_key) == ["1", "10", "11", "12", "13"]
    assert len({m.score for m in found}) == 1
    # A stored document takes one of the rows itself and is then dropped.
    assert [m.id for m in searcher.find_near_dups("12", rows=5)] == ["1", "10", "11", "13"]
    assert [m.id for m in searcher.find_near_dups("12", rows=5, mode="minhash")] == ["1", "10", "11", "13"]
    assert [m.id for m in searcher.find_near_dups("12", rows=5, mode="lsh")] == ["1", "10", "11", "13"]


@pytest.mark.solr
def test_a_capped_report_does_not_depend_on_the_indexing_order(solr, tmp_path):
    # Groups of equal texts larger than the cap, plus near copies: the report keeps the same candidates whatever
    # order the documents were indexed in (on a cluster: whichever shard and segment they landed in).
    records = []
    for group in range(6):
        base = f"record group {group} holds these words about street {group * 7} and city {group % 3}"
        for copy in range(7):
            text = base if copy % 2 else f"{base} copy"
            records.append((str(group * 10 + copy + 1), text))
    files = []
    for order in ("forward", "reverse", "shuffled"):
        solr.delete_all()
        items = records[:] if order == "forward" else records[::-1]
        if order == "shuffled":
            random.Random(11).shuffle(items)
        Indexer(solr, batch_size=7, workers=1).index_records(items)
        out = tmp_path / f"report-{order}.tsv"
        report_near_dups(Searcher(solr), out, rows=3, max_edit_distance=None, first_word_filter=False)
        files.append(out.read_bytes())
    assert files[0] == files[1] == files[2]
    assert files[0].count(b"\n") > 20


@pytest.mark.solr
@pytest.mark.slow
def test_idf_threshold_report_is_the_same_under_two_hash_seeds(solr_url, tmp_path):
    # The whole command, twice, in processes with different hash seeds: the same bytes (many IDF similarities tie
    # at equal values in the restaurant data, so the order of equal lines is tested too).
    addresses = tmp_path / "addresses.txt"
    prepare_default(addresses)
    outputs = []
    for seed in ("1", "2"):
        env = {**os.environ, "SOLR_URL": solr_url, "PYTHONHASHSEED": seed}
        cli = [sys.executable, "-m", "neardup_solr.cli"]
        if seed == "1":
            subprocess.run(cli + ["index", str(addresses), "--clear-all", "-q"], env=env, check=True,
                           capture_output=True, timeout=300)
        out = tmp_path / f"idf-{seed}.tsv"
        subprocess.run(cli + ["report", "--threshold", "0.4", "--similarity", "idf", "--out", str(out), "--workers",
                              "2", "-q"], env=env, check=True, capture_output=True, timeout=600)
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]
    lines = [row for row in outputs[0].decode().splitlines() if not row.startswith("#")]
    assert len(lines) == 150
    sims = [line.split("\t")[2] for line in lines]
    assert len(sims) > len(set(sims))  # equal similarities do occur
