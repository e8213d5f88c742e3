"""Long documents of web-page size (5-50 KB) with planted near-duplicate clusters, boilerplate shared across
unrelated pages, and the exact Jaccard of every planted pair, for benchmarks (issue 48, point 3).

    python benchmarks/long_corpus.py --docs 100000 --seed 7 --out benchmarks/work/long-c100000

writes the files of ``benchmarks/corpus.py`` in its format: ``docs.jsonl`` (``{"id": "d0000001", "text": "..."}``
per line), ``truth.tsv`` (every pair inside a planted cluster with its exact word-3-shingle Jaccard) and
``meta.json`` (``"profile": "long"``, parameters and counts). The same ``(docs, seed, dup_share)`` always gives
byte-identical files.

Text model
    The text model of ``benchmarks/corpus.py`` (50,000 made-up words, Zipf s = 1.1, per-document topic words,
    sentences of 8-20 words, paragraphs), with bodies log-normal around 2,700 words (sigma 0.5, clipped to
    1,000-9,500 words). A page is, in this order: its site's header block, a headline, the body, a shared block
    and its site's footer block, separated by blank lines; only the headline and the body are always there. Every
    page is held to 5,000-50,000 bytes of text exactly (its length is computed from its tokens before it is
    rendered; trailing sentences are dropped or fresh ones added): median about 14 KB, as web pages after text
    extraction.

Boilerplate shared across unrelated pages
    2,000 sites, one chosen per original with Zipf popularity (s = 1.0: the largest site has about a tenth of the
    pages); a site has a header block (its name, a tagline and a navigation menu of 6-18 entries, one per line, as
    text extraction leaves them; at most 50 words, "Home", "Contact" and the like on many sites) and a footer block
    (5-12 links, a copyright line and an address; at most 50 words, "Privacy Policy" and the like on many sites).
    40 blocks shared across sites (licence paragraphs, cookie notices, newsletter boxes, disclaimers; 20-150 words),
    chosen with Zipf popularity (s = 1.2: the commonest is on about 30% of the pages that carry one). Each page
    carries 1, 2 or 3 (probabilities 0.3, 0.4, 0.3) of {its site's header, a shared block, its site's footer}.
    ``meta.json`` counts the pages with each kind and the largest sites and commonest shared blocks.

Why boilerplate alone never makes two unrelated pages near duplicates at J >= 0.8
    Two pages that share no planted cluster share at most the boilerplate they both carry: at most 50 + 150 + 50
    = 250 words, so at most about 250 word 3-shingles (a shingle across a block's edge holds a word of the page's
    own), plus the 3-word sequences that two independent bodies produce by chance. Every page has at least ~950
    words (5,000 bytes at ~5 bytes a word), so at least ~900 distinct shingles, and J(x, y) <= |x & y| /
    max(|x|, |y|) <= (250 + a) / 900 for ``a`` chance coincidences. Reaching 0.8 would take a >= 470 shared 3-word
    sequences between two independent Zipf texts; the expected number is about n1 * n2 * (sum p_w^2)^3 =
    n1 * n2 * 2.4e-5 (sum p_w^2 = 0.0288 for s = 1.1 over 50,000 words), 24 for two 1,000-word bodies, and for
    longer bodies the denominator grows as fast as the numerator (two 9,000-word bodies: ~1,900 of ~16,000
    shingles, J < 0.13). So an unplanted pair stays far below 0.8 whatever the sites and blocks. The test
    (tests/bench/test_long_corpus.py) checks on a small corpus that the exact all-pairs join at 0.8
    (benchmarks/exact_pairs.py) returns exactly the planted pairs at 0.8; at 20,000 documents the same holds
    (below).

Planted near-duplicates
    As in ``benchmarks/corpus.py``: about ``dup_share`` of the documents are copies in clusters of 2-5 members,
    written at log-uniform distances (1 to min(100,000, N/2) documents), 30% of them copies of an earlier copy;
    8% exact copies (half byte-identical, half differing only in punctuation and paragraphing), the rest aimed at a
    Jaccard drawn uniformly in [0.55, 1). The edits of a web page: republished on another site (30%: that site's
    header and footer instead), another shared block (20%), a new headline (20%), sentences moved (0-4), whole
    sentences deleted and fresh ones inserted (a share of the edit budget drawn per copy in [0, 0.6]: an updated
    or trimmed article), and scattered word substitutions, deletions and insertions (typos, rewording) for the
    rest. The budget: a parent of m shingles that loses r and gains c has J = (m - r) / (m + c); a scattered
    edit costs about 2.75 shingles each way, a moved sentence 6, a deleted sentence of k words k + 2 lost and 2
    gained (an inserted one the reverse), so deletions and insertions in equal numbers keep r = c. The realised
    Jaccard scatters around the target and is what ``truth.tsv`` records, computed exactly from the texts with
    ``Shingler(ngram=3).shingle_hashes``.

Streaming and cost
    Only the current chunk of originals (256 documents) and the members of unfinished clusters are held in memory;
    cluster members are shingled for the truth in one worker process from 10,000 documents on. Measured on this
    2-core machine (``/usr/bin/time -v``, seed 7, while another benchmark held the other core): 5,000 documents
    (75 MiB) in 4.6 s, 10,000 (152 MiB) in 8.4 s, 20,000 (303 MiB) in 16.5 s, about 1,250 documents/s or
    18 MB/s, with a peak RSS of 290-300 MB at every size; 100,000 documents (~1.5 GB) take about 80 s.

Gold at 100,000 documents: the planted pairs, not the exact join
    ``benchmarks/exact_pairs.py`` holds a few int64 arrays as long as all the corpus's shingles. Its peak RSS on this
    corpus (``/usr/bin/time -v``): 0.83 GB at 5,000 documents (16 M shingles), 1.61 GB at 10,000 and 3.11 GB at
    20,000 (63 M shingles; join 13.5 s): about 155 MB per 1,000 documents, so ~15.5 GB at 100,000 (~315 M
    shingles), above the 14 GB that leaves room on this 24 GB machine for Solr, Spark or a peer running beside it.
    So the long peers run (``python -m benchmarks.peers --corpus long``) scores against the planted pairs at
    J >= 0.8, each with its exact Jaccard from ``truth.tsv``. That they are all the pairs at 0.8: the argument
    above, and the exact join measured at 20,000 documents (seed 7) returns exactly the 1,225 planted pairs at 0.8
    and no other; at 5,000 documents no unplanted pair reaches even 0.3, and on 1,000 documents the highest
    Jaccard of any unplanted pair is 0.057. The test repeats the check on a small corpus, at 0.8 and at 0.3. ``--gold exact`` runs the join anyway
    on a machine with the memory.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

if __package__ in (None, ""):
    # Run as a script: the repository root is not on sys.path, and neardup_solr need not be installed.
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.corpus import (  # noqa: E402
    CLUSTER_MEMBER_P, CLUSTER_MEMBERS, EDIT_MIX, P_EXACT, P_FROM_COPY, P_PARAGRAPH, SENT_MAX, SENT_MIN, TARGET_J_LOW,
    ZIPF_S, _Body, _capital, _Stream, _TextModel, _TruthCollector, doc_id, iter_documents,
    check_corpus_size, corpus_arguments, iter_truth, stream_counts, write_documents_and_truth, write_meta,
)

__all__ = ["generate", "iter_documents", "iter_truth", "LongTextModel", "PROFILE"]

PROFILE = "long"
FORMAT_VERSION = 1
MIN_BYTES, MAX_BYTES = 5_000, 50_000
BODY_MEDIAN_WORDS, BODY_SIGMA = 2_700, 0.5
BODY_MIN_TARGET, BODY_MAX_TARGET = 1_000, 9_500
CHUNK_DOCS = 256
# Clusters start 10,000 documents apart or less on small corpora too; the truth worker pays off from there.
TRUTH_WORKER_FROM_DOCS = 10_000

SITES = 2_000
SITE_ZIPF_S = 1.0
SHARED_BLOCKS = 40
SHARED_ZIPF_S = 1.2
BLOCK_COUNT = (1, 2, 3)
BLOCK_COUNT_P = (0.3, 0.4, 0.3)
BLOCK_KINDS = ("header", "shared", "footer")  # in page order: header, headline, body, shared, footer
# Upper bounds of the blocks' sizes in words (the docstring's argument relies on them; a test checks them).
HEADER_MAX_WORDS, FOOTER_MAX_WORDS, SHARED_MAX_WORDS = 50, 50, 150

P_NEW_SITE = 0.3
P_NEW_SHARED = 0.2
P_NEW_TITLE = 0.2
MAX_MOVES = 4
P_SENTENCE_MOVE = 0.25
BLOCK_SHARE_MAX = 0.6
# Expected shingles lost (= gained) per edit, for the budget: a scattered edit with EDIT_MIX's mix, a moved
# sentence, and a pair of one deleted and one inserted sentence of mean length.
SCATTERED_COST = float(np.dot(EDIT_MIX, (3.0, 2.5, 2.5)))
MOVE_COST = 6.0
MEAN_SENTENCE = SENT_MIN + (SENT_MAX - SENT_MIN) * 0.45
SENTENCE_PAIR_COST = MEAN_SENTENCE + 4.0

_SITE_SUFFIXES = ("News", "Times", "Online", "Daily", "Wiki", "Forum", "Blog", "Magazine", "Review", "Post",
                  "Herald", "Journal", "Today", "Network", "Hub", "Guide")
_MENU_COMMON = ("Home", "News", "About", "Contact", "Blog", "Search", "Login", "Subscribe", "Archive", "Events")
_FOOTER_LINKS = ("About Us", "Contact", "Privacy Policy", "Terms of Use", "Cookie Settings", "Advertise", "Careers",
                 "Sitemap", "RSS", "Help", "Accessibility", "Press")
_SHARED_OPENINGS = {
    "licence": ("This article is licensed under the {name} {word} Licence {v}. You may copy and redistribute the "
                "material in any medium or format, provided you give appropriate credit."),
    "cookies": "We use cookies to improve your experience on our site. By continuing you accept our use of cookies.",
    "newsletter": "Subscribe to our newsletter and get the latest stories delivered to your inbox every week.",
    "disclaimer": ("Disclaimer: the views expressed here are those of the authors and do not necessarily reflect "
                   "the views of the publisher."),
}


@dataclass
class _Page:
    body: _Body
    title: str
    site: int
    blocks: tuple[str, ...]  # the kinds of boilerplate it carries, a subset of BLOCK_KINDS
    shared: int  # the shared block's index (meaningful when "shared" in blocks)


def _zipf_cdf(n: int, s: float) -> np.ndarray:
    p = np.arange(1, n + 1, dtype=np.float64) ** -s
    return np.cumsum(p / p.sum())


class LongTextModel:
    """``benchmarks/corpus.py``'s text model with web-page structure: sites, shared blocks, headlines."""

    def __init__(self, model: _TextModel, seed: int):
        self.model = model
        self.seed = seed
        # Written length of each word (capitalised or not: the same), for the exact length of a page.
        self.word_chars = np.array([len(w) for w in model.plain], dtype=np.int64)
        self.site_cdf = _zipf_cdf(SITES, SITE_ZIPF_S)
        self.shared_cdf = _zipf_cdf(SHARED_BLOCKS, SHARED_ZIPF_S)
        self._sites: dict[int, tuple[str, str]] = {}
        # The shared blocks are few: made once, from their own stream, so they do not depend on generation order.
        rng = np.random.default_rng([seed, 0x5BA4ED])
        kinds = list(_SHARED_OPENINGS)
        self.shared_blocks = [self._shared_block(rng, kinds[k % len(kinds)]) for k in range(SHARED_BLOCKS)]

    # -- boilerplate ---------------------------------------------------------------------------------------------

    def _prose(self, rng: np.random.Generator, words: int) -> str:
        """Sentences of ``words`` words in all, from the text model (as a string: boilerplate is never edited)."""
        out, left = [], words
        while left > 0:
            k = min(left, int(SENT_MIN + rng.binomial(SENT_MAX - SENT_MIN, 0.45)))
            ranks = self.model.sample(rng, k).tolist()
            out.append(" ".join([_capital(self.model.plain[ranks[0]])] + [self.model.plain[r] for r in ranks[1:]])
                       + ".")
            left -= k
        return " ".join(out)

    def _shared_block(self, rng: np.random.Generator, kind: str) -> str:
        m = self.model
        opening = _SHARED_OPENINGS[kind].format(name=m._name(rng), word=_capital(m._word(rng)),
                                                v=f"{int(rng.integers(1, 5))}.0")
        budget = {"licence": (40, 120), "cookies": (10, 40), "newsletter": (5, 25), "disclaimer": (20, 100)}[kind]
        extra = int(rng.integers(*budget))
        block = opening + " " + self._prose(rng, extra)
        return " ".join(block.split()[:SHARED_MAX_WORDS])

    def site_blocks(self, site: int) -> tuple[str, str]:
        """(header block, footer block) of ``site``: made from the site's own seed, so any page, in any order,
        gets the same ones."""
        blocks = self._sites.get(site)
        if blocks is None:
            m = self.model
            rng = np.random.default_rng([self.seed, 0x517E, site])
            name = " ".join(_capital(m._word(rng)) for _ in range(int(rng.integers(1, 3))))
            name += " " + _SITE_SUFFIXES[int(rng.integers(0, len(_SITE_SUFFIXES)))]
            tagline = self._prose(rng, int(rng.integers(4, 11)))
            menu = [item for item in _MENU_COMMON if rng.random() < 0.5]
            menu += [m._title(rng, int(rng.integers(1, 3))) for _ in range(int(rng.integers(3, 12)))]
            menu = menu[: int(rng.integers(6, 19))]
            header = "\n".join([name, tagline, *menu])
            links = [link for link in _FOOTER_LINKS if rng.random() < 0.45][:8]
            more = max(0, int(rng.integers(5, 13)) - len(links))
            links += [m._title(rng, int(rng.integers(1, 3))) for _ in range(more)]
            footer = "\n".join([
                "\n".join(links),
                f"Copyright {int(rng.integers(1995, 2025))} {name}. All rights reserved.",
                f"{int(rng.integers(1, 400))} {_capital(m._word(rng))} Street, {m._name(rng)}",
            ])
            header = "\n".join(_cap_words(header, HEADER_MAX_WORDS))
            footer = "\n".join(_cap_words(footer, FOOTER_MAX_WORDS))
            blocks = self._sites[site] = (header, footer)
        return blocks

    def draw_site(self, rng: np.random.Generator) -> int:
        return int(np.searchsorted(self.site_cdf, rng.random(), side="right"))

    def draw_shared(self, rng: np.random.Generator) -> int:
        return int(np.searchsorted(self.shared_cdf, rng.random(), side="right"))

    def headline(self, rng: np.random.Generator) -> str:
        return self.model._title(rng, int(rng.integers(3, 13)))

    def new_page(self, rng: np.random.Generator, body: _Body) -> _Page:
        count = int(rng.choice(BLOCK_COUNT, p=BLOCK_COUNT_P))
        chosen = sorted(rng.choice(len(BLOCK_KINDS), count, replace=False).tolist())
        return _Page(body, self.headline(rng), self.draw_site(rng), tuple(BLOCK_KINDS[k] for k in chosen),
                     self.draw_shared(rng))

    def frame(self, page: _Page) -> tuple[list[str], list[str]]:
        """The page's parts before and after its body."""
        header, footer = self.site_blocks(page.site) if {"header", "footer"} & set(page.blocks) else ("", "")
        before = ([header] if "header" in page.blocks else []) + [page.title]
        after = ([self.shared_blocks[page.shared]] if "shared" in page.blocks else []) + \
            ([footer] if "footer" in page.blocks else [])
        return before, after

    def boilerplate_words(self, page: _Page) -> int:
        before, after = self.frame(page)
        return sum(len(part.split()) for part in before[:-1] + after)

    # -- length and rendering ------------------------------------------------------------------------------------

    def body_chars(self, b: _Body) -> int:
        """Length of ``render(b)`` without rendering it: the words, one separator between tokens, one more for each
        paragraph break after the first sentence, a suffix character for each comma/semicolon and sentence end."""
        n = int(b.words.size)
        if n == 0:
            return 0
        last = np.cumsum(b.sent_len) - 1
        mid_suffix = int(np.count_nonzero(b.comma)) - int(np.count_nonzero(b.comma[last]))
        return int(self.word_chars[b.words].sum()) + n - 1 + int(b.sent_para[1:].sum()) + mid_suffix + \
            int(b.sent_len.size)

    def page_chars(self, page: _Page, body_chars: int | None = None) -> int:
        before, after = self.frame(page)
        parts = [len(p) for p in before + after] + [self.body_chars(page.body) if body_chars is None else body_chars]
        return sum(parts) + 2 * (len(parts) - 1)

    def render_body(self, b: _Body) -> str:
        return self.model.render(b.words, b.comma, b.sent_len, b.sent_end, b.sent_para, np.array([b.sent_len.size]))[0]

    def render(self, page: _Page, body_text: str | None = None) -> str:
        before, after = self.frame(page)
        return "\n\n".join(before + [self.render_body(page.body) if body_text is None else body_text] + after)

    def fit(self, page: _Page, rng: np.random.Generator) -> _Page:
        """``page`` with trailing body sentences dropped, or fresh ones added, until it is MIN_BYTES..MAX_BYTES."""
        b = page.body
        chars = self.page_chars(page)
        if MIN_BYTES <= chars <= MAX_BYTES:
            return page
        while chars > MAX_BYTES:
            cut = int(b.sent_len[-1])
            b = _Body(b.words[:-cut], b.comma[:-cut], b.sent_len[:-1], b.sent_end[:-1], b.sent_para[:-1])
            chars = self.page_chars(replace(page, body=b))
        while chars < MIN_BYTES:
            b = _concat(b, self.sentences(rng, 1))
            chars = self.page_chars(replace(page, body=b))
        return replace(page, body=b)

    # -- edits ---------------------------------------------------------------------------------------------------

    def sentences(self, rng: np.random.Generator, count: int) -> _Body:
        """``count`` fresh sentences (the first one opening a paragraph half of the time)."""
        m = self.model
        sent_len = (SENT_MIN + rng.binomial(SENT_MAX - SENT_MIN, 0.45, count)).astype(np.int64)
        total = int(sent_len.sum())
        para = rng.random(count) < P_PARAGRAPH
        para[0] = rng.random() < 0.5
        return _Body(m.sample(rng, total), m._suffixes(rng, total), sent_len, m._sentence_ends(rng, count), para)

    def copy(self, parent: _Page, rng: np.random.Generator, target: float) -> _Page:
        """An edited copy of ``parent`` whose shingle Jaccard with it should land near ``target``."""
        m = self.model
        b = parent.body
        if target >= 1.0:
            if rng.random() < 0.5:
                return parent
            # Same words, new punctuation and paragraphing: different bytes, same shingles after normalize().
            nsent = b.sent_len.size
            relaid = _Body(b.words, m._suffixes(rng, int(b.words.size)), b.sent_len, m._sentence_ends(rng, nsent),
                           rng.random(nsent) < P_PARAGRAPH)
            return self.fit(replace(parent, body=relaid), rng)

        page = parent
        if rng.random() < P_NEW_SITE and {"header", "footer"} & set(parent.blocks):
            site = self.draw_site(rng)
            page = replace(page, site=site if site != parent.site else (site + 1) % SITES)
        if "shared" in parent.blocks and rng.random() < P_NEW_SHARED:
            shared = self.draw_shared(rng)
            page = replace(page, shared=shared if shared != parent.shared else (shared + 1) % SHARED_BLOCKS)
        if rng.random() < P_NEW_TITLE:
            page = replace(page, title=self.headline(rng))
        lost, gained = _frame_change(self.frame(parent), self.frame(page))
        shingles = int(b.words.size) + self.boilerplate_words(parent) + len(parent.title.split())
        # (m - lost - d) / (m + gained + d) = target, for the d shingles the body edits must lose and gain.
        damage = (shingles - lost - target * (shingles + gained)) / (1 + target)
        if damage < 1 and (lost or gained):
            page, damage = parent, shingles * (1 - target) / (1 + target)
        damage = max(damage, 0.0)

        nsent = int(b.sent_len.size)
        moves = min(int(rng.binomial(MAX_MOVES, P_SENTENCE_MOVE)) if nsent >= 3 else 0, int(damage // MOVE_COST))
        damage -= MOVE_COST * moves
        pairs = _stochastic_round(rng, rng.uniform(0.0, BLOCK_SHARE_MAX) * damage / SENTENCE_PAIR_COST)
        pairs = min(pairs, max(0, nsent // 4))
        damage -= SENTENCE_PAIR_COST * pairs
        deleted = int(rng.binomial(2 * pairs, 0.5)) if pairs else 0
        deleted = min(deleted, max(0, nsent // 2))
        inserted = 2 * pairs - deleted
        n_edit = _stochastic_round(rng, max(damage, 0.0) / SCATTERED_COST)
        if n_edit == 0 and moves == 0 and pairs == 0 and page is parent:
            n_edit = 1

        body = self._sentence_edits(b, rng, deleted, inserted)
        n = int(body.words.size)
        n_sub, n_del, n_ins = (int(x) for x in rng.multinomial(n_edit, EDIT_MIX))
        n_sub, n_del = min(n_sub, n), min(n_del, max(0, n - SENT_MIN))
        body = m.edit_body(body, rng, moves, n_sub, n_del, n_ins)
        return self.fit(replace(page, body=body), rng)

    def _sentence_edits(self, b: _Body, rng: np.random.Generator, deleted: int, inserted: int) -> _Body:
        """``b`` without ``deleted`` whole sentences, then with ``inserted`` fresh ones in runs of 1-3 at sentence
        boundaries (an updated or trimmed article)."""
        nsent = int(b.sent_len.size)
        if deleted:
            keep = np.ones(nsent, dtype=bool)
            keep[rng.choice(nsent, deleted, replace=False)] = False
            tokens = np.repeat(keep, b.sent_len)
            b = _Body(b.words[tokens], b.comma[tokens], b.sent_len[keep], b.sent_end[keep], b.sent_para[keep])
        while inserted > 0:
            run = min(inserted, int(rng.integers(1, 4)))
            at = int(rng.integers(1, b.sent_len.size + 1))  # never before the first sentence
            new = self.sentences(rng, run)
            cut = int(b.sent_len[:at].sum())
            b = _Body(np.concatenate([b.words[:cut], new.words, b.words[cut:]]),
                      np.concatenate([b.comma[:cut], new.comma, b.comma[cut:]]),
                      np.concatenate([b.sent_len[:at], new.sent_len, b.sent_len[at:]]),
                      np.concatenate([b.sent_end[:at], new.sent_end, b.sent_end[at:]]),
                      np.concatenate([b.sent_para[:at], new.sent_para, b.sent_para[at:]]))
            inserted -= run
        return b


def _cap_words(block: str, limit: int) -> list[str]:
    """The lines of ``block`` cut so that it has at most ``limit`` words in all."""
    out, left = [], limit
    for line in block.split("\n"):
        words = line.split()[:left]
        if not words:
            break
        out.append(" ".join(words))
        left -= len(words)
    return out


def _concat(a: _Body, b: _Body) -> _Body:
    return _Body(np.concatenate([a.words, b.words]), np.concatenate([a.comma, b.comma]),
                 np.concatenate([a.sent_len, b.sent_len]), np.concatenate([a.sent_end, b.sent_end]),
                 np.concatenate([a.sent_para, b.sent_para]))


def _stochastic_round(rng: np.random.Generator, x: float) -> int:
    return int(x) + int(rng.random() < x - int(x))


def _frame_change(old: tuple[list[str], list[str]], new: tuple[list[str], list[str]]) -> tuple[int, int]:
    """Words of the old page's frame (boilerplate and headline) that the new one no longer has, and the new one's
    words that the old one lacked, part by part: approximately the shingles lost and gained."""
    old_parts, new_parts = set(old[0] + old[1]), set(new[0] + new[1])
    lost = sum(len(p.split()) for p in old_parts - new_parts)
    gained = sum(len(p.split()) for p in new_parts - old_parts)
    return lost, gained


# ---------------------------------------------------------------------------------------------------------------
# Generation
# ---------------------------------------------------------------------------------------------------------------


class _LongTruth(_TruthCollector):
    # Cluster texts are ~15 times longer than the short corpus's: smaller batches keep the backlog's memory alike.
    BATCH = 32


class _LongStream(_Stream):
    """``corpus._Stream``'s schedule (clusters, distances, copy-of-copy) writing web pages."""

    def __init__(self, n: int, seed: int, dup_share: float, truth: _TruthCollector):
        super().__init__(n, seed, dup_share, truth)
        # A fifth stream beside the four of corpus.py (its first four children are the same).
        self.page_rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(5)[4])
        self.long = LongTextModel(self.model, seed)
        self.words_min = 1 << 62
        self.byte_sizes: list[int] = []
        self.block_counts = {kind: 0 for kind in BLOCK_KINDS}
        self.site_pages: dict[int, int] = {}
        self.shared_pages: dict[int, int] = {}

    def _account(self, page: _Page, text: str) -> None:
        self.byte_sizes.append(len(text))
        for kind in page.blocks:
            self.block_counts[kind] += 1
        if {"header", "footer"} & set(page.blocks):
            self.site_pages[page.site] = self.site_pages.get(page.site, 0) + 1
        if "shared" in page.blocks:
            self.shared_pages[page.shared] = self.shared_pages.get(page.shared, 0) + 1

    def _derive(self, parent: _Page, rng: np.random.Generator, target: float) -> tuple[_Page, str, int]:
        page = self.long.copy(parent, rng, target)
        text = self.long.render(page)
        self._account(page, text)
        return page, text, len(text.split())

    def _original(self, i: int) -> tuple[str, int]:
        k = self._next_original(CHUNK_DOCS, median_words=BODY_MEDIAN_WORDS, sigma=BODY_SIGMA, min_words=BODY_MIN_TARGET,
                                max_target=BODY_MAX_TARGET - SENT_MAX)
        body_text = self._chunk_texts[k]
        # The editable body is cut out of the chunk only when needed: to fit the page, or to keep it as a source.
        page = self.long.new_page(self.page_rng, None)
        chars = self.long.page_chars(page, body_chars=len(body_text))
        if not MIN_BYTES <= chars <= MAX_BYTES:
            page = self.long.fit(replace(page, body=self._chunk_body(k)), self.page_rng)
            body_text = None
        text = self.long.render(page, body_text)
        if self._chunk_u[k] < self.p_source:
            # The cluster's source is the whole page (not a body wrapped in a _Doc), its body cut out if need be.
            self._start_cluster(i, text, lambda: page if page.body is not None
                                else replace(page, body=self._chunk_body(k)))
        self._account(page, text)
        return text, len(text.split())


def _top_counts(counts: dict[int, int], total: int, k: int = 5) -> list[dict]:
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
    return [{"index": key, "pages": value, "share": round(value / total, 4)} for key, value in top]


def generate(n: int, seed: int, out_dir, dup_share: float = 0.1, *, workers: int | None = None,
             progress: bool = False) -> dict:
    """Write ``docs.jsonl``, ``truth.tsv`` and ``meta.json`` for an ``n``-page long corpus into ``out_dir``.

    ``dup_share`` is the expected share of documents that are copies. ``workers``: processes that shingle cluster
    members for the truth (default: 1 from TRUTH_WORKER_FROM_DOCS documents on, otherwise 0 = inline). Returns the
    metadata written to ``meta.json`` plus ``elapsed_s`` and ``bytes``.
    """
    check_corpus_size(n, dup_share)
    started = time.perf_counter()
    out = Path(out_dir)
    truth = _LongTruth(workers if workers is not None else (1 if n >= TRUTH_WORKER_FROM_DOCS else 0))
    stream, pairs = write_documents_and_truth(out, n, truth, lambda: _LongStream(n, seed, dup_share, truth),
                                              progress, started)

    sizes = np.array(stream.byte_sizes, dtype=np.int64)
    meta = {
        "format_version": FORMAT_VERSION,
        "generator": "benchmarks/long_corpus.py",
        "profile": PROFILE,
        "parameters": {
            "docs": n,
            "seed": seed,
            "dup_share": dup_share,
            "vocabulary_size": stream.model.V,
            "zipf_s": ZIPF_S,
            "text_bytes": [MIN_BYTES, MAX_BYTES],
            "body_words_lognormal": {"median": BODY_MEDIAN_WORDS, "sigma": BODY_SIGMA,
                                     "clip": [BODY_MIN_TARGET, BODY_MAX_TARGET]},
            "sentence_words": [SENT_MIN, SENT_MAX],
            "sites": {"count": SITES, "zipf_s": SITE_ZIPF_S},
            "shared_blocks": {"count": SHARED_BLOCKS, "zipf_s": SHARED_ZIPF_S, "kinds": list(_SHARED_OPENINGS)},
            "blocks_per_page": dict(zip(map(str, BLOCK_COUNT), BLOCK_COUNT_P)),
            "block_max_words": {"header": HEADER_MAX_WORDS, "shared": SHARED_MAX_WORDS, "footer": FOOTER_MAX_WORDS},
            "cluster_members": dict(zip(map(str, CLUSTER_MEMBERS), CLUSTER_MEMBER_P)),
            "p_source": round(stream.p_source, 6),
            "max_gap": stream.max_gap,
            "p_exact_copy": P_EXACT,
            "target_jaccard": [TARGET_J_LOW, 1.0],
            "p_copy_of_copy": P_FROM_COPY,
            "copy_edits": {"p_new_site": P_NEW_SITE, "p_new_shared_block": P_NEW_SHARED,
                           "p_new_headline": P_NEW_TITLE, "sentence_moves": [0, MAX_MOVES],
                           "sentence_delete_insert_share": [0.0, BLOCK_SHARE_MAX], "scattered_mix": list(EDIT_MIX)},
            "shingles": "Shingler(ngram=3, unit='word', seed=42).shingle_hashes",
        },
        "counts": {
            **stream_counts(stream, n, pairs),
            "text_bytes_total": int(sizes.sum()),
            "text_bytes_min": int(sizes.min()),
            "text_bytes_median": int(np.median(sizes)),
            "text_bytes_max": int(sizes.max()),
            "text_bytes_quantiles": {str(q): int(np.quantile(sizes, q)) for q in (0.05, 0.25, 0.75, 0.95)},
            "pages_with_block": stream.block_counts,
            "sites_used": len(stream.site_pages),
            "largest_sites": _top_counts(stream.site_pages, n),
            "shared_blocks_used": len(stream.shared_pages),
            "commonest_shared_blocks": _top_counts(stream.shared_pages, n),
        },
    }
    return write_meta(out, meta, pairs, started)


def main(argv=None) -> int:
    args = corpus_arguments(__doc__, TRUTH_WORKER_FROM_DOCS).parse_args(argv)
    res = generate(args.docs, args.seed, args.out, args.dup_share, workers=args.workers, progress=not args.quiet)
    c = res["counts"]
    print(f"{c['docs']:,} long docs ({c['copies']:,} copies in {c['clusters']:,} clusters), "
          f"{c['truth_pairs']:,} truth pairs, {res['bytes'] / 2**20:,.1f} MiB (text {c['text_bytes_min']:,}-"
          f"{c['text_bytes_max']:,} bytes, median {c['text_bytes_median']:,}) in {res['elapsed_s']:.1f} s "
          f"({c['docs'] / res['elapsed_s']:,.0f} docs/s) -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
