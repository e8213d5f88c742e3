"""A collection's signatures, ids and LSH band keys kept on disk, so that whole-collection dedup needs memory
for one slice of one band at a time rather than for ``documents x hashes``.

Documents get ordinals 0, 1, 2... in the order they are appended. Three kinds of files hold them:

``signatures.u32``
    row ``i`` = the ``num_hashes`` uint32 MinHash values of ordinal ``i`` (``4 * num_hashes`` bytes a row).
``ids.bin`` / ``ids.off``
    the UTF-8 ids back to back, and the uint64 offset where each one starts.
``band-<b>-<p>.keys``
    records ``(key: uint64, ordinal: uint32)`` of band ``b`` whose key falls in partition ``p`` (the key's top
    bits). Equal keys always land in the same partition, so the buckets of a band can be found one partition
    at a time; partitions are sized (from the expected document count) to hold about
    :data:`PARTITION_ENTRIES` records, and records within a file are in ordinal order.

Reads go through ``os.pread`` into private buffers rather than ``mmap``: pages of a mapped file count towards
the process's resident memory while mapped, which would make the memory figure grow with the collection again.
A small store (signatures of at most :data:`IN_MEMORY_SIGNATURE_BYTES`) reads its signatures once into memory
instead: a few MiB, read many times over.
"""

from __future__ import annotations

import logging
import math
import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from neardup_solr.pairs.lsh import LSHParams, band_keys

log = logging.getLogger(__name__)

__all__ = ["SignatureStore", "PARTITION_ENTRIES", "IN_MEMORY_SIGNATURE_BYTES"]

# Records of one (band, partition) loaded at once: keys, ordinals and the sort's temporaries take ~40 bytes
# each, so ~160 MB at this size.
PARTITION_ENTRIES = 4_000_000
# Appended documents whose band keys are held before they are written out (keys of every band: 8 bytes each).
_FLUSH_DOCUMENTS = 100_000
# Rows read in one pread when the wanted rows are this close together (fewer system calls, little waste).
_ROW_GAP = 8
# A store whose signatures take at most this many bytes (32,768 documents at 128 values) reads them into memory
# once and serves every later read from there. A small run reads the same rows many times over (verifying
# oversized buckets in place, then the estimate): the 5,000 x 5,000 IDF join made 12,600 preads for 5 MiB of
# signatures, a third of its candidate phase (issue 40, point 5). The bound keeps memory flat for large stores:
# past it every read goes to the file, as before.
IN_MEMORY_SIGNATURE_BYTES = 16 << 20

KEY_RECORD = np.dtype([("key", "<u8"), ("ordinal", "<u4")])


class SignatureStore:
    """Signatures, ids and band keys of up to 2**32 documents in a work directory (removed on :meth:`close`).

    ``expected_documents`` sizes the band partitions; more documents than expected only make each partition
    larger. ``directory``: where the files go (default: the system's temporary directory); they take about
    ``4 * num_hashes + 12 * bands + 8 + len(id)`` bytes per document. ``partition_entries``: the records of
    one band read at once, default :data:`PARTITION_ENTRIES` (the partition count is the power of two that brings them to about this many).
    ``in_memory_bytes``: signatures of at most this many bytes in all are read into memory once, on the first
    :meth:`signatures` call, and served from there (default :data:`IN_MEMORY_SIGNATURE_BYTES`; 0: always from
    the file). :attr:`signatures_in_memory` says whether they are.
    """

    def __init__(
        self,
        num_hashes: int,
        params: LSHParams,
        *,
        expected_documents: int = 0,
        directory: str | os.PathLike | None = None,
        partition_entries: int | None = None,
        in_memory_bytes: int | None = None,
    ):
        if params.num_hashes > num_hashes:
            raise ValueError(f"{params} needs {params.num_hashes} signature values; the signatures hold {num_hashes}")
        self.num_hashes = num_hashes
        self.params = params
        wanted = max(1, math.ceil(max(expected_documents, 1) / (partition_entries or PARTITION_ENTRIES)))
        self.partition_bits = max(0, math.ceil(math.log2(wanted)))
        self.partitions = 1 << self.partition_bits
        self.path = Path(tempfile.mkdtemp(prefix="neardup-collection-", dir=directory))
        self.count = 0
        self._row_bytes = 4 * num_hashes
        self._signatures = open(self.path / "signatures.u32", "wb")
        self._ids = open(self.path / "ids.bin", "wb")
        self._id_offsets = open(self.path / "ids.off", "wb")
        self._id_end = 0
        self._pending_keys: list[np.ndarray] = []
        self._pending_first = 0
        self._pending_count = 0
        self._readers: dict[str, int] = {}
        self.in_memory_bytes = IN_MEMORY_SIGNATURE_BYTES if in_memory_bytes is None else in_memory_bytes
        self._in_memory: np.ndarray | None = None  # every signature, once read (small stores only)
        self._closed = False
        log.debug("signature store in %s: %s, %d partition(s) per band", self.path, params, self.partitions)

    # ------------------------------------------------------------------ writing
    def append(self, ids: Sequence[str], signatures: np.ndarray) -> None:
        """Add documents (ids and their ``(len(ids), num_hashes)`` uint32 signatures) with the next ordinals."""
        sigs = np.ascontiguousarray(signatures, dtype=np.uint32)
        if sigs.shape != (len(ids), self.num_hashes):
            raise ValueError(f"expected signatures of shape ({len(ids)}, {self.num_hashes}), got {sigs.shape}")
        if not len(ids):
            return
        if self.count + len(ids) > 2**32:
            raise OverflowError("a signature store holds at most 2**32 documents")
        self._signatures.write(sigs.tobytes())
        encoded = [i.encode("utf-8") for i in ids]
        lengths = np.fromiter((len(e) for e in encoded), dtype=np.uint64, count=len(encoded))
        offsets = np.cumsum(lengths) - lengths + np.uint64(self._id_end)
        self._id_offsets.write(offsets.astype("<u8").tobytes())
        self._ids.write(b"".join(encoded))
        self._id_end += int(lengths.sum())
        self._pending_keys.append(band_keys(sigs, self.params))
        self._pending_count += len(ids)
        self.count += len(ids)
        if self._pending_count >= _FLUSH_DOCUMENTS:
            self._flush_keys()

    def _flush_keys(self) -> None:
        if not self._pending_keys:
            return
        keys = np.concatenate(self._pending_keys)
        ordinals = np.arange(self._pending_first, self._pending_first + keys.shape[0], dtype=np.uint32)
        self._pending_keys, self._pending_first, self._pending_count = [], self._pending_first + keys.shape[0], 0
        records = np.empty(keys.shape[0], dtype=KEY_RECORD)
        records["ordinal"] = ordinals
        for band in range(self.params.bands):
            records["key"] = keys[:, band]
            if self.partitions == 1:
                self._append_records(band, 0, records)
                continue
            part = (keys[:, band] >> np.uint64(64 - self.partition_bits)).astype(np.int64)
            # Stable: each partition's records stay in ordinal order.
            order = np.argsort(part, kind="stable")
            bounds = np.searchsorted(part[order], np.arange(self.partitions + 1))
            ordered = records[order]
            for p in range(self.partitions):
                if bounds[p + 1] > bounds[p]:
                    self._append_records(band, p, ordered[bounds[p] : bounds[p + 1]])

    def _append_records(self, band: int, partition: int, records: np.ndarray) -> None:
        with open(self._band_file(band, partition), "ab") as f:
            f.write(records.tobytes())

    def _band_file(self, band: int, partition: int) -> Path:
        return self.path / f"band-{band}-{partition}.keys"

    def finish(self) -> None:
        """Write out what is buffered; the store is then read-only."""
        self._flush_keys()
        for f in (self._signatures, self._ids, self._id_offsets):
            if not f.closed:
                f.close()

    # ------------------------------------------------------------------ reading
    def band_partitions(self) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        """``(band, keys, ordinals)`` of every (band, partition), one loaded at a time, ordinals ascending."""
        self.finish()
        for band in range(self.params.bands):
            for p in range(self.partitions):
                path = self._band_file(band, p)
                if not path.exists():
                    continue
                records = np.fromfile(path, dtype=KEY_RECORD)
                yield band, np.ascontiguousarray(records["key"]), records["ordinal"].astype(np.int64)
                del records

    def signatures(self, ordinals: np.ndarray) -> np.ndarray:
        """Signatures of the given ordinals (sorted, distinct): an ``(len(ordinals), num_hashes)`` array."""
        self.finish()
        rows = np.asarray(ordinals, dtype=np.int64)
        if self._in_memory is None and 0 < self.count * self._row_bytes <= self.in_memory_bytes:
            self._in_memory = np.fromfile(self.path / "signatures.u32", dtype=np.uint32).reshape(self.count, -1)
        if self._in_memory is not None:
            return self._in_memory[rows]
        out = np.empty((rows.size, self.num_hashes), dtype=np.uint32)
        fd = self._reader("signatures.u32")
        for lo, hi in _runs(rows, _ROW_GAP):
            first = int(rows[lo])
            count = int(rows[hi - 1]) - first + 1
            block = np.frombuffer(_pread(fd, count * self._row_bytes, first * self._row_bytes), dtype=np.uint32)
            out[lo:hi] = block.reshape(count, self.num_hashes)[rows[lo:hi] - first]
        return out

    @property
    def signatures_in_memory(self) -> bool:
        """True once the signatures are held in memory (a store within ``in_memory_bytes``, read once)."""
        return self._in_memory is not None

    def ids(self, ordinals: np.ndarray) -> list[str]:
        """Ids of the given ordinals (sorted, distinct)."""
        self.finish()
        rows = np.asarray(ordinals, dtype=np.int64)
        if not rows.size:
            return []
        offsets_fd, ids_fd = self._reader("ids.off"), self._reader("ids.bin")
        starts = np.empty(rows.size, dtype=np.int64)
        ends = np.empty(rows.size, dtype=np.int64)
        for lo, hi in _runs(rows, _ROW_GAP):
            first = int(rows[lo])
            # One offset more than the run needs: the end of the run's last id (or the end of the file).
            count = min(int(rows[hi - 1]) - first + 2, self.count - first)
            offs = np.frombuffer(_pread(offsets_fd, 8 * count, 8 * first), dtype="<u8").astype(np.int64)
            if first + count == self.count:
                offs = np.append(offs, self._id_end)
            idx = rows[lo:hi] - first
            starts[lo:hi], ends[lo:hi] = offs[idx], offs[idx + 1]
        out: list[str] = []
        for lo, hi in _runs(starts, 1024, ends=ends):
            base = int(starts[lo])
            blob = _pread(ids_fd, int(ends[hi - 1]) - base, base)
            out.extend(blob[s - base : e - base].decode("utf-8")
                       for s, e in zip(starts[lo:hi].tolist(), ends[lo:hi].tolist()))
        return out

    def _reader(self, name: str) -> int:
        fd = self._readers.get(name)
        if fd is None:
            fd = self._readers[name] = os.open(self.path / name, os.O_RDONLY)
        return fd

    def disk_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.path.iterdir())

    # ------------------------------------------------------------------ lifetime
    def close(self) -> None:
        """Remove the files."""
        if self._closed:
            return
        self._closed = True
        self._in_memory = None
        for f in (self._signatures, self._ids, self._id_offsets):
            f.close()
        for fd in self._readers.values():
            os.close(fd)
        self._readers.clear()
        shutil.rmtree(self.path, ignore_errors=True)

    def __enter__(self) -> "SignatureStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _runs(rows: np.ndarray, gap: int, *, ends: np.ndarray | None = None) -> Iterator[tuple[int, int]]:
    """``(lo, hi)`` index ranges of sorted ``rows`` whose neighbours are at most ``gap`` apart (with ``ends``:
    where ``rows[i + 1] - ends[i] <= gap``), each read with one pread."""
    if not rows.size:
        return
    step = rows[1:] - (ends[:-1] if ends is not None else rows[:-1])
    breaks = np.flatnonzero(step > gap) + 1
    bounds = np.concatenate(([0], breaks, [rows.size])).tolist()
    yield from zip(bounds[:-1], bounds[1:])


def _pread(fd: int, size: int, offset: int) -> bytes:
    """Exactly ``size`` bytes at ``offset`` (pread may return fewer for large reads)."""
    chunks = []
    while size > 0:
        chunk = os.pread(fd, size, offset)
        if not chunk:
            raise EOFError(f"signature store file ended at byte {offset}")
        chunks.append(chunk)
        size -= len(chunk)
        offset += len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)
