"""The helper that makes users' own collections (tests/user_schemas.py), tested against the real Solr: the
stock-features configset as a core (unique key ``id`` and ``doc_key``) and as a SolrCloud collection, and the
schemas django-haystack, Dovecot (two: dovecot-core's and dovecot-solr's) and CKAN ship in their packages, as
cores. Each kind is created, filled by plain
JSON, pysolr and curl, and its snapshot is the same twice in a row and differs after an atomic update of one
field (the snapshot can fail); the stock features are what they claim (the Config API's ``schemaFactory`` is
null, an unknown string field becomes a multiValued text field, ``price_c`` holds the copy of ``price``).

The package schemas are fetched on first use (PyPI, Debian's archive) and cached; without a network those
tests skip, saying why.
"""

from __future__ import annotations

import json

import pytest
import requests

import user_schemas
from neardup_solr.solr.backends.local import LocalSolr
from user_schemas import UserCollection, snapshot_diff

pytestmark = [pytest.mark.solr]


@pytest.fixture(scope="module")
def standalone(local_solr):
    """The session's single-node local Solr (cores with their own instance directories need one)."""
    if not isinstance(local_solr, LocalSolr):
        pytest.skip("needs the session's single-node local Solr (SOLR_URL or NEARDUP_TEST_BACKEND is set)")
    return local_solr


@pytest.fixture()
def made():
    """The collections a test makes, dropped at its end whatever happens."""
    colls: list[UserCollection] = []
    yield colls
    user_schemas.drop_all(colls)


def _one_word_pairs(docs: list[dict], key_field: str, fields: tuple[str, ...]) -> set[tuple]:
    """The pairs of documents whose text (``fields`` joined) differs in exactly one word."""
    def words(doc):
        out = []
        for field in fields:
            value = doc.get(field, "")
            out += " ".join(value if isinstance(value, list) else [str(value)]).split()
        return out

    pairs = set()
    for i, a in enumerate(docs):
        for b in docs[i + 1:]:
            wa, wb = words(a), words(b)
            if len(wa) == len(wb) and sum(x != y for x, y in zip(wa, wb)) == 1:
                pairs.add((a[key_field], b[key_field]))
    return pairs


def _fill_three_ways(coll: UserCollection, docs: list[dict]) -> None:
    """A third of the documents by plain JSON, a third by pysolr, the rest by the curl binary."""
    third = len(docs) // 3
    coll.post_json(docs[:third])
    coll.post_pysolr(docs[third:2 * third])
    coll.post_curl(docs[2 * third:])


def _check_snapshot(coll: UserCollection, key, field: str, value) -> None:
    """The snapshot is identical twice in a row (pages of different sizes), and differs after an atomic update
    of ``field`` of one document, in that document only."""
    first = coll.snapshot()
    assert first["count"] == coll.count() > 0
    assert len(first["docs_star"]) == len(first["docs_listed"]) == first["count"]
    assert all('"_version_"' not in raw for raw in first["docs_star"].values())
    again = coll.snapshot(rows=3)
    assert snapshot_diff(first, again) == []
    assert again == first

    coll.atomic_set(key, **{field: value})
    after = coll.snapshot()
    diff = snapshot_diff(first, after)
    assert diff, "the snapshot did not see an atomic update"
    shown = json.dumps(key, ensure_ascii=False)
    assert {line.split(" ", 1)[0] for line in diff} == {"docs_star", "docs_listed"}
    assert all(line.startswith(f"docs_star {shown}:") or line.startswith(f"docs_listed {shown}:") for line in diff)
    assert json.loads(after["docs_star"][shown])[field] in (value, [value])


# =====================================================================================================
# The stock features
# =====================================================================================================
def _check_stock_features(coll: UserCollection) -> None:
    key = coll.key_field
    docs = coll.documents()
    assert len(docs) == 20
    assert {("KST-SSD-1T", "KST-SSD-1T-B"), ("a:b", "x y"), ('q"1', "LMN-KB-RED")} <= \
        _one_word_pairs(docs, key, ("name", "features"))
    _fill_three_ways(coll, docs)
    assert coll.count() == 20

    # The schema factory is left implicit (Solr's default, the managed schema): the Config API says null.
    assert coll.config("schemaFactory") == {"schemaFactory": None}
    assert coll.schema()["uniqueKey"] == key

    # Keys that need escaping come back as posted; price_c holds the copy of price (stored, "<price>,USD").
    for doc in docs:
        got = coll.get(doc[key])
        assert got is not None, doc[key]
        assert got["price"] == pytest.approx(float(doc["price"]))
        # The copy keeps the text as posted: "92.50" when the price came as that text, "319.0" from a number.
        assert got["price_c"] == f"{doc['price'] if isinstance(doc['price'], str) else got['price']},USD"
        assert "text" not in got and "notes_idx" not in got
    assert coll.get("x y")["price_c"] == "319.0,USD"

    # The catch-all is searched (not stored); ignored_* takes anything and keeps nothing.
    resp = requests.get(f"{coll.url}/select", params={"q": "gallium", "fl": key, "wt": "json"}, timeout=60)
    assert [d[key] for d in resp.json()["response"]["docs"]] == ["HLC-CHG-65"]
    coll.post_json([{key: "ignored-1", "name": "a thing", "ignored_note": ["kept nowhere", "at all"]}])
    assert "ignored_note" not in coll.get("ignored-1")
    assert coll.schema_field("ignored_note") is None

    # Schemaless: an unknown string field is guessed as a multiValued text_general field (with a *_str copy).
    assert coll.schema_field("summary") is None
    books = user_schemas.default_like_documents(key)
    assert len(_one_word_pairs(books, key, ("summary",))) == 2
    coll.post_json(books)
    summary = coll.schema_field("summary")
    assert summary is not None and summary["type"] == "text_general" and summary["multiValued"] is True
    assert coll.schema_field("pages")["type"] == "plongs"
    assert coll.get("bk-001")["summary"] == [books[0]["summary"]]
    snapshot = coll.snapshot()
    assert "summary_str" in snapshot["fields_listed"] and "summary_str" not in snapshot["docs_star"]['"bk-001"']
    assert "summary_str" in snapshot["docs_listed"]['"bk-001"']

    _check_snapshot(coll, "a:b", "series_t", "Vista II")
    # The atomic update kept the copy: one price_c, still the copy of price.
    assert coll.get("a:b")["price_c"] == "329.0,USD"


@pytest.mark.parametrize("unique_key", ["id", "doc_key"])
def test_stock_features_core(standalone, made, unique_key):
    coll = user_schemas.create_stock_features(standalone, unique_key=unique_key)
    made.append(coll)
    assert (coll.cloud, coll.key_field, coll.base_url) == (False, unique_key, standalone.base_url)
    assert coll.url == f"{standalone.base_url}/{coll.name}"
    _check_stock_features(coll)


@pytest.mark.slow
def test_stock_features_cloud(shared_cloud, made):
    coll = user_schemas.create_stock_features_cloud(shared_cloud, unique_key="doc_key", shards=2)
    made.append(coll)
    assert coll.cloud and coll.key_field == "doc_key" and coll.configset == coll.name
    status = requests.get(f"{coll.base_url}/admin/collections", params={"action": "CLUSTERSTATUS",
                          "collection": coll.name, "wt": "json"}, timeout=60).json()
    assert len(status["cluster"]["collections"][coll.name]["shards"]) == 2
    _check_stock_features(coll)
    # The documents are spread over both shards, and the snapshot read them all.
    assert len(coll.index_field_names()) > 0
    coll.drop()
    made.remove(coll)
    configs = requests.get(f"{shared_cloud.node_urls[0]}/admin/configs", params={"action": "LIST", "wt": "json"},
                           timeout=60).json()["configSets"]
    assert coll.configset not in configs


# =====================================================================================================
# Schemas applications ship
# =====================================================================================================
# which: (a stored field to change, the schema factory its solrconfig names)
_PACKAGE_CHECKS = {
    "haystack": ("title", {"class": "ClassicIndexSchemaFactory"}),
    "dovecot": ("user", None),
    "dovecot-legacy": ("user", None),
    "ckan": ("title", {"class": "ClassicIndexSchemaFactory"}),
}


@pytest.mark.parametrize("which", user_schemas.PACKAGES)
def test_package_schema(standalone, made, which):
    coll = user_schemas.create_from_package(standalone, which)
    made.append(coll)
    field, factory = _PACKAGE_CHECKS[which]
    assert coll.kind == which and coll.text_fields and not coll.cloud
    assert coll.schema()["uniqueKey"] == coll.key_field
    assert coll.config("schemaFactory")["schemaFactory"] == factory

    docs = coll.documents()
    assert len(_one_word_pairs(docs, coll.key_field, coll.text_fields)) >= 2
    _fill_three_ways(coll, docs)
    assert coll.count() == len(docs)
    for doc in docs:
        assert coll.get(doc[coll.key_field]) is not None
    # The text is searchable in each text field (Dovecot's are indexed only, not stored).
    for text_field in coll.text_fields:
        word = str(docs[0][text_field]).split()[1].strip(",.:;").lower()
        resp = requests.get(f"{coll.url}/select", params={"q": f"{text_field}:{word}", "fl": coll.key_field,
                                                          "wt": "json"}, timeout=60)
        assert resp.status_code == 200, resp.text[:500]
        assert docs[0][coll.key_field] in [d[coll.key_field] for d in resp.json()["response"]["docs"]]

    _check_snapshot(coll, docs[2][coll.key_field], field, "changed by the user")


def test_ckan_json_atomic_update_is_refused(standalone, made):
    """Why CKAN's collection posts its atomic updates as XML (``atomic_via``): its catch-all dynamic field ``*``
    makes Solr's JSON loader read ``{"set": ...}`` as a child document, so the update is a new document without
    its required fields (test_package_schema proves the XML way works)."""
    coll = user_schemas.create_from_package(standalone, "ckan")
    made.append(coll)
    docs = coll.documents()
    coll.post_json(docs)
    with pytest.raises(RuntimeError, match="missing required field"):
        coll.atomic_set(docs[0]["index_id"], via="json", title="changed")


# =====================================================================================================
# Pieces of the helper
# =====================================================================================================
def test_render_django_template():
    template = ('<a id="{{ ID }}"/>{% for f in fields %}<f n="{{ f.name }}"/>{% endfor %}'
                '{% for f in none %}never{% endfor %}<d>{{ content }}</d>')
    out = user_schemas.render_django_template(
        template, {"ID": "id", "fields": [{"name": "a"}, {"name": "b&c"}], "none": [], "content": "text"})
    assert out == '<a id="id"/><f n="a"/><f n="b&amp;c"/><d>text</d>'
    with pytest.raises(ValueError, match="unsupported template tag"):
        user_schemas.render_django_template("{% if x %}{% endif %}", {"x": 1})


def test_raw_docs_keep_solrs_bytes_without_version():
    text = ('{"responseHeader":{"status":0},"response":{"numFound":3,"start":0,"docs":['
            '{"id":"a","_version_":17,"p":1.50,"s":"x\\"_version_\\":1"},'
            '{"_version_":18,"id":"b\\"q"},{"id":"c","v":"2","_version_":"19"}]},"nextCursorMark":"AoE"}')
    got = dict(user_schemas._raw_docs(text, "id"))
    assert got == {'"a"': '{"id":"a","p":1.50,"s":"x\\"_version_\\":1"}', '"b\\"q"': '{"id":"b\\"q"}',
                   '"c"': '{"id":"c","v":"2"}'}
