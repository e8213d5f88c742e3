"""``neardup-solr``: a thin command line over the library. Every command is also a Python call.

Errors are printed as one line (no traceback) and set a non-zero exit code:
2 for usage and input errors, 3 when Solr is unavailable, 1 when records were rejected.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

from . import settings
from .errors import NeardupError, SolrUnavailableError

log = logging.getLogger("neardup_solr")

EXIT_REJECTED = 1
EXIT_USAGE = 2
EXIT_UNAVAILABLE = 3


# ---------------------------------------------------------------------- helpers
def _client(args):
    from .solr_client import SolrClient

    client = SolrClient(args.solr_url or None, timeout=args.timeout)
    client.check()  # one clear line up front when Solr is down or the core is missing
    return client


def _add_solr_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--solr-url", default=os.environ.get("SOLR_URL"),
                   help="core URL (default: $SOLR_URL, else the local launcher's http://127.0.0.1:8983/solr/neardup)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per HTTP call (default 60)")


def _add_search_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mode", choices=["shingles", "minhash", "lsh"], default="shingles",
                   help="candidate query: shared shingles, shared MinHash values, or shared LSH bands")
    p.add_argument("--max-edit-distance", type=int, default=2,
                   help="keep candidates within this word edit distance (default 2; -1 = no limit)")
    p.add_argument("--min-jaccard", type=float, default=None, help="keep candidates with exact Jaccard >= this")
    p.add_argument("--rows", type=int, default=10, help="candidates asked from Solr per lookup (default 10)")
    p.add_argument("--first-word-filter", dest="first_word_filter", action="store_true", default=True,
                   help="only candidates with the same first word (default)")
    p.add_argument("--no-first-word-filter", dest="first_word_filter", action="store_false")
    p.add_argument("--num-hashes", type=int, default=None,
                   help="MinHash values to query with in minhash mode (default: all the index holds)")
    p.add_argument("--ngram", type=int, default=None,
                   help="expected shingle size; the index's own setting is used, this only checks it")


def _searcher(args):
    from .searcher import Searcher

    searcher = Searcher(_client(args))
    ngram = getattr(args, "ngram", None)
    if ngram is not None and ngram != searcher.settings.ngram:
        raise ValueError(f"this collection was indexed with {searcher.settings.ngram}-shingles, not {ngram}; "
                         f"re-index with --ngram {ngram} to search with it")
    return searcher


def _field_weights(text: str | None) -> dict[str, float] | None:
    if not text:
        return None
    weights = {}
    for part in text.split(","):
        name, sep, value = part.partition("=")
        try:
            weights[name.strip()] = float(value)
        except ValueError:
            raise ValueError(f"--field-weights wants column=weight pairs like name=2,city=0.5; got {part!r}")
        if not sep or not name.strip():
            raise ValueError(f"--field-weights wants column=weight pairs like name=2,city=0.5; got {part!r}")
    return weights


def _max_distance(args):
    return None if args.max_edit_distance is not None and args.max_edit_distance < 0 else args.max_edit_distance


# ---------------------------------------------------------------------- commands
def cmd_solr(args) -> int:
    from .solr_local import LocalSolr

    solr = LocalSolr(port=args.port, data_dir=args.data_dir, heap=args.heap)
    if args.action == "build":
        solr.build()
        print(f"Solr {settings.SOLR_VERSION} launcher ready ({solr.launcher_dir})")
    elif args.action == "start":
        result = solr.start()
        if result.already_running:
            print(f"Solr is already running: {result.url}")
        else:
            print(f"Solr {settings.SOLR_VERSION} started in {result.seconds:.1f} s: {result.url}")
            print(f"  data: {solr.data_dir}  (stop with: neardup-solr solr stop --port {args.port or solr.port})")
    elif args.action == "stop":
        if solr.stop():
            print(f"Solr on port {solr.port} stopped")
        else:
            print(f"no Solr of ours is running on port {solr.port} (data dir {solr.data_dir}); nothing to stop")
    else:
        status = solr.status()
        if args.json:
            print(json.dumps(status, indent=2))
        elif status["running"]:
            print(f"running: pid {status['pid']}, {status['core_url']} (core {'OK' if status['core_ok'] else 'NOT answering'})")
        else:
            print(f"not running (port {solr.port}, data dir {solr.data_dir})")
            return 1
    return 0


def cmd_index(args) -> int:
    from .documents import IndexSettings
    from .indexer import Indexer, IndexingInterrupted

    client = _client(args)
    client.check()
    if args.clear:
        client.delete_all()
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
        return EXIT_UNAVAILABLE
    print(summary.format())
    return EXIT_REJECTED if summary.rejected else 0


def _print_matches(source_label: str, source_text: str, matches) -> None:
    print(f"{source_label}: {source_text}")
    for m in matches:
        tag = "exact" if m.exact else f"distance {m.edit_distance}"
        est = f", est. {m.estimated_jaccard:.2f}" if m.estimated_jaccard is not None else ""
        print(f"  {m.id}: {m.content}  ({tag}, jaccard {m.jaccard:.3f}{est}, overlap {m.score:g})")


def cmd_near_dups(args) -> int:
    searcher = _searcher(args)
    kw = dict(mode=args.mode, max_distance=_max_distance(args), rows=args.rows,
              first_word_filter=args.first_word_filter, num_hashes=args.num_hashes, min_jaccard=args.min_jaccard)
    if (args.id is None) == (args.text is None):
        print("error: give a document id or --text", file=sys.stderr)
        return EXIT_USAGE
    if args.min_share is not None:
        text = args.text if args.text is not None else searcher.get_by_id(args.id).content
        shared = [(i, share) for i, share in searcher.find_by_shingle_share(text, args.min_share) if i != args.id]
        if args.json:
            print(json.dumps([{"id": i, "share": share} for i, share in shared], ensure_ascii=False, indent=2))
        else:
            for doc_id, share in shared:
                print(f"{doc_id}\t{share:.3f}")
            if not shared:
                print(f"no document holds {args.min_share:.0%} of its shingles")
        return 0
    if args.id is not None:
        source = searcher.get_by_id(args.id)
        matches = searcher.find_near_dups(args.id, **kw)
        label, text = source.id, source.content
    else:
        matches = searcher.find_near_dups_of_text(args.text, **kw)
        label, text = "text", args.text
    if args.json:
        print(json.dumps([m.__dict__ for m in matches], ensure_ascii=False, indent=2))
    elif matches:
        _print_matches(label, text, matches)
    else:
        print(f"no near duplicates of {label} within the limits")
    return 0


def cmd_report(args) -> int:
    from .report import report_near_dups

    searcher = _searcher(args)
    if args.threshold is not None:
        return _threshold_report(args, searcher)

    def show(doc, matches):
        print(f"{doc.id}: {doc.content}")
        for m in matches:
            print(f"{m.id}: {m.content} ({m.edit_distance})")
        print("==")

    summary, _ = report_near_dups(
        searcher, args.out, args.start_id, args.end_id, _max_distance(args), args.mode,
        rows=args.rows, first_word_filter=args.first_word_filter, num_hashes=args.num_hashes,
        min_jaccard=args.min_jaccard, workers=args.workers, progress=not args.quiet,
        on_group=None if args.quiet else show,
    )
    print(summary.format())
    return 0


def _threshold_report(args, searcher) -> int:
    import time

    from .threshold import ThresholdFinder, threshold_pairs, write_pairs

    started = time.monotonic()
    if args.method == "lsh":
        from .collection import dedupe_collection

        if args.similarity != "jaccard":
            raise ValueError("--method lsh verifies plain Jaccard; use --method exact for --similarity idf")
        result = dedupe_collection(searcher.client, args.threshold, dataset=args.dataset, progress=not args.quiet)
        pairs = result.pairs
    else:
        finder = ThresholdFinder(searcher, threshold=args.threshold, similarity=args.similarity,
                                 field_weights=_field_weights(args.field_weights))
        pairs = threshold_pairs(finder, workers=args.workers, progress=not args.quiet, dataset=args.dataset)
    write_pairs(pairs, args.out)
    print(f"{len(pairs)} pairs with {args.similarity} similarity >= {args.threshold} "
          f"in {time.monotonic() - started:.1f} s -> {args.out}")
    return 0


def cmd_join(args) -> int:
    from .readers import Record, RecordReader
    from .searcher import Searcher
    from .threshold import ThresholdFinder, join_pairs, one_to_one, write_pairs

    searcher = Searcher(_client(args))
    reader = RecordReader(args.file, args.format, id_field=args.id_column, text_field=args.text_column)
    records = [r for r in reader if isinstance(r, Record)]
    if reader.stats.invalid:
        print(f"warning: {reader.stats.invalid} unreadable record(s) in {args.file} skipped", file=sys.stderr)
    finder = ThresholdFinder(searcher, threshold=args.threshold, similarity=args.similarity,
                             field_weights=_field_weights(args.field_weights))
    pairs = join_pairs(finder, records, indexed_dataset=args.indexed_dataset, workers=args.workers,
                       progress=not args.quiet)
    if args.one_to_one:
        pairs = one_to_one(pairs)
    write_pairs(pairs, args.out)
    print(f"{len(pairs)} cross pairs (streamed {len(records)} records) with {args.similarity} similarity >= "
          f"{args.threshold} -> {args.out}")
    return 0


def cmd_groups(args) -> int:
    from .groups import group_pairs, keep_list, read_distance_pairs, write_groups_jsonl, write_keep_list

    pairs = read_distance_pairs(args.pairs)
    with open(args.pairs, encoding="utf-8") as fh:
        header = fh.readline()
    if "similarity" in header:
        # Threshold reports carry a similarity; groups record the largest Jaccard *distance* inside them.
        pairs = [(a, b, None if s is None else round(1.0 - s, 6)) for a, b, s in pairs]
    texts = None
    all_ids = None
    if args.representative == "longest" or args.with_singletons:
        from .report import iter_documents
        from .searcher import Searcher

        docs = list(iter_documents(Searcher(_client(args))))
        texts = {d.id: d.content for d in docs}
        all_ids = list(texts) if args.with_singletons else None
    groups = group_pairs(pairs, representative=args.representative, texts=texts)
    write_groups_jsonl(groups, args.out)
    kept = keep_list(groups, all_ids)
    if args.keep:
        write_keep_list(kept, args.keep)
    members = sum(len(g.members) for g in groups)
    print(f"{len(groups)} groups holding {members} documents -> {args.out}"
          + (f"; keep list of {len(kept)} ids -> {args.keep}" if args.keep else ""))
    return 0


def cmd_evaluate(args) -> int:
    from .evaluate import evaluate_files

    result = evaluate_files(args.pairs, args.gold)
    print(result.format())
    return 0


def cmd_demo(args) -> int:
    from .demo import run_demo

    run_demo(solr_url=args.solr_url, workdir=args.workdir, out=sys.stdout)
    return 0


def cmd_tune(args) -> int:
    from .lsh import LSHParams, curve_table, optimal_params, recall_params

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
        from .lsh import plot_s_curve

        plot_s_curve(params, args.plot, threshold=args.threshold)
        print(f"S-curve written to {args.plot}")
    return 0


# ---------------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="neardup-solr", description="Find near-duplicate documents with Apache Solr.")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-vv for debug)")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("solr", help="run the local Solr (no Docker needed)")
    p.add_argument("action", choices=["start", "stop", "status", "build"])
    p.add_argument("--port", type=int, default=None, help=f"port (default $NEARDUP_SOLR_PORT or {settings.DEFAULT_PORT})")
    p.add_argument("--data-dir", default=None, help="Solr home and index (default ~/.neardup-solr/solr-<port>)")
    p.add_argument("--heap", default=None, help="Java heap, e.g. 2g (default $NEARDUP_SOLR_HEAP or 2g)")
    p.add_argument("--json", action="store_true", help="status as JSON")
    p.set_defaults(func=cmd_solr)

    p = sub.add_parser("index", help="index a file of records")
    p.add_argument("file")
    p.add_argument("--format", choices=["lines", "tsv", "jsonl", "csv"], default=None,
                   help="input format (default: from the file name; 'lines' = '<id> <text>')")
    p.add_argument("--id-column", default="id", help="id key/column for jsonl and csv (default id)")
    p.add_argument("--text-column", default="text",
                   help="text key/column for jsonl and csv (default text); several, comma-separated, are joined "
                        "and also indexed per column for --field-weights")
    p.add_argument("--on-decode-error", choices=["latin-1", "reject", "replace"], default="latin-1",
                   help="lines that are not UTF-8: decode as Latin-1 (default), reject, or replace bad bytes")
    p.add_argument("--batch-size", type=int, default=500)
    p.add_argument("--commit-every", type=int, default=None, help="also commit every N documents")
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
    p.add_argument("--clear", action="store_true", help="delete everything in the collection first")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    _add_solr_options(p)
    p.set_defaults(func=cmd_index)

    p = sub.add_parser("near-dups", help="near duplicates of one document or of a new text")
    p.add_argument("id", nargs="?", default=None)
    p.add_argument("--text", default=None, help="a text that is not in the index")
    p.add_argument("--min-share", type=float, default=None,
                   help="instead: every document holding at least this share of the text's shingles "
                        "(write-up 003's lookup; exact duplicates by MD5 first)")
    p.add_argument("--json", action="store_true")
    _add_search_options(p)
    _add_solr_options(p)
    p.set_defaults(func=cmd_near_dups)

    p = sub.add_parser("report", help="all near-duplicate pairs of the collection as TSV")
    p.add_argument("--out", required=True, help="TSV file to write")
    p.add_argument("--start-id", default=None)
    p.add_argument("--end-id", default=None)
    p.add_argument("--workers", type=int, default=1, help="lookups in flight at once (default 1)")
    p.add_argument("--threshold", type=float, default=None,
                   help="threshold mode: every pair with similarity >= this, verified exactly (no row cap, no "
                        "first-word filter); writes id, neighbor_id, similarity")
    p.add_argument("--similarity", choices=["jaccard", "idf"], default="jaccard",
                   help="threshold mode: shingle Jaccard (default) or IDF-weighted word Jaccard")
    p.add_argument("--method", choices=["exact", "lsh"], default="exact",
                   help="threshold mode candidates: 'exact' = one bounded query per document (complete), "
                        "'lsh' = LSH bands over exported signatures (fast on large collections)")
    p.add_argument("--dataset", default=None, help="threshold mode: only pairs within this data set")
    p.add_argument("--field-weights", default=None,
                   help="with --similarity idf on records indexed from several text columns: column=weight,... "
                        "(e.g. name=2,city=0.5; unlisted columns weigh 1)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar or listing")
    _add_search_options(p)
    _add_solr_options(p)
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("join", help="similarity join: stream a file against the indexed data set")
    p.add_argument("file")
    p.add_argument("--out", required=True, help="TSV of (streamed id, indexed id, similarity)")
    p.add_argument("--threshold", type=float, default=0.8)
    p.add_argument("--similarity", choices=["jaccard", "idf"], default="jaccard")
    p.add_argument("--indexed-dataset", default=None, help="match only indexed records of this data set")
    p.add_argument("--one-to-one", action="store_true", help="keep each record in at most one pair (best first)")
    p.add_argument("--field-weights", default=None,
                   help="with --similarity idf on records indexed from several text columns: column=weight,... "
                        "(e.g. name=2,city=0.5; unlisted columns weigh 1)")
    p.add_argument("--format", choices=["lines", "tsv", "jsonl", "csv"], default=None)
    p.add_argument("--id-column", default="id")
    p.add_argument("--text-column", default="text")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("-q", "--quiet", action="store_true")
    _add_solr_options(p)
    p.set_defaults(func=cmd_join)

    p = sub.add_parser("groups", help="turn a pairs file into groups of near duplicates and a keep list")
    p.add_argument("pairs", help="a report or threshold TSV")
    p.add_argument("--out", required=True, help="JSONL: group_id, representative, members, max_distance")
    p.add_argument("--keep", default=None, help="write the ids to keep (one representative per group)")
    p.add_argument("--representative", choices=["earliest", "longest"], default="earliest")
    p.add_argument("--with-singletons", action="store_true",
                   help="keep list also holds every indexed id that is in no group (reads ids from Solr)")
    _add_solr_options(p)
    p.set_defaults(func=cmd_groups)

    p = sub.add_parser("evaluate", help="precision, recall and F1 of a pairs file against a gold file")
    p.add_argument("pairs")
    p.add_argument("gold")
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser("demo", help="the restaurant data set, end to end, every mode side by side")
    p.add_argument("--workdir", default=None, help="where to write the prepared data and reports")
    _add_solr_options(p)
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
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    level = logging.WARNING if args.verbose == 0 else logging.INFO if args.verbose == 1 else logging.DEBUG
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    if args.verbose == 0:
        # Per-record warnings go to the rejects file and the summary; keep the terminal readable.
        logging.getLogger("neardup_solr.indexer").setLevel(logging.ERROR)
    try:
        return args.func(args)
    except SolrUnavailableError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    except (NeardupError, ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
