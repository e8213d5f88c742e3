"""What a test compares after a fault: the documents in the index against the ones a clean run builds."""

from __future__ import annotations

from neardup_solr.solr.documents import DocumentBuilder, IndexSettings, read_index_settings
from neardup_solr.solr.client import SolrClient

COMPARED_FIELDS = ("id", "content", "md5_hash", "num_shingles", "minhash_sig", "first_word")


def stored_documents(client: SolrClient) -> dict:
    """Every indexed document (the settings document aside), by id, with the compared fields."""
    docs = {}
    cursor = "*"
    while True:
        data = client.select({"q": "*:*", "fq": "-dataset:__meta__", "sort": "id asc", "rows": 1000,
                              "cursorMark": cursor, "fl": ",".join(COMPARED_FIELDS)})
        docs.update({d["id"]: d for d in data["response"]["docs"]})
        if data["nextCursorMark"] == cursor:
            return docs
        cursor = data["nextCursorMark"]


def clean_run_documents(path, settings: IndexSettings) -> dict:
    """The documents a clean run of a '<id> <text>' file builds, by id."""
    builder = DocumentBuilder(settings)
    items = [line.split(" ", 1) for line in path.read_text().splitlines()]
    built = builder.build([(i, t) for i, t in items]).documents
    return {d["id"]: {k: d[k] for k in COMPARED_FIELDS} for d in built}


def equals_clean_run(client: SolrClient, path) -> bool:
    return stored_documents(client) == clean_run_documents(path, read_index_settings(client))
