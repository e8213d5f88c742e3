"""Keeping a collection's written groups current as documents come and go: the one hook every writer calls.

Once a collection's groups are written (:func:`~neardup_solr.engine.group_writeback.write_groups`), each document
carries its group number and whether it is the group's kept one. Documents then arrive and leave by four ways:
:func:`~neardup_solr.engine.online.check_and_add` (one at a time), ``backfill`` and ``sync`` (pages signed in place,
or into a companion), and the deletions (by id, by data set, or found by a companion's reconciling pass). Each
makes one :class:`GroupUpkeep` and tells it what happens; the rules live here only:

- a new document joins the group of its nearest *kept* neighbour at or above the collection's ``lsh_threshold``,
  or heads a new group (``check_and_add`` asks before it adds; ``backfill`` and ``sync`` after their commit, in id
  order, so the first of two new near duplicates heads the group and the second joins it);
- a document that holds a group already (its text was edited in place) keeps it until the next write-back;
- when a group's kept document is deleted, its earliest remaining member becomes the kept one;
- on a companion installed with ``--fold``, every change is mirrored into the user's documents in place.

While the collection's groups were never written, all of it costs nothing (one cached real-time get).
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from typing import TYPE_CHECKING, Collection, Iterable, Iterator, Mapping

from neardup_solr.engine.similar import find_similar
from neardup_solr.errors import InvalidTextError
from neardup_solr.pairs.groups import id_key
from neardup_solr.batching import chunks
from neardup_solr.solr.collection import GROUP_FIELD, KEEP_FIELD, SolrClient, collection_of, group_update
from neardup_solr.solr.companion import mirror_groups
from neardup_solr.solr.searcher import Searcher

if TYPE_CHECKING:
    from neardup_solr.signing.settings import IndexSettings
    from neardup_solr.solr.searcher import Query

log = logging.getLogger(__name__)

__all__ = ["GroupUpkeep"]

# Real-time gets and group updates go this many ids at a time.
_LOOKUP_CHUNK = 500


class GroupUpkeep:
    """The group upkeep of one writer's run over ``client`` (a collection of ours or a companion). ``mirror``: the
    client is a companion whose changes go to the user's documents too (where its install asked for folding).

    >>> upkeep = GroupUpkeep(companion, settings, mirror=True)
    >>> upkeep.signed(page_items)          # as pages are signed
    >>> upkeep.group_signed()              # after the commit that makes them searchable
    >>> with upkeep.deleting(gone_ids):    # around a deletion
    ...     delete(gone_ids)
    """

    def __init__(self, client: SolrClient, settings: "IndexSettings | None" = None, *, mirror: bool = False):
        self.client = client
        self.collection = collection_of(client)
        self.settings = settings
        self.mirror = mirror
        # (id, text) signed since the last group_signed: held only while the groups are in use.
        self._signed: list[tuple[str, str]] = []
        self._tracking: bool | None = None  # asked at the first signed page, then kept for the run

    # -- documents arriving ---------------------------------------------------------------------------------

    def fields_for_new_document(self, searcher: Searcher, query: "Query", doc_id: str,
                                checked_at: float) -> dict[str, int]:
        """The group fields for a document ``check_and_add`` is about to add, which had no near duplicate at
        ``checked_at``: the group of its nearest kept neighbour at or above the collection's ``lsh_threshold``
        (only possible when ``checked_at`` is higher), or a new group it heads. ``{}`` while the groups are not
        written, so the fields cost nothing until then."""
        if not self.collection.groups_in_use():
            return {}
        if checked_at > searcher.settings.lsh_threshold:
            group = self._nearest_kept_group(searcher, query, doc_id)
            if group is not None:
                return {GROUP_FIELD: group, KEEP_FIELD: 0}
        return {GROUP_FIELD: self.collection.new_group_number(), KEEP_FIELD: 1}

    def signed(self, items: Iterable[tuple[str, str]]) -> None:
        """Note ``(id, text)`` of documents just signed (not yet committed), to be grouped by :meth:`group_signed`."""
        if self._tracking is None:
            self._tracking = self.collection.groups_in_use()
        if self._tracking:
            self._signed.extend(items)

    def group_signed(self, *, refused: Collection[str] = ()) -> int:
        """Give the documents noted by :meth:`signed` (committed by now; ``refused``: those Solr did not take) their
        group, mirror them where asked, and forget them. A document that holds a group already keeps it. Returns
        how many were given a group."""
        signed, self._signed = [item for item in self._signed if item[0] not in refused], []
        if not signed or not self.collection.groups_in_use():
            return 0
        if self.settings is None:
            raise ValueError("GroupUpkeep.group_signed needs the collection's settings (to look its documents up)")
        grouped = self._group(signed)
        if self.mirror:
            mirror_groups(self.collection, [doc_id for doc_id, _ in signed])
        return grouped

    def _group(self, signed: list[tuple[str, str]]) -> int:
        coll = self.collection
        assert self.settings is not None
        searcher = Searcher(self.client, self.settings)
        held: dict[str, tuple[int | None, int | None]] = {}
        for chunk in chunks([doc_id for doc_id, _ in signed], _LOOKUP_CHUNK):
            held.update(coll.groups_of(chunk))
        assigned: dict[str, tuple[int, int]] = {}
        for doc_id, text in sorted(signed, key=lambda item: id_key(item[0])):
            if doc_id not in held or held[doc_id][0] is not None or doc_id in assigned:
                continue  # deleted meanwhile, or grouped already
            try:
                query = searcher.prepare(text, doc_id)
            except InvalidTextError:
                continue
            group = self._nearest_kept_group(searcher, query, doc_id, assigned)
            assigned[doc_id] = (group, 0) if group is not None else (coll.new_group_number(), 1)
        gone: list[str] = []
        for batch in chunks(list(assigned.items()), _LOOKUP_CHUNK):
            gone += coll.write_groups([group_update(doc_id, group, keep) for doc_id, (group, keep) in batch])
        if assigned:
            coll.commit()
            log.info("gave %d newly signed document(s) their near-duplicate group", len(assigned) - len(gone))
        return len(assigned) - len(gone)

    @staticmethod
    def _nearest_kept_group(searcher: Searcher, query: "Query", doc_id: str,
                            assigned: Mapping[str, tuple[int, int]] | None = None) -> int | None:
        """The group of ``query``'s nearest *kept* neighbour at or above the collection's ``lsh_threshold``
        (``doc_id`` itself left out), or None. ``assigned``: groups given in this run and not yet in the
        collection, which override what searches see."""
        near = find_similar(searcher, query, searcher.settings.lsh_threshold, exclude_id=doc_id)
        held = collection_of(searcher.client).groups_of([m.id for m in near])
        if assigned:
            held.update({m.id: assigned[m.id] for m in near if m.id in assigned})
        for match in near:  # best first
            group, keep = held.get(match.id, (None, None))
            if group is not None and keep == 1:
                return int(group)
        return None

    # -- documents leaving ----------------------------------------------------------------------------------

    @contextmanager
    def deleting(self, ids: list[str]) -> Iterator[None]:
        """Around the deletion of ``ids`` (committed inside the block): the groups whose kept document is among
        them are read before, and get their earliest remaining member as kept after."""
        orphaned = self._kept_groups(ids)
        yield
        self._promote(orphaned)

    @contextmanager
    def deleting_dataset(self, dataset: str) -> Iterator[None]:
        """As :meth:`deleting`, for every document of ``dataset`` (one cursor over its group fields)."""
        orphaned: list[int] = []
        if self.collection.groups_in_use():
            orphaned = sorted({int(group) for _, group, keep in self.collection.read_groups(dataset)
                               if group is not None and keep == 1})
        yield
        self._promote(orphaned)

    def _kept_groups(self, ids: list[str]) -> list[int]:
        if not ids or not self.collection.groups_in_use():
            return []
        found: set[int] = set()
        for chunk in chunks(ids, _LOOKUP_CHUNK):
            found.update(int(g) for g, keep in self.collection.groups_of(chunk).values() if g is not None and keep == 1)
        return sorted(found)

    def _promote(self, groups: list[int]) -> None:
        """Make the earliest remaining member of each of ``groups`` its kept document, soft-committed. Earliest
        whatever rule chose the one deleted: the texts are not read here, and the next write-back applies
        ``longest`` again."""
        promoted: list[tuple[str, int]] = []
        for group in groups:
            members = self.collection.members_of(group)
            if members and not any(keep == 1 for keep in members.values()):
                promoted.append((min(members, key=id_key), group))
        for batch in chunks(promoted, _LOOKUP_CHUNK):
            self.collection.write_groups([group_update(doc_id, group, True) for doc_id, group in batch],
                                         soft_commit=True)
        if promoted:
            log.info("promoted %d document(s) to kept after their group's kept document was deleted",
                     len(promoted))
            if self.mirror:
                mirror_groups(self.collection, [doc_id for doc_id, _ in promoted])
