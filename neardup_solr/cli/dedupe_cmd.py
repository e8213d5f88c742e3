"""The ``dedupe`` command: a corpus in, the corpus without its near duplicates out
(:func:`neardup_solr.engine.dedupe.dedupe_file`)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from neardup_solr.cli.common import (
    INDEX_SETTINGS_FLAGS,
    UsageError,
    add_index_settings_options,
    add_sign_processes_option,
    add_solr_options,
    index_settings_from_args,
    label,
    number,
    open_client,
    options_from_flags,
)
from neardup_solr.errors import (
    EXIT_INCOMPLETE,
    EXIT_REJECTED,
    EXIT_UNAVAILABLE,
    SolrUnavailableError,
    IndexIncomplete,
    IndexingInterrupted,
)
from neardup_solr.engine.dedupe import DEDUPE_SETTINGS, DEDUPE_SIMILARITIES, DedupeOptions, check_files, dedupe_file
from neardup_solr.options import METHODS

# Rejected records named on the terminal before the summary (all of them are in the rejects file).
REJECTIONS_PRINTED = 20


def cmd_dedupe(args: argparse.Namespace) -> int:
    """Index, find the pairs, group them and write the kept records; exit 1 when records were rejected."""

    if args.clear and args.clear_all:
        raise UsageError("give --clear (this --dataset) or --clear-all (the whole collection), not both")
    clear = "all" if args.clear_all else "dataset" if args.clear else None
    # The rules are DedupeOptions'; the flags say them in their words.
    # The similarity's default is the options' own: a flag not given is left out.
    compared = {"similarity": args.similarity} if args.similarity is not None else {}
    options = options_from_flags(lambda: DedupeOptions(
        threshold=args.threshold, representative=args.representative, dataset=args.dataset, clear=clear,
        resume=args.resume, batch_size=args.batch_size, workers=args.workers, sign_processes=args.sign_processes,
        method=args.method, **compared),
        {"clear": "--clear deletes the documents of --dataset first: give --dataset, or --clear-all",
         "resume": "--resume continues a stopped run; --clear/--clear-all would delete what it indexed"})
    settings = index_settings_from_args(args)
    if settings is not None and args.fields is None:
        # --fields' default is dedupe's own (what it reads), also when other settings, --encoder say, are given.
        settings = dataclasses.replace(settings, fields=DEDUPE_SETTINGS.fields)
    check_files(args.file, args.out, args.format, pairs_out=args.pairs, groups_out=args.groups, keep_out=args.keep,
                rejects_path=args.rejects)  # before Solr is asked anything
    try:
        summary = dedupe_file(
            open_client(args), args.file, args.out, options=options, fmt=args.format, id_field=args.id_column,
            text_field=args.text_column, on_decode_error=args.on_decode_error, settings=settings,
            pairs_out=args.pairs, groups_out=args.groups, keep_out=args.keep, rejects_path=args.rejects,
            progress=not args.quiet)
    except IndexingInterrupted as exc:
        print(exc.summary.format(), file=sys.stderr)
        return EXIT_UNAVAILABLE
    except IndexIncomplete as exc:
        print(exc.summary.format(), file=sys.stderr)
        return EXIT_INCOMPLETE
    except SolrUnavailableError as exc:
        print(f"error: {exc}\nthe work done so far is kept: re-run the same command with --resume to go on",
              file=sys.stderr)
        return EXIT_UNAVAILABLE
    for rejection in summary.rejections[:REJECTIONS_PRINTED]:
        shown_id = f" (id {rejection.id!r})" if rejection.id is not None else ""
        print(f"rejected {rejection.source} line {rejection.line}{shown_id}: {rejection.reason}", file=sys.stderr)
    if summary.rejected > REJECTIONS_PRINTED:
        print(f"... {summary.rejected - REJECTIONS_PRINTED} more rejected records in {summary.rejects_path}",
              file=sys.stderr)
    if args.json:
        print(json.dumps({k: getattr(summary, k) for k in (
            "source", "out", "threshold", "similarity", "records", "kept", "dropped", "rejected", "repeated_ids", "pairs",
            "groups", "foreign_pairs", "resumed", "rejects_path", "pairs_path", "groups_path", "keep_path")}
                         | {"seconds": round(summary.seconds, 3), "stages": summary.stages,
                            "sign_processes": summary.sign_processes}))
    else:
        print(summary.format())
        if not args.quiet:
            print(summary.format_stages(), file=sys.stderr)
    return EXIT_REJECTED if summary.rejected else 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``dedupe``."""
    p = sub.add_parser(
        "dedupe", help="write a corpus without its near duplicates (index, pairs, groups, kept records)",
        description="Index a file of records, find every pair with Jaccard >= --threshold (LSH candidates, each "
                    "verified exactly, as report --method lsh; or with --similarity cosine every pair whose vectors "
                    "of meaning reach that cosine, as report --similarity cosine), group the pairs (as groups) and write to --out the "
                    "records that are in no pair and each group's representative: the input's own lines (or "
                    "Parquet rows), in input order, in the input's format, compressed by --out's suffix (.gz, "
                    ".bz2, .xz, .zst). Rejected records are named and not written. A stopped run continues with "
                    "--resume.")
    p.add_argument("file", help="the input file (lines, TSV, JSONL, CSV or Parquet; compressed files are read as "
                                "they are); read more than once, so not standard input")
    p.add_argument("--out", required=True, help="the deduplicated records (written complete or not at all)")
    p.add_argument("--threshold", type=number("--threshold", "threshold"), default=None,
                   help="similarity of a pair of near duplicates (Jaccard: default 0.8; --similarity cosine needs "
                        "one, its scale depends on the encoder: docs/meaning.md)")
    p.add_argument("--similarity", choices=DEDUPE_SIMILARITIES, default=None,
                   help="jaccard of the shingles (default), or cosine of the vectors of meaning (needs --encoder "
                        "and --threshold)")
    p.add_argument("--method", choices=METHODS, default=None,
                   help="how the pairs are found: 'lsh' with jaccard (the only one: dedupe indexes band tokens, not "
                        "shingles); with cosine 'exact' (default: every vector against every other), 'knn' or "
                        "'hybrid' (report --similarity cosine's methods)")
    p.add_argument("--representative", choices=["earliest", "longest"], default="earliest",
                   help="which record of a group is kept: the smallest id (default) or the longest text")
    p.add_argument("--format", choices=["lines", "tsv", "jsonl", "csv", "parquet"], default=None,
                   help="input format (default: from the file name, a.jsonl.gz being JSONL, or Parquet by its "
                        "content; 'lines' = '<id> <text>')")
    p.add_argument("--id-column", default="id", help="id key/column for jsonl, csv and parquet (default id)")
    p.add_argument("--text-column", default="text", help="text key/column for jsonl, csv and parquet (default "
                                                          "text); several, comma-separated, are joined")
    p.add_argument("--on-decode-error", choices=["latin-1", "reject", "replace"], default="latin-1",
                   help="lines that are not UTF-8: decode as Latin-1 (default), reject, or replace bad bytes (the "
                        "output copies the input's bytes either way)")
    p.add_argument("--pairs", default=None, help="also write the pairs (report's format)")
    p.add_argument("--groups", default=None, help="also write the groups (groups --out's JSONL)")
    p.add_argument("--keep", default=None, help="also write the kept ids (groups --keep --with-singletons)")
    p.add_argument("--rejects", default=None,
                   help="JSONL file for rejected records (default OUT.rejects.jsonl, written only when there are any)")
    p.add_argument("--dataset", type=label("--dataset"), default=None,
                   help="label the records; the pairs are then looked for among this data set's documents only")
    p.add_argument("--clear", action="store_true", help="first delete the documents of --dataset")
    p.add_argument("--clear-all", action="store_true",
                   help="first delete everything in the collection, stored settings included")
    p.add_argument("--resume", action="store_true",
                   help="continue a stopped run (its work is kept in OUT.dedupe-run/ until the run completes)")
    add_index_settings_options(p, fields_default="lsh, all that dedupe reads (docs/recipes.md)")
    p.add_argument("--batch-size", type=number("--batch-size", "batch_size"), default=500,
                   help="documents per indexing request (default 500)")
    p.add_argument("--workers", type=number("--workers", "workers"), default=2,
                   help="indexing batches in flight to Solr at once (default 2)")
    add_sign_processes_option(p)
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no line of stage times")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    add_solr_options(p)
    p.set_defaults(func=cmd_dedupe, param_flags={
        **INDEX_SETTINGS_FLAGS, "rows": "--rows-per-band", "pairs_out": "--pairs", "groups_out": "--groups", "keep_out": "--keep",
        "rejects_path": "--rejects", "fmt": "--format", "id_field": "--id-column", "text_field": "--text-column",
        "path": "FILE"})
