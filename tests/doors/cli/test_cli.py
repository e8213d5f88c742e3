"""The command line: pure commands (no Solr) and its error handling."""

from __future__ import annotations

import subprocess
import sys

import pytest

from neardup_solr.cli import main


def test_tune_prints_the_s_curve_formula(capsys):
    assert main(["tune", "--bands", "20", "--rows-per-band", "5"]) == 0
    out = capsys.readouterr().out
    expected = 1 - (1 - 0.8**5) ** 20
    line = next(l for l in out.splitlines() if l.strip().startswith("0.80"))
    assert float(line.split()[1]) == pytest.approx(expected, abs=5e-7)
    assert "b=20, rows r=5" in out


def test_tune_chooses_bands_and_writes_a_png(tmp_path, capsys):
    png = tmp_path / "curve.png"
    assert main(["tune", "--threshold", "0.8", "--num-hashes", "128", "--plot", str(png)]) == 0
    assert "b=9, rows r=13" in capsys.readouterr().out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["tune", "--threshold", "0.8", "--num-hashes", "128", "--min-recall", "0.95"]) == 0
    assert "b=18, rows r=7" in capsys.readouterr().out


def test_unreachable_solr_is_one_clear_line_without_traceback(tmp_path):
    path = tmp_path / "x.txt"
    path.write_text("1 some text\n")
    proc = subprocess.run(
        [sys.executable, "-m", "neardup_solr.cli", "index", str(path), "--solr-url", "http://127.0.0.1:9/solr/nope",
         "--max-wait", "0"],
        capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 3
    assert "Traceback" not in proc.stderr
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and "Solr is not answering at http://127.0.0.1:9/solr/nope" in lines[0]
    assert "SOLR_URL" in lines[0]


@pytest.mark.solr
@pytest.mark.parametrize("command", [["index", "{file}"], ["near-dups", "3"], ["report", "--out", "{out}"]])
def test_a_missing_core_is_one_clear_line_naming_it(solr_url, tmp_path, command):
    """Solr up, core absent (e.g. only the demo's core exists): say so instead of echoing Jetty's 404 page."""
    path = tmp_path / "x.txt"
    path.write_text("1 some text\n")
    missing = solr_url.rsplit("/", 1)[0] + "/no_such_core"
    args = [a.format(file=path, out=tmp_path / "pairs.tsv") for a in command]
    proc = subprocess.run([sys.executable, "-m", "neardup_solr.cli", *args, "--solr-url", missing],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3, proc.stderr
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert len(lines) == 1, proc.stderr
    assert "Solr is running at" in lines[0] and "no core 'no_such_core'" in lines[0]
    assert "<html" not in proc.stderr.lower()


def test_missing_input_file_is_a_usage_error(capsys):
    assert main(["evaluate", "/nonexistent/pairs.tsv", "/nonexistent/gold.tsv"]) == 2
    assert "error:" in capsys.readouterr().err
