#!/usr/bin/env bash
# Idempotent set-up used by scripts/test.sh and scripts/demo.sh: a virtualenv in .venv with the project
# (editable) and its test/benchmark/service/spark extras, plus the Solr launcher built from Maven Central jars.
# --python: the virtualenv only (what the fast tier, ./scripts/test.sh --fast, needs: no Java, Maven or browser).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $($PYTHON --version 2>&1)"
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.neardup-installed
# Reinstalled when the declared dependencies or the compiled kernel's sources change (pip builds the kernel).
kernel_built() { compgen -G "neardup_solr/text/_kernel*.so" >/dev/null; }
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ setup.py -nt "$stamp" ] \
   || [ neardup_solr/text/_kernel.c -nt "$stamp" ] || ! kernel_built; then
  echo "setup: installing neardup-solr and its dependencies into .venv"
  log=.venv/pip-install.log
  if ! { .venv/bin/python -m pip install --upgrade pip && .venv/bin/python -m pip install -e '.[test,bench,service,parquet,zstd,spark,cloud,docs,meaning]'; } >"$log" 2>&1; then
    tail -30 "$log" >&2
    echo "setup: pip install failed (full log: $log)" >&2
    exit 1
  fi
  touch "$stamp"
fi
if [ "${1:-}" = "--python" ]; then
  exit 0
fi

for tool in java mvn; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      echo "setup: installing $tool with apt-get"
      apt-get update -qq && apt-get install -y -qq maven openjdk-17-jdk-headless >/dev/null
    else
      echo "setup: '$tool' is missing; install Java 17 and Maven (or set SOLR_URL to a running Solr)" >&2
      exit 1
    fi
  fi
done

if [ -z "${SOLR_URL:-}" ]; then
  # Resolves Solr's jars into ~/.m2 on the first run (about 120 MB), then is a no-op.
  .venv/bin/neardup-solr solr build
fi

# --- the browser the web page's test drives (tests/doors/service/test_browser.py) ---------------------------------
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing chromium and chromium-driver with apt-get (for the web page's browser test)"
    apt-get update -qq && apt-get install -y -qq chromium chromium-driver >/dev/null \
      || echo "setup: could not install chromium; the browser tests will skip" >&2
  else
    echo "setup: no chromium/chromedriver and no apt-get as root: the browser tests will skip" >&2
  fi
fi
