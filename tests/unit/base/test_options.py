"""neardup_solr.options is the one place the request options, their defaults and their checks live.

These tests hold the front doors to it: the command line's flags, the service's JSON models and the Spark
command offer each option under the same key and carry no default of their own, and the options' own checks
refuse what does not apply. (tests/doors/test_front_doors.py checks that the doors give the same pairs.)
"""

from __future__ import annotations

import argparse
from dataclasses import asdict, replace

import pytest

pytest.importorskip("fastapi")

from neardup_solr.cli import build_parser  # noqa: E402
from neardup_solr.errors import InvalidParameterError  # noqa: E402
from neardup_solr.options import (  # noqa: E402
    DEFAULT_SPLIT_BUCKET,
    NOT_GIVEN,
    WRITEUP_LOOKUP,
    JoinOptions,
    LookupOptions,
    LookupReportOptions,
    ShareLookup,
    SimilarityLookup,
    ThresholdOptions,
    lookup_from_given,
    option_names,
    report_options_from_given,
)
from neardup_solr.service import app as service_app  # noqa: E402
from neardup_solr.solr.searcher import WRITEUP_RANKING  # noqa: E402


def subparser(name: str) -> argparse.ArgumentParser:
    parser = build_parser()
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    for action in actions:
        if name in action.choices:
            return action.choices[name]
        for sub in action.choices.values():  # nested: spark dedup, spark join
            for nested in (a for a in sub._actions if isinstance(a, argparse._SubParsersAction)):
                if name in nested.choices:
                    return nested.choices[name]
    raise KeyError(name)


def flag_defaults(parser: argparse.ArgumentParser) -> dict[str, object]:
    return {a.dest: a.default for a in parser._actions if a.option_strings}


# Keys a door offers under another shape: the CLI's --no-bloom is JoinOptions.bloom=False.
CLI_SHAPES = {"bloom": "no_bloom"}


@pytest.mark.parametrize("command, cls", [("report", ThresholdOptions), ("join", JoinOptions),
                                          ("near-dups", LookupOptions), ("report", LookupReportOptions)])
def test_the_command_line_offers_every_option_without_a_default_of_its_own(command, cls):
    defaults = flag_defaults(subparser(command))
    for key in option_names(cls):
        if key == "threshold" and command == "report":
            continue  # --threshold chooses the threshold mode; it has no default by design
        dest = CLI_SHAPES.get(key, key)
        assert dest in defaults, f"{command} has no flag for {cls.__name__}.{key}"
        if dest == "no_bloom" or dest == "one_to_one":
            assert defaults[dest] is False
        else:
            assert defaults[dest] is None, f"{command} --{dest} has its own default {defaults[dest]!r}"


@pytest.mark.parametrize("model, cls", [("ReportRequest", ThresholdOptions), ("ReportRequest", LookupReportOptions),
                                        ("LookupRequest", LookupOptions)])
def test_the_service_models_offer_every_option_without_a_default_of_their_own(model, cls):
    fields = getattr(service_app, model).model_fields
    for key in option_names(cls):
        assert key in fields, f"{model} has no field {key} ({cls.__name__})"
        assert fields[key].default is None, f"{model}.{key} has its own default {fields[key].default!r}"


@pytest.mark.parametrize("command", ["dedup", "join"])
def test_the_spark_command_shares_the_keys_and_defaults(command):
    defaults = flag_defaults(subparser(command) if command == "dedup" else spark_join())
    shared = set(option_names(ThresholdOptions)) & set(defaults)
    assert {"threshold", "similarity"} <= shared
    for key in shared:
        assert defaults[key] in (None, getattr(ThresholdOptions(), key)), \
            f"spark {command} --{key} defaults to {defaults[key]!r}, the options to {getattr(ThresholdOptions(), key)!r}"


def spark_join() -> argparse.ArgumentParser:
    spark = subparser("spark")
    nested = next(a for a in spark._actions if isinstance(a, argparse._SubParsersAction))
    return nested.choices["join"]


def test_the_write_up_ranking_is_one_set_of_values_under_every_name():
    assert WRITEUP_LOOKUP == LookupOptions(max_edit_distance=2, min_jaccard=None, rows=10, first_word_filter=True)
    assert WRITEUP_LOOKUP == LookupReportOptions().lookup  # the report's defaults are the ranking
    assert WRITEUP_RANKING == {"max_edit_distance": 2, "min_jaccard": None, "rows": 10, "first_word_filter": True}


def parse(argv: list[str]) -> argparse.Namespace:
    return build_parser().parse_args(argv)


def test_the_doors_take_their_defaults_from_the_options():
    """Nothing given: the command line, the service's models and the options agree, and the only defaults
    are the options' own."""
    from neardup_solr.cli.search_cmd import lookup_options_from_args, report_options_from_args

    assert lookup_options_from_args(parse(["near-dups", "1"])) == LookupOptions()
    assert lookup_options_from_args(parse(["near-dups", "1", "--writeup-ranking"])) == WRITEUP_LOOKUP
    # A report is every pair at a threshold (the collection's, once the door knows it); the write-up's lookup
    # report only by name.
    assert report_options_from_args(parse(["report", "--out", "x"])) == ThresholdOptions()
    assert report_options_from_args(parse(["report", "--out", "x", "--writeup-ranking"])) == LookupReportOptions()
    assert report_options_from_args(parse(["report", "--out", "x", "--threshold", "0.7"])) == \
        ThresholdOptions(threshold=0.7)
    assert lookup_from_given(service_app.TextLookup(text="t").model_dump(exclude={"text", "with_text"})) == \
        LookupOptions()
    assert report_options_from_given(service_app.ReportRequest().model_dump()) == ThresholdOptions()
    assert report_options_from_given(service_app.ReportRequest(writeup_ranking=True).model_dump()) == \
        LookupReportOptions()


def test_the_doors_give_the_same_options_for_the_same_keys():
    from neardup_solr.cli.search_cmd import lookup_options_from_args, report_options_from_args

    lookup = {"mode": "minhash", "max_edit_distance": 3, "min_jaccard": 0.4, "rows": 7, "first_word_filter": True,
              "num_hashes": 32}
    argv = ["--mode", "minhash", "--max-edit-distance", "3", "--min-jaccard", "0.4", "--rows", "7",
            "--first-word-filter", "--num-hashes", "32"]
    expected = LookupOptions(**lookup)
    assert lookup_options_from_args(parse(["near-dups", "1", *argv])) == expected
    assert lookup_from_given(service_app.TextLookup(text="t", **lookup).model_dump(exclude={"text", "with_text"})) \
        == expected
    report = report_options_from_args(parse(["report", "--out", "x", "--writeup-ranking", "--start-id", "5",
                                             "--workers", "2", *argv]))
    assert report == report_options_from_given(service_app.ReportRequest(writeup_ranking=True, start_id="5",
                                                                         workers=2, **lookup).model_dump())
    assert report == LookupReportOptions(start_id="5", workers=2, **lookup)
    # 'none' on the command line is no limit, whatever the default.
    assert report_options_from_args(parse(["report", "--out", "x", "--writeup-ranking", "--max-edit-distance",
                                           "none"])) == LookupReportOptions(max_edit_distance=None)
    threshold = {"threshold": 0.6, "similarity": "idf", "method": "lsh", "idf_tokens": "grams", "split_bucket": 40}
    assert report_options_from_args(parse(["report", "--out", "x", "--threshold", "0.6", "--similarity", "idf",
                                           "--method", "lsh", "--idf-tokens", "grams", "--split-bucket", "40"])) == \
        report_options_from_given(service_app.ReportRequest(**threshold).model_dump()) == ThresholdOptions(**threshold)
    assert report_options_from_args(parse(["report", "--out", "x", "--threshold", "0.6", "--method", "lsh",
                                           "--split-bucket", "none"])).split_bucket is None


@pytest.mark.parametrize("given, keys", [
    ({"threshold": 0.5, "rows": 3}, ["rows"]),
    ({"threshold": 0.5, "min_share": 0.5}, ["min_share"]),
    ({"similarity": "idf"}, ["similarity"]),
    ({"min_share": 0.5, "mode": "lsh", "rows": 2}, ["mode", "rows"]),
    ({"num_hashes": 8}, ["num_hashes"]),
])
def test_a_lookup_refuses_options_of_another_kind(given, keys):
    from neardup_solr.errors import OptionError

    with pytest.raises(OptionError) as caught:
        lookup_from_given(given)
    assert caught.value.options == keys


def test_a_lookup_is_of_the_kind_its_options_ask_for():
    assert lookup_from_given({"threshold": 0.5}) == SimilarityLookup(0.5, "jaccard")
    assert lookup_from_given({"threshold": 0.5, "similarity": "idf"}) == SimilarityLookup(0.5, "idf")
    assert lookup_from_given({"min_share": 0.4}) == ShareLookup(0.4)
    assert lookup_from_given({"mode": "lsh", "rows": None}) == LookupOptions(mode="lsh")
    assert lookup_from_given({}, WRITEUP_LOOKUP) == WRITEUP_LOOKUP


@pytest.mark.parametrize("given, keys", [
    ({"threshold": 0.5, "start_id": "1", "mode": "lsh"}, ["start_id", "mode"]),
    ({"rows": 10}, ["rows"]),  # the write-up's lookup report is asked for by name, not implied by its options
    ({"writeup_ranking": True, "method": "lsh"}, ["method"]),
    ({"writeup_ranking": True, "threshold": 0.5, "dataset": "a", "split_bucket": 20},
     ["threshold", "dataset", "split_bucket"]),
])
def test_a_report_refuses_options_of_the_other_kind(given, keys):
    from neardup_solr.errors import OptionError

    with pytest.raises(OptionError) as caught:
        report_options_from_given(given)
    assert caught.value.options == keys


def test_a_report_takes_the_collections_threshold_and_a_method_its_tokens_allow():
    """Issue 47: one meaning of "near duplicate": the collection's similarity threshold unless one is given; the
    exact method unless the collection holds no shingle tokens (dedupe's collections), where lsh needs none."""
    from neardup_solr.signing.settings import IndexSettings

    full, lean = IndexSettings(lsh_threshold=0.7), IndexSettings(lsh_threshold=0.9, fields=("lsh",))
    assert report_options_from_given({}, full) == ThresholdOptions(threshold=0.7, method="exact")
    assert report_options_from_given({}, lean) == ThresholdOptions(threshold=0.9, method="lsh")
    assert report_options_from_given({"threshold": 0.5, "method": "exact"}, lean) == ThresholdOptions(threshold=0.5)
    assert report_options_from_given({"writeup_ranking": True}, lean) == LookupReportOptions()
    with pytest.raises(InvalidParameterError) as idf:  # IDF's scale is not the collection's Jaccard
        report_options_from_given({"similarity": "idf"}, full)
    assert idf.value.param == "threshold"
    assert report_options_from_given({"similarity": "idf", "threshold": 0.4}, full) == \
        ThresholdOptions(threshold=0.4, similarity="idf")


def test_each_rule_between_options_is_checked_by_the_options():
    with pytest.raises(InvalidParameterError) as resume:
        ThresholdOptions(method="lsh").check_run(resume=True)
    assert resume.value.param == "resume" and "does not resume" in str(resume.value)
    ThresholdOptions(method="exact").check_run(resume=True)
    for options in (ThresholdOptions(similarity="idf"), ThresholdOptions(method="lsh"), JoinOptions(method="lsh")):
        with pytest.raises(InvalidParameterError) as snapshot:
            options.check_run(snapshot=True)
        assert snapshot.value.param == "snapshot"
    ThresholdOptions(similarity="idf", method="lsh").check_run(snapshot=True)
    JoinOptions(similarity="idf", method="lsh").check_run(snapshot=True)
    with pytest.raises(InvalidParameterError, match="num_hashes"):
        LookupReportOptions(num_hashes=20)
    with pytest.raises(InvalidParameterError) as bad_id:
        LookupReportOptions(start_id="a\tb")
    assert bad_id.value.param == "start_id"


def test_python_keywords_build_the_same_options():
    assert LookupOptions.from_keywords(None, {"rows": 5, "mode": NOT_GIVEN}) == LookupOptions(rows=5)
    assert LookupOptions.from_keywords(None, {"max_edit_distance": None}, WRITEUP_LOOKUP) == \
        LookupOptions(max_edit_distance=None, min_jaccard=None, rows=10, first_word_filter=True)
    given = LookupOptions(mode="lsh")
    assert LookupOptions.from_keywords(given, {"rows": NOT_GIVEN}) is given
    with pytest.raises(InvalidParameterError) as both:
        LookupOptions.from_keywords(given, {"rows": 5})
    assert both.value.param == "rows"


def test_max_distance_is_the_old_name_of_max_edit_distance():
    with pytest.warns(DeprecationWarning, match="max_edit_distance"):
        assert LookupOptions.from_keywords(None, {"max_distance": 3}).max_edit_distance == 3
    with pytest.warns(DeprecationWarning), pytest.raises(InvalidParameterError):
        LookupOptions.from_keywords(None, {"max_distance": 3, "max_edit_distance": 2})
    with pytest.raises(InvalidParameterError) as bad:
        LookupOptions(max_edit_distance=-1)
    assert bad.value.param == "max_edit_distance" and "None" in str(bad.value)


@pytest.mark.parametrize("kwargs, key", [
    ({"threshold": 0.8, "field_weights": {"name": 2.0}}, "field_weights"),
    ({"threshold": 0.8, "idf_tokens": "grams"}, "idf_tokens"),
    ({"threshold": 0.8, "similarity": "idf", "idf_tokens": "grams", "field_weights": {"a": 1.0}}, "field_weights"),
    ({"threshold": 0.8, "method": "lsh", "workers": 2}, "workers"),
    ({"threshold": 0.0}, "threshold"),
    ({"threshold": 0.8, "method": "fuzzy"}, "method"),
    ({"threshold": 0.8, "split_bucket": 1}, "split_bucket"),
])
def test_threshold_options_refuse_what_does_not_apply(kwargs, key):
    with pytest.raises(InvalidParameterError) as caught:
        ThresholdOptions(**kwargs)
    assert caught.value.param == key


@pytest.mark.parametrize("kwargs, key", [
    ({"bloom_fp_rate": 0.1}, "bloom_fp_rate"),  # method exact has no Bloom filter
    ({"method": "lsh", "similarity": "idf", "bloom": False}, "bloom"),
    ({"method": "lsh", "similarity": "idf", "workers": 2}, "workers"),
    ({"method": "lsh", "bloom_fp_rate": 1.0}, "bloom_fp_rate"),
])
def test_join_options_refuse_what_does_not_apply(kwargs, key):
    with pytest.raises(InvalidParameterError) as caught:
        JoinOptions(**kwargs)
    assert caught.value.param == key


def test_options_fill_their_defaults():
    t = ThresholdOptions(threshold=0.5)
    assert (t.similarity, t.method, t.lookups_in_flight, t.tokens, t.split_bucket) == \
        ("jaccard", "exact", 1, "words", DEFAULT_SPLIT_BUCKET)
    j = JoinOptions(method="lsh")
    assert (j.threshold, j.lookups_in_flight, j.fp_rate, j.bloom) == (0.8, 2, 0.01, True)
    assert ThresholdOptions(threshold=0.5, similarity="idf", idf_tokens="grams").tokens == "grams"
    assert LookupOptions(mode="minhash", num_hashes=20).searcher_kwargs()["num_hashes"] == 20
    assert LookupReportOptions().lookups_in_flight == 1
    with pytest.raises(InvalidParameterError, match="num_hashes"):
        LookupOptions(num_hashes=20)  # shingles mode has no signature to cut


def test_lookup_options_from_given_takes_only_known_keys():
    assert LookupOptions.from_given({"rows": 5, "mode": None}).rows == 5
    assert LookupOptions.from_given({}, WRITEUP_LOOKUP) == WRITEUP_LOOKUP
    with pytest.raises(InvalidParameterError, match="max_distance"):
        LookupOptions.from_given({"max_distance": 2})  # the Python name is not a request key


@pytest.mark.parametrize("cls", [ThresholdOptions, JoinOptions])
def test_method_hybrid_is_for_similarity_cosine_only(cls):
    assert cls(threshold=0.9, similarity="cosine", method="hybrid").method == "hybrid"
    for similarity in ("jaccard", "idf"):
        with pytest.raises(InvalidParameterError, match="'cosine'") as caught:
            cls(threshold=0.5, similarity=similarity, method="hybrid")
        assert caught.value.param == "method"
    with pytest.raises(InvalidParameterError, match="'hybrid'") as caught:
        cls(threshold=0.9, similarity="cosine", method="lsh")  # the bands alone are of the words
    assert caught.value.param == "method"


def test_a_threshold_lookup_takes_a_method_only_where_there_is_a_choice():
    by_meaning = lookup_from_given({"threshold": 0.9, "similarity": "cosine", "method": "hybrid"})
    assert by_meaning == SimilarityLookup(0.9, "cosine", "hybrid") and by_meaning.method_in_force == "hybrid"
    assert lookup_from_given({"threshold": 0.9, "similarity": "cosine"}).method_in_force == "knn"
    assert lookup_from_given({"threshold": 0.5, "method": "exact"}).method_in_force == "exact"
    for given in ({"threshold": 0.9, "similarity": "cosine", "method": "exact"},
                  {"threshold": 0.9, "similarity": "cosine", "method": "lsh"},
                  {"threshold": 0.5, "method": "hybrid"},
                  {"threshold": 0.5, "similarity": "idf", "method": "knn"}):
        with pytest.raises(InvalidParameterError) as caught:
            lookup_from_given(given)
        assert caught.value.param == "method", given


def test_a_lookup_refuses_a_method_without_threshold():
    from neardup_solr.errors import OptionError

    with pytest.raises(OptionError) as caught:
        lookup_from_given({"method": "hybrid", "similarity": "cosine"})
    assert caught.value.options == ["similarity", "method"]


def test_the_doors_offer_the_hybrid_method():
    from neardup_solr.cli.search_cmd import lookup_options_from_args, report_options_from_args

    args = parse(["near-dups", "x", "--threshold", "0.9", "--similarity", "cosine", "--method", "hybrid"])
    assert lookup_options_from_args(args) == SimilarityLookup(0.9, "cosine", "hybrid")
    assert report_options_from_args(parse(["report", "--out", "x", "--threshold", "0.9", "--similarity", "cosine",
                                           "--method", "hybrid"])) == \
        ThresholdOptions(threshold=0.9, similarity="cosine", method="hybrid")
    body = service_app.TextLookup(text="t", threshold=0.9, similarity="cosine", method="hybrid")
    assert lookup_from_given(body.model_dump(exclude={"text", "with_text"})) == SimilarityLookup(0.9, "cosine", "hybrid")
    report = service_app.ReportRequest(threshold=0.9, similarity="cosine", method="hybrid")
    assert report_options_from_given(report.model_dump()) == \
        ThresholdOptions(threshold=0.9, similarity="cosine", method="hybrid")
