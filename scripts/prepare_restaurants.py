#!/usr/bin/env python
"""Write the numbered restaurant address file (``<id> <text>``, phone and cuisine removed) used by the
Fodor's/Zagat's benchmark; ids match neardup_solr/data/restaurants/gold_pairs.tsv."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

try:
    from neardup_solr.io import restaurants
except ImportError:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from neardup_solr.io import restaurants

from neardup_solr.errors import NeardupError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fodors", default=str(restaurants.fodors_path()), help="raw Fodor's file (default: packaged)")
    parser.add_argument("--zagats", default=str(restaurants.zagats_path()), help="raw Zagat's file (default: packaged)")
    parser.add_argument("--out", default="addresses.txt", help="address file to write (default: %(default)s)")
    parser.add_argument("--no-verify", action="store_true",
                        help="skip the record-count and landmark checks (for other restaurant files)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        count = restaurants.prepare_addresses(args.fodors, args.zagats, args.out, verify=not args.no_verify)
    except (NeardupError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {count} addresses to {args.out} (gold pairs: {restaurants.gold_pairs_path()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
