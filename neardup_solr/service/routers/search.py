"""``GET /v1/search``: the collection searched for a user's words; ``fold=true`` (or ``fast``) shows each group of
near duplicates once, its kept document heading the copies that matched (issue 38), at the cost of a plain search;
``fold=exact`` folds with Solr's collapse, whatever it costs (issue 46). The groups are those
``groups --to-solr`` wrote and ``/v1/check`` keeps current (:mod:`neardup_solr.solr.folded_search`).

``q`` is plain user text: normalised like the index's words and sent to edismax as escaped words in the ``q``
parameter, never pasted into query syntax. ``fields`` chooses where to look among the word fields (with boosts,
``content_words^2,content_grams``)."""

from __future__ import annotations

import re
from typing import Any

from fastapi import APIRouter, Query, Request

from neardup_solr.errors import InvalidParameterError
from neardup_solr.solr.folded_search import SEARCH_FIELDS, fold_mode, folded_search
from neardup_solr.validation import check_label

router = APIRouter()

# The fields a user's normalised words can be looked for in (the word tokens of the index).
SEARCHABLE = ("content_words", "content_grams", "content_fwords")
_FIELD = re.compile(r"^([a-z_]+)(\^\d{1,3}(\.\d{1,3})?)?$")


def search_fields(value: str | None) -> tuple[str, ...]:
    """``fields`` as edismax's ``qf``: names from :data:`SEARCHABLE`, each with an optional boost."""
    if value is None:
        return SEARCH_FIELDS
    fields = tuple(part.strip() for part in value.split(",") if part.strip())
    for part in fields:
        match = _FIELD.match(part)
        if match is None or match.group(1) not in SEARCHABLE:
            raise InvalidParameterError("fields", f"comma-separated names from {', '.join(SEARCHABLE)}, each with "
                                                  "an optional ^boost", value)
    if not fields:
        raise InvalidParameterError("fields", "at least one field name", value)
    return fields


@router.get("/v1/search", tags=["lookups"],
            summary="Search for words; fold=true shows each group of near duplicates once, its copies under it")
def search(
    request: Request,
    q: str = Query(..., max_length=10_000, description="the user's words (plain text, not query syntax)"),
    fold: str = Query("false", description="true or fast: each group once, at a plain search's cost; exact: "
                                          "Solr's collapse; false: every match"),
    rows: int = Query(10, ge=0, le=1_000),
    start: int = Query(0, ge=0, le=100_000),
    copies: int = Query(0, ge=0, le=100, description="folded copies listed under each hit (fold=true; none by "
                                                     "default: listing them costs two more requests)"),
    dataset: str | None = None,
    fields: str | None = Query(None, description="where to look: content_words (default), content_grams, ..."),
    exact_count: bool = Query(False, description="count every hit (found) instead of stopping early"),
) -> dict[str, Any]:
    client = request.app.state.client
    settings = request.app.state.searchers.get().settings
    found = folded_search(client, q, fold=fold_mode(fold), rows=rows, start=start, copies=copies,
                          fields=search_fields(fields), dataset=check_label("dataset", dataset),
                          settings=settings, exact_count=exact_count)
    return found.as_dict()
