"""Grouping near-duplicate pairs into connected components, and the keep-list derived from them."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup_solr.errors import InvalidParameterError, InvalidRecordError
from neardup_solr.pairs.groups import (
    DisjointSet,
    Group,
    group_pairs,
    id_key,
    keep_list,
    read_distance_pairs,
    read_groups_jsonl,
    write_groups_jsonl,
    write_keep_list,
)

# Few distinct ids so random pairs collide and build multi-pair components.
int_ids = st.integers(min_value=0, max_value=30)
digit_ids = int_ids.map(str)
text_ids = st.sampled_from(["a", "b", "doc10", "doc9", "x", "B", "\u00e9", "10a", "\u00b2"])
mixed_ids = st.one_of(digit_ids, text_ids)
distances = st.integers(min_value=0, max_value=5)


def pair_lists(ids):
    return st.lists(st.tuples(ids, ids, distances), max_size=40)


def reference_components(pairs):
    """Components by repeated merging: slow but obviously right."""
    comps: list[set] = []
    for a, b, _ in pairs:
        touching = [c for c in comps if a in c or b in c]
        merged = {a, b}.union(*touching)
        comps = [c for c in comps if not any(c is t for t in touching)] + [merged]
    return comps


def check_invariants(pairs, groups):
    by_member = {}
    for g in groups:
        for m in g.members:
            assert m not in by_member, "groups must be disjoint"
            by_member[m] = g
    seen = {x for a, b, _ in pairs for x in (a, b)}
    assert set(by_member) == seen
    for a, b, _ in pairs:
        assert by_member[a] is by_member[b]
    for g in groups:
        own = [d for a, _, d in pairs if by_member[a] is g]
        assert g.max_distance == max(own)
        assert g.members == sorted(g.members, key=id_key)
        assert len(set(g.members)) == len(g.members)
        assert g.representative in g.members
    assert [g.group_id for g in groups] == list(range(1, len(groups) + 1))
    firsts = [id_key(g.members[0]) for g in groups]
    assert firsts == sorted(firsts)
    assert {frozenset(g.members) for g in groups} == set(map(frozenset, reference_components(pairs)))


@settings(max_examples=300)
@given(pair_lists(st.one_of(int_ids, mixed_ids)))
def test_group_invariants(pairs):
    groups = group_pairs(pairs)
    check_invariants(pairs, groups)
    for g in groups:
        assert g.representative == min(g.members, key=id_key)


@settings(max_examples=200)
@given(pair_lists(digit_ids))
def test_earliest_is_numeric_for_digit_strings(pairs):
    for g in group_pairs(pairs):
        assert g.representative == str(min(int(m) for m in g.members))


@settings(max_examples=200)
@given(pair_lists(mixed_ids), st.data())
def test_longest_representative(pairs, data):
    ids = sorted({x for a, b, _ in pairs for x in (a, b)}, key=id_key)
    lengths = data.draw(st.lists(st.integers(0, 4), min_size=len(ids), max_size=len(ids)))
    texts = {i: "w" * n for i, n in zip(ids, lengths)}
    groups = group_pairs(pairs, representative="longest", texts=texts)
    check_invariants(pairs, groups)
    for g in groups:
        longest = max(len(texts[m]) for m in g.members)
        assert len(texts[g.representative]) == longest
        # ties go to the earliest of the longest
        assert g.representative == min((m for m in g.members if len(texts[m]) == longest), key=id_key)


@given(pair_lists(mixed_ids))
def test_keep_list_keeps_one_per_group_and_all_ungrouped(pairs):
    groups = group_pairs(pairs)
    all_ids = [str(i) for i in range(40)] + ["a", "zz"]
    keep = keep_list(groups, all_ids=all_ids)
    grouped = {m for g in groups for m in g.members}
    assert len(keep) == len(set(keep))
    assert set(keep) == {g.representative for g in groups} | (set(all_ids) - grouped)
    for g in groups:
        assert len(set(g.members) & set(keep)) == 1
    assert keep_list(groups) == sorted({g.representative for g in groups}, key=id_key)


@given(pair_lists(st.one_of(int_ids, mixed_ids)))
def test_jsonl_round_trip(tmp_path_factory, pairs):
    path = tmp_path_factory.mktemp("groups") / "groups.jsonl"
    groups = group_pairs(pairs)
    assert write_groups_jsonl(groups, path) == len(groups)
    assert read_groups_jsonl(path) == groups


def test_hand_example():
    pairs = [("536", "3", 1), ("10", "9", 0), ("900", "536", 2), ("9", "11", 3), ("b", "a", 1)]
    groups = group_pairs(pairs)
    assert groups == [
        Group(1, "3", ["3", "536", "900"], 2),
        Group(2, "9", ["9", "10", "11"], 3),
        Group(3, "a", ["a", "b"], 1),
    ]
    texts = {"3": "Art's Deli", "536": "Art's Delicatessen", "900": "Art's Delicatessen",
             "9": "x", "10": "xyz", "11": "xy", "a": "same", "b": "same"}
    longest = group_pairs(pairs, representative="longest", texts=texts)
    assert [g.representative for g in longest] == ["536", "10", "a"]
    assert keep_list(groups, all_ids=[str(i) for i in range(1, 13)] + ["a", "b", "c"]) == \
        ["1", "2", "3", "4", "5", "6", "7", "8", "9", "12", "a", "c"]


def test_jsonl_format(tmp_path):
    path = tmp_path / "g.jsonl"
    write_groups_jsonl(group_pairs([("3", "536", 1), (7, 8, 0)]), path)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == [
        {"group_id": 1, "representative": "3", "members": ["3", "536"], "max_distance": 1},
        {"group_id": 2, "representative": 7, "members": [7, 8], "max_distance": 0},
    ]


def test_write_keep_list(tmp_path):
    path = tmp_path / "keep.txt"
    assert write_keep_list(["1", "3", "a"], path) == 3
    assert path.read_text(encoding="utf-8") == "1\n3\na\n"


def test_pairs_without_distance_and_self_pairs():
    groups = group_pairs([("1", "2"), ("2", "3", None), ("5", "5", 0)])
    assert groups == [Group(1, "1", ["1", "2", "3"], None), Group(2, "5", ["5"], 0)]
    assert group_pairs([]) == []


def test_bad_arguments():
    with pytest.raises(InvalidParameterError, match="representative"):
        group_pairs([("1", "2", 0)], representative="first")
    with pytest.raises(InvalidParameterError, match="texts"):
        group_pairs([("1", "2", 0)], representative="longest")
    with pytest.raises(InvalidRecordError, match="no text"):
        group_pairs([("1", "2", 0)], representative="longest", texts={"1": "x"})
    with pytest.raises(InvalidParameterError, match=r"pairs must be \(id_a, id_b\) or"):
        group_pairs([("1",)])


def test_longest_accepts_text_keys_for_int_ids():
    groups = group_pairs([(1, 2, 0)], representative="longest", texts={"1": "a", "2": "bb"})
    assert groups[0].representative == 2


def test_read_distance_pairs(tmp_path):
    path = tmp_path / "report.tsv"
    path.write_text("# id\tneighbor_id\tedit_distance\tscore\n3\t536\t1\t6.0\n7\t8\n9\t10\t0.5\n", encoding="utf-8")
    assert read_distance_pairs(path) == [("3", "536", 1), ("7", "8", None), ("9", "10", 0.5)]
    path.write_text("3\t536\tfar\n", encoding="utf-8")
    with pytest.raises(InvalidRecordError, match="line 1"):
        read_distance_pairs(path)


def test_disjoint_set_basics():
    ds = DisjointSet(["a", "b", "c", "d"])
    assert len(ds) == 4 and "a" in ds and "z" not in ds
    ds.union("a", "b")
    ds.union("c", "d")
    assert ds.connected("a", "b") and not ds.connected("a", "c")
    ds.union("b", "d")
    assert ds.connected("a", "c") and ds.set_size("c") == 4
    assert sorted(map(sorted, ds.sets())) == [["a", "b", "c", "d"]]


def test_disjoint_set_long_chain_has_no_recursion_limit():
    ds = DisjointSet()
    n = 50_000
    for i in range(n):
        ds.union(i, i + 1)
    assert ds.set_size(0) == n + 1
    assert ds.find(n) == ds.find(0)


def test_id_key_orders_numbers_first_then_strings():
    ids = ["10", "a", "9", 2, "doc1", "\u00b2", "007"]
    assert sorted(ids, key=id_key) == [2, "007", "9", "10", "a", "doc1", "\u00b2"]
