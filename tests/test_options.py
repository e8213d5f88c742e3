"""neardup_solr.options is the one place the request options, their defaults and their checks live.

These tests hold the front doors to it: the command line's flags, the service's JSON models and the Spark
command offer each option under the same key and carry no default of their own, and the options' own checks
refuse what does not apply. (tests/test_front_doors.py checks that the doors give the same pairs.)
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
    WRITEUP_LOOKUP,
    JoinOptions,
    LookupOptions,
    ThresholdOptions,
    option_names,
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
                                          ("near-dups", LookupOptions), ("report", LookupOptions)])
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


@pytest.mark.parametrize("model, cls", [("ReportRequest", ThresholdOptions), ("ReportRequest", LookupOptions),
                                        ("LookupOptions", LookupOptions)])
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
    assert WRITEUP_RANKING == {"max_distance": 2, "min_jaccard": None, "rows": 10, "first_word_filter": True}
    from neardup_solr.cli.common import LOOKUP_DEFAULTS, WRITEUP_DEFAULTS

    assert WRITEUP_DEFAULTS == asdict(WRITEUP_LOOKUP) and LOOKUP_DEFAULTS == asdict(LookupOptions())


def test_a_changed_default_reaches_the_cli_and_the_service(monkeypatch):
    """The doors read the defaults when they resolve a request, so changing them in options changes both."""
    from neardup_solr.service import lookups

    changed = replace(WRITEUP_LOOKUP, rows=7)
    monkeypatch.setattr(lookups, "WRITEUP_LOOKUP", changed)
    assert lookups.resolve({}, report=True).rows == 7
    assert lookups.resolve({}).rows is None  # lookups keep theirs


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
    with pytest.raises(InvalidParameterError, match="num_hashes"):
        LookupOptions(num_hashes=20)  # shingles mode has no signature to cut


def test_lookup_options_from_given_takes_only_known_keys():
    assert LookupOptions.from_given({"rows": 5, "mode": None}).rows == 5
    assert LookupOptions.from_given({}, WRITEUP_LOOKUP) == WRITEUP_LOOKUP
    with pytest.raises(InvalidParameterError, match="max_distance"):
        LookupOptions.from_given({"max_distance": 2})  # the Python name is not a request key
