"""The companion on the schemas search teams really run (issue 45, point 6): a configset carrying the features of
Solr's stock configsets (tests/data/stock_features_configset: an implicit managed schema, the schemaless chain
guessing multi-valued text, ignored_*, a stored currency copyField target, non-stored fields, a key that may be
called otherwise than id), on a core and on the local SolrCloud, and the schemas real applications ship in their
packages (django-haystack from PyPI, Dovecot's two from Debian, CKAN's from PyPI), installed by the tests
(tests/user_schemas.py).

Each run posts the schema's documents by plain JSON, pysolr and curl, then install, backfill, sync (after a near
duplicate posted by curl), groups --to-solr and uninstall, asserting at every step that every document of the
user's is byte-identical (every stored and docValues field, and fl=*; _version_ included where nothing was
written), that near-dups finds the copy, that report gives the same pairs as `index` into our own collection gives
for the same texts, and that the schema after uninstall is the one before install.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import requests

from neardup_solr.solr.backends.local import LocalSolr
from neardup_solr.solr.client import SolrClient
from neardup_solr.solr.companion import TEXT_SEPARATOR, companion_name
from test_own_collection import error_lines, pairs_of, run_cli
from user_schemas import (
    UserCollection,
    create_from_package,
    create_stock_features,
    create_stock_features_cloud,
    snapshot_diff,
)

pytestmark = [pytest.mark.solr]


def _drop(user: UserCollection) -> None:
    companion = companion_name(user.name)
    if user.cloud:
        requests.get(f"{user.base_url}/admin/collections", params={"action": "DELETE", "name": companion},
                     timeout=120)
    else:
        requests.get(f"{user.base_url}/admin/cores", params={"action": "UNLOAD", "core": companion,
                                                             "deleteInstanceDir": "true"}, timeout=120)
    user.drop()


def _single_node(local_solr) -> None:
    if not isinstance(local_solr, LocalSolr):
        pytest.skip("needs the session's own single-node Solr to create a user's core in (CoreAdmin)")


def text_of(user: UserCollection, doc: dict) -> str:
    parts: list[str] = []
    for name in user.text_fields:
        value = doc.get(name)
        parts += [str(v) for v in (value if isinstance(value, list) else [value] if value is not None else [])]
    return TEXT_SEPARATOR.join(parts)


def post_three_ways(user: UserCollection, docs: list[dict]) -> None:
    third = max(1, len(docs) // 3)
    user.post_json(docs[:third])
    user.post_pysolr(docs[third:2 * third])
    user.post_curl(docs[2 * third:])


def near_copy(user: UserCollection, doc: dict) -> dict:
    """A copy of ``doc`` under a new key, one more word at the end of its last text field."""
    copy = {k: v for k, v in doc.items() if k != "_version_"}
    copy[user.key_field] = f"{doc[user.key_field]}-copy"
    field = next(name for name in reversed(user.text_fields) if doc.get(name))
    value = copy[field]
    copy[field] = value[:-1] + [value[-1] + " indeed"] if isinstance(value, list) else value + " indeed"
    return copy


def versions(user: UserCollection) -> dict:
    """Every document's ``_version_``: the same before and after means nothing wrote to any document."""
    resp = requests.get(f"{user.url}/select", timeout=60, params={
        "q": "*:*", "fl": f"{user.key_field},_version_", "rows": 10000, "sort": f"{user.key_field} asc"})
    resp.raise_for_status()
    return {json.dumps(d[user.key_field]): d["_version_"] for d in resp.json()["response"]["docs"]}


def without_groups(docs: dict[str, str]) -> dict[str, dict]:
    """The documents as read by field name, without the two group fields install --fold added."""
    return {key: {k: v for k, v in json.loads(text).items() if k not in ("nd_group", "nd_keep")}
            for key, text in docs.items()}


def companion_run(user: UserCollection, solr: SolrClient, tmp_path: Path, *, fold: bool = False) -> None:
    docs = user.documents()
    post_three_ways(user, docs)
    before = user.snapshot()
    versions_before = versions(user)
    schema_before = before["schema"]
    flags = ["--fold"] if fold else []
    code, out, err = run_cli("install", "--solr-url", user.url, "--text-field", ",".join(user.text_fields), *flags)
    assert code == 0, err
    code, out, err = run_cli("backfill", "--solr-url", user.url, "--no-progress")
    assert code == 0 and f"signed {len(docs)} document(s)" in out and "every document is signed" in out, (out, err)
    now = user.snapshot()
    assert now["docs_star"] == before["docs_star"] and now["docs_listed"] == before["docs_listed"], \
        snapshot_diff(before, now)
    if not fold:
        assert now == before and versions(user) == versions_before

    # A near copy posted by curl: one sync pass signs it, and near-dups finds it from the user's URL.
    source = docs[0]
    copy = near_copy(user, source)
    user.post_curl([copy])
    before, versions_before = user.snapshot(), versions(user)
    code, out, err = run_cli("sync", "--solr-url", user.url)
    assert code == 0 and "1 new" in out, (out, err)
    code, out, err = run_cli("near-dups", str(source[user.key_field]), "--solr-url", user.url, "--min-jaccard", "0.5")
    assert code == 0 and f"  {copy[user.key_field]}: " in out, (out, err)

    # The same report as `index` into a collection of ours gives for the same texts.
    data = tmp_path / "same.jsonl"
    final = docs + [copy]
    data.write_text("".join(json.dumps({"id": str(d[user.key_field]), "text": text_of(user, d)}) + "\n"
                            for d in final))
    code, _, err = run_cli("index", str(data), "--solr-url", solr.url, "-q")
    assert code == 0, err
    theirs, ours = tmp_path / "theirs.tsv", tmp_path / "ours.tsv"
    assert run_cli("report", "--solr-url", user.url, "--threshold", "0.5", "--method", "lsh", "--out",
                   str(theirs))[0] == 0
    assert run_cli("report", "--solr-url", solr.url, "--threshold", "0.5", "--method", "lsh", "--out",
                   str(ours))[0] == 0
    assert pairs_of(theirs) == pairs_of(ours) and pairs_of(ours)
    assert any(str(source[user.key_field]) in line and str(copy[user.key_field]) in line for line in pairs_of(ours))

    code, out, err = run_cli("groups", str(theirs), "--to-solr", "--solr-url", user.url)
    assert code == 0, (out, err)
    after = user.snapshot()
    if fold:
        # Only the two group fields changed, in place: fl=* (which does not return them) is byte for byte what it
        # was but for _version_, and so is every other field listed by name.
        assert after["docs_star"] == before["docs_star"] and after["count"] == before["count"]
        assert without_groups(after["docs_listed"]) == without_groups(before["docs_listed"])
        assert f"{len(final)} of your documents given their group in place" in out
    else:
        assert after == before and versions(user) == versions_before
    code, out, err = run_cli("uninstall", "--solr-url", user.url)
    assert code == 0, err
    final_snapshot = user.snapshot()
    assert final_snapshot["schema"] == schema_before
    assert final_snapshot["docs_star"] == before["docs_star"]


# ------------------------------------------------------------------------------ the stock configsets' features
@pytest.mark.parametrize("unique_key", ["id", "doc_key"])
def test_a_collection_with_the_stock_configsets_features(local_solr, solr, tmp_path, unique_key):
    _single_node(local_solr)
    user = create_stock_features(local_solr, unique_key=unique_key)
    try:
        companion_run(user, solr, tmp_path)
    finally:
        _drop(user)


def test_install_fold_on_the_stock_features_leaves_the_currency_copy_and_non_stored_fields_as_they_were(
        local_solr, solr, tmp_path):
    """The schema where atomic updates changed the user's data (a stored copyField target of a currency type):
    install --fold writes the groups in place, and every other field, price_c included, stays byte-identical."""
    _single_node(local_solr)
    user = create_stock_features(local_solr)
    try:
        companion_run(user, solr, tmp_path, fold=True)
        # What the in-place updates kept: a price posted as "92.50" keeps its stored copy "92.50,USD" ...
        doc = next(d for d in user.documents() if isinstance(d["price"], str) and d["price"].endswith("0"))
        key = doc[user.key_field]
        assert user.get(key, f"{user.key_field},price_c")["price_c"] == f"{doc['price']},USD"
        # ... which a full atomic update (what Solr falls back to when an update cannot be in place) rewrites.
        user.atomic_set(key, popularity=3)
        assert user.get(key, f"{user.key_field},price_c")["price_c"] != f"{doc['price']},USD"
    finally:
        _drop(user)


def test_text_fields_of_the_stock_features_schema(local_solr):
    """Schemaless guesses (multi-valued text), dynamic fields and several fields are text; a vector, a date, a
    location, a binary field, a currency and a field that is neither stored nor docValues are refused in one line
    naming the type."""
    _single_node(local_solr)
    user = create_stock_features(local_solr)
    try:
        user.post_json([{"id": "g1", "guessed_by_schemaless": "a text whose field the schemaless chain creates"}])
        guessed = user.schema_field("guessed_by_schemaless")
        assert guessed is not None and guessed.get("multiValued") is not False
        before = user.snapshot()
        for fields in ("guessed_by_schemaless", "series_t", "name,features,series_t"):
            code, out, err = run_cli("install", "--solr-url", user.url, "--text-field", fields, "--dry-run")
            assert code == 0 and "would create the companion" in out, (fields, err)
        for field, why in [("vec", "DenseVectorField"), ("manufacturedate_dt", "DatePointField"),
                           ("store", "LatLonPointSpatialField"), ("bin", "BinaryField"),
                           ("price_c", "CurrencyFieldType"), ("text", "neither stored nor docValues"),
                           ("ignored_x", "neither stored nor docValues")]:
            code, _, err = run_cli("install", "--solr-url", user.url, "--text-field", field)
            assert code == 2 and len(error_lines(err)) == 1 and why in err, (field, err)
        assert user.snapshot() == before
    finally:
        _drop(user)


@pytest.mark.slow
def test_a_cloud_collection_with_the_stock_configsets_features(shared_cloud, tmp_path):
    user = create_stock_features_cloud(shared_cloud, unique_key="doc_key")
    neardup = SolrClient(shared_cloud.collection_url)
    neardup.delete_all()
    try:
        companion_run(user, neardup, tmp_path)
    finally:
        _drop(user)


# ------------------------------------------------------------------------------ schemas applications ship
@pytest.mark.parametrize("which", ["haystack", "ckan"])
def test_a_schema_an_application_ships(local_solr, solr, tmp_path, which):
    _single_node(local_solr)
    user = create_from_package(local_solr, which)
    try:
        companion_run(user, solr, tmp_path)
    finally:
        _drop(user)


@pytest.mark.parametrize("which", ["dovecot", "dovecot-legacy"])
def test_dovecots_schema_stores_no_text_and_install_says_so(local_solr, which):
    """Dovecot's full-text schema indexes the mail's subject and body without storing them: there is no text to
    read back, and install says so in one line, changing nothing."""
    _single_node(local_solr)
    user = create_from_package(local_solr, which)
    try:
        post_three_ways(user, user.documents())
        before = user.snapshot()
        code, _, err = run_cli("install", "--solr-url", user.url, "--text-field", ",".join(user.text_fields))
        assert code == 2 and len(error_lines(err)) == 1 and "neither stored nor docValues" in err, err
        assert user.snapshot() == before
        assert requests.get(f"{user.base_url}/{companion_name(user.name)}/admin/ping", timeout=30).status_code == 404
    finally:
        _drop(user)
