"""The options of each kind of request, with their defaults and their checks, in one place.

Three kinds of request find near duplicates, and every front door speaks of them with the same keys:

- :class:`LookupOptions`: the near duplicates of one document or text (``near-dups``, ``POST /v1/near-dups``,
  :meth:`Searcher.find_near_dups <neardup_solr.solr.searcher.Searcher.find_near_dups>`), and each lookup of a
  lookup-mode report, the reference write-up's (:class:`LookupReportOptions`: ``report --writeup-ranking``,
  ``POST /v1/reports`` with ``writeup_ranking``, :func:`~neardup_solr.engine.report.report_near_dups`); a lookup
  may instead ask for every document at a similarity (:class:`SimilarityLookup`) or holding a share of the
  shingles (:class:`ShareLookup`);
- :class:`ThresholdOptions`: every pair of the collection at or above a similarity (``report``, the collection's
  threshold unless ``--threshold`` gives one; ``POST /v1/reports``; :func:`neardup_solr.find_pairs`);
- :class:`JoinOptions`: every pair between a file of records and the indexed data set (``join``,
  :func:`neardup_solr.find_cross_pairs`).

The command line's flags are these keys with dashes (``max_edit_distance`` is ``--max-edit-distance``), the
service's JSON fields are these keys, and the Spark jobs take the same names. A default lives here only: the
front doors leave an option they were not given as ``None`` and let these classes fill it, so a default changed
here changes for all of them (``tests/unit/base/test_options.py`` checks that no front door carries its own). The same
goes for the rules between options (``num_hashes`` only in mode minhash, a method-lsh run does not resume, an
IDF snapshot only with similarity idf and method lsh): they are checked here and nowhere else.
:func:`lookup_from_given` and :func:`report_options_from_given` turn what a door was given into these objects,
and the engine takes them as they are (:func:`neardup_solr.engine.find.run_report`).

Pure: no Solr, no front door. The checks raise :class:`~neardup_solr.errors.InvalidParameterError` naming the
key; a front door renders it with its own name for the key (a flag, a JSON field).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, fields
from typing import Any, Literal, Mapping, Protocol, Union

from neardup_solr.errors import InvalidParameterError, OptionError, ParameterTypeError
from neardup_solr.validation import (
    Limit,
    check_bool,
    check_choice,
    check_float,
    check_id,
    check_int,
    check_label,
    id_problem,
)

__all__ = [
    "MODES", "SIMILARITIES", "METHODS", "GRAPH_METHODS", "IDF_TOKENS", "COLLECTION_THRESHOLD", "MinJaccard",
    "LookupOptions", "LookupReportOptions", "ThresholdOptions", "JoinOptions", "ReportOptions", "SimilarityLookup",
    "ShareLookup", "AnyLookup", "WRITEUP_LOOKUP", "DEFAULT_SPLIT_BUCKET", "DEFAULT_BLOOM_FP_RATE", "NOT_GIVEN",
    "not_applicable", "check_snapshot", "lookup_from_given", "report_options_from_given", "option_names",
    "options_given",
]

MODES = ("shingles", "minhash", "lsh")
SIMILARITIES = ("jaccard", "idf", "cosine")
METHODS = ("exact", "lsh", "knn", "hybrid")
# The methods that find the candidates of a pair by meaning in the HNSW graph (hybrid: and in the LSH bands).
GRAPH_METHODS = ("knn", "hybrid")
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
    return OptionError(list(keys), why)


class _NotGiven:
    """The default of a keyword that may also be given as None on purpose (``max_edit_distance=None``: no limit)."""

    _instance: "_NotGiven | None" = None

    def __new__(cls) -> "_NotGiven":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NOT_GIVEN"

    def __reduce__(self) -> str:
        return "NOT_GIVEN"


#: A keyword argument that was not given (typed ``Any`` so that it can stand as any parameter's default).
NOT_GIVEN: Any = _NotGiven()

# Python keywords kept under an older name: old name -> the key every door now uses.
DEPRECATED_KEYWORDS = {"max_distance": "max_edit_distance"}


def _renamed_keywords(keywords: Mapping[str, Any], stacklevel: int) -> dict[str, Any]:
    """``keywords`` with the old names replaced by the new ones (a DeprecationWarning for each old one used)."""
    renamed = dict(keywords)
    for old, new in DEPRECATED_KEYWORDS.items():
        if old not in renamed:
            continue
        value = renamed.pop(old)
        if value is NOT_GIVEN:
            continue
        warnings.warn(f"{old}= is deprecated: use {new}= (the name of the command line's --"
                      f"{new.replace('_', '-')} and of the service's JSON field)", DeprecationWarning,
                      stacklevel=stacklevel + 1)
        if renamed.get(new, NOT_GIVEN) is not NOT_GIVEN:
            raise InvalidParameterError(old, f"left out when {new} is given (it is {new}'s old name)", value,
                                        show_value=False)
        renamed[new] = value
    return renamed


def options_given(options: Any, options_type: type, keywords: Mapping[str, Any], what: str) -> bool:
    """Whether a Python call was given its options as one object (``options``, an ``options_type``) rather than
    as keyword arguments (those of ``keywords`` not :data:`NOT_GIVEN`). Both at once are refused: one of the two
    would be ignored."""
    if options is None:
        return False
    if not isinstance(options, options_type):
        raise ParameterTypeError("options", f"a {options_type.__name__}", options)
    given = sorted(k for k, v in keywords.items() if v is not NOT_GIVEN)
    if given:
        raise not_applicable(given, f"when options is given (give the {what} options one way)")
    return True


@dataclass(frozen=True)
class LookupOptions:
    """One lookup. The defaults are the library's honest ones: every candidate at the collection's threshold,
    no edit-distance limit, no first-word filter, no row cap (:data:`WRITEUP_LOOKUP` is the write-up's ranking,
    which reports keep).

    The command line (``near-dups``, ``report``), the service (``/v1/near-dups``, ``/v1/reports``) and the
    Python API (:class:`~neardup_solr.solr.searcher.Searcher`, :func:`~neardup_solr.engine.report.report_near_dups`)
    all build one of these, and its checks are the only ones: each door only says them in its own words."""

    mode: str = "shingles"
    max_edit_distance: int | None = None
    min_jaccard: MinJaccard = COLLECTION_THRESHOLD
    rows: int | None = None
    first_word_filter: bool = False
    num_hashes: int | None = None

    def __post_init__(self) -> None:
        check_choice("mode", self.mode, MODES)
        check_int("max_edit_distance", self.max_edit_distance, _MAX_EDIT_DISTANCE, none_ok=True)
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
        """The options given by a front door (None: not given), the others from ``defaults`` (these class
        defaults). Keys other than the options' are refused."""
        base = _lookup_fields(defaults if defaults is not None else cls())
        unknown = sorted(set(given) - set(base))
        if unknown:
            raise InvalidParameterError(unknown[0], f"one of {', '.join(base)}", None, show_value=False)
        base.update({k: v for k, v in given.items() if v is not None})
        return cls(**base)

    @classmethod
    def from_keywords(cls, options: "LookupOptions | None", keywords: Mapping[str, Any],
                      defaults: "LookupOptions | None" = None, *, stacklevel: int = 2) -> "LookupOptions":
        """The options of a Python call: ``options`` as they are, or the keyword arguments that were given
        (:data:`NOT_GIVEN`: not given; None is a value there) over ``defaults``. Both at once are refused: one
        of the two would be ignored. ``max_distance`` is accepted for ``max_edit_distance`` (deprecated: the
        warning names the caller ``stacklevel`` frames up, as :func:`warnings.warn` counts them from here)."""
        given = {k: v for k, v in _renamed_keywords(keywords, stacklevel).items() if v is not NOT_GIVEN}
        if options is not None and options_given(options, LookupOptions, given, "lookup"):
            return options
        base = _lookup_fields(defaults if defaults is not None else cls())
        unknown = sorted(set(given) - set(base))
        if unknown:
            raise InvalidParameterError(unknown[0], f"one of {', '.join(base)}", None, show_value=False)
        return cls(**{**base, **given})

    @property
    def lookup(self) -> "LookupOptions":
        """The lookup options alone (a report's options hold more)."""
        return LookupOptions(**_lookup_fields(self))

    def searcher_kwargs(self) -> dict[str, Any]:
        """These options as the keyword arguments of :meth:`Searcher.find_near_dups
        <neardup_solr.solr.searcher.Searcher.find_near_dups>` (``options=`` takes them as they are)."""
        return _lookup_fields(self)


def _lookup_fields(options: LookupOptions) -> dict[str, Any]:
    return {f.name: getattr(options, f.name) for f in fields(LookupOptions)}


# The edit-distance limit: its None is "no limit", spelled as each door spells nothing.
_MAX_EDIT_DISTANCE = Limit("int", 0, 10**9, hint="leave it out (None in Python, null in JSON, 'none' on the "
                                                  "command line) for no limit")


@dataclass(frozen=True)
class LookupReportOptions(LookupOptions):
    """A lookup-mode report (``report --writeup-ranking``, ``POST /v1/reports`` with ``writeup_ranking``):
    one lookup per document with id in ``start_id``..``end_id`` (every document by default), ``workers``
    lookups in flight (default 1). Its lookup defaults are the reference write-up's ranking, whose pairs file
    this report is: only candidates with the query's first word, the 10 best-scoring candidates, word edit
    distance <= 2, no Jaccard filter (:data:`WRITEUP_LOOKUP`)."""

    max_edit_distance: int | None = 2
    min_jaccard: MinJaccard = None
    rows: int | None = 10
    first_word_filter: bool = True
    start_id: str | int | None = None
    end_id: str | int | None = None
    workers: int | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("start_id", "end_id"):
            value = getattr(self, name)
            if value is not None and id_problem(value):
                check_id(value, name)
        if self.workers is not None:
            check_int("workers", self.workers, "workers")

    @property
    def lookups_in_flight(self) -> int:
        return self.workers if self.workers is not None else 1


#: The reference write-up's ranking: only candidates with the query's first word, the 10 best-scoring
#: candidates, word edit distance <= 2, no Jaccard filter. Lookup-mode reports, asked for by that name, use it
#: by default (their pairs file is the write-up's report), in every mode.
WRITEUP_LOOKUP = LookupReportOptions().lookup


@dataclass(frozen=True)
class SimilarityLookup:
    """A lookup of every indexed document whose ``similarity`` (exact shingle Jaccard, IDF-weighted word
    Jaccard, or the cosine of the vectors of meaning) with the text reaches ``threshold``: no row cap, no
    first-word filter, no edit-distance limit.

    ``method`` says where a lookup by meaning finds its candidates: ``knn`` (None's meaning there) walks the HNSW
    graph, ``hybrid`` also takes the documents sharing an LSH band with the text (a lexical copy the walk misses
    is still found); every candidate is verified by the exact cosine either way. A lookup by words has one way,
    exact (its bounded query verified): None or ``exact``."""

    threshold: float
    similarity: str = "jaccard"
    method: str | None = None

    def __post_init__(self) -> None:
        check_float("threshold", self.threshold, "threshold")
        check_choice("similarity", self.similarity, SIMILARITIES)
        check_choice("method", self.method, METHODS, none_ok=True)
        if self.similarity == "cosine" and self.method not in (None, *GRAPH_METHODS):
            raise InvalidParameterError("method", "'knn' or 'hybrid' with a lookup by similarity 'cosine' (it walks "
                                        "the graph of the vectors; 'hybrid' adds the documents sharing an LSH "
                                        "band)", self.method)
        if self.similarity != "cosine" and self.method not in (None, "exact"):
            raise InvalidParameterError("method", f"'exact' (or left out) with a lookup by similarity "
                                        f"{self.similarity!r}, which verifies every candidate of its bounded query "
                                        "('knn' and 'hybrid' find candidates by meaning: similarity 'cosine')",
                                        self.method)

    @property
    def method_in_force(self) -> str:
        """The method this lookup runs with: the one given, else its similarity's own."""
        if self.method is not None:
            return self.method
        return "knn" if self.similarity == "cosine" else "exact"


@dataclass(frozen=True)
class ShareLookup:
    """Write-up 003's lookup: every indexed document holding at least ``min_share`` of the text's shingles."""

    min_share: float

    def __post_init__(self) -> None:
        check_float("min_share", self.min_share, "min_share")


AnyLookup = Union[LookupOptions, SimilarityLookup, ShareLookup]


def lookup_from_given(given: Mapping[str, Any], defaults: LookupOptions | None = None) -> AnyLookup:
    """The lookup a front door was asked for (None: not given): ``threshold`` (with ``similarity`` and
    ``method``) asks for a :class:`SimilarityLookup`, ``min_share`` for a :class:`ShareLookup`, else the lookup
    options over ``defaults``. Options of another kind of lookup are refused, never ignored."""
    given = {k: v for k, v in given.items() if v is not None}
    search_given = [k for k in option_names(LookupOptions) if k in given]
    if "threshold" in given:
        if search_given or "min_share" in given:
            raise not_applicable(search_given + (["min_share"] if "min_share" in given else []),
                                 "with threshold, which returns every document at or above it (no row cap, no "
                                 "first-word filter, no edit-distance limit)")
        return SimilarityLookup(given["threshold"], given.get("similarity", SimilarityLookup.similarity),
                                given.get("method"))
    about_threshold: list[str] = [k for k in ("similarity", "method") if k in given]
    if about_threshold:
        raise not_applicable(about_threshold, "without threshold (they choose the threshold lookup's similarity "
                                              "and how its candidates are found)")
    if "min_share" in given:
        if search_given:
            raise not_applicable(search_given, "with min_share, which lists every document holding that share of "
                                               "the text's shingles")
        return ShareLookup(given["min_share"])
    return LookupOptions.from_given({k: given[k] for k in search_given}, defaults)


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
        if self.similarity == "cosine" and self.method == "lsh":
            raise InvalidParameterError("method", "'exact', 'knn' or 'hybrid' with similarity 'cosine' (the LSH "
                                        "bands alone are of the words; 'hybrid' adds them to the graph's "
                                        "candidates)", self.method)
        if self.method in GRAPH_METHODS and self.similarity != "cosine":
            raise InvalidParameterError("method", "'exact' or 'lsh' with similarity "
                                        f"{self.similarity!r} ({self.method!r} walks the graph of the vectors: "
                                        "similarity 'cosine')", self.method)
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

    def check_run(self, *, resume: bool = False, snapshot: bool = False) -> None:
        """Refuse what a run of these options cannot do: ``resume`` a method-lsh run (one batch job, which
        reruns), or sign with an IDF ``snapshot`` outside similarity 'idf' with method 'lsh' (the only run that
        signs weighted signatures)."""
        if resume and self.method == "lsh":
            raise InvalidParameterError("resume", "False with method 'lsh'", resume,
                                        "an lsh run is one batch job that does not resume: run it again")
        if resume and self.similarity == "cosine":
            raise InvalidParameterError("resume", "False with similarity 'cosine'", resume,
                                        "a run by meaning is one pass that does not resume: run it again")
        if snapshot:
            check_snapshot(self.similarity, self.method)


@dataclass(frozen=True)
class ThresholdOptions(_PairOptions):
    """Every pair of the collection (or of one ``dataset``) whose similarity reaches ``threshold``.

    ``method`` 'exact' finds every pair (prefix-filtered queries, or the texts joined in the client);
    'lsh' finds the pairs LSH bands make candidates, each verified exactly (fast on large collections). With
    similarity 'cosine', 'exact' compares every vector with every other, 'knn' takes the candidates the HNSW graph
    walk from each document reaches, 'hybrid' those and the documents sharing an LSH band (each pair verified
    by the exact cosine). ``workers``: lookups in flight with method exact (default 1; a batch job with lsh,
    which takes none).
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


def check_snapshot(similarity: str, method: str = "lsh") -> None:
    """An IDF snapshot signs weighted MinHash signatures: only similarity 'idf' with method 'lsh' (every Spark
    job is one) has any to sign."""
    if (similarity, method) != ("idf", "lsh"):
        raise not_applicable(["snapshot"], "outside similarity 'idf' with method 'lsh' (an IDF snapshot signs "
                                           "weighted MinHash signatures)")


#: The keys that choose a threshold report, and that a lookup report refuses.
THRESHOLD_REPORT_KEYS = ("similarity", "method", "dataset", "field_weights", "idf_tokens", "split_bucket")
#: The keys of a lookup report that a threshold report refuses (``workers`` means something to both).
LOOKUP_REPORT_KEYS = ("start_id", "end_id", *(f.name for f in fields(LookupOptions)))

ReportOptions = Union[ThresholdOptions, LookupReportOptions]


class CollectionSettings(Protocol):
    """What a report's defaults read of a collection's settings (an IndexSettings, which this layer does not
    import): the similarity threshold its LSH bands were chosen for, and its token fields."""

    @property
    def lsh_threshold(self) -> float: ...

    @property
    def fields(self) -> tuple[str, ...]: ...


#: What a front door calls the lookup report, which is asked for by this name (``--writeup-ranking``,
#: ``"writeup_ranking": true``): by default a report means every pair at the collection's threshold.
WRITEUP_RANKING = "writeup_ranking"


def report_options_from_given(given: Mapping[str, Any],
                              collection: CollectionSettings | None = None) -> ReportOptions:
    """The report a front door was asked for (None: not given).

    By default, and with ``threshold``, every pair at or above the threshold (:class:`ThresholdOptions`): one
    meaning of "near duplicate" in every door (issue 47), the collection's similarity threshold (``collection``'s
    ``lsh_threshold``; 0.8 when no settings are given) unless ``threshold`` says otherwise, by the exact method
    unless the collection holds no shingle tokens (then ``lsh``, which needs none). Similarity ``idf`` weighs
    words on another scale than the collection's Jaccard threshold, so it needs its own ``threshold``.

    With ``writeup_ranking`` true, one lookup per document ranked as the reference write-up ranks them
    (:class:`LookupReportOptions`: first-word filter, 10 rows, word edit distance <= 2), the lookup keys given
    overriding them. Lookup keys without that name, and options of the other kind of report, are refused,
    never ignored."""
    given = {k: v for k, v in given.items() if v is not None}
    writeup = check_bool(WRITEUP_RANKING, given.pop(WRITEUP_RANKING, False))
    lookup_keys = [k for k in LOOKUP_REPORT_KEYS if k in given]
    if writeup:
        wrong = [k for k in ("threshold", *THRESHOLD_REPORT_KEYS) if k in given]
        if wrong:
            raise not_applicable(wrong, "with writeup_ranking, one lookup per document (they choose the report of "
                                        "every pair at a threshold)")
        return _options_of(LookupReportOptions, given)
    if lookup_keys:
        raise not_applicable(lookup_keys, "without writeup_ranking: a report is every pair at the collection's "
                                          "threshold (or at threshold) unless the write-up's ranking is asked for "
                                          "by name, one lookup per document, which these options tune")
    if given.get("similarity") == "idf" and "threshold" not in given:
        raise InvalidParameterError("threshold", "given with similarity 'idf' (IDF-weighted similarity has a scale "
                                    "of its own: 0.4 finds the restaurant pairs, for example)", None,
                                    show_value=False)
    if given.get("similarity") == "cosine" and "threshold" not in given:
        raise InvalidParameterError("threshold", "given with similarity 'cosine' (the cosine of two vectors of meaning "
                                    "has a scale of its own, which depends on the encoder: docs/meaning.md)", None,
                                    show_value=False)
    if collection is not None:
        given.setdefault("threshold", collection.lsh_threshold)
        if "shingles" not in collection.fields and given.get("similarity") != "cosine":
            given.setdefault("method", "lsh")
    return _options_of(ThresholdOptions, given)


def _options_of(cls: type, given: Mapping[str, Any]) -> Any:
    keys = option_names(cls)
    unknown = sorted(set(given) - set(keys))
    if unknown:
        raise InvalidParameterError(unknown[0], f"one of {', '.join(keys)}", None, show_value=False)
    return cls(**given)


def option_names(cls: type) -> list[str]:
    """The public keys of an options class, in order (what the front doors must offer)."""
    return [f.name for f in fields(cls) if f.init and not f.name.startswith("_")]
