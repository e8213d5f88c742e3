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
from neardup_solr.io.readers import Record
from neardup_solr.options import JoinOptions, ThresholdOptions
from neardup_solr.pairs.similar_pairs import SimilarPair, write_pairs
from neardup_solr.solr.client import SolrClient
from neardup_solr.signing.settings import META_DATASET
from neardup_solr.solr.searcher import Searcher
from neardup_solr.validation import check_label

log = logging.getLogger(__name__)

__all__ = ["PairsResult", "find_pairs", "find_cross_pairs"]


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


def _check_options(options: Any, cls: type) -> None:
    if not isinstance(options, cls):
        raise ParameterTypeError("options", f"a {cls.__name__}", options)


def _no_resume(options: ThresholdOptions | JoinOptions, resume: bool) -> None:
    if resume and options.method == "lsh":
        raise InvalidParameterError("resume", "False with method 'lsh'", resume,
                                    "an lsh run is one batch job that does not resume: run it again")


def _finder(searcher: Searcher, options: ThresholdOptions | JoinOptions):
    from neardup_solr.engine.threshold import ThresholdFinder

    return ThresholdFinder(searcher, threshold=options.threshold, similarity=options.similarity,
                           field_weights=dict(options.field_weights) if options.field_weights else None,
                           idf_tokens=options.tokens)


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
    _no_resume(options, resume)
    if snapshot is not None and (options.similarity, options.method) != ("idf", "lsh"):
        raise InvalidParameterError("snapshot", "None outside similarity 'idf' with method 'lsh'", snapshot,
                                    show_value=False)
    check_label("dataset", options.dataset, reserved=(META_DATASET,))
    searcher = _searcher(client)
    started = time.monotonic()
    if options.method == "lsh" and options.similarity == "idf":
        from neardup_solr.engine.weighted_lsh import idf_lsh_pairs, snapshot_path

        weighted = idf_lsh_pairs(_finder(searcher, options), dataset=options.dataset, out=out, snapshot=snapshot,
                                 split_bucket=options.split_bucket)
        return PairsResult(weighted.pairs, options, "idf_lsh_pairs", time.monotonic() - started,
                           asdict(weighted.stats), snapshot_path(out) if out is not None else None)
    if options.method == "lsh":
        from neardup_solr.engine.collection import dedupe_collection

        collection = dedupe_collection(searcher.client, options.threshold, dataset=options.dataset,
                                       progress=progress, split_bucket=options.split_bucket,
                                       work_dir=str(work_dir) if work_dir is not None else None)
        if out is not None:
            write_pairs(collection.pairs, out)
        return PairsResult(collection.pairs, options, "dedupe_collection", time.monotonic() - started,
                           {**asdict(collection.stats), "refinement": collection.stats.refinement()})
    from neardup_solr.engine.threshold import threshold_pairs

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
    _no_resume(options, resume)
    if snapshot is not None and (options.similarity, options.method) != ("idf", "lsh"):
        raise InvalidParameterError("snapshot", "None outside similarity 'idf' with method 'lsh'", snapshot,
                                    show_value=False)
    searcher = _searcher(client)
    started = time.monotonic()
    if options.method == "lsh" and options.similarity == "jaccard":
        from neardup_solr.engine.lsh_join import lsh_join

        pairs, summary = lsh_join(searcher, records, options.threshold, options.indexed_dataset,
                                  bloom=options.bloom, fp_rate=options.fp_rate, workers=options.lookups_in_flight,
                                  progress=progress, one_to_one=options.one_to_one)
        if out is not None:
            write_pairs(pairs, out)
        return PairsResult(pairs, options, "lsh_join", time.monotonic() - started, asdict(summary))
    if options.method == "lsh":
        from neardup_solr.engine.weighted_lsh import idf_lsh_join, snapshot_path

        weighted = idf_lsh_join(_finder(searcher, options), records, indexed_dataset=options.indexed_dataset,
                                one_to_one=options.one_to_one, out=out, snapshot=snapshot,
                                split_bucket=options.split_bucket)
        return PairsResult(weighted.pairs, options, "idf_lsh_join", time.monotonic() - started,
                           asdict(weighted.stats), snapshot_path(out) if out is not None else None)
    from neardup_solr.engine.threshold import join_pairs

    pairs = join_pairs(_finder(searcher, options), records, indexed_dataset=options.indexed_dataset,
                       workers=options.lookups_in_flight, progress=progress, one_to_one=options.one_to_one,
                       out=out, resume=resume)
    return PairsResult(pairs, options, "join_pairs", time.monotonic() - started)
