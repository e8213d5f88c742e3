"""Solr's query syntax, spelled in one place: the filters (the user's documents, a data set, an id left out), the
token queries (an OR-query of quoted terms with their boosts, the overlap bound on its score), the terms
lookups, and the parameters that carry them. Pure: nothing here talks to Solr.

User values never become query syntax: they go in request parameters (``$name`` references), or to the
``term``/``terms`` parsers, which take them literally. A :class:`Filter` carries its query and the parameters
it refers to, so the engines hand filters around without knowing how they are written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from neardup_solr.signing.settings import META_DATASET

Params = list[tuple[str, object]]


@dataclass(frozen=True)
class Filter:
    """One query and the request parameters it refers to (``$name``): a filter query (``fq``), or the main query
    (``q``) of :func:`select_params`."""

    query: str
    params: tuple[tuple[str, object], ...] = ()


# neardup-solr's own documents (the settings, the online mode's claims) carry the reserved data set; every
# lookup, count and report leaves them out. A constant, so it needs no parameter and also works where a request's
# parameters are not passed on (a SolrCloud's delete-by-query, /export).
USER_DOCUMENTS = Filter(f"-dataset:{META_DATASET}")
# Documents indexed without a data set.
UNLABELLED = Filter("-dataset:[* TO *]")


def in_dataset(dataset: str) -> Filter:
    """The documents of ``dataset`` (its name taken literally)."""
    return Filter("{!term f=dataset v=$nd.ds}", (("nd.ds", dataset),))


def not_in_dataset(dataset: str) -> Filter:
    """Every document but those of ``dataset``."""
    return Filter("-{!term f=dataset v=$nd.other}", (("nd.other", dataset),))


def not_id(doc_id: str) -> Filter:
    """Every document but the one with this id."""
    return Filter("-{!term f=id v=$nd.self}", (("nd.self", doc_id),))


def documents_of(dataset: str | None) -> list[Filter]:
    """The user's documents, only those of ``dataset`` when one is given."""
    return [USER_DOCUMENTS] + ([in_dataset(dataset)] if dataset is not None else [])


def dataset_query(dataset: str | None) -> str:
    """A standalone query for the documents of ``dataset`` (None: those without one) that needs no request
    parameter: what a delete-by-query takes, since a SolrCloud forwards it to the other shards' leaders without
    the request's parameters. The term parser takes the rest of the string literally."""
    if dataset is None:
        return "*:* " + UNLABELLED.query
    return "{!term f=dataset}" + dataset


def filter_params(filters: Iterable[Filter]) -> Params:
    """The ``fq`` parameters of ``filters`` and the parameters they refer to. Two filters may not refer to one
    name with different values: that would silently answer for only one of them."""
    params: Params = []
    refs: dict[str, object] = {}
    for f in filters:
        params.append(("fq", f.query))
        for name, value in f.params:
            if name in refs:
                if refs[name] != value:
                    raise ValueError(f"two filters refer to ${name} with different values")
                continue
            refs[name] = value
            params.append((name, value))
    return params


ALL_DOCUMENTS = "*:*"
# Read each shard's leader, the copy updates go through: just after a partition heals, a replica that was cut off
# can answer a query for a moment before it says it is recovering, and it lacks what the leader acknowledged
# meanwhile. A standalone core ignores the parameter.
FROM_LEADERS = ("shards.preference", "replica.leader:true")


def select_params(filters: Iterable[Filter] = (), *, query: Filter | str = ALL_DOCUMENTS, fields: str | None = None,
                  sort: str | None = None, rows: int | None = None) -> Params:
    """A select request's parameters: ``query`` filtered by ``filters``, returning ``fields`` in ``sort``
    order (``rows`` of them)."""
    main = query if isinstance(query, Filter) else Filter(query)
    params: Params = [("q", main.query), *main.params, *filter_params(filters)]
    if sort is not None:
        params.append(("sort", sort))
    if fields is not None:
        params.append(("fl", fields))
    if rows is not None:
        params.append(("rows", rows))
    return params


def quoted_term(token: str) -> str:
    """A token as a quoted term of the standard query parser; inside quotes only \\ and " are special."""
    return '"' + token.replace("\\", "\\\\").replace('"', '\\"') + '"'


def boosted_terms(tokens: Sequence[tuple[str, float]]) -> str:
    """An OR-query (under ``q.op=OR``) of quoted terms, each with its boost (none written for 1): its score is the
    summed boosts of the tokens a document holds, the weighted overlap."""
    return " ".join(quoted_term(t) if b == 1.0 else f"{quoted_term(t)}^{b:.9g}" for t, b in tokens)


def terms_query(field: str, tokens: Sequence[str], param: str = "nd.terms") -> Filter:
    """Documents holding any of ``tokens`` in ``field``: a constant-score terms query, the tokens passed
    comma-separated in the parameter ``param``: the terms parser splits on commas, and the tokens it is given
    hold none (band keys, shingle hashes, MinHash positions, and normalised words, whose punctuation the
    normaliser blanks)."""
    return Filter(f"{{!terms f={field} v=${param}}}", ((param, ",".join(tokens)),))


def score_at_least(bound: float, query_param: str = "q", *, post_filter: bool = False) -> Filter:
    """Documents whose score for the query in ``query_param`` reaches ``bound``. ``post_filter``: uncached and
    costed as a post filter, so it is scored only for what the other filters let through."""
    options = " cache=false cost=200" if post_filter else ""
    return Filter(f"{{!frange l={bound:.9g}{options}}}query(${query_param})")


def at_least(field: str, value: int) -> Filter:
    """Documents whose numeric ``field`` is at least ``value``."""
    return Filter(f"{field}:[{int(value)} TO *]")


def overlap_params(field: str, tokens: Sequence[tuple[str, float]], bound: float, *,
                   prefix: Sequence[str] | None, with_overlap: bool, min_size: int | None = None) -> Params:
    """The query of documents whose weighted overlap with ``tokens`` (token, boost) in ``field`` reaches
    ``bound``, best first.

    Without ``prefix`` the OR-query of every token is scored across the index and filtered on its score. With
    one, the documents holding a prefix token are found by a terms query over the rarest posting lists (ids in
    order); ``with_overlap`` then bounds their overlap with every token as a post filter, and ``min_size``, when
    given instead, keeps only documents with at least that many shingles."""
    params: Params
    if prefix is None:
        params = [("q", boosted_terms(tokens)), *filter_params([score_at_least(bound)]), ("sort", "score desc,id asc")]
    else:
        params = select_params(query=terms_query(field, prefix, "nd.prefix"), sort="id asc")
        if with_overlap:
            params += [("nd.overlap", boosted_terms(tokens)),
                       *filter_params([score_at_least(bound, "nd.overlap", post_filter=True)])]
        elif min_size is not None:
            params += filter_params([at_least("num_shingles", min_size)])
    return params + [("defType", "lucene"), ("df", field), ("q.op", "OR")]
