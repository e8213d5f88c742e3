"""A near-duplicate index in datasketch's terms: :class:`NearDupIndex`.

It reads like datasketch's ``MinHashLSH`` (``insert``, ``query``, ``remove``, ``key in index``, ``len``) but
keeps its documents in a Solr collection, so the index outlives the process, is shared by every process that
points at the collection, and answers with exact Jaccard similarities rather than LSH candidates. What differs
from datasketch, on purpose:

- You give texts (or pre-tokenised documents), not ``MinHash`` objects: the collection's stored settings decide
  the shingles and the signature, so two processes can never mix signatures of different seeds or lengths.
- ``query`` returns every indexed key whose exact shingle Jaccard with the text reaches the threshold (the
  LSH bands only find the candidates), best first.
- ``check_and_add`` is "query, and insert if nothing was found" as one race-free step across threads and
  processes (:func:`neardup_solr.engine.online.check_and_add`, the service's ``/v1/check``).

Streaming: ``insert`` and ``check_and_add`` send one document without a commit of their own (``commitWithin``);
Solr makes it visible to every process's ``query`` within ``commit_within_ms`` (default 1 s), and at once to
``key in index`` (real-time get). This process's own ``query`` and ``check_and_add`` see it at once: the index
remembers what it added until a commit covers it (:mod:`neardup_solr.solr.recent`). :meth:`NearDupIndex.flush` makes
everything visible everywhere now. ``commit_within_ms=0`` soft-commits every add instead: slower, and then other
processes see each add at once too (what strict near-duplicate exclusion across processes needs).

Pre-tokenised documents: ``insert(key, tokens=[...])`` (and ``query``/``check_and_add``) take a list of words
instead of a text. The stored text (``content``) is the tokens joined by single spaces, and the MD5 is that of
this text, so a token list and a text that normalises to the same words are exact duplicates of each other.
Tokens must therefore already be in normal form (lower case, no white space, no punctuation but ``-``; see
:func:`neardup_solr.text.normalize`): a token that normalisation would change is refused, naming it, rather
than stored as something that would be read back differently.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Sequence

from neardup_solr.signing.settings import META_DATASET, SETTINGS_DOC_ID, IndexSettings
from neardup_solr.solr.settings_store import ensure_index_settings
from neardup_solr.errors import (
    DocumentExistsError,
    DocumentNotFoundError,
    InvalidParameterError,
    InvalidTextError,
    ParameterTypeError,
)
from neardup_solr.solr.claims import create_only, soft_commit
from neardup_solr.solr.maintenance import require_neardup_schema
from neardup_solr.solr.queries import documents_of, filter_params, not_id
from neardup_solr.engine.online import (
    CheckResult,
    Match,
    check_and_add,
    delete_documents,
    find_similar,
    is_reserved_id,
    remember_add,
)
from neardup_solr.solr.recent import recent_adds
from neardup_solr.solr.searcher import Searcher
from neardup_solr.solr.client import SolrClient
from neardup_solr.text import normalize
from neardup_solr.validation import check_float, check_id, check_int, check_label, check_text

log = logging.getLogger(__name__)

__all__ = ["NearDupIndex", "text_of_tokens"]


def text_of_tokens(tokens: Any, name: str = "tokens") -> str:
    """The text stored for a pre-tokenised document: its tokens joined by single spaces. Refuses tokens that
    are not in normal form (see the module docstring), naming the first one."""
    if isinstance(tokens, (str, bytes)) or not isinstance(tokens, Sequence):
        raise ParameterTypeError(name, "a list of str tokens", tokens)
    for position, token in enumerate(tokens):
        if not isinstance(token, str):
            raise ParameterTypeError(name, "a list of str tokens", tokens,
                                     f"token {position} is a {type(token).__name__}")
        if not token or normalize(token) != token or len(token.split()) != 1:
            raise InvalidParameterError(
                name, "a list of normalised tokens (lower case, no white space, no punctuation but '-')", tokens,
                f"token {position} {token!r} normalises to {normalize(token)!r}: normalise it, or pass the text")
    if not tokens:
        raise InvalidParameterError(name, "a non-empty list of tokens", tokens)
    return " ".join(tokens)


class NearDupIndex:
    """Near-duplicate detection over a Solr collection, in datasketch ``MinHashLSH``'s terms.

    >>> index = NearDupIndex(SolrClient(), threshold=0.8)
    >>> index.insert("a", "the quick brown fox jumps over the lazy dog")
    >>> index.check_and_add("b", "the quick brown fox jumps over the lazy dog!").added
    False

    ``threshold`` is the Jaccard similarity ``query`` and ``check_and_add`` use (default: the collection's own,
    its stored ``lsh_threshold``). ``settings`` only seed an empty collection (how texts are shingled and
    signed); a collection that holds documents keeps its own. ``dataset`` labels what this index inserts and
    limits ``query`` to it. ``commit_within_ms`` bounds how long an add takes to become visible to other
    processes (0: at once, with a soft commit per add).
    """

    def __init__(self, client: SolrClient | None = None, *, threshold: float | None = None,
                 settings: IndexSettings | None = None, dataset: str | None = None,
                 commit_within_ms: int = 1000):
        if client is not None and not isinstance(client, SolrClient):
            raise ParameterTypeError("client", "a SolrClient or None", client)
        if settings is not None and not isinstance(settings, IndexSettings):
            raise ParameterTypeError("settings", "an IndexSettings or None", settings)
        self.client = client or SolrClient()
        self.threshold = check_float("threshold", threshold, "threshold", none_ok=True)
        self.dataset = check_label("dataset", dataset, reserved=(META_DATASET,))
        self.commit_within_ms = check_int("commit_within_ms", commit_within_ms, minimum=0, maximum=3_600_000)
        self._seed_settings = settings
        self.searcher = Searcher(self.client, settings=None)

    # ---------------------------------------------------------------- helpers
    def _text(self, text: Any, tokens: Any) -> str:
        if (text is None) == (tokens is None):
            raise InvalidParameterError("text", "given, or tokens given instead (exactly one of the two)", text,
                                        show_value=False)
        return check_text(text) if tokens is None else text_of_tokens(tokens)

    def _threshold(self, threshold: Any) -> float:
        given = check_float("threshold", threshold, "threshold", none_ok=True)
        if given is not None:
            return given
        return self.threshold if self.threshold is not None else self.searcher.settings.lsh_threshold

    def _ensure_settings(self) -> None:
        if self.searcher.stored_settings() is None:
            require_neardup_schema(self.client)
            ensure_index_settings(self.client, self._seed_settings)

    # ---------------------------------------------------------------- datasketch's verbs
    def insert(self, key: str, text: str | None = None, *, tokens: Sequence[str] | None = None) -> None:
        """Add a document under ``key`` (a text, or ``tokens``). Like datasketch, an existing key is an error:
        :class:`~neardup_solr.errors.DocumentExistsError` (a ``ValueError``); ``remove`` it first."""
        key = _user_key(key)
        body = self._text(text, tokens)
        self._ensure_settings()
        try:
            query = self.searcher.prepare(body, key)  # signed once: for the document and for remember_add
        except InvalidTextError as exc:
            raise InvalidParameterError("text" if tokens is None else "tokens", "a text with words", body,
                                        str(exc)) from None
        doc = self.searcher.builder.build_prepared(key, body, query.processed, query.signature, self.dataset,
                                                   band_keys_row=self.searcher.band_keys_of(query))
        if not create_only(self.client, doc, commit_within_ms=self.commit_within_ms or None):
            # create only: never overwrite another document
            raise DocumentExistsError(f"the key {key!r} is already in the index; remove it first", key)
        if self.commit_within_ms:
            remember_add(self.client, doc, query, self.commit_within_ms)

    def query(self, text: str | None = None, *, tokens: Sequence[str] | None = None,
              threshold: float | None = None) -> list[str]:
        """The keys of every indexed document whose exact shingle Jaccard with the text reaches the threshold,
        best first (datasketch returns LSH candidates in no order)."""
        return [m.id for m in self.query_matches(text, tokens=tokens, threshold=threshold)]

    def query_matches(self, text: str | None = None, *, tokens: Sequence[str] | None = None,
                      threshold: float | None = None) -> list[Match]:
        """As :meth:`query`, with each match's similarity, edit distance and text."""
        body = self._text(text, tokens)
        limit = self._threshold(threshold)
        query = self.searcher.prepare(body)
        return find_similar(self.searcher, query, limit, dataset=self.dataset)

    def check_and_add(self, key: str, text: str | None = None, threshold: float | None = None, *,
                      tokens: Sequence[str] | None = None) -> CheckResult:
        """Add the text under ``key`` only when nothing indexed reaches the threshold with it; race-free across
        threads and processes for identical texts (and within a process for near duplicates). ``result.added``
        says whether it was added, ``result.matches`` what it duplicates."""
        body = self._text(text, tokens)
        return check_and_add(self.client, key, body, self._threshold(threshold), dataset=self.dataset,
                             settings=self._seed_settings, searcher=self.searcher,
                             commit_within_ms=self.commit_within_ms)

    def remove(self, key: str) -> None:
        """Delete the document ``key``; :class:`~neardup_solr.errors.DocumentNotFoundError` (a ``KeyError``)
        when it is not there."""
        key = _user_key(key)
        if not delete_documents(self.client, [key]).deleted:
            raise DocumentNotFoundError(f"no document with key {key!r} in {self.client.url}")

    def flush(self) -> None:
        """Make every insert visible to ``query`` now (a soft commit) instead of within ``commit_within_ms``."""
        sent_at = time.monotonic()
        soft_commit(self.client)
        recent_adds(self.client).drop_added_before(sent_at)

    def __contains__(self, key: object) -> bool:
        """Whether ``key`` is indexed, uncommitted inserts included (real-time get)."""
        if not isinstance(key, (str, int)) or isinstance(key, bool) or is_reserved_id(str(key)):
            return False
        docs = self.client.get_by_ids([str(key)], "id,dataset")
        return bool(docs) and docs[0].get("dataset") != META_DATASET and (
            self.dataset is None or docs[0].get("dataset") == self.dataset)

    def __len__(self) -> int:
        """How many documents the index holds (this data set's, when one is set). Soft-commits first, so that
        inserts not yet visible are counted."""
        self.flush()
        return self.client.count(params=filter_params([*documents_of(self.dataset), not_id(SETTINGS_DOC_ID)]))

    def __repr__(self) -> str:
        return f"NearDupIndex({self.client.url!r}, threshold={self.threshold!r}, dataset={self.dataset!r})"


def _user_key(key: Any) -> str:
    checked = check_id(key, "key")
    if is_reserved_id(checked):
        raise InvalidParameterError("key", "a key of your own", checked,
                                    "keys starting with '__neardup_' are reserved for neardup-solr")
    return checked
