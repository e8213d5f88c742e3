"""Writing only our fields into documents that are someone else's: atomic updates with optimistic concurrency.

A user's pipeline keeps writing its collection while we sign it. Each update of ours names the ``_version_`` the
document had when its text was read, so Solr applies it only to that very version; a document changed in between
(an edit, a replacement, a delete) is skipped by Solr (``failOnVersionConflicts=false``: the rest of the batch
goes on) and keeps whatever the other writer gave it. It is then read and signed again on the next pass. Nothing
of ours is ever written over a newer version of a user's document.
"""

from __future__ import annotations

import json
import logging
from typing import Iterable, Iterator, Sequence

from neardup_solr.solr.client import SolrClient
from neardup_solr.solr.documents import META_DATASET

log = logging.getLogger(__name__)

# Every write of ours sets md5_hash (the digest of the normalised text signed), also for a text with no words, so
# a document without it has never been seen by us: new, or replaced whole by another client since.
UNSEEN = "-md5_hash:[* TO *]"
SEEN = "md5_hash:[* TO *]"
# A document with a signature: what lookups and reports read (num_shingles is 0 for a text with nothing to sign).
SIGNED = "num_shingles:[1 TO *]"
NOT_META = "-{!term f=dataset v=$nd.meta}"
NOT_META_PARAMS = [("nd.meta", META_DATASET)]


def read_pages(client: SolrClient, filters: Sequence[str], fields: str, *, page_size: int = 500,
               params: Sequence[tuple[str, object]] = ()) -> Iterator[list[dict]]:
    """The documents matching ``filters`` (never our own: settings and claims), a cursor page at a time in id
    order; ``fields`` as fl ("content" is the text, whatever field holds it)."""
    query: list[tuple[str, object]] = [("q", "*:*"), ("fq", NOT_META), *NOT_META_PARAMS, *params,
                                       *[("fq", f) for f in filters], ("sort", "id asc"), ("fl", fields),
                                       ("rows", page_size)]
    cursor = "*"
    while True:
        data = client.select(query + [("cursorMark", cursor)])
        docs = data["response"]["docs"]
        if docs:
            yield docs
        next_cursor = data.get("nextCursorMark", cursor)
        if next_cursor == cursor or not docs:
            return
        cursor = next_cursor


def set_update(doc_id: str, version: int | None, values: dict) -> dict:
    """An atomic update that sets ``values`` (None removes a field) on ``doc_id`` only if it is still at
    ``version``."""
    update: dict = {"id": doc_id, **{name: {"set": value} for name, value in values.items()}}
    if version is not None:
        update["_version_"] = version
    return update


def send_updates(client: SolrClient, updates: list[dict], *, commit_within_ms: int | None = None) -> None:
    """Send atomic updates; a document whose version moved on is skipped by Solr, not failed."""
    if not updates:
        return
    params: list[tuple[str, object]] = [("failOnVersionConflicts", "false"), ("wt", "json")]
    if commit_within_ms:
        params.append(("commitWithin", commit_within_ms))
    client.request("POST", "update", params=params, data=json.dumps(updates, ensure_ascii=False).encode("utf-8"),
                   headers={"Content-Type": "application/json"})


def clear_our_fields(client: SolrClient, fields: Iterable[str], *, batch_size: int = 500,
                     max_passes: int = 5) -> int:
    """Remove ``fields`` from every document that has them (atomic updates at each document's version: an update
    the user makes meanwhile wins, and the document is cleared on the next pass). Returns how many were
    cleared."""
    fields = list(fields)
    cleared = 0
    for _ in range(max_passes):
        sent = 0
        for page in read_pages(client, [SEEN], "id,_version_", page_size=batch_size):
            send_updates(client, [set_update(d["id"], d.get("_version_"), dict.fromkeys(fields)) for d in page])
            sent += len(page)
        client.commit()
        left = client.count("*:*", [SEEN])
        cleared += sent - left
        if left == 0:
            break
        log.info("%d document(s) changed while being cleared; clearing them again", left)
    return cleared
