"""Signing the documents already in a collection: ``neardup-solr backfill``, and the passes ``sync`` repeats.

The text is read with a cursor (from the user's field in a collection ``install`` prepared, from ``content`` in
ours), signed by the one signer every path uses (:class:`~neardup_solr.solr.documents.DocumentBuilder`), and only
our fields are written back, by atomic updates at the version read (:mod:`neardup_solr.solr.atomic`): an update
the user's pipeline makes in between is never overwritten, the document is read and signed again on the next
pass instead. A pass reads only documents without our digest, so a run that stops resumes where it was by
running again. At the end the collection is checked as ``index`` checks its own: every document is signed (or
was refused with a reason), else :class:`~neardup_solr.errors.IndexIncomplete`.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable, Sequence

from neardup_solr.engine.backfill_summary import BackfillSummary, Verification
from neardup_solr.engine.companion_sync import backfill_companion
from neardup_solr.engine.group_upkeep import GroupUpkeep
from neardup_solr.io.progress import progress_bar
from neardup_solr.errors import (
    ForeignCollectionError,
    IndexIncomplete,
    InstallRefused,
    SolrRequestError,
    SolrServerError,
)
from neardup_solr.solr.collection import (
    SIGNING_FIELDS,
    Selection,
    SolrClient,
    collection_of,
    field_update,
    version_of,
)
from neardup_solr.signing.builder import DocumentBuilder
from neardup_solr.signing.settings import IndexSettings
from neardup_solr.signing.tokens import md5_hex
from neardup_solr.solr.settings_store import read_index_settings
from neardup_solr.solr.companion_link import has_our_schema, read_link, resolve
from neardup_solr.solr.schema_install import legacy_install_fields, require_atomic_updates
from neardup_solr.validation import check_int

log = logging.getLogger(__name__)

# Fields of a built document that are not ours to write into a user's document: the id, the text (theirs), and
# what only records read from a file carry.
_NOT_WRITTEN = frozenset({"id", "content", "dataset", "fields_json", "content_fwords"})
UNSEEN = Selection(seen=False)
# Update requests in flight at once (index's default workers).
_WRITERS = 2


def settings_of(client: SolrClient) -> IndexSettings:
    """The collection's stored settings (this also points the client at the user's text field); one line naming
    ``install`` when there are none."""
    settings = read_index_settings(client)
    if settings is None:
        raise ForeignCollectionError(
            f"{client.url} has near-duplicate fields but no settings document: run 'neardup-solr install' (a "
            "collection of ours gets its settings from its first 'neardup-solr index')")
    return settings


def written_fields(built: dict) -> dict:
    """Our fields of a built document, as an atomic update sets them."""
    return {name: value for name, value in built.items() if name not in _NOT_WRITTEN}


def sign_page(builder: DocumentBuilder, docs: Sequence[dict], summary: BackfillSummary,
              upkeep: GroupUpkeep | None = None) -> list[dict]:
    """The atomic updates that sign ``docs`` (id, content, _version_ as read). A document that cannot be signed
    is marked as seen (its digest, no signature), so later passes do not read it again until its text changes.
    ``upkeep`` notes what is signed, to be grouped after the pass's commit."""
    items = [(d["id"], d.get("content") if isinstance(d.get("content"), str) else "") for d in docs]
    built = builder.build(items)
    version = {d["id"]: version_of(d) for d in docs}
    updates = [field_update(doc["id"], version[doc["id"]], written_fields(doc)) for doc in built.documents]
    normalize = builder.shingler.normalizer.normalize
    for index, reason in built.rejected:
        doc_id, text = items[index]
        summary.refused += 1
        if len(summary.refusals) < 20:
            summary.refusals.append((str(doc_id), reason))
        log.warning("document %r not signed: %s", doc_id, reason)
        marker = {"md5_hash": md5_hex(normalize(text or "")), "num_words": 0, "num_shingles": 0}
        updates.append(field_update(str(doc_id), version[doc_id], marker))
    summary.signed += len(built.documents)
    if upkeep is not None:
        texts = dict(items)
        upkeep.signed((str(doc["id"]), texts[doc["id"]]) for doc in built.documents)
    return updates


def signing_pass(client: SolrClient, builder: DocumentBuilder, selection: Selection, summary: BackfillSummary, *,
                 batch_size: int = 500, on_page: Callable[[int], None] | None = None,
                 select: Callable[[list[dict]], list[dict]] | None = None, upkeep: GroupUpkeep | None = None) -> int:
    """One pass: read what ``selection`` holds, sign it, write our fields; returns how many updates were sent.
    ``select`` keeps only some of a page's documents (sync: those whose text changed); ``upkeep`` notes what is
    signed, for its groups."""
    sent = 0
    in_flight: deque[Future] = deque()
    # Solr applies one batch while the next page is read and signed: the two overlap, as index's workers do.
    with ThreadPoolExecutor(max_workers=_WRITERS) as writers:
        for page in collection_of(client).pages(selection, SIGNING_FIELDS, batch_size):
            chosen = select(page) if select is not None else page
            updates = sign_page(builder, chosen, summary, upkeep) if chosen else []
            if updates:
                in_flight.append(writers.submit(send_each, client, updates))
                sent += len(updates)
            while len(in_flight) >= _WRITERS:
                _count_refused(in_flight.popleft().result(), summary)
            if on_page is not None:
                on_page(len(page))
        while in_flight:
            _count_refused(in_flight.popleft().result(), summary)
    if sent:  # an idle sync pass sends nothing and opens no searcher
        collection_of(client).commit()
    summary.passes += 1
    return sent


def send_each(client: SolrClient, updates: list[dict]) -> list[tuple[str, str]]:
    """Send a batch of updates; when Solr refuses the batch (a document it cannot re-index: HTTP 400, or the 500
    some such documents give), halve it until the documents it refuses are found, and send the rest. Returns the
    refused ones: (id, Solr's reason). One bad document never sinks a batch; a batch whose every document fails
    is Solr's failure, not theirs, and raises."""
    try:
        collection_of(client).set_fields(updates)
        return []
    except (SolrRequestError, SolrServerError) as exc:
        first = exc
    refused = _refused_within(client, updates, first)
    if len(updates) > 1 and len(refused) == len(updates):
        raise first
    for doc_id, reason in refused:
        log.warning("Solr refused the update of document %r: %s", doc_id, reason)
    return refused


def _refused_within(client: SolrClient, updates: list[dict], error: Exception) -> list[tuple[str, str]]:
    if len(updates) == 1:
        return [(str(updates[0]["id"]), str(error))]
    refused = []
    for half in (updates[:len(updates) // 2], updates[len(updates) // 2:]):
        try:
            collection_of(client).set_fields(half)
        except (SolrRequestError, SolrServerError) as exc:
            refused += _refused_within(client, half, exc)
    return refused


def _count_refused(refused: list[tuple[str, str]], summary: BackfillSummary) -> None:
    for doc_id, reason in refused:
        summary.signed = max(0, summary.signed - 1)  # counted when it was signed, in this pass
        summary.solr_refused[doc_id] = reason


def count_unseen(client: SolrClient) -> int:
    """Documents without our fields (never signed, or replaced whole since)."""
    return collection_of(client).count(UNSEEN)


def resolve_own_collection(client: SolrClient) -> SolrClient | None:
    """The companion to fill when ``client`` is on a user's collection that ``install`` prepared (or on the
    companion itself); None on a collection of ours. A collection holding an earlier install's fields inside its
    documents is refused: filling those needs atomic updates, which rebuild the user's documents."""
    target = resolve(client)
    if read_link(target) is not None if has_our_schema(target) else False:
        return target
    if legacy_install_fields(client):
        raise InstallRefused(
            f"{client.url} holds near-duplicate fields of an earlier install inside your documents, which only "
            "atomic updates of your documents could keep current: move to a companion with 'neardup-solr "
            "uninstall', then 'neardup-solr install' and 'neardup-solr backfill'")
    return None


def backfill(client: SolrClient, *, batch_size: int = 500, max_passes: int = 10, progress: bool = False,
             verify: bool = True) -> BackfillSummary:
    """Sign every document of the collection that has no signature yet (see the module docstring). Raises
    :class:`~neardup_solr.errors.InstallRefused` when atomic updates would lose the user's data (what is missing
    is named), :class:`~neardup_solr.errors.IndexIncomplete` when documents are still unsigned after
    ``max_passes`` (each pass signs what other writers changed during the one before)."""
    batch_size = check_int("batch_size", batch_size, minimum=1, maximum=100_000)
    max_passes = check_int("max_passes", max_passes, minimum=1, maximum=1000)
    target = resolve_own_collection(client)
    if target is not None:
        return backfill_companion(target, batch_size=batch_size, progress=progress, verify=verify)
    settings = settings_of(client)
    require_atomic_updates(client)
    builder = DocumentBuilder(settings)
    summary = BackfillSummary()
    upkeep = GroupUpkeep(client, settings)
    started = time.monotonic()
    total = count_unseen(client)
    bar = progress_bar(progress, desc=f"signing {client.url.rsplit('/', 1)[-1]}", total=total)
    try:
        for number in range(max_passes):
            before = summary.signed + summary.refused
            refused_before = set(summary.solr_refused)
            signing_pass(client, builder, UNSEEN, summary, batch_size=batch_size, on_page=bar.update,
                         upkeep=upkeep)
            summary.grouped += upkeep.group_signed(refused=summary.solr_refused)
            left = count_unseen(client)
            if left == 0 or (number and left <= len(summary.solr_refused) and set(summary.solr_refused) == refused_before):
                break  # signed, or only what Solr refuses again is left
            # What this pass wrote but Solr skipped (a newer version), and what was added meanwhile: the next
            # pass reads them again.
            summary.conflicts += max(0, min(left, summary.signed + summary.refused - before))
            log.info("pass %d left %d document(s) unsigned (changed or added meanwhile); signing them again",
                     number + 1, left)
            if bar is not None:
                bar.total = (bar.total or 0) + left
    finally:
        bar.close()
    summary.seconds = round(time.monotonic() - started, 3)
    if verify:
        left = count_unseen(client)
        examples = [d["id"] for d in collection_of(client).first_page(UNSEEN, "id", 5)] if left else []
        summary.verification = Verification(left, examples, list(summary.solr_refused.items()))
        if left:
            raise IndexIncomplete(summary)
    log.info("backfill of %s: %s", client.url, summary.format())
    return summary


def signed_count(client: SolrClient) -> int:
    """Documents with our digest (signed, or seen with nothing to sign)."""
    return collection_of(client).count(Selection(seen=True))
