"""Nothing acknowledged is lost: result files appear complete or not at all, and long jobs continue after Solr
went away, giving the same bytes as a clean run.

The Solr tests run their own Solr (free port, throwaway data dir), because they kill it with SIGKILL or stop it.
"""

from __future__ import annotations

import json
import logging
import os
import random
import signal
import threading
import time
from pathlib import Path

import pytest

from netutil import free_port

from neardup_solr import cli
from neardup_solr.solr.backends.local import LocalSolr
from neardup_solr.solr.documents import IndexSettings
from neardup_solr.errors import SolrUnavailableError
from neardup_solr.pairs.groups import group_pairs, write_groups_jsonl
from neardup_solr.solr.indexer import Indexer
from neardup_solr.io.outputs import ResumableOutput, check_output_path, write_atomically
from neardup_solr.errors import OutputInUseError, RunStopped
from neardup_solr.engine.report import report_near_dups
from neardup_solr.solr.searcher import Searcher
from neardup_solr.cli import common as cli_common
from neardup_solr.solr.client import RetryPolicy, SolrClient
from neardup_solr.engine.threshold import ThresholdFinder, join_pairs, threshold_pairs

FAST_FAIL = dict(attempts=3, base=0.1, cap=0.3, seed=1)
# Outlasts a kill, a 5 s pause and a restart with the core loading (keyword arguments: the policy is moving
# from a count of attempts to a time budget, and these mean the same under both).
PATIENT = dict(attempts=200, base=0.5, cap=2.0, seed=3)


def _partial(out: Path) -> Path:
    return out.with_name(out.name + ".partial")


def _progress(out: Path) -> dict:
    return json.loads(out.with_name(out.name + ".partial.progress.json").read_text())


# ---------------------------------------------------------------------------------------------- no Solr needed
def test_atomic_write_keeps_the_earlier_file_until_the_new_one_is_complete(tmp_path):
    out = tmp_path / "groups.jsonl"
    out.write_text("earlier complete result\n")

    def lines_then_failure():
        yield "new line 1\n"
        raise RuntimeError("stopped half way")

    with pytest.raises(RuntimeError):
        write_atomically(out, lines_then_failure())
    assert out.read_text() == "earlier complete result\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["groups.jsonl"]  # no .tmp, no .lock left

    assert write_groups_jsonl(group_pairs([("1", "2", 0)]), out) == 1
    assert json.loads(out.read_text())["members"] == ["1", "2"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["groups.jsonl"]


def test_a_second_run_on_the_same_output_is_refused(tmp_path):
    out = tmp_path / "pairs.tsv"
    with ResumableOutput(out, job="report") as first:
        first.begin({"p": 1}, total=1)
        with pytest.raises(OutputInUseError, match="another run is writing .*pairs.tsv"):
            write_atomically(out, ["x\n"])
        with pytest.raises(OutputInUseError):
            with ResumableOutput(out, job="report", resume=True):
                pass
        first.add("1", [["1", "2", 0, 3.0]])
        first.commit(["done\n"])
    assert out.read_text() == "done\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pairs.tsv"]
    write_atomically(out, ["again\n"])  # the lock went with the first run
    assert out.read_text() == "again\n"


def test_unwritable_outputs_are_refused_in_one_line(tmp_path):
    with pytest.raises(ValueError, match="is a directory"):
        check_output_path(tmp_path)
    with pytest.raises(ValueError, match="does not exist"):
        check_output_path(tmp_path / "missing" / "pairs.tsv")
    if os.geteuid() != 0:  # root may write anywhere
        locked = tmp_path / "read-only"
        locked.mkdir(mode=0o555)
        with pytest.raises(ValueError, match="no permission"):
            check_output_path(locked / "pairs.tsv")


def test_output_is_checked_before_any_solr_work(tmp_path, capsys):
    nobody = f"http://127.0.0.1:{free_port()}/solr/neardup"  # nothing listens: any request would fail with exit 3
    searcher = Searcher(SolrClient(nobody, retry=RetryPolicy(attempts=1)), settings=IndexSettings())
    with pytest.raises(ValueError, match="does not exist"):
        report_near_dups(searcher, tmp_path / "missing" / "r.tsv")
    with pytest.raises(ValueError, match="is a directory"):
        threshold_pairs(ThresholdFinder(searcher, 0.5), out=tmp_path)

    code = cli.main(["report", "--out", str(tmp_path / "missing" / "r.tsv"), "--solr-url", nobody, "-q"])
    assert code == 2 and "does not exist" in capsys.readouterr().err
    code = cli.main(["groups", str(tmp_path / "none.tsv"), "--out", str(tmp_path), "--solr-url", nobody])
    assert code == 2 and "is a directory" in capsys.readouterr().err


def test_resume_truncates_what_a_crash_left_after_the_last_progress(tmp_path):
    out = tmp_path / "pairs.tsv"
    units = [(str(i), [[str(i), str(i + 1), 0, float(i)]] if i % 3 else []) for i in range(10)]

    def run(resume, stop_at=None):
        with ResumableOutput(out, job="report", resume=resume) as output:
            records = output.begin({"settings": "same"}, total=len(units))
            for key, recs in units[output.done:]:
                if key == stop_at:
                    raise SolrUnavailableError("Solr is not answering (test)")
                output.add(key, recs)
                records += recs
            output.commit(f"{r}\n" for r in records)

    with pytest.raises(RunStopped, match=r"stopped after 6 of 10 documents .*--resume") as info:
        run(False, stop_at="6")
    assert not out.exists() and info.value.partial_path == _partial(out)
    assert _progress(out)["done"] == 6 and _progress(out)["last"] == "5"
    with open(_partial(out), "ab") as fh:  # a unit half written when the process died
        fh.write(b'["6", "7", 0, 6.')
    run(True)
    clean = tmp_path / "clean.tsv"
    out.rename(clean)
    run(False)
    assert clean.read_bytes() == out.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clean.tsv", "pairs.tsv"]


def test_a_failed_write_leaves_its_unit_to_be_done_again(tmp_path):
    out = tmp_path / "pairs.tsv"
    units = [(str(i), [[str(i), str(i + 1), 1, 2.5]]) for i in range(5)]

    class FullDisk:
        def __init__(self, fh):
            self.fh = fh

        def write(self, data):
            self.fh.write(data[:5])  # part of the unit reaches the file, then the disk is full
            raise OSError(28, "No space left on device")

        def __getattr__(self, name):
            return getattr(self.fh, name)

    with pytest.raises(OSError):
        with ResumableOutput(out, job="join", unit="records") as output:
            output.begin({}, total=len(units))
            for key, recs in units:
                if key == "3":
                    output._fh = FullDisk(output._fh)
                output.add(key, recs)
    assert _progress(out)["done"] == 3 and not out.exists()

    with ResumableOutput(out, job="join", resume=True, unit="records") as output:
        records = output.begin({}, total=len(units))
        assert output.done == 3
        for key, recs in units[output.done:]:
            output.add(key, recs)
            records += recs
        output.commit(json.dumps(r) + "\n" for r in records)
    assert [json.loads(line) for line in out.read_text().splitlines()] == [r for _, recs in units for r in recs]


def test_resume_with_other_parameters_is_refused(tmp_path, caplog):
    out = tmp_path / "pairs.tsv"
    with pytest.raises(RunStopped):
        with ResumableOutput(out, job="report") as output:
            output.begin({"threshold": 0.5, "mode": "shingles"}, total=3)
            output.add("1", [])
            raise SolrUnavailableError("gone")
    with pytest.raises(ValueError, match=r"cannot resume .*threshold was 0.5, now 0.6\); .*without --resume"):
        with ResumableOutput(out, job="report", resume=True) as output:
            output.begin({"threshold": 0.6, "mode": "shingles"}, total=3)
    assert _partial(out).exists()  # refused, not discarded

    caplog.set_level(logging.WARNING, logger="neardup_solr.io.outputs")
    with ResumableOutput(tmp_path / "other.tsv", job="report", resume=True) as output:
        assert output.begin({"threshold": 0.6}, total=0) == []
        output.commit(["empty\n"])
    assert "nothing to resume" in caplog.text and "starting from the top" in caplog.text


# ---------------------------------------------------------------------------------------------- real Solr
@pytest.fixture(scope="module")
def own_solr(tmp_path_factory):
    solr = LocalSolr(port=free_port(), data_dir=tmp_path_factory.mktemp("resume-solr"))
    solr.start()
    yield solr
    solr.stop()


def _texts(seed: int, count: int, prefix: str, sources: dict | None = None) -> dict[str, str]:
    """Random texts, a third of them edited copies (1-2 words changed, first word kept) of earlier ones or of
    ``sources``, so that the report, the threshold report and the join all find pairs."""
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(1500)]
    docs: dict[str, str] = {}
    pool = list((sources or {}).values())
    for i in range(count):
        if pool and rng.random() < 0.35:
            words = rng.choice(pool).split()
            for _ in range(rng.randint(1, 2)):
                words[rng.randrange(1, len(words))] = rng.choice(vocab)
        else:
            words = [rng.choice(vocab) for _ in range(rng.randint(12, 30))]
        text = " ".join(words)
        docs[f"{prefix}{i}"] = text
        pool.append(text)
    return docs


@pytest.fixture(scope="module")
def corpus(own_solr):
    """Data set 'a' (3,000 documents, numeric ids) and 'b' (300 copies and strangers); 'c' is streamed only."""
    a = {str(i): t for i, t in enumerate(_texts(1, 3000, "").values(), start=1)}
    b = _texts(2, 300, "b", sources=dict(list(a.items())[:150]))
    c = _texts(3, 300, "c", sources=dict(list(a.items())[:200]))
    client = SolrClient(own_solr.core_url)
    client.delete_all()
    settings = IndexSettings(ngram=3, num_hashes=64)
    Indexer(client, settings, dataset="a").index_records(a.items())
    Indexer(client, settings, dataset="b").index_records(b.items())
    return {"a": a, "b": b, "c": c}


@pytest.fixture(scope="module")
def clean_report(own_solr, corpus, tmp_path_factory):
    """The write-up report of the whole corpus from an undisturbed run: (file, pairs)."""
    clean = tmp_path_factory.mktemp("clean-report") / "clean.tsv"
    summary, pairs = report_near_dups(Searcher(SolrClient(own_solr.core_url)), clean, workers=2)
    assert summary.documents == 3300 and len(pairs) > 300
    return clean, pairs


class BreakingClient(SolrClient):
    """Raises SolrUnavailableError from the ``at``-th select on (Solr itself stays up): a stop without waiting."""

    def __init__(self, url, at: int, **kw):
        kw["retry"] = RetryPolicy(attempts=1)
        super().__init__(url, **kw)
        self.at, self.calls = at, 0
        self.lock = threading.Lock()

    def select(self, params):
        with self.lock:
            self.calls += 1
            broken = self.calls >= self.at
        if broken:
            raise SolrUnavailableError(f"Solr is not answering at {self.url} (test outage)")
        return super().select(params)


@pytest.mark.solr
@pytest.mark.slow
def test_kill_9_and_restart_during_a_report_gives_a_clean_runs_file(own_solr, clean_report, tmp_path, caplog):
    clean, clean_pairs = clean_report

    out = tmp_path / "r.tsv"
    client = SolrClient(own_solr.core_url, retry=RetryPolicy(**PATIENT))
    outcome: dict = {}

    def run():
        try:
            outcome["result"] = report_near_dups(Searcher(client), out, workers=2)
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            outcome["error"] = exc

    caplog.set_level(logging.WARNING, logger="neardup_solr")
    worker = threading.Thread(target=run)
    worker.start()
    deadline = time.monotonic() + 120
    progress_file = out.with_name(out.name + ".partial.progress.json")
    while not (progress_file.exists() and _progress(out)["done"] >= 400):
        assert worker.is_alive() and time.monotonic() < deadline, outcome
        time.sleep(0.05)
    os.kill(own_solr.pid(), signal.SIGKILL)
    done_at_kill = _progress(out)["done"]
    assert done_at_kill < 3300 and not out.exists()
    time.sleep(5)
    own_solr.start()
    worker.join(timeout=300)

    assert not worker.is_alive() and "error" not in outcome, outcome
    summary, pairs = outcome["result"]
    assert out.read_bytes() == clean.read_bytes()
    assert pairs == clean_pairs and summary.documents == 3300
    assert not _partial(out).exists()
    assert "Solr at" in caplog.text  # the client did wait for Solr, it was not a lucky gap


@pytest.mark.solr
@pytest.mark.slow
def test_report_stopped_for_good_exits_3_and_resume_completes_it(own_solr, clean_report, tmp_path, monkeypatch,
                                                                 capsys, caplog):
    url = own_solr.core_url
    clean, _ = clean_report

    class StoppingClient(SolrClient):
        """Stops the real Solr before the 500th select and gives up quickly on it."""

        calls = 0

        def __init__(self, url, **kw):
            kw["retry"] = RetryPolicy(**FAST_FAIL)
            super().__init__(url, **kw)

        def select(self, params):
            StoppingClient.calls += 1
            if StoppingClient.calls == 500:
                own_solr.stop()
            return super().select(params)

    out = tmp_path / "r.tsv"
    out.write_text("an earlier complete report\n")
    monkeypatch.setattr(cli_common, "SolrClient", StoppingClient)  # where the command line makes its client
    capsys.readouterr()
    code = cli.main(["report", "--writeup-ranking", "--out", str(out), "--solr-url", url, "-q"])
    err = capsys.readouterr().err
    assert code == 3
    assert "report stopped after" in err and str(_partial(out)) in err and "--resume" in err
    assert out.read_text() == "an earlier complete report\n"  # untouched until a complete one replaces it
    _progress_done = _progress(out)["done"]
    assert 0 < _progress_done < 3300

    monkeypatch.undo()
    own_solr.start()
    caplog.set_level(logging.WARNING, logger="neardup_solr.io.outputs")
    assert cli.main(["report", "--writeup-ranking", "--out", str(out), "--solr-url", url, "-q", "--resume"]) == 0
    assert f"resuming {out} after {_progress_done:,}" in caplog.text
    assert out.read_bytes() == clean.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.tsv"]


@pytest.mark.solr
@pytest.mark.slow
def test_threshold_report_stopped_and_resumed_equals_a_clean_run(own_solr, corpus, tmp_path):
    url = own_solr.core_url
    clean = tmp_path / "clean.tsv"
    clean_pairs = threshold_pairs(ThresholdFinder(Searcher(SolrClient(url)), 0.5), dataset="b", out=clean)
    assert len(clean_pairs) > 30

    out = tmp_path / "t.tsv"
    broken = BreakingClient(url, at=150)
    with pytest.raises(RunStopped, match="threshold report stopped after"):
        # The per-document queries: the client join reads the collection in a few requests.
        threshold_pairs(ThresholdFinder(Searcher(broken), 0.5), dataset="b", out=out, workers=2,
                        strategy="queries")
    assert not out.exists() and _partial(out).exists()
    with pytest.raises(ValueError, match="threshold was 0.5, now 0.6"):
        threshold_pairs(ThresholdFinder(Searcher(SolrClient(url)), 0.6), dataset="b", out=out, resume=True)

    resumed = threshold_pairs(ThresholdFinder(Searcher(SolrClient(url)), 0.5), dataset="b", out=out, resume=True)
    assert out.read_bytes() == clean.read_bytes()
    assert resumed == clean_pairs
    assert not _partial(out).exists()


@pytest.mark.solr
@pytest.mark.slow
def test_join_stopped_and_resumed_through_the_cli_equals_a_clean_run(own_solr, corpus, tmp_path, monkeypatch,
                                                                     capsys):
    url = own_solr.core_url
    streamed = tmp_path / "c.tsv"
    streamed.write_text("".join(f"{i}\t{t}\n" for i, t in corpus["c"].items()))
    options = ["--threshold", "0.4", "--similarity", "idf", "--indexed-dataset", "a", "--one-to-one",
               "--format", "tsv", "--solr-url", url, "-q"]
    clean = tmp_path / "clean.tsv"
    assert cli.main(["join", str(streamed), "--out", str(clean), *options]) == 0
    assert len(clean.read_text().splitlines()) > 60

    out = tmp_path / "j.tsv"
    monkeypatch.setattr(cli_common, "SolrClient", lambda url, **kw: BreakingClient(url, at=120, **kw))
    assert cli.main(["join", str(streamed), "--out", str(out), *options]) == 3
    assert "join stopped after" in capsys.readouterr().err
    assert not out.exists() and 0 < _progress(out)["done"] < 300
    monkeypatch.undo()

    assert cli.main(["join", str(streamed), "--out", str(out), *options, "--resume"]) == 0
    assert out.read_bytes() == clean.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.tsv", "clean.tsv", "j.tsv"]


@pytest.mark.solr
@pytest.mark.slow
def test_join_api_resume_returns_the_clean_runs_pairs(own_solr, corpus, tmp_path):
    url = own_solr.core_url
    records = list(corpus["c"].items())
    finder = ThresholdFinder(Searcher(SolrClient(url)), 0.5)
    clean = join_pairs(finder, records, indexed_dataset="a")
    out = tmp_path / "j.tsv"
    with pytest.raises(RunStopped):
        join_pairs(ThresholdFinder(Searcher(BreakingClient(url, at=100)), 0.5), records, indexed_dataset="a",
                   out=out)
    assert join_pairs(finder, records, indexed_dataset="a", out=out, resume=True) == clean
