"""Groups, keep list and deduplicated records computed by the Spark executors (neardup_solr/spark/groups.py,
records_out.py) against the single process: the groups file and keep list byte for byte those of ``groups``
over the same pairs file, for both representative rules, on the restaurants, a generated corpus and a corpus of
long chains and one big component; group numbers that do not move with the partitioning; ``--records-out`` equal
to the input filtered by the single process's keep list, for lines, JSONL, CSV, a gzip input and Parquet.

Kept small (a few thousand records): each Spark job costs a second or so here, and CI runs everything in 30 min."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="PySpark is not installed (pip install 'neardup-solr[spark]')")
pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install 'neardup-solr[spark]')")

from benchmarks.corpus import generate  # noqa: E402
from neardup_solr.io import restaurants  # noqa: E402
from neardup_solr.io.readers import Record, RecordReader  # noqa: E402
from neardup_solr.pairs.groups import (  # noqa: E402
    group_pairs,
    keep_list,
    read_distance_pairs,
    write_groups_jsonl,
    write_keep_list,
)
from neardup_solr.spark.session import java_executable  # noqa: E402

if java_executable() is None:
    pytest.skip("no Java runtime (java on PATH or JAVA_HOME) to start Spark", allow_module_level=True)

GENERATED_DOCS = 1500
BOM = b"\xef\xbb\xbf"


def _chains_and_a_big_component(path: Path) -> None:
    """Two long chains (each text a window of words one word on from the last: neighbours are near duplicates,
    the ends of a chain are not), one big component (copies of one text with a word changed), and singletons;
    ids numeric (with leading zeros too) and not, shuffled so that no chain runs in id order."""
    rng = random.Random(40)
    words = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(4, 9))) for _ in range(2000)]
    texts = []
    for start in (0, 1000):  # two chains of 140 documents
        texts += [" ".join(words[start + i:start + i + 40]) for i in range(140)]
    base = words[500:560]
    for _ in range(90):  # the big component
        copy = list(base)
        copy[rng.randrange(len(copy))] = "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=8))
        texts.append(" ".join(copy))
    texts += [" ".join(rng.sample(words, 30)) for _ in range(120)]  # singletons
    ids = set()
    while len(ids) < len(texts):
        kind = rng.random()
        ids.add(str(rng.randrange(1, 5000)) if kind < 0.5 else f"00{rng.randrange(1, 900)}" if kind < 0.6
                else f"doc-{rng.randrange(10**6)}")
    rows = list(zip(sorted(ids), texts))
    rng.shuffle(rows)
    path.write_text("".join(f"{i} {t}\n" for i, t in rows), encoding="utf-8")


@pytest.fixture(scope="module")
def corpora(tmp_path_factory) -> dict[str, tuple[Path, float]]:
    """name -> (file, threshold)."""
    root = tmp_path_factory.mktemp("spark-groups-corpora")
    addresses = root / "restaurants.txt"
    restaurants.prepare_default(addresses)
    generate(GENERATED_DOCS, 7, root / "generated", workers=0)
    chains = root / "chains.txt"
    _chains_and_a_big_component(chains)
    return {"restaurants": (addresses, 0.5), "generated": (root / "generated" / "docs.jsonl", 0.8),
            "chains": (chains, 0.8)}


@pytest.fixture(scope="module")
def deduped(spark, corpora, tmp_path_factory):
    """name -> (dedup_file's result, the pairs file it writes): each corpus deduplicated once for the module."""
    from neardup_solr.spark import dedup_file
    from neardup_solr.spark.io import write_pairs_from_executors

    done: dict = {}

    def run(name: str):
        if name not in done:
            path, threshold = corpora[name]
            staging = tmp_path_factory.mktemp(f"staging-{name}")
            result, _ = dedup_file(spark, path, threshold, staging_dir=staging)
            write_pairs_from_executors(result.pairs, staging / "pairs.tsv", staging)
            done[name] = (result, staging / "pairs.tsv")
        return done[name]

    return run


def _records(path: Path) -> dict[str, str]:
    """id -> text of the file's records (the last copy of a repeated id), as the reader gives them."""
    return {item.id: item.text for item in RecordReader(path) if isinstance(item, Record)}


def _single_process(pairs: Path, representative: str, texts: dict[str, str], all_ids, groups_out: Path,
                    keep_out: Path) -> list:
    """``groups PAIRS --out --keep --with-singletons --representative R`` in one process (the command's steps:
    its distance from the pairs file's similarity, group_pairs, the two writers), texts from the input."""
    lines = pairs.read_text(encoding="utf-8").splitlines(keepends=True)
    assert "similarity" in lines[0]
    edges = [(a, b, round(1.0 - s, 6)) for a, b, s in read_distance_pairs(lines, source=str(pairs))]
    groups = group_pairs(edges, representative=representative, texts=texts)
    write_groups_jsonl(groups, groups_out)
    write_keep_list(keep_list(groups, all_ids), keep_out)
    return groups


@pytest.mark.parametrize("name", ["restaurants", "generated", "chains"])
def test_groups_and_keep_list_are_the_single_processes_byte_for_byte(spark, corpora, deduped, name, tmp_path):
    """For both representative rules: the executors' groups file and keep list equal, byte for byte, what the
    single process writes from the pairs file; with earliest, the groups file is also what the `groups` command
    itself writes."""
    from neardup_solr.cli import main
    from neardup_solr.spark.groups import executor_groups, write_groups_from_executors
    from neardup_solr.spark.io import write_keep_list_from_executors

    path, _ = corpora[name]
    staging = tmp_path / "staging"
    result, pairs = deduped(name)
    texts = _records(path)
    assert result.stats.documents == len(texts)

    differ = 0
    for representative in ("earliest", "longest"):
        groups = executor_groups(result.pairs, representative=representative,
                                 lengths=result.signed.select("id", "length"))
        spark_groups, spark_keep = (tmp_path / f"spark-{representative}.{ext}" for ext in ("jsonl", "keep"))
        assert write_groups_from_executors(groups, spark_groups, staging) == groups.count
        kept = write_keep_list_from_executors(result.signed, groups.dropped, spark_keep, staging)
        single_groups, single_keep = (tmp_path / f"single-{representative}.{ext}" for ext in ("jsonl", "keep"))
        expected = _single_process(pairs, representative, texts, list(texts), single_groups, single_keep)
        assert spark_groups.read_bytes() == single_groups.read_bytes(), representative
        assert spark_keep.read_bytes() == single_keep.read_bytes(), representative
        assert groups.count == len(expected) >= 3 and kept == len(texts) - groups.members_count + groups.count
        differ += sum(g.representative != g.members[0] for g in expected)
    assert differ > 0  # the longest text is not always the earliest id: the rules were both tested

    command = tmp_path / "command.jsonl"
    assert main(["groups", str(pairs), "--out", str(command)]) == 0
    assert command.read_bytes() == (tmp_path / "spark-earliest.jsonl").read_bytes()
    if name == "chains":  # the corpus does what it is for: long chains (several rounds) and a big component
        sizes = sorted(len(json.loads(line)["members"]) for line in command.read_text().splitlines())
        assert sizes[-3:] == [90, 140, 140] and groups.rounds >= 2


def test_group_numbers_do_not_depend_on_the_partitioning(spark, deduped, tmp_path):
    """The same pairs in 1 or 9 partitions, shuffled through 3 or 11: the same groups file, byte for byte."""
    from neardup_solr.spark.groups import executor_groups, write_groups_from_executors

    result, _ = deduped("generated")
    files = []
    try:
        for partitions, shuffle in ((1, 3), (9, 11)):
            spark.conf.set("spark.sql.shuffle.partitions", str(shuffle))
            pairs = result.pairs.repartition(partitions)
            staging = tmp_path / f"staging-{partitions}"
            groups = executor_groups(pairs, representative="longest",
                                     lengths=result.signed.select("id", "length").repartition(partitions))
            out = tmp_path / f"groups-{partitions}.jsonl"
            write_groups_from_executors(groups, out, staging)
            files.append(out.read_bytes())
            members = {r["id"]: r["group_id"] for r in groups.members.collect()}
            assert len(members) == groups.members_count
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", "4")
    assert files[0] == files[1] and files[0].count(b"\n") > 20


def _expected_records(entries: list[tuple[str | None, bytes]], keep: set[str], header: bytes = b"") -> bytes:
    """The single process's rule: the file's records whose id is kept, the last copy of a repeated id only, in
    input order; each its input line(s) without line ends (nor the input's byte order mark), then "\\n"."""
    def copied(raw: bytes) -> bytes:
        return b"\n".join(line.rstrip(b"\r") for line in raw.removeprefix(BOM).rstrip(b"\r\n").split(b"\n")) + b"\n"

    last = {record_id: i for i, (record_id, _) in enumerate(entries) if record_id is not None}
    out = [copied(raw) for i, (record_id, raw) in enumerate(entries)
           if record_id is not None and last[record_id] == i and record_id in keep]
    return (copied(header) if header else b"") + b"".join(out)


def _entries(kind: str, rows: list[tuple[str, str]]) -> tuple[list[tuple[str | None, bytes]], bytes]:
    """The lines of a ``kind`` file of ``rows`` with what the readers must cope with (a byte order mark, a blank
    line, a broken record, a repeated id, a record without words, Windows line ends, no line end at the end):
    ``(id or None, raw bytes)`` each (None: not a record), and the header."""
    def line(record_id: str, text: str) -> bytes:
        if kind == "jsonl":
            return json.dumps({"id": record_id, "text": text}, ensure_ascii=False).encode() + b"\n"
        if kind == "csv":
            quoted = '"' + text.replace('"', '""') + '"' if any(c in text for c in ',"\n') else text
            return f"{record_id},{quoted}\n".encode()
        return f"{record_id} {text}\n".encode()

    half = len(rows) // 2
    (first_id, first_text), (second_id, _) = rows[0], rows[1]
    entries: list[tuple[str | None, bytes]] = [(first_id, (b"" if kind == "csv" else BOM) + line(first_id, first_text))]
    entries.append((second_id, line(second_id, "an earlier copy of the second record")))
    entries += [(i, line(i, t)) for i, t in rows[1:half]]
    entries.append((None, b"\n"))
    entries.append((None, {"jsonl": b"{broken\n", "csv": b"1,2,3\n", "lines": b" starts with a space\n"}[kind]))
    entries.append(("nowords", line("nowords", " ,,, ")))  # a record that cannot be signed: never kept
    if kind == "csv":  # a quoted field over two lines (a Windows line end between them), a near copy
        entries.append(("multi", f'multi,"{first_text}\r\nsecond line"\n'.encode()))
    middle_id, middle_text = rows[half]
    entries.append((middle_id, line(middle_id, middle_text)[:-1] + b"\r\n"))
    entries += [(i, line(i, t)) for i, t in rows[half + 1:]]
    last_id, last_raw = entries[-1]
    entries[-1] = (last_id, last_raw[:-1])  # no line end at the end of the file
    return entries, (BOM + b"id,text\r\n" if kind == "csv" else b"")


@pytest.mark.parametrize("kind", ["lines", "jsonl", "csv.gz"])
def test_records_out_is_the_input_filtered_by_the_single_processes_keep_list(spark, corpora, kind, tmp_path):
    """spark dedup --records-out: the input records whose id the single process keeps (its keep list from the
    pairs file and the input's ids), in input order, each its input line byte for byte; compressed as OUT's
    name says. Lines and JSONL are copied by the tasks that read their byte ranges; the gzip CSV in one pass by
    one task."""
    from neardup_solr.cli import main

    rows = [(i, t) for i, t in (line.split(" ", 1) for line in
                                corpora["restaurants"][0].read_text(encoding="utf-8").splitlines())]
    fmt = kind.split(".")[0]
    entries, header = _entries(fmt, rows)
    content = header + b"".join(raw for _, raw in entries)
    path = tmp_path / f"input.{kind}"
    path.write_bytes(gzip.compress(content) if kind.endswith(".gz") else content)
    pairs, out = tmp_path / "pairs.tsv", tmp_path / (f"kept.{fmt}.gz" if kind != "lines" else "kept.txt")
    args = ["spark", "dedup", str(path), "--threshold", "0.5", "--out", str(pairs), "--records-out", str(out),
            "--keep", str(tmp_path / "keep.txt"), "--representative", "longest"]
    assert main(args + (["--format", "lines"] if kind == "lines" else [])) == 1  # rejected lines: exit 1

    texts = {i: t for i, t in _records(path).items() if i != "nowords"}
    groups, keep_file = tmp_path / "groups.jsonl", tmp_path / "keep-single.txt"
    _single_process(pairs, "longest", texts, list(texts), groups, keep_file)
    keep = set(keep_file.read_text(encoding="utf-8").split())
    assert (tmp_path / "keep.txt").read_bytes() == keep_file.read_bytes()
    expected = _expected_records(entries, keep, header)
    written = gzip.decompress(out.read_bytes()) if out.suffix == ".gz" else out.read_bytes()
    assert written == expected
    assert 100 < expected.count(b"\n") < len(rows)  # some records dropped, most kept


def test_records_out_of_parquet_is_parquet_with_the_inputs_schema(spark, corpora, tmp_path):
    """A Parquet directory in: a Parquet file out, the input's schema, the kept rows in input order (files by
    name, rows in order), every column kept."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from neardup_solr.cli import main

    rows = [line.split(" ", 1) for line in corpora["restaurants"][0].read_text(encoding="utf-8").splitlines()]
    data = tmp_path / "input.parquet"
    data.mkdir()
    half = len(rows) // 2
    for name, part in (("part-0.parquet", rows[:half]), ("part-1.parquet", rows[half:])):
        table = pa.table({"doc": pa.array([int(i) for i, _ in part], pa.int32()),
                          "body": [t for _, t in part], "n": pa.array(range(len(part)), pa.int16())})
        pq.write_table(table, data / name, row_group_size=100)
    out, pairs, keep = tmp_path / "kept.parquet", tmp_path / "pairs.tsv", tmp_path / "keep.txt"
    assert main(["spark", "dedup", str(data), "--threshold", "0.5", "--out", str(pairs), "--records-out",
                 str(out), "--keep", str(keep), "--id-column", "doc", "--text-column", "body"]) == 0
    kept = set(keep.read_text(encoding="utf-8").split())
    source = pa.concat_tables([pq.read_table(data / "part-0.parquet"), pq.read_table(data / "part-1.parquet")])
    expected = source.filter(pa.array([str(i) in kept for i in source.column("doc").to_pylist()]))
    written = pq.read_table(out)
    assert written.schema.equals(source.schema) and written.equals(expected)
    assert 0 < written.num_rows < len(rows)
