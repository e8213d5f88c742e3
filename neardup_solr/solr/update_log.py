"""Whether a single Solr core is still replaying its update log after a restart, and the client's guard that waits
for the replay to end before a request is sent.

Why it is needed: a standalone Solr that was killed (SIGKILL, power loss, OOM) keeps what it acknowledged in its
update log, and replays that log when it starts again, **in the background, while the core already answers**.
Until the replay ends, searches and the version checks of create-only writes do not see the documents of the
log: a lookup finds no near duplicate of a text that was acknowledged a second before the crash, and the
create-only claim of an identical text is accepted a second time. The soak benchmark (benchmarks/soak.py) caught
exactly that: 106 near-duplicate pairs admitted twice by strict ``check_and_add`` during an 18.8 s replay.

A SolrCloud replica does not have the problem: it replays its log before it registers itself as active (Solr's
``ZkController.register`` waits on the replay), so queries and updates are not routed to it meanwhile. The guard
therefore applies to single cores only; it finds nothing to wait for on a cloud node, whose cores are named
``<collection>_shard<n>_replica_<m>``.

The state is Solr's metric ``TLOG.state`` of the core (``solr.core.<core>:TLOG.state``): 0 replaying, 1 buffering,
2 applying buffered updates, 3 active. That metric alone is not enough: it exists from the moment the core's update
handler is built, with its initial value 3, while the rest of the core is still being loaded, and only once the core
is built does Solr start the replay (``CoreContainer.createFromDescriptor`` calls ``recoverFromLog``, then
registers the core). A "3" read in that gap, followed by a request that arrived just after the core was registered,
let a whole burst of checks through during a replay (the soak benchmark, 2026-12-02: four pairs admitted twice).
So the core admin API is asked first: while it says the core is loading (``isLoading``, cleared only after the
replay has started), the state is :data:`LOADING`; once it no longer does, the replay, if any, has started and
the metric tells whether it has ended.

Two small requests, asked only when a restart could have happened since this client last heard from Solr: after
a failed attempt (connection refused or reset, timeout, a 5xx), at a client's first request, and after a silence
of :data:`IDLE_SECONDS` (no Solr is killed, started and loaded again in less). A busy client thus asks nothing
extra.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable

log = logging.getLogger(__name__)

__all__ = ["ACTIVE", "LOADING", "NO_METRICS", "IDLE_SECONDS", "ReplayGuard", "metrics_key", "state_of",
           "core_is_loading", "describe_state"]

ACTIVE = 3
LOADING = -1  # not one of Solr's update-log states: the core admin API says the core is still being loaded
# What a node's ask answers when it refuses its metrics (401/403/404, or metrics off): nothing to ask again.
NO_METRICS = "no metrics"
_STATE_NAMES = {LOADING: "still loading (its update log is replayed next)", 0: "replaying its update log",
                1: "buffering updates", 2: "applying buffered updates", 3: "active"}
# A Solr process cannot be killed, started and have its core loaded again in less: a JVM alone takes longer to
# start. A client that heard from Solr less than this ago has been talking to the same process since.
IDLE_SECONDS = 1.0


def metrics_key(core: str) -> str:
    """The metrics API key of a core's update-log state."""
    return f"solr.core.{core}:TLOG.state"


def state_of(answer: Any, core: str) -> int | None:
    """The core's update-log state in a metrics API answer (``key=`` or ``group=core&prefix=TLOG.state`` form);
    None when the answer does not say (no such core on this node, no update log, metrics off)."""
    metrics = answer.get("metrics") if isinstance(answer, dict) else None
    if not isinstance(metrics, dict):
        return None
    state = metrics.get(metrics_key(core))
    if state is None:
        body = metrics.get(f"solr.core.{core}")
        state = body.get("TLOG.state") if isinstance(body, dict) else None
    return state if isinstance(state, int) and not isinstance(state, bool) else None


def core_is_loading(answer: Any, core: str) -> bool:
    """Whether a core admin ``STATUS`` answer says ``core`` is still being loaded (``isLoading``)."""
    status = answer.get("status") if isinstance(answer, dict) else None
    entry = status.get(core) if isinstance(status, dict) else None
    return isinstance(entry, dict) and str(entry.get("isLoading", "")).lower() == "true"


def describe_state(state: int) -> str:
    return _STATE_NAMES.get(state, f"state {state}")


class ReplayGuard:
    """Per client: when to ask whether the core is replaying, and what it said.

    ``ask(node)`` returns the core's state on ``node``: :data:`LOADING` or the update-log state (an int), None when
    the node cannot tell (no such core on it, a 5xx while Solr starts), or :data:`NO_METRICS` when it never will
    (the metrics API refused: 401/403/404, or metrics are off). It raises OSError (requests' connection errors) when
    the node does not answer: that fails the attempt it was asked for. It is the client's, so the requests go
    through the client's connection pool and credentials. ``is_cloud()`` says whether the client knows it talks
    to a SolrCloud."""

    def __init__(self, core: str, ask: Callable[[str], Any], is_cloud: Callable[[], bool]):
        self.core = core
        self._ask = ask
        self._is_cloud = is_cloud
        self._lock = threading.Lock()
        self._last_answer: float | None = None  # time.monotonic() of Solr's last answer to this client
        self._in_doubt = True  # a failed attempt since the last confirmed active state
        self._unavailable = False  # the node does not give its metrics: nothing to ask again

    def answered(self) -> None:
        """Solr answered a request (any answer that is not a failure worth retrying)."""
        self._last_answer = time.monotonic()

    def failed(self) -> None:
        """An attempt failed in a way a restart explains (no connection, a timeout, a 5xx)."""
        self._in_doubt = True

    def due(self) -> bool:
        if self._unavailable or self._is_cloud():  # cloud replicas replay before they serve
            return False
        if self._in_doubt:
            return True
        last = self._last_answer
        return last is None or time.monotonic() - last > IDLE_SECONDS

    def replaying(self, node: str) -> str | None:
        """When due, ask ``node`` for the core's update-log state: the reason to wait ("update log replaying after
        a restart") while it is not active, None when the request may go (active, or nothing to tell)."""
        if not self.due():
            return None
        with self._lock:
            if not self.due():  # another thread asked meanwhile
                return None
            try:
                state = self._ask(node)
            except OSError:
                raise  # no connection (requests' errors are OSErrors): the attempt fails, as its request would
            except Exception as exc:  # noqa: BLE001 - an answer we cannot read: let the request go and tell
                log.debug("could not read the update-log state of %s from %s: %s", self.core, node, exc)
                return None
            if state == NO_METRICS:
                self._unavailable = True
                log.debug("%s gives no metrics: a replay of the update log after a restart cannot be waited for",
                          node)
                return None
            # None: no such core on this node (a SolrCloud's collection, before the client knows it is one; Solr
            # marks its own cores as loading before it serves any request, so a restarted core is never absent).
            if state is not None and state != ACTIVE:
                self._in_doubt = True
                return (f"core {self.core!r} is {describe_state(state)} after a restart (what it acknowledged "
                        "before is not all searchable yet)")
            self._in_doubt = False
            self._last_answer = time.monotonic()
            return None
