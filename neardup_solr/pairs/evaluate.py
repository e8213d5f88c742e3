"""Precision, recall and F1 of a set of found pairs against a gold set.

Pairs are unordered: ``(3, 536)`` and ``(536, 3)`` are the same match, so every pair is stored in a
canonical order (numeric when both ids are integers, string order otherwise) and compared as sets.

>>> r = evaluate({("536", "3"), ("1", "2")}, {("3", "536"), ("11", "549")})
>>> (r.true_positives, r.precision, r.recall)
(1, 0.5, 0.5)
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from neardup_solr.errors import InvalidRecordError
from neardup_solr.validation import parse_tsv_id

log = logging.getLogger(__name__)

Pair = tuple[str, str]


def _as_int(value: str) -> int | None:
    # ASCII only: str.isdigit() accepts characters such as "²" that int() rejects.
    text = value.strip()
    body = text[1:] if text[:1] in "+-" else text
    return int(text) if body.isascii() and body.isdigit() else None


def normalize_pair(a, b) -> Pair:
    """The canonical form of an unordered pair: both ids as strings, the smaller first."""
    a, b = str(a).strip(), str(b).strip()
    ia, ib = _as_int(a), _as_int(b)
    if ia is not None and ib is not None:
        swap = (ib, b) < (ia, a)
    else:
        swap = b < a
    return (b, a) if swap else (a, b)


def normalize_pairs(pairs: Iterable) -> set[Pair]:
    """Canonical pairs from any iterable of 2-or-more-item sequences (extra items such as a distance are ignored)."""
    return {normalize_pair(p[0], p[1]) for p in pairs}


def read_pairs(path: str | Path) -> set[Pair]:
    """The unordered pairs of a TSV file: first two columns are the ids, ``#`` lines are comments.

    Reads both the gold file and the report written by :mod:`neardup_solr.engine.report` (whose further columns,
    distance and score, are ignored). A line without a tab is split on whitespace, so a hand-written
    ``3 536`` list works too.
    """
    pairs: set[Pair] = set()
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            line = line.rstrip("\r\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            cols = line.split("\t") if "\t" in line else line.split()
            if len(cols) < 2 or not cols[0].strip() or not cols[1].strip():
                raise InvalidRecordError(
                    f"expected two ids separated by a tab, got {line!r}", source=path, line=lineno,
                )
            pairs.add(normalize_pair(parse_tsv_id(cols[0]), parse_tsv_id(cols[1])))
    return pairs


@dataclass
class EvaluationResult:
    found: int
    true_positives: int
    gold: int
    precision: float
    recall: float
    f1: float

    @property
    def false_positives(self) -> int:
        return self.found - self.true_positives

    @property
    def false_negatives(self) -> int:
        return self.gold - self.true_positives

    def format(self) -> str:
        return (f"found {self.found} pairs, {self.true_positives} of {self.gold} gold pairs: "
                f"precision {self.precision:.3f}, recall {self.recall:.3f}, F1 {self.f1:.3f}")


def evaluate(found_pairs: Iterable, gold_pairs: Iterable) -> EvaluationResult:
    """Compare two pair collections; order within a pair and duplicates do not matter.

    An empty found set has precision 0 and an empty gold set recall 0 (rather than a division error),
    so a run that finds nothing never looks perfect.
    """
    found, gold = normalize_pairs(found_pairs), normalize_pairs(gold_pairs)
    tp = len(found & gold)
    precision = tp / len(found) if found else 0.0
    recall = tp / len(gold) if gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return EvaluationResult(len(found), tp, len(gold), precision, recall, f1)


def evaluate_files(pairs_path: str | Path, gold_path: str | Path) -> EvaluationResult:
    result = evaluate(read_pairs(pairs_path), read_pairs(gold_path))
    log.info("%s against %s: %s", pairs_path, gold_path, result.format())
    return result


def _sorted_pairs(pairs: set[Pair]) -> list[Pair]:
    def key(pair: Pair):
        return tuple((0, n, "") if (n := _as_int(x)) is not None else (1, 0, x) for x in pair)

    return sorted(pairs, key=key)


def missed(found: Iterable, gold: Iterable) -> list[Pair]:
    """Gold pairs that were not found (false negatives), sorted."""
    return _sorted_pairs(normalize_pairs(gold) - normalize_pairs(found))


def false(found: Iterable, gold: Iterable) -> list[Pair]:
    """Found pairs that are not in the gold set (false positives), sorted."""
    return _sorted_pairs(normalize_pairs(found) - normalize_pairs(gold))
