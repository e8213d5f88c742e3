"""``/v1/near-dups`` and ``/v1/documents/{id}/near-dups`` (the near duplicates of a text or a stored document,
best first) and ``/v1/check`` (online dedup: add the text only when it has none; or a field record, added only when
the stored record model matches it to nothing)."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from neardup_solr.engine.online import Match, check_and_add
from neardup_solr.errors import InvalidParameterError
from neardup_solr.service import lookups
from neardup_solr.service.models import CheckRequest, TextLookup
from neardup_solr.service.routers.documents import user_id

router = APIRouter(tags=["lookups"])


def _match_dict(m: Match, with_text: bool) -> dict[str, Any]:
    return m.as_dict(with_content=with_text)


@router.get("/v1/documents/{doc_id:path}/near-dups", summary="Near duplicates of a stored document, best first")
def near_dups_of_id(
    request: Request,
    doc_id: str,
    mode: Literal["shingles", "minhash", "lsh"] | None = None,
    max_edit_distance: int | None = None,
    min_jaccard: float | None = None,
    rows: int | None = None,
    first_word_filter: bool | None = None,
    num_hashes: int | None = None,
    threshold: float | None = None,
    similarity: Literal["jaccard", "idf", "cosine"] | None = None,
    method: Literal["exact", "knn", "hybrid"] | None = None,
    min_share: float | None = None,
    with_text: bool = False,
) -> Response:
    lookup = lookups.resolve(dict(mode=mode, max_edit_distance=max_edit_distance, min_jaccard=min_jaccard,
                                  rows=rows, first_word_filter=first_word_filter, num_hashes=num_hashes,
                                  threshold=threshold, similarity=similarity, method=method, min_share=min_share))
    searcher = request.app.state.searchers.get()
    source = searcher.get_by_id(user_id(doc_id))
    query = searcher.prepare(source.content, source.id)
    matches = lookups.run(searcher, query, lookup)
    return JSONResponse({"query": {"id": source.id}, "options": lookups.options_in_force(lookup),
                         "results": [_match_dict(m, with_text) for m in matches]})


@router.post("/v1/near-dups", summary="Near duplicates of a new text, best first")
def near_dups_of_text(request: Request, body: TextLookup) -> Response:
    lookup = lookups.resolve(body.model_dump(exclude={"text", "with_text"}))
    searcher = request.app.state.searchers.get()
    query = searcher.prepare(body.text)
    matches = lookups.run(searcher, query, lookup)
    # A JSONResponse is sent as it is: no second hop to the thread pool to validate and serialise a dict.
    return JSONResponse({"query": {"text": body.text}, "options": lookups.options_in_force(lookup),
                         "results": [_match_dict(m, body.with_text) for m in matches]})


@router.post("/v1/check",
             summary="Online dedup: the near duplicates >= threshold; the text is added only when there are none")
def check(request: Request, body: CheckRequest) -> Response:
    state = request.app.state
    if (body.text is None) == (body.record is None):
        raise InvalidParameterError("text", "given, or record given instead (exactly one of the two)", None,
                                    show_value=False)
    if body.record is not None:
        for name, value in (("dataset", body.dataset), ("ttl", body.ttl), ("strict", body.strict)):
            if value is not None:
                raise InvalidParameterError(name, "left out with record (it applies to texts only)", value)
        if "id" in body.record and str(body.record["id"]) != str(body.id):
            raise InvalidParameterError("record.id", f"left out or the request's id ({body.id!r})",
                                        body.record["id"])
        checked = state.record_matchers.get().check_and_add({**body.record, "id": body.id}, body.threshold,
                                                             add=body.add)
        return JSONResponse({"id": checked.id, "added": checked.added, "status": checked.status,
                             "threshold": checked.threshold,
                             "results": [m.as_dict(with_fields=body.with_text) for m in checked.matches]})
    searcher = state.searchers.get_stored()
    strict = state.config.check_strict if body.strict is None else body.strict
    result = check_and_add(state.client, body.id, body.text, body.threshold, add=body.add, dataset=body.dataset,
                           ttl=body.ttl, searcher=searcher, commit_within_ms=state.config.check_commit_ms,
                           strict=strict)
    if result.added and searcher is None:
        state.searchers.invalidate()  # this check stored the collection's first settings
    return JSONResponse({"id": result.id, "added": result.added, "status": result.status,
                         "threshold": result.threshold,
                         "results": [_match_dict(m, body.with_text) for m in result.matches]})
