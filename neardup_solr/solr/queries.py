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
from xml.sax.saxutils import quoteattr

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


def terms_query(field: str, tokens: Sequence[str], param: str = "nd.terms", *, cached: bool = True) -> Filter:
    """Documents holding any of ``tokens`` in ``field``: a constant-score terms query, the tokens passed
    comma-separated in the parameter ``param``: the terms parser splits on commas, and the tokens it is given
    hold none (band keys, shingle hashes, MinHash positions, and normalised words, whose punctuation the
    normaliser blanks)."""
    options = "" if cached else " cache=false"
    return Filter(f"{{!terms f={field}{options} v=${param}}}", ((param, ",".join(tokens)),))


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


def top_overlap_params(field: str, tokens: Sequence[tuple[str, float]], rows: int) -> Params:
    """The ``rows`` documents with the highest weighted overlap with ``tokens`` (token, boost) in ``field``, best
    first; the score is the overlap. Sorted by relevance alone and without an exact hit count
    (``minExactCount``), so that Lucene skips every document whose overlap cannot enter the best ``rows``
    (each clause's score is its boost, so its highest is known): measured at 20,000 records, a tie-break on
    the id (a field sort) or a score filter made Solr score every document holding any of the tokens, 10 to
    40 times slower."""
    return [("q", boosted_terms(tokens)), ("rows", int(rows)), ("minExactCount", int(rows)), ("defType", "lucene"),
            ("df", field), ("q.op", "OR")]


def overlap_field(tokens: Sequence[tuple[str, float]], name: str = "nd_rest",
                  param: str = "nd.rest") -> tuple[str, Params]:
    """An ``fl`` entry and its parameter: each returned document's weighted overlap with ``tokens`` (token, boost)
    in the request's ``df`` field, 0 when it holds none. Solr computes it for the returned documents only (a
    function query per document), so it costs nothing like a clause of the search would."""
    return f"{name}:query(${param},0)", [(param, boosted_terms(tokens))]


# ----------------------------------------------------------------------------------------------------------------
# Near-duplicate groups (nd_group, nd_keep: neardup_solr.solr.group_fields)


def folded(group_field: str, keep_field: str) -> Filter:
    """One document per group of ``group_field``: the one whose ``keep_field`` is highest (the kept one) among
    those the query matches. Documents without a group are left out: Solr 9.10's collapse on an int field fails
    (HTTP 500) with ``nullPolicy=expand`` or ``collapse`` as soon as a segment holds no value of the field, so
    they are searched apart (:func:`ungrouped`)."""
    return Filter(f"{{!collapse field={group_field} max={keep_field}}}")


def ungrouped(group_field: str) -> Filter:
    """The documents without a group (indexed since the groups were written)."""
    return Filter(f"-{group_field}:[* TO *]")


def has_group(group_field: str) -> Filter:
    """The documents with a group."""
    return Filter(f"{group_field}:[* TO *]")


def grouping_params(group_field: str, keep_field: str, groups: int, per_group: int) -> Params:
    """Result grouping on ``group_field``: the first ``groups`` groups, each with up to ``per_group`` of its
    matching documents, the kept one (highest ``keep_field``) first; groups ordered by that first document's
    score. Unlike collapse, grouping is correct across a SolrCloud's shards (a second phase fetches each top
    group's documents from every shard); its ``ngroups`` counts a group split over shards once per shard."""
    return [("group", "true"), ("group.field", group_field), ("group.limit", int(per_group)),
            ("group.sort", f"{keep_field} desc,score desc,id asc"), ("group.ngroups", "true"),
            ("rows", int(groups)), ("start", 0)]


def copies_params(group_field: str, groups: int, per_group: int) -> Params:
    """Result grouping of a folded page's copies: ``groups`` groups, each with up to ``per_group`` of its matching
    documents, best first (ties by id), and how many match (each group's ``numFound``)."""
    return [("group", "true"), ("group.field", group_field), ("group.limit", int(per_group)),
            ("group.sort", "score desc,id asc"), ("rows", int(groups)), ("start", 0)]


def in_groups(group_field: str, groups: Sequence[int]) -> Filter:
    """The documents of these groups (ints, checked here, so not user syntax), as an uncached terms query.

    Uncached because the group field has docValues and no index: a cached filter is built for the whole index
    first, a scan of every document's group (~65 ms a request at 1M documents), and no two pages ask for the same
    groups. Uncached, Solr checks the group of only what the other clauses let through; it is cheap beside a
    cached filter that leads (:func:`is_a_copy`), not beside a query that matches most of the collection."""
    return terms_query(group_field, [str(int(g)) for g in groups], param="nd.groups", cached=False)


def not_a_copy(keep_field: str) -> Filter:
    """Every document but the folded copies: the kept ones and those without a group yet."""
    return Filter(f"-{keep_field}:0")


def is_a_copy(keep_field: str) -> Filter:
    """The folded copies: the members of a group that a folded search does not head it with."""
    return Filter(f"{keep_field}:0")


# Separators an id list of a {!terms} query may use: it splits on the separator verbatim (no escaping).
ID_SEPARATORS = ("\u001f", "\u001e", "\n", "\t", ",")


def ids_in(doc_ids: Sequence[str], *, cached: bool = True) -> Filter | None:
    """The documents with these ids (a terms query whose list travels as a parameter), or None when every
    separator occurs in some id (then ask for them one by one, with :func:`not_id`'s term parser). ``cached``
    False for a list no other request will ask for again: Solr then leaves it out of its filter cache."""
    return keys_in("id", doc_ids, cached=cached)


def keys_in(field: str, keys: Sequence[str], *, cached: bool = True) -> Filter | None:
    """The documents whose ``field`` holds one of ``keys`` (:func:`ids_in` on any field; the field's name travels
    as a parameter too), or None when every separator occurs in some key."""
    separator = next((s for s in ID_SEPARATORS if not any(s in k for k in keys)), None)
    if separator is None:
        return None
    options = "" if cached else " cache=false"
    if field == "id":
        return Filter(f"{{!terms f=id{options} separator=$nd.sep v=$nd.ids}}",
                      (("nd.sep", separator), ("nd.ids", separator.join(keys))))
    return Filter(f"{{!terms f=$nd.keyf{options} separator=$nd.sep v=$nd.ids}}",
                  (("nd.keyf", field), ("nd.sep", separator), ("nd.ids", separator.join(keys))))


def has_key(field: str, key: str) -> Filter:
    """The document whose ``field`` holds ``key`` (the term parser: the key taken literally)."""
    return Filter("{!term f=$nd.keyf v=$nd.key}", (("nd.keyf", field), ("nd.key", key)))


def key_after(field: str, key: str) -> Filter:
    """The documents whose ``field`` sorts after ``key`` (a function range over the field's docValues, which a
    cursor sorting on it needs anyway; strings compare as Solr sorts them, numbers as numbers)."""
    return Filter("{!frange l=$nd.after incl=false v=$nd.afterf}",
                  (("nd.after", key), ("nd.afterf", f"field({quoted_term(field)})")))


def key_range(field: str, low: str | None, high: str | None) -> Filter:
    """The documents whose ``field`` (a string field) holds a key from ``low`` (inclusive) to ``high`` (exclusive),
    None for an open end, as a main query (``q``). Lucene's XML query parser, so the ends are XML attribute
    values, escaped as XML escapes them (a key may hold anything), and the range is Lucene's term range, which
    reads the terms dictionary, not every document's value (``key_after``'s function range does). Not the
    standard parser's ``field:["a" TO "b"}``: a backslash can end no quoted range end there, and Solr's own range
    query puts every range of more than 16 terms into the filter cache whatever ``cache=false`` says, where a range
    asked once would push out the user's filters. ``cache=false`` keeps it out of the query result cache. An open
    upper end is written as every document but those below ``low``: the XML range with no upper term matches
    nothing on Solr 9.10."""
    def below(end: str) -> str:
        return f'<RangeQuery fieldName={quoteattr(field)} includeUpper="false" upperTerm={quoteattr(end)}/>'

    if high is None:
        xml = '<BooleanQuery><Clause occurs="must"><MatchAllDocsQuery/></Clause>'
        if low is not None:
            xml += f'<Clause occurs="mustNot">{below(low)}</Clause>'
        xml += "</BooleanQuery>"
    elif low is None:
        xml = below(high)
    else:
        xml = (f'<RangeQuery fieldName={quoteattr(field)} includeLower="true" lowerTerm={quoteattr(low)} '
               f'includeUpper="false" upperTerm={quoteattr(high)}/>')
    return Filter("{!xmlparser cache=false v=$nd.range}", (("nd.range", xml),))


def not_ids(doc_ids: Sequence[str]) -> Filter | None:
    """Every document but those with these ids (:func:`ids_in`, negated), or None where :func:`ids_in` is."""
    listed = ids_in(doc_ids)
    return None if listed is None else Filter("-" + listed.query, listed.params)


def has_id(doc_id: str) -> Filter:
    """The document with this id."""
    return Filter("{!term f=id v=$nd.id}", (("nd.id", doc_id),))


def in_group(group_field: str, group: int) -> Filter:
    """The documents of one group (its number is an int, checked here, so it is not user syntax)."""
    return Filter(f"{group_field}:{int(group)}")


_SPECIAL = set('+-&|!(){}[]^"~*?:\\/')


def escaped_words(words: Iterable[str]) -> str:
    """Words as literal terms of the (e)dismax and standard parsers: every character the syntax reads (a leading
    ``-``, ``~``, ``*``, ``:``, quotes, brackets...) escaped with a backslash."""
    return " ".join("".join("\\" + c if c in _SPECIAL else c for c in word) for word in words)


def user_text_params(words: Sequence[str], fields: Sequence[str], *, min_match: str | None = None) -> Params:
    """A user's search, its ``words`` (normalised as the index's words are) searched in ``fields`` (``field`` or
    ``field^boost``) by edismax. Each word is escaped (:func:`escaped_words`) and travels in the ``q``
    parameter; ``uf=-*`` denies the query any field of its own choosing and lowercase ``and``/``or`` stay words.
    ``min_match``: edismax's ``mm`` (how many words a document must hold; default: any)."""
    params: Params = [("defType", "edismax"), ("q", escaped_words(words)), ("qf", " ".join(fields)),
                      ("uf", "-*"), ("q.op", "OR"), ("lowercaseOperators", "false")]
    if min_match is not None:
        params.append(("mm", min_match))
    return params


def expand_params(rows: int, group_field: str, filters: Sequence[Filter]) -> Params:
    """Ask the expand component for up to ``rows`` folded copies of every group shown, among the documents of
    ``filters`` (whose parameters the main request carries) that have a group.

    The explicit ``expand.fq`` is what keeps Solr 9.10 from failing: when the page holds no group, or 200 or
    more, expand does not narrow its search to the page's groups and reads the group value of every matching
    document; in a segment with no value of the int field at all (documents indexed after the groups were
    written) that read is a NullPointerException, an HTTP 500. Restricted to documents with a group, no such
    segment yields a document to read."""
    return ([("expand", "true"), ("expand.rows", int(rows))]
            + [("expand.fq", f.query) for f in [*filters, has_group(group_field)]])


def vector_text(vector: Sequence[float]) -> str:
    """A vector as the dense vector query parsers read it: ``[x1,x2,...]`` of numbers we computed."""
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


def within_cosine(field: str, vector: Sequence[float], min_cosine: float, traverse_below: float = 0.3) -> Filter:
    """Documents whose unit vector in ``field`` has a cosine of at least ``min_cosine`` with ``vector`` (a unit
    vector), found by walking the HNSW graph (Solr's ``vectorSimilarity`` parser, Lucene's VectorSimilarityQuery)
    through every node within ``traverse_below`` of that cosine. With the dot-product similarity of unit vectors
    Lucene's similarity is (1 + cosine) / 2, which both bounds are given in. The vector is a parameter, never
    pasted.
    ``traverse_below`` 0.3: on the planted corpus (3,000 documents, cosine 0.97) a walk through the nodes within
    0.1 found 77% of the neighbours an exhaustive comparison finds, within 0.2 94%, within 0.4 97.5% (a
    ``{!knn}`` search of the 1,000 nearest, 97.5% too): vectors packed close together make the graph hard to
    walk, and the walk is what a lookup pays for."""
    result = (1.0 + min_cosine) / 2.0
    traverse = max(0.0, (1.0 + min_cosine - traverse_below) / 2.0)
    return Filter(f"{{!vectorSimilarity f={field} minReturn={result!r} minTraverse={traverse!r} v=$nd.vec}}",
                  (("nd.vec", vector_text(vector)),))
