"""The Spark runs as one call each, over files: a dedupe (the pairs of a file, then what the run was asked for
besides them: the groups, the keep list, the deduplicated records, the load into Solr with each document's group)
and a join (the pairs between two files), everything computed and written by the executors. ``neardup-solr spark
dedup|join`` build these options from their flags and print the run; nothing of a job lives in the command line.

>>> from neardup_solr.spark import spark_session
>>> from neardup_solr.spark.runs import SparkInput, SparkOutputs, SparkDedupeOptions, dedupe_on_spark
>>> run = dedupe_on_spark(spark_session("local[2]"), SparkInput("docs.jsonl"),
...                       SparkOutputs("pairs.tsv", keep="keep.txt", records="deduplicated.jsonl.gz"),
...                       SparkDedupeOptions.of(threshold=0.8))
>>> run.stats.verified_pairs, run.kept_records
"""

from __future__ import annotations

import logging
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from neardup_solr.engine.weighted_lsh import IdfSnapshot, snapshot_path
from neardup_solr.errors import InvalidParameterError, ParameterTypeError
from neardup_solr.io.outputs import check_output_path, is_stdout
from neardup_solr.io.readers import FORMATS
from neardup_solr.options import DEFAULT_SPLIT_BUCKET, ThresholdOptions
from neardup_solr.pairs.groups import REPRESENTATIVES
from neardup_solr.pairs.lsh import LSHParams
from neardup_solr.signing.settings import META_DATASET, IndexSettings
from neardup_solr.spark.groups import executor_groups, write_groups_from_executors
from neardup_solr.spark.io import (
    READ_ON,
    read_records,
    write_keep_list_from_executors,
    write_pairs_from_executors,
    write_pairs_parquet,
)
from neardup_solr.spark.jobs import dedup, dedup_file, join
from neardup_solr.spark.records_out import write_kept_records
from neardup_solr.validation import Limit, check_bool, check_choice, check_int, check_label, check_str

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from neardup_solr.engine.group_writeback import WritebackSummary
    from neardup_solr.spark.jobs import SparkJobStats
    from neardup_solr.spark.solr import SolrClient, SolrLoad  # the one Spark module that speaks to Solr

log = logging.getLogger(__name__)

#: How many rejected records a run keeps as examples (all are counted).
REJECTED_EXAMPLES = 5


@dataclass(frozen=True)
class SparkInput:
    """A file of records and how to read it, as ``index`` reads it: ``fmt`` (None: from the name), the id and
    text keys or columns, what to do with bytes that are not UTF-8, and who reads a line-format file
    (``read_on``: see :func:`~neardup_solr.spark.io.read_records`)."""

    path: str
    fmt: str | None = None
    id_field: str = "id"
    text_field: str = "text"
    on_decode_error: str = "latin-1"
    read_on: str = "auto"

    def __post_init__(self) -> None:
        check_str("path", str(self.path))
        check_choice("fmt", self.fmt, FORMATS, none_ok=True)
        check_str("id_field", self.id_field)
        check_str("text_field", self.text_field)
        check_choice("on_decode_error", self.on_decode_error, ("latin-1", "reject", "replace"))
        check_choice("read_on", self.read_on, READ_ON)

    def check(self) -> None:
        """The input is there, before Spark (a JVM start) is asked anything."""
        if not Path(self.path).exists():
            raise FileNotFoundError(f"input file not found: {self.path}")


@dataclass(frozen=True)
class SparkOutputs:
    """Where a run writes: the ``pairs`` (TSV, as ``report --threshold`` writes; ``-``: standard output), and,
    when given, the pairs as Parquet, the ``groups`` (JSONL), the ``keep`` list and the kept ``records``."""

    pairs: str
    parquet: str | None = None
    groups: str | None = None
    keep: str | None = None
    records: str | None = None

    def check(self, names: Mapping[str, str] | None = None) -> None:
        """Every output writable and no two the same file, before Spark (a JVM start) or Solr is touched. An error
        calls each output by its field's name, or by ``names`` (a front door's, e.g. its flags)."""
        def called(name: str) -> str:
            return (names or {}).get(name, name)

        seen: dict[str, str] = {}
        for name in ("pairs", "parquet", "groups", "keep", "records"):
            path = getattr(self, name)
            if path is None:
                continue
            check_output_path(path, name=called(name))
            if is_stdout(path):
                continue
            resolved = str(Path(path).resolve())
            if resolved in seen:
                first = called(seen[resolved])
                raise InvalidParameterError(called(name), "a file of its own", path,
                                            f"{first} names it too: give them different paths")
            seen[resolved] = name


@dataclass(frozen=True)
class _SparkPairOptions:
    """What both runs take: ``pairs`` (the threshold and similarity of ``report --threshold --method lsh``, and
    its bucket judging for a dedupe), the signer's ``settings``, LSH bands and rows (None: chosen for the
    threshold), ``max_bucket`` (None: the jobs' default) and an IDF ``snapshot`` to sign with (similarity idf)."""

    pairs: ThresholdOptions = field(default_factory=lambda: ThresholdOptions(method="lsh"))
    settings: IndexSettings = field(default_factory=IndexSettings)
    lsh_params: LSHParams | None = None
    max_bucket: int | None = None
    snapshot: IdfSnapshot | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.pairs, ThresholdOptions):
            raise ParameterTypeError("pairs", "ThresholdOptions", self.pairs)
        if self.pairs.method != "lsh":
            raise InvalidParameterError("method", "'lsh' (every Spark job is an LSH band join)", self.pairs.method)
        if not isinstance(self.settings, IndexSettings):
            raise ParameterTypeError("settings", "IndexSettings", self.settings)
        if self.lsh_params is not None and not isinstance(self.lsh_params, LSHParams):
            raise ParameterTypeError("lsh_params", "LSHParams or None", self.lsh_params)
        if self.max_bucket is not None:
            check_int("max_bucket", self.max_bucket, Limit("int", 2, 10**9))
        self.pairs.check_run(snapshot=self.snapshot is not None)

    @classmethod
    def of(cls, threshold: float = 0.8, *, similarity: str = "jaccard", split_bucket: int | None = DEFAULT_SPLIT_BUCKET,
           **rest: Any):
        """The options from plain keywords: ``threshold``, ``similarity`` and ``split_bucket`` make the pair
        options, the rest are this class's fields."""
        if similarity == "cosine":
            raise InvalidParameterError("similarity", "'jaccard' or 'idf' on Spark (pairs by meaning are found in "
                                        "Solr: report --similarity cosine)", similarity)
        return cls(pairs=ThresholdOptions(threshold=threshold, similarity=similarity, method="lsh",
                                          split_bucket=split_bucket), **rest)

    def _job_keywords(self) -> dict[str, Any]:
        return dict(settings=self.settings, lsh_params=self.lsh_params, similarity=self.pairs.similarity,
                    snapshot=self.snapshot, **({} if self.max_bucket is None else {"max_bucket": self.max_bucket}))


@dataclass(frozen=True)
class SparkDedupeOptions(_SparkPairOptions):
    """A Spark dedupe's options (those of :class:`_SparkPairOptions`), and the ``representative`` each group
    keeps (``earliest`` id or ``longest`` text) and the ``dataset`` label of the documents loaded into Solr (with a
    client only). Checked when made."""

    representative: str = "earliest"
    dataset: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        check_choice("representative", self.representative, REPRESENTATIVES)
        check_label("dataset", self.dataset, reserved=(META_DATASET,))

    @property
    def job_keywords(self) -> dict[str, Any]:
        """What :func:`~neardup_solr.spark.dedup` and :func:`~neardup_solr.spark.dedup_file` take of these."""
        return {**self._job_keywords(), "split_bucket": self.pairs.split_bucket}


@dataclass(frozen=True)
class SparkJoinOptions(_SparkPairOptions):
    """A Spark join's options (those of :class:`_SparkPairOptions`; with similarity idf the frequencies are the
    right file's), and ``one_to_one``: each id in at most one pair, best first. Checked when made."""

    one_to_one: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        check_bool("one_to_one", self.one_to_one)

    @property
    def job_keywords(self) -> dict[str, Any]:
        """What :func:`~neardup_solr.spark.join` takes of these."""
        return {**self._job_keywords(), "one_to_one_matching": self.one_to_one}


@dataclass
class SparkDedupeRun:
    """What :func:`dedupe_on_spark` did: the job's ``stats``, its wall ``seconds``; the groups (groups and the
    documents in them), the keep list's ids and the kept records, each when asked for; the ``load`` into Solr and
    the ``groups_in_solr`` written there, with a client; the rejected records (``rejected_count``, the first
    :data:`REJECTED_EXAMPLES` as ``rejected``, each naming the record and the reason)."""

    stats: "SparkJobStats"
    seconds: float = 0.0
    groups: int | None = None
    grouped_documents: int | None = None
    kept_ids: int | None = None
    kept_records: int | None = None
    load: "SolrLoad | None" = None
    groups_in_solr: "WritebackSummary | None" = None
    rejected: list[str] = field(default_factory=list)
    rejected_count: int = 0

    @property
    def complete(self) -> bool:
        """False when the load into Solr did not check out (the documents Solr holds are not all that was sent)."""
        return self.load is None or self.load.verify.ok


def dedupe_on_spark(spark: "SparkSession", source: SparkInput, outputs: SparkOutputs,
                    options: SparkDedupeOptions | None = None, *, client: "SolrClient | None" = None,
                    staging_dir: str | Path | None = None,
                    on_pairs: Callable[["SparkDedupeRun", float], None] | None = None) -> SparkDedupeRun:
    """Every pair of records of ``source`` at or above the threshold, written to ``outputs.pairs`` by the
    executors (the driver never holds the pairs), with the IDF snapshot beside them (``PAIRS.idf.json``, similarity
    idf); then the groups, keep list and kept records asked for. With a ``client`` the records also go to its
    collection as the indexer sends them, are checked there, and each document gets its group (``nd_group``,
    ``nd_keep``: see ``groups --to-solr``). Line-format inputs are staged under ``staging_dir`` (None: the
    temporary directory; on a cluster, storage every executor reads), in a folder removed at the end.

    ``on_pairs(run, seconds)`` is called once the pairs are written, before the groups (which can take as long
    again at scale), with the job's stats in ``run.stats`` and the seconds so far: the command line says the pairs
    there, so a user (and benchmarks/corpus_scale.py, which splits its memory peaks at that line) sees them early."""
    options = options or SparkDedupeOptions()
    if not isinstance(options, SparkDedupeOptions):
        raise ParameterTypeError("options", "SparkDedupeOptions", options)
    if client is not None and not hasattr(client, "url"):
        raise ParameterTypeError("client", "a SolrClient or None", client)
    if options.dataset is not None and client is None:
        raise InvalidParameterError("dataset", "None without a client (it labels the documents sent to Solr)",
                                    options.dataset)
    source.check()
    outputs.check()
    _make(staging_dir)
    started = time.monotonic()
    threshold = options.pairs.threshold
    with tempfile.TemporaryDirectory(prefix="neardup-spark-", dir=staging_dir) as staging:
        if client is not None:  # the texts go to Solr too: read (and staged) first, then deduplicated
            read = read_records(spark, source.path, source.fmt, staging_dir=staging, id_field=source.id_field,
                                text_field=source.text_field, on_decode_error=source.on_decode_error,
                                read_on=source.read_on)
            result = dedup(read.records, threshold, **options.job_keywords)
        else:  # a line-format file the executors read is signed as it is read
            result, read = dedup_file(spark, source.path, threshold, fmt=source.fmt, staging_dir=staging,
                                      id_field=source.id_field, text_field=source.text_field,
                                      on_decode_error=source.on_decode_error, read_on=source.read_on,
                                      **options.job_keywords)
        _write_pairs(result, outputs, staging)
        run = SparkDedupeRun(stats=result.stats)
        if on_pairs is not None:
            on_pairs(run, time.monotonic() - started)
        if outputs.groups or outputs.keep or outputs.records:
            _reduce(spark, source, outputs, options, result, read, staging, run, loading=client is not None)
        if client is not None:
            _load(client, options, result, read, run)
        run.rejected, run.rejected_count = _rejected_examples(list(read.rejected), result)
    run.seconds = round(time.monotonic() - started, 3)
    return run


def _write_pairs(result: Any, outputs: SparkOutputs, staging: str) -> None:
    """The pairs, written by the executors and streamed into place (the driver never holds them), with the IDF
    snapshot beside them when the run made one, and as Parquet when asked."""
    write_pairs_from_executors(result.pairs, outputs.pairs, staging)
    if result.snapshot is not None and not is_stdout(outputs.pairs):
        result.snapshot.save(snapshot_path(outputs.pairs))
    if outputs.parquet:
        write_pairs_parquet(result.pairs, outputs.parquet)


def _make(staging_dir: str | Path | None) -> None:
    """The staging folder, made when it does not exist yet (as the outputs' folders are)."""
    if staging_dir is not None:
        Path(staging_dir).mkdir(parents=True, exist_ok=True)


def _reduce(spark: "SparkSession", source: SparkInput, outputs: SparkOutputs, options: SparkDedupeOptions,
            result: Any, read: Any, staging: str, run: SparkDedupeRun, *, loading: bool) -> None:
    """The groups, keep list and kept records, computed and written by the executors."""
    from pyspark.sql import functions as F

    longest = options.representative == "longest"
    # What the groups, the keep list and the kept records read: the ids, each record's row in the file (when it
    # was signed as read) and, to choose the longest, its length.
    wanted = ["id", "row"] + (["length"] if longest else [])
    ids = result.signed.select(*(c for c in wanted if c in result.signed.columns))
    if not loading:
        # From here on only these columns are read: the executors keep them and give back the cached records
        # with their signatures and band keys (1.7 KB a document). Held, they left the groups' aggregations no
        # memory at 1,000,000 documents with a 4 GiB local driver (AGGREGATE_OUT_OF_MEMORY).
        ids = ids.localCheckpoint(eager=True)
        for frame in (result.signed, *result.cached):
            frame.unpersist()
    lengths = None
    if longest:
        lengths = (ids.select("id", "length") if "length" in ids.columns
                   else read.records.select("id", F.length("text").alias("length")))
    # The groups hold the ids that have a near duplicate, not the documents.
    groups = executor_groups(result.pairs, representative=options.representative, lengths=lengths)
    run.groups, run.grouped_documents = groups.count, groups.members_count
    if outputs.groups:
        write_groups_from_executors(groups, outputs.groups, staging)
    if outputs.keep:
        # Every id but the groups' other members, sorted and written by the executors.
        run.kept_ids = write_keep_list_from_executors(ids, groups.dropped, outputs.keep, staging)
    if outputs.records:
        run.kept_records = write_kept_records(spark, source.path, outputs.records, staging, signed=ids,
                                              dropped=groups.dropped, lines=read.lines, fmt=source.fmt,
                                              id_field=source.id_field, on_decode_error=source.on_decode_error)


def _load(client: "SolrClient", options: SparkDedupeOptions, result: Any, read: Any, run: SparkDedupeRun) -> None:
    """The records into Solr as the indexer sends them, checked; then each document's group, when they all are
    there."""
    from neardup_solr.spark.solr import write_pair_groups, write_to_solr

    run.load = write_to_solr(read.records, result.signed, client, options.settings, dataset=options.dataset,
                             weighted=options.pairs.similarity == "idf")
    if not run.load.verify.ok:
        log.warning("%s: the records loaded do not check out (%s); no group written", client.url,
                    run.load.verify.format())
        return
    # Each document's group into the collection too, for folded searches (docs/folding.md), kept as the groups
    # and the keep list keep.
    run.groups_in_solr = write_pair_groups(client, result.pairs, representative=options.representative,
                                           dataset=options.dataset)


def _rejected_examples(read_errors: list[Any], result: Any) -> tuple[list[str], int]:
    """The records not used: those the reads refused and those the signer refused; the first few, and how
    many."""
    problems = [str(error) for error in read_errors]
    count = len(problems) + result.stats.rejected
    if result.stats.rejected and len(problems) < REJECTED_EXAMPLES:
        problems += [f"id {r['id']!r}: {r['problem']}"
                     for r in result.rejected.limit(REJECTED_EXAMPLES - len(problems)).collect()]
    return problems[:REJECTED_EXAMPLES], count

@dataclass
class SparkJoinRun:
    """What :func:`join_on_spark` did: the job's ``stats`` (``documents``: both files), its wall ``seconds``,
    and the rejected records of both files (``rejected_count``; the first :data:`REJECTED_EXAMPLES` as
    ``rejected``)."""

    stats: "SparkJobStats"
    seconds: float = 0.0
    rejected: list[str] = field(default_factory=list)
    rejected_count: int = 0


def join_on_spark(spark: "SparkSession", left: SparkInput, right: SparkInput, outputs: SparkOutputs,
                  options: SparkJoinOptions | None = None, *, staging_dir: str | Path | None = None) -> SparkJoinRun:
    """Every pair (a record of ``left``, a record of ``right``) at or above the threshold, written to
    ``outputs.pairs`` by the executors (and as Parquet, when asked), with the IDF snapshot beside them (similarity
    idf). A join has no groups, keep list or kept records: ``outputs`` holding one is refused."""

    options = options or SparkJoinOptions()
    if not isinstance(options, SparkJoinOptions):
        raise ParameterTypeError("options", "SparkJoinOptions", options)
    for name in ("groups", "keep", "records"):
        if getattr(outputs, name) is not None:
            raise InvalidParameterError(name, "None for a join (the groups, keep list and kept records are a "
                                              "dedupe's)", getattr(outputs, name))
    left.check()
    right.check()
    outputs.check()
    _make(staging_dir)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="neardup-spark-", dir=staging_dir) as staging:
        reads = [read_records(spark, source.path, source.fmt, staging_dir=str(Path(staging) / side),
                              id_field=source.id_field, text_field=source.text_field,
                              on_decode_error=source.on_decode_error, read_on=source.read_on)
                 for side, source in (("left", left), ("right", right))]
        result = join(reads[0].records, reads[1].records, options.pairs.threshold, **options.job_keywords)
        _write_pairs(result, outputs, staging)
        run = SparkJoinRun(stats=result.stats)
        run.rejected, run.rejected_count = _rejected_examples([e for read in reads for e in read.rejected], result)
    run.seconds = round(time.monotonic() - started, 3)
    return run
