"""Groups of near duplicates written back into the collection, so that a search can fold them (issue 38).

:func:`write_groups` takes the pairs a report found and gives every document of the collection (or of one data
set) its group number (``nd_group``) and whether it is the group's kept document (``nd_keep``), as in-place
updates (:mod:`neardup_solr.solr.group_fields` says why in place). A document in no pair is a group of its own and
kept, so a filter on the kept flag never drops it. The kept document follows the ``representative`` rule of
:func:`~neardup_solr.pairs.groups.group_pairs` (``earliest`` id, or ``longest`` text).

How group numbers stay stable
    The run first reads what every document holds. A group takes the number most of its members already carry
    (ties: the smaller number), unless a group listed before it took that number already: when a group splits,
    the part holding most of the old number keeps it; when two merge, the number of the larger survives. Only
    groups that carry no free number get new ones, reserved from the collection's counter. So a re-run after
    more documents arrived leaves the numbers of unchanged groups alone, and a document whose group and flag
    are already right is not written at all.

Resumable and verified
    Only what differs from what the collection holds is sent, so a run that was interrupted (Solr away past the
    client's retries, a crash) resumes by running again: what was written is then already right. After the last
    batch a hard commit makes the updates durable, and every document written is read back (real-time get) and
    compared; a difference raises :class:`GroupWritebackIncomplete`. A document deleted between the reading and
    its update is left deleted and counted (``gone``).

What is eventually consistent
    A search during the run sees some groups written and some not. Documents indexed later by ``index`` carry no
    group until the next run (a folded search shows each of them on its own); documents added through
    :func:`~neardup_solr.engine.online.check_and_add` get their group as they are added.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from neardup_solr.errors import GroupWritebackIncomplete
from neardup_solr.pairs.groups import Group, group_pairs, id_key
from neardup_solr.solr.client import SolrClient
from neardup_solr.solr.companion import mirror_groups
from neardup_solr.solr.group_fields import (
    allocate_groups,
    chunks,
    ensure_group_fields,
    forget_group_numbers,
    group_update,
    groups_in_use,
    groups_of,
    members_of,
    new_group_number,
    read_groups,
    send_group_updates,
)
from neardup_solr.validation import check_choice, check_int

if TYPE_CHECKING:
    from neardup_solr.signing.settings import IndexSettings
    from neardup_solr.solr.searcher import Query, Searcher

log = logging.getLogger(__name__)

__all__ = ["WritebackSummary", "group_of_new_document", "group_signed_documents", "kept_groups",
           "kept_groups_of_dataset", "nearest_kept_group", "plan_groups", "promote_kept", "write_groups"]

# Real-time gets and texts are read this many ids at a time.
_LOOKUP_CHUNK = 500


@dataclass
class WritebackSummary:
    """What :func:`write_groups` did. ``groups`` counts groups of two or more, ``singletons`` documents in no
    pair; ``updated`` documents written, ``unchanged`` documents that already held their group; ``gone``
    documents deleted before their update; ``pairs_skipped`` pairs naming a document not in the collection;
    ``new_groups`` group numbers reserved in this run; ``fields_added`` fields added through the Schema API."""

    documents: int = 0
    groups: int = 0
    singletons: int = 0
    updated: int = 0
    unchanged: int = 0
    gone: list[str] = field(default_factory=list)
    pairs_skipped: int = 0
    new_groups: int = 0
    fields_added: list[str] = field(default_factory=list)
    # Documents of the user's collection given their group in place (a companion installed with --fold).
    mirrored: int = 0
    seconds: float = 0.0

    def format(self) -> str:
        text = (f"{self.documents} documents: {self.groups} groups of near duplicates, {self.singletons} on their "
                f"own; {self.updated} written, {self.unchanged} already right")
        if self.new_groups:
            text += f", {self.new_groups} new group numbers"
        if self.gone:
            text += f"; {len(self.gone)} deleted meanwhile"
        if self.pairs_skipped:
            text += f"; {self.pairs_skipped} pairs skipped (a document not in the collection)"
        if self.mirrored:
            text += f"; {self.mirrored} of your documents given their group in place (install --fold)"
        return text + f" ({self.seconds:.1f} s)"


def plan_groups(groups: Sequence[Group], current: Mapping[str, int | None]) -> list[int | None]:
    """The number each of ``groups`` keeps from those its members carry now (``current``: id -> number or None),
    or None where it must get a new one. A number goes to the group holding most of its carriers (ties: the
    group listed first, then the smaller number), and to one group only.

    >>> old = {"a": 7, "b": 7, "c": 7, "d": None}
    >>> plan_groups([Group(1, "a", ["a", "b"]), Group(2, "c", ["c", "d"])], old)
    [7, None]
    """
    offers: list[tuple[int, int, int]] = []
    for index, group in enumerate(groups):
        held = Counter(current.get(m) for m in group.members)
        held.pop(None, None)
        offers.extend((-count, index, number) for number, count in held.items() if number is not None)
    offers.sort()
    chosen: list[int | None] = [None] * len(groups)
    taken: set[int] = set()
    for _, index, number in offers:
        if chosen[index] is None and number not in taken:
            chosen[index] = number
            taken.add(number)
    return chosen


def _as_edge(pair: Any) -> tuple[str, str]:
    if hasattr(pair, "neighbor_id"):
        return str(pair.id), str(pair.neighbor_id)
    return str(pair[0]), str(pair[1])


def write_groups(
    client: SolrClient,
    pairs: Iterable[Any],
    *,
    representative: str = "earliest",
    dataset: str | None = None,
    batch_size: int = 1000,
) -> WritebackSummary:
    """Give every document (of ``dataset``, or of the collection) its near-duplicate group and kept flag in the
    collection. ``pairs``: ``(id_a, id_b[, distance])`` tuples or :class:`~neardup_solr.pairs.similar_pairs.
    SimilarPair` objects (a report's pairs), over the same documents. ``representative``: ``earliest`` or
    ``longest``, as for :func:`~neardup_solr.pairs.groups.group_pairs`. Updates go in batches of ``batch_size``.

    See the module docstring for how numbers stay stable, and how a run resumes and is verified.

    >>> write_groups(SolrClient(), [("3", "536", 1)]).format()
    '864 documents: 1 groups of near duplicates, 862 on their own; 864 written, 0 already right (0.4 s)'
    """
    representative = check_choice("representative", representative, ("earliest", "longest"))
    batch_size = check_int("batch_size", batch_size, minimum=1, maximum=100_000)
    started = time.perf_counter()
    summary = WritebackSummary()
    summary.fields_added = ensure_group_fields(client)
    forget_group_numbers(client)

    current: dict[str, tuple[int | None, int | None]] = {
        doc_id: (group, keep) for doc_id, group, keep in read_groups(client, dataset)}
    summary.documents = len(current)
    edges = []
    for pair in pairs:
        a, b = _as_edge(pair)
        if a in current and b in current:
            edges.append((a, b))
        else:
            summary.pairs_skipped += 1
    if summary.pairs_skipped:
        log.warning("%d pair(s) name a document that is not in the collection%s: they are left out",
                    summary.pairs_skipped, "" if dataset is None else f"'s data set {dataset!r}")

    texts = _texts(client, {m for edge in edges for m in edge}) if representative == "longest" else None
    grouped = group_pairs(edges, representative=representative, texts=texts)
    in_groups = {m for g in grouped for m in g.members}
    loners = sorted((i for i in current if i not in in_groups), key=id_key)
    everything = grouped + [Group(0, doc_id, [doc_id]) for doc_id in loners]
    summary.groups, summary.singletons = len(grouped), len(loners)

    numbers = plan_groups(everything, {doc_id: held[0] for doc_id, held in current.items()})
    fresh = [i for i, number in enumerate(numbers) if number is None]
    summary.new_groups = len(fresh)
    first = allocate_groups(client, len(fresh))
    for offset, index in enumerate(fresh):
        numbers[index] = first + offset

    wanted: dict[str, tuple[int, int]] = {}
    for group, number in zip(everything, numbers):
        assert number is not None
        for member in group.members:
            wanted[member] = (number, 1 if member == group.representative else 0)
    changed = [doc_id for doc_id, target in wanted.items() if current[doc_id] != target]
    summary.unchanged = len(wanted) - len(changed)
    log.info("%d of %d documents need their group written (%d groups, %d on their own, %d new numbers)",
             len(changed), len(wanted), summary.groups, summary.singletons, summary.new_groups)

    for batch in chunks(changed, batch_size):
        summary.gone += send_group_updates(client, [group_update(i, *wanted[i]) for i in batch])
    if changed:
        client.commit()
    gone = set(summary.gone)
    summary.updated = len(changed) - len(gone)
    _verify(client, [i for i in changed if i not in gone], wanted)
    # A companion whose install asked for folding in the user's own searches: the groups go there too.
    summary.mirrored = mirror_groups(client)
    summary.seconds = round(time.perf_counter() - started, 3)
    log.info("groups written: %s", summary.format())
    return summary


def _texts(client: SolrClient, ids: set[str]) -> dict[str, str]:
    texts: dict[str, str] = {}
    for chunk in chunks(sorted(ids, key=id_key), _LOOKUP_CHUNK):
        texts.update({str(d["id"]): d.get("content", "") for d in client.get_by_ids(chunk, "id,content")})
    return texts


def _verify(client: SolrClient, written: list[str], wanted: Mapping[str, tuple[int, int]]) -> None:
    """Read every written document back and compare; a document deleted meanwhile is not a difference."""
    wrong = []
    for chunk in chunks(written, _LOOKUP_CHUNK):
        held = groups_of(client, chunk)
        wrong += [i for i in chunk if i in held and held[i] != wanted[i]]
    if wrong:
        raise GroupWritebackIncomplete(wrong)


def nearest_kept_group(searcher: "Searcher", query: "Query", doc_id: str,
                       assigned: Mapping[str, tuple[int, int]] | None = None) -> int | None:
    """The group of ``query``'s nearest *kept* neighbour at or above the collection's ``lsh_threshold`` (``doc_id``
    itself left out), or None. ``assigned``: groups given in this run and not yet in the collection, which
    override what searches see."""
    from neardup_solr.engine.online import find_similar

    near = find_similar(searcher, query, searcher.settings.lsh_threshold, exclude_id=doc_id)
    held = groups_of(searcher.client, [m.id for m in near])
    if assigned:
        held.update({m.id: assigned[m.id] for m in near if m.id in assigned})
    for match in near:  # best first
        group, keep = held.get(match.id, (None, None))
        if group is not None and keep == 1:
            return int(group)
    return None


def group_of_new_document(searcher: "Searcher", query: "Query", doc_id: str, checked_at: float) -> dict[str, int]:
    """The group fields for a document :func:`~neardup_solr.engine.online.check_and_add` is about to add, which
    had no near duplicate at ``checked_at``: the group of its nearest *kept* neighbour at or above the
    collection's ``lsh_threshold`` (only possible when ``checked_at`` is higher), or a new group it heads.
    Nothing (``{}``) while the collection's groups are not written, so the fields cost nothing until then."""
    from neardup_solr.solr.group_fields import GROUP_FIELD, KEEP_FIELD

    client = searcher.client
    if not groups_in_use(client):
        return {}
    if checked_at > searcher.settings.lsh_threshold:
        group = nearest_kept_group(searcher, query, doc_id)
        if group is not None:
            return {GROUP_FIELD: group, KEEP_FIELD: 0}
    return {GROUP_FIELD: new_group_number(client), KEEP_FIELD: 1}


def group_signed_documents(client: SolrClient, settings: "IndexSettings", signed: Sequence[tuple[str, str]]) -> int:
    """Give the documents ``backfill`` or ``sync`` just signed (``(id, text)``, committed) their group by the rule
    of :func:`group_of_new_document`: the group of the nearest kept neighbour at or above the collection's
    ``lsh_threshold``, else a new group they head. A document that holds a group already (its text was edited in
    place) keeps it until the next write-back. Documents are taken in id order, so the first of two new near
    duplicates heads the group and the second joins it. Nothing while the collection's groups were never
    written. Returns how many documents were given a group."""
    from neardup_solr.errors import InvalidTextError
    from neardup_solr.solr.searcher import Searcher

    if not signed or not groups_in_use(client):
        return 0
    searcher = Searcher(client, settings)
    held: dict[str, tuple[int | None, int | None]] = {}
    for chunk in chunks([doc_id for doc_id, _ in signed], _LOOKUP_CHUNK):
        held.update(groups_of(client, chunk))
    assigned: dict[str, tuple[int, int]] = {}
    for doc_id, text in sorted(signed, key=lambda item: id_key(item[0])):
        if doc_id not in held or held[doc_id][0] is not None or doc_id in assigned:
            continue  # deleted meanwhile, or grouped already
        try:
            query = searcher.prepare(text, doc_id)
        except InvalidTextError:
            continue
        group = nearest_kept_group(searcher, query, doc_id, assigned)
        assigned[doc_id] = (group, 0) if group is not None else (new_group_number(client), 1)
    gone: list[str] = []
    for batch in chunks(list(assigned.items()), _LOOKUP_CHUNK):
        gone += send_group_updates(client, [group_update(doc_id, group, keep) for doc_id, (group, keep) in batch])
    if assigned:
        client.commit()
        log.info("gave %d newly signed document(s) their near-duplicate group", len(assigned) - len(gone))
    return len(assigned) - len(gone)


def kept_groups(client: SolrClient, ids: list[str]) -> list[int]:
    """The groups whose kept document is among ``ids`` (read before they are deleted); none while the
    collection's groups are not written."""
    if not ids or not groups_in_use(client):
        return []
    found: set[int] = set()
    for chunk in chunks(ids, _LOOKUP_CHUNK):
        found.update(int(g) for g, keep in groups_of(client, chunk).values() if g is not None and keep == 1)
    return sorted(found)


def kept_groups_of_dataset(client: SolrClient, dataset: str) -> list[int]:
    """The groups whose kept document is in ``dataset`` (read before the data set is deleted: one cursor over its
    documents' group fields); none while the collection's groups are not written."""
    if not groups_in_use(client):
        return []
    return sorted({int(group) for _, group, keep in read_groups(client, dataset) if group is not None and keep == 1})


def promote_kept(client: SolrClient, groups: list[int]) -> list[str]:
    """After their kept documents were deleted: make the earliest remaining member of each of ``groups`` (numbers
    as numbers) its kept document, soft-committed. Earliest whatever rule chose the one deleted: the texts are
    not read here, and the next write-back applies ``longest`` again. Returns the ids promoted."""
    promoted: list[tuple[str, int]] = []
    for group in groups:
        members = members_of(client, group)
        if members and not any(keep == 1 for keep in members.values()):
            promoted.append((min(members, key=id_key), group))
    for batch in chunks(promoted, _LOOKUP_CHUNK):
        send_group_updates(client, [group_update(doc_id, group, True) for doc_id, group in batch], soft_commit=True)
    if promoted:
        log.info("promoted %d document(s) to kept after their group's kept document was deleted", len(promoted))
    return [doc_id for doc_id, _ in promoted]
