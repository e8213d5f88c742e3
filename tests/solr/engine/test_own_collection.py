"""Near-duplicate detection on a collection that is not ours, through a companion index (issue 45), tried as a user
would: a core made from a user's own configset (tests/data/user_configset), filled by clients that are not
neardup-solr (plain JSON over HTTP, pysolr, CSV through /update/csv), then ``install``, ``backfill`` and ``sync``
through the command line, and the same ``report`` pairs and lookups as the same data indexed by ``index`` into a
neardup collection. Every test that installs checks that the user's documents are byte for byte what they were,
``_version_`` included: nothing of ours ever writes to them.

The schemas of Solr's stock configsets and of real applications: tests/solr/engine/test_companion_schemas.py.
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
from neardup_solr.engine import companion_sync
from neardup_solr.engine.backfill import backfill
from neardup_solr.engine.companion_sync import CompanionSyncer
from neardup_solr.engine.sync import Syncer, open_syncer
from neardup_solr.errors import InvalidParameterError
from neardup_solr.solr.backends.local import LocalSolr
from neardup_solr.solr.client import SolrClient
from neardup_solr.solr.companion import companion_name, open_collection, read_state
from neardup_solr.solr.documents import IndexSettings, md5_hex
from neardup_solr.solr.queries import USER_DOCUMENTS, filter_params
from neardup_solr.solr.schema_install import FIELD_TYPES
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
    requests.get(f"{core.base_url}/admin/cores", params={"action": "UNLOAD", "core": companion_name(core.name),
                                                         "deleteInstanceDir": "true"}, timeout=120)
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


def pairs_of(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if not line.startswith("#")]


def companion_digests(core: UserCore) -> dict[str, str]:
    companion = SolrClient(f"{core.base_url}/{companion_name(core.name)}")
    params = [("q", "*:*"), ("rows", 100000), ("fl", "id,md5_hash"), *filter_params([USER_DOCUMENTS])]
    return {d["id"]: d.get("md5_hash") for d in companion.select(params)["response"]["docs"]}


def digest(text: str) -> str:
    return md5_hex(IndexSettings().normalizer().normalize(text))


# ---------------------------------------------------------------------------------------------------------------
def test_every_command_on_a_collection_without_a_companion_names_install_and_changes_nothing(user_core, tmp_path):
    user_core.post_json([user_doc("a1", "the quick brown fox jumps over the lazy dog", 1)])
    before, schema = user_core.raw_documents(), user_core.schema()
    records = tmp_path / "records.txt"
    records.write_text("r1 the quick brown fox jumps over the lazy dog again\n")
    pairs = tmp_path / "given.tsv"
    pairs.write_text("a1\ta1x\t0.9\n")
    commands = [["report", "--out", str(tmp_path / "p.tsv")], ["near-dups", "a1"], ["backfill"], ["sync"],
                ["delete", "--dataset", "x"], ["optimize"], ["settings"],
                ["join", str(records), "--threshold", "0.5", "--out", str(tmp_path / "j.tsv")],
                ["verify", str(records)], ["index", str(records)], ["groups", str(pairs), "--to-solr"]]
    for command in commands:
        code, _, err = run_cli(*command, "--solr-url", user_core.url)
        lines = error_lines(err)
        assert code == 2, (command, err)
        assert len(lines) == 1 and "install" in lines[0], (command, err)
    code, _, err = run_cli("uninstall", "--solr-url", user_core.url)
    assert code == 2 and "nothing to uninstall" in err
    # Not a field, not a value, not a version changed (groups --to-solr used to add nd_group to the schema).
    assert user_core.raw_documents() == before and user_core.schema() == schema


def test_install_makes_a_companion_and_uninstall_drops_it_your_collection_untouched(user_core, corpus, tmp_path):
    # A field of the user's called "content" (techproducts, Tika and crawler schemas have one) made uninstall
    # take the collection for one of ours and refuse it.
    requests.post(f"{user_core.url}/schema", timeout=60, json={"add-field": {
        "name": "content", "type": "text_general", "indexed": True, "stored": True}}).raise_for_status()
    docs = [user_doc(i, text, n) for n, (i, text) in enumerate(corpus[:60])]
    post_by_other_clients(user_core, docs)
    schema_before, docs_before = user_core.schema(), user_core.raw_documents()

    code, out, _ = run_cli("install", "--solr-url", user_core.url, "--text-field", "body", "--dry-run")
    assert code == 0 and "would create the companion core" in out and companion_name(user_core.name) in out
    assert "nothing of yours is changed" in out
    companion_url = f"{user_core.base_url}/{companion_name(user_core.name)}"
    assert requests.get(f"{companion_url}/admin/ping", timeout=30).status_code == 404  # a dry run made nothing

    code, out, err = run_cli("install", "--solr-url", user_core.url, "--text-field", "body", "--fields", "lsh,shingles")
    assert code == 0, err
    code, _, err = run_cli("install", "--solr-url", user_core.url, "--text-field", "body")
    assert code == 2 and "uninstall" in error_lines(err)[0]

    code, out, err = run_cli("backfill", "--solr-url", user_core.url, "--no-progress")
    assert code == 0 and f"signed {len(docs)} document(s)" in out and "every document is signed" in out, err
    assert companion_digests(user_core) == {d["id"]: digest(d["body"]) for d in docs}
    # Lookups and reports take the user's URL and answer from the companion, ids being the user's keys.
    pairs = tmp_path / "pairs.tsv"
    assert run_cli("report", "--solr-url", user_core.url, "--threshold", "0.5", "--method", "lsh",
                   "--out", str(pairs))[0] == 0
    found = pairs_of(pairs)
    assert found and all(line.split("\t")[0] in {d["id"] for d in docs} for line in found)
    searcher = Searcher(open_collection(user_core.url))
    first, second = found[0].split("\t")[:2]
    assert second in [d.id for d in searcher.find_near_dups(first, min_jaccard=0.5)]
    # What writes whole documents is refused, in one line: the user's documents are their pipeline's, and the
    # companion is backfill's and sync's.
    records = tmp_path / "records.txt"
    records.write_text("r1 the quick brown fox jumps over the lazy dog again\n")
    for command in (["delete", first], ["delete", "--dataset", "x"], ["index", str(records)]):
        code, _, err = run_cli(*command, "--solr-url", user_core.url)
        assert code == 2 and len(error_lines(err)) == 1 and "companion" in err, (command, err)
    assert companion_digests(user_core) == {d["id"]: digest(d["body"]) for d in docs}
    assert user_core.raw_documents() == docs_before and user_core.schema() == schema_before

    code, out, err = run_cli("uninstall", "--solr-url", user_core.url)
    assert code == 0 and "dropped the companion" in out, err
    assert requests.get(f"{companion_url}/admin/ping", timeout=30).status_code == 404
    assert user_core.raw_documents() == docs_before and user_core.schema() == schema_before


def test_install_takes_your_key_several_fields_and_multi_valued_ones_and_refuses_what_holds_no_text(local_solr,
                                                                                                  user_core):
    # What the first design refused, the companion takes: a classic schema.xml (nothing is added to it), a unique
    # key not called id, a multi-valued field, several fields at once.
    classic = UserCore.create(local_solr, prefix="user_classic", classic=True, unique_key="url")
    try:
        classic.post_json([user_doc("c1", "Harbour works finish early this year", 1),
                           user_doc("c2", "Harbour works finish early this year!", 2)])
        before = classic.raw_documents()
        code, out, err = run_cli("install", "--solr-url", classic.url, "--text-field", "title,body,tags")
        assert code == 0 and "your unique key 'url'" in out and "title + body + tags" in out, err
        assert run_cli("backfill", "--solr-url", classic.url, "--no-progress")[0] == 0
        code, out, err = run_cli("near-dups", "https://example.org/c1", "--solr-url", classic.url,
                                 "--min-jaccard", "0.3")
        assert code == 0 and "https://example.org/c2" in out, (out, err)
        companion = open_collection(classic.url)
        (stored,) = companion.get_by_ids(["https://example.org/c1"], "id,content")
        assert stored["content"] == "Article c1\nHarbour works finish early this year\nnews\nt1"
        assert run_cli("uninstall", "--solr-url", classic.url)[0] == 0
        assert classic.raw_documents() == before
    finally:
        requests.get(f"{classic.base_url}/admin/cores", params={"action": "UNLOAD", "deleteInstanceDir": "true",
                     "core": companion_name(classic.name)}, timeout=120)
        classic.drop()

    schema = user_core.schema()
    for field, why in [("views", "'pint'"), ("published", "'pdate'"), ("nosuch", "no field 'nosuch'"),
                       ("id", "unique key"), ("_version_", "a field of Solr")]:
        code, _, err = run_cli("install", "--solr-url", user_core.url, "--text-field", field)
        assert code == 2 and len(error_lines(err)) == 1 and why in err, (field, err)
    code, _, err = run_cli("install", "--solr-url", user_core.url, "--text-field", "nosuch")
    assert "title" in err and "*_txt" in err  # the fields and dynamic fields to choose from
    # A dynamic field is a field.
    code, out, err = run_cli("install", "--solr-url", user_core.url, "--text-field", "summary_txt", "--dry-run")
    assert code == 0, err
    assert user_core.schema() == schema


def same_pairs_scenario(user_core: UserCore, solr: SolrClient, corpus: list[tuple[str, str]], tmp_path: Path) -> None:
    """Posted by others, installed, backfilled, then followed by sync while more is posted, replaced, edited and
    deleted; the same report pairs and lookups as ``index`` gives for the same data. (Also run on a local SolrCloud
    by tests/solr/engine/test_own_collection_cloud.py.)"""
    rng = random.Random(37)
    first, later = corpus[:200], corpus[200:]
    docs = [user_doc(i, text, n) for n, (i, text) in enumerate(first)]
    post_by_other_clients(user_core, docs)
    assert run_cli("install", "--solr-url", user_core.url, "--text-field", "body")[0] == 0
    assert run_cli("backfill", "--solr-url", user_core.url, "--no-progress")[0] == 0
    expected = {d["id"]: d for d in user_core.docs().values()}

    syncer = open_syncer(SolrClient(user_core.url), reconcile_interval=1.0)
    assert isinstance(syncer, CompanionSyncer)
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
        new_docs = [user_doc(i, text, 200 + n) for n, (i, text) in enumerate(later)]
        user_core.post_json(new_docs)
        replaced = rng.sample(sorted(expected), 15)
        for doc_id in replaced:
            doc = dict(expected[doc_id], title="replaced " + doc_id)
            doc.pop("_version_", None)
            if rng.random() < 0.5:
                doc["body"] = doc["body"] + " A closing line added on replacement."
            user_core.post_json([doc])
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
        searcher = Searcher(open_collection(user_core.url))
        while not any(d.id == "zz-late" for d in searcher.find_near_dups(source)):
            assert time.monotonic() - posted < 10, "a document posted by plain HTTP was not findable in 10 s"
            time.sleep(0.1)
        lag = time.monotonic() - posted
        # Deleted documents leave the companion within a reconcile interval (1 s here).
        deadline = time.monotonic() + 30
        while set(deleted) & set(companion_digests(user_core)):
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

    final = user_core.docs()
    assert not set(deleted) & set(final)
    # Every text is signed from its current version, and nothing else is in the companion.
    assert companion_digests(user_core) == {i: digest(d["body"]) for i, d in final.items()}

    # The same data, indexed by `index` into a neardup collection.
    data = tmp_path / "same.jsonl"
    data.write_text("".join(json.dumps({"id": i, "text": d["body"]}) + "\n" for i, d in sorted(final.items())))
    code, _, err = run_cli("index", str(data), "--solr-url", solr.url, "-q")
    assert code == 0, err
    for flags in (["--writeup-ranking"], ["--threshold", "0.5", "--method", "lsh"]):
        ours, theirs = tmp_path / "ours.tsv", tmp_path / "theirs.tsv"
        assert run_cli("report", "--solr-url", user_core.url, "--out", str(theirs), *flags)[0] == 0
        assert run_cli("report", "--solr-url", solr.url, "--out", str(ours), *flags)[0] == 0
        assert pairs_of(theirs) == pairs_of(ours) and len(pairs_of(ours)) >= 5
        assert any(source in line and "zz-late" in line for line in pairs_of(ours))
        assert any(source in line and edited[-1] in line for line in pairs_of(ours)) or flags == ["--writeup-ranking"]
    lookups_theirs, lookups_ours = Searcher(open_collection(user_core.url)), Searcher(solr)
    for doc_id in [source, edited[-1], *replaced[:5], *rng.sample(sorted(final), 10)]:
        assert ([(d.id, d.edit_distance, d.jaccard) for d in lookups_theirs.find_near_dups(doc_id)]
                == [(d.id, d.edit_distance, d.jaccard) for d in lookups_ours.find_near_dups(doc_id)])


def test_same_pairs_as_index_after_install_backfill_and_sync(user_core, solr, corpus, tmp_path):
    same_pairs_scenario(user_core, solr, corpus, tmp_path)


def test_a_stopped_backfill_resumes_after_its_last_page(user_core, corpus, monkeypatch):
    docs = [user_doc(i, text, n) for n, (i, text) in enumerate(corpus[:100])]
    user_core.post_json(docs)
    assert run_cli("install", "--solr-url", user_core.url, "--text-field", "body")[0] == 0
    companion = open_collection(user_core.url)
    # Read pages of 10 documents, added in batches of 5, the last key saved every 20 documents (2 pages): the add
    # that holds the 46th key (page 5's second batch) fails, after pages 1-4 are in and the 40th key is saved.
    monkeypatch.setattr(companion_sync, "_MIN_READ_PAGE", 10)
    monkeypatch.setattr(companion_sync, "_MAX_READ_PAGE", 10)
    monkeypatch.setattr(companion_sync, "_STATE_EVERY_DOCS", 20)
    failing_key = sorted(d["id"] for d in docs)[45]
    real_add = SolrClient.add

    def add_then_fail(self, batch, **kwargs):
        if any(d.get("id") == failing_key for d in batch):
            raise ConnectionError("the companion went away")
        real_add(self, batch, **kwargs)

    monkeypatch.setattr(SolrClient, "add", add_then_fail)
    with pytest.raises(ConnectionError):
        backfill(companion, batch_size=5)
    monkeypatch.setattr(SolrClient, "add", real_add)
    state = read_state(companion)
    assert state.backfill_unfinished and state.backfill_after_key == sorted(d["id"] for d in docs)[39]
    read: list[int] = []
    real_pages = companion_sync.source_pages_by_key

    def counting_pages(*args, **kwargs):
        for page, cursor in real_pages(*args, **kwargs):
            read.append(len(page))
            yield page, cursor

    monkeypatch.setattr(companion_sync, "source_pages_by_key", counting_pages)
    summary = backfill(companion, batch_size=5, verify=False)
    assert read == [10] * 6  # resumed after the four pages saved (page 5's first batch is signed again)
    assert summary.signed == len(docs) - 40
    assert companion_digests(user_core) == {d["id"]: digest(d["body"]) for d in docs}
    assert not read_state(companion).backfill_unfinished and read_state(companion).backfill_after_key is None


def test_backfill_racing_concurrent_updates_then_sync_signs_every_current_text(user_core, corpus):
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
            resp = session.post(f"{user_core.url}/update", params={"wt": "json", "commitWithin": 100}, timeout=60,
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
    print(f"{writes[0]} concurrent writes; backfill: {summary.format()}")
    assert writes[0] >= 5 and summary.signed == len(docs)
    user_core.commit()
    found = user_core.docs("id,views,body")
    assert {i: {"views": d["views"], "body": d["body"]} for i, d in found.items()} == last
    # What changed after backfill read it is read again by sync: it starts from the version backfill began at.
    open_syncer(SolrClient(user_core.url)).run_once()
    assert companion_digests(user_core) == {i: digest(v["body"]) for i, v in last.items()}


def test_sync_reads_only_what_changed_and_an_idle_pass_reads_nothing(user_core, corpus):
    docs = [user_doc(i, text, n) for n, (i, text) in enumerate(corpus[:30])]
    user_core.post_json(docs)
    assert run_cli("install", "--solr-url", user_core.url, "--text-field", "body")[0] == 0
    companion = open_collection(user_core.url)
    syncer = CompanionSyncer(companion, version_margin_s=0)
    first = syncer.run_once()
    assert (first.added, first.edited, first.checked) == (len(docs), 0, len(docs))
    assert syncer.run_once().checked == 0  # idle: nothing read
    edited = docs[4]["id"]
    before = {i: d["_version_"] for i, d in user_core.docs().items()}
    user_core.atomic_set(edited, body="A text edited in place by the pipeline, with no date of its own.")
    user_core.atomic_set(docs[5]["id"], views=1000)  # another field: the text is the same, nothing to write
    summary = syncer.run_once(reconcile=False)
    assert (summary.added, summary.edited, summary.checked) == (0, 1, 2)
    assert companion_digests(user_core)[edited] == digest("A text edited in place by the pipeline, with no date "
                                                          "of its own.")
    assert {i: d["_version_"] for i, d in user_core.docs().items() if i not in (edited, docs[5]["id"])} == \
        {i: v for i, v in before.items() if i not in (edited, docs[5]["id"])}
    # A restarted sync starts from the version the last pass that wrote saved.
    assert CompanionSyncer(companion, version_margin_s=0).run_once().checked <= 2
    full = CompanionSyncer(companion, full_scan=True)
    assert full.run_once().checked == len(docs)
    user_core.delete([docs[0]["id"]])
    gone = syncer.run_once()
    assert gone.deleted == 1 and docs[0]["id"] not in companion_digests(user_core)


def test_sync_with_a_changed_field_reads_only_what_changed(user_core, corpus):
    docs = [user_doc(i, text, n) for n, (i, text) in enumerate(corpus[:30])]
    user_core.post_json(docs)
    assert run_cli("install", "--solr-url", user_core.url, "--text-field", "body")[0] == 0
    syncer = CompanionSyncer(open_collection(user_core.url), changed_field="published")
    first = syncer.run_once()
    assert first.added == len(docs) and first.checked == len(docs)
    a, b = docs[0]["id"], docs[1]["id"]
    user_core.atomic_set(a, body="A new text for the first article, edited in place.", published="NOW")
    user_core.atomic_set(b, body="A new text for the second article, date left alone.")
    second = syncer.run_once()
    assert (second.added, second.edited, second.checked) == (0, 1, 1)
    assert companion_digests(user_core)[a] == digest("A new text for the first article, edited in place.")
    with pytest.raises(InvalidParameterError, match="changed_field"):
        CompanionSyncer(open_collection(user_core.url), changed_field="title")


def test_sync_signs_what_other_clients_post_to_our_own_collection(solr, corpus):
    from neardup_solr.solr.indexer import Indexer

    Indexer(solr).index_records(corpus[:20])
    source_id, text = corpus[3]
    requests.post(f"{solr.url}/update", params={"commit": "true"}, timeout=60,
                  json=[{"id": "posted-by-curl", "content": text + " posted by another client"}]).raise_for_status()
    searcher = Searcher(solr)
    assert "posted-by-curl" not in [d.id for d in searcher.find_near_dups(source_id)]
    syncer = open_syncer(solr)
    assert isinstance(syncer, Syncer)
    assert syncer.run_once().added == 1
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


def test_groups_go_into_the_companion_and_follow_what_sync_and_backfill_sign(user_core, corpus, tmp_path):
    """Groups of an installed collection: 'groups --to-solr' with the user's URL writes them into the companion;
    what sync and backfill sign afterwards gets its group (the nearest kept neighbour's at or above the threshold,
    else a new one); a folded search runs on the companion; the user's documents are never written."""
    from neardup_solr.solr.folded_search import folded_search
    from neardup_solr.solr.collection import SolrCollection

    user_core.post_json([user_doc(i, text, n) for n, (i, text) in enumerate(corpus[:80])])
    schema_before = user_core.schema()
    assert run_cli("install", "--solr-url", user_core.url, "--text-field", "body")[0] == 0
    code, out, err = run_cli("backfill", "--solr-url", user_core.url, "--no-progress")
    assert code == 0 and "near-duplicate group" not in out, err
    companion = open_collection(user_core.url)
    assert {g for _, g, _ in SolrCollection(companion).read_groups()} == {None}  # groups never written: none given

    pairs = tmp_path / "pairs.tsv"
    assert run_cli("report", "--solr-url", user_core.url, "--threshold", "0.8", "--out", str(pairs))[0] == 0
    code, out, err = run_cli("groups", str(pairs), "--to-solr", "--solr-url", user_core.url)
    assert code == 0 and "80 documents" in out, err
    written = {i: (g, k) for i, g, k in SolrCollection(companion).read_groups()}
    assert all(g is not None for g, _ in written.values())
    kept = next(i for i, (g, k) in sorted(written.items()) if k == 1 and
                sum(1 for other, _ in written.values() if other == g) > 1)
    texts = dict(corpus)
    fresh = "Quarterly figures of the regional water board show reservoir levels rising after the long wet winter"
    user_core.post_json([user_doc("zcopy", texts[kept] + " indeed", 1), user_doc("zlone", corpus[-1][1], 2),
                         user_doc("zpair1", fresh, 3), user_doc("zpair2", fresh + " again", 4)])
    before = user_core.raw_documents()
    code, out, err = run_cli("sync", "--solr-url", user_core.url)
    assert code == 0 and "4 given their near-duplicate group" in out, (out, err)
    now = {i: (g, k) for i, g, k in SolrCollection(companion).read_groups()}
    assert now["zcopy"] == (written[kept][0], 0)
    assert now["zlone"][1] == 1 and now["zlone"][0] not in {g for g, _ in written.values()}
    assert now["zpair1"][1] == 1 and now["zpair2"] == (now["zpair1"][0], 0)
    assert all(now[i] == written[i] for i in written)

    found = folded_search(companion, texts[kept], rows=5, copies=10)
    head = next(h for h in found.hits if h.group == written[kept][0])
    assert head.id == kept and "zcopy" in {c.id for c in head.copies}
    # The kept document deleted by the pipeline: the companion follows and another member heads the group.
    user_core.delete([kept])
    code, out, err = run_cli("sync", "--solr-url", user_core.url)
    assert code == 0 and "1 deleted" in out, (out, err)
    members = {i: k for i, g, k in SolrCollection(companion).read_groups() if g == written[kept][0]}
    assert kept not in members and sorted(members.values()).count(1) == 1
    assert user_core.raw_documents() != before  # (the pipeline's delete)
    assert user_core.schema() == schema_before
    assert run_cli("uninstall", "--solr-url", user_core.url)[0] == 0
    assert user_core.schema() == schema_before


def test_an_earlier_install_inside_your_documents_is_recognised_and_uninstall_removes_it(user_core):
    """Installs of the first design added our fields to the user's schema; they are refused by install, backfill
    and sync (which would have to rewrite the user's documents), and uninstall still removes them."""
    user_core.post_json([user_doc("a1", "the quick brown fox jumps over the lazy dog", 1)])
    schema_before = user_core.schema()
    requests.post(f"{user_core.url}/schema", timeout=60, json={
        "add-field-type": [{"name": "neardup_string", **FIELD_TYPES["neardup_string"]},
                           {"name": "neardup_stored_text", **FIELD_TYPES["neardup_stored_text"]}],
        "add-field": [{"name": "md5_hash", "type": "neardup_string", "indexed": True, "stored": True},
                      {"name": "dataset", "type": "neardup_string", "indexed": True, "stored": True},
                      {"name": "neardup_settings", "type": "neardup_stored_text", "multiValued": False}]}
    ).raise_for_status()
    user_core.post_json([{"id": "__neardup_settings__", "dataset": "__meta__",
                          "neardup_settings": json.dumps({**json.loads(IndexSettings().to_json()),
                                                          "text_field": "body"})}])
    user_core.atomic_set("a1", md5_hash=digest("the quick brown fox jumps over the lazy dog"))
    for command in (["install", "--text-field", "body"], ["backfill"], ["sync"]):
        code, _, err = run_cli(*command, "--solr-url", user_core.url)
        assert code == 2 and "earlier install" in err and "uninstall" in err, (command, err)
    code, out, err = run_cli("uninstall", "--solr-url", user_core.url)
    assert code == 0 and "earlier install" in out, err
    assert user_core.schema() == schema_before
    assert set(user_core.docs()) == {"a1"} and "md5_hash" not in user_core.docs()["a1"]


def test_install_fold_updates_only_the_group_fields_in_place_and_uninstall_removes_exactly_them(user_core, corpus,
                                                                                                 tmp_path):
    """install --fold: the group fields in the user's schema, written in place. An indexed, non-stored field of the
    user's proves it: a full atomic update rebuilds a document from its stored fields and would drop that field's
    terms, an in-place update leaves them."""
    requests.post(f"{user_core.url}/schema", timeout=60, json={"add-field": {
        "name": "notes_idx", "type": "text_general", "indexed": True, "stored": False}}).raise_for_status()
    docs = [dict(user_doc(i, text, n), notes_idx=f"marker{n}") for n, (i, text) in enumerate(corpus[:60])]
    user_core.post_json(docs)
    schema_before = user_core.schema()
    strip = lambda d: {k: v for k, v in d.items() if k != "_version_"}  # noqa: E731
    values_before = {i: strip(d) for i, d in user_core.docs().items()}

    code, out, err = run_cli("install", "--solr-url", user_core.url, "--text-field", "body", "--fold")
    assert code == 0 and "nd_group, nd_keep" in out, err
    assert run_cli("backfill", "--solr-url", user_core.url, "--no-progress")[0] == 0
    pairs = tmp_path / "pairs.tsv"
    assert run_cli("report", "--solr-url", user_core.url, "--threshold", "0.8", "--out", str(pairs))[0] == 0
    code, out, err = run_cli("groups", str(pairs), "--to-solr", "--solr-url", user_core.url)
    assert code == 0 and "60 of your documents given their group in place" in out, (out, err)

    # fl=* as before (the group fields are not returned as stored), every non-stored field's terms still there.
    assert {i: strip(d) for i, d in user_core.docs().items()} == values_before
    for n in (0, 17, 59):
        hits = requests.get(f"{user_core.url}/select", params={"q": f"notes_idx:marker{n}", "fl": "id"},
                            timeout=30).json()["response"]["docs"]
        assert [h["id"] for h in hits] == [docs[n]["id"]]
    # The user's own searches fold: one document a group.
    companion = open_collection(user_core.url)
    from neardup_solr.solr.collection import SolrCollection

    groups = {i: (g, k) for i, g, k in SolrCollection(companion).read_groups()}
    held = {d["id"]: (d["nd_group"], d["nd_keep"]) for d in user_core.docs("id,nd_group,nd_keep").values()}
    assert held == groups
    folded = requests.get(f"{user_core.url}/select", timeout=30, params={
        "q": "*:*", "fq": "{!collapse field=nd_group nullPolicy=expand}", "fl": "id", "rows": 1000}).json()
    assert folded["response"]["numFound"] == len({g for g, _ in groups.values()}) < len(docs)
    kept_only = requests.get(f"{user_core.url}/select", timeout=30, params={
        "q": "*:*", "fq": "-nd_keep:0", "rows": 0}).json()
    assert kept_only["response"]["numFound"] == folded["response"]["numFound"]

    # A new document posted by the pipeline gets its group from sync, in place too.
    kept = next(i for i, (g, k) in groups.items() if k == 1 and sum(1 for other, _ in groups.values() if other == g) > 1)
    user_core.post_json([dict(user_doc("zcopy", dict(corpus)[kept] + " indeed", 1), notes_idx="markerz")])
    assert run_cli("sync", "--solr-url", user_core.url)[0] == 0
    assert user_core.docs("id,nd_group,nd_keep")["zcopy"]["nd_group"] == groups[kept][0]

    # A schema changed under us so that the update would no longer be in place: refused, nothing written.
    requests.post(f"{user_core.url}/schema", timeout=60, json={"add-copy-field": {"source": "nd_keep",
                                                                                  "dest": "notes_idx"}}
                  ).raise_for_status()
    code, _, err = run_cli("groups", str(pairs), "--to-solr", "--solr-url", user_core.url)
    assert code == 2 and "not be in place" in err, err
    requests.post(f"{user_core.url}/schema", timeout=60, json={"delete-copy-field": {"source": "nd_keep",
                                                                                     "dest": "notes_idx"}}
                  ).raise_for_status()

    code, out, err = run_cli("uninstall", "--solr-url", user_core.url)
    assert code == 0 and "field nd_group" in out and "field type neardup_fold_int" in out, err
    assert user_core.schema() == schema_before


def test_a_single_node_without_our_configset_is_told_where_to_put_it(user_core, monkeypatch):
    """A standalone Solr takes no configset uploads: install says where our configset goes, and makes nothing."""
    from neardup_solr.solr import settings as solr_settings

    monkeypatch.setattr(solr_settings, "CONFIGSET_NAME", "neardup_not_on_this_node")
    code, _, err = run_cli("install", "--solr-url", user_core.url, "--text-field", "body")
    assert code == 2 and len(error_lines(err)) == 1, err
    assert "configsets directory" in err and "neardup_not_on_this_node" in err
    assert requests.get(f"{user_core.base_url}/{companion_name(user_core.name)}/admin/ping",
                        timeout=30).status_code == 404


def test_a_reconciling_pass_whose_counts_agree_reads_no_keys(user_core, corpus, monkeypatch):
    docs = [user_doc(i, text, n) for n, (i, text) in enumerate(corpus[:30])]
    user_core.post_json(docs)
    assert run_cli("install", "--solr-url", user_core.url, "--text-field", "body")[0] == 0
    companion = open_collection(user_core.url)
    key_reads: list[int] = []
    real_keys = companion_sync.source_keys

    def counting_keys(*args, **kwargs):
        key_reads.append(1)
        yield from real_keys(*args, **kwargs)

    monkeypatch.setattr(companion_sync, "source_keys", counting_keys)
    syncer = CompanionSyncer(companion, version_margin_s=0)
    assert syncer.run_once().added == len(docs) and len(key_reads) == 1  # a syncer's first reconcile is full
    assert syncer.run_once().deleted == 0 and len(key_reads) == 1  # the counts agree: no key read
    user_core.delete([docs[0]["id"]])
    gone = syncer.run_once()
    assert gone.deleted == 1 and len(key_reads) == 2 and docs[0]["id"] not in companion_digests(user_core)
    # A deletion balanced by an addition the version pass has not signed yet hides from the counts for one pass:
    # the next pass signs the addition, the counts differ, and the keys are read.
    user_core.delete([docs[1]["id"]])
    user_core.post_json([user_doc("late-1", corpus[40][1], 40)])
    assert syncer.reconcile() == 0  # the counts agree (29 and 29), so nothing is read yet
    assert len(key_reads) == 2
    caught = syncer.run_once()
    assert (caught.added, caught.deleted) == (1, 1) and len(key_reads) == 3
    assert set(companion_digests(user_core)) == {d["id"] for d in docs[2:]} | {"late-1"}
    assert syncer.reconcile(full=True) == 0 and len(key_reads) == 4


def test_follow_deletes_at_once_what_the_user_deleted_without_waiting_for_the_interval(user_core, corpus):
    docs = [user_doc(i, text, n) for n, (i, text) in enumerate(corpus[:40])]
    user_core.post_json(docs)
    assert run_cli("install", "--solr-url", user_core.url, "--text-field", "body")[0] == 0
    assert run_cli("backfill", "--solr-url", user_core.url, "--no-progress")[0] == 0
    # An hour between interval reconciles: only the counts (the companion ahead of the user's collection) can
    # start the pass that finds these deletions.
    syncer = open_syncer(SolrClient(user_core.url), reconcile_interval=3600.0)
    stop, passes, failures = threading.Event(), [], []

    def follow() -> None:
        try:
            syncer.follow(0.2, stop, passes.append)
        except BaseException as exc:  # noqa: BLE001 - shown by the test
            failures.append(exc)

    follower = threading.Thread(target=follow)
    follower.start()
    try:
        deadline = time.monotonic() + 30
        while not any(p.reconciled for p in passes):  # the first pass's reconcile (counts agree: nothing read)
            assert time.monotonic() < deadline and not failures, failures
            time.sleep(0.05)
        time.sleep(1.5)
        reconciles = sum(1 for p in passes if p.reconciled)
        assert reconciles == 1  # the counts agree: no pass started by them
        gone = [docs[3]["id"], docs[7]["id"]]
        deleted_at = time.monotonic()
        user_core.delete(gone)
        # Done when the companion has lost both and the pass that deleted them has reported itself (a moment after
        # its deletions are visible, on a busy machine).
        while (set(gone) & set(companion_digests(user_core))
               or not any(p.reconciled and p.deleted == 2 for p in passes)):
            assert time.monotonic() - deleted_at < 10, ("deletions waited for the reconcile interval", passes)
            assert not failures, failures
            time.sleep(0.05)
    finally:
        stop.set()
        follower.join(timeout=60)
    assert not failures, failures
    assert set(companion_digests(user_core)) == {d["id"] for d in docs} - set(gone)


def user_cache_sizes(core: UserCore) -> dict[str, int]:
    """How many entries the user's filter and query result caches hold (the core's metrics)."""
    beans = requests.get(f"{core.url}/admin/mbeans", params={"cat": "CACHE", "stats": "true", "wt": "json"},
                         timeout=30).json()["solr-mbeans"][1]
    return {name: next(v for k, v in beans[name]["stats"].items() if k.endswith(".size"))
            for name in ("filterCache", "queryResultCache")}


def test_a_deletion_is_found_by_counting_key_ranges_and_reading_only_the_range_that_holds_it(user_core, corpus,
                                                                                              monkeypatch):
    # Keys as users write them: the range ends are written as XML attributes, so none of this is query syntax.
    tricky = ['a "quoted" key', "back\\slash\\", "star*", "colon:key", "[bracket]", "{brace}", "TO", "-minus",
              "über", "中文", "AND OR"]
    keys = tricky + [f"doc-{n:04d}" for n in range(300 - len(tricky))]
    docs = [user_doc(key, corpus[n % len(corpus)][1] + f" variant {n}", n) for n, key in enumerate(keys)]
    user_core.post_json(docs)
    assert run_cli("install", "--solr-url", user_core.url, "--text-field", "body")[0] == 0
    assert run_cli("backfill", "--solr-url", user_core.url, "--no-progress")[0] == 0
    monkeypatch.setattr(companion_sync, "_FENCE_EVERY", 10)  # 300 keys: 30 ranges, as 1,000 keys a range at 30k
    syncer = open_syncer(SolrClient(user_core.url), reconcile_interval=3600.0)
    assert syncer.reconcile() == 0 and syncer.last_reconcile == "every key"  # a syncer's first: the cuts
    gone = ['a "quoted" key', "back\\slash\\", "doc-0150"]
    user_core.delete(gone)
    caches = user_cache_sizes(user_core)
    assert syncer.reconcile() == 3 and syncer.last_reconcile == "ranges"
    assert user_cache_sizes(user_core) == caches  # nothing of ours in the user's caches
    assert set(companion_digests(user_core)) == set(keys) - set(gone)
    assert syncer.reconcile() == 0 and syncer.last_reconcile == "counts"
    # A deletion its range's counts cannot see (an addition not signed yet beside it) waits for the pass that signs
    # the addition; the other is found now.
    user_core.delete(["doc-0200", "doc-0260"])
    user_core.post_json([user_doc("doc-0200a", corpus[5][1], 5)])
    assert syncer.reconcile() == 1 and syncer.last_reconcile == "ranges"
    assert "doc-0260" not in companion_digests(user_core) and "doc-0200" in companion_digests(user_core)
    caught = syncer.run_once()
    assert (caught.added, caught.deleted) == (1, 1) and syncer.last_reconcile == "ranges"
    assert set(companion_digests(user_core)) == set(keys) - set(gone) - {"doc-0200", "doc-0260"} | {"doc-0200a"}
    # Where the ranges find fewer than the totals differ by (counts taken while Solr changed), every key is read.
    real_find_gone = companion_sync.find_gone

    def missing_one(*args, **kwargs):
        search = real_find_gone(*args, **kwargs)
        search.gone = search.gone[1:]
        return search

    monkeypatch.setattr(companion_sync, "find_gone", missing_one)
    user_core.delete(["doc-0010", "doc-0020"])
    assert syncer.reconcile() == 2 and syncer.last_reconcile == "every key"


def test_install_with_an_encoder_gives_the_companion_vectors_and_your_collection_stays_untouched(user_core):
    """Near duplicates by meaning on a collection of yours: the vectors live in the companion, beside the
    signatures; a rewording is found by cosine, and your documents and schema are byte for byte as they were."""
    from neardup_solr.signing.encoder import in_package_encoder

    texts = {"a": "The cat sat quietly on the warm mat by the kitchen window all afternoon.",
             "b": "All afternoon the cat was sitting quietly on the warm mat near the kitchen window.",
             "c": "Heavy rain flooded the valley roads and the village was cut off for two days."}
    post_by_other_clients(user_core, [user_doc(i, t, n) for n, (i, t) in enumerate(texts.items())])
    schema_before, docs_before = user_core.schema(), user_core.raw_documents()
    code, _, err = run_cli("install", "--solr-url", user_core.url, "--text-field", "body", "--encoder", "wordllama")
    assert code == 0, err
    code, out, err = run_cli("backfill", "--solr-url", user_core.url, "--no-progress")
    assert code == 0, err
    code, out, err = run_cli("near-dups", "a", "--similarity", "cosine", "--threshold", "0.8", "--json",
                             "--solr-url", user_core.url)
    assert code == 0, err
    vectors = in_package_encoder().encode([texts["a"], texts["b"]])
    found = json.loads(out)
    assert [m["id"] for m in found] == ["b"]
    assert found[0]["similarity"] == pytest.approx(float(vectors[0] @ vectors[1]), abs=1e-5)
    assert user_core.schema() == schema_before and user_core.raw_documents() == docs_before
