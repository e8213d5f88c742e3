"""Opening an input as it is shipped: a path or ``-`` (standard input), decompressed by its content.

Compression is recognised by the first bytes, not the name: gzip, bzip2 and xz with the standard library,
zstd with the optional ``zstandard`` package (``pip install 'neardup-solr[zstd]'``). The first 8 KiB of the
decompressed content are then looked at once, before any record is read, so that a file the tool cannot read
(a ZIP archive, a PDF, an image, UTF-16 text, any data with NUL bytes) is refused in one line naming what it
looks like, before anything is written to Solr. Parquet files are recognised by their magic bytes (``PAR1``).

Standard input can be read once: :func:`inspect_input` on ``-`` keeps what it read for the one
:func:`open_input` that follows.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from neardup_solr.errors import InputFormatError

STDIN = "-"
STDIN_NAME = "<stdin>"
HEAD_BYTES = 8192
PARQUET_MAGIC = b"PAR1"

_COMPRESSION_MAGICS = ((b"\x1f\x8b", "gzip"), (b"BZh", "bzip2"), (b"\xfd7zXZ\x00", "xz"),
                       (b"\x28\xb5\x2f\xfd", "zstd"))
COMPRESSION_SUFFIXES = {".gz": "gzip", ".gzip": "gzip", ".bz2": "bzip2", ".xz": "xz", ".zst": "zstd",
                        ".zstd": "zstd"}

# Formats people mistake for text inputs, by their magic bytes: the refusal names what the file is.
_BINARY_MAGICS = (
    (b"PK\x03\x04", "a ZIP archive (or .docx/.xlsx/.jar)", "unzip it first"),
    (b"PK\x05\x06", "an empty ZIP archive", ""),
    (b"%PDF-", "a PDF document", "extract its text first"),
    (b"\x89PNG\r\n\x1a\n", "a PNG image", ""),
    (b"\xff\xd8\xff", "a JPEG image", ""),
    (b"GIF87a", "a GIF image", ""),
    (b"GIF89a", "a GIF image", ""),
    (b"\x7fELF", "an executable (ELF)", ""),
    (b"SQLite format 3\x00", "an SQLite database", "export its rows as JSONL or CSV first"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive", "extract it first"),
    (b"Rar!\x1a\x07", "a RAR archive", "extract it first"),
    (b"ARROW1", "an Arrow IPC file", "write it as Parquet or JSONL"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an old Office document (.doc/.xls)", ""),
    (b"\xff\xfe", "UTF-16 text", "convert it to UTF-8 first (iconv -f UTF-16 -t UTF-8)"),
    (b"\xfe\xff", "UTF-16 text", "convert it to UTF-8 first (iconv -f UTF-16 -t UTF-8)"),
)
# Control bytes that text files do contain (tab, newline, vertical tab, form feed, carriage return, escape).
_TEXT_CONTROLS = frozenset(b"\t\n\x0b\x0c\r\x1b")


@dataclass(frozen=True)
class InputInfo:
    """What an input is: ``name`` (the path, or ``<stdin>``), ``compression`` (None, ``gzip``, ``bzip2``,
    ``xz`` or ``zstd``) and ``kind`` (``text`` or ``parquet``)."""

    name: str
    compression: str | None
    kind: str


def is_stdin(path: str | Path) -> bool:
    """True when ``path`` names standard input (``-``)."""
    return str(path) == STDIN


def display_name(path: str | Path) -> str:
    """The input's name in messages: the path, or ``<stdin>``."""
    return STDIN_NAME if is_stdin(path) else str(path)


class _Chain(io.RawIOBase):
    """Bytes already read (``head``) followed by the rest of a stream: looking ahead without seeking."""

    def __init__(self, head: bytes, rest: BinaryIO):
        super().__init__()
        self._head = head
        self._rest = rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self._head:
            n = min(len(buffer), len(self._head))
            buffer[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        data = self._rest.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def _read_up_to(stream: BinaryIO, size: int) -> bytes:
    chunks = []
    got = 0
    while got < size:
        chunk = stream.read(size - got)
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _decompressor(compression: str, stream: BinaryIO, name: str) -> BinaryIO:
    if compression == "gzip":
        return gzip.GzipFile(fileobj=stream, mode="rb")  # type: ignore[return-value]
    if compression == "bzip2":
        return bz2.BZ2File(stream)  # type: ignore[return-value]
    if compression == "xz":
        return lzma.LZMAFile(stream)  # type: ignore[return-value]
    try:
        import zstandard
    except ImportError:
        raise InputFormatError(
            f"{name} is zstd-compressed, and reading zstd needs the zstandard package: "
            "pip install 'neardup-solr[zstd]' (or decompress it first: zstd -d)") from None
    return zstandard.ZstdDecompressor().stream_reader(stream, read_across_frames=True)


# Errors a decompressor raises on truncated or corrupt data (zstandard's ZstdError subclasses Exception only).
_DECOMPRESSION_ERRORS: tuple[type[BaseException], ...] = (EOFError, OSError, lzma.LZMAError, ValueError)
try:
    import zstandard as _zstandard

    _DECOMPRESSION_ERRORS += (_zstandard.ZstdError,)
except ImportError:
    pass


class OpenedInput:
    """An input opened for reading: ``stream`` gives the decompressed bytes from the start, ``head`` the first
    (up to 8 KiB) of them, ``info`` what the input is."""

    def __init__(self, path: str | Path):
        self.name = display_name(path)
        self._to_close: list = []
        raw: BinaryIO
        if is_stdin(path):
            raw = sys.stdin.buffer
        else:
            raw = open(path, "rb")
            self._to_close.append(raw)
        try:
            magic = _read_up_to(raw, 8)
            stream: BinaryIO = io.BufferedReader(_Chain(magic, raw))
            compression = next((name for m, name in _COMPRESSION_MAGICS if magic.startswith(m)), None)
            if compression:
                stream = _decompressor(compression, stream, self.name)
                self._to_close.insert(0, stream)
            try:
                self.head = _read_up_to(stream, HEAD_BYTES)
            except _DECOMPRESSION_ERRORS as exc:
                raise InputFormatError(f"{self.name} starts like {compression} data but cannot be decompressed "
                                       f"({exc}); nothing was read from it") from None
            kind = "parquet" if self.head.startswith(PARQUET_MAGIC) else "text"
            self.info = InputInfo(self.name, compression, kind)
            if kind == "text":
                _refuse_binary(self.name, self.head, compression)
            self.stream: BinaryIO = io.BufferedReader(_Chain(self.head, stream), buffer_size=1 << 16)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Close the file and decompressor (standard input itself stays open)."""
        for handle in self._to_close:
            handle.close()
        self._to_close.clear()

    def __enter__(self) -> "OpenedInput":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _refuse_binary(name: str, head: bytes, compression: str | None) -> None:
    inside = f" (inside its {compression} compression)" if compression else ""
    for magic, what, hint in _BINARY_MAGICS:
        if head.startswith(magic):
            raise InputFormatError(f"{name} looks like {what}{inside}, not text records or Parquet"
                                   f"{'; ' + hint if hint else ''}; nothing was read from it")
    if len(head) > 257 + 5 and head[257:262] == b"ustar":
        raise InputFormatError(f"{name} looks like a tar archive{inside}, not text records or Parquet; extract "
                               "it first; nothing was read from it")
    nul = head.find(b"\0")
    controls = sum(1 for b in head if b < 32 and b not in _TEXT_CONTROLS)
    if nul >= 0 or controls > len(head) // 10:
        where = f"a NUL byte at offset {nul}" if nul >= 0 else f"{controls} control bytes in the first {len(head)}"
        raise InputFormatError(
            f"{name} looks like binary data{inside} ({where}), not text records (lines, TSV, JSONL, CSV) or "
            "Parquet; nothing was read from it")


_pending_stdin: OpenedInput | None = None
_stdin_taken = False


def inspect_input(path: str | Path) -> InputInfo:
    """What ``path`` (or ``-``) holds; raises FileNotFoundError, or :class:`InputFormatError` for input the tool
    cannot read. Reads at most the first 8 KiB (decompressed); on standard input they are kept for the
    :func:`open_input` that follows."""
    global _pending_stdin
    if is_stdin(path):
        if _pending_stdin is None:
            if _stdin_taken:
                raise InputFormatError("standard input was already read: it can be read once per run")
            _pending_stdin = OpenedInput(path)
        return _pending_stdin.info
    with OpenedInput(_existing_file(path)) as opened:
        return opened.info


def _existing_file(path: str | Path) -> Path:
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"input file not found: {path}")
    if not p.is_file():
        raise InputFormatError(f"input {path} is not a file")
    return p


def open_input(path: str | Path) -> OpenedInput:
    """``path`` (or ``-``) opened and decompressed, after the checks of :func:`inspect_input`."""
    global _pending_stdin, _stdin_taken
    if is_stdin(path):
        inspect_input(path)
        assert _pending_stdin is not None
        opened, _pending_stdin, _stdin_taken = _pending_stdin, None, True
        return opened
    return OpenedInput(_existing_file(path))


def strip_compression_suffix(path: str | Path) -> Path:
    """``a.jsonl.gz`` -> ``a.jsonl``: the name the format is guessed from."""
    p = Path(path)
    return p.with_suffix("") if p.suffix.lower() in COMPRESSION_SUFFIXES else p


def decompression_errors() -> tuple[type[BaseException], ...]:
    """Exceptions that mean compressed data is truncated or corrupt, for readers that catch them mid-file."""
    return _DECOMPRESSION_ERRORS


def open_text_lines(path: str | Path) -> list[str]:
    """Every line (newline removed) of a small UTF-8 text input such as a pairs file: a path or ``-``,
    compressed or not. Binary input is refused like a record file."""
    with open_input(path) as opened:
        if opened.info.kind != "text":
            raise InputFormatError(f"{opened.name} is a Parquet file, not a text file of pairs")
        try:
            text = opened.stream.read().decode("utf-8")
        except _DECOMPRESSION_ERRORS as exc:  # UnicodeDecodeError is a ValueError: say what it is
            raise InputFormatError(f"{opened.name} cannot be read as UTF-8 text ({exc})") from None
    return text.splitlines()
