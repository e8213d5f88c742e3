"""``neardup-solr spark dedup|join``: the batch jobs of :mod:`neardup_solr.spark` from the command line."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import sys
import tempfile
import time
from pathlib import Path

from neardup_solr.options import DEFAULT_SPLIT_BUCKET, SIMILARITIES, ThresholdOptions
from neardup_solr.pairs.candidates import DEFAULT_MAX_BUCKET
from neardup_solr.validation import Limit
from neardup_solr.cli.common import NEVER_SPLIT, split_bucket_arg, add_solr_options, label, number, open_client, options_from_flags
from neardup_solr.errors import EXIT_INCOMPLETE, EXIT_REJECTED, UsageError
from neardup_solr.signing.settings import IndexSettings
from neardup_solr.pairs.lsh import LSHParams
from neardup_solr.io.outputs import check_output_path, is_stdout
from neardup_solr.engine.weighted_lsh import IdfSnapshot, snapshot_path


def _session(args: argparse.Namespace):
    from neardup_solr.spark import spark_session

    return spark_session(args.master, shuffle_partitions=args.shuffle_partitions, driver_memory=args.driver_memory)


def _settings(args: argparse.Namespace):
    given = {"ngram": args.ngram, "unit": args.unit, "num_hashes": args.num_hashes}
    return IndexSettings(**{k: v for k, v in given.items() if v is not None})


def _lsh(args: argparse.Namespace):
    if (args.bands is None) != (args.rows_per_band is None):
        raise UsageError("--bands and --rows-per-band go together (or neither: chosen for --threshold)")
    return LSHParams(args.bands, args.rows_per_band) if args.bands is not None else None


def _read(spark, args: argparse.Namespace, path: str, staging: str):
    from neardup_solr.spark.io import read_records

    return read_records(spark, path, args.format, staging_dir=staging, id_field=args.id_column,
                        text_field=args.text_column, on_decode_error=args.on_decode_error, read_on=args.read_on)


def _report_rejected(inputs, result) -> int:
    """Print the records that were not used (the first five with their reasons); their number."""
    problems = [str(e) for i in inputs for e in i.rejected]
    count = len(problems) + result.stats.rejected
    if result.stats.rejected:
        problems += [f"id {r['id']!r}: {r['problem']}" for r in result.rejected.limit(5).collect()]
    for problem in problems[:5]:
        print(f"rejected: {problem}", file=sys.stderr)
    if count > 5:
        print(f"rejected: ... {count - 5} more", file=sys.stderr)
    return count


def _check_outputs(args: argparse.Namespace, *extra: tuple[str, str | None]) -> None:
    """Inputs exist and outputs are writable, checked before Spark (a JVM start) or Solr is touched."""

    for name in ("file", "left", "right"):
        path = getattr(args, name, None)
        if path is not None and not Path(path).exists():
            raise FileNotFoundError(f"input file not found: {path}")

    check_output_path(args.out)
    for name, path in extra:
        if path is not None:
            check_output_path(path, name=name)


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


def _max_bucket(args: argparse.Namespace) -> dict:
    """--max-bucket when given (else the jobs' own default)."""
    return {} if args.max_bucket is None else {"max_bucket": args.max_bucket}


def _snapshot(args: argparse.Namespace):
    """The ``--idf-snapshot`` to sign with, read before Spark starts (a bad file is a one-line error)."""
    if args.idf_snapshot is None:
        return None

    return IdfSnapshot.load(args.idf_snapshot)


def _save_snapshot(result, out: str) -> None:
    """Write the IDF snapshot a run used beside its pairs (OUT.idf.json), as the Solr-side runs do."""

    if result.snapshot is not None and not is_stdout(out):
        result.snapshot.save(snapshot_path(out))


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


def cmd_dedup(args: argparse.Namespace) -> int:
    """Every pair of records of FILE with Jaccard >= --threshold, computed on Spark."""
    from neardup_solr.spark import dedup, dedup_file
    from neardup_solr.spark.io import write_pairs_from_executors, write_pairs_parquet

    if not args.to_solr and args.dataset is not None:
        raise UsageError("--dataset applies to --to-solr only")
    outputs = [("out", args.out), ("groups", args.groups), ("keep", args.keep), ("records-out", args.records_out)]
    named = [(name, str(Path(path).resolve())) for name, path in outputs if path is not None and path != "-"]
    for i, (name, path) in enumerate(named):
        for other, same in named[:i]:
            if path == same:
                raise UsageError(f"--{other} and --{name} name the same file; give them different paths")
    pair_options = _options(args)
    snapshot = _snapshot(args)
    _check_outputs(args, *outputs[1:])
    settings = _settings(args)
    client = open_client(args) if args.to_solr else None
    started = time.monotonic()
    staging_parent = _staging_parent(args)
    spark = _session(args)
    with tempfile.TemporaryDirectory(prefix="neardup-spark-", dir=staging_parent) as staging:
        options = dict(settings=settings, lsh_params=_lsh(args), **_max_bucket(args),
                       similarity=pair_options.similarity, snapshot=snapshot, split_bucket=pair_options.split_bucket)
        if client is not None:  # the texts go to Solr too: read (and staged) first, then deduplicated
            source = _read(spark, args, args.file, staging)
            result = dedup(source.records, pair_options.threshold, **options)
        else:  # a line-format file the executors read is signed as it is read (dedup_file)
            result, source = dedup_file(spark, args.file, pair_options.threshold, fmt=args.format, staging_dir=staging,
                                        id_field=args.id_column, text_field=args.text_column,
                                        on_decode_error=args.on_decode_error, read_on=args.read_on, **options)
        # Written by the executors and streamed into place: the driver never holds the pairs.
        write_pairs_from_executors(result.pairs, args.out, staging)
        _save_snapshot(result, args.out)
        if args.parquet:
            write_pairs_parquet(result.pairs, args.parquet)
        s = result.stats
        measure = "IDF-weighted jaccard" if pair_options.similarity == "idf" else "jaccard"
        print(f"{s.verified_pairs} pairs with {measure} >= {pair_options.threshold} among {s.documents} records "
              f"({s.candidate_pairs} candidates, LSH {s.bands}x{s.rows}) in {time.monotonic() - started:.1f} s "
              f"-> {args.out}" + (f" and {args.parquet}" if args.parquet else ""))
        if s.oversized_buckets:
            limit = args.max_bucket or DEFAULT_MAX_BUCKET
            print(f"warning: {s.oversized_buckets} band bucket(s) over --max-bucket {limit} were split; "
                  f"{s.pairs_not_generated} pairs across their blocks were not generated", file=sys.stderr)
        if args.groups or args.keep or args.records_out:
            print(_write_groups(spark, args, result, source, staging))
        if client is not None:
            from neardup_solr.spark.solr import write_to_solr

            load = write_to_solr(source.records, result.signed, client, settings, dataset=args.dataset,
                                 weighted=pair_options.similarity == "idf")
            print(f"sent {load.sent} documents to {client.url}; {load.verify.format()}")
            if not load.verify.ok:
                return EXIT_INCOMPLETE
            from neardup_solr.engine.group_writeback import write_groups

            # Each document's group into the collection too, for folded searches (docs/folding.md).
            written = write_groups(client, ((r["id"], r["neighbor_id"]) for r in result.pairs.toLocalIterator()),
                                   dataset=args.dataset)
            print(f"groups written into the collection: {written.format()}")
        rejected = _report_rejected([source], result)
    return EXIT_REJECTED if rejected else 0


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


def _write_groups(spark, args: argparse.Namespace, result, source, staging: str) -> str:
    """The groups, keep list and deduplicated records a run was asked for, computed and written by the executors
    (:mod:`neardup_solr.spark.groups`, :mod:`neardup_solr.spark.records_out`); the line that says what was
    written."""
    from pyspark.sql import functions as F

    from neardup_solr.spark.groups import executor_groups, write_groups_from_executors
    from neardup_solr.spark.io import write_keep_list_from_executors

    # What the groups, the keep list and the kept records read: the ids, each record's row in the file (when it
    # was signed as read) and, to choose the longest, its length.
    wanted = ["id", "row"] + (["length"] if args.representative == "longest" else [])
    ids = result.signed.select(*(c for c in wanted if c in result.signed.columns))
    if not args.to_solr:
        # From here on only these columns are read: the executors keep them and give back the cached
        # records with their signatures and band keys (1.7 KB a document). Held, they left the groups'
        # aggregations no memory at 1,000,000 documents with a 4 GiB local driver (AGGREGATE_OUT_OF_MEMORY).
        ids = ids.localCheckpoint(eager=True)
        for frame in (result.signed, *result.cached):
            frame.unpersist()
    lengths = None
    if args.representative == "longest":
        lengths = (ids.select("id", "length") if "length" in ids.columns
                   else source.records.select("id", F.length("text").alias("length")))
    # The groups hold the ids that have a near duplicate, not the documents.
    groups = executor_groups(result.pairs, representative=args.representative, lengths=lengths)
    said = [f"{groups.count} groups holding {groups.members_count} documents"]
    if args.groups:
        write_groups_from_executors(groups, args.groups, staging)
        said[0] += f" -> {args.groups}"
    if args.keep:
        # Every id but the groups' other members, sorted and written by the executors.
        kept = write_keep_list_from_executors(ids, groups.dropped, args.keep, staging)
        said.append(f"keep list of {kept} ids -> {args.keep}")
    if args.records_out:
        from neardup_solr.spark.records_out import write_kept_records

        written = write_kept_records(spark, args.file, args.records_out, staging, signed=ids,
                                     dropped=groups.dropped, lines=source.lines, fmt=args.format,
                                     id_field=args.id_column, on_decode_error=args.on_decode_error)
        said.append(f"{written} records kept -> {args.records_out}")
    return "; ".join(said)


def cmd_join(args: argparse.Namespace) -> int:
    """Every pair (LEFT record, RIGHT record) with Jaccard >= --threshold, computed on Spark."""
    from neardup_solr.spark import join
    from neardup_solr.spark.io import write_pairs_from_executors, write_pairs_parquet

    pair_options = _options(args)
    snapshot = _snapshot(args)
    _check_outputs(args)
    started = time.monotonic()
    staging_parent = _staging_parent(args)
    spark = _session(args)
    with tempfile.TemporaryDirectory(prefix="neardup-spark-", dir=staging_parent) as staging:
        left = _read(spark, args, args.left, str(Path(staging) / "left"))
        right = _read(spark, args, args.right, str(Path(staging) / "right"))
        result = join(left.records, right.records, pair_options.threshold, settings=_settings(args),
                      lsh_params=_lsh(args), **_max_bucket(args), one_to_one_matching=args.one_to_one,
                      similarity=pair_options.similarity, snapshot=snapshot)
        write_pairs_from_executors(result.pairs, args.out, staging)
        _save_snapshot(result, args.out)
        if args.parquet:
            write_pairs_parquet(result.pairs, args.parquet)
        measure = "IDF-weighted jaccard" if pair_options.similarity == "idf" else "jaccard"
        print(f"{result.stats.verified_pairs} cross pairs with {measure} >= {pair_options.threshold} ({result.stats.documents} records, "
              f"{result.stats.candidate_pairs} candidates) in {time.monotonic() - started:.1f} s -> {args.out}")
        rejected = _report_rejected([left, right], result)
    return EXIT_REJECTED if rejected else 0


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--threshold", type=number("--threshold", "threshold"), required=True,
                   help="keep pairs whose exact similarity (see --similarity) is >= this")
    p.add_argument("--out", required=True, help="pairs file (TSV, as report --threshold writes)")
    p.add_argument("--parquet", default=None, help="also write the pairs as a Parquet directory here")
    p.add_argument("--similarity", choices=SIMILARITIES, default=None,
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
    add_solr_options(p)
    p.set_defaults(func=_explaining_memory_errors(cmd_dedup))

    p = jobs.add_parser("join", help="every LEFT x RIGHT pair above --threshold, on Spark",
                        description="Like spark dedup, but only pairs of a LEFT record and a RIGHT record.")
    p.add_argument("left")
    p.add_argument("right")
    _add_common(p)
    p.add_argument("--one-to-one", action="store_true", help="keep each id in at most one pair, best first")
    p.set_defaults(func=_explaining_memory_errors(cmd_join))
