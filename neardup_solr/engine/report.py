"""The near-duplicate report of a whole collection (or an id range): one lookup per document, every pair
reported once (the neighbour's id is greater than the source's), written as TSV.

Output format::

    # id<TAB>neighbor_id<TAB>edit_distance<TAB>score
    3<TAB>536<TAB>1<TAB>6.0

Documents are visited in id order, so a run that stops (Solr away for longer than the client waits) keeps the
documents it finished in ``<out>.partial`` and ``resume=True`` (``report --resume``) continues after them; the
file appears only when complete (:mod:`neardup_solr.io.outputs`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence, TypeVar

from neardup_solr.errors import ParameterTypeError
from neardup_solr.options import (
    NOT_GIVEN,
    WRITEUP_LOOKUP,
    LookupOptions,
    LookupReportOptions,
    MinJaccard,
    not_applicable,
)
from neardup_solr.signing.settings import SETTINGS_DOC_ID
from neardup_solr.io.outputs import ResumableOutput, digest_of
from neardup_solr.solr.collection import Selection, collection_of
from neardup_solr.solr.searcher import NearDuplicate, Searcher, StoredDocument
from neardup_solr.pairs.similar_pairs import id_sort_key
from neardup_solr.validation import tsv_id
from neardup_solr.version import written_by_line

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")

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


STORED_FIELDS = "id,content,md5_hash,num_words,first_word,num_shingles,dataset,fields_json"


def iter_documents(searcher: Searcher, page_size: int = 1000, *, dataset: str | None = None,
                   fields: str = STORED_FIELDS) -> Iterator[StoredDocument]:
    """Every indexed document (of ``dataset``, filtered by Solr), in id order, with a cursor (no deep paging
    cost). ``fields`` may name fewer of the stored fields; the others are left at their defaults."""
    # Signed documents only: one another client posted (to a collection of ours, or of the user's before sync saw
    # it) has no tokens to be found by, so it is left out of both sides of every pair, and counted.
    coll = collection_of(searcher.client)
    unsigned = coll.count(Selection(signed=False))
    if unsigned:
        log.warning("%d document(s) of %s have no signature yet and are left out (posted by another client: "
                    "'neardup-solr sync' signs them)", unsigned, coll.url)
    for page in coll.pages(Selection(dataset=dataset, signed=True), fields, page_size):
        for doc in page:
            if doc["id"] != SETTINGS_DOC_ID:
                yield StoredDocument.from_solr(doc)


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
    start_id: str | int | None = NOT_GIVEN,
    end_id: str | int | None = NOT_GIVEN,
    max_distance: int | None = NOT_GIVEN,
    mode: str = NOT_GIVEN,
    *,
    options: LookupReportOptions | None = None,
    max_edit_distance: int | None = NOT_GIVEN,
    rows: int | None = NOT_GIVEN,
    first_word_filter: bool = NOT_GIVEN,
    num_hashes: int | None = NOT_GIVEN,
    min_jaccard: MinJaccard = NOT_GIVEN,
    workers: int | None = NOT_GIVEN,
    progress: bool = False,
    on_group: GroupCallback | None = None,
    resume: bool = False,
) -> tuple[ReportSummary, list[tuple[str, str, int, float]]]:
    """Look up every document with id in [start_id, end_id] and write its near duplicates with greater ids.

    The report's options come as one :class:`~neardup_solr.options.LookupReportOptions` (``options=``) or as its
    keys one by one (not both); their defaults are the write-up's ranking, whose report this is
    (:data:`~neardup_solr.options.WRITEUP_LOOKUP`: first-word filter, 10 rows, ``max_edit_distance`` 2, no
    Jaccard filter). ``max_distance`` is ``max_edit_distance``'s older name, still accepted (deprecated).

    Returns the summary and the pairs (id, neighbor_id, edit_distance, score). ``workers`` > 1 sends that many
    lookups at a time; the output is identical to a single worker's (results are collected in id order).

    ``out`` appears only when the report is complete (see :mod:`neardup_solr.io.outputs`). If Solr stays away
    longer than the client's retry policy waits, :class:`~neardup_solr.io.outputs.RunStopped` is raised and
    ``<out>.partial`` keeps the documents done so far; ``resume=True`` with the same arguments continues after
    them, and the file (and the returned pairs) equal a clean run's. ``on_group`` sees only the documents
    looked up in this call.
    """
    report = _report_options(options, dict(
        start_id=start_id, end_id=end_id, max_distance=max_distance, mode=mode, max_edit_distance=max_edit_distance,
        rows=rows, first_word_filter=first_word_filter, num_hashes=num_hashes, min_jaccard=min_jaccard,
        workers=workers))
    lookup = report.lookup
    started = time.monotonic()
    with ResumableOutput(out, job="report", resume=resume) as output:
        documents = select_range(iter_documents(searcher), report.start_id, report.end_id)
        # The keys a run records in its progress file: a run resumes only with the same ones.
        params = {
            "mode": lookup.mode, "start_id": _optional_str(report.start_id), "end_id": _optional_str(report.end_id),
            "max_distance": lookup.max_edit_distance, "rows": lookup.rows,
            "first_word_filter": lookup.first_word_filter, "num_hashes": lookup.num_hashes,
            "min_jaccard": lookup.min_jaccard, "index": asdict(searcher.settings),
            "documents": digest_of((d.id, d.md5_hash, d.dataset) for d in documents),
        }
        pairs: list[tuple[str, str, int, float]] = [tuple(r) for r in output.begin(params, total=len(documents))]
        todo = documents[output.done:]

        def look_up(doc: StoredDocument) -> list[NearDuplicate]:
            if doc.num_shingles == 0:
                return []
            query = searcher.prepare(doc.content, doc.id)
            return searcher.search(query, options=lookup, only_greater_ids=True)

        results = ordered_map(look_up, todo, report.lookups_in_flight, progress=progress,
                              label=f"report ({lookup.mode})", total=len(documents), done=output.done)
        for doc, matches in zip(todo, results):
            found = [(doc.id, m.id, m.edit_distance, m.score) for m in matches]
            output.add(doc.id, [list(p) for p in found])
            pairs.extend(found)
            if matches and on_group:
                on_group(doc, matches)
        output.commit(report_lines(pairs))
    summary = ReportSummary(documents=len(documents), pairs=len(pairs), seconds=time.monotonic() - started,
                            out_path=str(out) if out else None)
    return summary, pairs


def _report_options(options: LookupReportOptions | None, keywords: dict) -> LookupReportOptions:
    """The report's options: ``options`` as they are, or the keywords given over the write-up's ranking."""
    if options is not None and not isinstance(options, LookupReportOptions):
        if not isinstance(options, LookupOptions):
            raise ParameterTypeError("options", "a LookupReportOptions", options)
        options = LookupReportOptions(**options.searcher_kwargs())  # a plain lookup: all documents, one worker
    scope = {k: keywords.pop(k) for k in ("start_id", "end_id", "workers")}
    lookup = LookupOptions.from_keywords(options.lookup if options is not None else None, keywords, WRITEUP_LOOKUP,
                                         stacklevel=4)
    given = {k: v for k, v in scope.items() if v is not NOT_GIVEN}
    if options is not None:
        if given:
            raise not_applicable(sorted(given), "when options is given (give the report's options one way)")
        return options
    return LookupReportOptions(**lookup.searcher_kwargs(), **given)


def report_lines(pairs: Iterable[tuple[str, str, int, float]]) -> Iterator[str]:
    """The report file: the header (column names, then the version that wrote it), then one line per pair."""
    yield REPORT_HEADER + written_by_line()
    for doc_id, neighbor_id, distance, score in pairs:
        yield f"{tsv_id(doc_id)}\t{tsv_id(neighbor_id)}\t{distance}\t{score:g}\n"


def ordered_map(fn: Callable[[T], R], items: Sequence[T], workers: int = 1, *, progress: bool = False,
                label: str = "", total: int | None = None, done: int = 0) -> Iterator[R]:
    """``fn`` over ``items`` on ``workers`` threads, results in the items' order.

    Only a few calls per worker are in flight (not the whole list, as ``Executor.map`` would submit): memory
    stays flat on a million documents, and a run that stops has little work in the air.
    """
    workers = max(1, workers)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(items) + done if total is None else total, initial=done, desc=label, unit=" docs",
                   dynamic_ncols=True)
    failed = threading.Event()

    def call(item: T) -> R:
        # Once a call has failed (Solr gone for longer than the client waits), the calls queued behind it must
        # not each wait out the same absence again before the run can stop.
        if failed.is_set():
            raise _Abandoned()
        try:
            return fn(item)
        except BaseException:
            failed.set()
            raise

    pending: deque[Future] = deque()
    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        for item in items:
            pending.append(pool.submit(call, item))
            if len(pending) >= 2 * workers:
                yield _next_result(pending, bar)
        while pending:
            yield _next_result(pending, bar)
    finally:
        # On a stop, calls not yet started are dropped rather than each waiting out Solr's absence in turn.
        pool.shutdown(wait=True, cancel_futures=True)
        if bar:
            bar.close()


class _Abandoned(Exception):
    """A call skipped because an earlier one failed; the caller sees that earlier failure first."""


def _next_result(pending: deque, bar):
    result = pending.popleft().result()
    if bar:
        bar.update(1)
    return result


def _optional_str(value) -> str | None:
    return None if value is None else str(value)
