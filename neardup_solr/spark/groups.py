"""Groups of near duplicates (connected components of the pairs) and the keep list, computed by the executors.

The same groups as :func:`~neardup_solr.pairs.groups.group_pairs` run over the pairs file (``groups PAIRS``), and
the same bytes written, without the pairs or the ids on the driver:

1. **Nodes.** The ids in a pair are sorted by Spark in ``id_key`` order (:mod:`neardup_solr.spark.ordering`) and
   numbered by ``monotonically_increasing_id`` in that sorted order (its values grow with the partition and the
   row in it, so a smaller number is a smaller id), then checkpointed (computed once): from here on the graph
   is one of longs, and its numbers do not depend on how the input was partitioned.
2. **Components** by the alternating large-star / small-star rounds of Kiveris et al. ("Connected Components in
   MapReduce and Beyond", 2014), as DataFrame aggregations and joins. Each round keeps every component's nodes
   connected and ends with the edges pointing from larger to smaller nodes; the rounds stop when the edges form
   stars (no edge points at a node that has an edge of its own, and no node has two): each star is a component
   and its centre its smallest node, so its smallest id. Each round's edges are checkpointed by the executors
   (Spark's local checkpoint), which cuts the lineage (a long chain needs O(log n) rounds, not O(n)).
3. **Numbers.** ``group_pairs`` numbers its groups from 1 in the order of their smallest member; here the
   centres are sorted and numbered densely by the executors (each partition's count is all the driver sees).
4. **Representatives** by the rules of ``groups --representative``: ``earliest`` the centre; ``longest`` the
   member with the longest text (its length in code points, as Python's ``len``), ties to the earliest.
5. **Files.** Each group's line is made on the executors with :func:`~neardup_solr.pairs.groups.group_line` (the
   single process's spelling; ``max_distance`` from the group's smallest similarity as the pairs file spells it,
   so ``round(1 - s, 6)`` of the same number), sorted by group number, written as part files and streamed into
   place as the pairs file is (:func:`neardup_solr.spark.io.write_pairs_from_executors`).

The driver holds, at any time, one partition's worth of counts and the part file being copied: never a pair, an
id or a group.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from neardup_solr.errors import InvalidParameterError, InvalidRecordError
from neardup_solr.pairs.groups import REPRESENTATIVES, Group, group_line
from neardup_solr.spark.ordering import id_order_keys
from neardup_solr.validation import check_choice
from neardup_solr.spark.io import _merge_parts

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

log = logging.getLogger(__name__)

# Rounds of large-star and small-star before giving up: each at least halves what is left to do on the paper's
# bound of O(log^2 n), so 64 covers any graph that fits in a cluster; more would mean a bug, not a big graph.
MAX_ROUNDS = 64
# monotonically_increasing_id: the partition's index above these bits, the row's number in it below.
_ROW_BITS = 33


@dataclass
class SparkGroups:
    """The groups of a run's pairs. ``members``: ``id, node, group_id`` (every id in a pair; ``node`` numbers
    the ids in ``id_key`` order); ``groups``: ``group_id, representative, size, min_similarity``; ``dropped``:
    ``id`` of the members that are not their group's representative (what the keep list leaves out);
    ``count``: the number of groups; ``members_count``: of ids in them; ``rounds``: of large-star/small-star."""

    members: "DataFrame"
    groups: "DataFrame"
    dropped: "DataFrame"
    count: int
    members_count: int
    rounds: int


def executor_groups(pairs: "DataFrame", *, representative: str = "earliest",
                    lengths: "DataFrame | None" = None) -> SparkGroups:
    """The groups of ``pairs`` (``id, neighbor_id, similarity``) as ``group_pairs`` makes them (module docstring).
    ``lengths`` (``id, length``: the text's length in code points) is needed for ``representative="longest"``."""
    from pyspark.sql import functions as F

    representative = check_choice("representative", representative, REPRESENTATIVES)
    if representative == "longest" and lengths is None:
        raise InvalidParameterError("lengths", "a DataFrame of id, length with representative='longest'", None)
    sizes_of = lengths.select("id", "length") if lengths is not None else None
    ids = pairs.select(F.col("id")).unionByName(pairs.select(F.col("neighbor_id").alias("id"))).distinct()
    nodes = _checkpoint(ids.orderBy(*id_order_keys(F.col("id"))).withColumn("node", F.monotonically_increasing_id()))
    edges = (pairs.select("id", "neighbor_id")
             .join(nodes.select("id", F.col("node").alias("a")), "id")
             .join(nodes.select(F.col("id").alias("neighbor_id"), F.col("node").alias("b")), "neighbor_id")
             .select(F.greatest("a", "b").alias("u"), F.least("a", "b").alias("w"))
             .filter(F.col("u") != F.col("w")).distinct())
    parents, rounds = _star_components(edges)

    labels = (nodes.join(parents.select(F.col("u").alias("node"), "w"), "node", "left")
              .select("id", "node", F.coalesce(F.col("w"), F.col("node")).alias("root")))
    centres = labels.filter(F.col("root") == F.col("node")).select("root")
    numbers = _dense_numbers(centres, "root").withColumnRenamed("number", "group_id")
    members = _checkpoint(labels.join(numbers, "root").select("id", "node", "root", "group_id"))

    if sizes_of is None or representative == "earliest":
        chosen = members.filter(F.col("node") == F.col("root")).select("group_id", F.col("id").alias("representative"))
        sizes = members.groupBy("group_id").agg(F.count("*").alias("size")).withColumn("unsized", F.lit(0))
    else:
        sized = members.join(sizes_of, "id", "left")
        # The longest text; of equally long ones the smallest node, that is the earliest id.
        best = (sized.groupBy("group_id")
                .agg(F.max(F.struct(F.col("length"), (-F.col("node")).alias("earliest"))).alias("best"),
                     F.count("*").alias("size"), F.count_if(F.col("length").isNull()).alias("unsized"))
                .select("group_id", (-F.col("best.earliest")).alias("node"), "size", "unsized"))
        chosen = best.join(members.select("node", F.col("id").alias("representative")), "node").select(
            "group_id", "representative")
        sizes = best.select("group_id", "size", "unsized")
    similarities = (pairs.join(members.select("id", "group_id"), "id")
                    .groupBy("group_id").agg(F.min("similarity").alias("min_similarity")))
    groups = _checkpoint(chosen.join(sizes, "group_id").join(similarities, "group_id"))

    totals = groups.agg(F.count("*").alias("count"), F.sum("size").alias("members"),
                        F.sum("unsized").alias("unsized")).collect()[0]
    if totals["unsized"]:
        lost = sized.filter(F.col("length").isNull()).select("id").first()
        raise InvalidRecordError("no text for this id, so the longest member cannot be chosen",
                                 record_id=lost["id"] if lost else None)
    dropped = (members.join(groups.select("group_id", "representative"), "group_id")
               .filter(F.col("id") != F.col("representative")).select("id"))
    log.info("%d groups holding %d ids after %d large-star/small-star rounds", totals["count"],
             totals["members"] or 0, rounds)
    return SparkGroups(members.select("id", "node", "group_id"), groups, dropped, int(totals["count"]),
                       int(totals["members"] or 0), rounds)


def _star_components(edges: "DataFrame") -> tuple["DataFrame", int]:
    """``u, w`` edges (``u > w``) of a graph to its components as stars: ``u, w`` with ``w`` the smallest node of
    ``u``'s component, for every node that is not the smallest of its own; and the number of rounds run."""
    from pyspark.sql import functions as F

    current = _checkpoint(edges)
    rounds = 0
    while not _is_stars(current):
        if rounds == MAX_ROUNDS:
            raise RuntimeError(f"connected components did not converge in {MAX_ROUNDS} rounds (a bug: please "
                               "report it with the pairs file)")
        rounds += 1
        # Large-star: every node's larger neighbours are attached to the smallest node of its neighbourhood.
        both = current.unionByName(current.select(F.col("w").alias("u"), F.col("u").alias("w")))
        smallest = both.groupBy("u").agg(F.least(F.min("w"), F.col("u")).alias("m"))
        large = (both.filter(F.col("w") > F.col("u")).join(smallest, "u")
                 .select(F.col("w").alias("u"), F.col("m").alias("w")).distinct())
        # Small-star: every node and its smaller neighbours are attached to the smallest of them.
        low = large.groupBy("u").agg(F.min("w").alias("m"))
        small = (large.join(low, "u").filter(F.col("w") != F.col("m"))
                 .select(F.col("w").alias("u"), F.col("m").alias("w"))
                 .unionByName(low.select("u", F.col("m").alias("w"))).distinct())
        current = _checkpoint(small)
    log.debug("connected components: stars after %d rounds", rounds)
    return current, rounds


def _checkpoint(frame: "DataFrame") -> "DataFrame":
    """``frame`` computed once and kept by the executors, its lineage cut (Spark's local checkpoint: in their
    memory, spilled to their disks). Each write of a Parquet checkpoint cost a job's file commit, seconds at
    this size, where the local checkpoint costs the computation only; the price is that losing an executor
    fails the job instead of recomputing its part (rerun it, as any batch job)."""
    return frame.localCheckpoint(eager=True)


def _is_stars(edges: "DataFrame") -> bool:
    """Whether ``u, w`` edges are stars: no node has two edges out, and no edge points at a node with one (one
    Spark job, which stops at the first counterexample)."""
    from pyspark.sql import functions as F

    outgoing = edges.groupBy("u").agg(F.count("*").alias("n"))
    faults = (outgoing.filter(F.col("n") > 1).select("u")
              .unionByName(edges.select(F.col("w").alias("u")).join(outgoing.select("u"), "u", "left_semi")))
    return faults.isEmpty()


def _dense_numbers(frame: "DataFrame", column: str) -> "DataFrame":
    """``column, number``: the distinct values of the long ``column`` numbered 1, 2, ... in ascending order by
    the executors: sorted, tagged with ``monotonically_increasing_id`` (partition and row), checkpointed; the
    driver sees one count a partition and turns them into each partition's first number."""
    from pyspark.sql import functions as F

    spark = frame.sparkSession
    tagged = (_checkpoint(frame.select(column).orderBy(column).withColumn("tag", F.monotonically_increasing_id()))
              .withColumn("part", F.shiftright(F.col("tag"), _ROW_BITS)))
    counts = sorted((int(r["part"]), int(r["count"])) for r in tagged.groupBy("part").count().collect())
    firsts, before = [], 0
    for part, count in counts:
        firsts.append((part, before))
        before += count
    offsets = spark.createDataFrame(firsts or [(0, 0)], "part long, before long")
    row = F.col("tag").bitwiseAND(F.lit((1 << _ROW_BITS) - 1))
    return (tagged.join(F.broadcast(offsets), "part")
            .select(column, (F.col("before") + row + 1).alias("number")))


def write_groups_from_executors(groups: SparkGroups, out: str | Path, staging_dir: str | Path) -> int:
    """The groups file ``groups PAIRS --out`` writes for the same pairs, byte for byte: each group's members
    gathered in ``id_key`` order and its line made by the executors, in group order, streamed into ``out``
    (atomically). Returns the number of groups."""
    from pyspark.sql import functions as F

    def lines(batches):  # Arrow batches of groups (number, representative, members, lowest similarity)
        import pyarrow as pa

        for batch in batches:
            rows = batch.to_pydict()
            values = [group_line(Group(number, representative, members,
                                       # As the pairs file spells the similarity and `groups` reads it back.
                                       round(1.0 - float(f"{similarity:.6f}"), 6)))[:-1]
                      for number, representative, members, similarity in
                      zip(rows["group_id"], rows["representative"], rows["members"], rows["min_similarity"])]
            yield pa.RecordBatch.from_pydict({"value": values}, schema=pa.schema([("value", pa.string())]))

    parts = Path(staging_dir) / "groups-parts"
    (groups.members.groupBy("group_id")
     .agg(F.sort_array(F.collect_list(F.struct("node", "id"))).alias("listed"))
     .join(groups.groups.select("group_id", "representative", "min_similarity"), "group_id")
     .select("group_id", "representative", F.col("listed.id").alias("members"), "min_similarity")
     .orderBy("group_id").mapInArrow(lines, "value string")
     .write.mode("overwrite").text(str(parts)))
    return _merge_parts(parts, out, "")
