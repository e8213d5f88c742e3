"""A collection's settings, stored in the collection itself: read, written once into an empty collection (and
refused when another run would mix settings), repaired when an older version stored invalid ones.
"""

from __future__ import annotations

import base64
import json
import logging
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from neardup_solr.errors import ParameterTypeError, SettingsConflictError, StoredSettingsError, ForeignCollectionError
from neardup_solr.signing.builder import DocumentBuilder
from neardup_solr.signing.settings import META_DATASET, SETTINGS_DOC_ID, IndexSettings, unicode_mismatch
from neardup_solr.solr.collection import SolrCollection
from neardup_solr.solr.queries import USER_DOCUMENTS, select_params
from neardup_solr.text import LATEST_NORMALIZER_VERSION
from neardup_solr.validation import check_int
from neardup_solr.solr.companion_link import companion_problem, read_link

if TYPE_CHECKING:
    from neardup_solr.solr.client import SolrClient

log = logging.getLogger("neardup_solr.solr.documents")  # where these warnings were logged before the move

# In a user's own collection prepared by ``install`` (neardup_solr.solr.schema_install) the settings JSON is kept in
# a field of its own (the user may have a "content" of theirs), with one key more, "text_field": the user's field
# the text is read from. read_index_settings tells the client, which then reads that field wherever "content" is
# asked for (SolrClient.text_field).
INSTALLED_SETTINGS_FIELD = "neardup_settings"


def settings_document(settings: IndexSettings) -> dict:
    """The Solr document that stores ``settings`` in the collection."""
    return {"id": SETTINGS_DOC_ID, "dataset": META_DATASET, "content": settings.to_json()}


def holds_no_documents(client: SolrClient) -> bool:
    """Whether the collection holds none of the user's documents (the settings and other records aside)."""
    return SolrCollection(client).count() == 0


def _stored_settings_json(client: SolrClient) -> str | None:
    docs = client.get_by_ids([SETTINGS_DOC_ID], f"content,{INSTALLED_SETTINGS_FIELD}")
    return _settings_text(docs[0]) if docs else None


def _settings_text(doc: dict) -> str | None:
    """The settings JSON of the settings document: ``content`` in our collections, INSTALLED_SETTINGS_FIELD in one
    prepared by ``install``."""
    return doc.get(INSTALLED_SETTINGS_FIELD) or doc.get("content")


def _use_text_field(client: SolrClient, text: str | None) -> None:
    """Point the client at the user's text field when the settings were stored by ``install``."""
    try:
        field_name = json.loads(text or "{}").get("text_field")
    except (ValueError, AttributeError):
        return
    if isinstance(field_name, str) and field_name:
        client.text_field = field_name


def _no_neardup_fields(client: SolrClient) -> None:
    """Raise ForeignCollectionError, naming ``install``, when the schema has none of our fields (Solr would
    otherwise answer the first query with a bare "undefined field")."""

    if "minhash_sig" not in client.schema_fields():
        installed = companion_problem(client)
        if installed:
            raise ForeignCollectionError(installed)
        raise ForeignCollectionError(
            f"{client.url} is not a neardup collection and has no companion yet: make one with 'neardup-solr "
            f"install --solr-url {client.url} --text-field FIELD' (FIELD: your field with the text; nothing of "
            "yours is changed), then sign what is there with 'neardup-solr backfill'")


def _settings_problem(text: str | None) -> str:
    """Why a stored settings JSON is not valid settings ('' when it is)."""
    if text is None:
        return "the settings document has no content"
    try:
        IndexSettings.from_json(text)
    except (ValueError, TypeError) as exc:  # broken JSON, or a value IndexSettings refuses
        return str(exc)
    return ""


def read_index_settings(client: SolrClient) -> IndexSettings | None:
    """The settings stored in the collection, or None when none are stored.

    Raises :class:`~neardup_solr.errors.StoredSettingsError` when the stored document is invalid (an older
    version stored what it did not check); :func:`repair_index_settings` replaces it."""
    docs = client.get_by_ids([SETTINGS_DOC_ID], f"content,{INSTALLED_SETTINGS_FIELD}")
    if not docs:
        _no_neardup_fields(client)
        return None
    text = _settings_text(docs[0])
    _use_text_field(client, text)
    problem = _settings_problem(text)
    if problem:
        why = f"the settings stored in {client.url} are invalid ({problem})"
        raise StoredSettingsError(
            f"{why}; replace them with neardup_solr.repair_index_settings(client), which checks the indexed "
            "documents first, or clear the collection",
            cli_message=f"{why}; run 'neardup-solr settings --repair', which checks the indexed documents first",
            url=client.url, problem=problem)
    assert text is not None
    settings = IndexSettings.from_json(text)
    _warn_unicode_mismatch(client.url, settings)
    return settings


def ensure_index_settings(client: SolrClient, settings: IndexSettings | None, *,
                          allow_unicode_mismatch: bool | None = None) -> IndexSettings:
    """The settings the collection was indexed with; writes ``settings`` (or defaults) into an empty collection
    and refuses to mix documents indexed with different settings.

    The Unicode version is part of it: settings stored before it was recorded get this Python's (normaliser
    versions 1 and 2 read the interpreter's Unicode data), and a collection recorded with another Unicode version
    than this Python's is refused with :class:`~neardup_solr.errors.SettingsConflictError` unless
    ``allow_unicode_mismatch`` (None: the environment variable ``NEARDUP_SOLR_ALLOW_UNICODE_MISMATCH=1``)."""
    if settings is not None and not isinstance(settings, IndexSettings):
        raise ParameterTypeError("settings", "an IndexSettings or None", settings)
    _refuse_a_companion(client)
    try:
        stored = read_index_settings(client)
    except StoredSettingsError:
        if not holds_no_documents(client):
            raise
        # Nothing was indexed with the broken settings (the usual case: the run that stored them failed on
        # them), so nothing can be mixed up by replacing them.
        log.warning("replacing the invalid settings stored in %s: the collection holds no documents", client.url)
        stored = None
    if stored is None or (settings is not None and settings != stored and holds_no_documents(client)):
        # An emptied collection (every data set cleared) takes new settings: no signature can be mixed up.
        # The collection's Unicode is the one its first writer signs with, whatever settings it was handed
        # (settings copied from another collection carry that one's).
        chosen = (settings or IndexSettings()).signed_here()
        client.add([settings_document(chosen)])
        return chosen
    if settings is not None and settings.normalizer() != stored.normalizer():
        why = (f"this collection was indexed with {stored.normalizer()}; indexing with {settings.normalizer()} "
               "would mix two normal forms in one index, so copies would be missed. Re-index everything with the "
               "new normaliser")
        raise SettingsConflictError(
            f"{why} (clear the collection with neardup_solr.solr.maintenance.clear(client, everything=True), then "
            f"index all of it), or index with IndexSettings(normalizer_version={stored.normalizer_version}, ...).",
            cli_message=f"{why} (index FILE --clear-all), or keep this one with --normalizer-version "
                        f"{stored.normalizer_version}.")
    if settings is not None and settings != stored:
        differ = [name for name, f in IndexSettings.__dataclass_fields__.items()
                  if f.compare and getattr(settings, name) != getattr(stored, name)]
        why = (f"this collection was indexed with {stored}; indexing with {settings} would mix incompatible "
               f"shingles/signatures (they differ in {', '.join(differ)}). Use the same settings, or empty the "
               "collection first")
        keep = ", ".join(f"{name}={getattr(stored, name)!r}" for name in differ)
        flags = " ".join(_flag_for(name, getattr(stored, name)) for name in differ)
        raise SettingsConflictError(
            f"{why} (neardup_solr.solr.maintenance.clear(client, everything=True)), or give {keep}.",
            cli_message=f"{why} (index --clear-all), or keep this collection's with {flags} (or no settings "
                        "flags at all: the collection's own are used).")
    stored = _checked_unicode(client, stored, allow_unicode_mismatch)
    if stored.normalizer_version < LATEST_NORMALIZER_VERSION:
        log.warning("%s was indexed with normaliser version %d and keeps using it; version %d also matches copies "
                    "that differ by Unicode form (NFD accents, ligatures, soft hyphens, full-width digits): to "
                    "use it, re-index everything (neardup-solr index FILE --clear-all)", client.url,
                    stored.normalizer_version, LATEST_NORMALIZER_VERSION)
    return stored


def _refuse_a_companion(client: SolrClient) -> None:
    """A companion mirrors a collection of the user's: what is written into it by anything but backfill and sync
    would be deleted again by sync's next reconciling pass, so it is refused."""

    link = read_link(client)
    if link is not None:
        raise ForeignCollectionError(
            f"{client.url} is the companion of {link.url}: it holds what 'neardup-solr backfill' and 'sync' read "
            "from there, and takes no other documents. Add documents to your collection (sync signs them), or "
            "index into a collection of ours ('neardup-solr solr create-collection', or the default core)")


# Set to 1 to write into a collection recorded with another Unicode version than this Python's (normaliser
# versions 1 and 2 only): what allow_unicode_mismatch=True does for ensure_index_settings.
ALLOW_UNICODE_MISMATCH_ENV = "NEARDUP_SOLR_ALLOW_UNICODE_MISMATCH"
_UNICODE_WARNED: set[tuple[str, str, str]] = set()


def _warn_unicode_mismatch(url: str, settings: IndexSettings) -> None:
    """Lookups go on, but say once per collection and version pair that they may miss copies."""
    why = unicode_mismatch(settings)
    key = (url, str(settings.unicode_version), settings.normalizer().unicode_version)
    if why and key not in _UNICODE_WARNED:
        _UNICODE_WARNED.add(key)
        log.warning("%s: %s", url, why)


def _checked_unicode(client: SolrClient, stored: IndexSettings, allow: bool | None) -> IndexSettings:
    """``stored`` with its Unicode version recorded (this Python's when none was); refuses a writer whose Unicode
    differs from the recorded one unless allowed."""
    if not stored.unicode_version:
        stored = stored.signed_here()
        client.add([settings_document(stored)])
        log.info("%s: recorded Unicode %s (this Python's) as the collection's, for normaliser version %d",
                 client.url, stored.unicode_version, stored.normalizer_version)
        return stored
    why = unicode_mismatch(stored)
    if not why:
        return stored
    if allow is None:
        allow = os.environ.get(ALLOW_UNICODE_MISMATCH_ENV, "") == "1"
    if allow:
        log.warning("%s: writing anyway (allowed): %s", client.url, why)
        return stored
    raise SettingsConflictError(
        f"{client.url}: {why}. To write all the same, pass allow_unicode_mismatch=True (or set "
        f"{ALLOW_UNICODE_MISMATCH_ENV}=1).",
        cli_message=f"{client.url}: {why}. To write all the same, set {ALLOW_UNICODE_MISMATCH_ENV}=1.")


# IndexSettings fields `index` has a flag for (the rest, such as seed, are set in Python only).
_FLAGGED_SETTINGS = frozenset({"ngram", "unit", "num_hashes", "lsh_threshold", "bands", "rows", "sample_mod", "fields",
                               "shingle_tokens", "normalizer_version", "fold_diacritics", "fold_digits"})


def _flag_for(name: str, value: object) -> str:
    """The command-line flag that asks for ``name=value`` (IndexSettings' names, as the CLI spells them)."""
    if name not in _FLAGGED_SETTINGS:
        return f"({name}={value!r}: Python only)"
    flag = "--rows-per-band" if name == "rows" else "--" + name.replace("_", "-")
    if isinstance(value, bool):
        return flag if value else ""
    if isinstance(value, tuple):
        value = ",".join(value)
    return f"{flag} {value}"


@dataclass
class SettingsRepair:
    """What :func:`repair_index_settings` did: ``action`` is ``"none"`` (the stored settings are valid, or none
    are stored), ``"removed"`` (an invalid document removed from an empty collection) or ``"replaced"``;
    ``settings`` the settings now stored (None when none are), ``checked`` how many indexed documents were
    re-signed to confirm them, ``message`` one line saying so."""

    action: str
    settings: IndexSettings | None
    checked: int
    message: str


def _salvaged_settings(text: str | None, signature_length: int | None,
                       normalizer_version: int = 1) -> IndexSettings:
    """The stored values that are valid on their own, the signature length the documents show, and defaults for
    the rest; ``normalizer_version`` when none is stored."""
    try:
        data = json.loads(text or "{}")
    except ValueError:
        data = {}
    if not isinstance(data, dict):
        data = {}
    kept: dict = {} if "normalizer_version" in data else {"normalizer_version": normalizer_version}
    if "shingle_tokens" not in data:
        kept["shingle_tokens"] = "text"
    for name in IndexSettings.__dataclass_fields__:
        if name in data:
            value = data[name]
            if name == "fields" and isinstance(value, list):
                value = tuple(value)
            try:
                IndexSettings(**{**kept, name: value})
            except (ValueError, TypeError):
                continue
            kept[name] = value
    if signature_length is not None:
        kept["num_hashes"] = signature_length
        bands, rows = kept.get("bands"), kept.get("rows")
        if bands is not None and rows is not None and bands * rows > signature_length:
            kept.pop("bands"), kept.pop("rows")
    try:
        return IndexSettings(**kept)
    except (ValueError, TypeError):
        return IndexSettings(num_hashes=signature_length or IndexSettings.num_hashes)


def repair_index_settings(client: SolrClient, settings: IndexSettings | None = None, *,
                          sample: int = 50) -> SettingsRepair:
    """Replace an invalid settings document stored in the collection; leave valid ones alone.

    The replacement is ``settings`` when given, else the stored values that are valid, the signature length
    the indexed documents show, and defaults for the rest. When the collection holds documents, up to
    ``sample`` of them are signed again with the replacement, and it is stored only if every one's MinHash
    signature (and LSH band keys, when indexed) comes out the same: settings that do not match the index would
    make every later lookup quietly wrong. Otherwise :class:`~neardup_solr.errors.StoredSettingsError` says so
    and nothing is changed; give the settings the documents were indexed with, or clear the collection. In an
    empty collection an invalid document is simply removed (the next index run stores its own settings)
    unless ``settings`` is given."""
    if settings is not None and not isinstance(settings, IndexSettings):
        raise ParameterTypeError("settings", "an IndexSettings or None", settings)
    sample = check_int("sample", sample, minimum=1, maximum=100_000)
    text = _stored_settings_json(client)
    problem = _settings_problem(text) if client.get_by_ids([SETTINGS_DOC_ID], "id") else ""
    if not problem:
        stored = read_index_settings(client)
        what = f"the settings stored in {client.url} are valid" if stored else f"no settings are stored in {client.url}"
        if settings is not None and stored is not None and settings != stored:
            what += f" (and differ from the ones given: {stored}); nothing was changed"
        return SettingsRepair("none", stored, 0, f"{what}; nothing to repair")
    docs = client.select(select_params([USER_DOCUMENTS], rows=sample, sort="id asc",
                                       fields="id,content,minhash_sig,content_lsh"))["response"]["docs"]
    if not docs:
        if settings is None:
            client.delete_ids([SETTINGS_DOC_ID])
            client.commit()
            return SettingsRepair("removed", None, 0,
                                  f"removed the invalid settings from {client.url} ({problem}); it holds no "
                                  "documents, so the next index run stores its own settings")
        client.add([settings_document(settings)])
        client.commit()
        return SettingsRepair("replaced", settings, 0, f"replaced the invalid settings in {client.url} "
                                                        f"({problem}) with {settings}")
    lengths = {len(base64.b64decode(d["minhash_sig"])) // 4 for d in docs if d.get("minhash_sig")}
    length = lengths.pop() if len(lengths) == 1 else None
    candidate = settings or _salvaged_settings(text, length, LATEST_NORMALIZER_VERSION)
    mismatch = _signing_mismatch(candidate, docs)
    if mismatch and settings is None and candidate.normalizer_version != 1:
        # No version stored, and the latest does not re-sign the documents: they may predate version 2.
        older = _salvaged_settings(text, length, 1)
        if not _signing_mismatch(older, docs):
            candidate, mismatch = older, ""
    if mismatch:
        why = (f"cannot repair the settings stored in {client.url} ({problem}): the indexed documents were not "
               f"signed with {candidate} ({mismatch}). Give the settings they were indexed with")
        raise StoredSettingsError(
            f"{why} (repair_index_settings(client, IndexSettings(...))), or clear the collection and index again",
            cli_message=f"{why} ('neardup-solr settings --repair --ngram N --num-hashes K ...'), or index again "
                        "with --clear-all",
            url=client.url, problem=problem)
    client.add([settings_document(candidate)])
    client.commit()
    return SettingsRepair("replaced", candidate, len(docs),
                          f"replaced the invalid settings in {client.url} ({problem}) with {candidate}; "
                          f"{len(docs)} indexed document(s) re-signed with them match")


def _signing_mismatch(settings: IndexSettings, docs: list[dict]) -> str:
    """'' when every document's stored signature (and band keys) is what ``settings`` gives its content."""
    builder = DocumentBuilder(settings)
    built = builder.build([(d["id"], d.get("content", "")) for d in docs])
    by_id = {d["id"]: d for d in built.documents}
    for doc in docs:
        mine = by_id.get(doc["id"])
        if mine is None:
            return f"document {doc['id']!r} cannot be signed"
        if doc.get("minhash_sig") != mine["minhash_sig"]:
            return f"document {doc['id']!r} has another MinHash signature"
        if doc.get("content_lsh") and sorted(doc["content_lsh"]) != sorted(mine.get("content_lsh", [])):
            return f"document {doc['id']!r} has other LSH band keys"
    return ""
