"""Normalisation, shingling and MinHash signatures: the one module both the indexer and the searcher use.

Indexer and searcher must turn a text into exactly the same shingles, hashes and signatures, otherwise stored
documents and queries stop being comparable. Everything here is deterministic across processes and machines:
MurmurHash3 (``mmh3``) with a fixed seed for shingles, ``numpy.random.default_rng(seed)`` for the masks.

Pipeline::

    text --normalize--> "art s deli 12224 ..." --Shingler--> shingles --> 32-bit hashes --MinHash--> signature

Shingle hashes
    Every value is a MurmurHash3_x86_32 (``mmh3``) hash with the shingler's seed. A character shingle is
    ``mmh3.hash(shingle)``. A word shingle is hashed in two steps so that each word is hashed once rather than
    once per shingle it is part of: each word gets ``mmh3.hash(word)``, and the shingle gets ``mmh3.hash`` of
    the little-endian bytes of its words' hashes (position-sensitive, since Murmur folds its blocks in order).
    ``Shingler.hash_shingle`` computes exactly that with plain ``mmh3`` calls, for one shingle string.

    Batches do not call ``mmh3`` per word: Python-level work per word (a function call or a dict lookup
    on a fresh string, ~70 ns) would cost more than all the rest of the pipeline. Instead the texts are
    encoded into one UTF-8 buffer, word (or character shingle) boundaries are found with NumPy, and the same
    MurmurHash3_x86_32 is evaluated for all spans at once in uint32 arithmetic. Single texts use ``mmh3``
    through a bounded cache (cheaper than ~100 NumPy calls on small arrays). The tests check that both paths
    give ``mmh3``'s values.

MinHash
    Value ``i`` of a signature is ``min over shingle hashes h of fmix32(h XOR mask_i)``, with ``fmix32``
    MurmurHash3's 32-bit finaliser and ``mask_i`` the i-th of ``num_hashes`` uint32 drawn from
    ``numpy.random.default_rng(seed)``. The reference write-up XORs each hash with a random mask and keeps the
    *maximum* while calling it the minimum; we keep the minimum and say so.

    Why ``fmix32`` after the XOR: XOR with a mask alone is a poor permutation family. The minimum of
    ``h XOR m`` is decided by the highest bits of ``m`` (it walks the binary trie of the hashes), so masks that
    share their top bits pick the same shingle, and for a fixed set of hashes each shingle "owns" a dyadic
    share of all masks instead of 1/n; more masks do not shrink that error. Measured on 2,000 random set
    pairs per row, Jaccard uniform in [0, 1], 256-value signatures: share of pairs whose estimate is within
    0.1 of the exact Jaccard (RMS error in brackets):

    ==================  ===============  ===============
    union of shingles   XOR only         fmix32(h XOR m)
    ==================  ===============  ===============
    2 - 10              73.6% (0.096)    99.95% (0.025)
    10 - 50             88.0% (0.064)    100.0% (0.025)
    50 - 400            98.9% (0.035)    99.95% (0.025)
    400 - 3000          99.9% (0.027)    100.0% (0.025)
    ==================  ===============  ===============

    On the acceptance test's 600 text pairs (4 to 400 words, Jaccard spread over [0, 1]) XOR alone gets 92.2%
    within 0.1 (RMS 0.047) and fails the 95% bar; with ``fmix32`` 99.7% (RMS 0.019, the binomial
    sqrt(J(1-J)/256) being 0.019). Neither is biased on average, but XOR alone is far too noisy on short texts
    such as restaurant addresses (5-10 shingles).

Speed
    ``MinHash.signatures`` signs a whole batch with a fixed number of NumPy calls per chunk of shingles, not
    per document: the hashes of all documents are concatenated, combined with the masks in chunks laid out
    as (num_hashes, chunk) so every ufunc runs over contiguous memory, and reduced per document with
    ``np.minimum.reduceat``. Duplicate shingles need no removal for signing since the minimum ignores them.
    The first step of ``fmix32`` (``v ^= v >> 16``) distributes over XOR, so it is applied to hashes and masks
    beforehand, which leaves six passes over each block. ``benchmarks/signing.py`` measures the whole path.
"""

from __future__ import annotations

import html
import logging
import re
import string
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import mmh3
import numpy as np

from .errors import InvalidTextError, SignatureMismatchError
from .validation import check_choice, check_int, check_text

__all__ = [
    "normalize",
    "words",
    "first_word",
    "num_words",
    "Shingler",
    "ProcessedText",
    "MinHash",
    "Signature",
    "jaccard",
    "estimate_jaccard",
    "fmix32",
]

logger = logging.getLogger(__name__)

_U32 = np.uint32
_MAX_U32 = np.uint32(0xFFFFFFFF)

# ---------------------------------------------------------------------------------------------------------------
# Normalisation
# ---------------------------------------------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------------------------------------------
# MurmurHash3_x86_32 in NumPy (uint32 arithmetic wraps modulo 2**32 exactly like the C code)
# ---------------------------------------------------------------------------------------------------------------

_C1 = _U32(0xCC9E2D51)
_C2 = _U32(0x1B873593)
_F1 = _U32(0x85EBCA6B)
_F2 = _U32(0xC2B2AE35)
_N5 = _U32(5)
_NADD = _U32(0xE6546B64)

# Longer spans go to mmh3 one by one: the vectorised loop runs once per 4-byte block of the longest span, so a
# single huge token (a base64 blob) would otherwise cost one NumPy round per 4 bytes.
_MAX_VECTOR_SPAN = 64


def fmix32(x) -> np.ndarray:
    """MurmurHash3's 32-bit finaliser (a bijection on uint32), vectorised. Returns a new uint32 array."""
    x = np.array(x, dtype=_U32, copy=True)
    x ^= x >> _U32(16)
    x *= _F1
    x ^= x >> _U32(13)
    x *= _F2
    x ^= x >> _U32(16)
    return x


def _fmix32_tail_inplace(x: np.ndarray, tmp: np.ndarray) -> None:
    """fmix32 minus its first ``x ^= x >> 16`` (done beforehand, see MinHash), in place, no temporaries."""
    x *= _F1
    np.right_shift(x, _U32(13), out=tmp)
    x ^= tmp
    x *= _F2
    np.right_shift(x, _U32(16), out=tmp)
    x ^= tmp


# The in-place helpers below run over a million-element arrays per batch; fresh temporaries of that size
# cost page faults on every call, so they reuse a caller's scratch array (same length as ``x``).


def _rotl_inplace(x: np.ndarray, r: int, tmp: np.ndarray) -> None:
    np.right_shift(x, _U32(32 - r), out=tmp)
    np.left_shift(x, _U32(r), out=x)
    x |= tmp


def _scramble_inplace(k: np.ndarray, tmp: np.ndarray) -> None:
    """Per-block step of MurmurHash3_x86_32: ``k*c1, rotl 15, *c2``."""
    k *= _C1
    _rotl_inplace(k, 15, tmp)
    k *= _C2


def _absorb_inplace(h: np.ndarray, k: np.ndarray, tmp: np.ndarray) -> None:
    """Body step of MurmurHash3_x86_32: ``h ^= k, rotl 13, h*5 + 0xe6546b64``."""
    h ^= k
    _rotl_inplace(h, 13, tmp)
    h *= _N5
    h += _NADD


def _fmix32_inplace(x: np.ndarray, tmp: np.ndarray) -> None:
    np.right_shift(x, _U32(16), out=tmp)
    x ^= tmp
    _fmix32_tail_inplace(x, tmp)


def _murmur3_spans(data: bytes, starts: np.ndarray, lengths: np.ndarray, seed: int) -> np.ndarray:
    """``mmh3.hash(data[s:s+n], seed, signed=False)`` for every (s, n), vectorised over the spans.

    ``data`` must end with 4 padding bytes so that a 4-byte read at any span's end stays inside it.
    """
    count = len(starts)
    h = np.full(count, seed, dtype=_U32)
    if count == 0:
        return h
    # Unaligned little-endian uint32 at every byte offset, without copying: one gather reads a whole block.
    at = np.ndarray((len(data) - 3,), dtype="<u4", buffer=data, strides=(1,))
    scratch = np.empty(count, dtype=_U32)
    long_spans = np.flatnonzero(lengths > _MAX_VECTOR_SPAN)
    nblocks = np.minimum(lengths, _MAX_VECTOR_SPAN) >> 2
    # Block 0: most spans (words) have one, so it is cheaper to compute it for all and keep it where it
    # exists than to gather and scatter a subset. Reads past short spans stay inside the padding.
    k = at[starts]
    _scramble_inplace(k, scratch)
    h0 = h.copy()
    _absorb_inplace(h0, k, scratch)
    np.copyto(h, h0, where=nblocks > 0)
    # Later blocks: only the (shrinking) subset of spans that still have one.
    idx = np.flatnonzero(nblocks > 1)
    j = 1
    while idx.size:
        k = at[starts[idx] + 4 * j]
        tmp = scratch[: idx.size]
        _scramble_inplace(k, tmp)
        hj = h[idx]
        _absorb_inplace(hj, k, tmp)
        h[idx] = hj
        j += 1
        idx = idx[nblocks[idx] > j]
    # Tail bytes (len % 4), masked to their length; a zero mask makes the step a no-op for whole-block spans.
    tail_bits = (lengths & 3).astype(_U32) << _U32(3)
    k = at[starts + (lengths & ~3)]
    k &= (_U32(1) << tail_bits) - _U32(1)
    _scramble_inplace(k, scratch)
    h ^= k
    h ^= lengths.astype(_U32)
    _fmix32_inplace(h, scratch)
    for i in long_spans:
        s = int(starts[i])
        h[i] = mmh3.hash(data[s : s + int(lengths[i])], seed, False)
    return h


def _murmur3_words(scrambled: Sequence[np.ndarray], seed: int) -> np.ndarray:
    """MurmurHash3_x86_32 of keys made of ``len(scrambled)`` little-endian uint32 words, one key per element.

    The blocks come already through the per-block scramble (it depends on the word only, so callers do it
    once per word rather than once per shingle position). Folding them in order makes the hash
    position-sensitive ("a b c" and "c b a" differ).
    """
    h = np.full(len(scrambled[0]), seed, dtype=_U32)
    tmp = np.empty_like(h)
    for block in scrambled:
        _absorb_inplace(h, block, tmp)
    h ^= _U32(4 * len(scrambled))
    _fmix32_inplace(h, tmp)
    return h


def _scrambled(word_hashes: np.ndarray) -> np.ndarray:
    k = word_hashes.astype(_U32, copy=True)
    _scramble_inplace(k, np.empty_like(k))
    return k


def _concat_ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``concatenate([arange(s, s + c) for s, c in zip(starts, counts)])`` without the Python loop."""
    total = int(counts.sum())
    firsts = np.cumsum(counts) - counts
    return np.arange(total, dtype=np.int64) + np.repeat(starts - firsts, counts)


def _offsets(counts) -> np.ndarray:
    offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return offsets


# ---------------------------------------------------------------------------------------------------------------
# Shingling
# ---------------------------------------------------------------------------------------------------------------


class _HashCache(dict):
    """str -> ``mmh3.hash(str, seed)``, computed on first lookup, emptied when it reaches ``limit`` entries.

    ``map(cache.__getitem__, words)`` stays in C for hits, and a few thousand words cover most of any text.
    """

    def __init__(self, seed: int, limit: int):
        super().__init__()
        self.seed = seed
        self.limit = limit

    def __missing__(self, key: str) -> int:
        if len(self) >= self.limit:
            logger.debug("shingle hash cache reached %d entries; emptying it", self.limit)
            self.clear()
        value = mmh3.hash(key, self.seed, False)
        self[key] = value
        return value


@dataclass
class ProcessedText:
    """Everything the indexer needs from one text, computed once."""

    normalized: str
    words: list[str]
    shingles: list[str]
    shingle_hashes: np.ndarray = field(repr=False)

    @property
    def first_word(self) -> str:
        """The first word ('' when there is none)."""
        return self.words[0] if self.words else ""

    @property
    def num_words(self) -> int:
        """How many words the normalised text has."""
        return len(self.words)

    @property
    def has_shingles(self) -> bool:
        """False when nothing was left to shingle (empty or punctuation-only text)."""
        return bool(self.shingles)


def _distinct_in_order(values: np.ndarray) -> np.ndarray:
    if values.size <= 1:
        return values
    _, first = np.unique(values, return_index=True)
    return values[np.sort(first)]


def _preview(text, limit: int = 60) -> str:
    shown = repr(text)
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


class Shingler:
    """Turns a text into shingles and 32-bit shingle hashes.

    ``unit="word"``: n-grams of consecutive words (``ngram`` words each, joined by single spaces).
    ``unit="char"``: k-grams of consecutive characters of the normalised text, spaces included (k = ``ngram``).

    A text with at least one but fewer than ``ngram`` units yields exactly one shingle, the whole normalised
    text, so short texts (names, addresses) stay comparable. A text with nothing left after normalisation has
    no shingles.

    Hash values are ``mmh3``'s with ``seed`` (see the module docstring for how word shingles are hashed).
    ``batch_hashes`` hashes many texts at once in NumPy; single-text methods call ``mmh3`` through a cache of
    at most ``cache_size`` words (or character shingles), emptied when full.
    """

    UNITS = ("word", "char")

    def __init__(self, ngram: int = 3, unit: str = "word", seed: int = 42, cache_size: int = 200_000):
        self.ngram: int = check_int("ngram", ngram, "ngram")
        self.unit: str = check_choice("unit", unit, self.UNITS)
        self.seed: int = check_int("seed", seed, "seed")
        self._cache = _HashCache(self.seed, check_int("cache_size", cache_size, minimum=1, maximum=10**8))

    def __repr__(self) -> str:
        return f"Shingler(ngram={self.ngram}, unit={self.unit!r}, seed={self.seed})"

    def __eq__(self, other) -> bool:
        if not isinstance(other, Shingler):
            return NotImplemented
        return (self.ngram, self.unit, self.seed) == (other.ngram, other.unit, other.seed)

    def __hash__(self) -> int:
        return hash((self.ngram, self.unit, self.seed))

    # -- strings -------------------------------------------------------------------------------------------------

    def _shingles_of(self, normalized: str, ws: list[str] | None = None) -> list[str]:
        n = self.ngram
        grams: Iterable[str]
        if self.unit == "word":
            units = ws if ws is not None else _split_normalized(normalized)
            if not units:
                return []
            if len(units) < n:
                return [normalized]
            grams = map(" ".join, zip(*[units[i:] for i in range(n)]))
        else:
            if not normalized:
                return []
            if len(normalized) < n:
                return [normalized]
            grams = (normalized[i : i + n] for i in range(len(normalized) - n + 1))
        return list(dict.fromkeys(grams))

    def shingles(self, text: str) -> list[str]:
        """Distinct shingles of ``text`` in order of first appearance."""
        return self._shingles_of(normalize(text))

    # -- hashes --------------------------------------------------------------------------------------------------

    def hash_shingle(self, shingle: str) -> int:
        """Hash of one shingle string, the same value ``shingle_hashes`` produces for it (plain ``mmh3``).

        Character shingles: ``mmh3.hash(shingle, seed)``. Word shingles: ``mmh3.hash`` (same seed) of the
        little-endian uint32 ``mmh3.hash(word, seed)`` of its words; the shingle is normalised first, so any
        spelling of it gives the same hash.
        """
        _check_str(shingle)
        if self.unit == "char":
            return mmh3.hash(shingle, self.seed, False)
        ws = words(shingle)
        if not ws:
            raise InvalidTextError(f"shingle {_preview(shingle)} has no words after normalisation")
        packed = np.array([mmh3.hash(w, self.seed, False) for w in ws], dtype="<u4").tobytes()
        return mmh3.hash(packed, self.seed, False)

    def _hash_prepared(self, prepared: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Shingle hashes (duplicates kept) of texts already through ``normalize`` (or ``_prepare`` for words).

        Returns the concatenated hashes and per-text offsets; a text without shingles gets an empty slice.
        All texts are encoded into one buffer so that hashing costs a fixed number of NumPy calls per batch
        rather than Python work per word.
        """
        lengths = np.fromiter(
            (len(p) if p.isascii() else len(p.encode("utf-8")) for p in prepared), dtype=np.int64, count=len(prepared)
        )
        data = " ".join(prepared).encode("utf-8") + b"\0\0\0\0"
        # Byte offset where each text starts in ``data`` (texts are separated by one space).
        doc_starts = _offsets(lengths + 1)[:-1]
        buf = np.frombuffer(data, dtype=np.uint8, count=len(data) - 4)
        if self.unit == "word":
            return self._hash_words(data, buf, doc_starts, len(prepared))
        return self._hash_chars(data, buf, doc_starts, lengths)

    def _hash_words(self, data: bytes, buf: np.ndarray, doc_starts: np.ndarray, ndocs: int):
        solid = np.zeros(len(buf) + 2, dtype=bool)
        np.not_equal(buf, 32, out=solid[1:-1])
        edges = np.flatnonzero(solid[1:] != solid[:-1])
        word_starts = edges[0::2]
        word_lengths = edges[1::2] - word_starts
        # Every word lies inside its text's byte range, so text d's first word is the first one starting at or
        # after doc_starts[d]: one binary search per text instead of one per word.
        first_word = np.searchsorted(word_starts, doc_starts)
        lengths = np.diff(np.append(first_word, len(word_starts)))
        word_hashes = _murmur3_spans(data, word_starts, word_lengths, self.seed)
        return self._word_shingle_hashes(word_hashes, lengths)

    def _word_shingle_hashes(self, word_hashes: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Word n-gram hashes of texts whose words' hashes lie back to back, ``lengths[d]`` words for text d.

        Returns the concatenated shingle hashes (duplicates kept) and their per-text offsets.
        """
        n = self.ngram
        offsets = _offsets(lengths)
        blocks = _scrambled(word_hashes)
        counts = np.where(lengths >= n, lengths - n + 1, np.minimum(lengths, 1))
        out_offsets = _offsets(counts)
        out = np.empty(int(out_offsets[-1]), dtype=_U32)
        full = np.where(lengths >= n, counts, 0)
        if len(lengths) == 1 and full[0]:
            m = len(blocks) - n + 1
            out[:] = _murmur3_words([blocks[j : j + m] for j in range(n)], self.seed)
        elif full.any():
            m = len(blocks) - n + 1
            # Windows are computed at every word position, then only those that stay inside one text are kept.
            windows = _murmur3_words([blocks[j : j + m] for j in range(n)], self.seed)
            out[_concat_ranges(out_offsets[:-1], full)] = windows[_concat_ranges(offsets[:-1], full)]
        short = np.flatnonzero((lengths > 0) & (lengths < n))
        if short.size:
            # A text shorter than one shingle is one shingle: its k < n word hashes as a k-block key.
            width = lengths[short]
            for k in np.unique(width):
                sel = short[width == k]
                first = offsets[sel]
                out[out_offsets[sel]] = _murmur3_words([blocks[first + j] for j in range(int(k))], self.seed)
        return out, out_offsets

    def _hash_chars(self, data: bytes, buf: np.ndarray, doc_starts: np.ndarray, byte_lengths: np.ndarray):
        k = self.ngram
        # Byte offset of every character: UTF-8 continuation bytes look like 0b10xxxxxx.
        char_pos = np.flatnonzero((buf & 0xC0) != 0x80)
        char_pos = np.append(char_pos, len(buf))
        first_char = np.searchsorted(char_pos, doc_starts)
        nchars = np.searchsorted(char_pos, doc_starts + byte_lengths) - first_char
        counts = np.where(nchars >= k, nchars - k + 1, np.minimum(nchars, 1))
        out_offsets = _offsets(counts)
        span_starts = np.empty(int(out_offsets[-1]), dtype=np.int64)
        span_ends = np.empty_like(span_starts)
        full = np.where(nchars >= k, counts, 0)
        if full.any():
            ci = _concat_ranges(first_char, full)
            dst = _concat_ranges(out_offsets[:-1], full)
            span_starts[dst] = char_pos[ci]
            # A k-shingle ends where the (i+k)-th character starts (the separator or buffer end for the last).
            span_ends[dst] = char_pos[ci + k]
        short = np.flatnonzero((nchars > 0) & (nchars < k))
        span_starts[out_offsets[short]] = doc_starts[short]
        span_ends[out_offsets[short]] = doc_starts[short] + byte_lengths[short]
        return _murmur3_spans(data, span_starts, span_ends - span_starts, self.seed), out_offsets

    def batch_hashes(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Shingle hashes of many texts, concatenated, and the offsets of each text's slice (length n+1).

        Duplicates within a text are kept (signing does not need them removed). Raises InvalidTextError naming
        the first text without shingles.
        """
        prepared = []
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"text at index {i} is a {type(text).__name__}, not a str; decode it first")
            # Character shingles see the spaces, so they need the collapsed text; words only need separators.
            prepared.append(_prepare(text) if self.unit == "word" else normalize(text))
        hashes, offsets = self._hash_prepared(prepared)
        empty = np.flatnonzero(offsets[1:] == offsets[:-1])
        if empty.size:
            i = int(empty[0])
            raise InvalidTextError(
                f"text at index {i} has no shingles (empty, or only punctuation/control characters): "
                f"{_preview(texts[i])}; drop it or give it some words"
            )
        return hashes, offsets

    def _hash_one(self, normalized: str, ws: list[str] | None = None) -> np.ndarray:
        """Shingle hashes (duplicates kept) of one normalised text.

        One text is too small to amortise the ~100 NumPy calls of the batch path, so words (or character
        shingles) go through ``mmh3`` via a bounded cache instead; tests check both paths agree.
        """
        if self.unit == "char":
            k = self.ngram
            if len(normalized) < k:
                grams = [normalized] if normalized else []
            else:
                grams = [normalized[i : i + k] for i in range(len(normalized) - k + 1)]
            return np.fromiter(map(self._cache.__getitem__, grams), dtype=_U32, count=len(grams))
        ws = _split_normalized(normalized) if ws is None else ws
        if not ws:
            return np.empty(0, dtype=_U32)
        word_hashes = np.fromiter(map(self._cache.__getitem__, ws), dtype=_U32, count=len(ws))
        return self._word_shingle_hashes(word_hashes, np.array([len(ws)], dtype=np.int64))[0]

    def shingle_hashes(self, text: str) -> np.ndarray:
        """Distinct uint32 hashes of the shingles of ``text``, in order of first appearance."""
        return _distinct_in_order(self._hash_one(normalize(text)))

    def process(self, text: str) -> ProcessedText:
        """Normalised text, words, shingles and shingle hashes of ``text`` in one go.

        Does not raise for texts without shingles: their ``shingles`` is empty and ``has_shingles`` is False.
        """
        normalized = normalize(text)
        ws = _split_normalized(normalized)
        return ProcessedText(
            normalized=normalized,
            words=ws,
            shingles=self._shingles_of(normalized, ws),
            shingle_hashes=_distinct_in_order(self._hash_one(normalized, ws)),
        )


# ---------------------------------------------------------------------------------------------------------------
# MinHash
# ---------------------------------------------------------------------------------------------------------------

class Signature(np.ndarray):
    """A MinHash signature (1-D) or a batch of them (2-D, one row each): a uint32 NumPy array that also
    carries the ``seed`` of the masks that made it.

    Signatures are only comparable when made with the same seed and length; :func:`estimate_jaccard` raises
    :class:`~neardup_solr.errors.SignatureMismatchError` otherwise, as datasketch does, instead of returning a
    meaningless 0.0. The length is the array's own (``num_hashes``). Rows and slices keep the seed; plain
    arrays (for example decoded from Solr) have none and are compared on length alone.
    """

    seed: int | None

    @classmethod
    def of(cls, values: np.ndarray, seed: int | None) -> "Signature":
        """``values`` viewed as a Signature with ``seed`` (no copy)."""
        sig = values.view(cls)
        sig.seed = seed
        return sig

    def __array_finalize__(self, obj) -> None:
        self.seed = getattr(obj, "seed", None)

    @property
    def num_hashes(self) -> int:
        """The signature length (the last axis)."""
        return int(self.shape[-1]) if self.ndim else 0

    def __reduce__(self):
        # ndarray pickles the data and the class but not attributes of a subclass: add the seed.
        rebuild, args, state = super().__reduce__()[:3]
        return rebuild, args, (state, self.seed)

    def __setstate__(self, state) -> None:
        array_state, self.seed = state
        super().__setstate__(array_state)


# Bytes of one (num_hashes x chunk) block; the loop allocates two. Each chunk costs ~10 NumPy calls of fixed
# overhead, which dominated below ~1 MiB on the development machine; 2 to 8 MiB measured the same.
_CHUNK_BYTES = 4 << 20


class MinHash:
    """MinHash signatures of texts: ``num_hashes`` values, each ``min_h fmix32(h XOR mask_i)``.

    Parameters mirror the math: ``num_hashes`` is the signature length (the number of simulated permutations),
    ``seed`` fixes the masks, and ``shingler`` decides what the sets are (default: ``Shingler()``, word
    3-shingles hashed with its own seed 42). Indexer and searcher must use equal parameters.
    """

    def __init__(self, num_hashes: int = 128, seed: int = 42, shingler: Shingler | None = None):
        self.num_hashes: int = check_int("num_hashes", num_hashes, "num_hashes")
        self.seed: int = check_int("seed", seed, "seed")
        if shingler is not None and not isinstance(shingler, Shingler):
            raise TypeError(f"shingler must be a Shingler or None, got {type(shingler).__name__}")
        self.shingler = shingler if shingler is not None else Shingler()
        self.masks = np.random.default_rng(self.seed).integers(0, 1 << 32, size=self.num_hashes, dtype=_U32)
        self.masks.flags.writeable = False
        # fmix32 starts with v ^= v >> 16, which distributes over XOR: g(h ^ m) == g(h) ^ g(m). Applying it to
        # the masks here and to the hashes once per batch saves two passes over every (masks x chunk) block.
        self._masks_col = (self.masks ^ (self.masks >> _U32(16)))[:, None]
        self._chunk = max(64, _CHUNK_BYTES // (4 * self.num_hashes))

    def __repr__(self) -> str:
        return f"MinHash(num_hashes={self.num_hashes}, seed={self.seed}, shingler={self.shingler!r})"

    # -- core ----------------------------------------------------------------------------------------------------

    def _sign(self, hashes: np.ndarray, offsets: np.ndarray) -> "Signature":
        """Signatures of documents whose hashes are ``hashes[offsets[d]:offsets[d+1]]`` (all non-empty)."""
        ndocs = len(offsets) - 1
        # (num_hashes, docs) so reduceat runs along contiguous rows; transposed once at the end.
        result = np.full((self.num_hashes, ndocs), _MAX_U32, dtype=_U32)
        total = len(hashes)
        if ndocs == 0 or total == 0:
            return Signature.of(np.ascontiguousarray(result.T), self.seed)
        chunk = min(self._chunk, total)
        block = np.empty((self.num_hashes, chunk), dtype=_U32)
        scratch = np.empty_like(block)
        doc_starts = offsets[:-1]
        pre = hashes ^ (hashes >> _U32(16))
        for a in range(0, total, chunk):
            b = min(a + chunk, total)
            width = b - a
            x = block[:, :width]
            tmp = scratch[:, :width]
            np.bitwise_xor(self._masks_col, pre[None, a:b], out=x)
            _fmix32_tail_inplace(x, tmp)
            # Documents overlapping [a, b): the one containing row a up to the last one starting before b.
            d0 = int(np.searchsorted(doc_starts, a, side="right")) - 1
            d1 = int(np.searchsorted(doc_starts, b, side="left"))
            starts = np.maximum(doc_starts[d0:d1], a) - a
            mins = np.minimum.reduceat(x, starts, axis=1)
            # A document cut by a chunk border is finished by the next chunk, hence minimum() not assignment.
            np.minimum(result[:, d0:d1], mins, out=result[:, d0:d1])
        return Signature.of(np.ascontiguousarray(result.T), self.seed)

    # -- public API ----------------------------------------------------------------------------------------------

    def signature_from_hashes(self, hashes: Iterable[int] | np.ndarray) -> "Signature":
        """Signature (``num_hashes`` uint32) of one set of 32-bit shingle hashes."""
        h = _as_hashes(hashes)
        if h.size == 0:
            raise InvalidTextError("cannot sign an empty set of shingle hashes: the text had no shingles")
        return self._sign(h, np.array([0, h.size], dtype=np.int64))[0]

    def signatures_from_hashes(self, hash_arrays: Iterable) -> "Signature":
        """Signatures (n, num_hashes) of many sets of shingle hashes."""
        arrays = [_as_hashes(h) for h in hash_arrays]
        for i, h in enumerate(arrays):
            if h.size == 0:
                raise InvalidTextError(f"hash set at index {i} is empty: that text had no shingles")
        offsets = np.zeros(len(arrays) + 1, dtype=np.int64)
        np.cumsum([h.size for h in arrays], out=offsets[1:])
        hashes = np.concatenate(arrays) if arrays else np.empty(0, dtype=_U32)
        return self._sign(hashes, offsets)

    def signature(self, text: str) -> "Signature":
        """Signature of one text. Raises InvalidTextError when the text has no shingles."""
        h = self.shingler._hash_one(normalize(text))
        if h.size == 0:
            raise InvalidTextError(
                f"text has no shingles (empty or only punctuation/control characters after normalisation): "
                f"{_preview(text)}"
            )
        return self._sign(h, np.array([0, h.size], dtype=np.int64))[0]

    def signatures(self, texts: Sequence[str]) -> "Signature":
        """Signatures (len(texts), num_hashes) of many texts, computed batch-wise (the fast path).

        Raises InvalidTextError naming the index of the first text without shingles. Working memory is about
        twice the texts' size plus ~40 bytes per shingle; batches of a few thousand documents are plenty
        to reach full speed.
        """
        if isinstance(texts, str):
            raise TypeError("signatures() takes a sequence of texts; use signature() for a single text")
        hashes, offsets = self.shingler.batch_hashes(list(texts))
        return self._sign(hashes, offsets)


def _as_hashes(hashes) -> np.ndarray:
    arr = np.asarray(hashes)
    if arr.ndim != 1:
        raise ValueError(f"shingle hashes must be a 1-D array, got shape {arr.shape}")
    if arr.dtype != _U32:
        if arr.size and (not np.issubdtype(arr.dtype, np.integer) or arr.min() < 0 or arr.max() > 0xFFFFFFFF):
            raise ValueError("shingle hashes must be unsigned 32-bit integers (0 <= h < 2**32)")
        arr = arr.astype(_U32)
    return arr


# ---------------------------------------------------------------------------------------------------------------
# Similarities
# ---------------------------------------------------------------------------------------------------------------


def jaccard(a: Iterable, b: Iterable) -> float:
    """Exact Jaccard similarity |a & b| / |a | b| of two sets (0.0 when both are empty)."""
    sa = a if isinstance(a, (set, frozenset)) else set(a.tolist() if isinstance(a, np.ndarray) else a)
    sb = b if isinstance(b, (set, frozenset)) else set(b.tolist() if isinstance(b, np.ndarray) else b)
    union = len(sa | sb)
    return len(sa & sb) / union if union else 0.0


def estimate_jaccard(sig_a: np.ndarray, sig_b: np.ndarray) -> float:
    """MinHash estimate of the Jaccard similarity: the share of positions where two signatures agree.

    Raises :class:`~neardup_solr.errors.SignatureMismatchError` when the signatures were made with different
    seeds or have different lengths: their positions do not correspond, so any number would be meaningless.
    """
    seed_a, seed_b = getattr(sig_a, "seed", None), getattr(sig_b, "seed", None)
    if seed_a is not None and seed_b is not None and seed_a != seed_b:
        raise SignatureMismatchError(
            f"the signatures were made with different seeds ({seed_a} and {seed_b}), so their values are not "
            "comparable; sign both texts with the same MinHash (same seed and num_hashes)"
        )
    a = np.asarray(sig_a)
    b = np.asarray(sig_b)
    if a.ndim != 1 or b.ndim != 1 or a.size == 0 or b.size == 0:
        raise SignatureMismatchError(
            f"signatures must be non-empty 1-D arrays, got shapes {a.shape} and {b.shape}; for a batch from "
            "signatures(), compare its rows"
        )
    if a.size != b.size:
        raise SignatureMismatchError(
            f"signatures of different lengths ({a.size} and {b.size} values) cannot be compared; were they made "
            "with the same num_hashes?"
        )
    return float(np.count_nonzero(a == b)) / a.size
