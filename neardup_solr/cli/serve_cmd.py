"""``neardup-solr serve``: the near-duplicate HTTP service and its web page (needs the ``service`` extra:
``pip install 'neardup-solr[service]'``)."""

from __future__ import annotations

import argparse
import os

from neardup_solr.cli.common import add_min_replicas_option, add_solr_options, number, open_client
from neardup_solr.errors import UsageError
from neardup_solr.validation import Limit


def cmd_serve(args: argparse.Namespace) -> int:
    """Run the service with uvicorn until interrupted."""
    try:
        import uvicorn

        from neardup_solr.service import config as service_config
    except ImportError as exc:
        raise UsageError(f"the service needs its extra packages ({exc.name} is missing): "
                         "pip install 'neardup-solr[service]'") from None
    # Workers are separate processes that build the app from the environment (uvicorn imports the factory by
    # name), so the options travel there; the token stays where the user put it and is never printed.
    if args.solr_url:
        os.environ["SOLR_URL"] = args.solr_url
    if args.zk_host:
        # The workers build their clients from SOLR_URL: the live nodes now, and each client follows the
        # cluster from there.
        from neardup_solr.solr.zookeeper import live_node_urls

        nodes = live_node_urls(args.zk_host)
        if not nodes:
            raise UsageError(f"ZooKeeper at {args.zk_host} lists no live Solr node: start the cluster first")
        os.environ["SOLR_URL"] = ",".join(f"{node}/{args.collection or 'neardup'}" for node in nodes)
    if args.max_wait is not None:
        os.environ["NEARDUP_SOLR_MAX_WAIT"] = str(args.max_wait)
    if args.min_replicas is not None:
        os.environ[service_config.ENV_MIN_REPLICAS] = str(args.min_replicas)
    config = service_config.ServiceConfig.load()
    os.environ[service_config.ENV_JOBS_DIR] = str(config.resolved_jobs_dir())
    exposed = args.host not in ("127.0.0.1", "localhost", "::1")
    print(f"neardup-solr service on http://{args.host}:{args.port}/ (API docs at /docs), "
          f"{args.workers} worker{'s' if args.workers > 1 else ''}"
          + ("; bearer token required" if config.token else "")
          + ("; WARNING: reachable from other machines without a token" if exposed and not config.token else ""),
          flush=True)
    stop_sync = _start_sync(args) if args.sync else None
    try:
        uvicorn.run("neardup_solr.service.app:create_app", factory=True, host=args.host, port=args.port,
                    workers=args.workers, log_level="warning" if args.verbose == 0 else "info",
                    access_log=args.verbose > 0)
    finally:
        if stop_sync is not None:
            stop_sync()
        # The workers were given it as configured: removing a temporary one is this process's to do.
        config.remove_temporary_jobs_dir()
    return 0


def _start_sync(args: argparse.Namespace):
    """Run ``sync --follow`` in a thread of this process (once, whatever --workers says); returns its stop."""
    import logging
    import threading

    from neardup_solr.engine.sync import open_syncer

    syncer = open_syncer(open_client(args, resolve=False), changed_field=args.changed_field)
    stop = threading.Event()

    def follow() -> None:
        while not stop.is_set():
            try:
                syncer.follow(args.sync_interval, stop)
            except Exception as exc:  # a pass that fails (Solr away longer than the client waits) is tried again
                logging.getLogger("neardup_solr.sync").warning("sync pass failed (%s); trying again", exc)
                stop.wait(max(args.sync_interval, 5.0))

    thread = threading.Thread(target=follow, name="neardup-sync", daemon=True)
    thread.start()
    print(f"signing what other clients write to {syncer.client.url} every {args.sync_interval:g} s (--sync)",
          flush=True)

    def stop_sync() -> None:
        stop.set()
        thread.join(timeout=30)
    return stop_sync


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``serve``."""
    p = sub.add_parser(
        "serve", help="run the near-duplicate HTTP service and its web page",
        description="The HTTP service (JSON API with OpenAPI at /openapi.json and docs at /docs) and the web page "
                    "at /. Binds 127.0.0.1 unless --host says otherwise. Set NEARDUP_SERVICE_TOKEN (or 'token' in "
                    "the [service] section of the config file) to require a bearer token on every call but "
                    "/health; NEARDUP_SERVICE_CORS_ORIGINS (comma-separated) to allow browser calls from other "
                    "origins.")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=number("--port", "port"), default=8080, help="port (default 8080)")
    p.add_argument("--workers", type=number("--workers", "workers"), default=1,
                   help="worker processes (default 1; /v1/check keeps near duplicates apart across all of them, "
                        "or only within a process with strict off: NEARDUP_SERVICE_CHECK_STRICT=false)")
    p.add_argument("--sync", action="store_true",
                   help="also sign what other clients add, replace or edit in the collection, in the background "
                        "(what 'sync --follow' does)")
    p.add_argument("--sync-interval", type=number("--sync-interval", Limit("float", 0.05, 86_400, unit="seconds")),
                   default=1.0, help="seconds between sync passes with --sync (default 1)")
    p.add_argument("--changed-field", default=None, help="with --sync: as sync's --changed-field")
    add_solr_options(p)
    add_min_replicas_option(p, "the service's writes (check-and-add, deletes)")
    p.set_defaults(func=cmd_serve)


add_parser = register
