"""Golden signatures: what every normaliser version signs a few hundred texts as, committed in
tests/data/golden_signatures.json, so that a release that would sign any of them differently fails
tests/unit/signing/test_golden_signatures.py instead of quietly splitting its users' collections.

Per text and normaliser: the MD5 of the normalised text (the stored ``content_md5``); per text, normaliser and
shingle unit (word 3-grams, character 3-grams): a digest of the 128-value MinHash signature and its LSH band keys
(16 bands of 8), and a digest of the ICWS weighted signature of its words (each weighing its length). Texts come in
two sets: ``common``, only characters every supported Python's Unicode (13.0 and later) has assigned the same, signed
under versions 1, 2 and 3; ``new``, characters and scripts new since Unicode 13, signed under version 3 only (versions
1 and 2 read the interpreter's Unicode, so those differ by Python; tests/unit/signing/test_signature_stability.py counts how).

Changing a value is a deliberate act: a new normaliser (or settings) version, a changelog line, and then

    .venv/bin/python tests/golden_signatures.py            # recompute the values of the committed texts
    .venv/bin/python tests/golden_signatures.py --new-texts  # also draw the texts anew (seeded)

``--check`` compares instead of writing (what the test does), under any interpreter.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script
    sys.path.insert(0, str(ROOT))

from neardup_solr.pairs.lsh import LSHParams, band_keys  # noqa: E402
from neardup_solr.text import MinHash, Normalizer, Shingler  # noqa: E402
from neardup_solr.text.weighted import WeightedMinHash  # noqa: E402

GOLDEN_FILE = ROOT / "tests" / "data" / "golden_signatures.json"
NORMALIZERS = {
    "v1": Normalizer(1),
    "v2": Normalizer(2),
    "v2-folded": Normalizer(2, fold_diacritics=True, fold_digits=True),
    "v3": Normalizer(3),
    "v3-folded": Normalizer(3, fold_diacritics=True, fold_digits=True),
}
TEXT_SETS = {"common": ("v1", "v2", "v2-folded", "v3", "v3-folded"), "new": ("v3", "v3-folded")}
UNITS = {"word3": ("word", 3), "char3": ("char", 3)}
BANDS = LSHParams(bands=16, rows=8)

# Letters of scripts unchanged since long before Unicode 13, and pieces every normaliser treats differently.
COMMON_RANGES = [(0x41, 0x5A), (0x61, 0x7A), (0xC0, 0xFF), (0x100, 0x17F), (0x391, 0x3A9), (0x3B1, 0x3C9),
                 (0x410, 0x44F), (0x531, 0x556), (0x561, 0x586), (0x5D0, 0x5EA), (0x621, 0x64A), (0x905, 0x939),
                 (0xE01, 0xE30), (0x3041, 0x3094), (0x4E00, 0x4E80), (0xAC00, 0xAC80), (0xFF21, 0xFF3A)]
COMMON_PIECES = [" ", " ", " ", " ", "\u00a0", "\u3000", "\t", "\n", "\u200b", ", ", ". ", "!", "\u2014", "-",
                 "'", "\u2019", "\u200d", "\u00ad", "\ufeff", "\u0301", "\u0327", "\u0308", "0", "1", "2", "42",
                 "2024", "\u0663", "\u0967", "\uff11", "&amp;", "&eacute;", "&#233;", "\u00df", "\u03a3", "\u0130",
                 "\u212a", "\ufb01", "\u2460", "\u210c"]
# Characters and scripts that Unicode 13 did not have: U+061D, Vithkuqi (cased), Toto, Tangsa, Kawi, Nag Mundari
# (letters and digits), Garay (cased), Sunuwar, Todhri, Tolong Siki, Sidetic, CJK extension I.
NEW_RANGES = [(0x10570, 0x105BC), (0x1E290, 0x1E2AE), (0x16A70, 0x16AC9), (0x11F00, 0x11F59), (0x1E4D0, 0x1E4F9),
              (0x10D40, 0x10D8F), (0x11BC0, 0x11BF9), (0x105C0, 0x105F3), (0x11DB0, 0x11DEF), (0x10940, 0x1095F),
              (0x2EBF0, 0x2EC40)]
NEW_PIECES = ["\u061d", "\U0001e4f0\U0001e4f1", "&#x1E4F0;"]


def draw_texts(seed: int = 3535) -> dict[str, list[str]]:
    rng = random.Random(seed)

    def text(ranges, pieces) -> str:
        out = []
        for _ in range(rng.randint(1, 30)):
            if rng.random() < 0.6:
                lo, hi = rng.choice(ranges)
                out.append("".join(chr(rng.randint(lo, hi)) for _ in range(rng.randint(1, 9))))
            else:
                out.append(rng.choice(pieces))
        return "".join(out)

    common = [text(COMMON_RANGES, COMMON_PIECES) for _ in range(150)]
    new = [text(NEW_RANGES + COMMON_RANGES[:4], COMMON_PIECES + NEW_PIECES) for _ in range(120)]
    # A few written by hand: the restaurant records the tool was made for, and near duplicates of each other.
    common[:6] = ["Art's Deli 12224 Ventura Blvd. Studio City", "Arts Delicatessen 12224 Ventura Boulevard Studio City",
                  "Le café de l'office, 1987: une fiancée naïve", "Die STRASSE ist groß", "Hotel Bel-Air",
                  "東京都の会議は２０２６年に開かれ、ＡＢＣ社のｶﾀｶﾅ資料を配布した。"]
    return {"common": common, "new": new}


def _digest(*arrays: np.ndarray) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


def sign(texts: list[str], normalizer: Normalizer) -> dict:
    """``{"md5": [...], "word3": [[minhash+bands digest, icws digest], ...], "char3": ...}`` of ``texts``."""
    normalized = [normalizer.normalize(t) for t in texts]
    out: dict = {"md5": [hashlib.md5(n.encode("utf-8")).hexdigest() for n in normalized]}
    icws = WeightedMinHash(num_hashes=128, seed=42)
    for name, (unit, ngram) in UNITS.items():
        minhash = MinHash(num_hashes=128, seed=42, shingler=Shingler(ngram=ngram, unit=unit, normalizer=normalizer))
        rows = []
        for text, norm in zip(texts, normalized):
            if not norm:
                rows.append(["", ""])
                continue
            signature = minhash.signature(text)
            weighted = icws.signature({w: float(len(w)) for w in norm.split(" ")})
            rows.append([_digest(signature, band_keys(signature, BANDS)), _digest(weighted)])
        out[name] = rows
    return out


def compute(texts: dict[str, list[str]]) -> dict:
    return {"texts": texts,
            "values": {set_name: {version: sign(texts[set_name], NORMALIZERS[version]) for version in versions}
                       for set_name, versions in TEXT_SETS.items()}}


def differences(golden: dict) -> list[str]:
    """Where this checkout signs the committed texts differently from the committed values."""
    now = compute(golden["texts"])["values"]
    found = []
    for set_name, versions in golden["values"].items():
        for version, fields in versions.items():
            for field, values in fields.items():
                current = now[set_name][version][field]
                for i, (want, got) in enumerate(zip(values, current)):
                    if want != got:
                        found.append(f"{set_name} text {i} {golden['texts'][set_name][i][:30]!r} {version} {field}: "
                                     f"{want} -> {got}")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--new-texts", action="store_true", help="draw the texts anew")
    parser.add_argument("--check", action="store_true", help="compare with the committed file instead of writing")
    args = parser.parse_args()
    if args.check:
        found = differences(json.loads(GOLDEN_FILE.read_text()))
        print("\n".join(found) or f"all golden signatures as committed (Python {sys.version.split()[0]})")
        sys.exit(1 if found else 0)
    texts = draw_texts() if args.new_texts or not GOLDEN_FILE.exists() else json.loads(GOLDEN_FILE.read_text())["texts"]
    GOLDEN_FILE.parent.mkdir(exist_ok=True)
    GOLDEN_FILE.write_text(json.dumps(compute(texts), indent=1, ensure_ascii=True) + "\n")
    print(f"wrote {GOLDEN_FILE.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
