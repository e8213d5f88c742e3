"""From a corpus to a deduplicated corpus in one call: index, find the pairs, group them, write the kept records.

:func:`dedupe_file` does what ``index``, ``report --threshold T --method lsh``, ``groups --keep
--with-singletons`` and a filter over the input did by hand, and gives the same records:

1. **index** the input into the collection (:class:`~neardup_solr.solr.indexer.Indexer`: rejects, checkpoints,
   the end-of-run check);
2. **pairs**: every pair with Jaccard >= T among the indexed documents (of ``dataset``), LSH candidates each
   verified exactly (:func:`~neardup_solr.engine.find.find_pairs` with method lsh, ``report``'s engine), or with
   ``similarity="cosine"`` every pair whose vectors of meaning reach the cosine T (method exact unless told:
   ``report --similarity cosine``'s engine, on a collection indexed with an encoder); pairs with a document the
   input does not hold (the collection held others) are left out;
3. **groups**: connected components of the pairs, one representative each (``earliest`` id or ``longest``
   text: :func:`~neardup_solr.pairs.groups.group_pairs`, the ``groups`` command's rules);
4. **write** the kept records (every record in no pair, and each group's representative) as the input holds
   them, in input order (:mod:`neardup_solr.io.kept_records` has the format rules).

What is indexed: a collection that already holds documents keeps the settings it was indexed with. A new (or
emptied) one gets :data:`DEDUPE_SETTINGS` unless ``settings`` are given: the signature and the text, which steps 2
and 4 read, and the LSH band keys (``content_lsh``, 21 short tokens a document, for ``near-dups --mode lsh`` and
``check_and_add`` afterwards), but none of the shingle and word fields that lookups of the other modes need. Those
grow with the text: on 1,280 source files of 24 KB they made indexing 2.3x slower (6.1 s against 2.7 s end to end)
for the same pairs, groups and kept records. Ask for them by name (``settings=IndexSettings(fields=...)``,
``dedupe --fields shingles,lsh,words``) to look documents up in every mode on the same collection.

Records the indexer rejects (bad ids, empty texts, ...) are not written; they are in the rejects file with their
reasons and counted. An id given to several records is indexed from the last of them (the indexer's rule): only
that record can be written, the earlier ones are dropped.

A stopped run (Solr away, the process killed) keeps its work in ``<out>.dedupe-run/`` (the indexer's checkpoint,
then the pairs once found) and ``resume=True`` continues from there; ``out`` itself appears only complete.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from neardup_solr.errors import InputFormatError, InvalidParameterError, ParameterTypeError
from neardup_solr.io.inputs import is_stdin, open_text_lines
from neardup_solr.io.kept_records import check_output_format, write_kept_records
from neardup_solr.io.outputs import OutputLock, check_output_path, sibling
from neardup_solr.io.progress import progress_bar
from neardup_solr.io.throughput import format_rates, utf8_size
from neardup_solr.io.readers import DECODE_POLICIES, FORMATS, Record, RecordReader, input_format
from neardup_solr.options import NOT_GIVEN, ThresholdOptions, options_given
from neardup_solr.pairs.groups import (
    REPRESENTATIVES,
    Group,
    group_pairs,
    keep_list,
    read_distance_pairs,
    write_groups_jsonl,
    write_keep_list,
)
from neardup_solr.pairs.similar_pairs import SimilarPair, write_pairs
from neardup_solr.signing.settings import META_DATASET, IndexSettings
from neardup_solr.solr.collection import SolrClient
from neardup_solr.solr.indexer import Indexer, IndexSummary, Rejection
from neardup_solr.solr.maintenance import clear as clear_collection
from neardup_solr.solr.settings_store import holds_no_documents, read_index_settings
from neardup_solr.validation import check_bool, check_choice, check_float, check_int, check_label, check_str
from neardup_solr.engine.find import find_pairs

log = logging.getLogger(__name__)

__all__ = ["DedupeOptions", "DedupeSummary", "dedupe_file", "check_files", "CLEAR_CHOICES", "DEDUPE_SETTINGS"]

# What dedupe indexes into a collection that has no settings yet (the module docstring says why).
DEDUPE_SETTINGS = IndexSettings(fields=("lsh",))

RUN_DIR_SUFFIX = ".dedupe-run"
REJECTS_SUFFIX = ".rejects.jsonl"
CLEAR_CHOICES = ("dataset", "all")
# Rejections kept on the summary to be named (all of them are in the rejects file and counted).
REJECTIONS_SHOWN = 100
# The run's stages, each a share of the progress bar counted in input records.
STAGE_NAMES = ("indexing", "finding pairs", "grouping", "writing")
STAGES = len(STAGE_NAMES)
# The parts of a stage its summary line names (where they were measured: a resumed run may lack them).
STAGE_PARTS = {"indexing": ("signing", "waiting for Solr"),
               "finding pairs": ("reading signatures", "candidate pairs", "verifying")}
RUN_BAR_FORMAT = "{desc}: {percentage:3.0f}%|{bar}| [{elapsed}<{remaining}]"
# What dedupe compares: the words (Jaccard of shingles) or the meaning (cosine of the encoder's vectors). IDF
# weighting is for field records, which report and join serve.
DEDUPE_SIMILARITIES = ("jaccard", "cosine")
# The Jaccard threshold when none is given; a cosine has a scale of its own, which depends on the encoder.
DEFAULT_JACCARD = 0.8


@dataclass(frozen=True)
class DedupeOptions:
    """How a :func:`dedupe_file` run deduplicates, checked when made (the command line makes one from its flags):
    the ``threshold`` a pair reaches by ``similarity`` (``jaccard`` of the shingles, 0.8 unless given; or
    ``cosine`` of the vectors of meaning, which needs a threshold and a collection indexed with an encoder) and
    the ``method`` that finds the pairs (None: ``lsh`` with jaccard, ``exact`` with cosine; ``knn`` and
    ``hybrid`` as for ``report --similarity cosine``); the ``representative`` each group keeps (``earliest`` id or
    ``longest`` text); the ``dataset`` label of the records indexed (the pairs are then that data set's);
    ``clear`` first (``dataset``: that data set's documents, ``all``: the whole collection); ``resume`` a stopped
    run; the indexer's ``batch_size``, ``workers`` (batches in flight) and ``sign_processes`` (None: one per
    core)."""

    threshold: float | None = None
    representative: str = "earliest"
    dataset: str | None = None
    clear: str | None = None
    resume: bool = False
    batch_size: int = 500
    workers: int = 2
    sign_processes: int | None = None
    similarity: str = "jaccard"
    method: str | None = None

    def __post_init__(self) -> None:
        check_choice("similarity", self.similarity, DEDUPE_SIMILARITIES)
        if self.threshold is None:
            if self.similarity == "cosine":
                raise InvalidParameterError("threshold", "given with similarity 'cosine' (the cosine of two vectors "
                                            "of meaning has a scale of its own, which depends on the encoder: "
                                            "docs/meaning.md)", None, show_value=False)
            object.__setattr__(self, "threshold", DEFAULT_JACCARD)
        object.__setattr__(self, "threshold", check_float("threshold", self.threshold, "threshold"))
        if self.method is None:
            object.__setattr__(self, "method", "exact" if self.similarity == "cosine" else "lsh")
        if self.similarity == "jaccard" and self.method != "lsh":
            raise InvalidParameterError("method", "'lsh' (or left out) with similarity 'jaccard': dedupe indexes the "
                                        "band tokens, not the shingles the exact method reads", self.method)
        self.pair_options()  # the report's own rules between similarity and method
        check_choice("representative", self.representative, REPRESENTATIVES)
        check_label("dataset", self.dataset, reserved=(META_DATASET,))
        check_choice("clear", self.clear, CLEAR_CHOICES, none_ok=True)
        if self.clear == "dataset" and self.dataset is None:
            raise InvalidParameterError("clear", "'all' without a dataset ('dataset' clears the given data set)",
                                        self.clear)
        check_bool("resume", self.resume)
        if self.resume and self.clear is not None:
            raise InvalidParameterError("resume", "False when clear is given (clearing would delete what the "
                                                  "stopped run indexed)", self.resume)
        check_int("batch_size", self.batch_size, "batch_size")
        check_int("workers", self.workers, "workers")
        check_int("sign_processes", self.sign_processes, "sign_processes", none_ok=True)

    def pair_options(self) -> ThresholdOptions:
        """The report these options find their pairs with (``report``'s options: the same rules, the same engine)."""
        assert self.threshold is not None and self.method is not None  # __post_init__ fills them
        return ThresholdOptions(threshold=self.threshold, similarity=self.similarity, method=self.method,
                                dataset=self.dataset)

    @classmethod
    def from_keywords(cls, options: "DedupeOptions | None", keywords: dict[str, Any]) -> "DedupeOptions":
        """The options of a call: ``options`` as they are, or the keyword arguments given (those not
        :data:`~neardup_solr.options.NOT_GIVEN`) over the defaults; both at once are refused."""
        if options is not None and options_given(options, cls, keywords, "dedupe"):
            return options
        return cls(**{k: v for k, v in keywords.items() if v is not NOT_GIVEN})


@dataclass
class DedupeSummary:
    """What a :func:`dedupe_file` run did. ``records``: the input's records (blank lines aside), each of them
    ``kept`` (written to ``out``), ``dropped`` (a near duplicate of a kept record, or an earlier record of a
    repeated id) or ``rejected`` (not indexed; reasons in ``rejects_path``)."""

    source: str
    out: str
    threshold: float
    similarity: str = "jaccard"
    records: int = 0
    kept: int = 0
    dropped: int = 0
    rejected: int = 0
    repeated_ids: int = 0
    pairs: int = 0
    groups: int = 0
    # Pairs with a document the input does not hold (the collection held other documents): left out.
    foreign_pairs: int = 0
    seconds: float = 0.0
    # UTF-8 bytes of the input's texts (every record's), for the MB/s beside the records/s.
    text_bytes: int = 0
    resumed: bool = False
    rejects_path: str | None = None
    pairs_path: str | None = None
    groups_path: str | None = None
    keep_path: str | None = None
    rejections: list[Rejection] = field(default_factory=list)
    # Seconds per stage in run order (STAGE_NAMES), each followed by its parts (STAGE_PARTS: the indexer's signing
    # and waits for Solr, the LSH engine's signature reading, candidates and verification). A resumed run counts
    # only what it did itself. Signing is summed over the ``sign_processes`` that signed, so with several it can
    # exceed the indexing stage that holds it.
    stages: dict[str, float] = field(default_factory=dict)
    sign_processes: int = 1

    def format(self) -> str:
        """The one-line summary the command line prints."""
        dropped = f"dropped {self.dropped}"
        if self.repeated_ids:
            dropped += f" ({self.repeated_ids} of them earlier records of a repeated id)"
        rejected = f"rejected {self.rejected}"
        if self.rejected and self.rejects_path:
            rejected += f" (not written; reasons in {self.rejects_path})"
        return (f"{self.records} records in, kept {self.kept}, {dropped}, {rejected} in {self.seconds:.1f} s "
                f"({format_rates(self.records, self.text_bytes, self.seconds)}) -> {self.out} ({self.pairs} pairs "
                f"with {self.similarity} similarity >= {self.threshold:g}, {self.groups} groups)")

    def format_stages(self) -> str:
        """Where the run's time went, one line: ``time: indexing 41.2 s (signing 30.1 s, waiting for Solr 4.0 s),
        finding pairs 6.3 s (reading signatures 1.2 s, candidate pairs 0.4 s, verifying 4.5 s), grouping 3.1 s,
        writing 5.5 s``."""
        parts = []
        for name in STAGE_NAMES:
            if name not in self.stages:
                continue
            part = f"{name} {self.stages[name]:.1f} s"
            inside = STAGE_PARTS.get(name, ())
            if inside and all(detail in self.stages for detail in inside):
                part += " (" + ", ".join(f"{detail} {self.stages[detail]:.1f} s{self._over(detail)}"
                                         for detail in inside) + ")"
            parts.append(part)
        return "time: " + ", ".join(parts)

    def _over(self, detail: str) -> str:
        return f" over {self.sign_processes} processes" if detail == "signing" and self.sign_processes > 1 else ""


@dataclass(frozen=True)
class _Reading:
    """How the input is read, the same in every pass (RecordReader's arguments)."""

    fmt: str
    id_field: str
    text_field: str
    on_decode_error: str


@dataclass
class _Scan:
    """One pass over the input after indexing: which records count, and the texts ``longest`` compares."""

    records: int = 0
    rejected: int = 0
    accepted: set[str] = field(default_factory=set)
    # Ids given to more than one accepted record -> the line of the last one (the one the index holds).
    last_line: dict[str, int] = field(default_factory=dict)
    repeated_records: int = 0
    texts: dict[str, str] = field(default_factory=dict)
    text_bytes: int = 0


class _RunState:
    """``<out>.dedupe-run/run.json``: the run's input and arguments, and the stages it finished."""

    def __init__(self, directory: Path, key: dict):
        self.directory = directory
        self.key = key
        self.indexed: int | None = None  # the records the index stage read, once it finished
        self.pairs_found = False

    @property
    def path(self) -> Path:
        return self.directory / "run.json"

    @property
    def pairs_path(self) -> Path:
        return self.directory / "pairs.tsv"

    @property
    def checkpoint_path(self) -> Path:
        return self.directory / "index-checkpoint.json"

    def load(self) -> bool:
        """Take over a stopped run's stages when it ran on the same input with the same arguments."""
        try:
            data = json.loads(self.path.read_text())
        except (FileNotFoundError, ValueError):
            return False
        if data.get("key") != self.key:
            log.warning("%s belongs to a run on another input or with other arguments; starting over", self.path)
            return False
        self.indexed = data.get("indexed")
        self.pairs_found = bool(data.get("pairs_found"))
        return True

    def save(self) -> None:
        self.directory.mkdir(exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"key": self.key, "indexed": self.indexed, "pairs_found": self.pairs_found}))
        os.replace(tmp, self.path)

    def remove(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


def dedupe_file(
    client: SolrClient | None,
    path: str | Path,
    out: str | Path,
    threshold: float = NOT_GIVEN,
    *,
    options: DedupeOptions | None = None,
    fmt: str | None = None,
    id_field: str = "id",
    text_field: str = "text",
    on_decode_error: str = "latin-1",
    representative: str = NOT_GIVEN,
    dataset: str | None = NOT_GIVEN,
    clear: str | None = NOT_GIVEN,
    settings: IndexSettings | None = None,
    pairs_out: str | Path | None = None,
    groups_out: str | Path | None = None,
    keep_out: str | Path | None = None,
    rejects_path: str | Path | None = None,
    resume: bool = NOT_GIVEN,
    progress: bool = False,
    batch_size: int = NOT_GIVEN,
    workers: int = NOT_GIVEN,
    work_dir: str | Path | None = None,
    sign_processes: int | None = NOT_GIVEN,
    similarity: str = NOT_GIVEN,
    method: str | None = NOT_GIVEN,
) -> DedupeSummary:
    """Write to ``out`` the records of ``path`` that remain when every group of near duplicates (Jaccard >=
    ``threshold``, or with ``similarity="cosine"`` the cosine of their vectors of meaning; ``method`` as for
    :class:`DedupeOptions`) is cut down to its representative (see the module's steps).

    ``path`` is read like ``index`` reads it (``fmt``, ``id_field``, ``text_field``, ``on_decode_error``: see
    :class:`~neardup_solr.io.readers.RecordReader`; compressed or not) and must be a file: it is read more than
    once. ``out`` gets the input's format, compressed by its suffix (:mod:`neardup_solr.io.kept_records`).
    The records are indexed into ``client``'s collection (None: the default local one), labelled ``dataset``
    when given (the pairs are then that data set's), with ``settings`` for an empty collection;
    ``clear="dataset"`` first deletes that data set's documents, ``clear="all"`` the whole collection. Pairs
    with a document the input does not hold are left out either way.

    ``representative``: ``earliest`` (smallest id) or ``longest`` (longest text) is kept of each group.
    ``pairs_out``, ``groups_out`` and ``keep_out`` also write the pairs, the groups and the keep list, in the
    formats of ``report``, ``groups --out`` and ``groups --keep --with-singletons``. Rejected records go to
    ``rejects_path`` (default ``<out>.rejects.jsonl``, only written when there are some). ``sign_processes``
    sign the records (None: one per core; 1: on the calling thread; see :class:`~neardup_solr.solr.indexer.Indexer`).

    ``threshold``, ``representative``, ``dataset``, ``clear``, ``resume``, ``batch_size``, ``workers``,
    ``sign_processes``, ``similarity`` and ``method`` come one by one (the others take :class:`DedupeOptions`' defaults) or as one
    ``options=DedupeOptions(...)``; not both.

    ``resume=True`` continues a run that stopped, from ``<out>.dedupe-run/``. Raises
    :class:`~neardup_solr.errors.IndexingInterrupted` when Solr stays away while indexing (and other
    :class:`~neardup_solr.errors.SolrUnavailableError` later on): the same call with ``resume=True`` goes on.

    >>> summary = dedupe_file(SolrClient(), "corpus/docs.jsonl", "deduplicated.jsonl", 0.8)
    >>> summary.records, summary.kept
    (5000, 4737)
    """
    started = time.monotonic()
    if client is not None and not isinstance(client, SolrClient):
        raise ParameterTypeError("client", "a SolrClient or None", client)
    run = DedupeOptions.from_keywords(options, dict(
        threshold=threshold, representative=representative, dataset=dataset, clear=clear, resume=resume,
        batch_size=batch_size, workers=workers, sign_processes=sign_processes, similarity=similarity,
        method=method))
    representative, dataset, resume = run.representative, run.dataset, run.resume
    pair_options = run.pair_options()
    threshold = pair_options.threshold
    check_str("id_field", id_field)
    check_str("text_field", text_field)
    check_choice("on_decode_error", on_decode_error, DECODE_POLICIES)
    progress = check_bool("progress", progress)
    # Everything that can be refused is refused before Solr is asked anything.
    fmt = check_files(path, out, fmt, pairs_out=pairs_out, groups_out=groups_out, keep_out=keep_out,
                      rejects_path=rejects_path)
    out = Path(out)
    rejects = Path(rejects_path) if rejects_path is not None else sibling(out, REJECTS_SUFFIX)
    client = client or SolrClient()
    reading = _Reading(fmt, id_field, text_field, on_decode_error)
    # Before an hour of indexing, not after it: the settings the documents will carry must serve the pairs. Only a
    # run by meaning has a need to check, so only it asks Solr for the stored settings.
    if settings is not None:
        _check_settings_serve(run, settings)
    elif run.similarity == "cosine" and not resume:
        _check_settings_serve(run, DEDUPE_SETTINGS if run.clear == "all" or holds_no_documents(client)
                              else read_index_settings(client))

    summary = DedupeSummary(source=str(path), out=str(out), threshold=threshold, similarity=run.similarity)
    with OutputLock(out):
        stat = Path(path).stat()
        state = _RunState(sibling(out, RUN_DIR_SUFFIX), {
            "input": str(Path(path).resolve()), "size": stat.st_size, "mtime": stat.st_mtime, **asdict(reading),
            "threshold": threshold, "similarity": run.similarity, "method": run.method, "dataset": dataset,
            "solr": client.url,
            "settings": None if settings is None else asdict(settings)})
        summary.resumed = resume and state.load()
        if not summary.resumed:
            state.remove()
            rejects.unlink(missing_ok=True)
            state.save()
        bar = progress_bar(progress, desc="dedupe 1/4 indexing")
        try:
            clock = _StageClock(summary.stages)
            indexed = _index(client, path, state, summary, reading, bar, settings=settings, run=run, rejects=rejects)
            clock.lap("indexing")
            if indexed is not None:
                summary.stages["signing"] = round(indexed.signing_seconds, 3)
                summary.sign_processes = indexed.sign_processes
                summary.stages["waiting for Solr"] = round(indexed.solr_wait_seconds, 3)
            records = state.indexed or 0
            # The input's size is known from here on: the bar shows the share of the whole run done (every
            # stage counts the input's records once), no longer a count of records that would pass the total.
            bar.total = STAGES * records
            bar.bar_format = RUN_BAR_FORMAT
            bar.refresh()
            pairs, engine_seconds = _find_pairs(client, state, pair_options, work_dir, bar)
            bar.update(records)
            clock.lap("finding pairs")
            summary.stages.update(engine_seconds)

            bar.set_description_str("dedupe 3/4 grouping")
            rejected_lines = _read_rejects(rejects, summary)
            pair_ids = {a for a, _, _ in pairs} | {b for _, b, _ in pairs}
            scan = _scan(path, reading, rejected_lines, pair_ids if representative == "longest" else set(),
                         bar.update)
            inside = [p for p in pairs if p[0] in scan.accepted and p[1] in scan.accepted]
            summary.foreign_pairs = len(pairs) - len(inside)
            if summary.foreign_pairs:
                log.warning("%d pair(s) with a document that is not in %s left out (the collection holds other "
                            "documents: clear it, or give the corpus a dataset of its own)", summary.foreign_pairs,
                            path)
            # The groups command's reading of a pairs file: the similarity as the file spells it (6 decimals)
            # becomes the Jaccard distance, so that --groups is byte for byte what `groups PAIRS` writes.
            groups = group_pairs([(a, b, round(1.0 - float(f"{s:.6f}"), 6)) for a, b, s in inside],
                                 representative=representative,
                                 texts=scan.texts if representative == "longest" else None)
            dropped = {m for g in groups for m in g.members if m != g.representative}
            clock.lap("grouping")

            bar.set_description_str("dedupe 4/4 writing")
            keep = _keeper(rejected_lines, scan.last_line, dropped)
            written = write_kept_records(path, out, keep, fmt=reading.fmt, id_field=reading.id_field,
                                         text_field=reading.text_field, on_decode_error=reading.on_decode_error,
                                         on_progress=bar.update)
            clock.lap("writing")
        finally:
            bar.close()
        _write_extras(summary, inside, groups, scan.accepted, pairs_out, groups_out, keep_out)
        state.remove()
    summary.records = scan.records
    summary.text_bytes = scan.text_bytes
    summary.rejected = scan.rejected
    summary.repeated_ids = scan.repeated_records
    summary.kept = written.written
    summary.dropped = summary.records - summary.kept - summary.rejected
    summary.pairs = len(inside)
    summary.groups = len(groups)
    summary.seconds = time.monotonic() - started
    log.info("%s", summary.format())
    return summary


def check_files(path: str | Path, out: str | Path, fmt: str | None = None, *, pairs_out: str | Path | None = None,
                groups_out: str | Path | None = None, keep_out: str | Path | None = None,
                rejects_path: str | Path | None = None) -> str:
    """The input's format, once the input is found readable and every output writable, each its own file and
    ``out`` named for the input's format; else the error :func:`dedupe_file` would raise, before any Solr work
    (the command line asks this before it connects)."""
    if not isinstance(path, (str, Path)):
        raise ParameterTypeError("path", "a file path (str or Path)", path)
    if is_stdin(path):
        raise InputFormatError("dedupe reads its input more than once, so it needs a file, not standard input "
                               "('-'): save the records to a file first")
    check_choice("fmt", fmt, FORMATS, none_ok=True)
    fmt = input_format(path, fmt)
    checked_out = check_output_path(out)
    check_output_format(checked_out, fmt)
    rejects = rejects_path if rejects_path is not None else sibling(checked_out, REJECTS_SUFFIX)
    _check_distinct_outputs(Path(path), checked_out, {"pairs_out": pairs_out, "groups_out": groups_out,
                                                      "keep_out": keep_out, "rejects_path": rejects})
    return fmt


def _check_distinct_outputs(source: Path, out: Path, others: dict[str, Any]) -> None:
    """Every output its own file, none of them the input."""
    seen = {source.resolve(): "the input", out.resolve(): "out"}
    if out.resolve() == source.resolve():
        raise InvalidParameterError("out", "another file than the input", str(out))
    for name, value in others.items():
        if value is None:
            continue
        target = check_output_path(value, name=name).resolve()
        if target in seen:
            raise InvalidParameterError(name, f"another file than {seen[target]}", str(value))
        seen[target] = name


class _StageClock:
    """Seconds since the previous lap, stored under each stage's name."""

    def __init__(self, stages: dict[str, float]):
        self.stages = stages
        self.since = time.monotonic()

    def lap(self, name: str) -> None:
        now = time.monotonic()
        self.stages[name] = round(now - self.since, 3)
        self.since = now


def _index(client: SolrClient, path: str | Path, state: _RunState, summary: DedupeSummary, reading: _Reading,
           bar: Any, *, settings: IndexSettings | None, run: DedupeOptions, rejects: Path) -> IndexSummary | None:
    """The indexing stage's summary; None when a resumed run finds every record indexed already."""
    if state.indexed is not None:  # a resumed run whose records are all in the index
        bar.update(state.indexed)
        return None
    if run.clear is not None and not summary.resumed:
        deleted = clear_collection(client, run.dataset if run.clear == "dataset" else None,
                                   everything=run.clear == "all")
        log.info("cleared %d documents before indexing", deleted)
    if settings is None:
        settings = _settings_for_dedupe(client)
    indexer = Indexer(client, settings, batch_size=run.batch_size, workers=run.workers, dataset=run.dataset,
                      sign_processes=run.sign_processes)
    indexed = indexer.index_file(path, reading.fmt, id_field=reading.id_field, text_field=reading.text_field,
                                 on_decode_error=reading.on_decode_error,
                                 rejects_path=rejects, resume=summary.resumed, checkpoint_path=state.checkpoint_path,
                                 bar=bar)
    state.indexed = indexed.read + indexed.skipped_by_resume
    state.save()
    return indexed


def _check_settings_serve(run: DedupeOptions, settings: IndexSettings | None) -> None:
    """Refuse a run by meaning whose collection will hold no vectors (or, for method hybrid, no band tokens)."""
    if run.similarity != "cosine":
        return
    if settings is None or settings.encoder is None:
        raise InvalidParameterError("encoder", "given with similarity 'cosine' (the pairs are the cosines of the "
                                    "vectors of meaning, which only a collection indexed with an encoder holds: "
                                    "--encoder wordllama on the command line, IndexSettings(encoder=...) in "
                                    "Python)", None,
                                    show_value=False)
    if run.method == "hybrid" and "lsh" not in settings.fields:
        raise InvalidParameterError("fields", "a list including lsh with method 'hybrid' (it adds the documents sharing an "
                                    "LSH band to the graph's candidates)", ",".join(settings.fields))


def _settings_for_dedupe(client: SolrClient) -> IndexSettings | None:
    """DEDUPE_SETTINGS for a collection without documents; None (the stored settings) for one that has some."""
    return DEDUPE_SETTINGS if holds_no_documents(client) else None


def _find_pairs(client: SolrClient, state: _RunState, options: ThresholdOptions,
                work_dir: str | Path | None, bar: Any) -> tuple[list[tuple[str, str, float]], dict[str, float]]:
    """The pairs, found once: a resumed run reads them back from its run directory. With them, the LSH engine's
    own split of its time (STAGE_PARTS of "finding pairs"; none for a resumed run): reading the signatures into the
    signature store, the candidate pairs (and their estimates), and the exact verification (reading the
    candidates' texts, shingling, Jaccard)."""

    stages: dict[str, float] = {}
    if not state.pairs_found:
        bar.set_description_str("dedupe 2/4 finding pairs")
        found = find_pairs(client, options, work_dir=work_dir)
        seconds = found.stats.get("seconds", {})
        if "signatures" in seconds:
            stages["reading signatures"] = seconds["signatures"]
            stages["candidate pairs"] = round(seconds.get("candidates", 0.0) + seconds.get("estimate", 0.0), 3)
            stages["verifying"] = seconds.get("verify", 0.0)
        write_pairs(found.pairs, state.pairs_path)
        state.pairs_found = True
        state.save()
    # Read back from the file, so that a resumed run and a clean one group the same (6-decimal) similarities.
    pairs = [(a, b, float(s or 0.0)) for a, b, s in read_distance_pairs(open_text_lines(state.pairs_path),
                                                                       source=str(state.pairs_path))]
    return pairs, stages


def _read_rejects(rejects: Path, summary: DedupeSummary) -> set[int]:
    """The input lines the index stage rejected (a resumed run may have written some twice)."""
    summary.rejects_path = str(rejects) if rejects.exists() else None
    lines: set[int] = set()
    if not rejects.exists():
        return lines
    with open(rejects, encoding="utf-8") as fh:
        for text in fh:
            entry = json.loads(text)
            line = entry.get("line")
            if line is None or line in lines:
                continue
            lines.add(int(line))
            if len(summary.rejections) < REJECTIONS_SHOWN:
                summary.rejections.append(Rejection(entry.get("source") or "", line, entry.get("id"),
                                                    entry.get("reason") or ""))
    return lines


def _scan(path: str | Path, reading: _Reading, rejected_lines: set[int], text_ids: set[str],
          on_progress: Callable[[int], None]) -> _Scan:
    scan = _Scan()
    for item in RecordReader(path, reading.fmt, id_field=reading.id_field, text_field=reading.text_field,
                             on_decode_error=reading.on_decode_error):
        scan.records += 1
        if scan.records % 1000 == 0:
            on_progress(1000)
        if isinstance(item, Record):
            scan.text_bytes += utf8_size(item.text)
        if not isinstance(item, Record) or item.line in rejected_lines:
            scan.rejected += 1
            continue
        if item.id in scan.accepted:
            scan.repeated_records += 1
            scan.last_line[item.id] = item.line
        else:
            scan.accepted.add(item.id)
        if item.id in text_ids:
            scan.texts[item.id] = item.text
    on_progress(scan.records % 1000)
    return scan


def _keeper(rejected_lines: set[int], last_line: dict[str, int], dropped: set[str]) -> Callable[[Record], bool]:
    """Whether a record goes to the output: not rejected, the last record of its id, its id not dropped."""

    def keep(record: Record) -> bool:
        return (record.line not in rejected_lines and last_line.get(record.id, record.line) == record.line
                and record.id not in dropped)

    return keep


def _write_extras(summary: DedupeSummary, pairs: list[tuple[str, str, float]], groups: list[Group],
                  accepted: set[str], pairs_out: str | Path | None, groups_out: str | Path | None,
                  keep_out: str | Path | None) -> None:
    """The pairs, groups and keep list in the formats of ``report``, ``groups --out`` and ``groups --keep
    --with-singletons``."""
    if pairs_out is not None:
        write_pairs([SimilarPair(a, b, s) for a, b, s in pairs], pairs_out)
        summary.pairs_path = str(pairs_out)
    if groups_out is not None:
        write_groups_jsonl(groups, groups_out)
        summary.groups_path = str(groups_out)
    if keep_out is not None:
        write_keep_list(keep_list(groups, accepted), keep_out)
        summary.keep_path = str(keep_out)
