"""A gzip writer that compresses on every core: one gzip member, the bytes of ``gzip -6`` give or take a few per MiB.

Writing the kept records of a corpus of web pages was half of a ``dedupe`` run (issue 48: 10.8 of 21.9 s for
10,000 pages, 159 MB, ``benchmarks/results/2026-12-06-index-throughput-2core.md``): Python's ``gzip`` compresses
on the calling thread at about 15 MB/s at level 6, while Solr sits idle at that stage. zlib releases the GIL while
it deflates, so the data can be cut into blocks that threads deflate side by side, the way pigz does it:

- each block is deflated as a raw stream with the previous block's last 32 KiB as its dictionary, so matches reach
  back across the cut exactly as far as one sequential stream's would (the ratio stays that of one stream);
- every block but the last ends with a sync flush (an empty stored block, byte-aligned, not final), the last with
  the final block, so the blocks laid end to end are one valid deflate stream;
- one gzip header (no name, time stamp 0, as ``compressing`` writes) and one trailer (the CRC-32 and size of the
  whole input, computed in order on the calling thread).

Block boundaries depend only on the bytes written, never on timing, so the same input always gives the same file.
"""

from __future__ import annotations

import io
import os
import struct
import zlib
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import BinaryIO

__all__ = ["ParallelGzipWriter", "BLOCK_BYTES"]

# Bytes a thread deflates at a time; each block costs a sync flush (5 bytes) and a restart of the match search.
BLOCK_BYTES = 1 << 20
_WINDOW = 32 * 1024
# The gzip header of Python's GzipFile(filename="", mtime=0) at a middle level: no flags, no time, OS unknown.
_HEADER = b"\x1f\x8b\x08\x00" + b"\x00\x00\x00\x00" + b"\x00\xff"


def _deflate(block: bytes, dictionary: bytes, level: int, final: bool) -> bytes:
    compressor = (zlib.compressobj(level, zlib.DEFLATED, -15, zdict=dictionary) if dictionary
                  else zlib.compressobj(level, zlib.DEFLATED, -15))
    return compressor.compress(block) + compressor.flush(zlib.Z_FINISH if final else zlib.Z_SYNC_FLUSH)


class ParallelGzipWriter(io.BufferedIOBase):
    """A binary writer gzipping into ``fh`` with ``threads`` threads (default: the CPUs this process may use).
    ``close()`` writes the last block and the trailer and leaves ``fh`` open. A file object as
    :class:`gzip.GzipFile` is for writing (``tell()`` counts the bytes written before compression), so pyarrow's
    Parquet writer can write through it."""

    def __init__(self, fh: BinaryIO, *, level: int = 6, threads: int | None = None,
                 block_bytes: int = BLOCK_BYTES):
        super().__init__()
        self._fh = fh
        self._level = level
        self._block_bytes = block_bytes
        if threads is None:
            threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        self._threads = max(1, threads)
        self._pool = ThreadPoolExecutor(max_workers=self._threads, thread_name_prefix="gzip")
        # Compressed blocks not yet written, in order; bounded so memory stays a few blocks per thread.
        self._pending: deque[Future] = deque()
        self._buffer = bytearray()
        self._previous_tail = b""
        self._crc = 0
        self._size = 0
        fh.write(_HEADER)

    def writable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._size

    def write(self, data) -> int:
        if self.closed:
            raise ValueError("write to a closed ParallelGzipWriter")
        data = bytes(data)
        self._buffer += data
        self._crc = zlib.crc32(data, self._crc)
        self._size += len(data)
        while len(self._buffer) > self._block_bytes:  # strictly more: the last block is sent by close()
            block = bytes(self._buffer[:self._block_bytes])
            del self._buffer[:self._block_bytes]
            self._submit(block, final=False)
        return len(data)

    def _submit(self, block: bytes, *, final: bool) -> None:
        self._pending.append(self._pool.submit(_deflate, block, self._previous_tail, self._level, final))
        self._previous_tail = block[-_WINDOW:]
        while len(self._pending) > 2 * self._threads:
            self._fh.write(self._pending.popleft().result())

    def close(self) -> None:
        if self.closed:
            return
        try:
            self._submit(bytes(self._buffer), final=True)
            self._buffer = bytearray()
            while self._pending:
                self._fh.write(self._pending.popleft().result())
            self._fh.write(struct.pack("<II", self._crc & 0xFFFFFFFF, self._size & 0xFFFFFFFF))
        finally:
            self._pool.shutdown(wait=True)
            super().close()
