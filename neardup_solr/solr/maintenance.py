"""Operations on a whole core or collection, guarded: nothing is deleted or rewritten in one this tool did not make.

Our users run Solr already; one wrong ``--solr-url`` must not cost them a production core. So every delete (and
the segment merge) first checks that the target's schema is ours (the fields our documents carry, with our
types), and refuses with one line naming the core and what it found otherwise, before any change.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from neardup_solr.signing.settings import IndexSettings
from neardup_solr.solr.collection import SolrCollection
from neardup_solr.solr.queries import ALL_DOCUMENTS, dataset_query
from neardup_solr.solr.settings_store import INSTALLED_SETTINGS_FIELD
from neardup_solr.errors import ForeignCollectionError, NeardupError
from neardup_solr.solr.recent import recent_adds
from neardup_solr.solr.client import SolrClient
from neardup_solr.validation import check_int
from neardup_solr.solr.companion_link import read_link

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


def require_neardup_schema(client: SolrClient, *, installed_ok: bool = False) -> None:
    """Raise ForeignCollectionError unless the target's schema has our fields with our types; ``installed_ok``
    also accepts a user's collection that ``install`` prepared (our fields, their text)."""
    fields = client.schema_fields()
    if INSTALLED_SETTINGS_FIELD in fields and "content" not in fields:
        if installed_ok:
            return
        raise ForeignCollectionError(
            f"{client.url} is your own collection with near-duplicate fields added by install: its documents are "
            "your pipeline's to write and delete, so nothing was changed. Sign what it writes with 'neardup-solr "
            "sync'; remove what install added with 'neardup-solr uninstall'")
    if "minhash_sig" not in fields:
        raise ForeignCollectionError(
            f"{client.url} is not a neardup-solr core or collection. Nothing was changed. For near duplicates in it, "
            f"make a companion with 'neardup-solr install --solr-url {client.url} --text-field FIELD', or point "
            "--solr-url at a collection made from the neardup configset ('neardup-solr solr start', or "
            "'neardup-solr solr create-collection NAME')")
    if not installed_ok:
        link = read_link(client)
        if link is not None:
            raise ForeignCollectionError(
                f"{client.url} is the companion of {link.url}, which 'neardup-solr backfill' and 'sync' keep equal "
                "to it: nothing was changed. Add, change and delete documents in your collection; sync follows")
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


def require_token_fields(client: SolrClient, settings: IndexSettings) -> None:
    """Raise ForeignCollectionError when the schema lacks the field of a token kind ``settings`` index: a core
    made from an older configset has no ``content_grams`` or ``content_nh``, and Solr would refuse every document
    with a bare "unknown field" error."""
    wanted = {kind: settings.token_field(kind) for kind in settings.fields}
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
    # Adds still waiting for their commitWithin (another process's check_and_add, say) are deleted too, so they
    # are made visible first: the count then says what was deleted, not what happened to be searchable.
    client.commit()
    if everything:
        query = ALL_DOCUMENTS
        count = SolrCollection(client).count()
    else:
        # A query that needs no $param (dataset_query): SolrCloud forwards a delete-by-query to the other shard
        # leaders without the request's parameters, so a reference would clear only the receiving node's shard.
        query = dataset_query(dataset)
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


@dataclass
class MergeSummary:
    """What :func:`merge_segments` did: segments of the answering core before and after, and the time taken."""

    segments_before: int
    segments_after: int
    seconds: float

    def format(self) -> str:
        return (f"merged {self.segments_before} segment{'s' if self.segments_before != 1 else ''} into "
                f"{self.segments_after} in {self.seconds:.1f} s")


def segment_count(client: SolrClient) -> int:
    """Index segments of the core that answers (on a SolrCloud: the one replica the request reached)."""
    return int(client.get_json("admin/luke", {"numTerms": 0, "show": "index"})["index"]["segmentCount"])


# From the segment counts measured in merge_segments' docstring: a bulk load of 1M documents left 22 to 35.
SEGMENTS_WORTH_MERGING = 10


def merge_advice(client: SolrClient, many: int | None = None) -> str | None:
    """What to tell someone whose index has ``many`` segments or more after a load (default
    ``SEGMENTS_WORTH_MERGING``; None below that, or when Solr does not say): a merge makes lookups faster, and
    what it costs."""
    many = SEGMENTS_WORTH_MERGING if many is None else many
    try:
        count = segment_count(client)
    except (NeardupError, KeyError, TypeError, ValueError) as exc:
        log.debug("segment count not available from %s: %s", client.url, exc)
        return None
    if count < many:
        return None
    return (f"the index has {count} segments: lookups are faster once they are merged (neardup-solr optimize, "
            "or merge_segments() in Python; it rewrites the index, so it needs free disk about the index's size)")


def merge_segments(client: SolrClient, max_segments: int = 1) -> MergeSummary:
    """Merge the index into at most ``max_segments`` segments (Solr's optimize), waiting until it is done.

    Why: a lookup's band query seeks each band key in the terms dictionary of every segment, so its cost grows
    with the segment count. A bulk load left a core of 1,000,000 documents with 22 to 35 segments; merged into
    one, Solr's CPU per lookup fell from 1.1-1.5 ms to 0.35 ms (``benchmarks/service.py``). Worth it after a
    bulk load into an index that then mostly serves lookups; an index under steady writes drifts back to many
    segments, and a merge rewrites the whole index (it needs free disk about the index's size, and it took 36 s
    for 1,000,000 documents on 2 cores). On a SolrCloud every shard is merged."""
    max_segments = check_int("max_segments", max_segments, "max_segments")
    require_neardup_schema(client, installed_ok=True)
    before = segment_count(client)
    started = time.monotonic()
    # The merge of a big index takes minutes: the call waits up to an hour for it and for the new searcher.
    client.get_json("update", {"optimize": "true", "maxSegments": max_segments, "waitSearcher": "true"},
                    timeout=max(client.timeout, 3600))
    summary = MergeSummary(before, segment_count(client), round(time.monotonic() - started, 1))
    log.info("%s (%s)", summary.format(), client.url)
    return summary
