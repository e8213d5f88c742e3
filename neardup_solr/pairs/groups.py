"""Turn near-duplicate pairs into groups (connected components) and a keep-list for deduplication.

Pairs are edges: if A~B and B~C are reported, A, B and C form one group even when A and C were never
compared, because deduplication has to keep one document per cluster, not per pair.

>>> groups = group_pairs([("3", "536", 1), ("536", "900", 2), ("7", "8", 0)])
>>> [(g.group_id, g.representative, g.members, g.max_distance) for g in groups]
[(1, '3', ['3', '536', '900'], 2), (2, '7', ['7', '8'], 0)]
>>> keep_list(groups, all_ids=["3", "5", "7", "8", "536", "900"])
['3', '5', '7']
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Hashable, Iterable, Mapping

from neardup_solr.errors import InvalidParameterError, InvalidRecordError
from neardup_solr.io.outputs import write_atomically
from neardup_solr.validation import check_choice, parse_tsv_id, tsv_id
from neardup_solr.io.inputs import display_name, open_text_lines

log = logging.getLogger(__name__)

REPRESENTATIVES = ("earliest", "longest")


def id_key(value: Any) -> tuple:
    """Sort key for ids: integers and ASCII digit strings by value ("9" < "10"), before any other string.

    The final string element makes the order total, so "7" and "007" (equal numbers) still sort stably.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return (0, value, str(value))
    text = str(value)
    if text.isascii() and text.isdigit():
        return (0, int(text), text)
    return (1, 0, text)


class DisjointSet:
    """Union-find over hashable items, with path compression and union by size (near-constant time per call)."""

    def __init__(self, items: Iterable[Hashable] = ()):
        self._parent: dict[Hashable, Hashable] = {}
        self._size: dict[Hashable, int] = {}
        for item in items:
            self.add(item)

    def __contains__(self, item: Hashable) -> bool:
        return item in self._parent

    def __len__(self) -> int:
        return len(self._parent)

    def add(self, item: Hashable) -> None:
        if item not in self._parent:
            self._parent[item] = item
            self._size[item] = 1

    def find(self, item: Hashable) -> Hashable:
        """The root of item's set (item is added as a singleton when unseen)."""
        self.add(item)
        root = item
        while self._parent[root] != root:
            root = self._parent[root]
        # Iterative compression: long chains from adversarial input must not hit the recursion limit.
        while self._parent[item] != root:
            self._parent[item], item = root, self._parent[item]
        return root

    def union(self, a: Hashable, b: Hashable) -> Hashable:
        """Merge the sets of a and b; returns the new root."""
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return ra
        if self._size[ra] < self._size[rb]:
            ra, rb = rb, ra
        self._parent[rb] = ra
        self._size[ra] += self._size.pop(rb)
        return ra

    def connected(self, a: Hashable, b: Hashable) -> bool:
        return self.find(a) == self.find(b)

    def set_size(self, item: Hashable) -> int:
        return self._size[self.find(item)]

    def sets(self) -> list[list[Hashable]]:
        """Every set as a list of its items (no particular order)."""
        by_root: dict[Hashable, list[Hashable]] = {}
        for item in self._parent:
            by_root.setdefault(self.find(item), []).append(item)
        return list(by_root.values())


@dataclass
class Group:
    group_id: int
    representative: Any
    members: list
    max_distance: Any = None

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, obj: Mapping) -> "Group":
        return cls(int(obj["group_id"]), obj["representative"], list(obj["members"]), obj.get("max_distance"))


def group_pairs(
    pairs: Iterable[tuple],
    representative: str = "earliest",
    texts: Mapping[Any, str] | None = None,
) -> list[Group]:
    """Connected components of the pairs ``(id_a, id_b, distance)``, ordered by their smallest member.

    ``representative``: ``"earliest"`` keeps the smallest id (numeric-aware); ``"longest"`` keeps the member
    with the longest text in ``texts`` (ties go to the earliest), useful when the longer copy is the complete one.
    A pair may omit its distance (or give None); ``max_distance`` is None for a group with no known distance.
    A pair of an id with itself makes a group of one.
    """
    representative = check_choice("representative", representative, REPRESENTATIVES)
    if representative == "longest" and texts is None:
        raise InvalidParameterError("texts", "a mapping from id to text with representative='longest'", texts)

    ds = DisjointSet()
    edges: list[tuple[Any, Any]] = []
    for pair in pairs:
        if len(pair) not in (2, 3):
            raise InvalidParameterError("pairs", "(id_a, id_b) or (id_a, id_b, distance) tuples", pair)
        a, b = pair[0], pair[1]
        distance = pair[2] if len(pair) == 3 else None
        ds.union(a, b)
        edges.append((a, distance))

    max_by_root: dict[Hashable, Any] = {}
    for a, distance in edges:
        if distance is None:
            continue
        root = ds.find(a)
        current = max_by_root.get(root)
        if current is None or distance > current:
            max_by_root[root] = distance

    components = [sorted(members, key=id_key) for members in ds.sets()]
    components.sort(key=lambda members: id_key(members[0]))
    groups = []
    for group_id, members in enumerate(components, start=1):
        rep = members[0] if representative == "earliest" or texts is None else _longest(members, texts)
        groups.append(Group(group_id, rep, members, max_by_root.get(ds.find(members[0]))))
    log.debug("%d pairs -> %d groups covering %d ids", len(edges), len(groups), len(ds))
    return groups


def _longest(members: list, texts: Mapping[Any, str]) -> Any:
    best, best_len = None, -1
    for member in members:  # members are sorted, so a strict ">" leaves ties with the earliest
        text = texts.get(member)
        if text is None:
            text = texts.get(str(member))
        if text is None:
            raise InvalidRecordError("no text for this id, so the longest member cannot be chosen",
                                     record_id=member)
        if len(text) > best_len:
            best, best_len = member, len(text)
    return best


def group_line(group: Group) -> str:
    """A group as its line of the groups file (JSON, then ``\n``): the one spelling every writer of that file
    uses (the Spark jobs format their groups with it on the executors)."""
    return json.dumps(group.to_dict(), ensure_ascii=False) + "\n"


def write_groups_jsonl(groups: Iterable[Group], path: str | Path) -> int:
    """One JSON object per line (group_id, representative, members, max_distance); returns the group count.
    The file appears complete or not at all (:func:`~neardup_solr.io.outputs.write_atomically`)."""
    lines = [group_line(group) for group in groups]
    write_atomically(path, lines)
    return len(lines)


def read_groups_jsonl(path: str | Path) -> list[Group]:
    groups = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                groups.append(Group.from_dict(json.loads(line)))
            except (ValueError, KeyError, TypeError) as exc:
                raise InvalidRecordError(f"not a group object: {exc}", source=path, line=lineno) from exc
    return groups


def keep_list(groups: Iterable[Group], all_ids: Iterable | None = None) -> list:
    """The ids to keep when deduplicating: each group's representative, plus (when ``all_ids`` is given)
    every id that is in no group. Sorted numeric-aware."""
    groups = list(groups)
    keep = {g.representative for g in groups}
    if all_ids is not None:
        grouped = {m for g in groups for m in g.members}
        keep.update(i for i in all_ids if i not in grouped)
    return sorted(keep, key=id_key)


def write_keep_list(ids: Iterable, path: str | Path) -> int:
    """One id per line (quoted when it must be: :func:`~neardup_solr.validation.tsv_id`); returns the count.
    Written atomically, like the groups."""
    lines = [f"{tsv_id(record_id)}\n" for record_id in ids]
    write_atomically(path, lines)
    return len(lines)


def read_distance_pairs(path: str | Path | list[str], source: str | Path | None = None
                        ) -> list[tuple[str, str, int | float | None]]:
    """``(id_a, id_b, distance)`` from a report TSV (``id, neighbor_id, edit_distance, ...``; ``#`` comments).

    ``path`` is a file (compressed or not, ``-`` for standard input) or its lines already read (then
    ``source`` names them in errors). The distance is None when the file has no third column, so a gold-style
    pair list can be grouped too.
    """

    lines = path if isinstance(path, list) else open_text_lines(path)
    name = source if source is not None else "pairs" if isinstance(path, list) else display_name(path)
    pairs = []
    for lineno, line in enumerate(lines, start=1):
        line = line.rstrip("\r\n")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        cols = [parse_tsv_id(c) for c in line.split("\t")]
        if len(cols) < 2 or not cols[0] or not cols[1]:
            raise InvalidRecordError(f"expected id<TAB>id[<TAB>distance], got {line!r}", source=name, line=lineno)
        distance: int | float | None = None
        if len(cols) > 2 and cols[2]:
            try:
                distance = int(cols[2])
            except ValueError:
                try:
                    distance = float(cols[2])
                except ValueError as exc:
                    raise InvalidRecordError(f"distance {cols[2]!r} is not a number",
                                             source=name, line=lineno) from exc
        pairs.append((cols[0], cols[1], distance))
    return pairs
