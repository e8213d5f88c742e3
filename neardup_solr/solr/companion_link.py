"""Which collection is whose companion: the link a companion records to the user's collection
(:class:`SourceLink`), where backfill and sync have got to (:class:`SourceState`), and finding, from either side,
the client every command works through (:func:`resolve`). Kept apart from the install, the reads of the user's
documents and the group mirroring (:mod:`neardup_solr.solr.companion`), so that the settings store and the schema
installer can ask "is this a companion?" without importing those.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass
from typing import Any

from neardup_solr.errors import (
    CollectionSetupError,
    InstallRefused,
    NeardupError,
    SolrRequestError,
    SolrUnavailableError,
)
from neardup_solr.signing.settings import LINK_DOC_ID, META_DATASET
from neardup_solr.signing.settings import SOURCE_STATE_DOC_ID as STATE_DOC_ID
from neardup_solr.solr.client import SolrClient
from neardup_solr.solr.group_fields import GROUP_FIELD

log = logging.getLogger(__name__)

COMPANION_SUFFIX = "_neardup"
# The companion's own documents (data set __meta__, like its settings) are LINK_DOC_ID, the link to the user's
# collection, and STATE_DOC_ID, where backfill and sync have got to: reserved ids, refused as a user's key.
# Values of a multi-valued field, and the fields of a multi-field text, are joined with a line break: the
# normaliser treats it as the space between two words, so no word of one value runs into the next.
TEXT_SEPARATOR = "\n"


@dataclass(frozen=True)
class SourceLink:
    """What ties a companion to the user's collection: its name and URL as ``install`` reached it, the unique key
    field, the text fields (read in this order, multi-valued values in stored order, joined by a line break), and
    the fields ``install`` added to the user's schema (none unless asked: uninstall removes exactly these)."""

    collection: str
    url: str
    key_field: str
    text_fields: tuple[str, ...]
    has_version: bool = True
    # What install --fold added to the user's schema, as "field:NAME" and "type:NAME": uninstall removes these.
    added_to_source: tuple[str, ...] = ()
    installed_at: str = ""

    @property
    def folds_source(self) -> bool:
        """Whether the groups are mirrored into the user's documents (install --fold)."""
        return any(entry == f"field:{GROUP_FIELD}" for entry in self.added_to_source)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "SourceLink":
        data = json.loads(text)
        return cls(collection=str(data["collection"]), url=str(data["url"]), key_field=str(data["key_field"]),
                   text_fields=tuple(data["text_fields"]), has_version=bool(data.get("has_version", True)),
                   added_to_source=tuple(data.get("added_to_source", ())),
                   installed_at=str(data.get("installed_at", "")))

    @property
    def read_fields(self) -> str:
        """fl of a read of the user's documents: the key and the text fields."""
        return ",".join(dict.fromkeys((self.key_field, *self.text_fields)))

    def text_of(self, doc: dict) -> str:
        """The text of one of the user's documents: its text fields' values joined (see the class docstring)."""
        parts: list[str] = []
        for name in self.text_fields:
            value = doc.get(name)
            if value is None:
                continue
            values = value if isinstance(value, list) else [value]
            parts += [v if isinstance(v, str) else str(v) for v in values if v is not None]
        return TEXT_SEPARATOR.join(parts)


def link_document(link: SourceLink) -> dict:
    return {"id": LINK_DOC_ID, "dataset": META_DATASET, "content": link.to_json()}


def read_link(companion: SolrClient) -> SourceLink | None:
    """The link a companion records, None for a collection that is not a companion."""
    docs = companion.get_by_ids([LINK_DOC_ID], "id,content")
    if not docs or not docs[0].get("content"):
        return None
    try:
        return SourceLink.from_json(docs[0]["content"])
    except (ValueError, KeyError, TypeError) as exc:
        raise InstallRefused(f"{companion.url} holds a broken link to its collection ({exc}): drop it with "
                             "'neardup-solr uninstall' and install again") from None


@dataclass
class SourceState:
    """Where backfill and sync have got to: whether a backfill is unfinished and the last key of the user's it
    has written every document up to (None: from the start), the version of the user's collection a finished
    backfill started at, and the highest version sync has read up to (Solr's ``_version_``: every add,
    replacement and edit raises it)."""

    backfill_unfinished: bool = False
    backfill_after_key: str | None = None
    backfill_started_version: int | None = None
    backfilled: bool = False
    synced_version: int | None = None

    def document(self) -> dict:
        return {"id": STATE_DOC_ID, "dataset": META_DATASET, "content": json.dumps(asdict(self), sort_keys=True)}


def read_state(companion: SolrClient) -> SourceState:
    docs = companion.get_by_ids([STATE_DOC_ID], "id,content")
    if not docs or not docs[0].get("content"):
        return SourceState()
    try:
        data = json.loads(docs[0]["content"])
        state = SourceState(**{k: data.get(k) for k in ("backfill_after_key", "backfill_started_version",
                                                        "synced_version")},
                            backfill_unfinished=bool(data.get("backfill_unfinished")),
                            backfilled=bool(data.get("backfilled")))
    except (ValueError, TypeError):
        log.warning("%s: unreadable backfill/sync state; starting from the beginning", companion.url)
        return SourceState()
    if data.get("backfill_cursor") is not None:  # saved by 0.1.0's cursor reads: a position we cannot map to a key
        log.info("%s: an unfinished backfill saved by an earlier version resumes from the beginning", companion.url)
        state.backfill_unfinished, state.backfill_after_key = True, None
    return state


def companion_name(collection: str) -> str:
    return f"{collection}{COMPANION_SUFFIX}"


def sibling_client(client: SolrClient, collection: str) -> SolrClient:
    """A client on ``collection`` of the same Solr (every node ``client`` knows), with its credentials, timeout,
    retry policy and write concern."""
    nodes = list(getattr(client, "_nodes", [client.node_url]))
    auth = client.session.auth if isinstance(client.session.auth, tuple) else None
    verify = client.session.verify if client.session.verify is not None else True
    sibling = SolrClient(",".join(f"{node}/{collection}" for node in nodes), timeout=client.timeout,
                         retry=client.retry, verify=verify, pool_size=client.pool_size,
                         min_replicas=client.min_replicas,
                         username=auth[0] if auth else None, password=auth[1] if auth else None)
    # The same Solr has answered already: the sibling rides out a restart as the client does.
    sibling._answered = getattr(client, "_answered", False)
    return sibling


def auth_of(client: SolrClient):
    return client.session.auth if isinstance(client.session.auth, tuple) else None


def node_call(client: SolrClient, path: str, params: dict, what: str, *, timeout: float | None = None) -> dict:
    """A node-level admin request (CoreAdmin, Collections, Configsets API); InstallRefused naming ``what``."""
    from neardup_solr.solr.cluster import admin_call

    try:
        return admin_call(client.node_url, path, params, what, auth=auth_of(client),
                          timeout=timeout or max(client.timeout, 120))
    except CollectionSetupError as exc:
        raise InstallRefused(str(exc.args[-1] if exc.args else exc)) from None


def collection_exists(client: SolrClient, name: str) -> bool:
    """Whether the Solr ``client`` talks to has a core (single node) or collection (SolrCloud) called ``name``."""
    if client.is_single_core():
        status = node_call(client, "admin/cores", {"action": "STATUS", "core": name, "indexInfo": "false"},
                            f"look for the core {name!r}")
        return bool(status.get("status", {}).get(name, {}).get("name"))
    listed = node_call(client, "admin/collections", {"action": "LIST"}, "list the collections")
    return name in listed.get("collections", [])


def has_our_schema(client: SolrClient) -> bool:
    """Whether the collection was made from our configset (a companion is). Fields an earlier install added to a
    user's schema never include ``fields_json``, and always our settings field."""
    fields = client.schema_fields()
    return "minhash_sig" in fields and "fields_json" in fields and "neardup_settings" not in fields


def companion_of(client: SolrClient, name: str | None = None) -> SolrClient | None:
    """The companion of the user's collection ``client`` talks to (its own client), or None when it has none."""
    name = name or companion_name(client.collection)
    if name == client.collection or not collection_exists(client, name):
        return None
    companion = sibling_client(client, name)
    link = read_link(companion)
    if link is None or link.collection != client.collection:
        log.debug("%s exists but is not the companion of %s", name, client.collection)
        return None
    return companion


def resolve(client: SolrClient) -> SolrClient:
    """The client every command works through: ``client`` itself on a collection of ours (a companion included),
    its companion's on a user's collection that ``install`` prepared. A collection with neither is returned as it
    is: the command that reads its settings says what to do."""
    try:
        if has_our_schema(client):
            return client
        companion = companion_of(client)
    except (SolrRequestError, KeyError) as exc:
        log.debug("no companion found for %s: %s", client.url, exc)
        return client
    if companion is None:
        return client
    log.info("%s: near-duplicate detection through its companion %s", client.url, companion.url)
    return companion


def open_collection(url: str | None = None, **client_options: Any) -> SolrClient:
    """A client for ``url`` that every lookup, report and group write-back can use: on a collection of the user's
    that ``install`` prepared, its companion's; else the collection's own. ``client_options`` go to
    :class:`~neardup_solr.solr.client.SolrClient`."""
    return resolve(SolrClient(url, **client_options))


def resolve_quietly(client: SolrClient) -> SolrClient:
    """:func:`resolve` for a process that starts before Solr may be up (the service): ``client`` itself when Solr
    cannot be asked yet."""
    try:
        return resolve(client)
    except (NeardupError, OSError) as exc:
        log.info("could not look for a companion of %s (%s); using it as it is", client.url, exc)
        return client


def source_client(companion: SolrClient, link: SourceLink | None = None) -> SolrClient:
    """A client on the user's collection a companion belongs to (same Solr, same credentials)."""
    link = link or read_link(companion)
    if link is None:
        raise InstallRefused(f"{companion.url} is not the companion of a collection of yours ('neardup-solr "
                             "install --solr-url URL --text-field FIELD' makes one)")
    return sibling_client(companion, link.collection)


def schema_change(client: SolrClient, commands: dict, what: str) -> None:
    """One Schema API request (Solr applies its commands together or not at all; on a SolrCloud it waits until
    every replica has the new schema); InstallRefused with Solr's reason."""
    try:
        resp = client.request("POST", "schema", params={"wt": "json", "updateTimeoutSecs": 60}, json_body=commands,
                              timeout=max(client.timeout, 90))
    except SolrRequestError as exc:
        raise InstallRefused(f"Solr refused to {what} {client.url}: {exc}") from None
    body = resp.json()
    errors = body.get("error") or body.get("errors")
    if errors:
        raise InstallRefused(f"Solr refused to {what} {client.url}: {json.dumps(errors)[:400]}")


def companion_problem(client: SolrClient) -> str | None:
    """For a collection without our fields: the companion to use instead, said in one line (None without one)."""
    try:
        found = companion_of(client)
    except (SolrRequestError, SolrUnavailableError, KeyError, InstallRefused):
        return None
    if found is None:
        return None
    return (f"{client.url} is installed: its near duplicates are in its companion {found.url} (the command line "
            "finds it from your collection's URL; in Python: neardup_solr.open_collection(url))")


__all__ = ["COMPANION_SUFFIX", "TEXT_SEPARATOR", "SourceLink", "SourceState", "auth_of", "collection_exists",
           "companion_name", "companion_of", "companion_problem", "has_our_schema", "link_document", "node_call",
           "open_collection", "read_link", "read_state", "resolve", "resolve_quietly", "schema_change",
           "sibling_client", "source_client"]
