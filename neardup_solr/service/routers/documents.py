"""``/v1/documents``: index records (each reported indexed, rejected with the reason, or replaced), read one,
delete by id or by data set."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body, Request

from neardup_solr.engine.online import delete_dataset, delete_documents, is_reserved_id
from neardup_solr.errors import DocumentNotFoundError, InvalidParameterError
from neardup_solr.service.models import MAX_RECORDS, BulkDelete, DocumentIn
from neardup_solr.solr.client import SolrClient
from neardup_solr.signing.settings import META_DATASET
from neardup_solr.solr.ttl import check_ttl
from neardup_solr.validation import check_id, check_label
from neardup_solr.solr.indexer import Indexer

router = APIRouter(tags=["documents"])


def user_id(doc_id: Any, name: str = "id") -> str:
    """``doc_id`` of a request, checked; the service's own (reserved) ids are no document's."""
    checked = check_id(doc_id, name)
    if is_reserved_id(checked):
        raise DocumentNotFoundError(f"no document with id {checked!r}")
    return checked


@router.post("/v1/documents", summary="Index records; each is reported indexed, rejected (with the reason) or replaced")
def add_documents(request: Request, records: list[DocumentIn] = Body(..., max_length=MAX_RECORDS)) -> dict[str, Any]:
    try:
        return _index_records(request.app.state.client, records)
    finally:
        request.app.state.searchers.invalidate()  # the first records of an empty collection store its settings


@router.post("/v1/documents/delete", summary="Delete by ids, or every document of a data set")
def bulk_delete(request: Request, body: BulkDelete) -> dict[str, Any]:
    if (body.ids is None) == (body.dataset is None):
        raise InvalidParameterError("ids", "given, or dataset given, but not both and not neither", None,
                                    show_value=False)
    client = request.app.state.client
    request.app.state.searchers.invalidate()
    if body.ids is None:
        count = delete_dataset(client, body.dataset)
        return {"dataset": body.dataset, "deleted": count}
    result = delete_documents(client, [str(i) for i in body.ids])
    return {"deleted": len(result.deleted), "deleted_ids": result.deleted, "missing": result.missing}


@router.get("/v1/documents/{doc_id:path}", summary="One stored document")
def get_document(request: Request, doc_id: str) -> dict[str, Any]:
    doc = request.app.state.searchers.get().get_by_id(user_id(doc_id))
    return {"id": doc.id, "text": doc.content, "dataset": doc.dataset, "num_words": doc.num_words,
            "md5_hash": doc.md5_hash}


@router.delete("/v1/documents/{doc_id:path}", summary="Delete one document")
def delete_document(request: Request, doc_id: str) -> dict[str, Any]:
    client = request.app.state.client
    result = delete_documents(client, [user_id(doc_id)])
    if not result.deleted:
        raise DocumentNotFoundError(f"no document with id {doc_id!r} in {client.url}")
    return {"deleted": 1, "deleted_ids": result.deleted}


def _index_records(client: SolrClient, records: list[DocumentIn]) -> dict[str, Any]:
    """Index a request's records: one status per record, in the request's order. An id given twice keeps its
    last record (as files do); the earlier ones are reported ``replaced``."""

    results: list[dict[str, Any]] = [{"index": i, "id": r.id} for i, r in enumerate(records)]
    last = {}
    for i, r in enumerate(records):
        last[str(r.id)] = i
    groups: dict[tuple[str | None, str | None], list[int]] = {}
    for i, r in enumerate(records):
        if last[str(r.id)] != i:
            results[i].update(status="replaced", reason="a later record of this request has the same id (the last "
                                                        "one is kept)")
            continue
        try:
            if r.dataset is not None:
                check_label("dataset", r.dataset, reserved=(META_DATASET,))
            ttl = check_ttl(r.ttl)
        except InvalidParameterError as exc:
            results[i].update(status="rejected", reason=str(exc))
            continue
        if is_reserved_id(str(r.id)):
            results[i].update(status="rejected", reason="ids starting with '__neardup_' are reserved for neardup-solr")
            continue
        groups.setdefault((r.dataset, ttl), []).append(i)
    for (dataset, ttl), positions in groups.items():
        indexer = Indexer(client, dataset=dataset, ttl=ttl)
        summary = indexer.index_records([(records[i].id, records[i].text) for i in positions])
        refused = {r.line: r.reason for r in summary.rejections}
        for line, i in enumerate(positions, start=1):
            if line in refused:
                results[i].update(status="rejected", reason=refused[line])
            else:
                results[i]["status"] = "indexed"
    counts = {s: sum(1 for r in results if r["status"] == s) for s in ("indexed", "rejected", "replaced")}
    return {**counts, "results": results}
