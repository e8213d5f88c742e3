"""The Fodor's/Zagat's restaurant benchmark: turn the two raw guide files into the numbered address file
``<id> <text>`` that the rest of the package indexes, in the numbering of ``gold_pairs.tsv``.

Phone number and cuisine are cut off each record: equal phone numbers identify most true matches, so
leaving them in would make the benchmark measure phone matching rather than near-duplicate text.

>>> prepare_default("addresses.txt")   # doctest: +SKIP
864
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import Iterator

from neardup_solr.errors import InvalidRecordError

log = logging.getLogger(__name__)

DATA_DIR = Path(__file__).resolve().parents[1] / "data" / "restaurants"
FODORS_FILE = "fodors.txt"
ZAGATS_FILE = "zagats.txt"
GOLD_FILE = "gold_pairs.tsv"

FODORS_COUNT = 533
ZAGATS_COUNT = 331
TOTAL_COUNT = FODORS_COUNT + ZAGATS_COUNT

# Records whose text pins the numbering to the gold file: if blank-line handling or file order ever
# shifted the ids, these would no longer line up and every evaluation would be silently wrong.
LANDMARKS = {
    3: "Art's Delicatessen 12224 Ventura Blvd. Studio City",
    536: "Art's Deli 12224 Ventura Blvd. Studio City",
}

# Formats seen in the files: 310/246-1501, 310-246-1501, 212/ 759-0590, 770/441--0291, 310/788-DIVE, and
# one phone glued to the city ("Atlanta404-523-1929"), which is why the guards reject neighbouring digits
# (a longer street number must not donate its last three) rather than requiring a word boundary.
PHONE_RE = re.compile(r"(?<![0-9])[0-9]{3}\s*[/-]\s*[0-9]{3}\s*-+\s*[0-9A-Za-z]{4}(?![0-9])")

# Fodor's ends every line with 0x02 (once followed by a fragment of another record); control bytes are
# never part of a restaurant's text, so they become spaces before anything else looks at the line.
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_SPACES_RE = re.compile(r"\s+")


def fodors_path() -> Path:
    return DATA_DIR / FODORS_FILE


def zagats_path() -> Path:
    return DATA_DIR / ZAGATS_FILE


def gold_pairs_path() -> Path:
    """The 112 true Fodor's/Zagat's matches, as ``<fodors_id>\\t<zagats_id>`` lines."""
    return DATA_DIR / GOLD_FILE


def split_phone(text: str) -> tuple[str, str] | None:
    """``(text before the first phone number, the phone number)``, or None when there is no phone.

    Everything after the phone (cuisine, a second phone after "or") is dropped with it.
    """
    m = PHONE_RE.search(text)
    if m is None:
        return None
    return _clean_spaces(text[: m.start()]), m.group(0)


def phone_digits(phone: str) -> str:
    """A phone number reduced to its 10 characters, so ``212/ 759-0590`` equals ``212-759-0590``."""
    return re.sub(r"[^0-9A-Za-z]", "", phone).upper()


def _clean_spaces(text: str) -> str:
    # Doubled spaces carry no meaning in these files ("Apple Pan  The"); one space keeps the
    # "<id> <text>" line format unambiguous and word tokenisation the same either way.
    return _SPACES_RE.sub(" ", text).strip()


def iter_guide_records(path: str | Path) -> Iterator[tuple[int, str, str]]:
    """``(line number, address text, phone)`` for each non-blank line of one raw guide file.

    Raises InvalidRecordError (naming file and line) for a record in which no phone number is found:
    keeping it would leak the phone and cuisine into the text, dropping it would shift every later id.
    """
    path = Path(path)
    # Latin-1 maps every byte to a character, so an unexpected byte can never abort the preparation;
    # HTML entities stay as written because the text normaliser decodes them for every data set alike.
    raw = path.read_bytes().decode("latin-1")
    for lineno, line in enumerate(raw.split("\n"), start=1):
        line = _CONTROL_RE.sub(" ", line)
        if not line.strip():
            continue
        parts = split_phone(line)
        if parts is None:
            raise InvalidRecordError(
                f"no phone number found in {line.strip()!r}; the phone and cuisine could not be removed. "
                "Fix the line or extend PHONE_RE in neardup_solr/io/restaurants.py",
                source=path, line=lineno,
            )
        address, phone = parts
        if not address:
            raise InvalidRecordError(
                "nothing left before the phone number (the record has no name or address)",
                source=path, line=lineno,
            )
        yield lineno, address, phone


def read_records(fodors_path: str | Path, zagats_path: str | Path) -> list[tuple[int, str]]:
    """``(id, address text)`` for both guides: Fodor's first, then Zagat's, ids counting from 1."""
    fodors, zagats = _read_guides(fodors_path, zagats_path)
    return fodors + zagats


def _read_guides(fodors_path, zagats_path) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    fodors = [(i, address) for i, (_, address, _) in enumerate(iter_guide_records(fodors_path), start=1)]
    zagats = [(i, address) for i, (_, address, _) in enumerate(iter_guide_records(zagats_path), start=len(fodors) + 1)]
    return fodors, zagats


def verify_records(records: list[tuple[int, str]], fodors_count: int, source: str | Path | None = None) -> None:
    """Raise InvalidRecordError unless the records are numbered exactly as in ``gold_pairs.tsv``."""
    if fodors_count != FODORS_COUNT or len(records) != TOTAL_COUNT:
        raise InvalidRecordError(
            f"expected {FODORS_COUNT} Fodor's + {ZAGATS_COUNT} Zagat's records, found {fodors_count} + "
            f"{len(records) - fodors_count}; the ids would not match gold_pairs.tsv "
            "(pass verify=False for other restaurant files)",
            source=source,
        )
    by_id = dict(records)
    for record_id, expected in LANDMARKS.items():
        if by_id.get(record_id) != expected:
            raise InvalidRecordError(
                f"expected {expected!r}, found {by_id.get(record_id)!r}; the numbering is off",
                source=source, record_id=record_id,
            )


def prepare_addresses(fodors_path: str | Path, zagats_path: str | Path, out_path: str | Path,
                      *, verify: bool = True) -> int:
    """Write the numbered address file (UTF-8, ``<id> <text>`` per line) and return the record count.

    With ``verify`` (the default) the record counts and the landmark records must match the gold file's
    numbering; nothing is written when any check fails.
    """
    fodors, zagats = _read_guides(fodors_path, zagats_path)
    records, fodors_count = fodors + zagats, len(fodors)
    if verify:
        verify_records(records, fodors_count, source=fodors_path)
    out_path = Path(out_path)
    _write_atomically(out_path, "".join(f"{record_id} {text}\n" for record_id, text in records))
    log.info("wrote %d addresses (%d Fodor's, %d Zagat's) to %s",
             len(records), fodors_count, len(records) - fodors_count, out_path)
    return len(records)


def prepare_default(out_path: str | Path) -> int:
    """:func:`prepare_addresses` on the packaged guide files."""
    return prepare_addresses(fodors_path(), zagats_path(), out_path)


def read_addresses(path: str | Path) -> dict[str, str]:
    """The ``id -> text`` mapping of an address file written by :func:`prepare_addresses`."""
    texts: dict[str, str] = {}
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            line = line.strip()
            if not line:
                continue
            record_id, sep, text = line.partition(" ")
            if not sep:
                raise InvalidRecordError("expected '<id> <text>'", source=path, line=lineno)
            texts[record_id] = text
    return texts


def _write_atomically(path: Path, content: str) -> None:
    # A half-written address file would index fine and evaluate wrongly, so it appears all at once or not at all.
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            f.write(content)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
