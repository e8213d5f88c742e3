"""MurmurHash3_x86_32 in NumPy, for many spans of one buffer at once (uint32 arithmetic wraps modulo 2**32
exactly like the C code).

Batches do not call ``mmh3`` per word: Python-level work per word (a function call or a dict lookup on a fresh
string, ~70 ns) would cost more than all the rest of the pipeline. Instead the texts are encoded into one UTF-8
buffer, word (or character shingle) boundaries are found with NumPy, and the same MurmurHash3_x86_32 is
evaluated for all spans at once. The tests check that these functions give ``mmh3``'s values.
"""

from __future__ import annotations

from collections.abc import Sequence

import mmh3
import numpy as np

_U32 = np.uint32

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

