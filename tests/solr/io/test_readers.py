"""Inputs as they are shipped: compressed files (by content), Parquet, standard input, binary files refused."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from neardup_solr.errors import InputFormatError
from neardup_solr.io.readers import Record, RecordReader

try:  # the optional extras (parquet, zstd) that scripts/setup.sh installs; only their tests need them
    import pyarrow as pa
    import pyarrow.parquet as pq
except ImportError:
    pa = pq = None
try:
    import zstandard
except ImportError:
    zstandard = None
needs_pyarrow = pytest.mark.skipif(pq is None, reason="pyarrow (the parquet extra) is not installed")

RECORDS = [(f"r{i}", f"Record {i}: café naïve Straße, words {i * 7} and more words {i}") for i in range(1, 41)]
COMPRESSORS = {
    "gzip": gzip.compress,
    "bzip2": bz2.compress,
    "xz": lzma.compress,
}
if zstandard is not None:
    COMPRESSORS["zstd"] = lambda data: zstandard.ZstdCompressor().compress(data)


def _encoded(fmt: str) -> bytes:
    if fmt == "lines":
        text = "".join(f"{i} {t}\n" for i, t in RECORDS)
    elif fmt == "tsv":
        text = "".join(f"{i}\t{t}\n" for i, t in RECORDS)
    elif fmt == "jsonl":
        text = "".join(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n" for i, t in RECORDS)
    else:
        text = "id,text\n" + "".join(f'{i},"{t}"\n' for i, t in RECORDS)
    return text.encode("utf-8")


def _read(path, fmt=None, **kw):
    return [(r.id, r.text) for r in RecordReader(path, fmt, **kw) if isinstance(r, Record)]


def _write_parquet(path: Path, rows_per_group: int = 7) -> None:
    table = pa.table({"id": [i for i, _ in RECORDS], "body": [t for _, t in RECORDS]})
    pq.write_table(table, path, row_group_size=rows_per_group)


@pytest.mark.parametrize("compression", sorted(COMPRESSORS))
@pytest.mark.parametrize("fmt", ["lines", "tsv", "jsonl", "csv"])
def test_compressed_files_read_the_same_records_whatever_their_name(tmp_path, compression, fmt):
    path = tmp_path / f"data.{fmt}.bin"  # a misleading suffix: compression is recognised by content
    path.write_bytes(COMPRESSORS[compression](_encoded(fmt)))
    assert _read(path, fmt) == RECORDS


def test_the_format_is_guessed_under_a_compression_suffix(tmp_path):
    path = tmp_path / "copies.jsonl.gz"
    path.write_bytes(gzip.compress(_encoded("jsonl")))
    reader = RecordReader(path)
    assert [(r.id, r.text) for r in reader] == RECORDS and reader.fmt == "jsonl"


@needs_pyarrow
def test_parquet_is_read_by_row_groups_with_chosen_columns(tmp_path):
    path = tmp_path / "data.parquet"
    _write_parquet(path)
    assert pq.ParquetFile(path).num_row_groups == 6
    assert _read(path, text_field="body") == RECORDS
    # Named otherwise, Parquet is still recognised by its magic bytes; compressed Parquet is spooled and read.
    other = tmp_path / "data.bin"
    other.write_bytes(path.read_bytes())
    assert _read(other, text_field="body") == RECORDS
    packed = tmp_path / "data.parquet.gz"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    assert _read(packed, text_field="body") == RECORDS


@needs_pyarrow
def test_parquet_missing_column_and_contradicting_format_are_one_line_errors(tmp_path):
    path = tmp_path / "data.parquet"
    _write_parquet(path)
    with pytest.raises(Exception, match=r"Parquet schema has no column 'text' \(columns: id, body\)"):
        _read(path)
    with pytest.raises(InputFormatError, match="is a Parquet file, not jsonl text: use --format parquet"):
        _read(path, "jsonl", text_field="body")
    text = tmp_path / "t.jsonl"
    text.write_bytes(_encoded("jsonl"))
    with pytest.raises(InputFormatError, match="is not a Parquet file"):
        _read(text, "parquet")


@pytest.mark.parametrize("content, looks_like", [
    (lambda p: zipfile.ZipFile(p, "w").writestr("a.txt", "1 hello there"), "a ZIP archive"),
    (lambda p: p.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4), "a PNG image"),
    (lambda p: p.write_bytes(bytes(range(256)) * 40), "binary data (a NUL byte at offset 0)"),
    (lambda p: p.write_bytes(gzip.compress(b"\x00\x01\x02garbage" * 100)), "binary data (inside its gzip"),
    (lambda p: p.write_bytes("1 hello\n".encode("utf-16")), "UTF-16 text"),
])
def test_binary_files_are_refused_naming_what_they_look_like(tmp_path, content, looks_like):
    path = tmp_path / "data.jsonl"
    content(path)
    with pytest.raises(InputFormatError) as info:
        _read(path)
    assert looks_like in str(info.value) and "\n" not in str(info.value)


@needs_pyarrow
def test_missing_optional_packages_are_named_with_the_extra_to_install(tmp_path, monkeypatch):
    path = tmp_path / "data.parquet"
    _write_parquet(path)
    packed = tmp_path / "data.jsonl.zst"
    packed.write_bytes(b"\x28\xb5\x2f\xfd" + b"\x00" * 20)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)  # import fails as if not installed
    monkeypatch.setitem(sys.modules, "zstandard", None)
    with pytest.raises(InputFormatError, match=r"reading Parquet needs pyarrow: pip install 'neardup-solr\[parquet\]'"):
        _read(path, text_field="body")
    with pytest.raises(InputFormatError, match=r"zstd-compressed.*pip install 'neardup-solr\[zstd\]'"):
        _read(packed)


def test_truncated_compressed_data_names_the_line_reached(tmp_path):
    path = tmp_path / "data.jsonl.gz"
    data = gzip.compress(_encoded("jsonl") * 50)
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputFormatError, match=r"the gzip data is truncated or corrupt after line \d+"):
        _read(path)


def test_standard_input_is_read_once_compressed_or_not():
    code = ("import sys; from neardup_solr.io.readers import RecordReader;"
            "print(sum(1 for _ in RecordReader('-', 'jsonl')), sum(1 for _ in RecordReader('-', 'jsonl')))")
    proc = subprocess.run([sys.executable, "-c", code], input=gzip.compress(_encoded("jsonl")),
                          capture_output=True, timeout=60)
    assert b"standard input was already read" in proc.stderr  # the second reader is refused, not given nothing
    code = "from neardup_solr.io.readers import RecordReader; print(sum(1 for _ in RecordReader('-', 'jsonl')))"
    proc = subprocess.run([sys.executable, "-c", code], input=lzma.compress(_encoded("jsonl")),
                          capture_output=True, timeout=60)
    assert proc.stdout.strip() == str(len(RECORDS)).encode()


# -- through the command line, against a real Solr ----------------------------------------------------------------


def _cli(solr_url, *args, stdin: bytes | None = None):
    return subprocess.run([sys.executable, "-m", "neardup_solr.cli", *map(str, args), "--solr-url", solr_url],
                          input=stdin, capture_output=True, timeout=300)


def _stored(solr) -> list[tuple]:
    docs = solr.select([("q", "*:*"), ("fl", "id,md5_hash,minhash_sig,content_lsh,content"), ("rows", 1000),
                        ("sort", "id asc")])["response"]["docs"]
    return [(d["id"], d.get("md5_hash"), d.get("minhash_sig"), tuple(d.get("content_lsh", ())), d.get("content"))
            for d in docs]


@pytest.mark.solr
@needs_pyarrow
def test_gzip_jsonl_and_parquet_give_the_same_index_and_binary_is_refused_untouched(solr, solr_url, tmp_path):
    packed = tmp_path / "copies.jsonl.gz"
    packed.write_bytes(gzip.compress(_encoded("jsonl")))
    proc = _cli(solr_url, "index", packed, "--clear-all", "-q")
    assert proc.returncode == 0, proc.stderr
    assert b"read 40, indexed 40, rejected 0" in proc.stdout
    from_jsonl = _stored(solr)
    parquet = tmp_path / "copies.parquet"
    _write_parquet(parquet)
    proc = _cli(solr_url, "index", parquet, "--text-column", "body", "--clear-all", "-q")
    assert proc.returncode == 0, proc.stderr
    assert _stored(solr) == from_jsonl and len(from_jsonl) == 41  # 40 records and the settings document
    # A ZIP named like JSONL, with --clear-all: refused in one line before anything is deleted or written.
    archive = tmp_path / "more.jsonl"
    zipfile.ZipFile(archive, "w").writestr("a.jsonl", _encoded("jsonl").decode())
    proc = _cli(solr_url, "index", archive, "--clear-all", "-q")
    assert proc.returncode == 2
    assert proc.stderr.decode().strip().splitlines() == [
        f"error: {archive} looks like a ZIP archive (or .docx/.xlsx/.jar), not text records or Parquet; unzip it "
        "first; nothing was read from it"]
    assert _stored(solr) == from_jsonl


@pytest.mark.solr
def test_standard_input_feeds_index_verify_and_groups(solr, solr_url, tmp_path):
    data = bz2.compress(_encoded("lines"))
    proc = _cli(solr_url, "index", "-", "--clear-all", "-q", stdin=data)
    assert proc.returncode == 0, proc.stderr
    assert solr.count("*:*") == len(RECORDS) + 1
    proc = _cli(solr_url, "verify", "-", stdin=data)
    assert proc.returncode == 0, proc.stderr
    proc = _cli(solr_url, "index", "-", "--resume", stdin=data)
    assert proc.returncode == 2 and b"standard input ('-') cannot be read again" in proc.stderr
    pairs = gzip.compress(b"# id\tneighbor_id\tedit_distance\tscore\nr1\tr2\t1\t3\nr2\tr3\t1\t3\n")
    proc = subprocess.run([sys.executable, "-m", "neardup_solr.cli", "groups", "-", "--out", tmp_path / "g.jsonl"],
                          input=pairs, capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    groups = [json.loads(line) for line in (tmp_path / "g.jsonl").read_text().splitlines()]
    assert [g["members"] for g in groups] == [["r1", "r2", "r3"]]
