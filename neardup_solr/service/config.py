"""How the service is configured: where Solr is, the optional bearer token, CORS, limits and the jobs directory.

Every value comes from an argument, else an environment variable, else the ``[service]`` section of the
neardup-solr config file (``NEARDUP_CONFIG`` or ``~/.config/neardup-solr/config.ini``, the file that already
holds the Solr credentials), else a default:

=================  ================================  =====================  ==================================
setting            environment                       config key             default
=================  ================================  =====================  ==================================
token              NEARDUP_SERVICE_TOKEN             ``token``              none: no authentication
cors_origins       NEARDUP_SERVICE_CORS_ORIGINS      ``cors_origins``       none: CORS off
max_body_bytes     NEARDUP_SERVICE_MAX_BODY_BYTES    ``max_body_bytes``     64 MiB
jobs_dir           NEARDUP_SERVICE_JOBS_DIR          ``jobs_dir``           a new temporary directory
solr_max_wait      NEARDUP_SOLR_MAX_WAIT             (the client's)         10 s (a request should not hang)
check_commit_ms    NEARDUP_SERVICE_CHECK_COMMIT_MS   ``check_commit_ms``    1000 ms
check_strict       NEARDUP_SERVICE_CHECK_STRICT      ``check_strict``       true
=================  ================================  =====================  ==================================

``check_commit_ms`` is the ``commitWithin`` of the texts ``POST /v1/check`` adds: the next ``/v1/check`` of this
service process sees each one at once (the process remembers them, :mod:`neardup_solr.solr.recent`); other lookups
(``/v1/near-dups``, reports) and other processes, other workers (``--workers``) included, within that time.
``0`` soft-commits every added text: each check is then slower, and every process sees it at once.

``check_strict`` is the default of ``POST /v1/check``'s ``strict``: of two near-duplicate texts checked at the
same moment, by any workers or services on the collection, at most one is added (Solr-side locks on the text's LSH
bands, and a soft commit per added text, so ``check_commit_ms`` does not apply; see
:mod:`neardup_solr.engine.online`). ``false`` (also ``0``, ``no``, ``off``) makes checks cheaper and exclusive for
near duplicates within one worker only; a request's ``"strict"`` overrides it either way.

The token is compared in constant time and never logged or shown (``repr`` hides it).
"""

from __future__ import annotations

import configparser
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from neardup_solr.errors import InvalidParameterError
from neardup_solr.solr.client import DEFAULT_CONFIG_FILE
from neardup_solr.validation import Limit, env_float, parse_value

ENV_TOKEN = "NEARDUP_SERVICE_TOKEN"
ENV_CORS = "NEARDUP_SERVICE_CORS_ORIGINS"
ENV_MAX_BODY = "NEARDUP_SERVICE_MAX_BODY_BYTES"
ENV_JOBS_DIR = "NEARDUP_SERVICE_JOBS_DIR"
ENV_CHECK_COMMIT = "NEARDUP_SERVICE_CHECK_COMMIT_MS"
ENV_MIN_REPLICAS = "NEARDUP_SOLR_MIN_REPLICAS"
ENV_CHECK_STRICT = "NEARDUP_SERVICE_CHECK_STRICT"
DEFAULT_MAX_BODY = 64 * 2**20
DEFAULT_CHECK_COMMIT_MS = 1000
CHECK_COMMIT_LIMIT = Limit("int", 0, 3_600_000, unit="ms")
MAX_BODY_LIMIT = Limit("int", 1024, 2**34, unit="bytes")
MIN_REPLICAS_LIMIT = Limit("int", 1, 100)


def _config_section() -> dict[str, str]:
    named = os.environ.get("NEARDUP_CONFIG")
    path = Path(named) if named else DEFAULT_CONFIG_FILE
    if not path.is_file():
        return {}
    parser = configparser.ConfigParser()
    parser.read(path)
    return dict(parser["service"]) if parser.has_section("service") else {}


_TRUE_WORDS = ("true", "1", "yes", "on")
_FALSE_WORDS = ("false", "0", "no", "off")


def _bool_setting(section: dict[str, str], env: str, key: str, default: bool) -> bool:
    """A yes/no setting from the environment variable ``env``, else ``key`` in the config file's [service] section,
    else ``default``; a word that is neither is refused naming where it came from."""
    from_env = os.environ.get(env, "").strip()
    raw = from_env or section.get(key, "").strip()
    if not raw:
        return default
    word = raw.lower()
    if word in _TRUE_WORDS or word in _FALSE_WORDS:
        return word in _TRUE_WORDS
    name = env if from_env else f"{key} in the [service] section of the config file"
    raise InvalidParameterError(name, "true or false (also 1/0, yes/no, on/off)", raw)


def _int_setting(section: dict[str, str], env: str, key: str, limit: Limit, default: int) -> int:
    """An integer from the environment variable ``env``, else ``key`` in the config file's [service] section, else
    ``default``; a bad value is refused naming where it came from."""
    from_env = os.environ.get(env, "").strip()
    raw = from_env or section.get(key, "").strip()
    name = env if from_env else f"{key} in the [service] section of the config file"
    return int(parse_value(name, raw, limit)) if raw else default


@dataclass
class ServiceConfig:
    """The service's settings; :meth:`load` fills what is not given from the environment and the config file."""

    solr_url: str | None = None
    token: str | None = field(default=None, repr=False)
    cors_origins: list[str] = field(default_factory=list)
    max_body_bytes: int = DEFAULT_MAX_BODY
    jobs_dir: Path | None = None
    solr_timeout: float = 60.0
    solr_max_wait: float = 10.0
    check_commit_ms: int = DEFAULT_CHECK_COMMIT_MS
    # POST /v1/check's default: exclusive for near duplicates across workers and hosts (see the module docstring).
    check_strict: bool = True
    # Write concern of the service's writes (check-and-add, deletes): see SolrClient(min_replicas=).
    min_replicas: int = 1
    # Whether jobs_dir is a temporary directory made for this process (none was configured): its jobs end with
    # the process, which removes it (remove_temporary_jobs_dir).
    jobs_dir_is_temporary: bool = field(default=False, init=False, repr=False)

    @classmethod
    def load(cls, **given) -> "ServiceConfig":
        section = _config_section()
        token = given.pop("token", None) or os.environ.get(ENV_TOKEN) or section.get("token") or None
        if token is not None and not token.strip():
            token = None
        raw_cors = os.environ.get(ENV_CORS) or section.get("cors_origins") or ""
        cors = given.pop("cors_origins", None)
        if cors is None:
            cors = [o.strip() for o in raw_cors.split(",") if o.strip()]
        max_body = given.pop("max_body_bytes", None)
        if max_body is None:
            max_body = _int_setting(section, ENV_MAX_BODY, "max_body_bytes", MAX_BODY_LIMIT, DEFAULT_MAX_BODY)
        jobs = given.pop("jobs_dir", None) or os.environ.get(ENV_JOBS_DIR) or section.get("jobs_dir")
        max_wait = given.pop("solr_max_wait", None)
        if max_wait is None:
            max_wait = env_float("NEARDUP_SOLR_MAX_WAIT", 10.0, "max_wait")
        check_commit = given.pop("check_commit_ms", None)
        if check_commit is None:
            check_commit = _int_setting(section, ENV_CHECK_COMMIT, "check_commit_ms", CHECK_COMMIT_LIMIT,
                                        DEFAULT_CHECK_COMMIT_MS)
        check_strict = given.pop("check_strict", None)
        if check_strict is None:
            check_strict = _bool_setting(section, ENV_CHECK_STRICT, "check_strict", True)
        min_replicas = given.pop("min_replicas", None)
        if min_replicas is None:
            min_replicas = _int_setting(section, ENV_MIN_REPLICAS, "min_replicas", MIN_REPLICAS_LIMIT, 1)
        return cls(token=token, cors_origins=list(cors), max_body_bytes=max_body,
                   jobs_dir=Path(jobs) if jobs else None, solr_max_wait=max_wait, check_commit_ms=check_commit,
                   check_strict=bool(check_strict), min_replicas=min_replicas, **given)

    def resolved_jobs_dir(self) -> Path:
        """The jobs directory, created when missing (a fresh temporary one when none is configured)."""
        if self.jobs_dir is None:
            self.jobs_dir = Path(tempfile.mkdtemp(prefix="neardup-service-jobs-"))
            self.jobs_dir_is_temporary = True
        try:
            self.jobs_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InvalidParameterError("jobs_dir", "a directory the service can write", str(self.jobs_dir),
                                        str(exc)) from None
        return self.jobs_dir

    def remove_temporary_jobs_dir(self) -> None:
        """Remove the jobs directory if it is a temporary one this config made; a configured one keeps its jobs."""
        if self.jobs_dir_is_temporary and self.jobs_dir is not None:
            shutil.rmtree(self.jobs_dir, ignore_errors=True)
