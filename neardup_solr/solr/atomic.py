"""Removing our fields from documents that are someone else's (an earlier install kept them inside the user's
documents): atomic updates with optimistic concurrency, through the collection port
(:meth:`~neardup_solr.solr.port.CollectionPrimitives.set_fields`).

A user's pipeline keeps writing its collection while we clear it. Each update of ours names the ``_version_`` the
document had when its text was read, so Solr applies it only to that very version; a document changed in between
(an edit, a replacement, a delete) is skipped by Solr (``failOnVersionConflicts=false``: the rest of the batch
goes on) and keeps whatever the other writer gave it. It is then read and cleared again on the next pass. Nothing
of ours is ever written over a newer version of a user's document.
"""

from __future__ import annotations

import logging
from typing import Iterable

from neardup_solr.solr.client import SolrClient
from neardup_solr.solr.collection import Selection, SolrCollection, field_update, version_of

log = logging.getLogger(__name__)


def clear_our_fields(client: SolrClient, fields: Iterable[str], *, batch_size: int = 500,
                     max_passes: int = 5) -> int:
    """Remove ``fields`` from every document that has them (atomic updates at each document's version: an update
    the user makes meanwhile wins, and the document is cleared on the next pass). Returns how many were
    cleared."""
    coll = SolrCollection(client)
    seen = Selection(seen=True)
    fields = list(fields)
    cleared = 0
    for _ in range(max_passes):
        sent = 0
        for page in coll.pages(seen, "id,_version_", batch_size):
            coll.set_fields([field_update(d["id"], version_of(d), dict.fromkeys(fields)) for d in page])
            sent += len(page)
        coll.commit()
        left = coll.count(seen)
        cleared += sent - left
        if left == 0:
            break
        log.info("%d document(s) changed while being cleared; clearing them again", left)
    return cleared
