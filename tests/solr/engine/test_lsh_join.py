"""The Bloom filter (no false negatives, the rate it was sized for) and the LSH join that uses it against a
real Solr: the same pairs with and without the filter, hopeless records skipped and counted."""

from __future__ import annotations

import random
import re

import numpy as np
import pytest

from neardup_solr import cli
from neardup_solr.pairs.bloom import BloomFilter
from neardup_solr.solr.documents import IndexSettings
from neardup_solr.errors import InvalidParameterError
from neardup_solr.solr.indexer import Indexer
from neardup_solr.engine.lsh_join import build_band_bloom, lsh_join
from neardup_solr.solr.searcher import Searcher


def test_bloom_has_no_false_negatives_and_about_its_rate():
    rng = np.random.default_rng(0)
    keys = rng.integers(0, 2**63, size=50_000, dtype=np.uint64)
    bloom = BloomFilter(keys.size, 0.01)
    bloom.add(keys)
    assert bloom.contains(keys).all()
    rate = bloom.contains(rng.integers(0, 2**63, size=200_000, dtype=np.uint64)).mean()
    assert 0.005 < rate < 0.02 and abs(bloom.expected_fp_rate() - 0.01) < 0.002
    assert bloom.size_bytes < 1.3 * keys.size  # ~1.2 bytes a key at 1%
    assert not BloomFilter(10, 0.01).contains(keys[:100]).any()  # empty: nothing may be there


@pytest.mark.parametrize("bad", [0.0, 0.6, float("nan"), -1])
def test_bloom_rate_out_of_range_names_the_parameter(bad):
    with pytest.raises(InvalidParameterError, match="bloom_fp_rate must be"):
        BloomFilter(100, bad)


def _texts(rng: random.Random, n: int, prefix: str) -> dict[str, str]:
    vocab = [f"w{i}" for i in range(5000)]
    return {f"{prefix}{i}": " ".join(rng.choices(vocab, k=rng.randint(20, 60))) for i in range(n)}


def _edit(rng: random.Random, text: str, share: float) -> str:
    words = text.split()
    for _ in range(int(len(words) * share)):
        words[rng.randrange(len(words))] = f"x{rng.randrange(10**6)}"
    return " ".join(words)


@pytest.mark.solr
def test_lsh_join_skips_records_without_a_band_on_the_indexed_side(solr, tmp_path, capsys):
    rng = random.Random(3)
    indexed = _texts(rng, 200, "i")
    Indexer(solr, IndexSettings(num_hashes=64, lsh_threshold=0.7), dataset="catalogue").index_records(indexed.items())
    Indexer(solr, IndexSettings(num_hashes=64, lsh_threshold=0.7), dataset="other").index_records(
        _texts(rng, 50, "o").items())
    # 40 close copies of indexed records among 400 unrelated ones, and one record without a word.
    streamed = [(f"c{i}", _edit(rng, indexed[f"i{i}"], 0.05)) for i in range(40)]
    streamed += list(_texts(random.Random(99), 400, "n").items()) + [("blank", "...")]
    searcher = Searcher(solr)
    bloom = build_band_bloom(searcher, "catalogue")
    assert bloom.count == 200 * searcher.settings.lsh_params().bands

    with_bloom, summary = lsh_join(searcher, streamed, 0.7, "catalogue")
    without, plain = lsh_join(searcher, streamed, 0.7, "catalogue", bloom=False)
    assert with_bloom == without
    found = {p.id: p.neighbor_id for p in with_bloom}
    assert len(found) >= 36 and all(found[f"c{i}"] == f"i{i}" for i in range(40) if f"c{i}" in found)
    assert all(p.similarity >= 0.7 for p in with_bloom)
    assert summary.records == 441 and summary.no_shingles == 1
    assert summary.skipped >= 390 and summary.queried == 440 - summary.skipped
    assert plain.skipped == 0 and plain.queried == 440
    assert "skipped by the Bloom filter" in summary.format()

    # The command line: join --method lsh reports the skipped records in its summary.
    src = tmp_path / "streamed.tsv"
    src.write_text("id\ttext\n" + "".join(f"{i}\t{t}\n" for i, t in streamed if i != "blank"))
    out = tmp_path / "pairs.tsv"
    assert cli.main(["join", str(src), "--out", str(out), "--method", "lsh", "--threshold", "0.7",
                     "--indexed-dataset", "catalogue", "--solr-url", solr.url, "-q"]) == 0
    lines = [row for row in out.read_text().splitlines() if not row.startswith("#")]
    assert len(lines) == len(with_bloom)
    said = re.search(r"(\d+) skipped by the Bloom filter", capsys.readouterr().out)
    assert said and int(said.group(1)) >= 390
