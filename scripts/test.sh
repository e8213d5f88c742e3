#!/usr/bin/env bash
# The test command: sets everything up, then runs the whole suite against a real Solr that the test session
# starts on a free 127.0.0.1 port and stops at the end (or against SOLR_URL when that is set).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m pytest "$@"
