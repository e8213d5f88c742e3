"""The near-duplicate group of every document, kept in the collection itself: two docValues fields, their in-place
updates, the reading of what they hold, and the numbering of new groups.

``nd_group`` is the group's number and ``nd_keep`` is 1 on the document a folded search keeps (0 on its copies).
Both are single-valued integer docValues, neither indexed nor stored, because that is what Solr can update *in
place*: an atomic update of any other kind of field rebuilds the whole document from its stored fields, and the
token fields (shingles, bands, words) are not stored, so it would silently strip them. Integers rather than
strings because in-place updates take numbers, and ``{!collapse}`` takes a string, int or float field.

Every update is sent with ``_version_ = 1`` ("only if the document exists"): a document deleted since it was read
is left deleted instead of coming back as a stub holding only the two fields.

Group numbers come from a counter document (``__neardup_group_counter__``, in the reserved data set like the
settings) advanced with optimistic concurrency, so two processes (a write-back and the service's adds) never hand
out one number twice.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator

from neardup_solr.errors import GroupFieldsError, SolrRequestError
from neardup_solr.signing.settings import GROUP_COUNTER_ID as COUNTER_ID, META_DATASET
from neardup_solr.solr.selection import EVERY_DOCUMENT, Selection

if TYPE_CHECKING:
    from neardup_solr.solr.client import SolrClient
    from neardup_solr.solr.port import CollectionPrimitives as Collection

log = logging.getLogger(__name__)

GROUP_FIELD = "nd_group"
KEEP_FIELD = "nd_keep"
GROUP_FIELDS = (GROUP_FIELD, KEEP_FIELD)
# The counter's field: our configset's *_i dynamic field (a stored int); a user's collection gets it as a field
# of its own from install (or from the first write-back).
COUNTER_FIELD = "next_group_i"
_COUNTER_FIELD = COUNTER_FIELD
# The fields' definition, as the configset has it and as the Schema API adds it to a collection created before.
FIELD_DEFINITION = {"type": "pint", "indexed": False, "stored": False, "docValues": True, "multiValued": False,
                    "useDocValuesAsStored": False}
# The int type a collection installed on (schema_install) has, when it has no pint of its own.
INSTALLED_INT_TYPE = "neardup_int"
MAX_GROUP = 2**31 - 1  # a pint
# Turns of the counter lost to other processes before giving up (each loss means another one got its block).
_COUNTER_ATTEMPTS = 50


def ensure_group_fields(client: SolrClient) -> list[str]:
    """Make sure the collection has ``nd_group`` and ``nd_keep`` as in-place updatable fields; returns the names
    added through the Schema API (a collection created before they were in the configset). Raises
    :class:`GroupFieldsError` when one exists with another definition (updating it would lose data or fail), or
    when the schema cannot be changed (a classic ``schema.xml``: reload the core with the current configset)."""
    fields = client.schema_fields()
    if "minhash_sig" not in fields:
        # A collection of the user's: its schema is theirs. Groups go into its companion (install), never here.
        raise GroupFieldsError(
            f"{client.url} is not a neardup collection and has no companion: nothing was changed. Make one with "
            "'neardup-solr install --solr-url URL --text-field FIELD' and 'neardup-solr backfill'; groups are then "
            "written into the companion")
    for name in GROUP_FIELDS:
        field = fields.get(name)
        if field is None:
            continue
        wrong = [key for key in ("indexed", "stored", "docValues", "multiValued")
                 if bool(field.get(key)) != FIELD_DEFINITION[key]]
        if wrong:
            raise GroupFieldsError(
                f"the collection's field {name!r} is not updatable in place ({', '.join(wrong)} differ from "
                f"{FIELD_DEFINITION}); an atomic update of it would drop the unstored token fields. Redefine it "
                "(and re-index) or use a collection made from neardup-solr's configset")
    types = client.schema_field_types()
    # A user's collection (install) may have no pint: our own int type, with the same in-place definition, does.
    int_type = "pint" if "pint" in types or INSTALLED_INT_TYPE not in types else INSTALLED_INT_TYPE
    # A user's collection (no 'content' field of ours): their pipeline's atomic updates rebuild a document from
    # its stored fields and the docValues used as stored, and would drop the group otherwise.
    as_stored = "content" not in fields
    wanted: list[dict[str, Any]] = [{"name": name, **FIELD_DEFINITION, "type": int_type,
                                     "useDocValuesAsStored": as_stored}
                                    for name in GROUP_FIELDS if name not in fields]
    if COUNTER_FIELD not in fields and not _dynamic_int_field(client):
        wanted.append({"name": COUNTER_FIELD, "type": int_type, "indexed": False, "stored": True,
                       "docValues": False, "multiValued": False})
    for definition in wanted:
        name = str(definition["name"])
        try:
            client.request("POST", "schema", params={"wt": "json"}, json_body={"add-field": definition})
        except SolrRequestError as exc:
            raise GroupFieldsError(
                f"the collection has no field {name!r} and Solr refused to add it through the Schema API ({exc}). "
                "A core made from a classic schema.xml cannot be changed that way: reload it with neardup-solr's "
                "current configset (it defines nd_group and nd_keep), then run again") from exc
    missing = [str(definition["name"]) for definition in wanted]
    if missing:
        log.warning("added the group fields %s to %s through the Schema API (the collection predates them)",
                    ", ".join(missing), client.url)
    return missing


def _dynamic_int_field(client: SolrClient) -> bool:
    """Whether the schema's ``*_i`` dynamic field (our configset's) would hold the counter."""
    dynamic = client.get_json("schema/dynamicfields").get("dynamicFields", [])
    return any(spec.get("name") == "*_i" and spec.get("stored") is not False for spec in dynamic)


def read_groups(coll: Collection, dataset: str | None = None,
                page_size: int = 10_000) -> Iterator[tuple[str, int | None, int | None]]:
    """``(id, nd_group, nd_keep)`` of every user document (of ``dataset`` when given; None where unset), in id
    order, a page at a time (on a SolrCloud collection over every shard, read from the leaders)."""
    for page in coll.pages(Selection(dataset=dataset), ",".join(("id", *GROUP_FIELDS)), page_size,
                           from_leaders=True):
        for doc in page:
            yield str(doc["id"]), doc.get(GROUP_FIELD), doc.get(KEEP_FIELD)


def groups_of(coll: Collection, ids: list[str]) -> dict[str, tuple[int | None, int | None]]:
    """``{id: (nd_group, nd_keep)}`` of these ids as searches see them (committed; real-time get does not return
    docValues-only fields); ids not in the collection are left out."""
    docs = coll.search_ids(ids, ",".join(("id", *GROUP_FIELDS)))
    return {str(d["id"]): (d.get(GROUP_FIELD), d.get(KEEP_FIELD)) for d in docs}


# Members of one group read at most (a group larger than this is boilerplate, not near-duplicate copies).
MAX_MEMBERS = 10_000


def members_of(coll: Collection, group: int) -> dict[str, int | None]:
    """``{id: nd_keep}`` of the (up to :data:`MAX_MEMBERS`) documents of one group, as searches see them."""
    page = next(coll.pages(Selection(group=group), f"id,{KEEP_FIELD}", MAX_MEMBERS, from_leaders=True), [])
    return {str(d["id"]): d.get(KEEP_FIELD) for d in page}


def group_update(doc_id: str, group: int, keep: bool | int) -> dict:
    """The in-place update giving ``doc_id`` its group and kept flag, refused (409) if the document is gone."""
    return {"id": doc_id, GROUP_FIELD: {"set": int(group)}, KEEP_FIELD: {"set": 1 if keep else 0}, "_version_": 1}


def send_group_updates(coll: Collection, updates: list[dict], *, commit_within_ms: int | None = None,
                       soft_commit: bool = False, key_field: str = "id") -> list[str]:
    """Send in-place updates in one request; returns the ids (values of ``key_field``, the collection's unique key)
    that were not updated because their document is gone. Solr stops a request at its first refused document, so
    a refused batch is sent again one by one."""
    if not updates:
        return []
    try:
        coll.put(updates, commit_within_ms=commit_within_ms, soft_commit=soft_commit)
        return []
    except SolrRequestError as exc:
        if exc.status != 409:
            raise
    gone = []
    for update in updates:
        try:
            coll.put([update], commit_within_ms=commit_within_ms, soft_commit=soft_commit)
        except SolrRequestError as exc:
            if exc.status != 409:
                raise
            gone.append(str(update[key_field]))
    return gone


def highest_group(coll: Collection) -> int:
    """The largest group number any document holds (0 when none holds one)."""
    return max(0, int(coll.highest(GROUP_FIELD, EVERY_DOCUMENT) or 0))


def allocate_groups(coll: Collection, count: int) -> int:
    """Reserve ``count`` new group numbers; returns the first (they run on from it). Safe across processes: the
    counter document is rewritten only if its version is still the one read (409 otherwise, and it is read
    again). The counter starts above the highest number held, so groups written before it existed stay apart."""
    if count <= 0:
        return 0
    for _ in range(_COUNTER_ATTEMPTS):
        docs = coll.by_ids([COUNTER_ID], f"id,{_COUNTER_FIELD},_version_")
        if docs:
            first, version = int(docs[0][_COUNTER_FIELD]), int(docs[0]["_version_"])
        else:
            first, version = highest_group(coll) + 1, -1
        if first + count - 1 > MAX_GROUP:
            raise GroupFieldsError(f"group numbers are used up ({first} + {count} passes {MAX_GROUP}); write the "
                                   "groups back afresh after clearing them")
        counter = {"id": COUNTER_ID, "dataset": META_DATASET, _COUNTER_FIELD: first + count}
        if coll.create(counter, version):
            return first
    raise GroupFieldsError(f"could not reserve group numbers: the counter changed under {_COUNTER_ATTEMPTS} "
                           "attempts in a row")


# Numbers a process reserves at once for documents added one by one (check_and_add): one counter turn per block.
NUMBER_BLOCK = 100
# How long a process takes a collection without a counter for one whose groups are not written (no group fields
# are then given to added documents): the first write-back is seen by every process within this time.
NOT_IN_USE_SECONDS = 10.0
# How long a reserved block is used: a collection wiped and written back afresh restarts its counter, and a block
# reserved before must not outlive that by long (the numbers left in it are simply never used).
BLOCK_SECONDS = 60.0


@dataclass
class _Block:
    lock: threading.Lock
    next: int = 0
    end: int = 0
    expires: float = 0.0
    unused_until: float = 0.0


_blocks: dict[str, _Block] = {}
_blocks_lock = threading.Lock()


def _block(coll: Collection) -> _Block:
    with _blocks_lock:
        return _blocks.setdefault(coll.url, _Block(threading.Lock()))


def forget_group_numbers(coll: Collection) -> None:
    """Drop what this process reserved or learned about the collection's group numbers (a write-back starts
    with it, since it may follow a wipe)."""
    with _blocks_lock:
        _blocks.pop(coll.url, None)


def _has_block(state: _Block) -> bool:
    return state.next < state.end and time.monotonic() < state.expires


def groups_in_use(coll: Collection) -> bool:
    """Whether the collection's groups are written (its counter exists); a "no" is remembered for
    :data:`NOT_IN_USE_SECONDS`, so documents added one by one cost no request for it."""
    state = _block(coll)
    with state.lock:
        if _has_block(state):
            return True
        if time.monotonic() < state.unused_until:
            return False
        if coll.by_ids([COUNTER_ID], "id"):
            return True
        state.unused_until = time.monotonic() + NOT_IN_USE_SECONDS
        return False


def new_group_number(coll: Collection) -> int:
    """A fresh group number for one document, from a block this process reserved (:func:`allocate_groups`)."""
    state = _block(coll)
    with state.lock:
        if not _has_block(state):
            state.next = allocate_groups(coll, NUMBER_BLOCK)
            state.end = state.next + NUMBER_BLOCK
            state.expires = time.monotonic() + BLOCK_SECONDS
        number = state.next
        state.next += 1
        return number
