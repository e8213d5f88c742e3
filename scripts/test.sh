#!/usr/bin/env bash
# The test command: sets everything up, then runs the whole suite against a real Solr that the test session
# starts on a free 127.0.0.1 port and stops at the end (or against SOLR_URL when that is set).
#
#   ./scripts/test.sh [pytest args]    the whole suite, on 3 pytest-xdist workers, each with a Solr of its own
#                                      (the groups are in tests/conftest.py); NEARDUP_TEST_WORKERS=N runs it on
#                                      N, and 1 in one process. On 2 cores: 13-15 min on 3 workers (busy)
#                                      (tests/README.md)
#   ./scripts/test.sh --fast [args]    the fast tier: pure-Python tests that need neither Java nor Solr, nor
#                                      minutes (those marked slow: the other Pythons' virtualenvs)
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--fast" ]; then
  shift
  bash scripts/setup.sh --python
  exec .venv/bin/python -m pytest tests/unit tests/project/test_layout.py -m "not solr and not slow" "$@"
fi

bash scripts/setup.sh
workers="${NEARDUP_TEST_WORKERS:-3}"
parallel=()
# A SOLR_URL names one Solr that workers would share (and empty under each other), so it runs in one process.
if [ "$workers" != 1 ] && [ -z "${SOLR_URL:-}" ]; then
  parallel=(-n "$workers" --dist loadgroup)
fi
exec .venv/bin/python -m pytest "${parallel[@]}" "$@"
