"""Reading what a whole-collection run needs from Solr in bulk: every signature by cursor (shard by shard on a
SolrCloud collection) and the texts of the documents whose pairs are verified. What is done with them is pure
(:mod:`neardup_solr.pairs.candidates`); the run that ties both together is :mod:`neardup_solr.engine.collection`.
"""

from __future__ import annotations

import logging
import math
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterator, Sequence

import numpy as np

from neardup_solr.errors import SolrUnavailableError
from neardup_solr.pairs._arrays import sorted_distinct
from neardup_solr.pairs.candidates import CollectionStats, shingle_sets
from neardup_solr.solr.client import SolrClient
from neardup_solr.signing.settings import SETTINGS_DOC_ID
from neardup_solr.signing.tokens import decode_signatures
from neardup_solr.solr.queries import documents_of, select_params
from neardup_solr.text import Shingler
from neardup_solr.solr.cluster import cluster_status

log = logging.getLogger(__name__)

FETCH_BATCH = 500
FETCH_WORKERS = 2
# Batches fetched ahead of the one being shingled: keeps both connections busy without piling up texts.
_FETCH_AHEAD = 4


def signature_pages(
    client: SolrClient,
    num_hashes: int,
    *,
    dataset: str | None = None,
    page_size: int = 10_000,
    stats: CollectionStats | None = None,
    local: bool = False,
) -> Iterator[tuple[list[str], np.ndarray]]:
    """Ids and ``(len(ids), num_hashes)`` uint32 signatures of every document (of ``dataset``), one cursor page
    at a time, in id order. Documents whose ``minhash_sig`` is missing or of another length are skipped,
    counted in ``stats.skipped_documents`` and named (the first five) in a warning. ``local``: read only the
    core ``client`` names (``distrib=false``: one shard's replica)."""
    if page_size < 1:
        raise ValueError(f"page_size must be at least 1, got {page_size}")
    stats = stats if stats is not None else CollectionStats()
    # base64 of 4 * num_hashes bytes; anything else was written with other settings or is damaged.
    expected_chars = 4 * math.ceil(4 * num_hashes / 3)
    params = select_params(documents_of(dataset), sort="id asc", fields="id,minhash_sig")
    if local:
        params.append(("distrib", "false"))
    bad: list[str] = []
    for docs in client.cursor_pages(params, page_size):
        stats.requests += 1
        ids, values = [], []
        for doc in docs:
            value = doc.get("minhash_sig")
            if doc["id"] == SETTINGS_DOC_ID:
                continue
            if not isinstance(value, str) or len(value) != expected_chars:
                bad.append(doc["id"])
                continue
            ids.append(doc["id"])
            values.append(value)
        yield ids, (decode_signatures(values, num_hashes) if values
                    else np.empty((0, num_hashes), dtype=np.uint32))
    stats.requests += 1  # the request that found the end
    if bad:
        log.warning(
            "%d document(s) without a usable minhash_sig of %d values were skipped (indexed by another version "
            "or with other settings?), e.g. %s", len(bad), num_hashes, ", ".join(map(repr, bad[:5])),
        )
    stats.skipped_documents += len(bad)


def shard_readers(client: SolrClient) -> list[tuple[str, SolrClient]]:
    """On a SolrCloud collection, ``(shard, client)`` for every active shard, the client on one active replica
    of it (the leader when it is live); ``[]`` on a single core.

    A cursor over the collection is a distributed query: every page asks each shard for its next ids, then
    asks again for their fields, all through one node. Read shard by shard on a replica's own core
    (``distrib=false``), each page is one local request and the shards are read side by side. Shards that are
    not active (the parent of a finished split) are skipped: their documents live in the sub-shards."""
    if client.is_cloud is None:
        client.check()
    if not client.is_cloud:
        return []

    auth = client.session.auth if isinstance(client.session.auth, tuple) else None
    cluster = cluster_status(client.node_url, client.collection, auth=auth)
    live = set(cluster.get("live_nodes", []))
    shards = cluster.get("collections", {}).get(client.collection, {}).get("shards", {})
    readers = []
    for name, body in sorted(shards.items()):
        if body.get("state", "active") != "active":
            continue
        replicas = [r for r in body.get("replicas", {}).values()
                    if r.get("state") == "active" and r.get("node_name") in live and r.get("base_url")]
        if not replicas:
            raise SolrUnavailableError(
                f"shard {name} of collection {client.collection!r} has no active replica on a live node; start "
                "the node that hosts it (neardup-solr solr status lists them), then run the dedup again")
        replicas.sort(key=lambda r: (str(r.get("leader", "")).lower() != "true", r.get("core", "")))
        core_url = f"{replicas[0]['base_url'].rstrip('/')}/{replicas[0]['core']}"
        username, password = auth if auth else (None, None)
        readers.append((name, SolrClient(core_url, username=username, password=password, timeout=client.timeout,
                                         retry=client.retry)))
    return readers


def parallel_pages(
    sources: list[Iterator[tuple[list[str], np.ndarray]]],
) -> Iterator[tuple[list[str], np.ndarray]]:
    """Pages of several page iterators, each drained by its own thread, as they come (at most a few pages
    waiting per source, so a slow consumer does not let them pile up)."""
    import queue
    import threading

    pages: queue.Queue = queue.Queue(maxsize=2 * len(sources))
    done = object()
    stop = threading.Event()

    def drain(source):
        try:
            for page in source:
                if stop.is_set():
                    return
                pages.put(page)
        except BaseException as exc:  # handed to the consumer, which raises it
            pages.put(exc)
        finally:
            pages.put(done)

    threads = [threading.Thread(target=drain, args=(src,), daemon=True, name=f"shard-reader-{i}")
               for i, src in enumerate(sources)]
    for t in threads:
        t.start()
    remaining = len(threads)
    try:
        while remaining:
            item = pages.get()
            if item is done:
                remaining -= 1
            elif isinstance(item, BaseException):
                raise item
            else:
                yield item
    finally:
        stop.set()
        while any(t.is_alive() for t in threads):  # unblock readers waiting on a full queue
            try:
                pages.get_nowait()
            except queue.Empty:
                time.sleep(0.01)


def fetch_signatures(
    client: SolrClient,
    num_hashes: int,
    *,
    dataset: str | None = None,
    page_size: int = 10_000,
    stats: CollectionStats | None = None,
    on_page: Callable[[int], None] | None = None,
) -> tuple[list[str], np.ndarray]:
    """Ids and ``(n, num_hashes)`` uint32 signatures of every document (of ``dataset``), in id order, in memory
    (``4 * num_hashes`` bytes a document). :func:`dedupe_collection` does not use this: it spills the pages to
    a :class:`~neardup_solr.pairs.signature_store.SignatureStore`."""
    ids: list[str] = []
    pages: list[np.ndarray] = []
    for page_ids, page in signature_pages(client, num_hashes, dataset=dataset, page_size=page_size, stats=stats):
        ids.extend(page_ids)
        pages.append(page)
        if on_page:
            on_page(len(page_ids))
    return ids, (np.concatenate(pages) if pages else np.empty((0, num_hashes), dtype=np.uint32))



# Candidate separators for the id list of a {!terms} query, which splits on the separator verbatim (no escaping).
_SEPARATORS = ("\u001f", "\u001e", "\n", "\t", ",")


def fetch_texts(client: SolrClient, doc_ids: Sequence[str]) -> list[dict]:
    """``id`` and ``content`` of the given documents in one request.

    A ``{!terms}`` query over ``/select`` measured 2.3x faster than real-time get (``/get``) for batches of
    500 ids (0.09 s against 0.21 s); ``/get`` remains the fallback for ids containing every separator.
    """
    separator = next((s for s in _SEPARATORS if not any(s in i for i in doc_ids)), None)
    if separator is None:
        return client.get_by_ids(list(doc_ids), "id,content")
    data = client.select([
        ("q", "{!terms f=id separator=$nd.sep v=$nd.ids}"),
        ("nd.sep", separator),
        ("nd.ids", separator.join(doc_ids)),
        ("rows", len(doc_ids)),
        ("fl", "id,content"),
    ])
    return data["response"]["docs"]


def fetch_shingle_sets(
    client: SolrClient,
    shingler: Shingler,
    doc_ids: Sequence[str],
    stats: CollectionStats,
    on_batch: Callable[[int], None] | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct shingle hashes of each document of ``doc_ids`` as ``keyed`` = sorted ``slot << 32 | hash``
    (slot = position in ``doc_ids``), the set sizes, and which documents were found."""
    count = len(doc_ids)
    sizes = np.zeros(count, dtype=np.int64)
    found = np.zeros(count, dtype=bool)
    parts: list[np.ndarray] = []
    batches = [(lo, doc_ids[lo : lo + FETCH_BATCH]) for lo in range(0, count, FETCH_BATCH)]

    def fetch(batch):
        return fetch_texts(client, batch[1])

    with ThreadPoolExecutor(max_workers=FETCH_WORKERS, thread_name_prefix="collection-fetch") as pool:
        pending: deque = deque()
        queue = iter(batches)
        for batch in queue:
            pending.append((batch, pool.submit(fetch, batch)))
            if len(pending) >= _FETCH_AHEAD:
                break
        while pending:
            (lo, batch_ids), future = pending.popleft()
            docs = future.result()
            stats.requests += 1
            nxt = next(queue, None)
            if nxt is not None:
                pending.append((nxt, pool.submit(fetch, nxt)))
            content = {d["id"]: d.get("content") for d in docs}
            slots, texts = [], []
            for i, doc_id in enumerate(batch_ids):
                text = content.get(doc_id)
                if isinstance(text, str):
                    slots.append(lo + i)
                    texts.append(text)
            if texts:
                hashes, offsets = shingle_sets(shingler, texts)
                slot_arr = np.asarray(slots, dtype=np.int64)
                keyed = np.repeat(slot_arr << 32, np.diff(offsets)) | hashes.astype(np.int64)
                keyed = sorted_distinct(keyed)  # sorted, and each hash once per document (see sorted_distinct)
                sizes[slot_arr] = np.bincount((keyed >> 32) - lo, minlength=len(batch_ids))[slot_arr - lo]
                found[slot_arr] = True
                parts.append(keyed)
                stats.fetched_documents += len(texts)
            if on_batch:
                on_batch(len(batch_ids))
    # Batches cover increasing slots, so their sorted parts concatenate into one sorted array.
    keyed = np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)
    return keyed, sizes, found


