"""companion_sync.read_ahead: backfill's pages fetched by a thread of their own, one page ahead."""

from __future__ import annotations

import threading
import time

import pytest

from neardup_solr.engine.companion_sync import read_ahead


def test_pages_come_in_order_and_the_reader_runs_ahead():
    fetched: list[int] = []

    def pages():
        for n in range(6):
            fetched.append(n)
            yield n

    consumed = []
    for page in read_ahead(pages(), depth=1):
        time.sleep(0.02)  # while this page is "signed", the next one is read
        consumed.append(page)
        if page == 2:
            assert len(fetched) >= 4  # page 3 read (and waiting), page 4 being put
    assert consumed == list(range(6))


def test_the_readers_error_is_raised_at_the_page_it_failed_on():
    def pages():
        yield 1
        yield 2
        raise ConnectionError("the user's Solr went away")

    seen = []
    with pytest.raises(ConnectionError, match="went away"):
        for page in read_ahead(pages()):
            seen.append(page)
    assert seen == [1, 2]


def test_leaving_the_loop_early_stops_the_reader():
    produced: list[int] = []

    def endless():
        n = 0
        while True:
            produced.append(n)
            yield n
            n += 1

    for page in read_ahead(endless(), depth=2):
        if page == 3:
            break
    time.sleep(0.7)  # longer than the reader's put timeout: it has seen the stop by now
    settled = len(produced)
    time.sleep(0.7)
    assert len(produced) == settled <= 8
    assert not [t for t in threading.enumerate() if t.name == "neardup-read-ahead"]
