"""Throughput figures: documents and megabytes of text per second."""

from __future__ import annotations

from neardup_solr.io.throughput import format_rates, megabytes_per_second, utf8_size


def test_text_size_is_its_utf8_bytes_and_a_lone_surrogate_does_not_fail_it():
    assert utf8_size("abc") == 3 and utf8_size("café") == 5 and utf8_size("日本") == 6
    assert utf8_size("a\udc80b") == 5  # what surrogateescape leaves of a stray byte: counted, not raised


def test_rates_show_docs_and_megabytes_per_second():
    assert format_rates(1548, 1_400_000 * 3, 3.0) == "516 docs/s, 1.4 MB/s"
    assert format_rates(864, 39_720, 0.6) == "1,440 docs/s, 0.07 MB/s"  # two decimals below 1 MB/s
    assert format_rates(10, 10, 0.0) == "0 docs/s, 0.00 MB/s"
    assert megabytes_per_second(2_000_000, 0.5) == 4.0 and megabytes_per_second(5, 0.0) == 0.0
