"""From records to the Solr documents of a batch: every stored field and token field, the batch signed in one
vectorised pass. Pure: nothing here talks to Solr, so the Spark jobs sign with it as the indexer does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from neardup_solr.errors import InvalidTextError
from neardup_solr.pairs.lsh import band_keys, band_tokens
from neardup_solr.signing.encoder import Encoder, encoder_for, vector_field, vector_value
from neardup_solr.signing.settings import RESERVED_IDS, IndexSettings
from neardup_solr.signing.tokens import (
    encode_signature,
    md5_hex,
    signature_tokens,
    text_token,
    text_tokens,
    word_gram_tokens,
)
from neardup_solr.text import MinHash, ProcessedText, Shingler, kernel
from neardup_solr.text.kernel import position_tokens
from neardup_solr.text.minhash import Signature
from neardup_solr.text.normalizer import Normalizer, split_normalized
from neardup_solr.text.scripts import UnspacedTextCheck
from neardup_solr.text.shingles import distinct_in_order, hash_tokens, joined_hash_tokens
from neardup_solr.validation import id_problem

NO_WORDS_LEFT = "no words left after normalisation (empty, blank or punctuation-only text)"

@dataclass
class BuiltBatch:
    """The Solr documents of a batch, and the records that could not become one (index in the batch, reason)."""

    documents: list[dict] = field(default_factory=list)
    rejected: list[tuple[int, str]] = field(default_factory=list)  # (index in the input batch, reason)


def word_tokens(normalizer: Normalizer, text: str) -> list[str]:
    """The distinct words of ``text`` under ``normalizer``, as ``content_words`` holds them. A search needs only
    these: building a :class:`DocumentBuilder` (its MinHash masks) for them took 0.3 ms of every search."""
    return text_tokens(dict.fromkeys(normalizer.words(text)))


class DocumentBuilder:
    """Computes every field of the Solr documents of a batch, signing the batch in one vectorised pass."""

    def __init__(self, settings: IndexSettings, encoder: Encoder | None = None):
        self.settings = settings
        # The collection's encoder (its settings name it): vectors of meaning beside the signatures.
        self.encoder = encoder_for(settings.encoder, encoder) if settings.encoder is not None else None
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
        return word_tokens(self.shingler.normalizer, text)

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
        # The list of words only where a field is made of them: the lean fields (``lsh``, ``minhash``) need just
        # their number and the first, and splitting a web page into words was a fifth of its signing (issue 48).
        listed_words = text_shingles or "words" in settings.fields or "grams" in settings.fields
        # (index in items, normalised text, its words where listed, its shingle strings when indexed as text)
        kept: list[tuple[int, str, list[str] | None, list[str] | None]] = []
        if not listed_words and kernel.available():
            signed = self._sign_in_kernel(items, out, kept)
            if signed is None:
                return out
            hashes, offsets, signatures = signed
        else:
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
                words = split_normalized(normalized) if listed_words else None
                kept.append((index, normalized, words,
                             shingles_of(normalized, words) if text_shingles and words is not None else None))
            if not kept:
                return out
            # From the texts, not from the normalised ones: the kernel normalises them itself, and normalising twice
            # is not always the same as once (a rare combining sequence, see tests/solr/text/test_normalizer.py).
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
                assert words is not None
                p = ProcessedText(normalized, words, shingles, distinct_in_order(hashes[offsets[row]:offsets[row + 1]]))
                shingle_value, count = self.shingle_tokens(p), len(shingles)
            doc_id, text, *rest = items[index]
            out.documents.append(self._document(doc_id, text, normalized, words, count, shingle_value,
                                                signatures[row], {f: values[row] for f, values in tokens.items()},
                                                dataset, rest[0] if rest else None))
        if self.encoder is not None:
            self._add_vectors(out.documents, [items[index][1] for index, *_ in kept])
        return out

    def _add_vectors(self, documents: list[dict], texts: list[str]) -> None:
        """The encoder's vector of each document's text, in the field of its dimension (none for a text the
        encoder finds nothing in)."""
        assert self.encoder is not None
        field = vector_field(self.encoder.dimension)
        for doc, row in zip(documents, self.encoder.encode(texts)):
            value = vector_value(row)
            if value is not None:
                doc[field] = value

    def _sign_in_kernel(self, items: Sequence[tuple], out: BuiltBatch,
                        kept: list) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """The lean fields' signing (no list of words needed): the kernel normalises, hashes and signs each text
        and hands back its normalised form, which the other path makes in Python first (half of the signing
        time of a web page, issue 48). Fills ``kept`` and ``out.rejected`` as that path does; None when nothing
        is left to sign."""
        candidates = []
        for index, (doc_id, text, *_) in enumerate(items):
            problem = record_problem(doc_id, text)
            if problem:
                out.rejected.append((index, problem))
            else:
                candidates.append(index)
        if not candidates:
            return None
        normalised: list[str] = []
        hashes, offsets, values = kernel.hashes_and_signatures([items[i][1] for i in candidates],
                                                               self.shingler.kernel_arguments(), self.minhash.masks,
                                                               normalised=normalised)
        rows = []
        for row, (index, normalized) in enumerate(zip(candidates, normalised)):
            if not normalized:  # no shingles either: its slice of the hashes is empty
                out.rejected.append((index, NO_WORDS_LEFT))
                continue
            self.unspaced.check(normalized)
            kept.append((index, normalized, None, None))
            rows.append(row)
        out.rejected.sort()
        if not rows:
            return None
        if len(rows) < len(candidates):
            counts = np.diff(offsets)[rows]
            offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
            values = values[rows]
        return hashes, offsets, Signature.of(values, self.minhash.seed)

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
        doc = self._document(doc_id, text, processed.normalized, processed.words, count, shingle_value, signature,
                             {f: values[0] for f, values in tokens.items()}, dataset, None)
        if self.encoder is not None:
            self._add_vectors([doc], [text])
        return doc

    def _document(self, doc_id: str, text: str, normalized: str, words: list[str] | None, num_shingles: int,
                  shingle_value: str | list[str], signature: np.ndarray, signature_tokens_row: dict,
                  dataset: str | None, fields: dict | None) -> dict:
        """One Solr document: the stored fields, then the token fields the settings name. ``words``: None where
        the settings index no field of words (the count and the first word are read off the normalised text, whose
        words are separated by single spaces)."""
        settings = self.settings
        if words is None:
            num_words = normalized.count(" ") + 1 if normalized else 0
            first = normalized.partition(" ")[0] if normalized else None
        else:
            num_words, first = len(words), (words[0] if words else None)
        doc = {
            "id": doc_id,
            "content": text,
            "md5_hash": md5_hex(normalized),
            "num_words": num_words,
            "first_word": text_token(first) if first is not None else "",
            "num_shingles": num_shingles,
            "minhash_sig": encode_signature(signature),
        }
        if "shingles" in settings.fields:
            doc[settings.token_field("shingles")] = shingle_value
        if "words" in settings.fields:
            assert words is not None
            doc["content_words"] = text_tokens(dict.fromkeys(words))
        if "grams" in settings.fields:
            assert words is not None
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
