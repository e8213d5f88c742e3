"""The exact threshold report without a query per document: an all-pairs prefix-filter join in NumPy.

``report --threshold T --method exact`` (plain Jaccard) used to send one Solr query per document; each call
paid a ``/terms`` request, an OR-query and the re-shingling of every candidate's text. Here Solr only serves
the documents once, through a cursor, and the join runs in the client (Bayardo et al. 2007, "all pairs";
Xiao et al. 2008, PPJoin):

1. **Token sets.** Every document's distinct 32-bit shingle hashes (the sets the per-document method
   verifies on), computed page by page from the stored texts with the vectorised
   :meth:`~neardup_solr.text.Shingler.batch_hashes`; only the hashes are kept.
2. **Global order.** Each hash is replaced by its rank in the order (document frequency, hash): rarest first,
   ties fixed, so the result never depends on input order. Each set is sorted by rank.
3. **Prefix filter.** If ``J(x, y) >= t`` then ``|x & y| >= ceil(t|x|)``, so x and y share a token among the
   first ``|x| - ceil(t|x|) + 1`` of each (the same lemma :mod:`.prefix_filter` applies per query). The
   prefix entries are grouped by token; every pair inside a group is a candidate, generated in chunks of at
   most ``_PAIR_CHUNK`` pairs so memory stays flat however frequent a prefix token is.
4. **Length, positional and bitmap filters.** ``J >= t`` needs ``t|y| <= |x| <= |y|/t``; and for a shared token at
   positions ``i`` and ``j``, at most ``min(i, j)`` shared tokens come before it and
   ``min(|x|-i-1, |y|-j-1)`` after it, which must reach ``ceil(t/(1+t) (|x|+|y|))``. Once the occurrences
   are grouped by pair, the ``c`` shared prefix tokens are counted and the bound becomes ``c`` plus what
   follows the last of them (PPJoin's). A 256-bit bitmap of each set bounds the overlap too (a bit one set
   has and the other lacks is a token the other lacks).
5. **Verification.** The exact Jaccard of every surviving pair, vectorised (binary search of the smaller set
   in the larger); pairs >= ``t`` (with the per-document method's 1e-12 tolerance) are reported, with the very
   same float the per-document method computes (``|A & B| / |A | B|`` of the same hash sets).

Every bound above is loosened by a relative 1e-9 so that a pair exactly on the threshold (or within the
tolerance) is never filtered out by float rounding; a looser bound only lets a candidate more through.

Memory: 4 bytes a shingle for the hashes while reading; the ranking and the join's ``document << 32 | rank``
array (8 bytes a shingle) peak at about 40 bytes a shingle for a moment (measured: 147 MiB for 1,000
documents of 3,500 shingles, 2.1 s), plus the candidate pairs that pass the length and positional filters
(24 bytes each).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

import numpy as np

from neardup_solr.pairs._arrays import concat_ranges, set_intersections, sorted_distinct
from neardup_solr.errors import InvalidTextError
from neardup_solr.text import Shingler

log = logging.getLogger(__name__)

__all__ = ["AllPairsStats", "TokenSets", "token_sets", "prefix_join"]

# Candidate pairs materialised at once (a few int64 temporaries of this length).
_PAIR_CHUNK = 4_000_000
# Relative slack of every float bound (see the module docstring).
_SLACK = 1e-9
# The per-document method keeps sim >= t - 1e-12; so does this one, to report the very same pairs.
TOLERANCE = 1e-12


@dataclass
class AllPairsStats:
    """What the join did: sizes of each stage, for logs and benchmarks."""

    documents: int = 0
    shingles: int = 0  # distinct shingles summed over documents
    prefix_entries: int = 0
    candidate_occurrences: int = 0  # (pair, shared prefix token) met, before any filter
    after_length: int = 0  # occurrences left by the length and positional filters
    candidates: int = 0  # distinct pairs verified
    pairs: int = 0
    seconds: dict[str, float] = field(default_factory=dict)


@dataclass
class TokenSets:
    """Distinct shingle hashes of n documents: ``hashes[offsets[i]:offsets[i+1]]`` (sorted) is document i's."""

    hashes: np.ndarray  # uint32
    offsets: np.ndarray  # int64, n + 1

    @property
    def sizes(self) -> np.ndarray:
        """Each document's number of distinct shingle hashes."""
        return np.diff(self.offsets)


def token_sets(shingler: Shingler, texts: Sequence[str]) -> TokenSets:
    """The distinct shingle hashes of each text, in one vectorised hashing pass (the hashes ``process()`` gives
    the same texts; a text without any shingle gets an empty set)."""
    try:
        hashes, offsets = shingler.batch_hashes(texts)
    except InvalidTextError:  # a text without shingles: one at a time, so the others keep theirs
        parts = []
        for text in texts:
            try:
                parts.append(shingler.shingle_hashes(text))
            except InvalidTextError:
                parts.append(np.empty(0, dtype=np.uint32))
        offsets = np.zeros(len(parts) + 1, dtype=np.int64)
        np.cumsum([p.size for p in parts], out=offsets[1:])
        hashes = np.concatenate(parts) if parts else np.empty(0, dtype=np.uint32)
    slots = np.repeat(np.arange(len(texts), dtype=np.int64), np.diff(offsets))
    keyed = sorted_distinct((slots << 32) | hashes.astype(np.int64))  # each hash once per document
    sizes = np.bincount(keyed >> 32, minlength=len(texts)).astype(np.int64)
    out = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(sizes, out=out[1:])
    return TokenSets((keyed & 0xFFFFFFFF).astype(np.uint32), out)


def concat_token_sets(parts: Iterable[TokenSets]) -> TokenSets:
    """One TokenSets of several, documents in the order given."""
    parts = list(parts)
    if not parts:
        return TokenSets(np.empty(0, dtype=np.uint32), np.zeros(1, dtype=np.int64))
    sizes = np.concatenate([p.sizes for p in parts])
    offsets = np.zeros(sizes.size + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    return TokenSets(np.concatenate([p.hashes for p in parts]), offsets)


def min_overlap(threshold: float, sizes: np.ndarray) -> np.ndarray:
    """``ceil(t * |x|)``, loosened by the relative slack: the overlap a set of size |x| needs with any partner."""
    s = sizes.astype(np.float64)
    return np.ceil(threshold * s - _SLACK * np.maximum(s, 1.0)).astype(np.int64)


def prefix_join(
    sets: TokenSets,
    threshold: float,
    *,
    stats: AllPairsStats | None = None,
    on_progress: Callable[[str, int, int], None] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair of documents (i < j, positions in ``sets``) whose Jaccard is >= ``threshold`` (within 1e-12),
    as arrays ``(i, j, jaccard)`` sorted by (i, j). ``on_progress(stage, done, total)`` is called as the
    candidate and verification stages advance."""
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold must be a Jaccard similarity in (0, 1], got {threshold!r}")
    import time

    stats = stats if stats is not None else AllPairsStats()
    t0 = time.perf_counter()
    sizes = sets.sizes
    n = sizes.size
    stats.documents, stats.shingles = int(n), int(sizes.sum())
    empty = np.empty(0, dtype=np.int64)
    if n < 2 or sets.hashes.size == 0:
        return empty, empty, np.empty(0, dtype=np.float64)

    # 2. global order: rank of each distinct hash by (document frequency, hash)
    # Distinct hashes and their document frequencies by one sort (see sorted_distinct on np.unique).
    by_hash = np.argsort(sets.hashes, kind="stable")
    sorted_hashes = sets.hashes[by_hash]
    new_hash = np.r_[True, sorted_hashes[1:] != sorted_hashes[:-1]]
    inverse = np.empty(sorted_hashes.size, dtype=np.int64)
    inverse[by_hash] = np.cumsum(new_hash) - 1
    uniq = sorted_hashes[new_hash]
    counts = np.diff(np.r_[np.flatnonzero(new_hash), sorted_hashes.size])
    del by_hash, sorted_hashes, new_hash
    rank_of = np.empty(uniq.size, dtype=np.int64)
    rank_of[np.lexsort((uniq, counts))] = np.arange(uniq.size, dtype=np.int64)
    del uniq, counts
    slots = np.repeat(np.arange(n, dtype=np.int64), sizes)
    keyed = np.sort((slots << 32) | rank_of[inverse])  # by document, then rank
    del inverse, rank_of, slots
    starts = sets.offsets[:-1]
    stats.seconds["order"] = round(time.perf_counter() - t0, 3)

    # 3. prefix entries, grouped by token (stable: documents ascending within a token)
    t0 = time.perf_counter()
    plen = np.clip(sizes - min_overlap(threshold, sizes) + 1, 0, sizes)
    idx = concat_ranges(starts, plen)
    tokens = keyed[idx] & 0xFFFFFFFF
    order = np.argsort(tokens, kind="stable")
    entry_doc = (keyed[idx] >> 32)[order]
    entry_pos = (idx - starts[keyed[idx] >> 32])[order]
    tokens = tokens[order]
    del idx, order
    stats.prefix_entries = int(tokens.size)
    # Each entry pairs with the later entries of its group: ``later`` of them.
    group_start = np.flatnonzero(np.r_[True, tokens[1:] != tokens[:-1]]) if tokens.size else empty
    group_size = np.diff(np.r_[group_start, tokens.size])
    del tokens
    group_end = np.repeat(group_start + group_size, group_size)
    later = group_end - np.arange(group_end.size, dtype=np.int64) - 1
    del group_end
    cum = np.cumsum(later)
    total_pairs = int(cum[-1]) if cum.size else 0
    stats.candidate_occurrences = total_pairs

    # 4. candidates, chunk by chunk: length filter and the positional bound valid for any shared token
    fsizes = sizes.astype(np.float64)
    bits = _bitmaps(keyed, n)
    kept_code: list[np.ndarray] = []
    kept_pos: list[np.ndarray] = []
    lo = 0
    done = 0
    while lo < later.size:
        base = int(cum[lo - 1]) if lo else 0
        hi = max(lo + 1, int(np.searchsorted(cum, base + _PAIR_CHUNK, side="right")))
        cnt = later[lo:hi]
        left = np.repeat(np.arange(lo, hi, dtype=np.int64), cnt)
        right = left + 1 + (np.arange(left.size, dtype=np.int64) - np.repeat(np.cumsum(cnt) - cnt, cnt))
        a, b = entry_doc[left], entry_doc[right]
        sa, sb = fsizes[a], fsizes[b]
        small, large = np.minimum(sa, sb), np.maximum(sa, sb)
        ok = small >= threshold * large - _SLACK * large
        pa, pb = entry_pos[left], entry_pos[right]
        need = np.ceil(threshold / (1.0 + threshold) * (sa + sb) - _SLACK * (sa + sb))
        ok &= (np.minimum(pa, pb) + 1 + np.minimum(sa - pa - 1, sb - pb - 1)) >= need
        a, b, pa, pb, need = a[ok], b[ok], pa[ok], pb[ok], need[ok]
        # Bitmap filter (Sandes et al. 2020): a bit a's bitmap sets and b's does not stands for a token of a
        # missing from b, so the overlap is at most |a| minus the number of such bits (and likewise for b).
        # It removed 99.8% of the candidates left on person records (short sets of common shingles).
        ok = (np.minimum(sa[ok] - _popcount(bits[a] & ~bits[b]), sb[ok] - _popcount(bits[b] & ~bits[a]))
              >= need)
        a, b, pa, pb = a[ok], b[ok], pa[ok], pb[ok]
        kept_code.append(a * n + b)  # a < b: entries of a group are in document order
        # Which occurrence is a pair's first shared token: the one with the smallest positions.
        kept_pos.append((pa << 32) | pb)
        done += int(cnt.sum())
        if on_progress:
            on_progress("candidates", done, total_pairs)
        lo = hi
    del entry_doc, entry_pos, later, cum, bits
    code = np.concatenate(kept_code) if kept_code else empty
    pos = np.concatenate(kept_pos) if kept_pos else empty
    del kept_code, kept_pos
    stats.after_length = int(code.size)
    # Group the occurrences by pair. Every shared token ranked up to a pair's last shared prefix token lies in
    # both prefixes (positions are ranks' order), so with c such tokens the overlap is at most
    # c + min(|x| - i_last - 1, |y| - j_last - 1). A pair that can qualify lost none of its occurrences
    # above (each bound there holds for every shared token), so c is its full count.
    order = np.lexsort((pos, code))
    code, pos = code[order], pos[order]
    del order
    starts_ = np.flatnonzero(np.r_[True, code[1:] != code[:-1]]) if code.size else empty
    shared = np.diff(np.r_[starts_, code.size])
    last = pos[starts_ + shared - 1]
    x, y = np.divmod(code[starts_], np.int64(n))
    del code, pos
    pa, pb = last >> 32, last & 0xFFFFFFFF
    sa, sb = fsizes[x], fsizes[y]
    need = np.ceil(threshold / (1.0 + threshold) * (sa + sb) - _SLACK * (sa + sb))
    ok = (shared + np.minimum(sa - pa - 1, sb - pb - 1)) >= need
    x, y = x[ok], y[ok]
    stats.candidates = int(x.size)
    stats.seconds["candidates"] = round(time.perf_counter() - t0, 3)

    # 5. exact verification
    t0 = time.perf_counter()
    inter = set_intersections(keyed, sizes, x, y, _PAIR_CHUNK,
                              (lambda done, total: on_progress("verify", done, total)) if on_progress else None)
    union = sizes[x] + sizes[y] - inter
    sim = inter / np.maximum(union, 1)
    keep = sim >= threshold - TOLERANCE
    stats.pairs = int(keep.sum())
    stats.seconds["verify"] = round(time.perf_counter() - t0, 3)
    log.info("all-pairs join at t=%g: %d documents, %d prefix entries, %d pair occurrences, %d candidates, "
             "%d pairs", threshold, n, stats.prefix_entries, stats.candidate_occurrences, stats.candidates,
             stats.pairs)
    return x[keep], y[keep], sim[keep]


# Bits of each document's token bitmap (in 32-bit words: built with a float64 bincount, exact below 2**53).
_BITMAP_WORDS = 8


def _popcount(words: np.ndarray) -> np.ndarray:
    """Set bits of each row of a (m, _BITMAP_WORDS) uint32 array."""
    return np.bitwise_count(words).sum(axis=1, dtype=np.int64)


def _bitmaps(keyed: np.ndarray, n: int) -> np.ndarray:
    """(n, _BITMAP_WORDS) uint32: bit ``mix(rank) % 256`` set for every token of each document."""
    docs = keyed >> 32
    with np.errstate(over="ignore"):
        bit = ((keyed & 0xFFFFFFFF).astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15) >> np.uint64(56)).astype(np.int64)
    cells = sorted_distinct((docs << 8) | bit)  # each bit once per document
    words = (cells >> 5)  # document * 8 + word
    values = np.left_shift(1, cells & 31).astype(np.float64)
    counts = np.bincount(words, weights=values, minlength=n * _BITMAP_WORDS)
    return counts.astype(np.uint32).reshape(n, _BITMAP_WORDS)


def brute_force_pairs(sets: TokenSets, threshold: float) -> list[tuple[int, int, float]]:
    """Every pair >= ``threshold`` by comparing all of them (for tests on small inputs)."""
    docs = [sets.hashes[sets.offsets[i]:sets.offsets[i + 1]] for i in range(sets.sizes.size)]
    out = []
    for i in range(len(docs)):
        for j in range(i + 1, len(docs)):
            inter = np.intersect1d(docs[i], docs[j], assume_unique=True).size
            union = docs[i].size + docs[j].size - inter
            if union and inter / union >= threshold - TOLERANCE:
                out.append((i, j, inter / union))
    return out

