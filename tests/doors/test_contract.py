"""One contract for the Python API and the CLI (issue 17, phase 1).

Table-driven: every number flag of every command, every environment variable and every API parameter, fed
bad values (negative, zero, NaN, inf, wrong type, huge), ends in one line and exit code 2 on the command
line, or a typed exception (InvalidParameterError, a ValueError; ParameterTypeError, also a TypeError) in
Python: never a traceback, a hang or a silent change. Usage errors are checked against a Solr URL where
nothing listens: had anything been sent, the exit code would be 3, not 2. Then each case of the issue, most
against the session's real Solr.
"""

from __future__ import annotations

import http.server
import json
import math
import pickle
import socket
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from netutil import free_port

import neardup_solr
import neardup_solr.errors
import neardup_solr.solr.searcher
from neardup_solr import (
    DocumentNotFoundError,
    Indexer,
    IndexSettings,
    InvalidParameterError,
    MinHash,
    NeardupError,
    ParameterTypeError,
    Searcher,
    Shingler,
    SignatureMismatchError,
    SolrClient,
    SolrCoreNotFoundError,
    SolrTimeoutError,
    StoredSettingsError,
    estimate_jaccard,
    normalize,
    read_index_settings,
    repair_index_settings,
)
from neardup_solr.cli import main
from neardup_solr.solr.documents import META_DATASET, SETTINGS_DOC_ID
from neardup_solr.io.outputs import check_output_path
from neardup_solr.io.readers import RecordReader
from neardup_solr.solr.client import RetryPolicy
from neardup_solr.validation import LIMITS, Limit, check_id, id_problem, record_problem

CLI = [sys.executable, "-m", "neardup_solr.cli"]


# ---------------------------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def nowhere() -> str:
    """A core URL where nothing listens: any request there fails with exit 3."""
    return f"http://127.0.0.1:{free_port()}/solr/neardup"


@pytest.fixture()
def files(tmp_path):
    data = tmp_path / "in.txt"
    data.write_text("1 hello world foo bar\n2 hello world foo baz\n")
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("# id\tneighbor_id\tedit_distance\tscore\n1\t2\t1\t3.0\n")
    return {"FILE": str(data), "OUT": str(tmp_path / "out.tsv"), "PAIRS": str(pairs), "DIR": str(tmp_path)}


def run_cli(argv: list[str], capsys) -> tuple[int, list[str], str]:
    """The command in this process: exit code, the non-empty stderr lines, stdout."""
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse exits by itself
        code = exc.code if isinstance(exc.code, int) else 2
    captured = capsys.readouterr()
    return code, [line for line in captured.err.splitlines() if line.strip()], captured.out


def assert_one_usage_line(code: int, lines: list[str], *words: str) -> None:
    assert code == 2, lines
    assert len(lines) == 1, lines
    assert lines[0].startswith("error: "), lines
    assert "Traceback" not in lines[0]
    for word in words:
        assert word in lines[0], (word, lines[0])


def bad_values(limit: Limit) -> list[str]:
    """Values a flag with this limit must refuse: below and above its range, NaN, infinities, not numbers,
    a float for an integer, and a huge number."""
    values = ["nan", "inf", "-inf", "abc", "", "1e400"]
    if limit.kind == "int":
        values += ["2.5", "1.0", "9" * 30]
    if limit.minimum is not None:
        low = limit.minimum if limit.open_min else limit.minimum - (1 if limit.kind == "int" else 0.5)
        values.append(_plain(low))
    if limit.maximum is not None:
        high = limit.maximum if limit.open_max else limit.maximum + (1 if limit.kind == "int" else 0.5)
        values.append(_plain(high))
    return values


def _plain(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


# Every number flag, the command it belongs to (with what else the command needs) and its limit.
NUMBER_FLAGS = [
    (["index", "{FILE}"], flag, limit) for flag, limit in [
        ("--batch-size", "batch_size"), ("--commit-every", "commit_every"), ("--workers", "workers"),
        ("--ngram", "ngram"), ("--num-hashes", "num_hashes"), ("--lsh-threshold", "lsh_threshold"),
        ("--bands", "bands"), ("--rows-per-band", "rows_per_band"), ("--sample-mod", "sample_mod"),
        ("--timeout", "timeout"), ("--max-wait", "max_wait"),
    ]
] + [
    (["near-dups", "1"], flag, limit) for flag, limit in [
        ("--max-edit-distance", "max_distance"), ("--min-jaccard", "min_jaccard"), ("--rows", "rows"),
        ("--num-hashes", "num_hashes"), ("--ngram", "ngram"), ("--min-share", "min_share"),
        ("--timeout", "timeout"), ("--max-wait", "max_wait"),
    ]
] + [
    (["report", "--out", "{OUT}"], flag, limit) for flag, limit in [
        ("--workers", "workers"), ("--threshold", "threshold"), ("--ngram", "ngram"), ("--timeout", "timeout"),
        ("--max-wait", "max_wait"),
    ]
] + [
    (["report", "--out", "{OUT}", "--writeup-ranking"], flag, limit) for flag, limit in [
        ("--rows", "rows"), ("--max-edit-distance", "max_distance"), ("--min-jaccard", "min_jaccard"),
        ("--num-hashes", "num_hashes"),
    ]
] + [
    (["join", "{FILE}", "--out", "{OUT}"], flag, limit) for flag, limit in [
        ("--threshold", "threshold"), ("--workers", "workers"), ("--timeout", "timeout"),
        ("--bloom-fp-rate", "bloom_fp_rate"),
    ]
] + [
    (["dedupe", "{FILE}", "--out", "{OUT}"], flag, limit) for flag, limit in [
        ("--threshold", "threshold"), ("--batch-size", "batch_size"), ("--workers", "workers"),
        ("--num-hashes", "num_hashes"), ("--timeout", "timeout"),
    ]
] + [
    (["tune"], flag, limit) for flag, limit in [
        ("--threshold", "threshold"), ("--num-hashes", "num_hashes"), ("--false-positive-weight", "error_weight"),
        ("--false-negative-weight", "error_weight"), ("--min-recall", "min_recall"), ("--bands", "bands"),
        ("--rows-per-band", "rows_per_band"),
    ]
] + [
    (["verify", "{FILE}"], "--timeout", "timeout"),
    (["groups", "{PAIRS}", "--out", "{OUT}"], "--max-wait", "max_wait"),
    (["settings", "--repair"], "--num-hashes", "num_hashes"),
    (["settings", "--repair"], "--lsh-threshold", "lsh_threshold"),
    (["solr", "status"], "--port", "port"),
    (["solr", "create-collection", "c"], "--shards", "shards"),
    (["solr", "create-collection", "c"], "--replicas", "replicas"),
    (["solr", "start", "--cloud"], "--nodes", "nodes"),
]

FLAG_CASES = [
    pytest.param(command, flag, value, id=f"{command[0]} {flag} {value[:12]!r}")
    for command, flag, limit in NUMBER_FLAGS for value in bad_values(LIMITS[limit])
]


# ---------------------------------------------------------------------------------------------------------------
# the CLI: every number flag, every bad value
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("command, flag, value", FLAG_CASES)
def test_every_number_flag_refuses_bad_values_in_one_line_before_any_work(command, flag, value, files, nowhere,
                                                                          capsys):
    argv = [part.format(**files) for part in command] + [f"{flag}={value}"]
    if command[0] not in ("tune", "solr"):
        argv += ["--solr-url", nowhere]
    code, lines, out = run_cli(argv, capsys)
    assert_one_usage_line(code, lines, flag)
    assert out == ""
    assert not Path(files["OUT"]).exists()


def test_the_limits_of_the_cli_and_the_api_are_the_same_table():
    """--num-hashes and num_hashes= refuse and accept the same values: both read validation.LIMITS."""
    for flag, param, value in [("--num-hashes", "num_hashes", 0), ("--ngram", "ngram", 1001),
                               ("--lsh-threshold", "lsh_threshold", 1.5)]:
        with pytest.raises(InvalidParameterError) as api:
            IndexSettings(**{param: value})
        assert api.value.param == param
        assert api.value.render(flag).startswith(flag + " must be " + LIMITS[param].requirement())


@pytest.mark.parametrize("argv, words", [
    (["report", "--out", "{OUT}", "--threshold", "0.5", "--start-id", "1", "--end-id", "10"], ["--start-id", "--end-id"]),
    (["report", "--out", "{OUT}", "--threshold", "0.5", "--min-jaccard", "0.2"], ["--min-jaccard"]),
    (["report", "--out", "{OUT}", "--threshold", "0.5", "--max-edit-distance", "3"], ["--max-edit-distance"]),
    (["report", "--out", "{OUT}", "--threshold", "0.5", "--rows", "50"], ["--rows"]),
    (["report", "--out", "{OUT}", "--threshold", "0.5", "--mode", "lsh"], ["--mode"]),
    (["report", "--out", "{OUT}", "--threshold", "0.5", "--no-first-word-filter"], ["--first-word-filter"]),
    (["report", "--out", "{OUT}", "--similarity", "idf"], ["--similarity idf needs --threshold"]),
    (["report", "--out", "{OUT}", "--writeup-ranking", "--method", "lsh"], ["--method", "--writeup-ranking"]),
    (["report", "--out", "{OUT}", "--writeup-ranking", "--dataset", "a"], ["--dataset"]),
    (["report", "--out", "{OUT}", "--writeup-ranking", "--threshold", "0.5"], ["--threshold", "one lookup per"]),
    (["report", "--out", "{OUT}", "--mode", "lsh"], ["--mode", "without --writeup-ranking"]),
    (["report", "--out", "{OUT}", "--threshold", "0.5", "--method", "lsh", "--workers", "3"], ["--workers"]),
    (["report", "--out", "{OUT}", "--threshold", "0.5", "--field-weights", "a=1"], ["--field-weights", "idf"]),
    (["report", "--out", "{OUT}", "--writeup-ranking", "--num-hashes", "5"], ["--num-hashes", "minhash"]),
    (["near-dups", "1", "--min-share", "0.5", "--rows", "3"], ["--rows", "--min-share"]),
    (["near-dups", "1", "--text", "a b c"], ["id or --text"]),
    (["near-dups"], ["id or --text"]),
    (["near-dups", "--text", "   "], ["--text is empty"]),
    (["join", "{FILE}", "--out", "{OUT}", "--field-weights", "a=2"], ["--field-weights"]),
    (["join", "{FILE}", "--out", "{OUT}", "--similarity", "idf", "--field-weights", "a=inf"], ["--field-weights a"]),
    (["tune", "--bands", "4"], ["--bands and --rows-per-band"]),
    (["tune", "--bands", "20", "--rows-per-band", "10"], ["exceeds --num-hashes"]),
    (["tune", "--min-recall", "0.9", "--false-positive-weight", "1"], ["--false-positive-weight"]),
    (["tune", "--false-positive-weight", "0", "--false-negative-weight", "0"], ["both be 0"]),
    (["tune", "--plot", "{DIR}"], ["--plot", "is a directory"]),
    (["index", "{FILE}", "--clear", "--clear-all"], ["--clear"]),
    (["index", "{FILE}", "--resume", "--clear"], ["--resume"]),
    (["index", "{FILE}", "--dataset", "__meta__"], ["--dataset", "reserved"]),
    (["index", "{FILE}", "--dataset", "a\tb"], ["--dataset", "a tab"]),
    (["index", "{FILE}", "--fields", "shingles,bogus"], ["--fields"]),
    (["index", "{FILE}", "--bands", "20", "--rows-per-band", "10"], ["--bands", "num_hashes"]),
    (["index", "{FILE}", "--bands", "20"], ["--bands", "rows"]),
    (["index", "{FILE}", "--rejects", "{DIR}"], ["--rejects", "is a directory"]),
    (["index", "{DIR}/missing/in.txt"], ["not found"]),
    (["index", "{FILE}", "--format", "xml"], ["--format"]),
    (["verify", "{DIR}"], ["not a file"]),
    (["report", "--out", "{DIR}"], ["--out", "is a directory"]),
    (["report", "--out", "{DIR}/missing/r.tsv"], ["--out", "does not exist"]),
    (["join", "{FILE}", "--out", "{DIR}"], ["--out", "is a directory"]),
    (["groups", "{PAIRS}", "--out", "{DIR}"], ["--out", "is a directory"]),
    (["groups", "{PAIRS}", "--out", "{OUT}", "--keep", "{DIR}"], ["--keep", "is a directory"]),
    (["groups", "{PAIRS}", "--out", "{OUT}", "--keep", "{OUT}"], ["--keep", "same file"]),
    (["dedupe", "{FILE}", "--out", "{DIR}"], ["--out", "is a directory"]),
    (["dedupe", "{FILE}", "--out", "{DIR}/out.csv"], ["--out", "csv"]),
    (["dedupe", "{FILE}", "--out", "{DIR}/out.txt", "--groups", "{DIR}/out.txt"], ["--groups", "another file"]),
    (["dedupe", "{FILE}", "--out", "{FILE}"], ["--out", "another file than the input"]),
    (["dedupe", "{FILE}", "--out", "{DIR}/out.txt", "--clear"], ["--clear", "--dataset"]),
    (["settings", "--ngram", "3"], ["--ngram", "without --repair"]),
    (["solr", "stop", "--shards", "2"], ["--shards"]),
    (["solr", "status", "--overwrite-configset"], ["--overwrite-configset"]),
    (["solr", "start", "--nodes", "3"], ["--nodes", "--cloud"]),
    (["solr", "stop", "--json"], ["--json"]),
    (["solr", "bogus"], ["invalid choice"]),
    (["no-such-command"], ["invalid choice"]),
    (["near-dups", "1", "--mode", "words"], ["--mode"]),
])
def test_options_that_do_not_apply_or_do_not_fit_are_refused_in_one_line(argv, words, files, nowhere, capsys):
    argv = [part.format(**files) for part in argv]
    if argv[0] not in ("tune", "solr", "no-such-command"):
        argv += ["--solr-url", nowhere]
    code, lines, _ = run_cli(argv, capsys)
    assert_one_usage_line(code, lines, *words)
    assert not Path(files["OUT"]).exists()


# ---------------------------------------------------------------------------------------------------------------
# environment variables: named, one line, never a hang (subprocesses, so that a hang would time out)
# ---------------------------------------------------------------------------------------------------------------


ENV_CASES = [
    ("NEARDUP_SOLR_MAX_CONNECTIONS", value) for value in ["0", "-1", "abc", "1.5", "nan", "9" * 20]
] + [
    ("NEARDUP_SOLR_MAX_WAIT", value) for value in ["-1", "abc", "nan", "inf", "1e9"]
] + [
    ("NEARDUP_SOLR_PORT", value) for value in ["0", "x", "70000", "-5"]
] + [
    ("SOLR_URL", value) for value in ["http://127.0.0.1:8983", "http://127.0.0.1:8983/solr", "not a url",
                                      "ftp://h/solr/x", "http://h:99999/solr/neardup", ","]
]


@pytest.mark.parametrize("var, value", ENV_CASES, ids=[f"{v}={x[:20]}" for v, x in ENV_CASES])
def test_every_environment_variable_is_checked_and_named(var, value, nowhere, tmp_path):
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith(("SOLR_", "NEARDUP_"))}
    env[var] = value
    if var != "SOLR_URL":
        env["SOLR_URL"] = nowhere if var != "NEARDUP_SOLR_PORT" else ""
    proc = subprocess.run([*CLI, "near-dups", "1", "--timeout", "5"], capture_output=True, text=True,
                          timeout=60, env=env, cwd=tmp_path)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1 and lines[0].startswith(f"error: {var} "), proc.stderr
    assert "Traceback" not in proc.stderr


def test_api_errors_from_the_environment_name_the_variable(monkeypatch, nowhere):
    monkeypatch.setenv("NEARDUP_SOLR_MAX_CONNECTIONS", "0")
    with pytest.raises(InvalidParameterError, match="NEARDUP_SOLR_MAX_CONNECTIONS must be an integer") as exc:
        SolrClient(nowhere)
    assert exc.value.param == "NEARDUP_SOLR_MAX_CONNECTIONS"
    assert SolrClient(nowhere, pool_size=2).pool_size == 2  # an explicit value needs no variable
    monkeypatch.setenv("NEARDUP_SOLR_MAX_WAIT", "soon")
    with pytest.raises(InvalidParameterError, match="NEARDUP_SOLR_MAX_WAIT"):
        RetryPolicy()


# ---------------------------------------------------------------------------------------------------------------
# the API: every parameter, every bad value
# ---------------------------------------------------------------------------------------------------------------

NAN, INF = math.nan, math.inf
INT_PARAMS = {"ngram", "num_hashes", "seed", "sample_mod", "bands", "cache_size", "pool_size", "attempts",
              "batch_size", "commit_every", "workers"}
INT_BAD = [-1, 0, NAN, INF, 2.5, 128.0, True, "3", None, 10**30]


def _api_cases():
    cases = []
    for param, bad in [
        ("ngram", INT_BAD), ("num_hashes", INT_BAD), ("seed", [-1, 2**32, 1.0, True, "42", NAN]),
        ("lsh_threshold", [0, -0.5, 1.5, NAN, INF, -INF, "0.8", True, None]),
        ("sample_mod", [0, -3, 1.0, True, NAN, 2**40]), ("unit", ["sentence", 3, None]),
        ("fields", ["lsh", ("lsh", "bogus"), ("lsh", "lsh"), None, 3]), ("bands", [0, -2, 1.5, True, NAN]),
    ]:
        for value in bad:
            if value is None and param in ("ngram", "num_hashes", "seed"):
                continue  # covered by the type check of the other values; None is IndexSettings' default elsewhere
            kwargs = {param: value}
            if param == "bands":
                kwargs["rows"] = 4
            cases.append(pytest.param(IndexSettings, kwargs, param, id=f"IndexSettings {param}={value!r}"))
    for param, bad in [("num_hashes", INT_BAD[:-2] + [10**6]), ("seed", [-1, 1.5, True, 2**33])]:
        for value in bad:
            cases.append(pytest.param(MinHash, {param: value}, param, id=f"MinHash {param}={value!r}"))
    for param, bad in [("ngram", [0, -1, 2.0, True, NAN, 10**9]), ("unit", ["line", None]),
                       ("seed", [-1, 2**32]), ("cache_size", [0, -5, 1.5])]:
        for value in bad:
            cases.append(pytest.param(Shingler, {param: value}, param, id=f"Shingler {param}={value!r}"))
    for param, bad in [("timeout", [0, -1, NAN, INF, "60", True, 10**9]), ("pool_size", [0, -1, 1.5, True, 10**6]),
                       ("url", ["http://h", "http://h/solr", "nope", ",", 3]), ("verify", [1, None, 2.5]),
                       ("retry", [3, "x"])]:
        for value in bad:
            cases.append(pytest.param(SolrClient, {param: value}, param, id=f"SolrClient {param}={value!r}"))
    for param, bad in [("max_wait", [-1, NAN, INF, "5", 10**9]), ("attempts", [0, -1, 1.5]), ("base", [0, -1, NAN])]:
        for value in bad:
            cases.append(pytest.param(RetryPolicy, {param: value}, param, id=f"RetryPolicy {param}={value!r}"))
    for param, bad in [("batch_size", [0, -1, 2.0, True, NAN, 10**9]), ("commit_every", [0, -1, 1.5]),
                       ("commit_seconds", [0, -1, NAN, INF]), ("workers", [0, -1, 1.5, 1000]),
                       ("progress", [1, "yes"]), ("dataset", ["", "a\nb", "__meta__", 3]),
                       ("settings", [{"ngram": 3}, "x"]), ("client", ["http://h/solr/x"])]:
        for value in bad:
            cases.append(pytest.param("Indexer", {param: value}, param, id=f"Indexer {param}={value!r}"))
    return cases


@pytest.mark.parametrize("make, kwargs, param", _api_cases())
def test_every_api_parameter_refuses_bad_values_with_a_typed_error_naming_it(make, kwargs, param, nowhere):
    if make == "Indexer":
        kwargs = {"client": SolrClient(nowhere), **kwargs}

        def make(**kw):
            return Indexer(**kw)
    if make is SolrClient and param != "url":
        kwargs = {"url": nowhere, **kwargs}
    with pytest.raises(InvalidParameterError) as exc:
        make(**kwargs)
    error = exc.value
    assert isinstance(error, NeardupError) and isinstance(error, ValueError)
    assert error.param == param
    assert str(error).startswith(f"{param} must be ")
    value = kwargs[param]
    if isinstance(value, bool):
        assert isinstance(error, TypeError), error  # True is not a count, nor a number
    if param in INT_PARAMS and isinstance(value, float) and math.isfinite(value) and value.is_integer():
        assert isinstance(error, ParameterTypeError) and "pass the integer" in str(error)  # 128.0 is not an int
    assert pickle.loads(pickle.dumps(error)).args == error.args  # crosses process pools intact


@pytest.mark.parametrize("call, param", [
    (lambda idx, d: idx.index_file(3), "path"),
    (lambda idx, d: idx.index_file(d / "in.txt", "xml"), "fmt"),
    (lambda idx, d: idx.index_file(d / "in.txt", on_decode_error="ignore"), "on_decode_error"),
    (lambda idx, d: idx.index_file(d / "in.txt", resume=1), "resume"),
    (lambda idx, d: idx.index_file(d / "in.txt", id_field=""), "id_field"),
    (lambda idx, d: idx.index_file(d / "in.txt", rejects_path=d), "rejects_path"),
    (lambda idx, d: idx.index_file(d / "in.txt", rejects_path=d / "no" / "r.jsonl"), "rejects_path"),
    (lambda idx, d: idx.index_records("ab"), "records"),
    (lambda idx, d: idx.index_records(42), "records"),
    (lambda idx, d: idx.index_records([("1", "x")], rejects_path=d), "rejects_path"),
    (lambda idx, d: RecordReader(d / "in.txt", "xml"), "fmt"),
    (lambda idx, d: RecordReader(d / "in.txt", on_decode_error="x"), "on_decode_error"),
    (lambda idx, d: check_output_path(d), "out"),
    (lambda idx, d: check_output_path(7), "out"),
    (lambda idx, d: normalize(["a", "b"]), "text"),
    (lambda idx, d: normalize(b"bytes"), "text"),
    (lambda idx, d: normalize(None), "text"),
    (lambda idx, d: check_id("a\tb"), "doc_id"),
    (lambda idx, d: check_id(None), "doc_id"),
    (lambda idx, d: repair_index_settings(idx.client, {"ngram": 3}), "settings"),
])
def test_api_calls_check_their_parameters_before_anything_is_sent(call, param, tmp_path, nowhere):
    (tmp_path / "in.txt").write_text("1 some text\n")
    indexer = Indexer(SolrClient(nowhere, retry=RetryPolicy(attempts=1)))
    with pytest.raises(InvalidParameterError) as exc:  # a request to nowhere would be SolrUnavailableError
        call(indexer, tmp_path)
    assert exc.value.param == param


SEARCHER_CASES = [
    ("rows", [0, -1, 1.5, 10.0, True, "10", NAN, INF, 10**9]),
    ("min_jaccard", [NAN, INF, -INF, 2, -0.1, "0.5", True, "collections"]),
    ("max_edit_distance", [-1, -2, 1.5, 2.0, True, NAN, "2"]),
    ("mode", ["bogus", 3, None]),
    ("first_word_filter", [1, 0, "yes", None]),
    ("num_hashes", [0, -1, 1.5, True, 10**6]),
    ("only_greater_ids", [1, None]),
    ("other_datasets_than", [3, b"x"]),
]


@pytest.mark.parametrize("param, value", [pytest.param(p, v, id=f"{p}={v!r}") for p, bad in SEARCHER_CASES
                                          for v in bad])
def test_searcher_parameters_refuse_bad_values_with_a_typed_error_naming_them(param, value, nowhere):
    """rows=0, min_jaccard=nan/inf/2, a negative max_edit_distance, wrong types: refused before anything is sent
    (a request to nowhere would be SolrUnavailableError)."""
    searcher = Searcher(SolrClient(nowhere), settings=IndexSettings())
    extra = {"mode": "minhash"} if param == "num_hashes" else {}
    with pytest.raises(InvalidParameterError) as exc:
        searcher.find_near_dups(text="some words to look up here", **{**extra, param: value})
    assert exc.value.param == param
    assert str(exc.value).startswith(f"{param} must be ")
    if isinstance(value, bool) or isinstance(value, (str, bytes)) and param not in ("mode", "min_jaccard"):
        assert isinstance(exc.value, TypeError)


def test_the_public_searcher_api_has_explicit_keyword_parameters_and_docstrings():
    import inspect

    for name, method in inspect.getmembers(Searcher, inspect.isfunction):
        if name.startswith("_"):
            continue
        assert method.__doc__, name
        kinds = {p.kind for p in inspect.signature(method).parameters.values()}
        assert inspect.Parameter.VAR_KEYWORD not in kinds and inspect.Parameter.VAR_POSITIONAL not in kinds, name
    assert neardup_solr.solr.searcher.DocumentNotFoundError is neardup_solr.errors.DocumentNotFoundError


def test_a_text_that_is_not_a_str_is_told_what_to_do_with_what_it_is():
    with pytest.raises(TypeError, match="decode the bytes"):
        normalize(b"caf\xc3\xa9")
    with pytest.raises(TypeError, match="join the words") as words:
        normalize(["a", "b"])
    assert "decode" not in str(words.value)
    searcher = Searcher(SolrClient("http://127.0.0.1:9/solr/x"), settings=IndexSettings())
    with pytest.raises(ParameterTypeError, match="join the words"):
        searcher.find_near_dups_of_text(["art", "deli"])  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------------------------
# signatures carry their seed and length
# ---------------------------------------------------------------------------------------------------------------


def test_estimate_jaccard_refuses_signatures_of_other_seeds_or_lengths():
    text = "Art's Deli 12224 Ventura Blvd. Studio City"
    a = MinHash(num_hashes=64, seed=1).signature(text)
    assert a.seed == 1 and a.num_hashes == 64
    assert estimate_jaccard(a, MinHash(num_hashes=64, seed=1).signature(text)) == 1.0
    with pytest.raises(SignatureMismatchError, match="different seeds"):
        estimate_jaccard(a, MinHash(num_hashes=64, seed=2).signature(text))  # used to answer 0.0
    with pytest.raises(SignatureMismatchError, match="same num_hashes"):
        estimate_jaccard(a, MinHash(num_hashes=32, seed=1).signature(text))
    batch = MinHash(num_hashes=64, seed=1).signatures([text, "another text entirely here"])
    assert batch.seed == 1 and batch[0].seed == 1  # rows keep the seed
    with pytest.raises(SignatureMismatchError, match="1-D"):
        estimate_jaccard(batch, batch)
    assert estimate_jaccard(batch[0], a) == 1.0
    assert estimate_jaccard(np.asarray(a), a) == 1.0  # a plain array has no seed: compared on length alone
    restored = pickle.loads(pickle.dumps(a))
    assert restored.seed == 1 and restored.tolist() == a.tolist()
    assert isinstance(SignatureMismatchError("x"), ValueError)


# ---------------------------------------------------------------------------------------------------------------
# records and ids
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("record, reason", [
    ("ab", "(id, text) pair, got the str 'ab'"),
    (b"ab", "(id, text) pair"),
    ({"id": "1", "text": "x"}, "got a dict"),
    (("1",), "got 1 item"),
    (("1", "text", "more"), "got 3 item"),
    (None, "(id, text) pair"),
    ((None, "text"), "id is missing"),
    (("", "text"), "id is empty"),
    (("a\tb", "text"), "a tab"),
    (("a\nb", "text"), "a newline"),
    (("a\rb", "text"), "a carriage return"),
    (("a\x00b", "text"), "U+0000"),
    (("a\u2028b", "text"), "U+2028"),
    ((" a", "text"), "white space"),
    (("#a", "text"), "'#'"),
    ((1.5, "text"), "str or an int, not float"),
    ((True, "text"), "not bool"),
    (("x" * 40000, "text"), "longer than"),
    (("1", None), "text is missing"),
    (("1", b"bytes"), "decode it"),
    (("1", ["a"]), "not list"),
])
def test_record_problems_name_the_reason(record, reason):
    problem = record_problem(record)
    assert isinstance(problem, str) and reason in problem, problem


def test_good_records_and_ids_pass():
    assert record_problem(("a b", "text")) == ("a b", "text")
    assert record_problem([7, "text"]) == ("7", "text")
    for doc_id in ["with space", 'quote"d', "co:lon", "naïve", "*", "{!x}", "a#b", "x" * 1000]:
        assert id_problem(doc_id) is None, doc_id


@pytest.mark.solr
def test_bad_records_never_raise_mid_batch_and_are_never_indexed_under_mangled_ids(solr):
    records: list = [(str(i), f"record number {i} with several words") for i in range(1200)]
    records[700] = ("700", None)          # used to raise TypeError after 500 documents were written
    records[3] = "ab"                      # used to become id 'a', text 'b'
    records[5] = (None, "a text without id")  # used to be indexed under id 'None'
    records[6] = ("tab\tid", "a text whose id has a tab")
    records[7] = (7, "an int id is fine")
    records[8] = ("8", b"bytes")
    summary = Indexer(solr, batch_size=500).index_records(records)
    assert (summary.read, summary.indexed, summary.rejected) == (1200, 1195, 5)
    reasons = {r.line: r for r in summary.rejections}
    assert set(reasons) == {4, 6, 7, 9, 701}
    assert "got the str 'ab'" in reasons[4].reason and reasons[4].id is None
    assert "id is missing" in reasons[6].reason
    assert "a tab" in reasons[7].reason and reasons[7].id == "tab\tid"
    assert "text is missing" in reasons[701].reason and reasons[701].id == "700"
    assert solr.get_by_ids(["None", "a", "tab\tid", "700"]) == []
    assert [d["id"] for d in solr.get_by_ids(["7", "699", "701"], "id")] == ["7", "699", "701"]


@pytest.mark.solr
def test_ids_that_would_break_tsv_outputs_are_rejected_from_files_with_reasons(solr_url, solr, tmp_path, capsys):
    data = tmp_path / "in.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in [
        {"id": "1", "text": "alpha beta gamma delta"},
        {"id": "a\tb", "text": "alpha beta gamma delta"},
        {"id": "c\nd", "text": "alpha beta gamma delta"},
        {"id": "#5", "text": "alpha beta gamma delta"},
        {"id": 3.0, "text": "alpha beta gamma delta"},
        {"id": True, "text": "alpha beta gamma delta"},
        {"id": 4, "text": "alpha beta gamma delta"},
    ]) + "\n")
    rejects = tmp_path / "rejects.jsonl"
    code, lines, out = run_cli(["index", str(data), "-q", "--rejects", str(rejects), "--solr-url", solr_url], capsys)
    assert code == 1, lines
    assert "indexed 2, rejected 5" in out
    reasons = [json.loads(line)["reason"] for line in rejects.read_text().splitlines()]
    assert any("a tab" in r for r in reasons) and any("a newline" in r for r in reasons)
    assert any("'#'" in r for r in reasons) and sum("not float" in r or "not bool" in r for r in reasons) == 2
    out_file = tmp_path / "pairs.tsv"
    code, lines, _ = run_cli(["report", "--threshold", "0.5", "--out", str(out_file), "-q", "--solr-url", solr_url],
                             capsys)
    assert code == 0, lines
    rows = [line.split("\t") for line in out_file.read_text().splitlines() if not line.startswith("#")]
    assert rows and all(len(row) == 3 for row in rows)  # every line still parses: id, neighbor_id, similarity
    assert sorted(rows[0][:2]) == ["1", "4"]


# ---------------------------------------------------------------------------------------------------------------
# settings are checked before they are stored; invalid stored settings are named and repaired
# ---------------------------------------------------------------------------------------------------------------


def _store_raw_settings(client: SolrClient, **values) -> None:
    """What an older version stored without checking (IndexSettings itself refuses these values now): today's keys
    and defaults with ``values`` over them."""
    data = {**json.loads(IndexSettings().to_json()), **values}
    client.add([{"id": SETTINGS_DOC_ID, "dataset": META_DATASET, "content": json.dumps(data)}])
    client.commit()


@pytest.mark.solr
@pytest.mark.parametrize("bad", [{"lsh_threshold": 1.5}, {"lsh_threshold": math.nan}, {"num_hashes": 128.0}])
def test_invalid_stored_settings_are_named_with_the_repair_and_an_empty_collection_takes_new_ones(solr, bad):
    _store_raw_settings(solr, **bad)
    with pytest.raises(StoredSettingsError, match="repair_index_settings") as exc:
        read_index_settings(solr)
    assert "settings --repair" in (exc.value.cli_message or "")
    with pytest.raises(StoredSettingsError):
        Searcher(solr)
    # Nothing was indexed with them, so an index run replaces them instead of failing forever.
    summary = Indexer(solr, IndexSettings(ngram=2)).index_records([("1", "alpha beta gamma")])
    assert summary.indexed == 1 and read_index_settings(solr) == IndexSettings(ngram=2)


@pytest.mark.solr
def test_settings_repair_checks_the_documents_and_never_stores_settings_that_do_not_match(solr, solr_url, capsys):
    url = ["--solr-url", solr_url]
    Indexer(solr, IndexSettings(ngram=2, num_hashes=64)).index_records(
        [(str(i), f"near duplicate text number {i % 3} here") for i in range(30)])
    _store_raw_settings(solr, ngram=2, num_hashes=64.0, lsh_threshold=1.5)
    code, lines, _ = run_cli(["settings", *url], capsys)
    assert_one_usage_line(code, lines, "invalid", "settings --repair")
    code, lines, _ = run_cli(["near-dups", "--text", "near duplicate text number 1 here", *url], capsys)
    assert_one_usage_line(code, lines, "settings --repair")
    with pytest.raises(StoredSettingsError):  # documents exist: an index run refuses instead of replacing
        Indexer(solr, IndexSettings(ngram=2, num_hashes=64)).index_records([("x", "more text here")])

    code, lines, out = run_cli(["settings", "--repair", *url], capsys)  # salvages ngram 2 and 64 values
    assert code == 0, lines
    assert "replaced the invalid settings" in out and "match" in out
    assert read_index_settings(solr) == IndexSettings(ngram=2, num_hashes=64)
    assert [m.id for m in Searcher(solr).find_near_dups("1", max_edit_distance=None, rows=50)] != []
    code, _, out = run_cli(["settings", "--repair", *url], capsys)
    assert code == 0 and "valid; nothing to repair" in out

    _store_raw_settings(solr, ngram="two", num_hashes=64)  # the salvage (ngram 3) does not match the documents
    code, lines, _ = run_cli(["settings", "--repair", *url], capsys)
    assert_one_usage_line(code, lines, "cannot repair", "another MinHash signature", "--ngram")
    with pytest.raises(StoredSettingsError):
        read_index_settings(solr)  # nothing was changed
    code, lines, out = run_cli(["settings", "--repair", "--ngram", "2", "--num-hashes", "64", *url], capsys)
    assert code == 0, lines
    assert read_index_settings(solr) == IndexSettings(ngram=2, num_hashes=64)


@pytest.mark.solr
def test_settings_repair_on_an_empty_collection_removes_the_invalid_document(solr):
    _store_raw_settings(solr, lsh_threshold=math.nan)
    result = repair_index_settings(solr)
    assert result.action == "removed" and read_index_settings(solr) is None
    assert repair_index_settings(solr).action == "none"


# ---------------------------------------------------------------------------------------------------------------
# the client: timeouts, missing cores, close, silence
# ---------------------------------------------------------------------------------------------------------------


@pytest.fixture()
def black_hole():
    """A port that accepts connections and never answers: every request times out."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/solr/neardup"
    finally:
        sock.close()


class _Loading(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(503)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"error": {"msg": "SolrCore is loading", "code": 503}}')

    do_POST = do_GET

    def log_message(self, *args):
        pass


@pytest.fixture()
def loading_solr():
    """An HTTP server answering 503 "core is loading" to everything, as Solr does while a core loads."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Loading)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/solr/neardup"
    finally:
        server.shutdown()
        server.server_close()


def test_a_timeout_says_it_timed_out_not_that_solr_is_down(black_hole):
    proc = subprocess.run([*CLI, "near-dups", "1", "--solr-url", black_hole, "--timeout", "0.001"],
                          capture_output=True, text=True, timeout=60)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 3 and len(lines) == 1, proc.stderr
    assert "timed out" in lines[0] and "--timeout" in lines[0]
    assert "not answering" not in lines[0] and "start it" not in lines[0] and "solr start" not in lines[0]
    with pytest.raises(SolrTimeoutError, match=r"timed out.*SolrClient\(timeout=SECONDS\)") as exc:
        SolrClient(black_hole, timeout=0.2).check()
    assert exc.value.timeout == 0.2


def test_the_library_is_silent_without_logging_config_and_the_cli_shows_retries(loading_solr):
    code = ("from neardup_solr import SolrClient, SolrUnavailableError\n"
            "from neardup_solr.solr.client import RetryPolicy\n"
            f"client = SolrClient({loading_solr!r}, retry=RetryPolicy(max_wait=1.5))\n"
            "try:\n    client.count()\nexcept SolrUnavailableError as exc:\n    print('stopped:', exc)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "stopped:" in proc.stdout and "loading" in proc.stdout
    assert proc.stderr == ""  # no retry chatter in an application that configured no logging
    proc = subprocess.run([*CLI, "near-dups", "1", "--solr-url", loading_solr, "--max-wait", "1.5"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3
    assert "WARNING neardup_solr.solr.client" in proc.stderr and "waiting for it" in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("error: Solr is not answering")


def test_a_url_without_a_core_is_told_the_core_is_missing(capsys):
    code, lines, _ = run_cli(["near-dups", "1", "--solr-url", "http://127.0.0.1:18960"], capsys)
    assert_one_usage_line(code, lines, "--solr-url", "names no core or collection",
                          "http://127.0.0.1:18960/solr/neardup")
    code, lines, _ = run_cli(["near-dups", "1", "--solr-url", "http://127.0.0.1:18960/solr/"], capsys)
    assert_one_usage_line(code, lines, "names no core or collection")


@pytest.mark.solr
def test_a_wrong_core_is_named_for_api_users_too_never_raw_html(solr_url):
    wrong = solr_url.rsplit("/", 1)[0] + "/no_such_core"
    client = SolrClient(wrong)
    for call in (lambda: Searcher(client), lambda: client.count(), lambda: client.get_by_ids(["1"]),
                 lambda: client.check()):
        with pytest.raises(SolrCoreNotFoundError) as exc:
            call()
        assert "no core 'no_such_core'" in str(exc.value) and "<html" not in str(exc.value).lower()


@pytest.mark.solr
def test_solr_client_closes_and_works_as_a_context_manager(solr_url):
    with SolrClient(solr_url) as client:
        client.check()
        assert client.count() >= 0
    with pytest.raises(neardup_solr.ClientClosedError, match="closed"):
        client.count()
    client.close()  # twice is fine


def test_every_exception_is_importable_from_the_package():
    for name in ["NeardupError", "InvalidParameterError", "ParameterTypeError", "StoredSettingsError",
                 "SettingsConflictError", "SignatureMismatchError", "InvalidTextError", "InvalidRecordError",
                 "SolrUnavailableError", "SolrTimeoutError", "SolrCoreNotFoundError", "SolrServerError",
                 "SolrAuthError", "SolrRequestError", "ForeignCollectionError", "ClientClosedError",
                 "LauncherError", "DocumentNotFoundError", "OutputInUseError", "RunStopped", "IndexIncomplete",
                 "IndexingInterrupted"]:
        error = getattr(neardup_solr, name)
        assert issubclass(error, neardup_solr.NeardupError), name
        assert name in neardup_solr.__all__
    assert issubclass(DocumentNotFoundError, KeyError)


# ---------------------------------------------------------------------------------------------------------------
# whole processes: no traceback, no hang
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("argv", [
    ["near-dups", "1", "--timeout", "inf"],
    ["near-dups", "1", "--num-hashes", "-1"],
    ["near-dups", "1", "--min-jaccard", "nan"],
    ["near-dups", "1", "--rows", "0"],
    ["report", "--out", "{DIR}", "-q"],
    ["index", "{FILE}", "--num-hashes", "0"],
])
def test_bad_values_in_a_real_process_end_in_one_line_and_exit_2(argv, files, nowhere):
    argv = [part.format(**files) for part in argv]
    proc = subprocess.run([*CLI, *argv, "--solr-url", nowhere], capture_output=True, text=True, timeout=60)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.solr
def test_text_equal_to_a_double_dash_is_a_text(solr, solr_url, capsys):
    Indexer(solr).index_records([("1", "-- --"), ("2", "something else entirely")])
    code, lines, out = run_cli(["near-dups", "--text=--", "--solr-url", solr_url], capsys)
    assert code == 0, lines
    assert out.startswith("no near duplicates of text at Jaccard") or out.startswith("text: --")
