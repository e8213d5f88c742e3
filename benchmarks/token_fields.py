"""What each token field costs Solr when indexing, and what other layouts of the same tokens would cost.

    python benchmarks/token_fields.py --docs 20000 [--corpus benchmarks/work/c30k/docs.jsonl] [--json out.json]

The documents are built once by our ``DocumentBuilder`` (default settings: shingles, minhash, lsh, words) and
posted to a dedicated Solr as prepared JSON bodies (500 documents each, two at a time), so the client's share is
out of the measurement: each row is Solr's own CPU time per document (from /proc, so Linux only) and the rate
Solr alone sustains. Layouts:

- ``default``: what ``index`` sends today, one multi-valued StrField value per token;
- ``without <field>``: the same without one field, which is that field's cost;
- ``whitespace``: shingles, words and MinHash tokens as one whitespace-tokenized value per field (shingle
  words joined by '_', which the normaliser never leaves in a word);
- ``whitespace, hashed shingles``: the same with each shingle as its 32-bit hash in hex;
- ``lsh only``: what ``--fields lsh`` sends.

The dedicated Solr's schema gets the whitespace-tokenized fields added (its own copy; nothing of the project's
configset changes). Rows are run twice in the order given and the second pass is reported, after the JVM is
warm; the first pass is in the JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from neardup_solr.solr.backends.local import LocalSolr  # noqa: E402
from neardup_solr.solr.documents import DocumentBuilder, IndexSettings  # noqa: E402

WHITESPACE_FIELDS = """
  <fieldType name="ws_token" class="solr.TextField" omitNorms="true" omitTermFreqAndPositions="true">
    <analyzer><tokenizer class="solr.WhitespaceTokenizerFactory" maxTokenLen="4096"/></analyzer>
    <similarity class="solr.BooleanSimilarityFactory"/>
  </fieldType>
  <field name="ng_ws" type="ws_token" indexed="true" stored="false"/>
  <field name="words_ws" type="ws_token" indexed="true" stored="false"/>
  <field name="sg_ws" type="ws_token" indexed="true" stored="false"/>
"""


def _whitespace(doc: dict, hashed: bool) -> dict:
    doc = dict(doc)
    shingles = doc.pop("content_ng")
    doc["ng_ws"] = " ".join(format(hash(t) & 0xFFFFFFFF, "x") if hashed else t.replace(" ", "_") for t in shingles)
    doc["words_ws"] = " ".join(doc.pop("content_words"))
    doc["sg_ws"] = " ".join(doc.pop("content_sg"))
    return doc


def _without(*fields: str):
    return lambda doc: {k: v for k, v in doc.items() if k not in fields}


LAYOUTS = {
    "default": lambda doc: doc,
    "without shingles (content_ng)": _without("content_ng"),
    "without minhash (content_sg)": _without("content_sg"),
    "without words (content_words)": _without("content_words"),
    "whitespace": lambda doc: _whitespace(doc, hashed=False),
    "whitespace, hashed shingles": lambda doc: _whitespace(doc, hashed=True),
    "lsh only": _without("content_ng", "content_sg", "content_words"),
}


def _solr_cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().split()
    return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")


def _post_all(core_url: str, bodies: list[bytes], workers: int) -> None:
    session = requests.Session()

    def post(body: bytes) -> None:
        session.post(f"{core_url}/update", data=body, headers={"Content-Type": "application/json"},
                     timeout=300).raise_for_status()

    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(post, bodies))
    session.post(f"{core_url}/update?commit=true", json={}, timeout=300).raise_for_status()


def measure(core_url: str, pid: int, documents: list[dict], layout: str, batch: int, workers: int) -> dict:
    requests.post(f"{core_url}/update?commit=true", json={"delete": {"query": "*:*"}}, timeout=300).raise_for_status()
    shaped = [LAYOUTS[layout](d) for d in documents]
    bodies = [json.dumps(shaped[i:i + batch]).encode() for i in range(0, len(shaped), batch)]
    cpu0, wall0 = _solr_cpu_seconds(pid), time.perf_counter()
    _post_all(core_url, bodies, workers)
    wall, cpu = time.perf_counter() - wall0, _solr_cpu_seconds(pid) - cpu0
    return {"layout": layout, "docs_per_s": len(shaped) / wall, "solr_cpu_ms_per_doc": 1000 * cpu / len(shaped),
            "body_mb": sum(map(len, bodies)) / 1e6}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=20000)
    ap.add_argument("--corpus", type=Path, default=None,
                    help="a docs.jsonl of benchmarks/corpus.py (default: made here, seed 1)")
    ap.add_argument("--port", type=int, default=8995)
    ap.add_argument("--heap", default="2g")
    ap.add_argument("--batch-size", type=int, default=500)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="token-fields-") as work:
        corpus = args.corpus
        if corpus is None:
            from benchmarks.corpus import main as make_corpus
            make_corpus(["--docs", str(args.docs), "--seed", "1", "--out", work + "/corpus", "--quiet"])
            corpus = Path(work) / "corpus" / "docs.jsonl"
        with open(corpus) as lines:
            records = [json.loads(next(lines)) for _ in range(args.docs)]
        documents = DocumentBuilder(IndexSettings()).build([(r["id"], r["text"]) for r in records]).documents
        solr = LocalSolr(port=args.port, data_dir=Path(work) / "solr", heap=args.heap)
        solr.start()
        try:
            schema = solr.data_dir / "configsets" / "neardup" / "conf" / "schema.xml"
            schema.write_text(schema.read_text().replace("  <field name=\"_version_\"",
                                                         WHITESPACE_FIELDS + "  <field name=\"_version_\"", 1))
            requests.get(f"http://127.0.0.1:{args.port}/solr/admin/cores",
                         params={"action": "RELOAD", "core": "neardup"}, timeout=120).raise_for_status()
            core_url = f"http://127.0.0.1:{args.port}/solr/neardup"
            pid = int(solr.pid_file.read_text())
            passes = [[measure(core_url, pid, documents, layout, args.batch_size, args.workers) for layout in LAYOUTS]
                      for _ in range(2)]
        finally:
            solr.stop()
    rows = passes[1]
    load = os.getloadavg()[0]
    print(f"{args.docs} documents, default settings, batches of {args.batch_size}, {args.workers} at a time; "
          f"load average {load:.2f}")
    print(f"{'layout':<32}{'Solr CPU ms/doc':>16}{'docs/s':>9}{'body MB':>9}")
    for row in rows:
        print(f"{row['layout']:<32}{row['solr_cpu_ms_per_doc']:>16.3f}{row['docs_per_s']:>9.0f}{row['body_mb']:>9.0f}")
    if args.json:
        args.json.write_text(json.dumps({"docs": args.docs, "load_average": load, "rows": rows,
                                         "first_pass": passes[0]}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
