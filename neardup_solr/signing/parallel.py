"""Sign batches on every core: the indexer's :class:`~neardup_solr.signing.builder.DocumentBuilder` in worker
processes, batches handed out and taken back in order.

Why processes: on web pages of ~14 KB the client's signing is most of an indexing run that writes only the lean
fields (issue 48: 52 of `dedupe`'s 75 s of indexing at 100k pages, one core busy, the other idle while Solr waits).
The work is half the compiled kernel and half the normaliser's string methods, all under the GIL, so threads
would not help. A worker gets the batch's ids and texts and sends back the documents without their ``content``
(the text itself, which the caller holds): the texts cross the pipe once.

What stays the same: the documents are :meth:`DocumentBuilder.build`'s, field for field, whatever the number of
processes (``tests/unit/signing/test_parallel.py``). The pool starts once the batches signed on the calling
thread have taken :data:`POOL_AFTER_SECONDS`, so a small input (a service request, the restaurant records, a
test) never pays for starting processes (about 0.4 s each here); ``spawn`` starts them, never ``fork``,
because the caller has threads (Solr requests in flight, the progress bar) whose locks a forked child would
inherit held. A spawned child normally runs the caller's main script again (as ``__mp_main__``), which would
repeat whatever a script without an ``if __name__ == "__main__":`` guard does at its top (clearing a collection,
indexing a file) in every worker: the workers are started with the main module hidden, so they import only this
package (``tests/unit/signing/test_parallel.py`` runs such a script). A worker that dies (killed, out of memory)
is logged, and its batch and every one after it are signed on the calling thread: the run goes on, slower.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import sys
import time
import types
from concurrent.futures import Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from typing import Iterator, Sequence

from neardup_solr.signing.builder import BuiltBatch, DocumentBuilder
from neardup_solr.signing.settings import IndexSettings

log = logging.getLogger(__name__)

__all__ = ["BatchSigner", "PendingBatch", "SignedBatch", "default_sign_processes"]

# More processes than this gain nothing measurable for one Solr: beyond it the client's reading and Solr are the
# limit, and every process holds its own copy of the MinHash masks and the normaliser's tables.
MAX_DEFAULT_PROCESSES = 8

# Signing time on the calling thread after which the worker processes start: several times their start-up.
POOL_AFTER_SECONDS = 2.0

SignedBatch = tuple[BuiltBatch, float]  # the documents and rejections, and the seconds the build took


def default_sign_processes() -> int:
    """The cores this process may run on, at most :data:`MAX_DEFAULT_PROCESSES` (1: sign on the calling thread)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, MAX_DEFAULT_PROCESSES))


# One builder per worker process, made once by the pool's initializer.
_worker_builder: DocumentBuilder | None = None
_worker_dataset: str | None = None


def _start_worker(settings: IndexSettings, dataset: str | None) -> None:
    global _worker_builder, _worker_dataset
    # Ctrl-C reaches the whole process group: the caller stops the run and the pool, and a worker's own traceback
    # would only bury the caller's message.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _worker_builder = DocumentBuilder(settings)
    _worker_dataset = dataset


def _ready() -> None:
    """A task that does nothing: submitting one per worker starts them all."""


@contextmanager
def _main_module_hidden() -> Iterator[None]:
    """``__main__`` replaced by an empty module (no file, no spec) while processes are spawned, so that they do not
    run the caller's script again."""
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if main is not None:
            sys.modules["__main__"] = main


def _build_in_worker(items: Sequence[tuple]) -> SignedBatch:
    assert _worker_builder is not None, "the pool's initializer did not run"
    started = time.perf_counter()
    built = _worker_builder.build(items, dataset=_worker_dataset)
    for doc in built.documents:
        del doc["content"]  # the caller holds the texts: put back by _with_texts, not sent through the pipe
    return built, time.perf_counter() - started


def _with_texts(signed: SignedBatch, items: Sequence[tuple]) -> SignedBatch:
    """A worker's batch with each document's ``content`` put back, in the builder's key order."""
    built, seconds = signed
    rejected = {index for index, _ in built.rejected}
    texts = (item[1] for index, item in enumerate(items) if index not in rejected)
    built.documents = [{"id": doc["id"], "content": text, **doc} for doc, text in zip(built.documents, texts)]
    return built, seconds


class BatchSigner:
    """Builds the Solr documents of batches, ``processes`` at a time (1: on the calling thread).

    >>> signer = BatchSigner(IndexSettings(fields=("lsh",)), processes=2)
    >>> pending = signer.submit([("a", "some text"), ("b", "other text")])
    >>> built, seconds = pending.result()
    >>> signer.close()
    """

    def __init__(self, settings: IndexSettings, *, dataset: str | None = None, processes: int | None = None,
                 pool_after_seconds: float | None = None):
        self.settings = settings
        self.dataset = dataset
        self.processes = default_sign_processes() if processes is None else processes
        self.pool_after_seconds = POOL_AFTER_SECONDS if pool_after_seconds is None else pool_after_seconds
        self._builder = DocumentBuilder(settings)
        self._pool: ProcessPoolExecutor | None = None
        self._seconds_here = 0.0
        self._broken = False

    def submit(self, items: Sequence[tuple]) -> PendingBatch:
        """The documents of ``items`` ((id, text) or (id, text, fields) tuples), now or later: the pending batch's
        :meth:`~PendingBatch.result` is :meth:`DocumentBuilder.build`'s batch and its build time."""
        if (self.processes > 1 and not self._broken
                and (self._pool is not None or self._seconds_here >= self.pool_after_seconds)):
            return PendingBatch(self, items, remote=self._started_pool().submit(_build_in_worker, items))
        return PendingBatch(self, items, signed=self._build_here(items))

    @property
    def ahead(self) -> int:
        """Batches worth submitting before taking the first result back: enough to keep every process busy once
        they run (0 before: a batch signed on the calling thread is sent at once, as without processes)."""
        return self.processes + 1 if self._pool is not None and not self._broken else 0

    @property
    def processes_used(self) -> int:
        """The processes that signed so far: 1 until the pool started (or once it broke)."""
        return self.processes if self._pool is not None and not self._broken else 1

    def close(self) -> None:
        """Stop the worker processes (pending batches are cancelled)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> BatchSigner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _build_here(self, items: Sequence[tuple]) -> SignedBatch:
        started = time.perf_counter()
        built = self._builder.build(items, dataset=self.dataset)
        seconds = time.perf_counter() - started
        self._seconds_here += seconds
        return built, seconds

    def _started_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            log.info("signing in %d processes", self.processes)
            pool = ProcessPoolExecutor(max_workers=self.processes, mp_context=multiprocessing.get_context("spawn"),
                                       initializer=_start_worker, initargs=(self.settings, self.dataset))
            # Every worker is started here, under the hidden main module: the executor starts them on demand (one
            # per submit while none is idle), so as many quick tasks as workers start them all.
            with _main_module_hidden():
                wait([pool.submit(_ready) for _ in range(self.processes)])
            self._pool = pool
        return self._pool

    def _after_broken_pool(self, error: BaseException, items: Sequence[tuple]) -> SignedBatch:
        if not self._broken:
            log.warning("a signing process died (%s); signing the rest on the calling thread", error)
        self._broken = True
        return self._build_here(items)


class PendingBatch:
    """A batch given to :meth:`BatchSigner.submit`: signed already, or in a worker process."""

    def __init__(self, signer: BatchSigner, items: Sequence[tuple], *, remote: Future | None = None,
                 signed: SignedBatch | None = None):
        self._signer = signer
        self._items = items
        self._remote = remote
        self._signed = signed

    def result(self) -> SignedBatch:
        """The built batch and the seconds its build took (waits for the worker; called on the caller's thread, so
        a batch whose worker died is signed here, with the same builder as every inline batch)."""
        if self._signed is None:
            assert self._remote is not None
            try:
                self._signed = _with_texts(self._remote.result(), self._items)
            except BrokenProcessPool as error:
                self._signed = self._signer._after_broken_pool(error, self._items)
        return self._signed

    def cancel(self) -> None:
        """Drop the batch if no worker has started it."""
        if self._remote is not None:
            self._remote.cancel()
