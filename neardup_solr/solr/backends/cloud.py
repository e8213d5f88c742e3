"""SolrCloud: a local cluster without Docker (the Collections/Configsets API calls it makes are in
:mod:`neardup_solr.solr.cluster`, which serves any cluster).

:class:`LocalSolrCloud` runs ZooKeeper in its own small JVM (``ZooKeeperServerMain`` from the zookeeper jar on
Solr's classpath) and one launcher JVM per Solr node, all on 127.0.0.1, so that killing one node leaves the
others serving. Node 1 listens on the single node's port (``NEARDUP_SOLR_PORT`` or 8983), so every command
finds the collection at the usual ``http://127.0.0.1:8983/solr/neardup``: Solr routes ``/solr/<collection>/...``
from any node.

    >>> cloud = LocalSolrCloud(nodes=2, shards=2, replicas=1)
    >>> cloud.start()                 # ZooKeeper, two nodes, configset upload, collection, all replicas active
    >>> cloud.core_url
    'http://127.0.0.1:8983/solr/neardup'
    >>> cloud.kill_node(2); cloud.start_node(2)
    >>> cloud.stop()

"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import asdict
from pathlib import Path
from typing import Callable

from neardup_solr.solr import settings
from neardup_solr.errors import LauncherError
from neardup_solr.solr.cluster import (
    ReplicaState,
    admin_call,
    cluster_status,
    configset_digest,
    create_collection,
    list_collections,
    list_configsets,
    replica_states,
    upload_configset,
    wait_for_active,
    wait_for_active_nodes,
)
from neardup_solr.solr.backends.base import StartResult
from neardup_solr.solr.backends.ports import free_ports, port_is_free
from neardup_solr.processes import process_alive
from neardup_solr.solr.backends.local import (
    CLOUD_STATE_FILE,
    LocalSolr,
    _LAUNCHER_CLASS,
    _start_errors,
    _tail,
    java_command,
    probe_update,
    ram_buffer_mb,
    register_running,
    unregister_running,
)

log = logging.getLogger(__name__)

ZK_MAIN = "org.apache.zookeeper.server.ZooKeeperServerMain"
# ZooKeeper holds a few kilobytes of cluster state here; 128 MB is generous and keeps it out of Solr's way.
ZK_HEAP = "128m"
DEFAULT_NODE_HEAP = "1g"


# =====================================================================================================
# The local cluster
# =====================================================================================================

def _cmdline(pid: int) -> list[bytes]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return []


def _wait_for_start(proc: subprocess.Popen, ready: Callable[[], bool], name: str, out_file: Path, deadline: float,
                    late_message: str, interval: float, solr_log: Path | None = None) -> None:
    """Poll ``ready`` until it holds; a process that exits first, or the deadline, raises LauncherError (with the
    errors of ``solr_log``, a Solr node's log, when given)."""
    while not ready():
        if proc.poll() is not None:
            raise LauncherError(f"{name} exited during start-up (code {proc.returncode}); see {out_file}:\n"
                                + _tail(out_file) + (_start_errors(solr_log) if solr_log else ""))
        if time.monotonic() > deadline:
            raise LauncherError(late_message)
        time.sleep(interval)


def _zk_ruok(port: int, timeout: float = 2.0) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(b"ruok")
            return s.recv(16) == b"imok"
    except OSError:
        return False


def rss_bytes(pid: int) -> int:
    """Resident memory of a process (0 when it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class LocalSolrCloud:
    """A local SolrCloud: ZooKeeper plus ``nodes`` Solr JVMs, and the collection ``neardup`` on them.

    Everything lives in ``data_dir`` (default ``~/.neardup-solr/solr-<port>``, as for the single node):
    ``cloud.json`` (ports, pids, shape), ``zookeeper/``, ``node1/``, ``node2/``... Nodes are numbered from 1;
    node 1 listens on ``port``, node i on ``port + i - 1``, ZooKeeper on ``port + 1000`` (Solr's own
    convention). Port 0 picks free ports on the first start; a data dir keeps its ports afterwards, because
    ZooKeeper knows the replicas by their node's port.
    """

    def __init__(
        self,
        port: int | None = None,
        data_dir: str | Path | None = None,
        nodes: int = 2,
        shards: int = 2,
        replicas: int = 1,
        heap: str | None = None,
        zk_port: int | None = None,
        collection: str = settings.CORE_NAME,
        configset: str = settings.CONFIGSET_NAME,
    ):
        self.port = settings.local_port() if port is None else int(port)
        self._port_given = port is not None
        self.data_dir = Path(data_dir) if data_dir else settings.local_data_dir(self.port)
        self.nodes = int(nodes)
        self.shards = int(shards)
        self.replicas = int(replicas)
        self.heap = heap or os.environ.get("NEARDUP_SOLR_HEAP", DEFAULT_NODE_HEAP)
        self.zk_port = zk_port
        self.collection = collection
        self.configset = configset
        self.config_dir = settings.solr_config_dir()
        state = self._load_state()
        if state:
            # The data dir's cluster wins over constructor defaults: its ports and shape are in ZooKeeper.
            self.nodes = len(state["nodes"])
            self.shards, self.replicas = state["shards"], state["replicas"]
            self.collection, self.configset = state["collection"], state["configset"]
            self.heap = heap or state.get("heap", self.heap)
            if not self._port_given:
                self.port = state["nodes"][0]["port"]

    # ------------------------------------------------------------------ state file
    @property
    def state_file(self) -> Path:
        return self.data_dir / CLOUD_STATE_FILE

    def _load_state(self) -> dict | None:
        try:
            return json.loads(self.state_file.read_text())
        except (OSError, ValueError):
            return None

    def _save_state(self, state: dict) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=2))
        tmp.replace(self.state_file)

    def _state(self) -> dict:
        state = self._load_state()
        if state is None:
            raise LauncherError(f"no local SolrCloud in {self.data_dir}; start one with 'neardup-solr solr start --cloud'")
        return state

    def exists(self) -> bool:
        return self.state_file.exists()

    # ------------------------------------------------------------------ addresses
    def node_home(self, i: int) -> Path:
        return self.data_dir / f"node{i}"

    @property
    def zk_dir(self) -> Path:
        return self.data_dir / "zookeeper"

    def node_ports(self) -> list[int]:
        return [n["port"] for n in self._state()["nodes"]]

    @property
    def node_urls(self) -> list[str]:
        """``http://127.0.0.1:<port>/solr`` of node 1, 2, ..."""
        return [f"http://127.0.0.1:{p}/solr" for p in self.node_ports()]

    def node_name(self, i: int) -> str:
        """The node's name in ZooKeeper (``127.0.0.1:<port>_solr``)."""
        return f"127.0.0.1:{self.node_ports()[i - 1]}_solr"

    @property
    def zk_host(self) -> str:
        return f"127.0.0.1:{self._state()['zk']['port']}"

    @property
    def collection_url(self) -> str:
        """Through node 1; before the first start, the port node 1 will take (``port``, when it is not 0)."""
        if not self.exists() and self.port:
            return f"http://127.0.0.1:{self.port}/solr/{self.collection}"
        return f"{self.node_urls[0]}/{self.collection}"

    # The name the single node's callers (fixtures, CLI) use for the URL they hand to SolrClient.
    core_url = collection_url

    # ------------------------------------------------------------------ processes
    def _alive(self, pid: int | None, marker: str) -> bool:
        if not pid or not process_alive(pid):
            return False
        cmdline = _cmdline(pid)
        # Guards against a recycled pid: the process must be our JVM for this very data dir.
        return not cmdline or marker.encode() in cmdline

    def zk_pid(self) -> int | None:
        pid = self._state()["zk"].get("pid")
        return pid if self._alive(pid, str(self.zk_dir / "zoo.cfg")) else None

    def node_pid(self, i: int) -> int | None:
        pid = self._state()["nodes"][i - 1].get("pid")
        return pid if self._alive(pid, str(self.node_home(i))) else None

    def node_pids(self) -> list[int | None]:
        return [self.node_pid(i) for i in range(1, self.nodes + 1)]

    def is_running(self) -> bool:
        return self.exists() and self.zk_pid() is not None and any(self.node_pids())

    def rss(self) -> dict:
        """Resident memory (bytes) of ZooKeeper and each node, and their total."""
        zk = rss_bytes(self.zk_pid() or 0)
        nodes = [rss_bytes(p or 0) for p in self.node_pids()]
        return {"zookeeper": zk, "nodes": nodes, "total": zk + sum(nodes)}

    def _set_pid(self, key: str, i: int | None, pid: int | None) -> None:
        state = self._state()
        if key == "zk":
            state["zk"]["pid"] = pid
        elif i is not None:
            state["nodes"][i - 1]["pid"] = pid
        else:
            raise ValueError(f"a {key} pid needs the node's number")
        self._save_state(state)

    # ------------------------------------------------------------------ start
    def _new_state(self) -> dict:
        if self.nodes < 1 or self.shards < 1 or self.replicas < 1:
            raise LauncherError("--nodes, --shards and --replicas must each be at least 1")
        if self.replicas > self.nodes:
            raise LauncherError(
                f"{self.replicas} replicas per shard need {self.replicas} nodes (two copies on one node protect "
                f"nothing); use --nodes {self.replicas} or fewer --replicas"
            )
        if self.port == 0:
            ports = free_ports(self.nodes + 1)
            node_ports, zk_port = ports[:-1], self.zk_port or ports[-1]
        else:
            node_ports = [self.port + i for i in range(self.nodes)]
            zk_port = self.zk_port or (self.port + 1000 if self.port + 1000 <= 65535 else free_ports(1)[0])
        return {
            "solr_version": settings.SOLR_VERSION,
            "collection": self.collection,
            "configset": self.configset,
            "shards": self.shards,
            "replicas": self.replicas,
            "heap": self.heap,
            "zk": {"port": zk_port, "pid": None},
            "nodes": [{"port": p, "pid": None} for p in node_ports],
            "configset_digest": None,
        }

    def _check_ports_free(self, state: dict) -> None:
        wanted = [("ZooKeeper", state["zk"]["port"], self.zk_pid())]
        wanted += [(f"node {i}", n["port"], self.node_pid(i)) for i, n in enumerate(state["nodes"], 1)]
        for what, port, pid in wanted:
            # As Jetty and ZooKeeper bind: connections of a previous run in TIME_WAIT do not block the port.
            if pid is None and not port_is_free(port, reuse_address=True):
                raise LauncherError(
                    f"port {port} (for {what}) is in use by another program; choose another --port "
                    f"(the cluster uses --port .. --port+{len(state['nodes']) - 1} and --port+1000)"
                )

    def start(self, timeout: float = 300.0) -> StartResult:
        """Start ZooKeeper and every node that is not running, make sure the configset and the collection
        exist, and return once every replica is active and the collection accepts updates (idempotent)."""
        t0 = time.monotonic()
        deadline = t0 + timeout
        single = LocalSolr(port=self.port or None, data_dir=self.data_dir)
        if single.is_running():
            raise LauncherError(f"a single-node Solr runs from {self.data_dir}; stop it first ('neardup-solr solr stop')")
        state = self._load_state()
        if state is None:
            state = self._new_state()
        elif self._port_given and self.port not in (0, state["nodes"][0]["port"]):
            raise LauncherError(
                f"{self.data_dir} holds a cluster whose node 1 listens on {state['nodes'][0]['port']}, not "
                f"{self.port}; start it with --port {state['nodes'][0]['port']} or use another --data-dir"
            )
        self._save_state(state)
        if self.zk_pid() and all(self.node_pids()):
            self.wait_for_active(timeout=max(deadline - time.monotonic(), 1))
            return StartResult(self.collection_url, True, time.monotonic() - t0)

        # Every replica may land on one node after a failover, so each node's heap is checked for all of them.
        buffer_mb = ram_buffer_mb(self.heap, self.shards * self.replicas)
        self._check_ports_free(state)
        classpath = LocalSolr(data_dir=self.data_dir).build()
        (self.data_dir / "logs").mkdir(parents=True, exist_ok=True)
        if self.zk_pid() is None:
            self._start_zookeeper(classpath, deadline)
        procs = {i: self._launch_node(i, classpath, buffer_mb) for i in range(1, self.nodes + 1) if not self.node_pid(i)}
        for i, proc in procs.items():
            self._wait_for_node_port(i, proc, deadline)
        register_running(self.node_ports()[0], self.data_dir, "cloud")
        node = self.node_urls[0]
        wait_for_active_nodes(node, [self.node_name(i) for i in range(1, self.nodes + 1)], deadline)
        self._ensure_collection(node, deadline)
        self.wait_for_active(timeout=max(deadline - time.monotonic(), 1))
        self._wait_until_updatable(deadline)
        return StartResult(self.collection_url, False, time.monotonic() - t0)

    def _start_zookeeper(self, classpath: str, deadline: float) -> None:
        state = self._state()
        (self.zk_dir / "data").mkdir(parents=True, exist_ok=True)
        cfg = self.zk_dir / "zoo.cfg"
        cfg.write_text("\n".join([
            "# Written by neardup-solr on every start; ZooKeeper of the local SolrCloud, loopback only.",
            "tickTime=2000",
            f"dataDir={(self.zk_dir / 'data').resolve()}",
            f"clientPort={state['zk']['port']}",
            "clientPortAddress=127.0.0.1",
            "maxClientCnxns=0",
            # The admin server would open a Jetty on 8080 on every interface.
            "admin.enableServer=false",
            "4lw.commands.whitelist=ruok,srvr",
            "autopurge.snapRetainCount=3",
            "autopurge.purgeInterval=1",
            "",
        ]))
        cmd = java_command(ZK_HEAP, classpath, ZK_MAIN, str(cfg), props={
            "log4j2.configurationFile": self.config_dir / "solr_home" / "log4j2.xml",
            "solr.log.dir": self.data_dir / "logs",
            "neardup.log.name": "zookeeper",
            "zookeeper.admin.enableServer": "false",
        })
        log.info("starting ZooKeeper on 127.0.0.1:%s", state["zk"]["port"])
        out_file = self.data_dir / "logs" / "zookeeper.out"
        with open(out_file, "ab") as out:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True)
        self._set_pid("zk", None, proc.pid)
        _wait_for_start(proc, lambda: _zk_ruok(state["zk"]["port"]), "ZooKeeper", out_file, deadline,
                        f"ZooKeeper did not answer on 127.0.0.1:{state['zk']['port']}; see {out_file}", 0.1)

    def _launch_node(self, i: int, classpath: str, buffer_mb: int) -> subprocess.Popen:
        home = self.node_home(i)
        (home / "logs").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(self.config_dir / "solr_home" / "solr-cloud.xml", home / "solr.xml")
        port = self.node_ports()[i - 1]
        (home / "solr.port").unlink(missing_ok=True)
        cmd = java_command(self.heap, classpath, _LAUNCHER_CLASS, str(home), str(port), str(home / "solr.port"), props={
            "log4j2.configurationFile": self.config_dir / "solr_home" / "log4j2.xml",
            "zkHost": self.zk_host,
            "solr.max.booleanClauses": 1000000,
            "solr.ramBufferSizeMB": buffer_mb,
            "solr.disableRequestId": "true",
        })
        log.info("starting Solr node %d on 127.0.0.1:%s (heap %s)", i, port, self.heap)
        with open(home / "logs" / "launcher.out", "ab") as out:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True)
        self._set_pid("node", i, proc.pid)
        return proc

    def _wait_for_node_port(self, i: int, proc: subprocess.Popen, deadline: float) -> None:
        home = self.node_home(i)
        out_file = home / "logs" / "launcher.out"
        _wait_for_start(proc, (home / "solr.port").exists, f"Solr node {i}", out_file, deadline,
                        f"Solr node {i} did not start in time; see {home / 'logs' / 'solr.log'}", 0.2,
                        solr_log=home / "logs" / "solr.log")

    def _ensure_collection(self, node: str, deadline: float) -> None:
        state = self._state()
        digest = configset_digest()
        collections = list_collections(node)
        configsets = list_configsets(node)
        if self.configset not in configsets or state.get("configset_digest") != digest:
            # Our own cluster follows the repository's configset, as the single node's core does on restart.
            upload_configset(node, self.configset, overwrite=self.configset in configsets)
            if self.collection in collections:
                log.info("configset changed: reloading collection %s", self.collection)
                admin_call(node, "admin/collections", {"action": "RELOAD", "name": self.collection},
                       f"reload collection {self.collection!r}", timeout=max(deadline - time.monotonic(), 10))
            state = self._state()
            state["configset_digest"] = digest
            self._save_state(state)
        if self.collection not in collections:
            create_collection(node, self.collection, self.shards, self.replicas, configset=self.configset,
                              timeout=max(deadline - time.monotonic(), 10))

    def _wait_until_updatable(self, deadline: float) -> None:
        last = ""
        while True:
            ok, last = probe_update(self.collection_url)
            if ok:
                return
            if time.monotonic() > deadline:
                raise LauncherError(f"collection {self.collection!r} did not accept updates in time ({last})")
            time.sleep(0.25)

    def wait_for_active(self, timeout: float = 180.0) -> list[ReplicaState]:
        """Wait until every node is live and every replica active; returns the replicas."""
        names = [self.node_name(i) for i in range(1, self.nodes + 1)]
        urls = [u for u, pid in zip(self.node_urls, self.node_pids()) if pid]
        if not urls:
            raise LauncherError(f"no node of the local SolrCloud in {self.data_dir} is running")
        return wait_for_active(urls[0], self.collection, timeout=timeout, nodes=names)

    # ------------------------------------------------------------------ faults
    def kill_node(self, i: int) -> None:
        """SIGKILL node ``i`` (from 1), as a crash would; the others keep serving."""
        pid = self.node_pid(i)
        if pid is None:
            raise LauncherError(f"node {i} is not running")
        os.kill(pid, signal.SIGKILL)
        while process_alive(pid):
            time.sleep(0.05)
        self._set_pid("node", i, None)

    def start_node(self, i: int, timeout: float = 180.0) -> float:
        """(Re)start node ``i`` and wait until every replica, its own included, is active again and the collection
        takes updates (a replica reported active may still be replaying its update log); returns the seconds it
        took."""
        t0 = time.monotonic()
        deadline = t0 + timeout
        if self.node_pid(i) is None:
            classpath = LocalSolr(data_dir=self.data_dir).build()
            proc = self._launch_node(i, classpath, ram_buffer_mb(self.heap, self.shards * self.replicas))
            self._wait_for_node_port(i, proc, deadline)
        self.wait_for_active(timeout=max(deadline - time.monotonic(), 1))
        self._wait_until_updatable(deadline)
        return time.monotonic() - t0

    # ------------------------------------------------------------------ stop / status
    def stop(self, timeout: float = 30.0) -> bool:
        """Stop every node, then ZooKeeper; returns False when nothing was running."""
        if not self.exists():
            return False
        pids = [(i, p) for i, p in enumerate(self.node_pids(), 1) if p]
        zk = self.zk_pid()
        if not pids and zk is None:
            unregister_running(self.node_ports()[0], self.data_dir)
            return False
        for _, pid in pids:
            os.kill(pid, signal.SIGTERM)
        # The nodes first (they leave live_nodes and hand over leadership through ZooKeeper), then ZooKeeper.
        _wait_gone([p for _, p in pids], timeout, "Solr node")
        for i, _ in pids:
            self._set_pid("node", i, None)
        if zk is not None:
            os.kill(zk, signal.SIGTERM)
            _wait_gone([zk], timeout, "ZooKeeper")
            self._set_pid("zk", None, None)
        unregister_running(self.node_ports()[0], self.data_dir)
        return True

    def status(self) -> dict:
        """Nodes (port, pid, alive), ZooKeeper, and every replica's state, as plain data."""
        if not self.exists():
            return {"kind": "cloud", "running": False, "core_url": None, "data_dir": str(self.data_dir), "nodes": [],
                    "shards": []}
        state = self._state()
        pids = self.node_pids()
        zk_pid = self.zk_pid()
        nodes = [{"node": i, "port": n["port"], "url": f"http://127.0.0.1:{n['port']}/solr", "pid": pid,
                  "alive": pid is not None}
                 for i, (n, pid) in enumerate(zip(state["nodes"], pids), 1)]
        shards: dict[str, list] = {}
        error = None
        live_url = next((n["url"] for n in nodes if n["alive"]), None)
        if live_url:
            try:
                cluster = cluster_status(live_url, self.collection)
                for r in replica_states(cluster, self.collection):
                    shards.setdefault(r.shard, []).append({**asdict(r), "active": r.active, "port": r.port})
            except LauncherError as exc:
                error = str(exc)
        replicas = [r for reps in shards.values() for r in reps]
        running = zk_pid is not None and any(pids)
        return {
            "kind": "cloud",
            "running": running,
            "data_dir": str(self.data_dir),
            "solr_version": settings.SOLR_VERSION,
            "collection": self.collection,
            "collection_url": self.collection_url,
            "core_url": self.collection_url if running else None,
            "zookeeper": {"port": state["zk"]["port"], "pid": zk_pid, "alive": zk_pid is not None},
            "nodes": nodes,
            "shards": [{"name": name, "replicas": reps} for name, reps in sorted(shards.items())],
            "replicas_total": len(replicas),
            "replicas_active": sum(r["active"] for r in replicas),
            "error": error,
        }


def _wait_gone(pids: list[int], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    for pid in pids:
        while process_alive(pid):
            if time.monotonic() > deadline:
                log.warning("%s (pid %s) did not stop within %.0f s; killing it", what, pid, timeout)
                os.kill(pid, signal.SIGKILL)
                time.sleep(0.2)
                break
            time.sleep(0.1)
