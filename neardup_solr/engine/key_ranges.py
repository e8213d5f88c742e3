"""Finding what a companion holds that the user's collection no longer shows without reading every key: counts of
both over ranges of the key, narrowed down to the ranges where the companion holds more (only a deletion makes it
hold more), whose keys alone are then read. Pure: the counting and reading are the caller's callables.

The ranges are cut at *fences*: every so many keys of the companion's last full read, in key order. Between two full
reads the keys move on; the fences stay valid cut points (any string is one), only less even.

A deletion can hide in the counts of its range when an addition not signed yet balances it there; the caller
compares what this finds with how many more documents the companion holds in all, and reads every key when this
found fewer (see :meth:`neardup_solr.engine.companion_sync.CompanionSyncer.reconcile`).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Sequence


@dataclass(frozen=True)
class KeyRange:
    """The keys from ``low`` (inclusive) to ``high`` (exclusive); None leaves that end open."""

    low: str | None
    high: str | None

    def holds(self, key: str) -> bool:
        return (self.low is None or key >= self.low) and (self.high is None or key < self.high)


def fences(sorted_keys: Sequence[str], every: int, most: int) -> list[str]:
    """Cut points for :func:`find_gone`: every ``every``-th of ``sorted_keys`` (ascending, distinct), at most
    ``most`` of them (wider apart for more keys)."""
    if every < 1 or most < 0:
        raise ValueError("every must be >= 1 and most >= 0")
    step = max(every, -(-len(sorted_keys) // (most + 1)))
    return list(sorted_keys[step::step])[:most]


@dataclass
class Search:
    """What :func:`find_gone` found (``gone``: ascending), and what it cost: ranges counted (on each side) and
    ranges whose keys were read."""

    gone: list[str]
    ranges_counted: int = 0
    ranges_read: int = 0


def find_gone(cuts: Sequence[str], held_count: Callable[[KeyRange], int], shown_count: Callable[[KeyRange], int],
              gone_in: Callable[[KeyRange], list[str]], *, fanout: int = 16, workers: int = 4) -> Search:
    """The keys ``held_count``'s side holds and ``shown_count``'s does not, looked for only in ranges where the
    first counts more: the whole key space is split at ``cuts`` (ascending :func:`fences`) into ``fanout`` parts,
    each part counted on both sides (``workers`` counts at once), the parts that hold more split again, down to
    the ranges between two neighbouring cuts, whose keys ``gone_in`` compares. The whole space is not counted:
    the caller calls this when the totals differ."""
    if fanout < 2:
        raise ValueError("fanout must be >= 2")
    ends: list[str | None] = [None, *cuts, None]
    search = Search(gone=[])

    def key_range(first: int, last: int) -> KeyRange:  # the ranges between cuts first..last-1 together
        return KeyRange(ends[first], ends[last])

    def parts(first: int, last: int) -> list[tuple[int, int]]:
        width = last - first
        size = -(-width // fanout)
        return [(start, min(start + size, last)) for start in range(first, last, size)]

    with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="neardup-key-ranges") as pool:
        pending = [(0, len(ends) - 1)]
        while pending:
            leaves = [span for span in pending if span[1] - span[0] == 1]
            for first, last in leaves:
                search.gone.extend(gone_in(key_range(first, last)))
                search.ranges_read += 1
            children = [part for span in pending if span[1] - span[0] > 1 for part in parts(*span)]
            ranges = [key_range(*part) for part in children]
            held = list(pool.map(held_count, ranges))
            shown = list(pool.map(shown_count, ranges))
            search.ranges_counted += len(ranges)
            pending = [part for part, h, s in zip(children, held, shown) if h > s]
    search.gone.sort()
    return search
