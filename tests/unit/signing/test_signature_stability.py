"""Same text, same signature on every supported Python (issue 35).

Normaliser version 3 reads one pinned Unicode version (neardup_solr/text/pinned_unicode.py) instead of the
interpreter's, so Pythons 3.10 to 3.13 (Unicode 13.0 to 15.1) must give the same normalised text, MD5, shingle hashes,
MinHash values, band keys and weighted signatures, by the compiled kernel and by the NumPy path. Each Python found on
the machine (the running one, ``pythonX.Y`` on the PATH, or pyenv's) gets a small virtualenv with the project's
runtime dependencies and the compiled kernel built for it (kept in .pytest_cache/signature-venvs, so only the first
run pays for it), runs tests/signature_probe.py, and the results are compared. A missing Python is a skip naming it;
CI's machine has them all.

Version 2 still reads the interpreter's Unicode: its counts of differing code points per pair of Pythons are
printed and kept in .pytest_cache/signature-venvs/code-point-differences.json (the issue's "before"); the test
asserts they are not zero between 3.10 and the others, so it is able to see a difference. Measured here: 122 code
points between 3.10 and 3.11, 214 between 3.10 and 3.12 or 3.13, 92 between 3.11 and 3.12 or 3.13, 0 between 3.12
and 3.13; with version 3, 0 for every pair.
"""

from __future__ import annotations

import json
import os
import pickle
import random
import subprocess
import unicodedata
from concurrent.futures import ThreadPoolExecutor
from itertools import combinations

import pytest

from neardup_solr.text.pinned_unicode import PINNED_UNICODE_VERSION, pinned
from pythons import ROOT, SUPPORTED_PYTHONS, VENVS, find_python, venv_python

# Builds a virtualenv and the compiled kernel for each other Python (a minute and a half when not cached): not in
# the fast tier (scripts/test.sh --fast), which runs in seconds.
pytestmark = pytest.mark.slow

# -- random texts mixing scripts ---------------------------------------------------------------------------------

# Ranges of letters (with capitals where the script has case), marks and digits, among them scripts and characters
# new since Unicode 13 (Python 3.10): U+061D, Vithkuqi, Toto, Tangsa, Kawi, Nag Mundari (its digits), Garay (cased,
# Unicode 16), Sunuwar, Todhri, Tolong Siki and Sidetic (17), CJK extension I.
SCRIPT_RANGES = [
    (0x41, 0x5A), (0x61, 0x7A), (0xC0, 0x24F), (0x370, 0x3FF), (0x400, 0x4FF), (0x531, 0x587), (0x5D0, 0x5EA),
    (0x600, 0x6FF), (0x900, 0x97F), (0xE01, 0xE5B), (0x1100, 0x11FF), (0x1E00, 0x1EFF), (0x3041, 0x30FF),
    (0x4E00, 0x4E80), (0xAC00, 0xAC80), (0xFF01, 0xFF5E), (0x10570, 0x105BC), (0x1E290, 0x1E2AE), (0x16A70, 0x16AC9),
    (0x11F00, 0x11F59), (0x1E4D0, 0x1E4F9), (0x10D40, 0x10D8F), (0x11BC0, 0x11BF9), (0x105C0, 0x105F3),
    (0x11DB0, 0x11DEF), (0x10940, 0x1095F), (0x2EBF0, 0x2EC40), (0x1F600, 0x1FAFF),
]
EXTRAS = [" ", " ", " ", "\u00a0", "\u3000", "\t", "\n", "\u2028", "\u200b", ", ", ". ", "!", "\u2014", "-", "'",
          "\u200d", "\u00ad", "\u2060", "\ufeff", "\u0301", "\u0327", "\u0308", "\u093c", "\u3099", "\u061d",
          "\u0663", "\u0967", "&amp;", "&eacute;", "&#x1E4F0;", "\u00df", "\u03a3", "\u0130", "\u212a", "\ufb01"]


def random_texts(count: int = 3000, seed: int = 35) -> list[str]:
    rng = random.Random(seed)
    texts = []
    for _ in range(count):
        pieces = []
        for _ in range(rng.randint(1, 40)):
            roll = rng.random()
            if roll < 0.6:
                lo, hi = rng.choice(SCRIPT_RANGES)
                pieces.append("".join(chr(rng.randint(lo, hi)) for _ in range(rng.randint(1, 8))))
            elif roll < 0.95:
                pieces.append(rng.choice(EXTRAS))
            else:  # any code point at all, surrogates and unassigned ones included
                pieces.append(chr(rng.randrange(0x110000)))
        texts.append("".join(pieces))
    return texts


# -- the interpreters' results -------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[str, dict]:
    """Python version -> tests/signature_probe.py's result under it, for every supported Python found."""
    found = {v: p for v in SUPPORTED_PYTHONS if (p := find_python(v)) is not None}
    if len(found) < 2:
        pytest.skip(f"fewer than two of Pythons {', '.join(SUPPORTED_PYTHONS)} on this machine (found: "
                    f"{', '.join(found) or 'none'}); install them (pyenv) to compare")
    VENVS.mkdir(parents=True, exist_ok=True)
    work = tmp_path_factory.mktemp("probe")
    texts_file = work / "texts.pickle"
    with open(texts_file, "wb") as f:
        pickle.dump(random_texts(), f, protocol=4)
    env = {k: v for k, v in os.environ.items() if k != "NEARDUP_SOLR_KERNEL"}
    env["PYTHONPATH"] = str(ROOT)

    def probe(version: str) -> dict:
        python = venv_python(version, found[version])
        out = work / f"{version}.pickle"
        proc = subprocess.run([python, str(ROOT / "tests" / "signature_probe.py"), str(texts_file), str(out)],
                              cwd=work, env=env, capture_output=True, text=True)
        assert proc.returncode == 0, f"the probe failed under Python {version}:\n{proc.stderr[-3000:]}"
        with open(out, "rb") as f:
            return pickle.load(f)

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(found, pool.map(probe, found)))


def test_every_supported_python_is_on_this_machine():
    missing = [v for v in SUPPORTED_PYTHONS if find_python(v) is None]
    if missing:
        pytest.skip(f"Python {', '.join(missing)} not found (not on the PATH, not in pyenv): the cross-interpreter "
                    "tests compare only the others")


def test_each_probe_signed_with_the_compiled_kernel_and_its_own_unicode(results):
    for version, result in results.items():
        assert result["python"].startswith(version + ".")
        assert result["kernel"] == "compiled kernel", f"Python {version}: {result['kernel']}"
        assert result["interpreter_unicode"] == _interpreter_unicode(version)


def _interpreter_unicode(version: str) -> str:
    return {"3.10": "13.0.0", "3.11": "14.0.0", "3.12": "15.0.0", "3.13": "15.1.0"}[version]


def _differing_code_points(a: list[str], b: list[str]) -> list[int]:
    return [code for code, (x, y) in enumerate(zip(a, b)) if x != y]


def test_version_3_normalises_every_code_point_alike_and_version_2_does_not(results):
    counts: dict[str, dict[str, int]] = {"v2": {}, "v3": {}}
    examples = {}
    for (va, ra), (vb, rb) in combinations(results.items(), 2):
        pair = f"{va} vs {vb}"
        for name in counts:
            differing = _differing_code_points(ra["code_points"][name], rb["code_points"][name])
            counts[name][pair] = len(differing)
            examples[f"{name} {pair}"] = [f"U+{c:04X}" for c in differing[:5]]
    VENVS.mkdir(parents=True, exist_ok=True)
    (VENVS / "code-point-differences.json").write_text(json.dumps(counts, indent=2) + "\n")
    print(f"\ncode points normalised differently (between two letters, doubled), per pair of Pythons: {counts}")
    assert all(n == 0 for n in counts["v3"].values()), examples
    # Unicode 14 made U+061D and others punctuation: version 2 sees that on 3.10 against any later Python (15.0 and
    # 15.1 differ only in characters that are letters or unassigned, which both keep in their word).
    versions = list(results)
    if versions[0] == "3.10":
        assert all(counts["v2"][f"3.10 vs {v}"] > 0 for v in versions[1:])


def test_version_3_kernel_hashes_every_code_point_alike(results):
    signed = {v: r["code_points"]["v3-kernel-char-hashes"] for v, r in results.items()}
    first = next(iter(signed.values()))
    assert all(value == first for value in signed.values())


@pytest.mark.parametrize("config", ["v3/word3", "v3/char3", "v3-folded/word3", "v3-folded/char3"])
def test_version_3_signs_random_mixed_script_texts_alike(results, config):
    reference_version, reference = next(iter(results.items()))
    want = reference["texts"][config]
    assert want["kernel"] == want["numpy"], f"Python {reference_version}: the kernel and the NumPy path differ"
    for version, result in results.items():
        got = result["texts"][config]
        assert got["kernel"] == got["numpy"], f"Python {version}: the kernel and the NumPy path differ"
        for field in ("normalized", "md5", "numpy", "band_keys", "icws"):
            if got[field] != want[field]:
                where = ([i for i, (x, y) in enumerate(zip(got[field], want[field])) if x != y][:5]
                         if isinstance(want[field], list) else "bytes")
                pytest.fail(f"{config} {field}: Python {version} differs from {reference_version} at {where}")


def test_version_2_signs_some_texts_differently_where_unicode_differs(results):
    """The random texts hold characters new since Unicode 13: version 2 sees them differently, so the texts do
    test something."""
    versions = list(results)
    oldest, newest = results[versions[0]], results[versions[-1]]
    assert oldest["texts"]["v2/word3"]["md5"] != newest["texts"]["v2/word3"]["md5"]


# -- the pinned table against this interpreter ---------------------------------------------------------------------

def test_the_pinned_tables_agree_with_this_python_on_every_character_both_assign():
    data = pinned()
    assert data.version == PINNED_UNICODE_VERSION
    disagree = []
    for code in range(0x110000):
        ch = chr(code)
        if unicodedata.category(ch) == "Cn":
            continue
        if (data.casefold.get(code, ch) != ch.casefold() or (code in data.whitespace) != ch.isspace()
                or (code in data.decimal) != ch.isdecimal()):
            disagree.append(f"U+{code:04X}")
    assert disagree == []


def test_the_pinned_tables_agree_with_unicodedata2_of_the_same_version():
    import unicodedata2

    data = pinned()
    for code in range(0x110000):
        ch = chr(code)
        category = data.category(ch)
        assert (code in data.formats) == (category == "Cf")
        # CPython's definition of whitespace (Tools/unicode/makeunicodedata.py), on the pinned database.
        assert (code in data.whitespace) == (unicodedata2.bidirectional(ch) in ("WS", "B", "S") or category == "Zs")
        assert (code in data.decimal) == (unicodedata2.decimal(ch, None) is not None)
