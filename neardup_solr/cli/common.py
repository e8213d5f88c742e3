"""What every command shares: exit codes, the Solr options, the client and searcher they open."""

from __future__ import annotations

import argparse
import os


EXIT_REJECTED = 1
EXIT_USAGE = 2
EXIT_UNAVAILABLE = 3
# The index lacks what was acknowledged (index) or what the file holds (verify).
EXIT_INCOMPLETE = 4


def open_client(args):
    from ..solr_client import SolrClient

    from ..solr_client import RetryPolicy

    from ..errors import SolrUnavailableError

    client = SolrClient(args.solr_url or None, timeout=args.timeout, retry=RetryPolicy(max_wait=args.max_wait))
    try:
        client.check()  # one clear line up front when Solr is down or the core is missing
    except SolrUnavailableError as exc:
        cause = local_crash_cause(client.url)
        if cause:
            raise SolrUnavailableError(f"{exc} Why: {cause}.") from None
        raise
    return client


def local_crash_cause(url: str) -> str | None:
    """What the launcher's log says ended the local Solr behind ``url``, if it was ours and said so."""
    from urllib.parse import urlsplit

    from ..backends.local import crash_cause

    parts = urlsplit(url)
    if parts.hostname not in ("127.0.0.1", "localhost") or not parts.port:
        return None
    return crash_cause(parts.port)


def add_solr_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--solr-url", default=os.environ.get("SOLR_URL"),
                   help="core URL (default: $SOLR_URL, else the local launcher's http://127.0.0.1:8983/solr/neardup)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per HTTP call (default 60)")
    p.add_argument("--max-wait", type=float, default=None,
                   help="seconds to wait out Solr being away, loading or recovering before stopping "
                        "(default $NEARDUP_SOLR_MAX_WAIT or 120)")


def add_search_options(p: argparse.ArgumentParser) -> None:
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


def open_searcher(args):
    from ..searcher import Searcher

    searcher = Searcher(open_client(args))
    ngram = getattr(args, "ngram", None)
    if ngram is not None and ngram != searcher.settings.ngram:
        raise ValueError(f"this collection was indexed with {searcher.settings.ngram}-shingles, not {ngram}; "
                         f"re-index with --ngram {ngram} to search with it")
    return searcher


def parse_field_weights(text: str | None) -> dict[str, float] | None:
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


def max_distance(args):
    return None if args.max_edit_distance is not None and args.max_edit_distance < 0 else args.max_edit_distance
