"""Signing in worker processes gives the documents signing on the calling thread gives, in order, and survives a
worker that dies."""

import os
import signal
import subprocess
import sys

import pytest

from neardup_solr.signing.builder import DocumentBuilder
from neardup_solr.signing.parallel import BatchSigner, default_sign_processes
from neardup_solr.signing.settings import IndexSettings

TEXTS = [
    "the quick brown fox jumps over the lazy dog near the river bank",
    "the quick brown fox jumps over the lazy dog near the river",
    "",  # rejected: no words left
    "naïve café résumé — über straße ﬁnance",
    "!!! ???",  # rejected
    "a much longer page " * 200,
]


def batches(n: int) -> list[list[tuple]]:
    return [[(f"b{b}-{i}", text, {"title": text[:10]} if i % 2 else None)
             for i, text in enumerate(TEXTS)] for b in range(n)]


@pytest.mark.parametrize("fields", [("lsh",), ("shingles", "lsh", "words"), ("minhash", "grams")])
def test_processes_build_the_documents_the_calling_thread_builds(fields):
    settings = IndexSettings(fields=fields)
    builder = DocumentBuilder(settings)
    work = batches(4)
    with BatchSigner(settings, dataset="web", processes=2, pool_after_seconds=0.0) as signer:
        pending = [signer.submit(items) for items in work]
        assert signer.processes_used == 2
        results = [p.result()[0] for p in pending]
    assert signer._pool is None  # closed
    for items, built in zip(work, results):
        expected = builder.build(items, dataset="web")
        assert built.rejected == expected.rejected
        assert built.documents == expected.documents
        assert [list(d) for d in built.documents] == [list(d) for d in expected.documents]  # the field order too
    assert [doc["id"] for doc in results[3].documents] == ["b3-0", "b3-1", "b3-3", "b3-5"]


def test_one_process_signs_on_the_calling_thread_and_starts_no_pool():
    with BatchSigner(IndexSettings(fields=("lsh",)), processes=1) as signer:
        for items in batches(3):
            built, seconds = signer.submit(items).result()
            assert len(built.documents) == 4 and seconds >= 0
        assert signer._pool is None and signer.ahead == 0


def test_processes_start_only_once_signing_here_took_long_enough():
    with BatchSigner(IndexSettings(fields=("lsh",)), processes=2, pool_after_seconds=3600.0) as signer:
        for items in batches(5):
            signer.submit(items).result()
        assert signer._pool is None and signer.processes_used == 1
    with BatchSigner(IndexSettings(fields=("lsh",)), processes=2, pool_after_seconds=1e-9) as signer:
        signer.submit(batches(1)[0]).result()  # the first batch always here: nothing was timed yet
        assert signer._pool is None
        signer.submit(batches(1)[0]).result()
        assert signer._pool is not None and signer.processes_used == 2


def test_a_worker_that_dies_leaves_the_rest_signed_on_the_calling_thread(caplog):
    settings = IndexSettings(fields=("lsh",))
    expected = DocumentBuilder(settings).build(batches(1)[0])
    with BatchSigner(settings, processes=2, pool_after_seconds=0.0) as signer:
        signer.submit(batches(1)[0]).result()  # the pool is up
        for pid in list(signer._pool._processes):
            os.kill(pid, signal.SIGKILL)
        with caplog.at_level("WARNING", logger="neardup_solr.signing.parallel"):
            after = [signer.submit(batches(1)[0]).result()[0] for _ in range(3)]
    assert all(built.documents == expected.documents for built in after)
    assert "signing the rest on the calling thread" in caplog.text
    assert signer.processes_used == 1


def test_default_is_the_usable_cores_capped():
    assert 1 <= default_sign_processes() <= min(os.cpu_count() or 1, 8)


def test_a_script_without_a_main_guard_is_not_run_again_by_the_workers(tmp_path):
    # Spawned children run the parent's main script again unless it is hidden from them: a script that clears a
    # collection at its top would clear it once per worker.
    marker = tmp_path / "runs.txt"
    script = tmp_path / "no_guard.py"
    script.write_text(
        "from neardup_solr.signing.parallel import BatchSigner\n"
        "from neardup_solr.signing.settings import IndexSettings\n"
        f"open({str(marker)!r}, 'a').write('ran\\n')\n"
        "signer = BatchSigner(IndexSettings(fields=('lsh',)), processes=2, pool_after_seconds=0.0)\n"
        "docs = [signer.submit([(f'{b}-{i}', f'text number {i} of batch {b}') for i in range(20)]).result()[0]\n"
        "        for b in range(4)]\n"
        "assert signer.processes_used == 2, signer.processes_used\n"
        "signer.close()\n"
        "print(sum(len(d.documents) for d in docs))\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "80"
    assert marker.read_text() == "ran\n"
    assert "bootstrapping" not in done.stderr


def test_workers_leave_ctrl_c_to_the_caller():
    settings = IndexSettings(fields=("lsh",))
    with BatchSigner(settings, processes=2, pool_after_seconds=0.0) as signer:
        signer.submit(batches(1)[0]).result()
        for pid in list(signer._pool._processes):
            os.kill(pid, signal.SIGINT)
        after = [signer.submit(items).result()[0] for items in batches(4)]
        assert signer.processes_used == 2  # no worker died of it
    assert all(len(built.documents) == 4 for built in after)
