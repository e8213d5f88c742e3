"""What ``dedupe`` must equal: the commands it replaces, run one by one as docs/recipes.md ran them (``index
--clear-all``, ``report --threshold T --method lsh``, ``groups --keep --with-singletons``), and input files whose
every record's bytes the test itself wrote, so that the expected output is the kept records' own bytes."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path

from neardup_solr.cli import main
from neardup_solr.validation import parse_tsv_id

HEADERS = {"csv": b"id,text,n\n"}


@dataclass
class Reference:
    keep: set[str]
    pairs: bytes  # report's pairs file
    groups: bytes  # groups --out
    keep_list: bytes  # groups --keep --with-singletons


def run_commands(path: Path, work: Path, solr_url: str, threshold: float, *extra: str,
                 representative: str = "earliest") -> Reference:
    """The recipe's commands on ``path``: the keep set and the files they wrote."""
    work.mkdir(parents=True, exist_ok=True)
    solr = ["--solr-url", solr_url]
    assert main(["index", str(path), "--clear-all", "-q", "--rejects", str(work / "rejects.jsonl"), *extra,
                 *solr]) in (0, 1)
    assert main(["report", "--threshold", str(threshold), "--method", "lsh", "--out", str(work / "pairs.tsv"), "-q",
                 *solr]) == 0
    assert main(["groups", str(work / "pairs.tsv"), "--out", str(work / "groups.jsonl"), "--keep",
                 str(work / "keep.txt"), "--with-singletons", "--representative", representative, *solr]) == 0
    keep_bytes = (work / "keep.txt").read_bytes()
    keep = {parse_tsv_id(line) for line in keep_bytes.decode("utf-8").splitlines()}
    return Reference(keep, (work / "pairs.tsv").read_bytes(), (work / "groups.jsonl").read_bytes(), keep_bytes)


def serialise(records: list[tuple[str, str]], fmt: str) -> list[tuple[str, bytes]]:
    """Each record as the line(s) the test writes for it in ``fmt`` (end of line included): (id, bytes)."""
    out = []
    for n, (doc_id, text) in enumerate(records):
        if fmt == "jsonl":
            line = json.dumps({"id": doc_id, "text": text, "n": n}, ensure_ascii=False) + "\n"
        elif fmt == "lines":
            line = f"{doc_id} {text}\n"
        elif fmt == "tsv":
            line = f"{doc_id}\t{text}\n"
        elif fmt == "csv":
            buffer = io.StringIO()
            csv.writer(buffer, lineterminator="\n").writerow([doc_id, text, n])
            line = buffer.getvalue()
        else:
            raise ValueError(fmt)
        out.append((doc_id, line.encode("utf-8")))
    return out


def write_input(path: Path, serialised: list[tuple[str, bytes]], fmt: str) -> bytes:
    """The input file's bytes (a header first where the format has one), written to ``path``."""
    data = HEADERS.get(fmt, b"") + b"".join(line for _, line in serialised)
    path.write_bytes(data)
    return data


def expected_output(serialised: list[tuple[str, bytes]], fmt: str, keep: set[str]) -> bytes:
    """The recipe's last step, filtering the input by the keep list: header, then the kept records' bytes."""
    return HEADERS.get(fmt, b"") + b"".join(line for doc_id, line in serialised if doc_id in keep)
