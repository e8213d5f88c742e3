"""IDF token weights taken from the index itself.

Solr keeps a document frequency for every indexed term; the ``/terms`` handler (TermsComponent with
``terms.list``) reads them for the words of a query. ``idf(w) = ln(N / df(w))``: a word found in every record
(``los``, ``angeles``, ``blvd``) weighs nothing, a rare one (a street number, a name) weighs most. Weighted
Jaccard (:func:`neardup_solr.pairs.weighted.weighted_jaccard`) compares token sets with them.

Document frequencies include documents deleted but not yet merged away; after heavy deletion, merging the
segments (``neardup-solr optimize``, :func:`neardup_solr.solr.maintenance.merge_segments`) makes them exact again.
"""

from __future__ import annotations

import logging
import math
from concurrent.futures import ThreadPoolExecutor
from typing import Iterable, Sequence

from neardup_solr.signing.settings import TOKEN_FIELDS
from neardup_solr.solr.collection import SolrCollection
from neardup_solr.solr.client import SolrClient

log = logging.getLogger(__name__)

WORDS_FIELD = TOKEN_FIELDS["words"]
# /terms requests sent at once when many tokens are read (the machines measured have 2 cores).
TERMS_REQUESTS_IN_FLIGHT = 2
# Runs asking for at most this many tokens first try to read the field's whole term list (see
# IdfWeights.read_whole_field); the bound keeps that one answer small (a few MB of JSON).
WHOLE_FIELD_TOKENS = 100_000


class IdfWeights:
    """Document-frequency-based weights for the tokens of one field, cached per instance."""

    def __init__(self, client: SolrClient, field: str = WORDS_FIELD, batch: int = 500, max_cached: int = 2_000_000):
        self.client = client
        self.field = field
        self.batch = batch
        # A whole-collection run over shingles meets tens of millions of distinct tokens; the cache starts over
        # past this many (about 200 MB) rather than growing with the collection.
        self.max_cached = max_cached
        self.num_docs = max(1, SolrCollection(client).count())
        self._df: dict[str, int] = {}

    def document_frequencies(self, tokens: Iterable[str], batch: int | None = None) -> dict[str, int]:
        """Document frequency of each token (0 when unseen), asking /terms only for tokens not cached yet,
        ``batch`` (default: the instance's) tokens a request."""
        batch = batch or self.batch
        missing = [t for t in dict.fromkeys(tokens) if t not in self._df]
        if len(self._df) + len(missing) > self.max_cached:
            self._df.clear()
            missing = list(dict.fromkeys(tokens))
        chunks = [missing[start : start + batch] for start in range(0, len(missing), batch)]
        if len(chunks) > 1:
            # Solr answers one terms.list request on one thread (~27 µs a token measured at 100,000 documents),
            # so a second request in flight uses the second core; results are stored by this thread alone.
            with ThreadPoolExecutor(max_workers=TERMS_REQUESTS_IN_FLIGHT, thread_name_prefix="idf-terms") as pool:
                answers = list(pool.map(self._frequencies_of, chunks))
        else:
            answers = [self._frequencies_of(chunk) for chunk in chunks]
        for chunk, found in zip(chunks, answers):
            for t in chunk:
                self._df[t] = int(found.get(t, 0))
        return {t: self._df[t] for t in tokens}

    def read_whole_field(self, tokens: Sequence[str]) -> bool:
        """Cache the document frequency of every one of ``tokens`` from one read of the field's whole term list,
        when the field holds fewer terms than twice as many as asked (the answer is cut there, so a large field
        costs one short answer and nothing else); True when it did, False when the field is larger (or more than
        :data:`WHOLE_FIELD_TOKENS` tokens are asked), and :meth:`document_frequencies` asks token by token.

        Why: Solr looks a listed term up in every segment, ~10 µs a token, and reads a field's terms in order
        many times faster. A 5,000 x 5,000 person-record join asked for 27,016 tokens in 6 requests (~0.2 s,
        the most of its 'weights' phase); the field held 17,245 terms, read in one request in ~0.03 s (issue 40,
        point 5). The frequencies are the same numbers: both count the documents of the whole index holding
        the term, deleted ones not merged away included; a term the field lacks is 0 in both."""
        distinct = list(dict.fromkeys(tokens))
        if not distinct or len(distinct) > WHOLE_FIELD_TOKENS:
            return False
        limit = 2 * len(distinct)
        data = self.client.post_form("terms", [
            ("terms.fl", self.field), ("terms.limit", limit), ("terms.sort", "index"), ("json.nl", "flat"),
        ])
        counts = data.get("terms", {}).get(self.field, [])
        # With shards, each returns its first `limit` terms: fewer in the merged answer means none was cut.
        if len(counts) // 2 >= limit:
            return False
        found = dict(zip(counts[::2], counts[1::2]))
        if len(self._df) + len(distinct) > self.max_cached:
            self._df.clear()
        for t in distinct:
            # As _frequencies_of: terms.list cannot ask for a token with a comma, so such a token counts as unseen.
            self._df[t] = 0 if "," in t else int(found.get(t, 0))
        return True

    def forget(self) -> None:
        """Empty the cache (a whole-collection run holds every token's weight itself, as an array)."""
        self._df.clear()

    def _frequencies_of(self, chunk: list[str]) -> dict[str, int]:
        """One /terms request: the document frequency of each token of ``chunk`` that the index holds."""
        # terms.list is split on commas; normalised words never contain one (punctuation is removed).
        safe = [t for t in chunk if "," not in t]
        data = self.client.post_form("terms", [
            ("terms.fl", self.field), ("terms.list", ",".join(safe)), ("terms.limit", -1),
            ("terms.sort", "index"), ("json.nl", "flat"),
        ])
        counts = data.get("terms", {}).get(self.field, [])
        return dict(zip(counts[::2], counts[1::2]))

    def idf(self, token: str) -> float:
        df = self.document_frequencies([token])[token]
        return self._idf(df)

    def _idf(self, df: int) -> float:
        # A token the index has never seen is as rare as can be (df = 1).
        df = min(max(df, 1), self.num_docs)
        return math.log(self.num_docs / df)

    def weights(self, tokens: Sequence[str]) -> dict[str, float]:
        dfs = self.document_frequencies(tokens)
        return {t: self._idf(df) for t, df in dfs.items()}


def frequent_terms(client: SolrClient, field: str, min_count: int = 2) -> dict[str, int]:
    """Every term of ``field`` held by at least ``min_count`` documents, with its document frequency: one /terms
    request over the whole field (a term left out has a lower frequency: with ``min_count=2``, 1 or 0). What a
    matcher holds to weigh every query token without a request per lookup."""
    data = client.post_form("terms", [
        ("terms.fl", field), ("terms.limit", -1), ("terms.mincount", int(min_count)), ("terms.sort", "index"),
        ("json.nl", "flat"),
    ])
    counts = data.get("terms", {}).get(field, [])
    return dict(zip(counts[::2], (int(c) for c in counts[1::2])))
