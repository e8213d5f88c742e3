"""The Spark runs' options (spark/runs.py), checked when made, before a JVM starts: pure, no Spark."""

import pytest

from neardup_solr.errors import InvalidParameterError, ParameterTypeError
from neardup_solr.options import ThresholdOptions
from neardup_solr.signing.settings import META_DATASET
from neardup_solr.spark.runs import SparkDedupeOptions, SparkInput, SparkJoinOptions, SparkOutputs


def test_dedupe_options_from_keywords_carry_the_pair_options_and_the_job_keywords():
    options = SparkDedupeOptions.of(0.7, similarity="idf", split_bucket=None, max_bucket=50, representative="longest")
    assert options.pairs == ThresholdOptions(threshold=0.7, similarity="idf", method="lsh", split_bucket=None)
    assert options.job_keywords["max_bucket"] == 50 and options.job_keywords["split_bucket"] is None
    assert options.job_keywords["similarity"] == "idf"
    assert "max_bucket" not in SparkDedupeOptions().job_keywords  # the jobs' own default
    assert SparkJoinOptions.of(0.6, one_to_one=True).job_keywords["one_to_one_matching"] is True


@pytest.mark.parametrize("make, param", [
    (lambda: SparkDedupeOptions(pairs=ThresholdOptions(method="exact")), "method"),
    (lambda: SparkDedupeOptions.of(representative="shortest"), "representative"),
    (lambda: SparkDedupeOptions.of(max_bucket=1), "max_bucket"),
    (lambda: SparkDedupeOptions.of(dataset=META_DATASET), "dataset"),
    (lambda: SparkDedupeOptions.of(1.5), "threshold"),
    (lambda: SparkJoinOptions.of(one_to_one="yes"), "one_to_one"),
    (lambda: SparkInput("docs.jsonl", fmt="xml"), "fmt"),
    (lambda: SparkInput("docs.jsonl", read_on="everywhere"), "read_on"),
    (lambda: SparkInput("docs.jsonl", id_field=""), "id_field"),
])
def test_bad_options_are_refused_naming_the_parameter(make, param):
    with pytest.raises(InvalidParameterError) as refused:
        make()
    assert refused.value.param == param


def test_a_snapshot_needs_similarity_idf_and_pairs_must_be_threshold_options():
    with pytest.raises(InvalidParameterError) as refused:
        SparkDedupeOptions(snapshot=object())  # type: ignore[arg-type]  # refused before it is looked at
    assert refused.value.param == "snapshot"
    with pytest.raises(ParameterTypeError):
        SparkDedupeOptions(pairs={"threshold": 0.8})  # type: ignore[arg-type]


def test_outputs_that_name_one_file_twice_are_refused_by_the_callers_names(tmp_path):
    same = str(tmp_path / "out.tsv")
    with pytest.raises(InvalidParameterError) as refused:
        SparkOutputs(same, keep=same).check()
    assert refused.value.param == "keep" and "pairs names it too" in str(refused.value)
    with pytest.raises(InvalidParameterError) as refused:
        SparkOutputs(same, records=same).check(names={"pairs": "--out", "records": "--records-out"})
    assert refused.value.param == "--records-out" and "--out names it too" in str(refused.value)
    SparkOutputs("-", keep=str(tmp_path / "keep.txt")).check()  # standard output is never a file twice
