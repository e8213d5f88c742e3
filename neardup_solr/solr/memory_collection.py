"""The collection port kept in memory: :class:`MemoryCollection`, a dict of documents that keeps the contract of
:mod:`neardup_solr.solr.collection` as a single Solr core keeps it.

What it is for: the engines' tests without a JVM (an engine given a ``MemoryCollection`` counts, pages, claims,
versions and groups as on a core), and a user's experiments with the engines' logic
before there is a Solr. ``tests/unit/solr/test_collection_contract.py`` holds it to the same suite as a real
core and a SolrCloud collection (``tests/solr/solr/test_collection_contract_solr.py``).

What it keeps of Solr, and how:

- Two views. Real-time reads (:meth:`~MemoryCollection.by_ids`) see every write at once; searches
  (:meth:`~MemoryCollection.count`, :meth:`~MemoryCollection.pages`, :meth:`~MemoryCollection.search_ids`,
  :meth:`~MemoryCollection.highest`) see the committed snapshot, which :meth:`~MemoryCollection.commit` (hard or
  soft), a ``put`` or ``delete`` with ``soft_commit`` copies from the real-time view. ``commit_within_ms`` counts
  as "at the next commit"; ``commit(visible=False)`` (durable only) shows nothing new, as on Solr.
- Versions: every write gives its document a new ``_version_``, strictly increasing across the collection and
  shaped like Solr's (milliseconds shifted left by 20 bits), so ``Selection.changed_after`` with a margin in
  seconds means what it means on Solr. A write's own ``_version_`` is Solr's optimistic concurrency: below 0 only
  if the id is free, 1 only if the document exists, 0 or none always, any other only at that very version. A
  refused write raises :class:`~neardup_solr.errors.SolrRequestError` (status 409) there, the writes before it
  in the request done and no commit of the request made (Solr commits after a request's last document); with
  ``skip_conflicts`` (Solr's ``failOnVersionConflicts=false``) it is skipped instead.
- Whole documents replace the one of their id (a None or empty-list value is no value); a document with any
  ``{"op": value}`` field is an atomic update of the fields it names (``set``, None removing the field; ``add``,
  ``add-distinct``, ``remove``, ``inc``), the others kept; of an id not there it makes a document, as Solr does.
- ``fields`` as Solr's ``fl``: names separated by commas or spaces, ``*`` (or nothing) for every field, globs
  such as ``nd_*``; ``score`` is 1 in a search (the port's searches are filters) and nothing in a real-time read.
  ``nd_group`` and ``nd_keep`` are docValues the configset does not use as stored: a search returns them only
  when named, a real-time read never (Solr's real-time get leaves them out, named or not).
- Time to live as the configset's update chain has it: a document written with a ``ttl`` (Solr date math such as
  ``+30DAYS``) gets ``expire_at`` = now + ttl. Nothing expires, though (Solr's deleter runs once a minute).
- Selections as :func:`neardup_solr.solr.collection.selection_filters` writes them for Solr: never the
  package's own documents (``dataset`` the reserved data set), which only :meth:`~MemoryCollection.by_ids` and
  ``highest(field, None)`` see; pages in id order (Unicode code point order, which is Solr's order of a string
  id), read like a cursor (each page from the snapshot current when it is read, after the last id given).

What it does not do: text search. The candidate lookups (shingle, band and word queries, scores, folded search,
IDF) stay Solr's, and so do the schema (values are kept as written: a single value is not made a list, nothing is
left out as unstored, no field is refused for its type), the deletion of expired documents, durability across
processes, and sharding (it is one core: :meth:`~MemoryCollection.is_single_core` is True). Everything lives in
one process: two "processes" are two threads, which it serialises with one lock.
"""

from __future__ import annotations

import bisect
import calendar
import fnmatch
import itertools
import json
import re
import threading
import time
from datetime import datetime, timedelta, timezone
from typing import Any, Iterator, Mapping, NamedTuple, Sequence

from neardup_solr.errors import SolrRequestError
from neardup_solr.signing.settings import META_DATASET
from neardup_solr.solr.collection import Collection
from neardup_solr.solr.group_fields import GROUP_FIELD, GROUP_FIELDS
from neardup_solr.solr.selection import EVERY_DOCUMENT, VERSION_MS_SHIFT, Selection

# Fields that "*" and globs leave out: docValues the configset does not use as stored.
_NOT_AS_STORED = frozenset(GROUP_FIELDS)
_ATOMIC_OPERATIONS = frozenset({"set", "add", "add-distinct", "remove", "inc"})
_FIELD_LIST_SEPARATORS = re.compile(r"[,\s]+")
_names = itertools.count(1)
# The configset's time to live: a document's "ttl" (Solr date math, "+30DAYS") gives it "expire_at".
TTL_FIELD = "ttl"
EXPIRE_FIELD = "expire_at"
_DATE_MATH = re.compile(r"([+-])(\d+)([A-Z]+)|/([A-Z]+)")
_UNITS = {"YEAR": "year", "YEARS": "year", "MONTH": "month", "MONTHS": "month", "DAY": "day", "DAYS": "day",
          "DATE": "day", "HOUR": "hour", "HOURS": "hour", "MINUTE": "minute", "MINUTES": "minute",
          "SECOND": "second", "SECONDS": "second", "MILLI": "milli", "MILLIS": "milli", "MILLISECOND": "milli",
          "MILLISECONDS": "milli"}


class MemoryCollection(Collection):
    """The collection port in a dict (see the module docstring): thread-safe, one process, no text search.

    ``name`` makes the :attr:`url` (``memory://<name>``), which is also what the group-number blocks of
    :mod:`neardup_solr.solr.group_fields` are kept by: each collection gets a name of its own unless given one."""

    def __init__(self, name: str | None = None):
        self.name = name if name is not None else f"collection-{next(_names)}"
        self.url = f"memory://{self.name}"
        self._lock = threading.RLock()
        self._docs: dict[str, dict[str, Any]] = {}  # the real-time view: every write
        self._committed: dict[str, dict[str, Any]] = {}  # what searches see: the last commit's copy
        self._committed_ids: list[str] | None = None  # the committed ids in order (made when a page asks)
        self._last_version = 0

    def __repr__(self) -> str:
        return f"MemoryCollection({self.name!r})"

    # ------------------------------------------------------------------------------------------------------- reads
    def count(self, selection: Selection = EVERY_DOCUMENT) -> int:
        with self._lock:
            return sum(1 for doc in self._committed.values() if _selected(selection, doc))

    def pages(self, selection: Selection, fields: str, page_size: int = 500, *,
              from_leaders: bool = False) -> Iterator[list[dict]]:
        wanted = _field_list(fields)
        after: str | None = None
        while True:
            with self._lock:
                ordered = self._ordered_ids()
                start = 0 if after is None else bisect.bisect_right(ordered, after)
                page: list[dict] = []
                last: str | None = None
                for doc_id in itertools.islice(ordered, start, None):
                    if len(page) >= page_size:
                        break
                    doc = self._committed[doc_id]
                    if _selected(selection, doc):
                        page.append(_projected(doc, wanted))
                        last = doc_id
            if not page:
                return
            yield page
            if len(page) < page_size:
                return
            after = last

    def by_ids(self, ids: Sequence[str], fields: str = "*", *, from_leaders: bool = False) -> list[dict]:
        wanted = _field_list(fields)
        with self._lock:
            # As Solr's real-time get: an id asked twice is answered twice, docValues not used as stored never.
            return [_projected(self._docs[doc_id], wanted, real_time=True) for doc_id in (str(i) for i in ids)
                    if doc_id in self._docs]

    def search_ids(self, ids: Sequence[str], fields: str) -> list[dict]:
        wanted = _field_list(fields)
        with self._lock:
            return [_projected(self._committed[doc_id], wanted) for doc_id in dict.fromkeys(str(i) for i in ids)
                    if doc_id in self._committed]

    def highest(self, field: str, selection: Selection | None = None) -> Any:
        with self._lock:
            values = [doc[field] for doc in self._committed.values()
                      if field in doc and (selection is None or _selected(selection, doc))]
        return max(values) if values else None

    # ------------------------------------------------------------------------------------------------------ writes
    def put(self, docs: Sequence[dict], *, commit_within_ms: int | None = None, soft_commit: bool = False,
            skip_conflicts: bool = False) -> None:
        if not docs:
            return
        # As JSON, as SolrCollection sends them: the same documents are refused, and nothing the caller keeps is
        # shared with what is stored.
        sent = json.loads(json.dumps(list(docs), ensure_ascii=False))
        with self._lock:
            for doc in sent:
                if not isinstance(doc, dict) or doc.get("id") is None:
                    raise SolrRequestError(f"Document is missing mandatory uniqueKey field: id ({doc!r})", status=400)
                doc_id = str(doc["id"])
                current = self._docs.get(doc_id)
                refusal = _refusal(doc_id, doc.get("_version_"), current)
                if refusal is not None:
                    if skip_conflicts:
                        continue
                    raise SolrRequestError(refusal, status=409)
                body = {name: value for name, value in doc.items() if name != "_version_"}
                if any(isinstance(value, dict) for value in body.values()):
                    written = _updated(current or {"id": doc_id}, body)
                else:
                    written = {name: value for name, value in body.items() if value is not None and value != []}
                    if isinstance(written.get(TTL_FIELD), str):
                        # The configset's DocExpirationUpdateProcessor: expire_at = NOW + ttl (nothing expires here).
                        written[EXPIRE_FIELD] = _expiry(doc_id, written[TTL_FIELD], datetime.now(timezone.utc))
                written["id"] = doc_id
                written["_version_"] = self._next_version()
                self._docs[doc_id] = written
            if soft_commit:
                self._commit()

    def delete(self, ids: Sequence[str], *, soft_commit: bool = False) -> None:
        if not ids:
            return
        with self._lock:
            for doc_id in ids:
                self._docs.pop(str(doc_id), None)
            if soft_commit:
                self._commit()

    def commit(self, *, soft: bool = False, visible: bool = True) -> None:
        if soft or visible:
            with self._lock:
                self._commit()

    def is_single_core(self) -> bool:
        return True

    def ensure_group_fields(self) -> list[str]:
        return []

    # ------------------------------------------------------------------------------------------------------ inside
    def _commit(self) -> None:
        # Stored documents are never changed in place (a write stores a new dict), so a shallow copy is a snapshot.
        self._committed = dict(self._docs)
        self._committed_ids = None

    def _ordered_ids(self) -> list[str]:
        if self._committed_ids is None:
            self._committed_ids = sorted(self._committed)
        return self._committed_ids

    def _next_version(self) -> int:
        version = max(self._last_version + 1, int(time.time() * 1000) << VERSION_MS_SHIFT)
        self._last_version = version
        return version



def _refusal(doc_id: str, wanted: Any, current: dict | None) -> str | None:
    """Why Solr's optimistic concurrency refuses a write carrying ``_version_`` ``wanted`` (None: it does not)."""
    if wanted is None:
        return None
    try:
        version = int(wanted)
    except (TypeError, ValueError):
        raise SolrRequestError(f"Invalid _version_ {wanted!r} for {doc_id}", status=400) from None
    if version == 0:
        return None
    actual = int(current["_version_"]) if current is not None else -1
    if version < 0:
        ok = current is None
    elif version == 1:
        if current is None:
            return f"Document not found for update.  id={doc_id}"
        ok = True
    else:
        ok = actual == version
    return None if ok else f"version conflict for {doc_id} expected={version} actual={actual}"


def _updated(current: Mapping[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    """``current`` with an atomic update's fields applied (the fields it does not name kept)."""
    doc = dict(current)
    for name, change in update.items():
        if name == "id":
            continue
        if not isinstance(change, dict):
            _store(doc, name, change)  # a plain value in an atomic update sets the field
            continue
        for operation, value in change.items():
            if operation not in _ATOMIC_OPERATIONS:
                raise SolrRequestError(f"Unknown operation for an atomic update: {operation}", status=400)
            if operation == "set":
                _store(doc, name, value)
            elif operation == "inc":
                doc[name] = (doc.get(name) or 0) + value
            else:
                held = _values(doc.get(name))
                given = _values(value)
                if operation == "add":
                    held += given
                elif operation == "add-distinct":
                    held += [v for v in given if v not in held]
                else:  # remove
                    held = [v for v in held if v not in given]
                _store(doc, name, held if len(held) != 1 or isinstance(doc.get(name), list) else held[0])
    return doc


def _store(doc: dict[str, Any], name: str, value: Any) -> None:
    if value is None or value == []:
        doc.pop(name, None)
    else:
        doc[name] = value


def _values(value: Any) -> list:
    return [] if value is None else list(value) if isinstance(value, list) else [value]


def _copied(value: Any) -> Any:
    if isinstance(value, list):
        return [_copied(v) for v in value]
    if isinstance(value, dict):
        return {k: _copied(v) for k, v in value.items()}
    return value


class _FieldList(NamedTuple):
    every: bool  # "*" (or no fl at all)
    names: list[str]  # names and globs
    score: bool


def _field_list(fields: str) -> _FieldList:
    """Solr's ``fl``. No field may be renamed or computed (``alias:field``, functions, transformers), which only
    Solr does."""
    names = [n for n in _FIELD_LIST_SEPARATORS.split(fields or "") if n]
    for name in names:
        if ":" in name or "(" in name or name.startswith("["):
            raise ValueError(f"MemoryCollection reads fields by name (or *, or a glob), not {name!r}")
    plain = [n for n in names if n not in ("*", "score")]
    return _FieldList(not names or "*" in names, plain, "score" in names)


def _projected(doc: Mapping[str, Any], wanted: _FieldList, *, real_time: bool = False) -> dict:
    """The fields of ``doc`` that ``wanted`` asks for, copied, as a search returns them (a score of 1: the port's
    searches are filters), or as a real-time get does (``real_time``: no score, and no docValues that are not
    used as stored, even named)."""
    out = {}
    for name, value in doc.items():
        if name in _NOT_AS_STORED:
            if real_time or name not in wanted.names:
                continue
        elif not (wanted.every or name in wanted.names
                  or any(("*" in n or "?" in n) and fnmatch.fnmatchcase(name, n) for n in wanted.names)):
            continue
        out[name] = _copied(value)
    if wanted.score and not real_time:
        out["score"] = 1.0
    return out


def _selected(selection: Selection, doc: Mapping[str, Any]) -> bool:
    """Whether ``doc`` is one of the user's documents that ``selection`` means (the filters of
    :func:`neardup_solr.solr.collection.selection_filters`, read on a dict)."""
    datasets = _values(doc.get("dataset"))
    if META_DATASET in datasets:
        return False
    if selection.dataset is not None and selection.dataset not in datasets:
        return False
    if selection.seen is not None and ("md5_hash" in doc) != selection.seen:
        return False
    if selection.signed is not None:
        shingles = [n for n in (_number(v) for v in _values(doc.get("num_shingles"))) if n is not None]
        if any(n >= 1 for n in shingles) != selection.signed:
            return False
    version = int(doc.get("_version_", 0))
    lowest = selection.lowest_version()
    if lowest is not None and not version > lowest:
        return False
    if selection.at_or_before is not None and not version <= int(selection.at_or_before):
        return False
    if selection.dated_since is not None:
        field, instant, margin_s = selection.dated_since
        since = _instant(instant) - timedelta(seconds=int(margin_s))
        dates = [d for d in (_instant_or_none(v) for v in _values(doc.get(field))) if d is not None]
        if not any(d >= since for d in dates):
            return False
    if selection.except_id is not None and doc.get("id") == selection.except_id:
        return False
    if selection.group is not None and _number(doc.get(GROUP_FIELD)) != int(selection.group):
        return False
    return True


def _expiry(doc_id: str, ttl: str, now: datetime) -> str:
    """``now`` moved by Solr date math (``+30DAYS``, ``+1MONTH/DAY``, ...) as Solr writes a date."""
    math = ttl.strip().upper()
    moves = list(_DATE_MATH.finditer(math))
    if not moves or "".join(m.group(0) for m in moves) != math:
        raise SolrRequestError(f"Can't parse ttl as date math: {ttl!r} (document {doc_id})", status=400)
    at = now
    for move in moves:
        sign, amount, unit, rounding = move.groups()
        name = _UNITS.get(unit or rounding)
        if name is None:
            raise SolrRequestError(f"Can't parse ttl as date math: unit {(unit or rounding)!r} (document {doc_id})",
                                   status=400)
        if rounding:
            at = _rounded(at, name)
            continue
        n = int(amount) * (1 if sign == "+" else -1)
        if name in ("year", "month"):
            months = at.year * 12 + at.month - 1 + (n * 12 if name == "year" else n)
            year, month = divmod(months, 12)
            day = min(at.day, calendar.monthrange(year, month + 1)[1])
            at = at.replace(year=year, month=month + 1, day=day)
        else:
            at += timedelta(**{"days" if name == "day" else "milliseconds" if name == "milli" else f"{name}s": n})
    millis = at.microsecond // 1000
    return at.strftime("%Y-%m-%dT%H:%M:%S") + (f".{millis:03d}" if millis else "") + "Z"


def _rounded(at: datetime, unit: str) -> datetime:
    """``at`` rounded down to the start of its ``unit`` (date math's ``/DAY``)."""
    keep = ["year", "month", "day", "hour", "minute", "second", "milli"].index(unit)
    return datetime(at.year, at.month if keep >= 1 else 1, at.day if keep >= 2 else 1, at.hour if keep >= 3 else 0,
                    at.minute if keep >= 4 else 0, at.second if keep >= 5 else 0,
                    at.microsecond // 1000 * 1000 if keep >= 6 else 0, tzinfo=at.tzinfo)


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _instant(value: str) -> datetime:
    """An ISO instant as Solr writes dates (``2026-12-06T12:00:00.123Z``); one without a zone is UTC."""
    text = value.strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    parsed = datetime.fromisoformat(text)
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=timezone.utc)


def _instant_or_none(value: Any) -> datetime | None:
    try:
        return _instant(str(value))
    except ValueError:
        return None


__all__ = ["MemoryCollection"]
