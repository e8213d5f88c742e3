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
    :func:`~neardup_solr.engine.online.check_and_add`, ``backfill`` and ``sync`` get their group as they are added,
    and deletions hand a group's kept flag on (:mod:`neardup_solr.engine.group_upkeep`).
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from neardup_solr.errors import GroupWritebackIncomplete
from neardup_solr.pairs.groups import Group, group_pairs, id_key
from neardup_solr.batching import chunks
from neardup_solr.solr.collection import Collection, SolrTarget, collection_of, group_update
from neardup_solr.solr.companion import mirror_groups
from neardup_solr.validation import check_choice, check_int

log = logging.getLogger(__name__)

__all__ = ["WritebackSummary", "plan_groups", "write_groups"]

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
    client: SolrTarget,
    pairs: Iterable[Any],
    *,
    representative: str = "earliest",
    dataset: str | None = None,
    batch_size: int = 1000,
) -> WritebackSummary:
    """Give every document (of ``dataset``, or of the collection) its near-duplicate group and kept flag in the
    collection (``client``: a SolrClient, or any :class:`~neardup_solr.solr.collection.Collection`). ``pairs``:
    ``(id_a, id_b[, distance])`` tuples or :class:`~neardup_solr.pairs.similar_pairs.
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
    coll = collection_of(client)
    summary.fields_added = coll.ensure_group_fields()
    coll.forget_group_numbers()

    current: dict[str, tuple[int | None, int | None]] = {
        doc_id: (group, keep) for doc_id, group, keep in coll.read_groups(dataset)}
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

    texts = _texts(coll, {m for edge in edges for m in edge}) if representative == "longest" else None
    grouped = group_pairs(edges, representative=representative, texts=texts)
    in_groups = {m for g in grouped for m in g.members}
    loners = sorted((i for i in current if i not in in_groups), key=id_key)
    everything = grouped + [Group(0, doc_id, [doc_id]) for doc_id in loners]
    summary.groups, summary.singletons = len(grouped), len(loners)

    numbers = plan_groups(everything, {doc_id: held[0] for doc_id, held in current.items()})
    fresh = [i for i, number in enumerate(numbers) if number is None]
    summary.new_groups = len(fresh)
    first = coll.allocate_groups(len(fresh))
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
        summary.gone += coll.write_groups([group_update(i, *wanted[i]) for i in batch])
    if changed:
        coll.commit()
    gone = set(summary.gone)
    summary.updated = len(changed) - len(gone)
    _verify(coll, [i for i in changed if i not in gone], wanted)
    # A companion whose install asked for folding in the user's own searches: the groups go there too.
    summary.mirrored = mirror_groups(coll)
    summary.seconds = round(time.perf_counter() - started, 3)
    log.info("groups written: %s", summary.format())
    return summary


def _texts(coll: Collection, ids: set[str]) -> dict[str, str]:
    texts: dict[str, str] = {}
    for chunk in chunks(sorted(ids, key=id_key), _LOOKUP_CHUNK):
        texts.update({str(d["id"]): d.get("content", "") for d in coll.by_ids(chunk, "id,content")})
    return texts


def _verify(coll: Collection, written: list[str], wanted: Mapping[str, tuple[int, int]]) -> None:
    """Read every written document back and compare; a document deleted meanwhile is not a difference."""
    wrong = []
    for chunk in chunks(written, _LOOKUP_CHUNK):
        held = coll.groups_of(chunk)
        wrong += [i for i in chunk if i in held and held[i] != wanted[i]]
    if wrong:
        raise GroupWritebackIncomplete(wrong)
