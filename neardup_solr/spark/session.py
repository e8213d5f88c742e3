"""The SparkSession the jobs run in, and the checks that one can start at all (PySpark installed, Java found).

PySpark and Java are optional: nothing else in the package needs them, so their absence is reported here, in
one sentence saying what to install, instead of as an ImportError or a Py4J gateway traceback.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from neardup_solr.errors import SparkMemoryError, SparkUnavailableError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

DEFAULT_MASTER = "local[*]"
# Local runs shuffle little data; Spark's default of 200 partitions would mostly schedule empty tasks.
DEFAULT_SHUFFLE_PARTITIONS = 8
LOG_CONFIG = Path(__file__).with_name("log4j2.properties")


def require_pyspark() -> None:
    """Raise :class:`SparkUnavailableError` unless ``pyspark`` (with pyarrow and pandas) can be imported."""
    missing = []
    for module in ("pyspark", "pyarrow", "pandas"):
        try:
            __import__(module)
        except ImportError:
            missing.append(module)
    if missing:
        raise SparkUnavailableError(
            f"the Spark jobs need {', '.join(missing)}, which {'is' if len(missing) == 1 else 'are'} not "
            "installed: pip install 'neardup-solr[spark]'")


def java_executable() -> str | None:
    """The ``java`` PySpark will start: ``$JAVA_HOME/bin/java``, else the first on ``PATH``; None if neither."""
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        return str(candidate) if candidate.is_file() else None
    return shutil.which("java")


def require_java() -> None:
    """Raise :class:`SparkUnavailableError` when no Java runtime is found (Spark 4 needs Java 17 or later)."""
    if java_executable() is None:
        where = f"JAVA_HOME={os.environ['JAVA_HOME']} has no bin/java" if os.environ.get("JAVA_HOME") \
            else "no 'java' on PATH and JAVA_HOME is not set"
        raise SparkUnavailableError(f"the Spark jobs need Java 17 or later ({where}): install a JDK 17 "
                                    "(e.g. apt-get install openjdk-17-jdk-headless) or set JAVA_HOME")


def submitted() -> bool:
    """True when this process is a driver started by ``spark-submit`` (which hands it a running JVM gateway)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def spark_session(
    master: str | None = DEFAULT_MASTER,
    *,
    app_name: str = "neardup-solr",
    shuffle_partitions: int = DEFAULT_SHUFFLE_PARTITIONS,
    driver_memory: str | None = None,
    config: dict[str, Any] | None = None,
) -> "SparkSession":
    """A SparkSession for the jobs (the active one if it exists: then ``master`` and memory cannot change).
    ``master=None``: the one ``spark-submit --master`` gave, or ``local[*]`` outside spark-submit.

    Python workers run this interpreter (``PYSPARK_PYTHON`` is set to it) unless ``PYSPARK_PYTHON`` says otherwise,
    so they import the same neardup_solr; Arrow is enabled for the signing UDF."""
    require_pyspark()
    require_java()
    from pyspark.sql import SparkSession

    if master is None and not submitted():
        master = DEFAULT_MASTER
    builder = SparkSession.builder.appName(app_name)
    if master is not None:  # under spark-submit without one, its --master holds
        builder = builder.master(master)
    builder = (builder
               .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
               .config("spark.sql.execution.arrow.pyspark.enabled", "true")
               .config("spark.ui.showConsoleProgress", "false"))
    if not os.environ.get("PYSPARK_PYTHON"):
        # PySpark reads the workers' interpreter from the environment when the context starts (default
        # "python3", which may lack this package's dependencies); a cluster sets PYSPARK_PYTHON itself.
        os.environ["PYSPARK_PYTHON"] = sys.executable
    if (master or "").startswith("local") and not os.environ.get("SPARK_LOCAL_IP"):
        # Local mode talks to itself only: bind to loopback instead of guessing an interface (and warning).
        os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    if driver_memory:
        builder = builder.config("spark.driver.memory", driver_memory)
    if "spark.driver.extraJavaOptions" not in (config or {}):
        # Read when the driver JVM starts (PySpark passes the builder's settings to spark-submit); a cluster's
        # executors keep their own logging.
        # NEARDUP_JAVA_OPTIONS: the options every JVM of ours gets (neardup_solr.solr.backends.local.java_command).
        extra = os.environ.get("NEARDUP_JAVA_OPTIONS", "").strip()
        builder = builder.config("spark.driver.extraJavaOptions",
                                 f"-Dlog4j2.configurationFile={LOG_CONFIG.as_uri()}" + (f" {extra}" if extra else ""))
    for key, value in (config or {}).items():
        builder = builder.config(key, str(value))
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    log.info("Spark %s, master %s", session.version, session.sparkContext.master)
    return session


# How Spark says that a task or the driver found no JVM memory: its error classes (AGGREGATE_OUT_OF_MEMORY,
# UNABLE_TO_ACQUIRE_MEMORY), which name the step, else the JVM's own errors; they reach Python inside a Py4J or
# captured exception.
_MEMORY_ERROR_CLASS = re.compile(r"\[(\w*OUT_OF_MEMORY\w*|UNABLE_TO_ACQUIRE_MEMORY)\]")
_JVM_OUT_OF_MEMORY = re.compile(r"java\.lang\.OutOfMemoryError(: [\w ]+)?|SparkOutOfMemoryError")


def memory_error_of(error: BaseException, driver_memory: str | None) -> SparkMemoryError | None:
    """``error`` (raised by a Spark action) as a :class:`SparkMemoryError` saying what to change, when it says Spark
    ran out of memory; None for any other failure. ``driver_memory``: the ``spark.driver.memory`` the job had (None:
    Spark's default, 1g)."""
    text = str(error)
    found = _MEMORY_ERROR_CLASS.search(text) or _JVM_OUT_OF_MEMORY.search(text)
    if found is None:
        return None
    had = driver_memory or "1g (Spark's default)"
    what = f"Spark ran out of memory ({found.group(0).strip('[]')}) with a driver of {had}"
    advice = ("in local mode the driver holds all of Spark, its cache and every task: give it more, e.g. twice as "
              "much, or run on a cluster. For scale, in local mode: dedup of 1,000,000 documents ran with 1g (4g with "
              "--groups), 10,000,000 needed 12g (docs/benchmarks.md)")
    return SparkMemoryError(f"{what}: pass driver_memory to spark_session(); {advice}",
                            cli_message=f"{what}: pass --driver-memory; {advice}, --master for a cluster")

