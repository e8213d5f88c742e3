"""Runs the code blocks of a Markdown page as a reader would: in order, in one working directory, against Solr.

A page's fenced blocks are run by their language:

- ``console``: each ``$ command`` (with ``\\`` continuation lines) runs in bash; the lines after it, up to the next
  ``$``, are its expected output (standard output and standard error together). Timings, process ids, and the
  ports and data directories of the Solr the test uses are masked on both sides; ``...`` in an expected line
  matches anything.
- ``bash``: the whole block runs as one ``set -e`` script and must succeed.
- ``python``: the block runs in one Python process per page (``docs_python.py``), in one namespace, in the page's
  directory, as a reader's session would.

Other blocks (``text``, plain fences) are displays and are not run. A block that cannot run here says why in an
HTML comment on the line before its fence, which readers of the rendered page do not see:

- ``<!-- docs-test: skip (REASON) -->``: not run (e.g. it needs a Docker engine);
- ``<!-- docs-test: run-only (REASON) -->``: run, and must succeed, but its output is from a bigger run than the
  test's and is not compared.

``<!-- docs-test: output -->`` before a ``text`` block says it is what the Python block before it prints; it is
compared as console output is.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from repo_paths import REPO

RUN_LANGUAGES = ("console", "bash", "python")
DIRECTIVE = re.compile(r"^\s*<!--\s*docs-test:\s*(skip|run-only|output)\s*(?:\((.+)\))?\s*-->\s*$")
FENCE = re.compile(r"^(\s*)```(\w*)")


@dataclass
class Block:
    page: str
    line: int  # of the opening fence, 1-based
    language: str
    code: str
    directive: str | None = None  # "skip", "run-only" or "output"
    reason: str | None = None
    length: int = 0  # lines between the fences

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


@dataclass
class ConsoleStep:
    command: str
    expected: list[str] = field(default_factory=list)
    source: list[str] = field(default_factory=list)  # the command's lines as the page has them


def page_blocks(text: str, page: str) -> list[Block]:
    """Every fenced block of the page with its language and directive (indented fences in lists included)."""
    blocks: list[Block] = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        indent, language = opening.group(1), opening.group(2)
        directive = reason = None
        previous = lines[index - 1] if index else ""
        found = DIRECTIVE.match(previous)
        if found:
            directive, reason = found.group(1), (found.group(2) or "").strip() or None
        body: list[str] = []
        index += 1
        while index < len(lines) and not lines[index].strip().startswith("```"):
            line = lines[index]
            body.append(line[len(indent):] if line.startswith(indent) else line.lstrip())
            index += 1
        blocks.append(Block(page, index - len(body), language, "\n".join(body) + "\n", directive, reason, len(body)))
        index += 1
    return blocks


def console_steps(code: str) -> list[ConsoleStep]:
    steps: list[ConsoleStep] = []
    lines = code.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.startswith("$ "):
            command, source = line[2:], [line]
            while command.rstrip().endswith("\\") and index + 1 < len(lines):
                index += 1
                command = command.rstrip()[:-1].rstrip() + " " + lines[index].strip()
                source.append(lines[index])
            steps.append(ConsoleStep(strip_comment(command), source=source))
        elif steps:
            steps[-1].expected.append(line)
        elif line.strip():
            raise ValueError(f"console block starts with output, not a '$ ' command: {line!r}")
        index += 1
    return steps


def strip_comment(command: str) -> str:
    """A trailing ``   # note`` after two or more spaces is a remark for the reader, not part of the command."""
    return re.sub(r"\s{2,}#\s.*$", "", command).rstrip()


_MASKS = [
    (re.compile(r"[\d,]+(?:\.\d+)? docs/s"), "N docs/s"),
    (re.compile(r"[\d,]+(?:\.\d+)? MB/s"), "N MB/s"),
    (re.compile(r"\b\d+(?:\.\d+)? s\b"), "N s"),
    (re.compile(r'"(seconds|docs_per_second|megabytes_per_second|signing_seconds|solr_wait_seconds)": [\d.]+'),
     r'"\1": N'),
    (re.compile(r"\bpid \d+"), "pid N"),
    (re.compile(r"written by neardup-solr \S+"), "written by neardup-solr VERSION"),  # a release changes it
]


def mask(line: str) -> str:
    for pattern, replacement in _MASKS:
        line = pattern.sub(replacement, line)
    return line.rstrip()


def line_matches(expected: str, actual: str) -> bool:
    expected, actual = mask(expected), mask(actual)
    if "..." not in expected:
        return expected == actual
    pattern = ".*".join(re.escape(part) for part in expected.split("..."))
    return re.fullmatch(pattern, actual) is not None


def output_mismatch(expected: list[str], actual: list[str]) -> str | None:
    """None when every line matches, else a description of the first difference."""
    expected = [line for line in expected]
    while expected and not expected[-1].strip():
        expected.pop()
    for number, want in enumerate(expected):
        got = actual[number] if number < len(actual) else "<no more output>"
        if not line_matches(want, got):
            return f"line {number + 1}: expected {want!r}\n           got      {got!r}"
    if len(actual) > len(expected):
        return f"unexpected output after line {len(expected)}: {actual[len(expected)]!r}"
    return None


@dataclass
class PageRun:
    """The directory, environment and replacements under which one page runs."""

    directory: Path
    env: dict[str, str]
    replacements: list[tuple[str, str]]  # (what the test's run prints, what the page shows)
    python_output: list[str] = field(default_factory=list)
    interpreter: subprocess.Popen | None = None
    interpreter_log: IO[bytes] | None = None
    ran: list[str] = field(default_factory=list)
    # Output that differs from the page is collected, and the page runs on, so one run shows every drift.
    mismatches: list[str] = field(default_factory=list)
    # (block, the block's code with each differing output replaced by what the command printed)
    rewritten: list[tuple[Block, str]] = field(default_factory=list)

    def shown_as(self, text: str) -> str:
        for actual, shown in self.replacements:
            text = text.replace(actual, shown)
        return text

    def run(self, block: Block) -> None:
        if block.directive == "output":
            self._printed(block)
            return
        if block.directive == "skip" or block.language not in RUN_LANGUAGES:
            return
        if block.language == "console":
            self._console(block)
        elif block.language == "bash":
            self._shell(block, "set -e\n" + block.code)
        else:
            self._python(block)
        self.ran.append(block.where)

    def _shell(self, block: Block, script: str) -> str:
        done = subprocess.run(["bash", "-c", script], cwd=self.directory, env=self.env, capture_output=True,
                              text=True, timeout=900)
        output = self.shown_as(done.stdout + done.stderr)
        if done.returncode != 0 and (block.language == "bash" or block.directive == "run-only"):
            raise AssertionError(f"{block.where}: exit {done.returncode}\n{script}\n{output}")
        return output

    def _console(self, block: Block) -> None:
        rewritten: list[str] = []
        differs = False
        for step in console_steps(block.code):
            output = self._shell(block, step.command)
            rewritten += step.source
            if block.directive == "run-only":
                rewritten += step.expected
                continue
            problem = output_mismatch(step.expected, output.splitlines())
            if problem:
                differs = True
                rewritten += output.rstrip("\n").splitlines()
                self.mismatches.append(f"{block.where}: $ {step.command}\n{problem}\nwhole output:\n{output}")
            else:
                rewritten += step.expected
        if differs:
            self.rewritten.append((block, "\n".join(rewritten) + "\n"))

    def _printed(self, block: Block) -> None:
        printed = self.shown_as(self.python_output[-1] if self.python_output else "")
        problem = output_mismatch(block.code.splitlines(), printed.splitlines())
        if problem:
            self.mismatches.append(f"{block.where}: what the Python block above prints\n{problem}\n"
                                   f"whole output:\n{printed}")
            self.rewritten.append((block, printed if printed.endswith("\n") else printed + "\n"))

    def _python(self, block: Block) -> None:
        if self.interpreter is None:
            self.interpreter_log = tempfile.TemporaryFile()
            # The checkout on the path, as for a reader who runs the page there (records.md imports benchmarks/).
            env = {**self.env, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), self.env.get("PYTHONPATH")]))}
            self.interpreter = subprocess.Popen([sys.executable, str(Path(__file__).with_name("docs_python.py"))],
                                                cwd=self.directory, env=env, stdin=subprocess.PIPE,
                                                stdout=subprocess.PIPE, stderr=self.interpreter_log, text=True)
        assert self.interpreter.stdin is not None and self.interpreter.stdout is not None
        self.interpreter.stdin.write(json.dumps({"code": block.code, "where": block.where}) + "\n")
        self.interpreter.stdin.flush()
        line = self.interpreter.stdout.readline()
        answer = json.loads(line) if line else {"printed": "", "error": f"the interpreter ended:\n{self._log_tail()}"}
        self.python_output.append(answer["printed"])
        if answer["error"]:
            earlier = "".join(f"\n\nearlier, {mismatch}" for mismatch in self.mismatches)
            raise AssertionError(f"{block.where} failed:\n{answer['error']}\n{block.code}{earlier}")

    def _log_tail(self) -> str:
        if self.interpreter_log is None:
            return ""
        self.interpreter_log.seek(0)
        return self.interpreter_log.read().decode("utf-8", "replace")[-3000:]

    def close(self) -> None:
        """Ends the page's Python process, if it started one."""
        if self.interpreter is not None:
            assert self.interpreter.stdin is not None
            self.interpreter.stdin.close()
            try:
                self.interpreter.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.interpreter.kill()
                self.interpreter.wait()
            self.interpreter = None
        if self.interpreter_log is not None:
            self.interpreter_log.close()
            self.interpreter_log = None


def rewrite_page(text: str, rewritten: list[tuple[Block, str]]) -> str:
    """The page with the given blocks' bodies replaced (for DOCS_EXAMPLES_UPDATE=1; review the diff before keeping)."""
    lines = text.splitlines(keepends=True)
    for block, code in sorted(rewritten, key=lambda item: -item[0].line):
        opening = lines[block.line - 1]
        indent = opening[: len(opening) - len(opening.lstrip())]
        body_length = block.length
        new_body = [(indent + line if line else line) + "\n" for line in code.splitlines()]
        lines[block.line: block.line + body_length] = new_body
    return "".join(lines)
