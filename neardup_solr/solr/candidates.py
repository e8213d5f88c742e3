"""The candidate searches of the exact engines, beside :class:`~neardup_solr.solr.searcher.Searcher`'s band lookups:
documents sharing an LSH band with a record (the LSH join), documents whose weighted token overlap reaches a bound
(the threshold engine), the records that overlap most with a record (online record matching), and documents close
in meaning (their vectors, by the HNSW graph). Each builds its
query here, from tokens and numbers only, and returns documents; the engines verify them exactly."""

from __future__ import annotations

from typing import Iterator, Sequence

from neardup_solr.signing.settings import SETTINGS_DOC_ID
from neardup_solr.solr.client import SolrClient
from neardup_solr.solr.collection import Selection, selection_filters
from neardup_solr.solr.queries import (
    filter_params,
    overlap_field,
    overlap_params,
    select_params,
    terms_query,
    top_overlap_params,
    within_cosine,
)
from neardup_solr.solr.searcher import cursor_docs


def sharing_a_band(client: SolrClient, band_tokens: Sequence[str], *, dataset: str | None = None,
                   fields: str = "id,content") -> list[dict]:
    """The user's documents (of ``dataset``) holding any of ``band_tokens`` in ``content_lsh``, in id order."""
    # Band tokens are "<band>_<hex>": never a comma, so the terms parser's separator is safe.
    params = select_params(selection_filters(Selection(dataset=dataset)),
                           query=terms_query("content_lsh", band_tokens, "nd.bands"), sort="id asc", fields=fields)
    return [d for d in cursor_docs(client, params, 500) if d["id"] != SETTINGS_DOC_ID]


def reaching_overlap(client: SolrClient, field: str, tokens: Sequence[tuple[str, float]], bound: float, *,
                     prefix: Sequence[str] | None, with_overlap: bool, min_size: int | None,
                     dataset: str | None = None, except_id: str | None = None, page_size: int = 500,
                     fields: str = "id,content,md5_hash,fields_json") -> Iterator[dict]:
    """The user's documents (of ``dataset``, but ``except_id``) whose weighted overlap with ``tokens`` in
    ``field`` reaches ``bound`` (see :func:`~neardup_solr.solr.queries.overlap_params` for ``prefix``,
    ``with_overlap`` and ``min_size``), a page at a time."""
    params = [*overlap_params(field, tokens, bound, prefix=prefix, with_overlap=with_overlap, min_size=min_size),
              *filter_params(selection_filters(Selection(dataset=dataset, except_id=except_id))), ("fl", fields)]
    yield from cursor_docs(client, params, page_size)


def most_overlapping(client: SolrClient, field: str, searched: Sequence[tuple[str, float]],
                     rest: Sequence[tuple[str, float]], rows: int, *, fields: str,
                     rest_name: str) -> list[dict]:
    """The ``rows`` user documents whose weighted overlap with ``searched`` in ``field`` is highest (the overlap
    as ``score``), each with its overlap with ``rest`` as the pseudo-field ``rest_name`` (0 when ``rest`` is
    empty)."""
    params = [*top_overlap_params(field, searched, rows), *filter_params(selection_filters(Selection()))]
    if rest:
        rest_field, rest_params = overlap_field(rest, name=rest_name)
        fields += "," + rest_field
        params += rest_params
    params.append(("fl", fields))
    return list(client.select(params)["response"]["docs"])


def close_in_meaning(client: SolrClient, field: str, vector: Sequence[float], min_cosine: float, *,
                     dataset: str | None = None, except_id: str | None = None, page_size: int = 500,
                     fields: str = "id") -> Iterator[dict]:
    """The user's documents (of ``dataset``, but ``except_id``) whose vector in ``field`` is within
    ``min_cosine`` of ``vector`` by the HNSW graph (:func:`~neardup_solr.solr.queries.within_cosine`), a page at
    a time in id order; ``fields`` to return (the vector field itself, to verify the cosine exactly)."""
    params = select_params(selection_filters(Selection(dataset=dataset, except_id=except_id)),
                           query=within_cosine(field, vector, min_cosine), fields=fields, sort="id asc")
    yield from cursor_docs(client, params, page_size)
