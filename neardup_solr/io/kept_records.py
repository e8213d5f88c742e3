"""Write the records of an input that a decision keeps, exactly as the input holds them.

The output has the input's format and only its kept records, in input order:

* **lines, TSV, JSONL, CSV**: each kept record is its input line, byte for byte (a CSV record over several
  lines: each of its lines), ended by ``"\\n"`` whatever the input's line ends were; a CSV file's header line comes
  first (also when no record is kept). A UTF-8 byte order mark at the start of the input is not copied; blank
  lines and records the reader refuses are never written. Bytes that are not UTF-8 are copied as they are.
* **Parquet**: Parquet with the input's schema, the kept rows in input order.

The output is compressed by its name's suffix, the ones the readers accept (``.gz``, ``.bz2``, ``.xz``,
``.zst``); gzip is written without a file name or time stamp, so equal records give equal bytes, and on every core
(:mod:`~neardup_solr.io.parallel_gzip`: one gzip member, the size of a sequential level-6 stream). The file is
written as ``<out>.tmp`` and renamed when complete (:func:`~neardup_solr.io.outputs.replacing`).
"""

from __future__ import annotations

import bz2
import lzma
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterable, Iterator

from neardup_solr.errors import InputFormatError, InvalidParameterError
from neardup_solr.io.inputs import COMPRESSION_SUFFIXES
from neardup_solr.io.outputs import OutputLock, check_output_path, is_stdout, replacing
from neardup_solr.io.parallel_gzip import ParallelGzipWriter
from neardup_solr.io.readers import (
    PARQUET_BATCH_ROWS,
    Record,
    RecordReader,
    guess_format,
    input_format,
    open_parquet,
)

__all__ = ["KeptRecords", "check_output_format", "compressing", "output_compression", "write_bytes_atomically",
           "write_kept_records"]

# Records between two calls of the progress callback.
PROGRESS_EVERY = 1000

# gzip's own default level (the gzip command's), not Python's 9: on 23 MB of 14 KB web pages level 9 wrote 7 MB/s,
# level 6 15 MB/s for a file 1% larger, level 1 61 MB/s for 14% larger. At 9 the write of the kept records is a
# large share of a long-document run (issue 48): 1.5 GB would take 3.5 minutes to compress.
GZIP_LEVEL = 6


@dataclass
class KeptRecords:
    """What a copy did: the records read (readable or not, blank lines aside) and the records written."""

    read: int = 0
    written: int = 0


def output_compression(path: str | Path) -> str | None:
    """The compression an output's name asks for (``a.jsonl.gz``: gzip), or None."""
    return COMPRESSION_SUFFIXES.get(Path(path).suffix.lower())


def check_output_format(out: str | Path, fmt: str) -> None:
    """Refuse an output whose name says another format than the input's (``out.csv`` for JSONL records); a name
    that says no format (``out.txt``) is fine."""
    said = guess_format(out)
    if said != "lines" and said != fmt:
        raise InvalidParameterError("out", f"a file name for {fmt} records (the output has the input's format)",
                                    str(out), f"its name says {said}; name it like the input (e.g. .{fmt})")


@contextmanager
def compressing(fh: BinaryIO, compression: str | None) -> Iterator[BinaryIO]:
    """A writer into ``fh`` compressing with ``compression`` (:func:`output_compression`'s names; None: as it
    is); leaving the block writes the compressed stream's end and leaves ``fh`` open. A gzip member carries no
    file name or time stamp, so the same bytes in give the same file out."""
    if compression is None:
        yield fh
        return
    sink: Any
    if compression == "gzip":
        sink = ParallelGzipWriter(fh, level=GZIP_LEVEL)
    elif compression == "bzip2":
        sink = bz2.BZ2File(fh, "wb")
    elif compression == "xz":
        sink = lzma.LZMAFile(fh, "wb")
    else:
        try:
            import zstandard
        except ImportError:
            raise InputFormatError("writing zstd needs the zstandard package: pip install 'neardup-solr[zstd]' "
                                   "(or name the output .gz)") from None
        sink = zstandard.ZstdCompressor().stream_writer(fh, closefd=False)
    try:
        yield sink
    finally:
        sink.close()  # writes the compressed stream's end; fh itself stays open for the fsync


def write_bytes_atomically(path: str | Path, chunks: Iterable[bytes], *, name: str = "out") -> None:
    """``chunks`` into ``path`` (``name``: the option that named it, for errors), compressed as its name says
    (``.gz``, ``.bz2``, ``.xz``, ``.zst``), under ``path``'s :class:`~neardup_solr.io.outputs.OutputLock`,
    appearing complete or not at all; ``-`` writes them to standard output as they come."""
    if is_stdout(path):
        for chunk in chunks:
            sys.stdout.buffer.write(chunk)
        sys.stdout.buffer.flush()
        return
    path = check_output_path(path, name=name)
    with OutputLock(path), replacing(path) as fh, compressing(fh, output_compression(path)) as sink:
        for chunk in chunks:
            sink.write(chunk)


def write_kept_records(
    path: str | Path,
    out: str | Path,
    keep: Callable[[Record], bool],
    *,
    fmt: str | None = None,
    id_field: str = "id",
    text_field: str = "text",
    on_decode_error: str = "latin-1",
    on_progress: Callable[[int], None] | None = None,
) -> KeptRecords:
    """Copy the records of ``path`` for which ``keep(record)`` is true to ``out`` (see the module's rules).

    The reading arguments are :class:`~neardup_solr.io.readers.RecordReader`'s, so ``keep`` sees the records
    the indexer saw. ``on_progress(n)`` is told every few records how many more were read. The caller holds
    ``out``'s :class:`~neardup_solr.io.outputs.OutputLock`."""
    fmt = input_format(path, fmt)
    reader = RecordReader(path, fmt, id_field=id_field, text_field=text_field, on_decode_error=on_decode_error,
                          keep_raw=True)
    counts = KeptRecords()
    with replacing(out) as fh, compressing(fh, output_compression(out)) as sink:
        if fmt == "parquet":
            _copy_parquet(path, reader, keep, sink, counts, on_progress)
        else:
            _copy_lines(reader, keep, sink, counts, on_progress)
    return counts


def _copy_lines(reader: RecordReader, keep: Callable[[Record], bool], sink: BinaryIO, counts: KeptRecords,
                on_progress: Callable[[int], None] | None) -> None:
    header_written = False
    unreported = 0
    for item in reader:
        if not header_written and reader.header_raw is not None:
            sink.write(reader.header_raw + b"\n")
            header_written = True
        counts.read += 1
        if isinstance(item, Record) and keep(item):
            assert item.raw is not None
            sink.write(item.raw + b"\n")
            counts.written += 1
        unreported += 1
        if on_progress is not None and unreported >= PROGRESS_EVERY:
            on_progress(unreported)
            unreported = 0
    if not header_written and reader.header_raw is not None:
        sink.write(reader.header_raw + b"\n")
    if on_progress is not None and unreported:
        on_progress(unreported)


def _copy_parquet(path: str | Path, reader: RecordReader, keep: Callable[[Record], bool], sink: BinaryIO,
                  counts: KeptRecords, on_progress: Callable[[int], None] | None) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    # pyarrow writes to the file object and leaves closing it to us (the compressor's end, the fsync).
    # The reader yields one item per row, in row order: the whole rows are read alongside, batch for batch.
    items = iter(reader)
    with open_parquet(path) as parquet:
        writer = pq.ParquetWriter(sink, parquet.schema_arrow)
        try:
            for batch in parquet.iter_batches(batch_size=PARQUET_BATCH_ROWS):
                mask = []
                for _ in range(batch.num_rows):
                    item = next(items)
                    mask.append(isinstance(item, Record) and keep(item))
                counts.read += batch.num_rows
                kept = batch.filter(pa.array(mask, type=pa.bool_()))
                counts.written += kept.num_rows
                if kept.num_rows:
                    writer.write_batch(kept)
                if on_progress is not None:
                    on_progress(batch.num_rows)
        finally:
            writer.close()
