"""Running the command line in-process, as the CLI tests do: ``main(argv)`` with its exit code (also when it
exits through SystemExit, as argparse does) and what it printed."""

from __future__ import annotations

from neardup_solr.cli import main


def run(argv, capsys) -> tuple[int, str, str]:
    """``(exit code, stdout, stderr)`` of ``neardup-solr *argv``; ``capsys``: pytest's fixture."""
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err
