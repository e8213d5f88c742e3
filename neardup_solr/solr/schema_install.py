"""Near-duplicate detection on a user's own collection: our field types, fields and settings document added (and
removed again) through Solr's Schema API, touching none of the collection's own fields.

Everything here is Solr's user-facing API (Schema API, Config API, metrics, atomic updates); no code of ours runs
inside Solr. Our types carry a ``neardup_`` prefix, so they never meet a user's ``string`` or ``pint`` of another
definition; our fields keep the names our own configset gives them (``md5_hash``, ``minhash_sig``,
``content_lsh`` ...), so every reader and query works on both kinds of collection alike. The text stays in the
user's field: the stored settings name it and the client reads it as ``content`` (``SolrClient.text_field``).

Unlike our own configset, every token field is stored or has docValues here: the user's pipeline may make atomic
updates of its own documents, and Solr rebuilds such a document from its stored and docValues fields, so a field
with neither would be silently dropped by any update of a title or a view count.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field

from neardup_solr.errors import ForeignCollectionError, SolrRequestError
from neardup_solr.solr.atomic import clear_our_fields
from neardup_solr.solr.client import SolrClient
from neardup_solr.solr.group_fields import COUNTER_FIELD, FIELD_DEFINITION, GROUP_FIELDS, INSTALLED_INT_TYPE
from neardup_solr.signing.settings import META_DATASET, SETTINGS_DOC_ID, IndexSettings
from neardup_solr.solr.queries import dataset_query
from neardup_solr.solr.settings_store import INSTALLED_SETTINGS_FIELD, read_index_settings

log = logging.getLogger(__name__)

# Optimistic concurrency that skips a conflicting document instead of failing its batch (failOnVersionConflicts,
# SOLR-13320) came with Solr 8.2; per-field similarity and cursors are older.
MINIMUM_SOLR = (8, 2)

_BOOLEAN_SIMILARITY = {"class": "solr.BooleanSimilarityFactory"}
# Our field types by name: the definitions of solr_config/configsets/neardup/conf/schema.xml, renamed.
FIELD_TYPES: dict[str, dict] = {
    "neardup_string": {"class": "solr.StrField", "sortMissingLast": True, "docValues": True},
    "neardup_int": {"class": "solr.IntPointField", "docValues": True},
    "neardup_stored_text": {"class": "solr.StrField", "indexed": False, "stored": True, "docValues": False},
    # Set-overlap tokens scored by how many of a query's tokens a document holds (see schema.xml's set_token).
    "neardup_set_token_dv": {"class": "solr.StrField", "omitNorms": True, "omitTermFreqAndPositions": True,
                             "docValues": True, "similarity": _BOOLEAN_SIMILARITY},
    # Shingle hashes as one whitespace-separated value (schema.xml's set_token_list).
    "neardup_set_token_list": {
        "class": "solr.TextField", "omitNorms": True, "omitTermFreqAndPositions": True,
        "indexAnalyzer": {"tokenizer": {"class": "solr.WhitespaceTokenizerFactory", "maxTokenLen": "4096"}},
        "queryAnalyzer": {"tokenizer": {"class": "solr.KeywordTokenizerFactory"}},
        "similarity": _BOOLEAN_SIMILARITY},
    "neardup_blob_dv": {"class": "solr.StrField", "indexed": False, "stored": False, "docValues": True,
                        "useDocValuesAsStored": True},
}

# The fields every installed collection gets: what a signed document carries besides its tokens.
_BASE_FIELDS: dict[str, dict] = {
    "md5_hash": {"type": "neardup_string", "indexed": True, "stored": True},
    "num_words": {"type": "neardup_int", "indexed": True, "stored": True},
    "num_shingles": {"type": "neardup_int", "indexed": True, "stored": True},
    "first_word": {"type": "neardup_string", "indexed": True, "stored": True},
    "dataset": {"type": "neardup_string", "indexed": True, "stored": True},
    "minhash_sig": {"type": "neardup_blob_dv", "multiValued": False},
    INSTALLED_SETTINGS_FIELD: {"type": "neardup_stored_text", "multiValued": False},
}
_TOKEN_FIELDS: dict[str, dict] = {
    "content_nh": {"type": "neardup_set_token_list", "indexed": True, "stored": True, "multiValued": True},
    "content_ng": {"type": "neardup_set_token_dv", "indexed": True, "stored": False, "multiValued": True},
    "content_words": {"type": "neardup_set_token_dv", "indexed": True, "stored": False, "multiValued": True},
    "content_grams": {"type": "neardup_set_token_dv", "indexed": True, "stored": False, "multiValued": True},
    "content_sg": {"type": "neardup_set_token_dv", "indexed": True, "stored": False, "multiValued": True},
    "content_lsh": {"type": "neardup_set_token_dv", "indexed": True, "stored": False, "multiValued": True},
}
# The near-duplicate groups (group_fields): in-place updatable ints, and the counter's field (our configset has a
# *_i dynamic field for it; a user's schema may not), so that 'groups --to-solr' and the adds that keep the
# groups current work on an installed collection without changing its schema again. useDocValuesAsStored: an
# atomic update by the user's pipeline rebuilds a document from its stored fields and only those docValues, and
# would drop the group otherwise (in-place updates do not depend on it).
_GROUP_FIELDS: dict[str, dict] = {
    **{name: {**FIELD_DEFINITION, "type": INSTALLED_INT_TYPE, "useDocValuesAsStored": True} for name in GROUP_FIELDS},
    COUNTER_FIELD: {"type": INSTALLED_INT_TYPE, "indexed": False, "stored": True, "docValues": False,
                    "multiValued": False},
}
# Every field any install may add: what uninstall removes (those that are there) and what the atomic-update check
# leaves to us (we always write all of a document's fields of ours at once).
ALL_OUR_FIELDS = tuple(_BASE_FIELDS) + tuple(_TOKEN_FIELDS) + tuple(_GROUP_FIELDS)
# Fields our own configset has and no install adds: a collection made from our configset is checked as one.
_OWN_CONFIGSET_FIELDS = ("content", "fields_json", "content_fwords", "ttl", "expire_at", "content_mh")


class InstallRefused(ForeignCollectionError):
    """``install`` (or ``uninstall``) will not change this collection; the message says why and what to do."""


@dataclass
class InstallPlan:
    """What :func:`install` adds to a collection (or added: ``done``): field types and fields as Schema API
    definitions, and the settings document. ``already`` names what was there from an earlier install."""

    url: str
    text_field: str
    settings: IndexSettings
    field_types: list[dict] = field(default_factory=list)
    fields: list[dict] = field(default_factory=list)
    settings_document: dict = field(default_factory=dict)
    already: list[str] = field(default_factory=list)
    done: bool = False

    def format(self) -> str:
        """What was (or would be) added, one line each."""
        verb = "added" if self.done else "would add"
        lines = [f"{verb} to {self.url} (text read from {self.text_field!r}; nothing of yours is changed):"]
        lines += [f"  field type {t['name']} ({t['class']})" for t in self.field_types]
        lines += [f"  field {f['name']} ({f['type']})" for f in self.fields]
        lines.append(f"  document {SETTINGS_DOC_ID} (the settings: {self.settings})")
        if self.already:
            lines.append(f"  (there from an earlier install: {', '.join(self.already)})")
        if self.done:
            lines.append("next: sign the documents already there with 'neardup-solr backfill', then keep them "
                         "current with 'neardup-solr sync --follow'")
        return "\n".join(lines)


def solr_version(client: SolrClient) -> tuple[int, ...] | None:
    """The version of the Solr that serves ``client`` (from the node's system info), or None when it does not
    say."""
    try:
        resp = client.session.get(f"{client.node_url}/admin/info/system", params={"wt": "json"},
                                  timeout=client.timeout)
        text = resp.json().get("lucene", {}).get("solr-spec-version", "") if resp.status_code == 200 else ""
    except (ValueError, OSError) as exc:
        log.debug("no Solr version from %s: %s", client.url, exc)
        return None
    numbers = re.findall(r"\d+", str(text))
    return tuple(int(n) for n in numbers[:3]) if numbers else None


def schema_factory(client: SolrClient) -> str:
    """The class of the collection's schema factory (Config API): "ManagedIndexSchemaFactory" when the Schema API
    may change it."""
    config = client.get_json("config/schemaFactory").get("config", {})
    return str(config.get("schemaFactory", {}).get("class", "ManagedIndexSchemaFactory"))


def plan_install(client: SolrClient, text_field: str, settings: IndexSettings | None = None) -> InstallPlan:
    """What :func:`install` would add; raises :class:`InstallRefused` (one line, what to do) for a Solr too old, a
    schema the Schema API cannot change, a text field that cannot be read, or a name already taken."""
    settings = settings or IndexSettings()
    version = solr_version(client)
    if version is not None and version < MINIMUM_SOLR:
        raise InstallRefused(
            f"{client.url} runs Solr {'.'.join(map(str, version))}; near-duplicate fields need Solr "
            f"{'.'.join(map(str, MINIMUM_SOLR))} or later (optimistic concurrency that skips a conflicting "
            "document): upgrade Solr, or index a copy into a neardup collection ('neardup-solr index')")
    fields = client.schema_fields()
    if INSTALLED_SETTINGS_FIELD in fields and client.get_by_ids([SETTINGS_DOC_ID], "id"):
        stored = read_index_settings(client)
        raise InstallRefused(
            f"{client.url} has near-duplicate fields already (text from {client.text_field!r}, settings {stored}); "
            "to change them, 'neardup-solr uninstall' first")
    if all(name in fields for name in ("content", "minhash_sig", "content_lsh")):
        raise InstallRefused(
            f"{client.url} is a neardup collection already (made from our configset): index into it with "
            "'neardup-solr index'; documents other clients post there are signed by 'neardup-solr sync'")
    unique_key = client.get_json("schema/uniquekey").get("uniqueKey")
    if unique_key != "id":
        raise InstallRefused(
            f"the unique key of {client.url} is {unique_key!r}; near-duplicate detection names documents by a unique "
            "key called 'id': keep near duplicates in a collection of their own ('neardup-solr index'), with your "
            "key as the id")
    factory = schema_factory(client)
    if "Managed" not in factory:
        raise InstallRefused(
            f"the schema of {client.url} cannot be changed through the Schema API ({factory}: a classic schema.xml); "
            "switch the collection to a managed schema (<schemaFactory class=\"ManagedIndexSchemaFactory\"/> in "
            "solrconfig.xml) and reload it, or add our fields to schema.xml by hand (the --dry-run list)")
    similarity = client.get_json("schema/similarity").get("similarity", {}).get("class", "")
    if similarity and not similarity.endswith("SchemaSimilarityFactory"):
        raise InstallRefused(
            f"the schema of {client.url} sets one similarity for every field ({similarity}); our token fields need "
            "their own (BooleanSimilarity: a candidate's score is the number of tokens it shares): use "
            "solr.SchemaSimilarityFactory (with your similarity as its defaultSimFromFieldType) or no <similarity>")
    text = fields.get(text_field)
    if text is None:
        shown = ", ".join(sorted(n for n in fields if not n.startswith("_"))[:12])
        raise InstallRefused(f"{client.url} has no field {text_field!r} for --text-field (its fields: {shown})")
    if text_field in ALL_OUR_FIELDS or text_field == "id":
        raise InstallRefused(f"--text-field {text_field} names a field that is not your text; give the field "
                             "that holds the documents' text")
    if not text.get("stored") and not (text.get("docValues") and text.get("useDocValuesAsStored", True)):
        raise InstallRefused(
            f"field {text_field!r} of {client.url} is not stored, so its text cannot be read back to be signed: make "
            "it stored (and re-index), or give another --text-field")
    if text.get("multiValued"):
        raise InstallRefused(
            f"field {text_field!r} of {client.url} is multi-valued; near-duplicate detection reads one text a "
            "document: give a single-valued stored field with the whole text as --text-field")
    required = sorted(name for name, spec in fields.items()
                      if spec.get("required") and name != "id" and spec.get("default") is None)
    if required:
        raise InstallRefused(
            f"the schema of {client.url} requires field(s) {', '.join(required)} in every document, and the settings "
            "document near-duplicate detection keeps in the collection has none of yours: give them a default (or "
            "make them optional), or keep near duplicates in a collection of their own ('neardup-solr index')")
    types = client.schema_field_types()
    plan = InstallPlan(client.url, text_field, settings)
    wanted = {**_BASE_FIELDS, **_GROUP_FIELDS}
    for kind in settings.fields:
        name = settings.token_field(kind)
        wanted[name] = _TOKEN_FIELDS[name]
    needed_types = {spec["type"] for spec in wanted.values()}
    collisions = []
    for name in sorted(needed_types):
        if name in types:
            if _same_type(types[name], FIELD_TYPES[name]):
                plan.already.append(f"type {name}")
            else:
                collisions.append(f"field type {name!r}")
        else:
            plan.field_types.append({"name": name, **FIELD_TYPES[name]})
    for name, spec in wanted.items():
        if name in fields:
            if fields[name].get("type") == spec["type"]:
                plan.already.append(f"field {name}")
            else:
                collisions.append(f"field {name!r} (of type {fields[name].get('type')!r})")
        else:
            plan.fields.append({"name": name, **spec})
    if collisions:
        raise InstallRefused(
            f"{client.url} has {', '.join(collisions)} of its own already, a name near-duplicate detection needs; "
            "nothing was changed: rename yours, or keep near duplicates in a collection of their own "
            "('neardup-solr solr create-collection', then 'neardup-solr index')")
    # The first writer records the Unicode it signs with, as index does for a collection of ours.
    plan.settings = settings = settings.signed_here()
    plan.settings_document = installed_settings_document(settings, text_field)
    return plan


def _same_type(found: dict, ours: dict) -> bool:
    return found.get("class") == ours["class"] and all(
        found.get(k) == v for k, v in ours.items() if k in ("indexed", "stored", "docValues"))


def installed_settings_document(settings: IndexSettings, text_field: str) -> dict:
    """The settings document of an installed collection: the settings JSON and the user's text field, in a field
    of ours (see documents.INSTALLED_SETTINGS_FIELD)."""
    data = json.loads(settings.to_json())
    data["text_field"] = text_field
    return {"id": SETTINGS_DOC_ID, "dataset": META_DATASET,
            INSTALLED_SETTINGS_FIELD: json.dumps(data, sort_keys=True)}


def install(client: SolrClient, text_field: str, settings: IndexSettings | None = None, *,
            dry_run: bool = False) -> InstallPlan:
    """Add our field types, fields and settings document to a user's collection whose text is in
    ``text_field`` (Schema API; none of the collection's own fields is touched). ``dry_run``: only say what would
    be added. Raises :class:`InstallRefused` for what it cannot do (see :func:`plan_install`)."""
    plan = plan_install(client, text_field, settings)
    if dry_run:
        return plan
    commands: dict[str, list[dict]] = {}
    if plan.field_types:
        commands["add-field-type"] = plan.field_types
    if plan.fields:
        commands["add-field"] = plan.fields
    if commands:
        _schema_request(client, commands, "add near-duplicate fields to")
    client.add([plan.settings_document])
    client.commit()
    client.text_field = text_field
    plan.done = True
    log.info("installed near-duplicate fields in %s (text from %r)", client.url, text_field)
    return plan


def _schema_request(client: SolrClient, commands: dict, what: str) -> None:
    """One Schema API request (Solr applies its commands together or not at all)."""
    try:
        # On a SolrCloud, wait until every replica has the new schema: an update sent to one that has not would
        # meet an unknown field.
        resp = client.request("POST", "schema", params={"wt": "json", "updateTimeoutSecs": 60}, json_body=commands,
                              timeout=max(client.timeout, 90))
    except SolrRequestError as exc:
        raise InstallRefused(f"Solr refused to {what} {client.url}: {exc}") from None
    errors = resp.json().get("error") or resp.json().get("errors")
    if errors:
        raise InstallRefused(f"Solr refused to {what} {client.url}: {json.dumps(errors)[:400]}")


@dataclass
class UninstallSummary:
    """What :func:`uninstall` removed."""

    url: str
    documents_cleaned: int
    our_documents: int
    fields: list[str]
    field_types: list[str]

    def format(self) -> str:
        return (f"removed from {self.url}: our fields' values from {self.documents_cleaned} document(s), "
                f"{self.our_documents} document(s) of ours (settings), fields {', '.join(self.fields) or 'none'}, "
                f"field types {', '.join(self.field_types) or 'none'}; your fields and documents are as they were")


def uninstall(client: SolrClient, *, batch_size: int = 500) -> UninstallSummary:
    """Remove what :func:`install` added: our values from every document (atomic updates, so a concurrent update
    of the user's own is kept), our documents, then our fields and field types."""
    fields = client.schema_fields()
    if "content" in fields and "minhash_sig" in fields:
        raise InstallRefused(f"{client.url} is a neardup collection (made from our configset), not one install "
                             "prepared; nothing was changed ('neardup-solr delete' removes documents from it)")
    ours = [name for name in ALL_OUR_FIELDS if name in fields and fields[name].get("type", "").startswith("neardup_")]
    if not ours:
        raise InstallRefused(f"{client.url} has no near-duplicate fields yet, so nothing to uninstall ('neardup-solr "
                             "install' adds them); nothing was changed")
    cleaned = clear_our_fields(client, [f for f in ours if f not in ("dataset", INSTALLED_SETTINGS_FIELD)],
                               batch_size=batch_size)
    meta = client.count(dataset_query(META_DATASET)) if "dataset" in ours else 0
    if "dataset" in ours:
        client.delete_by_query(dataset_query(META_DATASET))
    client.delete_ids([SETTINGS_DOC_ID])
    client.commit()
    types_used_by_others = {f.get("type") for name, f in fields.items() if name not in ours}
    dynamic = client.get_json("schema/dynamicfields").get("dynamicFields", [])
    types_used_by_others |= {f.get("type") for f in dynamic}
    types = [name for name in client.schema_field_types() if name in FIELD_TYPES and name not in types_used_by_others]
    commands: dict[str, list[dict]] = {"delete-field": [{"name": name} for name in ours]}
    if types:
        commands["delete-field-type"] = [{"name": name} for name in types]
    _schema_request(client, commands, "remove near-duplicate fields from")
    client.text_field = "content"
    return UninstallSummary(client.url, cleaned, meta, ours, types)


@dataclass
class AtomicUpdateCheck:
    """Whether a collection can take atomic updates of our fields without losing any of the user's: ``problems``
    names what is missing, with what to do (empty when nothing is)."""

    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def message(self, url: str) -> str:
        return (f"{url} cannot take atomic updates of our fields without losing some of yours: "
                f"{'; '.join(self.problems)}. Nothing was changed.")


def check_atomic_updates(client: SolrClient) -> AtomicUpdateCheck:
    """Solr rebuilds a document from its stored and docValues fields on an atomic update: every field of the
    user's must be stored or have docValues (copyField targets excepted: they are filled again), and the update
    log must be on (atomic updates and ``_version_`` need it)."""
    check = AtomicUpdateCheck()
    fields = client.schema_fields()
    copy_targets = {c.get("dest") for c in client.get_json("schema/copyfields").get("copyFields", [])}
    lost = sorted(name for name, spec in fields.items()
                  if name not in ALL_OUR_FIELDS and name not in _OWN_CONFIGSET_FIELDS and name != "_version_"
                  and name not in copy_targets and not name.startswith("_")
                  and not spec.get("stored") and not spec.get("docValues"))
    dynamic = client.get_json("schema/dynamicfields", {"showDefaults": "true"}).get("dynamicFields", [])
    lost += sorted(spec["name"] for spec in dynamic
                   if spec.get("name") not in copy_targets and not spec.get("stored") and not spec.get("docValues"))
    if lost:
        check.problems.append(f"field(s) {', '.join(lost)} are neither stored nor docValues (an atomic update "
                              "would drop their values): make them stored or docValues and re-index, or make them "
                              "copyField targets")
    if "_version_" not in fields:
        check.problems.append("no _version_ field (optimistic concurrency needs it): add "
                              "<field name=\"_version_\" type=\"plong\" indexed=\"false\" stored=\"false\"/>")
    if update_log_on(client) is False:
        check.problems.append("the update log is off: add <updateLog/> to the <updateHandler> of solrconfig.xml and "
                              "reload the collection")
    return check


def update_log_on(client: SolrClient) -> bool | None:
    """Whether the collection's cores keep an update log (a TLOG state in Solr's metrics), None when the metrics
    do not say."""
    try:
        resp = client.session.get(f"{client.node_url}/admin/metrics", timeout=client.timeout,
                                  params={"group": "core", "prefix": "TLOG.state", "wt": "json"})
        metrics = resp.json().get("metrics", {}) if resp.status_code == 200 else None
    except (ValueError, OSError) as exc:
        log.debug("no metrics from %s: %s", client.url, exc)
        return None
    if metrics is None:
        return None
    name = client.collection
    cores = [body for key, body in metrics.items()
             if key == f"solr.core.{name}" or key.startswith(f"solr.core.{name}.")]
    if not cores:
        # On a SolrCloud this node may host no replica of the collection: then the metrics cannot say.
        return None if not metrics or client.is_cloud else False
    return all("TLOG.state" in body for body in cores)


def require_atomic_updates(client: SolrClient) -> None:
    """Raise :class:`InstallRefused` naming what is missing when atomic updates would lose the user's data."""
    check = check_atomic_updates(client)
    if not check.ok:
        raise InstallRefused(check.message(client.url))


__all__ = ["install", "plan_install", "uninstall", "InstallPlan", "InstallRefused", "UninstallSummary",
           "check_atomic_updates", "require_atomic_updates", "AtomicUpdateCheck", "FIELD_TYPES", "ALL_OUR_FIELDS"]
