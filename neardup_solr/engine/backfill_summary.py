"""What a backfill (or one sync pass) did, in place or into a companion: :class:`BackfillSummary`, and its final
check, :class:`Verification`."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Verification:
    """The final check: documents still without our fields after the last pass (the first few named)."""

    unsigned: int
    examples: list[str]
    solr_refused: list[tuple[str, str]] = field(default_factory=list)

    def format(self) -> str:
        if not self.unsigned:
            return "every document is signed"
        if self.solr_refused:
            shown = "; ".join(f"{i!r}: {why}" for i, why in self.solr_refused[:3])
            return (f"{self.unsigned} document(s) are still unsigned, {len(self.solr_refused)} of them refused by "
                    f"Solr ({shown}): fix those documents in your collection, then run backfill (or sync) again")
        return (f"{self.unsigned} document(s) are still unsigned (changed by another writer on every pass?), e.g. "
                f"{', '.join(map(repr, self.examples))}: run backfill (or sync) again")


@dataclass
class BackfillSummary:
    """What a backfill (or one sync pass) did: documents ``signed``, ``refused`` (a text with nothing to sign, an
    id we cannot use: marked as seen, never signed; the first reasons in ``refusals``), ``passes`` over the
    collection, ``conflicts`` (documents another writer changed while we signed them, signed again on a later
    pass), and the final ``verification``."""

    signed: int = 0
    refused: int = 0
    passes: int = 0
    conflicts: int = 0
    seconds: float = 0.0
    refusals: list[tuple[str, str]] = field(default_factory=list)
    # Documents whose update Solr refused (HTTP 400: the document no longer fits the schema, say), with Solr's
    # reason; they stay unsigned, the rest of their batch is written.
    solr_refused: dict[str, str] = field(default_factory=dict)
    verification: Verification | None = None
    interrupted: str | None = None
    # Documents given their near-duplicate group after they were signed (once the collection's groups are written).
    grouped: int = 0

    @property
    def docs_per_second(self) -> float:
        return self.signed / self.seconds if self.seconds > 0 else 0.0

    def format(self) -> str:
        text = (f"signed {self.signed} document(s) in {self.seconds:.1f} s ({self.docs_per_second:,.0f} docs/s), "
                f"{self.passes} pass(es)")
        if self.conflicts:
            text += f", {self.conflicts} changed by another writer meanwhile and signed on a later pass"
        if self.refused:
            shown = "; ".join(f"{i!r}: {why}" for i, why in self.refusals[:3])
            text += f", {self.refused} with nothing to sign ({shown})"
        if self.solr_refused:
            shown = "; ".join(f"{i!r}: {why}" for i, why in list(self.solr_refused.items())[:3])
            text += f", {len(self.solr_refused)} refused by Solr ({shown})"
        if self.grouped:
            text += f", {self.grouped} given their near-duplicate group"
        if self.verification is not None:
            text += f"; {self.verification.format()}"
        return text
