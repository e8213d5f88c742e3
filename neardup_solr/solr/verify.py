"""Proof, not belief: does the index hold what we think it holds?

Two uses, one algorithm:

* after every ``index`` run (and before a ``--resume`` skips anything) the indexer checks that each id Solr
  acknowledged, or that the checkpoint says is done, is really in the index;
* ``neardup-solr verify FILE`` compares any input file with the index: missing ids, content that changed
  (MD5 of the normalised text), and documents signed with other settings (their MinHash signature differs from
  the one this index's settings give), for corpora loaded by other means (Spark, the HTTP API, own code).

Memory stays bounded at any size: the expected side is spilled to sorted runs on disk (``chunk_size`` rows in
memory at a time) and merged; the index side is read in id order with a cursor. Both sides are in Unicode code
point order: Solr sorts string ids by their UTF-8 bytes, which orders them the same way. A small expected
side against a large index is checked with real-time get instead of reading every id of the index.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import logging
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

from neardup_solr.signing.builder import DocumentBuilder
from neardup_solr.signing.settings import SETTINGS_DOC_ID
from neardup_solr.solr.queries import FROM_LEADERS, USER_DOCUMENTS, select_params
from neardup_solr.solr.settings_store import read_index_settings
from neardup_solr.io.readers import Record, RecordReader
from neardup_solr.solr.client import SolrClient

log = logging.getLogger(__name__)

EXAMPLES = 5
# Below this share of the index, asking for the expected ids by real-time get beats reading every indexed id.
_GET_SHARE = 0.05
_GET_BATCH = 1000
_PAGE_ROWS = 20000


class SortedSpill:
    """(id, line, digest) rows, spilled to sorted runs in a temporary directory, read back merged in id order.

    Rows with one id come back in the order they were added (heapq.merge is stable across runs, and each run is
    sorted stably), so "the last line wins" can be applied by the reader.
    """

    def __init__(self, chunk_size: int = 500_000, directory: str | Path | None = None):
        self.chunk_size = chunk_size
        self._parent = directory
        # Made with the first run: most uses never spill, and a run killed before close() then leaves nothing.
        self._dir: Path | None = None
        self._rows: list[tuple[str, int, str | None]] = []
        self._runs: list[Path] = []
        self.count = 0

    def add(self, doc_id: str, line: int, digest: str | None = None) -> None:
        self._rows.append((doc_id, line, digest))
        self.count += 1
        if len(self._rows) >= self.chunk_size:
            self._flush()

    def extend(self, rows: Iterable[tuple[str, int]]) -> None:
        for doc_id, line in rows:
            self.add(doc_id, line)

    def _flush(self) -> None:
        if not self._rows:
            return
        self._rows.sort(key=lambda row: row[0])
        if self._dir is None:
            self._dir = Path(tempfile.mkdtemp(prefix="neardup-verify-", dir=self._parent))
        path = self._dir / f"run-{len(self._runs):05d}.jsonl"
        with open(path, "w", encoding="utf-8") as fh:
            for row in self._rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        self._runs.append(path)
        self._rows = []

    def __iter__(self) -> Iterator[tuple[str, int, str | None]]:
        if not self._runs:
            self._rows.sort(key=lambda row: row[0])
            yield from self._rows
            return
        self._flush()
        files = [open(path, encoding="utf-8") for path in self._runs]
        try:
            runs = [(tuple(json.loads(line)) for line in fh) for fh in files]
            yield from heapq.merge(*runs, key=lambda row: row[0])
        finally:
            for fh in files:
                fh.close()

    def close(self) -> None:
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> "SortedSpill":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@dataclass
class VerifyResult:
    """What the index lacks compared with what was expected."""

    checked: int = 0
    missing: int = 0
    changed: int = 0
    resigned: int = 0
    examples: dict[str, list[str]] = field(default_factory=lambda: {"missing": [], "changed": [], "resigned": []})
    first_bad_line: int | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not (self.missing or self.changed or self.resigned)

    def _note(self, kind: str, doc_id: str, line: int) -> None:
        setattr(self, kind, getattr(self, kind) + 1)
        if len(self.examples[kind]) < EXAMPLES:
            self.examples[kind].append(doc_id)
        if self.first_bad_line is None or line < self.first_bad_line:
            self.first_bad_line = line

    def format(self) -> str:
        if self.ok:
            return f"verified {self.checked} documents: all in the index as expected ({self.seconds:.1f} s)"
        parts = []
        labels = {"missing": "missing from the index", "changed": "with other content in the index (MD5 differs)",
                  "resigned": "signed with other settings (MinHash signature differs)"}
        for kind, label in labels.items():
            count = getattr(self, kind)
            if count:
                shown = ", ".join(repr(i) for i in self.examples[kind])
                parts.append(f"{count} {label}, e.g. {shown}")
        return f"checked {self.checked} documents: " + "; ".join(parts)




def _index_rows(client: SolrClient, fields: tuple[str, ...]) -> Iterator[dict]:
    """Every document of the collection (settings document excluded) in id order, a page at a time."""
    # The proof reads each shard's leader (FROM_LEADERS).
    params = [*select_params([USER_DOCUMENTS], sort="id asc", fields=",".join(fields)), FROM_LEADERS]
    for docs in client.cursor_pages(params, _PAGE_ROWS):
        for doc in docs:
            if doc["id"] != SETTINGS_DOC_ID:
                yield doc


def _rows_by_get(client: SolrClient, expected: Iterator[tuple], fields: tuple[str, ...]) -> Iterator[dict]:
    """The indexed documents among the expected ids, in id order, by real-time get in batches."""
    batch: list[str] = []

    def fetch() -> list[dict]:
        found = client.get_by_ids(batch, ",".join(fields), params=[FROM_LEADERS])
        return sorted(found, key=lambda d: d["id"])

    for doc_id, *_ in expected:
        if batch and batch[-1] == doc_id:
            continue
        batch.append(doc_id)
        if len(batch) >= _GET_BATCH:
            yield from fetch()
            batch = []
    if batch:
        yield from fetch()


def signature_digest(encoded_signature: str) -> str:
    return hashlib.blake2b(encoded_signature.encode("ascii"), digest_size=8).hexdigest()


def compare(expected: SortedSpill, client: SolrClient, *, with_digests: bool = False) -> VerifyResult:
    """Walk the expected rows and the index side by side, in id order.

    With ``with_digests`` each expected row's digest is ``"<md5>/<signature digest>"`` and both are compared;
    otherwise only presence is. For an id expected twice (an input with a repeated id), the last line counts.
    """
    started = time.monotonic()
    result = VerifyResult()
    fields = ("id", "md5_hash", "minhash_sig") if with_digests else ("id",)
    total = client.count("*:*", params=[FROM_LEADERS])
    if expected.count <= _GET_SHARE * total:
        indexed = _rows_by_get(client, iter(expected), fields)
    else:
        indexed = _index_rows(client, fields)
    current = next(indexed, None)

    def last_per_id(rows: Iterator[tuple]) -> Iterator[tuple]:
        previous = None
        for row in rows:
            if previous is not None and row[0] != previous[0]:
                yield previous
            previous = row
        if previous is not None:
            yield previous

    for doc_id, line, digest in last_per_id(iter(expected)):
        result.checked += 1
        while current is not None and current["id"] < doc_id:
            current = next(indexed, None)
        if current is None or current["id"] != doc_id:
            result._note("missing", doc_id, line)
            continue
        if with_digests and digest is not None:
            md5, _, sig = digest.partition("/")
            if current.get("md5_hash") != md5:
                result._note("changed", doc_id, line)
            elif signature_digest(current.get("minhash_sig") or "") != sig:
                result._note("resigned", doc_id, line)
    result.seconds = time.monotonic() - started
    return result


def verify_ids(client: SolrClient, rows: Iterable[tuple[str, int]], chunk_size: int = 500_000) -> VerifyResult:
    """Check that every ``(id, line)`` is in the index (the indexer's end-of-run proof)."""
    with SortedSpill(chunk_size) as spill:
        spill.extend(rows)
        return compare(spill, client)


def verify_file(
    client: SolrClient,
    path: str | Path,
    fmt: str | None = None,
    *,
    id_field: str = "id",
    text_field: str = "text",
    on_decode_error: str = "latin-1",
    batch_size: int = 2000,
    chunk_size: int = 500_000,
) -> VerifyResult:
    """Compare a file with the index: every record's id must be there, with the same content (MD5 of the
    normalised text) and the signature this index's settings give it.

    Records that cannot be indexed at all (no id, empty text) are not expected in the index and are skipped.
    """
    client.check()
    settings = read_index_settings(client)
    if settings is None:
        raise ValueError(f"{client.url} holds no neardup-solr settings document: nothing was indexed there by "
                         "this tool (index the file first, or point --solr-url at the right collection)")
    builder = DocumentBuilder(settings)
    reader = RecordReader(Path(path), fmt, id_field=id_field, text_field=text_field,
                          on_decode_error=on_decode_error)
    with SortedSpill(chunk_size) as spill:
        batch: list[Record] = []

        def sign() -> None:
            built = builder.build([(r.id, r.text, r.fields) for r in batch])
            lines = {r.id: r.line for r in batch}
            for doc in built.documents:
                spill.add(doc["id"], lines[doc["id"]],
                          f"{doc['md5_hash']}/{signature_digest(doc['minhash_sig'])}")
            batch.clear()

        for item in reader:
            if not isinstance(item, Record):
                continue
            batch.append(item)
            if len(batch) >= batch_size:
                sign()
        if batch:
            sign()
        return compare(spill, client, with_digests=True)
