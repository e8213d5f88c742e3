"""Bisection over key ranges (engine/key_ranges.py): what it finds and what it reads, against sets in memory."""

import random

import pytest

from neardup_solr.engine.key_ranges import KeyRange, fences, find_gone


def sides(held: list[str], shown: set[str]):
    reads: list[KeyRange] = []

    def held_count(r: KeyRange) -> int:
        return sum(1 for k in held if r.holds(k))

    def shown_count(r: KeyRange) -> int:
        return sum(1 for k in shown if r.holds(k))

    def gone_in(r: KeyRange) -> list[str]:
        reads.append(r)
        return [k for k in held if r.holds(k) and k not in shown]

    return held_count, shown_count, gone_in, reads


def test_fences_are_every_nth_key_and_at_most_the_limit():
    keys = [f"k{i:05d}" for i in range(10_000)]
    assert fences(keys, 1_000, 100) == [f"k{i:05d}" for i in range(1_000, 10_000, 1_000)]
    wide = fences(keys, 10, 4)  # 4 cuts at most: 5 ranges of 2,000
    assert wide == ["k02000", "k04000", "k06000", "k08000"]
    assert fences(keys[:999], 1_000, 100) == []
    with pytest.raises(ValueError):
        fences(keys, 0, 10)


def test_finds_every_deletion_reading_only_the_ranges_that_hold_one():
    rng = random.Random(5)
    # Keys as users write them: spaces, quotes, backslashes, query syntax, other scripts.
    alphabet = 'ab z"\\*:[]{}()-TOü中'
    held = sorted({"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 8))) for _ in range(20_000)})
    cuts = fences(held, 100, 4_096)
    deleted = set(rng.sample(held, 7))
    count_held, count_shown, gone_in, reads = sides(held, set(held) - deleted)
    search = find_gone(cuts, count_held, count_shown, gone_in)
    assert search.gone == sorted(deleted)
    assert search.ranges_read == len(reads) <= 7
    assert all(any(r.holds(k) for k in deleted) for r in reads)  # no range read without a deletion in it
    assert search.ranges_counted < len(cuts)  # far fewer counts than ranges


def test_keys_added_after_the_cuts_and_beyond_the_last_cut_are_covered():
    held = [f"m{i:04d}" for i in range(0, 5_000)]
    cuts = fences(held, 100, 4_096)
    later = ["a-first", "m0050x", "zzz-last"]  # before the first cut, between cuts, after the last
    everything = sorted(held + later)
    count_held, count_shown, gone_in, _ = sides(everything, set(everything) - set(later))
    assert find_gone(cuts, count_held, count_shown, gone_in).gone == sorted(later)


def test_a_deletion_balanced_in_its_range_by_an_unsigned_addition_is_not_found():
    # The caller's rule (CompanionSyncer.reconcile): found fewer than the totals differ by -> read every key.
    held = [f"k{i:04d}" for i in range(3_000)]
    cuts = fences(held, 100, 4_096)
    shown = (set(held) - {"k0150"}) | {"k0150a"}  # the same range: its counts agree
    count_held, count_shown, gone_in, _ = sides(held, shown)
    assert find_gone(cuts, count_held, count_shown, gone_in).gone == []


def test_no_cuts_reads_the_whole_range_once():
    held = ["a", "b", "c"]
    count_held, count_shown, gone_in, reads = sides(held, {"a", "c"})
    search = find_gone([], count_held, count_shown, gone_in)
    assert search.gone == ["b"] and reads == [KeyRange(None, None)] and search.ranges_counted == 0
