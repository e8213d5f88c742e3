"""Exceptions raised by neardup-solr, all importable from ``neardup_solr``.

Every message says what went wrong *and* what to do next, in the spirit of requests/pysolr. Errors about a
value the caller passed name the parameter as the caller wrote it: :class:`InvalidParameterError` keeps the
parameter's name, the requirement and the value apart, so the command line can say the same thing with its
flag (``--num-hashes``) or environment variable instead of the Python name (``num_hashes``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
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

    :func:`~neardup_solr.solr.settings_store.repair_index_settings` (``neardup-solr settings --repair``) replaces an
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


class KeyNotFoundError(DocumentNotFoundError, ValueError):
    """``NearDupIndex.remove`` of a key that is not in the index: a :class:`DocumentNotFoundError` (a ``KeyError``)
    and a ``ValueError``, which is what datasketch's ``MinHashLSH.remove`` raises, so both kinds of caller catch it."""


class SolrUnavailableError(NeardupError, ConnectionError):
    """Solr did not answer (not started, wrong URL, or down after all retries)."""


class SolrTimeoutError(SolrUnavailableError):
    """Solr took longer than the timeout per request to answer. Not the same as Solr being down: a busy or
    far-away Solr needs a longer ``timeout``; ``timeout`` holds the value in force."""

    def __init__(self, message: str, timeout: float | None = None, *, cli_message: str | None = None):
        super().__init__(message, cli_message=cli_message)
        self.timeout = timeout


class ReplicationShortfallError(SolrUnavailableError):
    """A SolrCloud update was acknowledged by fewer replicas than ``min_replicas`` asked (Solr's achieved
    replication factor, ``rf``), through every retry within ``max_wait``: a replica is down or recovering. The
    documents of that update are not counted as indexed; a re-run with ``--resume`` sends them again."""

    def __init__(self, message: str, achieved: int, wanted: int):
        super().__init__(message)
        self.achieved = achieved
        self.wanted = wanted


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


class BandLocksBusyError(SolrUnavailableError):
    """A strict check-and-add could not take the LSH band locks of its text within its wait: other checks of near
    duplicates kept holding them. Transient, like Solr being busy (HTTP 503 with Retry-After; exit code 3): try
    again."""


class ForeignCollectionError(NeardupError):
    """The core or collection was not made for neardup-solr; nothing destructive is done to it."""


class InstallRefused(ForeignCollectionError):
    """``install``, ``uninstall``, ``backfill`` or ``sync`` will not act on this collection; the message says why
    and what to do. Nothing was changed."""


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


class CollectionSetupError(LauncherError):
    """A Configsets/Collections API step was refused or could not be sent; ``step`` names it."""

    def __init__(self, step: str, message: str):
        super().__init__(message)
        self.step = step


class DocumentExistsError(NeardupError, ValueError):
    """``check_and_add`` was asked to add a text under an id that already holds another document. A check never
    overwrites: delete the document first, or choose another id. ``doc_id`` is the id; ``doc_ids`` every id a
    bulk insert found taken (``[doc_id]`` for one add)."""

    def __init__(self, message: str, doc_id: str, doc_ids: list[str] | None = None):
        super().__init__(message)
        self.doc_id = doc_id
        self.doc_ids = list(doc_ids) if doc_ids is not None else [doc_id]

    def __reduce__(self):  # picklable (a multiprocessing worker's error reaches its parent)
        return (type(self), (str(self), self.doc_id, self.doc_ids))


class SignatureDisagreementError(NeardupError, RuntimeError):
    """The indexer's builder signed a record differently from the Spark job (a bug in one of them), or a Spark
    executor would sign with another Unicode version than the driver."""


class PinnedUnicodeError(NeardupError, ImportError):
    """The pinned Unicode data normaliser version 3 reads is missing or of another version (a broken or hand-edited
    install): reinstall neardup-solr."""


class SparkUnavailableError(NeardupError, RuntimeError):
    """PySpark is not installed, or no Java runtime can be found to start its JVM."""


class SparkMemoryError(NeardupError, RuntimeError):
    """A Spark job ran out of JVM memory: give Spark more (``driver_memory``, ``--driver-memory``) or a cluster."""


class OutputInUseError(NeardupError, ValueError):
    """Another run holds the lock on this output file."""


class RunStopped(SolrUnavailableError):
    """A resumable job stopped because Solr stayed away; its partial result is kept for ``resume=True``."""

    def __init__(self, message: str, partial_path: Path, done: int, total: int):
        super().__init__(message)
        self.partial_path = partial_path
        self.done = done
        self.total = total


class InputFormatError(NeardupError, ValueError):
    """An input is not something neardup-solr reads (an archive, an image, binary data, corrupt compressed
    data), or reading it needs an optional package that is not installed. Raised before any record of it is
    read, so nothing is written."""


class IndexingInterrupted(SolrUnavailableError):
    """Solr stayed away or failed on its side; ``summary`` says how far the run got and where its checkpoint is."""

    def __init__(self, summary: Any):  # a solr.indexer.IndexSummary (errors import nothing above them)
        self.summary = summary
        super().__init__(summary.interrupted)


class IndexIncomplete(NeardupError):
    """After the final commit, the index lacks documents Solr had acknowledged in this run; ``summary.verification``
    names how many and the first few, and the checkpoint is set so that ``resume=True`` sends them again."""

    def __init__(self, summary: Any):  # a solr.indexer.IndexSummary (errors import nothing above them)
        self.summary = summary
        super().__init__(summary.verification.format() if summary.verification else "index incomplete")


class GroupFieldsError(NeardupError):
    """The collection's near-duplicate group fields (``nd_group``, ``nd_keep``) are missing and cannot be added
    through the Schema API, or exist with a definition Solr cannot update in place."""


class GroupWritebackIncomplete(NeardupError):
    """After the commit, documents a group write-back wrote do not hold what was sent; ``wrong`` names them, and
    running the write-back again resends them."""

    def __init__(self, wrong: list[str]):
        self.wrong = wrong
        shown = ", ".join(repr(i) for i in wrong[:5]) + (" ..." if len(wrong) > 5 else "")
        super().__init__(f"{len(wrong)} document(s) do not hold the group written to them after the commit "
                         f"({shown}); run again to resend them")


class OptionError(InvalidParameterError):
    """An option given with a request it does not apply to (``options`` names them all; ``param`` the first)."""

    def __init__(self, options: list[str], why: str):
        super().__init__(options[0], f"left out {why}", None, show_value=False)
        self.options = options


class RecordModelError(NeardupError, ValueError):
    """The record-matching model stored with a collection is missing, from another release, or does not fit
    the records indexed there (other fields): train it again on the indexed records."""


class EncoderError(NeardupError, RuntimeError):
    """An encoder (the in-package model, or yours) that cannot be loaded, or that answered something other than one
    finite vector per text."""


class UsageError(NeardupError, ValueError):
    """A combination of command-line options the command refuses."""


# ----------------------------------------------------------------------------------------------------------
# One table of outcomes: what each error means to the command line (exit code) and to the HTTP service
# (status). ``neardup_solr.cli`` and ``neardup_solr.service`` both read it through :func:`outcome_of`.

EXIT_OK = 0
EXIT_REJECTED = 1  # the run went through, but some records were rejected (see the rejects file)
EXIT_USAGE = 2  # a bad flag value, an option that does not apply, an unreadable input, an unwritable output
EXIT_UNAVAILABLE = 3  # Solr is unavailable, timed out or failed on its side: a re-run (with --resume) goes on
EXIT_INCOMPLETE = 4  # the index lacks what was acknowledged (index) or what the file holds (verify)
# A bug: an exception nothing expects. One line (the traceback with -vv), never 1 or 2, which say something
# about the user's records or options.
EXIT_INTERNAL = 70


@dataclass(frozen=True)
class Outcome:
    """What an error means to each front door."""

    exit_code: int
    http_status: int


OUTCOMES: dict[type[BaseException], Outcome] = {
    # the caller's parameters, options and inputs
    InvalidParameterError: Outcome(EXIT_USAGE, 422),
    UsageError: Outcome(EXIT_USAGE, 422),
    InvalidTextError: Outcome(EXIT_USAGE, 422),
    InvalidRecordError: Outcome(EXIT_USAGE, 422),
    InputFormatError: Outcome(EXIT_USAGE, 422),
    SignatureMismatchError: Outcome(EXIT_USAGE, 400),
    # Inputs are checked before Solr sees them; what Solr still refuses is the request's (e.g. too long).
    SolrRequestError: Outcome(EXIT_USAGE, 400),
    # the state of the collection or of a file, against the request
    DocumentNotFoundError: Outcome(EXIT_USAGE, 404),
    DocumentExistsError: Outcome(EXIT_USAGE, 409),
    SettingsConflictError: Outcome(EXIT_USAGE, 409),
    StoredSettingsError: Outcome(EXIT_USAGE, 409),
    ForeignCollectionError: Outcome(EXIT_USAGE, 409),
    GroupFieldsError: Outcome(EXIT_USAGE, 409),
    RecordModelError: Outcome(EXIT_USAGE, 409),
    OutputInUseError: Outcome(EXIT_USAGE, 409),
    # Solr: away, slow, failing, or refusing our credentials (the service's own configuration, not the caller's)
    SolrUnavailableError: Outcome(EXIT_UNAVAILABLE, 503),
    SolrAuthError: Outcome(EXIT_USAGE, 502),
    IndexIncomplete: Outcome(EXIT_INCOMPLETE, 502),
    GroupWritebackIncomplete: Outcome(EXIT_INCOMPLETE, 502),
    # the machinery around Solr and Spark
    LauncherError: Outcome(EXIT_USAGE, 500),
    SparkUnavailableError: Outcome(EXIT_USAGE, 500),
    SparkMemoryError: Outcome(EXIT_USAGE, 500),
    PinnedUnicodeError: Outcome(EXIT_USAGE, 500),
    EncoderError: Outcome(EXIT_USAGE, 502),
    # bugs
    SignatureDisagreementError: Outcome(EXIT_INTERNAL, 500),
    ClientClosedError: Outcome(EXIT_INTERNAL, 500),
    # Python's own, as the library raises them for a request it cannot serve against this collection
    # ("indexed without 'lsh' tokens"), and the file system's
    ValueError: Outcome(EXIT_USAGE, 400),
    TypeError: Outcome(EXIT_USAGE, 400),
    OSError: Outcome(EXIT_USAGE, 500),
}
INTERNAL = Outcome(EXIT_INTERNAL, 500)


def outcome_of(error: BaseException) -> Outcome:
    """The outcome of the most specific class of ``error`` in :data:`OUTCOMES` (:data:`INTERNAL` if none)."""
    for cls in type(error).__mro__:
        found = OUTCOMES.get(cls)
        if found is not None:
            return found
    return INTERNAL


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _rebuild_parameter_error(cls, param, requirement, value, hint, show_value):
    return cls(param, requirement, value, hint, show_value=show_value)


def _rebuild_record_error(cls, reason, source, line, record_id):
    return cls(reason, source=source, line=line, record_id=record_id)
