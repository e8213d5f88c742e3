"""What every backend is: something that starts Solr (or finds it running), stops it, reports on it, and hands
out the URL of the core or collection that :class:`~neardup_solr.solr.client.SolrClient` talks to.

:class:`Backend` states that shape as a :class:`typing.Protocol`; :class:`~.local.LocalSolr`,
:class:`~.docker.DockerSolr` and :class:`~.cloud.LocalSolrCloud` implement it (``tests/unit/solr/test_backends.py``
checks each), so code above this package can take "a backend" without knowing which one it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable


@dataclass
class StartResult:
    """What :meth:`Backend.start` did: the URL to use, whether Solr was already running, and how long it took."""

    url: str
    already_running: bool
    seconds: float
    # Seconds start() waited, after ping answered, for Solr to finish replaying its update log (0: no replay).
    replay_wait: float = 0.0


@runtime_checkable
class Backend(Protocol):
    """A way to run Solr with the neardup configset."""

    @property
    def core_url(self) -> str:
        """The URL of the core or collection (``http://host:port/solr/neardup``)."""
        ...

    def start(self, timeout: float = ...) -> StartResult:
        """Start Solr, or find it running; return once it answers and accepts updates."""
        ...

    def stop(self) -> bool:
        """Stop Solr; ``True`` when something was running."""
        ...

    def status(self) -> dict[str, Any]:
        """A JSON-able report; at least ``running`` (bool) and ``core_url`` (``None`` when not running)."""
        ...
