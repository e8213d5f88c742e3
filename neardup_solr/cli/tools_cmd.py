"""Commands that need no Solr of their own: evaluate, demo, tune."""

from __future__ import annotations

import argparse
import sys

from neardup_solr.cli.common import number, refuse_unless
from neardup_solr.errors import UsageError
from neardup_solr.pairs.evaluate import evaluate_files
from neardup_solr.pairs.lsh import LSHParams, curve_table, optimal_params, recall_params, plot_s_curve
from neardup_solr.io.outputs import check_output_path


def cmd_evaluate(args: argparse.Namespace) -> int:
    """Precision, recall and F1 of a pairs file against a gold file."""

    result = evaluate_files(args.pairs, args.gold)
    print(result.format())
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """The restaurant demo, end to end."""
    from neardup_solr.cli.demo import run_demo

    run_demo(solr_url=args.solr_url, workdir=args.workdir, out=sys.stdout)
    return 0


def cmd_tune(args: argparse.Namespace) -> int:
    """The LSH bands for a threshold, and their S-curve."""

    if (args.bands is None) != (args.rows_per_band is None):
        raise UsageError("give --bands and --rows-per-band together (to show that curve), or neither (to choose)")
    chosen = args.bands is not None
    refuse_unless(args, not chosen, {"min_recall": "--min-recall", "false_positive_weight": "--false-positive-weight",
                                     "false_negative_weight": "--false-negative-weight"},
                  "with --bands and --rows-per-band, which show a given curve instead of choosing one")
    refuse_unless(args, args.min_recall is None, {"false_positive_weight": "--false-positive-weight",
                                                  "false_negative_weight": "--false-negative-weight"},
                  "with --min-recall, which chooses by recall instead of by error areas")
    if chosen and args.bands * args.rows_per_band > args.num_hashes:
        raise UsageError(f"--bands x --rows-per-band = {args.bands * args.rows_per_band} exceeds --num-hashes "
                         f"{args.num_hashes}; lower them or raise --num-hashes")
    fp = 0.5 if args.false_positive_weight is None else args.false_positive_weight
    fn = 0.5 if args.false_negative_weight is None else args.false_negative_weight
    if fp == 0 and fn == 0:
        raise UsageError("--false-positive-weight and --false-negative-weight cannot both be 0")
    if args.plot:
        check_output_path(args.plot, name="plot")  # before the work, not after it
    if chosen:
        params = LSHParams(args.bands, args.rows_per_band)
    elif args.min_recall is not None:
        params = recall_params(args.threshold, args.num_hashes, args.min_recall)
    else:
        params = optimal_params(args.threshold, args.num_hashes, fp, fn)
    print(f"threshold {args.threshold}, {args.num_hashes} hashes -> bands b={params.bands}, rows r={params.rows} "
          f"(uses {params.bands * params.rows} values; curve midpoint ~{(1 / params.bands) ** (1 / params.rows):.3f})")
    print("similarity  P(candidate) = 1-(1-s^r)^b")
    for s, p in curve_table(params):
        print(f"  {s:9.2f}  {p:.6f}")
    if args.plot:
        plot_s_curve(params, args.plot, threshold=args.threshold)
        print(f"S-curve written to {args.plot}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add evaluate, demo and tune."""
    p = sub.add_parser("evaluate", help="precision, recall and F1 of a pairs file against a gold file")
    p.add_argument("pairs")
    p.add_argument("gold")
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser("demo", help="the restaurant data set, end to end, every mode side by side")
    p.add_argument("--workdir", default=None, help="where to write the prepared data and reports")
    # Only the URL: the demo opens its own client, so --timeout/--max-wait would be silently ignored.
    p.add_argument("--solr-url", default=None,
                   help="core URL (default: $SOLR_URL, else a local Solr the demo starts)")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("tune", help="choose LSH bands and rows for a Jaccard threshold")
    p.add_argument("--threshold", type=number("--threshold", "threshold"), default=0.8,
                   help="the Jaccard similarity to find (default 0.8)")
    p.add_argument("--num-hashes", type=number("--num-hashes", "num_hashes"), default=128,
                   help="signature length (default 128)")
    p.add_argument("--false-positive-weight", type=number("--false-positive-weight", "error_weight"), default=None,
                   help="weight of the area of dissimilar pairs let through (default 0.5)")
    p.add_argument("--false-negative-weight", type=number("--false-negative-weight", "error_weight"), default=None,
                   help="weight of the area of similar pairs missed (default 0.5)")
    p.add_argument("--min-recall", type=number("--min-recall", "min_recall"), default=None,
                   help="instead of minimising error areas, find pairs at the threshold with at least this "
                        "probability (how indexes choose their bands: 0.95)")
    p.add_argument("--bands", type=number("--bands", "bands"), default=None, help="show this b instead of choosing")
    p.add_argument("--rows-per-band", type=number("--rows-per-band", "rows_per_band"), default=None,
                   help="show this r instead of choosing")
    p.add_argument("--plot", default=None, help="write the S-curve to this PNG")
    p.set_defaults(func=cmd_tune)
