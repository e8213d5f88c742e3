"""The companion index: near-duplicate detection on a user's own collection without writing to it.

Our signatures, tokens and settings live in a collection of ours (a core or SolrCloud collection made from our
configset) beside the user's, named after it (``articles`` -> ``articles_neardup``) and keyed by the value of the
user's unique key, whatever that key is called. ``install`` creates it and records the link in it (the user's
collection, its key field, the field or fields the text is read from); ``backfill`` and ``sync``
(:mod:`neardup_solr.engine.companion_sync`) fill it by reading the user's documents; ``uninstall`` drops it.

Why beside and not inside: the first design (``schema_install``, kept only to recognise and remove such installs)
added our fields to the user's schema and wrote them with atomic updates. Every atomic update makes Solr rebuild
the whole document from its stored fields, which re-indexed the user's documents (backfill at 0.8x ``index``'s
rate), grew their index fivefold, needed preconditions many real schemas miss (every field stored or docValues),
and where Solr's rebuild is lossy (a stored copyField target of a currency type) it changed the user's values.
The companion writes nothing to the user's collection: not a document, not a schema field.

The companion keeps its own copy of the text (``content``, stored and compressed by Lucene, not indexed): every
lookup, report, join and group write-back then needs one collection, exactly as on a collection of ours, and the
user's collection gets no load from our reports (a report over a million documents would otherwise fetch a
million texts from it).

The link itself, and finding a collection's companion, are :mod:`neardup_solr.solr.companion_link`.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Sequence

from neardup_solr.errors import CollectionSetupError, InstallRefused, LauncherError
from neardup_solr.signing.settings import IndexSettings
from neardup_solr.solr import settings as solr_settings
from neardup_solr.solr.client import SolrClient
from neardup_solr.solr.collection import (
    EVERY_DOCUMENT,
    Collection,
    Selection,
    SolrCollection,
    selection_filters,
    source_filters,
)
from neardup_solr.batching import chunks
from neardup_solr.solr.group_fields import GROUP_FIELD, KEEP_FIELD
from neardup_solr.solr.companion_link import (
    COMPANION_SUFFIX,
    TEXT_SEPARATOR,
    SourceLink,
    SourceState,
    auth_of,
    collection_exists,
    companion_name,
    companion_of,
    companion_problem,
    has_our_schema,
    link_document,
    node_call,
    open_collection,
    read_link,
    read_state,
    resolve,
    resolve_quietly,
    schema_change,
    sibling_client,
    source_client,
)
from neardup_solr.solr.queries import (
    Filter,
    filter_params,
    has_key,
    key_after,
    key_range,
    keys_in,
    select_params,
)
from neardup_solr.solr.settings_store import settings_document

log = logging.getLogger(__name__)

# Field types whose values are text. Anything else (a vector, a date, a point, a location, a currency, binary) is
# refused as a text field, naming its type.
_TEXT_CLASSES = ("TextField", "SortableTextField", "StrField", "ICUCollationField", "CollationField")
# Field names that can be named in fl and sort without quoting.
_PLAIN_FIELD_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")
# Solr's own fields on a user's document: never text, never the key.
_SOLR_FIELDS = ("_version_", "_root_", "_nest_path_", "_text_")


# Reads of keys alone (a reconciling pass, backfill's final check) go in pages of this many. Every cursor page makes
# Solr walk the sort field of the whole collection to find where the page starts, so a read costs by its pages, not
# by its keys: at 1M documents, pages of 10,000 cost about 14 s of Solr CPU a pass. 100,000 keys are a few MB.
KEY_PAGE = 100_000


@dataclass(frozen=True)
class PageSizing:
    """How many documents a cursor page of the user's asks for: ``first`` at first, then as many as hold about
    ``chars`` characters of text at the size of the documents read so far, between ``least`` and ``most``. Fewer,
    larger pages cost Solr less (each walks the whole collection, as above); a page of long documents must still
    fit in memory."""

    first: int
    least: int
    most: int
    chars: int = 8_000_000

    def after(self, docs_read: int, chars_read: int) -> int:
        if docs_read <= 0:
            return self.first
        per_doc = max(1, chars_read // docs_read)
        return max(self.least, min(self.most, self.chars // per_doc))


def text_chars(docs: Iterable[dict]) -> int:
    """The characters of the string values of ``docs`` (a cheap measure of a page's size)."""
    total = 0
    for doc in docs:
        for value in doc.values():
            if isinstance(value, str):
                total += len(value)
            elif isinstance(value, list):
                total += sum(len(v) for v in value if isinstance(v, str))
    return total


def source_pages(source: SolrClient, link: SourceLink, changes: Selection = EVERY_DOCUMENT, *, page_size: int = 500,
                 cursor: str = "*", extra_fields: str = "",
                 sizing: PageSizing | None = None) -> Iterator[tuple[list[dict], str]]:
    """The user's documents that ``changes`` selects, a cursor page at a time in key order, each page with the cursor
    mark that continues after it (a resumable position: Solr's cursor marks are stateless). Pages of
    ``page_size`` documents, or of the size ``sizing`` chooses (a cursor's pages may change size)."""
    fields = link.read_fields + (f",{extra_fields}" if extra_fields else "")
    params = select_params(source_filters(changes), fields=fields, sort=f"{link.key_field} asc")
    docs_read = chars_read = 0
    while True:
        rows = sizing.after(docs_read, chars_read) if sizing is not None else page_size
        data = source.select(params + [("rows", rows), ("cursorMark", cursor)])
        docs = data["response"]["docs"]
        next_cursor = data.get("nextCursorMark", cursor)
        if sizing is not None:
            docs_read, chars_read = docs_read + len(docs), chars_read + text_chars(docs)
        if docs:
            yield docs, next_cursor
        if not docs or next_cursor == cursor:
            return
        cursor = next_cursor


def source_pages_by_key(source: SolrClient, link: SourceLink, changes: Selection = EVERY_DOCUMENT, *,
                        sizing: PageSizing, after_key: str | None = None,
                        key_page: int = KEY_PAGE) -> Iterator[tuple[list[dict], str]]:
    """Every document of the user's collection that ``changes`` selects, a page at a time in key order, each page
    with its last key (where a run resumes: ``after_key``). The keys are read alone with a cursor, ``key_page`` at
    a time; then each page's documents are fetched by their keys (a terms query), in pages that ``sizing`` sizes.

    Against one cursor over the documents (:func:`source_pages`) it costs Solr a little less (1M documents of ~900
    characters: 17.0 against 18.7 s of Solr CPU, ``benchmarks/source_reads.py``), and resuming needs only the
    last key acknowledged (a range filter), not a cursor mark kept alive across runs. A document added between
    the two reads comes with the next sync; one deleted in between is absent."""
    key_filters = source_filters(changes) + ([key_after(link.key_field, after_key)] if after_key is not None else [])
    params = select_params(key_filters, fields=link.key_field, sort=f"{link.key_field} asc")
    docs_read = chars_read = 0
    for key_docs in source.cursor_pages(params, key_page, until_short_page=True):
        keys = [str(d[link.key_field]) for d in key_docs if link.key_field in d]
        at = 0
        while at < len(keys):
            part = keys[at:at + sizing.after(docs_read, chars_read)]
            at += len(part)
            docs = fetch_by_key(source, link, part, source_filters(changes))
            docs_read, chars_read = docs_read + len(docs), chars_read + text_chars(docs)
            yield docs, part[-1]


def fetch_by_key(source: SolrClient, link: SourceLink, keys: Sequence[str],
                 filters: Sequence[Filter] = ()) -> list[dict]:
    """The documents with these keys that ``filters`` match, in the order of ``keys`` (a key no longer there is
    left out)."""
    by_key = {str(d[link.key_field]): d for d in _fetch_keys(source, link, keys, filters) if link.key_field in d}
    return [by_key[k] for k in keys if k in by_key]


def _fetch_keys(source: SolrClient, link: SourceLink, keys: Sequence[str], filters: Sequence[Filter], *,
                fields: str | None = None) -> list[dict]:
    """One terms query for ``keys`` (their ``fields``, by default those the texts need); where every separator it
    may use occurs in some key, each half on its own, down to a term query for a single key."""
    if not keys:
        return []
    # The main query, uncached: a list of keys is asked for once, and must push nothing of the user's out of the
    # filter cache or the query result cache.
    listed = keys_in(link.key_field, keys, cached=False)
    if listed is None and len(keys) == 1:
        listed = has_key(link.key_field, keys[0])
    if listed is None:
        half = len(keys) // 2
        return (_fetch_keys(source, link, keys[:half], filters, fields=fields)
                + _fetch_keys(source, link, keys[half:], filters, fields=fields))
    params = select_params(filters, query=listed, fields=fields or link.read_fields, rows=len(keys))
    return source.select(params)["response"]["docs"]


def source_keys(source: SolrClient, link: SourceLink, changes: Selection = EVERY_DOCUMENT, *,
                page_size: int = KEY_PAGE) -> Iterator[str]:
    """Every key of the user's collection that ``changes`` selects (a cursor over the key alone)."""
    params = select_params(source_filters(changes), fields=link.key_field, sort=f"{link.key_field} asc")
    for page in source.cursor_pages(params, page_size, until_short_page=True):
        yield from (str(d[link.key_field]) for d in page if link.key_field in d)


def source_count(source: SolrClient) -> int:
    """How many documents the user's collection holds. Uncached: sync counts every pass, and an
    entry of ours in the user's query result cache is one of theirs pushed out."""
    return source.count(query="{!lucene cache=false}*:*")


def keys_between(client: SolrClient, field: str, low: str | None, high: str | None, *,
                 companion: bool = False) -> Iterator[str]:
    """The keys in ``field`` from ``low`` (inclusive) to ``high`` (exclusive; None: open) of the documents the
    collection holds (on the ``companion``, its user documents), ascending (a cursor over the key alone, over a
    term range: see :func:`~neardup_solr.solr.queries.key_range`)."""
    params = select_params(_ours_left_out(companion), query=key_range(field, low, high), fields=field,
                           sort=f"{field} asc")
    for page in client.cursor_pages(params, KEY_PAGE, until_short_page=True):
        yield from (str(d[field]) for d in page if field in d)


def present_keys(source: SolrClient, link: SourceLink, keys: Sequence[str]) -> set[str]:
    """Which of ``keys`` the user's collection holds (terms queries of up to 500 keys, the key alone read)."""
    present: set[str] = set()
    for chunk in chunks(list(keys), 500):
        present.update(str(d[link.key_field]) for d in _fetch_keys(source, link, chunk, (), fields=link.key_field)
                       if link.key_field in d)
    return present

def count_between(client: SolrClient, field: str, low: str | None, high: str | None, *,
                  companion: bool = False) -> int:
    """How many documents (on the ``companion``, user documents) hold a key in ``field`` from ``low`` to ``high`` (see
    :func:`keys_between`)."""
    ranged = key_range(field, low, high)
    return client.count(query=ranged.query, params=[*ranged.params, *filter_params(_ours_left_out(companion))])


def _ours_left_out(companion: bool) -> list[Filter]:
    """On the companion, its own documents (settings, state) are left out of key reads and counts; the user's
    collection has none."""
    return selection_filters(EVERY_DOCUMENT) if companion else []


# ---------------------------------------------------------------------------------------------- the user's schema
@dataclass
class SourceSchema:
    """What ``install`` reads of the user's collection: its unique key, its fields (with their types' classes) and
    dynamic fields, whether it has ``_version_``, and whether the Schema API may change it."""

    key_field: str
    fields: dict[str, dict]
    dynamic: list[dict]
    type_classes: dict[str, str]
    managed: bool

    @property
    def has_version(self) -> bool:
        return "_version_" in self.fields

    def field(self, name: str) -> dict | None:
        """The definition of ``name``: a field, else the dynamic field that matches it (the longest pattern first,
        as Solr matches them)."""
        if name in self.fields:
            return self.fields[name]
        for spec in sorted(self.dynamic, key=lambda s: -len(str(s.get("name", "")))):
            pattern = str(spec.get("name", ""))
            if (pattern.startswith("*") and name.endswith(pattern[1:])) or \
                    (pattern.endswith("*") and name.startswith(pattern[:-1])):
                return {**spec, "name": name, "dynamic": pattern}
        return None

    def type_class(self, spec: dict) -> str:
        return self.type_classes.get(str(spec.get("type")), "")


def read_source_schema(client: SolrClient) -> SourceSchema:
    fields = client.schema_fields()
    dynamic = client.get_json("schema/dynamicfields", {"showDefaults": "true"}).get("dynamicFields", [])
    types = client.schema_field_types()
    key = client.get_json("schema/uniquekey").get("uniqueKey")
    return SourceSchema(str(key) if key else "", fields, dynamic,
                        {name: str(t.get("class", "")) for name, t in types.items()}, _schema_is_managed(client))


def _schema_is_managed(client: SolrClient) -> bool:
    """Whether the Schema API may change the schema. The Config API answers ``"schemaFactory": null`` when
    solrconfig.xml leaves the factory implicit (Solr's stock configsets do): the default, managed."""
    config = client.get_json("config/schemaFactory").get("config", {})
    factory = config.get("schemaFactory") or {}
    return "Classic" not in str(factory.get("class", "ManagedIndexSchemaFactory"))


def check_text_fields(schema: SourceSchema, names: Sequence[str], url: str) -> None:
    """Refuse (one line naming the field and why) a text field that is missing, not text, or cannot be read."""
    if not names:
        raise InstallRefused("--text-field names no field: give the field (or fields, comma-separated) that hold "
                             "your documents' text")
    for name in names:
        if not _PLAIN_FIELD_NAME.match(name):
            raise InstallRefused(f"--text-field {name!r} is not a plain field name (letters, digits, _ . -)")
        if name == schema.key_field or name in _SOLR_FIELDS:
            raise InstallRefused(f"--text-field {name} is {'the unique key' if name == schema.key_field else 'a field of Solr'}, not your text; give the field that holds the documents' text")
        spec = schema.field(name)
        if spec is None:
            own = sorted(n for n in schema.fields if not n.startswith("_"))
            shown = ", ".join(own[:30]) + (f" and {len(own) - 30} more" if len(own) > 30 else "")
            patterns = ", ".join(sorted(str(d.get("name")) for d in schema.dynamic)[:20])
            raise InstallRefused(f"{url} has no field {name!r} and no dynamic field matches it (its fields: {shown}"
                                 + (f"; dynamic fields: {patterns}" if patterns else "") + ")")
        type_class = schema.type_class(spec)
        if not type_class.endswith(_TEXT_CLASSES):
            raise InstallRefused(f"field {name!r} of {url} is of type {spec.get('type')!r} ({type_class}), which "
                                 "holds no text: give a text or string field as --text-field")
        if not spec.get("stored") and not spec.get("docValues"):
            raise InstallRefused(f"field {name!r} of {url} is neither stored nor docValues, so its text cannot be "
                                 "read back to be signed: make it stored (and re-index), or give another field")


# ---------------------------------------------------------------------------------------------- install / uninstall
@dataclass
class InstallPlan:
    """What :func:`install` creates (or created: ``done``): the companion and the link it records."""

    url: str
    companion_url: str
    link: SourceLink
    settings: IndexSettings
    cloud: bool = False
    shards: int = 1
    replicas: int = 1
    fold: bool = False
    done: bool = False

    def format(self) -> str:
        link = self.link
        where = (f"collection {companion_name(link.collection)} ({self.shards} shard(s) x {self.replicas} "
                 "replica(s))" if self.cloud else f"core {companion_name(link.collection)}")
        verb = "created" if self.done else "would create"
        lines = [f"{verb} the companion {where} beside {self.url}, from neardup-solr's configset:",
                 f"  key: your unique key {link.key_field!r}; text: {' + '.join(link.text_fields)}"
                 + ("" if link.has_version else " (no _version_ field: every sync pass reads every document)"),
                 f"  settings: {self.settings}"]
        if self.fold:
            lines.append(f"  {'added' if self.done else 'would add'} to your schema, for folding in your own "
                         f"searches: field type {FOLD_TYPE} and the docValues-only fields {GROUP_FIELD}, "
                         f"{KEEP_FIELD} (updated in place: your documents' other fields are never rewritten)")
        else:
            lines.append("  nothing of yours is changed: no field, no document, no schema change")
        if self.done:
            lines.append("next: sign the documents already there with 'neardup-solr backfill', then keep them "
                         "current with 'neardup-solr sync --follow'")
        return "\n".join(lines)


def plan_install(client: SolrClient, text_fields: Sequence[str] | str,
                 settings: IndexSettings | None = None, *, companion: str | None = None,
                 fold: bool = False) -> InstallPlan:
    """What :func:`install` would do; :class:`InstallRefused` (one line, what to do) when it cannot."""
    from neardup_solr.solr.schema_install import legacy_install_fields

    names = [n.strip() for n in (text_fields.split(",") if isinstance(text_fields, str) else text_fields)
             if n and n.strip()]
    settings = (settings or IndexSettings()).signed_here()
    if has_our_schema(client):
        if read_link(client) is not None:
            raise InstallRefused(f"{client.url} is a companion already; install names the collection of yours")
        raise InstallRefused(
            f"{client.url} is a neardup collection already (made from our configset): index into it with "
            "'neardup-solr index'; documents other clients post there are signed by 'neardup-solr sync'")
    if legacy_install_fields(client):
        raise InstallRefused(
            f"{client.url} holds near-duplicate fields of an earlier install (inside your documents): remove them "
            "with 'neardup-solr uninstall', then install again (a companion beside your collection)")
    name = companion or companion_name(client.collection)
    existing = companion_of(client, name)
    if existing is not None:
        link = read_link(existing)
        raise InstallRefused(
            f"{client.url} is installed already: its companion {existing.url} reads {' + '.join(link.text_fields) if link else '?'}; "
            "to change that, 'neardup-solr uninstall' first")
    if collection_exists(client, name):
        raise InstallRefused(f"{client.url}: a core or collection named {name!r} exists already and is not its "
                             "companion; nothing was changed: give another name with --companion")
    schema = read_source_schema(client)
    if not schema.key_field:
        raise InstallRefused(f"{client.url} has no unique key: near duplicates are named by it; add a <uniqueKey> "
                             "to the schema")
    check_text_fields(schema, names, client.url)
    added: tuple[str, ...] = ()
    if fold:
        problems = fold_problems(client, schema)
        if problems:
            raise InstallRefused(f"{client.url} cannot fold in your own searches: {'; '.join(problems)}. Nothing was "
                                 "changed; install without --fold folds through neardup-solr's search instead")
        added = (f"type:{FOLD_TYPE}", f"field:{GROUP_FIELD}", f"field:{KEEP_FIELD}")
    link = SourceLink(client.collection, client.url, schema.key_field, tuple(names), schema.has_version,
                      added_to_source=added, installed_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    plan = InstallPlan(client.url, _companion_url(client, name), link, settings, fold=fold)
    if not client.is_single_core():
        plan.cloud = True
        plan.shards, plan.replicas = _layout_of(client)
    return plan


def _companion_url(client: SolrClient, name: str) -> str:
    return f"{client.node_url}/{name}"


def _layout_of(client: SolrClient) -> tuple[int, int]:
    """Shards and replicas of the user's SolrCloud collection: the companion gets the same."""
    from neardup_solr.solr.cluster import cluster_status

    status = cluster_status(client.node_url, client.collection, auth=auth_of(client))
    shards = status.get("collections", {}).get(client.collection, {}).get("shards", {})
    replicas = max((len(s.get("replicas", {})) for s in shards.values()), default=1)
    return max(1, len(shards)), max(1, replicas)


def install(client: SolrClient, text_fields: Sequence[str] | str, settings: IndexSettings | None = None, *,
            companion: str | None = None, fold: bool = False, dry_run: bool = False) -> InstallPlan:
    """Create the companion of the user's collection ``client`` talks to, whose text is in ``text_fields`` (one
    field, several, or a comma-separated string), and record the link and the settings in it. Nothing of the
    user's collection changes, unless ``fold``: then the two group fields are added to its schema (docValues only,
    which Solr updates in place) so that its own searches can fold near duplicates. ``dry_run``: only say what
    would be done."""
    plan = plan_install(client, text_fields, settings, companion=companion, fold=fold)
    if dry_run:
        return plan
    name = companion or companion_name(client.collection)
    if fold:
        add_fold_fields(client)
    create_companion_collection(client, name, plan)
    target = sibling_client(client, name)

    target.add([settings_document(plan.settings), link_document(plan.link), SourceState().document()])
    target.commit()
    if read_link(target) != plan.link:
        raise InstallRefused(f"the companion {target.url} was created but does not read back its link; run "
                             "'neardup-solr uninstall' and install again")
    plan.done = True
    log.info("installed %s: companion %s (key %s, text from %s)", client.url, target.url, plan.link.key_field,
             "+".join(plan.link.text_fields))
    return plan


def create_companion_collection(client: SolrClient, name: str, plan: InstallPlan) -> None:
    """Create the companion from our configset: a SolrCloud collection (the configset uploaded through the
    Configsets API when the cluster lacks it), or a core on a single node (from the node's ``neardup`` configset;
    one a remote node lacks is uploaded through the Configsets API where that node allows it)."""
    from neardup_solr.solr.cluster import create_collection

    if plan.cloud:
        try:
            create_collection(client.node_url, name, plan.shards, plan.replicas, auth=auth_of(client),
                              timeout=max(client.timeout, 180))
        except CollectionSetupError as exc:
            raise InstallRefused(f"could not create the companion collection {name!r}: {exc}") from None
        return
    params = {"action": "CREATE", "name": name, "instanceDir": name, "configSet": solr_settings.CONFIGSET_NAME}
    try:
        node_call(client, "admin/cores", params, f"create the companion core {name!r}")
        return
    except InstallRefused as first:
        # A core that failed to load stays registered (its ping answers 500): take it away before anything else.
        _unload_quietly(client, name)
        missing_configset = "config" in str(first).lower()
        if not missing_configset:
            raise
    _upload_to_single_node(client)  # raises, saying where the configset goes, where the node takes no upload
    try:
        node_call(client, "admin/cores", params, f"create the companion core {name!r}")
    except InstallRefused:
        _unload_quietly(client, name)
        raise


def _unload_quietly(client: SolrClient, name: str) -> None:
    try:
        client.session.get(f"{client.node_url}/admin/cores", timeout=max(client.timeout, 60),
                           params={"action": "UNLOAD", "core": name, "deleteInstanceDir": "true", "wt": "json"})
    except OSError as exc:
        log.warning("could not unload the core %s that failed to load: %s", name, exc)


def _solr_message(resp) -> str:
    try:
        return str(resp.json().get("error", {}).get("msg") or resp.text)[:200]
    except ValueError:
        return resp.text[:200]


def _upload_to_single_node(client: SolrClient) -> None:
    from neardup_solr.solr.cluster import configset_zip

    try:
        resp = client.session.post(f"{client.node_url}/admin/configs",
                                   params={"action": "UPLOAD", "name": solr_settings.CONFIGSET_NAME, "wt": "json"},
                                   data=configset_zip(), headers={"Content-Type": "application/octet-stream"},
                                   timeout=max(client.timeout, 60))
        ok = resp.status_code == 200
        reason = _solr_message(resp)
    except (OSError, LauncherError) as exc:
        ok, reason = False, str(exc)
    if not ok:
        raise InstallRefused(
            f"the Solr at {client.node_url} has no '{solr_settings.CONFIGSET_NAME}' configset for the companion core "
            f"and a single node takes no upload ({reason.strip()[:120]}): copy {solr_settings.configset_dir()} "
            f"into the node's configsets directory (<solr home>/configsets/{solr_settings.CONFIGSET_NAME}), then "
            "install again")


@dataclass
class UninstallSummary:
    """What :func:`uninstall` removed."""

    url: str
    companion: str | None = None
    documents: int = 0
    removed_from_source: list[str] = field(default_factory=list)
    legacy: Any = None

    def format(self) -> str:
        if self.legacy is not None:
            return self.legacy.format()
        text = f"dropped the companion {self.companion} of {self.url} ({self.documents} signed document(s))"
        if self.removed_from_source:
            text += f"; removed the fields install added to yours: {', '.join(self.removed_from_source)}"
        return text + "; your collection is as it was"


def uninstall(client: SolrClient, *, companion: str | None = None, batch_size: int = 500) -> UninstallSummary:
    """Drop the companion of the user's collection (and exactly the fields its link says install added, none by
    default). A collection installed the old way (our fields inside the user's documents) has them removed as
    before. ``client`` may be on the user's collection or on the companion."""
    from neardup_solr.solr.schema_install import legacy_install_fields, uninstall_legacy

    link = read_link(client) if has_our_schema(client) else None
    if link is not None:
        target, user = client, sibling_client(client, link.collection)
    else:
        if has_our_schema(client):
            raise InstallRefused(f"{client.url} is a neardup collection (made from our configset), not a companion "
                                 "install made; nothing was changed ('neardup-solr delete' removes documents)")
        found = companion_of(client, companion)
        if found is None:
            if legacy_install_fields(client):
                return UninstallSummary(client.url, legacy=uninstall_legacy(client, batch_size=batch_size))
            raise InstallRefused(f"{client.url} has no companion ({companion or companion_name(client.collection)}) "
                                 "and no fields of an earlier install: nothing to uninstall; nothing was changed")
        target, user, link = found, client, read_link(found)
        assert link is not None
    documents = SolrCollection(target).count()
    removed = remove_fold_fields(user, link)
    drop_collection(target)
    log.info("uninstalled %s: dropped %s", user.url, target.collection)
    return UninstallSummary(user.url, target.collection, documents, removed)


def drop_collection(target: SolrClient) -> None:
    """Delete the companion core (with its data) or SolrCloud collection."""
    if target.is_single_core():
        node_call(target, "admin/cores", {"action": "UNLOAD", "core": target.collection, "deleteIndex": "true",
                                           "deleteDataDir": "true", "deleteInstanceDir": "true"},
                   f"drop the companion core {target.collection!r}")
    else:
        node_call(target, "admin/collections", {"action": "DELETE", "name": target.collection},
                   f"drop the companion collection {target.collection!r}")


# ---------------------------------------------------------------------------------------------- folding in the user's searches
# install --fold: the group fields in the user's own collection, so that their searches can fold near duplicates
# (fq={!collapse field=nd_group nullPolicy=expand}, or the cached filter fq=-nd_keep:0). Solr updates a field in
# place (only that field's docValues, the rest of the document untouched) when the field and _version_ are
# single-valued numeric docValues, neither indexed nor stored, and no copyField takes the field somewhere that is
# not; otherwise it silently falls back to a full atomic update, which rebuilds the document from its stored fields
# (lossy: a stored copyField target of a currency type changed its values that way). So the conditions are checked
# before the fields are added and again before every write, and a failed check refuses instead of writing.
FOLD_TYPE = "neardup_fold_int"
_FOLD_TYPE_DEFINITION = {"name": FOLD_TYPE, "class": "solr.IntPointField", "docValues": True}
# useDocValuesAsStored false: the user's fl=* answers stay what they were.
_FOLD_FIELD_DEFINITION = {"type": FOLD_TYPE, "indexed": False, "stored": False, "docValues": True,
                          "multiValued": False, "useDocValuesAsStored": False}
_NUMERIC_CLASSES = ("IntPointField", "LongPointField", "FloatPointField", "DoublePointField", "TrieIntField",
                    "TrieLongField", "TrieFloatField", "TrieDoubleField")


def _updatable_in_place(spec: dict, type_class: str) -> bool:
    return (not spec.get("indexed") and not spec.get("stored") and bool(spec.get("docValues"))
            and not spec.get("multiValued") and type_class.endswith(_NUMERIC_CLASSES))


def _copied_fields(client: SolrClient, names: Sequence[str]) -> list[str]:
    """Our fields a copyField of the user's would copy (a source pattern that matches them, like "*")."""
    copies = client.get_json("schema/copyfields").get("copyFields", [])
    hit = []
    for rule in copies:
        source = str(rule.get("source", ""))
        for name in names:
            if source == name or (source.endswith("*") and name.startswith(source[:-1])) or \
                    (source.startswith("*") and name.endswith(source[1:])):
                hit.append(f"{source} -> {rule.get('dest')}")
    return sorted(set(hit))


def fold_problems(client: SolrClient, schema: SourceSchema) -> list[str]:
    """Why the group fields cannot be added to the user's schema and updated in place ([] when they can)."""
    problems = []
    if not schema.managed:
        problems.append("its schema cannot be changed through the Schema API (a classic schema.xml)")
    version = schema.fields.get("_version_")
    if version is None or not _updatable_in_place(version, schema.type_class(version)):
        problems.append("its _version_ field is not a docValues-only long (indexed=false stored=false "
                        "docValues=true): Solr would rebuild every document instead of updating in place")
    taken = [name for name in (GROUP_FIELD, KEEP_FIELD) if name in schema.fields]
    if taken or FOLD_TYPE in schema.type_classes:
        problems.append(f"the name(s) {', '.join(taken + ([FOLD_TYPE] if FOLD_TYPE in schema.type_classes else []))}"
                        " are taken in its schema")
    copied = _copied_fields(client, (GROUP_FIELD, KEEP_FIELD))
    if copied:
        problems.append(f"a copyField would copy the group fields ({', '.join(copied)}), and Solr updates in place "
                        "only what is not copied")
    return problems


def add_fold_fields(client: SolrClient) -> None:
    """Add the fold type and fields to the user's schema (one Schema API request: all or nothing)."""
    commands = {"add-field-type": [_FOLD_TYPE_DEFINITION],
                "add-field": [{"name": name, **_FOLD_FIELD_DEFINITION} for name in (GROUP_FIELD, KEEP_FIELD)]}
    schema_change(client, commands, "add the group fields to")


def remove_fold_fields(client: SolrClient, link: SourceLink) -> list[str]:
    """Remove from the user's schema exactly what the link says install added; returns what was removed."""
    fields = client.schema_fields()
    types = client.schema_field_types()
    drop_fields = [e.split(":", 1)[1] for e in link.added_to_source
                   if e.startswith("field:") and e.split(":", 1)[1] in fields]
    drop_types = [e.split(":", 1)[1] for e in link.added_to_source
                  if e.startswith("type:") and e.split(":", 1)[1] in types]
    commands: dict[str, list] = {}
    if drop_fields:
        commands["delete-field"] = [{"name": n} for n in drop_fields]
    if drop_types:
        commands["delete-field-type"] = [{"name": n} for n in drop_types]
    if commands:
        schema_change(client, commands, "remove the group fields from")
    return [f"field {n}" for n in drop_fields] + [f"field type {n}" for n in drop_types]


def check_in_place(client: SolrClient) -> None:
    """Refuse (InstallRefused) unless an update of the group fields in the user's collection is one Solr makes in
    place: checked before every write, since the schema may have changed since install."""
    schema = read_source_schema(client)
    problems = []
    for name in ("_version_", GROUP_FIELD, KEEP_FIELD):
        spec = schema.fields.get(name)
        if spec is None or not _updatable_in_place(spec, schema.type_class(spec)):
            problems.append(f"{name} is {'missing' if spec is None else 'no longer a docValues-only number'}")
    copied = _copied_fields(client, (GROUP_FIELD, KEEP_FIELD))
    if copied:
        problems.append(f"a copyField copies the group fields ({', '.join(copied)})")
    if problems:
        raise InstallRefused(f"the groups were not written into {client.url}: an update would not be in place "
                             f"({'; '.join(problems)}), and Solr would rebuild your documents instead. Nothing of "
                             "yours was written; the companion holds the groups ('neardup-solr uninstall' and "
                             "install without --fold to stop folding in your collection)")


def mirror_groups(companion: SolrClient | Collection, ids: Sequence[str] | None = None, *,
                  batch_size: int = 1000) -> int:
    """Copy the companion's groups into the user's documents where install --fold asked for it (else nothing):
    of ``ids``, or of every document. Only what differs is written, by in-place updates that name the document's
    existence (``_version_`` 1), so a document deleted meanwhile is not brought back. Returns how many were
    written. A collection that is not in a Solr (:class:`~neardup_solr.solr.memory_collection.MemoryCollection`)
    is nobody's companion: nothing."""
    if isinstance(companion, Collection):
        if not isinstance(companion, SolrCollection):
            return 0
        companion = companion.client
    link = read_link(companion)
    if link is None or not link.folds_source:
        return 0
    user = sibling_client(companion, link.collection)
    check_in_place(user)
    key = link.key_field
    if ids is None:
        wanted = {doc_id: (g, k) for doc_id, g, k in SolrCollection(companion).read_groups() if g is not None}
        params = select_params(fields=f"{key},{GROUP_FIELD},{KEEP_FIELD}", sort=f"{key} asc")
        held = {str(d[key]): (d.get(GROUP_FIELD), d.get(KEEP_FIELD))
                for page in user.cursor_pages(params, KEY_PAGE) for d in page if key in d}
    else:
        wanted = {doc_id: (g, k) for doc_id, (g, k) in SolrCollection(companion).groups_of(list(ids)).items() if g is not None}
        held = {}
        for chunk in chunks(list(wanted), 500):
            # Real-time get looks documents up by the unique key, whatever it is called.
            held.update({str(d[key]): (d.get(GROUP_FIELD), d.get(KEEP_FIELD))
                         for d in user.get_by_ids(chunk, f"{key},{GROUP_FIELD},{KEEP_FIELD}") if key in d})
    changed = [(doc_id, g, k) for doc_id, (g, k) in wanted.items() if doc_id in held and held[doc_id] != (g, k)]
    written = 0
    for batch in chunks(changed, batch_size):
        updates = [{key: doc_id, GROUP_FIELD: {"set": int(g)}, KEEP_FIELD: {"set": int(k or 0)}, "_version_": 1}
                   for doc_id, g, k in batch]
        written += len(updates) - len(SolrCollection(user).write_groups(updates, key_field=key))
    if written:
        user.request("POST", "update", params={"wt": "json", "softCommit": "true"}, json_body=[])
        log.info("folded %d document(s) of %s in place", written, user.url)
    return written


# The link's names are offered here too (their import path before solr/companion_link.py was split off).
__all__ = ["open_collection", "mirror_groups", "COMPANION_SUFFIX", "InstallPlan", "SourceLink", "SourceState",
           "UninstallSummary", "companion_name", "companion_of", "install", "plan_install", "read_link", "read_state",
           "resolve", "source_client", "source_pages", "source_pages_by_key", "fetch_by_key", "source_keys",
           "text_chars", "uninstall", "KEY_PAGE", "PageSizing", "TEXT_SEPARATOR", "companion_problem",
           "resolve_quietly"]
