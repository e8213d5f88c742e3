"""MinHash signatures of shingle-hash sets, and the exact and estimated Jaccard similarities.

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

    That is the NumPy path, the reference. Where the compiled kernel is built (``neardup_solr.text.kernel``)
    every signing method goes through it instead, with the same values; it is 5-9x faster.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from neardup_solr.errors import InvalidTextError, SignatureMismatchError
from neardup_solr.validation import check_int
from neardup_solr.text import kernel
from neardup_solr.text.murmur import _fmix32_tail_inplace
from neardup_solr.text.shingles import Shingler, _preview, raise_for_texts_without_shingles

_U32 = np.uint32
_MAX_U32 = np.uint32(0xFFFFFFFF)

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
        if kernel.available():
            return Signature.of(kernel.sign_hashes(hashes, offsets, self.masks), self.seed)
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
        h = self.shingler._hash_one(self.shingler.normalizer.normalize(text))
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
        return self.hashes_and_signatures(texts)[2]

    def hashes_and_signatures(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray, "Signature"]:
        """The shingler's ``batch_hashes`` of ``texts`` (hashes, offsets) and their signatures, in one pass where
        the compiled kernel is built. Raises InvalidTextError naming the first text without shingles."""
        texts = list(texts)
        if not kernel.available():
            hashes, offsets = self.shingler.batch_hashes(texts)
            return hashes, offsets, self._sign(hashes, offsets)
        hashes, offsets, values = kernel.hashes_and_signatures(texts, self.shingler.kernel_arguments(), self.masks)
        raise_for_texts_without_shingles(texts, np.diff(offsets))
        return hashes, offsets, Signature.of(values, self.seed)


def _as_hashes(hashes) -> np.ndarray:
    arr = np.asarray(hashes)
    if arr.ndim != 1:
        raise ValueError(f"shingle hashes must be a 1-D array, got shape {arr.shape}")
    if arr.dtype != _U32:
        if arr.size and (not np.issubdtype(arr.dtype, np.integer) or arr.min() < 0 or arr.max() > 0xFFFFFFFF):
            raise ValueError("shingle hashes must be unsigned 32-bit integers (0 <= h < 2**32)")
        arr = arr.astype(_U32)
    return arr


def jaccard(a: Iterable, b: Iterable) -> float:
    """Exact Jaccard similarity |a & b| / |a | b| of two sets (0.0 when both are empty)."""
    sa = a if isinstance(a, (set, frozenset)) else set(a.tolist() if isinstance(a, np.ndarray) else a)
    sb = b if isinstance(b, (set, frozenset)) else set(b.tolist() if isinstance(b, np.ndarray) else b)
    union = len(sa | sb)
    return len(sa & sb) / union if union else 0.0


def _scheme(sig: np.ndarray) -> str | None:
    """What made a signature: "minhash" for a plain Signature, a weighted one's scheme, None for a bare array."""
    if not isinstance(sig, Signature):
        return None
    return getattr(sig, "scheme", None) or "minhash"


def estimate_jaccard(sig_a: np.ndarray, sig_b: np.ndarray) -> float:
    """MinHash estimate of the Jaccard similarity: the share of positions where two signatures agree.

    Raises :class:`~neardup_solr.errors.SignatureMismatchError` when the signatures were made with different
    seeds, by different schemes (plain and weighted, see :mod:`.weighted`) or have different lengths: their
    positions do not correspond, so any number would be meaningless.
    """
    scheme_a, scheme_b = _scheme(sig_a), _scheme(sig_b)
    if scheme_a is not None and scheme_b is not None and scheme_a != scheme_b:
        raise SignatureMismatchError(
            f"the signatures were made by different schemes ({scheme_a} and {scheme_b}), so their values are not "
            "comparable; sign both with the same signer"
        )
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
