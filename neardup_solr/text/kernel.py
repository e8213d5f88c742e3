"""The compiled signing kernel: text -> MinHash signature (or shingle hashes) in one C pass per text.

What it does
    Normalise (the ASCII table in C; anything else through the normaliser's own ``prepare``: HTML entities, NFKC,
    case folding), cut into word or character shingles, hash them (MurmurHash3_x86_32 with the shingler's seed,
    word shingles from their words' hashes), and take ``min_h fmix32(h XOR mask_i)`` over the masks, without a
    Python object per word or shingle. The values are the NumPy path's (``Shingler.batch_hashes``,
    ``MinHash._sign``) bit for bit; ``tests/unit/text/test_kernel.py`` checks it on random Unicode, every normaliser
    version and option, both units, and against signatures stored by an earlier version.

Why a plain C extension (``_kernel.c``, built by setup.py), measured and weighed against the others:
    - The work is one tight integer loop (128 lanes of two multiplies and three xor-shifts per shingle) over
      bytes. C compiled at ``-O3`` with GCC's ``target_clones`` gets AVX-512 / AVX2 / SSE2 versions of that loop
      in one binary, picked at load time; no runtime dependency, nothing compiled at first call.
    - numba would add llvmlite (~100 MB) to the install and a compile of several seconds per process (every
      Spark Python worker, every service worker), or a cache directory that must be writable.
    - Rust with PyO3/maturin gives the same speed but a second toolchain for every contributor and platform
      wheels to build before anyone can ``pip install`` from source; C needs the compiler Python builds with.
    - Cython would be C with an extra language and build dependency for ~300 lines of C.
    The extension is ``optional``: without a compiler the install succeeds and ``available()`` is False; every
    caller then uses the NumPy path, which stays the reference. ``NEARDUP_SOLR_KERNEL=numpy`` forces the NumPy
    path (to compare, or to rule the kernel out).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence

import numpy as np

log = logging.getLogger(__name__)

try:
    from neardup_solr.text import _kernel  # type: ignore[attr-defined]
except ImportError as exc:  # no compiler at install time: the NumPy path signs
    _kernel = None
    _WHY_NOT = f"the compiled kernel is not built ({exc})"
else:
    _WHY_NOT = ""

FORCE_NUMPY_ENV = "NEARDUP_SOLR_KERNEL"


def available() -> bool:
    """True when the compiled kernel is built and not switched off with ``NEARDUP_SOLR_KERNEL=numpy``."""
    return _kernel is not None and os.environ.get(FORCE_NUMPY_ENV, "").lower() != "numpy"


def describe() -> str:
    """Which signing path is in use, for logs and benchmark files."""
    if _kernel is None:
        return f"numpy ({_WHY_NOT})"
    if not available():
        return f"numpy ({FORCE_NUMPY_ENV}=numpy)"
    return "compiled kernel"


# What Shingler.kernel_arguments gives: (prepare, islands, fast_ascii, word_unit, ngram, seed).
ShinglerArguments = tuple[Callable[[str], str], "tuple | None", bool, bool, int, int]


def hashes(texts: Sequence[str], shingler: ShinglerArguments) -> tuple[np.ndarray, np.ndarray]:
    """Shingle hashes of every text (duplicates kept), concatenated, and each text's offsets (length n+1)."""
    assert _kernel is not None
    texts = texts if isinstance(texts, (list, tuple)) else list(texts)
    raw, raw_offsets = _kernel.hashes(texts, *shingler)
    return np.frombuffer(raw, dtype=np.uint32), np.frombuffer(raw_offsets, dtype=np.int64)


def hashes_and_signatures(texts: Sequence[str], shingler: ShinglerArguments, masks: np.ndarray, *,
                          normalised: list[str] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``hashes`` and the signatures (len(texts), len(masks)) in one pass; a text without shingles has an empty
    slice and a row of 0xFFFFFFFF. ``normalised``: a list that gets each text's normalised form (what
    ``Normalizer.normalize`` returns), made in the same pass."""
    assert _kernel is not None
    texts = texts if isinstance(texts, (list, tuple)) else list(texts)
    out = np.empty((len(texts), len(masks)), dtype=np.uint32)
    raw, raw_offsets = _kernel.hashes(texts, *shingler, np.ascontiguousarray(masks, dtype=np.uint32), out,
                                      normalised)
    return np.frombuffer(raw, dtype=np.uint32), np.frombuffer(raw_offsets, dtype=np.int64), out


def sign_hashes(hashes: np.ndarray, offsets: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """Signatures (len(offsets) - 1, len(masks)) of sets already hashed (``hashes[offsets[d]:offsets[d+1]]``)."""
    assert _kernel is not None
    out = np.empty((len(offsets) - 1, len(masks)), dtype=np.uint32)
    _kernel.sign_hashes(np.ascontiguousarray(hashes, dtype=np.uint32), np.ascontiguousarray(offsets, dtype=np.int64),
                        np.ascontiguousarray(masks, dtype=np.uint32), out)
    return out


def position_tokens(values: np.ndarray) -> list[list[str]]:
    """``"<position>_<hex value>"`` for each value of each row of a 2-D uint32 (no leading zeros: MinHash tokens)
    or uint64 (16 digits: LSH band tokens) array, as the Solr token fields hold them."""
    assert _kernel is not None
    values = np.ascontiguousarray(values)
    if values.ndim != 2 or values.dtype not in (np.uint32, np.uint64):
        raise ValueError(f"position_tokens takes a 2-D uint32 or uint64 array, got {values.dtype} {values.shape}")
    return _kernel.position_tokens(values, values.shape[0], values.shape[1], values.dtype.itemsize)


def distinct_hex(hashes: np.ndarray, offsets: np.ndarray, modulus: int = 1) -> tuple[list[str], np.ndarray]:
    """Per document (``hashes[offsets[d]:offsets[d+1]]``): its distinct values in first-seen order, those that are
    0 modulo ``modulus`` as one str of space-separated lowercase hex (no leading zeros), and how many distinct
    values it has (before the modulus)."""
    assert _kernel is not None
    counts = np.empty(len(offsets) - 1, dtype=np.int64)
    joined = _kernel.distinct_hex(np.ascontiguousarray(hashes, dtype=np.uint32),
                                  np.ascontiguousarray(offsets, dtype=np.int64), counts, modulus)
    return joined, counts
