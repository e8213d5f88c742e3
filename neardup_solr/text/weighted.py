"""Weighted MinHash: signatures whose positions agree with probability equal to the *weighted* Jaccard.

For token -> weight maps ``A`` and ``B`` (weights >= 0; a token that is absent weighs 0), the weighted Jaccard is
``sum_t min(A[t], B[t]) / sum_t max(A[t], B[t])``. With one weight per token for the whole collection (IDF, times a
column's field weight) that is :func:`neardup_solr.pairs.weighted.weighted_jaccard` of the two token sets. Two schemes:

ICWS (:class:`WeightedMinHash`, the default)
    Ioffe's *improved consistent weighted sampling* (2010), the scheme datasketch's
    ``WeightedMinHashGenerator`` implements. For signature position ``i`` and token ``t`` three random values are
    drawn, ``r, c ~ Gamma(2, 1)`` and ``beta ~ Uniform(0, 1)``; a token of weight ``w`` gets
    ``t_i = floor(ln(w) / r + beta)`` and ``ln a = ln(c) - r * (t_i - beta) - r``, and position ``i`` keeps the
    token of least ``ln a`` together with its ``t_i``. ``P[sig_a[i] == sig_b[i]]`` is exactly the weighted Jaccard
    (real-valued weights, no rounding). datasketch draws the random values from a generator over a fixed
    dimension (``dim``: a vector index per token); tokens here are open-ended strings, so the values are derived
    from a 64-bit hash of the token and the position instead (splitmix64 rounds, 32-bit uniforms: a Gamma(2, 1)
    is ``-ln(u1 * u2)``). The kept (token, t_i) pair is folded into one uint32, so a weighted signature has the
    shape and dtype of a plain one and :func:`~neardup_solr.pairs.lsh.band_keys` bands it unchanged (two different
    pairs collide with probability 2**-32 per position).

Integer boosts (:class:`BoostedMinHash`, write-up 001's baseline)
    A token of weight ``w`` becomes ``max(1, round(w * scale))`` sub-tokens (the token's hash mixed with boost salts
    0, 1, ...), and a plain :class:`~neardup_solr.text.MinHash` signs the expanded set. It estimates the weighted
    Jaccard of the *rounded* weights, so it is biased by the rounding (a weight under ``1.5 / scale`` counts as one),
    and its cost grows with the weights (``sum round(w * scale)`` sub-tokens a document).

Why ICWS is the default (measured with ``benchmarks/weighted.py``'s estimator section, 128 values, pairs of
generated person records under their IDF weights): on IDF weights as they come (2 to 9) both schemes are within
the binomial error, mean absolute error 0.0172 for ICWS and 0.0164 to 0.0174 for boosts at scales 2 to 8, and
boosts sign faster there (57,400 maps/s at scale 2, 19,700 at scale 8, against 17,600 for ICWS). But the boost
scheme's accuracy depends on the weights' scale: with the same weights times 0.25 (a field weight of 0.25) the
duplicate pairs' bias is +0.0075 at scale 2 and -0.0056 at scale 8, against +0.0013 for ICWS, whose estimate is
unbiased whatever the weights (no rounding), and boosts' cost grows with the weights (a bigger collection has
larger IDF). Signing is a small part of a run (about 1 s for 10,000 records), so the scheme whose error does not
depend on a tuning knob is the default. Both are deterministic across processes and machines: they depend only
on the seed, the token strings and the weights.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

import mmh3
import numpy as np

from neardup_solr.errors import InvalidParameterError, InvalidTextError
from neardup_solr.validation import Limit, check_float, check_int
from neardup_solr.text.minhash import MinHash, Signature, estimate_jaccard
from neardup_solr.text.murmur import fmix32

__all__ = ["WeightedMinHash", "BoostedMinHash", "WeightedSignature", "estimate_weighted_jaccard",
           "exact_weighted_jaccard", "SCHEMES"]

SCHEMES = ("icws", "boost")

_U64 = np.uint64
_GOLDEN = _U64(0x9E3779B97F4A7C15)
_M1 = _U64(0xBF58476D1CE4E5B9)
_M2 = _U64(0x94D049BB133111EB)
_LOW32 = _U64(0xFFFFFFFF)
# Seed of the 64-bit token hash; the signer's own seed enters through its per-position keys.
_TOKEN_HASH_SEED = 0x5EED
# Elements of one (num_hashes x tokens) block: about ten float64/uint64 temporaries of this size are alive at
# once in each signing thread. 2**16 elements (512 KiB an array, 512 tokens at 128 values) keeps a block's
# arithmetic in the cores' caches. It was 2**21 (16 MiB arrays, streamed through main memory): signing the
# 5,000 x 5,000 person-record join (27,016 distinct tokens) then took 2-3x as long and its temporaries were
# ~200 MiB of the run's 286 MiB peak (issue 40, point 5). The per-block Python overhead (~30 NumPy calls) stays
# small at this size: ~50 blocks for that join.
_BLOCK_ELEMENTS = 1 << 16
# Threads an ICWS batch is signed with (NumPy's loops release the GIL): one per core, at most 2, the number of
# workers the exact method's lookups run with by default.
SIGNING_THREADS = max(1, min(2, os.cpu_count() or 1))


class WeightedSignature(Signature):
    """A weighted MinHash signature (or a batch of them): a :class:`~neardup_solr.text.Signature` that also names
    its ``scheme`` (``"icws"``, or ``"boost:<scale>"``). Signatures of different schemes, seeds or lengths are
    not comparable and :func:`estimate_weighted_jaccard` refuses them."""

    scheme: str | None

    @classmethod
    def of_scheme(cls, values: np.ndarray, seed: int | None, scheme: str | None) -> "WeightedSignature":
        """``values`` viewed as a WeightedSignature (no copy)."""
        sig = values.view(cls)
        sig.seed = seed
        sig.scheme = scheme
        return sig

    def __array_finalize__(self, obj) -> None:
        super().__array_finalize__(obj)
        self.scheme = getattr(obj, "scheme", None)

    def __reduce__(self):
        rebuild, args, state = np.ndarray.__reduce__(self)[:3]
        return rebuild, args, (state, self.seed, self.scheme)

    def __setstate__(self, state) -> None:
        array_state, self.seed, self.scheme = state
        np.ndarray.__setstate__(self, array_state)


def _mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, in place on a fresh array (the caller's input is not modified)."""
    x = x ^ (x >> _U64(30))
    x *= _M1
    x ^= x >> _U64(27)
    x *= _M2
    x ^= x >> _U64(31)
    return x


def _rank_keys(ln_a: np.ndarray, columns: np.ndarray, index_bits: int) -> np.ndarray:
    """uint64 keys ordered as ``ln_a`` (float64, any sign), each ending in its sample's column.

    The float's bits are mapped to an unsigned integer of the same order (negative numbers: all bits flipped;
    others: the sign bit set), and the lowest ``index_bits`` bits are replaced by the column. Two samples
    whose ``ln a`` agree to within a relative 2**(index_bits - 52) then fall back on the column order: the
    same for every document (the columns are the sorted distinct samples of the call), so the choice stays
    consistent, and such near-ties have probability of that order."""
    bits = np.ascontiguousarray(ln_a, dtype=np.float64).view(_U64)
    negative = (bits >> _U64(63)).astype(bool)
    ordered = np.where(negative, ~bits, bits | _U64(1 << 63))
    shift = _U64(index_bits)
    return ((ordered >> shift) << shift) | columns[None, :]


def token_hashes(tokens: Iterable[str]) -> np.ndarray:
    """64-bit MurmurHash3 of each token (uint64), the identity the signers hash tokens by."""
    return np.fromiter((mmh3.hash64(t, _TOKEN_HASH_SEED, signed=False)[0] for t in tokens), dtype=_U64)


def _check_weights(weights: np.ndarray, what: str) -> None:
    if weights.size and (not np.all(np.isfinite(weights)) or weights.min() < 0):
        bad = float(weights[~np.isfinite(weights) | (weights < 0)][0])
        raise InvalidParameterError("weights", "finite numbers >= 0", bad, f"check the weights of {what}")


def _flatten(maps: Sequence[Mapping[str, float]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(token hashes, weights, offsets) of many token -> weight maps; tokens of weight 0 are left out (they add
    nothing to either side of a weighted Jaccard). Raises InvalidTextError naming a map with no positive weight."""
    tokens: list[str] = []
    values: list[float] = []
    sizes = np.zeros(len(maps), dtype=np.int64)
    for i, m in enumerate(maps):
        if not isinstance(m, Mapping):
            raise InvalidParameterError("weights", "a mapping of token -> weight per document", type(m).__name__,
                                        f"document {i} is not one")
        tokens.extend(m.keys())
        values.extend(m.values())
        sizes[i] = len(m)
    try:
        weights = np.array(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidParameterError("weights", "numbers", next(v for v in values if not _is_number(v)),
                                    "every token's weight must be a number") from None
    offsets = np.zeros(len(maps) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    if weights.size and (not np.all(np.isfinite(weights)) or weights.min() < 0):
        at = int(np.flatnonzero(~np.isfinite(weights) | (weights < 0))[0])
        doc = int(np.searchsorted(offsets, at, side="right")) - 1
        raise InvalidParameterError("weights", "finite numbers >= 0", float(weights[at]),
                                    f"token {tokens[at]!r} of document {doc}")
    keep = weights > 0
    positive = np.add.reduceat(keep.astype(np.int64), offsets[:-1]) if weights.size else sizes
    positive[sizes == 0] = 0  # reduceat reads the next document's first element for an empty one
    if np.any(positive == 0):
        doc = int(np.flatnonzero(positive == 0)[0])
        raise InvalidTextError(f"document {doc} has no token of positive weight: there is nothing to sign "
                               "(drop it, or give its tokens a weight)")
    hashes = token_hashes(tokens)
    np.cumsum(positive, out=offsets[1:])
    return hashes[keep], weights[keep], offsets


def _checked_arrays(hashes: np.ndarray, weights: np.ndarray,
                    offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(hashes, weights, offsets)`` of the ``signatures_from_arrays`` methods as uint64, float64 and int64,
    refused when they do not describe non-empty documents of positive weights."""
    h = np.asarray(hashes, dtype=_U64)
    w = np.asarray(weights, dtype=np.float64)
    off = np.asarray(offsets, dtype=np.int64)
    if h.shape != w.shape or h.ndim != 1 or off.ndim != 1 or off.size < 1 or off[-1] != h.size:
        raise InvalidParameterError("offsets", "len(documents) + 1 ascending positions ending at the number "
                                    "of tokens, with hashes and weights of equal length", off.size)
    _check_weights(w, "the tokens")
    if np.any(np.diff(off) < 1) or (w.size and w.min() <= 0):
        raise InvalidTextError("every document needs at least one token, each of positive weight")
    return h, w, off


def _is_number(value: object) -> bool:
    try:
        float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    return True


class WeightedMinHash:
    """Weighted MinHash by improved consistent weighted sampling (ICWS, Ioffe 2010); see the module docstring.

    Parameters mirror the math (datasketch's ``WeightedMinHashGenerator(dim, sample_size, seed)``, with tokens
    instead of a fixed dimension): ``num_hashes`` is the number of samples (the signature length, datasketch's
    ``sample_size``) and ``seed`` fixes every random value. Two signatures agree at a position with probability
    equal to the weighted Jaccard of their maps, so the share of equal positions estimates it with a standard
    error of ``sqrt(J(1-J)/num_hashes)``.

    >>> wmh = WeightedMinHash(num_hashes=128, seed=42)
    >>> a = wmh.signature({"arts": 5.1, "deli": 3.0, "ventura": 2.2})
    >>> b = wmh.signature({"arts": 5.1, "delicatessen": 4.0, "ventura": 2.2})
    >>> estimate_weighted_jaccard(a, b)      # exact: 7.3 / 14.3 = 0.51
    0.5
    """

    scheme = "icws"

    def __init__(self, num_hashes: int = 128, seed: int = 42):
        self.num_hashes: int = check_int("num_hashes", num_hashes, "num_hashes")
        self.seed: int = check_int("seed", seed, "seed")
        keys = np.random.default_rng(self.seed).integers(0, 2**63, size=self.num_hashes, dtype=np.int64)
        # One 64-bit key per position; the token's hash is mixed with it to draw that position's values.
        self._keys = keys.astype(_U64)[:, None]

    def __repr__(self) -> str:
        return f"WeightedMinHash(num_hashes={self.num_hashes}, seed={self.seed})"

    def _sample(self, hashes: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(num_hashes, n)`` float64 ``ln a`` and uint32 codes of n (token hash, weight) pairs."""
        with np.errstate(over="ignore"):
            z = _mix64(hashes[None, :] ^ self._keys)
            z1 = _mix64(z + _GOLDEN)
            z2 = _mix64(z + _GOLDEN * _U64(2))
            z3 = _mix64(z + _GOLDEN * _U64(3))
        scale = 1.0 / 4294967296.0
        # Uniforms in (0, 1) from 32-bit halves (never 0, so every log is finite).
        u1 = ((z1 >> _U64(32)).astype(np.float64) + 0.5) * scale
        u2 = ((z1 & _LOW32).astype(np.float64) + 0.5) * scale
        r = -np.log(u1 * u2)  # Gamma(2, 1)
        del u1, u2, z1
        u3 = ((z2 >> _U64(32)).astype(np.float64) + 0.5) * scale
        u4 = ((z2 & _LOW32).astype(np.float64) + 0.5) * scale
        ln_c = np.log(-np.log(u3 * u4))  # ln of a Gamma(2, 1)
        del u3, u4, z2
        beta = ((z3 >> _U64(11)).astype(np.float64) + 0.5) * (1.0 / 9007199254740992.0)
        del z3, z
        t = np.floor(np.log(weights)[None, :] / r + beta)
        ln_a = ln_c - r * (t - beta) - r
        # The sample is the pair (token, t): fold both into 32 bits.
        with np.errstate(over="ignore"):
            mixed = _mix64(hashes[None, :] ^ (t.astype(np.int64).view(_U64) * _M2))
        codes = (mixed >> _U64(32)).astype(np.uint32)
        return ln_a, codes

    def _sign(self, hashes: np.ndarray, weights: np.ndarray, offsets: np.ndarray) -> WeightedSignature:
        """Signatures of documents whose (hash, weight) pairs are ``[offsets[d]:offsets[d+1]]`` (all non-empty)."""
        ndocs = len(offsets) - 1
        k = self.num_hashes
        result = np.zeros((ndocs, k), dtype=np.uint32)
        if ndocs == 0:
            return WeightedSignature.of_scheme(result, self.seed, self.scheme)
        # With collection-wide weights (IDF) the same (token, weight) recurs in many documents: its samples are
        # drawn once. ``inverse`` maps every occurrence to its distinct pair.
        # One 64-bit key per pair, so the de-duplication is a 1-D unique (a row-wise unique over two columns was
        # slower than the sampling it saves); two different pairs share a key with probability ~n**2 / 2**64.
        with np.errstate(over="ignore"):
            key = hashes ^ _mix64(weights.view(_U64) + _GOLDEN)
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
        d_hashes, d_weights = hashes[first], weights[first]
        threads = SIGNING_THREADS
        # Blocks small enough that every thread gets one even for a few thousand tokens.
        per_block = max(1, min(_BLOCK_ELEMENTS // k, -(-first.size // threads)))
        # One row per distinct sample (token, weight), its k values side by side: the reduction below gathers
        # the rows of a document's tokens, contiguous 8k bytes each. Held as (k, tokens) that gather picked k
        # values strided across the whole array for every occurrence, 2.5x slower (issue 40, point 5).
        ranked = np.empty((first.size, k), dtype=_U64)
        codes_all = np.empty((first.size, k), dtype=np.uint32)
        index_bits = max(1, int(first.size - 1).bit_length())

        def sample_block(lo: int) -> None:
            hi = min(lo + per_block, first.size)
            ln_a, codes = self._sample(d_hashes[lo:hi], d_weights[lo:hi])
            codes_all[lo:hi] = codes.T
            ranked[lo:hi] = _rank_keys(ln_a, np.arange(lo, hi, dtype=_U64), index_bits).T

        # Whole documents per block, so each block's minimum per document is final. The minimum of the rank
        # keys names the winning sample (its low bits are its column), so one reduction finds it; comparing
        # floats, then picking the code at the minimum, took three passes more over the gathered block.
        mask = _U64((1 << index_bits) - 1)
        doc_blocks = []
        d = 0
        while d < ndocs:
            end = int(np.searchsorted(offsets, offsets[d] + per_block, side="right")) - 1
            end = min(max(end, d + 1), ndocs)
            doc_blocks.append((d, end))
            d = end

        positions = np.arange(k)

        def reduce_block(block: tuple[int, int]) -> None:
            d, end = block
            a, b = int(offsets[d]), int(offsets[end])
            best = np.minimum.reduceat(ranked[inverse[a:b]], offsets[d:end] - a, axis=0)
            winners = (best & mask).astype(np.intp)
            result[d:end] = codes_all[winners, positions]

        # Blocks write disjoint rows (of ranked and codes_all when sampling, of result when reducing), and NumPy
        # releases the GIL inside its loops, so threads sign in parallel with identical results.
        if threads > 1 and first.size > per_block:
            with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="icws") as pool:
                list(pool.map(sample_block, range(0, first.size, per_block)))
                list(pool.map(reduce_block, doc_blocks))
        else:
            for lo in range(0, first.size, per_block):
                sample_block(lo)
            for block in doc_blocks:
                reduce_block(block)
        return WeightedSignature.of_scheme(result, self.seed, self.scheme)

    def signature(self, weights: Mapping[str, float]) -> WeightedSignature:
        """Signature (``num_hashes`` uint32) of one token -> weight map. Raises InvalidTextError when no token
        has a positive weight."""
        return self.signatures([weights])[0]

    def signatures(self, maps: Sequence[Mapping[str, float]]) -> WeightedSignature:
        """Signatures ``(len(maps), num_hashes)`` of many token -> weight maps, in one vectorised pass."""
        if isinstance(maps, Mapping):
            raise InvalidParameterError("maps", "a sequence of token -> weight maps", "a single mapping",
                                        "use signature() for one map", show_value=False)
        hashes, weights, offsets = _flatten(list(maps))
        return self._sign(hashes, weights, offsets)

    def signatures_from_arrays(self, hashes: np.ndarray, weights: np.ndarray,
                               offsets: np.ndarray) -> WeightedSignature:
        """Signatures of documents given as concatenated uint64 token hashes (:func:`token_hashes`), their
        float weights (> 0) and ``offsets`` (``len(documents) + 1``, every document non-empty)."""
        return self._sign(*_checked_arrays(hashes, weights, offsets))


class BoostedMinHash:
    """Write-up 001's integer boosts: a token of weight ``w`` gets ``max(1, round(w * scale))`` chances to be
    the minimum (sub-tokens hashed with boost salts), signed by a plain :class:`~neardup_solr.text.MinHash` of
    ``num_hashes`` values and ``seed``. Estimates the weighted Jaccard of the rounded weights (see the module
    docstring for why :class:`WeightedMinHash` is the default). ``max_boost`` caps the sub-tokens of a token."""

    def __init__(self, num_hashes: int = 128, seed: int = 42, scale: float = 4.0, max_boost: int = 1000):
        self.num_hashes: int = check_int("num_hashes", num_hashes, "num_hashes")
        self.seed: int = check_int("seed", seed, "seed")
        self.scale: float = check_float("scale", scale, Limit("float", 0.0, 1e6, open_min=True, unit="sub-tokens per unit of weight"))
        self.max_boost: int = check_int("max_boost", max_boost, minimum=1)
        self.scheme = f"boost:{self.scale:g}"
        self._minhash = MinHash(num_hashes=self.num_hashes, seed=self.seed)
        salts = np.random.default_rng(self.seed + 1).integers(0, 1 << 32, size=self.max_boost, dtype=np.uint32)
        self._salts = salts

    def __repr__(self) -> str:
        return f"BoostedMinHash(num_hashes={self.num_hashes}, seed={self.seed}, scale={self.scale:g})"

    def signatures(self, maps: Sequence[Mapping[str, float]]) -> WeightedSignature:
        """Signatures ``(len(maps), num_hashes)`` of many token -> weight maps."""
        return self._sign(*_flatten(list(maps)))

    def signatures_from_arrays(self, hashes: np.ndarray, weights: np.ndarray,
                               offsets: np.ndarray) -> WeightedSignature:
        """As :meth:`WeightedMinHash.signatures_from_arrays`: documents given as token hashes, weights (> 0) and
        offsets; the same signatures as :meth:`signatures` of the same (token, weight) maps."""
        return self._sign(*_checked_arrays(hashes, weights, offsets))

    def _sign(self, hashes: np.ndarray, weights: np.ndarray, offsets: np.ndarray) -> WeightedSignature:
        # At least one chance for every token of positive weight (write-up 001 gives ceil(idf) + 1): a rare-ish
        # token must not vanish because its weight is below 0.5 / scale.
        boosts = np.clip(np.rint(weights * self.scale), 1, self.max_boost).astype(np.int64)
        h32 = (hashes >> _U64(32)).astype(np.uint32) ^ (hashes & _LOW32).astype(np.uint32)
        firsts = np.cumsum(boosts) - boosts
        j = np.arange(int(boosts.sum()), dtype=np.int64) - np.repeat(firsts, boosts)
        sub = fmix32(np.repeat(h32, boosts) ^ self._salts[j])
        new_offsets = np.zeros_like(offsets)
        np.cumsum(np.add.reduceat(boosts, offsets[:-1]) if boosts.size else [], out=new_offsets[1:])
        signed = self._minhash._sign(sub, new_offsets)
        return WeightedSignature.of_scheme(np.asarray(signed), self.seed, self.scheme)

    def signature(self, weights: Mapping[str, float]) -> WeightedSignature:
        """Signature of one token -> weight map."""
        return self.signatures([weights])[0]


def estimate_weighted_jaccard(sig_a: np.ndarray, sig_b: np.ndarray) -> float:
    """The share of positions where two weighted signatures agree: an estimate of their weighted Jaccard.

    Raises :class:`~neardup_solr.errors.SignatureMismatchError` for signatures of different schemes, seeds or
    lengths (their positions do not correspond)."""

    return estimate_jaccard(sig_a, sig_b)


def exact_weighted_jaccard(a: Mapping[str, float], b: Mapping[str, float]) -> float:
    """``sum min / sum max`` over the tokens of two token -> weight maps (absent tokens weigh 0); 0.0 when
    both weigh nothing. With one weight per token for both maps this equals
    :func:`neardup_solr.pairs.weighted.weighted_jaccard`."""
    num = math.fsum(min(w, b.get(t, 0.0)) for t, w in a.items() if t in b)
    den = math.fsum(max(w, b.get(t, 0.0)) for t, w in a.items()) + math.fsum(w for t, w in b.items() if t not in a)
    return num / den if den > 0 else 0.0
