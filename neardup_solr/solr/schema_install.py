"""Near-duplicate fields inside a user's own documents, as an earlier version's ``install`` added them: recognised and
removed. ``install`` now makes a companion index beside the user's collection instead
(:mod:`neardup_solr.solr.companion`, which says why). Also the check that a collection can take atomic updates of
our fields without losing any of its own, which ``sync`` still needs on a collection of ours that other clients
post to.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from neardup_solr.solr.atomic import clear_our_fields
from neardup_solr.solr.client import SolrClient
from neardup_solr.errors import InstallRefused
from neardup_solr.solr.companion_link import schema_change
from neardup_solr.solr.group_fields import COUNTER_FIELD, FIELD_DEFINITION, GROUP_FIELDS, INSTALLED_INT_TYPE
from neardup_solr.signing.settings import META_DATASET, SETTINGS_DOC_ID
from neardup_solr.solr.queries import dataset_query
from neardup_solr.solr.settings_store import INSTALLED_SETTINGS_FIELD

log = logging.getLogger(__name__)

_BOOLEAN_SIMILARITY = {"class": "solr.BooleanSimilarityFactory"}
# What an earlier install added to a user's schema (tests recreate such an install from these definitions).
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


def legacy_install_fields(client: SolrClient) -> list[str]:
    """The fields an earlier install added to this (user's) collection, [] when there are none: our settings field
    marks such a collection; a collection made from our configset has none of it."""
    fields = client.schema_fields()
    if INSTALLED_SETTINGS_FIELD not in fields:
        return []
    return [name for name in ALL_OUR_FIELDS if name in fields and fields[name].get("type", "").startswith("neardup_")]


@dataclass
class LegacyUninstallSummary:
    """What :func:`uninstall_legacy` removed."""

    url: str
    documents_cleaned: int
    our_documents: int
    fields: list[str]
    field_types: list[str]

    def format(self) -> str:
        return (f"removed the near-duplicate fields of an earlier install from {self.url}: our fields' values from "
                f"{self.documents_cleaned} document(s), {self.our_documents} document(s) of ours (settings), fields "
                f"{', '.join(self.fields) or 'none'}, field types {', '.join(self.field_types) or 'none'}; your "
                "fields and documents are as they were ('neardup-solr install' now makes a companion beside them)")


def uninstall_legacy(client: SolrClient, *, batch_size: int = 500) -> LegacyUninstallSummary:
    """Remove what an earlier install added inside the user's collection: our values from every document (the only
    way to take them out of documents that hold them: atomic updates at each document's version, so a concurrent
    update of the user's is kept), our documents, then our fields and field types."""
    fields = client.schema_fields()
    ours = legacy_install_fields(client)
    if not ours:
        raise InstallRefused(f"{client.url} has no near-duplicate fields of an earlier install; nothing was changed")
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
    schema_change(client, commands, "remove near-duplicate fields from")
    client.text_field = "content"
    return LegacyUninstallSummary(client.url, cleaned, meta, ours, types)


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


__all__ = ["legacy_install_fields", "uninstall_legacy", "LegacyUninstallSummary", "check_atomic_updates",
           "require_atomic_updates", "AtomicUpdateCheck", "FIELD_TYPES", "ALL_OUR_FIELDS"]
