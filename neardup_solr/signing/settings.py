"""How a collection is indexed: the token fields, the shingle and MinHash settings, and the names reserved for
neardup-solr's own documents. Pure values and their checks; storing them in a collection is
:mod:`neardup_solr.solr.settings_store`'s job.
"""

from __future__ import annotations

import json
import platform
from dataclasses import asdict, dataclass, field, replace

from neardup_solr.errors import InvalidParameterError, ParameterTypeError
from neardup_solr.pairs.lsh import LSHParams, recall_params
from neardup_solr.signing.encoder import VECTOR_DIMENSIONS
from neardup_solr.text import LATEST_NORMALIZER_VERSION, Normalizer
from neardup_solr.validation import check_choice, check_float, check_int

# The id of the document that stores a collection's settings, and the data set of neardup-solr's own documents
# (the settings, the online mode's claims): no record may use them.
SETTINGS_DOC_ID = "__neardup_settings__"
META_DATASET = "__meta__"
# The counter near-duplicate groups are numbered from (neardup_solr.solr.group_fields).
GROUP_COUNTER_ID = "__neardup_group_counter__"
# The record fields of a collection of field records and its trained model (neardup_solr.solr.record_model).
RECORD_MODEL_DOC_ID = "__neardup_record_model__"
# A companion's link to the user's collection, and where its backfill and sync have got to
# (neardup_solr.solr.companion).
LINK_DOC_ID = "__neardup_link__"
SOURCE_STATE_DOC_ID = "__neardup_source_state__"
RESERVED_IDS = frozenset({SETTINGS_DOC_ID, GROUP_COUNTER_ID, RECORD_MODEL_DOC_ID, LINK_DOC_ID, SOURCE_STATE_DOC_ID})

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
    # The encoder whose unit vectors the collection holds beside the signatures (neardup_solr.signing.encoder):
    # its spec, "name@version/dimension"; None: no vectors (lookups by meaning are refused, naming it).
    encoder: str | None = None
    # The Unicode version the collection's texts were normalised with. Not compared: it follows from the normaliser
    # and the Python that signed, and ensure_index_settings checks it on its own (refusing to write, warning on
    # lookups). Not filled in here: settings copied with dataclasses.replace to another normaliser version would
    # carry the first one's.
    unicode_version: str | None = field(default=None, compare=False, repr=False)

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
        normalizer = self.normalizer()  # checks the version and its options
        if self.unicode_version is not None and not isinstance(self.unicode_version, str):
            raise ParameterTypeError("unicode_version", "a Unicode version such as '15.1.0'", self.unicode_version)
        if (self.normalizer_version >= 3 and self.unicode_version
                and self.unicode_version != normalizer.unicode_version):
            raise InvalidParameterError("unicode_version", f"{normalizer.unicode_version} with normaliser version "
                                        f"{self.normalizer_version} (its Unicode is pinned)", self.unicode_version)
        if self.encoder is not None:
            check_encoder_spec(self.encoder)
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

    @property
    def vector_dimension(self) -> int | None:
        """The dimension of the collection's vectors (None: it holds none)."""
        return int(self.encoder.rsplit("/", 1)[1]) if self.encoder is not None else None

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
        if data.get("unicode_version") is None:  # stored before the Unicode version was recorded
            data["unicode_version"] = UNICODE_NOT_RECORDED
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})

    def signed_here(self) -> "IndexSettings":
        """These settings with ``unicode_version`` the Unicode this Python signs them with (for a collection's
        first writer, and for Spark's driver, whose executors must sign alike)."""
        return replace(self, unicode_version=self.normalizer().unicode_version)


def check_encoder_spec(spec: object) -> str:
    """An encoder's spec as settings record it: ``name@version/dimension``, the dimension one the configset has a
    vector field for."""
    if not isinstance(spec, str):
        raise ParameterTypeError("encoder", "an encoder spec such as 'wordllama-l2_supercat@0.4.0.post1/256'", spec)
    name, at, rest = spec.partition("@")
    version, slash, dimension = rest.rpartition("/")
    if not (name and at and version and slash and dimension.isdigit()) or int(dimension) not in VECTOR_DIMENSIONS:
        raise InvalidParameterError("encoder", "'name@version/dimension' with a dimension of "
                                    f"{', '.join(map(str, VECTOR_DIMENSIONS))}", spec)
    return spec


# IndexSettings.unicode_version of settings stored before it was recorded: the first client that writes records its
# own (a version-1 or -2 collection was signed with whatever Python its indexer ran on; that is the best guess).
UNICODE_NOT_RECORDED = ""


def unicode_mismatch(settings: IndexSettings) -> str:
    """Why this Python signs a collection's texts differently from how they were signed ('' when it does not):
    normaliser versions 1 and 2 read the interpreter's Unicode, which changes with the Python version."""
    recorded = settings.unicode_version
    mine = settings.normalizer().unicode_version
    if not recorded or recorded == mine:
        return ""
    return (f"the collection was signed with Unicode {recorded} (normaliser version {settings.normalizer_version} "
            f"reads the Python's own Unicode data) and this Python {platform.python_version()} has Unicode {mine}: "
            f"texts holding characters that were added or changed between the two get other shingles, MD5 and band "
            f"keys, so their duplicates are missed. Use a Python with Unicode {recorded}, or re-index with normaliser "
            f"version 3, whose Unicode is pinned ({Normalizer(3).unicode_version}) and the same on every Python")
