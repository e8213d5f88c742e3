"""IDF-weighted signing inside Spark: the tokens, document frequencies and weighted MinHash signatures of
``dedup(..., similarity="idf")``, made with the functions the Solr side (:mod:`neardup_solr.engine.weighted_lsh`)
signs with, so a record signed here and by ``report --similarity idf --method lsh`` gets the same values.

1. :func:`tokenize`: each record's distinct normalised words (:meth:`DocumentBuilder.word_tokens`, the
   ``content_words`` the indexer stores and Solr counts document frequencies over).
2. :func:`frequencies`: an :class:`~neardup_solr.engine.weighted_lsh.IdfSnapshot` of the DataFrame itself (``N`` =
   valid records, ``df`` per word, a Spark aggregation), unless the caller brings one (``--idf-snapshot``).
3. :func:`sign_weighted`: every record's word -> idf map (:meth:`IdfSnapshot.weights`,
   :func:`~neardup_solr.engine.weighted_lsh.signing_weights`) signed by
   :func:`~neardup_solr.engine.weighted_lsh.weighted_signer`, with its LSH band keys (:func:`~neardup_solr.pairs.lsh.band_keys`).
4. :func:`weighted_similarity`: the exact weighted Jaccard (:func:`~neardup_solr.pairs.weighted.weighted_jaccard`) of
   candidate pairs, with the snapshot's weights.

The snapshot travels to the executors as a broadcast: its ``df`` map is the corpus vocabulary (a few hundred
bytes per thousand distinct words), the same map the Solr side holds on its client.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Iterator

import numpy as np
import pandas as pd  # at module level: pandas_udf resolves the UDF's type hints against this module

from neardup_solr.signing.builder import record_problem
from neardup_solr.signing.settings import TOKEN_FIELDS, IndexSettings
from neardup_solr.pairs.lsh import LSHParams, band_keys
from neardup_solr.engine.weighted_lsh import IdfSnapshot, signing_weights, weighted_signer
from neardup_solr.pairs.weighted import weighted_jaccard
from neardup_solr.spark.signing import EMPTY_TEXT, document_builder, for_executors

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame

TOKENS_SCHEMA = "id string, tokens array<string>, problem string"
WEIGHTED_SCHEMA = "id string, signature array<int>, band_keys array<bigint>, tokens array<string>"


def tokenize(records: "DataFrame", settings: IndexSettings) -> "DataFrame":
    """``records`` (``id``, ``text``) as ``id, tokens, problem`` (:data:`TOKENS_SCHEMA`): the distinct words of
    each valid record, or why it cannot be used (as :func:`~neardup_solr.spark.signing.sign` says it)."""
    settings = for_executors(settings)

    def batches(it: Iterator["pa.RecordBatch"]) -> Iterator["pa.RecordBatch"]:
        import pyarrow as pa

        builder = document_builder(settings)
        for batch in it:
            data = batch.to_pydict()
            tokens: list[list[str] | None] = []
            problems: list[str | None] = []
            for doc_id, text in zip(data["id"], data["text"]):
                problem = record_problem(doc_id, text)
                words = builder.word_tokens(text) if problem is None else []
                if problem is None and not words:
                    problem = EMPTY_TEXT
                problems.append(problem)
                tokens.append(words if problem is None else None)
            yield pa.RecordBatch.from_arrays(
                [pa.array(data["id"], type=pa.string()), pa.array(tokens, type=pa.list_(pa.string())),
                 pa.array(problems, type=pa.string())], names=["id", "tokens", "problem"])

    return records.select("id", "text").mapInArrow(batches, TOKENS_SCHEMA)


def frequencies(tokens: "DataFrame", *, scheme: str, num_hashes: int, seed: int) -> IdfSnapshot:
    """The snapshot of the valid records ``tokens`` (``id``, ``tokens``): ``N`` records and the number of
    records holding each word, with the signer it will sign with: what Solr's ``/terms`` would report if the
    collection held exactly these records."""
    from pyspark.sql import functions as F

    num_docs = tokens.count()
    # Tokens are already distinct per record, so a count per token is its document frequency.
    df = {r["token"]: int(r["n"]) for r in
          tokens.select(F.explode("tokens").alias("token")).groupBy("token").agg(F.count("*").alias("n"))
          .toLocalIterator()}
    return IdfSnapshot(field=TOKEN_FIELDS["words"], num_docs=max(num_docs, 1), df=df, scheme=scheme, num_hashes=num_hashes,
                       seed=seed, created=time.strftime("%Y-%m-%dT%H:%M:%S%z"))


def sign_weighted(tokens: "DataFrame", snapshot: IdfSnapshot, params: LSHParams) -> "DataFrame":
    """Valid records ``id, tokens`` signed with the snapshot's weights and signer, with their band keys
    (:data:`WEIGHTED_SCHEMA`; the signature's uint32 values as ``array<int>``, as the plain jobs hold them)."""
    import pyarrow as pa

    shared = tokens.sparkSession.sparkContext.broadcast(snapshot)

    def batches(it: Iterator["pa.RecordBatch"]) -> Iterator["pa.RecordBatch"]:
        snap: IdfSnapshot = shared.value
        signer = weighted_signer(snap.scheme, snap.num_hashes, snap.seed)
        for batch in it:
            data = batch.to_pydict()
            maps = [signing_weights(t, snap.weights(t)) for t in data["tokens"]]
            sigs = np.asarray(signer.signatures(maps), dtype=np.uint32).reshape(len(maps), snap.num_hashes)
            keys = band_keys(sigs, params) if len(maps) else np.empty((0, params.bands), dtype=np.uint64)
            yield pa.RecordBatch.from_arrays(
                [pa.array(data["id"], type=pa.string()), _lists(sigs.view(np.int32), pa.int32()),
                 _lists(keys.view(np.int64), pa.int64()), pa.array(data["tokens"], type=pa.list_(pa.string()))],
                names=["id", "signature", "band_keys", "tokens"])

    return tokens.select("id", "tokens").mapInArrow(batches, WEIGHTED_SCHEMA)


def _lists(rows: np.ndarray, value_type: "pa.DataType") -> "pa.Array":
    """One list per row of a 2-D array."""
    import pyarrow as pa

    n, width = rows.shape
    offsets = pa.array(np.arange(n + 1, dtype=np.int32) * width)
    return pa.ListArray.from_arrays(offsets, pa.array(np.ascontiguousarray(rows).reshape(-1), type=value_type))


def weighted_similarity(set_a: "Column", set_b: "Column", snapshot: IdfSnapshot, spark) -> "Column":
    """The exact weighted Jaccard of two token-array columns with the snapshot's weights, as a pandas UDF."""
    from pyspark.sql.functions import pandas_udf

    shared = spark.sparkContext.broadcast(snapshot)

    @pandas_udf("double")  # type: ignore[call-overload]
    def similarity(a: pd.Series, b: pd.Series) -> pd.Series:
        snap: IdfSnapshot = shared.value
        out = []
        for x, y in zip(a, b):
            tokens_a, tokens_b = list(x), list(y)
            out.append(weighted_jaccard(tokens_a, tokens_b, snap.weights(tokens_a + tokens_b)))
        return pd.Series(out, dtype="float64")

    return similarity(set_a, set_b)
