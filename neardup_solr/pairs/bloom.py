"""A Bloom filter of 64-bit keys in a NumPy bit array: which keys can be in a set, with no false negatives.

Used by the asymmetric join (:mod:`neardup_solr.engine.lsh_join`): the indexed side's LSH band keys go in once, and a
streamed record none of whose band keys can be there is skipped before any Solr query (it cannot become a
candidate of the LSH method). A false positive only costs the query the filter would have saved.

Sizing for ``n`` keys and a false-positive rate ``p``: ``m = -n ln p / (ln 2)^2`` bits and ``k = (m/n) ln 2``
probes a key (about 1.2 bytes and 7 probes a key at p = 0.01). The probes are ``h1 + i * h2 mod m`` (double
hashing, Kirsch and Mitzenmacher 2006) of two SplitMix64 mixes of the key, all vectorised.
"""

from __future__ import annotations

import math

import numpy as np

from neardup_solr.validation import check_float, check_int

__all__ = ["BloomFilter"]

_SEED_1 = np.uint64(0x9E3779B97F4A7C15)
_SEED_2 = np.uint64(0xD1B54A32D192ED03)
# Keys probed at once (k uint64 positions each).
_CHUNK = 1 << 20


def _mix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser: every input bit reaches every output bit."""
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


class BloomFilter:
    """A Bloom filter sized for ``capacity`` keys at false-positive rate ``fp_rate`` (see the module docstring).

    >>> bloom = BloomFilter(1000, 0.01)
    >>> bloom.add(np.arange(1000, dtype=np.uint64))
    >>> bool(bloom.contains(np.array([5], dtype=np.uint64))[0])
    True
    """

    def __init__(self, capacity: int, fp_rate: float = 0.01):
        capacity = check_int("capacity", capacity, minimum=0)
        self.fp_rate = check_float("bloom_fp_rate", fp_rate, "bloom_fp_rate")
        self.capacity = max(1, capacity)
        bits = math.ceil(-self.capacity * math.log(self.fp_rate) / math.log(2) ** 2)
        self.num_bits = max(64, -(-bits // 64) * 64)
        self.num_probes = max(1, round(self.num_bits / self.capacity * math.log(2)))
        self.bits = np.zeros(self.num_bits // 8, dtype=np.uint8)
        self.count = 0  # keys added (with repeats)

    @property
    def size_bytes(self) -> int:
        """Memory the bit array takes."""
        return int(self.bits.nbytes)

    def _positions(self, keys: np.ndarray) -> np.ndarray:
        """(len(keys), num_probes) bit positions."""
        keys = np.asarray(keys, dtype=np.uint64).ravel()
        h1 = _mix64(keys ^ _SEED_1)
        h2 = _mix64(keys ^ _SEED_2) | np.uint64(1)  # odd: the probes of one key never all coincide
        steps = np.arange(self.num_probes, dtype=np.uint64)
        with np.errstate(over="ignore"):
            return (h1[:, None] + steps[None, :] * h2[:, None]) % np.uint64(self.num_bits)

    def add(self, keys: np.ndarray) -> None:
        """Add 64-bit keys (any integer array; flattened)."""
        keys = np.asarray(keys, dtype=np.uint64).ravel()
        for lo in range(0, keys.size, _CHUNK):
            pos = self._positions(keys[lo:lo + _CHUNK]).ravel()
            np.bitwise_or.at(self.bits, (pos >> np.uint64(3)).astype(np.int64),
                             (np.uint8(1) << (pos & np.uint64(7)).astype(np.uint8)))
        self.count += int(keys.size)

    def contains(self, keys: np.ndarray) -> np.ndarray:
        """For each key, whether it may have been added (False: it certainly was not)."""
        keys = np.asarray(keys, dtype=np.uint64).ravel()
        out = np.empty(keys.size, dtype=bool)
        for lo in range(0, keys.size, _CHUNK):
            pos = self._positions(keys[lo:lo + _CHUNK])
            hit = (self.bits[(pos >> np.uint64(3)).astype(np.int64)] >> (pos & np.uint64(7)).astype(np.uint8)) & 1
            out[lo:lo + _CHUNK] = hit.all(axis=1)
        return out

    def expected_fp_rate(self) -> float:
        """The false-positive rate to expect with the keys added so far: ``(1 - e^(-k n / m))^k``."""
        k, n, m = self.num_probes, self.count, self.num_bits
        return (1.0 - math.exp(-k * n / m)) ** k
