"""Wrote tests/data/signatures-before-kernel.json, run once against the package at 5e5b420 (before the compiled
kernel existed: the NumPy path only). Kept to show how the stored signatures were made; the test reads the JSON."""
import hashlib, json, random, sys
import numpy as np
from neardup_solr.text import MinHash, Shingler, Normalizer

def corpus():
    rng = random.Random(2026)
    pieces = ["Caf\u00e9", "cafe\u0301", "STRASSE", "Stra\u00dfe", "\u03a3\u03bf\u03c6\u03af\u03b1", "\u041c\u043e\u0441\u043a\u0432\u0430",
              "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35\u200b\u0e04\u0e23\u0e31\u0e1a", "\uff21\uff22\uff23", "\ufb01le", "soft\u00adware", "l\u2019\u00e9t\u00e9", "\u201cquoted\u201d",
              "a\u00a0b", "x\u2028y", "\u3000", "&amp;", "&lt;tag&gt;", "12,345", "\u0661\u0662", "\u2460", "\u210c", "Art's", "Bel-Air",
              "--", "\t", "\n", "...", "\x00", "\u200d", "\ufeff", "\U0001f600", "\u0390", "\u1e9e", "Dž"]
    words = ["the", "quick", "brown", "Fox", "jumps", "over", "lazy", "dog", "Deli", "Ventura", "Blvd."]
    texts = []
    for i in range(400):
        k = rng.randint(1, 40)
        toks = [rng.choice(pieces) if rng.random() < 0.3 else rng.choice(words) for _ in range(k)]
        seps = [rng.choice([" ", " ", " ", "  ", ", ", "-", "\u2014", ""]) for _ in range(k)]
        texts.append("".join(t + s for t, s in zip(toks, seps)))
    return texts

CONFIGS = [(1, False, False, "word", 3), (2, False, False, "word", 3), (2, True, False, "word", 3),
           (2, False, True, "word", 3), (2, True, True, "word", 1), (2, False, False, "char", 4),
           (1, False, False, "char", 5), (2, True, True, "char", 3)]

if __name__ == "__main__":
    texts = corpus()
    out = {"texts": texts, "configs": []}
    for version, diac, digits, unit, n in CONFIGS:
        norm = Normalizer(version, diac, digits) if version == 2 else Normalizer(1)
        mh = MinHash(num_hashes=64, seed=7, shingler=Shingler(ngram=n, unit=unit, normalizer=norm))
        keep = [t for t in texts if mh.shingler._hash_one(norm.normalize(t)).size]
        sigs = mh.signatures(keep)
        out["configs"].append({"version": version, "fold_diacritics": diac, "fold_digits": digits, "unit": unit,
                               "ngram": n, "kept": [texts.index(t) for t in keep],
                               "signature_digests": [hashlib.blake2b(bytes(np.asarray(r, dtype="<u4")), digest_size=8).hexdigest() for r in sigs]})
    json.dump(out, open(sys.argv[1], "w"), ensure_ascii=True)
