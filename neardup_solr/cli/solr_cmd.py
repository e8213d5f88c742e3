"""The ``solr`` command: start, stop and inspect the local Solr."""

from __future__ import annotations

import json

from .. import settings


def cmd_solr(args) -> int:
    from ..backends.local import LocalSolr

    solr = LocalSolr(port=args.port, data_dir=args.data_dir, heap=args.heap)
    if args.action == "build":
        solr.build()
        print(f"Solr {settings.SOLR_VERSION} launcher ready ({solr.launcher_dir})")
    elif args.action == "start":
        result = solr.start()
        if result.already_running:
            print(f"Solr is already running: {result.url}")
        else:
            print(f"Solr {settings.SOLR_VERSION} started in {result.seconds:.1f} s: {result.url}")
            print(f"  data: {solr.data_dir}  (stop with: neardup-solr solr stop --port {args.port or solr.port})")
    elif args.action == "stop":
        if solr.stop():
            print(f"Solr on port {solr.port} stopped")
        else:
            print(f"no Solr of ours is running on port {solr.port} (data dir {solr.data_dir}); nothing to stop")
    else:
        status = solr.status()
        if args.json:
            print(json.dumps(status, indent=2))
        elif status["running"]:
            print(f"running: pid {status['pid']}, {status['core_url']} (core {'OK' if status['core_ok'] else 'NOT answering'})")
        else:
            print(f"not running (port {solr.port}, data dir {solr.data_dir})")
            return 1
    return 0


def register(sub) -> None:
    p = sub.add_parser("solr", help="run the local Solr (no Docker needed)")
    p.add_argument("action", choices=["start", "stop", "status", "build"])
    p.add_argument("--port", type=int, default=None, help=f"port (default $NEARDUP_SOLR_PORT or {settings.DEFAULT_PORT})")
    p.add_argument("--data-dir", default=None, help="Solr home and index (default ~/.neardup-solr/solr-<port>)")
    p.add_argument("--heap", default=None, help="Java heap, e.g. 2g (default $NEARDUP_SOLR_HEAP or 2g)")
    p.add_argument("--json", action="store_true", help="status as JSON")
    p.set_defaults(func=cmd_solr)
