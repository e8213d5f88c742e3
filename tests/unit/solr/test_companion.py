"""The pure parts of near-duplicate detection on a user's own collection: the companion's link (the text of a
document from its fields, the link's round trip), the text fields install accepts and refuses, how the client reads
an earlier install's text field as ``content``, and what an atomic update of ours may set (sync on a collection of
ours)."""

from __future__ import annotations

import json
import re

from neardup_solr.engine.backfill import written_fields
from neardup_solr.solr.selection import field_update
from neardup_solr.solr.client import SolrClient
from neardup_solr.signing.builder import DocumentBuilder
import pytest

from neardup_solr.signing.settings import IndexSettings
from neardup_solr.solr.companion import (
    InstallRefused,
    PageSizing,
    SourceLink,
    SourceSchema,
    check_text_fields,
    fetch_by_key,
    source_pages,
    source_pages_by_key,
    text_chars,
)
from neardup_solr.solr.schema_install import ALL_OUR_FIELDS


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
    # (An earlier install's collection: lookups there still read the text field its settings name.)


def test_a_documents_text_is_its_text_fields_values_joined_in_order():
    link = SourceLink("articles", "http://h/solr/articles", "key", ("title", "body", "tags"))
    doc = {"key": "k1", "title": "A title", "body": "The body.", "tags": ["one", "two"], "other": "not text"}
    assert link.text_of(doc) == "A title\nThe body.\none\ntwo"
    assert link.text_of({"key": "k2", "tags": ["only"]}) == "only"
    assert link.text_of({"key": "k3"}) == ""
    assert link.read_fields == "key,title,body,tags"
    assert SourceLink("a", "u", "body", ("body",)).read_fields == "body"
    assert SourceLink.from_json(link.to_json()) == link
    assert json.loads(link.to_json())["key_field"] == "key"


def _schema() -> SourceSchema:
    fields = {"id": {"name": "id", "type": "string", "stored": True},
              "body": {"name": "body", "type": "text_general", "stored": True, "multiValued": True},
              "hidden": {"name": "hidden", "type": "text_general", "stored": False, "docValues": False},
              "when": {"name": "when", "type": "pdate", "stored": True},
              "vec": {"name": "vec", "type": "knn_vector", "stored": True},
              "_version_": {"name": "_version_", "type": "plong", "stored": False, "docValues": True}}
    dynamic = [{"name": "*_t", "type": "text_general", "stored": True},
               {"name": "*_txt_en", "type": "text_general", "stored": False},
               {"name": "attr_*", "type": "text_general", "stored": True}]
    classes = {"string": "solr.StrField", "text_general": "solr.TextField", "pdate": "solr.DatePointField",
               "knn_vector": "solr.DenseVectorField", "plong": "solr.LongPointField"}
    return SourceSchema("id", fields, dynamic, classes, managed=True)


def test_install_takes_text_string_and_dynamic_fields_and_names_why_it_refuses_others():
    schema = _schema()
    check_text_fields(schema, ["body", "series_t", "attr_x"], "U")  # multi-valued and dynamic fields are text
    assert schema.field("series_t")["dynamic"] == "*_t"
    # The longest pattern wins, as in Solr: *_txt_en (not stored) over *_t.
    assert schema.field("a_txt_en")["dynamic"] == "*_txt_en"
    refusals = {"when": "'pdate' (solr.DatePointField)", "vec": "solr.DenseVectorField",
                "hidden": "neither stored nor docValues", "a_txt_en": "neither stored nor docValues",
                "nosuch": "no field 'nosuch'", "id": "the unique key", "_version_": "a field of Solr",
                "a,b": "not a plain field name"}
    for name, why in refusals.items():
        with pytest.raises(InstallRefused, match=re.escape(why)):
            check_text_fields(schema, [name], "U")
    with pytest.raises(InstallRefused, match="names no field"):
        check_text_fields(schema, [], "U")


def test_an_update_of_ours_sets_only_our_fields_at_the_version_read():
    built = DocumentBuilder(IndexSettings()).build([("a1", "the quick brown fox jumps over the lazy dog")])
    fields = written_fields(built.documents[0])
    assert "content" not in fields and "id" not in fields and "dataset" not in fields
    assert set(fields) <= set(ALL_OUR_FIELDS)
    update = field_update("a1", 17, fields)
    assert update["id"] == "a1" and update["_version_"] == 17
    assert all(update[name] == {"set": value} for name, value in fields.items())
    assert field_update("a1", 5, {"md5_hash": None})["md5_hash"] == {"set": None}


def test_page_sizing_follows_the_documents_size_within_its_bounds():
    sizing = PageSizing(first=2_000, least=500, most=20_000, chars=8_000_000)
    assert sizing.after(0, 0) == 2_000  # nothing read yet
    assert sizing.after(2_000, 2_000 * 900) == 8_888  # documents of ~900 characters: ~8M characters a page
    assert sizing.after(2_000, 2_000 * 100_000) == 500  # long documents: never below the least
    assert sizing.after(2_000, 2_000 * 20) == 20_000  # short records: never above the most
    assert sizing.after(10, 0) == 20_000  # documents with no text at all do not divide by zero


def test_text_chars_counts_the_string_values_single_and_multi_valued():
    docs = [{"id": "a1", "body": "abc", "tags": ["de", "f", 7], "views": 3}, {"id": "b", "body": None}]
    assert text_chars(docs) == 2 + 3 + 3 + 1
    assert text_chars([]) == 0


class _CursorFake:
    """Answers /select as a cursor over ``docs`` (sorted by key), recording the rows each request asked for."""

    def __init__(self, docs):
        self.docs, self.rows_asked = docs, []

    def select(self, params):
        p = dict(params)
        start = 0 if p["cursorMark"] == "*" else int(p["cursorMark"])
        rows = int(p["rows"])
        self.rows_asked.append(rows)
        page = self.docs[start:start + rows]
        return {"response": {"docs": page}, "nextCursorMark": str(start + len(page))}


def test_source_pages_sizes_each_page_from_the_documents_read_before_it():
    docs = [{"key": f"k{i:04d}", "body": "x" * 100} for i in range(1_000)]
    fake = _CursorFake(docs)
    link = SourceLink("articles", "http://h/solr/articles", "key", ("body",))
    sizing = PageSizing(first=50, least=10, most=400, chars=20_000)  # 105 characters a document: 190 a page
    pages = list(source_pages(fake, link, sizing=sizing))
    assert [d["key"] for page, _ in pages for d in page] == [d["key"] for d in docs]  # every one, once, in order
    assert fake.rows_asked[:3] == [50, 190, 190]
    assert [len(page) for page, _ in pages] == [50, 190, 190, 190, 190, 190]
    assert pages[-1][1] == "1000"  # the cursor after the last page
    fixed = _CursorFake(docs)
    fixed_pages = source_pages(fixed, link, page_size=300)
    assert [len(page) for page, _ in fixed_pages] == [300, 300, 300, 100]


class _KeyFirstFake:
    """Answers /select as Solr would the key-first read: a cursor over the key alone (fl=key, honouring a
    ``key_after`` filter), and fetches by a terms query (``nd.ids`` split on ``nd.sep``) or a term query
    (``nd.key``). Records each request's kind and size; ``deleted`` keys are gone by the time they are fetched."""

    cursor_pages = SolrClient.cursor_pages  # the client's own paging, over this select

    def __init__(self, docs, deleted=()):
        self.docs, self.deleted, self.requests = docs, set(deleted), []

    def select(self, params):
        p = dict(params)
        if "cursorMark" in p:
            keys = [d["key"] for d in self.docs if "nd.after" not in p or d["key"] > p["nd.after"]]
            start = 0 if p["cursorMark"] == "*" else int(p["cursorMark"])
            page = [{"key": k} for k in keys[start:start + int(p["rows"])]]
            self.requests.append(("keys", len(page)))
            return {"response": {"docs": page}, "nextCursorMark": str(start + len(page))}
        wanted = p["nd.ids"].split(p["nd.sep"]) if "nd.ids" in p else [p["nd.key"]]
        assert p["nd.keyf"] == "key" and int(p["rows"]) >= len(wanted)
        found = [d for d in reversed(self.docs) if d["key"] in wanted and d["key"] not in self.deleted]
        self.requests.append(("fetch", len(wanted)))
        return {"response": {"docs": found}}


def test_source_pages_by_key_reads_the_keys_then_the_documents_by_key_in_key_order():
    docs = [{"key": f"k{i:04d}", "body": "x" * 100} for i in range(1_000)]
    fake = _KeyFirstFake(docs, deleted={"k0003"})
    link = SourceLink("articles", "http://h/solr/articles", "key", ("body",))
    sizing = PageSizing(first=50, least=10, most=400, chars=20_000)
    pages = list(source_pages_by_key(fake, link, sizing=sizing, key_page=300))
    assert [d["key"] for page, _ in pages for d in page] == [d["key"] for d in docs if d["key"] != "k0003"]
    assert [last for _, last in pages][:2] == ["k0049", "k0239"]  # each page's last key, where a resume starts
    assert [kind for kind, _ in fake.requests].count("keys") == 4  # 300 + 300 + 300 + 100 keys: a short page ends it
    assert max(n for kind, n in fake.requests if kind == "fetch") <= 190  # fetches sized like cursor pages
    resumed = _KeyFirstFake(docs)
    after = list(source_pages_by_key(resumed, link, sizing=sizing, after_key="k0899", key_page=300))
    assert [d["key"] for page, _ in after for d in page] == [f"k{i:04d}" for i in range(900, 1_000)]


def test_fetch_by_key_splits_a_list_whose_keys_hold_every_separator():
    separators = "\u001f\u001e\n\t,"
    docs = [{"key": f"a{separators[i]}b", "body": "t"} for i in range(5)] + [{"key": "plain", "body": "t"}]
    fake = _KeyFirstFake(docs)
    link = SourceLink("articles", "http://h/solr/articles", "key", ("body",))
    keys = [d["key"] for d in docs]
    assert [d["key"] for d in fetch_by_key(fake, link, keys)] == keys
    assert all(kind == "fetch" for kind, _ in fake.requests) and len(fake.requests) > 1
