"""neardup-solr: find near-duplicate documents with shingles, MinHash and LSH on Apache Solr.

    >>> from neardup_solr import SolrClient, Indexer, Searcher
    >>> client = SolrClient()                      # $SOLR_URL, else the local launcher's core
    >>> Indexer(client).index_file("addresses.txt")
    >>> Searcher(client).find_near_dups_by_shingles("3", max_edit_distance=2)
"""

import logging

from neardup_solr.signing.settings import IndexSettings
from neardup_solr.solr.settings_store import SettingsRepair, read_index_settings, repair_index_settings
from neardup_solr.errors import (
    BandLocksBusyError,
    OUTCOMES,
    ClientClosedError,
    CollectionSetupError,
    DocumentExistsError,
    DocumentNotFoundError,
    EncoderError,
    ForeignCollectionError,
    GroupFieldsError,
    GroupWritebackIncomplete,
    IndexIncomplete,
    IndexingInterrupted,
    InputFormatError,
    InstallRefused,
    InvalidParameterError,
    InvalidRecordError,
    InvalidTextError,
    KeyNotFoundError,
    LauncherError,
    NeardupError,
    OptionError,
    Outcome,
    OutputInUseError,
    ParameterTypeError,
    ReplicationShortfallError,
    RunStopped,
    SettingsConflictError,
    SignatureDisagreementError,
    SignatureMismatchError,
    SolrAuthError,
    SolrCoreNotFoundError,
    SolrRequestError,
    SolrServerError,
    SolrTimeoutError,
    SolrUnavailableError,
    SparkMemoryError,
    SparkUnavailableError,
    PinnedUnicodeError,
    RecordModelError,
    StoredSettingsError,
    UsageError,
    outcome_of,
)
from neardup_solr.pairs.evaluate import evaluate, evaluate_files, read_pairs
from neardup_solr.pairs.groups import group_pairs, keep_list, write_groups_jsonl
from neardup_solr.solr.indexer import Indexer, IndexSummary, Rejection
from neardup_solr.pairs.lsh import LSHParams, collision_probability, optimal_params
from neardup_solr.engine.report import report_near_dups
from neardup_solr.neardup_index import NearDupIndex
from neardup_solr.solr.searcher import COLLECTION_THRESHOLD, WRITEUP_RANKING, NearDuplicate, Searcher, StoredDocument
from neardup_solr.solr.settings import SOLR_VERSION
from neardup_solr.solr.client import SolrClient
from neardup_solr.solr.companion import install, open_collection, uninstall
from neardup_solr.solr.backends.base import Backend, StartResult
from neardup_solr.solr.backends.local import LocalSolr
from neardup_solr.text import MinHash, Shingler, Signature, estimate_jaccard, jaccard, normalize
from neardup_solr.text.weighted import BoostedMinHash, WeightedMinHash, WeightedSignature, estimate_weighted_jaccard
from neardup_solr.engine.threshold import ThresholdFinder, join_pairs, threshold_pairs
from neardup_solr.pairs.similar_pairs import one_to_one
from neardup_solr.engine.weighted_lsh import IdfSnapshot, idf_lsh_join, idf_lsh_pairs

from neardup_solr.options import WRITEUP_LOOKUP, JoinOptions, LookupOptions, LookupReportOptions, ThresholdOptions
from neardup_solr.engine.find import PairsResult, ReportResult, find_cross_pairs, find_pairs, run_report
from neardup_solr.engine.dedupe import DedupeOptions, DedupeSummary, dedupe_file
from neardup_solr.version import __version__


# A library stays silent unless the application configures logging: without this handler Python's last-resort
# handler printed our warnings (Solr retries, rejected records) to stderr. The CLI configures logging itself.
logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "WeightedMinHash", "BoostedMinHash", "WeightedSignature", "estimate_weighted_jaccard", "IdfSnapshot",
    "idf_lsh_pairs", "idf_lsh_join",
    "IndexSettings", "SettingsRepair", "read_index_settings", "repair_index_settings",
    "ClientClosedError", "DocumentNotFoundError", "EncoderError", "ForeignCollectionError", "IndexIncomplete", "InvalidParameterError",
    "InvalidRecordError", "InvalidTextError", "LauncherError", "NeardupError", "OutputInUseError",
    "ParameterTypeError", "Rejection", "RunStopped", "SettingsConflictError", "SignatureMismatchError",
    "SolrAuthError", "SolrCoreNotFoundError", "SolrRequestError", "SolrServerError", "SolrTimeoutError",
    "SolrUnavailableError", "StoredSettingsError", "Signature", "BandLocksBusyError",
    "InputFormatError", "KeyNotFoundError",
    "evaluate", "evaluate_files", "read_pairs", "group_pairs",
    "keep_list", "write_groups_jsonl", "Indexer", "IndexingInterrupted", "IndexSummary", "LSHParams",
    "collision_probability", "optimal_params", "report_near_dups", "NearDupIndex", "NearDuplicate", "Searcher", "COLLECTION_THRESHOLD", "WRITEUP_RANKING", "StoredDocument",
    "SOLR_VERSION", "SolrClient", "LocalSolr", "MinHash", "Shingler", "estimate_jaccard", "jaccard", "normalize",
    "ThresholdFinder", "join_pairs", "one_to_one", "threshold_pairs",
    "CollectionSetupError", "DocumentExistsError", "OptionError", "SignatureDisagreementError",
    "SparkUnavailableError", "SparkMemoryError", "PinnedUnicodeError", "UsageError", "ReplicationShortfallError", "Outcome", "OUTCOMES", "outcome_of", "Backend", "StartResult",
    "LookupOptions", "LookupReportOptions", "WRITEUP_LOOKUP", "ThresholdOptions", "JoinOptions", "find_pairs",
    "find_cross_pairs", "PairsResult", "run_report", "ReportResult",
    "GroupFieldsError", "GroupWritebackIncomplete", "dedupe_file", "DedupeOptions", "DedupeSummary", "RecordModelError",
    "open_collection", "install", "uninstall", "InstallRefused",
]
