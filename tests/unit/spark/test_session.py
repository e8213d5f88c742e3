"""neardup_solr.spark.session without a JVM: a Spark out-of-memory failure said as what to change, and the
command line printing that instead of an internal error's Py4J trace."""

from __future__ import annotations

import argparse

import pytest

from neardup_solr.cli import main
from neardup_solr.cli import spark_cmd
from neardup_solr.errors import EXIT_USAGE, SparkMemoryError, outcome_of
from neardup_solr.spark.session import memory_error_of

# How these failures reach Python (the first lines of the Py4J errors' text; the 10M run's aggregation failure).
AGGREGATION = (
    "An error occurred while calling o412.collectToPython.\n: org.apache.spark.SparkException: Job aborted due to "
    "stage failure: Task 3 in stage 5.0 failed 1 times, most recent failure: Lost task 3.0 in stage 5.0 (TID 1187) "
    "(localhost executor driver): org.apache.spark.memory.SparkOutOfMemoryError: [AGGREGATE_OUT_OF_MEMORY] No "
    "enough memory for aggregation SQLSTATE: 82001\n\tat org.apache.spark.sql.errors.QueryExecutionErrors$...")
HEAP = ("An error occurred while calling o88.count.\n: java.lang.OutOfMemoryError: Java heap space\n\tat "
        "java.base/java.util.Arrays.copyOf(Arrays.java:3537)")
NOT_MEMORY = ("An error occurred while calling o51.parquet.\n: org.apache.spark.SparkFileNotFoundException: "
              "[PATH_NOT_FOUND] Path does not exist: file:/tmp/gone.parquet. SQLSTATE: 42K03")


def test_an_aggregation_without_memory_is_said_with_the_driver_memory_it_had():
    error = memory_error_of(RuntimeError(AGGREGATION), "4g")
    assert isinstance(error, SparkMemoryError)
    assert "AGGREGATE_OUT_OF_MEMORY" in str(error) and "driver of 4g" in str(error)
    assert "driver_memory" in str(error) and "--driver-memory" in error.cli_message
    assert outcome_of(error).exit_code == EXIT_USAGE


def test_the_jvm_heap_running_out_is_memory_too_and_the_default_is_named():
    error = memory_error_of(RuntimeError(HEAP), None)
    assert error is not None
    assert "java.lang.OutOfMemoryError: Java heap space" in str(error) and "1g (Spark's default)" in str(error)


def test_any_other_spark_failure_is_left_as_it_is():
    assert memory_error_of(RuntimeError(NOT_MEMORY), "4g") is None


def test_spark_dedup_prints_what_to_change_and_exits_2(monkeypatch, capsys, tmp_path):
    def out_of_memory(args):
        raise RuntimeError(AGGREGATION)

    monkeypatch.setattr(spark_cmd, "cmd_dedup", out_of_memory)
    code = main(["spark", "dedup", str(tmp_path / "docs.jsonl"), "--threshold", "0.8", "--out",
                 str(tmp_path / "pairs.tsv"), "--driver-memory", "4g"])
    said = capsys.readouterr().err
    assert code == EXIT_USAGE
    assert "pass --driver-memory" in said and "driver of 4g" in said and "internal error" not in said


def test_spark_dedup_leaves_another_failure_an_internal_error(monkeypatch, capsys, tmp_path):
    def broken(args):
        raise RuntimeError(NOT_MEMORY)

    monkeypatch.setattr(spark_cmd, "cmd_dedup", broken)
    code = main(["spark", "dedup", str(tmp_path / "docs.jsonl"), "--threshold", "0.8", "--out",
                 str(tmp_path / "pairs.tsv")])
    assert code != EXIT_USAGE and "internal error" in capsys.readouterr().err


@pytest.mark.parametrize("memory", ["4g", None])
def test_the_command_lines_error_keeps_sparks_as_its_cause(memory):
    cause = RuntimeError(AGGREGATION)

    def out_of_memory(args):
        raise cause

    with pytest.raises(SparkMemoryError) as raised:
        spark_cmd._explaining_memory_errors(out_of_memory)(argparse.Namespace(driver_memory=memory))
    assert raised.value.__cause__ is cause
    assert f"driver of {memory or '1g'}" in str(raised.value)
