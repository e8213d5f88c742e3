"""``neardup-solr demo``: the restaurant data set end to end, each mode scored against the 112 gold pairs.

Local Solr (no SOLR_URL): started if needed; the demo uses its own core ``neardup_demo`` so it never touches
your data. The local Solr keeps running afterwards with the default core ready too (created empty if it was
missing), so the commands the demo prints at the end, and the README's next steps, work as printed. With
SOLR_URL set, the demo uses that core and replaces its contents.
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from neardup_solr.solr import settings
from neardup_solr.signing.settings import WRITE_UP_TOKEN_FIELDS, IndexSettings
from neardup_solr.pairs.evaluate import EvaluationResult, evaluate, read_pairs
from neardup_solr.solr.indexer import Indexer
from neardup_solr.engine.report import report_near_dups
from neardup_solr.io.restaurants import FODORS_COUNT, gold_pairs_path, prepare_default, read_addresses
from neardup_solr.solr.searcher import Searcher
from neardup_solr.engine.threshold import ThresholdFinder, join_pairs, threshold_pairs
from neardup_solr.pairs.similar_pairs import one_to_one, write_pairs, id_sort_key
from neardup_solr.solr.client import SolrClient
from neardup_solr.solr.backends.local import LocalSolr

log = logging.getLogger(__name__)

DEMO_CORE = "neardup_demo"


@dataclass
class DemoRow:
    name: str
    settings: str
    result: EvaluationResult
    seconds: float


# The write-up's settings: 3-word shingles, first-word filter, 10 rows, word edit distance <= 2, and 20 MinHash
# values for the MinHash query.
WRITEUP = dict(max_edit_distance=2, rows=10, first_word_filter=True)
# What the README recommends for matching two sources (not tuned per run on the gold file): IDF-weighted word
# Jaccard >= 0.4 between the two guides; one-to-one when each source lists an entity once.
RECOMMENDED_THRESHOLD = 0.4


def demo_modes():
    """(name, settings text, kind, keyword arguments) of every mode the demo compares."""
    return [
        ("write-up: shingles", "3-shingles, first word, rows 10, dist<=2", "report", dict(mode="shingles", **WRITEUP)),
        ("write-up: MinHash", "20 values, first word, rows 10, dist<=2", "report",
         dict(mode="minhash", num_hashes=20, **WRITEUP)),
        ("LSH bands", "128 values, b x r for J>=0.5, dist<=2", "report",
         dict(mode="lsh", max_edit_distance=2, rows=50, first_word_filter=False)),
        ("threshold: Jaccard", "3-shingle Jaccard >= 0.5, all pairs", "threshold",
         dict(threshold=0.5, similarity="jaccard")),
        ("threshold: IDF", f"IDF word Jaccard >= {RECOMMENDED_THRESHOLD}, all pairs", "threshold",
         dict(threshold=RECOMMENDED_THRESHOLD, similarity="idf")),
        ("join: IDF", f"fodors x zagats, IDF >= {RECOMMENDED_THRESHOLD}", "join",
         dict(threshold=RECOMMENDED_THRESHOLD, similarity="idf", one_to_one=False)),
        ("join: IDF, one-to-one", "as above, each record matched once", "join",
         dict(threshold=RECOMMENDED_THRESHOLD, similarity="idf", one_to_one=True)),
    ]


def _solr_client(solr_url: str | None, out: TextIO) -> tuple[SolrClient, str | None]:
    """The demo's client, and the local Solr's default core URL when the demo runs on the local Solr."""
    if solr_url:
        return SolrClient(solr_url), None

    local = LocalSolr(core=DEMO_CORE)
    result = local.start()
    if not result.already_running:
        print(f"started local Solr {settings.SOLR_VERSION} in {result.seconds:.1f} s ({local.data_dir})", file=out)
    # The default core too: the next command a user types (neardup-solr index / near-dups) goes there.
    default = LocalSolr(port=local.bound_port(), data_dir=local.data_dir)
    default.ensure_core()
    return SolrClient(local.core_url), default.core_url


def next_steps(demo_url: str, default_url: str | None, addresses: Path) -> str:
    """What to try after the demo, as commands that work as printed."""
    port_env = ""
    if default_url is not None:
        port = default_url.split("://", 1)[1].split("/", 1)[0].rsplit(":", 1)[1]
        if port != str(settings.DEFAULT_PORT):
            port_env = f"NEARDUP_SOLR_PORT={port} "
    # Record 3's twin (536, J = 0.33) is far under any collection threshold: the write-up's ranking finds it.
    lines = ["next, try:", f"  neardup-solr near-dups 3 --writeup-ranking --solr-url {demo_url}"]
    if default_url is None:
        return "\n".join(lines)
    lines += [
        f"  {port_env}neardup-solr index {addresses} -q     # the same records into the default core",
        f"  {port_env}neardup-solr near-dups 3 --writeup-ranking",
        f"the local Solr keeps running with the cores {DEMO_CORE} (this demo) and {settings.CORE_NAME} (the default); "
        f"stop it with: {port_env}neardup-solr solr stop",
    ]
    return "\n".join(lines)


def run_demo(solr_url: str | None = None, workdir: str | Path | None = None, out: TextIO | None = None) -> list[DemoRow]:
    import sys

    out = out or sys.stdout
    workdir = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="neardup-demo-"))
    workdir.mkdir(parents=True, exist_ok=True)
    client, default_url = _solr_client(solr_url or os.environ.get("SOLR_URL"), out)

    addresses = workdir / "addresses.txt"
    count = prepare_default(addresses)
    print(f"prepared {count} restaurant records -> {addresses}", file=out)
    records = read_addresses(addresses)
    guides = {"fodors": workdir / "fodors-numbered.txt", "zagats": workdir / "zagats-numbered.txt"}
    for name, path in guides.items():
        with open(path, "w", encoding="utf-8") as fh:
            for doc_id, text in records.items():
                if (int(doc_id) <= FODORS_COUNT) == (name == "fodors"):
                    fh.write(f"{doc_id} {text}\n")
    client.delete_all()
    # Every write-up mode is compared below, so the MinHash tokens (opt-in) are indexed too.
    index_settings = IndexSettings(ngram=3, num_hashes=128, lsh_threshold=0.5, fields=WRITE_UP_TOKEN_FIELDS)
    for name, path in guides.items():
        summary = Indexer(client, index_settings, dataset=name).index_file(
            path, "lines", rejects_path=workdir / "rejects.jsonl")
        print(f"indexed {name}: {summary.format()}", file=out)

    gold = read_pairs(gold_pairs_path())
    searcher = Searcher(client)
    rows: list[DemoRow] = []
    for name, text, kind, kw in demo_modes():
        started = time.monotonic()
        slug = name.replace(":", "").replace(",", "").replace(" ", "-").lower()
        out_path = workdir / f"pairs-{slug}.tsv"
        if kind == "report":
            _, pairs = report_near_dups(searcher, out_path, **kw)
            found = {_ordered(a, b) for a, b, *_ in pairs}
        else:
            finder = ThresholdFinder(searcher, threshold=kw["threshold"], similarity=kw["similarity"])
            if kind == "threshold":
                similar = threshold_pairs(finder)
            else:
                fodors = [(i, t) for i, t in records.items() if int(i) <= FODORS_COUNT]
                similar = join_pairs(finder, fodors, indexed_dataset="zagats")
                if kw["one_to_one"]:
                    similar = one_to_one(similar)
            write_pairs(similar, out_path)
            found = {_ordered(p.id, p.neighbor_id) for p in similar}
        rows.append(DemoRow(name, text, evaluate(found, gold), time.monotonic() - started))
    print(file=out)
    print(format_table(rows, len(gold)), file=out)
    print(f"\npair files and rejects: {workdir}", file=out)
    print(next_steps(client.url, default_url, addresses), file=out)
    return rows


def _ordered(a: str, b: str) -> tuple[str, str]:
    return (a, b) if id_sort_key(a) <= id_sort_key(b) else (b, a)


def format_table(rows: list[DemoRow], gold_count: int) -> str:
    header = f"{'mode':<24} {'settings':<40} {'pairs':>5} {'true':>5} {'prec':>6} {'recall':>6} {'F1':>6} {'time':>7}"
    lines = [f"against {gold_count} gold pairs", header, "-" * len(header)]
    for r in rows:
        res = r.result
        lines.append(
            f"{r.name:<24} {r.settings:<40} {res.found:>5} {res.true_positives:>5} {res.precision:>6.3f} "
            f"{res.recall:>6.3f} {res.f1:>6.3f} {r.seconds:>6.1f}s"
        )
    return "\n".join(lines)
