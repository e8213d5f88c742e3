"""Where the repository's files are, for tests at any depth under tests/ (imported as a top-level module, like
the other helpers here: the rootdir conftest.py puts tests/ on sys.path)."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
# Golden files the tests compare against (signatures stored before a change, ...).
DATA = TESTS / "data"
