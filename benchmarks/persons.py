"""Generated person records with known duplicates, for record-matching benchmarks (names, addresses, dates).

    python -m benchmarks.persons --records 10000 --out benchmarks/work/persons10k

writes ``records.jsonl`` (``{"id", "text", "name", "address", "born", "phone"}`` per line) and ``truth.tsv``
(the id pairs that are the same person). The same ``(records, seed, dup_share)`` gives byte-identical files.

Every name, street and city is drawn from made-up vocabularies with a Zipf law, so common surnames and big
cities repeat as in a real register. ``dup_share`` of the people get a second record made the way data entry
makes them: 1-3 typos (a letter substituted, dropped, doubled, or two swapped), first and last name swapped,
a first name cut to its initial, a field left out, the date written another way, the street type spelled
out or abbreviated. Records of different people are never listed as pairs, even when they look alike (two
"J. Smith" at one address are the hard cases a matcher must not merge by accident, and do occur).

``--profile hard`` corrupts the second record as a careless register does (issue 24): 1-5 typos, first and
last name swapped (30%), a nickname for the first name (25%: a shortened form, ``Marlowen`` -> ``Marl``,
``Marly`` or ``Marlie``, the suffix fixed per name, since the names are made-up words with no real nickname
table), a first name cut to its initial (15%), one or two fields left out (40%: phone, house number, city or
date of birth), and the date of birth written in one of five ways (``1984-03-07``, ``03/07/1984``,
``07.03.1984``, ``March 7, 1984``, ``7 Mar 84``). The default profile, ``standard``, is unchanged: the same
``(records, seed, dup_share)`` gives the same bytes as before the profiles existed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))

from benchmarks.corpus import build_vocabulary  # noqa: E402

STREET_TYPES = [("St", "Street"), ("Ave", "Avenue"), ("Rd", "Road"), ("Blvd", "Boulevard"), ("Ln", "Lane"),
                ("Dr", "Drive"), ("Ct", "Court"), ("Pl", "Place")]
LETTERS = "abcdefghijklmnopqrstuvwxyz"
PROFILES = ("standard", "hard")
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")
DATE_STYLES = ("iso", "us", "dotted", "long", "short")


class _Vocab:
    def __init__(self, words: list[str], s: float, rng: np.random.Generator):
        self.words = [w.capitalize() for w in words]
        p = 1.0 / np.arange(1, len(words) + 1) ** s
        self.p = p / p.sum()
        self.rng = rng
        # rng.choice(n, p=p) rebuilds this CDF on every call (60 s for 100,000 records); drawing against it
        # the way choice does (one rng.random(), searchsorted right) gives the same words from the same seed.
        cdf = self.p.cumsum()
        self.cdf = cdf / cdf[-1]

    def draw(self) -> str:
        return self.words[int(self.cdf.searchsorted(self.rng.random(), side="right"))]


def _person(rng: np.random.Generator, first: _Vocab, last: _Vocab, street: _Vocab, city: _Vocab) -> dict:
    year, month, day = int(rng.integers(1930, 2006)), int(rng.integers(1, 13)), int(rng.integers(1, 29))
    short, _ = STREET_TYPES[int(rng.integers(len(STREET_TYPES)))]
    return {
        "first": first.draw(), "last": last.draw(),
        "number": str(int(rng.integers(1, 9999))), "street": street.draw(), "street_type": short,
        "city": city.draw(), "born": (year, month, day),
        "phone": f"{int(rng.integers(200, 999))}-{int(rng.integers(100, 999))}-{int(rng.integers(0, 9999)):04d}",
    }


def _typo(word: str, rng: np.random.Generator) -> str:
    if len(word) < 3:
        return word
    i = int(rng.integers(1, len(word) - 1))
    kind = int(rng.integers(4))
    if kind == 0:
        return word[:i] + LETTERS[int(rng.integers(26))] + word[i + 1:]
    if kind == 1:
        return word[:i] + word[i + 1:]
    if kind == 2:
        return word[:i] + word[i] + word[i:]
    return word[: i - 1] + word[i] + word[i - 1] + word[i + 1:]


def _variant(p: dict, rng: np.random.Generator) -> dict:
    q = dict(p)
    for _ in range(int(rng.integers(1, 4))):
        field = ("first", "last", "street", "city")[int(rng.integers(4))]
        q[field] = _typo(q[field], rng)
    if rng.random() < 0.15:
        q["first"], q["last"] = q["last"], q["first"]
    if rng.random() < 0.15:
        q["first"] = q["first"][0] + "."
    if rng.random() < 0.3:
        q["street_type"] = dict(STREET_TYPES)[p["street_type"]]
    if rng.random() < 0.3:
        q["date_style"] = "us"
    if rng.random() < 0.2:
        q[("phone", "number", "city")[int(rng.integers(3))]] = ""
    return q


def _nickname(first: str) -> str:
    """A shortened first name, the same for every record of that name (``zlib.crc32`` picks the suffix)."""
    import zlib

    stem = first[: max(3, (len(first) + 1) // 2)]
    return stem + ("", "y", "ie")[zlib.crc32(first.encode()) % 3] if len(first) > 4 else first


def _hard_variant(p: dict, rng: np.random.Generator) -> dict:
    q = dict(p)
    for _ in range(int(rng.integers(1, 6))):
        field = ("first", "last", "street", "city")[int(rng.integers(4))]
        q[field] = _typo(q[field], rng)
    if rng.random() < 0.25:
        q["first"] = _nickname(p["first"])
    elif rng.random() < 0.15:
        q["first"] = q["first"][0] + "."
    if rng.random() < 0.3:
        q["first"], q["last"] = q["last"], q["first"]
    if rng.random() < 0.3:
        q["street_type"] = dict(STREET_TYPES)[p["street_type"]]
    q["date_style"] = DATE_STYLES[int(rng.integers(len(DATE_STYLES)))]
    if rng.random() < 0.4:
        for field in rng.choice(["phone", "number", "city", "born"], size=int(rng.integers(1, 3)),
                                replace=False).tolist():
            q[field] = "" if field != "born" else None
    return q


def _date(born: tuple[int, int, int], style: str | None) -> str:
    year, month, day = born
    if style == "us":
        return f"{month:02d}/{day:02d}/{year}"
    if style == "dotted":
        return f"{day:02d}.{month:02d}.{year}"
    if style == "long":
        return f"{MONTHS[month - 1]} {day}, {year}"
    if style == "short":
        return f"{day} {MONTHS[month - 1][:3]} {year % 100:02d}"
    return f"{year}-{month:02d}-{day:02d}"


def render(p: dict) -> dict:
    """A record's columns and its one-line text (``name, address, born, phone``)."""
    born = _date(p["born"], p.get("date_style")) if p["born"] is not None else ""
    name = f"{p['first']} {p['last']}"
    address = " ".join(x for x in (p["number"], p["street"], p["street_type"]) if x)
    if p["city"]:
        address += f", {p['city']}"
    fields = {"name": name, "address": address, "born": born, "phone": p["phone"]}
    fields["text"] = ", ".join(v for v in fields.values() if v)
    return fields


def generate(records: int, seed: int = 3, dup_share: float = 0.5,
             profile: str = "standard") -> tuple[list[dict], list[tuple[str, str]]]:
    """``records`` rows (each a dict with ``id``, ``text`` and the columns) and the true duplicate pairs;
    ``profile`` is how the duplicates are corrupted (module docstring)."""
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {', '.join(PROFILES)}, got {profile!r}")
    variant = _hard_variant if profile == "hard" else _variant
    rng = np.random.default_rng(seed)
    words = build_vocabulary(rng, 12_000)
    first, last = _Vocab(words[:1500], 1.0, rng), _Vocab(words[1500:7500], 0.9, rng)
    street, city = _Vocab(words[7500:11_000], 1.0, rng), _Vocab(words[11_000:], 1.2, rng)
    rows: list[dict] = []
    truth: list[tuple[str, str]] = []
    while len(rows) < records:
        person = _person(rng, first, last, street, city)
        rid = f"p{len(rows):07d}"
        rows.append({"id": rid, **render(person)})
        if rng.random() < dup_share and len(rows) < records:
            did = f"p{len(rows):07d}"
            rows.append({"id": did, **render(variant(person, rng))})
            truth.append((rid, did))
    # Shuffle so a duplicate is not always the next record (ids keep their order of creation).
    order = rng.permutation(len(rows))
    return [rows[i] for i in order], truth


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--dup-share", type=float, default=0.5)
    ap.add_argument("--profile", choices=PROFILES, default="standard")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    rows, truth = generate(args.records, args.seed, args.dup_share, args.profile)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "records.jsonl", "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    with open(out / "truth.tsv", "w", encoding="utf-8") as f:
        f.write("# id\tduplicate_id\n")
        for a, b in truth:
            f.write(f"{a}\t{b}\n")
    print(f"{len(rows)} records, {len(truth)} true pairs -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
