"""Network faults on a SolrCloud whose ZooKeeper and three nodes each run in their own network namespace
(tests/netlab.py; needs root and iproute2). Kill -9 is the easy fault; here links are cut while the client works:

- the leader of a shard cut off from ZooKeeper, its peers and the client during indexing, then healed;
- the client cut off from the node it writes to;
- 200 ms latency and 10% loss on one node's link (netem where the kernel has it, else the test relay's own);
- a node cut off during a whole-collection report, and during check-and-add from two processes (identical texts
  by the exact claim, near duplicates by the strict band locks).

After each: every acknowledged document is in the collection (the end-of-run check, then ``verify`` and the
documents against a clean run), the report's pairs are a clean run's, check-and-add added one of each identical
text, and every command either finished or stopped with a resumable Solr error (exit 3) that a re-run completes.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import netlab
from faultclient import HookedClient
from indexcheck import equals_clean_run

from neardup_solr.engine.collection import dedupe_collection
from neardup_solr.errors import IndexIncomplete, SolrUnavailableError
from neardup_solr.solr.client import RetryPolicy, SolrClient
from neardup_solr.solr.documents import IndexSettings
from neardup_solr.solr.indexer import Indexer
from neardup_solr.errors import IndexingInterrupted
from neardup_solr.solr.verify import verify_file

WHY_NOT = netlab.usable()
pytestmark = [pytest.mark.solr, pytest.mark.slow,
              pytest.mark.skipif(WHY_NOT is not None, reason=f"partition tests: {WHY_NOT}")]


@pytest.fixture(scope="module")
def cloud(tmp_path_factory):
    lab = netlab.NetLab(["zk", "n1", "n2", "n3"]).setup()
    try:
        cluster = netlab.NetCloud(lab, tmp_path_factory.mktemp("netcloud"))
        cluster.start()
        cluster.create_collection(shards=2, replicas=2)
        yield cluster
    finally:
        lab.teardown()


def _records(path: Path, n: int, seed: int = 0) -> Path:
    # Every 10th record is a near copy of the one before it: the report has pairs to lose or invent.
    lines = []
    for i in range(1, n + 1):
        base = i - 1 if i % 10 == 0 else i
        lines.append(f"{i} record {base} about topic {base % 97} with words w{base % 13} w{base % 7} and w{base % 5}"
                     + (" again" if i % 10 == 0 else "") + "\n")
    path.write_text("".join(lines))
    return path


def _fresh(cloud) -> SolrClient:
    client = SolrClient(cloud.collection_urls(), retry=RetryPolicy(max_wait=120))
    client.delete_all()
    return client


def _index_through(client: SolrClient, path: Path, cloud) -> str:
    """Index ``path``; a run stopped by the fault (Solr away, or acknowledged documents found missing by the
    end-of-run check) is resumed once the cluster is whole again. Returns how the first run ended."""
    try:
        summary = Indexer(client, batch_size=200, workers=2, commit_every=600).index_file(path)
        assert summary.verification.ok and summary.rejected == 0
        return "complete"
    except (IndexingInterrupted, IndexIncomplete) as stopped:
        assert "--resume" in stopped.summary.format() or isinstance(stopped, IndexIncomplete)
        ended = "incomplete" if isinstance(stopped, IndexIncomplete) else "interrupted"
    cloud.wait_for_active()
    resumed = Indexer(SolrClient(cloud.collection_urls(), retry=RetryPolicy(max_wait=120)),
                      batch_size=200).index_file(path, resume=True)
    assert resumed.verification.ok
    return ended


def _assert_whole(cloud, path: Path) -> None:
    cloud.wait_for_active()
    client = SolrClient(cloud.collection_urls(), retry=RetryPolicy(max_wait=120))
    client.commit()
    assert equals_clean_run(client, path)
    result = verify_file(client, path)
    assert result.ok, result.format()


@pytest.mark.parametrize("min_replicas", [1, 2])
def test_a_leader_cut_off_during_indexing_is_ridden_out(cloud, tmp_path, min_replicas):
    """Measured here with min_replicas=1: Solr acknowledged about 50 of 3,000 documents on the cut-off leader
    alone, and lost them when it rejoined under the new leader; the end-of-run check found them missing
    (IndexIncomplete) and --resume sent them again. With min_replicas=2 the rf=1 acknowledgements are sent again
    until two replicas hold them, but that is not a guarantee either: in 3 of 9 runs here (one in CI, two by hand) Solr
    still lost about 60 documents of a batch it had acknowledged with rf=2 just before the cut. What holds in
    every run is the tool's own promise: the end-of-run check finds every lost document and --resume restores
    it, so the collection ends whole."""
    path = _records(tmp_path / "records.txt", 3000)
    _fresh(cloud)
    victim = cloud.leader_node("shard1")
    healed = threading.Timer(25.0, cloud.lab.heal, args=(victim,))

    def cut():
        cloud.lab.cut(victim)
        healed.start()

    client = HookedClient(cloud.collection_urls(), cut, at=4, min_replicas=min_replicas,
                           retry=RetryPolicy(max_wait=120, seed=4))
    try:
        ended = _index_through(client, path, cloud)
    finally:
        healed.join()
    assert client.fired.is_set()
    assert ended in ("complete", "interrupted", "incomplete")
    _assert_whole(cloud, path)


def test_the_client_cut_off_from_its_node_moves_to_another(cloud, tmp_path):
    path = _records(tmp_path / "records.txt", 2000)
    _fresh(cloud)
    first = cloud.nodes[0]  # the first URL the client is given: the node it writes to
    # The blackhole drops the open connection's packets: the request in flight ends by the client's timeout (15 s
    # here, 60 s by default, which only made the test wait), then the client moves on.
    client = HookedClient(cloud.collection_urls(), lambda: cloud.lab.block(first), at=3, timeout=15,
                           retry=RetryPolicy(max_wait=60, seed=5))
    try:
        summary = Indexer(client, batch_size=200, workers=2).index_file(path)
    finally:
        cloud.lab.unblock(first)
    assert client.fired.is_set() and client.node_url != cloud.node_url(first)
    assert summary.verification.ok and summary.indexed == 2000
    _assert_whole(cloud, path)


def test_latency_and_loss_on_one_node(cloud, tmp_path):
    """200 ms on every chunk and 10% of connections reset on one node (netem, or the relay where this kernel
    has no netem): the run is slower, and every document is still there."""
    path = _records(tmp_path / "records.txt", 2000)
    _fresh(cloud)
    slow = cloud.nodes[1]
    cloud.impair(slow, delay_ms=200, loss=0.1)
    try:
        _index_through(SolrClient(cloud.collection_urls(), retry=RetryPolicy(max_wait=180)), path, cloud)
    finally:
        cloud.impair(slow)
    _assert_whole(cloud, path)


def test_a_node_cut_off_during_a_report_loses_or_invents_no_pair(cloud, tmp_path):
    path = _records(tmp_path / "records.txt", 3000)
    client = _fresh(cloud)
    assert Indexer(client, batch_size=500, settings=IndexSettings(fields=())).index_file(path).verification.ok
    client.commit()
    clean = [(p.id, p.neighbor_id, p.similarity) for p in dedupe_collection(client, 0.6).pairs]
    assert len(clean) >= 250

    victim = cloud.nodes[1]
    reads = {"n": 0}
    original = SolrClient.select

    def select_then_cut(self, params):
        reads["n"] += 1
        if reads["n"] == 3:
            cloud.lab.cut(victim)
        return original(self, params)

    SolrClient.select = select_then_cut
    try:
        try:
            during = [(p.id, p.neighbor_id, p.similarity)
                      for p in dedupe_collection(SolrClient(cloud.collection_urls(),
                                                            retry=RetryPolicy(max_wait=60)), 0.6, page_size=200).pairs]
        except SolrUnavailableError:
            during = None  # stopped with a Solr error: allowed, as long as the re-run below is whole
    finally:
        SolrClient.select = original
        cloud.lab.heal(victim)
    assert reads["n"] >= 3
    if during is not None:
        assert during == clean
    cloud.wait_for_active()
    again = [(p.id, p.neighbor_id, p.similarity) for p in
             dedupe_collection(SolrClient(cloud.collection_urls(), retry=RetryPolicy(max_wait=60)), 0.6).pairs]
    assert again == clean


# Longer than a node's ZooKeeper session (zkClientTimeout, 15 s in solr-cloud.xml) with room for ZooKeeper to notice,
# so the cluster gives the cut node up during the race: adds then end while it is away, the rest after the heal,
# during its replicas' recovery. (45 s until 6 December, written for Solr's 30 s default, which solr-cloud.xml
# does not use.)
_CUT_SECONDS = float(os.environ.get("NEARDUP_CUT_SECONDS", "25"))

_ADDER = """
import json, sys, time
from neardup_solr.engine.online import check_and_add
from neardup_solr.solr.client import RetryPolicy, SolrClient
# min_replicas=2: a claim only the cut-off leader acknowledged is lost with it when a replica takes over, and
# then the other process's claim would win too; counted with both replicas, it is sent again instead.
client = SolrClient(sys.argv[1], retry=RetryPolicy(max_wait=120), min_replicas=2)
strict = sys.argv[3] == "strict"
out = []
for doc_id, text in json.loads(sys.argv[2]):
    # Strict: near duplicates at the collection's threshold; otherwise identical texts at 0.9.
    added = check_and_add(client, doc_id, text, None if strict else 0.9, strict=strict).added
    out.append([doc_id, added, time.time()])
print(json.dumps(out))
"""


def _race_with_a_node_cut(cloud, work: dict, strict: bool) -> tuple[set, list]:
    """Both sides' texts sent by two processes at once while a node is cut off (then healed); the ids added, and
    each process's stderr."""
    procs = [subprocess.Popen([sys.executable, "-c", _ADDER, cloud.collection_urls(), json.dumps(work[side]),
                               "strict" if strict else "claims"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for side in ("a", "b")]
    victim = cloud.nodes[2]
    # The cut starts 2 s in and lasts _CUT_SECONDS, so the adds meet the cut, the heal and the replicas' recovery.
    # A cut until both processes had finished made the pair of race tests take 190-300 s in the suite; 120 s now.
    when: dict[str, float] = {}

    def at(step: str, act) -> None:
        act(victim)
        when[step] = time.time()

    cut = threading.Timer(2.0, at, args=("cut", cloud.lab.cut))
    heal = threading.Timer(2.0 + _CUT_SECONDS, at, args=("healed", cloud.lab.heal))
    given_up = threading.Event()

    def watch_live_nodes() -> None:
        # The race is meant to meet a node the cluster has given up (its session expired, its leaders replaced),
        # not only an unreachable one: seen from another node while the cut lasts.
        while "healed" not in when and not given_up.is_set():
            try:
                if "cut" in when and not cloud.is_live(victim, asking=cloud.nodes[0]):
                    given_up.set()
            except Exception:  # noqa: BLE001 - a loaded node's slow answer; ask again
                pass
            time.sleep(0.5)

    watcher = threading.Thread(target=watch_live_nodes, daemon=True)
    cut.start()
    heal.start()
    watcher.start()
    try:
        outputs = [proc.communicate(timeout=600) for proc in procs]
    finally:
        cut.join()
        heal.join()
        watcher.join(timeout=60)
        cloud.lab.heal(victim)
    for proc, (out, err) in zip(procs, outputs):
        assert proc.returncode == 0, err[-2000:]
    assert given_up.is_set(), f"the cut node stayed in live_nodes for the whole {_CUT_SECONDS:g} s cut"
    results = [row for out, _ in outputs for row in json.loads(out)]
    finished = sorted(t for _, _, t in results)
    # The node was cut while the processes were still adding (a race over before the cut would test nothing).
    assert "cut" in when and finished[-1] > when["cut"], (when, finished)
    during = sum(when["cut"] <= t < when.get("healed", float("inf")) for t in finished)
    print(f"{len(finished)} adds: {during} ended while the node was cut, {sum(t >= when.get('healed', float('inf')) for t in finished)} after the heal")
    added = {doc_id for doc_id, was_added, _ in results if was_added}
    return added, [err[-3000:] for _, err in outputs]


def test_check_and_add_from_two_processes_with_a_node_cut_adds_one_of_each(cloud, tmp_path):
    client = _fresh(cloud)
    Indexer(client, batch_size=10).index_records([("seed", "a first text so the collection has its settings")])
    texts = [f"shared text number {i} that both processes try to add with some more words" for i in range(40)]
    work = {side: [[f"{side}{i}", t] for i, t in enumerate(texts)] for side in ("a", "b")}
    added, logs = _race_with_a_node_cut(cloud, work, strict=False)
    for i in range(len(texts)):
        # One of each identical text, never both, never none; the processes' logs say how when it fails.
        assert len({f"a{i}", f"b{i}"} & added) == 1, (i, logs)
    cloud.wait_for_active()
    check = SolrClient(cloud.collection_urls(), retry=RetryPolicy(max_wait=60))
    check.commit()
    assert check.count("*:*", ["-dataset:__meta__", "-id:seed"]) >= len(texts)


def test_strict_check_and_add_from_two_processes_with_a_node_cut_admits_one_of_each_near_pair(cloud, tmp_path):
    """Issue 47, point 1 on SolrCloud: near duplicates (not identical: Jaccard 0.93 on word 3-shingles), strict
    band locks, while a node is cut off; of each pair exactly one is admitted. 30 pairs in the suite (each strict
    add waits out the cut's retries); ``NEARDUP_CUT_PAIRS=200`` for the issue's full run."""
    client = _fresh(cloud)
    Indexer(client, batch_size=10).index_records([("seed", "a first text so the collection has its settings")])
    rng = random.Random(47)
    vocabulary = [f"w{n}" for n in range(5_000)]
    pairs = []
    for i in range(int(os.environ.get("NEARDUP_CUT_PAIRS", "30"))):
        words = rng.sample(vocabulary, 30)  # unrelated across pairs: no two pairs share more than chance words
        pairs.append((" ".join(words), " ".join(words[:-1] + ["changed"])))
    work = {"a": [[f"a{i}", a] for i, (a, _) in enumerate(pairs)],
            "b": [[f"b{i}", b] for i, (_, b) in enumerate(pairs)]}
    added, logs = _race_with_a_node_cut(cloud, work, strict=True)
    for i in range(len(pairs)):
        assert len({f"a{i}", f"b{i}"} & added) == 1, (i, logs)
    cloud.wait_for_active()
    check = SolrClient(cloud.collection_urls(), retry=RetryPolicy(max_wait=60))
    check.commit()
    present = {d["id"] for d in check.select([("q", "*:*"), ("fq", "-dataset:__meta__"), ("fl", "id"),
                                                 ("rows", 1000)])["response"]["docs"]}
    assert added <= present  # every admission acknowledged is there
