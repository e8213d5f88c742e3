"""The near-duplicate report of a whole collection (or an id range): one lookup per document, every pair
reported once (the neighbour's id is greater than the source's), written as TSV.

Output format::

    # id<TAB>neighbor_id<TAB>edit_distance<TAB>score
    3<TAB>536<TAB>1<TAB>6.0
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from .documents import META_DATASET, SETTINGS_DOC_ID
from .searcher import NearDuplicate, Searcher, StoredDocument, id_sort_key

log = logging.getLogger(__name__)

GroupCallback = Callable[[StoredDocument, list[NearDuplicate]], None]
REPORT_HEADER = "# id\tneighbor_id\tedit_distance\tscore\n"


@dataclass
class ReportSummary:
    documents: int = 0
    pairs: int = 0
    seconds: float = 0.0
    out_path: str | None = None

    def format(self) -> str:
        return (f"{self.pairs} pairs from {self.documents} documents in {self.seconds:.1f} s"
                + (f" -> {self.out_path}" if self.out_path else ""))


def iter_documents(searcher: Searcher, page_size: int = 1000) -> Iterator[StoredDocument]:
    """Every indexed document, in id order, with a cursor (no deep paging cost)."""
    cursor = "*"
    while True:
        data = searcher.client.select([
            ("q", "*:*"),
            ("fq", "-{!term f=dataset v=$nd.meta}"),
            ("nd.meta", META_DATASET),
            ("sort", "id asc"),
            ("rows", page_size),
            ("cursorMark", cursor),
            ("fl", "id,content,md5_hash,num_words,first_word,num_shingles,dataset,fields_json"),
        ])
        for doc in data["response"]["docs"]:
            if doc["id"] != SETTINGS_DOC_ID:
                yield StoredDocument.from_solr(doc)
        next_cursor = data.get("nextCursorMark", cursor)
        if next_cursor == cursor:
            return
        cursor = next_cursor


def select_range(docs: Iterator[StoredDocument], start_id: str | int | None, end_id: str | int | None):
    """Documents with start_id <= id <= end_id (numeric-aware), sorted by that order."""
    lo = id_sort_key(str(start_id)) if start_id is not None else None
    hi = id_sort_key(str(end_id)) if end_id is not None else None
    chosen = [d for d in docs if (lo is None or id_sort_key(d.id) >= lo) and (hi is None or id_sort_key(d.id) <= hi)]
    chosen.sort(key=lambda d: id_sort_key(d.id))
    return chosen


def report_near_dups(
    searcher: Searcher,
    out: str | Path | None,
    start_id: str | int | None = None,
    end_id: str | int | None = None,
    max_distance: int | None = 2,
    mode: str = "shingles",
    *,
    rows: int = 10,
    first_word_filter: bool = True,
    num_hashes: int | None = None,
    min_jaccard: float | None = None,
    workers: int = 1,
    progress: bool = False,
    on_group: GroupCallback | None = None,
) -> tuple[ReportSummary, list[tuple[str, str, int, float]]]:
    """Look up every document with id in [start_id, end_id] and write its near duplicates with greater ids.

    Returns the summary and the pairs (id, neighbor_id, edit_distance, score). ``workers`` > 1 sends that many
    lookups at a time; the output is identical to a single worker's (results are collected in id order).
    """
    started = time.monotonic()
    documents = select_range(iter_documents(searcher), start_id, end_id)
    summary = ReportSummary(documents=len(documents), out_path=str(out) if out else None)
    pairs: list[tuple[str, str, int, float]] = []

    def lookup(doc: StoredDocument) -> list[NearDuplicate]:
        if doc.num_shingles == 0:
            return []
        query = searcher.prepare(doc.content, doc.id)
        return searcher.search(
            query, mode=mode, max_distance=max_distance, rows=rows, first_word_filter=first_word_filter,
            num_hashes=num_hashes, min_jaccard=min_jaccard, only_greater_ids=True,
        )

    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(documents), desc=f"report ({mode})", unit=" docs", dynamic_ncols=True)
    fh = open(out, "w", encoding="utf-8") if out else None
    try:
        if fh:
            fh.write(REPORT_HEADER)
        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            for doc, matches in zip(documents, pool.map(lookup, documents)):
                if bar:
                    bar.update(1)
                if not matches:
                    continue
                for m in matches:
                    pairs.append((doc.id, m.id, m.edit_distance, m.score))
                    if fh:
                        fh.write(f"{doc.id}\t{m.id}\t{m.edit_distance}\t{m.score:g}\n")
                if on_group:
                    on_group(doc, matches)
    finally:
        if fh:
            fh.close()
        if bar:
            bar.close()
    summary.pairs = len(pairs)
    summary.seconds = time.monotonic() - started
    return summary, pairs
