"""The command-line reference in docs/cli is the parser's own help, and --help groups the commands by job."""


from neardup_solr.cli import COMMAND_GROUPS, build_parser
from neardup_solr.cli.reference import main as reference_main, pages
from repo_paths import REPO as ROOT


def test_the_committed_pages_equal_the_parsers_help():
    # On failure: python -m neardup_solr.cli.reference docs/cli, and commit the pages.
    assert reference_main([str(ROOT / "docs" / "cli"), "--check"]) == 0


def test_every_command_has_a_page_with_its_options_and_subcommands():
    generated = pages()
    commands = [name for names in COMMAND_GROUPS.values() for name in names]
    assert sorted(generated) == sorted([f"{name}.md" for name in commands] + ["commands.md"])
    assert "--threshold" in generated["report.md"] and "--similarity" in generated["report.md"]
    assert "## neardup-solr spark dedup" in generated["spark.md"] and "--to-solr" in generated["spark.md"]
    assert all(f"({name}.md)" in generated["commands.md"] for name in commands)


def test_a_stale_page_is_reported(tmp_path, capsys):
    reference_main([str(tmp_path)])
    (tmp_path / "report.md").write_text("# an old page\n", encoding="utf-8")
    assert reference_main([str(tmp_path), "--check"]) == 1
    assert "report.md" in capsys.readouterr().err


def test_help_lists_the_commands_under_their_jobs(capsys):
    help_text = build_parser().format_help()
    assert help_text.startswith("usage: neardup-solr [-h] [-v] [--version] COMMAND ...")
    positions = [help_text.index(f"{title}:") for title in COMMAND_GROUPS]
    assert positions == sorted(positions)
    for title, names in COMMAND_GROUPS.items():
        section = help_text[help_text.index(f"{title}:"):]
        for name in names:
            assert f"\n  {name} " in section.split("\n\n")[0]
