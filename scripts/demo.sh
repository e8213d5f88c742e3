#!/usr/bin/env bash
# The main job on a fresh machine: set up, start the local Solr, run the restaurant demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/neardup-solr demo "$@"
