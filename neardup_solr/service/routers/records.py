"""``/v1/match``: one field record matched against the collection's field records with the stored model
(:class:`~neardup_solr.engine.records_online.SolrRecordMatcher`), each match with its probability."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from neardup_solr.engine.records import DEFAULT_MATCH_PROBABILITY
from neardup_solr.service.models import MatchRequest

router = APIRouter(tags=["records"])

DEFAULT_LIMIT = 10


@router.post("/v1/match", summary="The indexed field records a record matches, with their match probabilities")
def match_record(request: Request, body: MatchRequest) -> Response:
    matcher = request.app.state.record_matchers.get()
    threshold = DEFAULT_MATCH_PROBABILITY if body.threshold is None else body.threshold
    limit = DEFAULT_LIMIT if body.limit is None else body.limit
    matches = matcher.match(body.record, threshold=threshold, limit=limit)
    return JSONResponse({"query": {"id": body.record.get("id")}, "model": {"revision": matcher.revision},
                         "threshold": threshold, "limit": limit,
                         "results": [m.as_dict(with_fields=body.with_fields) for m in matches]})
