"""Near-duplicate detection on a collection that is not ours (issue 37), tried as a user would: a core made from a
user's own configset (tests/data/user_configset), filled by clients that are not neardup-solr (plain JSON over
HTTP, pysolr, CSV through /update/csv), then ``install``, ``backfill`` and ``sync`` through the command line, and
the same ``report`` pairs and lookups as the same data indexed by ``index`` into a neardup collection.

Needs the session's own single-node Solr (cores are created on it through CoreAdmin).
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import random
import threading
import time
from pathlib import Path

import pytest
import requests

from benchmarks.corpus import generate
from neardup_solr.cli import main
from neardup_solr.engine.backfill import backfill, count_unseen
from neardup_solr.engine.sync import Syncer
from neardup_solr.errors import InvalidParameterError
from neardup_solr.solr import schema_install
from neardup_solr.solr.atomic import SEEN, count_matching
from neardup_solr.solr.backends.local import LocalSolr
from neardup_solr.solr.client import SolrClient
from neardup_solr.solr.documents import SETTINGS_DOC_ID, IndexSettings, md5_hex
from neardup_solr.solr.schema_install import InstallRefused
from neardup_solr.solr.searcher import Searcher
from usercoll import UserCore

pytestmark = [pytest.mark.solr]

USER_FIELDS = ("id", "title", "body", "url", "published", "tags", "views")


@pytest.fixture()
def user_core(local_solr):
    if not isinstance(local_solr, LocalSolr):
        pytest.skip("needs the session's own single-node Solr to create a user's core in (CoreAdmin)")
    core = UserCore.create(local_solr)
    yield core
    core.drop()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> list[tuple[str, str]]:
    """300 generated documents with planted near-duplicate clusters: (id, text)."""
    out = tmp_path_factory.mktemp("corpus")
    generate(300, 37, out)
    return [(r["id"], r["text"]) for r in map(json.loads, (out / "docs.jsonl").read_text().splitlines())]


def run_cli(*args: str) -> tuple[int, str, str]:
    """The command line in-process: exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def user_doc(doc_id: str, text: str, n: int) -> dict:
    return {"id": doc_id, "title": f"Article {doc_id}", "body": text, "url": f"https://example.org/{doc_id}",
            "published": f"2024-01-{1 + n % 28:02d}T00:00:00Z", "tags": ["news", f"t{n % 5}"], "views": n}


def post_by_other_clients(core: UserCore, docs: list[dict]) -> None:
    """A third of the documents as plain JSON over HTTP, a third with pysolr, a third as CSV through /update/csv."""
    import pysolr

    third = len(docs) // 3
    core.post_json(docs[:third])
    pysolr.Solr(core.url, always_commit=True, timeout=60).add(docs[third:2 * third])
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["id", "title", "body", "url", "published", "views"])  # tags: multi-valued, left to JSON
    for doc in docs[2 * third:]:
        writer.writerow([doc["id"], doc["title"], doc["body"], doc["url"], doc["published"], doc["views"]])
    core.post_csv(buffer.getvalue())


def only_user_fields(docs: dict[str, dict]) -> dict[str, dict]:
    return {doc_id: {k: v for k, v in doc.items() if k in USER_FIELDS} for doc_id, doc in docs.items()}


def pairs_of(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if not line.startswith("#")]


# ---------------------------------------------------------------------------------------------------------------
def test_every_command_on_a_collection_without_our_fields_names_install(user_core, tmp_path):
    user_core.post_json([user_doc("a1", "the quick brown fox jumps over the lazy dog", 1)])
    before = user_core.docs()
    records = tmp_path / "records.txt"
    records.write_text("r1 the quick brown fox jumps over the lazy dog again\n")
    commands = [["report", "--out", str(tmp_path / "p.tsv")], ["near-dups", "a1"], ["backfill"], ["sync"],
                ["delete", "--dataset", "x"], ["optimize"], ["uninstall"], ["settings"],
                ["join", str(records), "--threshold", "0.5", "--out", str(tmp_path / "j.tsv")],
                ["verify", str(records)], ["index", str(records)]]
    for command in commands:
        code, _, err = run_cli(*command, "--solr-url", user_core.url)
        lines = error_lines(err)
        assert code == 2, (command, err)
        assert len(lines) == 1 and "no near-duplicate fields" in lines[0] and "install" in lines[0], (command, err)
    assert user_core.docs() == before


def test_install_adds_only_ours_and_uninstall_removes_exactly_that(user_core, corpus):
    docs = [user_doc(i, text, n) for n, (i, text) in enumerate(corpus[:60])]
    post_by_other_clients(user_core, docs)
    schema_before, docs_before = user_core.schema(), user_core.docs()

    code, out, _ = run_cli("install", "--solr-url", user_core.url, "--text-field", "body", "--dry-run")
    assert code == 0 and "would add" in out and "field minhash_sig (neardup_blob_dv)" in out
    assert user_core.schema() == schema_before

    code, out, err = run_cli("install", "--solr-url", user_core.url, "--text-field", "body", "--fields", "lsh,shingles")
    assert code == 0, err
    schema = user_core.schema()
    fields_before = {f["name"]: f for f in schema_before["fields"]}
    fields_now = {f["name"]: f for f in schema["fields"]}
    # Every field and type of the user's as it was; what was added is ours alone.
    assert all(fields_now[name] == spec for name, spec in fields_before.items())
    added = set(fields_now) - set(fields_before)
    assert added == {"md5_hash", "num_words", "num_shingles", "first_word", "dataset", "minhash_sig",
                     "neardup_settings", "content_nh", "content_lsh", "nd_group", "nd_keep", "next_group_i"}
    types_before = {t["name"]: t for t in schema_before["fieldTypes"]}
    types_now = {t["name"]: t for t in schema["fieldTypes"]}
    assert all(types_now[name] == spec for name, spec in types_before.items())
    assert all(name.startswith("neardup_") for name in set(types_now) - set(types_before))
    # Installing again is refused, in one line naming uninstall.
    code, _, err = run_cli("install", "--solr-url", user_core.url, "--text-field", "body")
    assert code == 2 and "uninstall" in error_lines(err)[0]

    code, out, err = run_cli("backfill", "--solr-url", user_core.url, "--no-progress")
    assert code == 0 and f"signed {len(docs)} document(s)" in out, err
    signed = user_core.docs()
    signed.pop(SETTINGS_DOC_ID)
    assert only_user_fields(signed) == only_user_fields(docs_before)
    assert all(d.get("md5_hash") and d.get("minhash_sig") for i, d in signed.items() if i != SETTINGS_DOC_ID)

    code, out, err = run_cli("uninstall", "--solr-url", user_core.url)
    assert code == 0, err
    assert user_core.schema() == schema_before
    after = user_core.docs()
    strip = lambda d: {k: v for k, v in d.items() if k != "_version_"}  # noqa: E731
    assert {i: strip(d) for i, d in after.items()} == {i: strip(d) for i, d in docs_before.items()}


def test_install_refuses_a_taken_name_a_classic_schema_and_an_old_solr(user_core, local_solr, monkeypatch):
    resp = requests.post(f"{user_core.url}/schema", json={"add-field": {"name": "md5_hash", "type": "string"}},
                         timeout=60)
    resp.raise_for_status()
    schema = user_core.schema()
    code, _, err = run_cli("install", "--solr-url", user_core.url, "--text-field", "body")
    assert code == 2 and len(error_lines(err)) == 1
    assert "field 'md5_hash'" in err and "nothing was changed" in err
    assert user_core.schema() == schema

    classic = UserCore.create(local_solr, prefix="user_classic", classic=True)
    try:
        code, _, err = run_cli("install", "--solr-url", classic.url, "--text-field", "body", "--dry-run")
        assert code == 2 and "cannot be changed through the Schema API" in err and "ManagedIndexSchemaFactory" in err
    finally:
        classic.drop()

    keyed_by_url = UserCore.create(local_solr, prefix="user_by_url", unique_key="url")
    try:
        code, _, err = run_cli("install", "--solr-url", keyed_by_url.url, "--text-field", "body", "--dry-run")
        assert code == 2 and "unique key" in err and "'url'" in err
    finally:
        keyed_by_url.drop()

    # A Solr before 8.2 cannot skip a conflicting document: the version check, fed an old version.
    # Our settings document has none of the user's fields: a schema that requires one in every document is refused.
    requests.post(f"{user_core.url}/schema", timeout=60, json={"delete-field": {"name": "md5_hash"}}
                  ).raise_for_status()
    requests.post(f"{user_core.url}/schema", timeout=60, json={"replace-field": {
        "name": "title", "type": "text_general", "indexed": True, "stored": True, "required": True}}
    ).raise_for_status()
    code, _, err = run_cli("install", "--solr-url", user_core.url, "--text-field", "body")
    assert code == 2 and "requires field(s) title" in err and "default" in err

    monkeypatch.setattr(schema_install, "solr_version", lambda client: (8, 1, 1))
    with pytest.raises(InstallRefused, match=r"Solr 8\.1\.1; .* Solr 8\.2 or later"):
        schema_install.install(SolrClient(user_core.url), "body", dry_run=True)


def test_backfill_names_the_fields_atomic_updates_would_lose(user_core):
    requests.post(f"{user_core.url}/schema", timeout=60, json={
        "add-field": {"name": "summary_only_indexed", "type": "text_general", "stored": False, "docValues": False},
        "add-dynamic-field": {"name": "*_idx", "type": "text_general", "stored": False, "docValues": False}}
    ).raise_for_status()
    user_core.post_json([user_doc("a1", "the quick brown fox jumps over the lazy dog", 1)])
    assert run_cli("install", "--solr-url", user_core.url, "--text-field", "body")[0] == 0
    code, _, err = run_cli("backfill", "--solr-url", user_core.url)
    assert code == 2 and "summary_only_indexed, *_idx" in error_lines(err)[0] and "stored or docValues" in err
    assert count_matching(SolrClient(user_core.url), [SEEN]) == 0


def test_a_document_solr_refuses_is_named_and_the_rest_of_its_batch_is_signed(user_core, corpus):
    docs = [user_doc(i, text, n) for n, (i, text) in enumerate(corpus[:40])]
    docs[7]["rank_s"] = "high"
    user_core.post_json(docs)
    # The user's schema changed after the document was posted: rank_s became a number, so re-indexing the document
    # (which an atomic update does) now fails.
    requests.post(f"{user_core.url}/schema", timeout=60, json={"add-field": {
        "name": "rank_s", "type": "pint", "indexed": True, "stored": True}}).raise_for_status()
    assert run_cli("install", "--solr-url", user_core.url, "--text-field", "body")[0] == 0
    code, _, err = run_cli("backfill", "--solr-url", user_core.url, "--no-progress")
    assert code == 4, err
    (line,) = error_lines(err)
    assert "1 document(s) are still unsigned, 1 of them refused by Solr" in line and repr(docs[7]["id"]) in line
    found = user_core.docs("id,md5_hash")
    assert [i for i, d in found.items() if not d.get("md5_hash") and i != SETTINGS_DOC_ID] == [docs[7]["id"]]


def test_same_pairs_as_index_after_install_backfill_and_sync(user_core, solr, corpus, tmp_path):
    """The issue's "done when" on a core: posted by others, installed, backfilled, synced while more is posted,
    replaced, edited and deleted; then the same report pairs and lookups as `index` gives for the same data."""
    same_pairs_scenario(user_core, solr, corpus, tmp_path)


def same_pairs_scenario(user_core: UserCore, solr: SolrClient, corpus: list[tuple[str, str]], tmp_path: Path) -> None:
    """(Also run on a local SolrCloud by tests/solr/engine/test_own_collection_cloud.py.)"""
    rng = random.Random(37)
    first, later = corpus[:200], corpus[200:]
    docs = [user_doc(i, text, n) for n, (i, text) in enumerate(first)]
    post_by_other_clients(user_core, docs)
    assert run_cli("install", "--solr-url", user_core.url, "--text-field", "body")[0] == 0
    assert run_cli("backfill", "--solr-url", user_core.url, "--no-progress")[0] == 0
    expected = only_user_fields(user_core.docs())
    expected.pop(SETTINGS_DOC_ID, None)

    client = SolrClient(user_core.url)
    syncer = Syncer(client)
    stop = threading.Event()
    passes: list = []
    failures: list[BaseException] = []

    def follow() -> None:
        try:
            syncer.follow(0.3, stop, passes.append)
        except BaseException as exc:  # shown by the test, not lost in the thread
            failures.append(exc)
            raise

    follower = threading.Thread(target=follow)
    follower.start()
    try:
        # More documents, plain JSON; some replaced whole (another title, the same or a changed text); texts
        # edited in place (atomic updates of body), one into a near copy of another document; deletes.
        new_docs = [user_doc(i, text, 200 + n) for n, (i, text) in enumerate(later)]
        user_core.post_json(new_docs)
        replaced = rng.sample(sorted(expected), 15)
        for doc_id in replaced:
            doc = dict(expected[doc_id], title="replaced " + doc_id)
            if rng.random() < 0.5:
                doc["body"] = doc["body"] + " A closing line added on replacement."
            user_core.post_json([{k: v for k, v in doc.items()}])
        edited = rng.sample(sorted(set(expected) - set(replaced)), 8)
        for doc_id in edited[:-1]:
            user_core.atomic_set(doc_id, body=expected[doc_id]["body"].replace(" ", "  ", 3) + " Edited.")
        source = sorted(set(expected) - set(edited) - set(replaced))[0]
        user_core.atomic_set(edited[-1], body=expected[source]["body"] + " A near copy.")
        deleted = rng.sample(sorted(set(expected) - set(edited) - set(replaced) - {source}), 5)
        user_core.delete(deleted)

        # A document posted now is found as a near duplicate within the lag the follower keeps.
        posted = time.monotonic()
        user_core.post_json([user_doc("zz-late", expected[source]["body"] + " Late.", 999)])
        searcher = Searcher(SolrClient(user_core.url))
        while not any(d.id == "zz-late" for d in searcher.find_near_dups(source)):
            assert time.monotonic() - posted < 10, "a document posted by plain HTTP was not findable in 10 s"
            time.sleep(0.1)
        lag = time.monotonic() - posted
        # Let the follower finish what it has seen.
        deadline = time.monotonic() + 30
        while count_unseen(client) or len(passes) < 3:
            assert time.monotonic() < deadline and not failures, failures
            time.sleep(0.2)
        count = len(passes)
        while len(passes) < count + 2:
            assert time.monotonic() < deadline and not failures, failures
            time.sleep(0.1)
    finally:
        stop.set()
        follower.join(timeout=60)
    print(f"lag from post to findable: {lag:.2f} s; {len(passes)} sync passes")

    final = only_user_fields(user_core.docs())
    final.pop(SETTINGS_DOC_ID, None)
    assert not set(deleted) & set(final)
    # The user's fields are what their writers wrote, untouched by us.
    for doc_id, doc in expected.items():
        if doc_id not in replaced and doc_id not in edited and doc_id not in deleted:
            assert final[doc_id] == doc
    # Every text is signed from its current version.
    normalizer = IndexSettings().normalizer()
    stored = {d["id"]: d for d in client.select([("q", "*:*"), ("rows", 10000), ("fl", "id,md5_hash"),
                                                 ("fq", "-id:" + SETTINGS_DOC_ID)])["response"]["docs"]}
    assert {i: d.get("md5_hash") for i, d in stored.items()} == {
        i: md5_hex(normalizer.normalize(d["body"])) for i, d in final.items()}

    # The same data, indexed by `index` into a neardup collection.
    data = tmp_path / "same.jsonl"
    data.write_text("".join(json.dumps({"id": i, "text": d["body"]}) + "\n" for i, d in sorted(final.items())))
    code, _, err = run_cli("index", str(data), "--solr-url", solr.url, "-q")
    assert code == 0, err
    for flags in ([], ["--threshold", "0.5", "--method", "lsh"]):
        ours, theirs = tmp_path / "ours.tsv", tmp_path / "theirs.tsv"
        assert run_cli("report", "--solr-url", user_core.url, "--out", str(theirs), *flags)[0] == 0
        assert run_cli("report", "--solr-url", solr.url, "--out", str(ours), *flags)[0] == 0
        assert pairs_of(theirs) == pairs_of(ours) and len(pairs_of(ours)) >= 5
        # The text edited in place into a near copy, and the one posted late, are found with their source.
        assert any(source in line and "zz-late" in line for line in pairs_of(ours))
        assert any(source in line and edited[-1] in line for line in pairs_of(ours)) or not flags
    lookups_theirs, lookups_ours = Searcher(SolrClient(user_core.url)), Searcher(solr)
    for doc_id in [source, edited[-1], *replaced[:5], *rng.sample(sorted(final), 10)]:
        assert ([(d.id, d.edit_distance, d.jaccard) for d in lookups_theirs.find_near_dups(doc_id)]
                == [(d.id, d.edit_distance, d.jaccard) for d in lookups_ours.find_near_dups(doc_id)])


def test_backfill_racing_concurrent_updates_loses_none(user_core, corpus):
    docs = [user_doc(i, text, n) for n, (i, text) in enumerate(corpus[:240])]
    user_core.post_json(docs)
    assert run_cli("install", "--solr-url", user_core.url, "--text-field", "body")[0] == 0
    last: dict[str, dict] = {d["id"]: {"views": d["views"], "body": d["body"]} for d in docs}
    stop = threading.Event()
    writes = [0]

    def writer() -> None:
        session = requests.Session()
        rng = random.Random(1)
        while not stop.is_set():
            doc_id = rng.choice(sorted(last))
            change = {"views": last[doc_id]["views"] + 1}
            if rng.random() < 0.3:
                change["body"] = last[doc_id]["body"] + f" Revision {writes[0]}."
            resp = session.post(f"{user_core.url}/update", params={"wt": "json"}, timeout=60,
                                json=[{"id": doc_id, **{k: {"set": v} for k, v in change.items()}}])
            resp.raise_for_status()
            last[doc_id].update(change)
            writes[0] += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        summary = backfill(SolrClient(user_core.url), batch_size=10)
    finally:
        stop.set()
        thread.join(timeout=60)
    user_core.commit()
    print(f"{writes[0]} concurrent writes; backfill: {summary.format()}")
    assert writes[0] > 50 and summary.signed >= len(docs)
    # Every update of the writer is there: ours never went over one of theirs.
    found = user_core.docs("id,views,body,md5_hash")
    assert {i: {"views": d["views"], "body": d["body"]} for i, d in found.items() if i in last} == last
    # Texts edited after they were signed are signed again by sync.
    sync_summary = Syncer(SolrClient(user_core.url)).run_once()
    normalizer = IndexSettings().normalizer()
    found = user_core.docs("id,body,md5_hash")
    assert all(found[i]["md5_hash"] == md5_hex(normalizer.normalize(last[i]["body"])) for i in last)
    assert sync_summary.checked >= len(docs)


def test_sync_compares_only_documents_whose_version_moved_on(user_core, corpus):
    docs = [user_doc(i, text, n) for n, (i, text) in enumerate(corpus[:30])]
    user_core.post_json(docs)
    assert run_cli("install", "--solr-url", user_core.url, "--text-field", "body")[0] == 0
    syncer = Syncer(SolrClient(user_core.url), version_margin_s=0)
    first = syncer.run_once()
    assert (first.added, first.edited) == (len(docs), 0)
    syncer.run_once()  # reads once more what the first pass wrote (its versions moved on)
    assert syncer.run_once().checked == 0  # idle: nothing read
    edited = docs[4]["id"]
    user_core.atomic_set(edited, body="A text edited in place by the pipeline, with no date of its own.")
    user_core.atomic_set(docs[5]["id"], views=1000)  # another field: the signature stays right
    summary = syncer.run_once()
    assert (summary.added, summary.edited, summary.checked) == (0, 1, 2)
    found = user_core.docs("id,md5_hash,views")
    assert found[edited]["md5_hash"] == md5_hex(IndexSettings().normalizer().normalize(
        "A text edited in place by the pipeline, with no date of its own."))
    assert found[docs[5]["id"]]["views"] == 1000
    full = Syncer(SolrClient(user_core.url), full_scan=True)
    full.run_once()
    assert full.run_once().checked == len(docs)


def test_follow_compares_what_changed_before_it_began_beside_its_passes(user_core, corpus):
    # The first pass of follow no longer compares every signed document (a minute at 1M documents, during which a
    # new post waited): a catch-up thread does, and the passes look only at what changed since follow began.
    docs = [user_doc(i, text, n) for n, (i, text) in enumerate(corpus[:40])]
    user_core.post_json(docs)
    assert run_cli("install", "--solr-url", user_core.url, "--text-field", "body")[0] == 0
    assert backfill(SolrClient(user_core.url)).signed == len(docs)
    stale = docs[7]["id"]
    user_core.atomic_set(stale, body="Edited in place while no sync was running, so its signature went stale.")
    syncer = Syncer(SolrClient(user_core.url), version_margin_s=0)
    stop = threading.Event()
    passes: list = []
    follower = threading.Thread(target=syncer.follow, args=(0.1, stop, passes.append), daemon=True)
    follower.start()
    deadline = time.monotonic() + 60
    expected = md5_hex(IndexSettings().normalizer().normalize(
        "Edited in place while no sync was running, so its signature went stale."))
    while user_core.docs("id,md5_hash")[stale].get("md5_hash") != expected and time.monotonic() < deadline:
        time.sleep(0.1)
    while len(passes) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    stop.set()
    follower.join(timeout=60)
    assert not follower.is_alive()
    assert user_core.docs("id,md5_hash")[stale]["md5_hash"] == expected  # the catch-up found the stale one
    assert passes and passes[0].checked < len(docs)  # the first pass did not compare them all


def test_sync_with_a_changed_field_reads_only_what_changed(user_core, corpus):
    docs = [user_doc(i, text, n) for n, (i, text) in enumerate(corpus[:30])]
    user_core.post_json(docs)
    assert run_cli("install", "--solr-url", user_core.url, "--text-field", "body")[0] == 0
    syncer = Syncer(SolrClient(user_core.url), changed_field="published")
    first = syncer.run_once()
    assert first.added == len(docs) and first.checked == len(docs)
    a, b = docs[0]["id"], docs[1]["id"]
    user_core.atomic_set(a, body="A new text for the first article, edited in place.", published="NOW")
    user_core.atomic_set(b, body="A new text for the second article, date left alone.")
    second = syncer.run_once()
    assert (second.added, second.edited, second.checked) == (0, 1, 1)
    found = user_core.docs("id,md5_hash")
    assert found[a]["md5_hash"] == md5_hex(IndexSettings().normalizer().normalize("A new text for the first article, edited in place."))
    with pytest.raises(InvalidParameterError, match="changed_field"):
        Syncer(SolrClient(user_core.url), changed_field="title")


def test_sync_signs_what_other_clients_post_to_our_own_collection(solr, corpus):
    from neardup_solr.solr.indexer import Indexer

    Indexer(solr).index_records(corpus[:20])
    source_id, text = corpus[3]
    requests.post(f"{solr.url}/update", params={"commit": "true"}, timeout=60,
                  json=[{"id": "posted-by-curl", "content": text + " posted by another client"}]).raise_for_status()
    searcher = Searcher(solr)
    assert "posted-by-curl" not in [d.id for d in searcher.find_near_dups(source_id)]
    summary = Syncer(solr).run_once()
    assert summary.added == 1
    assert "posted-by-curl" in [d.id for d in searcher.find_near_dups(source_id)]


def test_serve_sync_signs_what_others_post_and_the_service_finds_it(user_core, corpus, tmp_path):
    import os
    import subprocess
    import sys

    from netutil import free_port

    docs = [user_doc(i, text, n) for n, (i, text) in enumerate(corpus[:20])]
    user_core.post_json(docs)
    assert run_cli("install", "--solr-url", user_core.url, "--text-field", "body")[0] == 0
    port = free_port()
    env = dict(os.environ, NEARDUP_SERVICE_JOBS_DIR=str(tmp_path / "jobs"))
    proc = subprocess.Popen([sys.executable, "-m", "neardup_solr.cli", "serve", "--port", str(port), "--solr-url",
                             user_core.url, "--sync", "--sync-interval", "0.3"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    service = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
            try:
                if requests.get(f"{service}/ready", timeout=5).status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            assert time.monotonic() < deadline, "the service did not become ready"
            time.sleep(0.3)
        source_id, text = corpus[5]
        posted = time.monotonic()
        user_core.post_json([user_doc("zz-posted", text + " Posted by the pipeline.", 99)])
        while True:
            found = requests.get(f"{service}/v1/documents/{source_id}/near-dups", timeout=30).json()
            if "zz-posted" in json.dumps(found):
                break
            assert time.monotonic() - posted < 15, found
            time.sleep(0.2)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_groups_written_into_an_installed_collection_and_given_to_what_sync_and_backfill_sign(user_core, corpus,
                                                                                             tmp_path):
    """Issue 38 on a user's own collection: install adds the group fields, 'groups --to-solr' writes them, and
    what sync and backfill sign afterwards gets its group as check_and_add gives one (the nearest kept neighbour's
    at or above the threshold, else a new group); nothing is grouped while the groups were never written; a
    folded search works there; uninstall removes the group fields too."""
    from neardup_solr.solr.folded_search import folded_search
    from neardup_solr.solr.group_fields import read_groups

    schema_before = user_core.schema()
    user_core.post_json([user_doc(i, text, n) for n, (i, text) in enumerate(corpus[:80])])
    assert run_cli("install", "--solr-url", user_core.url, "--text-field", "body")[0] == 0
    fields = {f["name"]: f for f in user_core.schema()["fields"]}
    assert {k: fields["nd_group"][k] for k in ("indexed", "stored", "docValues")} == \
        {"indexed": False, "stored": False, "docValues": True}
    code, out, err = run_cli("backfill", "--solr-url", user_core.url, "--no-progress")
    assert code == 0 and "near-duplicate group" not in out, err
    client = SolrClient(user_core.url)
    assert {g for _, g, _ in read_groups(client)} == {None}  # groups never written: none given

    pairs = tmp_path / "pairs.tsv"
    assert run_cli("report", "--solr-url", user_core.url, "--threshold", "0.8", "--out", str(pairs))[0] == 0
    code, out, err = run_cli("groups", str(pairs), "--to-solr", "--solr-url", user_core.url)
    assert code == 0 and "80 documents" in out, err
    written = {i: (g, k) for i, g, k in read_groups(client)}
    assert all(g is not None for g, _ in written.values())
    kept = next(i for i, (g, k) in sorted(written.items()) if k == 1 and
                sum(1 for other, _ in written.values() if other == g) > 1)  # the kept document of a real group
    texts = dict(corpus)
    copy_text = texts[kept] + " indeed"
    # A copy of a kept document, an unrelated text, and two new near duplicates of each other, posted by another
    # client; sync signs them and gives them their groups.
    fresh = "Quarterly figures of the regional water board show reservoir levels rising after the long wet winter"
    user_core.post_json([user_doc("zcopy", copy_text, 1), user_doc("zlone", corpus[-1][1], 2),
                         user_doc("zpair1", fresh, 3), user_doc("zpair2", fresh + " again", 4)])
    code, out, err = run_cli("sync", "--solr-url", user_core.url)
    assert code == 0 and "4 given their near-duplicate group" in out, (out, err)
    now = {i: (g, k) for i, g, k in read_groups(client)}
    assert now["zcopy"] == (written[kept][0], 0)
    assert now["zlone"][1] == 1 and now["zlone"][0] not in {g for g, _ in written.values()}
    assert now["zpair1"][1] == 1 and now["zpair2"] == (now["zpair1"][0], 0)
    assert all(now[i] == written[i] for i in written)  # nothing else changed

    # A text edited in place is signed again and keeps its group (until the next write-back).
    edited = next(i for i in sorted(written) if i != kept and written[i][0] != written[kept][0])
    user_core.atomic_set(edited, body=texts[edited] + " with a late correction")
    # The user's atomic update keeps the group (install defines the fields useDocValuesAsStored for that).
    assert {i: (g, k) for i, g, k in read_groups(client)}[edited] == written[edited]
    code, out, err = run_cli("sync", "--solr-url", user_core.url)
    assert code == 0 and "1 edited in place" in out and "given their near-duplicate group" not in out, (out, err)
    assert {i: (g, k) for i, g, k in read_groups(client)}[edited] == written[edited]

    # backfill the same way.
    user_core.post_json([user_doc("zcopy2", texts[kept] + " surely", 5)])
    code, out, err = run_cli("backfill", "--solr-url", user_core.url, "--no-progress")
    assert code == 0 and "1 given their near-duplicate group" in out, (out, err)
    assert {i: (g, k) for i, g, k in read_groups(client)}["zcopy2"] == (written[kept][0], 0)

    found = folded_search(client, texts[kept], rows=5)
    head = next(h for h in found.hits if h.group == written[kept][0])
    assert head.id == kept and {"zcopy", "zcopy2"} <= {c.id for c in head.copies}
    assert sum(1 for h in found.hits if h.group == written[kept][0]) == 1

    assert run_cli("uninstall", "--solr-url", user_core.url)[0] == 0
    assert user_core.schema() == schema_before


def test_a_collection_installed_before_the_group_fields_gets_them_on_the_first_write_back(user_core, corpus,
                                                                                         tmp_path):
    """An install from before the group fields (simulated: they are removed again): 'groups --to-solr' adds them
    (and the counter's field, which a user's schema without *_i lacks) through the Schema API and writes."""
    from neardup_solr.solr.group_fields import read_groups

    user_core.post_json([user_doc(i, text, n) for n, (i, text) in enumerate(corpus[:30])])
    assert run_cli("install", "--solr-url", user_core.url, "--text-field", "body")[0] == 0
    requests.post(f"{user_core.url}/schema", json={"delete-field": [{"name": n} for n in
                                                                    ("nd_group", "nd_keep", "next_group_i")]},
                  timeout=60).raise_for_status()
    assert not {"nd_group", "nd_keep", "next_group_i"} & {f["name"] for f in user_core.schema()["fields"]}
    assert run_cli("backfill", "--solr-url", user_core.url, "--no-progress")[0] == 0
    pairs = tmp_path / "pairs.tsv"
    assert run_cli("report", "--solr-url", user_core.url, "--out", str(pairs))[0] == 0
    code, out, err = run_cli("groups", str(pairs), "--to-solr", "--solr-url", user_core.url)
    assert code == 0 and "30 documents" in out, (out, err)
    fields = {f["name"]: f for f in user_core.schema()["fields"]}
    assert {"nd_group", "nd_keep", "next_group_i"} <= set(fields)
    assert fields["nd_group"]["docValues"] is True and fields["nd_group"]["stored"] is False
    held = list(read_groups(SolrClient(user_core.url)))
    assert len(held) == 30 and all(g is not None and k in (0, 1) for _, g, k in held)
    first_id, group, keep = held[0]
    user_core.atomic_set(first_id, views=12345)  # the user's pipeline updating a field of theirs
    assert dict((i, (g, k)) for i, g, k in read_groups(SolrClient(user_core.url)))[first_id] == (group, keep)
