"""neardup-solr: find near-duplicate documents with shingles, MinHash and LSH on Apache Solr.

    >>> from neardup_solr import SolrClient, Indexer, Searcher
    >>> client = SolrClient()                      # $SOLR_URL, else the local launcher's core
    >>> Indexer(client).index_file("addresses.txt")
    >>> Searcher(client).find_near_dups_by_shingles("3", max_distance=2)
"""

from .documents import IndexSettings
from .errors import (
    InvalidRecordError,
    InvalidTextError,
    LauncherError,
    NeardupError,
    SolrAuthError,
    SolrCoreNotFoundError,
    SolrRequestError,
    SolrUnavailableError,
)
from .evaluate import evaluate, evaluate_files, read_pairs
from .groups import group_pairs, keep_list, write_groups_jsonl
from .indexer import Indexer, IndexingInterrupted, IndexSummary
from .lsh import LSHParams, collision_probability, optimal_params
from .report import report_near_dups
from .searcher import NearDuplicate, Searcher, StoredDocument
from .settings import SOLR_VERSION
from .solr_client import SolrClient
from .backends.local import LocalSolr
from .text import MinHash, Shingler, estimate_jaccard, jaccard, normalize
from .threshold import ThresholdFinder, join_pairs, one_to_one, threshold_pairs

__version__ = "0.1.0"

__all__ = [
    "IndexSettings", "InvalidRecordError", "InvalidTextError", "LauncherError", "NeardupError", "SolrAuthError",
    "SolrCoreNotFoundError", "SolrRequestError", "SolrUnavailableError",
    "evaluate", "evaluate_files", "read_pairs", "group_pairs",
    "keep_list", "write_groups_jsonl", "Indexer", "IndexingInterrupted", "IndexSummary", "LSHParams",
    "collision_probability", "optimal_params", "report_near_dups", "NearDuplicate", "Searcher", "StoredDocument",
    "SOLR_VERSION", "SolrClient", "LocalSolr", "MinHash", "Shingler", "estimate_jaccard", "jaccard", "normalize",
    "ThresholdFinder", "join_pairs", "one_to_one", "threshold_pairs",
]
