"""A near-duplicate index in datasketch's terms: :class:`NearDupIndex`.

It reads like datasketch's ``MinHashLSH`` (``insert``, ``insertion_session``, ``query``, ``remove``,
``deletion_session``, ``key in index``, ``len``, ``is_empty``, pickling) and answers ``MinHashLSHForest``'s top-k
``query(text, k)`` too, but keeps its documents in a Solr collection, so the index outlives the process, is shared
by every process that points at the collection, and answers with exact Jaccard similarities rather than LSH
candidates. What differs from datasketch, on purpose:

- You give texts (or pre-tokenised documents), not ``MinHash`` objects: the collection's stored settings decide
  the shingles and the signature, so two processes can never mix signatures of different seeds or lengths.
  datasketch's constructor arguments (``num_perm``, ``weights``, ``params``, ``storage_config``, ``prepickle``,
  ``hashfunc``) are refused with the setting to use instead.
- ``query`` returns every indexed key whose exact shingle Jaccard with the text reaches the threshold (the
  LSH bands only find the candidates), best first; ``query(text, k)`` the k most similar keys, best first.
- Keys are ``str``. Solr ids are strings, so an int key would come back as a str and ``7`` and ``"7"`` would be
  one key: a key of any other type is refused (:class:`~neardup_solr.errors.ParameterTypeError`, naming
  ``str(key)``) by every method that takes one, ``key in index`` included. Keys starting with ``__neardup_``
  are reserved for neardup-solr's own documents.
- ``check_and_add`` is "query, and insert if nothing was found" as one race-free step across threads and
  processes (:func:`neardup_solr.engine.online.check_and_add`, the service's ``/v1/check``): for identical texts
  always, for near duplicates within a process, and across processes and hosts with ``strict=True``.

Streaming: ``insert`` and ``check_and_add`` send one document without a commit of their own (``commitWithin``);
Solr makes it visible to every process's ``query`` within ``commit_within_ms`` (default 1 s), and at once to
``key in index`` (real-time get). This process's own ``query``, ``check_and_add``, ``len`` and ``keys`` see it
at once: the index remembers what it added until a commit covers it (:mod:`neardup_solr.solr.recent`).
:meth:`NearDupIndex.flush` makes everything visible everywhere now. ``commit_within_ms=0`` soft-commits every add
instead: slower, and then other processes see each add at once too.

Bulk inserts: :meth:`NearDupIndex.insert_many` and :meth:`NearDupIndex.insertion_session` send documents through
the :class:`~neardup_solr.solr.indexer.Indexer` (batches of 500, two requests in flight, one commit at the end),
in chunks of ``buffer_size``. Before a chunk is sent, every key and text of it is checked and the keys are looked
up in bulk (real-time get, 500 at a time): a chunk holding a key that is already indexed, or twice, is refused as a
whole with :class:`~neardup_solr.errors.DocumentExistsError` naming the keys, and nothing of it is written
(``overwrite=True`` replaces them instead). The lookup and the add are two steps: a key another process adds
between them is overwritten, where ``insert`` (a create-only write) would refuse it.

``len(index)`` and :meth:`NearDupIndex.keys` never commit: they count what Solr's searcher shows plus what this
process added that it does not show yet (each confirmed by a real-time get). Another process's inserts are
counted once Solr makes them visible (within its ``commit_within_ms``). ``keys()`` pages through the keys with a
cursor, in Solr's id order, then this process's adds not yet visible.

Pickling keeps the collection's URL, the client's options (timeout, retries, TLS verification, pool size,
replicas, and its credentials when it has some), the threshold, the data set, ``commit_within_ms``, ``strict`` and
the seed settings, and connects again when loaded: an index can be sent to ``multiprocessing`` workers, or saved and
loaded elsewhere, as datasketch documents for its Redis-backed indexes. A pickle of a client with credentials
holds them: keep it where the password may be.

Pre-tokenised documents: ``insert(key, tokens=[...])`` (and ``query``/``check_and_add``) take a list of words
instead of a text. The stored text (``content``) is the tokens joined by single spaces, and the MD5 is that of
this text, so a token list and a text that normalises to the same words are exact duplicates of each other.
Tokens must therefore already be in normal form (lower case, no white space, no punctuation but ``-``; see
:func:`neardup_solr.text.normalize`): a token that normalisation would change is refused, naming it, rather
than stored as something that would be read back differently.

A text with no words (empty, blank, punctuation only) raises :class:`~neardup_solr.errors.InvalidTextError` from
``insert``, ``insert_many``, ``query`` and ``check_and_add`` alike.
"""

from __future__ import annotations

import logging
import math
import time
from typing import Any, Iterable, Iterator, Sequence

from neardup_solr.errors import (
    DocumentExistsError,
    InvalidParameterError,
    InvalidTextError,
    KeyNotFoundError,
    ParameterTypeError,
    SolrRequestError,
)
from neardup_solr.engine.online import (
    CheckResult,
    Match,
    check_and_add,
    delete_documents,
    find_similar,
    remember_add,
    sort_matches,
)
from neardup_solr.engine.similar import lsh_matches, recent_matches
from neardup_solr.signing.builder import NO_WORDS_LEFT
from neardup_solr.signing.settings import META_DATASET, SETTINGS_DOC_ID, IndexSettings
from neardup_solr.solr.collection import SolrCollection
from neardup_solr.solr.client import SolrClient
from neardup_solr.solr.indexer import Indexer, IndexSummary
from neardup_solr.solr.maintenance import require_neardup_schema
from neardup_solr.solr.queries import Filter, documents_of, filter_params, not_id, not_ids, select_params
from neardup_solr.solr.recent import RecentAdd, recent_adds
from neardup_solr.solr.searcher import Query, Searcher, cursor_docs
from neardup_solr.solr.settings_store import ensure_index_settings
from neardup_solr.text import normalize
from neardup_solr.validation import check_bool, check_float, check_id, check_int, check_label, check_text

log = logging.getLogger(__name__)

__all__ = ["NearDupIndex", "InsertionSession", "DeletionSession", "text_of_tokens", "RESERVED_KEY_PREFIX"]

#: Keys starting with this are neardup-solr's own documents (settings, claims, counters), never a user's.
RESERVED_KEY_PREFIX = "__neardup_"
#: Keys looked up or deleted per request (real-time get splits its id list; 500 keeps a request small).
KEY_CHUNK = 500
#: What an insertion or deletion session holds before it sends (datasketch's default buffer size).
DEFAULT_BUFFER_SIZE = 50_000
#: How many taken or missing keys an error message lists (all of them are on the error).
SHOWN_KEYS = 10

# datasketch MinHashLSH's constructor arguments, and what to do instead: the collection stores how texts are
# signed and banded, so an index cannot be told otherwise per process.
_DATASKETCH_ARGUMENTS = {
    "num_perm": "the number of MinHash values is a setting of the collection: "
                "settings=IndexSettings(num_hashes={value!r}) (it seeds an empty collection; one that holds documents "
                "keeps its own)",
    "weights": "the LSH bands are chosen for the collection's lsh_threshold at a recall of 0.95, and query checks "
               "every candidate's exact Jaccard, so no false positive reaches you: to trade recall for speed give "
               "settings=IndexSettings(lsh_threshold=...) or IndexSettings(bands=b, rows=r)",
    "params": "the bands and rows are settings of the collection: settings=IndexSettings(bands=b, rows=r)",
    "storage_config": "the storage is the Solr collection: NearDupIndex(SolrClient('http://host:8983/solr/<core>')) "
                      "(every process pointing at it shares the index)",
    "prepickle": "keys are str and are stored as they are: there is nothing to pickle",
    "hashfunc": "band keys are hashed by neardup-solr itself (64-bit values) and cannot be replaced",
}


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
    limits ``query``, ``len`` and ``keys`` to it. ``commit_within_ms`` bounds how long an add takes to become
    visible to other processes (0: at once, with a soft commit per add). ``strict`` makes ``check_and_add``
    exclusive for near duplicates across processes and hosts too (Solr-side locks on the text's LSH bands, and a
    soft commit per added text instead of ``commit_within_ms``: slower, see docs/python.md); a call can override it.

    datasketch's own arguments (``num_perm=``, ``params=``, ``storage_config=``...) raise
    :class:`~neardup_solr.errors.ParameterTypeError` saying what to use instead.
    """

    def __init__(self, client: SolrClient | None = None, *, threshold: float | None = None,
                 settings: IndexSettings | None = None, dataset: str | None = None,
                 commit_within_ms: int = 1000, strict: bool = False, **datasketch_arguments: Any):
        if datasketch_arguments:
            _refuse_datasketch_arguments(datasketch_arguments)
        if client is not None and not isinstance(client, SolrClient):
            hint = None
            if isinstance(client, (int, float)) and not isinstance(client, bool):
                hint = f"the threshold is a keyword argument: NearDupIndex(client, threshold={client!r})"
            raise ParameterTypeError("client", "a SolrClient or None", client, hint)
        if settings is not None and not isinstance(settings, IndexSettings):
            raise ParameterTypeError("settings", "an IndexSettings or None", settings)
        self.client = client or SolrClient()
        self.threshold = check_float("threshold", threshold, "threshold", none_ok=True)
        self.dataset = check_label("dataset", dataset, reserved=(META_DATASET,))
        self.commit_within_ms = check_int("commit_within_ms", commit_within_ms, minimum=0, maximum=3_600_000)
        self.strict = check_bool("strict", strict)
        self._seed_settings = settings
        self.searcher = Searcher(self.client, settings=None)

    # ---------------------------------------------------------------- pickling
    def __getstate__(self) -> dict[str, Any]:
        """What it takes to connect again: the client's URL and options, and this index's own arguments. The
        connection pool, the cached settings and this process's memory of its recent adds stay behind."""
        return {"client": _client_arguments(self.client), "threshold": self.threshold, "dataset": self.dataset,
                "commit_within_ms": self.commit_within_ms, "strict": self.strict, "settings": self._seed_settings}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(SolrClient(**state["client"]), threshold=state["threshold"],  # type: ignore[misc]
                      settings=state["settings"], dataset=state["dataset"],
                      commit_within_ms=state["commit_within_ms"], strict=state.get("strict", False))
        log.debug("unpickled %r: connected again", self)

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

    def _prepare(self, body: str, key: str | None) -> Query:
        """The text signed with the collection's settings; InvalidTextError (naming the key) when it has no words."""
        try:
            return self.searcher.prepare(body, key)
        except InvalidTextError as exc:
            raise InvalidTextError(f"{_what(key)} cannot be signed: {exc}") from None

    def _require_words(self, key: str, body: str) -> None:
        """What the indexer's builder refuses, refused before anything is sent: a text that normalises to nothing.
        Normalising a short text takes about 6 us (signing it in the indexer's batches about 60 us), so every text of
        a chunk is checked before any of it is sent, and a bad one stops the chunk rather than half of it."""
        if not self.searcher.builder.shingler.normalizer.normalize(body):
            raise InvalidTextError(f"{_what(key)} cannot be signed: {NO_WORDS_LEFT}")

    # ---------------------------------------------------------------- datasketch's verbs
    def insert(self, key: str, text: str | None = None, *, tokens: Sequence[str] | None = None) -> None:
        """Add a document under ``key`` (a text, or ``tokens``). Like datasketch, an existing key is an error:
        :class:`~neardup_solr.errors.DocumentExistsError` (a ``ValueError``); ``remove`` it first."""
        key = _user_key(key)
        body = self._text(text, tokens)
        self._ensure_settings()
        query = self._prepare(body, key)  # signed once: for the document and for remember_add
        doc = self.searcher.builder.build_prepared(key, body, query.processed, query.signature, self.dataset,
                                                   band_keys_row=self.searcher.band_keys_of(query))
        if not SolrCollection(self.client).create_only(doc, commit_within_ms=self.commit_within_ms or None):
            # create only: never overwrite another document
            raise DocumentExistsError(f"the key {key!r} is already in the index; remove it first", key)
        if self.commit_within_ms:
            remember_add(self.client, doc, query, self.commit_within_ms)

    def insert_many(self, items: Iterable[tuple[str, str]], *, overwrite: bool = False,
                    buffer_size: int = DEFAULT_BUFFER_SIZE) -> int:
        """Add ``(key, text)`` pairs in bulk, at the :class:`~neardup_solr.solr.indexer.Indexer`'s rate; returns
        how many were added. Visible to every process's ``query`` when it returns (one commit at the end).

        The pairs are checked, looked up and sent ``buffer_size`` at a time. A chunk holding a key that is
        already indexed (or twice in the chunk) raises :class:`~neardup_solr.errors.DocumentExistsError` naming
        the keys (all of them in ``error.doc_ids``), and nothing of that chunk is written; ``overwrite=True``
        replaces indexed keys instead. A text without words raises
        :class:`~neardup_solr.errors.InvalidTextError` naming its key, before its chunk is sent. Chunks sent
        before the one that failed stay written, as datasketch's insertion session leaves its flushed buffers.
        """
        if isinstance(items, (str, bytes)) or not isinstance(items, Iterable):
            raise ParameterTypeError("items", "an iterable of (key, text) pairs", items)
        overwrite = check_bool("overwrite", overwrite)
        buffer_size = check_int("buffer_size", buffer_size, minimum=1, maximum=10_000_000)
        added = 0
        chunk: dict[str, str] = {}
        for position, item in enumerate(items):
            if isinstance(item, (str, bytes)) or not isinstance(item, Sequence) or len(item) != 2:
                raise ParameterTypeError("items", "an iterable of (key, text) pairs", item,
                                         f"item {position} is not a (key, text) pair")
            key = _user_key(item[0])
            body = check_text(item[1], "text")
            self._add_to_chunk(chunk, key, body)
            if len(chunk) >= buffer_size:
                added += self._insert_chunk(chunk, overwrite)
                chunk = {}
        if chunk:
            added += self._insert_chunk(chunk, overwrite)
        return added

    def insertion_session(self, buffer_size: int = DEFAULT_BUFFER_SIZE, *,
                          overwrite: bool = False) -> "InsertionSession":
        """A context manager for bulk inserts, as datasketch's ``MinHashLSH.insertion_session``: ``with
        index.insertion_session() as session:``, then ``session.insert(key, text)`` for each record.

        Inserts are held until ``buffer_size`` of them are waiting, then sent as :meth:`insert_many` sends them;
        the rest are sent when the block ends (also when it ends with an exception, as datasketch's session
        does). Keys and texts are checked as they are given; whether a key is already indexed is checked when
        its chunk is sent."""
        return InsertionSession(self, buffer_size=buffer_size, overwrite=overwrite)

    def _add_to_chunk(self, chunk: dict[str, str], key: str, body: str) -> None:
        if key in chunk:
            raise DocumentExistsError(f"the key {key!r} is given twice in one bulk insert", key)
        self._ensure_settings()  # the texts are checked with the collection's normaliser
        self._require_words(key, body)
        chunk[key] = body

    def _insert_chunk(self, chunk: dict[str, str], overwrite: bool) -> int:
        """Send checked ``key -> text`` pairs through the Indexer (after refusing taken keys, unless overwriting)."""
        if not overwrite:
            taken = self._existing(list(chunk))
            if taken:
                shown = ", ".join(repr(k) for k in taken[:SHOWN_KEYS]) + (" ..." if len(taken) > SHOWN_KEYS else "")
                raise DocumentExistsError(
                    f"{len(taken)} of the {len(chunk)} keys of this bulk insert are already in {self.client.url} "
                    f"({shown}); nothing of this chunk was written: remove them first, leave them out, or pass "
                    "overwrite=True to replace them", taken[0], taken)
        started = time.monotonic()
        summary = Indexer(self.client, None, dataset=self.dataset).index_records(chunk.items())
        _raise_rejections(summary, self.client.url)
        # The indexer's final commit opened a searcher on everything sent before it: this process's earlier adds
        # are now visible to every query, so they need not be remembered any longer.
        recent_adds(self.client).drop_added_before(started)
        log.info("inserted %d documents into %s in %.1f s (%.0f docs/s)", summary.indexed, self.client.url,
                 summary.seconds, summary.docs_per_second)
        return summary.indexed

    def _existing(self, keys: list[str]) -> list[str]:
        """The keys of ``keys`` that hold a document (any data set's), by real-time get: uncommitted ones too."""
        found: set[str] = set()
        for start in range(0, len(keys), KEY_CHUNK):
            found.update(d["id"] for d in self.client.get_by_ids(keys[start:start + KEY_CHUNK], "id"))
        return [k for k in keys if k in found]

    def query(self, text: str | None = None, k: int | None = None, *, tokens: Sequence[str] | None = None,
              threshold: float | None = None) -> list[str]:
        """The keys of every indexed document whose exact shingle Jaccard with the text reaches the threshold,
        best first (datasketch's ``MinHashLSH.query`` returns LSH candidates in no order).

        With ``k``: the ``k`` keys most similar to the text, best first, as datasketch's
        ``MinHashLSHForest.query(minhash, k)`` (without a ``threshold``, however low their similarity; with one,
        only those reaching it). See :meth:`query_matches`."""
        return [m.id for m in self.query_matches(text, k, tokens=tokens, threshold=threshold)]

    def query_matches(self, text: str | None = None, k: int | None = None, *,
                      tokens: Sequence[str] | None = None, threshold: float | None = None) -> list[Match]:
        """As :meth:`query`, with each match's similarity, edit distance and text.

        The top ``k`` are exact where the collection indexes every shingle (the default): candidates come from
        Solr by shared shingles, most first, and the search stops where no later one can beat the k-th
        similarity. A collection indexed with LSH band keys only answers from the documents that share a band
        with the text (approximate, as datasketch's forest is)."""
        body = self._text(text, tokens)
        count = _top_count(k)
        if count is None:
            limit = self._threshold(threshold)
            return find_similar(self.searcher, self._prepare(body, None), limit, dataset=self.dataset)
        given = check_float("threshold", threshold, "threshold", none_ok=True)
        return self._top_k(self._prepare(body, None), count, given)

    def _top_k(self, query: Query, k: int, threshold: float | None) -> list[Match]:
        searcher = self.searcher
        settings = searcher.settings
        recent = recent_adds(self.client)
        recent.settle(self.client)  # before the query: whatever that commit covers, the query then finds
        pending: list[RecentAdd]
        if "shingles" in settings.fields and settings.sample_mod == 1:
            matches = self._top_k_by_shingles(query, k, threshold)
            pending = recent.candidates(hash_set=query.hash_set)
        elif "lsh" in settings.fields:
            matches = lsh_matches(searcher, query, threshold, self.dataset)
            pending = recent.candidates(band_tokens=searcher.query_tokens(query, "lsh"))
        else:
            raise InvalidParameterError(
                "k", "used on a collection indexed with shingle or LSH tokens", k,
                f"this one holds only {', '.join(settings.fields) or 'no'} tokens; re-index with --fields including "
                "shingles or lsh")
        if pending:
            matches += recent_matches(searcher, query, threshold, pending, {m.id for m in matches}, self.dataset)
        return sort_matches(matches)[:k]

    def _top_k_by_shingles(self, query: Query, k: int, threshold: float | None) -> list[Match]:
        """The exact top k: candidates sorted by how many of the query's shingles they share (Solr's score under
        BooleanSimilarity), verified one by one. A candidate sharing s of the query's n shingles has a Jaccard of
        at most s / n, so once that bound falls below the k-th best similarity no later candidate can enter."""
        searcher = self.searcher
        size = max(1, int(query.hash_set.size))
        min_overlap = math.ceil(threshold * size - 1e-9) if threshold else None
        params = (searcher.candidate_params(query, "shingles", None, False, min_overlap=min_overlap)
                  + filter_params(documents_of(self.dataset)))
        best: list[Match] = []
        for doc in cursor_docs(self.client, params, page_size=min(500, max(20, 2 * k))):
            if len(best) >= k and float(doc.get("score", 0.0)) / size < best[-1].similarity:
                break
            for m in searcher.rerank(query, [doc], max_edit_distance=None, min_jaccard=threshold):
                best = sort_matches(best + [Match(m.id, m.jaccard, m.edit_distance, m.exact, m.dataset,
                                                  m.content)])[:k]
        return best

    def check_and_add(self, key: str, text: str | None = None, threshold: float | None = None, *,
                      tokens: Sequence[str] | None = None, strict: bool | None = None) -> CheckResult:
        """Add the text under ``key`` only when nothing indexed reaches the threshold with it; race-free across
        threads and processes for identical texts, and for near duplicates within a process, or across processes
        and hosts with ``strict`` (None: the index's own ``strict``; see
        :func:`neardup_solr.engine.online.check_and_add`). ``result.added`` says whether it was added,
        ``result.matches`` what it duplicates."""
        key = _user_key(key)
        body = self._text(text, tokens)
        strict = self.strict if strict is None else check_bool("strict", strict)
        return check_and_add(self.client, key, body, self._threshold(threshold), dataset=self.dataset,
                             settings=self._seed_settings, searcher=self.searcher,
                             commit_within_ms=self.commit_within_ms, strict=strict)

    def remove(self, key: str) -> None:
        """Delete the document ``key``; :class:`~neardup_solr.errors.KeyNotFoundError` when it is not there, which
        is both a ``ValueError`` (what datasketch raises) and a ``KeyError``
        (:class:`~neardup_solr.errors.DocumentNotFoundError`)."""
        key = _user_key(key)
        if not delete_documents(self.client, [key]).deleted:
            raise KeyNotFoundError(f"no document with key {key!r} in {self.client.url}")

    def deletion_session(self, buffer_size: int = DEFAULT_BUFFER_SIZE) -> "DeletionSession":
        """A context manager for bulk removals, as datasketch's ``MinHashLSH.deletion_session``: removals are held
        until ``buffer_size`` are waiting, then looked up and deleted together (one commit); the rest when the
        block ends. A missing key raises :class:`~neardup_solr.errors.KeyNotFoundError` naming every missing key
        of its chunk, and nothing of that chunk is deleted."""
        return DeletionSession(self, buffer_size=buffer_size)

    def _remove_chunk(self, keys: list[str]) -> None:
        present = set(self._existing(keys))  # any data set's, as remove() deletes them
        missing = [k for k in keys if k not in present]
        if missing:
            shown = ", ".join(repr(k) for k in missing[:SHOWN_KEYS]) + (" ..." if len(missing) > SHOWN_KEYS else "")
            raise KeyNotFoundError(f"{len(missing)} of the {len(keys)} keys to remove are not in {self.client.url} "
                                   f"({shown}); nothing of this chunk was removed")
        delete_documents(self.client, keys)

    def _existing_own(self, keys: list[str]) -> list[str]:
        """The keys of ``keys`` that hold a user's document of this index's data set (real-time get)."""
        found: set[str] = set()
        for start in range(0, len(keys), KEY_CHUNK):
            for doc in self.client.get_by_ids(keys[start:start + KEY_CHUNK], "id,dataset"):
                if doc.get("dataset") != META_DATASET and (self.dataset is None or doc.get("dataset") == self.dataset):
                    found.add(doc["id"])
        return [k for k in keys if k in found]

    def flush(self) -> None:
        """Make every insert visible to ``query`` now (a soft commit) instead of within ``commit_within_ms``."""
        sent_at = time.monotonic()
        SolrCollection(self.client).commit(soft=True)
        recent_adds(self.client).drop_added_before(sent_at)

    def __contains__(self, key: object) -> bool:
        """Whether ``key`` is indexed, uncommitted inserts included (real-time get). A key that is not a str raises
        :class:`~neardup_solr.errors.ParameterTypeError`, as ``insert`` does: ``7 in index`` would otherwise
        answer for ``"7"``."""
        if not isinstance(key, str):
            raise _key_type_error(key, "key")
        if _key_problem(key) is not None:
            return False  # not a key anything can be inserted under (reserved, empty, a control character...)
        return bool(self._existing_own([key]))

    def __len__(self) -> int:
        """How many documents the index holds (this data set's, when one is set), without a commit: those Solr's
        searcher shows, plus this process's inserts it does not show yet (see the module docstring)."""
        filters, pending = self._visible_and_pending()
        return self.client.count(params=filter_params(filters)) + len(pending)

    def is_empty(self) -> bool:
        """Whether the index holds no document (as ``len(index) == 0``; datasketch's ``is_empty``)."""
        return len(self) == 0

    def keys(self) -> Iterator[str]:
        """Every key of the index (this data set's, when one is set), read with a cursor a page at a time: those
        Solr's searcher shows in its id order, then this process's inserts it does not show yet. Not a
        snapshot: keys added or removed while it runs may or may not be listed."""
        filters, pending = self._visible_and_pending()
        params = select_params(filters, fields="id", sort="id asc")
        for page in self.client.cursor_pages(params, 1000, until_short_page=True):
            for doc in page:
                yield doc["id"]
        yield from pending

    def _visible_and_pending(self) -> tuple[list[Filter], list[str]]:
        """The filters of this index's documents but this process's adds Solr's searcher may not show yet, and those
        adds, which are counted on their own: in one searcher's answer nothing is counted twice or missed, whenever
        a commit lands."""
        filters = [*documents_of(self.dataset), not_id(SETTINGS_DOC_ID)]
        pending = self._pending_keys()
        if pending:
            others = not_ids(pending)
            if others is None:
                # Unreachable for keys checked on the way in: they hold no control character, so an id separator
                # fits. Committing once is still right where counting them twice would not be.
                self.flush()
                return filters, []
            filters.append(others)
        return filters, pending

    def _pending_keys(self) -> list[str]:
        """This process's adds to the collection that a commit may not cover yet and that are still there (a real-time
        get, which sees uncommitted documents), this index's data set's only. Whether Solr's searcher already shows
        them does not matter: the callers count them on their own and leave them out of the searcher's answer."""
        entries = [e.id for e in recent_adds(self.client).entries()
                   if self.dataset is None or e.dataset == self.dataset]
        return self._existing_own(entries) if entries else []

    def __repr__(self) -> str:
        return f"NearDupIndex({self.client.url!r}, threshold={self.threshold!r}, dataset={self.dataset!r})"


class InsertionSession:
    """Bulk inserts into a :class:`NearDupIndex` (:meth:`NearDupIndex.insertion_session`). Not shared between
    threads: give each thread its own session."""

    def __init__(self, index: NearDupIndex, buffer_size: int = DEFAULT_BUFFER_SIZE, overwrite: bool = False):
        self.index = index
        self.buffer_size = check_int("buffer_size", buffer_size, minimum=1, maximum=10_000_000)
        self.overwrite = check_bool("overwrite", overwrite)
        self.inserted = 0
        self._chunk: dict[str, str] = {}
        self._closed = False

    def __enter__(self) -> "InsertionSession":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def insert(self, key: str, text: str | None = None, *, tokens: Sequence[str] | None = None) -> None:
        """Hold ``key``'s document (a text, or ``tokens``) to be sent with the others; checked now."""
        if self._closed:
            raise InvalidParameterError("session", "open (inside its with block)", None,
                                        "start a new insertion_session()", show_value=False)
        key = _user_key(key)
        self.index._add_to_chunk(self._chunk, key, self.index._text(text, tokens))
        if len(self._chunk) >= self.buffer_size:
            self.flush()

    def flush(self) -> None:
        """Send what is held now."""
        chunk, self._chunk = self._chunk, {}
        if chunk:
            self.inserted += self.index._insert_chunk(chunk, self.overwrite)

    def close(self) -> None:
        """Send what is held; the session takes no more inserts."""
        if not self._closed:
            self._closed = True
            self.flush()


class DeletionSession:
    """Bulk removals from a :class:`NearDupIndex` (:meth:`NearDupIndex.deletion_session`)."""

    def __init__(self, index: NearDupIndex, buffer_size: int = DEFAULT_BUFFER_SIZE):
        self.index = index
        self.buffer_size = check_int("buffer_size", buffer_size, minimum=1, maximum=10_000_000)
        self._keys: dict[str, None] = {}
        self._closed = False

    def __enter__(self) -> "DeletionSession":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def remove(self, key: str) -> None:
        """Hold ``key`` to be removed with the others."""
        if self._closed:
            raise InvalidParameterError("session", "open (inside its with block)", None,
                                        "start a new deletion_session()", show_value=False)
        self._keys[_user_key(key)] = None
        if len(self._keys) >= self.buffer_size:
            self.flush()

    def flush(self) -> None:
        """Remove what is held now."""
        keys, self._keys = list(self._keys), {}
        if keys:
            self.index._remove_chunk(keys)

    def close(self) -> None:
        """Remove what is held; the session takes no more removals."""
        if not self._closed:
            self._closed = True
            self.flush()


def _key_problem(key: str) -> str | None:
    """Why a str cannot be a key (an id Solr cannot hold as one, or a reserved one), or None."""
    try:
        _user_key(key)
    except InvalidParameterError as exc:
        return str(exc)
    return None


def _user_key(key: Any, name: str = "key") -> str:
    """``key`` when it can be a key: a str (see the module docstring for why only a str), a valid id, not reserved."""
    if not isinstance(key, str):
        raise _key_type_error(key, name)
    checked = check_id(key, name)
    if checked.startswith(RESERVED_KEY_PREFIX):
        raise InvalidParameterError(name, "a key of your own", checked,
                                    f"keys starting with {RESERVED_KEY_PREFIX!r} are reserved for neardup-solr")
    return checked


def _key_type_error(key: object, name: str) -> ParameterTypeError:
    if isinstance(key, (bytes, bytearray)):
        hint = "decode it first (key.decode('utf-8'))"
    else:
        hint = (f"keys are str, since Solr ids are: an int key would come back as a str, and 7 and '7' would be "
                f"one key; pass str(key) ({str(key)!r}) if that is the key you mean")
    return ParameterTypeError(name, "a str", key, hint)


def _top_count(k: Any) -> int | None:
    if isinstance(k, float):
        raise ParameterTypeError("k", "an int >= 1 (how many keys), or None", k,
                                 f"the threshold is a keyword argument: query(text, threshold={k!r})")
    return check_int("k", k, minimum=1, maximum=1_000_000, none_ok=True)


def _what(key: str | None) -> str:
    return "the query text" if key is None else f"the text of key {key!r}"


def _refuse_datasketch_arguments(arguments: dict[str, Any]) -> None:
    for name, value in arguments.items():
        instead = _DATASKETCH_ARGUMENTS.get(name)
        if instead is None:
            raise TypeError(f"NearDupIndex() got an unexpected keyword argument {name!r}")
        raise ParameterTypeError(name, "left out: it is an argument of datasketch's MinHashLSH, which NearDupIndex "
                                 "does not take", value, instead.format(value=value), show_value=False)


def _client_arguments(client: SolrClient) -> dict[str, Any]:
    """The arguments that make a client like ``client`` again (for pickling): its URL(s), options and credentials."""
    arguments: dict[str, Any] = {"url": client.url, "timeout": client.timeout, "retry": client.retry,
                                 "verify": client.session.verify, "pool_size": client.pool_size,
                                 "min_replicas": client.min_replicas}
    auth = client.session.auth
    if isinstance(auth, tuple) and len(auth) == 2:
        arguments["username"], arguments["password"] = auth
    elif auth is not None:
        log.warning("the client of a pickled NearDupIndex uses %s credentials, which cannot be pickled: the "
                    "unpickled index reads SOLR_USERNAME/SOLR_PASSWORD or the config file instead",
                    type(auth).__name__)
    return arguments


def _raise_rejections(summary: IndexSummary, url: str) -> None:
    """The keys Solr refused in a bulk insert whose keys and texts were checked first (a 4xx on a document)."""
    if not summary.rejected:
        return
    shown = "; ".join(f"{r.id!r}: {r.reason}" for r in summary.rejections[:SHOWN_KEYS])
    raise SolrRequestError(f"Solr at {url} refused {summary.rejected} of the documents of a bulk insert (the other "
                           f"{summary.indexed} were added): {shown}")
