"""neardup_solr.io.parallel_gzip: blocks deflated on several threads make one gzip member that every reader takes
(Python's gzip, the gzip command), byte for byte the input, the same file for the same input, and the size of one
sequential stream at the same level."""

from __future__ import annotations

import gzip
import io
import random
import shutil
import subprocess
import zlib

import pytest

from neardup_solr.io.parallel_gzip import ParallelGzipWriter


def _text(n_bytes: int, seed: int = 3) -> bytes:
    rng = random.Random(seed)
    words = [f"w{rng.randrange(5000)}" for _ in range(2000)]
    out = bytearray()
    while len(out) < n_bytes:
        out += (" ".join(rng.choice(words) for _ in range(12)) + "\n").encode()
    return bytes(out[:n_bytes])


def _written(data: bytes, *, pieces: int = 997, **options) -> bytes:
    buf = io.BytesIO()
    with ParallelGzipWriter(buf, **options) as writer:
        for start in range(0, len(data), pieces):
            writer.write(data[start:start + pieces])
    return buf.getvalue()


@pytest.mark.parametrize("size", [0, 1, 4095, 4096, 4097, 3 * 4096, 50_000])
def test_every_size_round_trips_around_the_block_edges(size):
    data = _text(size)
    out = _written(data, block_bytes=4096, threads=3)
    assert gzip.decompress(out) == data
    # One member: one header, and zlib's gzip reader stops at its end with nothing left over.
    reader = zlib.decompressobj(31)
    assert reader.decompress(out) == data and reader.eof and reader.unused_data == b""


def test_the_same_input_gives_the_same_bytes_whatever_the_threads():
    data = _text(200_000)
    first = _written(data, block_bytes=8192, threads=1)
    assert _written(data, block_bytes=8192, threads=4) == first
    assert _written(data, block_bytes=8192, threads=4, pieces=50_001) == first  # how writes are cut: no matter


def test_the_header_is_the_one_python_writes_without_name_or_time():
    out = _written(b"some text\n")
    reference = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=reference, mtime=0, compresslevel=6) as sequential:
        sequential.write(b"some text\n")
    assert out[:10] == reference.getvalue()[:10]


def test_blocks_cost_almost_nothing_against_one_sequential_stream():
    data = _text(2_000_000)
    out = _written(data, block_bytes=64 * 1024, threads=2)
    sequential = gzip.compress(data, compresslevel=6, mtime=0)
    # 31 block edges of 5 bytes each and a restarted match search: within 0.5% of one stream.
    assert len(out) <= len(sequential) * 1.005


@pytest.mark.skipif(shutil.which("gzip") is None, reason="no gzip command")
def test_the_gzip_command_reads_it(tmp_path):
    data = _text(100_000)
    path = tmp_path / "out.gz"
    path.write_bytes(_written(data, block_bytes=4096))
    assert subprocess.run(["gzip", "-t", str(path)]).returncode == 0
    assert subprocess.run(["gzip", "-dc", str(path)], capture_output=True).stdout == data


def test_writing_after_close_is_refused():
    writer = ParallelGzipWriter(io.BytesIO())
    writer.close()
    writer.close()  # a second close does nothing
    with pytest.raises(ValueError, match="closed"):
        writer.write(b"late")
