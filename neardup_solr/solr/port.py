"""The primitives of the collection port (:mod:`neardup_solr.solr.collection` says what they promise): a module of
its own so that the protocols written against them (:mod:`neardup_solr.solr.claims`,
:mod:`neardup_solr.solr.group_fields`) and the port that offers those protocols do not import each other."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Iterator, Sequence

from neardup_solr.errors import SolrRequestError
from neardup_solr.solr.selection import EVERY_DOCUMENT, Selection


class CollectionPrimitives(ABC):
    """The primitives of a collection (see :mod:`neardup_solr.solr.collection`): what each implementation keeps,
    and what the protocols (claims, group numbers) are written against."""

    #: Where the collection is, for messages and logs.
    url: str

    # ------------------------------------------------------------------------------------------ primitives: reads
    @abstractmethod
    def count(self, selection: Selection = EVERY_DOCUMENT) -> int:
        """How many of the user's documents match ``selection`` (searches' view: what was committed)."""

    @abstractmethod
    def pages(self, selection: Selection, fields: str, page_size: int = 500, *,
              from_leaders: bool = False) -> Iterator[list[dict]]:
        """The user's documents matching ``selection``, a page at a time in id order; ``fields`` as Solr's ``fl``
        ("content" is the text, "_version_" the version to write at). The last page may be short."""

    @abstractmethod
    def by_ids(self, ids: Sequence[str], fields: str = "*", *, from_leaders: bool = False) -> list[dict]:
        """The documents with these ids, the package's own included, as written (uncommitted writes count);
        ids not there are left out."""

    @abstractmethod
    def search_ids(self, ids: Sequence[str], fields: str) -> list[dict]:
        """The documents with these ids as searches see them (committed; docValues-only fields included, which a
        real-time read leaves out)."""

    @abstractmethod
    def highest(self, field: str, selection: Selection | None = None) -> Any:
        """The largest value of a single-valued ``field`` among the documents of ``selection`` (every document,
        the package's own included, when None); None when none has one."""

    # ----------------------------------------------------------------------------------------- primitives: writes
    @abstractmethod
    def put(self, docs: Sequence[dict], *, commit_within_ms: int | None = None, soft_commit: bool = False,
            skip_conflicts: bool = False) -> None:
        """Write ``docs`` in one request, in order: whole documents, or the fields of one (``{"field": {"set":
        value}}``). A ``_version_`` makes a write conditional (see the module docstring); a refused one raises
        :class:`~neardup_solr.errors.SolrRequestError` (status 409) there, unless ``skip_conflicts``, which
        skips it and goes on. Visible to searches at once with ``soft_commit``, else within
        ``commit_within_ms``, else at the next commit."""

    @abstractmethod
    def delete(self, ids: Sequence[str], *, soft_commit: bool = False) -> None:
        """Delete these ids (those not there are no error)."""

    @abstractmethod
    def commit(self, *, soft: bool = False, visible: bool = True) -> None:
        """Make every write so far visible to searches and durable; ``soft``: visible only, ``visible=False``:
        durable only (the writes' memory and log are freed without the cost of a new view)."""

    @abstractmethod
    def is_single_core(self) -> bool:
        """Whether one request's writes land on one index in order (a core, or a collection of one shard)."""

    # ---------------------------------------------------------------------------------------------- conveniences
    def add(self, docs: Sequence[dict], *, commit_within_ms: int | None = None) -> None:
        """Write whole documents, replacing any of the same id."""
        if docs:
            self.put(list(docs), commit_within_ms=commit_within_ms)

    def create(self, doc: dict, version: int = -1, *, commit_within_ms: int | None = None,
               soft_commit: bool = False) -> bool:
        """Write ``doc`` only while its id's version is ``version`` (-1: only while the id is free); False when
        refused for that."""
        try:
            self.put([{**doc, "_version_": version}], commit_within_ms=commit_within_ms, soft_commit=soft_commit)
            return True
        except SolrRequestError as exc:
            if exc.status == 409:
                return False
            raise

    def set_fields(self, updates: Sequence[dict], *, commit_within_ms: int | None = None) -> None:
        """Send :func:`~neardup_solr.solr.selection.field_update` writes; one whose document moved on to another
        version is skipped, not failed (it is read and written again on the next pass)."""
        if updates:
            self.put(list(updates), commit_within_ms=commit_within_ms, skip_conflicts=True)

    def highest_version(self) -> int | None:
        """The highest ``_version_`` the collection shows (None when empty): documents above it later are those
        updated since."""
        value = self.highest("_version_")
        return int(value) if isinstance(value, int) else None

    def first_page(self, selection: Selection, fields: str, rows: int) -> list[dict]:
        """Up to ``rows`` documents of ``selection`` in id order (one request)."""
        return next(self.pages(selection, fields, rows), [])

    def create_only(self, doc: dict, *, commit_within_ms: int | None = None) -> bool:
        """Add ``doc`` unless its id is taken (False then, nothing written); visible at once when
        ``commit_within_ms`` is None."""
        return self.create(doc, -1, commit_within_ms=commit_within_ms, soft_commit=commit_within_ms is None)

    def delete_now(self, doc_id: str) -> None:
        """Delete one document, visible at once."""
        self.delete([doc_id], soft_commit=True)
