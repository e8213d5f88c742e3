"""One-to-one matching of a join's pairs on the executors: the same pairs as ``join --one-to-one``
(:func:`neardup_solr.pairs.similar_pairs.one_to_one`, the greedy matching: best pair first, each id used once),
without collecting the pairs on the driver.

The greedy matching takes pairs in one strict order (similarity descending, then the ids in report order). A
pair that comes first among every pair touching either of its two ids ("locally dominant") is taken by the greedy
matching too: nothing before it can use its ids. So each round keeps every locally dominant pair, drops every
other pair that touches a kept id, and repeats on what is left; the result is the greedy matching (Preis, 1999).
Most joins need a few rounds. A long chain of pairs, each a little better than the next, takes a round per link:
when the pairs left are few (``finish_on_driver``), or after ``max_rounds`` rounds, the rest is matched on the
driver by the same greedy code, which sees only those pairs.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from neardup_solr.pairs.similar_pairs import SimilarPair, one_to_one
from neardup_solr.spark.ordering import id_order_keys

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

log = logging.getLogger(__name__)

FINISH_ON_DRIVER = 50_000  # pairs: about 10 MB of Python objects on the driver
MAX_ROUNDS = 30


def one_to_one_pairs(pairs: "DataFrame", *, finish_on_driver: int = FINISH_ON_DRIVER,
                     max_rounds: int = MAX_ROUNDS) -> "DataFrame":
    """The greedy one-to-one matching of ``pairs`` (columns ``id``, ``neighbor_id``, ``similarity``), computed
    by the executors in rounds; the same pairs as :func:`~neardup_solr.pairs.similar_pairs.one_to_one`."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    spark = pairs.sparkSession
    order = [F.col("similarity").desc(), *id_order_keys(F.col("id")), *id_order_keys(F.col("neighbor_id"))]
    remaining = pairs.select("id", "neighbor_id", "similarity").localCheckpoint()
    kept: list["DataFrame"] = []
    rounds = 0
    left = remaining.count()
    while left > finish_on_driver and rounds < max_rounds:
        rounds += 1
        ends = (remaining.withColumn("node", F.col("id"))
                .unionByName(remaining.withColumn("node", F.col("neighbor_id"))))
        best = (ends.withColumn("rank", F.row_number().over(Window.partitionBy("node").orderBy(*order)))
                .where("rank = 1").select("node", "id", "neighbor_id", "similarity"))
        # A pair is locally dominant when it is the best pair of both its ids (of its one id, for a pair of an id
        # with itself, which can happen between two sources that share ids).
        dominant = (best.groupBy("id", "neighbor_id", "similarity").agg(F.countDistinct("node").alias("ends"))
                    .where((F.col("ends") == 2) | (F.col("id") == F.col("neighbor_id")))
                    .select("id", "neighbor_id", "similarity").localCheckpoint())
        kept.append(dominant)
        used = (dominant.select(F.col("id").alias("node"))
                .unionByName(dominant.select(F.col("neighbor_id").alias("node"))).distinct())
        remaining = (remaining.join(used.withColumnRenamed("node", "id"), "id", "left_anti")
                     .join(used.withColumnRenamed("node", "neighbor_id"), "neighbor_id", "left_anti")
                     .select("id", "neighbor_id", "similarity").localCheckpoint())
        left = remaining.count()
        log.info("one-to-one round %d: %d pairs left", rounds, left)
    rest = one_to_one(SimilarPair(r["id"], r["neighbor_id"], float(r["similarity"]))
                      for r in remaining.toLocalIterator())
    log.info("one-to-one: %d rounds on the executors, %d pairs matched on the driver", rounds, len(rest))
    result = spark.createDataFrame([(p.id, p.neighbor_id, p.similarity) for p in rest],
                                   "id string, neighbor_id string, similarity double")
    for part in kept:
        result = result.unionByName(part)
    return result
