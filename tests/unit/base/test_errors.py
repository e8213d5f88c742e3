"""One table says what each error means to the command line (exit code) and to the HTTP service (status):
every exception class of the package is in ``errors.py``, exported from ``neardup_solr``, has its own row, and
both front doors answer with that row."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import neardup_solr
from neardup_solr import errors
from neardup_solr.errors import (
    EXIT_INCOMPLETE,
    EXIT_INTERNAL,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    INTERNAL,
    OUTCOMES,
    Outcome,
    outcome_of,
)

PACKAGE = Path(neardup_solr.__file__).parent
ERROR_CLASSES = sorted((cls for _, cls in inspect.getmembers(errors, inspect.isclass)
                        if issubclass(cls, BaseException) and cls.__module__ == errors.__name__),
                       key=lambda cls: cls.__name__)


def test_every_exception_of_the_package_is_defined_in_errors():
    # Private control-flow signals (a leading underscore) never reach a caller and are not errors of the API.
    elsewhere = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "errors.py" or "solr_config" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_") and node.name.endswith(
                    ("Error", "Exception", "Interrupted", "Incomplete", "Stopped")):
                elsewhere.append(f"{path.relative_to(PACKAGE)}: {node.name}")
    assert elsewhere == []


@pytest.mark.parametrize("cls", ERROR_CLASSES, ids=lambda c: c.__name__)
def test_every_error_is_exported(cls):
    assert getattr(neardup_solr, cls.__name__) is cls
    assert cls.__name__ in neardup_solr.__all__


def _nearest_row(cls: type) -> type:
    return next(c for c in cls.__mro__ if c in OUTCOMES)


@pytest.mark.parametrize("cls", ERROR_CLASSES, ids=lambda c: c.__name__)
def test_every_error_has_a_deliberate_outcome(cls):
    # Either a row of its own, or a base it inherits from *inside* the package (never a bare Python base
    # such as ValueError, which would make the outcome an accident of the class's bases).
    row = _nearest_row(cls) if cls is not errors.NeardupError else None
    if cls is errors.NeardupError:
        return  # abstract: each concrete error has its own row or package base
    assert row.__module__ == errors.__name__, f"{cls.__name__} falls back to {row.__name__}: give it a row"


# A few of the table's rows, written out: a test that only read the table back would pass whatever it held.
EXPECTED = [
    (errors.InvalidParameterError, EXIT_USAGE, 422),
    (errors.OptionError, EXIT_USAGE, 422),
    (errors.DocumentNotFoundError, EXIT_USAGE, 404),
    (errors.DocumentExistsError, EXIT_USAGE, 409),
    (errors.SolrUnavailableError, EXIT_UNAVAILABLE, 503),
    (errors.SolrTimeoutError, EXIT_UNAVAILABLE, 503),
    (errors.RunStopped, EXIT_UNAVAILABLE, 503),
    (errors.IndexIncomplete, EXIT_INCOMPLETE, 502),
    (errors.SolrRequestError, EXIT_USAGE, 400),
    (errors.SignatureDisagreementError, EXIT_INTERNAL, 500),
    (KeyError, EXIT_INTERNAL, 500),
    (ValueError, EXIT_USAGE, 400),
]


def _instance(cls: type) -> BaseException:
    """An instance of ``cls`` built from its own signature (placeholder arguments)."""
    params = [p for p in inspect.signature(cls.__init__).parameters.values()
              if p.name != "self" and p.default is inspect.Parameter.empty
              and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    samples = {"options": ["--x"], "partial_path": Path("x"), "done": 0, "total": 1}

    class Summary:  # what IndexingInterrupted / IndexIncomplete read of an IndexSummary
        interrupted = "Solr went away"
        verification = None

    args = [samples.get(p.name, Summary() if p.name == "summary" else "x") for p in params]
    return cls(*args)


@pytest.mark.parametrize("cls,code,status", EXPECTED, ids=lambda v: getattr(v, "__name__", str(v)))
def test_outcome_of(cls, code, status):
    assert outcome_of(_instance(cls)) == Outcome(code, status)


def test_an_unknown_exception_is_internal():
    class Odd(Exception):
        pass

    assert outcome_of(Odd()) == INTERNAL == Outcome(EXIT_INTERNAL, 500)


@pytest.mark.parametrize("cls", ERROR_CLASSES, ids=lambda c: c.__name__)
def test_the_command_line_exits_with_the_tables_code(cls, monkeypatch, capsys):
    from neardup_solr import cli

    error = _instance(cls)

    def fail(args):
        raise error

    parser = cli.build_parser()
    args = parser.parse_args(["evaluate", "a.tsv", "b.tsv"])
    args.func = fail
    monkeypatch.setattr(cli, "build_parser", lambda: _Fixed(parser, args))
    assert cli.main(["evaluate", "a.tsv", "b.tsv"]) == outcome_of(error).exit_code
    err = capsys.readouterr().err
    assert err.startswith("error:") and len(err.strip().splitlines()) == 1


class _Fixed:
    """A parser that returns prepared arguments (their command raises the error under test)."""

    def __init__(self, parser, args):
        self.parser, self.args = parser, args

    def parse_args(self, argv):
        return self.args


@pytest.mark.parametrize("cls", ERROR_CLASSES, ids=lambda c: c.__name__)
def test_the_service_answers_with_the_tables_status(cls, tmp_path):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from neardup_solr.service import ServiceConfig, create_app

    error = _instance(cls)
    app = create_app(ServiceConfig(solr_url="http://127.0.0.1:9/solr/none", jobs_dir=tmp_path))

    @app.get("/test-raise")
    def raise_it():
        raise error

    with TestClient(app, raise_server_exceptions=False) as http:
        resp = http.get("/test-raise")
    assert resp.status_code == outcome_of(error).http_status
    assert resp.headers["content-type"].startswith("application/problem+json")
