"""Commands that read the collection: near-dups, search, report, join and groups."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import TYPE_CHECKING, TypeVar

from neardup_solr.cli.common import (
    NEVER_SPLIT,
    SEARCH_FLAGS,
    UsageError,
    add_search_options,
    add_solr_options,
    label,
    lookup_given,
    number,
    open_client,
    open_searcher,
    options_from_flags,
    parse_field_weights,
    refuse_unless,
    split_bucket_arg,
    with_no_limit,
    without_no_limit,
)
from neardup_solr.options import (
    DEFAULT_SPLIT_BUCKET,
    GRAPH_METHODS,
    METHODS,
    SIMILARITIES,
    WRITEUP_LOOKUP,
    WRITEUP_RANKING,
    AnyLookup,
    JoinOptions,
    LookupOptions,
    LookupReportOptions,
    ReportOptions,
    ShareLookup,
    SimilarityLookup,
    ThresholdOptions,
    lookup_from_given,
    report_options_from_given,
)
from neardup_solr.engine.find import find_cross_pairs, find_similar_documents, run_report
from neardup_solr.io.outputs import check_output_path
from neardup_solr.engine.weighted_lsh import IdfSnapshot
from neardup_solr.io.readers import Record, RecordReader, input_format
from neardup_solr.solr.searcher import Searcher
from neardup_solr.pairs.groups import group_pairs, keep_list, read_distance_pairs, write_groups_jsonl, write_keep_list
from neardup_solr.io.inputs import open_text_lines
from neardup_solr.engine.report import iter_documents

if TYPE_CHECKING:
    from neardup_solr.signing.settings import IndexSettings

T = TypeVar("T")

# The command line's words for the options' refusals (the rules are neardup_solr.options' own).
NUM_HASHES_WORDS = {"num_hashes": "--num-hashes applies to --mode minhash only"}
SNAPSHOT_WORDS = {"snapshot": "--idf-snapshot signs weighted signatures: use it with --similarity idf --method lsh"}


def _say(args: argparse.Namespace):
    """print for the people at the terminal: to stderr when the result itself goes to stdout (--out -)."""
    to_stderr = getattr(args, "out", None) == "-" or getattr(args, "keep", None) == "-"

    def say(*values: object) -> None:
        print(*values, file=sys.stderr if to_stderr else sys.stdout)

    return say


def _refuse_resume_to_stdout(args: argparse.Namespace) -> None:
    if args.resume and args.out == "-":
        raise UsageError("--resume needs --out FILE: a run writing to standard output keeps no partial to continue")


def _read_text_file(path: str) -> str:
    """--text-file: a file's text, or standard input's for '-' (UTF-8)."""
    if path == "-":
        return sys.stdin.read()
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--text-file {path}: cannot read it ({exc})") from None


def _one_line(text: str) -> str:
    """A text shown on one line (a text read from several fields of a collection of yours is joined by line
    breaks; a match is one line of output)."""
    return " ".join(text.split()) if "\n" in text or "\r" in text else text


def _print_matches(source_label: str, source_text: str, matches) -> None:
    print(f"{source_label}: {_one_line(source_text)}")
    for m in matches:
        tag = "exact" if m.exact else f"distance {m.edit_distance}"
        est = f", est. {m.estimated_jaccard:.2f}" if m.estimated_jaccard is not None else ""
        print(f"  {m.id}: {_one_line(m.content)}  ({tag}, jaccard {m.jaccard:.3f}{est}, overlap {m.score:g})")


def cmd_near_dups(args: argparse.Namespace) -> int:
    """Near duplicates of one document, or of a text (or the documents holding a share of its shingles)."""
    given = [name for name, value in (("ID", args.id), ("--text", args.text), ("--text-file", args.text_file))
             if value is not None]
    if len(given) != 1:
        raise UsageError("give a document id or --text (or --text-file), only one of them"
                         + (f", not {' and '.join(given)}" if given else ""))
    if args.text_file is not None:
        args.text = _read_text_file(args.text_file)
        if not args.text.strip():
            raise UsageError(f"--text-file {args.text_file} is empty: give the text to look up")
    if args.text is not None and not args.text.strip():
        raise UsageError("--text is empty: give the text to look up")
    refuse_unless(args, args.min_share is None, {**SEARCH_FLAGS, "writeup_ranking": "--writeup-ranking"},
                  "with --min-share, which lists every document holding that share of the shingles")
    lookup = lookup_options_from_args(args)
    searcher = open_searcher(args)
    if isinstance(lookup, SimilarityLookup):
        return _near_dups_at_threshold(args, searcher, lookup)
    if isinstance(lookup, ShareLookup):
        text = args.text if args.text is not None else searcher.get_by_id(args.id).content
        shared = [(i, share) for i, share in searcher.find_by_shingle_share(text, lookup.min_share) if i != args.id]
        if args.json:
            print(json.dumps([{"id": i, "share": share} for i, share in shared], ensure_ascii=False, indent=2))
        else:
            for doc_id, share in shared:
                print(f"{doc_id}\t{share:.3f}")
            if not shared:
                print(f"no document holds {lookup.min_share:.0%} of its shingles")
        return 0
    assert isinstance(lookup, LookupOptions)
    source_label, text = "text", args.text
    if args.id is not None:
        source = searcher.get_by_id(args.id)
        source_label, text = source.id, source.content
    matches = searcher.find_near_dups(args.id, text=None if args.id is not None else text, options=lookup)
    if args.json:
        print(json.dumps([m.__dict__ for m in matches], ensure_ascii=False, indent=2))
    elif matches:
        _print_matches(source_label, text, matches)
    else:
        collection = lookup.min_jaccard == "collection"
        limit = searcher.settings.lsh_threshold if collection else lookup.min_jaccard
        why = (f" at Jaccard >= {limit:g} (the collection's threshold; --min-jaccard 0 keeps every candidate)"
               if collection else " within the limits")
        print(f"no near duplicates of {source_label}{why}")
    return 0


def _near_dups_at_threshold(args: argparse.Namespace, searcher: Searcher, lookup: SimilarityLookup) -> int:
    """near-dups --threshold: every document at or above it by --similarity (the service's threshold lookup)."""
    source_label, text = "text", args.text
    if args.id is not None:
        source = searcher.get_by_id(args.id)
        source_label, text = source.id, source.content
    found = find_similar_documents(searcher, lookup, text, exclude_id=args.id)
    if args.json:
        print(json.dumps([{"id": i, "similarity": round(s, 6)} for i, s in found], ensure_ascii=False, indent=2))
        return 0
    print(f"{source_label}: {_one_line(text)}")
    texts = {d["id"]: d.get("content", "") for d in searcher.client.get_by_ids([i for i, _ in found], "id,content")}
    for doc_id, similarity in found:
        print(f"  {doc_id}: {_one_line(texts.get(doc_id, ''))}  ({lookup.similarity} {similarity:.3f})")
    if not found:
        print(f"no document at {lookup.similarity} >= {lookup.threshold:g}")
    return 0


# Options of report's threshold mode, and the defaults they take there.
THRESHOLD_FLAGS = {"similarity": "--similarity", "method": "--method", "dataset": "--dataset",
                   "field_weights": "--field-weights", "idf_snapshot": "--idf-snapshot", "idf_tokens": "--idf-tokens",
                   "split_bucket": "--split-bucket"}


def cmd_report(args: argparse.Namespace) -> int:
    """Every pair of the collection at its similarity threshold (or --threshold); with --writeup-ranking, the
    reference write-up's report, one lookup per document."""

    writeup = bool(args.writeup_ranking)
    # Options that do not apply are refused, not ignored: a threshold report over the whole collection when
    # an id range was asked for answers another question than the one asked.
    _refuse_resume_to_stdout(args)
    say = _say(args)
    refuse_unless(args, writeup, {"start_id": "--start-id", "end_id": "--end-id", **SEARCH_FLAGS},
                  "without --writeup-ranking: report finds every pair at the collection's similarity threshold (or "
                  "--threshold), as near-dups does; these tune the reference write-up's report, one lookup per "
                  "document, asked for with --writeup-ranking")
    refuse_unless(args, not writeup, {"threshold": "--threshold", **THRESHOLD_FLAGS},
                  "with --writeup-ranking, one lookup per document (they choose the report of every pair at a "
                  "threshold)")
    if not writeup:
        _check_idf_options(args)
        if args.similarity == "idf" and args.threshold is None:
            raise UsageError("--similarity idf needs --threshold: IDF-weighted similarity has a scale of its own "
                             "(0.4 finds the restaurant pairs, for example), not the collection's Jaccard threshold")
        if args.similarity == "cosine" and args.threshold is None:
            raise UsageError("--similarity cosine needs --threshold: the cosine of vectors of meaning has a scale of "
                             "its own, which depends on the encoder (docs/meaning.md), not the collection's Jaccard "
                             "threshold")
    options = report_options_from_args(args)
    snapshot = _load_snapshot(args)  # a bad file is refused before any Solr work
    check_output_path(args.out)  # before any Solr work
    searcher = open_searcher(args)
    if not writeup:  # the collection's threshold and method unless given, now that its settings are known
        options = report_options_from_args(args, searcher.settings)

    def show(doc, matches):
        say(f"{doc.id}: {doc.content}")
        for m in matches:
            say(f"{m.id}: {m.content} ({m.edit_distance})")
        say("==")

    lookups = not isinstance(options, ThresholdOptions)
    result = run_report(searcher, options, args.out, resume=args.resume, progress=not args.quiet, snapshot=snapshot,
                        on_group=show if lookups and not (args.quiet or args.json) else None)
    if isinstance(options, ThresholdOptions):
        if args.json:
            say(json.dumps({"kind": "threshold", "method": options.method, "similarity": options.similarity,
                            "threshold": options.threshold, "pairs": result.pairs,
                            "seconds": round(result.seconds, 3), "out": args.out, "stats": result.stats}))
        else:
            whose = " (the collection's threshold)" if args.threshold is None else ""
            say(f"{result.pairs} pairs with {options.similarity} similarity >= {options.threshold}{whose} in "
                f"{result.seconds:.1f} s -> {args.out}{_detail(args, result)}")
    elif args.json:
        say(json.dumps({"kind": "report", "mode": options.mode, "documents": result.documents,
                        "pairs": result.pairs, "seconds": round(result.seconds, 3), "out": args.out}))
    else:
        say(f"{result.pairs} pairs from {result.documents} documents in {result.seconds:.1f} s"
            + (f" -> {args.out}" if args.out else ""))
    return 0


def lookup_options_from_args(args: argparse.Namespace) -> AnyLookup:
    """near-dups' flags as the library's options: the flags given over the options' defaults (the write-up's
    ranking with --writeup-ranking), checked by the options."""
    given = lookup_given(args)
    lookup = options_from_flags(lambda: lookup_from_given(
        {**without_no_limit(given), "min_share": args.min_share, "threshold": args.threshold,
         "similarity": args.similarity, "method": args.method}, WRITEUP_LOOKUP if args.writeup_ranking else None),
        NUM_HASHES_WORDS)
    return with_no_limit(lookup, given) if isinstance(lookup, LookupOptions) else lookup


def report_options_from_args(args: argparse.Namespace, collection: "IndexSettings | None" = None) -> ReportOptions:
    """report's flags as the library's options (every pair at a threshold, the collection's when ``collection``
    is given and --threshold is not; the write-up's lookup report with --writeup-ranking): the flags given over
    the options' defaults, checked by the options, and the run's own checks (--resume, --idf-snapshot)."""
    given = lookup_given(args)
    options = options_from_flags(lambda: report_options_from_given({
        **without_no_limit(given), "start_id": args.start_id, "end_id": args.end_id, "workers": args.workers,
        "threshold": args.threshold, "similarity": args.similarity, "method": args.method, "dataset": args.dataset,
        "field_weights": parse_field_weights(args.field_weights), "idf_tokens": args.idf_tokens,
        "split_bucket": _split_bucket(args), WRITEUP_RANKING: args.writeup_ranking}, collection),
        {**NUM_HASHES_WORDS, **_METHOD_LSH_WORDS})
    if isinstance(options, LookupReportOptions):
        return with_no_limit(options, given)
    options = _never_split(options, args)
    checked = options
    options_from_flags(lambda: checked.check_run(resume=args.resume, snapshot=args.idf_snapshot is not None),
                       {**SNAPSHOT_WORDS, **_METHOD_LSH_WORDS})
    return options


# report --threshold --method lsh's refusals in the command line's words.
_METHOD_LSH_WORDS = {
    "workers": "--workers does not apply to --method lsh, a single batch job over exported signatures",
    "resume": "--method lsh is one batch job and does not resume; run it again without --resume",
}


def _split_bucket(args: argparse.Namespace) -> int | None:
    """--split-bucket N as the options' key (None: not given, or 'none', which :func:`_never_split` applies)."""
    return None if args.split_bucket in (None, NEVER_SPLIT) else args.split_bucket


def _never_split(options: T, args: argparse.Namespace) -> T:
    """``options`` with ``--split-bucket none``: split_bucket=None, never split (not the default)."""
    return dataclasses.replace(options, split_bucket=None) if args.split_bucket == NEVER_SPLIT else options  # type: ignore[type-var]


def _check_idf_options(args: argparse.Namespace) -> None:
    """--field-weights and --idf-tokens need --similarity idf, --split-bucket --method lsh (--idf-snapshot's rule
    is the options' own: ``check_run``)."""
    if args.field_weights is not None and args.similarity != "idf":
        raise UsageError("--field-weights applies to --similarity idf only")
    if args.idf_tokens is not None and args.similarity != "idf":
        raise UsageError("--idf-tokens applies to --similarity idf only")
    if args.idf_tokens == "grams" and args.field_weights is not None:
        raise UsageError("--idf-tokens grams weighs the whole text; it does not combine with --field-weights")
    if args.split_bucket is not None and args.method != "lsh":
        raise UsageError("--split-bucket refines LSH band buckets: use it with --method lsh")


def _load_snapshot(args: argparse.Namespace):
    if args.idf_snapshot is None:
        return None

    return IdfSnapshot.load(args.idf_snapshot)


def _detail(args: argparse.Namespace, result) -> str:
    """What an LSH engine did, for the summary line."""
    s = result.stats
    if result.engine in ("idf_lsh_pairs", "idf_lsh_join"):
        where = "" if result.snapshot is None or args.out == "-" else f"; IDF snapshot -> {result.snapshot}"
        return (f" ({s['candidate_pairs']} candidates from {s['bands']}x{s['rows']} weighted MinHash bands, every "
                f"pair verified exactly{where})")
    return ""


# join --method lsh's refusals in the command line's words.
_JOIN_LSH_WORDS = {
    "workers": "--workers does not apply to --similarity idf --method lsh, a single batch job",
    "resume": "join --method lsh is one batch job and does not resume; run it again without --resume",
}


def cmd_join(args: argparse.Namespace) -> int:
    """Stream a file against the indexed data set: every cross pair above --threshold."""
    from neardup_solr.engine.lsh_join import LshJoinSummary

    # The refusals only the command line words itself, then the options' own checks, said in its words.
    if (args.bloom_fp_rate is not None or args.no_bloom) and (args.method != "lsh" or args.similarity == "idf"):
        raise UsageError("--bloom-fp-rate and --no-bloom apply to join --method lsh with plain Jaccard only")
    _check_idf_options(args)
    options = options_from_flags(lambda: JoinOptions(**{k: v for k, v in {
        "threshold": args.threshold, "similarity": args.similarity, "method": args.method,
        "indexed_dataset": args.indexed_dataset, "one_to_one": args.one_to_one or None,
        "field_weights": parse_field_weights(args.field_weights), "idf_tokens": args.idf_tokens,
        "workers": args.workers, "bloom": False if args.no_bloom else None, "bloom_fp_rate": args.bloom_fp_rate,
        "split_bucket": _split_bucket(args)}.items() if v is not None}), _JOIN_LSH_WORDS)
    options = _never_split(options, args)
    options_from_flags(lambda: options.check_run(resume=args.resume, snapshot=args.idf_snapshot is not None),
                       {**SNAPSHOT_WORDS, **_JOIN_LSH_WORDS})
    snapshot = _load_snapshot(args)
    input_format(args.file, args.format)  # a missing or binary input is refused before any Solr work
    _refuse_resume_to_stdout(args)
    check_output_path(args.out)  # before any Solr work
    searcher = Searcher(open_client(args))
    if args.threshold is None and options.similarity == "jaccard":  # one meaning of "near duplicate" (issue 47)
        options = dataclasses.replace(options, threshold=searcher.settings.lsh_threshold)
    reader = RecordReader(args.file, args.format, id_field=args.id_column, text_field=args.text_column)
    records = [r for r in reader if isinstance(r, Record)]
    if reader.stats.invalid:
        print(f"warning: {reader.stats.invalid} unreadable record(s) in {args.file} skipped", file=sys.stderr)
    result = find_cross_pairs(searcher, records, options, out=args.out, resume=args.resume, progress=not args.quiet,
                              snapshot=snapshot)
    if result.engine == "lsh_join":
        _say(args)(f"{len(result)} cross pairs (lsh) with jaccard similarity >= {options.threshold} -> {args.out}; "
                   + LshJoinSummary(**result.stats).format())
    else:
        _say(args)(f"{len(result)} cross pairs (streamed {len(records)} records) with {options.similarity} "
                   f"similarity >= {options.threshold} -> {args.out}{_detail(args, result)}")
    return 0


def cmd_groups(args: argparse.Namespace) -> int:
    """Groups of near duplicates (and a keep list) from a pairs file."""

    if args.out is None and not args.to_solr:
        raise UsageError("give --out (the groups as JSONL), --to-solr (each document's group written into the "
                         "collection), or both")
    if args.dataset is not None and not args.to_solr:
        raise UsageError("--dataset chooses the documents whose groups --to-solr writes; give --to-solr with it")
    if args.keep is not None and args.keep == args.out:
        raise UsageError("--keep and --out name the same file; give them different paths"
                         + (" (only one of them can be standard output)" if args.out == "-" else ""))
    if args.out is not None:
        check_output_path(args.out)  # before reading the pairs or asking Solr
    if args.keep is not None:
        check_output_path(args.keep, name="keep")

    lines = open_text_lines(args.pairs)  # compressed or '-' (standard input): read once
    pairs = read_distance_pairs(lines, source="<stdin>" if args.pairs == "-" else args.pairs)
    header = lines[0] if lines else ""
    if "similarity" in header:
        # Threshold reports carry a similarity; groups record the largest Jaccard *distance* inside them.
        pairs = [(a, b, None if s is None else round(1.0 - s, 6)) for a, b, s in pairs]
    texts = None
    all_ids = None
    if (args.representative == "longest" and (args.out or args.keep)) or args.with_singletons:
        docs = list(iter_documents(Searcher(open_client(args))))
        texts = {d.id: d.content for d in docs}
        all_ids = list(texts) if args.with_singletons else None
    if args.to_solr:
        from neardup_solr.engine.group_writeback import write_groups

        _say(args)("groups written into the collection: "
                   + write_groups(open_client(args), pairs, representative=args.representative,
                                  dataset=args.dataset).format())
        if args.out is None and args.keep is None:
            return 0
    groups = group_pairs(pairs, representative=args.representative, texts=texts)
    if args.out is not None:
        write_groups_jsonl(groups, args.out)
    kept = keep_list(groups, all_ids)
    if args.keep:
        write_keep_list(kept, args.keep)
    members = sum(len(g.members) for g in groups)
    _say(args)(f"{len(groups)} groups holding {members} documents" + (f" -> {args.out}" if args.out else "")
               + (f"; keep list of {len(kept)} ids -> {args.keep}" if args.keep else ""))
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    """A user's words searched in the collection, each group of near duplicates once (``folded_search``)."""
    from neardup_solr.solr.folded_search import fold_mode, folded_search

    if not args.words.strip():
        raise UsageError("give the words to search for")
    client = open_client(args)
    found = folded_search(client, args.words, fold=fold_mode(args.fold), rows=args.rows, start=args.start,
                          copies=args.copies, dataset=args.dataset, exact_count=args.exact_count)
    if args.json:
        print(json.dumps(found.as_dict(), ensure_ascii=False, indent=2))
        return 0
    noun = "group" if found.fold else "document"
    count = f"{'at least ' if not found.found_exact else ''}{found.found:,}"
    print(f"{count} {noun}{'' if found.found == 1 else 's'} found"
          + (f" (folded: {found.mode})" if found.mode else ""))
    for n, hit in enumerate(found.hits, start=args.start + 1):
        group = "" if hit.group is None else f"  group {hit.group}"
        print(f"{n:>4}. {hit.id}  {hit.score:.3f}{group}  {_shortened(hit.content)}")
        for copy in hit.copies:
            print(f"        copy {copy.id}  {copy.score:.3f}  {_shortened(copy.content)}")
        more = hit.copy_count - len(hit.copies)
        if more > 0:
            print(f"        and {more}{'' if found.copy_counts_exact else ' or more'} more copies")
    if found.fold and any(h.copy_count for h in found.hits):
        print("(near duplicates are folded under their kept document: --fold off lists every match)")
    elif found.fold and args.copies == 0 and found.hits:
        print("(near duplicates are folded: --copies N lists up to N under each hit, --fold off every match)")
    return 0


def _shortened(text: str, width: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[:width - 1] + "…"


def register(sub: argparse._SubParsersAction) -> None:
    """Add near-dups, search, report, join and groups."""
    p = sub.add_parser("near-dups", help="near duplicates of one document or of a new text")
    p.add_argument("id", nargs="?", default=None)
    p.add_argument("--text", default=None, help="a text that is not in the index")
    p.add_argument("--text-file", default=None,
                   help="read the text from this file ('-': standard input), for texts too long for the command line")
    p.add_argument("--min-share", type=number("--min-share", "min_share"), default=None,
                   help="instead: every document holding at least this share of the text's shingles "
                        "(write-up 003's lookup; exact duplicates by MD5 first)")
    p.add_argument("--threshold", type=number("--threshold", "threshold"), default=None,
                   help="instead: every document whose --similarity reaches this (no row cap)")
    p.add_argument("--similarity", choices=SIMILARITIES, default=None,
                   help="with --threshold: jaccard of shingles (default), idf (IDF-weighted words), or cosine of the "
                        "vectors of meaning (a collection indexed with --encoder)")
    p.add_argument("--method", choices=("exact", *GRAPH_METHODS), default=None,
                   help="with --threshold --similarity cosine: where the candidates come from, 'knn' (default: a walk "
                        "of Solr's HNSW graph) or 'hybrid' (that walk and the documents sharing an LSH band, which a "
                        "walk can miss); every candidate verified by its exact cosine. A lookup by words is 'exact'")
    p.add_argument("--json", action="store_true")
    add_search_options(p, lookup=True)
    add_solr_options(p)
    p.set_defaults(func=cmd_near_dups)

    p = sub.add_parser("search", help="search for words, each group of near duplicates once")
    p.add_argument("words", help="plain words (not query syntax)")
    p.add_argument("--fold", default="fast", choices=("fast", "exact", "off"),
                   help="fast (default): each group once at a plain search's cost, by the kept flag the groups "
                        "carry; exact: Solr's collapse, whatever it costs; off: every match")
    p.add_argument("--rows", type=int, default=10)
    p.add_argument("--start", type=int, default=0)
    p.add_argument("--copies", type=int, default=0,
                   help="folded copies listed under each hit (none by default: listing them costs two more requests)")
    p.add_argument("--dataset", type=label("--dataset"), default=None)
    p.add_argument("--exact-count", action="store_true",
                   help="count every hit (without it, Solr stops counting after 1,000 and the count says 'at least')")
    p.add_argument("--json", action="store_true")
    add_solr_options(p)
    p.set_defaults(func=cmd_search)

    p = sub.add_parser(
        "report", help="all near-duplicate pairs of the collection as TSV",
        description="Every near-duplicate pair of the collection: every pair at the collection's similarity "
                    "threshold (the one near-dups uses; --threshold for another), or with --writeup-ranking the "
                    "reference write-up's report, one ranked lookup per document. Work done so far is kept in "
                    "OUT.partial; OUT "
                    "appears only when the report is complete. If Solr stays away longer than --max-wait, the run "
                    "stops (exit 3) and keeps OUT.partial; the same command with --resume continues it (not "
                    "--method lsh, a short batch job that simply reruns).")
    p.add_argument("--out", required=True,
                   help="TSV file to write (appears only when complete; '-': standard output, and the listing and "
                        "summary go to standard error)")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object (machine-readable)")
    p.add_argument("--resume", action="store_true",
                   help="continue the stopped run that left OUT.partial (same options and data required)")
    p.add_argument("--writeup-ranking", action="store_true", default=None,
                   help="the reference write-up's report: one lookup per document, the candidates with its first "
                        "word, the 10 best, word edit distance <= 2, no Jaccard filter (the lookup flags below "
                        "override them); writes id, neighbor_id, edit distance")
    p.add_argument("--start-id", default=None, help="first id of the range to report (--writeup-ranking only)")
    p.add_argument("--end-id", default=None, help="last id of the range to report (--writeup-ranking only)")
    p.add_argument("--workers", type=number("--workers", "workers"), default=None,
                   help="lookups in flight at once (default 1)")
    p.add_argument("--threshold", type=number("--threshold", "threshold"), default=None,
                   help="every pair with similarity >= this, verified exactly (no row cap, no first-word filter; "
                        "default: the collection's similarity threshold, the --lsh-threshold it was indexed with); "
                        "writes id, neighbor_id, similarity")
    p.add_argument("--similarity", choices=SIMILARITIES, default=None,
                   help="threshold mode: shingle Jaccard (default), IDF-weighted word Jaccard (see --idf-tokens), "
                        "or cosine of the vectors of meaning (a collection indexed with --encoder; needs --threshold)")
    p.add_argument("--method", choices=METHODS, default=None,
                   help="threshold mode candidates: 'exact' = complete (plain Jaccard: the texts read once and "
                        "joined in the client; idf: one bounded query per document; cosine: every vector against "
                        "every other in the client), "
                        "'lsh' = LSH bands over exported signatures (fast on large collections; the default on a "
                        "collection indexed without shingle tokens, as dedupe's are), 'knn' = with cosine, a walk "
                        "of Solr's HNSW graph of the vectors from every document, 'hybrid' = with cosine, those walks "
                        "and every pair sharing an LSH band (a copy the walk misses is still found; needs the "
                        "collection's lsh tokens); every pair verified by its exact similarity")
    p.add_argument("--dataset", type=label("--dataset"), default=None,
                   help="threshold mode: only pairs within this data set")
    p.add_argument("--field-weights", default=None,
                   help="with --similarity idf on records indexed from several text columns: column=weight,... "
                        "(e.g. name=2,city=0.5; unlisted columns weigh 1)")
    p.add_argument("--idf-snapshot", default=None,
                   help="with --similarity idf --method lsh: sign with the document frequencies an earlier run "
                        "recorded in OUT.idf.json (every run writes one); similarities stay exact on today's IDF")
    p.add_argument("--idf-tokens", choices=["words", "grams"], default=None,
                   help="with --similarity idf: weigh the words (default), or the words and their character "
                        "4-grams, which survive typos (needs an index with --fields including grams; the "
                        "README's record matching recipe)")
    p.add_argument("--split-bucket", type=split_bucket_arg, default=None, metavar="N|none",
                   help="--method lsh: LSH band buckets of more members than this are judged: verified in place "
                        "when small or dense, split by further signature values when large and sparse (default "
                        f"{DEFAULT_SPLIT_BUCKET}; 'none' never splits; see the README's section on oversized "
                        "buckets)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar or listing")
    add_search_options(p)
    add_solr_options(p)
    p.set_defaults(func=cmd_report)

    p = sub.add_parser(
        "join", help="similarity join: stream a file against the indexed data set",
        description="Every record of FILE against the indexed data set. Work done so far is kept in OUT.partial; "
                    "OUT appears only when the join is complete. A run stopped by Solr staying away longer than "
                    "--max-wait (exit 3) continues with --resume.")
    p.add_argument("file")
    p.add_argument("--out", required=True,
                   help="TSV of (streamed id, indexed id, similarity); appears only when complete ('-': standard "
                        "output)")
    p.add_argument("--resume", action="store_true",
                   help="continue the stopped run that left OUT.partial (same options and input required)")
    p.add_argument("--threshold", type=number("--threshold", "threshold"), default=None,
                   help="similarity a pair must reach (default: with jaccard, the collection's similarity "
                        f"threshold, the --lsh-threshold it was indexed with; with idf, {JoinOptions.threshold})")
    p.add_argument("--similarity", choices=SIMILARITIES, default=None,
                   help="jaccard (default), idf, or cosine of the vectors of meaning (an indexed side with --encoder: "
                        "each streamed text encoded, its neighbours found by Solr's HNSW graph, verified)")
    p.add_argument("--method", choices=METHODS, default=None,
                   help="'exact' = one bounded query per streamed record (complete); 'lsh' = the record's LSH bands, "
                        "every candidate verified exactly: with plain Jaccard, records none of whose bands the "
                        "indexed side holds (a Bloom filter) are never queried; with --similarity idf, weighted "
                        "MinHash bands over both sides; with --similarity cosine each record is looked up in the "
                        "HNSW graph ('exact', 'knn'), 'hybrid' adds the indexed documents sharing an LSH band with "
                        "it")
    p.add_argument("--bloom-fp-rate", type=number("--bloom-fp-rate", "bloom_fp_rate"), default=None,
                   help="--method lsh: share of the records without any indexed band that the Bloom filter still lets "
                        "through to a query (default 0.01)")
    p.add_argument("--no-bloom", action="store_true", help="--method lsh: query every record (for measuring)")
    p.add_argument("--idf-snapshot", default=None,
                   help="with --similarity idf --method lsh: sign with the document frequencies recorded in an "
                        "earlier run's OUT.idf.json")
    p.add_argument("--idf-tokens", choices=["words", "grams"], default=None,
                   help="with --similarity idf: weigh the words (default), or the words and their character "
                        "4-grams, which survive typos (needs an index with --fields including grams; the "
                        "README's record matching recipe)")
    p.add_argument("--indexed-dataset", type=label("--indexed-dataset"), default=None,
                   help="match only indexed records of this data set")
    p.add_argument("--one-to-one", action="store_true", help="keep each record in at most one pair (best first)")
    p.add_argument("--field-weights", default=None,
                   help="with --similarity idf on records indexed from several text columns: column=weight,... "
                        "(e.g. name=2,city=0.5; unlisted columns weigh 1)")
    p.add_argument("--format", choices=["lines", "tsv", "jsonl", "csv", "parquet"], default=None)
    p.add_argument("--id-column", default="id")
    p.add_argument("--text-column", default="text")
    p.add_argument("--workers", type=number("--workers", "workers"), default=None,
                   help="lookups in flight at once (default 2; --method exact only)")
    p.add_argument("--split-bucket", type=split_bucket_arg, default=None, metavar="N|none",
                   help="--method lsh: LSH band buckets of more members than this are judged: verified in place "
                        "when small or dense, split by further signature values when large and sparse (default "
                        f"{DEFAULT_SPLIT_BUCKET}; 'none' never splits; see the README's section on oversized "
                        "buckets)")
    p.add_argument("-q", "--quiet", action="store_true")
    add_solr_options(p)
    p.set_defaults(func=cmd_join)

    p = sub.add_parser("groups", help="turn a pairs file into groups of near duplicates and a keep list")
    p.add_argument("pairs", help="a report or threshold TSV (compressed or not; - for standard input)")
    p.add_argument("--out", default=None,
                   help="JSONL: group_id, representative, members, max_distance (written atomically; a few "
                        "seconds of work, so it reruns rather than resumes; '-': standard output)")
    p.add_argument("--to-solr", action="store_true",
                   help="write each document's group (nd_group) and kept flag (nd_keep) into the collection, for "
                        "folded searches: in place, only what changed, verified; a re-run resumes (the pairs "
                        "must cover the whole collection: a document in no pair becomes a group of its own)")
    p.add_argument("--keep", default=None,
                   help="write the ids to keep (one representative per group; '-': standard output)")
    p.add_argument("--representative", choices=["earliest", "longest"], default="earliest")
    p.add_argument("--with-singletons", action="store_true",
                   help="keep list also holds every indexed id that is in no group (reads ids from Solr)")
    p.add_argument("--dataset", type=label("--dataset"), default=None,
                   help="with --to-solr: write the groups of this data set's documents only (the pairs must cover "
                        "it; pairs naming a document outside it are skipped, the other documents are left as they "
                        "are)")
    add_solr_options(p)
    p.set_defaults(func=cmd_groups)
