"""A found pair and the pairs file: the result type every engine returns and the one format they write.

Pure: no Solr here, so the engines (:mod:`neardup_solr.engine`), the Spark jobs and the front doors share it
without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from neardup_solr.io.outputs import write_atomically
from neardup_solr.pairs.groups import id_key
from neardup_solr.validation import tsv_id
from neardup_solr.version import written_by_line

__all__ = ["SimilarPair", "PAIR_HEADER", "id_sort_key", "one_to_one", "pair_lines", "pairs_file_header",
           "write_pairs"]

PAIR_HEADER = "# id\tneighbor_id\tsimilarity\n"

# Numeric ids compare as numbers ("9" < "10"), others as strings, numbers first: the order of every pairs file.
id_sort_key = id_key


@dataclass(frozen=True)
class SimilarPair:
    id: str
    neighbor_id: str
    similarity: float


def one_to_one(pairs: Iterable[SimilarPair]) -> list[SimilarPair]:
    """Greedy one-to-one matching: best pairs first, each id used once. Right when each source lists an
    entity at most once (two deduplicated catalogues, two restaurant guides)."""
    used: set[str] = set()
    kept = []
    for p in sorted(pairs, key=lambda p: (-p.similarity, id_sort_key(p.id), id_sort_key(p.neighbor_id))):
        if p.id in used or p.neighbor_id in used:
            continue
        used.update((p.id, p.neighbor_id))
        kept.append(p)
    return kept


def pairs_file_header() -> str:
    """The column names, then which version wrote the file: one chunk, as :func:`pair_lines` yields it first."""
    return PAIR_HEADER + written_by_line()


def pair_lines(pairs: Iterable[SimilarPair]) -> Iterator[str]:
    """A pairs file: the header (:func:`pairs_file_header`), then id, neighbor_id and similarity per line."""
    yield pairs_file_header()
    for p in pairs:
        yield f"{tsv_id(p.id)}\t{tsv_id(p.neighbor_id)}\t{p.similarity:.6f}\n"


def write_pairs(pairs: Sequence[SimilarPair], out: str | Path) -> None:
    """Write a pairs file atomically: ``out`` holds the complete list or is left as it was."""
    write_atomically(out, pair_lines(pairs))
