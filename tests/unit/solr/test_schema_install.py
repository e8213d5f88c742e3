"""The pure parts of near-duplicate detection on a user's own collection: how the client reads the user's text
field as ``content``, the settings document ``install`` writes, and what an atomic update of ours may set."""

from __future__ import annotations

import json

from neardup_solr.engine.backfill import written_fields
from neardup_solr.solr.atomic import set_update
from neardup_solr.solr.client import SolrClient
from neardup_solr.signing.builder import DocumentBuilder
from neardup_solr.signing.settings import SETTINGS_DOC_ID, IndexSettings
from neardup_solr.solr.settings_store import INSTALLED_SETTINGS_FIELD
from neardup_solr.solr.schema_install import ALL_OUR_FIELDS, installed_settings_document


def test_the_client_reads_the_users_text_field_as_content():
    client = SolrClient("http://127.0.0.1:1/solr/articles")
    assert client._text_fl("id,content,md5_hash") == "id,content,md5_hash"  # our own collections: unchanged
    client.text_field = "body"
    assert client._text_fl("id,content,md5_hash") == "id,content:body,md5_hash"
    assert client._text_fl("id, content") == "id,content:body"
    assert client._text_fl("*") == "*,content:body"
    assert client._text_fl("id,minhash_sig") == "id,minhash_sig"
    assert client._aliased([("q", "*:*"), ("fl", "id,content")]) == [("q", "*:*"), ("fl", "id,content:body")]
    assert client._aliased({"fl": "content", "rows": 3}) == [("fl", "content:body"), ("rows", 3)]


def test_the_installed_settings_document_names_the_text_field_and_reads_back_as_the_settings():
    settings = IndexSettings(ngram=4, fields=("lsh",))
    doc = installed_settings_document(settings, "body")
    assert doc["id"] == SETTINGS_DOC_ID and set(doc) == {"id", "dataset", INSTALLED_SETTINGS_FIELD}
    stored = json.loads(doc[INSTALLED_SETTINGS_FIELD])
    assert stored["text_field"] == "body"
    assert IndexSettings.from_json(doc[INSTALLED_SETTINGS_FIELD]) == settings


def test_an_update_of_ours_sets_only_our_fields_at_the_version_read():
    built = DocumentBuilder(IndexSettings()).build([("a1", "the quick brown fox jumps over the lazy dog")])
    fields = written_fields(built.documents[0])
    assert "content" not in fields and "id" not in fields and "dataset" not in fields
    assert set(fields) <= set(ALL_OUR_FIELDS)
    update = set_update("a1", 17, fields)
    assert update["id"] == "a1" and update["_version_"] == 17
    assert all(update[name] == {"set": value} for name, value in fields.items())
    assert set_update("a1", 5, {"md5_hash": None})["md5_hash"] == {"set": None}
