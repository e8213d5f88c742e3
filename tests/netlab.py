"""A SolrCloud whose ZooKeeper and nodes each live in their own network namespace, joined by a bridge, so that
tests can cut links (issue 26): ``ip netns``, veth pairs and a bridge, as root.

    lab = NetLab(["zk", "n1", "n2", "n3"])       # namespaces and addresses 10.213.K.2, .3, ...
    cloud = NetCloud(lab, workdir)               # ZooKeeper in "zk", Solr nodes in n1..n3
    cloud.start(); cloud.create_collection(shards=2, replicas=2)
    lab.cut("n2"); ...; lab.heal("n2")           # the node's link down: no ZooKeeper, no peers, no client
    lab.block("n1"); ...; lab.unblock("n1")      # only this process (the client) loses its route to n1

The test process stays in the root namespace and is the client; it reaches the namespaces through the
bridge's own address. Solr's embedded Jetty binds the loopback, so each node namespace also runs
``tcp_relay.py`` from its address to that loopback (a cut of the link cuts the relay's traffic too).
Latency and loss come from the kernel's netem qdisc where it exists (:func:`netem_available`), else from the
relay itself (``NetCloud.impair``: each chunk delayed, a share of connections reset).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import requests

from neardup_solr.solr.backends.local import _LAUNCHER_CLASS, LocalSolr, java_command
from neardup_solr.solr.cluster import cluster_status, create_collection, wait_for_active
from neardup_solr.solr.settings import solr_config_dir

HERE = Path(__file__).resolve().parent


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


def usable() -> str | None:
    """Why network namespaces cannot be used here (not root, no ``ip``), or None."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "no 'ip' command (iproute2)"
    probe = f"ndprobe{os.getpid() % 10000}"
    made = _ip("netns", "add", probe, check=False)
    if made.returncode:
        return f"'ip netns add' failed: {made.stderr.strip()}"
    _ip("netns", "del", probe, check=False)
    return None


def netem_available() -> bool:
    """Whether this kernel has the netem qdisc (delay and loss); tried on a scratch namespace's loopback."""
    probe = f"ndnetem{os.getpid() % 10000}"
    if _ip("netns", "add", probe, check=False).returncode:
        return False
    try:
        _ip("-n", probe, "link", "set", "lo", "up", check=False)
        done = subprocess.run(["ip", "netns", "exec", probe, "tc", "qdisc", "add", "dev", "lo", "root", "netem",
                               "delay", "10ms"], capture_output=True, text=True)
        return done.returncode == 0
    finally:
        _ip("netns", "del", probe, check=False)


class NetLab:
    """Namespaces named ``nd<K><name>``, each with one veth into a bridge; addresses 10.213.K.2, .3, ..."""

    def __init__(self, names: list[str]):
        self.key = os.getpid() % 200 + 20
        self.prefix = f"10.213.{self.key}"
        self.bridge = f"ndbr{self.key}"
        self.names = list(names)
        self.address = {name: f"{self.prefix}.{i + 2}" for i, name in enumerate(names)}
        self.procs: list[subprocess.Popen] = []
        self.blocked: set[str] = set()

    def ns(self, name: str) -> str:
        return f"nd{self.key}{name}"

    def veth(self, name: str) -> str:
        return f"nd{self.key}{name}h"  # the bridge's end; at most 15 characters

    def setup(self) -> "NetLab":
        self.teardown()
        _ip("link", "add", "name", self.bridge, "type", "bridge")
        _ip("addr", "add", f"{self.prefix}.1/24", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        for name in self.names:
            ns, host_end = self.ns(name), self.veth(name)
            _ip("netns", "add", ns)
            _ip("link", "add", host_end, "type", "veth", "peer", "name", f"{host_end[:-1]}n")
            _ip("link", "set", f"{host_end[:-1]}n", "netns", ns)
            _ip("-n", ns, "link", "set", f"{host_end[:-1]}n", "name", "eth0")
            _ip("-n", ns, "addr", "add", f"{self.address[name]}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
            _ip("-n", ns, "link", "set", "lo", "up")
            _ip("link", "set", host_end, "master", self.bridge)
            _ip("link", "set", host_end, "up")
        return self

    def popen(self, name: str, cmd: list[str], log: Path) -> subprocess.Popen:
        with open(log, "ab") as out:
            proc = subprocess.Popen(["ip", "netns", "exec", self.ns(name), *cmd], stdout=out,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        self.procs.append(proc)
        return proc

    def cut(self, name: str) -> None:
        """The namespace's link down: it reaches nothing and nothing reaches it."""
        _ip("link", "set", self.veth(name), "down")

    def heal(self, name: str) -> None:
        _ip("link", "set", self.veth(name), "up")

    def block(self, name: str) -> None:
        """This process (the client) loses its route to ``name``; the namespaces still reach each other."""
        _ip("route", "add", "blackhole", f"{self.address[name]}/32")
        self.blocked.add(name)

    def unblock(self, name: str) -> None:
        _ip("route", "del", "blackhole", f"{self.address[name]}/32", check=False)
        self.blocked.discard(name)

    def netem(self, name: str, *spec: str) -> None:
        subprocess.run(["ip", "netns", "exec", self.ns(name), "tc", "qdisc", "replace", "dev", "eth0", "root",
                        "netem", *spec], check=True, capture_output=True)

    def teardown(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
        for proc in self.procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        self.procs.clear()
        for name in list(self.blocked):
            self.unblock(name)
        for name in self.names:
            _ip("netns", "pids", self.ns(name), check=False)
            pids = _ip("netns", "pids", self.ns(name), check=False).stdout.split()
            for pid in pids:
                try:
                    os.kill(int(pid), 9)
                except (ProcessLookupError, ValueError):
                    pass
            _ip("netns", "del", self.ns(name), check=False)
            _ip("link", "del", self.veth(name), check=False)
        _ip("link", "del", self.bridge, check=False)


class NetCloud:
    """ZooKeeper in namespace ``zk`` and a Solr node (with its relay) in each of the other namespaces."""

    SOLR_PORT = 8983
    ZK_PORT = 2181

    def __init__(self, lab: NetLab, workdir: Path, heap: str = "512m"):
        self.lab, self.workdir, self.heap = lab, Path(workdir), heap
        self.nodes = [n for n in lab.names if n != "zk"]
        self.node_procs: dict[str, subprocess.Popen] = {}

    @property
    def zk_host(self) -> str:
        return f"{self.lab.address['zk']}:{self.ZK_PORT}"

    def node_url(self, name: str) -> str:
        return f"http://{self.lab.address[name]}:{self.SOLR_PORT}/solr"

    def collection_urls(self, collection: str = "neardup") -> str:
        return ",".join(f"{self.node_url(n)}/{collection}" for n in self.nodes)

    def start(self, timeout: float = 240.0) -> None:
        classpath = LocalSolr(data_dir=self.workdir / "build").build()
        zk_dir = self.workdir / "zk"
        (zk_dir / "data").mkdir(parents=True, exist_ok=True)
        cfg = zk_dir / "zoo.cfg"
        cfg.write_text("\n".join(["tickTime=2000", f"dataDir={zk_dir / 'data'}", f"clientPort={self.ZK_PORT}",
                                  f"clientPortAddress={self.lab.address['zk']}", "maxClientCnxns=0",
                                  "admin.enableServer=false", "4lw.commands.whitelist=ruok", ""]))
        self.lab.popen("zk", java_command("128m", classpath, "org.apache.zookeeper.server.ZooKeeperServerMain",
                                          str(cfg), props={"zookeeper.admin.enableServer": "false"}),
                       zk_dir / "zookeeper.out")
        deadline = time.monotonic() + timeout
        # A node gives up on ZooKeeper after 30 s, and on a loaded machine ZooKeeper's own start took longer
        # (a suite run on 6 December: "Could not connect to ZooKeeper ... within 30000 ms"): nodes start after it.
        while not self.zk_answers():
            assert time.monotonic() < deadline, f"ZooKeeper did not start; see {zk_dir / 'zookeeper.out'}"
            time.sleep(0.5)
        for name in self.nodes:
            self.start_node(name, classpath)
        for name in self.nodes:
            while not self.answers(name):
                assert time.monotonic() < deadline, f"Solr node {name} did not start; see {self.workdir / name}"
                time.sleep(0.5)

    def start_node(self, name: str, classpath: str | None = None) -> None:
        classpath = classpath or LocalSolr(data_dir=self.workdir / "build").build()
        home = self.workdir / name
        (home / "logs").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(solr_config_dir() / "solr_home" / "solr-cloud.xml", home / "solr.xml")
        cmd = java_command(self.heap, classpath, _LAUNCHER_CLASS, str(home), str(self.SOLR_PORT),
                           str(home / "solr.port"), props={
                               "log4j2.configurationFile": solr_config_dir() / "solr_home" / "log4j2.xml",
                               "zkHost": self.zk_host, "solr.host": self.lab.address[name],
                               "solr.max.booleanClauses": 1000000, "solr.disableRequestId": "true"})
        self.node_procs[name] = self.lab.popen(name, cmd, home / "logs" / "launcher.out")
        self.lab.popen(name, [sys.executable, str(HERE / "tcp_relay.py"), self.lab.address[name],
                              str(self.SOLR_PORT), str(self.SOLR_PORT), str(self.impairment_file(name))],
                       home / "logs" / "relay.out")

    def impairment_file(self, name: str) -> Path:
        return self.workdir / name / "impairment.json"

    def impair(self, name: str, delay_ms: float = 0.0, loss: float = 0.0) -> None:
        """Delay and loss on the node's inbound traffic: netem where the kernel has it, else the relay's own
        (tcp_relay.py). ``impair(name)`` with no arguments makes the link good again."""
        if netem_available():
            if delay_ms or loss:
                self.lab.netem(name, "delay", f"{delay_ms:g}ms", "loss", f"{loss * 100:g}%")
            else:
                subprocess.run(["ip", "netns", "exec", self.lab.ns(name), "tc", "qdisc", "del", "dev", "eth0",
                                "root"], capture_output=True)
            return
        self.impairment_file(name).write_text(json.dumps({"delay_ms": delay_ms, "loss": loss}))

    def zk_answers(self) -> bool:
        try:
            with socket.create_connection((self.lab.address["zk"], self.ZK_PORT), timeout=2) as sock:
                sock.sendall(b"ruok")
                return sock.recv(16) == b"imok"
        except OSError:
            return False

    def answers(self, name: str) -> bool:
        try:
            return requests.get(f"{self.node_url(name)}/admin/info/system", params={"wt": "json"},
                                timeout=3).ok
        except requests.RequestException:
            return False

    def create_collection(self, shards: int, replicas: int, name: str = "neardup") -> None:
        create_collection(self.node_url(self.nodes[0]), name, shards=shards, replicas=replicas, timeout=180)

    def wait_for_active(self, name: str = "neardup", timeout: float = 180.0) -> None:
        live = next(n for n in self.nodes if self.answers(n))
        wait_for_active(self.node_url(live), name, timeout=timeout)

    def is_live(self, name: str, asking: str) -> bool:
        """Whether ZooKeeper's live_nodes, as the node ``asking`` reads them, still hold ``name``."""
        hosts = {node.split(":")[0] for node in cluster_status(self.node_url(asking)).get("live_nodes", [])}
        return self.lab.address[name] in hosts

    def leader_node(self, shard: str, name: str = "neardup") -> str:
        """The lab name of the node holding ``shard``'s leader."""
        live = next(n for n in self.nodes if self.answers(n))
        shards = cluster_status(self.node_url(live), name)["collections"][name]["shards"]
        leader = next(r for r in shards[shard]["replicas"].values() if str(r.get("leader")) == "true")
        host = leader["node_name"].split(":")[0]
        return next(n for n in self.nodes if self.lab.address[n] == host)
