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
from neardup_solr.solr.queries import USER_DOCUMENTS, Filter, filter_params, select_params

log = logging.getLogger(__name__)

# Every write of ours sets md5_hash (the digest of the normalised text signed), also for a text with no words, so
# a document without it has never been seen by us: new, or replaced whole by another client since.
UNSEEN = Filter("-md5_hash:[* TO *]")
SEEN = Filter("md5_hash:[* TO *]")
# A document with a signature: what lookups and reports read (num_shingles is 0 for a text with nothing to sign).
SIGNED = Filter("num_shingles:[1 TO *]")
UNSIGNED = Filter("-num_shingles:[1 TO *]")
# Versions (Solr's _version_) are milliseconds shifted left by 20 bits, from the clock of each shard's leader.
_VERSION_MS_SHIFT = 20


# What a signing pass reads of each document: the text (as "content", whatever field holds it), the version to
# update at, and the digest of the text signed last.
SIGNING_FIELDS = "id,content,_version_,md5_hash"


def version_of(doc: dict) -> int | None:
    """The version a document was read at (None when Solr did not return one)."""
    value = doc.get("_version_")
    return int(value) if isinstance(value, int) else None


def count_matching(client: SolrClient, filters: Sequence[Filter]) -> int:
    """How many of the user's documents (never our own: settings, claims) match ``filters``."""
    return client.count(params=filter_params([USER_DOCUMENTS, *filters]))


def read_pages(client: SolrClient, filters: Sequence[Filter], fields: str, *,
               page_size: int = 500) -> Iterator[list[dict]]:
    """The user's documents matching ``filters`` (never our own), a cursor page at a time in id order; ``fields``
    as fl ("content" is the text, whatever field holds it, and "_version_" the version to update at)."""
    yield from client.cursor_pages(select_params([USER_DOCUMENTS, *filters], fields=fields, sort="id asc"),
                                   page_size)


def highest_version(client: SolrClient) -> int | None:
    """The highest ``_version_`` the collection shows now (None when it is empty): every update of a document
    raises its version, so the documents above it later are those updated since."""
    docs = client.select(select_params(sort="_version_ desc", fields="_version_", rows=1))["response"]["docs"]
    value = docs[0].get("_version_") if docs else None
    return int(value) if isinstance(value, int) else None


def updated_since(version: int, margin_s: float) -> Filter:
    """Documents updated after ``version`` was current, less ``margin_s`` seconds for shard leaders whose clocks
    differ a little."""
    return Filter(f"_version_:{{{version - (int(margin_s * 1000) << _VERSION_MS_SHIFT)} TO *]")


def updated_at_or_before(version: int) -> Filter:
    """Documents whose last update is ``version`` or older."""
    return Filter(f"_version_:[* TO {int(version)}]")


def dated_since(date_field: str, since_utc: str, margin_s: int) -> Filter:
    """Documents whose ``date_field`` (a field name the schema has: the caller checked it) is at most
    ``margin_s`` seconds before ``since_utc`` (an ISO instant of ours, never user text)."""
    return Filter(f"{date_field}:[{since_utc}-{int(margin_s)}SECONDS TO *]")


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
            send_updates(client, [set_update(d["id"], version_of(d), dict.fromkeys(fields)) for d in page])
            sent += len(page)
        client.commit()
        left = count_matching(client, [SEEN])
        cleared += sent - left
        if left == 0:
            break
        log.info("%d document(s) changed while being cleared; clearing them again", left)
    return cleared
