"""Throughput as documents and megabytes of text per second, so that runs over short and long documents compare
(a thousand 24 KB source files take as long to sign as tens of thousands of 900-byte records)."""

from __future__ import annotations

__all__ = ["utf8_size", "megabytes_per_second", "format_rates"]


def utf8_size(text: str) -> int:
    """The text's size in UTF-8 bytes, as a file holds it (a lone surrogate, which a lenient reader may leave in
    a text, counts as the three bytes it would take instead of failing the count)."""
    return len(text.encode("utf-8", "surrogatepass"))


def megabytes_per_second(nbytes: int, seconds: float) -> float:
    """Megabytes (10**6 bytes) per second; 0.0 for a run that took no measurable time."""
    return nbytes / 1e6 / seconds if seconds > 0 else 0.0


def format_rates(docs: int, nbytes: int, seconds: float) -> str:
    """``1,548 docs/s, 1.4 MB/s``: documents with thousands separators, megabytes with one decimal (two below 1)."""
    per_second = docs / seconds if seconds > 0 else 0.0
    mb = megabytes_per_second(nbytes, seconds)
    return f"{per_second:,.0f} docs/s, {mb:,.1f} MB/s" if mb >= 1 else f"{per_second:,.0f} docs/s, {mb:.2f} MB/s"
