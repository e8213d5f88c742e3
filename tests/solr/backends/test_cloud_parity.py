"""One core and a SolrCloud collection give the same answers, byte for byte (issue 10, item 3).

The module compares two Solrs, whatever ``NEARDUP_TEST_BACKEND`` says: a single core of its own, and the session's
local SolrCloud (``shared_cloud``: 2 nodes holding a collection of 2 shards x 1 replica; documents are spread
over the shards by the hash of their id, so every lookup is a distributed query whose answer the coordinator
merges). Both get the same inputs through the real command line, each in its own directory with the same
relative file names, and every output is compared: pair files, groups, keep lists, rejects, the settings
stored in the index, the stored documents, and what the commands print (with times and the Solr URL masked).

The two sides also run with different ``PYTHONHASHSEED`` values, so any output that depended on the iteration
order of a set or a dict of strings would differ here too.

Data: the packaged restaurant guides (the README's worked example, every mode) and a generated corpus of 8,000
documents with planted near-duplicate clusters (whole-collection dedup, and capped LSH lookups where whole
clusters tie at the row cap). On this project's 2-core machine the module takes about 1 min 52 s with the
suite's C1-only JVMs (``NEARDUP_JAVA_OPTIONS`` in conftest.py), 3 min 3 s with C2 as well.
Freshly started JVMs answer their first thousands of lookups 2-4 times slower than warm ones (``-s`` prints each
command's time).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from benchmarks.corpus import generate
from neardup_solr.solr.backends.local import LocalSolr
from neardup_solr.solr.documents import SETTINGS_DOC_ID
from neardup_solr.io.restaurants import FODORS_COUNT, prepare_default, read_addresses
from neardup_solr.engine.report import iter_documents
from neardup_solr.solr.searcher import Searcher, cursor_docs
from neardup_solr.pairs.similar_pairs import id_sort_key
from neardup_solr.solr.client import SolrClient

pytestmark = [pytest.mark.solr, pytest.mark.slow]

CLI = [sys.executable, "-m", "neardup_solr.cli"]
CORPUS_DOCS = 8_000
# The corpus is indexed in two runs: the first is killed right after its first checkpoint (a hard commit every
# 2,000 documents), the second resumes from it.
CORPUS_COMMIT_EVERY = 2_000
REST = CORPUS_DOCS - CORPUS_COMMIT_EVERY  # the lines the resumed run sends
# Capped lookups on the corpus, for the documents up to this id (the first 1,000).
CORPUS_CAPPED_END = "d0001000"

# Records the indexer must reject (no id, no words), mixed into the Fodor's file: their rejects must match too.
DIRTY_LINES = ["9001 ", "9002 !!! ... ???", " starts with a space so it has no id", "9003 \t "]


@dataclass
class Side:
    """One backend: its Solr, a work directory holding its copy of the inputs, and what its commands printed."""

    name: str
    url: str
    workdir: Path
    hashseed: str
    printed: dict[str, str] = field(default_factory=dict)
    extra: dict = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    def env(self) -> dict:
        env = {**os.environ, "SOLR_URL": self.url, "PYTHONHASHSEED": self.hashseed}
        env.pop("NEARDUP_TEST_BACKEND", None)
        return env

    def run(self, label: str, *args: str, codes=(0,)) -> str:
        started = time.monotonic()
        proc = subprocess.run(CLI + list(args), cwd=self.workdir, env=self.env(), capture_output=True, text=True,
                              timeout=900)
        assert proc.returncode in codes, f"{self.name}: {' '.join(args)} exited {proc.returncode}\n{proc.stderr}"
        self.printed[label] = self.mask(proc.stdout)
        self.seconds[label] = time.monotonic() - started
        return proc.stdout

    def mask(self, text: str) -> str:
        """What a command prints, without what may differ between two correct runs: the URL and the timings."""
        text = text.replace(self.url, "<solr>")
        text = re.sub(r"\b\d+(?:\.\d+)? s\b", "<t> s", text)
        text = re.sub(r"[\d,.]+ MB/s", "<r> MB/s", text)
        return re.sub(r"[\d,.]+ docs/s", "<r> docs/s", text)

    def file(self, name: str) -> bytes:
        return (self.workdir / name).read_bytes()


@pytest.fixture(scope="module")
def sides(shared_cloud):
    """A single core (its own, on a free port with a throwaway data dir) and the session's 2-node, 2-shard
    SolrCloud (``shared_cloud``), its collection emptied first."""
    dirs = [Path(tempfile.mkdtemp(prefix=f"neardup-parity-{name}-")) for name in ("core", "cloud")]
    core = LocalSolr(port=0, data_dir=dirs[0] / "solr")
    with SolrClient(shared_cloud.core_url) as cloud:
        cloud.delete_all()
    try:
        t0 = time.monotonic()
        core.start()
        print(f"LocalSolr started in {time.monotonic() - t0:.1f} s")
        yield [Side("core", core.core_url, dirs[0] / "work", "1"),
               Side("cloud", shared_cloud.core_url, dirs[1] / "work", "2")]
    finally:
        core.stop()
        for d in dirs:
            shutil.rmtree(d, ignore_errors=True)


def _both(sides: list[Side], job) -> None:
    """``job(side)`` for both sides at once: while a distributed lookup waits for its shards, the other side's
    commands use the CPU (measured on warm Solrs: 45 s for the restaurant commands, against 56 s one after the
    other)."""
    with ThreadPoolExecutor(max_workers=len(sides)) as pool:
        for future in [pool.submit(job, side) for side in sides]:
            future.result()


def _stored(url: str, fields: str) -> list[dict]:
    client = SolrClient(url)
    docs = cursor_docs(client, [("q", "*:*"), ("sort", "id asc"), ("fl", fields)], 1000)
    return [d for d in docs if d["id"] != SETTINGS_DOC_ID]


def _settings_doc(url: str) -> str:
    return SolrClient(url).get_by_ids([SETTINGS_DOC_ID], "content")[0]["content"]


# ---------------------------------------------------------------------------------------------------------------
# The restaurant guides: the README's worked example, every command
# ---------------------------------------------------------------------------------------------------------------

RESTAURANT_FILES = [
    "fodors.txt.rejects.jsonl",
    "rep-shingles.tsv", "rep-minhash.tsv", "rep-lsh.tsv", "rep-range.tsv",
    "t05.tsv", "t05-lsh.tsv", "idf.tsv", "join.tsv", "groups-longest.jsonl", "groups-idf.jsonl", "keep-idf.txt",
]


def _restaurant_commands(side: Side) -> None:
    t0 = time.monotonic()
    # Every write-up mode is run below, minhash too: its tokens are opt-in.
    side.run("index fodors", "index", "fodors.txt", "--dataset", "fodors", "--clear-all", "--lsh-threshold", "0.5",
             "--fields", "shingles,minhash,lsh,words", "-q", codes=(1,))  # 1: some records were rejected
    side.run("index zagats", "index", "zagats.txt", "--dataset", "zagats", "-q")
    side.run("verify", "verify", "zagats.txt")
    for label, args in [
        ("near-dups 3", ["3"]),
        ("near-dups 3 minhash", ["3", "--mode", "minhash", "--num-hashes", "20"]),
        ("near-dups 3 lsh", ["3", "--mode", "lsh", "--rows", "50", "--no-first-word-filter"]),
        ("near-dups text json", ["--text", "Art's Deli 12224 Ventura Blvd. Studio City", "--json",
                                 "--max-edit-distance", "none", "--no-first-word-filter"]),
        ("near-dups share", ["--text", "Arnie Morton's of Chicago 435 S. La Cienega Blvd.", "--min-share", "0.3"]),
    ]:
        side.run(label, "near-dups", *args)
    # The write-up's settings (rows 10, first-word filter) cap every lookup: where candidates tie at the cap the
    # id decides, not the shard that holds them.
    side.run("report shingles", "report", "--writeup-ranking", "--out", "rep-shingles.tsv", "--workers", "2", "-q")
    side.run("report minhash", "report", "--writeup-ranking", "--mode", "minhash", "--num-hashes", "20", "--out",
             "rep-minhash.tsv", "--workers", "2", "-q")
    side.run("report lsh", "report", "--writeup-ranking", "--mode", "lsh", "--rows", "50", "--no-first-word-filter",
             "--out", "rep-lsh.tsv", "--workers", "2", "-q")
    side.run("report range", "report", "--writeup-ranking", "--start-id", "9", "--end-id", "120", "--rows", "3",
             "--max-edit-distance", "none", "--no-first-word-filter", "--out", "rep-range.tsv", "-q")
    side.run("collection threshold", "report", "--out", "t-collection.tsv", "-q")
    side.run("threshold", "report", "--threshold", "0.5", "--out", "t05.tsv", "--workers", "2", "-q")
    side.run("threshold lsh", "report", "--threshold", "0.5", "--method", "lsh", "--out", "t05-lsh.tsv", "-q")
    side.run("threshold idf", "report", "--threshold", "0.4", "--similarity", "idf", "--out", "idf.tsv",
             "--workers", "2", "-q")
    side.run("join", "join", "fodors-stream.txt", "--threshold", "0.4", "--similarity", "idf", "--indexed-dataset",
             "zagats", "--out", "join.tsv", "-q")
    side.run("groups longest", "groups", "rep-lsh.tsv", "--out", "groups-longest.jsonl", "--representative",
             "longest")
    side.run("groups idf", "groups", "idf.tsv", "--out", "groups-idf.jsonl", "--keep", "keep-idf.txt",
             "--with-singletons")
    side.run("tune", "tune", "--threshold", "0.8", "--num-hashes", "128", "--min-recall", "0.95")
    side.extra["seconds"] = time.monotonic() - t0


@pytest.fixture(scope="module")
def restaurants(sides, tmp_path_factory):
    inputs = tmp_path_factory.mktemp("restaurant-inputs")
    prepare_default(inputs / "addresses.txt")
    records = read_addresses(inputs / "addresses.txt")
    fodors = [f"{i} {t}" for i, t in records.items() if int(i) <= FODORS_COUNT]
    zagats = [f"{i} {t}" for i, t in records.items() if int(i) > FODORS_COUNT]
    # Bad records in the middle and at the end of the Fodor's file.
    (inputs / "fodors.txt").write_text("\n".join(fodors[:200] + DIRTY_LINES[:2] + fodors[200:] + DIRTY_LINES[2:])
                                       + "\n", encoding="utf-8")
    (inputs / "zagats.txt").write_text("\n".join(zagats) + "\n", encoding="utf-8")
    (inputs / "fodors-stream.txt").write_text("\n".join(fodors) + "\n", encoding="utf-8")
    for side in sides:
        shutil.copytree(inputs, side.workdir, dirs_exist_ok=True)
    _both(sides, _restaurant_commands)
    for side in sides:  # shown with -s: where the module's time goes
        print(side.name, {k: round(v, 1) for k, v in side.seconds.items()})
    sides[0].extra["restaurant ties"] = _ties_at_the_cap(sides[0].url, "shingles", 3, "9", "120")
    return sides


def test_restaurant_files_are_identical(restaurants):
    core, cloud = restaurants
    for name in RESTAURANT_FILES:
        assert core.file(name) == cloud.file(name), name


def test_restaurant_results_are_the_documented_ones(restaurants):
    # Identical and right: the README's numbers, so that two equally wrong answers cannot pass.
    core, _ = restaurants
    pairs = {name: sum(1 for line in core.file(name).decode().splitlines() if not line.startswith("#"))
             for name in RESTAURANT_FILES if name.endswith(".tsv")}
    assert pairs["rep-shingles.tsv"] == 67 and pairs["rep-minhash.tsv"] == 67 and pairs["rep-lsh.tsv"] == 135
    assert pairs["t05.tsv"] == pairs["t05-lsh.tsv"] == 89
    assert pairs["idf.tsv"] == 150 and pairs["join.tsv"] == 120
    assert pairs["rep-range.tsv"] > 0
    rejects = [json.loads(line) for line in core.file("fodors.txt.rejects.jsonl").decode().splitlines()]
    assert [(r["source"], r["line"]) for r in rejects] == [("fodors.txt", 201), ("fodors.txt", 202),
                                                           ("fodors.txt", 536), ("fodors.txt", 537)]
    assert not any((side.workdir / "zagats.txt.rejects.jsonl").exists() for side in restaurants)


@pytest.mark.parametrize("label", [
    "index fodors", "index zagats", "verify", "near-dups 3", "near-dups 3 minhash", "near-dups 3 lsh",
    "near-dups text json", "near-dups share", "report shingles", "report minhash", "report lsh", "report range",
    "threshold", "threshold lsh", "threshold idf", "join", "groups longest", "groups idf", "tune",
])
def test_restaurant_commands_print_the_same(restaurants, label):
    core, cloud = restaurants
    assert core.printed[label] == cloud.printed[label]
    assert core.printed[label].strip()


def test_restaurant_index_holds_the_same(restaurants):
    core, cloud = restaurants
    assert _settings_doc(core.url) == _settings_doc(cloud.url)
    fields = "id,content,md5_hash,num_words,first_word,num_shingles,dataset,fields_json,minhash_sig"
    docs = _stored(core.url, fields)
    assert len(docs) == 864
    assert docs == _stored(cloud.url, fields)


# ---------------------------------------------------------------------------------------------------------------
# A generated corpus of 8,000 documents: checkpoint and resume, whole-collection dedup, capped LSH lookups
# ---------------------------------------------------------------------------------------------------------------


def _checkpoint_then_resume(side: Side) -> None:
    checkpoint = side.workdir / "docs.jsonl.neardup-checkpoint.json"
    args = ["index", "docs.jsonl", "--fields", "lsh", "--commit-every", str(CORPUS_COMMIT_EVERY), "--batch-size",
            "500", "--workers", "1", "-q"]
    proc = subprocess.Popen(CLI + args + ["--clear-all"], cwd=side.workdir, env=side.env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    try:
        while not checkpoint.exists():
            assert proc.poll() is None, f"{side.name}: index ended before its first checkpoint: {proc.communicate()}"
            assert time.monotonic() < deadline, f"{side.name}: no checkpoint after 300 s"
            time.sleep(0.01)
        # Killed without warning right after the first hard commit: the next one is 2,000 documents away.
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
        proc.stdout.close()
        proc.stderr.close()
    side.extra["checkpoint"] = json.loads(checkpoint.read_text())
    side.run("resume", *args, "--resume")
    side.extra["checkpoint_after"] = checkpoint.exists()


def _corpus_commands(side: Side) -> None:
    t0 = time.monotonic()
    _checkpoint_then_resume(side)
    side.run("dedup", "report", "--threshold", "0.8", "--method", "lsh", "--out", "dedup-08.tsv", "-q")
    # One candidate per lookup (the query document takes the other row): wherever the two best candidates share
    # as many bands, the tie-break alone decides which is reported.
    side.run("lsh rows 2", "report", "--writeup-ranking", "--mode", "lsh", "--rows", "2", "--max-edit-distance", "none",
             "--no-first-word-filter", "--start-id", "d0000001", "--end-id", CORPUS_CAPPED_END, "--out",
             "lsh-rows2.tsv", "--workers", "2", "-q")
    side.run("groups corpus", "groups", "dedup-08.tsv", "--out", "groups-08.jsonl", "--keep", "keep-08.txt")
    side.extra["seconds"] = time.monotonic() - t0


@pytest.fixture(scope="module")
def corpus(sides, tmp_path_factory):
    inputs = tmp_path_factory.mktemp("corpus")
    generate(CORPUS_DOCS, 11, inputs)
    for side in sides:
        side.workdir.mkdir(parents=True, exist_ok=True)
        shutil.copy2(inputs / "docs.jsonl", side.workdir / "docs.jsonl")  # copy2: the checkpoint checks mtime
    _both(sides, _corpus_commands)
    for side in sides:
        print(side.name, {k: round(v, 1) for k, v in side.seconds.items()})
    sides[0].extra["corpus ties"] = _ties_at_the_cap(sides[0].url, "lsh", 2, "d0000001", CORPUS_CAPPED_END)
    return sides


def test_corpus_checkpoint_and_resume(corpus):
    core, cloud = corpus
    for side in corpus:
        mark = side.extra["checkpoint"]
        # Only lines that a hard commit made durable: the first commit, 2,000 documents in.
        assert mark["line"] == CORPUS_COMMIT_EVERY, (side.name, mark)
        assert mark["size"] == (side.workdir / "docs.jsonl").stat().st_size
        assert not side.extra["checkpoint_after"]  # a completed run leaves no checkpoint
        # The checkpointed lines were checked in the index and skipped; the others were sent and checked.
        assert f"verified {REST} documents: all in the index as expected" in side.printed["resume"]
    assert {k: v for k, v in core.extra["checkpoint"].items() if k != "source"} == \
        {k: v for k, v in cloud.extra["checkpoint"].items() if k != "source"}
    assert core.printed["resume"] == cloud.printed["resume"]


def test_corpus_resume_skips_the_checkpointed_lines(corpus):
    for side in corpus:
        assert (f"read {REST}, indexed {REST}, rejected 0, skipped (already indexed) {CORPUS_COMMIT_EVERY}"
                in side.printed["resume"])


@pytest.mark.parametrize("name, at_least", [("dedup-08.tsv", 400), ("lsh-rows2.tsv", 40), ("groups-08.jsonl", 200),
                                            ("keep-08.txt", 200)])
def test_corpus_files_are_identical(corpus, name, at_least):
    core, cloud = corpus
    assert core.file(name) == cloud.file(name)
    assert core.file(name).count(b"\n") >= at_least


def test_corpus_commands_print_the_same(corpus):
    core, cloud = corpus
    for label in ("dedup", "lsh rows 2", "groups corpus"):
        assert core.printed[label] == cloud.printed[label], label


def test_corpus_index_holds_the_same(corpus):
    core, cloud = corpus
    assert _settings_doc(core.url) == _settings_doc(cloud.url)
    fields = "id,md5_hash,num_words,num_shingles,minhash_sig"
    docs = _stored(core.url, fields)
    assert len(docs) == CORPUS_DOCS
    assert docs == _stored(cloud.url, fields)


def _ties_at_the_cap(url: str, mode: str, rows: int, start_id: str, end_id: str) -> int:
    """How many lookups of documents start_id..end_id have their cap fall inside a run of equal scores (asked
    with more rows than the cap): only there does the order of tied candidates change the answer."""
    searcher = Searcher(SolrClient(url))
    lo, hi = id_sort_key(start_id), id_sort_key(end_id)
    ties = 0
    for doc in iter_documents(searcher):
        if not lo <= id_sort_key(doc.id) <= hi:
            continue
        query = searcher.prepare(doc.content, doc.id)
        params = searcher.candidate_params(query, mode, rows + 5, first_word_filter=False)
        scores = [d["score"] for d in searcher.client.select(params)["response"]["docs"]]
        ties += len(scores) > rows and scores[rows - 1] == scores[rows]
    return ties


def test_the_capped_lookups_did_cut_through_ties(restaurants, corpus):
    # The capped reports test the tie-break only if their caps do fall inside runs of equal scores. Each fixture
    # counts them while its data is in the index (the corpus replaces the restaurants).
    core = corpus[0]
    assert core.extra["restaurant ties"] >= 20
    assert core.extra["corpus ties"] >= 3


# ---------------------------------------------------------------------------------------------------------------
# Reloading one data set (index --dataset NAME --clear)
# ---------------------------------------------------------------------------------------------------------------


def test_reloading_one_data_set_clears_it_on_every_shard(corpus, tmp_path):
    # Last in the module: it adds a data set to the corpus collection.
    first = tmp_path / "reload-1.txt"
    first.write_text("".join(f"r{i} an old record of the reloaded side number {i}\n" for i in range(12)))
    second = tmp_path / "reload-2.txt"
    second.write_text("r100 the only record after the reload\n")
    for side in corpus:
        side.run("reload 1", "index", str(first), "--dataset", "reload", "-q")
        side.run("reload 2", "index", str(second), "--dataset", "reload", "--clear", "-q")
    core, cloud = corpus
    assert core.printed["reload 2"] == cloud.printed["reload 2"]
    ids = [[d["id"] for d in _stored(side.url, "id,dataset") if d.get("dataset") == "reload"] for side in corpus]
    assert ids[0] == ["r100"]
    assert ids[1] == ids[0]


# ---------------------------------------------------------------------------------------------------------------
# check_and_add: one update request on the core, claim then document on the cloud; the same decisions
# ---------------------------------------------------------------------------------------------------------------

CHECK_BASE = ("zebra quartz violin harbour lantern meadow copper falcon orchard riddle velvet canyon thistle "
              "beacon marble willow ember tundra saffron glacier")


def test_check_and_add_decides_the_same_on_a_core_and_a_cloud(sides):
    """Adds not yet committed (commitWithin far away) are seen by the next check on both layouts; on the cloud the
    claim and the document go to their own shard leaders, one request each. Identical texts sent by eight threads
    at once are added once."""
    from neardup_solr.engine.online import check_and_add

    texts = [("k1", CHECK_BASE), ("k2", CHECK_BASE.replace("glacier", "glaciers")), ("k3", CHECK_BASE),
             ("k4", "an unrelated sentence about tide tables and the ferry timetable for the islands in winter")]
    decisions = {}
    for side in sides:
        client = SolrClient(side.url)
        assert client.is_single_core() == (side.name == "core")
        decisions[side.name] = [(r.status, [m.id for m in r.matches]) for r in
                                (check_and_add(client, key, text, 0.8, commit_within_ms=600_000)
                                 for key, text in texts)]
        twin = "the same words sent by eight threads at the same moment to one collection " + side.name
        with ThreadPoolExecutor(8) as pool:
            results = list(pool.map(lambda n: check_and_add(SolrClient(side.url), f"t{n}", twin, 0.8,
                                                            commit_within_ms=600_000), range(8)))
        assert sum(r.added for r in results) == 1, side.name
        client.commit()
    assert decisions["core"] == decisions["cloud"] == [
        ("added", []), ("duplicate", ["k1"]), ("duplicate", ["k1"]), ("added", [])]
