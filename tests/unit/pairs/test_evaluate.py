"""Precision/recall/F1 of found pairs against gold pairs."""

from __future__ import annotations

import pytest

from neardup_solr.errors import InvalidRecordError
from neardup_solr.pairs.evaluate import (
    EvaluationResult,
    evaluate,
    evaluate_files,
    false,
    missed,
    normalize_pair,
    read_pairs,
)


def test_normalize_pair_numeric_and_string_order():
    assert normalize_pair("536", "3") == ("3", "536")  # numerically, although "3" > "536" as strings
    assert normalize_pair(10, 9) == ("9", "10")
    assert normalize_pair("b", "a") == ("a", "b")
    assert normalize_pair("doc10", "doc9") == ("doc10", "doc9")  # not both integers: string order
    assert normalize_pair("10", "x") == ("10", "x")
    assert normalize_pair("\u00b2", "1") == ("1", "\u00b2")  # a superscript digit is not an integer id


def test_hand_computed_example():
    found = {("1", "2"), ("4", "3"), ("5", "6"), ("7", "8")}
    gold = {("2", "1"), ("3", "4"), ("9", "10")}
    r = evaluate(found, gold)
    assert (r.found, r.true_positives, r.gold) == (4, 2, 3)
    assert r.precision == pytest.approx(0.5)
    assert r.recall == pytest.approx(2 / 3)
    assert r.f1 == pytest.approx(2 * 0.5 * (2 / 3) / (0.5 + 2 / 3))  # 4/7
    assert r.f1 == pytest.approx(4 / 7)
    assert (r.false_positives, r.false_negatives) == (2, 1)
    assert missed(found, gold) == [("9", "10")]
    assert false(found, gold) == [("5", "6"), ("7", "8")]


def test_order_and_duplicates_do_not_matter():
    r = evaluate([("536", "3"), ("3", "536"), (3, 536)], [("3", "536")])
    assert (r.found, r.true_positives, r.gold, r.precision, r.recall, r.f1) == (1, 1, 1, 1.0, 1.0, 1.0)


def test_extra_columns_are_ignored():
    assert evaluate([("3", "536", 1, 6.0)], [("536", "3")]).true_positives == 1


@pytest.mark.parametrize("found, gold", [(set(), set()), (set(), {("1", "2")}), ({("1", "2")}, set())])
def test_empty_sets_are_zero_not_errors(found, gold):
    r = evaluate(found, gold)
    assert (r.true_positives, r.precision, r.recall, r.f1) == (0, 0.0, 0.0, 0.0)
    assert (r.found, r.gold) == (len(found), len(gold))


def test_no_overlap():
    r = evaluate({("1", "2")}, {("3", "4")})
    assert (r.precision, r.recall, r.f1) == (0.0, 0.0, 0.0)


def test_format():
    text = EvaluationResult(4, 2, 3, 0.5, 2 / 3, 4 / 7).format()
    assert "found 4" in text and "2 of 3" in text
    assert "precision 0.500" in text and "recall 0.667" in text and "F1 0.571" in text


def test_read_pairs_and_evaluate_files(tmp_path):
    gold = tmp_path / "gold.tsv"
    gold.write_text("# fodors_id\tzagats_id\n2\t535\n3\t536\n\n11\t549\n", encoding="utf-8")
    report = tmp_path / "pairs.tsv"
    report.write_text("# id\tneighbor_id\tedit_distance\tscore\r\n536\t3\t1\t6.0\r\n2\t535\t0\t9.5\r\n"
                      "7\t8\t2\t1.0\r\n", encoding="utf-8")
    assert read_pairs(gold) == {("2", "535"), ("3", "536"), ("11", "549")}
    assert read_pairs(report) == {("3", "536"), ("2", "535"), ("7", "8")}
    r = evaluate_files(report, gold)
    assert (r.found, r.true_positives, r.gold) == (3, 2, 3)
    assert r.precision == pytest.approx(2 / 3) and r.recall == pytest.approx(2 / 3)


def test_read_pairs_space_separated(tmp_path):
    path = tmp_path / "pairs.txt"
    path.write_text("3 536\n  # indented comment\n9 10\n", encoding="utf-8")
    assert read_pairs(path) == {("3", "536"), ("9", "10")}


def test_read_pairs_rejects_a_single_column(tmp_path):
    path = tmp_path / "bad.tsv"
    path.write_text("1\t2\n42\n", encoding="utf-8")
    with pytest.raises(InvalidRecordError, match="line 2"):
        read_pairs(path)


def test_packaged_gold_against_itself():
    from neardup_solr.io.restaurants import gold_pairs_path

    r = evaluate_files(gold_pairs_path(), gold_pairs_path())
    assert (r.found, r.true_positives, r.precision, r.recall, r.f1) == (112, 112, 1.0, 1.0, 1.0)
