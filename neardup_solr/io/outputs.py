"""Result files that are complete or absent, and long jobs that continue where a stopped run ended.

Every file a command writes (the report, threshold and join pairs, groups, the keep list) goes through here:

* **Atomic.** The result is written to ``<out>.tmp``, fsynced, and renamed over ``<out>`` only when it is
  complete. A stopped run never leaves a file named ``<out>`` holding part of a result, and an earlier
  complete ``<out>`` stays until the new one replaces it.
* **Checked first.** :func:`check_output_path` refuses a missing directory, a directory given as the file, or
  a directory we cannot write in, with one line, before any Solr work is done.
* **One writer.** ``<out>.lock`` is held with ``flock`` for as long as a run writes ``<out>``; a second run on
  the same ``<out>`` is refused at once (:class:`OutputInUseError`).
* **Resumable.** :class:`ResumableOutput` serves the jobs that do one lookup per unit (report, exact threshold
  report, join). Each finished unit's records are appended to ``<out>.partial`` (one JSON array per line, so
  ids and floats read back exactly), and ``<out>.partial.progress.json`` records how far the run got::

      {"job": "report", "params": {...}, "total": 9604, "done": 412, "last": "412", "bytes": 10771,
       "pairs": 76, "updated": "2026-11-24T10:31:07Z"}

  ``done`` units (in the job's own order) are complete, and their records are the first ``bytes`` bytes of
  the partial. ``resume=True`` checks that ``params`` equal the stopped run's, truncates the partial to
  ``bytes`` (a crash may have left a unit's records half written after that point) and hands the job the
  records done so far and the number of units to skip. The final file is rendered from all records at the end,
  so a stopped-then-resumed run writes the same bytes as a clean run.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import logging
import os
import time
from pathlib import Path
from typing import Any, BinaryIO, Iterable, Iterator

from neardup_solr.errors import (
    InvalidParameterError,
    OutputInUseError,
    ParameterTypeError,
    RunStopped,
    SolrUnavailableError,
)

log = logging.getLogger(__name__)

PARTIAL_SUFFIX = ".partial"
PROGRESS_SUFFIX = ".partial.progress.json"
TMP_SUFFIX = ".tmp"
LOCK_SUFFIX = ".lock"
PARTIAL_HEADER = "# partial result of a stopped neardup-solr run: not a result; the same command with --resume continues it\n"
# How often the progress sidecar is rewritten: each update fsyncs the partial, so not after every unit.
PROGRESS_INTERVAL_S = 1.0
# Parameters that are digests of the input (see digest_of): a changed digest means changed data, not an option.
DIGEST_KEYS = ("documents", "records")


def sibling(path: str | Path, suffix: str) -> Path:
    """``path`` with ``suffix`` appended to its name (``out.tsv`` -> ``out.tsv.partial``)."""
    path = Path(path)
    return path.with_name(path.name + suffix)


# An output path of "-" means standard output (the command line's --out -).
STDOUT = "-"


def is_stdout(path: object) -> bool:
    """Whether ``path`` names standard output (``"-"``)."""
    return isinstance(path, (str, Path)) and str(path) == STDOUT


def write_stdout(chunks: Iterable[str]) -> None:
    """Write a whole result to standard output (there is nothing to make atomic: it is a stream)."""
    import sys

    for chunk in chunks:
        sys.stdout.write(chunk)
    sys.stdout.flush()


def check_output_path(path: str | Path, name: str = "out") -> Path:
    """``path`` as a Path when a file can be written there (``"-"``: standard output); otherwise
    :class:`~neardup_solr.errors.InvalidParameterError` naming the parameter (``name``) and saying what to do.
    Jobs call it before any Solr work, so that a result is never computed only to find it cannot be written."""
    if is_stdout(path):
        return Path(STDOUT)
    if not isinstance(path, (str, Path)) or (isinstance(path, str) and not path.strip()):
        if isinstance(path, str):
            raise InvalidParameterError(name, "a file path", path)
        raise ParameterTypeError(name, "a file path (str or Path)", path)
    path = Path(path)
    requirement = "a path where a file can be written"
    if path.is_dir():
        raise InvalidParameterError(name, requirement, str(path),
                                    f"{path} is a directory: give a file path (e.g. {path / 'pairs.tsv'})")
    parent = path.parent
    if not parent.is_dir():
        raise InvalidParameterError(name, requirement, str(path),
                                    f"the directory {parent} does not exist (create it, or choose another path)")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InvalidParameterError(name, requirement, str(path),
                                    f"no permission to create files in {parent} (choose another path)")
    return path


class OutputLock:
    """An exclusive, non-blocking ``flock`` on ``<out>.lock``, removed again on release.

    The lock file is unlinked while the lock is held, so a run that opened the old file before the unlink could
    lock an orphan; acquiring therefore re-checks that the locked file is still the one at the path.
    """

    def __init__(self, out: str | Path):
        self.out = Path(out)
        self.path = sibling(out, LOCK_SUFFIX)
        self._fd: int | None = None

    def acquire(self) -> "OutputLock":
        """Take the lock, or raise OutputInUseError at once when another run holds it."""
        while True:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            except PermissionError:
                raise ValueError(f"cannot write {self.out}: no permission to create files in {self.out.parent} "
                                 "(choose another output path)") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                os.close(fd)
                if exc.errno in (errno.EAGAIN, errno.EACCES):
                    raise OutputInUseError(
                        f"another run is writing {self.out} (it holds {self.path}); wait for it to finish, or "
                        "choose another output path") from None
                raise
            try:
                same_file = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same_file = False
            if same_file:
                os.ftruncate(fd, 0)
                os.write(fd, f"{os.getpid()}\n".encode())
                self._fd = fd
                return self
            os.close(fd)

    def release(self) -> None:
        """Remove the lock file and let the lock go (idempotent)."""
        if self._fd is None:
            return
        self.path.unlink(missing_ok=True)
        os.close(self._fd)
        self._fd = None

    def __enter__(self) -> "OutputLock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def _fsync_directory(directory: Path) -> None:
    # The rename is only durable once the directory entry is on disk.
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _replace_atomically(path: Path, chunks: Iterable[str]) -> None:
    """Write chunks to ``<path>.tmp`` and rename it over ``path`` once complete (caller holds the lock)."""
    tmp = sibling(path, TMP_SUFFIX)
    try:
        with open(tmp, "w", encoding="utf-8", newline="") as fh:
            for chunk in chunks:
                fh.write(chunk)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_directory(path.parent)


def write_atomically(path: str | Path, chunks: Iterable[str]) -> None:
    """Write a whole output file: ``path`` appears complete or not at all, and one run writes it at a time."""
    if is_stdout(path):
        write_stdout(chunks)
        return
    path = check_output_path(path)
    with OutputLock(path):
        _replace_atomically(path, chunks)


class ResumableOutput:
    """One resumable job's output: lock, partial file, progress sidecar, and the atomic final rename.

    Use it as a context manager around the whole job::

        with ResumableOutput(out, job="report", resume=resume) as output:
            units = ...                                   # enumerate the work (may ask Solr)
            earlier = output.begin(params, total=len(units))
            for unit in units[output.done:]:
                output.add(unit_key, records_of(unit))    # records: JSON-serialisable lists
            output.commit(render(earlier + new_records))

    ``out=None`` makes every call a no-op, so a job can run the same code with or without a file. If the block
    ends with an exception after :meth:`begin`, the partial and its progress are kept; a
    :class:`~neardup_solr.errors.SolrUnavailableError` becomes :class:`RunStopped`, whose message says where
    the partial is and that ``--resume`` continues it.
    """

    def __init__(self, out: str | Path | None, *, job: str, resume: bool = False, unit: str = "documents"):
        # Standard output ("-") keeps no partial: the result is written there once complete, and cannot resume.
        self.to_stdout = is_stdout(out)
        if self.to_stdout and resume:
            raise InvalidParameterError("resume", "False when the output is standard output ('-')", resume,
                                        "a run writing to standard output keeps no partial file to continue")
        self.out = check_output_path(out) if out is not None and not self.to_stdout else None
        self.job = job
        self.resume = resume
        self.unit = unit
        self.done = 0
        self.pairs = 0
        self.total = 0
        self.last: str | None = None
        self._params: dict = {}
        self._bytes = 0
        self._fh: BinaryIO | None = None
        self._saved_at = 0.0
        self._lock = OutputLock(self.out) if self.out is not None else None

    @property
    def partial_path(self) -> Path | None:
        """``<out>.partial`` (None without an output file)."""
        return sibling(self.out, PARTIAL_SUFFIX) if self.out is not None else None

    @property
    def progress_path(self) -> Path | None:
        """``<out>.partial.progress.json`` (None without an output file)."""
        return sibling(self.out, PROGRESS_SUFFIX) if self.out is not None else None

    # The internals below run only with an output file; these give its paths without the None case.
    @property
    def _out(self) -> Path:
        assert self.out is not None
        return self.out

    @property
    def _partial(self) -> Path:
        return sibling(self._out, PARTIAL_SUFFIX)

    @property
    def _progress(self) -> Path:
        return sibling(self._out, PROGRESS_SUFFIX)

    def _file(self) -> BinaryIO:
        assert self._fh is not None
        return self._fh

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> "ResumableOutput":
        if self._lock is not None:
            self._lock.acquire()
            # A .tmp is only ever a final file that did not get renamed; under the lock nobody else writes it.
            sibling(self._out, TMP_SUFFIX).unlink(missing_ok=True)
        return self

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        try:
            if self._fh is not None and exc is not None:
                self._stop(exc)
        finally:
            if self._fh is not None:
                self._fh.close()
                self._fh = None
            if self._lock is not None:
                self._lock.release()

    def begin(self, params: dict[str, Any], total: int) -> list[list]:
        """Start the partial, or continue the stopped run's. Returns the records of the units already done
        (``self.done`` of them, in order); the job skips those units."""
        self.total = total
        self._params = json.loads(json.dumps(params))  # as it will read back from the sidecar
        if self.out is None:
            return []
        earlier = self._continue() if self.resume else None
        if earlier is None:
            self._start_fresh()
            earlier = []
        self._saved_at = time.monotonic()
        return earlier

    def add(self, key: str, records: list[list]) -> None:
        """Unit ``key`` is complete and these are all its records; call once per unit, in the job's order."""
        if self._fh is not None and records:
            data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8")
            self._fh.write(data)
            self._bytes += len(data)
        # Counted only once written: a failed write (a full disk) must leave the unit to be done again.
        self.done += 1
        self.last = key
        self.pairs += len(records)
        if self._fh is not None and time.monotonic() - self._saved_at >= PROGRESS_INTERVAL_S:
            self._save_progress()

    def commit(self, chunks: Iterable[str]) -> None:
        """Write the final file from ``chunks`` (atomically) and remove the partial and its progress."""
        if self.to_stdout:
            write_stdout(chunks)
            return
        if self.out is None:
            return
        _replace_atomically(self._out, chunks)
        if self._fh is not None:
            self._fh.close()
            self._fh = None
        self._progress.unlink(missing_ok=True)
        self._partial.unlink(missing_ok=True)

    # ------------------------------------------------------------------ internals
    def _start_fresh(self) -> None:
        if self._partial.exists():
            log.warning("%s: discarding %s from a stopped run (--resume would have continued it)",
                        self.job, self._partial)
        self._progress.unlink(missing_ok=True)
        self._fh = open(self._partial, "wb")
        header = PARTIAL_HEADER.encode("utf-8")
        self._file().write(header)
        self._bytes = len(header)
        self.done, self.pairs, self.last = 0, 0, None
        self._save_progress()

    def _continue(self) -> list[list] | None:
        """The stopped run's records after truncating its partial, or None when there is nothing to resume."""
        try:
            progress = json.loads(self._progress.read_text(encoding="utf-8"))
            size = self._partial.stat().st_size
        except (FileNotFoundError, ValueError):
            log.warning("%s: nothing to resume for %s, starting from the top", self.job, self.out)
            return None
        if progress.get("job") != self.job or progress.get("params") != self._params:
            raise ValueError(self._mismatch(progress))
        if progress.get("total") != self.total:
            raise ValueError(f"cannot resume {self._partial}: the stopped run had {progress.get('total')} "
                             f"{self.unit}, this one has {self.total}; run without --resume (resume=False in Python) to start over")
        if size < progress["bytes"]:
            # Only possible if the partial lost data the progress file had seen (e.g. a power cut).
            log.warning("%s: %s is shorter than its progress says; starting from the top", self.job,
                        self._partial)
            return None
        self._fh = open(self._partial, "r+b")
        self._file().truncate(progress["bytes"])
        self._file().seek(progress["bytes"])
        self._bytes = progress["bytes"]
        self.done, self.pairs, self.last = progress["done"], progress["pairs"], progress.get("last")
        earlier = list(_read_records(self._partial, self._bytes))
        if len(earlier) != self.pairs:
            raise ValueError(f"cannot resume {self._partial}: it holds {len(earlier)} records where its "
                             f"progress file says {self.pairs}; run without --resume (resume=False in Python) to start over")
        log.warning("%s: resuming %s after %s of %s %s (%s pairs so far)", self.job, self.out, f"{self.done:,}",
                    f"{self.total:,}", self.unit, f"{self.pairs:,}")
        return earlier

    def _mismatch(self, progress: dict) -> str:
        theirs = progress.get("params") or {}
        if progress.get("job") != self.job:
            what = f"it was written by {progress.get('job')!r}, not {self.job!r}"
        else:
            keys = sorted(k for k in set(theirs) | set(self._params) if theirs.get(k) != self._params.get(k))
            what = "; ".join(f"{k} changed" if k in DIGEST_KEYS
                             else f"{k} was {_short(theirs.get(k))}, now {_short(self._params.get(k))}" for k in keys)
        return (f"cannot resume {self._partial}: the stopped run differs ({what}); rerun it with the same "
                "options and data, or without --resume (resume=False in Python) to start over")

    def _save_progress(self) -> None:
        # Order matters for a crash between the two writes: the partial's bytes reach the disk first, then the
        # sidecar that vouches for them. A partial ahead of its progress is harmless (resume truncates it); a
        # progress ahead of its partial would point at bytes that were never written.
        self._file().flush()
        os.fsync(self._file().fileno())
        state = {"job": self.job, "params": self._params, "total": self.total, "done": self.done,
                 "last": self.last, "bytes": self._bytes, "pairs": self.pairs,
                 "updated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        tmp = sibling(self._progress, TMP_SUFFIX)
        tmp.write_text(json.dumps(state, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, self._progress)
        self._saved_at = time.monotonic()

    def _stop(self, exc: BaseException) -> None:
        self._save_progress()
        where = (f"after {self.done:,} of {self.total:,} {self.unit} ({self.pairs:,} pairs); its partial result "
                 f"is in {self._partial}")
        if isinstance(exc, SolrUnavailableError) and not isinstance(exc, RunStopped):
            raise RunStopped(
                f"the {self.job} stopped {where}. {exc} Once Solr answers again, run the same command with "
                "--resume (resume=True in Python) to continue it.",
                self._partial, self.done, self.total,
            ) from exc
        log.warning("%s stopped %s; the same command with --resume continues it", self.job, where)


def _read_records(path: Path, length: int) -> Iterator[list]:
    with open(path, "rb") as fh:
        data = fh.read(length)
    for line in data.decode("utf-8").splitlines():
        if line and not line.startswith("#"):
            yield json.loads(line)


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."


def digest_of(items: Iterable[Iterable[Any]]) -> str:
    """A SHA-256 over the items' fields: tells whether a resumed run sees the same input as the stopped one."""
    h = hashlib.sha256()
    for item in items:
        h.update(json.dumps(list(item), ensure_ascii=False).encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()
