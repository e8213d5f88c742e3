"""The ``index`` command: files into the collection, with rejects, checkpoints and resume; and ``verify``."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from neardup_solr.cli.common import (
    add_index_settings_options,
    add_sign_processes_option,
    add_solr_options,
    index_settings_from_args,
    label,
    local_crash_cause,
    number,
    add_min_replicas_option,
    open_client,
)
from neardup_solr.errors import (
    EXIT_INCOMPLETE,
    EXIT_REJECTED,
    EXIT_UNAVAILABLE,
    UsageError,
    IndexIncomplete,
    IndexingInterrupted,
    InvalidParameterError,
)
from neardup_solr.io.readers import input_format
from neardup_solr.solr.indexer import Indexer
from neardup_solr.solr.maintenance import clear, merge_advice
from neardup_solr.io.outputs import check_output_path
from neardup_solr.signing.settings import IndexSettings
from neardup_solr.solr.verify import verify_file
from neardup_solr.solr.ttl import check_ttl

if TYPE_CHECKING:
    from neardup_solr.solr.indexer import IndexSummary


def _check_input(path: str, fmt: str | None) -> None:
    """Refuse a missing, binary or mis-formatted input before anything is sent or written."""

    input_format(path, fmt)


def summary_json(summary: IndexSummary, status: str) -> dict[str, Any]:
    """``index --json``: the human summary's numbers, for scripts. ``status`` is ``complete``, ``interrupted``
    (Solr stopped the run; exit 3) or ``incomplete`` (the final check found documents missing; exit 4)."""
    result: dict[str, Any] = {
        "status": status, "source": summary.source, "read": summary.read, "indexed": summary.indexed,
        "rejected": summary.rejected, "duplicate_ids": summary.duplicate_ids,
        "skipped_by_resume": summary.skipped_by_resume, "non_utf8_lines": summary.recoded_lines,
        "blank_lines": summary.blank_lines, "seconds": round(summary.seconds, 3),
        "docs_per_second": round(summary.docs_per_second, 1), "text_bytes": summary.text_bytes,
        "megabytes_per_second": round(summary.megabytes_per_second, 3),
        "signing_seconds": round(summary.signing_seconds, 3), "sign_processes": summary.sign_processes,
        "solr_wait_seconds": round(summary.solr_wait_seconds, 3),
        "rejects_path": summary.rejects_path if summary.rejected else None,
        "interrupted": summary.interrupted,
        "verification": None,
    }
    if summary.verification is not None:
        check = summary.verification
        result["verification"] = {"ok": check.ok, **{k: v for k, v in dataclasses.asdict(check).items()
                                                      if k != "first_bad_line"}, "seconds": round(check.seconds, 3)}
    return result


def cmd_index(args: argparse.Namespace) -> int:
    """Index one file; exit 1 when records were rejected, 3 when Solr stopped the run, 4 when incomplete."""

    # Everything that can be refused is refused before the first request to Solr.
    if args.clear and args.clear_all:
        raise UsageError("give --clear (this data set) or --clear-all (the whole collection), not both")
    if args.resume and (args.clear or args.clear_all):
        raise UsageError("--resume continues a stopped run; --clear/--clear-all would delete what it did")
    if args.resume and args.file == "-":
        raise UsageError("--resume needs a file: standard input ('-') cannot be read again")
    _check_input(args.file, args.format)
    rejects = args.rejects or f"{'stdin' if args.file == '-' else Path(args.file).name}.rejects.jsonl"
    check_output_path(rejects, name="rejects_path")
    index_settings = _with_normalizer(index_settings_from_args(args), args)
    client = open_client(args)
    indexer = Indexer(client, index_settings, batch_size=args.batch_size, commit_every=args.commit_every,
                      workers=args.workers, progress=not args.quiet, dataset=args.dataset, ttl=args.ttl,
                      sign_processes=args.sign_processes)
    if args.clear or args.clear_all:
        deleted = clear(client, None if args.clear_all else args.dataset, everything=args.clear_all)
        what = ("the whole collection" if args.clear_all else f"data set {args.dataset!r}" if args.dataset
                else "the documents without a data set")
        # With --json, standard output holds the JSON document alone.
        print(f"cleared {what}: {deleted} documents deleted from {client.url}",
              file=sys.stderr if args.json else sys.stdout)
    try:
        summary = indexer.index_file(
            args.file, args.format, id_field=args.id_column, text_field=args.text_column,
            on_decode_error=args.on_decode_error, rejects_path=rejects, resume=args.resume,
        )
    except IndexingInterrupted as exc:
        print(exc.summary.format(), file=sys.stderr)
        cause = local_crash_cause(client.url)
        if cause:
            print(f"why: {cause}", file=sys.stderr)
        if args.json:
            print(json.dumps(summary_json(exc.summary, "interrupted")))
        return EXIT_UNAVAILABLE
    except IndexIncomplete as exc:
        print(exc.summary.format(), file=sys.stderr)
        if args.json:
            print(json.dumps(summary_json(exc.summary, "incomplete")))
        return EXIT_INCOMPLETE
    print(json.dumps(summary_json(summary, "complete")) if args.json else summary.format())
    advice = merge_advice(client) if summary.indexed else None
    if advice and not args.quiet:
        print(f"note: {advice}", file=sys.stderr)
    return EXIT_REJECTED if summary.rejected else 0


def _with_normalizer(settings: "IndexSettings | None", args: argparse.Namespace) -> "IndexSettings | None":
    """The settings with the normaliser flags that were given (None still means: the collection's own)."""
    chosen = {name: value for name, value in (("normalizer_version", args.normalizer_version),
                                              ("fold_diacritics", args.fold_diacritics or None),
                                              ("fold_digits", args.fold_digits or None)) if value is not None}
    if not chosen:
        return settings
    return dataclasses.replace(settings or IndexSettings(), **chosen)


def cmd_verify(args: argparse.Namespace) -> int:
    """Compare a file with the index; exit 4 on any difference."""

    _check_input(args.file, args.format)
    result = verify_file(open_client(args), args.file, args.format, id_field=args.id_column,
                         text_field=args.text_column, on_decode_error=args.on_decode_error)
    print(result.format())
    return 0 if result.ok else EXIT_INCOMPLETE


def _ttl_flag(value: str) -> str | None:
    """``--ttl`` checked while the command line is parsed, before any file or Solr is touched."""

    try:
        return check_ttl(value, "--ttl")
    except InvalidParameterError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _add_input_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="the input file, '-' for standard input; gzip, bzip2, xz or zstd compressed "
                                "files are read as they are")
    p.add_argument("--format", choices=["lines", "tsv", "jsonl", "csv", "parquet"], default=None,
                   help="input format (default: from the file name, a.jsonl.gz being JSONL, or Parquet by its "
                        "content; 'lines' = '<id> <text>')")
    p.add_argument("--id-column", default="id", help="id key/column for jsonl, csv and parquet (default id)")
    p.add_argument("--text-column", default="text",
                   help="text key/column for jsonl, csv and parquet (default text); several, comma-separated, are joined "
                        "and also indexed per column for --field-weights")
    p.add_argument("--on-decode-error", choices=["latin-1", "reject", "replace"], default="latin-1",
                   help="lines that are not UTF-8: decode as Latin-1 (default), reject, or replace bad bytes")


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``index`` and ``verify``."""
    p = sub.add_parser(
        "index", help="index a file of records",
        description="Index a file of records. Ids must not contain tabs, newlines or other control characters, "
                    "start or end with white space, or start with '#' (they are written into TSV outputs): such "
                    "records are rejected with their reason, like empty texts.")
    _add_input_options(p)
    p.add_argument("--batch-size", type=number("--batch-size", "batch_size"), default=500,
                   help="documents per request (default 500)")
    p.add_argument("--commit-every", type=number("--commit-every", "commit_every"), default=20000,
                   help="hard-commit (and move the checkpoint) every N documents, or every minute (default 20000)")
    p.add_argument("--workers", type=number("--workers", "workers"), default=2,
                   help="batches in flight to Solr at once (default 2)")
    add_sign_processes_option(p)
    add_index_settings_options(p)
    p.add_argument("--normalizer-version", type=int, choices=[1, 2, 3], default=None,
                   help="text normaliser of a new collection (default 3: NFKC, case folding, in-word format "
                        "characters removed, all with one pinned Unicode version whatever the Python; 2: the same "
                        "with the Python's own Unicode; 1: the first, kept by collections built with it)")
    p.add_argument("--fold-diacritics", action="store_true",
                   help="normaliser option: cafe = café (stored with the collection; versions 2 and 3)")
    p.add_argument("--fold-digits", action="store_true",
                   help="normaliser option: every run of digits is the same token, for boilerplate with counters "
                        "and dates, not for addresses (stored with the collection; versions 2 and 3)")
    p.add_argument("--dataset", type=label("--dataset"), default=None,
                   help="label the records (for joins of two data sets)")
    p.add_argument("--ttl", type=_ttl_flag, default=None, metavar="DATE_MATH",
                   help="time to live of the records, as Solr date math (e.g. 30DAYS, +12HOURS): Solr deletes them "
                        "that long after it receives them")
    p.add_argument("--rejects", default=None, help="JSONL file for rejected records (default <file>.rejects.jsonl)")
    p.add_argument("--resume", action="store_true", help="continue an interrupted run from its checkpoint")
    add_min_replicas_option(p, "documents as indexed")
    p.add_argument("--clear", action="store_true",
                   help="first delete the documents of this --dataset (without --dataset: the unlabelled ones); "
                        "other data sets are kept")
    p.add_argument("--clear-all", action="store_true",
                   help="first delete everything in the collection, stored settings included")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true",
                   help="print the summary as one JSON object on standard output (read, indexed, rejected, ...)")
    add_solr_options(p)
    p.set_defaults(func=cmd_index)

    p = sub.add_parser("verify", help="compare a file with the index: missing ids, changed content, other "
                                      "signing settings (exit 4 on any difference)")
    _add_input_options(p)
    add_solr_options(p)
    p.set_defaults(func=cmd_verify)
