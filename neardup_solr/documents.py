"""From a record to the Solr document, and the token forms the searcher must use to match it.

The indexer and the searcher both go through this module, so a query token is always spelled the way the
indexed token was.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
from dataclasses import asdict, dataclass, field
from typing import Iterable, Sequence

import numpy as np

from .errors import InvalidTextError
from .lsh import LSHParams, band_keys, band_tokens, recall_params
from .text import MinHash, ProcessedText, Shingler, normalize

log = logging.getLogger(__name__)

SETTINGS_DOC_ID = "__neardup_settings__"
META_DATASET = "__meta__"
# Lucene refuses terms over 32,766 bytes; long "words" (base64 blobs, URLs) are stored as a digest instead.
MAX_TOKEN_BYTES = 256


# Token field of each kind of token, in the schema.
TOKEN_FIELDS = {"shingles": "content_ng", "minhash": "content_sg", "lsh": "content_lsh", "words": "content_words"}


@dataclass(frozen=True)
class IndexSettings:
    """How a collection was indexed. Stored in the index itself, so searches always use the same settings."""

    ngram: int = 3
    unit: str = "word"
    num_hashes: int = 128
    seed: int = 42
    lsh_threshold: float = 0.8
    bands: int | None = None
    rows: int | None = None
    # Which token fields to index. Each costs indexing time (Solr's work grows with the number of distinct
    # terms): "shingles" (content_ng: shingle mode, threshold mode), "minhash" (content_sg: MinHash mode),
    # "lsh" (content_lsh: LSH lookups), "words" (content_words: IDF weighting). The signature itself
    # (minhash_sig) is always stored; whole-collection dedup needs nothing else.
    fields: tuple[str, ...] = ("shingles", "minhash", "lsh", "words")
    # Write-up 003's sampling: index only the shingles whose hash is 0 modulo sample_mod (1 = all of them). A
    # smaller index, and similar documents still share about 1/sample_mod of their shingles.
    sample_mod: int = 1

    def __post_init__(self):
        object.__setattr__(self, "fields", tuple(self.fields))
        if self.sample_mod < 1:
            raise ValueError("sample_mod must be at least 1 (1 keeps every shingle)")
        unknown = set(self.fields) - set(TOKEN_FIELDS)
        if unknown:
            raise ValueError(f"unknown token field(s) {sorted(unknown)}; choose from {', '.join(TOKEN_FIELDS)}")
        if self.ngram < 1:
            raise ValueError("ngram must be at least 1")
        if self.unit not in ("word", "char"):
            raise ValueError("unit must be 'word' or 'char'")
        if self.num_hashes < 1:
            raise ValueError("num_hashes must be at least 1")
        if (self.bands is None) != (self.rows is None):
            raise ValueError("give both bands and rows, or neither (then they are chosen for lsh_threshold)")
        if self.bands is not None and self.bands * self.rows > self.num_hashes:
            raise ValueError(f"bands*rows = {self.bands * self.rows} exceeds num_hashes = {self.num_hashes}")

    def require(self, kind: str) -> None:
        """Raise a clear error when a query needs a token field this collection was indexed without."""
        if kind not in self.fields:
            raise ValueError(
                f"this collection was indexed without {kind!r} tokens ({TOKEN_FIELDS[kind]}); re-index with "
                f"--fields including {kind} to use this mode (indexed: {', '.join(self.fields) or 'none'})"
            )

    def lsh_params(self) -> LSHParams:
        if self.bands is not None:
            return LSHParams(self.bands, self.rows)
        return recall_params(self.lsh_threshold, self.num_hashes)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "IndexSettings":
        data = json.loads(text)
        if "fields" in data:
            data["fields"] = tuple(data["fields"])
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})

    def settings_document(self) -> dict:
        return {"id": SETTINGS_DOC_ID, "dataset": META_DATASET, "content": self.to_json()}


def text_token(value: str) -> str:
    """A shingle or word as a Solr token; over-long ones become a stable digest (never a real shingle: the
    normaliser removes '~')."""
    if len(value) * 4 <= MAX_TOKEN_BYTES or len(value.encode("utf-8")) <= MAX_TOKEN_BYTES:
        return value
    return "~" + hashlib.blake2b(value.encode("utf-8"), digest_size=12).hexdigest()


def signature_tokens(signature: np.ndarray, count: int | None = None) -> list[str]:
    """MinHash values as ``position_value`` tokens: a match means the *same* hash function agreed (the write-up
    stored bare values, so equal values from different positions counted as matches)."""
    values = (signature if count is None else signature[:count]).tolist()  # Python ints format ~5x faster
    return list(map(_SIG_FORMAT, range(len(values)), values))


def encode_signature(signature: np.ndarray) -> str:
    """A signature as one compact string (base64 of little-endian uint32s) for the ``minhash_sig`` field."""
    return base64.b64encode(np.ascontiguousarray(signature, dtype="<u4").tobytes()).decode("ascii")


def decode_signatures(values: Sequence[str], num_hashes: int) -> np.ndarray:
    """The inverse of :func:`encode_signature` for many documents at once: an (n, num_hashes) uint32 array."""
    raw = b"".join(base64.b64decode(v) for v in values)
    return np.frombuffer(raw, dtype="<u4").reshape(len(values), num_hashes).astype(np.uint32)


_SIG_FORMAT = "{}_{:x}".format
# Below this many characters a token cannot exceed MAX_TOKEN_BYTES (UTF-8 uses at most 4 bytes a character).
_SAFE_CHARS = MAX_TOKEN_BYTES // 4


def text_tokens(values: Iterable[str]) -> list[str]:
    """:func:`text_token` over many values, with the common short case kept out of a function call."""
    return [v if len(v) <= _SAFE_CHARS else text_token(v) for v in values]


def md5_hex(normalized: str) -> str:
    return hashlib.md5(normalized.encode("utf-8")).hexdigest()


@dataclass
class BuiltBatch:
    documents: list[dict] = field(default_factory=list)
    rejected: list[tuple[int, str]] = field(default_factory=list)  # (index in the input batch, reason)


class DocumentBuilder:
    """Computes every field of the Solr documents of a batch, signing the batch in one vectorised pass."""

    def __init__(self, settings: IndexSettings):
        self.settings = settings
        self.shingler = Shingler(ngram=settings.ngram, unit=settings.unit, seed=settings.seed)
        self.minhash = MinHash(num_hashes=settings.num_hashes, seed=settings.seed, shingler=self.shingler)
        self.lsh = settings.lsh_params()

    def process(self, text: str) -> ProcessedText:
        """Raises InvalidTextError when nothing is left to shingle."""
        processed = self.shingler.process(text)
        if not processed.shingles:
            raise InvalidTextError("no words left after normalisation (empty, blank or punctuation-only text)")
        return processed

    def shingle_tokens(self, p: ProcessedText) -> list[str]:
        """The shingles of a processed text as stored in ``content_ng``: all of them, or the sample."""
        tokens = text_tokens(p.shingles)
        m = self.settings.sample_mod
        if m == 1:
            return tokens
        hashes = p.shingle_hashes.tolist()
        if len(hashes) != len(tokens):  # two shingles with one hash: pair them up one by one instead
            hashes = [self.shingler.hash_shingle(s) for s in p.shingles]
        return [t for t, h in zip(tokens, hashes) if h % m == 0]

    def field_tokens(self, fields: dict) -> list[str]:
        """Distinct ``column:word`` tokens of a multi-column record."""
        tokens: dict[str, None] = {}
        for name, value in fields.items():
            for word in self.shingler.process(value).words:
                tokens[f"{name}:{text_token(word)}"] = None
        return list(tokens)

    def build(self, items: Sequence[tuple], dataset: str | None = None) -> BuiltBatch:
        """``items`` are (id, text) or (id, text, fields) tuples; records that cannot be indexed are returned in
        ``rejected``."""
        if "shingles" not in self.settings.fields and "words" not in self.settings.fields:
            return self._build_lean(items, dataset)
        out = BuiltBatch()
        processed: list[tuple[int, str, str, ProcessedText]] = []
        for index, (doc_id, text, *_) in enumerate(items):
            if not doc_id or doc_id == SETTINGS_DOC_ID:
                out.rejected.append((index, f"id {doc_id!r} is empty or reserved"))
                continue
            try:
                processed.append((index, doc_id, text, self.process(text)))
            except InvalidTextError as exc:
                out.rejected.append((index, str(exc)))
        if not processed:
            return out
        signatures = self.minhash.signatures_from_hashes([p.shingle_hashes for *_, p in processed])
        keys = band_keys(signatures, self.lsh) if "lsh" in self.settings.fields else None
        want_shingles = "shingles" in self.settings.fields
        want_words = "words" in self.settings.fields
        for row, (index, doc_id, text, p) in enumerate(processed):
            doc = {
                "id": doc_id,
                "content": text,
                "md5_hash": md5_hex(p.normalized),
                "num_words": len(p.words),
                "first_word": text_token(p.words[0]) if p.words else "",
                "num_shingles": len(p.shingles),
                "minhash_sig": encode_signature(signatures[row]),
            }
            if want_shingles:
                doc["content_ng"] = self.shingle_tokens(p)
            if want_words:
                doc["content_words"] = text_tokens(dict.fromkeys(p.words))
            self._add_signature_fields(doc, signatures[row], None if keys is None else keys[row], dataset)
            fields = items[index][2] if len(items[index]) > 2 else None
            if fields:
                doc["content_fwords"] = self.field_tokens(fields)
                doc["fields_json"] = json.dumps(fields, ensure_ascii=False)
            out.documents.append(doc)
        return out

    def _add_signature_fields(self, doc: dict, signature: np.ndarray, band_keys_row, dataset: str | None) -> None:
        if "minhash" in self.settings.fields:
            doc["content_sg"] = signature_tokens(signature)
        if band_keys_row is not None:
            doc["content_lsh"] = band_tokens(band_keys_row)
        if dataset is not None:
            doc["dataset"] = dataset

    def _build_lean(self, items: Sequence[tuple], dataset: str | None) -> BuiltBatch:
        """Without shingle or word tokens to store, no shingle string is ever built: the whole batch is hashed and
        signed in NumPy (Shingler.batch_hashes, the same hashes as process(); tests check the fields agree)."""
        out = BuiltBatch()
        kept: list[int] = []
        normalized: list[str] = []
        words: list[list[str]] = []
        for index, (doc_id, text, *_) in enumerate(items):
            if not doc_id or doc_id == SETTINGS_DOC_ID:
                out.rejected.append((index, f"id {doc_id!r} is empty or reserved"))
                continue
            norm = normalize(text)
            if not norm:
                out.rejected.append((index, "no words left after normalisation (empty, blank or punctuation-only text)"))
                continue
            kept.append(index)
            normalized.append(norm)
            words.append(norm.split(" "))
        if not kept:
            return out
        hashes, offsets = self.shingler.batch_hashes(normalized)
        signatures = self.minhash._sign(hashes, offsets)
        distinct = _distinct_counts(hashes, offsets)
        keys = band_keys(signatures, self.lsh) if "lsh" in self.settings.fields else None
        for row, index in enumerate(kept):
            doc_id, text, *rest = items[index]
            ws = words[row]
            doc = {
                "id": doc_id,
                "content": text,
                "md5_hash": md5_hex(normalized[row]),
                "num_words": len(ws),
                "first_word": text_token(ws[0]),
                "num_shingles": int(distinct[row]),
                "minhash_sig": encode_signature(signatures[row]),
            }
            self._add_signature_fields(doc, signatures[row], None if keys is None else keys[row], dataset)
            if rest and rest[0]:
                doc["fields_json"] = json.dumps(rest[0], ensure_ascii=False)
            out.documents.append(doc)
        return out


def _distinct_counts(hashes: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Number of distinct values in each document's slice of ``hashes``, vectorised over the batch."""
    ndocs = len(offsets) - 1
    doc = np.repeat(np.arange(ndocs, dtype=np.uint64), np.diff(offsets))
    # One uint64 sort (document in the high half, hash in the low) is several times faster than a lexsort.
    keys = np.sort((doc << np.uint64(32)) | hashes.astype(np.uint64))
    first = np.ones(len(keys), dtype=bool)
    first[1:] = keys[1:] != keys[:-1]
    return np.bincount((keys[first] >> np.uint64(32)).astype(np.int64), minlength=ndocs)


def _holds_no_documents(client) -> bool:
    return client.count("*:*", ["-{!term f=dataset v=$nd.meta}"], [("nd.meta", META_DATASET)]) == 0


def read_index_settings(client) -> IndexSettings | None:
    docs = client.get_by_ids([SETTINGS_DOC_ID], "content")
    return IndexSettings.from_json(docs[0]["content"]) if docs else None


def ensure_index_settings(client, settings: IndexSettings | None) -> IndexSettings:
    """The settings the collection was indexed with; writes ``settings`` (or defaults) into an empty collection
    and refuses to mix documents indexed with different settings."""
    stored = read_index_settings(client)
    if stored is None or (settings is not None and settings != stored and _holds_no_documents(client)):
        # An emptied collection (every data set cleared) takes new settings: no signature can be mixed up.
        chosen = settings or IndexSettings()
        client.add([chosen.settings_document()])
        return chosen
    if settings is not None and settings != stored:
        raise ValueError(
            f"this collection was indexed with {stored}; indexing with {settings} would mix incompatible "
            "shingles/signatures. Use the same settings, or empty the collection first (--clear-all)."
        )
    return stored
