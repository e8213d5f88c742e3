"""neardup-solr dedupe: the same files as the Python call (dedupe_file) and as the commands it replaces, its
summary line, rejected records named on the terminal, and its refusals. Against a real Solr."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time

import pytest

from benchmarks.corpus import generate
from dedupe_reference import run_commands
from neardup_solr import SolrClient, dedupe_file
from cli_run import run

pytestmark = pytest.mark.solr


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    out = tmp_path_factory.mktemp("corpus")
    generate(1500, 11, out)
    return out / "docs.jsonl"


def test_the_command_writes_what_the_python_call_and_the_recipe_write(corpus, solr_url, tmp_path, capsys):
    files = ("out.jsonl", "pairs.tsv", "groups.jsonl", "keep.txt")
    for side in ("cli", "python"):
        (tmp_path / side).mkdir()
    code, out, err = run(["dedupe", str(corpus), "--threshold", "0.8", "--out", str(tmp_path / "cli" / files[0]),
                          "--pairs", str(tmp_path / "cli" / files[1]), "--groups", str(tmp_path / "cli" / files[2]),
                          "--keep", str(tmp_path / "cli" / files[3]), "--clear-all", "-q", "--solr-url", solr_url],
                         capsys)
    assert code == 0, err
    match = re.fullmatch(r"1500 records in, kept (\d+), dropped (\d+), rejected 0 in [\d.]+ s "
                         r"\([\d,]+ docs/s, [\d.,]+ MB/s\) -> (.+) \((\d+) pairs "
                         r"with jaccard similarity >= 0.8, (\d+) groups\)\n", out)
    assert match, out
    kept, dropped = int(match[1]), int(match[2])
    assert kept + dropped == 1500 and dropped > 0
    summary = dedupe_file(SolrClient(solr_url), corpus, tmp_path / "python" / files[0], 0.8, clear="all",
                          pairs_out=tmp_path / "python" / files[1], groups_out=tmp_path / "python" / files[2],
                          keep_out=tmp_path / "python" / files[3])
    assert (summary.kept, summary.dropped) == (kept, dropped)
    assert list(summary.stages) == ["indexing", "signing", "waiting for Solr", "finding pairs", "reading signatures",
                                    "candidate pairs", "verifying", "grouping", "writing"]
    # The parts of a stage fit inside it, and the stages inside the whole run.
    assert summary.stages["signing"] + summary.stages["waiting for Solr"] <= summary.stages["indexing"]
    assert (summary.stages["reading signatures"] + summary.stages["candidate pairs"] + summary.stages["verifying"]
            <= summary.stages["finding pairs"])
    assert sum(summary.stages[k] for k in ("indexing", "finding pairs", "grouping", "writing")) <= summary.seconds
    assert summary.stages["signing"] > 0 and summary.stages["finding pairs"] > 0
    for name in files:
        assert (tmp_path / "cli" / name).read_bytes() == (tmp_path / "python" / name).read_bytes(), name
    reference = run_commands(corpus, tmp_path / "recipe", solr_url, 0.8)
    assert (tmp_path / "cli" / "pairs.tsv").read_bytes() == reference.pairs
    assert (tmp_path / "cli" / "groups.jsonl").read_bytes() == reference.groups
    assert (tmp_path / "cli" / "keep.txt").read_bytes() == reference.keep_list
    written = [json.loads(line)["id"] for line in open(tmp_path / "cli" / "out.jsonl", encoding="utf-8")]
    assert set(written) == reference.keep and len(written) == kept


def test_rejected_records_are_named_and_the_exit_code_says_so(solr_url, tmp_path, capsys):
    source = tmp_path / "in.jsonl"
    source.write_text('{"id": "a", "text": "The harbour road closes for the winter storms again this year"}\n'
                      '{"id": "b", "text": ""}\n'
                      'not json at all\n'
                      '{"id": "c", "text": "The harbour road closes for the winter storms again this year"}\n',
                      encoding="utf-8")
    code, out, err = run(["dedupe", str(source), "--out", str(tmp_path / "out.jsonl"), "--clear-all", "-q",
                          "--json", "--solr-url", solr_url], capsys)
    assert code == 1
    assert f"rejected {source} line 2 (id 'b'): " in err
    assert re.search(rf"rejected {re.escape(str(source))} line 3: not valid JSON", err)
    summary = json.loads(out)
    assert (summary["records"], summary["kept"], summary["dropped"], summary["rejected"]) == (4, 1, 1, 2)
    assert summary["rejects_path"] == str(tmp_path / "out.jsonl.rejects.jsonl")
    assert set(summary["stages"]) == {"indexing", "signing", "waiting for Solr", "finding pairs", "reading signatures",
                                      "candidate pairs", "verifying", "grouping", "writing"}
    assert (tmp_path / "out.jsonl").read_text(encoding="utf-8") == (
        '{"id": "a", "text": "The harbour road closes for the winter storms again this year"}\n')


def test_refusals(solr_url, tmp_path, capsys):
    source = tmp_path / "in.jsonl"
    source.write_text('{"id": "a", "text": "one two three"}\n', encoding="utf-8")
    out = str(tmp_path / "out.jsonl")
    for argv, words in ((["--clear"], "--dataset"), (["--resume", "--clear-all"], "--resume"),
                        (["--pairs", out], "--pairs"), (["--threshold", "1.5"], "--threshold")):
        code, _, err = run(["dedupe", str(source), "--out", out, *argv, "--solr-url", solr_url], capsys)
        assert code == 2 and words in err, (argv, err)
    code, _, err = run(["dedupe", "-", "--out", out, "--solr-url", solr_url], capsys)
    assert code == 2 and "standard input" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]


def test_a_killed_run_resumes_to_the_same_output(corpus, solr_url, tmp_path):
    """The process killed (SIGKILL: no clean-up of its own) part way, then the same command with --resume."""
    # Every token field: slower than dedupe's own lean fields, so that the run is still indexing when it is killed
    # (the output does not depend on them: tests/solr/engine/test_dedupe.py).
    command = [sys.executable, "-m", "neardup_solr.cli", "dedupe", str(corpus), "--out", str(tmp_path / "out.jsonl"),
               "--fields", "shingles,minhash,lsh,words", "--solr-url", solr_url, "-q"]
    first = subprocess.Popen([*command, "--clear-all", "--batch-size", "100", "--workers", "1"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    run_file = tmp_path / "out.jsonl.dedupe-run" / "run.json"
    deadline = time.monotonic() + 60
    while not run_file.exists() and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.5)  # into the indexing
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=30)
    assert first.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    assert not (tmp_path / "out.jsonl").exists() and run_file.exists()
    resumed = subprocess.run([*command, "--resume"], capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    dedupe_file(SolrClient(solr_url), corpus, tmp_path / "clean.jsonl", 0.8, clear="all")
    assert (tmp_path / "out.jsonl").read_bytes() == (tmp_path / "clean.jsonl").read_bytes()
    assert not (tmp_path / "out.jsonl.dedupe-run").exists()


def test_one_progress_bar_over_the_whole_run(solr_url, tmp_path, capsys):
    source = tmp_path / "in.txt"
    source.write_text("".join(f"{i} record number {i} with some words of its own {i * 7}\n" for i in range(50)),
                      encoding="utf-8")
    code, out, err = run(["dedupe", str(source), "--out", str(tmp_path / "out.txt"), "--clear-all",
                          "--solr-url", solr_url], capsys)
    assert code == 0 and out.startswith("50 records in, kept 50, dropped 0, rejected 0 in ")
    stages = [line.split(":")[0] for line in err.replace("\r", "\n").splitlines() if line.startswith("dedupe ")]
    assert list(dict.fromkeys(stages)) == ["dedupe 1/4 indexing", "dedupe 2/4 finding pairs", "dedupe 3/4 grouping",
                                           "dedupe 4/4 writing"]
    assert "dedupe 4/4 writing: 100%" in err
    # The time line: every stage named once, in order, the indexing stage split into signing and Solr's share.
    times = [line for line in err.splitlines() if line.startswith("time: ")]
    assert len(times) == 1, err
    assert re.fullmatch(r"time: indexing [\d.]+ s \(signing [\d.]+ s, waiting for Solr [\d.]+ s\), finding pairs "
                        r"[\d.]+ s \(reading signatures [\d.]+ s, candidate pairs [\d.]+ s, verifying [\d.]+ s\), "
                        r"grouping [\d.]+ s, writing [\d.]+ s", times[0]), times[0]
