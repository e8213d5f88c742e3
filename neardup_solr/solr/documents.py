"""The names this module held before it was split, kept importable for users.

From a record to the Solr document now lives outside ``solr/`` (it talks to no Solr, and the Spark jobs sign with
it): the settings in :mod:`neardup_solr.signing.settings`, the token spelling in :mod:`neardup_solr.signing.tokens`,
the document builder in :mod:`neardup_solr.signing.builder`. Storing the settings in a collection is
:mod:`neardup_solr.solr.settings_store`. New code imports from those modules.
"""

from __future__ import annotations

from neardup_solr.signing.builder import NO_WORDS_LEFT, BuiltBatch, DocumentBuilder, record_problem
from neardup_solr.signing.settings import (
    DEFAULT_TOKEN_FIELDS,
    META_DATASET,
    RESERVED_IDS,
    SETTINGS_DOC_ID,
    SHINGLE_FIELDS,
    TOKEN_FIELDS,
    UNITS,
    WRITE_UP_TOKEN_FIELDS,
    UNICODE_NOT_RECORDED,
    IndexSettings,
    unicode_mismatch,
)
from neardup_solr.signing.tokens import (
    MAX_TOKEN_BYTES,
    WORD_GRAM_PAD,
    WORD_GRAM_SIZE,
    decode_signatures,
    encode_signature,
    md5_hex,
    signature_tokens,
    text_token,
    text_tokens,
    word_gram_tokens,
)
from neardup_solr.solr.settings_store import (
    ALLOW_UNICODE_MISMATCH_ENV,
    SettingsRepair,
    ensure_index_settings,
    read_index_settings,
    repair_index_settings,
    settings_document,
)

__all__ = [
    "DEFAULT_TOKEN_FIELDS", "META_DATASET", "RESERVED_IDS", "SETTINGS_DOC_ID", "SHINGLE_FIELDS", "TOKEN_FIELDS",
    "UNITS", "WRITE_UP_TOKEN_FIELDS", "IndexSettings", "UNICODE_NOT_RECORDED", "unicode_mismatch",
    "MAX_TOKEN_BYTES", "WORD_GRAM_PAD", "WORD_GRAM_SIZE", "decode_signatures", "encode_signature", "md5_hex",
    "signature_tokens", "text_token", "text_tokens", "word_gram_tokens",
    "NO_WORDS_LEFT", "BuiltBatch", "DocumentBuilder", "record_problem",
    "ALLOW_UNICODE_MISMATCH_ENV", "SettingsRepair", "ensure_index_settings", "read_index_settings", "repair_index_settings", "settings_document",
]
