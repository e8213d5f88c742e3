"""``neardup-solr delete ID... | --dataset NAME``: delete documents by id, or every document of a data set."""

from __future__ import annotations

import argparse
import json

from neardup_solr.cli.common import add_solr_options, label, open_client
from neardup_solr.errors import UsageError
from neardup_solr.engine.online import delete_dataset, delete_documents


def cmd_delete(args: argparse.Namespace) -> int:
    """Delete the given ids (exit 1 when some were not in the collection), or one data set."""

    if bool(args.ids) == (args.dataset is not None):
        raise UsageError("give document ids or --dataset NAME, not both and not neither")
    client = open_client(args)
    if args.dataset is not None:
        count = delete_dataset(client, args.dataset)
        print(json.dumps({"dataset": args.dataset, "deleted": count}) if args.json
              else f"deleted {count} document{'s' if count != 1 else ''} of data set {args.dataset!r} from {client.url}")
        return 0
    result = delete_documents(client, args.ids)
    if args.json:
        print(json.dumps({"deleted": result.deleted, "missing": result.missing}, ensure_ascii=False))
    else:
        print(f"deleted {len(result.deleted)} document{'s' if len(result.deleted) != 1 else ''} from {client.url}"
              + (f"; not found: {', '.join(result.missing[:10])}" + (" ..." if len(result.missing) > 10 else "")
                 if result.missing else ""))
    return 1 if result.missing else 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``delete``."""
    p = sub.add_parser("delete", help="delete documents by id, or every document of a data set",
                       description="Delete documents by id (exit 1 when some id was not in the collection), or "
                                   "every document of a data set with --dataset. Commits, so lookups stop finding "
                                   "them at once. Refuses a core or collection that is not neardup-solr's.")
    p.add_argument("ids", nargs="*", metavar="ID", help="ids of the documents to delete")
    p.add_argument("--dataset", type=label("--dataset"), default=None, help="delete every document of this data set")
    p.add_argument("--json", action="store_true", help="print what was deleted as JSON")
    add_solr_options(p)
    # The library names its parameters ids/dataset; on this command they are the ID arguments and --dataset.
    p.set_defaults(func=cmd_delete, param_flags={"ids": "ID", "dataset": "--dataset"})


add_parser = register
