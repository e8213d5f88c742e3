"""Documents' time to live: the TTL syntax, checked before anything is sent.

A TTL is Solr date math added to the time Solr receives the document: ``+30DAYS``, ``+12HOURS``,
``+1YEAR+6MONTHS``; the leading ``+`` may be left out (``30DAYS``). Solr's own
``DocExpirationUpdateProcessorFactory`` (the configset's default update chain) turns the document's ``ttl``
field into ``expire_at`` and deletes expired documents periodically, so expiry needs nothing running on the
client's side. Checking here turns a typo into a clear error naming the value, instead of a Solr 400 for the
whole batch.
"""

from __future__ import annotations

import re
from typing import Any

from neardup_solr.errors import InvalidParameterError, ParameterTypeError

# The units Solr's DateMathParser accepts (singular and plural); rounding (/DAY) and subtraction make no sense
# for a time to live and are refused.
UNITS = ("YEAR", "YEARS", "MONTH", "MONTHS", "DAY", "DAYS", "DATE", "HOUR", "HOURS", "MINUTE", "MINUTES",
         "SECOND", "SECONDS", "MILLI", "MILLIS", "MILLISECOND", "MILLISECONDS")
_TERM = rf"\+\d{{1,9}}(?:{'|'.join(sorted(UNITS, key=len, reverse=True))})"
_TTL = re.compile(rf"(?:{_TERM})+")
REQUIREMENT = ("Solr date math for a time to live: a number and a unit, e.g. +30DAYS, 12HOURS or +1YEAR+6MONTHS "
               "(units: YEARS, MONTHS, DAYS, HOURS, MINUTES, SECONDS, MILLIS)")


def check_ttl(value: Any, name: str = "ttl") -> str | None:
    """``value`` as Solr date math with its leading ``+`` (``30days`` -> ``+30DAYS``), or None when None.
    Raises :class:`~neardup_solr.errors.InvalidParameterError` for anything else, or a zero TTL."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ParameterTypeError(name, "a string such as '+30DAYS'", value)
    text = value.strip().upper()
    if text and not text.startswith("+"):
        text = "+" + text
    if not _TTL.fullmatch(text):
        raise InvalidParameterError(name, REQUIREMENT, value)
    if all(int(n) == 0 for n in re.findall(r"\d+", text)):
        raise InvalidParameterError(name, "more than zero (a document that expires at once is never kept)", value)
    return text


__all__ = ["check_ttl", "UNITS"]
