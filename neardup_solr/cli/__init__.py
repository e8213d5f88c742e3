"""``neardup-solr``: a thin command line over the library. Every command is also a Python call.

Errors are printed as one line (no traceback) and set a non-zero exit code:
2 for usage and input errors, 3 when Solr is unavailable or failed, 1 when records were rejected,
4 when the index lacks documents it should hold (an ``index`` run's final check, or ``verify``).
"""

from __future__ import annotations

import argparse
import logging
import sys

from ..errors import NeardupError, SolrUnavailableError
from . import index_cmd, search_cmd, solr_cmd, tools_cmd
from .common import EXIT_UNAVAILABLE, EXIT_USAGE

log = logging.getLogger("neardup_solr")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="neardup-solr", description="Find near-duplicate documents with Apache Solr.")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-vv for debug)")
    sub = parser.add_subparsers(dest="command", required=True)
    for module in (solr_cmd, index_cmd, search_cmd, tools_cmd):
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    level = logging.WARNING if args.verbose == 0 else logging.INFO if args.verbose == 1 else logging.DEBUG
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    if args.verbose == 0:
        # Per-record warnings go to the rejects file and the summary; keep the terminal readable.
        logging.getLogger("neardup_solr.indexer").setLevel(logging.ERROR)
    try:
        return args.func(args)
    except SolrUnavailableError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    except (NeardupError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


