"""Every shell and Python block of the README and of docs/ runs as written, against a real Solr (tests/docs_runner.py
says how blocks are run, compared and, where they cannot run here, skipped with a reason).

A page whose blocks start their own Solr (``neardup-solr solr start``) runs them on a free port with no SOLR_URL,
as a reader on a fresh machine would; every other page runs against an empty core of the session's Solr, shown
in the page as the default ``http://127.0.0.1:8983/solr/neardup``.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from docs_runner import Block, PageRun, console_steps, line_matches, output_mismatch, page_blocks, rewrite_page
from repo_paths import REPO as ROOT

from neardup_solr.solr.backends.ports import port_is_free

# Pages with a test of their own, which also checks what their blocks print.
OWN_TESTS = {"coming-from-datasketch.md": "tests/doors/docs/test_docs_datasketch.py"}
PAGES = [ROOT / "README.md", *sorted(page for page in (ROOT / "docs").glob("*.md") if page.name not in OWN_TESTS)]
SHOWN_SOLR = "http://127.0.0.1:8983/solr/neardup"
# What the pages' commands use from the checkout, linked into each page's working directory.
CHECKOUT_ENTRIES = ("scripts", "benchmarks", "neardup_solr")


def blocks_of(page: Path) -> list[Block]:
    return page_blocks(page.read_text(encoding="utf-8"), str(page.relative_to(ROOT)))


def starts_its_own_solr(blocks: list[Block]) -> bool:
    return any(step.command.startswith("neardup-solr solr start")
               for block in blocks if block.language == "console" and block.directive != "skip"
               for step in console_steps(block.code))


def free_base_port() -> int:
    """A port P with P, P+1 (a second cloud node) and P+1000 (ZooKeeper) free, as the local cloud lays them out;
    all three below the kernel's ephemeral range (32768 up by default), where no outgoing connection takes them
    while the page's Solr starts (neardup_solr/solr/backends/ports.py)."""
    for _ in range(200):
        port = random.randint(20000, 31000)
        if all(port_is_free(candidate) for candidate in (port, port + 1, port + 1000)):
            return port
    raise RuntimeError("no free port triple between 20000 and 32000")


def page_directory(tmp_path: Path) -> Path:
    for entry in CHECKOUT_ENTRIES:
        (tmp_path / entry).symlink_to(ROOT / entry)
    return tmp_path


def base_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.pop("NEARDUP_SOLR_PORT", None)
    env.pop("SOLR_URL", None)
    return env


# --- the runner itself (pure) --------------------------------------------------------------------------------

def test_blocks_are_found_with_their_language_line_and_directive():
    text = ("intro\n```console\n$ neardup-solr index a.txt \\\n    --clear  # fresh\nread 1\n```\n\n"
            "<!-- docs-test: skip (needs a Docker engine) -->\n```bash\ndocker compose up -d\n```\n"
            "- item\n  ```python\n  x = 1\n  ```\n")
    blocks = page_blocks(text, "p.md")
    assert [(b.language, b.line, b.directive) for b in blocks] == [("console", 2, None), ("bash", 9, "skip"),
                                                                   ("python", 13, None)]
    assert blocks[1].reason == "needs a Docker engine" and blocks[2].code == "x = 1\n"
    steps = console_steps(blocks[0].code)
    assert [(s.command, s.expected) for s in steps] == [("neardup-solr index a.txt --clear", ["read 1"])]


def test_a_rewrite_replaces_only_the_blocks_bodies_even_an_empty_one():
    from docs_runner import rewrite_page

    text = "a\n```console\n$ echo hi\nold\n```\nb\n<!-- docs-test: output -->\n```text\n```\nc\n"
    console, printed = page_blocks(text, "p.md")
    assert printed.length == 0 and console.length == 2
    rewritten = rewrite_page(text, [(console, "$ echo hi\nhi\n"), (printed, "x\ny\n")])
    assert rewritten == "a\n```console\n$ echo hi\nhi\n```\nb\n<!-- docs-test: output -->\n```text\nx\ny\n```\nc\n"


def test_timings_are_masked_and_dots_match_anything_but_counts_must_agree():
    assert line_matches("read 864, indexed 864 in 0.6 s (1,389 docs/s)", "read 864, indexed 864 in 12.0 s (71 docs/s)")
    assert not line_matches("read 864, indexed 864 in 0.6 s", "read 863, indexed 863 in 0.6 s")
    assert line_matches("zookeeper  127.0.0.1:9983  pid 14162  alive", "zookeeper  127.0.0.1:9983  pid 7  alive")
    assert line_matches("wrote ... to pairs.tsv", "wrote 12 pairs to pairs.tsv")
    assert output_mismatch(["a", "b", ""], ["a", "b"]) is None
    assert "line 2" in output_mismatch(["a", "b"], ["a", "c"])
    assert "unexpected output" in output_mismatch(["a"], ["a", "extra"])


def test_every_skip_says_why_and_most_blocks_run():
    blocks = [block for page in PAGES for block in blocks_of(page) if block.language in ("console", "bash", "python")]
    skipped = [block for block in blocks if block.directive == "skip"]
    assert all(block.reason and len(block.reason) > 10 for block in skipped)
    assert len(blocks) >= 20 and len(skipped) <= len(blocks) // 3, [b.where for b in skipped]


def test_no_page_hides_commands_in_an_indented_block():
    """An indented code block is not run: commands belong in fenced console or bash blocks."""
    for page in PAGES:
        previous = ""
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            assert not (previous == "" and re.match(r"    (\$ |neardup-solr |python )", line)), f"{page.name}:{number}"
            previous = line


# --- the pages, run ------------------------------------------------------------------------------------------

@pytest.mark.solr
@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_the_page_runs_as_written(page, solr, solr_url, tmp_path):
    blocks = blocks_of(page)
    runnable = [b for b in blocks if b.language in ("console", "bash", "python") and b.directive != "skip"]
    if not runnable:
        pytest.skip(f"{page.name} has no shell or Python block")
    env = base_env()
    # The page's directory is shown as ".", the checkout (where the packaged data lives) as "...".
    replacements = [(str(tmp_path) + "/", ""), (str(tmp_path), "."), (str(ROOT), "...")]
    own_port = None
    if starts_its_own_solr(blocks):
        own_port = free_base_port()
        env["NEARDUP_SOLR_PORT"] = str(own_port)
        replacements += [(str(own_port + 1000), "9983"), (str(own_port + 1), "8984"), (str(own_port), "8983")]
    else:
        env["SOLR_URL"] = solr_url
        replacements.insert(0, (solr_url, SHOWN_SOLR))
    if Path.home() != Path("/root"):
        replacements.append((str(Path.home()), "/root"))
    run = PageRun(page_directory(tmp_path), env, replacements)
    try:
        for block in blocks:
            run.run(block)
    finally:
        run.close()
        if own_port is not None:
            subprocess.run([sys.executable, "-m", "neardup_solr.cli", "solr", "stop", "--port", str(own_port)],
                           env=env, capture_output=True, timeout=120)
            shutil.rmtree(Path.home() / ".neardup-solr" / f"solr-{own_port}", ignore_errors=True)
    assert run.ran, f"no block of {page.name} ran"
    if run.rewritten and os.environ.get("DOCS_EXAMPLES_UPDATE") == "1":
        page.write_text(rewrite_page(page.read_text(encoding="utf-8"), run.rewritten), encoding="utf-8")
    assert not run.mismatches, "the page shows other output than its commands give:\n\n" + "\n\n".join(run.mismatches)
