"""Record matching field by field: ``match-records`` over a file (:mod:`neardup_solr.engine.records`), and over a
collection, one record at a time: ``index-records``, ``train-records``, ``match-online``
(:mod:`neardup_solr.engine.records_online`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from neardup_solr.cli.common import add_solr_options, number, open_client, refuse_unless
from neardup_solr.validation import Limit
from neardup_solr.errors import UsageError
from neardup_solr.io.outputs import check_output_path
from neardup_solr.pairs.evaluate import read_pairs
from neardup_solr.pairs.similar_pairs import write_pairs
from neardup_solr.io.readers import input_format
from neardup_solr.solr.maintenance import clear

PROBABILITY = Limit("float", 0.0, 1.0, unit="a match probability")
CANDIDATE_SIMILARITY = Limit("float", 0.0, 1.0, open_min=True, unit="an IDF-weighted Jaccard similarity")
RANDOM_PAIRS = Limit("int", 1, 10_000_000, unit="random pairs")
QUERIES = Limit("int", 2, 10_000_000, unit="records")


def cmd_match_records(args: argparse.Namespace) -> int:
    """Train a model on the records (or load one), score the candidate pairs, write the matches."""
    from neardup_solr.engine.records import DEFAULT_CANDIDATE_THRESHOLD, match_records, read_field_records
    from neardup_solr.pairs.fellegi_sunter import FellegiSunterModel

    refuse_unless(args, args.candidates_from is None, {"candidate_threshold": "--candidate-threshold"},
                  "with --candidates-from, which gives the candidates")
    if args.fields_from is None and args.model is None:
        raise UsageError("give --fields-from (the columns and their kinds) or --model (a trained model)")
    check_output_path(args.out, name="out")
    if args.candidate_threshold is None:
        args.candidate_threshold = DEFAULT_CANDIDATE_THRESHOLD
    if args.save_model:
        check_output_path(args.save_model, name="save_model")
    model = FellegiSunterModel.load(args.model) if args.model else None
    fields = args.fields_from if args.fields_from is not None else model.comparisons  # type: ignore[union-attr]
    records, rejected = read_field_records(args.file, fields, fmt=args.format, id_field=args.id_column)
    right = None
    if args.link:
        right, more = read_field_records(args.link, fields, fmt=args.format, id_field=args.id_column)
        rejected += more
    given = sorted(read_pairs(args.candidates_from)) if args.candidates_from else None
    result = match_records(records, fields, right=right, model=model, threshold=args.threshold,
                           candidate_threshold=args.candidate_threshold, one_to_one=args.one_to_one,
                           random_pairs=args.random_pairs, seed=args.seed, candidates=given)
    write_pairs(result.pairs, args.out)
    if args.save_model:
        result.model.save(args.save_model)
    read = len(records) + (len(right) if right is not None else 0)
    source = f"from {args.candidates_from}" if args.candidates_from else \
        f"IDF grams >= {args.candidate_threshold:g}"
    if model is not None:
        scored_by = f"model {args.model}"
    else:
        scored_by = f"model trained on them, lambda {result.model.lambda_:.3f}"
        scored_by += f", saved -> {args.save_model}" if args.save_model else ""
    print(f"{len(result.pairs)} {'cross ' if right is not None else ''}pairs with match probability >= "
          f"{args.threshold:g} among {result.candidates} candidates ({source}) "
          f"from {read} records in {result.seconds:.1f} s -> {args.out} ({scored_by})")
    if rejected:
        print(f"{len(rejected)} records rejected (the first: {rejected[0]})")
        return 1
    return 0


def cmd_index_records(args: argparse.Namespace) -> int:
    """Index field records with their fields and candidate tokens; exit 1 when some were rejected."""
    from neardup_solr.engine.records_online import index_field_records

    input_format(args.file, args.format)  # a missing or binary input is refused before Solr is touched
    rejects = args.rejects or f"{Path(args.file).name}.rejects.jsonl"
    check_output_path(rejects, name="rejects_path")
    client = open_client(args)
    if args.clear_all:
        deleted = clear(client, None, everything=True)
        print(f"cleared the whole collection: {deleted} documents deleted from {client.url}")
    summary = index_field_records(client, args.file, args.fields_from, fmt=args.format, id_field=args.id_column,
                                  rejects_path=rejects, progress=not args.quiet, resume=args.resume)
    print(summary.format())
    return 1 if summary.rejected else 0


def cmd_train_records(args: argparse.Namespace) -> int:
    """Train the model on the indexed field records and store it with the collection."""
    from neardup_solr.engine.records_online import train_stored_model
    from neardup_solr.solr.record_model import fields_spec

    client = open_client(args)
    stored = train_stored_model(client, args.fields_from, queries=args.queries, random_pairs=args.random_pairs,
                                seed=args.seed)
    assert stored.model is not None
    training = stored.model.training
    print(f"model revision {stored.revision} stored in {client.url}: {fields_spec(stored.model.comparisons)}, "
          f"trained on the {training['candidate_pairs']} candidate pairs of {training['queries']} of "
          f"{stored.trained_on} records and {training['random_pairs']} random pairs, lambda "
          f"{stored.model.lambda_:.3f} ({training['seconds']:.1f} s)")
    return 0


def cmd_match_online(args: argparse.Namespace) -> int:
    """Match each record of a file against the collection with its stored model; write the pairs."""
    from neardup_solr.engine.records_online import match_file_online

    check_output_path(args.out, name="out")
    client = open_client(args)
    result = match_file_online(client, args.file, threshold=args.threshold, fmt=args.format,
                               id_field=args.id_column)
    write_pairs(result.pairs, args.out)
    print(f"{len(result.pairs)} pairs with match probability >= {args.threshold:g} from {result.records} records "
          f"matched one at a time against {client.url} (model revision {result.revision}) in "
          f"{result.seconds:.1f} s -> {args.out}")
    if result.rejected:
        print(f"{len(result.rejected)} records rejected (the first: {result.rejected[0]})", file=sys.stderr)
        return 1
    return 0


def _add_fields_from(p: argparse.ArgumentParser, *, required: bool) -> None:
    p.add_argument("--fields-from", required=required, default=None, metavar="COLUMN:KIND,...",
                   help="the compared columns and their kinds: name, text, date, number, code, exact "
                        "(e.g. name:name,address:text,born:date,phone:code; a column without a kind is text)")


def _register_online(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("index-records", help="index field records into the collection, for match-online",
                       description="Index records with their fields: each value is kept, and the words and "
                                   "4-grams of the values (dates in one form) are indexed as candidate tokens. "
                                   "The fields and their kinds are stored with the collection; then train a "
                                   "model with train-records.")
    p.add_argument("file", metavar="FILE", help="CSV, JSONL or Parquet records with an id and the columns")
    _add_fields_from(p, required=True)
    p.add_argument("--format", choices=["jsonl", "csv", "parquet"], default=None,
                   help="input format (default: from the file name)")
    p.add_argument("--id-column", default="id", help="id key/column (default id)")
    p.add_argument("--rejects", default=None, help="JSONL file for rejected records (default <file>.rejects.jsonl)")
    p.add_argument("--resume", action="store_true", help="continue an interrupted run from its checkpoint")
    p.add_argument("--clear-all", action="store_true",
                   help="first delete everything in the collection, stored settings and model included")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    add_solr_options(p)
    p.set_defaults(func=cmd_index_records)

    p = sub.add_parser("train-records", help="train the record model on the indexed field records and store it",
                       description="Train a Fellegi-Sunter model on the field records of the collection (u from "
                                   "random pairs, m and u by EM on the candidate pairs, as match-records does) and "
                                   "store it with the collection as its next revision. Run it again to retrain.")
    p.add_argument("--fields-from", default=None, metavar="COLUMN:KIND,...",
                   help="the compared columns and their kinds (default: those the records were indexed with)")
    p.add_argument("--queries", type=number("--queries", QUERIES), default=20_000,
                   help="records drawn at random whose candidates are trained on (default 20000; all of them in "
                        "a smaller collection)")
    p.add_argument("--random-pairs", type=number("--random-pairs", RANDOM_PAIRS), default=50_000,
                   help="random pairs u starts from (default 50000)")
    p.add_argument("--seed", type=number("--seed", "seed"), default=0, help="seed of the draws (default 0)")
    add_solr_options(p)
    p.set_defaults(func=cmd_train_records)

    p = sub.add_parser("match-online", help="match records one at a time against the collection's field records",
                       description="Match each record of FILE against the field records of the collection, one "
                                   "lookup each, scored by the stored model (what POST /v1/match does).")
    p.add_argument("file", metavar="FILE", help="CSV, JSONL or Parquet records with the columns (and an id)")
    p.add_argument("--out", required=True, help="the matched pairs (id, neighbor_id, probability)")
    p.add_argument("--threshold", type=number("--threshold", PROBABILITY), default=0.5,
                   help="the match probability a pair needs (default 0.5)")
    p.add_argument("--format", choices=["jsonl", "csv", "parquet"], default=None,
                   help="input format (default: from the file name)")
    p.add_argument("--id-column", default="id", help="id key/column (default id)")
    add_solr_options(p)
    p.set_defaults(func=cmd_match_online)


def register(sub: argparse._SubParsersAction) -> None:
    """Add match-records, index-records, train-records and match-online."""
    p = sub.add_parser("match-records", help="match records field by field with a trained probabilistic model",
                       description="Match records field by field: candidate pairs by IDF over the words and 4-grams "
                                   "of the fields, each scored by a Fellegi-Sunter model trained on the records "
                                   "without labels (or loaded with --model). No Solr needed.")
    p.add_argument("file", metavar="FILE", help="CSV, JSONL or Parquet records with an id and the columns")
    _add_fields_from(p, required=False)
    p.add_argument("--link", default=None, metavar="FILE2",
                   help="match FILE against this second source instead of within FILE")
    p.add_argument("--out", required=True, help="the matched pairs (id, neighbor_id, probability)")
    p.add_argument("--threshold", type=number("--threshold", PROBABILITY), default=0.5,
                   help="the match probability a pair needs (default 0.5)")
    p.add_argument("--candidate-threshold", type=number("--candidate-threshold", CANDIDATE_SIMILARITY),
                   default=None, help="the IDF-weighted Jaccard over grams a pair needs to be scored (default 0.15)")
    p.add_argument("--candidates-from", default=None, metavar="PAIRS",
                   help="score these pairs (a pairs file, e.g. from report --similarity idf --idf-tokens grams "
                        "--threshold 0.15 --method lsh on the indexed records) instead of finding candidates here")
    p.add_argument("--one-to-one", action="store_true", help="keep each record in at most one pair (best first)")
    p.add_argument("--model", default=None, help="score with this trained model (JSON) instead of training one")
    p.add_argument("--save-model", default=None, help="write the trained model (JSON) here")
    p.add_argument("--random-pairs", type=number("--random-pairs", RANDOM_PAIRS), default=50_000,
                   help="random pairs u starts from (default 50000)")
    p.add_argument("--seed", type=number("--seed", "seed"), default=0, help="seed of the random pairs (default 0)")
    p.add_argument("--format", choices=["jsonl", "csv", "parquet"], default=None,
                   help="input format (default: from the file name)")
    p.add_argument("--id-column", default="id", help="id key/column (default id)")
    p.set_defaults(func=cmd_match_records)
    _register_online(sub)
