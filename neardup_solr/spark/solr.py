"""``--to-solr``: load a Spark-signed corpus into the Solr core or collection, as the documents the indexer
builds, so that it serves lookups without running ``index`` over the same texts.

Each executor builds its records' documents with the indexer's builder
(:func:`~neardup_solr.spark.signing.document_builder`, :meth:`DocumentBuilder.build`: every field, the
collection's token fields and the band keys of the collection's own LSH settings) and checks that each
document's ``minhash_sig`` is the signature the Spark job computed (a difference would be a bug, and stops
the load), then sends them in batches of 500. The driver stores the settings first
(:func:`~neardup_solr.solr.settings_store.ensure_index_settings`: a collection indexed with other settings is refused),
commits at the end and checks, as ``index`` does, that every id sent is in the index.

An IDF run (``--similarity idf``) loads the same documents: its weighted signatures are not stored. Solr-side
IDF runs sign at run time with the collection's frequencies of that moment (a stored weighted signature would
go stale as every added document moves the IDF), and IDF lookups weigh ``content_words`` at query time; so the
documents' words are what IDF needs from the index, and the weighted signatures stay in the job (with the
snapshot written beside the pairs). The check against the job's signature applies to plain runs only.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Iterator

import numpy as np

from neardup_solr.errors import SignatureDisagreementError
from neardup_solr.signing.settings import IndexSettings
from neardup_solr.signing.tokens import encode_signature
from neardup_solr.solr.settings_store import ensure_index_settings
from neardup_solr.solr.client import SolrClient
from neardup_solr.solr.verify import VerifyResult, verify_ids
from neardup_solr.spark.signing import document_builder

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from neardup_solr.engine.group_writeback import WritebackSummary

log = logging.getLogger(__name__)

BATCH = 500


@dataclass
class SolrLoad:
    """``sent`` documents, ``refused`` ``(id, reason)`` examples, and the end-of-run check of the index."""

    sent: int
    refused: list[tuple[str, str]]
    refused_count: int
    verify: VerifyResult


def write_to_solr(records: "DataFrame", signed: "DataFrame", client: SolrClient, settings: IndexSettings,
                  dataset: str | None = None, *, weighted: bool = False) -> SolrLoad:
    """Send the documents of ``records`` (``id, text``) that ``signed`` holds (the job's signed records) to the
    collection behind ``client``; returns what was sent and the check that the index holds it. ``weighted``:
    ``signed`` holds IDF-weighted signatures, which the documents do not carry (module docstring)."""
    stored = ensure_index_settings(client, settings)
    url, auth = client.url, client.session.auth if isinstance(client.session.auth, tuple) else None
    timeout = client.timeout
    rows = records.join(signed.select("id") if weighted else signed.select("id", "signature"), "id")

    def load(partition: Iterable) -> Iterator[tuple[int, int, list[tuple[str, str]]]]:
        builder = document_builder(stored)
        username, password = auth if auth else (None, None)
        counts = [0, 0]  # sent, refused
        examples: list[tuple[str, str]] = []

        def send(sink: SolrClient, batch: list) -> None:
            built = builder.build([(r["id"], r["text"]) for r in batch], dataset=dataset)
            expected = {} if weighted else {
                r["id"]: encode_signature(np.asarray(r["signature"], dtype="<i4").view("<u4")) for r in batch}
            for doc in built.documents:
                if not weighted and doc["minhash_sig"] != expected[doc["id"]]:
                    raise SignatureDisagreementError(
                        f"record {doc['id']!r}: the indexer's builder signs it differently from the Spark job; "
                        "nothing more is sent (please report this)")
            for index, reason in built.rejected:
                counts[1] += 1
                if len(examples) < 5:
                    examples.append((batch[index]["id"], reason))
            sink.add(built.documents)
            counts[0] += len(built.documents)

        with SolrClient(url, username=username, password=password, timeout=timeout) as sink:
            batch: list = []
            for row in partition:
                batch.append(row)
                if len(batch) >= BATCH:
                    send(sink, batch)
                    batch = []
            if batch:
                send(sink, batch)
        yield counts[0], counts[1], examples

    results = rows.rdd.mapPartitions(load).collect()
    client.commit()
    sent = sum(r[0] for r in results)
    refused_count = sum(r[1] for r in results)
    examples = [e for r in results for e in r[2]][:5]
    ids = (row["id"] for row in rows.select("id").toLocalIterator())
    check = verify_ids(client, ((doc_id, line) for line, doc_id in enumerate(ids, start=1)))
    log.info("sent %d documents to %s (%d refused); %s", sent, url, refused_count, check.format())
    return SolrLoad(sent, examples, refused_count, check)


def write_pair_groups(client: SolrClient, pairs: "DataFrame", *, representative: str = "earliest",
                      dataset: str | None = None) -> "WritebackSummary":
    """Each document's near-duplicate group and kept flag into the collection (``groups --to-solr``'s fields, for
    folded searches: docs/folding.md), from a run's pairs, streamed to the driver a partition at a time."""
    from neardup_solr.engine.group_writeback import write_groups

    return write_groups(client, ((r["id"], r["neighbor_id"]) for r in pairs.toLocalIterator()),
                        representative=representative, dataset=dataset)
