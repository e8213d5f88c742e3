"""A corpus of large version clusters, for the refinement of oversized LSH buckets (issue 24).

    python -m benchmarks.clustered --bases 2000 --unrelated 20000 --seed 1 --out benchmarks/work/clustered

writes ``docs.jsonl`` (``{"id", "text"}`` per line, what ``neardup-solr index`` reads) and ``meta.json``.

Contracts, licences, page templates and wire stories come in *versions*: one text edited again and again, so
that a cluster holds tens of near duplicates, all similar to each other, where the planted-copies corpus
(``benchmarks/corpus.py``) has clusters of 2-5 and the person records pairs. Here every base document of
``min_words``-``max_words`` words (uniform) gets ``min_versions``-``max_versions`` versions (uniform); each
version edits the base, or 40% of the time an earlier version (revision chains), at a rate drawn uniformly in
``min_edit``-``max_edit`` of its words, in runs of 1-8 words: substitutions, deletions and insertions in equal
parts, and a moved passage for one version in three. Word 3-shingle Jaccard inside a cluster then spreads from
~0.3 to ~0.99, most pairs of a cluster above 0.5.
``unrelated`` documents of the same length range are drawn from the same vocabulary without any version.

Words follow a Zipf law (s = 1.05) over 30,000 made-up words (``benchmarks.corpus.build_vocabulary``), with a
few topic words per cluster so that the clusters do not share much more than language does. The same
arguments give byte-identical files; ids are ``c<base>v<version>`` and ``u<n>``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.corpus import build_vocabulary  # noqa: E402

VOCABULARY = 30_000
TOPIC_WORDS = 12


class _Words:
    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        self.vocab = np.array(build_vocabulary(rng, VOCABULARY), dtype=object)
        p = 1.0 / np.arange(1, VOCABULARY + 1) ** 1.05
        self.cdf = np.cumsum(p / p.sum())

    def draw(self, count: int, topic: np.ndarray | None = None) -> list[str]:
        ranks = np.searchsorted(self.cdf, self.rng.random(count), side="right").clip(max=VOCABULARY - 1)
        words = self.vocab[ranks]
        if topic is not None and count:
            # About one word in twelve is one of the cluster's topic words.
            spots = self.rng.random(count) < 1 / 12
            words[spots] = topic[self.rng.integers(0, topic.size, int(spots.sum()))]
        return words.tolist()


def _edit(words: list[str], rate: float, rng: np.random.Generator, source: _Words, topic: np.ndarray) -> list[str]:
    """``words`` with about ``rate`` of them edited, in runs of 1-8 words as revisions edit (a clause rewritten,
    a phrase cut, a sentence added): a run of L words changes about L + 2 of the word 3-shingles."""
    out = list(words)
    budget = max(1, int(round(rate * len(out))))
    while budget > 0:
        length = min(budget, int(rng.integers(1, 9)))
        budget -= length
        at = int(rng.integers(0, len(out)))
        kind = int(rng.integers(0, 3))
        if kind == 0:
            out[at:at + length] = source.draw(length, topic)
        elif kind == 1 and len(out) > 50 + length:
            del out[at:at + length]
        else:
            out[at:at] = source.draw(length, topic)
    if rng.random() < 1 / 3:  # a passage moved elsewhere
        length = int(rng.integers(10, 60))
        start = int(rng.integers(0, max(1, len(out) - length)))
        passage = out[start:start + length]
        del out[start:start + length]
        to = int(rng.integers(0, len(out) + 1))
        out[to:to] = passage
    return out


def generate(bases: int = 2000, unrelated: int = 20_000, seed: int = 1, *, min_words: int = 300,
             max_words: int = 2000, min_versions: int = 10, max_versions: int = 60, min_edit: float = 0.02,
             max_edit: float = 0.40):
    """Yield ``(id, text)``: each base document, then its versions, then the unrelated documents."""
    rng = np.random.default_rng(seed)
    source = _Words(rng)
    for b in range(bases):
        topic = np.array(source.draw(TOPIC_WORDS), dtype=object)
        base = source.draw(int(rng.integers(min_words, max_words + 1)), topic)
        versions = [base]
        yield f"c{b:05d}v00", " ".join(base)
        for v in range(1, int(rng.integers(min_versions, max_versions + 1)) + 1):
            parent = versions[int(rng.integers(0, len(versions)))] if rng.random() < 0.4 else base
            version = _edit(parent, float(rng.uniform(min_edit, max_edit)), rng, source, topic)
            versions.append(version)
            yield f"c{b:05d}v{v:02d}", " ".join(version)
    for u in range(unrelated):
        yield f"u{u:06d}", " ".join(source.draw(int(rng.integers(min_words, max_words + 1))))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bases", type=int, default=2000)
    ap.add_argument("--unrelated", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--min-words", type=int, default=300)
    ap.add_argument("--max-words", type=int, default=2000)
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started, count = time.perf_counter(), 0
    with open(out / "docs.jsonl", "w", encoding="utf-8") as f:
        for doc_id, text in generate(args.bases, args.unrelated, args.seed, min_words=args.min_words,
                                     max_words=args.max_words):
            f.write(json.dumps({"id": doc_id, "text": text}) + "\n")
            count += 1
    meta = {"bases": args.bases, "unrelated": args.unrelated, "seed": args.seed, "min_words": args.min_words,
            "max_words": args.max_words, "documents": count}
    (out / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    print(f"{count} documents in {time.perf_counter() - started:.1f} s -> {out / 'docs.jsonl'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
