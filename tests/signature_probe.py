"""What one interpreter makes of texts: run under each Python by tests/unit/signing/test_signature_stability.py, which compares
the results across interpreters.

    python tests/signature_probe.py TEXTS.pickle RESULT.pickle

TEXTS.pickle holds the random texts (made once by the test, so every interpreter reads the same strings). The
result holds, for normaliser versions 2 and 3, the normalised form of every code point between two letters and
doubled (``"a" + c + c + "b"``) and, for version 3, the compiled kernel's character-shingle hashes of those; and for
every random text, under each normaliser and both shingle units: the normalised text, its MD5, the shingle hashes
and MinHash signatures by the compiled kernel and by the NumPy path, the LSH band keys, and ICWS weighted
signatures of its words. Only the package's own modules and pickle (protocol 4, read by every Python 3.8+) are used.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
import unicodedata

import numpy as np

from neardup_solr.pairs.lsh import LSHParams, band_keys
from neardup_solr.text import MinHash, Normalizer, Shingler, kernel
from neardup_solr.text.weighted import WeightedMinHash

# The configurations the random texts are signed under: (name, normaliser, unit, ngram).
NORMALIZERS = {"v2": Normalizer(2), "v3": Normalizer(3),
               "v3-folded": Normalizer(3, fold_diacritics=True, fold_digits=True)}
UNITS = (("word", 3), ("char", 3))
NUM_HASHES = 64
BANDS = LSHParams(bands=16, rows=4)


def _numpy_path(fn):
    os.environ[kernel.FORCE_NUMPY_ENV] = "numpy"
    try:
        return fn()
    finally:
        del os.environ[kernel.FORCE_NUMPY_ENV]


def code_points(normalizer: Normalizer) -> list[str]:
    return [normalizer.normalize(f"a{chr(code)}{chr(code)}b") for code in range(0x110000)]


def sign(texts: list[str], normalizer: Normalizer, unit: str, ngram: int) -> dict:
    shingler = Shingler(ngram=ngram, unit=unit, normalizer=normalizer)
    minhash = MinHash(num_hashes=NUM_HASHES, shingler=shingler)
    normalized = [normalizer.normalize(t) for t in texts]
    out: dict = {"normalized": normalized, "md5": [hashlib.md5(n.encode("utf-8")).hexdigest() for n in normalized]}
    if kernel.available():
        hashes, offsets, signatures = kernel.hashes_and_signatures(texts, shingler.kernel_arguments(), minhash.masks)
        out["kernel"] = (hashes.tobytes(), offsets.tobytes(), signatures.tobytes())
    hashes, offsets = _numpy_path(lambda: shingler._numpy_batch_hashes(texts))
    # Texts without shingles get the kernel's row of 0xFFFFFFFF, so both paths give one row per text.
    signatures = np.full((len(texts), NUM_HASHES), 0xFFFFFFFF, dtype=np.uint32)
    signed = np.flatnonzero(np.diff(offsets) > 0)
    if signed.size:
        signatures[signed] = _numpy_path(lambda: minhash.signatures_from_hashes(
            [hashes[offsets[d]:offsets[d + 1]] for d in signed]))
    out["numpy"] = (hashes.tobytes(), offsets.tobytes(), signatures.tobytes())
    out["band_keys"] = band_keys(signatures, BANDS).tobytes()
    # Weighted: the words as tokens, each weighing its length (deterministic, and not all equal).
    maps = [{w: float(len(w)) for w in n.split(" ")} for n in normalized if n]
    out["icws"] = WeightedMinHash(num_hashes=NUM_HASHES).signatures(maps).tobytes() if maps else b""
    return out


def main() -> None:
    texts_file, result_file = sys.argv[1:3]
    with open(texts_file, "rb") as f:
        texts = pickle.load(f)
    result: dict = {"python": sys.version.split()[0], "interpreter_unicode": unicodedata.unidata_version,
                    "kernel": kernel.describe(), "numpy": np.__version__, "code_points": {}, "texts": {}}
    for name in ("v2", "v3"):
        result["code_points"][name] = code_points(NORMALIZERS[name])
    if kernel.available():
        shingler = Shingler(ngram=3, unit="char", normalizer=NORMALIZERS["v3"])
        hashes, offsets = kernel.hashes([f"a{chr(c)}{chr(c)}b" for c in range(0x110000)], shingler.kernel_arguments())
        result["code_points"]["v3-kernel-char-hashes"] = (hashes.tobytes(), offsets.tobytes())
    for name, normalizer in NORMALIZERS.items():
        for unit, ngram in UNITS:
            result["texts"][f"{name}/{unit}{ngram}"] = sign(texts, normalizer, unit, ngram)
    with open(result_file, "wb") as f:
        pickle.dump(result, f, protocol=4)


if __name__ == "__main__":
    main()
