"""The options of each kind of request, with their defaults and their checks, in one place.

Three kinds of request find near duplicates, and every front door speaks of them with the same keys:

- :class:`LookupOptions`: the near duplicates of one document or text (``near-dups``, ``POST /v1/near-dups``,
  :meth:`Searcher.find_near_dups <neardup_solr.solr.searcher.Searcher.find_near_dups>`), and each lookup of a
  lookup-mode report;
- :class:`ThresholdOptions`: every pair of the collection at or above a similarity (``report --threshold``,
  ``POST /v1/reports`` with ``threshold``, :func:`neardup_solr.find_pairs`);
- :class:`JoinOptions`: every pair between a file of records and the indexed data set (``join``,
  :func:`neardup_solr.find_cross_pairs`).

The command line's flags are these keys with dashes (``max_edit_distance`` is ``--max-edit-distance``), the
service's JSON fields are these keys, and the Spark jobs take the same names. A default lives here only: the
front doors leave an option they were not given as ``None`` and let these classes fill it, so a default changed
here changes for all of them (``tests/test_options.py`` checks that no front door carries its own).

Pure: no Solr, no front door. The checks raise :class:`~neardup_solr.errors.InvalidParameterError` naming the
key; a front door renders it with its own name for the key (a flag, a JSON field).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, Literal, Mapping, Union

from neardup_solr.errors import InvalidParameterError
from neardup_solr.validation import Limit, check_bool, check_choice, check_float, check_int, check_label

__all__ = [
    "MODES", "SIMILARITIES", "METHODS", "IDF_TOKENS", "COLLECTION_THRESHOLD", "MinJaccard",
    "LookupOptions", "ThresholdOptions", "JoinOptions", "WRITEUP_LOOKUP", "DEFAULT_SPLIT_BUCKET",
    "DEFAULT_BLOOM_FP_RATE", "not_applicable", "option_names",
]

MODES = ("shingles", "minhash", "lsh")
SIMILARITIES = ("jaccard", "idf")
METHODS = ("exact", "lsh")
# The tokens similarity="idf" weighs: the words, or the words and their character 4-grams.
IDF_TOKENS = ("words", "grams")
#: ``min_jaccard``'s default for lookups: the collection's own threshold (its stored ``lsh_threshold``).
COLLECTION_THRESHOLD: Literal["collection"] = "collection"
MinJaccard = Union[float, Literal["collection"], None]
# Members above which an LSH band bucket is refined by further signature values
# (:mod:`neardup_solr.pairs.candidates`, "Oversized buckets").
DEFAULT_SPLIT_BUCKET = 10
# Share of the streamed records without any indexed band that join --method lsh's Bloom filter lets through.
DEFAULT_BLOOM_FP_RATE = 0.01


def not_applicable(keys: list[str], why: str) -> InvalidParameterError:
    """The error for options given where they do not apply: refused, never ignored, because a request that
    silently drops an option answers another question than the one asked."""
    return InvalidParameterError(keys[0], f"left out {why}", None, show_value=False)


@dataclass(frozen=True)
class LookupOptions:
    """One lookup. The defaults are the library's honest ones: every candidate at the collection's threshold,
    no edit-distance limit, no first-word filter, no row cap (:data:`WRITEUP_LOOKUP` is the write-up's ranking,
    which reports keep)."""

    mode: str = "shingles"
    max_edit_distance: int | None = None
    min_jaccard: MinJaccard = COLLECTION_THRESHOLD
    rows: int | None = None
    first_word_filter: bool = False
    num_hashes: int | None = None

    def __post_init__(self) -> None:
        check_choice("mode", self.mode, MODES)
        check_int("max_edit_distance", self.max_edit_distance, "max_edit_distance", none_ok=True)
        if self.min_jaccard != COLLECTION_THRESHOLD:
            check_float("min_jaccard", self.min_jaccard, "min_jaccard", none_ok=True)
        check_int("rows", self.rows, "rows", none_ok=True)
        check_bool("first_word_filter", self.first_word_filter)
        if self.num_hashes is not None:
            check_int("num_hashes", self.num_hashes, "num_hashes")
            if self.mode != "minhash":
                raise not_applicable(["num_hashes"], "outside mode minhash")

    @classmethod
    def from_given(cls, given: Mapping[str, Any], defaults: "LookupOptions | None" = None) -> "LookupOptions":
        """The options given (None: not given), the others from ``defaults`` (these class defaults)."""
        base = asdict(defaults if defaults is not None else cls())
        unknown = sorted(set(given) - set(base))
        if unknown:
            raise InvalidParameterError(unknown[0], f"one of {', '.join(base)}", None, show_value=False)
        base.update({k: v for k, v in given.items() if v is not None})
        return cls(**base)

    def searcher_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of :meth:`Searcher.find_near_dups` and :func:`report_near_dups`, whose Python
        name for the edit-distance limit is ``max_distance``."""
        return {"mode": self.mode, "max_distance": self.max_edit_distance, "min_jaccard": self.min_jaccard,
                "rows": self.rows, "first_word_filter": self.first_word_filter, "num_hashes": self.num_hashes}


#: The reference write-up's ranking: only candidates with the query's first word, the 10 best-scoring
#: candidates, word edit distance <= 2, no Jaccard filter. Lookup-mode reports use it by default (their pairs
#: file is the write-up's report), in every mode.
WRITEUP_LOOKUP = LookupOptions(max_edit_distance=2, min_jaccard=None, rows=10, first_word_filter=True)


def _check_weights(weights: Mapping[str, float] | None) -> None:
    if weights is None:
        return
    if not isinstance(weights, Mapping) or not weights:
        raise InvalidParameterError("field_weights", "a non-empty mapping of column to weight", weights)
    for column, weight in weights.items():
        if not isinstance(column, str) or not column:
            raise InvalidParameterError("field_weights", "column names as non-empty strings", column)
        check_float(f"field_weights[{column}]", weight, Limit("float", 0.0, 1e6))


@dataclass(frozen=True)
class _PairOptions:
    """What the collection report and the join share: the similarity, how candidates are found, IDF's tokens."""

    threshold: float = 0.8
    similarity: str = "jaccard"
    method: str = "exact"
    field_weights: Mapping[str, float] | None = None
    idf_tokens: str | None = None  # None: "words" with similarity idf
    workers: int | None = None  # None: the method's own default
    split_bucket: int | None = DEFAULT_SPLIT_BUCKET

    def _check_common(self) -> None:
        check_float("threshold", self.threshold, "threshold")
        check_choice("similarity", self.similarity, SIMILARITIES)
        check_choice("method", self.method, METHODS)
        _check_weights(self.field_weights)
        check_choice("idf_tokens", self.idf_tokens, IDF_TOKENS, none_ok=True)
        if self.similarity != "idf":
            given = [k for k in ("field_weights", "idf_tokens") if getattr(self, k) is not None]
            if given:
                raise not_applicable(given, "with similarity 'jaccard' (they weigh the words of similarity 'idf')")
        if self.idf_tokens == "grams" and self.field_weights is not None:
            raise not_applicable(["field_weights"], "with idf_tokens 'grams', which weighs the whole text")
        if self.workers is not None:
            check_int("workers", self.workers, "workers")
        if self.split_bucket is not None:
            check_int("split_bucket", self.split_bucket, minimum=2)

    @property
    def tokens(self) -> str:
        """The tokens similarity 'idf' weighs (``idf_tokens``, words unless told)."""
        return self.idf_tokens or "words"


@dataclass(frozen=True)
class ThresholdOptions(_PairOptions):
    """Every pair of the collection (or of one ``dataset``) whose similarity reaches ``threshold``.

    ``method`` 'exact' finds every pair (prefix-filtered queries, or the texts joined in the client);
    'lsh' finds the pairs LSH bands make candidates, each verified exactly (fast on large collections).
    ``workers``: lookups in flight with method exact (default 1; a batch job with lsh, which takes none).
    ``split_bucket``: method lsh refines band buckets of more members than this (``None``: never)."""

    dataset: str | None = None

    def __post_init__(self) -> None:
        self._check_common()
        check_label("dataset", self.dataset)
        if self.method == "lsh" and self.workers is not None:
            raise not_applicable(["workers"], "with method 'lsh', a single batch job over exported signatures")

    @property
    def lookups_in_flight(self) -> int:
        return self.workers if self.workers is not None else 1


@dataclass(frozen=True)
class JoinOptions(_PairOptions):
    """Every pair (streamed record, indexed record of ``indexed_dataset``) whose similarity reaches
    ``threshold``. ``one_to_one`` keeps each id in at most one pair, best first. With method 'lsh' and plain
    Jaccard a Bloom filter of the indexed band keys skips hopeless records (``bloom``, ``bloom_fp_rate``)."""

    indexed_dataset: str | None = None
    one_to_one: bool = False
    bloom: bool = True
    bloom_fp_rate: float | None = None  # None: DEFAULT_BLOOM_FP_RATE

    def __post_init__(self) -> None:
        self._check_common()
        check_label("indexed_dataset", self.indexed_dataset)
        check_bool("one_to_one", self.one_to_one)
        check_bool("bloom", self.bloom)
        if self.bloom_fp_rate is not None:
            check_float("bloom_fp_rate", self.bloom_fp_rate, Limit("float", 0.0, 1.0, open_min=True, open_max=True))
        if (self.bloom_fp_rate is not None or not self.bloom) and (self.method, self.similarity) != ("lsh", "jaccard"):
            raise not_applicable(["bloom_fp_rate" if self.bloom_fp_rate is not None else "bloom"],
                                 "outside method 'lsh' with similarity 'jaccard' (the Bloom filter of band keys)")
        if self.method == "lsh" and self.similarity == "idf" and self.workers is not None:
            raise not_applicable(["workers"], "with similarity 'idf' and method 'lsh', a single batch job")

    @property
    def lookups_in_flight(self) -> int:
        return self.workers if self.workers is not None else 2

    @property
    def fp_rate(self) -> float:
        return self.bloom_fp_rate if self.bloom_fp_rate is not None else DEFAULT_BLOOM_FP_RATE


def option_names(cls: type) -> list[str]:
    """The public keys of an options class, in order (what the front doors must offer)."""
    return [f.name for f in fields(cls) if f.init and not f.name.startswith("_")]
