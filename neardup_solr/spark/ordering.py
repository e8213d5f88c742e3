"""Ids in report order as Spark expressions: the order :func:`~neardup_solr.pairs.similar_pairs.id_sort_key`
gives in Python, so Spark's pairs and files come out as the report's do. Its own module because the jobs, the
readers and writers (spark/io.py) and the matching all sort by it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import Column


def id_order_keys(column: "Column") -> list["Column"]:
    """Sort keys that order ids as :func:`~neardup_solr.pairs.groups.id_key` (``id_sort_key``) does: ASCII digit
    strings by value (any length: by their length without leading zeros, then their digits), before any other
    string, and the id itself last. Spark compares strings by their UTF-8 bytes, which is Python's code point
    order. ``orderBy(*id_order_keys(col))`` sorts as ``report`` does; :func:`id_before` compares two ids."""
    from pyspark.sql import functions as F

    digits = column.rlike("^[0-9]+$")
    number = F.regexp_replace(column, "^0+", "")
    return [F.when(digits, F.lit(0)).otherwise(F.lit(1)),
            F.when(digits, F.length(number)).otherwise(F.lit(0)),
            F.when(digits, number).otherwise(F.lit("")),
            column]


def id_before(a: "Column", b: "Column") -> "Column":
    """``id_sort_key(a) < id_sort_key(b)`` as a Spark expression (structs compare field by field)."""
    from pyspark.sql import functions as F

    return F.struct(*id_order_keys(a)) < F.struct(*id_order_keys(b))
