"""The command-line reference pages (``docs/cli/``), generated from the parser itself so help and docs never drift.

    python -m neardup_solr.cli.reference docs/cli          # write the pages
    python -m neardup_solr.cli.reference docs/cli --check  # exit 1 when a page differs from the parser

One page a command (``report.md``, ``solr.md``...), holding its ``--help`` and that of each of its subcommands
(``solr start``, ``spark dedup``...), and ``commands.md`` listing the commands by job as ``neardup-solr --help``
does. The help is formatted 100 columns wide whatever the terminal, so the pages are the same on every machine;
``tests/doors/cli/test_cli_reference.py`` fails when a flag changed and the pages were not regenerated.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from neardup_solr.cli import COMMAND_GROUPS, build_parser

WIDTH = "100"


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _help_of(parser: argparse.ArgumentParser) -> str:
    return parser.format_help().rstrip("\n")


def pages() -> dict[str, str]:
    """File name -> Markdown text of every reference page."""

    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH  # argparse wraps at the terminal's width: fixed, for pages equal everywhere
    try:
        root = build_parser()
        commands = _subcommands(root)
        helps = {a.dest: a.help or "" for action in root._actions
                 if isinstance(action, argparse._SubParsersAction) for a in action._choices_actions}
        out: dict[str, str] = {}
        index = ["# Command-line reference", "",
                 "Generated from the parser (`python -m neardup_solr.cli.reference docs/cli`); every command is also "
                 "a Python call, named on its page.", "", "```text", _help_of(root), "```", ""]
        for title, names in COMMAND_GROUPS.items():
            index += [f"## {title}", ""]
            index += [f"- [`{name}`]({name}.md): {helps[name]}" for name in names]
            index.append("")
        out["commands.md"] = "\n".join(index)
        for name, parser in commands.items():
            lines = [f"# neardup-solr {name}", "", helps[name][:1].upper() + helps[name][1:] + ".", "",
                     "```text", _help_of(parser), "```", ""]
            for sub_name, sub_parser in _subcommands(parser).items():
                lines += [f"## neardup-solr {name} {sub_name}", "", "```text", _help_of(sub_parser), "```", ""]
            out[f"{name}.md"] = "\n".join(lines)
        return out
    finally:
        if previous is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = previous


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m neardup_solr.cli.reference", description=__doc__.split("\n\n")[0])
    ap.add_argument("directory", help="where the pages go (docs/cli)")
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 when a page is missing or differs")
    args = ap.parse_args(argv)
    directory = Path(args.directory)
    stale = []
    for name, text in pages().items():
        path = directory / name
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(str(path))
        else:
            directory.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    if stale:
        print(f"out of date (run python -m neardup_solr.cli.reference {directory}): {', '.join(stale)}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
