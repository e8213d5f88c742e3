"""``neardup-solr optimize [--max-segments N]``: merge the index's segments after a bulk load (faster lookups)."""

from __future__ import annotations

import argparse
import json

from neardup_solr.cli.common import add_solr_options, number, open_client
from neardup_solr.solr.maintenance import merge_segments


def cmd_optimize(args: argparse.Namespace) -> int:
    """Merge the segments and say how many there were and are."""

    client = open_client(args)
    if not args.json:
        print(f"merging the segments of {client.url} into at most {args.max_segments} (this rewrites the index; "
              "about half a minute per million documents on 2 cores)", flush=True)
    summary = merge_segments(client, args.max_segments)
    print(json.dumps({"segments_before": summary.segments_before, "segments_after": summary.segments_after,
                      "seconds": summary.seconds}) if args.json else summary.format())
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``optimize``."""
    p = sub.add_parser("optimize", help="merge the index's segments after a bulk load, for faster lookups",
                       description="Merge the index into at most --max-segments segments (Solr's optimize). A "
                                   "lookup's cost grows with the segment count: after a bulk load of a million "
                                   "documents (22 to 35 segments) a merge into one cut Solr's CPU per lookup "
                                   "from 1.1-1.5 ms to 0.35 ms. It rewrites the whole index: it needs free disk about the "
                                   "index's size, and an index under steady writes drifts back to many segments.")
    p.add_argument("--max-segments", type=number("--max-segments", "max_segments"), default=1,
                   help="segments to keep at most (default 1)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    add_solr_options(p)
    p.set_defaults(func=cmd_optimize, param_flags={"max_segments": "--max-segments"})
