"""The ``settings`` command: show the settings stored in the collection, and repair an invalid settings
document (one an older version stored without checking it, e.g. ``lsh_threshold`` 1.5 or NaN)."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict

from neardup_solr.cli.common import (
    INDEX_SETTINGS_FLAGS,
    add_index_settings_options,
    add_solr_options,
    index_settings_from_args,
    open_client,
    refuse_unless,
)
from neardup_solr.solr.settings_store import read_index_settings, repair_index_settings


def cmd_settings(args: argparse.Namespace) -> int:
    """Show the stored settings, or (--repair) replace an invalid settings document."""

    refuse_unless(args, args.repair, INDEX_SETTINGS_FLAGS,
                  "without --repair (they give the settings to store in place of invalid ones)")
    wanted = index_settings_from_args(args)  # checked before Solr is asked anything
    client = open_client(args)
    if args.repair:
        result = repair_index_settings(client, wanted)
        if args.json:
            print(json.dumps({"action": result.action, "checked": result.checked,
                              "settings": asdict(result.settings) if result.settings else None}, indent=2))
        else:
            print(result.message)
        return 0
    stored = read_index_settings(client)  # StoredSettingsError (exit 2) names the repair when invalid
    if args.json:
        print(json.dumps(asdict(stored) if stored else None, indent=2))
    elif stored is None:
        print(f"no settings stored in {client.url} yet: the first index run stores its own")
    else:
        fields = ", ".join(f"{k}={v!r}" for k, v in asdict(stored).items())
        print(f"{client.url}: {fields}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``settings``."""
    p = sub.add_parser(
        "settings", help="show the collection's stored index settings; --repair replaces invalid ones",
        description="Show the index settings stored in the collection. With --repair, an invalid settings "
                    "document (stored by an older version that did not check it) is replaced: by the settings "
                    "flags given, else by its own valid values, the signature length the documents show and "
                    "defaults. When the collection holds documents, a sample of them is signed again with the "
                    "replacement and it is stored only if every signature matches; otherwise nothing changes and "
                    "the error says which settings to give. In an empty collection an invalid document is simply "
                    "removed, unless settings flags are given. Valid settings are never changed.")
    p.add_argument("--repair", action="store_true", help="replace an invalid stored settings document")
    p.add_argument("--json", action="store_true", help="print the settings (or the repair) as JSON")
    add_index_settings_options(p)
    add_solr_options(p)
    p.set_defaults(func=cmd_settings)
