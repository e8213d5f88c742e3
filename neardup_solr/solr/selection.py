"""Which documents an engine means, in its own words: the pure vocabulary of the collection port
(:mod:`neardup_solr.solr.collection`), which each implementation turns into its own terms (Solr's filter queries,
or a test on a dict)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

# Solr's _version_ is milliseconds shifted left by 20 bits, from the clock of each shard's leader.
VERSION_MS_SHIFT = 20


@dataclass(frozen=True)
class Selection:
    """Which of the user's documents (never the package's own: settings, claims, counters, band locks).

    ``dataset``: only that data set. ``seen``: whether a signing pass has written ``md5_hash`` (every write of
    ours sets it). ``signed``: whether the document has a signature (``num_shingles`` >= 1). ``changed_after``:
    documents updated after that ``_version_`` was current, less ``margin_s`` seconds for shard leaders' clocks.
    ``at_or_before``: documents whose last update is that version or older. ``dated_since``: ``(field, instant,
    margin_s)``, documents whose date field is at most ``margin_s`` seconds before the ISO ``instant``.
    ``except_id``: all but that document. ``group``: the members of that group.
    """

    dataset: str | None = None
    seen: bool | None = None
    signed: bool | None = None
    changed_after: int | None = None
    margin_s: float = 0.0
    at_or_before: int | None = None
    dated_since: tuple[str, str, int] | None = None
    except_id: str | None = None
    group: int | None = None

    def lowest_version(self) -> int | None:
        """The lowest ``_version_`` ``changed_after`` still takes in (the margin applied)."""
        if self.changed_after is None:
            return None
        return self.changed_after - (int(self.margin_s * 1000) << VERSION_MS_SHIFT)


EVERY_DOCUMENT = Selection()

# What a signing pass reads of each document: the text (as "content", whatever field holds it), the version to
# update at, and the digest of the text signed last.
SIGNING_FIELDS = "id,content,_version_,md5_hash"


def field_update(doc_id: str, version: int | None, values: Mapping[str, Any]) -> dict:
    """A write of ``values`` (None removes a field) into ``doc_id``, applied only while it is still at ``version``
    (any version when None); every other field of the document is kept."""
    update: dict = {"id": doc_id, **{name: {"set": value} for name, value in values.items()}}
    if version is not None:
        update["_version_"] = version
    return update


def version_of(doc: Mapping[str, Any]) -> int | None:
    """The version a document was read at (None when it was read without one)."""
    value = doc.get("_version_")
    return int(value) if isinstance(value, int) else None
