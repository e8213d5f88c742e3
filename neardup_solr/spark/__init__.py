"""Batch dedup and similarity joins on Apache Spark, with the signatures the Solr indexer gives.

Solr is the online side (a lookup per new text); Spark is the batch side (a whole corpus, or two of them, at
once). Both sign with the same :class:`~neardup_solr.signing.builder.DocumentBuilder`, so a pair found in Spark
and a lookup in Solr never disagree, and :func:`neardup_solr.spark.solr.write_to_solr` can load a
Spark-signed corpus into Solr. ``dedup(..., similarity="idf")`` and ``join(..., similarity="idf")`` find the
pairs of ``--similarity idf --method lsh`` (:mod:`neardup_solr.spark.weighted`). Needs the ``spark`` extra
(``pip install 'neardup-solr[spark]'``) and Java 17.

>>> from neardup_solr.spark import spark_session, dedup
>>> spark = spark_session("local[2]")
>>> result = dedup(spark.read.parquet("docs.parquet"), threshold=0.8)
>>> result.collect()[:1], result.stats.candidate_pairs

A file the jobs read themselves (the formats ``index`` reads): ``dedup_file(spark, "docs.jsonl", 0.8,
staging_dir="/tmp/stage")`` returns the result and the read (its rejected records, with their lines and reasons).
"""

from neardup_solr.spark.jobs import SparkJobStats, SparkPairs, band_params, dedup, dedup_file, join
from neardup_solr.spark.session import require_java, require_pyspark, spark_session
from neardup_solr.spark.signing import document_builder, sign, signature_bytes

__all__ = [
    "SparkJobStats", "SparkPairs", "band_params", "dedup", "dedup_file", "document_builder", "join",
    "require_java", "require_pyspark", "sign", "signature_bytes", "spark_session",
]
