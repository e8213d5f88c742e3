"""The record fields of a collection of field records, and its trained matching model, stored in the collection.

One document (the reserved id ``RECORD_MODEL_DOC_ID``, the ``__meta__`` data set, so no lookup, count or report
sees it, like the settings document) holds, as JSON in ``content``:

- ``fields``: the columns the records were indexed with and their kinds (``name:name,born:date,...``). The
  candidate tokens of the indexed records were made with them, so a lookup makes a new record's tokens with
  them too, and records indexed later must have the same ones;
- ``model``: the trained Fellegi-Sunter model (:mod:`neardup_solr.pairs.fellegi_sunter`), or none before the
  first training;
- ``revision``: 0 before the first training, one more at every training stored, so a long-lived matcher can
  tell that the model changed (:func:`stored_revision`); ``trained_at`` and ``trained_on`` (records) say when
  and on what.

Every write is conditional on the version of the document read just before (Solr's optimistic concurrency,
``_version_``): two trainings stored at once cannot both win with the same revision; the loser is told.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from neardup_solr.errors import InputFormatError, RecordModelError, SettingsConflictError
from neardup_solr.pairs.comparisons import FieldComparison
from neardup_solr.pairs.fellegi_sunter import FellegiSunterModel
from neardup_solr.signing.settings import META_DATASET, RECORD_MODEL_DOC_ID
from neardup_solr.solr.collection import SolrCollection

if TYPE_CHECKING:
    from neardup_solr.solr.client import SolrClient

log = logging.getLogger(__name__)

RECORDS_FORMAT = "neardup-solr field records"
TRAIN_COMMAND = "neardup-solr train-records"


def fields_spec(comparisons: Sequence[FieldComparison]) -> str:
    """``name:name,born:date``: the ``--fields-from`` spelling of comparisons."""
    return ",".join(f"{c.field}:{c.kind}" for c in comparisons)


@dataclass
class StoredRecords:
    """What the collection stores about its field records: the indexed ``fields``, the ``model`` (None before
    the first training) and its ``revision``, when it was trained and on how many records; ``version`` is
    Solr's version of the document (for the next conditional write)."""

    fields: list[FieldComparison]
    model: FellegiSunterModel | None
    revision: int
    trained_at: str | None = None
    trained_on: int | None = None
    version: int = -1

    def require_model(self, url: str) -> FellegiSunterModel:
        """The model, or :class:`~neardup_solr.errors.RecordModelError` saying to train one."""
        if self.model is None:
            raise RecordModelError(
                f"{url} holds field records ({fields_spec(self.fields)}) but no trained model yet: train one "
                "with neardup_solr.engine.records_online.train_stored_model(client)",
                cli_message=f"{url} holds field records ({fields_spec(self.fields)}) but no trained model yet: "
                            f"run '{TRAIN_COMMAND}'")
        return self.model


def read_stored_records(client: SolrClient, *, unreadable_model_ok: bool = False) -> StoredRecords | None:
    """The collection's record fields and model (None when no field records were ever indexed there). Raises
    :class:`~neardup_solr.errors.RecordModelError` for a model this release cannot read (another format
    version: train again), unless ``unreadable_model_ok`` (training, which replaces it): it then reads as none."""
    docs = client.get_by_ids([RECORD_MODEL_DOC_ID], "id,content,_version_")
    if not docs:
        return None
    try:
        data = json.loads(docs[0].get("content") or "")
        if not isinstance(data, dict) or data.get("format") != RECORDS_FORMAT:
            raise InputFormatError(f"not a {RECORDS_FORMAT} document")
        fields = [FieldComparison(f["field"], f["kind"]) for f in data["fields"]]
        revision = int(data.get("revision", 0))
    except (ValueError, KeyError, TypeError) as exc:  # InputFormatError is a ValueError
        raise RecordModelError(
            f"the record fields stored in {client.url} cannot be read ({exc}); index the records again into an "
            "empty collection", cli_message=f"the record fields stored in {client.url} cannot be read ({exc}); "
                                            "index the records again with index-records --clear-all") from None
    try:
        model = FellegiSunterModel.from_dict(data["model"]) if data.get("model") is not None else None
    except (ValueError, KeyError, TypeError) as exc:
        if not unreadable_model_ok:
            raise RecordModelError(
                f"the record model stored in {client.url} cannot be read ({exc}); train it again with "
                "train_stored_model(client)", cli_message=f"the record model stored in {client.url} cannot be read "
                                                          f"({exc}); run '{TRAIN_COMMAND}'") from None
        log.warning("%s: the stored record model cannot be read (%s); it is replaced", client.url, exc)
        model = None
    return StoredRecords(fields, model, revision, data.get("trained_at"), data.get("trained_on"),
                         int(docs[0].get("_version_", -1)))


def stored_revision(client: SolrClient) -> int | None:
    """The revision of the stored model (None: no field records): one real-time get of a small document."""
    stored = read_stored_records(client)
    return None if stored is None else stored.revision


def _document(fields: Sequence[FieldComparison], model: FellegiSunterModel | None, revision: int,
              trained_at: str | None, trained_on: int | None) -> dict:
    body = {"format": RECORDS_FORMAT, "fields": [{"field": c.field, "kind": c.kind} for c in fields],
            "revision": revision, "trained_at": trained_at, "trained_on": trained_on,
            "model": model.to_dict() if model is not None else None}
    return {"id": RECORD_MODEL_DOC_ID, "dataset": META_DATASET, "content": json.dumps(body)}


def _write(client: SolrClient, doc: dict, version: int, what: str) -> None:
    if not SolrCollection(client).create(doc, version):
        raise SettingsConflictError(
            f"the record fields and model stored in {client.url} changed while {what} (another process wrote "
            "them): read them again and retry")
    client.commit()


def store_record_fields(client: SolrClient, fields: Sequence[FieldComparison], *,
                        replace: bool = False) -> StoredRecords:
    """Record that the collection's field records are indexed with ``fields``. Refused
    (:class:`~neardup_solr.errors.SettingsConflictError`) when other fields are stored, unless ``replace`` (the
    collection holds none of the records indexed with them), which also drops the model trained on them."""
    stored = read_stored_records(client, unreadable_model_ok=True)
    wanted = [(c.field, c.kind) for c in fields]
    if stored is not None and [(c.field, c.kind) for c in stored.fields] == wanted:
        return stored
    if stored is not None and not replace:
        why = (f"the records in {client.url} were indexed with the fields {fields_spec(stored.fields)}; indexing "
               f"others with {fields_spec(fields)} would mix candidate tokens made two ways")
        raise SettingsConflictError(f"{why}: use the same fields, or clear the collection first",
                                    cli_message=f"{why}: use --fields-from {fields_spec(stored.fields)}, or "
                                                "--clear-all")
    _write(client, _document(fields, None, 0, None, None), -1 if stored is None else stored.version,
           "storing the record fields")
    log.info("%s: field records indexed with %s", client.url, fields_spec(fields))
    stored = read_stored_records(client)
    assert stored is not None
    return stored


def store_record_model(client: SolrClient, model: FellegiSunterModel, *, trained_at: str, trained_on: int,
                       expected: StoredRecords) -> StoredRecords:
    """Store ``model`` as the next revision after ``expected`` (what was read before training). Refused with
    :class:`~neardup_solr.errors.RecordModelError` when the model compares a column the records were not indexed
    with, and with :class:`~neardup_solr.errors.SettingsConflictError` when another process stored a model (or
    other fields) since ``expected`` was read."""
    check_fields_fit(model.comparisons, expected.fields, client.url)
    _write(client, _document(expected.fields, model, expected.revision + 1, trained_at, trained_on),
           expected.version, "training")
    stored = read_stored_records(client)
    assert stored is not None
    log.info("%s: record model revision %d stored (trained on %d records)", client.url, stored.revision, trained_on)
    return stored


def check_fields_fit(compared: Sequence[FieldComparison], indexed: Sequence[FieldComparison], url: str) -> None:
    """Refuse a model (its comparisons) that compares a column the records were not indexed with."""
    columns = {c.field for c in indexed}
    unknown = [c.field for c in compared if c.field not in columns]
    if unknown:
        raise RecordModelError(
            f"the model compares {', '.join(map(repr, unknown))}, which the records in {url} do not have (they "
            f"were indexed with {fields_spec(indexed)}): train a model on these records",
            cli_message=f"the model compares {', '.join(map(repr, unknown))}, which the records in {url} do not "
                        f"have (they were indexed with {fields_spec(indexed)}): run '{TRAIN_COMMAND}'")
