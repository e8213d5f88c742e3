"""The ``solr`` command: start, stop and inspect the local Solr (one node, or a SolrCloud with ``--cloud``),
and create the collection on users' own SolrCloud clusters."""

from __future__ import annotations

import argparse
import json
import os
import shlex
from pathlib import Path

from neardup_solr.solr import settings
from neardup_solr.cli.common import number, refuse_unless
from neardup_solr.errors import UsageError
from neardup_solr.solr.backends.local import CLOUD_STATE_FILE, registered, LocalSolr
from neardup_solr.solr.client import load_credentials

_CLOUD_DEFAULTS = {"nodes": 2, "shards": 2, "replicas": 1}


def _port(args) -> int:
    return settings.local_port() if args.port is None else args.port


def _data_dir(args) -> Path:
    """The data dir the command means: --data-dir, else the port's default one, else whatever data dir a Solr
    we started on that port registered (so that ``solr stop --port P`` finds a node started with any
    --data-dir)."""

    if args.data_dir:
        return Path(args.data_dir)
    default = settings.local_data_dir(_port(args) or None)
    if (default / "solr.pid").exists() or (default / CLOUD_STATE_FILE).exists():
        return default
    entry = registered(_port(args)) if _port(args) else None
    return Path(entry["data_dir"]) if entry else default


def _is_cloud(args, data_dir: Path) -> bool:
    return bool(getattr(args, "cloud", False)) or (data_dir / CLOUD_STATE_FILE).exists()


def _n(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def stop_hint(port: int, data_dir: Path) -> str:
    """A stop command that works as printed: --data-dir only when it is not the port's default."""
    cmd = ["neardup-solr", "solr", "stop", "--port", str(port)]
    if Path(data_dir).resolve() != settings.local_data_dir(port).resolve():
        cmd += ["--data-dir", str(Path(data_dir).resolve())]
    return shlex.join(cmd)


def cmd_solr(args: argparse.Namespace) -> int:
    """solr start|stop|status|build|create-collection."""
    refuse_unless(args, args.action == "create-collection", {"name": "NAME", "configset": "--configset",
                                                              "solr_url": "--solr-url"},
                  f"to solr {args.action} (they are for create-collection)")
    if args.overwrite_configset and args.action != "create-collection":
        raise UsageError(f"--overwrite-configset does not apply to solr {args.action} (it is for create-collection)")
    refuse_unless(args, args.action in ("start", "create-collection"),
                  {"nodes": "--nodes", "shards": "--shards", "replicas": "--replicas"},
                  f"to solr {args.action} (they shape a new cluster: start --cloud, create-collection)")
    refuse_unless(args, args.action == "create-collection" or args.cloud or args.action != "start",
                  {"nodes": "--nodes", "shards": "--shards", "replicas": "--replicas"},
                  "to a single-node start: add --cloud")
    refuse_unless(args, args.action != "create-collection", {"nodes": "--nodes"},
                  "to create-collection (it uses the cluster's running nodes)")
    if args.json and args.action != "status":
        raise UsageError(f"--json does not apply to solr {args.action} (it is for status)")
    if args.action == "create-collection":
        return _create_collection(args)
    if args.action == "build":
        solr = LocalSolr(port=args.port, data_dir=args.data_dir, heap=args.heap)
        solr.build()
        print(f"Solr {settings.SOLR_VERSION} launcher ready ({solr.launcher_dir})")
        return 0
    data_dir = _data_dir(args)
    if _is_cloud(args, data_dir):
        return _cloud(args, data_dir)
    return _single(args, data_dir)


def _single(args, data_dir: Path) -> int:
    solr = LocalSolr(port=_port(args), data_dir=data_dir, heap=args.heap)
    if args.action == "start":
        result = solr.start()
        if result.already_running:
            print(f"Solr is already running: {result.url}")
        else:
            print(f"Solr {settings.SOLR_VERSION} started in {result.seconds:.1f} s: {result.url}")
        print(f"  data: {solr.data_dir}  (stop with: {stop_hint(solr.bound_port(), solr.data_dir)})")
    elif args.action == "stop":
        port = solr.bound_port()
        if solr.stop():
            print(f"Solr on port {port} stopped")
        else:
            print(f"no Solr of ours is running on port {solr.port} (data dir {solr.data_dir}); nothing to stop")
    else:
        status = solr.status()
        if args.json:
            print(json.dumps({"kind": "single", **status}, indent=2))
        elif status["running"]:
            print(f"running: pid {status['pid']}, {status['core_url']} (core {'OK' if status['core_ok'] else 'NOT answering'})")
        if not status["running"]:
            if not args.json:
                print(f"not running (port {solr.port}, data dir {solr.data_dir})")
            return 1
    return 0


def _cloud(args, data_dir: Path) -> int:
    from neardup_solr.solr.backends.cloud import LocalSolrCloud

    shape = {k: getattr(args, k) if getattr(args, k) is not None else v for k, v in _CLOUD_DEFAULTS.items()}
    cloud = LocalSolrCloud(port=args.port, data_dir=data_dir, heap=args.heap, nodes=shape["nodes"],
                           shards=shape["shards"], replicas=shape["replicas"])
    if args.action == "start":
        existed = cloud.exists()
        result = cloud.start()
        if existed and any(getattr(args, k) not in (None, getattr(cloud, k)) for k in _CLOUD_DEFAULTS):
            print(f"note: {data_dir} keeps its cluster of {_n(cloud.nodes, 'node')}, {_n(cloud.shards, 'shard')} x "
                  f"{_n(cloud.replicas, 'replica')}; --nodes/--shards/--replicas apply to a new data dir only")
        if result.already_running:
            print(f"SolrCloud is already running: {result.url}")
        else:
            print(f"SolrCloud (Solr {settings.SOLR_VERSION}) started in {result.seconds:.1f} s: {result.url}")
        print(f"  {_n(cloud.nodes, 'node')} ({', '.join(str(p) for p in cloud.node_ports())}), ZooKeeper "
              f"{cloud.zk_host}, collection {cloud.collection!r}: {_n(cloud.shards, 'shard')} x "
              f"{_n(cloud.replicas, 'replica')}")
        print(f"  data: {cloud.data_dir}  (stop with: {stop_hint(cloud.node_ports()[0], cloud.data_dir)})")
        return 0
    if args.action == "stop":
        if cloud.exists() and cloud.stop():
            print(f"SolrCloud on port {cloud.node_ports()[0]} stopped ({cloud.nodes} nodes and ZooKeeper)")
        else:
            print(f"no SolrCloud of ours is running from {cloud.data_dir}; nothing to stop")
        return 0
    status = cloud.status()
    if args.json:
        print(json.dumps(status, indent=2))
        return 0 if status["running"] else 1
    if not status.get("nodes"):
        print(f"no local SolrCloud in {cloud.data_dir}")
        return 1
    print(f"SolrCloud (Solr {settings.SOLR_VERSION}) in {status['data_dir']}: "
          f"{'running' if status['running'] else 'not running'}")
    zk = status["zookeeper"]
    print(f"  zookeeper  127.0.0.1:{zk['port']}  pid {zk['pid'] or '-'}  {'alive' if zk['alive'] else 'down'}")
    for node in status["nodes"]:
        print(f"  node {node['node']}     127.0.0.1:{node['port']}  pid {node['pid'] or '-'}  "
              f"{'alive' if node['alive'] else 'down'}")
    if status["shards"]:
        print(f"collection {status['collection']}: {status['collection_url']}  ({_n(len(status['shards']), 'shard')}, "
              f"{status['replicas_active']}/{status['replicas_total']} replicas active)")
        for shard in status["shards"]:
            reps = ", ".join(
                f"{r['name']} on :{r['port']} {r['state'] if r['live'] else r['state'] + ' (node down)'}"
                f"{' leader' if r['leader'] else ''}" for r in shard["replicas"])
            print(f"  {shard['name']}: {reps}")
    elif status.get("error"):
        print(f"  {status['error']}")
    return 0 if status["running"] else 1


def _create_collection(args) -> int:
    from neardup_solr.solr.cluster import create_collection, node_base_url

    if not args.name:
        raise ValueError("create-collection needs the collection's name: neardup-solr solr create-collection NAME")
    configset = args.configset or settings.CONFIGSET_NAME
    url = args.solr_url or os.environ.get("SOLR_URL") or f"http://127.0.0.1:{_port(args)}/solr"
    node = node_base_url(url)
    result = create_collection(
        node, args.name, args.shards or 1, args.replicas or 1, configset=configset,
        overwrite_configset=args.overwrite_configset, auth=load_credentials(),
    )
    if result.configset_uploaded:
        print(f"configset {configset!r} uploaded from {settings.configset_dir() / 'conf'}")
    print(result.message)
    if result.created:
        print(f"  URL: {node}/{args.name}  (export SOLR_URL={node}/{args.name})")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``solr``."""
    p = sub.add_parser("solr", help="run the local Solr or SolrCloud (no Docker needed); create collections")
    p.add_argument("action", choices=["start", "stop", "status", "build", "create-collection"])
    p.add_argument("name", nargs="?", help="create-collection: the collection's name")
    p.add_argument("--port", type=number("--port", "port"), default=None,
                   help=f"port (default $NEARDUP_SOLR_PORT or {settings.DEFAULT_PORT}); with --cloud node 1's port")
    p.add_argument("--data-dir", default=None, help="Solr home and index (default ~/.neardup-solr/solr-<port>)")
    p.add_argument("--heap", default=None,
                   help="Java heap per Solr JVM, e.g. 2g (default $NEARDUP_SOLR_HEAP, else 2g; 1g per cloud node)")
    p.add_argument("--json", action="store_true", help="status as JSON")
    cloud = p.add_argument_group("SolrCloud (start --cloud, create-collection)")
    cloud.add_argument("--cloud", action="store_true",
                       help="a local SolrCloud: ZooKeeper plus one JVM per node (status/stop detect it by themselves)")
    cloud.add_argument("--nodes", type=number("--nodes", "nodes"), default=None, help="Solr nodes (default 2)")
    cloud.add_argument("--shards", type=number("--shards", "shards"), default=None,
                       help="shards of the collection (default 2; create-collection 1)")
    cloud.add_argument("--replicas", type=number("--replicas", "replicas"), default=None,
                       help="replicas of each shard (default 1)")
    cloud.add_argument("--solr-url", default=None,
                       help="create-collection: any node of the cluster, e.g. http://host:8983/solr "
                            "(default $SOLR_URL's node, else the local port)")
    cloud.add_argument("--configset", default=None,
                       help=f"create-collection: the configset's name in ZooKeeper (default {settings.CONFIGSET_NAME})")
    cloud.add_argument("--overwrite-configset", action="store_true",
                       help="create-collection: replace a configset of that name already in ZooKeeper with ours")
    p.set_defaults(func=cmd_solr)
