"""neardup-solr: find near-duplicate documents with shingles, MinHash and LSH on Apache Solr.

    >>> from neardup_solr import SolrClient, Indexer, Searcher
    >>> client = SolrClient()                      # $SOLR_URL, else the local launcher's core
    >>> Indexer(client).index_file("addresses.txt")
    >>> Searcher(client).find_near_dups_by_shingles("3", max_distance=2)
"""

import logging

from .documents import IndexSettings, SettingsRepair, read_index_settings, repair_index_settings
from .errors import (
    ClientClosedError,
    DocumentNotFoundError,
    ForeignCollectionError,
    InvalidParameterError,
    InvalidRecordError,
    InvalidTextError,
    LauncherError,
    NeardupError,
    ParameterTypeError,
    SettingsConflictError,
    SignatureMismatchError,
    SolrAuthError,
    SolrCoreNotFoundError,
    SolrRequestError,
    SolrServerError,
    SolrTimeoutError,
    SolrUnavailableError,
    StoredSettingsError,
)
from .evaluate import evaluate, evaluate_files, read_pairs
from .groups import group_pairs, keep_list, write_groups_jsonl
from .indexer import Indexer, IndexIncomplete, IndexingInterrupted, IndexSummary, Rejection
from .lsh import LSHParams, collision_probability, optimal_params
from .report import report_near_dups
from .outputs import OutputInUseError, RunStopped
from .inputs import InputFormatError
from .neardup_index import NearDupIndex
from .searcher import COLLECTION_THRESHOLD, WRITEUP_RANKING, NearDuplicate, Searcher, StoredDocument
from .settings import SOLR_VERSION
from .solr_client import SolrClient
from .backends.local import LocalSolr
from .text import MinHash, Shingler, Signature, estimate_jaccard, jaccard, normalize
from .text.weighted import BoostedMinHash, WeightedMinHash, WeightedSignature, estimate_weighted_jaccard
from .threshold import ThresholdFinder, join_pairs, one_to_one, threshold_pairs
from .weighted_lsh import IdfSnapshot, idf_lsh_join, idf_lsh_pairs

__version__ = "0.1.0"

# A library stays silent unless the application configures logging: without this handler Python's last-resort
# handler printed our warnings (Solr retries, rejected records) to stderr. The CLI configures logging itself.
logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "WeightedMinHash", "BoostedMinHash", "WeightedSignature", "estimate_weighted_jaccard", "IdfSnapshot",
    "idf_lsh_pairs", "idf_lsh_join",
    "IndexSettings", "SettingsRepair", "read_index_settings", "repair_index_settings",
    "ClientClosedError", "DocumentNotFoundError", "ForeignCollectionError", "IndexIncomplete", "InvalidParameterError",
    "InvalidRecordError", "InvalidTextError", "LauncherError", "NeardupError", "OutputInUseError",
    "ParameterTypeError", "Rejection", "RunStopped", "SettingsConflictError", "SignatureMismatchError",
    "SolrAuthError", "SolrCoreNotFoundError", "SolrRequestError", "SolrServerError", "SolrTimeoutError",
    "SolrUnavailableError", "StoredSettingsError", "Signature",
    "InputFormatError",
    "evaluate", "evaluate_files", "read_pairs", "group_pairs",
    "keep_list", "write_groups_jsonl", "Indexer", "IndexingInterrupted", "IndexSummary", "LSHParams",
    "collision_probability", "optimal_params", "report_near_dups", "NearDupIndex", "NearDuplicate", "Searcher", "COLLECTION_THRESHOLD", "WRITEUP_RANKING", "StoredDocument",
    "SOLR_VERSION", "SolrClient", "LocalSolr", "MinHash", "Shingler", "estimate_jaccard", "jaccard", "normalize",
    "ThresholdFinder", "join_pairs", "one_to_one", "threshold_pairs",
]
