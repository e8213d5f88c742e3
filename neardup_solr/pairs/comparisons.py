"""Field-by-field comparison of two records: each field's pair of values falls into one of a few agreement levels.

A field has a kind, and the kind fixes its levels, from the weakest agreement (level 0, "else") to the strongest
(the last level, "exact"). A value missing on either side gives :data:`MISSING` (-1): the field then says
nothing about the pair (Fellegi-Sunter gives it weight 0, :mod:`neardup_solr.pairs.fellegi_sunter`).

Kinds:
  ``name``    person or business names: exact; same words in another order (swapped first and last name);
              Jaro-Winkler >= 0.92; token-sorted similarity >= 0.8; one name's words start the other's (an
              initial, a shortened first name); else
  ``text``    free text such as an address: exact; token-sorted similarity >= 0.9; >= 0.75; >= 0.5; else
  ``date``    dates written in any of the common ways (ISO, ``03/07/1984``, ``07.03.1984``, ``March 7, 1984``,
              ``7 Mar 84``, ``19840307``): the same day; one digit off or day and month swapped; within a year;
              else. A value that does not parse is compared as a code.
  ``number``  house numbers, amounts: equal; one edit apart; within 10%; else
  ``code``    ids, phones, postcodes (compared on their letters and digits): exact; one edit (a substitution,
              a dropped letter or two swapped); two edits; else
  ``exact``   exact; else

The string similarities are rapidfuzz's (Jaro-Winkler, Levenshtein, optimal-string-alignment distance).
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np
from rapidfuzz import fuzz
from rapidfuzz.distance import JaroWinkler, OSA

from neardup_solr.errors import InvalidParameterError
from neardup_solr.text.normalizer import normalize

MISSING = -1

# Each kind's level labels, weakest first; a comparison returns the index of its label.
LEVELS: dict[str, tuple[str, ...]] = {
    "name": ("else", "words start alike", "token sort >= 0.8", "jaro-winkler >= 0.92", "same words", "exact"),
    "text": ("else", "token sort >= 0.5", "token sort >= 0.75", "token sort >= 0.9", "exact"),
    "date": ("else", "within a year", "one digit off or day/month swapped", "exact"),
    "number": ("else", "within 10%", "one edit", "exact"),
    "code": ("else", "two edits", "one edit", "exact"),
    "exact": ("else", "exact"),
}
KINDS = tuple(LEVELS)


def _name_level(a: str, b: str) -> int:
    if a == b:
        return 5
    wa, wb = a.split(), b.split()
    if sorted(wa) == sorted(wb):
        return 4
    if JaroWinkler.similarity(a, b) >= 0.92:
        return 3
    if fuzz.token_sort_ratio(a, b) >= 80:
        return 2
    # "j smith" / "john smith", "marl smith" / "marlowen smith": every word of the shorter list starts a word of
    # the longer one, in any order (swapped names), the words of two letters or more counting as prefixes. Two
    # lists of one length are tried both ways, so that the level of a pair does not depend on which comes first.
    if len(wa) < len(wb):
        return int(_words_start(wa, wb))
    if len(wb) < len(wa):
        return int(_words_start(wb, wa))
    return int(_words_start(wa, wb) or _words_start(wb, wa))


def _words_start(short: list[str], long_: list[str]) -> bool:
    return bool(short) and all(any(w.startswith(s) or s.startswith(w) for w in long_) for s in short)


def _text_level(a: str, b: str) -> int:
    if a == b:
        return 4
    score = fuzz.token_sort_ratio(a, b)
    return 3 if score >= 90 else 2 if score >= 75 else 1 if score >= 50 else 0


def _alnum(value: str) -> str:
    return re.sub(r"[^0-9a-z]", "", value)


def _code_level(a: str, b: str) -> int:
    a, b = _alnum(a), _alnum(b)
    if a == b:
        return 3
    edits = OSA.distance(a, b, score_cutoff=2)
    return 2 if edits == 1 else 1 if edits == 2 else 0


def _number_level(a: str, b: str) -> int:
    if a == b:
        return 3
    if OSA.distance(a, b, score_cutoff=1) <= 1:
        return 2
    try:
        x, y = float(a), float(b)
    except ValueError:
        return 0
    return 1 if abs(x - y) <= 0.1 * max(abs(x), abs(y)) else 0


_MONTHS = {m: i + 1 for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct",
                                            "nov", "dec"))}


def _year(value: str) -> int:
    year = int(value)
    if len(value) <= 2:  # two-digit years: the last century unless that is in the future
        year += 2000 if year + 2000 <= _dt.date.today().year else 1900
    return year


def parse_date(value: str) -> _dt.date | None:
    """A date from a normalised value written in one of the common ways (ISO ``1984-03-07``, US ``03/07/1984``,
    European ``07.03.1984``, ``march 7 1984``, ``7 mar 84``, ``19840307``), or None. Slashes are read month
    first, dots day first (the usual conventions)."""
    value = value.strip()
    try:
        if m := re.fullmatch(r"(\d{4})\D(\d{1,2})\D(\d{1,2})", value):
            return _dt.date(int(m[1]), int(m[2]), int(m[3]))
        if m := re.fullmatch(r"(\d{1,2})/(\d{1,2})/(\d{2}|\d{4})", value):
            return _dt.date(_year(m[3]), int(m[1]), int(m[2]))
        if m := re.fullmatch(r"(\d{1,2})[.\-\s](\d{1,2})[.\-\s](\d{2}|\d{4})", value):
            return _dt.date(_year(m[3]), int(m[2]), int(m[1]))
        if m := re.fullmatch(r"(\d{4})(\d{2})(\d{2})", value):
            return _dt.date(int(m[1]), int(m[2]), int(m[3]))
        if m := re.fullmatch(r"([a-z]{3})[a-z]*\.?\s+(\d{1,2}),?\s+(\d{2}|\d{4})", value):
            return _dt.date(_year(m[3]), _MONTHS[m[1]], int(m[2])) if m[1] in _MONTHS else None
        if m := re.fullmatch(r"(\d{1,2})\s+([a-z]{3})[a-z]*\.?,?\s+(\d{2}|\d{4})", value):
            return _dt.date(_year(m[3]), _MONTHS[m[2]], int(m[1])) if m[2] in _MONTHS else None
    except ValueError:  # 31 February and the like: not a date
        return None
    return None


def _date_level(a: str, b: str) -> int:
    da, db = parse_date(a), parse_date(b)
    if da is None or db is None:
        return {3: 3, 2: 2}.get(_code_level(a, b), 0)
    if da == db:
        return 3
    ia, ib = da.strftime("%Y%m%d"), db.strftime("%Y%m%d")
    if OSA.distance(ia, ib, score_cutoff=1) <= 1 or (da.year == db.year and da.month == db.day
                                                     and da.day == db.month):
        return 2
    return 1 if abs((da - db).days) <= 366 else 0


def _exact_level(a: str, b: str) -> int:
    return 1 if a == b else 0


_COMPARE: dict[str, Callable[[str, str], int]] = {
    "name": _name_level, "text": _text_level, "date": _date_level, "number": _number_level,
    "code": _code_level, "exact": _exact_level,
}


def _date_value(value: str) -> str:
    # The normaliser would turn "03/07/1984" into "03 07 1984", losing which convention wrote it.
    return re.sub(r"\s+", " ", value.strip().lower())


@dataclass(frozen=True)
class FieldComparison:
    """How one field of two records is compared: its name (the column) and its kind (:data:`KINDS`)."""

    field: str
    kind: str

    def __post_init__(self) -> None:
        if self.kind not in LEVELS:
            raise InvalidParameterError(f"the kind of field {self.field!r}", f"one of {', '.join(KINDS)}", self.kind)
        if not self.field:
            raise InvalidParameterError("a compared field's name", "a column name", self.field)

    @property
    def levels(self) -> tuple[str, ...]:
        return LEVELS[self.kind]

    def prepare(self, value: object) -> str:
        """A raw value as it is compared (normalised text; dates keep their separators); '' when missing."""
        if value is None:
            return ""
        text = str(value)
        return _date_value(text) if self.kind == "date" else normalize(text)

    def candidate_text(self, prepared: str) -> str:
        """A prepared value as the candidate search reads it: a date that parses in its ISO form, so that
        ``25 sep 35`` and ``1935-09-25`` share their tokens; any other value as it is."""
        if self.kind == "date" and prepared:
            day = parse_date(prepared)
            if day is not None:
                return day.isoformat()
        return prepared

    def level(self, a: str, b: str) -> int:
        """The agreement level of two prepared values, or :data:`MISSING`."""
        if not a or not b:
            return MISSING
        return _COMPARE[self.kind](a, b)


def parse_field_kinds(spec: str) -> list[FieldComparison]:
    """``"name:name,born:date,phone:code"`` (the ``--fields-from`` option) as comparisons; a column without a
    kind is ``text``."""
    out = []
    for item in (x.strip() for x in spec.split(",")):
        if not item:
            continue
        field, _, kind = (x.strip() for x in item.partition(":"))
        if kind and kind not in LEVELS or not field:
            raise InvalidParameterError("fields_from", f"column[:kind] items, each kind one of {', '.join(KINDS)}",
                                        spec, f"{item!r} is not" if field else "a column needs a name")
        out.append(FieldComparison(field, kind or "text"))
    names = [c.field for c in out]
    if not out or len(set(names)) != len(names):
        raise InvalidParameterError("fields_from", "comma-separated column[:kind] items, each column named once",
                                    spec)
    return out


def prepare_records(comparisons: Sequence[FieldComparison],
                    records: Sequence[Mapping[str, object]]) -> list[list[str]]:
    """Each record's values, prepared, in the order of ``comparisons`` (a missing column is '')."""
    return [[c.prepare(r.get(c.field)) for c in comparisons] for r in records]


def comparison_vectors(comparisons: Sequence[FieldComparison], left: Sequence[Sequence[str]],
                       right: Sequence[Sequence[str]], pairs: Sequence[tuple[int, int]]) -> np.ndarray:
    """(len(pairs), len(comparisons)) int8 levels of each pair (i in ``left``, j in ``right``)."""
    out = np.empty((len(pairs), len(comparisons)), dtype=np.int8)
    for row, (i, j) in enumerate(pairs):
        a, b = left[i], right[j]
        for col, c in enumerate(comparisons):
            out[row, col] = c.level(a[col], b[col])
    return out
