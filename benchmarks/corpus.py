"""Synthetic corpus with planted near-duplicate clusters and their exact Jaccard, for benchmarks.

    python benchmarks/corpus.py --docs 1000000 --seed 7 --out benchmarks/work/c1m

writes ``docs.jsonl`` (``{"id": "d0000001", "text": "..."}`` per line), ``truth.tsv`` (every pair inside a
planted cluster with its exact word-3-shingle Jaccard) and ``meta.json`` (parameters and counts). The same
``(docs, seed, dup_share)`` always gives byte-identical files.

Text model
    A vocabulary of 50,000 made-up words built from syllables (onset + vowel + coda), so they are pronounceable
    and tokenise like real words, with shorter words at the frequent ranks as in natural language. Word ranks
    follow a Zipf law (s = 1.1); 4% of the vocabulary are proper nouns, always capitalised. Each document also
    has a few "topic" words it repeats, because real documents are not bags of independent global draws.
    Sentences have 8-20 words, a capital first letter, occasional commas/semicolons and end in ``.``, ``?`` or
    ``!``; about one sentence in five starts a new paragraph. Body lengths are log-normal around 150 words,
    and no document (header and footer lines included) leaves 50-400 whitespace-separated words.

Planted near-duplicates
    About ``dup_share`` of the documents are copies. When an original document is written it becomes, with a
    fixed probability, the source of a cluster of 2-5 members; its copies are written later at log-uniformly
    spread distances (1 to min(100,000, N/2) documents), so duplicates are both adjacent and far apart. A copy
    is made from the source (or, 30% of the time, from an earlier copy, which gives copy-of-copy chains) by word
    substitutions, deletions, insertions, sentence moves and new header/footer lines. The amount of editing
    is derived from a target Jaccard drawn per copy: 8% exact copies (half byte-identical, half differing only
    in punctuation and paragraphing, which normalisation removes), the rest uniform in [0.55, 1). One edited
    word changes about three 3-word shingles, which gives the number of edits for a target; the realised
    Jaccard scatters around it and is what ``truth.tsv`` records, computed exactly from the texts with
    ``Shingler(ngram=3).shingle_hashes``. Pairs between two copies are listed too and are usually lower.

Streaming
    Only the current chunk of originals (8,192 documents) and the members of unfinished clusters are held in
    memory. Shingling cluster members for the truth runs in one worker process for large corpora, which keeps
    the second core busy while the main process generates text. On 2 cores 1,000,000 documents (860 MiB) take
    50-70 s and under 300 MB of memory; sampling word ranks through a lookup table, rendering every token from
    a precomputed table of its written forms and joining each document once keep Python out of the per-word
    work.
"""

from __future__ import annotations

import argparse
import heapq
import json
import math
import sys
import time
from bisect import bisect_left
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

if __package__ in (None, ""):
    # Run as a script: the repository root is not on sys.path, and neardup_solr need not be installed.
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from neardup_solr.text import Shingler  # noqa: E402

__all__ = ["generate", "iter_documents", "iter_truth", "build_vocabulary", "doc_id"]

FORMAT_VERSION = 1
VOCAB_SIZE = 50_000
ZIPF_S = 1.1
MIN_WORDS, MAX_WORDS = 50, 400
# Bodies are filled sentence by sentence until they reach a target length; capping targets at 380 keeps the
# overshoot of the last sentence (at most 19 words) inside MAX_WORDS.
BODY_TARGET_MAX = 380
SENT_MIN, SENT_MAX = 8, 20
CHUNK_DOCS = 8192
# 2**24 slots: the rarest of 50,000 ranks (p ~ 9e-7) still gets ~16 slots, so quantising the Zipf law into a
# lookup table distorts no rank by more than a few percent, at a tenth of the cost of searchsorted.
ZIPF_TABLE_BITS = 24
TOPIC_WORDS = 8
TOPIC_MIN_RANK = 100
P_TOPIC = 0.06
P_COMMA, P_SEMICOLON = 0.06, 0.01
P_PARAGRAPH = 0.2
P_PROPER = 0.04

CLUSTER_MEMBERS = (2, 3, 4, 5)
CLUSTER_MEMBER_P = (0.5, 0.25, 0.15, 0.10)
MAX_GAP = 100_000
P_EXACT = 0.08
TARGET_J_LOW = 0.55
P_FROM_COPY = 0.3
P_NEW_HEADER = 0.35
P_NEW_FOOTER = 0.35
P_SENTENCE_MOVE = 0.25
EDIT_MIX = (0.5, 0.25, 0.25)  # substitution, deletion, insertion

# ---------------------------------------------------------------------------------------------------------------
# Vocabulary
# ---------------------------------------------------------------------------------------------------------------

_ONSETS = (
    ("", 6), ("b", 4), ("bl", 1), ("br", 1), ("c", 3), ("ch", 2), ("cl", 1), ("cr", 1), ("d", 4), ("dr", 1),
    ("f", 3), ("fl", 1), ("fr", 1), ("g", 3), ("gl", 1), ("gr", 1), ("h", 3), ("j", 1), ("k", 3), ("l", 4),
    ("m", 4), ("n", 4), ("p", 4), ("pl", 1), ("pr", 1), ("qu", 1), ("r", 4), ("s", 4), ("sc", 1), ("sh", 2),
    ("sk", 1), ("sl", 1), ("sm", 1), ("sn", 1), ("sp", 1), ("st", 2), ("str", 1), ("sw", 1), ("t", 4),
    ("th", 2), ("tr", 1), ("v", 2), ("w", 2), ("wh", 1), ("y", 1), ("z", 1),
)
_NUCLEI = (
    ("a", 8), ("e", 8), ("i", 6), ("o", 6), ("u", 4), ("ai", 1), ("au", 1), ("ea", 1), ("ee", 1), ("ie", 1),
    ("oa", 1), ("oi", 1), ("oo", 1), ("ou", 1),
)
_FINAL_CODAS = (
    ("", 10), ("b", 1), ("ck", 1), ("d", 2), ("f", 1), ("g", 1), ("k", 1), ("l", 2), ("ld", 1), ("lt", 1),
    ("m", 2), ("mp", 1), ("n", 4), ("nd", 1), ("ng", 1), ("nk", 1), ("nt", 1), ("p", 1), ("r", 3), ("rd", 1),
    ("rk", 1), ("rn", 1), ("rt", 1), ("s", 3), ("sh", 1), ("sk", 1), ("st", 1), ("t", 3), ("th", 1), ("x", 1),
)
# Inside a word only light codas, so syllable joins stay sayable ("tarnvo", not "tarkstro").
_MEDIAL_CODAS = (("", 12), ("n", 2), ("r", 2), ("l", 2), ("s", 1), ("m", 1))
_SYLLABLES = ((1, 0.22), (2, 0.43), (3, 0.25), (4, 0.10))


def _choices(rng: np.random.Generator, table, shape) -> np.ndarray:
    weights = np.array([w for _, w in table], dtype=np.float64)
    return rng.choice(len(table), size=shape, p=weights / weights.sum())


def build_vocabulary(rng: np.random.Generator, size: int = VOCAB_SIZE) -> list[str]:
    """``size`` distinct lowercase made-up words, most frequent rank first (shorter words rank higher)."""
    onsets = [s for s, _ in _ONSETS]
    nuclei = [s for s, _ in _NUCLEI]
    finals = [s for s, _ in _FINAL_CODAS]
    medials = [s for s, _ in _MEDIAL_CODAS]
    seen: dict[str, None] = {}
    while len(seen) < size:
        m = 2 * (size - len(seen)) + 1000
        nsyl = _choices(rng, _SYLLABLES, m) + 1
        on = _choices(rng, _ONSETS, (4, m)).tolist()
        nu = _choices(rng, _NUCLEI, (4, m)).tolist()
        fc = _choices(rng, _FINAL_CODAS, (4, m)).tolist()
        mc = _choices(rng, _MEDIAL_CODAS, (4, m)).tolist()
        for i, k in enumerate(nsyl.tolist()):
            parts = []
            for j in range(k):
                coda = finals[fc[j][i]] if j == k - 1 else medials[mc[j][i]]
                parts.append(onsets[on[j][i]] + nuclei[nu[j][i]] + coda)
            word = "".join(parts)
            if len(word) >= 2:
                seen.setdefault(word)
                if len(seen) == size:
                    break
    words = list(seen)
    # Natural languages put short words at the top of the frequency list; noise keeps it from being strict.
    key = np.array([len(w) for w in words], dtype=np.float64) + rng.normal(0.0, 1.5, len(words))
    return [words[i] for i in np.argsort(key, kind="stable")]


def doc_id(index: int, n: int) -> str:
    """Id of the ``index``-th document (0-based) of an ``n``-document corpus: ``d0000001`` for index 0."""
    return f"d{index + 1:0{max(7, len(str(n)))}d}"


def _capital(word: str) -> str:
    return word[:1].upper() + word[1:]


# ---------------------------------------------------------------------------------------------------------------
# Documents as editable token structures
# ---------------------------------------------------------------------------------------------------------------

# Token suffixes; codes 3-5 end a sentence.
_SUFFIXES = ("", ",", ";", ".", "?", "!")
_END_CODES = np.array([3, 4, 5], dtype=np.uint8)
_END_P = np.array([0.9, 0.07, 0.03])
# (separator before the token, capitalised?): 0 mid-sentence, 1 sentence start, 2 paragraph start.
_COMBOS = ((" ", False), (" ", True), ("\n\n", True))
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")


@dataclass
class _Body:
    words: np.ndarray  # int32 vocabulary ranks
    comma: np.ndarray  # uint8 suffix code of a mid-sentence token (0, 1 = ",", 2 = ";")
    sent_len: np.ndarray  # int64 tokens per sentence
    sent_end: np.ndarray  # uint8 suffix code of the sentence's last token
    sent_para: np.ndarray  # bool: sentence starts a paragraph (ignored for a document's first sentence)


@dataclass
class _Doc:
    body: _Body
    header: str | None = None
    footer: str | None = None

    def num_words(self) -> int:
        extra = sum(len(line.split()) for line in (self.header, self.footer) if line)
        return int(self.body.words.size) + extra


class _TextModel:
    def __init__(self, vocab_rng: np.random.Generator):
        self.vocab = build_vocabulary(vocab_rng)
        v = self.V = len(self.vocab)
        proper = np.zeros(v, dtype=bool)
        candidates = np.arange(300, v)
        proper[vocab_rng.choice(candidates, int(P_PROPER * v), replace=False)] = True
        self.plain = [_capital(w) if p else w for w, p in zip(self.vocab, proper.tolist())]
        self.names = [self.plain[i] for i in np.flatnonzero(proper)]
        caps = [_capital(w) for w in self.vocab]
        # Every (separator, case, suffix) form of every word, so rendering is one fancy-index plus joins.
        forms = np.empty(len(_COMBOS) * len(_SUFFIXES) * v, dtype=object)
        for c, (sep, cap) in enumerate(_COMBOS):
            base = caps if cap else self.plain
            for s, suffix in enumerate(_SUFFIXES):
                lo = (c * len(_SUFFIXES) + s) * v
                forms[lo : lo + v] = [sep + w + suffix for w in base]
        self.forms = forms
        p = np.arange(1, v + 1, dtype=np.float64) ** -ZIPF_S
        bounds = np.rint(np.cumsum(p / p.sum()) * (1 << ZIPF_TABLE_BITS)).astype(np.int64)
        bounds[-1] = 1 << ZIPF_TABLE_BITS
        self.zipf_table = np.repeat(np.arange(v, dtype=np.uint16), np.diff(bounds, prepend=0))

    # -- sampling ------------------------------------------------------------------------------------------------

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return self.zipf_table[rng.integers(0, self.zipf_table.size, n)].astype(np.int32)

    def _suffixes(self, rng: np.random.Generator, n: int) -> np.ndarray:
        u = rng.random(n)
        return (u < P_COMMA).astype(np.uint8) + (u < P_SEMICOLON)

    def _sentence_ends(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return _END_CODES[rng.choice(3, n, p=_END_P)]

    def originals(self, rng: np.random.Generator, ndocs: int, *, median_words: float = 150, sigma: float = 0.5,
                  min_words: int = MIN_WORDS, max_target: int = BODY_TARGET_MAX):
        """A chunk of fresh documents: their texts, and a way to get the editable body of any of them.

        Body lengths are log-normal (``median_words``, ``sigma``) clipped to ``min_words..max_target``; the last
        sentence may overshoot the target by up to SENT_MAX - 1 words. benchmarks/long_corpus.py asks for
        longer bodies; the defaults are this corpus's own.
        """
        targets = np.clip(np.rint(rng.lognormal(math.log(median_words), sigma, ndocs)), min_words, max_target)
        targets = targets.astype(np.int64)
        # A body needs at most ceil(target / SENT_MIN) sentences, so this many always suffices.
        max_sent = int((targets // SENT_MIN + 1).sum())
        sent_len = SENT_MIN + rng.binomial(SENT_MAX - SENT_MIN, 0.45, max_sent)
        cum = np.cumsum(sent_len).tolist()
        last_sent = []
        s = base = 0
        for target in targets.tolist():
            e = bisect_left(cum, base + target, s)
            last_sent.append(e)
            base = cum[e]
            s = e + 1
        nsent_total = s
        sent_len = sent_len[:nsent_total]
        last_sent = np.array(last_sent, dtype=np.int64)
        doc_nsent = np.diff(last_sent, prepend=-1)
        tok_end = np.cumsum(sent_len)[last_sent]
        doc_tok = np.diff(tok_end, prepend=0)
        total = int(tok_end[-1])

        words = self.sample(rng, total)
        topics = (TOPIC_MIN_RANK * (self.V / TOPIC_MIN_RANK) ** rng.random((ndocs, TOPIC_WORDS))).astype(np.int32)
        hit = np.flatnonzero(rng.random(total) < P_TOPIC)
        doc_of = np.repeat(np.arange(ndocs), doc_tok)
        words[hit] = topics[doc_of[hit], rng.integers(0, TOPIC_WORDS, hit.size)]
        comma = self._suffixes(rng, total)
        sent_end = self._sentence_ends(rng, nsent_total)
        sent_para = rng.random(nsent_total) < P_PARAGRAPH
        texts = self.render(words, comma, sent_len, sent_end, sent_para, doc_nsent)

        sent_first = last_sent - doc_nsent + 1
        tok_start = tok_end - doc_tok

        def body(d: int) -> _Body:
            a, b = int(tok_start[d]), int(tok_end[d])
            sa, sb = int(sent_first[d]), int(last_sent[d]) + 1
            return _Body(words[a:b].copy(), comma[a:b].copy(), sent_len[sa:sb].copy(), sent_end[sa:sb].copy(),
                         sent_para[sa:sb].copy())

        return texts, doc_tok, body

    # -- rendering -----------------------------------------------------------------------------------------------

    def render(self, words, comma, sent_len, sent_end, sent_para, doc_nsent) -> list[str]:
        """Texts of documents whose sentences are laid out back to back (``doc_nsent`` sentences each)."""
        sent_stop = np.cumsum(sent_len)
        sent_start = sent_stop - sent_len
        suffix = comma.astype(np.int64)
        suffix[sent_stop - 1] = sent_end
        doc_sent_stop = np.cumsum(doc_nsent)
        para = sent_para.copy()
        para[doc_sent_stop - doc_nsent] = False
        combo = np.zeros(words.size, dtype=np.int64)
        combo[sent_start] = np.where(para, 2, 1)
        pieces = self.forms[(combo * len(_SUFFIXES) + suffix) * self.V + words].tolist()
        stops = sent_stop[doc_sent_stop - 1].tolist()
        starts = [0] + stops[:-1]
        # Every piece carries its leading separator; the first one's is dropped.
        return ["".join(pieces[a:b])[1:] for a, b in zip(starts, stops)]

    def render_doc(self, doc: _Doc) -> str:
        b = doc.body
        body = self.render(b.words, b.comma, b.sent_len, b.sent_end, b.sent_para, np.array([b.sent_len.size]))[0]
        return "\n".join(part for part in (doc.header, body, doc.footer) if part)

    # -- boilerplate lines ---------------------------------------------------------------------------------------

    def _word(self, rng, lo: int = 30) -> str:
        # Content words for titles and tags: skip the very top ranks, which read like function words.
        return self.plain[lo + int(rng.integers(0, 3000))]

    def _name(self, rng) -> str:
        return self.names[int(rng.integers(0, len(self.names)))]

    def _title(self, rng, n: int) -> str:
        return " ".join(_capital(self._word(rng)) for _ in range(n))

    def header(self, rng: np.random.Generator) -> str:
        kind = int(rng.integers(0, 3))
        if kind == 0:
            return self._title(rng, int(rng.integers(3, 8)))
        if kind == 1:
            month = _MONTHS[int(rng.integers(0, 12))]
            return (f"Posted by {self._name(rng)} {self._name(rng)} on {month} {int(rng.integers(1, 29))}, "
                    f"{int(rng.integers(1995, 2025))}")
        return f"{self._name(rng)} {('Daily', 'Weekly', 'Review', 'Journal')[int(rng.integers(0, 4))]}: " \
               f"{self._title(rng, int(rng.integers(2, 6)))}"

    def footer(self, rng: np.random.Generator) -> str:
        kind = int(rng.integers(0, 4))
        if kind == 0:
            return f"Copyright {int(rng.integers(1995, 2025))} {self._name(rng)} Media. All rights reserved."
        if kind == 1:
            return "Share this: " + ", ".join(self._name(rng) for _ in range(int(rng.integers(2, 5))))
        if kind == 2:
            return "Tags: " + ", ".join(self._word(rng) for _ in range(int(rng.integers(3, 7))))
        return f"Read more about {self._word(rng)} {self._word(rng)} on {self._name(rng)} {self._name(rng)}."

    # -- copies --------------------------------------------------------------------------------------------------

    def copy(self, parent: _Doc, rng: np.random.Generator, target: float) -> _Doc:
        """An edited copy of ``parent`` whose shingle Jaccard with it should land near ``target``."""
        b = parent.body
        n = int(b.words.size)
        if target >= 1.0:
            if rng.random() < 0.5:
                return parent
            # Same words, new punctuation and paragraphing: different bytes, same shingles after normalize().
            nsent = b.sent_len.size
            relaid = _Body(b.words, self._suffixes(rng, n), b.sent_len, self._sentence_ends(rng, nsent),
                           rng.random(nsent) < P_PARAGRAPH)
            return _Doc(relaid, parent.header, parent.footer)

        header, footer, added = parent.header, parent.footer, 0
        if rng.random() < P_NEW_HEADER:
            header = self.header(rng)
            added += len(header.split())
        if rng.random() < P_NEW_FOOTER:
            footer = self.footer(rng)
            added += len(footer.split())
        shingles = max(n - 2, 1)
        # Each edited word replaces ~3 shingles: J ~ (m - 3e) / (m + 3e + added) for m shingles and e edits.
        edits = (shingles - target * (shingles + added)) / (3 * (1 + target))
        if edits < 0.5 and added:
            header, footer = parent.header, parent.footer
            edits = shingles * (1 - target) / (3 * (1 + target))
        edits = max(edits, 0.0)
        nsent = b.sent_len.size
        moves = min(int(rng.binomial(2, P_SENTENCE_MOVE)) if nsent >= 3 else 0, int(edits // 2))
        # A moved sentence breaks its two joins, roughly the damage of two edited words.
        edits -= 2 * moves
        n_edit = int(edits) + int(rng.random() < edits - int(edits))
        if n_edit == 0 and moves == 0 and header == parent.header and footer == parent.footer:
            n_edit = 1
        n_sub, n_del, n_ins = (int(x) for x in rng.multinomial(n_edit, EDIT_MIX))
        n_del = min(n_del, n - SENT_MIN)
        body = self.edit_body(b, rng, moves, n_sub, n_del, n_ins)
        return self._fit(_Doc(body, header, footer), rng)

    def edit_body(self, b: _Body, rng: np.random.Generator, moves: int, n_sub: int, n_del: int,
                  n_ins: int) -> _Body:
        """``b`` with ``moves`` sentences moved, then ``n_sub`` words substituted, ``n_del`` deleted and ``n_ins``
        inserted at random positions (fresh Zipf draws); sentences left without words disappear."""
        n = int(b.words.size)
        nsent = b.sent_len.size
        words, comma = b.words, b.comma
        sent_len, sent_end, sent_para = b.sent_len, b.sent_end, b.sent_para
        sid = np.repeat(np.arange(nsent), sent_len)
        if moves:
            order = list(range(nsent))
            for _ in range(moves):
                order.insert(int(rng.integers(0, nsent)), order.pop(int(rng.integers(0, nsent))))
            order = np.array(order)
            rank = np.empty(nsent, dtype=np.int64)
            rank[order] = np.arange(nsent)
            perm = np.argsort(rank[sid], kind="stable")
            words, comma = words[perm], comma[perm]
            sent_len, sent_end, sent_para = sent_len[order], sent_end[order], sent_para[order]
            sid = np.repeat(np.arange(nsent), sent_len)
        words = words.copy()
        if n_sub:
            pos = rng.choice(n, n_sub, replace=False)
            new = self.sample(rng, n_sub)
            same = new == words[pos]
            new[same] = (new[same] + 1) % self.V
            words[pos] = new
        if n_del:
            keep = np.ones(n, dtype=bool)
            keep[rng.choice(n, n_del, replace=False)] = False
            words, comma, sid = words[keep], comma[keep], sid[keep]
        if n_ins:
            pos = np.sort(rng.integers(0, words.size + 1, n_ins))
            owner = sid[np.minimum(pos, words.size - 1)]
            words = np.insert(words, pos, self.sample(rng, n_ins))
            comma = np.insert(comma, pos, np.zeros(n_ins, dtype=np.uint8))
            sid = np.insert(sid, pos, owner)
        sent_len = np.bincount(sid, minlength=nsent)
        alive = sent_len > 0
        return _Body(words, comma, sent_len[alive], sent_end[alive], sent_para[alive])

    def _fit(self, doc: _Doc, rng: np.random.Generator) -> _Doc:
        """Trim or pad ``doc`` into MIN_WORDS..MAX_WORDS (insertions and boilerplate can push it out)."""
        total = doc.num_words()
        while total > MAX_WORDS:
            if doc.footer:
                doc.footer = None
            elif doc.header:
                doc.header = None
            else:
                b = doc.body
                cut = int(b.sent_len[-1])
                doc.body = _Body(b.words[:-cut], b.comma[:-cut], b.sent_len[:-1], b.sent_end[:-1], b.sent_para[:-1])
            total = doc.num_words()
        while total < MIN_WORDS:
            b = doc.body
            k = int(SENT_MIN + rng.binomial(SENT_MAX - SENT_MIN, 0.45))
            doc.body = _Body(
                np.concatenate([b.words, self.sample(rng, k)]),
                np.concatenate([b.comma, self._suffixes(rng, k)]),
                np.append(b.sent_len, k),
                np.append(b.sent_end, self._sentence_ends(rng, 1)),
                np.append(b.sent_para, False),
            )
            total = doc.num_words()
        return doc


# ---------------------------------------------------------------------------------------------------------------
# Truth: exact Jaccard inside each cluster
# ---------------------------------------------------------------------------------------------------------------

_SHINGLER: Shingler | None = None


def _cluster_jaccards(batch: list[tuple[tuple[int, ...], tuple[str, ...]]]) -> list[tuple[int, int, float]]:
    """All member pairs of each cluster, ``(position_a, position_b, jaccard)`` with position_a < position_b."""
    global _SHINGLER
    if _SHINGLER is None:
        _SHINGLER = Shingler(ngram=3)
    out = []
    for positions, texts in batch:
        sets = [np.sort(_SHINGLER.shingle_hashes(t)) for t in texts]
        for i in range(len(sets)):
            for j in range(i + 1, len(sets)):
                inter = np.intersect1d(sets[i], sets[j], assume_unique=True).size
                union = sets[i].size + sets[j].size - inter
                a, b = sorted((positions[i], positions[j]))
                out.append((a, b, inter / union if union else 1.0))
    return out


class _TruthCollector:
    """Computes cluster Jaccards inline or in one worker process, with a bounded backlog of pending work."""

    BATCH = 256
    MAX_PENDING = 16

    def __init__(self, workers: int):
        self.pairs: list[tuple[int, int, float]] = []
        self.batch: list = []
        self.pending: deque = deque()
        self.pool = None
        if workers > 0:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            # spawn, not fork: the worker only needs the Shingler, and forking a process that may already run
            # the executor's management thread is unsafe (and deprecated from Python 3.12).
            self.pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))

    def add(self, positions: tuple[int, ...], texts: tuple[str, ...]) -> None:
        self.batch.append((positions, texts))
        if len(self.batch) >= self.BATCH:
            self._flush()

    def _flush(self) -> None:
        if not self.batch:
            return
        if self.pool is None:
            self.pairs.extend(_cluster_jaccards(self.batch))
        else:
            self.pending.append(self.pool.submit(_cluster_jaccards, self.batch))
            while len(self.pending) > self.MAX_PENDING:
                self.pairs.extend(self.pending.popleft().result())
        self.batch = []

    def finish(self) -> list[tuple[int, int, float]]:
        self._flush()
        while self.pending:
            self.pairs.extend(self.pending.popleft().result())
        self.pairs.sort()
        return self.pairs

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)
            self.pool = None


# ---------------------------------------------------------------------------------------------------------------
# Generation
# ---------------------------------------------------------------------------------------------------------------


class _Cluster:
    __slots__ = ("positions", "docs", "texts", "copies_left")

    def __init__(self, position: int, doc: _Doc, text: str, copies: int):
        self.positions = [position]
        self.docs = [doc]
        self.texts = [text]
        self.copies_left = copies


def _jsonl(doc_id_: str, text: str) -> str:
    # Texts are built from [A-Za-z0-9 ,.;:?!] and newlines only, so this is valid JSON without json.dumps.
    return '{"id": "' + doc_id_ + '", "text": "' + text.replace("\n", "\\n") + '"}\n'


class _Stream:
    """Decides, document by document, whether to write a fresh original or a due copy, and writes it."""

    def __init__(self, n: int, seed: int, dup_share: float, truth: _TruthCollector):
        self.n = n
        vocab_ss, text_ss, sched_ss, edit_ss = np.random.SeedSequence(seed).spawn(4)
        self.model = _TextModel(np.random.default_rng(vocab_ss))
        # Separate streams, so e.g. a change to copy editing leaves the originals' texts unchanged.
        self.text_rng = np.random.default_rng(text_ss)
        self.sched_rng = np.random.default_rng(sched_ss)
        self.edit_rng = np.random.default_rng(edit_ss)
        self.truth = truth
        self.member_p = np.array(CLUSTER_MEMBER_P)
        mean_copies = float(np.dot(np.array(CLUSTER_MEMBERS) - 1, self.member_p))
        # Copies per original = p_source * mean_copies; solve copies / all = dup_share for p_source.
        self.p_source = min(1.0, dup_share / ((1.0 - dup_share) * mean_copies)) if dup_share > 0 else 0.0
        self.max_gap = max(1, min(MAX_GAP, n // 2))
        self.heap: list[tuple[int, int, int]] = []  # (due position, tie-break, cluster id)
        self.clusters: dict[int, _Cluster] = {}
        self.next_cluster = 0
        self.cluster_sizes = {m: 0 for m in CLUSTER_MEMBERS}
        self.copies = self.originals = 0
        self.words_total, self.words_min, self.words_max = 0, MAX_WORDS + 1, 0
        self._chunk_texts: list[str] = []
        self._chunk_words = self._chunk_body = self._chunk_u = None
        self._k = 0

    def write(self, fh, progress: bool, started: float) -> None:
        lines: list[str] = []
        for i in range(self.n):
            heap = self.heap
            if heap and (heap[0][0] <= i or len(heap) >= self.n - i):
                text, words = self._copy(i)
            else:
                text, words = self._original(i)
            self.words_total += words
            self.words_min = min(self.words_min, words)
            self.words_max = max(self.words_max, words)
            lines.append(_jsonl(doc_id(i, self.n), text))
            if len(lines) >= 4096:
                fh.writelines(lines)
                lines = []
            if progress and (i + 1) % 100_000 == 0:
                rate = (i + 1) / (time.perf_counter() - started)
                print(f"  {i + 1:,} docs  {rate:,.0f} docs/s  open clusters {len(self.clusters):,}",
                      file=sys.stderr)
        fh.writelines(lines)
        assert not self.heap and not self.clusters, "every scheduled copy must have been written"

    def _copy(self, i: int) -> tuple[str, int]:
        _, _, cid = heapq.heappop(self.heap)
        cl = self.clusters[cid]
        rng = self.edit_rng
        if len(cl.docs) > 1 and rng.random() < P_FROM_COPY:
            parent = cl.docs[int(rng.integers(1, len(cl.docs)))]
        else:
            parent = cl.docs[0]
        target = 1.0 if rng.random() < P_EXACT else float(rng.uniform(TARGET_J_LOW, 1.0))
        doc, text, words = self._derive(parent, rng, target)
        cl.positions.append(i)
        cl.docs.append(doc)
        cl.texts.append(text)
        cl.copies_left -= 1
        if cl.copies_left == 0:
            self.truth.add(tuple(cl.positions), tuple(cl.texts))
            del self.clusters[cid]
        self.copies += 1
        return text, words

    def _derive(self, parent, rng: np.random.Generator, target: float) -> tuple[Any, str, int]:
        """A copy of ``parent`` edited to about Jaccard ``target``: the copy (a source for later copies), its text
        and its word count. Subclasses with other documents (long_corpus's web pages) replace only this."""
        doc = self.model.copy(parent, rng, target)
        return doc, self.model.render_doc(doc), doc.num_words()

    def _next_original(self, chunk_docs: int = CHUNK_DOCS, **shape) -> int:
        """The position, in the current chunk of originals, of the next one (a chunk of ``chunk_docs`` drawn when
        one is used up; ``shape``: their lengths, for :meth:`_TextModel.originals`)."""
        if self._k == len(self._chunk_texts):
            self._chunk_texts, self._chunk_words, self._chunk_body = self.model.originals(self.text_rng, chunk_docs,
                                                                                          **shape)
            self._chunk_u = self.sched_rng.random(chunk_docs).tolist()
            self._k = 0
        k = self._k
        self._k += 1
        self.originals += 1
        return k

    def _original(self, i: int) -> tuple[str, int]:
        k = self._next_original()
        text = self._chunk_texts[k]
        if self._chunk_u[k] < self.p_source:
            self._start_cluster(i, text, lambda: _Doc(self._chunk_body(k)))
        return text, int(self._chunk_words[k])

    def _start_cluster(self, i: int, text: str, source: Callable[[], Any]) -> None:
        """Maybe make document ``i`` the source of a cluster; ``source`` gives what its copies are derived from
        (made only when a cluster starts)."""
        rng = self.sched_rng
        members = int(rng.choice(CLUSTER_MEMBERS, p=self.member_p))
        # Near the end only clusters whose copies still fit are started, so the corpus has exactly n documents.
        if len(self.heap) + members - 1 > self.n - i - 1:
            return
        cid = self.next_cluster
        self.next_cluster += 1
        self.clusters[cid] = _Cluster(i, source(), text, members - 1)
        gaps = np.exp(rng.random(members - 1) * math.log(self.max_gap)).astype(np.int64)
        for j, gap in enumerate(np.sort(gaps).tolist()):
            heapq.heappush(self.heap, (i + max(1, gap), cid * 8 + j, cid))
        self.cluster_sizes[members] += 1


def _jaccard_stats(values: np.ndarray) -> dict:
    if values.size == 0:
        return {}
    edges = np.round(np.arange(0.0, 1.0001, 0.1), 1)
    hist, _ = np.histogram(values, bins=edges)
    qs = (0.0, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 1.0)
    return {
        "quantiles": {str(q): round(float(np.quantile(values, q)), 6) for q in qs},
        "histogram": {f"{edges[i]:.1f}-{edges[i + 1]:.1f}": int(h) for i, h in enumerate(hist)},
        "pairs_ge_0.8": int((values >= 0.8).sum()),
        "pairs_ge_0.5": int((values >= 0.5).sum()),
        "pairs_exact_1.0": int((values == 1.0).sum()),
    }


def check_corpus_size(n: int, dup_share: float) -> None:
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    if not 0.0 <= dup_share < 1.0:
        raise ValueError(f"dup_share must be in [0, 1), got {dup_share}")


def write_documents_and_truth(out: Path, n: int, truth: "_TruthCollector", make_stream: Callable[[], Any],
                              progress: bool, started: float) -> tuple[Any, list[tuple[int, int, float]]]:
    """Write the stream's ``docs.jsonl`` and the truth's ``truth.tsv`` into ``out`` (each through a temporary
    file, so a stopped run leaves no half corpus posing as whole); the stream and the truth's pairs."""
    out.mkdir(parents=True, exist_ok=True)
    # Exact-pair files of an earlier corpus in this directory would silently pose as ground truth for this one.
    for stale in out.glob("exact_*.tsv"):
        stale.unlink()
    docs_tmp, truth_tmp = out / "docs.jsonl.tmp", out / "truth.tsv.tmp"
    try:
        stream = make_stream()
        with open(docs_tmp, "w", encoding="ascii", buffering=1 << 20) as fh:
            stream.write(fh, progress, started)
        pairs = truth.finish()
    finally:
        truth.close()
    with open(truth_tmp, "w", encoding="ascii") as fh:
        fh.write("# id_a\tid_b\tjaccard  (exact Jaccard of Shingler(ngram=3).shingle_hashes sets; every pair "
                 "inside a planted cluster)\n")
        fh.writelines(f"{doc_id(a, n)}\t{doc_id(b, n)}\t{j:.6f}\n" for a, b, j in pairs)
    docs_tmp.replace(out / "docs.jsonl")
    truth_tmp.replace(out / "truth.tsv")
    return stream, pairs


def generate(n: int, seed: int, out_dir, dup_share: float = 0.1, *, workers: int | None = None,
             progress: bool = False) -> dict:
    """Write ``docs.jsonl``, ``truth.tsv`` and ``meta.json`` for an ``n``-document corpus into ``out_dir``.

    ``dup_share`` is the expected share of documents that are copies (planted near-duplicates).
    ``workers``: processes that shingle cluster members for the truth (default: 1 from 50,000 documents on,
    otherwise 0 = inline). Returns the metadata written to ``meta.json`` plus ``elapsed_s`` and ``bytes``.
    """
    check_corpus_size(n, dup_share)
    started = time.perf_counter()
    out = Path(out_dir)
    truth = _TruthCollector(workers if workers is not None else (1 if n >= 50_000 else 0))
    stream, pairs = write_documents_and_truth(out, n, truth, lambda: _Stream(n, seed, dup_share, truth), progress,
                                              started)

    meta = {
        "format_version": FORMAT_VERSION,
        "generator": "benchmarks/corpus.py",
        "parameters": {
            "docs": n,
            "seed": seed,
            "dup_share": dup_share,
            "vocabulary_size": stream.model.V,
            "zipf_s": ZIPF_S,
            "doc_words": [MIN_WORDS, MAX_WORDS],
            "sentence_words": [SENT_MIN, SENT_MAX],
            "cluster_members": dict(zip(map(str, CLUSTER_MEMBERS), CLUSTER_MEMBER_P)),
            "p_source": round(stream.p_source, 6),
            "max_gap": stream.max_gap,
            "p_exact_copy": P_EXACT,
            "target_jaccard": [TARGET_J_LOW, 1.0],
            "p_copy_of_copy": P_FROM_COPY,
            "shingles": "Shingler(ngram=3, unit='word', seed=42).shingle_hashes",
        },
        "counts": {
            **stream_counts(stream, n, pairs),
        },
    }
    return write_meta(out, meta, pairs, started)


def stream_counts(stream: "_Stream", n: int, pairs: list) -> dict:
    """What every corpus's meta.json counts: documents, originals, copies, clusters, truth pairs, words."""
    return {
            "docs": n,
            "originals": stream.originals,
            "copies": stream.copies,
            "clusters": sum(stream.cluster_sizes.values()),
            "clusters_by_members": {str(m): c for m, c in stream.cluster_sizes.items()},
            "truth_pairs": len(pairs),
            "words_total": stream.words_total,
            "words_min": stream.words_min,
            "words_max": stream.words_max,
            "words_mean": round(stream.words_total / n, 2),
    }


def write_meta(out: Path, meta: dict, pairs: list, started: float) -> dict:
    """``meta`` with the truth's Jaccard figures and the files, written to ``meta.json``; returned with the time
    taken and the size of ``docs.jsonl``."""
    meta = {**meta, "truth_jaccard": _jaccard_stats(np.array([j for _, _, j in pairs], dtype=np.float64)),
            "files": {"docs": "docs.jsonl", "truth": "truth.tsv"}}
    (out / "meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="ascii")
    return {**meta, "elapsed_s": round(time.perf_counter() - started, 3),
            "bytes": (out / "docs.jsonl").stat().st_size}


# ---------------------------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------------------------


def _docs_path(path) -> Path:
    p = Path(path)
    return p / "docs.jsonl" if p.is_dir() else p


def iter_documents(path) -> Iterator[tuple[str, str]]:
    """Stream ``(id, text)`` from a corpus directory or its ``docs.jsonl``."""
    with open(_docs_path(path), encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                rec = json.loads(line)
                yield rec["id"], rec["text"]


def iter_truth(path) -> Iterator[tuple[str, str, float]]:
    """Stream ``(id_a, id_b, jaccard)`` from a corpus directory's ``truth.tsv`` (or any file in that format)."""
    p = Path(path)
    with open(p / "truth.tsv" if p.is_dir() else p, encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("#") or not line.strip():
                continue
            a, b, j = line.rstrip("\n").split("\t")
            yield a, b, float(j)


def corpus_arguments(doc: str, truth_worker_from: int) -> argparse.ArgumentParser:
    """The command line of a corpus generator (this one, long_corpus's)."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, required=True, help="number of documents")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--dup-share", type=float, default=0.1, help="expected share of documents that are copies")
    ap.add_argument("--workers", type=int, default=None,
                    help=f"processes computing the truth Jaccard (default: 1 from {truth_worker_from:,} docs, "
                         "else inline)")
    ap.add_argument("--quiet", action="store_true")
    return ap


def main(argv=None) -> int:
    args = corpus_arguments(__doc__, 50_000).parse_args(argv)
    res = generate(args.docs, args.seed, args.out, args.dup_share, workers=args.workers, progress=not args.quiet)
    c = res["counts"]
    print(f"{c['docs']:,} docs ({c['copies']:,} copies in {c['clusters']:,} clusters), "
          f"{c['truth_pairs']:,} truth pairs, {res['bytes'] / 2**20:,.1f} MiB in {res['elapsed_s']:.1f} s "
          f"({c['docs'] / res['elapsed_s']:,.0f} docs/s) -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
