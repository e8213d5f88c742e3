"""The collection port: all the engines see of a Solr collection (one core or a SolrCloud collection).

An engine asks for what it needs in its own words — "how many of the user's documents are unsigned", "the pages of
documents changed since this version", "these fields, only if the document is still at that version", "claim this
text", "a block of group numbers" — and never builds a query or an update body. :class:`Collection` states the
contract in a few primitives; :class:`SolrCollection` keeps it over a :class:`~neardup_solr.solr.client.SolrClient`,
and :class:`~neardup_solr.solr.memory_collection.MemoryCollection` keeps it in a dict, so that the engines' logic
can be tested without a JVM (``tests/unit/solr/test_collection_contract.py`` holds both to one suite, and to a
SolrCloud collection in ``tests/solr/solr/``). The protocols built on the primitives — the add-once claims of
:mod:`neardup_solr.solr.claims` and the group numbers of :mod:`neardup_solr.solr.group_fields` — are written
once, against the port, and run unchanged on either.

What the primitives promise is Solr's own behaviour, named rather than re-invented:

- a write may carry a ``_version_``: -1, only if the id is free; 1, only if the document exists; any other, only
  at that very version. A write refused for its version raises :class:`~neardup_solr.errors.SolrRequestError`
  with status 409 at that document (those before it in the request are written, as a single core does, and the
  request's commit is not made); with ``skip_conflicts`` (Solr's ``failOnVersionConflicts=false``) it is skipped
  instead and the rest go on;
- a document whose fields are ``{"set": value}`` is an atomic update of those fields (None removes one), every
  other field kept; a whole document replaces the one of its id; every write gives the document a new, higher
  ``_version_``;
- real-time reads (:meth:`Collection.by_ids`) see every write at once and never return the docValues-only group
  fields; searches (:meth:`Collection.count`, :meth:`pages`, :meth:`search_ids`, :meth:`highest`) see what the
  last commit made visible;
- a :class:`~neardup_solr.solr.selection.Selection` never holds the package's own documents (settings, claims,
  counters: the reserved data set), which only :meth:`Collection.by_ids` and ``highest(field, None)`` see.
"""

from __future__ import annotations

import json
from abc import abstractmethod
from typing import Any, Iterator, Sequence, Union

from neardup_solr.solr import claims, group_fields
from neardup_solr.solr.claims import CLAIM_LEASE_SECONDS, CLAIM_PREFIX, AddOnceOutcome, ClaimOutcome, claim_id
from neardup_solr.solr.client import SolrClient
from neardup_solr.solr.group_fields import GROUP_FIELD, KEEP_FIELD, group_update
from neardup_solr.solr.port import CollectionPrimitives
from neardup_solr.solr.selection import EVERY_DOCUMENT, SIGNING_FIELDS, Selection, field_update, version_of
from neardup_solr.solr.queries import (
    FROM_LEADERS,
    Filter,
    documents_of,
    filter_params,
    has_id,
    ids_in,
    in_group,
    not_id,
    select_params,
)


class Collection(CollectionPrimitives):
    """One collection as the engines see it: the primitives (kept by each implementation) and the protocols
    built on them."""

    # ----------------------------------------------------------------------------------- protocols: add once
    def add_once(self, document: dict, md5_hash: str, *, ttl: str | None = None,
                 commit_within_ms: int | None = None) -> AddOnceOutcome:
        """Add ``document`` unless another document holds the same text (its ``md5_hash``): the claim protocol of
        :mod:`neardup_solr.solr.claims`, exactly one of any number of concurrent adds of one text written."""
        return claims.add_once(self, document, md5_hash, ttl=ttl, commit_within_ms=commit_within_ms)

    def claim(self, md5_hash: str, doc_id: str, ttl: str | None = None) -> ClaimOutcome:
        """Claim a text for ``doc_id`` (:func:`neardup_solr.solr.claims.claim`)."""
        return claims.claim(self, md5_hash, doc_id, ttl)

    # ------------------------------------------------------------------------------------ protocols: group fields
    @abstractmethod
    def ensure_group_fields(self) -> list[str]:
        """Make sure the collection can hold the group fields, in place; returns the names it had to add."""

    def read_groups(self, dataset: str | None = None,
                    page_size: int = 10_000) -> Iterator[tuple[str, int | None, int | None]]:
        """``(id, group, keep)`` of every user document (of ``dataset``), in id order."""
        return group_fields.read_groups(self, dataset, page_size)

    def groups_of(self, ids: list[str]) -> dict[str, tuple[int | None, int | None]]:
        """``{id: (group, keep)}`` of these ids as searches see them."""
        return group_fields.groups_of(self, ids)

    def members_of(self, group: int) -> dict[str, int | None]:
        """``{id: keep}`` of one group's documents."""
        return group_fields.members_of(self, group)

    def write_groups(self, updates: list[dict], *, commit_within_ms: int | None = None, soft_commit: bool = False,
                     key_field: str = "id") -> list[str]:
        """Write :func:`group_update` values in place; returns the ids whose document is gone."""
        return group_fields.send_group_updates(self, updates, commit_within_ms=commit_within_ms,
                                               soft_commit=soft_commit, key_field=key_field)

    def allocate_groups(self, count: int) -> int:
        """Reserve ``count`` new group numbers, safe across processes; returns the first."""
        return group_fields.allocate_groups(self, count)

    def new_group_number(self) -> int:
        """One fresh group number, from a block this process reserved."""
        return group_fields.new_group_number(self)

    def groups_in_use(self) -> bool:
        """Whether the collection's groups are written (a "no" is remembered for a few seconds)."""
        return group_fields.groups_in_use(self)

    def forget_group_numbers(self) -> None:
        """Drop what this process reserved or learned about the group numbers (a write-back starts with it)."""
        group_fields.forget_group_numbers(self)


# Engines take either: a client is turned into its collection once, at the way in.
SolrTarget = Union[SolrClient, Collection]


def collection_of(target: SolrTarget) -> Collection:
    """The :class:`Collection` of a client (or the collection itself)."""
    return target if isinstance(target, Collection) else SolrCollection(target)


def _change_filters(selection: Selection) -> list[Filter]:
    """The filters of when documents changed: the ones a user's own collection takes too (they name only
    ``_version_`` and a date field the caller checked, never a field of ours)."""
    filters = []
    lowest = selection.lowest_version()
    if lowest is not None:
        filters.append(Filter(f"_version_:{{{lowest} TO *]"))
    if selection.at_or_before is not None:
        filters.append(Filter(f"_version_:[* TO {int(selection.at_or_before)}]"))
    if selection.dated_since is not None:
        # The field is one the schema has (the caller checked it) and the instant is ours, never user text.
        field, instant, margin_s = selection.dated_since
        filters.append(Filter(f"{field}:[{instant}-{int(margin_s)}SECONDS TO *]"))
    return filters


def selection_filters(selection: Selection) -> list[Filter]:
    """The filter queries of ``selection`` (also for the solr layer's own searches that add a main query)."""
    filters = documents_of(selection.dataset)
    if selection.seen is not None:
        filters.append(Filter("md5_hash:[* TO *]" if selection.seen else "-md5_hash:[* TO *]"))
    if selection.signed is not None:
        filters.append(Filter("num_shingles:[1 TO *]" if selection.signed else "-num_shingles:[1 TO *]"))
    filters += _change_filters(selection)
    if selection.except_id is not None:
        filters.append(not_id(selection.except_id))
    if selection.group is not None:
        filters.append(in_group(GROUP_FIELD, selection.group))
    return filters


def source_filters(changes: Selection) -> list[Filter]:
    """The filters of ``changes`` on a user's own collection, which holds none of our fields: only when
    documents changed may be asked there."""
    if changes.dataset is not None or changes.seen is not None or changes.signed is not None \
            or changes.group is not None or changes.except_id is not None:
        raise ValueError(f"{changes} names fields of ours; a user's collection is selected only by when its "
                         "documents changed")
    return _change_filters(changes)


class SolrCollection(Collection):
    """The port kept over a :class:`~neardup_solr.solr.client.SolrClient` (a core or a SolrCloud collection)."""

    def __init__(self, client: SolrClient):
        self.client = client

    @property
    def url(self) -> str:  # type: ignore[override]
        return self.client.url

    def __repr__(self) -> str:
        return f"SolrCollection({self.client.url!r})"

    def count(self, selection: Selection = EVERY_DOCUMENT) -> int:
        return self.client.count(params=filter_params(selection_filters(selection)))

    def pages(self, selection: Selection, fields: str, page_size: int = 500, *,
              from_leaders: bool = False) -> Iterator[list[dict]]:
        params = select_params(selection_filters(selection), fields=fields, sort="id asc")
        if from_leaders:
            params.append(FROM_LEADERS)
        yield from self.client.cursor_pages(params, page_size, until_short_page=True)

    def by_ids(self, ids: Sequence[str], fields: str = "*", *, from_leaders: bool = False) -> list[dict]:
        if not ids:
            return []
        return self.client.get_by_ids(list(ids), fields, params=[FROM_LEADERS] if from_leaders else None)

    def search_ids(self, ids: Sequence[str], fields: str) -> list[dict]:
        if not ids:
            return []
        wanted = ids_in(list(ids))
        queries = [wanted] if wanted is not None else [has_id(i) for i in ids]
        out: list[dict] = []
        for query in queries:
            data = self.client.select(select_params(query=query, fields=fields, rows=len(ids)) + [FROM_LEADERS])
            out.extend(data["response"]["docs"])
        return out

    def highest(self, field: str, selection: Selection | None = None) -> Any:
        filters = selection_filters(selection) if selection is not None else []
        params = select_params(filters, sort=f"{field} desc", fields=field, rows=1) + [FROM_LEADERS]
        docs = self.client.select(params)["response"]["docs"]
        return docs[0].get(field) if docs else None

    def put(self, docs: Sequence[dict], *, commit_within_ms: int | None = None, soft_commit: bool = False,
            skip_conflicts: bool = False) -> None:
        if not docs:
            return
        params: list[tuple[str, object]] = [("failOnVersionConflicts", "false")] if skip_conflicts else []
        if soft_commit:
            params.append(("softCommit", "true"))
        elif commit_within_ms is not None:
            params.append(("commitWithin", commit_within_ms))
        self._update(list(docs), params)

    def delete(self, ids: Sequence[str], *, soft_commit: bool = False) -> None:
        if ids:
            self._update({"delete": list(ids)}, [("softCommit", "true")] if soft_commit else [])

    def _update(self, body: Any, params: list[tuple[str, object]]) -> None:
        """One JSON update request (the body encoded here, non-ASCII kept as it is)."""
        self.client.request("POST", "update", params=[("wt", "json"), *params],
                            data=json.dumps(body, ensure_ascii=False).encode("utf-8"),
                            headers={"Content-Type": "application/json"})

    def commit(self, *, soft: bool = False, visible: bool = True) -> None:
        if soft:
            self.client.get_json("update", {"softCommit": "true"})
        else:
            self.client.commit(open_searcher=visible)

    def is_single_core(self) -> bool:
        return self.client.is_single_core()

    def ensure_group_fields(self) -> list[str]:
        return group_fields.ensure_group_fields(self.client)


__all__ = ["Collection", "SolrCollection", "Selection", "EVERY_DOCUMENT", "SolrTarget", "collection_of",
           "field_update", "version_of", "SIGNING_FIELDS", "SolrClient", "AddOnceOutcome", "ClaimOutcome",
           "CLAIM_PREFIX", "CLAIM_LEASE_SECONDS", "claim_id", "GROUP_FIELD", "KEEP_FIELD", "group_update",
           "selection_filters", "source_filters"]
