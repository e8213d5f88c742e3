"""How values are spelled as Solr tokens: shingles and words (a digest when too long), word grams, MinHash
positions, the stored signature, the exact-duplicate digest. The indexer and the searcher both spell through
this module, so a query token is always spelled the way the indexed token was.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Iterable, Sequence

import numpy as np

# Lucene refuses terms over 32,766 bytes; long "words" (base64 blobs, URLs) are stored as a digest instead.
MAX_TOKEN_BYTES = 256
# "grams" tokens: each word wrapped in WORD_GRAM_PAD, and the character WORD_GRAM_SIZE-grams of that. A typo
# changes a whole word token but only the few grams around it, so records whose words carry typos still share
# most of their weight. 4 was measured against 3-grams and character 3-shingles of the whole text on the
# restaurant data and the generated person records (benchmarks/recipe_tokens.py): shorter grams of common letter
# runs are shared by unrelated restaurants on the same street. '#' cannot occur in a normalised word (the normaliser blanks punctuation),
# so a padded word never equals a gram from inside a longer word.
WORD_GRAM_SIZE = 4
WORD_GRAM_PAD = "#"


def text_token(value: str) -> str:
    """A shingle or word as a Solr token; over-long ones become a stable digest (never a real shingle: the
    normaliser removes '~')."""
    if len(value) * 4 <= MAX_TOKEN_BYTES or len(value.encode("utf-8")) <= MAX_TOKEN_BYTES:
        return value
    return "~" + hashlib.blake2b(value.encode("utf-8"), digest_size=12).hexdigest()


def word_gram_tokens(words: Iterable[str]) -> list[str]:
    """The distinct ``grams`` tokens of some words: each word padded as ``#word#``, then the character 4-grams of
    the padded word (``smith``: ``#smith#``, ``#smi``, ``smit``, ``mith``, ``ith#``). A word of two letters or
    fewer is its padded form alone. Over-long words become a digest as in :func:`text_token` (their grams are
    kept: they are short)."""
    tokens: dict[str, None] = {}
    size = WORD_GRAM_SIZE
    for word in words:
        padded = f"{WORD_GRAM_PAD}{word}{WORD_GRAM_PAD}"
        tokens[text_token(padded)] = None
        for start in range(len(padded) - size + 1):
            tokens[padded[start:start + size]] = None
    return list(tokens)


def signature_tokens(signature: np.ndarray, count: int | None = None) -> list[str]:
    """MinHash values as ``position_value`` tokens: a match means the *same* hash function agreed (the write-up
    stored bare values, so equal values from different positions counted as matches)."""
    values = (signature if count is None else signature[:count]).tolist()  # Python ints format ~5x faster
    return list(map(_SIG_FORMAT, range(len(values)), values))


def encode_signature(signature: np.ndarray) -> str:
    """A signature as one compact string (base64 of little-endian uint32s) for the ``minhash_sig`` field."""
    return base64.b64encode(np.ascontiguousarray(signature, dtype="<u4").tobytes()).decode("ascii")


def decode_signatures(values: Sequence[str], num_hashes: int) -> np.ndarray:
    """The inverse of :func:`encode_signature` for many documents at once: an (n, num_hashes) uint32 array."""
    raw = b"".join(base64.b64decode(v) for v in values)
    return np.frombuffer(raw, dtype="<u4").reshape(len(values), num_hashes).astype(np.uint32)


_SIG_FORMAT = "{}_{:x}".format
# Below this many characters a token cannot exceed MAX_TOKEN_BYTES (UTF-8 uses at most 4 bytes a character).
_SAFE_CHARS = MAX_TOKEN_BYTES // 4


def text_tokens(values: Iterable[str]) -> list[str]:
    """:func:`text_token` over many values, with the common short case kept out of a function call."""
    return [v if len(v) <= _SAFE_CHARS else text_token(v) for v in values]


def md5_hex(normalized: str) -> str:
    """MD5 (hex) of a normalised text: equal digests are exact duplicates."""
    return hashlib.md5(normalized.encode("utf-8")).hexdigest()
