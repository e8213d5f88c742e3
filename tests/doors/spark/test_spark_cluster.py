"""The Spark jobs on a real standalone cluster: a master and a worker in their own JVMs, started from the pyspark
package's own ``spark-class`` (nothing downloaded). The dedup is submitted with ``spark-submit`` (the package's
``neardup_solr/cli/spark_submit.py``, the master from spark-submit's ``--master``), the join by the CLI with
``--master spark://``. Both must write the files a ``local`` run writes, byte for byte (the local runs: the CLI in
this process, on the session's local[2] SparkSession)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from netutil import free_port

pyspark = pytest.importorskip("pyspark", reason="PySpark is not installed (pip install 'neardup-solr[spark]')")
pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install 'neardup-solr[spark]')")

from benchmarks.corpus import generate  # noqa: E402
from neardup_solr.io import restaurants  # noqa: E402
from neardup_solr.spark.session import java_executable  # noqa: E402
from repo_paths import REPO as ROOT

if java_executable() is None:
    pytest.skip("no Java runtime (java on PATH or JAVA_HOME) to start Spark", allow_module_level=True)

SPARK_HOME = Path(pyspark.__file__).parent
FODORS = 533


def _wait_for_port(port: int, proc: subprocess.Popen, log: Path, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"spark-class exited with {proc.returncode}: {log.read_text()[-2000:]}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    raise RuntimeError(f"nothing listens on port {port} after {seconds} s: {log.read_text()[-2000:]}")


@pytest.fixture(scope="module")
def spark_env(tmp_path_factory) -> dict:
    """The environment of the cluster's processes. Every JVM of theirs gets the suite's JVM options
    (NEARDUP_JAVA_OPTIONS: C1 only, the serial collector; tests/conftest.py) as a cluster's operator would give
    them: the master and the worker through SPARK_DAEMON_JAVA_OPTS, the drivers and executors through a
    spark-defaults.conf in SPARK_CONF_DIR; no command line changes. With Spark's defaults (C2 as well) the test
    took 129 CPU-seconds alone on 2 cores, with C1 only 94 (7 December 2026)."""
    conf_dir = tmp_path_factory.mktemp("spark-conf")
    options = os.environ.get("NEARDUP_JAVA_OPTIONS", "").strip()
    if options:
        (conf_dir / "spark-defaults.conf").write_text(
            f"spark.driver.extraJavaOptions {options}\nspark.executor.extraJavaOptions {options}\n")
    return {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1",
            "PYSPARK_PYTHON": sys.executable, "SPARK_NO_DAEMONIZE": "1", "SPARK_CONF_DIR": str(conf_dir),
            "SPARK_DAEMON_JAVA_OPTS": options}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, spark_env):
    """``spark://127.0.0.1:PORT``: one master, one worker with 2 cores and 2 GB."""
    work = tmp_path_factory.mktemp("spark-cluster")
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    master_port, worker_port = free_port(), free_port()
    started: list[subprocess.Popen] = []
    try:
        master_log = work / "master.log"
        master = subprocess.Popen([spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                   "--port", str(master_port), "--webui-port", str(free_port())],
                                  stdout=open(master_log, "w"), stderr=subprocess.STDOUT, env=spark_env)
        started.append(master)
        _wait_for_port(master_port, master, master_log)
        url = f"spark://127.0.0.1:{master_port}"
        worker_log = work / "worker.log"
        worker = subprocess.Popen([spark_class, "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
                                   "--port", str(worker_port), "--webui-port", str(free_port()), "--cores", "2",
                                   "--memory", "2g", "--work-dir", str(work / "worker")],
                                  stdout=open(worker_log, "w"), stderr=subprocess.STDOUT, env=spark_env)
        started.append(worker)
        _wait_for_port(worker_port, worker, worker_log)
        deadline = time.monotonic() + 60
        while "Successfully registered with master" not in worker_log.read_text() and time.monotonic() < deadline:
            time.sleep(0.5)
        yield url
    finally:
        for proc in reversed(started):
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


def _run(command: list[str], env: dict) -> subprocess.CompletedProcess:
    proc = subprocess.run(command, capture_output=True, text=True, cwd=ROOT,
                          env={**env, "PYSPARK_DRIVER_PYTHON": sys.executable}, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def _cli(env: dict, *args: str) -> subprocess.CompletedProcess:
    return _run([sys.executable, "-m", "neardup_solr.cli", *args], env)


def _local(*args: str) -> None:
    """A ``local[2]`` run of the CLI in this process: it reuses the session's SparkSession (``spark`` in
    tests/conftest.py, local[2] as well), so no driver JVM is started for the reference runs."""
    from neardup_solr.cli import main

    assert main([*args, "--master", "local[2]"]) == 0


def _submit(env: dict, master: str, *args: str) -> subprocess.CompletedProcess:
    """``spark-submit`` as a cluster's users run it, with the package's submit file and no --master of ours."""
    from neardup_solr.cli import spark_submit

    return _run([str(SPARK_HOME / "bin" / "spark-submit"), "--master", master, spark_submit.__file__, *args], env)


def test_dedup_and_join_on_a_standalone_cluster_write_what_a_local_run_writes(cluster, spark_env, spark, tmp_path):
    # 1,000 documents (166 planted pairs): the cluster's cost is its JVMs (a driver and an executor a job), not
    # the data; 3,000 made the test 210-330 s in the suite.
    generate(1000, 11, tmp_path / "corpus", workers=0)
    docs = tmp_path / "corpus" / "docs.jsonl"
    outputs = {}
    # A staging folder that does not exist yet is made (as the outputs' folders are).
    common = ("--threshold", "0.7", "--staging-dir", str(tmp_path / "staging" / "not-yet"))
    _local("spark", "dedup", str(docs), "--out", str(tmp_path / "pairs-local.tsv"), *common)
    # The worker sees the file here: its tasks read and sign it in byte ranges (as a local run does by default),
    # not the driver. The driver's own reading on a cluster (--read-on auto there) is the join's below: one job a
    # way of reading, each job a driver and an executor JVM.
    submitted = _submit(spark_env, cluster, "dedup", str(docs), "--out", str(tmp_path / "pairs-cluster.tsv"),
                        "--read-on", "executors", *common)
    assert " pairs with jaccard >= 0.7 among 1000 records" in submitted.stdout
    for name in ("local", "cluster"):
        outputs[name] = (tmp_path / f"pairs-{name}.tsv").read_text(encoding="utf-8")
    assert outputs["cluster"] == outputs["local"] and outputs["local"].count("\n") > 50

    path = tmp_path / "addresses.txt"
    restaurants.prepare_default(path)
    rows = [line.split(" ", 1) for line in path.read_text(encoding="utf-8").splitlines()]
    left, right = tmp_path / "fodors.tsv", tmp_path / "zagats.tsv"
    left.write_text("".join(f"{i}\t{t}\n" for i, t in rows if int(i) <= FODORS), encoding="utf-8")
    right.write_text("".join(f"{i}\t{t}\n" for i, t in rows if int(i) > FODORS), encoding="utf-8")
    joined = {}
    for name in ("local", "cluster"):
        out = tmp_path / f"join-{name}.tsv"
        args = ("spark", "join", str(left), str(right), "--threshold", "0.5", "--out", str(out),
                "--staging-dir", str(tmp_path))
        if name == "local":
            _local(*args)
        else:
            _cli(spark_env, *args, "--master", cluster)
        joined[name] = out.read_text(encoding="utf-8")
    assert joined["cluster"] == joined["local"] and joined["local"].count("\n") > 30
