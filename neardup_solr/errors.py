"""Exceptions raised by neardup-solr.

Every message says what went wrong *and* what to do next, in the spirit of requests/pysolr.
"""


class NeardupError(Exception):
    """Base class for all errors raised by this package."""


class InvalidTextError(NeardupError, ValueError):
    """A text cannot be turned into shingles (empty, only punctuation, ...)."""


class InvalidRecordError(NeardupError, ValueError):
    """An input record is malformed (no id, missing column, undecodable bytes...)."""

    def __init__(self, reason, *, source=None, line=None, record_id=None):
        self.reason = reason
        self.source = source
        self.line = line
        self.record_id = record_id
        where = []
        if source is not None:
            where.append(str(source))
        if line is not None:
            where.append(f"line {line}")
        if record_id is not None:
            where.append(f"id {record_id!r}")
        prefix = ":".join(where[:2]) + (f" ({where[2]})" if len(where) > 2 else "")
        super().__init__(f"{prefix}: {reason}" if prefix else reason)


class SolrUnavailableError(NeardupError, ConnectionError):
    """Solr did not answer (not started, wrong URL, or down after all retries)."""


class SolrCoreNotFoundError(SolrUnavailableError):
    """Solr is up, but the core (or collection) in the URL does not exist there (HTTP 404 on its ping)."""


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


class LauncherError(NeardupError, RuntimeError):
    """The local Solr launcher could not build, start or stop Solr."""
