"""Files in, Solr documents out: in batches, with progress, rejects, retries and resumable checkpoints.

Guarantees:
  * one bad record never sinks a batch: it goes to the rejects file (JSONL, with the reason) and the rest is
    indexed; a batch Solr refuses as bad (HTTP 4xx) is split until the refusing document is found;
  * a refusal that is Solr's (5xx: full disk, exhausted heap, closed index writer; or Solr away for longer
    than the client waits) is never the record's: the run stops, nothing is written to the rejects file, and
    ``resume=True`` sends those records again;
  * the checkpoint only moves past lines Solr has made durable: it is saved after a hard commit, never after a
    mere acknowledgement (an acknowledged document can still be lost when Solr's disk fills or its heap runs
    out before a commit). On SolrCloud a commit answered OK is weaker: a shard whose node died may not have
    committed (seen in the cluster fault tests: 213 of 400 checkpointed lines missing after the node came
    back), so there the guarantee rests on the next point, which caught and re-sent every one of them;
  * proof, not belief: after the final commit, every id acknowledged in the run is looked up in the index (in
    bounded memory, see :mod:`neardup_solr.solr.verify`); a resume first checks that the lines it skips are in the
    index, and starts again from the first one that is not;
  * duplicate ids in one input: the last one wins (as Solr's overwrite does), and they are counted;
  * re-indexing the same file is idempotent (documents are keyed by id).
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, TextIO

from neardup_solr.signing.parallel import BatchSigner, PendingBatch, default_sign_processes
from neardup_solr.signing.settings import META_DATASET, IndexSettings
from neardup_solr.solr.settings_store import ensure_index_settings, read_index_settings
from neardup_solr.errors import (
    IndexIncomplete,
    IndexingInterrupted,
    InputFormatError,
    InvalidRecordError,
    ParameterTypeError,
    SolrRequestError,
    SolrUnavailableError,
)
from neardup_solr.solr.maintenance import require_neardup_schema, require_token_fields
from neardup_solr.io.progress import progress_bar
from neardup_solr.io.outputs import check_output_path
from neardup_solr.io.inputs import STDIN, STDIN_NAME, is_stdin
from neardup_solr.io.readers import DECODE_POLICIES, FORMATS, ReadItem, Record, RecordReader, input_format
from neardup_solr.io.throughput import format_rates, megabytes_per_second, utf8_size
from neardup_solr.solr.client import SolrClient
from neardup_solr.solr.ttl import check_ttl
from neardup_solr.validation import (
    check_bool,
    check_choice,
    check_float,
    check_int,
    check_label,
    check_str,
    record_problem,
)
from neardup_solr.solr.verify import SortedSpill, VerifyResult, compare, verify_ids

log = logging.getLogger(__name__)


# Rejections kept in memory on the summary (every one goes to the rejects file and the log, and is counted).
MAX_REJECTIONS_KEPT = 10_000


@dataclass
class Rejection:
    """One record that was not indexed: where it came from, its id (None when it had none) and why."""

    source: str
    line: int | None
    id: str | None
    reason: str


@dataclass
class IndexSummary:
    """What an indexing run did: counts, timings, where its rejects and checkpoint are, and its checks.

    ``rejections`` holds the first :data:`MAX_REJECTIONS_KEPT` rejected records with their reasons (all of them
    are counted in ``rejected`` and written to the rejects file when there is one)."""

    source: str
    read: int = 0
    indexed: int = 0
    rejected: int = 0
    duplicate_ids: int = 0
    skipped_by_resume: int = 0
    recoded_lines: int = 0
    blank_lines: int = 0
    seconds: float = 0.0
    # UTF-8 bytes of the texts read this run (not those a resume skipped): the MB/s beside the docs/s.
    text_bytes: int = 0
    # Where the run's seconds went (the rest is reading and parsing the input): building the documents (normalising,
    # shingling, MinHash, LSH keys; summed over the signing processes, so with several it can exceed the run's
    # seconds) and waiting for Solr (adds not yet acknowledged while the next batch could not be sent, the hard
    # commits, the final commit and check).
    signing_seconds: float = 0.0
    sign_processes: int = 1
    solr_wait_seconds: float = 0.0
    rejects_path: str | None = None
    checkpoint_path: str | None = None
    interrupted: str | None = None
    verification: VerifyResult | None = None
    resume_verification: VerifyResult | None = None
    rejections: list[Rejection] = field(default_factory=list)

    @property
    def docs_per_second(self) -> float:
        """Documents indexed per second of the run."""
        return self.indexed / self.seconds if self.seconds > 0 else 0.0

    @property
    def megabytes_per_second(self) -> float:
        """Megabytes (10**6 bytes, UTF-8) of text read per second of the run."""
        return megabytes_per_second(self.text_bytes, self.seconds)

    def format(self) -> str:
        """The summary as the CLI prints it."""
        parts = [
            f"read {self.read}",
            f"indexed {self.indexed}",
            f"rejected {self.rejected}",
        ]
        if self.duplicate_ids:
            parts.append(f"duplicate ids {self.duplicate_ids} (last one kept)")
        if self.recoded_lines:
            parts.append(f"non-UTF-8 lines decoded as Latin-1 {self.recoded_lines}")
        if self.skipped_by_resume:
            parts.append(f"skipped (already indexed) {self.skipped_by_resume}")
        rates = format_rates(self.indexed, self.text_bytes, self.seconds)
        text = ", ".join(parts) + f" in {self.seconds:.1f} s ({rates})"
        if self.rejected and self.rejects_path:
            text += f"\nrejected records with reasons: {self.rejects_path}"
        if self.resume_verification is not None and not self.resume_verification.ok:
            text += (f"\nthe checkpoint said more was indexed than the index holds ({self.resume_verification.format()});"
                     " those lines were sent again")
        if self.interrupted:
            text += f"\nSTOPPED: {self.interrupted}\nre-run the same command with --resume to index the rest"
        elif self.verification is not None:
            if self.verification.ok:
                text += f"\n{self.verification.format()}"
            else:
                text += (f"\nINDEX INCOMPLETE after the final commit: {self.verification.format()}"
                         "\nre-run the same command with --resume to send them again")
        return text


class _Checkpoint:
    """The last input line that Solr holds durably: this batch and every batch before it were acknowledged and
    then covered by a successful hard commit."""

    def __init__(self, path: Path, source: Path):
        self.path = path
        self.source = source
        self._identity_cache: dict | None = None

    def _identity(self) -> dict:
        # Taken once per run: the input does not change under a run, and a stat per batch shows in profiles.
        if self._identity_cache is None:
            stat = self.source.stat()
            self._identity_cache = {"source": str(self.source.resolve()), "size": stat.st_size,
                                    "mtime": stat.st_mtime}
        return self._identity_cache

    def load(self) -> int:
        try:
            data = json.loads(self.path.read_text())
        except (FileNotFoundError, ValueError):
            return 0
        if {k: data.get(k) for k in ("source", "size", "mtime")} != self._identity():
            log.warning("checkpoint %s belongs to another version of the input; starting from the top", self.path)
            return 0
        return int(data.get("line", 0))

    def save(self, line: int) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({**self._identity(), "line": line}))
        os.replace(tmp, self.path)

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)


class _Rejects:
    def __init__(self, path: Path | None, kept: list[Rejection]):
        self.path = path
        self._fh: TextIO | None = None
        self.count = 0
        self.kept = kept

    def write(self, *, source: str, line: int | None, record_id: str | None, reason: str,
              text: object = None) -> None:
        self.count += 1
        if len(self.kept) < MAX_REJECTIONS_KEPT:
            self.kept.append(Rejection(source, line, record_id, reason))
        log.warning("rejected %s line %s (id %r): %s", source, line, record_id, reason)
        if self.path is None:
            return
        if self._fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(self.path, "a", encoding="utf-8")
        if text is not None and not isinstance(text, str):
            text = repr(text)  # a record's text that was not a str is shown, not serialised
        self._fh.write(
            json.dumps({"source": source, "line": line, "id": record_id, "reason": reason, "text": text},
                       ensure_ascii=False) + "\n"
        )
        self._fh.flush()

    def close(self) -> None:
        if self._fh:
            self._fh.close()


class Indexer:
    """Index files or records into one collection.

    >>> indexer = Indexer(SolrClient(), IndexSettings(ngram=3, num_hashes=128))
    >>> print(indexer.index_file("addresses.txt").format())
    """

    def __init__(
        self,
        client: SolrClient | None = None,
        settings: IndexSettings | None = None,
        *,
        batch_size: int = 500,
        commit_every: int = 20000,
        commit_seconds: float = 60.0,
        workers: int = 2,
        progress: bool = False,
        dataset: str | None = None,
        ttl: str | None = None,
        sign_processes: int | None = None,
    ):
        """``settings`` are used for an empty collection and must equal the stored ones otherwise (None: the
        stored ones, else defaults). ``batch_size`` documents go to Solr per request, ``workers`` requests at
        a time; a hard commit (which moves the checkpoint) follows every ``commit_every`` documents or
        ``commit_seconds`` seconds. ``dataset`` labels the records (for joins); ``progress`` shows a bar. ``ttl`` (Solr date math such
        as ``+30DAYS``) makes the records expire that long after Solr receives them (see :mod:`neardup_solr.solr.ttl`).
        ``sign_processes`` sign the batches (None: one per core, see
        :func:`~neardup_solr.signing.parallel.default_sign_processes`; 1: on the calling thread); the documents are
        the same whatever the number."""
        if client is not None and not isinstance(client, SolrClient):
            raise ParameterTypeError("client", "a SolrClient or None", client)
        if settings is not None and not isinstance(settings, IndexSettings):
            raise ParameterTypeError("settings", "an IndexSettings or None", settings,
                                     "build one with IndexSettings(ngram=..., num_hashes=...)")
        self.batch_size: int = check_int("batch_size", batch_size, "batch_size")
        # A hard commit (no new searcher: cheap) every commit_every documents or commit_seconds seconds makes the
        # acknowledged documents durable; the checkpoint moves only then. A smaller interval re-sends less
        # after a failure and costs a little indexing speed.
        self.commit_every: int = check_int("commit_every", commit_every, "commit_every")
        self.commit_seconds: float = check_float("commit_seconds", commit_seconds, "commit_seconds")
        self.workers: int = check_int("workers", workers, "workers")
        self.sign_processes: int = (default_sign_processes() if sign_processes is None
                                    else check_int("sign_processes", sign_processes, "sign_processes"))
        self.progress = check_bool("progress", progress)
        self.dataset: str | None = check_label("dataset", dataset, reserved=(META_DATASET,))
        self.ttl: str | None = check_ttl(ttl)
        self.requested_settings = settings
        self.client = client or SolrClient()

    # ------------------------------------------------------------------ public API
    def index_file(
        self,
        path: str | Path,
        fmt: str | None = None,
        *,
        id_field: str = "id",
        text_field: str = "text",
        on_decode_error: str = "latin-1",
        rejects_path: str | Path | None = None,
        resume: bool = False,
        checkpoint_path: str | Path | None = None,
        bar: Any = None,
        transform: Callable[[ReadItem], ReadItem] | None = None,
    ) -> IndexSummary:
        """Index the records of a file (``fmt``: lines, tsv, jsonl or csv; None guesses from the name).

        Rejected records go to ``rejects_path`` (JSONL) with their reasons; ``resume=True`` continues a stopped
        run from its checkpoint. ``bar``: a progress bar of a longer run to count the records on (left open),
        instead of the indexer's own. Raises :class:`IndexingInterrupted` when Solr stays away (the summary says how
        far the run got) and :class:`IndexIncomplete` when the final check finds documents missing.
        ``transform`` turns each record read into the one indexed (or into an InvalidRecordError, rejected with
        its reason): field records are indexed with their candidate text (:mod:`neardup_solr.engine.records_online`)."""
        if not isinstance(path, (str, Path)):
            raise ParameterTypeError("path", "a file path (str or Path, '-' for standard input)", path)
        stdin = is_stdin(path)
        path = Path(path)
        check_choice("fmt", fmt, FORMATS, none_ok=True)
        if stdin and resume:
            raise InputFormatError("standard input ('-') cannot be resumed: it cannot be read again; save it to a "
                                   "file and index the file to be able to resume")
        # Before anything is written: a binary or unreadable input is refused here, not after a batch.
        input_format(STDIN if stdin else path, fmt)
        check_str("id_field", id_field)
        check_str("text_field", text_field)
        check_choice("on_decode_error", on_decode_error, DECODE_POLICIES)
        check_bool("resume", resume)
        if rejects_path is not None:
            check_output_path(rejects_path, name="rejects_path")
        if checkpoint_path is not None:
            check_output_path(checkpoint_path, name="checkpoint_path")

        def reader() -> RecordReader:
            return RecordReader(path, fmt, id_field=id_field, text_field=text_field, on_decode_error=on_decode_error)

        records = reader()
        checkpoint: _Checkpoint | None = None
        start_line = 0
        if not stdin:  # standard input cannot be read again, so a checkpoint could never be resumed from
            checkpoint = _Checkpoint(Path(checkpoint_path or f"{path}.neardup-checkpoint.json"), path)
            if checkpoint_path is None and not os.access(path.parent, os.W_OK):
                checkpoint = _Checkpoint(Path.cwd() / f"{path.name}.neardup-checkpoint.json", path)
            start_line = checkpoint.load() if resume else 0
            if not resume:
                checkpoint.clear()
        summary = IndexSummary(source=STDIN_NAME if stdin else str(path),
                               checkpoint_path=None if checkpoint is None else str(checkpoint.path))
        rejects = _Rejects(Path(rejects_path) if rejects_path else None, summary.rejections)
        summary.rejects_path = str(rejects_path) if rejects_path else None
        try:
            def transformed(read: Iterable[ReadItem]) -> Iterable[ReadItem]:
                return read if transform is None else map(transform, read)

            self._run(transformed(records), summary, rejects, checkpoint, start_line,
                      skipped=lambda line: _ids_up_to(transformed(reader()), line), bar=bar)
        finally:
            rejects.close()
            summary.recoded_lines = records.stats.recoded_lines
            summary.blank_lines = records.stats.blank_lines
        return summary

    def index_records(self, records: Iterable[Any], rejects_path: str | Path | None = None) -> IndexSummary:
        """Index ``(id, text)`` pairs from memory (ids are str or int).

        Each record is indexed or rejected with its reason (``summary.rejections``, and ``rejects_path`` when
        given); a bad record (not a pair, an id of None or with a tab or control character, a text that is
        None or not a str) never stops the batch. See :func:`neardup_solr.validation.id_problem` for ids."""
        if isinstance(records, (str, bytes)) or not isinstance(records, Iterable):
            raise ParameterTypeError("records", "an iterable of (id, text) pairs", records)
        return self.index_read_records(_checked_records(records), rejects_path)

    def index_read_records(self, items: Iterable[ReadItem], rejects_path: str | Path | None = None) -> IndexSummary:
        """Index records already read: each a :class:`~neardup_solr.io.readers.Record` (with its ``fields``,
        when it has some), or an :class:`~neardup_solr.errors.InvalidRecordError`, rejected with its reason."""
        if rejects_path is not None:
            check_output_path(rejects_path, name="rejects_path")
        summary = IndexSummary(source=RECORDS_SOURCE)
        rejects = _Rejects(Path(rejects_path) if rejects_path else None, summary.rejections)
        summary.rejects_path = str(rejects_path) if rejects_path else None
        try:
            self._run(items, summary, rejects, None, 0)
        finally:
            rejects.close()
        return summary

    # ------------------------------------------------------------------ the pipeline
    def _verified_start(self, summary: IndexSummary, checkpoint: _Checkpoint, start_line: int, skipped) -> int:
        """The line to resume after: the checkpoint's, unless some line before it is not in the index."""
        if start_line == 0 or skipped is None:
            return start_line
        # Checkpoint commits are hard commits with openSearcher=false: durable, but not yet visible to the
        # queries that verification pages through. Open a searcher on them first.
        self.client.commit()
        result = verify_ids(self.client, skipped(start_line))
        summary.resume_verification = result
        if result.ok:
            return start_line
        # Not ok means some id is missing, and a missing id always has a line.
        restart = (result.first_bad_line or 1) - 1
        log.warning("resume: %s; sending again from line %d", result.format(), restart + 1)
        checkpoint.save(restart)
        return restart

    def _run(self, items, summary: IndexSummary, rejects: _Rejects, checkpoint: _Checkpoint | None,
             start_line: int, skipped=None, bar: Any = None):
        started = time.monotonic()
        self.client.check()
        # Before anything is written: a core that is not ours gets no settings document and no records.
        require_neardup_schema(self.client)
        # The fields of the settings this run will write with (the stored ones, or the defaults for an empty
        # collection), checked before the settings document is written.
        require_token_fields(self.client,
                             self.requested_settings or read_index_settings(self.client) or IndexSettings())
        settings = ensure_index_settings(self.client, self.requested_settings)
        if checkpoint is not None:
            start_line = self._verified_start(summary, checkpoint, start_line, skipped)
        signer = BatchSigner(settings, dataset=self.dataset, processes=self.sign_processes)
        # Batches handed to the signing processes, in input order, each with its records, whether it repeats an id
        # sent earlier, and the unreadable records read while it filled; sent to Solr in that order once signed.
        signing: deque[tuple[PendingBatch, list[Record], bool, list[InvalidRecordError]]] = deque()
        # Unreadable records read since the last batch was handed on: written to the rejects with that batch's
        # own rejections, so that the rejects file keeps the input's order while batches are being signed.
        unreadable: list[InvalidRecordError] = []
        own_bar = bar is None
        if own_bar:
            bar = progress_bar(self.progress, desc=f"indexing {Path(summary.source).name}")
        seen_ids: set[str] = set()
        in_flight: deque[tuple[Future, int, int]] = deque()  # (future, last line, docs)
        acknowledged = SortedSpill()
        # Lines acknowledged, in input order; durable (and so checkpointed) only after the next hard commit.
        progress = {"acknowledged_line": start_line, "since_commit": 0, "committed_at": time.monotonic()}
        pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="solr-send")
        batch: dict[str, Record] = {}
        batch_has_repeat = False

        def commit_durably() -> None:
            line = int(progress["acknowledged_line"])
            waited = time.monotonic()
            self.client.commit(open_searcher=False)
            summary.solr_wait_seconds += time.monotonic() - waited
            if checkpoint is not None:
                checkpoint.save(line)
            progress["since_commit"] = 0
            progress["committed_at"] = time.monotonic()

        def drain(block_until: int) -> None:
            while len(in_flight) > block_until:
                future, line, ndocs = in_flight.popleft()
                waited = time.monotonic()
                indexed, refused = future.result()
                summary.solr_wait_seconds += time.monotonic() - waited
                summary.indexed += len(indexed)
                for doc_id, doc_line in indexed:
                    acknowledged.add(doc_id, doc_line)
                for doc_id, record, reason in refused:
                    rejects.write(source=record.source, line=record.line, record_id=doc_id, reason=reason,
                                  text=record.text)
                progress["acknowledged_line"] = line
                progress["since_commit"] += len(indexed)
                bar.update(ndocs)
            if (progress["since_commit"] >= self.commit_every
                    or time.monotonic() - progress["committed_at"] >= self.commit_seconds):
                commit_durably()

        def submit(force_serial: bool) -> None:
            nonlocal batch
            if not batch:
                return
            records = list(batch.values())
            batch = {}
            signing.append((signer.submit([(r.id, r.text, r.fields) for r in records]), records, force_serial,
                            unreadable.copy()))
            unreadable.clear()
            while len(signing) > signer.ahead:
                send(*signing.popleft())

        def unreadable_entry(item: InvalidRecordError) -> dict[str, Any]:
            return dict(source=str(item.source), line=item.line, record_id=item.record_id, reason=item.reason)

        def write_unreadable(items: list[InvalidRecordError]) -> None:
            for item in items:
                rejects.write(**unreadable_entry(item))

        def send(pending: PendingBatch, records: list[Record], force_serial: bool,
                 unreadable_before: list[InvalidRecordError]) -> None:
            built, seconds = pending.result()
            summary.signing_seconds += seconds
            if self.ttl is not None:
                for doc in built.documents:
                    doc["ttl"] = self.ttl  # the update chain computes expire_at from it
            refusals = [unreadable_entry(item) for item in unreadable_before] + [
                dict(source=r.source, line=r.line, record_id=r.id, reason=reason, text=r.text)
                for r, reason in ((records[index], reason) for index, reason in built.rejected)]
            for refusal in sorted(refusals, key=lambda entry: entry["line"] or 0):  # by line: the input's order
                rejects.write(**refusal)
            by_id = {r.id: r for r in records}
            if force_serial:
                drain(0)  # an earlier version of a repeated id may still be in flight: keep "last one wins"
            in_flight.append((pool.submit(self._send, built.documents, by_id), records[-1].line,
                              len(records)))
            drain(self.workers)

        try:
            for item in items:
                if isinstance(item, InvalidRecordError):
                    summary.read += 1
                    unreadable.append(item)
                    bar.update(1)
                    continue
                if item.line <= start_line:
                    summary.skipped_by_resume += 1
                    seen_ids.add(item.id)
                    continue
                summary.read += 1
                summary.text_bytes += utf8_size(item.text)
                repeated = item.id in seen_ids
                if repeated:
                    summary.duplicate_ids += 1
                    if item.id in batch:
                        bar.update(1)  # the earlier copy in this batch is replaced, never sent
                        del batch[item.id]
                seen_ids.add(item.id)
                batch[item.id] = item
                batch_has_repeat = batch_has_repeat or repeated
                if len(batch) >= self.batch_size:
                    submit(force_serial=batch_has_repeat)
                    batch_has_repeat = False
            submit(force_serial=batch_has_repeat)
            while signing:
                send(*signing.popleft())
            write_unreadable(unreadable)
            unreadable.clear()
            drain(0)
            waited = time.monotonic()
            self.client.commit()
            summary.verification = compare(acknowledged, self.client)
            summary.solr_wait_seconds += time.monotonic() - waited
            if summary.verification.ok:
                if checkpoint is not None:
                    checkpoint.clear()
            else:
                log.warning("index incomplete after the final commit: %s", summary.verification.format())
                if checkpoint is not None:
                    first_bad = summary.verification.first_bad_line or 1
                    checkpoint.save(min(first_bad - 1, int(progress["acknowledged_line"])))
        except SolrUnavailableError as exc:
            summary.interrupted = str(exc)
            for future, _, _ in in_flight:
                future.cancel()
            for pending, _, _, unreadable_before in signing:
                pending.cancel()
                write_unreadable(unreadable_before)
            write_unreadable(unreadable)
            log.warning("indexing stopped: %s (checkpoint: %s)", exc, checkpoint.path if checkpoint else None)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            summary.sign_processes = signer.processes_used
            signer.close()
            acknowledged.close()
            if own_bar:
                bar.close()
            summary.rejected = rejects.count
            summary.seconds = time.monotonic() - started
        if summary.interrupted:
            raise IndexingInterrupted(summary)
        if summary.verification is not None and not summary.verification.ok:
            raise IndexIncomplete(summary)
        return summary

    def _send(self, docs: list[dict], records: dict[str, Record]) -> tuple[list[tuple[str, int]], list]:
        """Send one batch: returns the (id, line) of the documents Solr acknowledged, and the refused ones.

        Only a refusal that names the request as bad (HTTP 4xx) is the documents' fault: such a batch is
        bisected so that only the offending documents are rejected. Anything that is Solr's own failure
        (SolrServerError, SolrUnavailableError) propagates and stops the run with its checkpoint."""
        if not docs:
            return [], []
        try:
            self.client.add(docs)
            return [(d["id"], records[d["id"]].line) for d in docs], []
        except SolrRequestError as exc:
            if len(docs) == 1:
                doc_id = docs[0]["id"]
                return [], [(doc_id, records[doc_id], f"Solr refused the document: {exc}")]
        mid = len(docs) // 2
        ok_a, bad_a = self._send(docs[:mid], records)
        ok_b, bad_b = self._send(docs[mid:], records)
        return ok_a + ok_b, bad_a + bad_b


RECORDS_SOURCE = "<records>"


def _checked_records(records: Iterable[Any]) -> Iterator[Record | InvalidRecordError]:
    """In-memory records as Records, or as InvalidRecordErrors with their reasons (rejected, never raised)."""
    for number, record in enumerate(records, start=1):
        checked = record_problem(record)
        if isinstance(checked, str):
            doc_id = _shown_id(record)
            yield InvalidRecordError(checked, source=RECORDS_SOURCE, line=number, record_id=doc_id)
        else:
            yield Record(checked[0], checked[1], RECORDS_SOURCE, number)


def _shown_id(record: Any) -> str | None:
    """The id of a rejected in-memory record, for its rejection, when it has one that can be shown."""
    if isinstance(record, (tuple, list)) and len(record) == 2:
        doc_id = record[0]
        if isinstance(doc_id, str):
            return doc_id
        if isinstance(doc_id, int) and not isinstance(doc_id, bool):
            return str(doc_id)
    return None


def _ids_up_to(records: Iterable, last_line: int):
    """(id, line) of the readable records on lines 1..last_line."""
    for record in records:
        if record.line is not None and record.line > last_line:
            return
        if isinstance(record, Record):
            yield record.id, record.line
