"""``install``, ``uninstall``, ``backfill`` and ``sync``: near-duplicate detection on a collection of your own,
through a companion index beside it.

Python: :func:`neardup_solr.solr.companion.install` / ``uninstall``, :func:`neardup_solr.engine.backfill.backfill`,
:func:`neardup_solr.engine.sync.open_syncer`.
"""

from __future__ import annotations

import argparse
import json

from neardup_solr.cli.index_cmd import _with_normalizer
from neardup_solr.validation import Limit
from neardup_solr.cli.common import (
    INDEX_SETTINGS_FLAGS,
    add_index_settings_options,
    add_solr_options,
    index_settings_from_args,
    number,
    open_client,
)
from neardup_solr.solr.companion import install, uninstall


def cmd_install(args: argparse.Namespace) -> int:
    """Create the companion of the collection (or say what would be created)."""

    client = open_client(args, resolve=False)
    settings = _with_normalizer(index_settings_from_args(args), args)
    plan = install(client, args.text_field, settings, companion=args.companion, fold=args.fold,
                   dry_run=args.dry_run)
    print(plan.format())
    return 0


def cmd_uninstall(args: argparse.Namespace) -> int:
    """Drop the companion (or remove an earlier install's fields)."""

    summary = uninstall(open_client(args, resolve=False), companion=args.companion, batch_size=args.batch_size)
    print(summary.format())
    return 0


def cmd_backfill(args: argparse.Namespace) -> int:
    """Sign the documents that have no signature yet."""
    from neardup_solr.engine.backfill import backfill

    summary = backfill(open_client(args), batch_size=args.batch_size, max_passes=args.max_passes,
                       progress=not args.no_progress and not args.json)
    print(json.dumps({"signed": summary.signed, "refused": summary.refused, "passes": summary.passes,
                      "conflicts": summary.conflicts, "seconds": summary.seconds,
                      "docs_per_second": round(summary.docs_per_second, 1)})
          if args.json else summary.format())
    return 0


def cmd_sync(args: argparse.Namespace) -> int:
    """One sync pass, or passes until interrupted (--follow)."""
    from neardup_solr.engine.sync import open_syncer

    syncer = open_syncer(open_client(args, resolve=False), changed_field=args.changed_field,
                         batch_size=args.batch_size, full_scan=args.full_scan,
                         reconcile_interval=args.reconcile_interval)

    def show(summary) -> None:
        if args.json:
            print(json.dumps({"added": summary.added, "edited": summary.edited, "checked": summary.checked,
                              "deleted": getattr(summary, "deleted", 0), "refused": summary.refused,
                              "seconds": summary.seconds}), flush=True)
        elif not args.follow or summary.added or summary.edited or getattr(summary, "deleted", 0):
            print(summary.format(), flush=True)

    if not args.follow:
        show(syncer.run_once())
        return 0
    try:
        syncer.follow(args.interval, on_pass=show)
    except KeyboardInterrupt:
        pass
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``install``, ``uninstall``, ``backfill`` and ``sync``."""
    p = sub.add_parser("install", help="make a companion index beside a collection of your own",
                       description="Create a companion index beside your collection (a core or SolrCloud "
                                   "collection from neardup-solr's configset, named after yours with _neardup) and "
                                   "record in it your unique key and the field or fields your text is in. Nothing "
                                   "of your collection changes: no field, no document. Then sign what is there "
                                   "with 'backfill' and keep it current with 'sync --follow'; every lookup and "
                                   "report takes your collection's URL. 'uninstall' drops the companion.")
    p.add_argument("--text-field", required=True,
                   help="your field that holds the text; several comma-separated (title,body) are read in that "
                        "order and joined; multi-valued fields and dynamic fields are fine")
    p.add_argument("--companion", default=None, help="the companion's name (default: your collection's + _neardup)")
    p.add_argument("--fold", action="store_true",
                   help="also add the two group fields to your schema (docValues only, updated in place: no other "
                        "field of your documents is rewritten), so that your own searches can fold near duplicates "
                        "once 'groups --to-solr' has written them")
    p.add_argument("--dry-run", action="store_true", help="print what would be created; change nothing")
    add_index_settings_options(p)
    p.add_argument("--normalizer-version", type=int, choices=[1, 2, 3], default=None,
                   help="text normaliser (default 3, the latest, as index's)")
    p.add_argument("--fold-diacritics", action="store_true", help="normaliser option: cafe = café")
    p.add_argument("--fold-digits", action="store_true", help="normaliser option: every run of digits is the same token")
    add_solr_options(p)
    p.set_defaults(func=cmd_install, param_flags=dict(INDEX_SETTINGS_FLAGS, rows="--rows-per-band"))

    p = sub.add_parser("uninstall", help="drop the companion install made (your collection is not touched)",
                       description="Drop the companion index of your collection. A collection installed by an "
                                   "earlier version (our fields inside your documents) has those fields, their "
                                   "values, our settings document and our field types removed instead.")
    p.add_argument("--companion", default=None, help="the companion's name, when install was given one")
    p.add_argument("--batch-size", type=number("--batch-size", "batch_size"), default=500,
                   help="documents per update request, for an earlier install's fields (default 500)")
    add_solr_options(p)
    p.set_defaults(func=cmd_uninstall, param_flags={"batch_size": "--batch-size"})

    p = sub.add_parser("backfill", help="sign the documents already in a collection (after install)",
                       description="On a collection of yours: read every document with a cursor, sign its text "
                                   "and write it into the companion (your documents are only read). Stopped, it "
                                   "resumes after the last page written. On a collection of ours: sign what "
                                   "other clients posted there. Checked at the end: exit code 4 when documents "
                                   "are still unsigned.")
    p.add_argument("--batch-size", type=number("--batch-size", "batch_size"), default=500,
                   help="documents per request (default 500)")
    p.add_argument("--max-passes", type=number("--max-passes", Limit("int", 1, 1000)), default=10,
                   help="passes over what other writers changed meanwhile (default 10)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    add_solr_options(p)
    p.set_defaults(func=cmd_backfill, param_flags={"batch_size": "--batch-size", "max_passes": "--max-passes"})

    p = sub.add_parser("sync", help="sign what other clients added, replaced or edited since",
                       description="Sign the documents that have no fields of ours (added or replaced whole by "
                                   "another client) and those whose text changed in place (the digest of the "
                                   "text signed against the current text, for the documents whose version (Solr's "
                                   "update log) moved on since the previous pass; with --changed-field, those whose date "
                                   "field did). Deleted documents take their signatures with them. --follow "
                                   "repeats it every --interval seconds.")
    p.add_argument("--follow", action="store_true", help="keep syncing until interrupted")
    p.add_argument("--interval", type=number("--interval", Limit("float", 0.05, 86_400, unit="seconds")), default=1.0,
                   help="seconds between passes with --follow (default 1)")
    p.add_argument("--changed-field", default=None,
                   help="your date field set on every change: only documents changed since the last pass are "
                        "compared (the first pass compares all)")
    p.add_argument("--full-scan", action="store_true",
                   help="compare every signed document's text on every pass, not only the documents updated since "
                        "the previous one")
    p.add_argument("--batch-size", type=number("--batch-size", "batch_size"), default=500,
                   help="documents per request (default 500)")
    p.add_argument("--reconcile-interval", type=number("--reconcile-interval", Limit("float", 0, 7 * 86_400,
                                                                                     unit="seconds")),
                   default=60.0, help="with --follow on a companion: seconds between the passes that look for "
                                      "documents you deleted (default 60; a pass also starts at once when the "
                                      "companion holds more documents than your collection; a single sync always "
                                      "looks)")
    p.add_argument("--json", action="store_true", help="print each pass's summary as JSON")
    add_solr_options(p)
    p.set_defaults(func=cmd_sync, param_flags={"batch_size": "--batch-size", "interval": "--interval",
                                               "changed_field": "--changed-field",
                                               "reconcile_interval": "--reconcile-interval"})
