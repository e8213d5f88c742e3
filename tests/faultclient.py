"""A SolrClient that runs a fault (kill a node, cut a link) right before its ``at``-th update: the cloud fault
tests and the partition tests strike at the same point of a run with it."""

from __future__ import annotations

import threading

from neardup_solr.solr.client import SolrClient


class HookedClient(SolrClient):
    """Runs ``fault`` right before the ``at``-th call of :meth:`add` (the settings document is call 1);
    ``fired`` is set once it has run."""

    def __init__(self, url, fault, at: int, **kw):
        super().__init__(url, **kw)
        self.fault, self.at, self.calls = fault, at, 0
        self.lock = threading.Lock()
        self.fired = threading.Event()

    def add(self, docs, **kw):
        with self.lock:
            self.calls += 1
            due = self.calls == self.at
        if due:
            self.fault()
            self.fired.set()
        return super().add(docs, **kw)
