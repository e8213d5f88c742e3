"""``neardup-solr match-records``: record matching field by field (:mod:`neardup_solr.engine.records`)."""

from __future__ import annotations

import argparse

from neardup_solr.cli.common import number, refuse_unless
from neardup_solr.validation import Limit

PROBABILITY = Limit("float", 0.0, 1.0, unit="a match probability")
CANDIDATE_SIMILARITY = Limit("float", 0.0, 1.0, open_min=True, unit="an IDF-weighted Jaccard similarity")
RANDOM_PAIRS = Limit("int", 1, 10_000_000, unit="random pairs")


def cmd_match_records(args: argparse.Namespace) -> int:
    """Train a model on the records (or load one), score the candidate pairs, write the matches."""
    from neardup_solr.engine.records import DEFAULT_CANDIDATE_THRESHOLD, match_records, read_field_records
    from neardup_solr.errors import UsageError
    from neardup_solr.io.outputs import check_output_path
    from neardup_solr.pairs.evaluate import read_pairs
    from neardup_solr.pairs.fellegi_sunter import FellegiSunterModel
    from neardup_solr.pairs.similar_pairs import write_pairs

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


def register(sub: argparse._SubParsersAction) -> None:
    """Add match-records."""
    p = sub.add_parser("match-records", help="match records field by field with a trained probabilistic model",
                       description="Match records field by field: candidate pairs by IDF over the words and 4-grams "
                                   "of the fields, each scored by a Fellegi-Sunter model trained on the records "
                                   "without labels (or loaded with --model). No Solr needed.")
    p.add_argument("file", metavar="FILE", help="CSV, JSONL or Parquet records with an id and the columns")
    p.add_argument("--fields-from", default=None, metavar="COLUMN:KIND,...",
                   help="the compared columns and their kinds: name, text, date, number, code, exact "
                        "(e.g. name:name,address:text,born:date,phone:code; a column without a kind is text)")
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
