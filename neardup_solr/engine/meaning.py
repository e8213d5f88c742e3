"""Near duplicates by meaning: the cosine of the encoder's unit vectors (:mod:`neardup_solr.signing.encoder`).

A collection indexed with an encoder holds each text's vector in ``vector_<dimension>``. Lookups and reports at a
cosine threshold find their candidates in Solr and verify every one on the client, by the exact cosine of the
stored vectors (float64 products of the stored values), so the answer never rests on the HNSW graph's scores:

- a lookup (:func:`similar_by_meaning`) walks the graph from the text's vector through every node close to the
  threshold (Solr's ``vectorSimilarity`` parser): every document it reaches at or above the threshold, verified;
- a report (:func:`cosine_pairs`) with method ``exact`` reads every vector once and compares them all, in blocks
  of matrix products (every pair, no index: right up to some hundreds of thousands of documents on one machine);
  with method ``knn`` it runs the lookup from every document, in parallel, each pair kept once, whichever side
  found it (the graph is approximate: a pair one side misses, the other may find);
- method ``hybrid`` (lookups, reports and joins) adds to the graph's candidates the documents sharing an LSH band
  with the text (the band tokens the collection holds in ``content_lsh``): the walk can miss a close pair, and a
  lexical copy, which shares bands, is then still found. A report reads every document's band tokens with its
  vector and compares the members of each band bucket among themselves on the client, as method ``exact`` does
  for the whole collection.

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
from neardup_solr.solr.candidates import close_in_meaning, sharing_a_band
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
# Where a lookup by meaning finds its candidates (a report may also compare every vector: "exact").
LOOKUP_METHODS = ("knn", "hybrid")
_BANDS = "content_lsh"


def vectors_field(settings: IndexSettings) -> str:
    """The collection's vector field; a clear refusal when it was indexed without an encoder."""
    if settings.vector_dimension is None:
        raise ValueError("this collection holds no vectors of meaning (it was indexed without an encoder): index it "
                         "with --encoder wordllama (IndexSettings(encoder=...) in Python) to look up by "
                         "--similarity cosine")
    return vector_field(settings.vector_dimension)


def require_bands(settings: IndexSettings) -> None:
    """Method hybrid's refusal on a collection indexed without LSH band tokens, naming what to re-index with."""
    if "lsh" not in settings.fields:
        raise ValueError("method 'hybrid' adds the documents sharing an LSH band to the graph's candidates, and this "
                         f"collection was indexed without band tokens ({_BANDS}; its token fields: "
                         f"{', '.join(settings.fields) or 'none'}): re-index it with --fields including lsh "
                         "(IndexSettings(fields=(..., 'lsh')) in Python), or use method 'knn'")


def _check_lookup_method(method: str) -> None:
    if method not in LOOKUP_METHODS:
        raise ValueError(f"a lookup by meaning finds its candidates by method 'knn' or 'hybrid', not {method!r}")


def text_band_tokens(searcher: Searcher, text: str) -> list[str]:
    """The LSH band tokens of ``text`` by the collection's settings (none for a text without shingles: an empty
    signature would share its bands with every other empty one)."""
    query = searcher.prepare(text)
    return searcher.query_tokens(query, "lsh") if query.hash_set.size else []


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


def _stored(searcher: Searcher, doc_id: str, fields: str) -> dict:
    found = collection_of(searcher.client).by_ids([doc_id], fields)
    if not found:
        raise DocumentNotFoundError(f"no document with id {doc_id!r} in {searcher.client.url}")
    return found[0]


def stored_vector(searcher: Searcher, doc_id: str) -> np.ndarray | None:
    """The vector stored with ``doc_id`` (None: it has none, its text had nothing to encode). Raises
    :class:`~neardup_solr.errors.DocumentNotFoundError` when there is no such document."""
    field = vectors_field(searcher.settings)
    return _as_vector(_stored(searcher, doc_id, f"id,{field}").get(field))


def similar_by_meaning(searcher: Searcher, threshold: float, *, text: str | None = None,
                       doc_id: str | None = None, exclude_id: str | None = None,
                       dataset: str | None = None, method: str = "knn") -> list[tuple[str, float]]:
    """``(id, cosine)`` of every indexed document (of ``dataset``) whose vector's cosine with that of ``text`` (or
    with the stored vector of ``doc_id``, which is left out) reaches ``threshold``, best first; ``exclude_id``
    leaves that document out too. ``method``: ``knn`` (the candidates the graph walk reaches) or ``hybrid``
    (those and the documents sharing an LSH band with the text), every one verified by the exact cosine."""
    if (text is None) == (doc_id is None):
        raise ValueError("give a text or the id of a stored document, one of them")
    _check_lookup_method(method)
    field = vectors_field(searcher.settings)
    hybrid = method == "hybrid"
    if hybrid:
        require_bands(searcher.settings)
    tokens: list[str] = []
    if doc_id is not None:
        stored = _stored(searcher, doc_id, f"id,{field}" + (f",{_BANDS}" if hybrid else ""))
        vector = _as_vector(stored.get(field))
        tokens = list(stored.get(_BANDS) or ())
    else:
        vector = text_vector(searcher, text or "")
        if vector is not None and hybrid:
            tokens = text_band_tokens(searcher, text or "")
    if vector is None:
        return []
    except_id = doc_id or exclude_id
    found = dict(_neighbours_of(searcher, vector, threshold, dataset, except_id=except_id))
    if tokens:
        found.update(_band_neighbours_of(searcher, vector, tokens, threshold, dataset, except_id=except_id))
    return sorted(found.items(), key=lambda pair: (-pair[1], id_sort_key(pair[0])))


def stored_vectors(searcher: Searcher, dataset: str | None = None,
                   progress: bool = False) -> tuple[list[str], np.ndarray]:
    """The ids and unit vectors (float32 rows) of every document (of ``dataset``) that has one, in id order."""
    ids, matrix, _ = _read_vectors(searcher, dataset, progress, with_bands=False)
    return ids, matrix


def _read_vectors(searcher: Searcher, dataset: str | None, progress: bool,
                  with_bands: bool) -> tuple[list[str], np.ndarray, list[list[str]]]:
    """:func:`stored_vectors`, and with ``with_bands`` each row's LSH band tokens, read in the same pass."""
    field = vectors_field(searcher.settings)
    coll = collection_of(searcher.client)
    selection = Selection(dataset=dataset)
    ids: list[str] = []
    rows: list[np.ndarray] = []
    bands: list[list[str]] = []
    bar = progress_bar(progress, desc="reading vectors", total=coll.count(selection))
    try:
        for page in coll.pages(selection, f"id,{field}" + (f",{_BANDS}" if with_bands else ""), _PAGE):
            for doc in page:
                vector = _as_vector(doc.get(field))
                if vector is not None:
                    ids.append(str(doc["id"]))
                    rows.append(vector.astype(np.float32))
                    if with_bands:
                        bands.append(list(doc.get(_BANDS) or ()))
            bar.update(len(page))
    finally:
        bar.close()
    dimension = searcher.settings.vector_dimension or 0
    return ids, (np.vstack(rows) if rows else np.zeros((0, dimension), dtype=np.float32)), bands


def _too_many(threshold: float) -> ValueError:
    return ValueError(f"more than {MAX_PAIRS:,} pairs reach cosine {threshold:g}: the encoder finds most of this "
                      "collection alike at that threshold (long texts averaged into one vector, templates, one "
                      "subject). Raise --threshold (docs/meaning.md shows how cosines spread)")


def _cosine(matrix: np.ndarray, i: int, j: int) -> float:
    """The exact cosine of two rows, in float64: what decides every pair by meaning, whichever method found it."""
    return float(np.dot(matrix[i].astype(np.float64), matrix[j].astype(np.float64)))


def _close_rows(matrix: np.ndarray, threshold: float) -> Iterator[tuple[int, int, float]]:
    """``(i, j, cosine)`` of every pair of rows (i < j) whose cosine reaches ``threshold``, by blocks of float32
    products; each pair's cosine is then computed again in float64, which decides."""
    n = len(matrix)
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
            cosine = _cosine(matrix, i, j)
            if cosine >= threshold:
                yield i, j, cosine


def _exact_pairs(ids: list[str], matrix: np.ndarray, threshold: float) -> Iterator[SimilarPair]:
    for i, j, cosine in _close_rows(matrix, threshold):
        yield SimilarPair(ids[i], ids[j], cosine)


def _band_pairs(matrix: np.ndarray, bands: list[list[str]], threshold: float) -> dict[tuple[int, int], float]:
    """The pairs of rows sharing an LSH band whose cosine reaches ``threshold``: each band bucket's members
    compared among themselves as :func:`_close_rows` compares a whole collection. Near copies share most of
    their bands, so a bucket of the same members is compared once."""
    buckets: dict[str, list[int]] = {}
    for row, tokens in enumerate(bands):
        for token in tokens:
            buckets.setdefault(token, []).append(row)
    found: dict[tuple[int, int], float] = {}
    candidates = 0
    for members in {tuple(rows) for rows in buckets.values() if len(rows) > 1}:  # rows ascend: i < j below
        candidates += len(members) * (len(members) - 1) // 2
        for r, c, cosine in _close_rows(matrix[list(members)], threshold):
            found[(members[r], members[c])] = cosine
        if len(found) > MAX_PAIRS:
            raise _too_many(threshold)
    log.info("band buckets: %d candidate pairs (with repeats), %d at or above cosine %g", candidates, len(found),
             threshold)
    return found


def _knn_pairs(searcher: Searcher, ids: list[str], matrix: np.ndarray, threshold: float, dataset: str | None,
               workers: int, progress: bool) -> Iterator[SimilarPair]:
    for (i, j), cosine in _knn_rows(searcher, ids, matrix, threshold, dataset, workers, progress).items():
        yield SimilarPair(ids[i], ids[j], cosine)


def _hybrid_pairs(searcher: Searcher, ids: list[str], matrix: np.ndarray, bands: list[list[str]], threshold: float,
                  dataset: str | None, workers: int, progress: bool) -> Iterator[SimilarPair]:
    found = _knn_rows(searcher, ids, matrix, threshold, dataset, workers, progress)
    by_graph = len(found)
    found.update(_band_pairs(matrix, bands, threshold))
    log.info("hybrid: %d pairs by the graph walk, %d more by the LSH bands alone", by_graph, len(found) - by_graph)
    if len(found) > MAX_PAIRS:
        raise _too_many(threshold)
    for (i, j), cosine in found.items():
        yield SimilarPair(ids[i], ids[j], cosine)


def _knn_rows(searcher: Searcher, ids: list[str], matrix: np.ndarray, threshold: float, dataset: str | None,
              workers: int, progress: bool) -> dict[tuple[int, int], float]:
    """The pairs of rows (i < j) the graph walk from either side reaches, verified: ``{(i, j): cosine}``."""
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
    verified = {}
    for i, j in sorted(seen):
        cosine = _cosine(matrix, i, j)
        if cosine >= threshold:
            verified[(i, j)] = cosine
    return verified


def cosine_join(searcher: Searcher, records: list[tuple[str, str]], threshold: float, *,
                indexed_dataset: str | None = None, workers: int = 2, progress: bool = False,
                method: str = "knn") -> list[SimilarPair]:
    """Every pair (streamed record, indexed document of ``indexed_dataset``) whose vectors' cosine reaches
    ``threshold``: each record's text encoded here, its neighbours found in Solr (``method`` as for
    :func:`similar_by_meaning`) and verified. Pairs are (record id, indexed id), best first."""
    vectors_field(searcher.settings)
    _check_lookup_method(method)
    if method == "hybrid":
        require_bands(searcher.settings)
    assert searcher.builder.encoder is not None
    encoder = searcher.builder.encoder
    bar = progress_bar(progress, desc="joining by meaning", total=len(records), unit=" records")

    def join_batch(batch: list[tuple[str, str]]) -> list[SimilarPair]:
        found = []
        for (record_id, text), row in zip(batch, encoder.encode([text for _, text in batch])):
            vector = row.astype(np.float64)
            if not has_vector(vector):
                continue
            near = dict(_neighbours_of(searcher, vector, threshold, indexed_dataset))
            if method == "hybrid":
                near.update(_band_neighbours_of(searcher, vector, text_band_tokens(searcher, text), threshold,
                                                indexed_dataset))
            found += [SimilarPair(record_id, other, cosine) for other, cosine in near.items()]
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


def _band_neighbours_of(searcher: Searcher, vector: np.ndarray, tokens: list[str], threshold: float,
                        dataset: str | None, except_id: str | None = None) -> list[tuple[str, float]]:
    """``(id, cosine)`` of the documents sharing one of the band ``tokens``, verified on their stored vectors."""
    if not tokens:
        return []
    field = vectors_field(searcher.settings)
    found = []
    for doc in sharing_a_band(searcher.client, tokens, dataset=dataset, fields=f"id,{field}"):
        other = _as_vector(doc.get(field))
        if other is not None and str(doc["id"]) != except_id:
            cosine = float(np.dot(vector, other))
            if cosine >= threshold:
                found.append((str(doc["id"]), cosine))
    return found


def cosine_pairs(searcher: Searcher, threshold: float, *, method: str = "exact", dataset: str | None = None,
                 workers: int = 2, progress: bool = False) -> list[SimilarPair]:
    """Every pair of documents (of ``dataset``) whose vectors' cosine reaches ``threshold``, each once (the id
    that sorts first on the left), best first. ``method``: ``exact`` (every vector against every other, on the
    client), ``knn`` (a graph lookup from each document in Solr, ``workers`` at a time) or ``hybrid`` (those
    lookups, and every pair of documents sharing an LSH band compared on the client)."""
    if method not in ("exact", *LOOKUP_METHODS):
        raise ValueError(f"cosine pairs are found by method 'exact', 'knn' or 'hybrid', not {method!r}")
    vectors_field(searcher.settings)
    if method == "hybrid":
        require_bands(searcher.settings)
    ids, matrix, bands = _read_vectors(searcher, dataset, progress, with_bands=method == "hybrid")
    if method == "exact":
        pairs = list(_exact_pairs(ids, matrix, threshold))
    elif method == "knn":
        pairs = list(_knn_pairs(searcher, ids, matrix, threshold, dataset, workers, progress))
    else:
        pairs = list(_hybrid_pairs(searcher, ids, matrix, bands, threshold, dataset, workers, progress))
    pairs = [p if id_sort_key(p.id) <= id_sort_key(p.neighbor_id) else SimilarPair(p.neighbor_id, p.id, p.similarity)
             for p in pairs]
    pairs.sort(key=lambda p: (-p.similarity, id_sort_key(p.id), id_sort_key(p.neighbor_id)))
    log.info("cosine pairs at %g (%s): %d among %d documents with vectors", threshold, method, len(pairs), len(ids))
    return pairs


__all__ = ["similar_by_meaning", "cosine_pairs", "cosine_join", "stored_vectors", "text_vector", "stored_vector",
           "vectors_field", "require_bands", "text_band_tokens", "LOOKUP_METHODS"]
