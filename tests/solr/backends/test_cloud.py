"""The local SolrCloud through the CLI and its Python handle: start, status, create-collection, a node killed
and restarted, stop. One cluster (2 nodes, a 2 x 2 collection) serves the whole module, in file order."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from netutil import free_port, listening_addresses

from neardup_solr.solr.backends.cloud import LocalSolrCloud
from neardup_solr.solr.cluster import admin_call, cluster_status, upload_configset

pytestmark = [pytest.mark.solr, pytest.mark.slow]

BIN_DIR = str(Path(sys.executable).parent)


def _cli(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "neardup_solr.cli", *args], capture_output=True, text=True,
                          timeout=timeout)


def _our_jvms(data_dir: Path) -> list[int]:
    """Processes whose command line names this data dir (ZooKeeper's config, the nodes' homes)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if str(data_dir).encode() in (proc / "cmdline").read_bytes():
                    pids.append(int(proc.name))
            except OSError:
                pass
    return pids


def _listening_ports(pid: int) -> set[int]:
    """Ports of the TCP sockets ``pid`` listens on (its fds' socket inodes matched in /proc/net/tcp*)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            cols = line.split()
            if cols[3] == "0A" and cols[9] in inodes:
                ports.add(int(cols[1].split(":")[1], 16))
    return ports


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("cloud") / "c"
    port = free_port()
    started = _cli("solr", "start", "--cloud", "--nodes", "2", "--shards", "2", "--replicas", "2",
                   "--port", str(port), "--data-dir", str(data_dir))
    assert started.returncode == 0, started.stderr
    cloud = LocalSolrCloud(data_dir=data_dir)
    try:
        yield {"cloud": cloud, "port": port, "data_dir": data_dir, "stdout": started.stdout}
    finally:
        if cloud.exists():
            cloud.stop()


def test_start_prints_the_collection_url_and_status_shows_every_replica_active(cluster):
    port, data_dir = cluster["port"], cluster["data_dir"]
    assert f"http://127.0.0.1:{port}/solr/neardup" in cluster["stdout"]
    assert "2 shards x 2 replicas" in cluster["stdout"]

    status = _cli("solr", "status", "--data-dir", str(data_dir), "--json")
    assert status.returncode == 0, status.stderr
    data = json.loads(status.stdout)
    assert [n["alive"] for n in data["nodes"]] == [True, True]
    assert data["nodes"][0]["port"] == port
    assert [s["name"] for s in data["shards"]] == ["shard1", "shard2"]
    assert data["replicas_total"] == 4 and data["replicas_active"] == 4
    # rf=2 on 2 nodes: each shard has a copy on each node.
    for shard in data["shards"]:
        assert sorted(r["port"] for r in shard["replicas"]) == sorted(n["port"] for n in data["nodes"])

    text = _cli("solr", "status", "--data-dir", str(data_dir))
    assert text.returncode == 0 and "4/4 replicas active" in text.stdout
    assert text.stdout.count(" alive") == 3   # ZooKeeper and both nodes

    again = _cli("solr", "start", "--cloud", "--data-dir", str(data_dir))
    assert again.returncode == 0 and "already running" in again.stdout


def test_every_jvm_exits_on_oom_and_listens_on_loopback_only(cluster):
    cloud = cluster["cloud"]
    state = json.loads(cloud.state_file.read_text())
    for pid in [cloud.zk_pid(), *cloud.node_pids()]:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        assert b"-XX:+ExitOnOutOfMemoryError" in cmdline
    # 2 x 2 replicas may all land on one node after a failover: 1g / 4 = 64 MB of buffer each.
    assert b"-Dsolr.ramBufferSizeMB=64" in Path(f"/proc/{cloud.node_pid(1)}/cmdline").read_bytes().split(b"\0")
    for port in [state["zk"]["port"], *cloud.node_ports()]:
        assert listening_addresses(port) == ["127.0.0.1"]
    # Nothing else listens: no ZooKeeper admin server (8080 on every interface by default), no JMX.
    assert _listening_ports(cloud.zk_pid()) == {state["zk"]["port"]}
    for i in (1, 2):
        assert _listening_ports(cloud.node_pid(i)) == {cloud.node_ports()[i - 1]}


def test_create_collection_is_idempotent_and_refuses_foreign_collections(cluster):
    node2 = cluster["cloud"].node_urls[1]
    created = _cli("solr", "create-collection", "extra", "--shards", "1", "--replicas", "2", "--solr-url", node2)
    assert created.returncode == 0, created.stderr
    assert "collection 'extra' created: 1 shard, 2/2 replicas active" in created.stdout

    again = _cli("solr", "create-collection", "extra", "--shards", "1", "--replicas", "2", "--solr-url", node2 + "/extra")
    assert again.returncode == 0, again.stderr
    assert "already exists with our configset" in again.stdout and "nothing to do" in again.stdout

    # A collection made from another configset is not ours: refused in one line, left as it was.
    upload_configset(node2, "foreign")
    admin_call(node2, "admin/collections", {"action": "CREATE", "name": "theirs", "numShards": 1,
                                         "replicationFactor": 1, "collection.configName": "foreign",
                                         "waitForFinalState": "true"}, "create a foreign collection")
    refused = _cli("solr", "create-collection", "theirs", "--solr-url", node2)
    assert refused.returncode == 2
    assert refused.stderr.strip().count("\n") == 0
    assert "collection 'theirs' already exists with configset 'foreign', not 'neardup'" in refused.stderr

    # A step Solr refuses is named, with Solr's reason.
    bad = _cli("solr", "create-collection", "bad name!", "--solr-url", node2)
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0
    assert "Solr refused to create collection 'bad name!' (HTTP 400)" in bad.stderr

    for name in ("extra", "theirs"):
        admin_call(node2, "admin/collections", {"action": "DELETE", "name": name}, f"delete {name}")


def test_a_killed_node_leaves_every_document_served_and_comes_back(cluster):
    cloud = cluster["cloud"]
    url = cloud.collection_url
    docs = [{"id": str(i), "content": f"document {i}", "first_word": "document"} for i in range(500)]
    requests.post(f"{url}/update", params={"commit": "true"}, json=docs, timeout=60).raise_for_status()

    cloud.kill_node(2)
    assert cloud.node_pid(2) is None
    # Queries through node 1 still see every document: it holds a replica of each shard.
    for _ in range(5):
        res = requests.get(f"{url}/select", params={"q": "*:*", "rows": 0, "wt": "json"}, timeout=60)
        assert res.status_code == 200 and res.json()["response"]["numFound"] == len(docs)

    cloud.start_node(2)
    status = cloud.status()
    assert status["replicas_active"] == 4 and all(n["alive"] for n in status["nodes"])
    reps = cluster_status(cloud.node_urls[1], "neardup")["collections"]["neardup"]["shards"]
    assert all(r["state"] == "active" for shard in reps.values() for r in shard["replicas"].values())


def test_stop_as_printed_leaves_no_jvm_of_ours(cluster):
    data_dir, port = cluster["data_dir"], cluster["port"]
    hint = cluster["stdout"].split("stop with: ", 1)[1].split(")", 1)[0]
    assert hint == f"neardup-solr solr stop --port {port} --data-dir {data_dir.resolve()}"
    env = {**os.environ, "PATH": BIN_DIR + os.pathsep + os.environ.get("PATH", "")}
    stopped = subprocess.run(shlex.split(hint), capture_output=True, text=True, timeout=120, env=env)
    assert stopped.returncode == 0 and "stopped" in stopped.stdout, stopped.stderr
    assert _our_jvms(data_dir) == []
    for p in cluster["cloud"].node_ports():
        assert listening_addresses(p) == []
    assert _cli("solr", "status", "--data-dir", str(data_dir)).returncode == 1
    nothing = _cli("solr", "stop", "--data-dir", str(data_dir))
    assert nothing.returncode == 0 and "nothing to stop" in nothing.stdout
