"""Read records (id, text) from input files, streaming, without ever dropping one silently.

Formats:
  ``lines``  the write-up's format: ``<id> <text>`` per line (the id is everything before the first space)
  ``tsv``    ``<id>\\t<text>`` per line
  ``jsonl``  one JSON object per line with ``id`` and ``text`` keys (names configurable)
  ``csv``    a header row; ``--id-column`` and ``--text-column`` name the columns
  ``parquet`` columns named by ``--id-column`` and ``--text-column``, streamed in batches of rows (needs the
             optional ``pyarrow``: ``pip install 'neardup-solr[parquet]'``); a record's "line" is its row number

Any of them may be gzip, bzip2, xz or zstd compressed, and ``-`` reads standard input (see
:mod:`neardup_solr.io.inputs`). The format is the one given, else the file name's (``a.jsonl.gz`` is JSONL),
else Parquet when the content starts with Parquet's magic bytes, else ``lines``.

Each item yielded is a :class:`Record` or an :class:`~neardup_solr.errors.InvalidRecordError` naming the file,
the line and the reason, so the caller can reject that one record and carry on with the rest.

Bytes that are not valid UTF-8: by default (``on_decode_error="latin-1"``) such a line is decoded as
Windows-1252/Latin-1 (every byte maps to a character, so nothing is lost) and counted in
:attr:`ReadStats.recoded_lines`; ``"reject"`` rejects the record instead; ``"replace"`` substitutes U+FFFD.
"""

from __future__ import annotations

import csv
import json
import logging
import shutil
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Union

from neardup_solr.errors import InputFormatError, InvalidParameterError, InvalidRecordError, ParameterTypeError
from neardup_solr.io.inputs import (
    STDIN_NAME,
    decompression_errors,
    inspect_input,
    is_stdin,
    open_input,
    strip_compression_suffix,
)
from neardup_solr.validation import check_bool, check_choice, check_str, id_problem

log = logging.getLogger(__name__)

FORMATS = ("lines", "tsv", "jsonl", "csv", "parquet")
# One record a line, each line read on its own: a file of these can be read in byte ranges (not CSV, whose
# quoted fields may hold line breaks).
LINE_FORMATS = ("lines", "tsv", "jsonl")
TEXT_FORMATS = ("lines", "tsv", "jsonl", "csv")
# Rows per Arrow batch read from a Parquet file: memory stays bounded by one batch, whatever the row groups.
PARQUET_BATCH_ROWS = 2048
DECODE_POLICIES = ("latin-1", "reject", "replace")


@dataclass
class Record:
    """One readable record: its id, its text, and where it was read (file and line)."""

    id: str
    text: str
    source: str
    line: int
    # Set when the record was read from several text columns: {column: text}, for per-field weights.
    fields: dict | None = None
    # With keep_raw=True (text formats): the record's bytes as the file holds them, without the end of line (a
    # CSV record over several lines: its lines joined by b"\n"), for writers that copy records unchanged.
    raw: bytes | None = field(default=None, repr=False, compare=False)


@dataclass
class ReadStats:
    """Counts of what a reader saw: lines, records, blank lines, lines decoded as Latin-1, invalid records."""

    lines: int = 0
    records: int = 0
    blank_lines: int = 0
    recoded_lines: int = 0
    invalid: int = 0


ReadItem = Union[Record, InvalidRecordError]


def record_item(record: "Record | tuple") -> tuple[str, str, dict | None]:
    """``(id, text, fields)`` of a :class:`Record` or of an ``(id, text)`` pair: the streamed side of a join, given
    either way."""
    if isinstance(record, Record):
        return record.id, record.text, record.fields
    return str(record[0]), record[1], None


def guess_format(path: str | Path) -> str:
    """The input format a file name suggests (after a compression suffix such as .gz): .tsv, .jsonl/.ndjson,
    .csv, .parquet/.pq, else 'lines'."""
    suffix = strip_compression_suffix(path).suffix.lower()
    return {".tsv": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".parquet": "parquet",
            ".pq": "parquet"}.get(suffix, "lines")


def input_format(path: str | Path, fmt: str | None = None) -> str:
    """The format ``path`` (or ``-``) is read in: ``fmt`` when given, else the name's, else Parquet when the
    content is Parquet. Raises FileNotFoundError, or :class:`~neardup_solr.errors.InputFormatError` when the
    input is binary data the tool does not read, or when ``fmt`` contradicts the content (Parquet read as text
    or text as Parquet); reads at most its first 8 KiB."""
    info = inspect_input(path)
    chosen = fmt or ("parquet" if info.kind == "parquet" else "lines" if is_stdin(path) else guess_format(path))
    if info.kind == "parquet" and chosen != "parquet":
        raise InputFormatError(f"{info.name} is a Parquet file, not {chosen} text: use --format parquet "
                               "(fmt='parquet' in Python)")
    if chosen == "parquet" and info.kind != "parquet":
        raise InputFormatError(f"{info.name} is not a Parquet file (no Parquet magic bytes at its start): "
                               "choose its format with --format lines|tsv|jsonl|csv")
    return chosen


class RecordReader:
    """Iterate over the records of one file; ``stats`` is filled in as it goes."""

    def __init__(
        self,
        path: str | Path,
        fmt: str | None = None,
        *,
        id_field: str = "id",
        text_field: str = "text",
        on_decode_error: str = "latin-1",
        keep_raw: bool = False,
    ):
        """``keep_raw=True`` sets each record's :attr:`Record.raw` (text formats) and, for CSV,
        :attr:`header_raw`: the bytes read, for copying kept records out unchanged."""
        if not isinstance(path, (str, Path)):
            raise ParameterTypeError("path", "a file path (str or Path, '-' for standard input)", path)
        self.path = Path(path)
        self.stdin = is_stdin(path)
        # What error messages and Record.source call the input.
        self.source: str | Path = STDIN_NAME if self.stdin else self.path
        self._given_fmt = check_choice("fmt", fmt, FORMATS, none_ok=True)
        self.fmt: str = self._given_fmt or ("lines" if self.stdin else guess_format(path))
        check_choice("on_decode_error", on_decode_error, DECODE_POLICIES)
        self.id_field: str = check_str("id_field", id_field)
        self.text_field: str = check_str("text_field", text_field)
        # "name,city" reads several text columns: the text is their concatenation, and each column's words
        # are also indexed per field (weighted separately by IdfWeights / ThresholdFinder field_weights).
        self.text_fields = [f.strip() for f in text_field.split(",") if f.strip()] or [text_field]
        self.on_decode_error = on_decode_error
        self.stats = ReadStats()
        self.keep_raw = check_bool("keep_raw", keep_raw)
        # A CSV file's header line(s) as read (keep_raw=True), set before its first record is yielded.
        self.header_raw: bytes | None = None
        self._raw_lines: list[tuple[int, bytes]] = []

    def __iter__(self) -> Iterator[ReadItem]:
        self.fmt = input_format("-" if self.stdin else self.path, self._given_fmt)
        if self.fmt == "parquet":
            yield from self._read_parquet()
            return
        if self.fmt == "csv":
            yield from self._read_csv()
            return
        for lineno, text in self._decoded_lines():
            item = self._parse_text(text, lineno)
            if item is not None:
                if self.keep_raw and isinstance(item, Record):
                    item.raw = self._raw_lines.pop()[1]
                self._raw_lines.clear()
                yield item

    def parse_line(self, raw: bytes, lineno: int) -> ReadItem | None:
        """One raw line (its end of line included or not) of a lines, TSV or JSONL file, as iterating the file
        reads it: a record, the reason it cannot be one, or None for a blank line. For readers of a part of the
        file (the Spark jobs read a file's byte ranges in parallel); ``lineno`` 1 is where a BOM is dropped."""
        if self.fmt not in LINE_FORMATS:
            raise InvalidParameterError("fmt", "a line format (" + ", ".join(LINE_FORMATS) + ")", self.fmt)
        if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        return self._parse_text(self._decode(raw.rstrip(b"\r\n"), lineno), lineno)

    def _parse_text(self, text: "str | InvalidRecordError", lineno: int) -> ReadItem | None:
        if isinstance(text, InvalidRecordError):
            return text
        if not text.strip():
            self.stats.blank_lines += 1
            return None
        parse = {"lines": self._parse_lines, "tsv": self._parse_tsv, "jsonl": self._parse_jsonl}[self.fmt]
        item = parse(text, lineno)
        self._count(item)
        return item

    # ------------------------------------------------------------------ decoding
    def _decode(self, raw: bytes, lineno: int) -> str | InvalidRecordError:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            if self.on_decode_error == "reject":
                self.stats.invalid += 1
                return InvalidRecordError(
                    f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})",
                    source=self.source, line=lineno,
                )
            self.stats.recoded_lines += 1
            if self.on_decode_error == "replace":
                return raw.decode("utf-8", errors="replace")
            return raw.decode("cp1252", errors="strict") if _cp1252_ok(raw) else raw.decode("latin-1")

    def _decoded_lines(self) -> Iterator[tuple[int, str | InvalidRecordError]]:
        lineno = 0
        with open_input("-" if self.stdin else self.path) as opened:
            try:
                for lineno, raw in enumerate(opened.stream, start=1):
                    self.stats.lines += 1
                    if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
                        raw = raw[3:]
                    raw = raw.rstrip(b"\r\n")
                    if self.keep_raw:
                        self._raw_lines.append((lineno, raw))
                    yield lineno, self._decode(raw, lineno)
            except decompression_errors() as exc:
                if not opened.info.compression:
                    raise
                raise InputFormatError(f"{self.source}: the {opened.info.compression} data is truncated or corrupt "
                                       f"after line {lineno} ({exc}); the records before it were read") from None

    def _count(self, item: ReadItem) -> None:
        if isinstance(item, Record):
            self.stats.records += 1
        else:
            self.stats.invalid += 1

    # ------------------------------------------------------------------ formats
    def _parse_lines(self, text: str, lineno: int) -> ReadItem:
        if text[:1].isspace():
            return InvalidRecordError("the line starts with white space, so it has no id ('<id> <text>' expected)",
                                      source=self.source, line=lineno)
        doc_id, sep, body = text.rstrip().partition(" ")
        if not sep:
            head, tab, rest = doc_id.partition("\t")
            if tab:  # '<id>\t<text>' in a lines file is still unambiguous
                return self._record(head, rest, lineno)
            return self._record(doc_id, "", lineno)  # an id without text: rejected as empty text
        return self._record(doc_id, body, lineno)

    def _record(self, doc_id: str, text: str, lineno: int, fields: dict | None = None) -> ReadItem:
        """A Record, or the reason its id cannot be indexed (ids end up in TSV outputs, see validation)."""
        problem = id_problem(doc_id)
        if problem:
            return InvalidRecordError(problem, source=self.source, line=lineno, record_id=doc_id)
        return Record(doc_id, text, str(self.source), lineno, fields)

    def _parse_tsv(self, text: str, lineno: int) -> ReadItem:
        doc_id, sep, body = text.partition("\t")
        if not sep:
            return InvalidRecordError("expected '<id><TAB><text>' but the line has no tab", source=self.source, line=lineno)
        if not doc_id.strip():
            return InvalidRecordError("empty id", source=self.source, line=lineno)
        return self._record(doc_id.strip(), body, lineno)

    def _parse_jsonl(self, text: str, lineno: int) -> ReadItem:
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            return InvalidRecordError(f"not valid JSON ({exc.msg} at column {exc.colno})", source=self.source, line=lineno)
        if not isinstance(obj, dict):
            return InvalidRecordError("a JSON object was expected", source=self.source, line=lineno)
        return self._from_mapping(obj, lineno, what="key")

    def _from_mapping(self, obj: dict, lineno: int, what: str) -> ReadItem:
        if len(self.text_fields) > 1:
            return self._from_mapping_fields(obj, lineno, what)
        doc_id, text = obj.get(self.id_field), obj.get(self.text_field)
        if doc_id is None or str(doc_id).strip() == "":
            return InvalidRecordError(f"missing or empty {what} {self.id_field!r}", source=self.source, line=lineno)
        if isinstance(doc_id, bool) or not isinstance(doc_id, (str, int)):
            # 3.0 or true would become the ids '3.0' and 'True': refuse rather than guess.
            return InvalidRecordError(f"{what} {self.id_field!r} must be a string or an integer, not "
                                      f"{type(doc_id).__name__} ({doc_id!r})", source=self.source, line=lineno)
        if text is None:
            return InvalidRecordError(
                f"missing {what} {self.text_field!r}", source=self.source, line=lineno, record_id=str(doc_id)
            )
        if not isinstance(text, str):
            return InvalidRecordError(
                f"{what} {self.text_field!r} is not a string", source=self.source, line=lineno, record_id=str(doc_id)
            )
        return self._record(str(doc_id).strip(), text, lineno)

    def _from_mapping_fields(self, obj: dict, lineno: int, what: str) -> ReadItem:
        doc_id = obj.get(self.id_field)
        if doc_id is None or str(doc_id).strip() == "":
            return InvalidRecordError(f"missing or empty {what} {self.id_field!r}", source=self.source, line=lineno)
        if isinstance(doc_id, bool) or not isinstance(doc_id, (str, int)):
            return InvalidRecordError(f"{what} {self.id_field!r} must be a string or an integer, not "
                                      f"{type(doc_id).__name__} ({doc_id!r})", source=self.source, line=lineno)
        fields = {}
        for name in self.text_fields:
            value = obj.get(name)
            if value is not None and not isinstance(value, str):
                return InvalidRecordError(f"{what} {name!r} is not a string", source=self.source, line=lineno,
                                          record_id=str(doc_id))
            fields[name] = value or ""
        if not any(v.strip() for v in fields.values()):
            return InvalidRecordError(
                f"none of the {what}s {', '.join(map(repr, self.text_fields))} has text",
                source=self.source, line=lineno, record_id=str(doc_id),
            )
        text = " ".join(v for v in fields.values() if v.strip())
        return self._record(str(doc_id).strip(), text, lineno, fields)

    def _read_csv(self) -> Iterator[ReadItem]:
        # csv needs the raw line structure back (quoted fields may span lines); streamed, line by line.
        lines = ((text if isinstance(text, str) else "") + "\n" for _, text in self._decoded_lines())
        reader = csv.DictReader(lines)
        header = reader.fieldnames or []
        if any(c not in header for c in (self.id_field, *self.text_fields)):
            raise self._missing_columns_error(list(header), 1)
        if self.keep_raw:
            self.header_raw = self._take_raw_lines(reader.line_num)
        for row in reader:
            lineno = reader.line_num
            raw = self._take_raw_lines(lineno) if self.keep_raw else None
            if None in row:
                item: ReadItem = InvalidRecordError(
                    f"{len(header) + len(row[None])} fields where the header has {len(header)}",
                    source=self.source, line=lineno,
                )
            elif not any((v or "").strip() for v in row.values()):
                self.stats.blank_lines += 1
                continue
            else:
                item = self._from_mapping(row, lineno, what="column")
            self._count(item)
            if raw is not None and isinstance(item, Record):
                item.raw = raw
            yield item

    def _take_raw_lines(self, last: int) -> bytes:
        """The raw lines read up to line ``last``, joined: one CSV row (or the header). Empty lines before the
        row are the blank lines the csv module skips, not part of it (a quoted field's empty line is inside)."""
        taken = [raw for lineno, raw in self._raw_lines if lineno <= last]
        del self._raw_lines[:len(taken)]
        while taken and not taken[0]:
            taken.pop(0)
        return b"\n".join(taken)

    def _missing_columns_error(self, header: list[str], line: int | None) -> InvalidRecordError:
        what = (f"{'CSV header' if self.fmt == 'csv' else 'Parquet schema'} has no column "
                f"{', '.join(map(repr, [c for c in (self.id_field, *self.text_fields) if c not in header]))} "
                f"(columns: {', '.join(header) or 'none'}); choose them with ")
        error = InvalidRecordError(what + "id_field= / text_field=", source=self.source, line=line)
        error.cli_message = str(InvalidRecordError(what + "--id-column / --text-column", source=self.source,
                                                   line=line))
        return error

    def _read_parquet(self) -> Iterator[ReadItem]:
        try:
            import pyarrow.parquet  # noqa: F401  (refused here, with what to install, rather than mid-read)
        except ImportError:
            raise InputFormatError(f"{self.source} is Parquet, and reading Parquet needs pyarrow: "
                                   "pip install 'neardup-solr[parquet]'") from None
        with open_parquet("-" if self.stdin else self.path) as parquet:
            header = parquet.schema_arrow.names
            if any(c not in header for c in (self.id_field, *self.text_fields)):
                raise self._missing_columns_error(header, None)
            columns = list(dict.fromkeys((self.id_field, *self.text_fields)))
            row = 0
            for batch in parquet.iter_batches(batch_size=PARQUET_BATCH_ROWS, columns=columns):
                values = {name: batch.column(i).to_pylist() for i, name in enumerate(batch.schema.names)}
                for j in range(batch.num_rows):
                    row += 1
                    self.stats.lines += 1
                    item = self._from_mapping({name: values[name][j] for name in columns}, row, what="column")
                    self._count(item)
                    yield item


@contextmanager
def open_parquet(path: str | Path) -> Iterator[Any]:
    """A ``pyarrow.parquet.ParquetFile`` of ``path`` (or ``-``), compressed or not; needs pyarrow."""
    import pyarrow.parquet as pq

    with open_input(path) as opened, tempfile.TemporaryFile() as spool:
        if is_stdin(path) or opened.info.compression:
            # Parquet keeps its schema at the end of the file: a stream is spooled to disk (not memory) first.
            shutil.copyfileobj(opened.stream, spool, 1 << 20)
            spool.seek(0)
            yield pq.ParquetFile(spool)
        else:
            yield pq.ParquetFile(path)


def _cp1252_ok(raw: bytes) -> bool:
    try:
        raw.decode("cp1252")
        return True
    except UnicodeDecodeError:
        return False
