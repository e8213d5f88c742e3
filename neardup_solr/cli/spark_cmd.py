"""``neardup-solr spark dedup|join``: the batch jobs of :mod:`neardup_solr.spark` from the command line."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import sys
from pathlib import Path

from neardup_solr.options import DEFAULT_SPLIT_BUCKET, SIMILARITIES, ThresholdOptions
from neardup_solr.pairs.candidates import DEFAULT_MAX_BUCKET
from neardup_solr.validation import Limit
from neardup_solr.cli.common import NEVER_SPLIT, split_bucket_arg, add_solr_options, label, number, open_client, options_from_flags
from neardup_solr.errors import EXIT_INCOMPLETE, EXIT_REJECTED, UsageError
from neardup_solr.signing.encoder import IN_PACKAGE, in_package_encoder
from neardup_solr.signing.settings import IndexSettings
from neardup_solr.pairs.lsh import LSHParams
from neardup_solr.engine.weighted_lsh import IdfSnapshot


def _session(args: argparse.Namespace):
    from neardup_solr.spark import spark_session

    return spark_session(args.master, shuffle_partitions=args.shuffle_partitions, driver_memory=args.driver_memory)


def _settings(args: argparse.Namespace):
    given = {"ngram": args.ngram, "unit": args.unit, "num_hashes": args.num_hashes,
             "encoder": in_package_encoder(args.encoder).spec if getattr(args, "encoder", None) else None}
    return IndexSettings(**{k: v for k, v in given.items() if v is not None})


def _lsh(args: argparse.Namespace):
    if (args.bands is None) != (args.rows_per_band is None):
        raise UsageError("--bands and --rows-per-band go together (or neither: chosen for --threshold)")
    return LSHParams(args.bands, args.rows_per_band) if args.bands is not None else None


def _input(args: argparse.Namespace, path: str):
    """How the flags say ``path`` is read."""
    from neardup_solr.spark.runs import SparkInput

    return options_from_flags(lambda: SparkInput(path, fmt=args.format, id_field=args.id_column,
                                                 text_field=args.text_column, on_decode_error=args.on_decode_error,
                                                 read_on=args.read_on))


def _print_rejected(examples: list[str], count: int) -> None:
    """The records that were not used: the first examples with their reasons, then how many more."""
    for problem in examples:
        print(f"rejected: {problem}", file=sys.stderr)
    if count > len(examples):
        print(f"rejected: ... {count - len(examples)} more", file=sys.stderr)


def _options(args: argparse.Namespace) -> ThresholdOptions:
    """The flags the Spark jobs share with ``report --threshold --method lsh`` as its options (the flags not
    given take the options' defaults), checked there before Spark starts."""
    given = {"threshold": args.threshold, "similarity": args.similarity,
             "split_bucket": None if getattr(args, "split_bucket", None) in (None, NEVER_SPLIT) else args.split_bucket}
    options = options_from_flags(lambda: ThresholdOptions(method="lsh", **{k: v for k, v in given.items()
                                                                          if v is not None}))
    if getattr(args, "split_bucket", None) == NEVER_SPLIT:
        options = dataclasses.replace(options, split_bucket=None)
    options_from_flags(lambda: options.check_run(snapshot=args.idf_snapshot is not None),
                       {"snapshot": "--idf-snapshot needs --similarity idf"})
    return options


def _snapshot(args: argparse.Namespace):
    """The ``--idf-snapshot`` to sign with, read before Spark starts (a bad file is a one-line error)."""
    if args.idf_snapshot is None:
        return None

    return IdfSnapshot.load(args.idf_snapshot)


def _explaining_memory_errors(command):
    """``command`` with a Spark out-of-memory failure said as what to change (``--driver-memory``), not as the Py4J
    trace of an internal error."""
    @functools.wraps(command)
    def run(args: argparse.Namespace) -> int:
        try:
            return command(args)
        except Exception as exc:
            from neardup_solr.spark.session import memory_error_of

            explained = memory_error_of(exc, args.driver_memory)
            if explained is None:
                raise
            raise explained from exc
    return run


# How spark dedup and join call the outputs of SparkOutputs (their flags).
_OUTPUT_FLAGS = {"pairs": "--out", "parquet": "--parquet", "groups": "--groups", "keep": "--keep",
                 "records": "--records-out"}


def cmd_dedup(args: argparse.Namespace) -> int:
    """Every pair of records of FILE with Jaccard >= --threshold, computed on Spark: one library call
    (:func:`neardup_solr.spark.runs.dedupe_on_spark`), printed."""
    from neardup_solr.spark.runs import SparkDedupeOptions, SparkDedupeRun, SparkOutputs, dedupe_on_spark

    if not args.to_solr and args.dataset is not None:
        raise UsageError("--dataset applies to --to-solr only")
    if not args.to_solr and args.encoder is not None:
        raise UsageError("--encoder applies to --to-solr only (the vectors go into the documents loaded into Solr; "
                         "the pairs of a Spark job are by words)")
    pair_options, settings, lsh_params, snapshot = _options(args), _settings(args), _lsh(args), _snapshot(args)
    options = options_from_flags(lambda: SparkDedupeOptions(
        pairs=pair_options, settings=settings, lsh_params=lsh_params, max_bucket=args.max_bucket, snapshot=snapshot,
        representative=args.representative, dataset=args.dataset))
    source = _input(args, args.file)
    outputs = SparkOutputs(args.out, parquet=args.parquet, groups=args.groups, keep=args.keep,
                           records=args.records_out)
    options_from_flags(lambda: outputs.check(names=_OUTPUT_FLAGS))
    source.check()
    client = open_client(args) if args.to_solr else None
    staging = _staging_parent(args)
    measure = "IDF-weighted jaccard" if pair_options.similarity == "idf" else "jaccard"

    def say_pairs(run: "SparkDedupeRun", seconds: float) -> None:
        # Said as soon as the pairs are written: the groups that follow can take as long again.
        s = run.stats
        print(f"{s.verified_pairs} pairs with {measure} >= {pair_options.threshold} among {s.documents} records "
              f"({s.candidate_pairs} candidates, LSH {s.bands}x{s.rows}) in {seconds:.1f} s "
              f"-> {args.out}" + (f" and {args.parquet}" if args.parquet else ""), flush=True)
        if s.oversized_buckets:
            limit = args.max_bucket or DEFAULT_MAX_BUCKET
            print(f"warning: {s.oversized_buckets} band bucket(s) over --max-bucket {limit} were split; "
                  f"{s.pairs_not_generated} pairs across their blocks were not generated", file=sys.stderr)

    run = dedupe_on_spark(_session(args), source, outputs, options, client=client, staging_dir=staging,
                          on_pairs=say_pairs)
    if run.groups is not None:
        said = [f"{run.groups} groups holding {run.grouped_documents} documents"
                + (f" -> {args.groups}" if args.groups else "")]
        if run.kept_ids is not None:
            said.append(f"keep list of {run.kept_ids} ids -> {args.keep}")
        if run.kept_records is not None:
            said.append(f"{run.kept_records} records kept -> {args.records_out}")
        print("; ".join(said))
    if run.load is not None and client is not None:
        print(f"sent {run.load.sent} documents to {client.url}; {run.load.verify.format()}")
        if not run.complete:
            return EXIT_INCOMPLETE
    if run.groups_in_solr is not None:
        print(f"groups written into the collection: {run.groups_in_solr.format()}")
    _print_rejected(run.rejected, run.rejected_count)
    return EXIT_REJECTED if run.rejected_count else 0


def _staging_parent(args: argparse.Namespace) -> str | None:
    """``--staging-dir``, made when it does not exist yet (as the outputs' folders are); None: the temporary
    directory."""
    if args.staging_dir is None:
        return None
    try:
        Path(args.staging_dir).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--staging-dir {args.staging_dir}: cannot make that folder ({exc.strerror}); give one "
                         "this user can write") from exc
    return str(args.staging_dir)


def cmd_join(args: argparse.Namespace) -> int:
    """Every pair (LEFT record, RIGHT record) with Jaccard >= --threshold, computed on Spark: one library call
    (:func:`neardup_solr.spark.runs.join_on_spark`), printed."""
    from neardup_solr.spark.runs import SparkJoinOptions, SparkOutputs, join_on_spark

    pair_options, settings, lsh_params, snapshot = _options(args), _settings(args), _lsh(args), _snapshot(args)
    options = options_from_flags(lambda: SparkJoinOptions(
        pairs=pair_options, settings=settings, lsh_params=lsh_params, max_bucket=args.max_bucket, snapshot=snapshot,
        one_to_one=args.one_to_one))
    outputs = SparkOutputs(args.out, parquet=args.parquet)
    options_from_flags(lambda: outputs.check(names=_OUTPUT_FLAGS))
    left, right = _input(args, args.left), _input(args, args.right)
    left.check()
    right.check()
    staging = _staging_parent(args)
    run = join_on_spark(_session(args), left, right, outputs, options, staging_dir=staging)
    measure = "IDF-weighted jaccard" if pair_options.similarity == "idf" else "jaccard"
    print(f"{run.stats.verified_pairs} cross pairs with {measure} >= {pair_options.threshold} ({run.stats.documents} "
          f"records, {run.stats.candidate_pairs} candidates) in {run.seconds:.1f} s -> {args.out}")
    _print_rejected(run.rejected, run.rejected_count)
    return EXIT_REJECTED if run.rejected_count else 0


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--threshold", type=number("--threshold", "threshold"), required=True,
                   help="keep pairs whose exact similarity (see --similarity) is >= this")
    p.add_argument("--out", required=True, help="pairs file (TSV, as report --threshold writes)")
    p.add_argument("--parquet", default=None, help="also write the pairs as a Parquet directory here")
    p.add_argument("--similarity", choices=[s for s in SIMILARITIES if s != "cosine"], default=None,
                   help="jaccard of shingle sets (default), or idf: IDF-weighted jaccard of the words, as "
                        "--similarity idf --method lsh does on the Solr side; the IDF snapshot used is written to "
                        "OUT.idf.json")
    p.add_argument("--idf-snapshot", default=None,
                   help="with --similarity idf: sign and verify with this snapshot (OUT.idf.json of an earlier "
                        "run, Solr-side or Spark) instead of the frequencies of the input (join: of RIGHT)")
    p.add_argument("--format", choices=["lines", "tsv", "jsonl", "csv", "parquet"], default=None,
                   help="input format (default: from the file name; a directory or *.parquet is Parquet)")
    p.add_argument("--id-column", default="id", help="id key/column for jsonl, csv and parquet (default id)")
    p.add_argument("--text-column", default="text", help="text key/column for jsonl, csv and parquet (default text)")
    p.add_argument("--on-decode-error", choices=["latin-1", "reject", "replace"], default="latin-1",
                   help="lines that are not UTF-8: decode as Latin-1 (default), reject, or replace bad bytes")
    p.add_argument("--ngram", type=number("--ngram", "ngram"), default=None, help="shingle size (default 3)")
    p.add_argument("--unit", choices=["word", "char"], default=None, help="word (default) or char shingles")
    p.add_argument("--num-hashes", type=number("--num-hashes", "num_hashes"), default=None,
                   help="MinHash signature length (default 128)")
    p.add_argument("--bands", type=number("--bands", "bands"), default=None,
                   help="LSH bands (default: chosen for --threshold as report --method lsh does)")
    p.add_argument("--rows-per-band", type=number("--rows-per-band", "rows_per_band"), default=None)
    p.add_argument("--max-bucket", type=number("--max-bucket", Limit("int", 2, 10**9)), default=None,
                   help=f"split band buckets larger than this (counted and reported; default {DEFAULT_MAX_BUCKET})")
    p.add_argument("--master", default=None,
                   help="Spark master (default: spark-submit's --master when run under it, else local[*])")
    p.add_argument("--shuffle-partitions", type=number("--shuffle-partitions", Limit("int", 1, 100_000)), default=8,
                   help="spark.sql.shuffle.partitions (default 8; raise it on a cluster)")
    p.add_argument("--driver-memory", default=None,
                   help="spark.driver.memory, e.g. 4g (local mode: all of Spark; default Spark's 1g)")
    p.add_argument("--staging-dir", default=None,
                   help="where line-format inputs are staged as Parquet (default: the temporary directory; on a "
                        "cluster, storage the executors can read)")
    p.add_argument("--read-on", choices=["auto", "driver", "executors"], default="auto",
                   help="who reads a lines, TSV or JSONL file: the executors, in parallel byte ranges (they must "
                        "see the file), or the driver; auto (default): the executors with a local master. CSV "
                        "and compressed files are read on the driver")


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``spark dedup`` and ``spark join``."""
    spark = sub.add_parser("spark", help="batch dedup and joins on Apache Spark (needs the spark extra and Java)")
    jobs = spark.add_subparsers(dest="spark_command", required=True, parser_class=type(spark))
    p = jobs.add_parser("dedup", help="every pair of records of FILE above --threshold, on Spark",
                        description="Sign FILE on Spark with the indexer's shingler and MinHash, find candidates by "
                                    "LSH band join, verify them exactly, and write every pair with Jaccard >= "
                                    "--threshold: the pairs report --threshold T --method lsh finds once FILE is "
                                    "indexed. Exit 1 when records were rejected (the others are used).")
    p.add_argument("file", help="input (lines, tsv, jsonl, csv, or Parquet)")
    _add_common(p)
    p.add_argument("--split-bucket", type=split_bucket_arg, default=None, metavar="N|none",
                   help="band buckets of more members than this are judged as report --method lsh judges them: "
                        f"verified in place when small or dense, split when large and sparse (default "
                        f"{DEFAULT_SPLIT_BUCKET}; 'none' never splits)")
    p.add_argument("--groups", default=None,
                   help="also write the groups (connected components, computed by the executors) as JSONL here: "
                        "the file groups PAIRS --out writes for the same pairs")
    p.add_argument("--keep", default=None, help="also write the keep list (every id except the non-representative "
                                                "members of a group) here, as groups --keep --with-singletons does")
    p.add_argument("--representative", choices=["earliest", "longest"], default="earliest",
                   help="which member a group keeps, as groups --representative: the earliest id (default) or the "
                        "longest text (ties to the earliest)")
    p.add_argument("--records-out", default=None, metavar="OUT",
                   help="also write the deduplicated corpus here: the input records whose id is kept, in input "
                        "order, each line as it was (a CSV header first; Parquet in, Parquet out), compressed as "
                        "OUT's name says (.gz, .bz2, .xz, .zst)")
    p.add_argument("--to-solr", action="store_true",
                   help="also load the records into the Solr core/collection as the indexer would, check them, and "
                        "write each document's near-duplicate group into it (nd_group, nd_keep: see groups --to-solr)")
    p.add_argument("--dataset", type=label("--dataset"), default=None, help="data set name for --to-solr")
    p.add_argument("--encoder", choices=sorted(IN_PACKAGE), default=None,
                   help="with --to-solr: the documents loaded also carry their vectors of meaning, encoded on the "
                        "executors by this in-package model (for --similarity cosine in Solr; docs/meaning.md)")
    add_solr_options(p)
    p.set_defaults(func=_explaining_memory_errors(cmd_dedup))

    p = jobs.add_parser("join", help="every LEFT x RIGHT pair above --threshold, on Spark",
                        description="Like spark dedup, but only pairs of a LEFT record and a RIGHT record.")
    p.add_argument("left")
    p.add_argument("right")
    _add_common(p)
    p.add_argument("--one-to-one", action="store_true", help="keep each id in at most one pair, best first")
    p.set_defaults(func=_explaining_memory_errors(cmd_join))
