"""The ``index`` command: files into the collection, with rejects, checkpoints and resume."""

from __future__ import annotations

import sys
from pathlib import Path

from .common import EXIT_INCOMPLETE, EXIT_REJECTED, EXIT_UNAVAILABLE, add_solr_options, local_crash_cause, open_client


def cmd_index(args) -> int:
    from ..documents import IndexSettings
    from ..indexer import IndexIncomplete, Indexer, IndexingInterrupted
    from ..maintenance import clear

    client = open_client(args)
    if args.clear and args.clear_all:
        raise ValueError("give --clear (this data set) or --clear-all (the whole collection), not both")
    if args.clear or args.clear_all:
        deleted = clear(client, None if args.clear_all else args.dataset, everything=args.clear_all)
        what = ("the whole collection" if args.clear_all else f"data set {args.dataset!r}" if args.dataset
                else "the documents without a data set")
        print(f"cleared {what}: {deleted} documents deleted from {client.url}")
    index_settings = None
    if any(v is not None for v in (args.ngram, args.unit, args.num_hashes, args.bands, args.rows_per_band,
                                   args.lsh_threshold, args.fields, args.sample_mod)):
        base = IndexSettings()
        index_settings = IndexSettings(
            ngram=args.ngram or base.ngram, unit=args.unit or base.unit,
            num_hashes=args.num_hashes or base.num_hashes,
            lsh_threshold=args.lsh_threshold or base.lsh_threshold,
            bands=args.bands, rows=args.rows_per_band,
            fields=tuple(f.strip() for f in args.fields.split(",") if f.strip()) if args.fields else base.fields,
            sample_mod=args.sample_mod or base.sample_mod,
        )
    indexer = Indexer(client, index_settings, batch_size=args.batch_size, commit_every=args.commit_every,
                      workers=args.workers, progress=not args.quiet, dataset=args.dataset)
    rejects = args.rejects or f"{Path(args.file).name}.rejects.jsonl"
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
        return EXIT_UNAVAILABLE
    except IndexIncomplete as exc:
        print(exc.summary.format(), file=sys.stderr)
        return EXIT_INCOMPLETE
    print(summary.format())
    return EXIT_REJECTED if summary.rejected else 0


def cmd_verify(args) -> int:
    from ..verify import verify_file

    result = verify_file(open_client(args), args.file, args.format, id_field=args.id_column,
                         text_field=args.text_column, on_decode_error=args.on_decode_error)
    print(result.format())
    return 0 if result.ok else EXIT_INCOMPLETE


def _add_input_options(p) -> None:
    p.add_argument("file")
    p.add_argument("--format", choices=["lines", "tsv", "jsonl", "csv"], default=None,
                   help="input format (default: from the file name; 'lines' = '<id> <text>')")
    p.add_argument("--id-column", default="id", help="id key/column for jsonl and csv (default id)")
    p.add_argument("--text-column", default="text",
                   help="text key/column for jsonl and csv (default text); several, comma-separated, are joined "
                        "and also indexed per column for --field-weights")
    p.add_argument("--on-decode-error", choices=["latin-1", "reject", "replace"], default="latin-1",
                   help="lines that are not UTF-8: decode as Latin-1 (default), reject, or replace bad bytes")


def register(sub) -> None:
    p = sub.add_parser("index", help="index a file of records")
    _add_input_options(p)
    p.add_argument("--batch-size", type=int, default=500)
    p.add_argument("--commit-every", type=int, default=20000,
                   help="hard-commit (and move the checkpoint) every N documents, or every minute (default 20000)")
    p.add_argument("--workers", type=int, default=2, help="batches in flight to Solr at once (default 2)")
    p.add_argument("--ngram", type=int, default=None, help="shingle size (default 3)")
    p.add_argument("--unit", choices=["word", "char"], default=None, help="word (default) or char shingles")
    p.add_argument("--num-hashes", type=int, default=None, help="MinHash signature length (default 128)")
    p.add_argument("--lsh-threshold", type=float, default=None, help="choose LSH bands for this Jaccard (default 0.8)")
    p.add_argument("--bands", type=int, default=None)
    p.add_argument("--rows-per-band", type=int, default=None)
    p.add_argument("--sample-mod", type=int, default=None,
                   help="index only shingles whose hash is 0 modulo this (write-up 003's sampling; default 1 = all)")
    p.add_argument("--fields", default=None,
                   help="token fields to index, comma-separated from shingles,minhash,lsh,words (default all; "
                        "'lsh' alone is fastest and enough for LSH lookups and whole-collection dedup)")
    p.add_argument("--dataset", default=None, help="label the records (for joins of two data sets)")
    p.add_argument("--rejects", default=None, help="JSONL file for rejected records (default <file>.rejects.jsonl)")
    p.add_argument("--resume", action="store_true", help="continue an interrupted run from its checkpoint")
    p.add_argument("--clear", action="store_true",
                   help="first delete the documents of this --dataset (without --dataset: the unlabelled ones); "
                        "other data sets are kept")
    p.add_argument("--clear-all", action="store_true",
                   help="first delete everything in the collection, stored settings included")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    add_solr_options(p)
    p.set_defaults(func=cmd_index)

    p = sub.add_parser("verify", help="compare a file with the index: missing ids, changed content, other "
                                      "signing settings (exit 4 on any difference)")
    _add_input_options(p)
    add_solr_options(p)
    p.set_defaults(func=cmd_verify)
