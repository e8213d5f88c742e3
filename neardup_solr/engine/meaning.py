"""Near duplicates by meaning: the cosine of the encoder's unit vectors (:mod:`neardup_solr.signing.encoder`).

A collection indexed with an encoder holds each text's vector in ``vector_<dimension>``. Lookups and reports at a
cosine threshold find their candidates in Solr and verify every one on the client, by the exact cosine of the
stored vectors (float64 products of the stored values), so the answer never rests on the HNSW graph's scores:

- a lookup (:func:`similar_by_meaning`) walks the graph from the text's vector through every node close to the
  threshold (Solr's ``vectorSimilarity`` parser): every document it reaches at or above the threshold, verified;
- a report (:func:`cosine_pairs`) with method ``exact`` reads every vector once and compares them all, in blocks
  of matrix products (every pair, no index: right up to some hundreds of thousands of documents on one machine);
  with method ``knn`` it runs the lookup from every document, in parallel, each pair kept once, whichever side
  found it (the graph is approximate: a pair one side misses, the other may find).

What the cosine finds, and what it does not, is in docs/meaning.md: texts that say the same in other words or
another language, and also templates and boilerplate that share a shape more than a content.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Iterator

import numpy as np

from neardup_solr.errors import DocumentNotFoundError
from neardup_solr.io.progress import progress_bar
from neardup_solr.pairs.similar_pairs import SimilarPair, id_sort_key
from neardup_solr.signing.encoder import has_vector, vector_field
from neardup_solr.signing.settings import IndexSettings
from neardup_solr.solr.candidates import close_in_meaning
from neardup_solr.solr.collection import Selection, collection_of
from neardup_solr.solr.searcher import Searcher

log = logging.getLogger(__name__)

# Candidates are asked for a little below the threshold: Solr's similarity is a float32 product, the check here a
# float64 one, and a pair right at the threshold must not fall between the two.
_FLOAT32_SLACK = 1e-4
# Every vector compared with this many others at once at most (the block of products, float32).
_BLOCK_CELLS = 16_000_000
# Pairs a report by meaning holds at most before it stops: an encoder that finds most of a corpus alike at the
# threshold (averaged static embeddings of long texts, templates) would otherwise fill the memory with pairs.
MAX_PAIRS = 20_000_000
_PAGE = 1000


def vectors_field(settings: IndexSettings) -> str:
    """The collection's vector field; a clear refusal when it was indexed without an encoder."""
    if settings.vector_dimension is None:
        raise ValueError("this collection holds no vectors of meaning (it was indexed without an encoder): index it "
                         "with --encoder wordllama (IndexSettings(encoder=...) in Python) to look up by "
                         "--similarity cosine")
    return vector_field(settings.vector_dimension)


def _as_vector(value: object) -> np.ndarray | None:
    if not isinstance(value, list) or not value:
        return None
    vector = np.asarray(value, dtype=np.float64)
    return vector if has_vector(vector) else None


def text_vector(searcher: Searcher, text: str) -> np.ndarray | None:
    """The encoder's unit vector of ``text`` (None: the encoder finds nothing in it)."""
    vectors_field(searcher.settings)
    assert searcher.builder.encoder is not None
    vector = searcher.builder.encoder.encode([text])[0].astype(np.float64)
    return vector if has_vector(vector) else None


def stored_vector(searcher: Searcher, doc_id: str) -> np.ndarray | None:
    """The vector stored with ``doc_id`` (None: it has none, its text had nothing to encode). Raises
    :class:`~neardup_solr.errors.DocumentNotFoundError` when there is no such document."""
    field = vectors_field(searcher.settings)
    found = collection_of(searcher.client).by_ids([doc_id], f"id,{field}")
    if not found:
        raise DocumentNotFoundError(f"no document with id {doc_id!r} in {searcher.client.url}")
    return _as_vector(found[0].get(field))


def similar_by_meaning(searcher: Searcher, threshold: float, *, text: str | None = None,
                       doc_id: str | None = None, exclude_id: str | None = None,
                       dataset: str | None = None) -> list[tuple[str, float]]:
    """``(id, cosine)`` of every indexed document (of ``dataset``) whose vector's cosine with that of ``text`` (or
    with the stored vector of ``doc_id``, which is left out) reaches ``threshold``, best first; ``exclude_id``
    leaves that document out too."""
    if (text is None) == (doc_id is None):
        raise ValueError("give a text or the id of a stored document, one of them")
    vector = stored_vector(searcher, doc_id) if doc_id is not None else text_vector(searcher, text or "")
    if vector is None:
        return []
    found = _neighbours_of(searcher, vector, threshold, dataset, except_id=doc_id or exclude_id)
    found.sort(key=lambda pair: (-pair[1], id_sort_key(pair[0])))
    return found


def stored_vectors(searcher: Searcher, dataset: str | None = None,
                   progress: bool = False) -> tuple[list[str], np.ndarray]:
    """The ids and unit vectors (float32 rows) of every document (of ``dataset``) that has one, in id order."""
    field = vectors_field(searcher.settings)
    coll = collection_of(searcher.client)
    selection = Selection(dataset=dataset)
    ids: list[str] = []
    rows: list[np.ndarray] = []
    bar = progress_bar(progress, desc="reading vectors", total=coll.count(selection))
    try:
        for page in coll.pages(selection, f"id,{field}", _PAGE):
            for doc in page:
                vector = _as_vector(doc.get(field))
                if vector is not None:
                    ids.append(str(doc["id"]))
                    rows.append(vector.astype(np.float32))
            bar.update(len(page))
    finally:
        bar.close()
    dimension = searcher.settings.vector_dimension or 0
    return ids, (np.vstack(rows) if rows else np.zeros((0, dimension), dtype=np.float32))


def _too_many(threshold: float) -> ValueError:
    return ValueError(f"more than {MAX_PAIRS:,} pairs reach cosine {threshold:g}: the encoder finds most of this "
                      "collection alike at that threshold (long texts averaged into one vector, templates, one "
                      "subject). Raise --threshold (docs/meaning.md shows how cosines spread)")


def _exact_pairs(ids: list[str], matrix: np.ndarray, threshold: float) -> Iterator[SimilarPair]:
    """Every pair of rows whose cosine reaches ``threshold``, by blocks of float32 products; each pair's cosine is
    then computed again in float64, which decides."""
    n = len(ids)
    block = max(1, _BLOCK_CELLS // max(1, n))
    found = 0
    for start in range(0, n, block):
        stop = min(n, start + block)
        products = matrix[start:stop] @ matrix[start:].T  # each row against itself and every later row
        rows, cols = np.nonzero(products >= threshold - _FLOAT32_SLACK)
        later = cols > rows  # column c is row start + c: only the pairs of a row with a later one
        rows, cols = rows[later], cols[later]
        found += len(rows)
        if found > MAX_PAIRS:
            raise _too_many(threshold)
        for r, c in zip(rows.tolist(), cols.tolist()):
            i, j = start + r, start + c
            cosine = float(np.dot(matrix[i].astype(np.float64), matrix[j].astype(np.float64)))
            if cosine >= threshold:
                yield SimilarPair(ids[i], ids[j], cosine)


def _knn_pairs(searcher: Searcher, ids: list[str], matrix: np.ndarray, threshold: float, dataset: str | None,
               workers: int, progress: bool) -> Iterator[SimilarPair]:
    field = vectors_field(searcher.settings)
    row_of = {doc_id: row for row, doc_id in enumerate(ids)}
    bar = progress_bar(progress, desc="lookups by meaning", total=len(ids))

    def neighbours(row: int) -> list[tuple[int, int]]:
        found = []
        for doc in close_in_meaning(searcher.client, field, matrix[row].astype(np.float64).tolist(),
                                    max(-1.0, threshold - _FLOAT32_SLACK), dataset=dataset, except_id=ids[row],
                                    fields="id"):
            other = row_of.get(str(doc["id"]))
            if other is not None:
                found.append((min(row, other), max(row, other)))
        return found

    seen: set[tuple[int, int]] = set()
    try:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for found in pool.map(neighbours, range(len(ids))):
                seen.update(found)
                if len(seen) > MAX_PAIRS:
                    raise _too_many(threshold)
                bar.update(1)
    finally:
        bar.close()
    for i, j in sorted(seen):
        cosine = float(np.dot(matrix[i].astype(np.float64), matrix[j].astype(np.float64)))
        if cosine >= threshold:
            yield SimilarPair(ids[i], ids[j], cosine)


def cosine_join(searcher: Searcher, records: list[tuple[str, str]], threshold: float, *,
                indexed_dataset: str | None = None, workers: int = 2, progress: bool = False) -> list[SimilarPair]:
    """Every pair (streamed record, indexed document of ``indexed_dataset``) whose vectors' cosine reaches
    ``threshold``: each record's text encoded here, its neighbours found in Solr and verified. Pairs are
    (record id, indexed id), best first."""
    vectors_field(searcher.settings)
    assert searcher.builder.encoder is not None
    encoder = searcher.builder.encoder
    bar = progress_bar(progress, desc="joining by meaning", total=len(records), unit=" records")

    def join_batch(batch: list[tuple[str, str]]) -> list[SimilarPair]:
        found = []
        for (record_id, _), row in zip(batch, encoder.encode([text for _, text in batch])):
            vector = row.astype(np.float64)
            if not has_vector(vector):
                continue
            found += [SimilarPair(record_id, other, cosine)
                      for other, cosine in _neighbours_of(searcher, vector, threshold, indexed_dataset)]
        return found

    pairs: list[SimilarPair] = []
    try:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            batches = [records[start:start + 64] for start in range(0, len(records), 64)]
            for batch, found in zip(batches, pool.map(join_batch, batches)):
                pairs += found
                bar.update(len(batch))
    finally:
        bar.close()
    pairs.sort(key=lambda p: (-p.similarity, id_sort_key(p.id), id_sort_key(p.neighbor_id)))
    return pairs


def _neighbours_of(searcher: Searcher, vector: np.ndarray, threshold: float, dataset: str | None,
                   except_id: str | None = None) -> list[tuple[str, float]]:
    """``(id, cosine)`` of the documents the graph walk finds near ``vector``, verified on their stored vectors."""
    field = vectors_field(searcher.settings)
    found = []
    for doc in close_in_meaning(searcher.client, field, vector.tolist(), max(-1.0, threshold - _FLOAT32_SLACK),
                                dataset=dataset, except_id=except_id, fields=f"id,{field}"):
        other = _as_vector(doc.get(field))
        if other is not None:
            cosine = float(np.dot(vector, other))
            if cosine >= threshold:
                found.append((str(doc["id"]), cosine))
    return found


def cosine_pairs(searcher: Searcher, threshold: float, *, method: str = "exact", dataset: str | None = None,
                 workers: int = 2, progress: bool = False) -> list[SimilarPair]:
    """Every pair of documents (of ``dataset``) whose vectors' cosine reaches ``threshold``, each once (the id
    that sorts first on the left), best first. ``method``: ``exact`` (every vector against every other, on the
    client) or ``knn`` (a graph lookup from each document in Solr, ``workers`` at a time)."""
    ids, matrix = stored_vectors(searcher, dataset, progress)
    if method == "exact":
        pairs = list(_exact_pairs(ids, matrix, threshold))
    elif method == "knn":
        pairs = list(_knn_pairs(searcher, ids, matrix, threshold, dataset, workers, progress))
    else:
        raise ValueError(f"cosine pairs are found by method 'exact' or 'knn', not {method!r}")
    pairs = [p if id_sort_key(p.id) <= id_sort_key(p.neighbor_id) else SimilarPair(p.neighbor_id, p.id, p.similarity)
             for p in pairs]
    pairs.sort(key=lambda p: (-p.similarity, id_sort_key(p.id), id_sort_key(p.neighbor_id)))
    log.info("cosine pairs at %g (%s): %d among %d documents with vectors", threshold, method, len(pairs), len(ids))
    return pairs


__all__ = ["similar_by_meaning", "cosine_pairs", "cosine_join", "stored_vectors", "text_vector", "stored_vector",
           "vectors_field"]
