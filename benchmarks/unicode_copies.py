"""Copies that differ only in how their characters are encoded, and whether the default recipe reports them.

    python benchmarks/unicode_copies.py [--originals 710] [--copies-per-kind 60] [--out benchmarks/results/NAME]
    python benchmarks/unicode_copies.py --write copies.jsonl.gz      # only the corpus, for the command line

Generates long documents of prose (accented words, words with "fi"/"fl", long words, numbers) and, for some of
them, copies that differ by one encoding accident each: accents decomposed (NFD) where the original has them
composed (NFC), "fi"/"fl" ligatures (PDF extraction), soft hyphens (U+00AD) inside 30% of the long words (HTML,
PDF), full-width digits (CJK input). Every copy equals its original once Unicode is normalised.

It indexes the corpus twice into the Solr of ``SOLR_URL`` (or the local launcher's core), once with normaliser
version 1 and once with the default (version 2), runs the default whole-collection recipe
(``report --threshold 0.8 --method lsh``) on each, and prints, per kind of copy, how many copies were reported
with their original and the median word-3-shingle Jaccard of copy and original. The collection is cleared
first and at the end: point it at a scratch core.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import unicodedata
from pathlib import Path

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from neardup_solr.text import Normalizer, Shingler, jaccard  # noqa: E402
from benchmarks.provenance import write_result_files  # noqa: E402

KINDS = ("nfd", "ligatures", "soft-hyphens", "full-width-digits")

_SPECIAL = [
    "café", "été", "naïve", "résumé", "déjà", "élève", "français", "über", "müller", "größe", "señor", "año",
    "crème", "brûlée", "façade", "coöperate", "fiancée", "pâté", "ångström", "søren", "éducation", "intérêt",
    "office", "field", "flower", "final", "profile", "fluid", "reflect", "define", "conflict", "affirm", "flight",
    "significant", "beneficial", "confidential", "identification", "reflection", "satisfaction", "influence",
    "international", "documentation", "responsibility", "environmental", "établissement", "administration",
    "communication", "representative", "understanding", "infrastructure", "développement", "organisation",
]
_SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "ta", "vo", "ze", "pra", "gu", "del", "mon", "ti", "bar", "sel", "ar",
              "on", "in", "ex", "or", "ul", "ber", "cos", "dri", "ven", "lu", "pa", "ré", "sé", "dé"]


def _vocabulary(rng: np.random.Generator, size: int = 3000) -> list[str]:
    made_up = ["".join(_SYLLABLES[i] for i in rng.integers(0, len(_SYLLABLES), size=int(rng.integers(2, 5))))
               for _ in range(size)]
    return _SPECIAL * 10 + made_up


def make_document(rng: np.random.Generator, vocabulary: list[str], words: int) -> str:
    """Prose of about ``words`` words, NFC, with a number in most sentences."""
    out: list[str] = []
    count = 0
    while count < words:
        sentence = [vocabulary[i] for i in rng.integers(0, len(vocabulary), size=int(rng.integers(8, 18)))]
        count += len(sentence)
        sentence[0] = sentence[0].capitalize()
        if rng.random() < 0.8:
            sentence.insert(int(rng.integers(1, len(sentence))), str(int(rng.integers(1, 3000))))
        out.append(" ".join(sentence) + rng.choice([".", ".", ",", ";", "?"]))
    return unicodedata.normalize("NFC", " ".join(out))


def make_copy(text: str, kind: str, rng: np.random.Generator) -> str:
    """``text`` with one kind of encoding accident (see ``KINDS``)."""
    if kind == "nfd":
        return unicodedata.normalize("NFD", text)
    if kind == "ligatures":
        return text.replace("fi", "\ufb01").replace("fl", "\ufb02")
    if kind == "soft-hyphens":
        words = text.split(" ")
        for i, word in enumerate(words):
            if len(word) >= 8 and rng.random() < 0.3:
                cut = len(word) // 2
                words[i] = word[:cut] + "\u00ad" + word[cut:]
        return " ".join(words)
    if kind == "full-width-digits":
        return "".join(chr(ord(c) - 0x30 + 0xFF10) if "0" <= c <= "9" else c for c in text)
    raise ValueError(f"unknown kind {kind!r}; choose from {', '.join(KINDS)}")


def make_corpus(originals: int, copies_per_kind: int, *, words: tuple[int, int] = (300, 700), seed: int = 16
                ) -> tuple[list[tuple[str, str]], list[tuple[str, str, str]]]:
    """``(records, copies)``: (id, text) records, originals first, and (copy id, original id, kind) per copy.
    Each kind copies its own ``copies_per_kind`` originals."""
    rng = np.random.default_rng(seed)
    vocabulary = _vocabulary(rng)
    records = [(f"o{i:04d}", make_document(rng, vocabulary, int(rng.integers(*words)))) for i in range(originals)]
    chosen = rng.permutation(originals)[: copies_per_kind * len(KINDS)]
    copies = []
    for k, kind in enumerate(KINDS):
        for j in chosen[k * copies_per_kind: (k + 1) * copies_per_kind]:
            original_id, text = records[int(j)]
            copy_id = f"c-{kind}-{original_id}"
            records.append((copy_id, make_copy(text, kind, rng)))
            copies.append((copy_id, original_id, kind))
    return records, copies


def median_jaccard(records: list[tuple[str, str]], copies: list[tuple[str, str, str]], normalizer: Normalizer
                   ) -> dict[str, float]:
    """Median word-3-shingle Jaccard of each kind's copies and their originals, under ``normalizer``."""
    texts = dict(records)
    shingler = Shingler(normalizer=normalizer)
    by_kind: dict[str, list[float]] = {k: [] for k in KINDS}
    for copy_id, original_id, kind in copies:
        by_kind[kind].append(jaccard(shingler.shingle_hashes(texts[copy_id]), shingler.shingle_hashes(texts[original_id])))
    return {k: statistics.median(v) for k, v in by_kind.items() if v}


def found_copies(client, records, copies, normalizer_version: int) -> tuple[dict[str, int], float]:
    """Index ``records`` with that normaliser, run the default whole-collection recipe; copies found per kind."""
    from neardup_solr import IndexSettings, Indexer
    from neardup_solr.engine.collection import dedupe_collection
    from neardup_solr.solr.maintenance import clear

    clear(client, None, everything=True)
    Indexer(client, IndexSettings(normalizer_version=normalizer_version)).index_records(records)
    started = time.monotonic()
    result = dedupe_collection(client, 0.8)
    seconds = time.monotonic() - started
    reported = {frozenset((p.id, p.neighbor_id)) for p in result.pairs}
    found = {k: 0 for k in KINDS}
    for copy_id, original_id, kind in copies:
        found[kind] += frozenset((copy_id, original_id)) in reported
    return found, seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--originals", type=int, default=710)
    parser.add_argument("--copies-per-kind", type=int, default=60)
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--out", type=Path, help="write NAME.json and NAME.md")
    parser.add_argument("--write", type=Path, metavar="FILE.jsonl.gz",
                        help="only write the corpus as gzip-compressed JSONL (id, text) and the copies as TSV "
                             "beside it (FILE.copies.tsv), without Solr")
    args = parser.parse_args(argv)
    records, copies = make_corpus(args.originals, args.copies_per_kind, seed=args.seed)
    if args.write:
        import gzip

        with gzip.open(args.write, "wt", encoding="utf-8") as fh:
            for doc_id, text in records:
                fh.write(json.dumps({"id": doc_id, "text": text}, ensure_ascii=False) + "\n")
        copies_path = args.write.with_name(args.write.name.split(".")[0] + ".copies.tsv")
        copies_path.write_text("".join(f"{c}\t{o}\t{k}\n" for c, o, k in copies))
        print(f"wrote {len(records)} records to {args.write} and {len(copies)} copies to {copies_path}")
        return 0
    from neardup_solr import SolrClient
    from neardup_solr.solr.maintenance import clear

    client = SolrClient()
    report: dict = {"originals": args.originals, "copies": len(copies), "seed": args.seed, "versions": {}}
    try:
        for version in (1, 2):
            found, seconds = found_copies(client, records, copies, version)
            report["versions"][version] = {"found": found, "report_seconds": round(seconds, 2),
                                           "median_jaccard": median_jaccard(records, copies, Normalizer(version))}
    finally:
        clear(client, None, everything=True)
    lines = [f"{args.originals} originals + {len(copies)} copies ({args.copies_per_kind} per kind), "
             "report --threshold 0.8 --method lsh, default settings otherwise", "",
             "| copy differs by | v1: found | v1: median J | v2: found | v2: median J |", "|---|---:|---:|---:|---:|"]
    for kind in KINDS:
        v1, v2 = report["versions"][1], report["versions"][2]
        lines.append(f"| {kind} | {v1['found'][kind]} / {args.copies_per_kind} | {v1['median_jaccard'][kind]:.2f} "
                     f"| {v2['found'][kind]} / {args.copies_per_kind} | {v2['median_jaccard'][kind]:.2f} |")
    print("\n".join(lines))
    if args.out:
        write_result_files(args.out, report, "\n".join(lines) + "\n")
        print(f"wrote {args.out.with_suffix('.json')} and {args.out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
