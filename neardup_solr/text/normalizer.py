"""The normaliser: the canonical text every shingle, hash and MD5 is computed from.

Indexer and searcher must normalise a text identically, otherwise stored documents and queries stop being
comparable.
"""

from __future__ import annotations

import html
import re
import string
import unicodedata
from collections.abc import Callable
from functools import lru_cache

from neardup_solr.errors import InvalidParameterError
from neardup_solr.text.pinned_unicode import (
    PINNED_UNICODE_VERSION,
    CodePointTest,
    interpreter_unicode_version,
    pinned,
)
from neardup_solr.validation import check_bool, check_int, check_text

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


def _prepare_v1(text: str) -> str:
    """Version 1's normalised text up to whitespace: words are the maximal runs of non-space characters and ' '
    is the only separator, but runs of spaces are not collapsed yet. Enough for word hashing, and saves a
    split/join. Kept exactly as it was: indexes built with it answer with it.
    """
    if "&" in text:
        text = html.unescape(text)
    if text.isascii():
        # One C-level pass lowercases and blanks punctuation/control characters for the common case; every
        # ASCII whitespace character is a control character or ' ', so ' ' is the only separator left.
        return text.translate(_ASCII_TRANS)
    text = text.lower().translate(_UNICODE_TABLE)
    return _WHITESPACE_RE.sub(" ", text).strip()


NORMALIZER_VERSIONS = (1, 2, 3)
LATEST_NORMALIZER_VERSION = 3
ZERO_WIDTH_SPACE = 0x200B
# Combining Diacritical Marks: what fold_diacritics removes. Marks of other blocks (Thai, Devanagari vowel
# signs) are parts of their letters, not accents, and stay.
_DIACRITICS = range(0x300, 0x370)
_DIGIT_RUN = re.compile(r"\d+")


class _UnicodeTableV2(dict):
    """Version 2's ``str.translate`` mapping for non-ASCII text (after NFKC and case folding), filled lazily."""

    def __init__(self, fold_diacritics: bool):
        super().__init__(_ascii_table())
        self.fold_diacritics = fold_diacritics

    def __missing__(self, code: int) -> str:
        ch = chr(code)
        category = unicodedata.category(ch)
        if code == ZERO_WIDTH_SPACE:
            # Thai, Khmer, Lao and Myanmar text is written without spaces; U+200B is how it marks word breaks.
            ch = " "
        elif category == "Cf":
            # Format characters (soft hyphen, ZWJ, ZWNJ, BOM, word joiner, bidi marks) sit inside words.
            ch = ""
        elif category in ("Cc", "Cs") or (category[0] == "P" and ch not in _KEPT_PUNCTUATION):
            ch = " "
        elif self.fold_diacritics and code in _DIACRITICS:
            ch = ""
        elif self.fold_diacritics and category[0] == "L":
            decomposed = unicodedata.normalize("NFD", ch)
            if len(decomposed) > 1 and all(ord(c) in _DIACRITICS for c in decomposed[1:]):
                ch = decomposed[0]
        if len(self) < _UNICODE_TABLE_LIMIT:
            self[code] = ch
        return ch


_TABLES_V2 = {False: _UnicodeTableV2(False), True: _UnicodeTableV2(True)}


def _nfkc_casefold(text: str) -> str:
    """Version 2's Unicode step. NFKC again after folding: folding can undo the normal form (U+0390), and NFKC can
    make capitals (U+210C). ``normalize`` returns its argument at the cost of a quick check when it is already in
    the form."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())


class _KernelTable(dict):
    """A version's table for the compiled kernel's input: the same mapping, and every other whitespace character
    (U+00A0, U+2028, U+3000...) a plain space, since the kernel collapses spaces itself instead of the regex."""

    def __init__(self, table: dict):
        super().__init__()
        self.table = table

    def __missing__(self, code: int) -> str:
        ch = " " if chr(code).isspace() else self.table[code]
        if len(self) < _UNICODE_TABLE_LIMIT:
            self[code] = ch
        return ch


_KERNEL_TABLES = {1: _KernelTable(_UNICODE_TABLE), (2, False): _KernelTable(_TABLES_V2[False]),
                  (2, True): _KernelTable(_TABLES_V2[True])}


class _UnicodeTableV3(dict):
    """Version 3's ``str.translate`` mapping for non-ASCII text: version 2's rules with every character's data from
    the pinned Unicode version (:mod:`.pinned_unicode`), and whitespace a space here (``\\s`` would be the
    interpreter's). With ``fold_digits`` every decimal digit is ``0``; the runs of ``0`` are joined after."""

    def __init__(self, fold_diacritics: bool, fold_digits: bool):
        super().__init__(_ascii_table())
        self.fold_diacritics = fold_diacritics
        self.fold_digits = fold_digits

    def __missing__(self, code: int) -> str:
        data = pinned()
        ch = chr(code)
        category = data.category(ch)
        if code in data.whitespace or code == ZERO_WIDTH_SPACE:
            ch = " "
        elif category == "Cf":
            ch = ""
        elif category in ("Cc", "Cs") or (category[0] == "P" and ch not in _KEPT_PUNCTUATION):
            ch = " "
        elif self.fold_digits and code in data.decimal:
            ch = "0"
        elif self.fold_diacritics and code in _DIACRITICS:
            ch = ""
        elif self.fold_diacritics and category[0] == "L":
            decomposed = data.normalize("NFD", ch)
            if len(decomposed) > 1 and all(ord(c) in _DIACRITICS for c in decomposed[1:]):
                ch = decomposed[0]
        if len(self) < _UNICODE_TABLE_LIMIT:
            self[code] = ch
        return ch


class _CasefoldTable(dict):
    """``str.translate`` mapping: the pinned version's full case folding (``str.casefold`` with that Unicode)."""

    def __missing__(self, code: int) -> str:
        ch = pinned().casefold.get(code) or chr(code)
        if len(self) < _UNICODE_TABLE_LIMIT:
            self[code] = ch
        return ch


@lru_cache(maxsize=1)
def _casefold_fixups() -> tuple[CodePointTest, dict[int, str]] | None:
    """What this interpreter's ``str.casefold`` (a C loop, ~7x faster than ``translate`` with a dict) needs to fold
    as the pinned version does: the code points it folds otherwise (those it does not know yet: Vithkuqi capitals
    on Python 3.10, say), found by one regex and mapped first; folded text folds to itself, so ``casefold`` then
    leaves them. None when the interpreter's Unicode is newer than the pinned one: it may fold characters the
    pinned version does not have, and only the pinned table is then right."""
    data = pinned()
    if tuple(map(int, interpreter_unicode_version().split("."))) > tuple(map(int, data.version.split("."))):
        return None
    differ = {code: folded for code, folded in data.casefold.items() if chr(code).casefold() != folded}
    return CodePointTest(set(differ)), differ


def _pinned_casefold(text: str) -> str:
    fixups = _casefold_fixups()
    if fixups is None:
        return text.translate(_CASEFOLD_V3)
    test, differ = fixups
    if test.found_in(text):
        text = text.translate(differ)
    return text.casefold()


_TABLES_V3 = {(diacritics, digits): _UnicodeTableV3(diacritics, digits)
              for diacritics in (False, True) for digits in (False, True)}
_CASEFOLD_V3 = _CasefoldTable()
_ASCII_DIGIT_RUN = re.compile(r"[0-9]+")
_SPACE_RUN = re.compile(" {2,}")


def _unicode_step_v3(text: str) -> str:
    """Version 3's Unicode step, all from the pinned version: format characters out (the zero-width space a word
    break) *before* NFKC, so none can keep a letter and its combining mark from composing (version 2 removes them
    after, so normalising twice could differ); then NFKC, case folding, NFKC again (see ``_nfkc_casefold``)."""
    data = pinned()
    if data.format_test.found_in(text):
        text = data.format_re.sub(_format_replacement, text)
    normalize = data.normalize
    return normalize("NFKC", _pinned_casefold(normalize("NFKC", text)))


def _format_replacement(match: re.Match) -> str:
    return " " if ord(match.group()) == ZERO_WIDTH_SPACE else ""


# The compiled kernel's memory of islands (see Normalizer.kernel_islands), per mapping; bounded like the tables.
_ISLAND_CACHES: dict = {(2, False): {}, (2, True): {}, (3, False): {}, (3, True): {}}
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
# Below this share of non-ASCII characters (prose with curly quotes and dashes) mapping only those characters is
# cheaper than str.translate, which looks every character up in the table.
_FEW_NON_ASCII = 0.05


class Normalizer:
    """The normaliser an index was built with: a version and its options, stored in the index's settings.

    ``version=1``: HTML entities decoded; control characters, format characters (soft hyphen, zero-width
    characters) and all punctuation except ``-`` become spaces; ``str.lower``; whitespace collapsed. Indexes
    built before version 2 existed use it, and keep answering with it.

    ``version=2``: HTML entities decoded, then the Unicode normal form NFKC, so that composed
    and decomposed accents (NFC/NFD), ligatures (``ﬁ``), full-width forms (``１２``, ``ＡＢＣ``) and
    compatibility characters are one spelling; then Unicode case folding (``casefold``: ``ß`` = ``ss``).
    Format characters that live inside words (soft hyphen, ZWJ, ZWNJ, BOM, word joiner, bidi marks: category
    Cf) are removed, not turned into spaces; the zero-width space U+200B is a word break (Thai, Khmer, Lao and
    Myanmar text uses it between words). Then, as in version 1, control characters and punctuation except
    ``-`` become spaces and whitespace collapses. ASCII text takes the same single-pass path as version 1, so
    both versions give identical results on it.

    ``version=3`` (the default): version 2's rules, with every character's data (categories, NFKC, case
    folding, whitespace, digits) from one pinned Unicode version (``PINNED_UNICODE_VERSION``, see
    :mod:`.pinned_unicode`) instead of the interpreter's, so every Python signs a text the same; and format
    characters are removed before NFKC, not after, which makes it idempotent without exception. ASCII text takes
    the same path as in versions 1 and 2 (ASCII does not change between Unicode versions).

    Options (versions 2 and 3, off by default): ``fold_diacritics`` removes combining accents (``café`` =
    ``cafe``; letters without a decomposition such as ``ø`` or ``ł`` stay); ``fold_digits`` makes every run of
    digits the token ``0`` (for boilerplate with counters and dates; not for addresses, whose numbers matter).

    Instances are immutable and compare equal when version and options are equal.
    """

    __slots__ = ("version", "fold_diacritics", "fold_digits", "prepare", "_table", "_kernel_table")
    version: int
    fold_diacritics: bool
    fold_digits: bool
    # Normalised text up to whitespace (see _prepare_v1); what the batch shingler hashes words from.
    prepare: Callable[[str], str]
    _table: dict
    _kernel_table: dict

    def __init__(self, version: int = LATEST_NORMALIZER_VERSION, fold_diacritics: bool = False,
                 fold_digits: bool = False):
        version = check_int("normalizer_version", version, minimum=1, maximum=LATEST_NORMALIZER_VERSION)
        check_bool("fold_diacritics", fold_diacritics)
        check_bool("fold_digits", fold_digits)
        if version == 1 and (fold_diacritics or fold_digits):
            raise InvalidParameterError("normalizer_version", "2 or more with fold_diacritics or fold_digits "
                                        "(version 1 has no options)", version)
        set_ = object.__setattr__
        set_(self, "version", version)
        set_(self, "fold_diacritics", fold_diacritics)
        set_(self, "fold_digits", fold_digits)
        # The method chosen once: prepare() runs for every text of every batch.
        if version == 3:
            pinned()  # a broken install fails here, when the normaliser is made, not at its first text
            set_(self, "_table", _TABLES_V3[(fold_diacritics, fold_digits)])
            set_(self, "prepare", self._prepare_v3)
            # Whitespace is already a space in version 3's table.
            set_(self, "_kernel_table", self._table)
        else:
            set_(self, "_table", _TABLES_V2[fold_diacritics])
            set_(self, "prepare", _prepare_v1 if version == 1 else self._prepare_v2)
            set_(self, "_kernel_table", _KERNEL_TABLES[1 if version == 1 else (2, fold_diacritics)])

    def __setattr__(self, name, value) -> None:
        raise AttributeError("a Normalizer is immutable; make another one")

    def _key(self) -> tuple[int, bool, bool]:
        return (self.version, self.fold_diacritics, self.fold_digits)

    def __eq__(self, other) -> bool:
        return self._key() == other._key() if isinstance(other, Normalizer) else NotImplemented

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (f"Normalizer(version={self.version}, fold_diacritics={self.fold_diacritics}, "
                f"fold_digits={self.fold_digits})")

    def _prepare_v2(self, text: str) -> str:
        if "&" in text:
            text = html.unescape(text)
        if text.isascii():
            # NFKC and case folding change nothing in ASCII: version 1's single pass is version 2's too.
            text = text.translate(_ASCII_TRANS)
            return _DIGIT_RUN.sub("0", text) if self.fold_digits else text
        text = _nfkc_casefold(text)
        text = text.translate(self._table)
        if self.fold_digits:
            text = _DIGIT_RUN.sub("0", text)
        return _WHITESPACE_RE.sub(" ", text).strip()

    def _prepare_v3(self, text: str) -> str:
        if "&" in text:
            text = html.unescape(text)
        if text.isascii():
            text = text.translate(_ASCII_TRANS)
            return _ASCII_DIGIT_RUN.sub("0", text) if self.fold_digits else text
        # The table has made every digit 0 when folding them and every whitespace character a space.
        text = _unicode_step_v3(text).translate(self._table)
        if self.fold_digits:
            text = _ASCII_DIGIT_RUN.sub("0", text)
        return _SPACE_RUN.sub(" ", text).strip(" ")

    @property
    def unicode_version(self) -> str:
        """The Unicode version this normaliser signs with: the pinned one for version 3, this interpreter's for
        versions 1 and 2 (which read Python's own ``unicodedata``)."""
        return PINNED_UNICODE_VERSION if self.version >= 3 else interpreter_unicode_version()

    def kernel_prepare(self, text: str) -> str:
        """The text as the compiled kernel (text/kernel.py) takes it: what ``normalize`` gives once the kernel has
        lowered ASCII capitals, made ASCII punctuation and control characters spaces and collapsed the spaces.

        The kernel does that part itself for plain ASCII and calls this for the rest: entities, the Unicode
        normal form, case folding and the non-ASCII characters' mapping stay here, in one place with the
        reference path (``tests/unit/text/test_kernel.py`` checks both give the same shingles)."""
        if "&" in text:
            text = html.unescape(text)
        if not text.isascii():
            if self.version == 1:
                text = text.lower()
            elif self.version == 2:
                text = _nfkc_casefold(text)
            else:
                text = _unicode_step_v3(text)
            table = self._kernel_table
            if len(text.encode("utf-8", "surrogatepass")) - len(text) < _FEW_NON_ASCII * len(text):
                text = _NON_ASCII.sub(lambda m: table[ord(m.group())], text)
            else:
                text = text.translate(table)
        # After the non-ASCII mapping, as prepare does: removing a format character can join two digit runs.
        if self.fold_digits:
            return (_ASCII_DIGIT_RUN if self.version >= 3 else _DIGIT_RUN).sub("0", text)
        return text

    @property
    def kernel_islands(self) -> tuple | None:
        """For the compiled kernel: ``(function, cache, limit)`` to normalise a mostly-ASCII text island by island
        (a run of non-ASCII characters with the ASCII character before it; see ``_kernel.c``), or None where
        only the whole text will do: version 1 lowers with ``str.lower``, whose final sigma looks at the words
        around it, and digit folding joins digit runs across islands."""
        if self.version == 1 or self.fold_digits:
            return None
        table = self._kernel_table
        unicode_step = _unicode_step_v3 if self.version >= 3 else _nfkc_casefold

        def island(text: str) -> str:
            return unicode_step(text).translate(table)

        return island, _ISLAND_CACHES[(self.version, self.fold_diacritics)], _UNICODE_TABLE_LIMIT

    def normalize(self, text: str) -> str:
        """Canonical form of ``text`` that shingles, words and the MD5 are computed from. Idempotent, with one
        known exception in version 2: a format character between a letter and a combining mark
        (``"Z\u200d\u0301"``) blocks NFKC's composition and is removed after it, so normalising the result again
        composes it (``"z\u0301"`` then ``"ź"``). Version 3 removes format characters before NFKC. Every caller
        normalises a text once from its original, which keeps indexer and searcher in step.

        >>> Normalizer().normalize("Art's Deli 12224 Ventura Blvd. Studio City")
        'art s deli 12224 ventura blvd studio city'
        >>> Normalizer().normalize("Stra\u00dfe of\ufb01ce ca\u0301fe\u0301 sof\u00adtware \uff11\uff12")
        'strasse office café software 12'
        """
        _check_str(text)
        prepared = self.prepare(text)
        if prepared.isascii():
            return " ".join(prepared.split())
        return prepared

    def words(self, text: str) -> list[str]:
        """Words of the normalised text (``[]`` when nothing is left)."""
        return split_normalized(self.normalize(text))


DEFAULT_NORMALIZER = Normalizer()
# Kept for importers of the module this package replaced: the default normaliser's preparation.
_prepare = DEFAULT_NORMALIZER.prepare


def normalize(text: str) -> str:
    """Canonical form of ``text`` by the default normaliser (:class:`Normalizer`, version 3).

    HTML entities are decoded, the text is brought to NFKC and case-folded, format characters inside words
    are removed, control characters and all punctuation except ``-`` become spaces, whitespace runs collapse
    to one space, ends are stripped; every character's data comes from the pinned Unicode version. Idempotent. An
    index uses the normaliser stored in its settings
    (``IndexSettings.normalizer()``), which may be an older version.

    >>> normalize("Art's Deli 12224 Ventura Blvd. Studio City")
    'art s deli 12224 ventura blvd studio city'
    >>> normalize("Hotel Bel-Air")
    'hotel bel-air'
    """
    return DEFAULT_NORMALIZER.normalize(text)


def split_normalized(normalized: str) -> list[str]:
    return normalized.split(" ") if normalized else []


def words(text: str) -> list[str]:
    """Words of the normalised text (``[]`` when nothing is left)."""
    return split_normalized(normalize(text))


def first_word(text: str) -> str:
    """First word of the normalised text, ``''`` if there is none."""
    ws = words(text)
    return ws[0] if ws else ""


def num_words(text: str) -> int:
    """Number of words of the normalised text."""
    return len(words(text))

