"""Threshold mode: every pair with similarity >= t, verified exactly, with no candidate silently cut off.

Why nothing is lost: if ``J(A, B) >= t`` then ``|A & B| >= t * |A|`` (the union is at least ``|A|``). So one
OR-query over A's tokens, filtered with ``{!frange l=ceil(t*|A|)}query($q)`` (the overlap score, which the
schema's BooleanSimilarity makes an exact count), returns *every* document that can reach t, and nothing
else needs a row cap: results are paged through with a cursor. The same bound holds for weighted Jaccard with
IDF weights (the OR-query carries each token's weight as its boost, so the score is the weighted overlap).
Candidates are then verified with the exact (weighted) Jaccard on the client; no estimate is reported.

Prefix filtering (:mod:`neardup_solr.pairs.prefix_filter`) makes this cheap without changing a single result: the
main query asks only for documents holding one of A's rarest tokens (the prefix that every document able to
reach the bound must share), and the overlap bound over *all* of A's tokens is applied to those alone, as a
post filter. Before, the whole OR-query was scored across the index, frequent tokens and all.

``similarity="jaccard"`` works on the index's shingles (``content_ng``); ``similarity="idf"`` on the words
(``content_words``) weighted by IDF from the index (see :mod:`neardup_solr.solr.idf`), or with
``idf_tokens="grams"`` on the words and their character 4-grams (``content_grams``), which a typo only partly
changes (the README's record matching recipe).
"""

from __future__ import annotations

import json
import logging
import math
import threading
from dataclasses import asdict
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from neardup_solr.signing.settings import SETTINGS_DOC_ID
from neardup_solr.errors import InvalidParameterError, ParameterTypeError
from neardup_solr.io.outputs import ResumableOutput, digest_of
from neardup_solr.io.progress import progress_bar
from neardup_solr.pairs.prefix_filter import count_prefix, weighted_prefix
from neardup_solr.io.readers import Record, record_item
from neardup_solr.engine.report import iter_documents, ordered_map
from neardup_solr.pairs._arrays import sorted_jaccard
from neardup_solr.solr.candidates import reaching_overlap
from neardup_solr.solr.collection import collection_of
from neardup_solr.solr.searcher import Searcher, StoredDocument
from neardup_solr.pairs.similar_pairs import SimilarPair, id_sort_key, one_to_one, pair_lines
from neardup_solr.validation import check_bool, check_choice, check_float, check_int
from neardup_solr.solr.idf import IdfWeights
from neardup_solr.pairs.weighted import weighted_jaccard

log = logging.getLogger(__name__)

SIMILARITIES = ("jaccard", "idf")
# The tokens similarity="idf" weighs: the words, or the words and their character 4-grams (documents.py).
IDF_TOKENS = ("words", "grams")
# Relative rounding of one 32-bit float addition (2**-24), doubled for the boosts' own rounding to float.
_FLOAT32_SLACK = 2.0 ** -23
# Above this many query tokens the prefix query goes without the server-side overlap filter (see similar_to_text).
OVERLAP_FILTER_MAX_TOKENS = 1000
# Distinct tokens whose document frequencies a join reads ahead at once (ThresholdFinder.prefetch_frequencies).
PREFETCH_TOKENS = 200_000


class ThresholdFinder:
    """Finds every indexed document whose (weighted) Jaccard with a query text is >= threshold.

    >>> finder = ThresholdFinder(Searcher(SolrClient()), threshold=0.8)
    >>> finder.similar_to_text("Art's Deli 12224 Ventura Blvd. Studio City")
    [('536', 1.0), ...]
    """

    def __init__(self, searcher: Searcher, threshold: float = 0.8, similarity: str = "jaccard", page_size: int = 500,
                 field_weights: dict[str, float] | None = None, prefix_filter: bool = True,
                 idf_tokens: str = "words"):
        if not isinstance(searcher, Searcher):
            raise ParameterTypeError("searcher", "a Searcher", searcher)
        threshold = check_float("threshold", threshold, "threshold")
        similarity = check_choice("similarity", similarity, SIMILARITIES)
        page_size = check_int("page_size", page_size, minimum=1, maximum=10_000)
        prefix_filter = check_bool("prefix_filter", prefix_filter)
        idf_tokens = check_choice("idf_tokens", idf_tokens, IDF_TOKENS)
        if idf_tokens != "words" and (similarity != "idf" or field_weights is not None):
            raise InvalidParameterError("idf_tokens", "'words' unless similarity='idf' without field_weights",
                                        idf_tokens, "grams are IDF tokens of the whole text, not per column")
        self.searcher = searcher
        self.client = searcher.client
        self.threshold = threshold
        self.similarity = similarity
        self.page_size = page_size
        self.idf_tokens = idf_tokens
        if field_weights is not None:
            if similarity != "idf":
                raise InvalidParameterError("field_weights", "left out (None) unless similarity='idf'", field_weights,
                                            "field weights scale IDF weights")
            if not isinstance(field_weights, dict) or not all(
                    isinstance(k, str) and isinstance(w, (int, float)) and not isinstance(w, bool)
                    and math.isfinite(w) and w >= 0 for k, w in field_weights.items()):
                raise InvalidParameterError("field_weights", "a dict of column name -> finite weight >= 0",
                                            field_weights)
        else:
            searcher.settings.require("shingles" if similarity == "jaccard" else idf_tokens)
            if similarity == "jaccard" and searcher.settings.sample_mod != 1:
                raise InvalidParameterError(
                    "similarity", "used on a collection that indexes every shingle", similarity,
                    f"exact Jaccard needs every shingle; this collection samples 1 in {searcher.settings.sample_mod} "
                    "(use --method lsh, or re-index without sampling)")
        # Per-field weighting reads document frequencies of "column:word" tokens (records indexed from
        # several text columns); a column missing from field_weights weighs 1.
        self.field_weights = field_weights
        self.token_field = ("content_fwords" if similarity == "idf" and field_weights is not None
                            else searcher.settings.token_field("shingles" if similarity == "jaccard" else idf_tokens))
        self.idf = IdfWeights(self.client, field=self.token_field) if similarity == "idf" else None
        # The same pairs either way (see prefix_filter); False is for measuring and checking that claim.
        self.prefix_filter = prefix_filter
        self._frequencies: IdfWeights | None = self.idf

    def prefetch_frequencies(self, items: Iterable[tuple[str, dict | None]], budget: int = PREFETCH_TOKENS) -> int:
        """Read the document frequencies of the tokens of the next (text, fields) items in a few large /terms
        requests, up to about ``budget`` distinct tokens (the cache holds 2 million); returns how many items
        that covered. A join then sends one /terms request per few thousand records instead of one per record;
        frequencies only order the prefix (and weigh IDF), so the pairs do not change."""
        frequencies = self._frequencies
        if frequencies is None:
            if not self.prefix_filter:
                return 1 << 62  # nothing to read: the query names every token
            frequencies = self._frequencies = IdfWeights(self.client, field=self.token_field, batch=5000)
        tokens: dict[str, None] = {}
        covered = 0
        for text, fields in items:
            covered += 1
            try:
                if self.similarity == "jaccard":
                    builder = self.searcher.builder
                    tokens.update(dict.fromkeys(builder.shingle_tokens(builder.process(text))))
                else:
                    tokens.update(dict.fromkeys(self._word_tokens(text, fields)))
            except ValueError:
                continue  # the lookup itself reports such a record
            if len(tokens) >= budget:
                break
        frequencies.document_frequencies(tokens, batch=5000)
        return covered

    def word_tokens(self, text: str, fields: dict | None = None) -> list[str]:
        """The tokens ``similarity='idf'`` weighs for a text: its distinct words (or with ``idf_tokens='grams'``
        the words padded and their character 4-grams), or ``column:word`` tokens of its columns with per-field
        weights (the same tokens the exact method queries and verifies)."""
        return self._word_tokens(text, fields)

    def token_weights(self, tokens: Sequence[str]) -> dict[str, float]:
        """IDF weight of each token (times its column's field weight), read from the collection and cached:
        the weights every similarity this finder reports is computed with."""
        return self._weights(tokens)

    def _weights(self, tokens) -> dict[str, float]:
        assert self.idf is not None, "IDF weights are read only for similarity='idf'"
        weights = self.idf.weights(tokens)
        if self.field_weights:
            for token in weights:
                weights[token] *= self.field_weights.get(token.split(":", 1)[0], 1.0)
        return weights

    def _word_tokens(self, text: str, fields: dict | None) -> list[str]:
        if self.field_weights is None:
            if self.idf_tokens == "grams":
                return self.searcher.builder.gram_tokens(text)  # as the indexer stores them in content_grams
            # The words alone, as the indexer stores them in content_words (and the Spark jobs count them).
            return self.searcher.builder.word_tokens(text)
        if not fields:
            raise ValueError("per-field weights need the record's columns (read it with several text columns)")
        return self.searcher.builder.field_tokens(fields)

    def _query(self, text: str, fields: dict | None = None) -> tuple[list[tuple[str, float]], float, object]:
        """(token, boost) pairs, the lower bound on the score, and what verification needs."""
        processed = self.searcher.builder.process(text)
        if self.similarity == "jaccard":
            tokens = list(dict.fromkeys(self.searcher.builder.shingle_tokens(processed)))
            bound = math.ceil(self.threshold * len(set(processed.shingle_hashes.tolist())) - 1e-9)
            return [(t, 1.0) for t in tokens], float(bound), np.unique(processed.shingle_hashes)
        words = self._word_tokens(text, fields)
        weights = self._weights(words)
        # fsum: the bound must not depend on the order the words come in (it is exact, so no order can change it).
        total = math.fsum(weights.values())
        boosted = [(w, weights[w]) for w in words if weights[w] > 0]
        # Lucene adds the boosts as 32-bit floats, in an order that depends on the segment and, on SolrCloud, on
        # the shard holding the document; each addition may round by 2**-24 of the running sum. The slack keeps a
        # document whose true weighted overlap is exactly on the bound from falling below it through rounding on
        # one layout and not another. It only lets a few more candidates in; each is verified exactly below.
        slack = _FLOAT32_SLACK * max(1, len(boosted))
        return boosted, self.threshold * total * (1 - slack), (set(words), weights)

    def _prefix(self, tokens: list[tuple[str, float]], bound: float) -> list[str] | None:
        """The query's prefix (its rarest tokens, see :mod:`.prefix_filter`), or None to query every token."""
        names = [t for t, _ in tokens]
        if not self.prefix_filter or any("," in t for t in names):  # the terms parser splits on commas
            return None
        if self._frequencies is None:
            # Long batches: a 3,500-shingle text then costs one terms request, not seven.
            self._frequencies = IdfWeights(self.client, field=self.token_field, batch=5000)
        frequencies = self._frequencies.document_frequencies(names)
        # TermsComponent trims the values of terms.list, so a character shingle with a space at either end is
        # reported as unseen. Ordering them last keeps the prefix correct (any order is) and cheap (such
        # shingles, " th", "s a", are among the most frequent).
        unknown = self._frequencies.num_docs + 1
        frequencies = {t: (unknown if t != t.strip() else f) for t, f in frequencies.items()}
        if self.similarity == "jaccard":
            return count_prefix(names, frequencies, int(bound))
        return weighted_prefix(dict(tokens), frequencies, bound)

    def _verify_all(self, basis, docs: list[dict]) -> list[float]:
        """The exact similarity of the query to each candidate document (stored ``content``, ``fields_json``)."""
        if self.similarity == "jaccard":
            if not docs:
                return []
            # One vectorised hashing pass over every candidate: only the hashes are compared, so building each
            # candidate's shingle strings (as process() does) would be wasted work.
            hashes, offsets = self.searcher.builder.shingler.batch_hashes([d.get("content", "") for d in docs])
            return [sorted_jaccard(basis, np.unique(hashes[offsets[i]:offsets[i + 1]])) for i in range(len(docs))]
        return [self._weighted_similarity(basis, d.get("content", ""),
                                          json.loads(d["fields_json"]) if d.get("fields_json") else None)
                for d in docs]

    def _weighted_similarity(self, basis, content: str, fields: dict | None = None) -> float:
        words, weights = basis
        other = set(self._word_tokens(content, fields))
        weights = dict(weights)
        missing = [w for w in other if w not in weights]
        if missing:
            weights.update(self._weights(missing))
        return weighted_jaccard(words, other, weights)

    def similar_to_text(
        self, text: str, *, exclude_id: str | None = None, only_greater_than: str | None = None,
        dataset: str | None = None, fields: dict | None = None,
    ) -> list[tuple[str, float]]:
        """(id, similarity) of every indexed document with similarity >= threshold, best first.
        ``dataset`` restricts the candidates to that data set (similarity joins); ``fields`` are the record's
        columns, needed with per-field weights."""
        tokens, bound, basis = self._query(text, fields)
        if not tokens:
            return []
        field = self.token_field
        prefix = self._prefix(tokens, bound)
        # Long texts with a prefix skip the overlap bound over every token: parsing and weighing thousands of
        # clauses costs Solr as much per call as the old method, and their rare prefix tokens bring few
        # candidates, each verified exactly below (the only test the results depend on). Short texts (records)
        # share common tokens with many documents; the bound, as an uncached post filter, is scored only for
        # what the prefix found. Plain Jaccard keeps a size filter instead: J >= t needs |B| >= |A & B| >= t * |A|.
        with_overlap = prefix is None or len(tokens) <= OVERLAP_FILTER_MAX_TOKENS
        # exclude_id: not worth sending back, its own content is often the longest candidate.
        found = reaching_overlap(self.client, field, tokens, bound, prefix=prefix, with_overlap=with_overlap,
                                 min_size=int(bound) if self.similarity == "jaccard" else None, dataset=dataset,
                                 except_id=exclude_id, page_size=self.page_size)
        low_key = id_sort_key(only_greater_than) if only_greater_than is not None else None
        candidates = []
        for doc in found:
            doc_id = doc["id"]
            if doc_id in (exclude_id, SETTINGS_DOC_ID):
                continue
            if low_key is not None and id_sort_key(doc_id) <= low_key:
                continue
            candidates.append(doc)
        results = []
        for doc, sim in zip(candidates, self._verify_all(basis, candidates)):
            if sim >= self.threshold - 1e-12:
                results.append((doc["id"], sim))
        # Best first, ties by id: the order of the pairs file is the same whatever order the shards answered in.
        results.sort(key=lambda r: (-r[1], id_sort_key(r[0])))
        return results


# How threshold_pairs finds the pairs: "queries" = one bounded Solr query per document; "client" = the texts
# read once and an all-pairs prefix join in the client (plain Jaccard); "auto" = "client" where it applies.
STRATEGIES = ("auto", "client", "queries")
# Documents shingled at once while the client join reads the collection.
_READ_BATCH = 2000


def threshold_pairs(
    finder: ThresholdFinder, *, workers: int = 1, progress: bool = False, dataset: str | None = None,
    out: str | Path | None = None, resume: bool = False, strategy: str = "auto",
) -> list[SimilarPair]:
    """All pairs of the collection (or of one data set) with similarity >= threshold, each pair once.

    ``strategy`` (see ``STRATEGIES``): with plain Jaccard, ``"auto"`` reads every text once and joins them in
    the client (:mod:`neardup_solr.pairs.allpairs`, no query per document); ``"queries"`` sends one bounded query per
    document (what IDF similarity always does). Both return the same pairs with the same similarities.

    With ``out`` the pairs are also written there (complete or not at all), and ``resume=True`` continues a run
    that stopped with :class:`~neardup_solr.errors.RunStopped`; see :func:`neardup_solr.engine.report.report_near_dups`.
    """
    strategy = check_choice("strategy", strategy, STRATEGIES)
    if strategy == "client" and finder.similarity != "jaccard":
        raise InvalidParameterError("strategy", "'auto' or 'queries' with similarity='idf'", strategy,
                                    "the client join compares plain shingle sets")
    if finder.similarity == "jaccard" and strategy != "queries":
        return _client_threshold_pairs(finder, progress=progress, dataset=dataset, out=out, resume=resume)
    with ResumableOutput(out, job="threshold report", resume=resume) as output:
        docs = [d for d in iter_documents(finder.searcher, dataset=dataset) if d.num_shingles]
        docs.sort(key=lambda d: id_sort_key(d.id))
        params = {**_finder_params(finder), "dataset": dataset,
                  "documents": digest_of((d.id, d.md5_hash, d.dataset, d.fields) for d in docs)}
        pairs = [SimilarPair(*r) for r in output.begin(params, total=len(docs))]
        todo = docs[output.done:]

        def lookup(doc: StoredDocument):
            return finder.similar_to_text(doc.content, exclude_id=doc.id, only_greater_than=doc.id,
                                          dataset=dataset, fields=doc.fields)

        found_lists = ordered_map(lookup, todo, workers, progress=progress, label=f"threshold {finder.threshold}",
                                  total=len(docs), done=output.done)
        for doc, found in zip(todo, found_lists):
            _add_unit(output, pairs, doc.id, found)
        output.commit(pair_lines(pairs))
    return pairs


def _client_threshold_pairs(finder: ThresholdFinder, *, progress: bool, dataset: str | None,
                            out: str | Path | None, resume: bool) -> list[SimilarPair]:
    """threshold_pairs by one read of the collection and an all-pairs join in the client (plain Jaccard)."""
    from neardup_solr.pairs.allpairs import AllPairsStats, concat_token_sets, prefix_join, token_sets

    shingler = finder.searcher.builder.shingler
    with ResumableOutput(out, job="threshold report", resume=resume) as output:
        # Only what the resume digest needs is kept per document; texts are dropped once hashed.
        meta: list[tuple[str, str, str | None, dict | None]] = []
        parts = []
        batch: list[StoredDocument] = []
        total = collection_of(finder.client).count() if progress else None
        bar = progress_bar(progress, desc="reading texts", total=total)

        def flush() -> None:
            parts.append(token_sets(shingler, [d.content for d in batch]))
            meta.extend((d.id, d.md5_hash, d.dataset, d.fields) for d in batch)
            batch.clear()

        seen = 0
        for seen, doc in enumerate(iter_documents(finder.searcher), start=1):
            if doc.num_shingles and (dataset is None or doc.dataset == dataset):
                batch.append(doc)
                if len(batch) >= _READ_BATCH:
                    flush()
            if seen % 1000 == 0:
                bar.update(1000)  # every document read counts, those of other data sets too
        if batch:
            flush()
        bar.update(seen % 1000)
        bar.close()
        sets = concat_token_sets(parts)
        del parts
        keys = [id_sort_key(m[0]) for m in meta]
        order = sorted(range(len(meta)), key=keys.__getitem__)
        params = {**_finder_params(finder), "dataset": dataset,
                  "documents": digest_of(meta[i] for i in order)}
        pairs = [SimilarPair(*r) for r in output.begin(params, total=len(meta))]
        todo = order[output.done:]
        found: dict[int, list[tuple[str, float]]] = {}
        if todo:
            stats = AllPairsStats()
            bars: dict[str, Any] = {}
            counted: dict[str, int] = {}

            def on_progress(stage: str, done: int, total: int) -> None:
                if stage not in bars:
                    for other in bars.values():
                        other.close()
                    bars[stage] = progress_bar(progress, desc=f"all-pairs {stage}", total=total, unit=" pairs")
                bars[stage].update(done - counted.get(stage, 0))
                counted[stage] = done

            x, y, sim = prefix_join(sets, finder.threshold, stats=stats, on_progress=on_progress)
            for b in bars.values():
                b.close()
            log.info("client join: %d documents, %d candidates verified, %d pairs (%s s)", stats.documents,
                     stats.candidates, stats.pairs, stats.seconds)
            for i, j, s in zip(x.tolist(), y.tolist(), sim.tolist()):
                if keys[i] == keys[j]:
                    continue  # ids the id order cannot tell apart: the per-document method pairs neither way
                low, high = (i, j) if keys[i] < keys[j] else (j, i)
                found.setdefault(low, []).append((meta[high][0], s))
        for i in todo:
            results = found.get(i, [])
            results.sort(key=lambda r: (-r[1], id_sort_key(r[0])))
            _add_unit(output, pairs, meta[i][0], results)
        output.commit(pair_lines(pairs))
    return pairs


def join_pairs(
    finder: ThresholdFinder,
    records: Iterable[Record] | Iterable[tuple[str, str]],
    indexed_dataset: str | None = None,
    *,
    workers: int = 1,
    progress: bool = False,
    one_to_one: bool = False,
    out: str | Path | None = None,
    resume: bool = False,
) -> list[SimilarPair]:
    """Similarity join: every streamed record against the indexed data set (``indexed_dataset``, or the whole
    collection). Pairs are (streamed id, indexed id); records of the same side are never paired.

    ``one_to_one`` keeps each id in at most one pair (see :func:`one_to_one`). With ``out`` the pairs are also
    written there, and ``resume=True`` continues a stopped join after the records it had done.
    """
    items = [record_item(r) for r in records]
    with ResumableOutput(out, job="join", resume=resume, unit="records") as output:
        params = {**_finder_params(finder), "indexed_dataset": indexed_dataset, "one_to_one": one_to_one,
                  "indexed_documents": collection_of(finder.client).count(),
                  "records": digest_of(items)}
        pairs = [SimilarPair(*r) for r in output.begin(params, total=len(items))]
        todo = items[output.done:]
        ahead = {"until": 0}
        lock = threading.Lock()

        def lookup(numbered):
            position, item = numbered
            # Document frequencies for the records ahead, read in bulk by whichever worker gets there first.
            with lock:
                if position >= ahead["until"]:
                    ahead["until"] = position + finder.prefetch_frequencies((t, f) for _, t, f in todo[position:])
            try:
                return finder.similar_to_text(item[1], dataset=indexed_dataset, fields=item[2])
            except ValueError as exc:  # a streamed text without words: nothing can match it
                log.warning("join: record %r skipped: %s", item[0], exc)
                return []

        found_lists = ordered_map(lookup, list(enumerate(todo)), workers, progress=progress, label="join",
                                  total=len(items),
                                  done=output.done)
        for (rid, _, _), found in zip(todo, found_lists):
            _add_unit(output, pairs, rid, found)
        if one_to_one:
            pairs = _greedy_one_to_one(pairs)
        output.commit(pair_lines(pairs))
    return pairs


def _finder_params(finder: ThresholdFinder) -> dict:
    """What decides a threshold search's result, for checking that a resumed run is the stopped one."""
    params = {"threshold": finder.threshold, "similarity": finder.similarity, "field_weights": finder.field_weights,
              "index": asdict(finder.searcher.settings)}
    if finder.idf_tokens != "words":  # only then: output files of runs before idf_tokens existed still resume
        params["idf_tokens"] = finder.idf_tokens
    return params


def _add_unit(output: ResumableOutput, pairs: list[SimilarPair], unit_id: str, found) -> None:
    new = [SimilarPair(unit_id, other, sim) for other, sim in found]
    output.add(unit_id, [[p.id, p.neighbor_id, p.similarity] for p in new])
    pairs.extend(new)


# join_pairs takes a flag of the same name.
_greedy_one_to_one = one_to_one
