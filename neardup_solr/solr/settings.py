"""Where things are: the Solr to talk to, the repository's Solr config, the local data directory.

One rule for every consumer (CLI, API, tests, benchmarks): ``SOLR_URL`` if it is set, otherwise the local
launcher's Solr on 127.0.0.1.
"""

from __future__ import annotations

import os
from pathlib import Path
from neardup_solr.validation import Limit, env_int

SOLR_VERSION = "9.10.1"
CORE_NAME = "neardup"
CONFIGSET_NAME = "neardup"
DEFAULT_PORT = 8983

# neardup_solr/, two levels up from this module (neardup_solr/solr/settings.py).
PACKAGE_DIR = Path(__file__).resolve().parents[1]
REPO_DIR = PACKAGE_DIR.parent


def solr_config_dir() -> Path:
    """The Solr config: ``NEARDUP_SOLR_CONFIG`` if set, else the source tree's ``solr_config/`` (a checkout or an
    editable install), else the copy an installed wheel carries in the package (``neardup_solr/solr_config``).
    The launcher is built inside it (``launcher/target``), so that directory must be writable; for a read-only
    installation point ``NEARDUP_SOLR_CONFIG`` at a writable copy."""
    override = os.environ.get("NEARDUP_SOLR_CONFIG")
    if override:
        return Path(override)
    source = REPO_DIR / "solr_config"
    if (REPO_DIR / "pyproject.toml").is_file() and source.is_dir():
        return source
    return PACKAGE_DIR / "solr_config"


def configset_dir() -> Path:
    """The neardup configset this package ships (schema and solrconfig)."""
    return solr_config_dir() / "configsets" / CONFIGSET_NAME


def local_port() -> int:
    """The local launcher's port: ``NEARDUP_SOLR_PORT`` (checked: an integer between 1 and 65535), else 8983."""

    return env_int("NEARDUP_SOLR_PORT", DEFAULT_PORT, Limit("int", 1, 65535))


def local_data_dir(port: int | None = None) -> Path:
    """Solr home of the local launcher: ``NEARDUP_SOLR_HOME`` or ``~/.neardup-solr/solr-<port>``."""
    override = os.environ.get("NEARDUP_SOLR_HOME")
    if override:
        return Path(override)
    return Path.home() / ".neardup-solr" / f"solr-{port or local_port()}"


def run_dir() -> Path:
    """Where running launchers record their data dir by port (``NEARDUP_SOLR_RUN_DIR`` or
    ``~/.neardup-solr/run``), so that ``solr stop --port P`` finds a Solr started with any ``--data-dir``."""
    override = os.environ.get("NEARDUP_SOLR_RUN_DIR")
    return Path(override) if override else Path.home() / ".neardup-solr" / "run"


def local_core_url(port: int | None = None, core: str = CORE_NAME) -> str:
    """The URL of the local launcher's core on ``port`` (default :func:`local_port`)."""
    return f"http://127.0.0.1:{port or local_port()}/solr/{core}"


def solr_url() -> str:
    """The core URL every consumer uses: ``SOLR_URL`` if set, else the local launcher's core."""
    url = os.environ.get("SOLR_URL")
    return url.rstrip("/") if url else local_core_url()


def solr_url_is_local() -> bool:
    """True when no ``SOLR_URL`` is set, so the local launcher's Solr is the one meant."""
    return not os.environ.get("SOLR_URL")
