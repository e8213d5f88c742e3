"""The Solr core itself: schema as configured, overlap scoring, long documents."""

from __future__ import annotations

import re

import pytest

from neardup_solr.solr import settings
from repo_paths import REPO

pytestmark = pytest.mark.solr


def test_schema_has_every_field_as_configured(solr):
    fields = solr.schema_fields()
    expected = {
        # name: (type, multiValued, indexed, stored)
        "id": ("string", False, True, True),
        "content": ("stored_text", False, False, True),
        "md5_hash": ("string", False, True, True),
        "num_words": ("pint", False, True, True),
        "num_shingles": ("pint", False, True, True),
        "first_word": ("string", False, True, True),
        "content_ng": ("set_token", True, True, False),
        "content_sg": ("set_token", True, True, False),
        "content_lsh": ("set_token_dv", True, True, False),
        "content_words": ("set_token", True, True, False),
        "content_grams": ("set_token", True, True, False),
        "dataset": ("string", False, True, True),
    }
    for name, (ftype, multi, indexed, stored) in expected.items():
        assert name in fields, f"missing field {name}"
        field = fields[name]
        assert field["type"] == ftype, name
        assert bool(field.get("multiValued", False)) == multi, name
        assert bool(field.get("indexed", True)) == indexed, name
        assert bool(field.get("stored", True)) == stored, name
    types = solr.schema_field_types()
    for set_type in ("set_token", "set_token_dv"):
        assert types[set_type]["similarity"]["class"] == "solr.BooleanSimilarityFactory"
    assert types["set_token_dv"]["docValues"] is True


def test_index_and_query_documents(solr):
    solr.add([
        {"id": "1", "content": "alpha beta", "md5_hash": "m1", "num_words": 2, "first_word": "alpha"},
        {"id": "2", "content": "gamma delta", "md5_hash": "m2", "num_words": 2, "first_word": "gamma"},
    ])
    solr.commit()
    res = solr.select({"q": "first_word:gamma", "fl": "id,content,num_words"})
    assert res["response"]["docs"] == [{"id": "2", "content": "gamma delta", "num_words": 2}]
    assert [d["id"] for d in solr.get_by_ids(["1", "2", "missing"], "id")] == ["1", "2"]


def test_or_query_score_is_the_number_of_matching_values(solr):
    solr.add([
        {"id": "known", "content_ng": ["a b c", "b c d", "c d e", "d e f"]},
        {"id": "other", "content_ng": ["a b c", "x y z"]},
    ])
    solr.commit()
    query = " OR ".join(f'content_ng:"{t}"' for t in ["a b c", "b c d", "c d e", "q q q", "x y z"])
    docs = solr.select({"q": query, "fl": "id,score"})["response"]["docs"]
    scores = {d["id"]: d["score"] for d in docs}
    assert scores == {"known": 3.0, "other": 2.0}


def test_twenty_thousand_word_document_is_found_by_all_its_shingles(solr):
    words = [f"w{i}" for i in range(20_000)]
    shingles = [" ".join(words[i : i + 3]) for i in range(len(words) - 2)]
    solr.add([{"id": "long", "content": " ".join(words), "content_ng": shingles}])
    solr.commit()
    # ~20,000 boolean clauses: past Lucene's default cap of 1024, which the write-up ran into.
    query = " OR ".join(f'content_ng:"{s}"' for s in shingles)
    docs = solr.select({"q": query, "fl": "id,score", "rows": 1})["response"]["docs"]
    assert docs == [{"id": "long", "score": float(len(shingles))}]


def test_docker_compose_names_the_same_version_and_configset():
    compose = (REPO / "docker-compose.yml").read_text()
    pom = (REPO / "solr_config" / "launcher" / "pom.xml").read_text()
    pom_version = re.search(r"<solr.version>([^<]+)</solr.version>", pom).group(1)
    assert pom_version == settings.SOLR_VERSION
    images = re.findall(r"image:\s*solr:([\w.\-]+)", compose)
    # The single node and each node of the cloud profile: every one the launcher's version.
    assert images and set(images) == {settings.SOLR_VERSION}
    assert "./solr_config/configsets/neardup" in compose
    assert (REPO / "solr_config" / "configsets" / "neardup" / "conf" / "schema.xml").exists()
