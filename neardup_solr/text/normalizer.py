"""The normaliser: the canonical text every shingle, hash and MD5 is computed from.

Indexer and searcher must normalise a text identically, otherwise stored documents and queries stop being
comparable.
"""

from __future__ import annotations

import html
import re
import string
import unicodedata

from ..validation import check_text

_KEPT_PUNCTUATION = "-"


def _ascii_table() -> dict[int, str]:
    table: dict[int, str] = {}
    for code in range(128):
        ch = chr(code)
        if code < 32 or code == 127 or (ch in string.punctuation and ch not in _KEPT_PUNCTUATION):
            table[code] = " "
        elif "A" <= ch <= "Z":
            table[code] = ch.lower()
    return table


_ASCII_TRANS = str.maketrans(_ascii_table())


_UNICODE_TABLE_LIMIT = 50_000


class _UnicodeTable(dict):
    """``str.translate`` mapping for non-ASCII text, filled lazily.

    Scanning all 1.1M code points at import would cost a noticeable fraction of a second, so each code point's
    category is looked up the first time it is seen and remembered (real text uses few distinct characters).
    """

    def __missing__(self, code: int) -> str:
        ch = chr(code)
        category = unicodedata.category(ch)
        # Cs: a lone surrogate cannot be encoded to UTF-8, so it could not be hashed; treat it as a separator.
        if category in ("Cc", "Cf", "Cs") or (category[0] == "P" and ch not in _KEPT_PUNCTUATION):
            ch = " "
        if len(self) < _UNICODE_TABLE_LIMIT:  # bounded even if someone feeds every code point
            self[code] = ch
        return ch


_UNICODE_TABLE = _UnicodeTable(_ascii_table())
_WHITESPACE_RE = re.compile(r"\s+")


def _check_str(text) -> None:
    if not isinstance(text, str):
        check_text(text)  # raises ParameterTypeError (a TypeError) saying what to do with what was given


def _prepare(text: str) -> str:
    """Normalised text up to whitespace: words are the maximal runs of non-space characters and ' ' is the
    only separator, but runs of spaces are not collapsed yet. Enough for word hashing, and saves a split/join.
    """
    if "&" in text:
        text = html.unescape(text)
    if text.isascii():
        # One C-level pass lowercases and blanks punctuation/control characters for the common case; every
        # ASCII whitespace character is a control character or ' ', so ' ' is the only separator left.
        return text.translate(_ASCII_TRANS)
    text = text.lower().translate(_UNICODE_TABLE)
    return _WHITESPACE_RE.sub(" ", text).strip()


def normalize(text: str) -> str:
    """Canonical form of ``text`` that every other function here works on.

    HTML entities are decoded, control and format characters and all punctuation except ``-`` become spaces,
    letters are lowercased, whitespace runs collapse to one space, ends are stripped. Idempotent, so
    normalising an already normalised text is harmless.

    >>> normalize("Art's Deli 12224 Ventura Blvd. Studio City")
    'art s deli 12224 ventura blvd studio city'
    >>> normalize("Hotel Bel-Air")
    'hotel bel-air'
    """
    _check_str(text)
    prepared = _prepare(text)
    if prepared.isascii():
        return " ".join(prepared.split())
    return prepared


def _split_normalized(normalized: str) -> list[str]:
    return normalized.split(" ") if normalized else []


def words(text: str) -> list[str]:
    """Words of the normalised text (``[]`` when nothing is left)."""
    return _split_normalized(normalize(text))


def first_word(text: str) -> str:
    """First word of the normalised text, ``''`` if there is none."""
    ws = words(text)
    return ws[0] if ws else ""


def num_words(text: str) -> int:
    """Number of words of the normalised text."""
    return len(words(text))

