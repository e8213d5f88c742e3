"""What every command shares: exit codes, the parser that errs in one line, checked number flags, the Solr
options, and the client and searcher they open.

Every number flag goes through :mod:`neardup_solr.validation` with the same limits the Python API applies
(``--num-hashes`` accepts what ``num_hashes=`` accepts), so a bad value ends in one line and exit code 2
before anything is sent to Solr or written. Errors the library raises about a parameter
(:class:`~neardup_solr.errors.InvalidParameterError`) are rendered with the flag's name: see :func:`flag_for`.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import sys
from typing import Any, Callable, NoReturn, Sequence, TypeVar

# The exit codes are defined beside errors.OUTCOMES (what each error means, shared with the HTTP service);
# the commands import them from here.
from neardup_solr.errors import EXIT_USAGE, UsageError, InvalidParameterError, SolrUnavailableError
from neardup_solr.options import WRITEUP_LOOKUP
from neardup_solr.validation import LIMITS, Limit, check_label, parse_value
from neardup_solr.signing.encoder import IN_PACKAGE, in_package_encoder
from neardup_solr.signing.settings import META_DATASET, TOKEN_FIELDS, IndexSettings
from neardup_solr.solr.companion_link import resolve as resolve_companion
from neardup_solr.solr.client import RetryPolicy, SolrClient
from neardup_solr.solr import settings
from neardup_solr.solr.backends.local import crash_cause
from neardup_solr.solr.searcher import Searcher

T = TypeVar("T")



# Python parameter (as the library names it in InvalidParameterError) -> the flag that sets it. Parameters
# that are spelled the same with dashes (num_hashes -> --num-hashes) need no entry; environment variables
# (upper case) are named as they are.
PARAM_FLAGS = {
    "url": "--solr-url",
    "out": "--out",
    "rejects_path": "--rejects",
    "checkpoint_path": "--rejects",
    "fmt": "--format",
    "id_field": "--id-column",
    "text_field": "--text-column",
    "path": "FILE",
    "rows": "--rows-per-band",  # IndexSettings.rows; the search option --rows is checked by the parser itself
    "doc_id": "ID",
    "snapshot": "--idf-snapshot",
    "settings": "the index settings (--ngram, --unit, --num-hashes, --lsh-threshold, --bands, --rows-per-band, "
                "--fields, --sample-mod)",
}


def flag_for(param: str, overrides: dict[str, str] | None = None) -> str:
    """The command line's name for a library parameter."""
    if overrides and param in overrides:
        return overrides[param]
    if param.isupper() or param.startswith("-"):  # an environment variable, or already a flag
        return param
    return PARAM_FLAGS.get(param, "--" + param.replace("_", "-"))


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (``neardup-solr CMD: error: ...``) and exit code 2, and
    that reads ``--text=--`` as the text ``--`` (argparse alone turns it into an empty list)."""

    def error(self, message: str) -> NoReturn:
        """One line and exit code 2, instead of argparse's usage block."""
        # "argument --rows: --rows must be ..." says the flag twice; our number types name it already.
        found = re.match(r"argument ([^:]+): (.*)$", message, re.DOTALL)
        if found and found.group(2).startswith(found.group(1).split("/")[-1]):
            message = found.group(2)
        self.exit(EXIT_USAGE, f"error: {' '.join(message.split())} (see {self.prog} --help)\n")

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        """argparse's parsing, then ``--text=--`` put back as the text ``--``."""
        parsed, extras = super().parse_known_args(args, namespace)
        for action in self._actions:
            if action.nargs is None and action.option_strings and getattr(parsed, action.dest, None) == []:
                # argparse drops a literal "--" given as an option's value (--text=--) and leaves [].
                setattr(parsed, action.dest, "--")
        return parsed, extras


class Number:
    """An argparse ``type`` that parses a flag's value with the library's limits and names the flag."""

    def __init__(self, flag: str, limit: str | Limit):
        self.flag = flag
        self.limit = LIMITS[limit] if isinstance(limit, str) else limit
        self.__name__ = "number"  # argparse names the type in some of its own messages

    def __call__(self, raw: str) -> Any:
        try:
            return parse_value(self.flag, raw, self.limit)
        except InvalidParameterError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None


def number(flag: str, limit: str | Limit) -> Callable[[str], Any]:
    """The type for ``flag``: an int or float within ``limit`` (a key of validation.LIMITS, or a Limit)."""
    return Number(flag, limit)


def label(flag: str) -> Callable[[str], str]:
    """The type for a name flag such as --dataset: no control characters, not a reserved name."""

    def parse(raw: str) -> str:
        try:
            return check_label(flag, raw, reserved=(META_DATASET,), none_ok=False)
        except InvalidParameterError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def refuse_unless(args: argparse.Namespace, applies: bool, flags: dict[str, str], why: str) -> None:
    """Refuse the options in ``flags`` (dest -> flag) that were given when they do not apply: a command
    that silently ignores an option gives an answer to another question than the one asked."""
    if applies:
        return
    given = [flag for dest, flag in flags.items() if getattr(args, dest, None) is not None]
    if given:
        raise UsageError(f"{', '.join(given)} {'does' if len(given) == 1 else 'do'} not apply {why}")


def open_client(args: argparse.Namespace, *, resolve: bool = True) -> "SolrClient":
    """The client for --solr-url (else $SOLR_URL, else the local Solr), checked: one clear line up front when
    Solr is down, times out or lacks the core. ``resolve``: on a collection of the user's that ``install``
    prepared, the client of its companion index, where its near duplicates are (see
    :func:`neardup_solr.solr.companion.resolve`)."""
    client = _open_client(args)
    if not resolve:
        return client

    return resolve_companion(client)


def _open_client(args: argparse.Namespace) -> "SolrClient":
    options = {"timeout": args.timeout, "retry": RetryPolicy(max_wait=args.max_wait),
               "min_replicas": getattr(args, "min_replicas", None) or 1}
    zk_host = getattr(args, "zk_host", None) or os.environ.get("NEARDUP_SOLR_ZK_HOST")
    if zk_host and args.solr_url:
        raise UsageError("--zk-host and --solr-url both say where Solr is: give one")
    if zk_host:
        client = SolrClient.from_zookeeper(zk_host, args.collection or settings.CORE_NAME, **options)
        client.check()
        return client
    client = SolrClient(args.solr_url, **options)
    # Not waited for when nothing answers (SolrClient.check's default): a wrong URL, or a Solr never started,
    # is one line within seconds; --max-wait rides out a Solr that goes away once it has answered. The message
    # advises 'neardup-solr solr start' only for the local launcher's default URL.
    try:
        client.check()
    except SolrUnavailableError as exc:
        cause = local_crash_cause(client.url)
        if cause:
            raise SolrUnavailableError(f"{exc.cli_message or exc} Why: {cause}.") from None
        raise
    return client


def add_min_replicas_option(p: argparse.ArgumentParser, what: str) -> None:
    """--min-replicas: the write concern (SolrClient(min_replicas=))."""
    p.add_argument("--min-replicas", type=number("--min-replicas", Limit("int", 1, 100)), default=None,
                   help=f"SolrCloud: count {what} only once this many replicas of each shard acknowledged them "
                        "(Solr's achieved replication factor); fewer is retried within --max-wait, then the run "
                        "stops and --resume sends them again (default 1: the leader)")


def add_sign_processes_option(p: argparse.ArgumentParser) -> None:
    """--sign-processes: the indexer's signing processes (Indexer(sign_processes=))."""
    p.add_argument("--sign-processes", type=number("--sign-processes", "sign_processes"), default=None,
                   help="processes signing the records (default: one per core, at most 8; 1 signs on the "
                        "calling thread); the documents are the same whatever the number")


def local_crash_cause(url: str) -> str | None:
    """What the launcher's log says ended the local Solr behind ``url``, if it was ours and said so."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.hostname not in ("127.0.0.1", "localhost") or not parts.port:
        return None
    return crash_cause(parts.port)


def add_solr_options(p: argparse.ArgumentParser) -> None:
    """--solr-url, --timeout and --max-wait."""
    # No default from $SOLR_URL here: the client reads it itself, so that its errors name SOLR_URL.
    p.add_argument("--solr-url", default=None,
                   help="core URL (default: $SOLR_URL, else the local launcher's http://127.0.0.1:8983/solr/neardup)")
    p.add_argument("--zk-host", default=None, metavar="HOST:PORT[/chroot]",
                   help="a SolrCloud's ZooKeeper (default $NEARDUP_SOLR_ZK_HOST): the live nodes are read there, "
                        "so the command reaches the collection whichever nodes are down; instead of --solr-url")
    p.add_argument("--collection", default=None,
                   help="with --zk-host: the collection (default neardup)")
    p.add_argument("--timeout", type=number("--timeout", "timeout"), default=60.0,
                   help="seconds per HTTP call (default 60)")
    p.add_argument("--max-wait", type=number("--max-wait", "max_wait"), default=None,
                   help="seconds to wait out Solr being away, loading or recovering before stopping "
                        "(default $NEARDUP_SOLR_MAX_WAIT or 120)")


# The search options. They are parsed with None as default so that a command can tell which were given and
# refuse those that do not apply (report --threshold, near-dups --min-share); neardup_solr.options fills the
# others (lookup_options_from_args). near-dups looks up like the API: every document at the collection's
# threshold, no edit-distance cap, no first-word filter, no row cap; --writeup-ranking asks for the write-up's
# ranking instead, and report --writeup-ranking for the write-up's report, whose defaults the help shows.
SEARCH_FLAGS = {"mode": "--mode", "max_edit_distance": "--max-edit-distance", "min_jaccard": "--min-jaccard",
                "rows": "--rows", "first_word_filter": "--first-word-filter/--no-first-word-filter",
                "num_hashes": "--num-hashes"}
# What "no limit" is on the command line for --max-edit-distance (None in Python).
NO_LIMIT = "none"


class OptionalNumber(Number):
    """A number flag that also takes ``none`` (no limit), as ``None`` does in Python."""

    def __call__(self, raw: str) -> Any:
        if raw.strip().lower() == NO_LIMIT:
            return NO_LIMIT
        return super().__call__(raw)


def add_search_options(p: argparse.ArgumentParser, *, lookup: bool = False) -> None:
    """The lookup options of near-dups (``lookup``: the API's defaults) and report (the write-up's ranking)."""
    default = (lambda key, what: what) if lookup else (lambda key, what: getattr(WRITEUP_LOOKUP, key))
    p.add_argument("--mode", choices=["shingles", "minhash", "lsh"], default=None,
                   help="candidate query: shared shingles (default), shared MinHash values, or shared LSH bands")
    p.add_argument("--max-edit-distance", type=OptionalNumber("--max-edit-distance", "max_distance"), default=None,
                   help="keep candidates within this word edit distance, or 'none' for no limit (default: "
                        f"{default('max_edit_distance', 'no limit')})")
    p.add_argument("--min-jaccard", type=number("--min-jaccard", "min_jaccard"), default=None,
                   help="keep candidates with exact shingle Jaccard >= this, 0 to 1 (default: "
                        f"{default('min_jaccard', 'the threshold the collection was indexed for')}; 0 keeps all)")
    p.add_argument("--rows", type=number("--rows", "rows"), default=None,
                   help=f"candidates asked from Solr per lookup (default: {default('rows', 'all of them')})")
    p.add_argument("--first-word-filter", dest="first_word_filter", action="store_const", const=True,
                   default=None, help="only candidates with the same first word"
                                      + ("" if lookup else " (default)"))
    p.add_argument("--no-first-word-filter", dest="first_word_filter", action="store_const", const=False,
                   help="candidates with any first word" + (" (default)" if lookup else ""))
    p.add_argument("--num-hashes", type=number("--num-hashes", "num_hashes"), default=None,
                   help="MinHash values to query with in minhash mode (default: all the index holds)")
    p.add_argument("--ngram", type=number("--ngram", "ngram"), default=None,
                   help="expected shingle size; the index's own setting is used, this only checks it")
    if lookup:
        p.add_argument("--writeup-ranking", action="store_true", default=None,
                       help="the reference write-up's ranking: first-word filter, 10 rows, edit distance <= 2, "
                            "no Jaccard filter (flags given as well override it)")


def lookup_given(args: argparse.Namespace) -> dict[str, Any]:
    """The lookup options given on the command line, by their keys (None: not given; --max-edit-distance none
    is given, as :data:`NO_LIMIT`)."""
    return {key: getattr(args, key, None) for key in SEARCH_FLAGS}


def with_no_limit(options: T, given: dict[str, Any]) -> T:
    """``options`` with ``--max-edit-distance none`` applied: no limit, whatever the default."""
    if given.get("max_edit_distance") == NO_LIMIT:
        return dataclasses.replace(options, max_edit_distance=None)  # type: ignore[type-var]
    return options


def without_no_limit(given: dict[str, Any]) -> dict[str, Any]:
    """``given`` with ``--max-edit-distance none`` left for :func:`with_no_limit` (None: not given)."""
    return {k: (None if k == "max_edit_distance" and v == NO_LIMIT else v) for k, v in given.items()}


def options_from_flags(build: Callable[[], T], words: dict[str, str] | None = None) -> T:
    """The options object ``build`` makes from the flags; its refusal is said with the flags' names, or in the
    command's own ``words`` for the parameter it names (the rule itself is the options' own)."""

    try:
        return build()
    except InvalidParameterError as exc:
        if words and exc.param in words:
            raise UsageError(words[exc.param]) from None
        raise UsageError(exc.render(flag_for(exc.param))) from None


def add_index_settings_options(p: argparse.ArgumentParser, *, fields_default: str = "shingles,lsh,words") -> None:
    """How a collection is indexed (index, settings --repair; dedupe, whose ``fields_default`` is leaner)."""
    p.add_argument("--ngram", type=number("--ngram", "ngram"), default=None, help="shingle size (default 3)")
    p.add_argument("--unit", choices=["word", "char"], default=None, help="word (default) or char shingles")
    p.add_argument("--num-hashes", type=number("--num-hashes", "num_hashes"), default=None,
                   help="MinHash signature length (default 128)")
    p.add_argument("--lsh-threshold", type=number("--lsh-threshold", "lsh_threshold"), default=None,
                   help="choose LSH bands for this Jaccard (default 0.8)")
    p.add_argument("--bands", type=number("--bands", "bands"), default=None)
    p.add_argument("--rows-per-band", type=number("--rows-per-band", "rows_per_band"), default=None)
    p.add_argument("--sample-mod", type=number("--sample-mod", "sample_mod"), default=None,
                   help="index only shingles whose hash is 0 modulo this (write-up 003's sampling; default 1 = all)")
    p.add_argument("--shingle-tokens", choices=["hash", "text"], default=None,
                   help="how shingles are indexed: the hex of their hashes (default) or the shingle strings (how "
                        "collections were indexed before the hash form; they keep it by themselves)")
    p.add_argument("--fields", type=_fields, default=None,
                   help="token fields to index, comma-separated from shingles,minhash,lsh,words,grams (default "
                        f"{fields_default}, for a collection without documents; minhash: for --mode minhash, "
                        "the write-up's MinHash mode; 'lsh' alone "
                        "is fastest and enough for LSH lookups and whole-collection dedup; grams: words and their "
                        "character 4-grams, for --similarity idf --idf-tokens grams)")
    p.add_argument("--encoder", choices=sorted(IN_PACKAGE), default=None,
                   help="also write each text's vector of meaning, made by this in-package model (wordllama: "
                        "256 dimensions, in the wordllama package, installed by neardup-solr[meaning]), for "
                        "--similarity cosine; your own encoder: Python, neardup_solr.use_encoder (docs/meaning.md)")


def _fields(raw: str) -> tuple[str, ...]:
    names = tuple(f.strip() for f in raw.split(",") if f.strip())
    unknown = [n for n in names if n not in TOKEN_FIELDS]
    if not names or unknown:
        raise argparse.ArgumentTypeError(
            f"--fields must be names from {','.join(TOKEN_FIELDS)}, comma-separated, got {raw!r}")
    return names


INDEX_SETTINGS_FLAGS = {"ngram": "--ngram", "unit": "--unit", "num_hashes": "--num-hashes",
                        "lsh_threshold": "--lsh-threshold", "bands": "--bands", "rows_per_band": "--rows-per-band",
                        "sample_mod": "--sample-mod", "fields": "--fields", "shingle_tokens": "--shingle-tokens",
                        "encoder": "--encoder"}


def index_settings_from_args(args: argparse.Namespace) -> "IndexSettings | None":
    """IndexSettings from the flags that were given (defaults for the others), or None when none was."""

    if all(getattr(args, dest) is None for dest in INDEX_SETTINGS_FLAGS):
        return None
    given = {"ngram": args.ngram, "unit": args.unit, "num_hashes": args.num_hashes,
             "lsh_threshold": args.lsh_threshold, "bands": args.bands, "rows": args.rows_per_band,
             "sample_mod": args.sample_mod, "fields": args.fields, "shingle_tokens": args.shingle_tokens,
             "encoder": in_package_encoder(args.encoder).spec if args.encoder is not None else None}
    # "is not None", never "or": --num-hashes 0 used to mean the default instead of an error.
    return IndexSettings(**{k: v for k, v in given.items() if v is not None})


def open_searcher(args: argparse.Namespace) -> "Searcher":
    """A Searcher on the checked client; refuses --ngram when the index uses another shingle size."""

    searcher = Searcher(open_client(args))
    ngram = getattr(args, "ngram", None)
    if ngram is not None and ngram != searcher.settings.ngram:
        raise UsageError(f"this collection was indexed with {searcher.settings.ngram}-shingles, not {ngram}; "
                         f"re-index with --ngram {ngram} to search with it")
    return searcher


def parse_field_weights(text: str | None) -> dict[str, float] | None:
    """``name=2,city=0.5`` as {column: weight}: finite weights >= 0."""
    if not text:
        return None
    weights = {}
    limit = Limit("float", 0.0, 1e6)
    for part in text.split(","):
        name, sep, value = part.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"--field-weights wants column=weight pairs like name=2,city=0.5; got {part!r}")
        weights[name.strip()] = parse_value(f"--field-weights {name.strip()}", value, limit)
    return weights


def print_error(message: str) -> None:
    """One line on stderr: ``error: ...``."""
    print(f"error: {' '.join(str(message).split())}", file=sys.stderr)


# --split-bucket none: never split (the options' split_bucket=None), told apart from the flag not given.
NEVER_SPLIT = "none"


def split_bucket_arg(text: str) -> "int | str":
    """The argparse type of --split-bucket: an integer >= 2, or ``none``."""
    if text.strip().lower() == NEVER_SPLIT:
        return NEVER_SPLIT
    return number("--split-bucket", Limit("int", 2, 10**9))(text)
