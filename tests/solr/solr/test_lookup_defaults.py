"""Honest lookup defaults (issue 17 items 2 and 3), against a real Solr.

A lookup finds every near duplicate at the collection's threshold, with no word edit-distance cap, no
first-word filter and no row cap, in the API and on the command line; the write-up's ranking stays available
as a named choice. A Searcher made before anything is indexed follows the settings stored later.
"""

from __future__ import annotations

import json
import random

import pytest

from neardup_solr import WRITEUP_RANKING, Indexer, IndexSettings, InvalidParameterError, Searcher
from neardup_solr.options import LookupOptions
from neardup_solr.solr.documents import WRITE_UP_TOKEN_FIELDS
from neardup_solr.cli import main

pytestmark = pytest.mark.solr

MODES = ("shingles", "minhash", "lsh")


def three_hundred_words(seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    vocabulary = [f"w{i}" for i in range(5000)]
    return [rng.choice(vocabulary) for _ in range(300)]


def cli(argv: list[str]) -> int:
    """The command in this process; argparse's own exits become exit codes."""
    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2


def jaccard_of(a: list[str], b: list[str], n: int = 3) -> float:
    sa = {tuple(a[i:i + n]) for i in range(len(a) - n + 1)}
    sb = {tuple(b[i:i + n]) for i in range(len(b) - n + 1)}
    return len(sa & sb) / len(sa | sb)


@pytest.fixture()
def issue_copies(solr):
    """The issue's case: a 300-word text, one indexed copy with another first word (J .993) and one with 5
    words changed (J .904)."""
    words = three_hundred_words()
    first = ["other"] + words[1:]
    five = list(words)
    for position in (50, 100, 150, 200, 250):
        five[position] = f"changed{position}"
    assert round(jaccard_of(words, first), 3) == 0.993
    assert round(jaccard_of(words, five), 3) == 0.904
    # Every write-up mode is looked up below, minhash too: its tokens are opt-in.
    summary = Indexer(solr, IndexSettings(fields=WRITE_UP_TOKEN_FIELDS)).index_records(
        [("first", " ".join(first)), ("five", " ".join(five))])
    assert summary.indexed == 2
    return " ".join(words)


@pytest.mark.parametrize("mode", MODES)
def test_a_new_text_finds_copies_differing_in_the_first_word_or_in_five_words(solr, issue_copies, mode):
    found = Searcher(solr).find_near_dups_of_text(issue_copies, mode=mode)
    assert sorted(m.id for m in found) == ["first", "five"]
    by_id = {m.id: m for m in found}
    assert by_id["first"].edit_distance == 1 and round(by_id["first"].jaccard, 3) == 0.993
    assert by_id["five"].edit_distance == 5 and round(by_id["five"].jaccard, 3) == 0.904


def test_the_writeup_ranking_is_a_named_choice_and_still_misses_them(solr, issue_copies):
    searcher = Searcher(solr)
    assert searcher.find_near_dups_of_text(issue_copies, **WRITEUP_RANKING) == []
    # Its parts are explicit parameters: lifting the first-word filter alone still leaves the 5-word copy out.
    found = searcher.find_near_dups_of_text(issue_copies, **{**WRITEUP_RANKING, "first_word_filter": False})
    assert [m.id for m in found] == ["first"]


def test_a_stored_document_finds_its_copies_too(solr, issue_copies):
    Indexer(solr).index_records([("original", issue_copies)])
    found = Searcher(solr).find_near_dups("original")
    assert [m.id for m in found] == ["first", "five"]  # smallest edit distance first


def test_thirty_indexed_copies_give_thirty(solr):
    text = " ".join(three_hundred_words(11))
    Indexer(solr, IndexSettings(fields=WRITE_UP_TOKEN_FIELDS)).index_records([(f"copy{i}", text) for i in range(30)])
    searcher = Searcher(solr)
    for mode in MODES:
        found = searcher.find_near_dups_of_text(text, mode=mode)
        assert len(found) == 30 and all(m.exact for m in found), mode
    assert len(searcher.find_near_dups_of_text(text, rows=10)) == 10  # a row cap is still there when asked


def test_a_default_index_answers_shingle_and_lsh_lookups_and_names_the_fields_minhash_mode_needs(solr, solr_url,
                                                                                                capsys):
    text = " ".join(three_hundred_words(12))
    Indexer(solr).index_records([("copy", text)])
    searcher = Searcher(solr)
    assert searcher.settings.fields == ("shingles", "lsh", "words") and searcher.settings.shingle_tokens == "hash"
    for mode in ("shingles", "lsh"):
        assert [m.id for m in searcher.find_near_dups_of_text(text, mode=mode)] == ["copy"], mode
    with pytest.raises(ValueError, match=r"without 'minhash' tokens \(content_sg\).*--fields including minhash"):
        searcher.find_near_dups_of_text(text, mode="minhash")
    assert cli(["near-dups", "--text", text, "--mode", "minhash", "--solr-url", solr_url]) == 2
    assert "--fields including minhash" in capsys.readouterr().err


def test_the_collection_threshold_is_the_default_and_none_keeps_every_candidate(solr):
    words = three_hundred_words(3)
    half = words[:150] + three_hundred_words(4)[:150]  # J well below 0.8, but many shared shingles
    Indexer(solr, IndexSettings(lsh_threshold=0.8)).index_records([("half", " ".join(half))])
    searcher = Searcher(solr)
    assert searcher.find_near_dups_of_text(" ".join(words)) == []
    loose = searcher.find_near_dups_of_text(" ".join(words), min_jaccard=None)
    assert [m.id for m in loose] == ["half"] and loose[0].jaccard < 0.5


def test_max_edit_distance_means_the_same_in_the_api_and_the_cli(solr, solr_url, issue_copies, capsys):
    searcher = Searcher(solr)
    with pytest.raises(InvalidParameterError) as exc:
        searcher.find_near_dups_of_text(issue_copies, max_edit_distance=-1)
    assert exc.value.param == "max_edit_distance" and "None" in str(exc.value)
    assert cli(["near-dups", "--text", issue_copies, "--max-edit-distance", "-1", "--solr-url", solr_url]) == 2
    assert "--max-edit-distance must be" in capsys.readouterr().err
    # A cap of 1 keeps the first-word copy only, in both; None / 'none' keep both.
    assert [m.id for m in searcher.find_near_dups_of_text(issue_copies, max_edit_distance=1)] == ["first"]
    assert [m.id for m in searcher.find_near_dups_of_text(
        issue_copies, options=LookupOptions(max_edit_distance=1))] == ["first"]
    for cap, expected in (("1", ["first"]), ("none", ["first", "five"])):
        assert cli(["near-dups", "--text", issue_copies, "--max-edit-distance", cap, "--json",
                     "--solr-url", solr_url]) == 0
        assert [m["id"] for m in json.loads(capsys.readouterr().out)] == expected
    # With the write-up's ranking (edit distance <= 2 by default), 'none' lifts the cap and 1 lowers it.
    for cap, expected in (("1", ["first"]), ("none", ["first", "five"])):
        assert cli(["near-dups", "--text", issue_copies, "--writeup-ranking", "--no-first-word-filter",
                    "--max-edit-distance", cap, "--json", "--solr-url", solr_url]) == 0
        assert [m["id"] for m in json.loads(capsys.readouterr().out)] == expected


def test_max_distance_is_still_taken_with_a_deprecation_warning(solr, issue_copies):
    searcher = Searcher(solr)
    with pytest.warns(DeprecationWarning, match="max_edit_distance") as caught:
        old = searcher.find_near_dups(text=issue_copies, max_distance=1)
    assert caught[0].filename == __file__  # the warning points at the caller's line
    with pytest.warns(DeprecationWarning):
        positional = searcher.find_near_dups_by_shingles("first", 6, min_jaccard=None)
    assert [m.id for m in old] == ["first"]
    assert [m.id for m in positional] == [m.id for m in searcher.find_near_dups(
        "first", max_edit_distance=6, min_jaccard=None)] == ["five"]
    with pytest.raises(InvalidParameterError) as both:
        searcher.find_near_dups_of_text(issue_copies, options=LookupOptions(), rows=3)
    assert both.value.param == "rows"


@pytest.mark.parametrize("mode", MODES)
def test_the_cli_finds_them_by_default_and_writeup_ranking_restores_the_writeup(solr, solr_url, issue_copies,
                                                                                 mode, capsys):
    base = ["near-dups", "--text", issue_copies, "--mode", mode, "--json", "--solr-url", solr_url]
    assert cli(base) == 0
    assert sorted(m["id"] for m in json.loads(capsys.readouterr().out)) == ["first", "five"]
    assert cli(base + ["--writeup-ranking"]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_a_searcher_made_before_anything_is_indexed_follows_the_stored_settings(solr):
    """The issue's streaming loop: the Searcher is made at start-up, then char 5-grams are indexed."""
    searcher = Searcher(solr)  # nothing stored yet
    assert searcher.find_near_dups_of_text("nothing is indexed yet") == []
    indexer = Indexer(solr, IndexSettings(ngram=5, unit="char"))
    kept = []
    for i in range(20):
        text = f"stream record number {i // 2} about the weather in town"  # each text comes twice
        if not searcher.find_near_dups_of_text(text):
            indexer.index_records([(str(i), text)])
            kept.append(i)
    assert searcher.settings.ngram == 5 and searcher.settings.unit == "char"
    assert kept == list(range(0, 20, 2))
