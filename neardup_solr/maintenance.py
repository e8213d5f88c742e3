"""Destructive operations, guarded: nothing is deleted from a core or collection this tool did not make.

Our users run Solr already; one wrong ``--solr-url`` must not cost them a production core. So every delete
first checks that the target's schema is ours (the fields our documents carry, with our types), and refuses
with one line naming the core and what it found otherwise, before any change.
"""

from __future__ import annotations

import logging
from typing import Iterable

from .documents import META_DATASET, TOKEN_FIELDS
from .errors import ForeignCollectionError
from .recent import recent_adds
from .solr_client import SolrClient

log = logging.getLogger(__name__)

# The fields every neardup-solr document carries, with the field type our schema gives them. A core that
# has them all was made from our configset (or one compatible with it).
SIGNATURE_FIELDS = {
    "id": "string",
    "content": "stored_text",
    "md5_hash": "string",
    "minhash_sig": "blob_dv",
    "dataset": "string",
    "content_lsh": "set_token_dv",
}


def require_neardup_schema(client: SolrClient) -> None:
    """Raise ForeignCollectionError unless the target's schema has our fields with our types."""
    fields = client.schema_fields()
    problems = []
    for name, field_type in SIGNATURE_FIELDS.items():
        found = fields.get(name)
        if found is None:
            problems.append(f"no field {name!r}")
        elif found.get("type") != field_type:
            problems.append(f"field {name!r} is of type {found.get('type')!r}, not {field_type!r}")
    if problems:
        shown = ", ".join(sorted(fields)[:8]) + (", ..." if len(fields) > 8 else "")
        raise ForeignCollectionError(
            f"{client.url} is not a neardup-solr core or collection ({'; '.join(problems[:3])}; its fields: "
            f"{shown}). Nothing was changed. Point --solr-url at a collection made from the neardup configset "
            "('neardup-solr solr start', or 'neardup-solr solr create-collection NAME')."
        )


def require_token_fields(client: SolrClient, kinds: Iterable[str]) -> None:
    """Raise ForeignCollectionError when the schema lacks the field of a token kind to be indexed: a core made
    from an older configset has no ``content_grams``, and Solr would refuse every document with a bare
    "unknown field" error."""
    wanted = {kind: TOKEN_FIELDS[kind] for kind in kinds if kind in TOKEN_FIELDS}
    fields = client.schema_fields()
    missing = [f"{field!r} ({kind!r} tokens)" for kind, field in wanted.items() if field not in fields]
    if missing:
        raise ForeignCollectionError(
            f"the schema of {client.url} has no field {', '.join(missing)}: it was made from an older neardup "
            "configset. Nothing was changed. Restart a local Solr ('neardup-solr solr stop', then 'solr start': "
            "the configset is refreshed on start), or on SolrCloud upload the current configset and reload the "
            "collection; or index without those --fields."
        )


def clear(client: SolrClient, dataset: str | None = None, *, everything: bool = False) -> int:
    """Delete one data set's documents (``dataset``), the unlabelled documents (neither), or, only when
    ``everything`` is said, the whole collection including its stored settings. Returns how many documents
    were deleted. Refuses a core or collection whose schema is not ours."""
    if everything and dataset is not None:
        raise ValueError("clear either one data set or everything, not both")
    require_neardup_schema(client)
    if everything:
        query = "*:*"
        count = client.count("*:*", ["-{!term f=dataset v=$nd.meta}"], [("nd.meta", META_DATASET)])
    elif dataset is not None:
        # The value inline after the term parser's local params: taken literally (no query syntax is parsed),
        # and it reaches every shard. A $param reference would not: SolrCloud forwards a delete-by-query to the
        # other shard leaders without the request's parameters, so only the receiving node's shard was cleared.
        query = "{!term f=dataset}" + dataset
        count = client.count(query)
    else:
        query = "*:* -dataset:[* TO *]"
        count = client.count(query)
    client.delete_by_query(query)
    recent = recent_adds(client)  # adds of this process that Solr's searcher may not show yet
    if everything:
        recent.clear()
    else:
        recent.forget_dataset(dataset)
    log.info("cleared %d documents (%s) from %s", count,
             "everything" if everything else f"data set {dataset!r}" if dataset else "unlabelled", client.url)
    return count
