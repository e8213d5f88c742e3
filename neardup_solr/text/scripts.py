"""Text written without spaces between words (Chinese, Japanese, Thai, Lao, Khmer, Myanmar), detected so that
word shingles are not used on it unknowingly.

Word shingles need spaces: in such text a "word" is a whole clause, a shingle of three of them a paragraph,
and two copies that differ by one character share no shingle at all. Character shingles (``--unit char``,
``ngram`` 2 or 3) are what works for it. The tool does not switch units by itself: one collection must use
one kind of shingle, or its signatures stop being comparable. It says once per run, as a warning, that the
text needs ``--unit char`` and why.
"""

from __future__ import annotations

import logging
import re

log = logging.getLogger(__name__)

# Scripts written without spaces: Thai, Lao, Tibetan, Myanmar, Khmer, Hiragana, Katakana, CJK ideographs
# (extension A, the main block, compatibility ideographs) and the CJK ideographs of the supplementary planes.
# Hangul is not among them: Korean puts spaces between words.
_UNSPACED = re.compile(
    "[\u0e00-\u0eff\u0f00-\u0fff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf"
    "\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f]"
)
# A text counts as unspaced when at least this share of its characters are in such scripts and its words are
# long on average: a Latin text quoting a few ideographs, or CJK with spaces put in by a segmenter, is not.
UNSPACED_SHARE = 0.5
LONG_WORD = 8.0


def is_unspaced(normalized: str) -> bool:
    """True when a normalised text is mostly in scripts written without spaces and its "words" are clauses."""
    if normalized.isascii() or not normalized:
        return False
    letters = len(normalized) - normalized.count(" ")
    if len(_UNSPACED.findall(normalized)) < UNSPACED_SHARE * letters:
        return False
    return letters / (normalized.count(" ") + 1) >= LONG_WORD


class UnspacedTextCheck:
    """Warns once (per instance, so once per indexing run or searcher) when word shingles meet unspaced text."""

    def __init__(self, unit: str):
        self.active = unit == "word"
        self.warned = False
        self.seen = 0

    def check(self, normalized: str) -> bool:
        """Look at one normalised text; True when it is unspaced (and word shingles are in use)."""
        if not self.active or not is_unspaced(normalized):
            return False
        self.seen += 1
        if not self.warned:
            self.warned = True
            log.warning(
                "text written without spaces between words (Chinese, Japanese, Thai, ...): word shingles of it "
                "are whole clauses, so its near duplicates share almost no shingle and are missed. Index such "
                "text with --unit char --ngram 3 (IndexSettings(unit='char', ngram=3)) in a collection of its own "
                "(first such text: %r)", normalized[:40])
        return True
