"""Exceptions raised by neardup-solr, all importable from ``neardup_solr``.

Every message says what went wrong *and* what to do next, in the spirit of requests/pysolr. Errors about a
value the caller passed name the parameter as the caller wrote it: :class:`InvalidParameterError` keeps the
parameter's name, the requirement and the value apart, so the command line can say the same thing with its
flag (``--num-hashes``) or environment variable instead of the Python name (``num_hashes``).
"""

from __future__ import annotations

from typing import Any


class NeardupError(Exception):
    """Base class for all errors raised by this package.

    ``cli_message``, when set, is the same message in the command line's terms (its commands and flags instead
    of Python calls and parameters); the CLI prints it instead of ``str(error)``."""

    def __init__(self, *args: object, cli_message: str | None = None):
        super().__init__(*args)
        self.cli_message = cli_message


class InvalidParameterError(NeardupError, ValueError):
    """A parameter has a value outside what it accepts (a range, NaN, inf, an unknown choice...).

    ``param`` is the name the caller used (a Python parameter, or an environment variable such as
    ``NEARDUP_SOLR_MAX_CONNECTIONS``), ``requirement`` what it accepts ("an integer >= 1"), ``value`` what it
    got, and ``hint`` (optional) what to do next. :meth:`render` says the same with another name for the
    parameter, which is how the command line speaks of its flags.
    """

    def __init__(self, param: str, requirement: str, value: Any = None, hint: str | None = None,
                 *, show_value: bool = True):
        self.param = param
        self.requirement = requirement
        self.value = value
        self.hint = hint
        self.show_value = show_value
        super().__init__(self.render(param))

    def render(self, name: str) -> str:
        """The message with ``name`` standing for the parameter (e.g. a CLI flag)."""
        text = f"{name} must be {self.requirement}"
        if self.show_value:
            text += f", got {_shown(self.value)}"
        if self.hint:
            text += f"; {self.hint}"
        return text

    def __reduce__(self):  # picklable across processes despite the keyword-only argument
        return (_rebuild_parameter_error, (type(self), self.param, self.requirement, self.value, self.hint,
                                           self.show_value))


class ParameterTypeError(InvalidParameterError, TypeError):
    """A parameter has the wrong type (a float where an integer is needed, a bool where a number is, a list
    where a text is...). Also a :class:`TypeError`, so ``except TypeError`` code keeps working."""


class StoredSettingsError(NeardupError, ValueError):
    """The settings document stored in the collection is invalid or unreadable (written by an older version
    that did not check it), or a repair could not find settings that match the indexed documents.

    :func:`~neardup_solr.solr.documents.repair_index_settings` (``neardup-solr settings --repair``) replaces an
    invalid document after checking the indexed documents against the settings it writes. ``url`` is the
    collection's, ``problem`` what is wrong; the message says what to do in Python terms, and the command line
    says it with its own commands."""

    def __init__(self, message: str, *, url: str | None = None, problem: str | None = None,
                 cli_message: str | None = None):
        super().__init__(message, cli_message=cli_message)
        self.url = url
        self.problem = problem


class SettingsConflictError(NeardupError, ValueError):
    """Indexing with settings other than those the collection was indexed with (that would mix incompatible
    shingles and signatures in one collection)."""


class SignatureMismatchError(NeardupError, ValueError):
    """Two MinHash signatures cannot be compared: made with different seeds or of different lengths."""


class InvalidTextError(NeardupError, ValueError):
    """A text cannot be turned into shingles (empty, only punctuation, ...)."""


class InvalidRecordError(NeardupError, ValueError):
    """An input record is malformed (no id, missing column, undecodable bytes...)."""

    def __init__(self, reason: str, *, source: object = None, line: int | None = None,
                 record_id: str | int | None = None):
        self.reason = reason
        self.source = source
        self.line = line
        self.record_id: str | None = None if record_id is None else str(record_id)
        where = []
        if source is not None:
            where.append(str(source))
        if line is not None:
            where.append(f"line {line}")
        if record_id is not None:
            where.append(f"id {record_id!r}")
        prefix = ":".join(where[:2]) + (f" ({where[2]})" if len(where) > 2 else "")
        super().__init__(f"{prefix}: {reason}" if prefix else reason)

    def __reduce__(self):
        return (_rebuild_record_error, (type(self), self.reason, self.source, self.line, self.record_id))


class DocumentNotFoundError(NeardupError, KeyError):
    """No document with the asked id is in the collection (also a ``KeyError``, as for a missing key)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "document not found"


class SolrUnavailableError(NeardupError, ConnectionError):
    """Solr did not answer (not started, wrong URL, or down after all retries)."""


class SolrTimeoutError(SolrUnavailableError):
    """Solr took longer than the timeout per request to answer. Not the same as Solr being down: a busy or
    far-away Solr needs a longer ``timeout``; ``timeout`` holds the value in force."""

    def __init__(self, message: str, timeout: float | None = None, *, cli_message: str | None = None):
        super().__init__(message, cli_message=cli_message)
        self.timeout = timeout


class SolrCoreNotFoundError(SolrUnavailableError):
    """Solr is up, but the core (or collection) in the URL does not exist there (HTTP 404)."""


class SolrServerError(SolrUnavailableError):
    """Solr failed on its side (HTTP 5xx: a full disk, an exhausted heap, a closed index writer...).

    Never the record's fault: a document refused this way is not done, and a re-run with ``--resume`` sends it
    again. ``kind`` names the cause when the message shows it: ``disk_full``, ``out_of_memory``,
    ``writer_closed``, or ``server`` for anything else.
    """

    def __init__(self, message: str, status: int | None = None, kind: str = "server"):
        super().__init__(message)
        self.status = status
        self.kind = kind


class ForeignCollectionError(NeardupError):
    """The core or collection was not made for neardup-solr; nothing destructive is done to it."""


class SolrAuthError(NeardupError, PermissionError):
    """Solr refused the credentials (HTTP 401/403)."""


class SolrRequestError(NeardupError):
    """Solr refused a request as bad (HTTP 4xx): for an update, the document itself is at fault."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


class ClientClosedError(NeardupError, RuntimeError):
    """A :class:`~neardup_solr.solr.client.SolrClient` was used after :meth:`close`."""


class LauncherError(NeardupError, RuntimeError):
    """The local Solr launcher could not build, start or stop Solr."""


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _rebuild_parameter_error(cls, param, requirement, value, hint, show_value):
    return cls(param, requirement, value, hint, show_value=show_value)


def _rebuild_record_error(cls, reason, source, line, record_id):
    return cls(reason, source=source, line=line, record_id=record_id)
