"""Signing throughput: raw text -> MinHash signature, end to end, on one core.

Compares our batch API (``MinHash.signatures``, with the default normaliser and with version 1's) with
datasketch and rensa. The peers are fed the shingles our
``Shingler`` produces from our ``normalize`` (as bytes for datasketch, as str for rensa), and that time is
counted in their totals, so all three do the same job on the same shingle sets and only the hashing/min-ing
machinery differs.

    python benchmarks/signing.py --docs 5000 --words 300 --num-hashes 128 [--corpus ascii,non-ascii] [--json results.json]

Two corpora, each timed on its own: ``ascii`` (made-up words of ASCII letters) and ``non-ascii`` (the same
model with syllables in accented Latin, Greek and Cyrillic, some in decomposed form (NFD), so the normaliser's
Unicode path is what is timed).

``run_signing_benchmark(texts, num_hashes)`` is the importable entry point for a larger benchmark runner.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from pathlib import Path

# rensa parallelises its batch functions with a rayon pool sized on first use; one core means one thread.
os.environ.setdefault("RAYON_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from neardup_solr.text import MinHash, Normalizer, Shingler, kernel  # noqa: E402
from neardup_solr.version import package_version  # noqa: E402
from benchmarks.provenance import write_result_files  # noqa: E402

_SYLLABLES = [
    "ka", "lo", "mi", "ne", "ru", "ta", "vo", "ze", "shi", "pra", "gu", "del", "mon", "ti", "bar", "qu",
    "sel", "ar", "on", "in", "ex", "or", "ul", "fa", "ber", "cos", "dri", "ven", "lu", "pa",
]
# Half ASCII, half not: accented Latin (composed, and three decomposed: "e" + U+0301 and so on), German
# sharp s, Greek and Cyrillic, so most words hold a non-ASCII letter as in French, German or Russian prose.
_SYLLABLES_NON_ASCII = _SYLLABLES[:15] + [
    "ká", "lö", "mí", "ñe", "ße", "tà", "ço", "zé", "e\u0301t", "u\u0308ber", "n\u0303a",
    "βο", "λα", "ру", "та", "ми", "жи",
]
CORPORA = {"ascii": _SYLLABLES, "non-ascii": _SYLLABLES_NON_ASCII, "prose": None, "prose-typographic": None}


def make_prose_texts(docs: int, words: int, seed: int = 7, typographic: bool = False) -> list[str]:
    """Windows of ``words`` words at random places in real English prose: the Python language reference's
    topics as the standard library ships them (``pydoc_data.topics``, ~65,000 words, so every machine has it).

    ``typographic``: every other text has its straight quotes set as typeset text has them (U+2019, U+201C,
    U+201D), so that it is not plain ASCII and takes the normaliser's Unicode path.
    """
    from pydoc_data.topics import topics

    vocabulary = " ".join(topics[key] for key in sorted(topics)).split()
    rng = np.random.default_rng(seed)
    starts = rng.integers(0, len(vocabulary) - words, size=docs)
    texts = [" ".join(vocabulary[s : s + words]) for s in starts]
    if typographic:
        curly = str.maketrans({"'": "\u2019", '"': "\u201c"})
        texts = [t.translate(curly) if i % 2 == 0 else t for i, t in enumerate(texts)]
    return texts


def make_texts(docs: int, words: int, vocab: int = 50_000, seed: int = 7, corpus: str = "ascii") -> list[str]:
    """Random documents over a Zipf-like vocabulary of made-up words, with capitals and punctuation.

    Real prose has a Zipfian word distribution (which is what makes the word-hash cache pay off) and needs
    the punctuation and case handling of ``normalize``; both are part of what we want to time. ``corpus``
    names the syllables the words are made of (see ``CORPORA``).
    """
    syllables = CORPORA[corpus]
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 5, size=vocab)
    parts = rng.integers(0, len(syllables), size=(vocab, 4))
    vocabulary = ["".join(syllables[p] for p in parts[i, : lengths[i]]) for i in range(vocab)]
    ranks = np.arange(1, vocab + 1, dtype=np.float64)
    probs = 1.0 / ranks**1.05
    probs /= probs.sum()
    texts = []
    for _ in range(docs):
        ids = rng.choice(vocab, size=words, p=probs)
        tokens = [vocabulary[i] for i in ids]
        # A sentence break every ~12 words: capitalised start, full stop or comma at the end.
        for j in range(0, words, 12):
            tokens[j] = tokens[j].capitalize()
            tokens[min(j + 11, words - 1)] += "." if rng.random() < 0.7 else ","
        texts.append(" ".join(tokens))
    return texts


@contextmanager
def one_core():
    """Pin this thread (and threads it starts) to a single CPU, where the OS allows it."""
    if not hasattr(os, "sched_getaffinity"):
        yield None
        return
    before = os.sched_getaffinity(0)
    cpu = min(before)
    os.sched_setaffinity(0, {cpu})
    try:
        yield cpu
    finally:
        os.sched_setaffinity(0, before)


def _best_time(fn: Callable[[], object], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _ours(texts: Sequence[str], num_hashes: int) -> Callable[[], object]:
    minhash = MinHash(num_hashes=num_hashes)
    minhash.signatures(texts[: min(len(texts), 50)])  # warm the word-hash cache a little, as a running indexer would
    return lambda: minhash.signatures(texts)


def _ours_numpy(texts: Sequence[str], num_hashes: int) -> Callable[[], object]:
    """Ours without the compiled kernel (NEARDUP_SOLR_KERNEL=numpy): the NumPy path every install keeps."""
    minhash = MinHash(num_hashes=num_hashes)

    def run():
        os.environ[kernel.FORCE_NUMPY_ENV] = "numpy"
        try:
            return minhash.signatures(texts)
        finally:
            del os.environ[kernel.FORCE_NUMPY_ENV]

    run()
    return run


def _rensa_plain(texts: Sequence[str], num_hashes: int) -> Callable[[], object] | None:
    """rensa as its users feed it: word 3-shingles made with plain Python (lower, split, join), then its fastest
    batch call. No normaliser of ours anywhere in its time."""
    try:
        from rensa import RMinHash
    except ImportError:
        return None
    if not hasattr(RMinHash, "digest_matrix_from_token_sets"):
        return None

    def shingles(text: str) -> list[str]:
        ws = text.lower().split()
        return [" ".join(ws[i : i + 3]) for i in range(len(ws) - 2)] or [" ".join(ws)]

    def run():
        return RMinHash.digest_matrix_from_token_sets([shingles(t) for t in texts], num_hashes, 42)

    return run


def _ours_v1(texts: Sequence[str], num_hashes: int) -> Callable[[], object]:
    """Ours with normaliser version 1 (no Unicode normal form): what indexes built before version 2 use."""
    minhash = MinHash(num_hashes=num_hashes, shingler=Shingler(normalizer=Normalizer(version=1)))
    minhash.signatures(texts[: min(len(texts), 50)])
    return lambda: minhash.signatures(texts)


def _datasketch_update_batch(texts: Sequence[str], num_hashes: int) -> Callable[[], object] | None:
    try:
        from datasketch import MinHash as DSMinHash
    except ImportError:
        return None
    shingler = Shingler()
    # The permutations are generated once and shared, which is how datasketch recommends signing many sets.
    template = DSMinHash(num_perm=num_hashes, seed=1)

    def run():
        out = []
        for text in texts:
            m = DSMinHash(num_perm=num_hashes, permutations=template.permutations, scheme=template.scheme)
            m.update_batch([s.encode("utf-8") for s in shingler.shingles(text)])
            out.append(m.hashvalues)
        return out

    return run


def _datasketch_bulk(texts: Sequence[str], num_hashes: int) -> Callable[[], object] | None:
    try:
        from datasketch import MinHash as DSMinHash
    except ImportError:
        return None
    shingler = Shingler()

    def run():
        sets = [[s.encode("utf-8") for s in shingler.shingles(text)] for text in texts]
        return DSMinHash.bulk(sets, num_perm=num_hashes, seed=1)

    return run


def _rensa_update(texts: Sequence[str], num_hashes: int) -> Callable[[], object] | None:
    try:
        from rensa import RMinHash
    except ImportError:
        return None
    shingler = Shingler()

    def run():
        out = []
        for text in texts:
            m = RMinHash(num_perm=num_hashes, seed=42)
            m.update(shingler.shingles(text))
            out.append(m.digest())
        return out

    return run


def _rensa_matrix(texts: Sequence[str], num_hashes: int) -> Callable[[], object] | None:
    try:
        from rensa import RMinHash
    except ImportError:
        return None
    if not hasattr(RMinHash, "digest_matrix_from_token_sets"):
        return None
    shingler = Shingler()

    def run():
        sets = [shingler.shingles(text) for text in texts]
        return RMinHash.digest_matrix_from_token_sets(sets, num_hashes, 42)

    return run


def _rensa_flat_hashes(texts: Sequence[str], num_hashes: int) -> Callable[[], object] | None:
    """rensa signing OUR uint32 shingle hashes (its own MinHash scheme, so other values than ours).

    Not the brief's comparison (that feeds shingle strings) but the one that isolates the min-hashing kernel:
    it shows what a compiled kernel gains over our NumPy signing loop.
    """
    try:
        from rensa import RMinHash
    except ImportError:
        return None
    if not hasattr(RMinHash, "digest_matrix_from_flat_token_hashes"):
        return None
    shingler = Shingler()

    def run():
        hashes, offsets = shingler.batch_hashes(texts)
        return RMinHash.digest_matrix_from_flat_token_hashes(
            hashes.astype(np.uint64), offsets.astype(np.uint64), num_hashes, 42
        )

    return run


def _peer_input(texts: Sequence[str], num_hashes: int) -> Callable[[], object]:
    """What the peers' totals spend before hashing: our normalize + shingle strings (+ bytes for datasketch)."""
    shingler = Shingler()
    return lambda: [shingler.shingles(text) for text in texts]


PEER_INPUT = "(peer input: shingles())"

RENSA_AS_USED = "rensa, plain Python shingles"
OURS_NUMPY = "neardup_solr (NumPy path)"

METHODS: dict[str, Callable[[Sequence[str], int], Callable[[], object] | None]] = {
    "neardup_solr (batch)": _ours,
    OURS_NUMPY: _ours_numpy,
    "neardup_solr (batch, v1)": _ours_v1,
    RENSA_AS_USED: _rensa_plain,
    "datasketch update_batch": _datasketch_update_batch,
    "datasketch bulk": _datasketch_bulk,
    "rensa RMinHash.update": _rensa_update,
    "rensa digest_matrix": _rensa_matrix,
    "rensa from our hashes": _rensa_flat_hashes,
    # Not a contender: the share of the peers' totals that is our normalize + shingles(), for reading the table.
    PEER_INPUT: _peer_input,
}


def run_signing_benchmark(
    texts: Sequence[str], num_hashes: int = 128, repeats: int = 3, methods: Sequence[str] | None = None
) -> dict:
    """Time every available method on ``texts`` (best of ``repeats``) on one core.

    Returns ``{"docs", "mb", "num_hashes", "cpu", "results": {name: {"seconds", "docs_per_s", "mb_per_s",
    "ours_speedup"}}, "skipped": [names whose package is not installed]}``; ``ours_speedup`` is how many times
    longer a method takes than ours. The row ``PEER_INPUT`` is the time the peers spend producing their input
    (our normalize + shingle strings), included in their totals.
    """
    texts = list(texts)
    mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    results: dict[str, dict] = {}
    skipped = []
    with one_core() as cpu:
        runners = {}
        for name in methods or METHODS:
            fn = METHODS[name](texts, num_hashes)
            if fn is None:
                skipped.append(name)
            else:
                runners[name] = fn
        # Round-robin rather than each method's repeats in a row: on a shared machine a burst of load then
        # slows one repeat of every method, not all repeats of one.
        best = {name: float("inf") for name in runners}
        for _ in range(repeats):
            for name, fn in runners.items():
                best[name] = min(best[name], _best_time(fn, 1))
        for name, seconds in best.items():
            results[name] = {
                "seconds": seconds,
                "docs_per_s": len(texts) / seconds,
                "mb_per_s": mb / seconds,
            }
    ours = results.get("neardup_solr (batch)")
    for r in results.values():
        r["ours_speedup"] = (r["seconds"] / ours["seconds"]) if ours else None
    return {
        "docs": len(texts),
        "mb": mb,
        "num_hashes": num_hashes,
        "signing_path": kernel.describe(),
        "neardup_solr": package_version(),
        "load_average": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        "cpu": cpu,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "results": results,
        "skipped": skipped,
    }


def format_table(report: dict) -> str:
    lines = [
        f"{report['docs']} docs, {report['mb']:.1f} MB, {report['num_hashes']} hashes, one core, "
        f"{report['signing_path']}, load average {report['load_average']}",
        f"{'method':<26}{'seconds':>9}{'docs/s':>10}{'MB/s':>8}{'ours x':>8}",
    ]
    for name, r in report["results"].items():
        lines.append(
            f"{name:<26}{r['seconds']:>9.3f}{r['docs_per_s']:>10.0f}{r['mb_per_s']:>8.2f}{r['ours_speedup']:>8.2f}"
        )
    if report["skipped"]:
        lines.append("not installed: " + ", ".join(report["skipped"]))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=5000)
    parser.add_argument("--words", type=int, default=300)
    parser.add_argument("--num-hashes", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--corpus", default="ascii,non-ascii",
                        help=f"comma-separated corpora to time, from {', '.join(CORPORA)} (default both)")
    parser.add_argument("--json", type=Path, help="also write the results as JSON to this path")
    args = parser.parse_args(argv)
    corpora = [c.strip() for c in args.corpus.split(",") if c.strip()]
    unknown = [c for c in corpora if c not in CORPORA]
    if not corpora or unknown:
        parser.error(f"--corpus takes names from {', '.join(CORPORA)}, got {args.corpus!r}")
    reports = {}
    for corpus in corpora:
        if corpus.startswith("prose"):
            texts = make_prose_texts(args.docs, args.words, seed=args.seed, typographic=corpus != "prose")
        else:
            texts = make_texts(args.docs, args.words, seed=args.seed, corpus=corpus)
        report = run_signing_benchmark(texts, args.num_hashes, repeats=args.repeats)
        report["words_per_doc"] = args.words
        report["corpus"] = corpus
        print(f"corpus {corpus}: " + format_table(report))
        reports[corpus] = report
    if args.json:
        # One corpus keeps the file's old shape (what benchmarks/run.py and earlier results read).
        write_result_files(args.json, reports[corpora[0]] if len(corpora) == 1 else reports, json_path=args.json)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
