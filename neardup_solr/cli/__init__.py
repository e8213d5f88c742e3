"""``neardup-solr``: a thin command line over the library. Every command is also a Python call.

Errors are printed as one line (no traceback) and set a non-zero exit code, the same table
(:data:`neardup_solr.errors.OUTCOMES`) that gives the HTTP service its statuses: 2 for usage and input errors
(a bad flag value, an option that does not apply, an unwritable output, an invalid environment variable), 3 when
Solr is unavailable, timed out or failed, 1 when records were rejected, 4 when the index lacks documents it
should hold (an ``index`` run's final check, or ``verify``), 70 for an unexpected internal error (a bug; ``-vv``
shows its traceback).
"""

from __future__ import annotations

import argparse
import logging
import sys

from neardup_solr.errors import EXIT_INTERNAL, InvalidParameterError, outcome_of
from neardup_solr.cli import (
    dedupe_cmd,
    delete_cmd,
    index_cmd,
    install_cmd,
    optimize_cmd,
    records_cmd,
    search_cmd,
    serve_cmd,
    settings_cmd,
    solr_cmd,
    tools_cmd,
)
from neardup_solr.cli import spark_cmd
from neardup_solr.version import package_version
from neardup_solr.cli.common import Parser, flag_for, print_error

log = logging.getLogger("neardup_solr")


# ``neardup-solr --help`` lists the commands by the job they do, in this order.
COMMAND_GROUPS: dict[str, tuple[str, ...]] = {
    "Run Solr and look after a collection": ("solr", "settings", "optimize", "delete"),
    "Load documents": ("index", "verify"),
    "Near duplicates in a collection of your own": ("install", "backfill", "sync", "uninstall"),
    "Find near duplicates": ("near-dups", "search", "report", "join", "groups", "dedupe", "match-records"),
    "Match records field by field in a collection": ("index-records", "train-records", "match-online"),
    "Choose and measure settings": ("tune", "evaluate", "demo"),
    "Serve and run in batch": ("serve", "spark"),
}


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command (each module registers its own)."""
    parser = Parser(prog="neardup-solr", description="Find near-duplicate documents with Apache Solr.",
                    usage="neardup-solr [-h] [-v] [--version] COMMAND ...",
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-vv for debug)")
    parser.add_argument("--version", action="version", version=f"neardup-solr {package_version()}",
                        help="print the package's version and exit")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser, metavar="COMMAND",
                                prog="neardup-solr", help=argparse.SUPPRESS)
    for module in (solr_cmd, index_cmd, search_cmd, settings_cmd, tools_cmd, delete_cmd, optimize_cmd,
                   serve_cmd, install_cmd, records_cmd, dedupe_cmd):
        module.register(sub)
    spark_cmd.register(sub)
    parser.epilog = _grouped_commands(sub)
    return parser


def _grouped_commands(sub: argparse._SubParsersAction) -> str:
    """The commands and their one-line help, under :data:`COMMAND_GROUPS`'s headings."""
    helps = {action.dest: action.help or "" for action in sub._choices_actions}
    grouped = [name for names in COMMAND_GROUPS.values() for name in names]
    if sorted(grouped) != sorted(helps):  # a new command must be given a group
        raise AssertionError(f"COMMAND_GROUPS lists {sorted(grouped)}, the parser has {sorted(helps)}")
    lines = []
    for title, names in COMMAND_GROUPS.items():
        lines.append(f"{title}:")
        lines += [f"  {name:<11} {helps[name]}" for name in names]
        lines.append("")
    lines.append("neardup-solr COMMAND --help shows a command's options.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run one command; returns its exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    level = logging.WARNING if args.verbose == 0 else logging.INFO if args.verbose == 1 else logging.DEBUG
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    if args.verbose == 0:
        # Per-record warnings go to the rejects file and the summary; keep the terminal readable.
        logging.getLogger("neardup_solr.solr.indexer").setLevel(logging.ERROR)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        code = outcome_of(exc).exit_code
        if code == EXIT_INTERNAL:  # a bug: still one line, with the traceback in the debug log
            log.debug("internal error", exc_info=True)
            print_error(f"internal error ({type(exc).__name__}: {exc}); this is a bug in neardup-solr: please "
                        "report it with the output of the same command with -vv")
        elif isinstance(exc, InvalidParameterError):
            # The library names its parameters (num_hashes); say it with this command's flags (--num-hashes).
            print_error(exc.render(flag_for(exc.param, getattr(args, "param_flags", None))))
        else:
            print_error(getattr(exc, "cli_message", None) or str(exc) or type(exc).__name__)
        return code
