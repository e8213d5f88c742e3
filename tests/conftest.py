"""Shared fixtures. Integration tests talk to a real Solr: ``SOLR_URL`` if set, otherwise a local Solr that
this session starts (from Maven Central jars, on 127.0.0.1, free port, throwaway data dir) and stops at the end.

``NEARDUP_TEST_BACKEND`` chooses that Solr: unset (or ``local``) one node, ``cloud`` a local SolrCloud
(ZooKeeper and 2 nodes, collection of 2 shards x 1 replica), ``docker`` a container.

Parallel runs (``scripts/test.sh`` runs pytest-xdist workers with ``--dist loadgroup``): every worker is a process
with session fixtures of its own, so each starts its own local Solr on a free port and no two workers share a core.
A module's tests stay on one worker (its module fixtures are built once), and every module that uses the shared
SolrCloud goes to the same worker, so the session starts one cluster, not one a worker; the Spark modules share
one worker, and the fault tests (which start clusters of their own) another.
"""

from __future__ import annotations

import contextlib
import gc
import os
from pathlib import Path

import pytest

from neardup_solr.solr.client import SolrClient
from neardup_solr.solr.backends.local import LocalSolr
from solr_key_pair import key_pair_java_options


# Every JVM the suite starts (Solr, its cloud nodes and ZooKeeper, the Spark driver; in this process and in the
# commands it runs) compiles with C1 only. They live for seconds to minutes, and C2's compiler threads spent more
# CPU than they saved: on 2 cores the cloud-parity module took 111 s and 166 s of CPU with it, 183 s and 320 s
# without. The whole suite in one process: 38.9 min of user CPU instead of 47.0, but not shorter (57 min); what
# it made worth while is two workers (44 min then). Some Spark tests got slower (their jobs run in the
# driver on C1 code: 37 s -> 53 s for the IDF dedup), others faster (the docs' Spark page, 194 s -> 166 s), so the
# driver keeps it too. They also collect with the serial collector instead of G1 (Solr's choice, which
# java_command passes first): on 2 cores G1's concurrent threads cost more than its short pauses save in JVMs that
# live minutes; test_cloud_faults.py + test_durability.py took 87.4 CPU-seconds with G1, 83.6 serial, the session's
# Solrs 179 and 173 over tests/solr/engine and the front doors (7 December 2026). Every Solr node gets the suite's
# RSA key pair instead of generating one (tests/solr_key_pair.py). NEARDUP_JAVA_OPTIONS set outside the suite (even
# empty) is kept.
if "NEARDUP_JAVA_OPTIONS" not in os.environ:
    os.environ["NEARDUP_JAVA_OPTIONS"] = " ".join(["-XX:TieredStopAtLevel=1 -XX:-UseG1GC -XX:+UseSerialGC",
                                                   *key_pair_java_options()])

_SOLR_FIXTURES = {"local_solr", "solr_url", "shared_cloud"}
# Modules that should not run beside each other share a worker. Those that start JVMs of their own (Spark sessions and
# clusters; the fault tests' Solr clusters): on 2 cores, three Spark sessions starting at once took longer than the
# three one after another.
_SHARED_WORKER_GROUPS = {
    "spark": ("tests/doors/spark/", "tests/bench/test_corpus_scale.py", "tests/solr/solr/test_unicode_settings.py"),
    "faults": ("tests/solr/faults/",),
    # These build in the work tree (pip wheel's build/, the kernels of the other Pythons): one at a time.
    "tree-builds": ("tests/project/test_wheel_install.py", "tests/unit/signing/test_signature_stability.py",
                    "tests/solr/text/test_signatures_across_pythons.py"),
}


# The longest groups, in worker-seconds (a whole run on three workers on the 2-core machine, 7 December 2026, the
# machine busy throughout): the workers take them first, and the many short modules fill in behind them, so that
# the workers end at about the same time. xdist would otherwise order the groups by their number of tests
# (``--loadscope-reorder``, its default), and a group of ten minutes could start last.
_GROUP_SECONDS = {
    "faults": 537,
    "spark": 384,
    "tests/doors/docs/test_docs_examples.py": 349,
    "shared-cloud": 187,
    "tree-builds": 166,
    "tests/doors/test_front_doors.py": 105,
}


def pytest_configure(config):
    if getattr(config.option, "dist", "no") == "loadgroup":
        # The groups in the order the items come in: the longest first (pytest_collection_modifyitems).
        config.option.loadscopereorder = False


def _worker_group(nodeid: str) -> str | None:
    for group, prefixes in _SHARED_WORKER_GROUPS.items():
        if nodeid.startswith(prefixes):
            return group
    return None


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(config, items):
    """Marks every test that needs a Solr (through the session's fixtures) ``solr``, so ``-m "not solr"`` is the
    tier that needs no Java; and gives each test its worker group (see the module docstring)."""
    on_shared_cloud = {item.path for item in items if "shared_cloud" in item.fixturenames}
    for item in items:
        if _SOLR_FIXTURES & set(item.fixturenames) and item.get_closest_marker("solr") is None:
            item.add_marker(pytest.mark.solr)
        if item.get_closest_marker("xdist_group") is None:
            group = ("shared-cloud" if item.path in on_shared_cloud
                     else _worker_group(item.nodeid) or item.nodeid.split("::", 1)[0])
            item.add_marker(pytest.mark.xdist_group(group))
    if os.environ.get("PYTEST_XDIST_WORKER"):  # a worker's collection: the order the scheduler hands groups out
        def seconds(item) -> int:
            mark = item.get_closest_marker("xdist_group")
            return _GROUP_SECONDS.get(mark.args[0] if mark.args else mark.kwargs.get("name"), 0)

        items.sort(key=seconds, reverse=True)  # stable: a group's and a module's tests keep their order


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids):
    """The suite refuses to run ungrouped under ``--dist loadgroup``: xdist writes each test's group into its node id
    (every test here gets one, ``pytest_collection_modifyitems``), and with a pytest it does not follow (9.2's
    structured node ids) that write is lost without a word, the groups are ignored, and every module fixture,
    Solr cluster and Spark session is built on both workers (the suite then took longer and ran its fault tests
    beside each other). pyproject.toml pins pytest below 9.2 for that reason."""
    if node.config.getvalue("dist") == "loadgroup" and ids and not any("@" in nodeid for nodeid in ids):
        import xdist

        pytest.exit(f"--dist loadgroup lost the worker groups of all {len(ids)} tests (e.g. {ids[0]}): pytest "
                    f"{pytest.__version__} with pytest-xdist {xdist.__version__} ignores them "
                    "(pytest-dev/pytest-xdist#1386). Install the pytest that pyproject.toml's test extra allows "
                    "(bash scripts/setup.sh does), or run in one process with NEARDUP_TEST_WORKERS=1.", returncode=4)


@pytest.fixture(scope="session")
def local_solr(tmp_path_factory):
    """The LocalSolr (or LocalSolrCloud) this session started, or None when SOLR_URL points elsewhere. Its home is
    in pytest's temporary directory (kept for the last three sessions, with Solr's log, then removed).

    ``NEARDUP_TEST_BACKEND=docker`` runs the suite against a Solr container instead (machines with an engine);
    ``NEARDUP_TEST_BACKEND=cloud`` against a local SolrCloud, whose ``core_url`` is the collection's URL.
    """
    if os.environ.get("SOLR_URL"):
        yield None
        return
    if os.environ.get("NEARDUP_TEST_BACKEND") == "docker":
        from neardup_solr.solr.backends.docker import DockerSolr, docker_available

        if not docker_available():
            pytest.skip("NEARDUP_TEST_BACKEND=docker but no Docker engine answers here")
        container = DockerSolr(port=int(os.environ.get("NEARDUP_DOCKER_PORT", "8983")), name="neardup-solr-test")
        container.start()
        os.environ["SOLR_URL"] = container.core_url
        try:
            yield None
        finally:
            os.environ.pop("SOLR_URL", None)
            container.stop()
        return
    if os.environ.get("NEARDUP_TEST_BACKEND") == "cloud":
        with _local_cloud(tmp_path_factory.mktemp("cloud")) as cloud:
            yield cloud
        return
    data_dir = tmp_path_factory.mktemp("solr")
    solr = LocalSolr(port=0, data_dir=data_dir)
    solr.start()
    try:
        yield solr
    finally:
        solr.stop()


@pytest.fixture(scope="session")
def solr_url(local_solr) -> str:
    return os.environ["SOLR_URL"].rstrip("/") if local_solr is None else local_solr.core_url


@pytest.fixture()
def solr(solr_url) -> SolrClient:
    """A client on an empty core (every test starts from nothing)."""
    client = SolrClient(solr_url)
    client.delete_all()
    return client


SPARK_SHUFFLE_PARTITIONS = 4
# The shared session's driver runs the jobs of every Spark test module on data of a few thousand records, where
# Spark's own machinery is the cost: the SQL tab of its web UI, the Java code it generates and compiles for each
# query, and the re-planning of adaptive execution between stages. Off for this session only, they took
# tests/doors/spark/test_spark_groups.py alone from 125 s to 97 s (each alone: UI and codegen 109 s). They change
# how Spark evaluates a query, not what it returns; the Spark runs of the CLI, the docs pages, the standalone
# cluster and the benchmarks' smoke runs are processes of their own and keep Spark's defaults.
# Two more, measured on test_spark_jobs.py + test_spark_groups.py alone (CPU of every process, 7 December 2026):
# - Expressions interpreted instead of compiled (codegen.factoryMode, which Spark's own tests set): with whole-stage
#   codegen off, Janino still compiled each query's projections and orderings, 27% of the driver's profile
#   (JFR); 281 -> 220 CPU-seconds, 180 -> 150 s.
# - Pages of 1 MB instead of 64 (a 2 GB driver on 2 cores): each broadcast join's hash relation takes a whole
#   page, and the block manager keeps it for as long as a plan that built it lives. Of the ~1 GB live at the end of
#   test_spark_jobs.py, 890 MB were long arrays, most of them such 64 MB pages (JFR's old-object samples, with
#   their paths to the block manager's memory store); 312 -> 281 CPU-seconds, GC pauses 29 -> 12 s.
_SPARK_TEST_CONFIG = {"spark.ui.enabled": "false", "spark.sql.codegen.wholeStage": "false",
                      "spark.sql.adaptive.enabled": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN",
                      "spark.buffer.pageSize": "1m"}
# The shared driver collects with the parallel collector instead of G1: it ends each test with a full collection
# (``_spark_partitions``) and kept about 1 GB live by the end of a module (450 MB with the smaller pages), and on
# 2 cores G1's concurrent marking was a fifth of its CPU. Measured on test_spark_jobs.py + test_spark_groups.py
# alone (per-thread CPU from /proc, 6 December): 292 CPU-seconds with G1 (compilers 91, tasks 65, G1's marking and
# GC threads 78), 250 serial, 239 parallel. A collector changes when memory is reclaimed, never a result.
_SPARK_TEST_DRIVER_JAVA_OPTIONS = "-XX:+UseParallelGC"


@pytest.fixture(scope="session")
def spark():
    """The one local SparkSession (local[2], 4 shuffle partitions, a driver of 2 GB; ``_SPARK_TEST_CONFIG``) of the
    session, started when the first test asks: one driver JVM for every Spark test module instead of one a module
    (the modules share a worker).

    Its driver compiles with C2 as well (NEARDUP_JAVA_OPTIONS is left out of its options): it lives for the whole
    Spark group, minutes of jobs, long enough for C2 to pay for itself (C1 alone: the same CPU, a tenth more wall),
    where the CLI's and the benchmarks' short-lived drivers stay on C1. A CLI run in this process
    (``main(["spark", ...])``) reuses it (getOrCreate) and sets its own shuffle partitions: ``_spark_partitions``
    sets them back before each test."""
    pytest.importorskip("pyspark", reason="PySpark is not installed (pip install 'neardup-solr[spark]')")
    pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install 'neardup-solr[spark]')")
    from neardup_solr.spark.session import LOG_CONFIG, java_executable, spark_session

    if java_executable() is None:
        pytest.skip("no Java runtime (java on PATH or JAVA_HOME) to start Spark")
    session = spark_session("local[2]", shuffle_partitions=SPARK_SHUFFLE_PARTITIONS, app_name="neardup-solr-tests",
                            driver_memory="2g",
                            config={"spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile="
                                    f"{LOG_CONFIG.as_uri()} {_SPARK_TEST_DRIVER_JAVA_OPTIONS}",
                                    **_SPARK_TEST_CONFIG})
    yield session
    session.stop()


@pytest.fixture(autouse=True)
def _spark_partitions(request):
    """Every test that uses ``spark`` starts with its 4 shuffle partitions, whatever a test before it set, and
    leaves nothing behind in the driver: its cached and checkpointed data are dropped once the test's objects are
    gone (Python's collector releases their JVM handles, the JVM's collector lets Spark's cleaner drop the
    blocks). Without that the driver's heap filled up test after test: the last tests of a module ran twice as
    long as alone, and one session for every module ran out of heap."""
    if "spark" not in request.fixturenames:
        yield
        return
    session = request.getfixturevalue("spark")
    session.conf.set("spark.sql.shuffle.partitions", str(SPARK_SHUFFLE_PARTITIONS))
    yield
    session.catalog.clearCache()
    gc.collect()
    session.sparkContext._jvm.System.gc()


@pytest.fixture(scope="session")
def shared_cloud(tmp_path_factory):
    """One local SolrCloud (ZooKeeper, 2 nodes; collection ``neardup`` of 2 shards x 1 replica) for the test
    modules that need a cluster and leave its nodes running: started when the first of them asks, stopped at the
    end of the session. One start instead of one a module (each about half a minute on 2 cores). A module empties
    the ``neardup`` collection before it uses it, or makes a collection of its own; the fault tests, which stop
    and starve nodes, start their own clusters."""
    with _local_cloud(tmp_path_factory.mktemp("shared-cloud")) as cloud:
        yield cloud


@pytest.fixture(scope="module")
def shared_cloud_client(shared_cloud) -> SolrClient:
    """A client on the shared cluster's ``neardup`` collection, emptied once for the module that asks."""
    client = SolrClient(shared_cloud.core_url)
    client.check()
    client.delete_all()
    return client


@contextlib.contextmanager
def _local_cloud(data_dir: Path):
    """A local SolrCloud (ZooKeeper, 2 nodes; collection ``neardup`` of 2 shards x 1 replica) in ``data_dir``,
    stopped when the block ends."""
    from neardup_solr.solr.backends.cloud import LocalSolrCloud

    cloud = LocalSolrCloud(port=0, data_dir=data_dir, nodes=2, shards=2, replicas=1)
    cloud.start()
    try:
        yield cloud
    finally:
        cloud.stop()
