"""What each token field costs Solr when indexing, and what other layouts of the same tokens would cost.

    python benchmarks/token_fields.py --docs 20000 [--corpus benchmarks/work/c30k/docs.jsonl] [--json out.json]

The documents are built once by our ``DocumentBuilder``, with the defaults before the hash form (shingles as text,
minhash, lsh, words) and with today's defaults (hashed shingles in content_nh, lsh, words), and posted to a
dedicated Solr as prepared JSON bodies (500 documents each, two at a time), so the client's share is out of the
measurement: each row is Solr's own CPU time per document (from /proc, so Linux only) and the rate Solr alone
sustains. Layouts:

- ``before``: what ``index`` sent by default before, one multi-valued StrField value per token;
- ``before without <field>``: the same without one field, which is that field's cost;
- ``whitespace``: shingles, words and MinHash tokens as one whitespace-tokenized value per field (shingle
  words joined by '_', which the normaliser never leaves in a word);
- ``whitespace, hashed shingles``: the same with each shingle as its 32-bit hash in hex;
- ``hashed shingles and words (whitespace), no minhash``: the default, with the words joined too;
- ``default``: what ``index`` sends by default now;
- ``lsh only``: what ``--fields lsh`` sends.

The dedicated Solr's schema gets the whitespace-tokenized fields added (its own copy; nothing of the project's
configset changes). Rows are run twice in the order given and the second pass is reported, after the JVM is
warm; the first pass is in the JSON.

``--profile LAYOUT`` posts that layout a third time under Java Flight Recorder (``jcmd JFR.start``, Java 17's
own sampling profiler) and prints where Solr's indexing threads spent their samples: by stage (the first frame
of the stack that belongs to a known stage: JSON parsing, the update log, Lucene's inverted index, ...) and by
the method on top of the stack.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
from collections import Counter
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from neardup_solr.solr.backends.local import LocalSolr  # noqa: E402
from neardup_solr.solr.documents import WRITE_UP_TOKEN_FIELDS, DocumentBuilder, IndexSettings  # noqa: E402
from benchmarks.provenance import write_result_files  # noqa: E402

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


def _words_joined(doc: dict) -> dict:
    doc = dict(doc)
    doc["words_ws"] = " ".join(doc.pop("content_words"))
    return doc


BEFORE = IndexSettings(fields=WRITE_UP_TOKEN_FIELDS, shingle_tokens="text")
DEFAULT = IndexSettings()
# name: (the settings the documents are built with, what is done to each before it is sent)
LAYOUTS = {
    "before": (BEFORE, lambda doc: doc),
    "before without shingles (content_ng)": (BEFORE, _without("content_ng")),
    "before without minhash (content_sg)": (BEFORE, _without("content_sg")),
    "before without words (content_words)": (BEFORE, _without("content_words")),
    "whitespace": (BEFORE, lambda doc: _whitespace(doc, hashed=False)),
    "whitespace, hashed shingles": (BEFORE, lambda doc: _whitespace(doc, hashed=True)),
    "hashed shingles and words (whitespace), no minhash": (DEFAULT, _words_joined),
    "default": (DEFAULT, lambda doc: doc),
    "lsh only": (DEFAULT, _without("content_nh", "content_words")),
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


def measure(core_url: str, pid: int, documents: dict, layout: str, batch: int, workers: int) -> dict:
    requests.post(f"{core_url}/update?commit=true", json={"delete": {"query": "*:*"}}, timeout=300).raise_for_status()
    settings, shape = LAYOUTS[layout]
    shaped = [shape(d) for d in documents[settings]]
    bodies = [json.dumps(shaped[i:i + batch]).encode() for i in range(0, len(shaped), batch)]
    cpu0, wall0 = _solr_cpu_seconds(pid), time.perf_counter()
    _post_all(core_url, bodies, workers)
    wall, cpu = time.perf_counter() - wall0, _solr_cpu_seconds(pid) - cpu0
    return {"layout": layout, "docs_per_s": len(shaped) / wall, "solr_cpu_ms_per_doc": 1000 * cpu / len(shaped),
            "body_mb": sum(map(len, bodies)) / 1e6}


# A sample belongs to the first of these stages found walking its stack from the top (the innermost frame)
# outwards, so a tlog write inside the update handler counts as the update log, not as the handler.
STAGES = (
    ("JSON parsing of the request", ("org.noggit.", "org.apache.solr.handler.loader.JsonLoader")),
    ("update log (tlog) writes", ("org.apache.solr.update.TransactionLog", "org.apache.solr.update.UpdateLog",
                                  "org.apache.solr.common.util.JavaBinCodec")),
    ("segment flush and merge", ("org.apache.lucene.index.DocumentsWriterPerThread.flush",
                                 "org.apache.lucene.index.ConcurrentMergeScheduler",
                                 "org.apache.lucene.index.IndexWriter.merge", "org.apache.lucene.codecs.")),
    ("Lucene inverted index (terms, postings)", ("org.apache.lucene.index.TermsHash",
                                                 "org.apache.lucene.index.FreqProxTermsWriter",
                                                 "org.apache.lucene.util.BytesRefHash",
                                                 "org.apache.lucene.util.ByteBlockPool")),
    ("Lucene indexing chain, other (stored fields, docValues, field setup)",
     ("org.apache.lucene.index.IndexingChain", "org.apache.lucene.index.StoredFieldsConsumer",
      "org.apache.lucene.document.", "org.apache.lucene.analysis.")),
    ("Solr document building (schema fields)", ("org.apache.solr.update.DocumentBuilder",
                                                "org.apache.solr.schema.")),
    ("Solr update processors", ("org.apache.solr.update.processor.",)),
    ("HTTP and servlet", ("org.eclipse.jetty.", "org.apache.solr.servlet.")),
)


def _frame_name(frame: dict) -> str:
    method = frame["method"]
    return f"{method['type']['name'].replace('/', '.')}.{method['name']}"  # JFR spells packages with '/'



def _stage(names: list[str]) -> str:
    for name in names:
        for stage, prefixes in STAGES:
            if name.startswith(prefixes):
                return stage
    return "other (JVM, GC helpers, unknown)"


def profile(core_url: str, pid: int, documents: dict, layout: str, batch: int, workers: int,
            out: Path, top: int = 15) -> dict:
    """One more pass of ``layout`` under JFR; the samples of Solr's threads by stage and by top method."""
    recording = out.with_suffix(".jfr")
    subprocess.run(["jcmd", str(pid), "JFR.start", "name=neardup", "settings=profile"], check=True,
                   capture_output=True)
    row = measure(core_url, pid, documents, layout, batch, workers)
    subprocess.run(["jcmd", str(pid), "JFR.dump", "name=neardup", f"filename={recording}"], check=True,
                   capture_output=True)
    subprocess.run(["jcmd", str(pid), "JFR.stop", "name=neardup"], check=True, capture_output=True)
    printed = subprocess.run(["jfr", "print", "--json", "--events", "jdk.ExecutionSample", str(recording)],
                             check=True, capture_output=True, text=True).stdout
    events = json.loads(printed)["recording"]["events"]
    by_stage: Counter = Counter()
    by_method: Counter = Counter()
    for event in events:
        frames = event["values"]["stackTrace"]["frames"] if event["values"].get("stackTrace") else []
        names = [_frame_name(f) for f in frames]
        by_stage[_stage(names)] += 1
        by_method[names[0] if names else "?"] += 1
    total = sum(by_stage.values()) or 1
    return {"layout": layout, "samples": total, "solr_cpu_ms_per_doc": row["solr_cpu_ms_per_doc"],
            "stages": [(s, n / total) for s, n in by_stage.most_common()],
            "top_methods": [(m, n / total) for m, n in by_method.most_common(top)],
            "recording": str(recording)}


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
    ap.add_argument("--profile", choices=sorted(LAYOUTS), action="append", default=[],
                    help="post this layout once more under Java Flight Recorder and print where Solr's time went "
                         "(repeatable; the .jfr files are kept in benchmarks/work)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="token-fields-") as work:
        corpus = args.corpus
        if corpus is None:
            from benchmarks.corpus import main as make_corpus
            make_corpus(["--docs", str(args.docs), "--seed", "1", "--out", work + "/corpus", "--quiet"])
            corpus = Path(work) / "corpus" / "docs.jsonl"
        with open(corpus) as lines:
            records = [json.loads(next(lines)) for _ in range(args.docs)]
        documents = {settings: DocumentBuilder(settings).build([(r["id"], r["text"]) for r in records]).documents
                     for settings in (BEFORE, DEFAULT)}
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
            where = Path(__file__).parent / "work"  # recordings are large: kept out of results/
            where.mkdir(parents=True, exist_ok=True)
            profiles = [profile(core_url, pid, documents, layout, args.batch_size, args.workers,
                                where / f"token-fields-{layout.split()[0].strip(',')}-{i}")
                        for i, layout in enumerate(args.profile)]
        finally:
            solr.stop()
    rows = passes[1]
    load = os.getloadavg()[0]
    print(f"{args.docs} documents, default settings, batches of {args.batch_size}, {args.workers} at a time; "
          f"load average {load:.2f}")
    print(f"{'layout':<32}{'Solr CPU ms/doc':>16}{'docs/s':>9}{'body MB':>9}")
    for row in rows:
        print(f"{row['layout']:<32}{row['solr_cpu_ms_per_doc']:>16.3f}{row['docs_per_s']:>9.0f}{row['body_mb']:>9.0f}")
    for found in profiles:
        print(f"\nJFR, layout {found['layout']!r}: {found['samples']} samples of Solr's threads "
              f"({found['solr_cpu_ms_per_doc']:.3f} ms/doc in that pass); {found['recording']}")
        for stage, share in found["stages"]:
            print(f"  {share:6.1%}  {stage}")
        print("  top methods:")
        for method, share in found["top_methods"]:
            print(f"  {share:6.1%}  {method}")
    if args.json:
        from neardup_solr.version import package_version

        write_result_files(args.json, {"docs": args.docs, "neardup_solr": package_version(), "load_average": load,
                                       "rows": rows, "first_pass": passes[0], "profiles": profiles},
                           json_path=args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
