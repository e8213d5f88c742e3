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
from typing import TYPE_CHECKING, Iterable, Sequence

import numpy as np

from neardup_solr.errors import (
    InvalidParameterError,
    InvalidTextError,
    ParameterTypeError,
    SettingsConflictError,
    StoredSettingsError,
)
from neardup_solr.pairs.lsh import LSHParams, band_keys, band_tokens, recall_params
from neardup_solr.text import LATEST_NORMALIZER_VERSION, MinHash, Normalizer, ProcessedText, Shingler, kernel
from neardup_solr.text.kernel import position_tokens
from neardup_solr.text.normalizer import split_normalized
from neardup_solr.text.shingles import distinct_in_order, hash_tokens, joined_hash_tokens
from neardup_solr.text.scripts import UnspacedTextCheck
from neardup_solr.validation import check_choice, check_float, check_int, id_problem

if TYPE_CHECKING:
    from neardup_solr.solr.client import SolrClient

log = logging.getLogger(__name__)

SETTINGS_DOC_ID = "__neardup_settings__"
META_DATASET = "__meta__"
RESERVED_IDS = frozenset({SETTINGS_DOC_ID})
# In a user's own collection prepared by ``install`` (neardup_solr.solr.schema_install) the settings JSON is kept in
# a field of its own (the user may have a "content" of theirs), with one key more, "text_field": the user's field
# the text is read from. read_index_settings tells the client, which then reads that field wherever "content" is
# asked for (SolrClient.text_field).
INSTALLED_SETTINGS_FIELD = "neardup_settings"
# Lucene refuses terms over 32,766 bytes; long "words" (base64 blobs, URLs) are stored as a digest instead.
MAX_TOKEN_BYTES = 256


UNITS = ("word", "char")

# Token field of each kind of token, in the schema (shingles: see SHINGLE_FIELDS, by IndexSettings.shingle_tokens).
TOKEN_FIELDS = {"shingles": "content_ng", "minhash": "content_sg", "lsh": "content_lsh", "words": "content_words",
                "grams": "content_grams"}
# How shingles are spelled as tokens, and the field of each spelling. "hash": the hex of each distinct shingle's
# 32-bit hash (the values the MinHash signature is computed from), all of a document's in one whitespace-separated
# value of content_nh. "text": the shingle strings, one multi-valued content_ng value each, as collections indexed
# before the "hash" form keep doing (stored settings without shingle_tokens read as "text"). The hash form costs
# Solr about a third less per document (benchmarks/token_fields.py) and the client no shingle strings. Two
# distinct shingles of one pair of documents share a 32-bit hash with probability about n1*n2/2**32 (1e-5 for
# two 220-shingle texts): the overlap count is then one too high, the same error the MinHash signature and the
# threshold mode's exact check already accept, since both work on these hashes.
SHINGLE_FIELDS = {"hash": "content_nh", "text": "content_ng"}
# The token fields an index gets unless told otherwise: what the default lookups (shingles), LSH lookups and
# whole-collection reports (lsh) and IDF weighting (words) read. "minhash" (the write-up's mode=minhash, a
# position-by-position OR-query that LSH bands answer with a fraction of the tokens) cost a quarter of Solr's
# indexing CPU and is opt-in, like "grams" (only --idf-tokens grams reads it).
DEFAULT_TOKEN_FIELDS = ("shingles", "lsh", "words")
# Every mode of the write-ups: the defaults before minhash became opt-in (collections indexed then keep them:
# their stored settings name their fields).
WRITE_UP_TOKEN_FIELDS = ("shingles", "minhash", "lsh", "words")
# "grams" tokens: each word wrapped in WORD_GRAM_PAD, and the character WORD_GRAM_SIZE-grams of that. A typo
# changes a whole word token but only the few grams around it, so records whose words carry typos still share
# most of their weight. 4 was measured against 3-grams and character 3-shingles of the whole text on the
# restaurant data and the generated person records (benchmarks/recipe_tokens.py): shorter grams of common letter
# runs are shared by unrelated restaurants on the same street. '#' cannot occur in a normalised word (the normaliser blanks punctuation),
# so a padded word never equals a gram from inside a longer word.
WORD_GRAM_SIZE = 4
WORD_GRAM_PAD = "#"


@dataclass(frozen=True)
class IndexSettings:
    """How a collection was indexed. Stored in the index itself, so searches always use the same settings.

    ``ngram`` shingle size (1-1000) of ``unit`` ``"word"`` or ``"char"``; ``num_hashes`` MinHash values
    (1-8192); ``seed`` of the masks (0 to 2**32-1); ``lsh_threshold`` the Jaccard similarity (0 < t <= 1) the
    LSH bands are chosen for, unless ``bands`` and ``rows`` (per band) are given together with
    ``bands * rows <= num_hashes``; ``fields`` the token fields to index (a tuple of names from
    ``TOKEN_FIELDS``); ``sample_mod`` keeps the shingles whose hash is 0 modulo it (1 keeps all).
    ``normalizer_version``, ``fold_diacritics`` and ``fold_digits`` choose the
    :class:`~neardup_solr.text.Normalizer`; new collections get the latest version, and settings stored
    before versions existed read as version 1, which such collections keep answering with.

    Every value is checked here, so invalid settings never reach a collection: an integer is an int (not
    128.0, not True) and a number is finite. A refused value raises
    :class:`~neardup_solr.errors.InvalidParameterError` (or :class:`~neardup_solr.errors.ParameterTypeError`)
    naming the parameter.
    """

    ngram: int = 3
    unit: str = "word"
    num_hashes: int = 128
    seed: int = 42
    lsh_threshold: float = 0.8
    bands: int | None = None
    rows: int | None = None
    # Which token fields to index. Each costs indexing time (Solr's work grows with the number of distinct
    # terms): "shingles" (content_ng: shingle mode, threshold mode), "minhash" (content_sg: MinHash mode),
    # "lsh" (content_lsh: LSH lookups), "words" (content_words: IDF weighting), "grams" (content_grams: IDF
    # weighting over words and their character 4-grams, for records with typos; not indexed by default). The
    # signature itself (minhash_sig) is always stored; whole-collection dedup needs nothing else.
    fields: tuple[str, ...] = DEFAULT_TOKEN_FIELDS
    # Write-up 003's sampling: index only the shingles whose hash is 0 modulo sample_mod (1 = all of them). A
    # smaller index, and similar documents still share about 1/sample_mod of their shingles.
    sample_mod: int = 1
    # The text normaliser (neardup_solr.text.Normalizer): its version and options. Stored settings without
    # normalizer_version were written before version 2 existed: from_json reads them as version 1.
    normalizer_version: int = LATEST_NORMALIZER_VERSION
    fold_diacritics: bool = False
    fold_digits: bool = False
    # How shingles are indexed (SHINGLE_FIELDS): "hash" for new collections, "text" for those stored before.
    shingle_tokens: str = "hash"

    def __post_init__(self) -> None:
        # Checked here, before a settings object can reach the index: a stored lsh_threshold of 1.5 or NaN, or
        # a num_hashes of 128.0, used to make every later Searcher and Indexer fail on that collection.
        set_ = object.__setattr__
        set_(self, "ngram", check_int("ngram", self.ngram, "ngram"))
        set_(self, "unit", check_choice("unit", self.unit, UNITS))
        set_(self, "num_hashes", check_int("num_hashes", self.num_hashes, "num_hashes"))
        set_(self, "seed", check_int("seed", self.seed, "seed"))
        set_(self, "lsh_threshold", check_float("lsh_threshold", self.lsh_threshold, "lsh_threshold"))
        set_(self, "bands", check_int("bands", self.bands, "bands", none_ok=True))
        set_(self, "rows", check_int("rows", self.rows, "rows_per_band", none_ok=True))
        set_(self, "sample_mod", check_int("sample_mod", self.sample_mod, "sample_mod"))
        set_(self, "shingle_tokens", check_choice("shingle_tokens", self.shingle_tokens, tuple(SHINGLE_FIELDS)))
        self.normalizer()  # checks the version and its options
        if isinstance(self.fields, str) or not isinstance(self.fields, (tuple, list, set, frozenset)):
            raise ParameterTypeError("fields", "a tuple of token field names such as ('lsh',)", self.fields,
                                     f"choose from {', '.join(TOKEN_FIELDS)}")
        set_(self, "fields", tuple(self.fields))
        unknown = [f for f in self.fields if f not in TOKEN_FIELDS]
        if unknown:
            raise InvalidParameterError("fields", f"token field names from {', '.join(TOKEN_FIELDS)}", self.fields,
                                        f"unknown: {', '.join(map(repr, unknown))}")
        if len(set(self.fields)) != len(self.fields):
            raise InvalidParameterError("fields", "token field names, each once", self.fields)
        if (self.bands is None) != (self.rows is None):
            raise InvalidParameterError("bands", "given together with rows, or neither (then they are chosen "
                                        "for lsh_threshold)", self.bands, show_value=False)
        if self.bands is not None and self.rows is not None and self.bands * self.rows > self.num_hashes:
            raise InvalidParameterError(
                "bands", f"such that bands * rows <= num_hashes ({self.num_hashes})", self.bands,
                f"bands * rows = {self.bands * self.rows}; lower one of them or raise num_hashes")

    def require(self, kind: str) -> None:
        """Raise a clear error when a query needs a token field this collection was indexed without."""
        if kind not in self.fields:
            raise ValueError(
                f"this collection was indexed without {kind!r} tokens ({self.token_field(kind)}); re-index with "
                f"--fields including {kind} (IndexSettings(fields=...) in Python) to use this mode (indexed: "
                f"{', '.join(self.fields) or 'none'})"
            )

    def token_field(self, kind: str) -> str:
        """The schema field that holds ``kind`` tokens (a key of TOKEN_FIELDS) in a collection with these settings."""
        if kind == "shingles":
            return SHINGLE_FIELDS[self.shingle_tokens]
        return TOKEN_FIELDS[kind]

    def normalizer(self) -> Normalizer:
        """The normaliser every text of this collection goes through (indexing, lookups, joins, verify)."""
        return Normalizer(self.normalizer_version, self.fold_diacritics, self.fold_digits)

    def lsh_params(self) -> LSHParams:
        """The LSH bands and rows: the explicit ones, else those chosen for ``lsh_threshold`` (recall 0.95)."""
        if self.bands is not None and self.rows is not None:
            return LSHParams(self.bands, self.rows)
        return recall_params(self.lsh_threshold, self.num_hashes)

    def to_json(self) -> str:
        """The settings as the JSON stored in the collection's settings document."""
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "IndexSettings":
        """Settings from :meth:`to_json`'s JSON; raises InvalidParameterError (a ValueError) or
        ParameterTypeError (a TypeError) for values it would not accept, ValueError for broken JSON."""
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError(f"expected a JSON object, got {type(data).__name__}")
        if isinstance(data.get("fields"), list):
            data["fields"] = tuple(data["fields"])
        data.setdefault("normalizer_version", 1)  # stored before normaliser versions existed
        data.setdefault("shingle_tokens", "text")  # stored before shingles were indexed as hashes
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})

    def settings_document(self) -> dict:
        """The Solr document that stores these settings in the collection."""
        return {"id": SETTINGS_DOC_ID, "dataset": META_DATASET, "content": self.to_json()}


NO_WORDS_LEFT = "no words left after normalisation (empty, blank or punctuation-only text)"


def text_token(value: str) -> str:
    """A shingle or word as a Solr token; over-long ones become a stable digest (never a real shingle: the
    normaliser removes '~')."""
    if len(value) * 4 <= MAX_TOKEN_BYTES or len(value.encode("utf-8")) <= MAX_TOKEN_BYTES:
        return value
    return "~" + hashlib.blake2b(value.encode("utf-8"), digest_size=12).hexdigest()


def word_gram_tokens(words: Iterable[str]) -> list[str]:
    """The distinct ``grams`` tokens of some words: each word padded as ``#word#``, then the character 4-grams of
    the padded word (``smith``: ``#smith#``, ``#smi``, ``smit``, ``mith``, ``ith#``). A word of two letters or
    fewer is its padded form alone. Over-long words become a digest as in :func:`text_token` (their grams are
    kept: they are short)."""
    tokens: dict[str, None] = {}
    size = WORD_GRAM_SIZE
    for word in words:
        padded = f"{WORD_GRAM_PAD}{word}{WORD_GRAM_PAD}"
        tokens[text_token(padded)] = None
        for start in range(len(padded) - size + 1):
            tokens[padded[start:start + size]] = None
    return list(tokens)


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
    """MD5 (hex) of a normalised text: equal digests are exact duplicates."""
    return hashlib.md5(normalized.encode("utf-8")).hexdigest()


@dataclass
class BuiltBatch:
    """The Solr documents of a batch, and the records that could not become one (index in the batch, reason)."""

    documents: list[dict] = field(default_factory=list)
    rejected: list[tuple[int, str]] = field(default_factory=list)  # (index in the input batch, reason)


class DocumentBuilder:
    """Computes every field of the Solr documents of a batch, signing the batch in one vectorised pass."""

    def __init__(self, settings: IndexSettings):
        self.settings = settings
        self.shingler = Shingler(ngram=settings.ngram, unit=settings.unit, seed=settings.seed,
                                 normalizer=settings.normalizer())
        self.unspaced = UnspacedTextCheck(settings.unit)
        self.minhash = MinHash(num_hashes=settings.num_hashes, seed=settings.seed, shingler=self.shingler)
        self.lsh = settings.lsh_params()

    def process(self, text: str) -> ProcessedText:
        """Raises InvalidTextError when nothing is left to shingle."""
        processed = self.shingler.process(text)
        self.unspaced.check(processed.normalized)
        if not processed.shingles:
            raise InvalidTextError(NO_WORDS_LEFT)
        return processed

    def shingle_tokens(self, p: ProcessedText) -> list[str]:
        """The shingles of a processed text as its collection indexes them (``shingle_tokens``: the hex of each
        distinct hash, or the shingle strings), all of them or the ``sample_mod`` sample."""
        m = self.settings.sample_mod
        if self.settings.shingle_tokens == "hash":
            return hash_tokens(p.shingle_hashes, m)
        tokens = text_tokens(p.shingles)
        if m == 1:
            return tokens
        hashes = p.shingle_hashes.tolist()
        if len(hashes) != len(tokens):  # two shingles with one hash: pair them up one by one instead
            hashes = [self.shingler.hash_shingle(s) for s in p.shingles]
        return [t for t, h in zip(tokens, hashes) if h % m == 0]

    def word_tokens(self, text: str) -> list[str]:
        """The distinct words of a text, as stored in ``content_words``: the tokens IDF weighting counts (the
        same list as ``process(text).words`` de-duplicated, without building the shingles)."""
        return text_tokens(dict.fromkeys(self.shingler.normalizer.words(text)))

    def gram_tokens(self, text: str) -> list[str]:
        """The ``grams`` tokens of a text, as stored in ``content_grams``: its distinct words padded, and their
        character 4-grams (:func:`word_gram_tokens`)."""
        return word_gram_tokens(dict.fromkeys(self.shingler.normalizer.words(text)))

    def field_tokens(self, fields: dict) -> list[str]:
        """Distinct ``column:word`` tokens of a multi-column record."""
        tokens: dict[str, None] = {}
        for name, value in fields.items():
            # normalizer.words is process(value).words without building the shingles.
            for word in self.shingler.normalizer.words(value):
                tokens[f"{name}:{text_token(word)}"] = None
        return list(tokens)

    def build(self, items: Sequence[tuple], dataset: str | None = None) -> BuiltBatch:
        """``items`` are (id, text) or (id, text, fields) tuples; records that cannot be indexed are returned in
        ``rejected``. The batch is hashed and signed at once (the compiled kernel where it is built); shingle
        strings are made only for a collection that indexes them as text."""
        out = BuiltBatch()
        settings = self.settings
        text_shingles = "shingles" in settings.fields and settings.shingle_tokens == "text"
        # (index in items, normalised text, its words, its shingle strings when indexed as text)
        kept: list[tuple[int, str, list[str], list[str] | None]] = []
        normalize, shingles_of = self.shingler.normalizer.normalize, self.shingler.shingles_of
        for index, (doc_id, text, *_) in enumerate(items):
            problem = record_problem(doc_id, text)
            if problem:
                out.rejected.append((index, problem))
                continue
            normalized = normalize(text)
            if not normalized:
                out.rejected.append((index, NO_WORDS_LEFT))
                continue
            self.unspaced.check(normalized)
            words = split_normalized(normalized)
            kept.append((index, normalized, words, shingles_of(normalized, words) if text_shingles else None))
        if not kept:
            return out
        # From the texts, not from the normalised ones: the kernel normalises them itself, and normalising twice is
        # not always the same as once (a rare combining sequence, see tests/test_normalizer.py).
        hashes, offsets, signatures = self.minhash.hashes_and_signatures([items[row[0]][1] for row in kept])
        # The hash form's tokens and every text's count of distinct shingles, where no shingle strings are made.
        joined, distinct = ([], None) if text_shingles else joined_hash_tokens(hashes, offsets, settings.sample_mod)
        keys = band_keys(signatures, self.lsh) if "lsh" in settings.fields else None
        tokens = self._signature_field_tokens(signatures, keys)
        for row, (index, normalized, words, shingles) in enumerate(kept):
            shingle_value: str | list[str]
            if shingles is None:
                assert distinct is not None
                shingle_value, count = joined[row], int(distinct[row])
            else:
                p = ProcessedText(normalized, words, shingles, distinct_in_order(hashes[offsets[row]:offsets[row + 1]]))
                shingle_value, count = self.shingle_tokens(p), len(shingles)
            doc_id, text, *rest = items[index]
            out.documents.append(self._document(doc_id, text, normalized, words, count, shingle_value,
                                                signatures[row], {f: values[row] for f, values in tokens.items()},
                                                dataset, rest[0] if rest else None))
        return out

    def build_prepared(self, doc_id: str, text: str, processed: ProcessedText, signature: np.ndarray,
                       dataset: str | None = None, *, band_keys_row: np.ndarray | None = None) -> dict:
        """The document :meth:`build` makes of ``(doc_id, text)``, from the text already processed and signed (a
        lookup's prepared query), so a check that goes on to add it does not shingle and sign it twice.
        ``band_keys_row``: the signature's band keys when already computed."""
        keys = None
        if "lsh" in self.settings.fields:
            keys = band_keys(signature[None, :], self.lsh) if band_keys_row is None else band_keys_row[None, :]
        tokens = self._signature_field_tokens(signature[None, :], keys)
        shingle_value: str | list[str]
        if self.settings.shingle_tokens == "hash":
            shingle_value = " ".join(self.shingle_tokens(processed))
            count = int(np.unique(processed.shingle_hashes).size)
        else:
            shingle_value, count = self.shingle_tokens(processed), len(processed.shingles)
        return self._document(doc_id, text, processed.normalized, processed.words, count, shingle_value, signature,
                              {f: values[0] for f, values in tokens.items()}, dataset, None)

    def _document(self, doc_id: str, text: str, normalized: str, words: list[str], num_shingles: int,
                  shingle_value: str | list[str], signature: np.ndarray, signature_tokens_row: dict,
                  dataset: str | None, fields: dict | None) -> dict:
        """One Solr document: the stored fields, then the token fields the settings name."""
        settings = self.settings
        doc = {
            "id": doc_id,
            "content": text,
            "md5_hash": md5_hex(normalized),
            "num_words": len(words),
            "first_word": text_token(words[0]) if words else "",
            "num_shingles": num_shingles,
            "minhash_sig": encode_signature(signature),
        }
        if "shingles" in settings.fields:
            doc[settings.token_field("shingles")] = shingle_value
        if "words" in settings.fields:
            doc["content_words"] = text_tokens(dict.fromkeys(words))
        if "grams" in settings.fields:
            doc["content_grams"] = word_gram_tokens(dict.fromkeys(words))
        doc.update(signature_tokens_row)
        if dataset is not None:
            doc["dataset"] = dataset
        if fields:
            # Column tokens only where a words-like field is indexed: the lean profiles (lsh, minhash) are for speed.
            if {"shingles", "words", "grams"} & set(settings.fields):
                doc["content_fwords"] = self.field_tokens(fields)
            doc["fields_json"] = json.dumps(fields, ensure_ascii=False)
        return doc

    def _signature_field_tokens(self, signatures: np.ndarray, keys: np.ndarray | None) -> dict[str, list]:
        """The MinHash and LSH token fields of a whole batch (each a list of per-document token lists), made by
        the compiled kernel at once where it is built."""
        tokens: dict[str, list] = {}
        batch_tokens = position_tokens if kernel.available() else None
        if "minhash" in self.settings.fields:
            tokens["content_sg"] = (batch_tokens(np.asarray(signatures)) if batch_tokens
                                    else [signature_tokens(row) for row in signatures])
        if keys is not None:
            tokens["content_lsh"] = batch_tokens(keys) if batch_tokens else [band_tokens(row) for row in keys]
        return tokens


def record_problem(doc_id: object, text: object) -> str | None:
    """Why a record cannot become a document (its id, or a text that is not a str), or None. Checked for every
    record of a batch before any of it is built, so that one bad record is rejected with its reason instead of
    raising half-way through the batch."""
    problem = id_problem(doc_id)
    if problem:
        return problem
    if str(doc_id) in RESERVED_IDS:
        return f"the id {doc_id!r} is reserved for neardup-solr's settings document"
    if text is None:
        return "the text is missing (None)"
    if not isinstance(text, str):
        return f"the text must be a str, not {type(text).__name__}"
    return None


def _holds_no_documents(client: SolrClient) -> bool:
    return client.count("*:*", ["-{!term f=dataset v=$nd.meta}"], [("nd.meta", META_DATASET)]) == 0


def _stored_settings_json(client: SolrClient) -> str | None:
    docs = client.get_by_ids([SETTINGS_DOC_ID], f"content,{INSTALLED_SETTINGS_FIELD}")
    return _settings_text(docs[0]) if docs else None


def _settings_text(doc: dict) -> str | None:
    """The settings JSON of the settings document: ``content`` in our collections, INSTALLED_SETTINGS_FIELD in one
    prepared by ``install``."""
    return doc.get(INSTALLED_SETTINGS_FIELD) or doc.get("content")


def _use_text_field(client: SolrClient, text: str | None) -> None:
    """Point the client at the user's text field when the settings were stored by ``install``."""
    try:
        field_name = json.loads(text or "{}").get("text_field")
    except (ValueError, AttributeError):
        return
    if isinstance(field_name, str) and field_name:
        client.text_field = field_name


def _no_neardup_fields(client: SolrClient) -> None:
    """Raise ForeignCollectionError, naming ``install``, when the schema has none of our fields (Solr would
    otherwise answer the first query with a bare "undefined field")."""
    from neardup_solr.errors import ForeignCollectionError

    if "minhash_sig" not in client.schema_fields():
        raise ForeignCollectionError(
            f"{client.url} has no near-duplicate fields yet: add them with 'neardup-solr install --solr-url "
            f"{client.url} --text-field FIELD' (FIELD: your field with the text), then sign what is there with "
            "'neardup-solr backfill'")


def _settings_problem(text: str | None) -> str:
    """Why a stored settings JSON is not valid settings ('' when it is)."""
    if text is None:
        return "the settings document has no content"
    try:
        IndexSettings.from_json(text)
    except (ValueError, TypeError) as exc:  # broken JSON, or a value IndexSettings refuses
        return str(exc)
    return ""


def read_index_settings(client: SolrClient) -> IndexSettings | None:
    """The settings stored in the collection, or None when none are stored.

    Raises :class:`~neardup_solr.errors.StoredSettingsError` when the stored document is invalid (an older
    version stored what it did not check); :func:`repair_index_settings` replaces it."""
    docs = client.get_by_ids([SETTINGS_DOC_ID], f"content,{INSTALLED_SETTINGS_FIELD}")
    if not docs:
        _no_neardup_fields(client)
        return None
    text = _settings_text(docs[0])
    _use_text_field(client, text)
    problem = _settings_problem(text)
    if problem:
        why = f"the settings stored in {client.url} are invalid ({problem})"
        raise StoredSettingsError(
            f"{why}; replace them with neardup_solr.repair_index_settings(client), which checks the indexed "
            "documents first, or clear the collection",
            cli_message=f"{why}; run 'neardup-solr settings --repair', which checks the indexed documents first",
            url=client.url, problem=problem)
    assert text is not None
    return IndexSettings.from_json(text)


def ensure_index_settings(client: SolrClient, settings: IndexSettings | None) -> IndexSettings:
    """The settings the collection was indexed with; writes ``settings`` (or defaults) into an empty collection
    and refuses to mix documents indexed with different settings."""
    if settings is not None and not isinstance(settings, IndexSettings):
        raise ParameterTypeError("settings", "an IndexSettings or None", settings)
    try:
        stored = read_index_settings(client)
    except StoredSettingsError:
        if not _holds_no_documents(client):
            raise
        # Nothing was indexed with the broken settings (the usual case: the run that stored them failed on
        # them), so nothing can be mixed up by replacing them.
        log.warning("replacing the invalid settings stored in %s: the collection holds no documents", client.url)
        stored = None
    if stored is None or (settings is not None and settings != stored and _holds_no_documents(client)):
        # An emptied collection (every data set cleared) takes new settings: no signature can be mixed up.
        chosen = settings or IndexSettings()
        client.add([chosen.settings_document()])
        return chosen
    if settings is not None and settings.normalizer() != stored.normalizer():
        why = (f"this collection was indexed with {stored.normalizer()}; indexing with {settings.normalizer()} "
               "would mix two normal forms in one index, so copies would be missed. Re-index everything with the "
               "new normaliser")
        raise SettingsConflictError(
            f"{why} (clear the collection with neardup_solr.solr.maintenance.clear(client, everything=True), then "
            f"index all of it), or index with IndexSettings(normalizer_version={stored.normalizer_version}, ...).",
            cli_message=f"{why} (index FILE --clear-all), or keep this one with --normalizer-version "
                        f"{stored.normalizer_version}.")
    if settings is not None and settings != stored:
        differ = [name for name in IndexSettings.__dataclass_fields__
                  if getattr(settings, name) != getattr(stored, name)]
        why = (f"this collection was indexed with {stored}; indexing with {settings} would mix incompatible "
               f"shingles/signatures (they differ in {', '.join(differ)}). Use the same settings, or empty the "
               "collection first")
        keep = ", ".join(f"{name}={getattr(stored, name)!r}" for name in differ)
        flags = " ".join(_flag_for(name, getattr(stored, name)) for name in differ)
        raise SettingsConflictError(
            f"{why} (neardup_solr.solr.maintenance.clear(client, everything=True)), or give {keep}.",
            cli_message=f"{why} (index --clear-all), or keep this collection's with {flags} (or no settings "
                        "flags at all: the collection's own are used).")
    if stored.normalizer_version < LATEST_NORMALIZER_VERSION:
        log.warning("%s was indexed with normaliser version %d and keeps using it; version %d also matches copies "
                    "that differ by Unicode form (NFD accents, ligatures, soft hyphens, full-width digits): to "
                    "use it, re-index everything (neardup-solr index FILE --clear-all)", client.url,
                    stored.normalizer_version, LATEST_NORMALIZER_VERSION)
    return stored


# IndexSettings fields `index` has a flag for (the rest, such as seed, are set in Python only).
_FLAGGED_SETTINGS = frozenset({"ngram", "unit", "num_hashes", "lsh_threshold", "bands", "rows", "sample_mod", "fields",
                               "shingle_tokens", "normalizer_version", "fold_diacritics", "fold_digits"})


def _flag_for(name: str, value: object) -> str:
    """The command-line flag that asks for ``name=value`` (IndexSettings' names, as the CLI spells them)."""
    if name not in _FLAGGED_SETTINGS:
        return f"({name}={value!r}: Python only)"
    flag = "--rows-per-band" if name == "rows" else "--" + name.replace("_", "-")
    if isinstance(value, bool):
        return flag if value else ""
    if isinstance(value, tuple):
        value = ",".join(value)
    return f"{flag} {value}"


@dataclass
class SettingsRepair:
    """What :func:`repair_index_settings` did: ``action`` is ``"none"`` (the stored settings are valid, or none
    are stored), ``"removed"`` (an invalid document removed from an empty collection) or ``"replaced"``;
    ``settings`` the settings now stored (None when none are), ``checked`` how many indexed documents were
    re-signed to confirm them, ``message`` one line saying so."""

    action: str
    settings: IndexSettings | None
    checked: int
    message: str


def _salvaged_settings(text: str | None, signature_length: int | None,
                       normalizer_version: int = 1) -> IndexSettings:
    """The stored values that are valid on their own, the signature length the documents show, and defaults for
    the rest; ``normalizer_version`` when none is stored."""
    try:
        data = json.loads(text or "{}")
    except ValueError:
        data = {}
    if not isinstance(data, dict):
        data = {}
    kept: dict = {} if "normalizer_version" in data else {"normalizer_version": normalizer_version}
    if "shingle_tokens" not in data:
        kept["shingle_tokens"] = "text"
    for name in IndexSettings.__dataclass_fields__:
        if name in data:
            value = data[name]
            if name == "fields" and isinstance(value, list):
                value = tuple(value)
            try:
                IndexSettings(**{**kept, name: value})
            except (ValueError, TypeError):
                continue
            kept[name] = value
    if signature_length is not None:
        kept["num_hashes"] = signature_length
        bands, rows = kept.get("bands"), kept.get("rows")
        if bands is not None and rows is not None and bands * rows > signature_length:
            kept.pop("bands"), kept.pop("rows")
    try:
        return IndexSettings(**kept)
    except (ValueError, TypeError):
        return IndexSettings(num_hashes=signature_length or IndexSettings.num_hashes)


def repair_index_settings(client: SolrClient, settings: IndexSettings | None = None, *,
                          sample: int = 50) -> SettingsRepair:
    """Replace an invalid settings document stored in the collection; leave valid ones alone.

    The replacement is ``settings`` when given, else the stored values that are valid, the signature length
    the indexed documents show, and defaults for the rest. When the collection holds documents, up to
    ``sample`` of them are signed again with the replacement, and it is stored only if every one's MinHash
    signature (and LSH band keys, when indexed) comes out the same: settings that do not match the index would
    make every later lookup quietly wrong. Otherwise :class:`~neardup_solr.errors.StoredSettingsError` says so
    and nothing is changed; give the settings the documents were indexed with, or clear the collection. In an
    empty collection an invalid document is simply removed (the next index run stores its own settings)
    unless ``settings`` is given."""
    if settings is not None and not isinstance(settings, IndexSettings):
        raise ParameterTypeError("settings", "an IndexSettings or None", settings)
    sample = check_int("sample", sample, minimum=1, maximum=100_000)
    text = _stored_settings_json(client)
    problem = _settings_problem(text) if client.get_by_ids([SETTINGS_DOC_ID], "id") else ""
    if not problem:
        stored = read_index_settings(client)
        what = f"the settings stored in {client.url} are valid" if stored else f"no settings are stored in {client.url}"
        if settings is not None and stored is not None and settings != stored:
            what += f" (and differ from the ones given: {stored}); nothing was changed"
        return SettingsRepair("none", stored, 0, f"{what}; nothing to repair")
    docs = client.select([("q", "*:*"), ("fq", "-{!term f=dataset v=$nd.meta}"), ("nd.meta", META_DATASET),
                          ("rows", sample), ("sort", "id asc"), ("fl", "id,content,minhash_sig,content_lsh")]
                         )["response"]["docs"]
    if not docs:
        if settings is None:
            client.delete_ids([SETTINGS_DOC_ID])
            client.commit()
            return SettingsRepair("removed", None, 0,
                                  f"removed the invalid settings from {client.url} ({problem}); it holds no "
                                  "documents, so the next index run stores its own settings")
        client.add([settings.settings_document()])
        client.commit()
        return SettingsRepair("replaced", settings, 0, f"replaced the invalid settings in {client.url} "
                                                        f"({problem}) with {settings}")
    lengths = {len(base64.b64decode(d["minhash_sig"])) // 4 for d in docs if d.get("minhash_sig")}
    length = lengths.pop() if len(lengths) == 1 else None
    candidate = settings or _salvaged_settings(text, length, LATEST_NORMALIZER_VERSION)
    mismatch = _signing_mismatch(candidate, docs)
    if mismatch and settings is None and candidate.normalizer_version != 1:
        # No version stored, and the latest does not re-sign the documents: they may predate version 2.
        older = _salvaged_settings(text, length, 1)
        if not _signing_mismatch(older, docs):
            candidate, mismatch = older, ""
    if mismatch:
        why = (f"cannot repair the settings stored in {client.url} ({problem}): the indexed documents were not "
               f"signed with {candidate} ({mismatch}). Give the settings they were indexed with")
        raise StoredSettingsError(
            f"{why} (repair_index_settings(client, IndexSettings(...))), or clear the collection and index again",
            cli_message=f"{why} ('neardup-solr settings --repair --ngram N --num-hashes K ...'), or index again "
                        "with --clear-all",
            url=client.url, problem=problem)
    client.add([candidate.settings_document()])
    client.commit()
    return SettingsRepair("replaced", candidate, len(docs),
                          f"replaced the invalid settings in {client.url} ({problem}) with {candidate}; "
                          f"{len(docs)} indexed document(s) re-signed with them match")


def _signing_mismatch(settings: IndexSettings, docs: list[dict]) -> str:
    """'' when every document's stored signature (and band keys) is what ``settings`` gives its content."""
    builder = DocumentBuilder(settings)
    built = builder.build([(d["id"], d.get("content", "")) for d in docs])
    by_id = {d["id"]: d for d in built.documents}
    for doc in docs:
        mine = by_id.get(doc["id"])
        if mine is None:
            return f"document {doc['id']!r} cannot be signed"
        if doc.get("minhash_sig") != mine["minhash_sig"]:
            return f"document {doc['id']!r} has another MinHash signature"
        if doc.get("content_lsh") and sorted(doc["content_lsh"]) != sorted(mine.get("content_lsh", [])):
            return f"document {doc['id']!r} has other LSH band keys"
    return ""
