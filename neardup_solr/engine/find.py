"""One way in to every pair-finding engine: the options say what is asked, this module picks the engine.

The command line (``report --threshold``, ``join``), the service's report jobs and Python callers all come
here, so the same options give the same pairs whichever door they came through:

=============  ==========  =====================================================================
similarity     method      engine
=============  ==========  =====================================================================
jaccard        exact       :func:`~neardup_solr.engine.threshold.threshold_pairs` (all-pairs in the client)
idf            exact       :func:`~neardup_solr.engine.threshold.threshold_pairs` (prefix-filtered queries)
jaccard        lsh         :func:`~neardup_solr.engine.collection.dedupe_collection`
idf            lsh         :func:`~neardup_solr.engine.weighted_lsh.idf_lsh_pairs`
cosine         exact       :func:`~neardup_solr.engine.meaning.cosine_pairs` (every vector against every other)
cosine         knn         :func:`~neardup_solr.engine.meaning.cosine_pairs` (a graph walk from each document)
cosine         hybrid      :func:`~neardup_solr.engine.meaning.cosine_pairs` (the walks, and the LSH band buckets)
=============  ==========  =====================================================================

and for joins :func:`~neardup_solr.engine.threshold.join_pairs`, :func:`~neardup_solr.engine.lsh_join.lsh_join`
and :func:`~neardup_solr.engine.weighted_lsh.idf_lsh_join` in the same way. Every engine's answer comes back as
one :class:`PairsResult`, and a pairs file is always the one format of
:func:`~neardup_solr.pairs.similar_pairs.pair_lines`, written complete or not at all.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Union

from neardup_solr.errors import InvalidParameterError, ParameterTypeError
from neardup_solr.io.readers import Record, record_item
from neardup_solr.io.outputs import is_stdout
from neardup_solr.options import JoinOptions, LookupReportOptions, ReportOptions, SimilarityLookup, ThresholdOptions
from neardup_solr.pairs.similar_pairs import SimilarPair, one_to_one as greedy_one_to_one, write_pairs
from neardup_solr.solr.collection import SolrClient
from neardup_solr.signing.settings import META_DATASET
from neardup_solr.solr.searcher import Searcher
from neardup_solr.validation import check_label
from neardup_solr.engine.weighted_lsh import snapshot_path, idf_lsh_pairs, idf_lsh_join
from neardup_solr.engine.threshold import ThresholdFinder, threshold_pairs, join_pairs
from neardup_solr.engine.report import report_near_dups
from neardup_solr.engine.meaning import cosine_join, cosine_pairs, similar_by_meaning

log = logging.getLogger(__name__)

__all__ = ["PairsResult", "ReportResult", "find_pairs", "find_cross_pairs", "find_similar_documents", "run_report"]


@dataclass
class PairsResult:
    """The pairs an engine found (smaller id first for a collection, (streamed id, indexed id) for a join),
    what it did (``stats``: the engine's own counters, e.g. LSH candidates; empty for the exact method), how
    long it took, and the options it ran with."""

    pairs: list[SimilarPair]
    options: Union[ThresholdOptions, JoinOptions]
    engine: str
    seconds: float = 0.0
    stats: dict[str, Any] = field(default_factory=dict)
    snapshot: Path | None = None  # similarity idf with method lsh: where the IDF snapshot of the run went

    def __iter__(self) -> Iterator[SimilarPair]:
        return iter(self.pairs)

    def __len__(self) -> int:
        return len(self.pairs)


def _searcher(client_or_searcher: SolrClient | Searcher) -> Searcher:
    if isinstance(client_or_searcher, Searcher):
        return client_or_searcher
    if isinstance(client_or_searcher, SolrClient):
        return Searcher(client_or_searcher)
    raise ParameterTypeError("client", "a SolrClient or a Searcher", client_or_searcher)


def _write_batch(pairs: list[SimilarPair], out: str | Path | None, snapshot: Any = None) -> Path | None:
    """The pairs file of a batch engine (method lsh), written complete or not at all, and beside it the IDF
    snapshot the run signed with (similarity idf); where the snapshot went. Batch engines return their pairs
    and this writes them; the engines that resume (method exact, lookup reports) write their own file through
    :class:`~neardup_solr.io.outputs.ResumableOutput`, which alone knows what a stopped run has done."""
    if out is None:
        return None
    write_pairs(pairs, out)
    if snapshot is None or is_stdout(out):
        return None

    path = snapshot_path(out)
    snapshot.save(path)
    return path


def _check_options(options: Any, cls: type) -> None:
    if not isinstance(options, cls):
        raise ParameterTypeError("options", f"a {cls.__name__}", options)


def _finder(searcher: Searcher, options: ThresholdOptions | JoinOptions):
    return ThresholdFinder(searcher, threshold=options.threshold, similarity=options.similarity,
                           field_weights=dict(options.field_weights) if options.field_weights else None,
                           idf_tokens=options.tokens)


def find_similar_documents(client: SolrClient | Searcher, lookup: SimilarityLookup, text: str, *,
                           exclude_id: str | None = None) -> list[tuple[str, float]]:
    """``(id, similarity)`` of every indexed document at or above ``lookup.threshold`` by ``lookup.similarity``
    to ``text`` (``exclude_id``, the stored document it came from, left out), best first: the threshold lookup
    of every front door (near-dups --threshold, /v1/near-dups with threshold, the page)."""
    if not isinstance(lookup, SimilarityLookup):
        raise ParameterTypeError("lookup", "a SimilarityLookup", lookup)
    searcher = _searcher(client)
    if lookup.similarity == "cosine":
        return similar_by_meaning(searcher, lookup.threshold, text=text, exclude_id=exclude_id,
                                  method=lookup.method_in_force)
    finder = ThresholdFinder(searcher, threshold=lookup.threshold, similarity=lookup.similarity)
    return finder.similar_to_text(text, exclude_id=exclude_id)


def find_pairs(
    client: SolrClient | Searcher,
    options: ThresholdOptions,
    *,
    out: str | Path | None = None,
    resume: bool = False,
    progress: bool = False,
    work_dir: str | Path | None = None,
    snapshot: Any = None,
) -> PairsResult:
    """Every pair of the collection (or of ``options.dataset``) at or above ``options.threshold``.

    With ``out`` the pairs file is written there (complete or not at all); ``resume`` continues a method-exact
    run that stopped (see :func:`~neardup_solr.engine.report.report_near_dups`). ``work_dir`` holds method
    lsh's signature store (default: the system's temporary directory). ``snapshot``: an
    :class:`~neardup_solr.engine.weighted_lsh.IdfSnapshot` to sign with (similarity idf, method lsh).

    >>> result = find_pairs(SolrClient(), ThresholdOptions(threshold=0.8, method="lsh"))
    >>> len(result), result.stats["candidate_pairs"]
    (1204, 13395)
    """
    _check_options(options, ThresholdOptions)
    options.check_run(resume=resume, snapshot=snapshot is not None)
    check_label("dataset", options.dataset, reserved=(META_DATASET,))
    searcher = _searcher(client)
    started = time.monotonic()
    if options.similarity == "cosine":
        pairs = cosine_pairs(searcher, options.threshold, method=options.method, dataset=options.dataset,
                             workers=max(2, options.lookups_in_flight), progress=progress)
        _write_batch(pairs, out)
        return PairsResult(pairs, options, f"cosine_pairs ({options.method})", time.monotonic() - started)
    if options.method == "lsh" and options.similarity == "idf":
        weighted = idf_lsh_pairs(_finder(searcher, options), dataset=options.dataset, snapshot=snapshot,
                                 split_bucket=options.split_bucket)
        return PairsResult(weighted.pairs, options, "idf_lsh_pairs", time.monotonic() - started,
                           asdict(weighted.stats), _write_batch(weighted.pairs, out, weighted.snapshot))
    if options.method == "lsh":
        from neardup_solr.engine.collection import dedupe_collection

        collection = dedupe_collection(searcher.client, options.threshold, dataset=options.dataset,
                                       progress=progress, split_bucket=options.split_bucket,
                                       work_dir=str(work_dir) if work_dir is not None else None)
        _write_batch(collection.pairs, out)
        return PairsResult(collection.pairs, options, "dedupe_collection", time.monotonic() - started,
                           {**asdict(collection.stats), "refinement": collection.stats.refinement()})

    pairs = threshold_pairs(_finder(searcher, options), workers=options.lookups_in_flight, progress=progress,
                            dataset=options.dataset, out=out, resume=resume)
    return PairsResult(pairs, options, "threshold_pairs", time.monotonic() - started)


def find_cross_pairs(
    client: SolrClient | Searcher,
    records: Iterable[Record] | Iterable[tuple[str, str]],
    options: JoinOptions,
    *,
    out: str | Path | None = None,
    resume: bool = False,
    progress: bool = False,
    snapshot: Any = None,
) -> PairsResult:
    """Every pair (streamed record, indexed record of ``options.indexed_dataset``) at or above
    ``options.threshold``; ``records`` are :class:`~neardup_solr.io.readers.Record` or ``(id, text)`` pairs.
    ``out``, ``resume``, ``progress`` and ``snapshot`` as for :func:`find_pairs`."""
    _check_options(options, JoinOptions)
    options.check_run(resume=resume, snapshot=snapshot is not None)
    searcher = _searcher(client)
    started = time.monotonic()
    if options.similarity == "cosine":
        items = [record_item(r)[:2] for r in records]
        # A join by meaning always looks each record up in the graph (there is no all-against-all of a stream):
        # 'hybrid' adds the bands, 'exact' and 'knn' are that lookup.
        pairs = cosine_join(searcher, items, options.threshold, indexed_dataset=options.indexed_dataset,
                            workers=options.lookups_in_flight, progress=progress,
                            method="hybrid" if options.method == "hybrid" else "knn")
        if options.one_to_one:
            pairs = greedy_one_to_one(pairs)
        _write_batch(pairs, out)
        return PairsResult(pairs, options, "cosine_join", time.monotonic() - started)
    if options.method == "lsh" and options.similarity == "jaccard":
        from neardup_solr.engine.lsh_join import lsh_join

        pairs, summary = lsh_join(searcher, records, options.threshold, options.indexed_dataset,
                                  bloom=options.bloom, fp_rate=options.fp_rate, workers=options.lookups_in_flight,
                                  progress=progress, one_to_one=options.one_to_one)
        _write_batch(pairs, out)
        return PairsResult(pairs, options, "lsh_join", time.monotonic() - started, asdict(summary))
    if options.method == "lsh":
        weighted = idf_lsh_join(_finder(searcher, options), records, indexed_dataset=options.indexed_dataset,
                                one_to_one=options.one_to_one, snapshot=snapshot,
                                split_bucket=options.split_bucket)
        return PairsResult(weighted.pairs, options, "idf_lsh_join", time.monotonic() - started,
                           asdict(weighted.stats), _write_batch(weighted.pairs, out, weighted.snapshot))

    pairs = join_pairs(_finder(searcher, options), records, indexed_dataset=options.indexed_dataset,
                       workers=options.lookups_in_flight, progress=progress, one_to_one=options.one_to_one,
                       out=out, resume=resume)
    return PairsResult(pairs, options, "join_pairs", time.monotonic() - started)


@dataclass
class ReportResult:
    """What a report did: how many ``pairs`` it found among how many ``documents`` (None when the engine does
    not count them), with which engine, in how long; the engine's ``stats`` and where the IDF snapshot went."""

    options: ReportOptions
    engine: str
    pairs: int
    documents: int | None
    seconds: float
    stats: dict[str, Any] = field(default_factory=dict)
    snapshot: Path | None = None


def run_report(
    client: SolrClient | Searcher,
    options: ReportOptions,
    out: str | Path | None = None,
    *,
    resume: bool = False,
    progress: bool = False,
    work_dir: str | Path | None = None,
    snapshot: Any = None,
    on_group: Any = None,
) -> ReportResult:
    """The report ``options`` ask for, written to ``out``: every pair at or above a threshold
    (:class:`~neardup_solr.options.ThresholdOptions`, through :func:`find_pairs`) or one lookup per document
    (:class:`~neardup_solr.options.LookupReportOptions`, through
    :func:`~neardup_solr.engine.report.report_near_dups`). The command line's ``report`` and the service's
    report jobs both come here. ``on_group(document, matches)`` sees each document of a lookup report that has
    near duplicates; ``snapshot`` and ``work_dir`` are for threshold reports (see :func:`find_pairs`)."""
    if isinstance(options, ThresholdOptions):
        if on_group is not None:
            raise InvalidParameterError("on_group", "None with threshold options (a threshold report has no "
                                                    "lookups to show)", on_group, show_value=False)
        result = find_pairs(client, options, out=out, resume=resume, progress=progress, work_dir=work_dir,
                            snapshot=snapshot)
        return ReportResult(options, result.engine, len(result), result.stats.get("documents"), result.seconds,
                            result.stats, result.snapshot)
    if not isinstance(options, LookupReportOptions):
        raise ParameterTypeError("options", "a ThresholdOptions or a LookupReportOptions", options)
    for name, value in (("snapshot", snapshot), ("work_dir", work_dir)):
        if value is not None:
            raise InvalidParameterError(name, "None with lookup-report options (a threshold report's)", value,
                                        show_value=False)

    summary, _ = report_near_dups(_searcher(client), out, options=options, progress=progress, on_group=on_group,
                                  resume=resume)
    return ReportResult(options, "report_near_dups", summary.pairs, summary.documents, summary.seconds)
