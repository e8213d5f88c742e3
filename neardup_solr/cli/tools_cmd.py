"""Commands that need no Solr of their own: evaluate, demo, tune."""

from __future__ import annotations

import sys

from .common import add_solr_options


def cmd_evaluate(args) -> int:
    from ..evaluate import evaluate_files

    result = evaluate_files(args.pairs, args.gold)
    print(result.format())
    return 0


def cmd_demo(args) -> int:
    from ..demo import run_demo

    run_demo(solr_url=args.solr_url, workdir=args.workdir, out=sys.stdout)
    return 0


def cmd_tune(args) -> int:
    from ..lsh import LSHParams, curve_table, optimal_params, recall_params

    if args.bands and args.rows_per_band:
        params = LSHParams(args.bands, args.rows_per_band)
    elif args.min_recall is not None:
        params = recall_params(args.threshold, args.num_hashes, args.min_recall)
    else:
        params = optimal_params(args.threshold, args.num_hashes, args.false_positive_weight,
                                args.false_negative_weight)
    print(f"threshold {args.threshold}, {args.num_hashes} hashes -> bands b={params.bands}, rows r={params.rows} "
          f"(uses {params.bands * params.rows} values; curve midpoint ~{(1 / params.bands) ** (1 / params.rows):.3f})")
    print("similarity  P(candidate) = 1-(1-s^r)^b")
    for s, p in curve_table(params):
        print(f"  {s:9.2f}  {p:.6f}")
    if args.plot:
        from ..lsh import plot_s_curve

        plot_s_curve(params, args.plot, threshold=args.threshold)
        print(f"S-curve written to {args.plot}")
    return 0


def register(sub) -> None:
    p = sub.add_parser("evaluate", help="precision, recall and F1 of a pairs file against a gold file")
    p.add_argument("pairs")
    p.add_argument("gold")
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser("demo", help="the restaurant data set, end to end, every mode side by side")
    p.add_argument("--workdir", default=None, help="where to write the prepared data and reports")
    add_solr_options(p)
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("tune", help="choose LSH bands and rows for a Jaccard threshold")
    p.add_argument("--threshold", type=float, default=0.8)
    p.add_argument("--num-hashes", type=int, default=128)
    p.add_argument("--false-positive-weight", type=float, default=0.5)
    p.add_argument("--false-negative-weight", type=float, default=0.5)
    p.add_argument("--min-recall", type=float, default=None,
                   help="instead of minimising error areas, find pairs at the threshold with at least this "
                        "probability (how indexes choose their bands: 0.95)")
    p.add_argument("--bands", type=int, default=None, help="show this b instead of choosing")
    p.add_argument("--rows-per-band", type=int, default=None, help="show this r instead of choosing")
    p.add_argument("--plot", default=None, help="write the S-curve to this PNG")
    p.set_defaults(func=cmd_tune)
