"""The same Solr in Docker, through the Docker SDK, for machines that have an engine.

It runs the official image at the version the local launcher pins, mounts our configset read-only, and
precreates the core, as ``docker-compose.yml`` does. On machines without an engine :func:`docker_available`
is False and :class:`DockerSolr` raises a :class:`~neardup_solr.errors.LauncherError` that says so.

    >>> solr = DockerSolr(port=8983)
    >>> solr.start().url
    'http://127.0.0.1:8983/solr/neardup'
"""

from __future__ import annotations

import logging
import time

import requests

from neardup_solr.solr import settings
from neardup_solr.errors import LauncherError
from neardup_solr.solr.backends.base import StartResult

log = logging.getLogger(__name__)

IMAGE = f"solr:{settings.SOLR_VERSION}"
CONTAINER_CONFIGSET = f"/opt/solr/server/solr/configsets/{settings.CONFIGSET_NAME}"


def docker_available() -> bool:
    """True when the Docker SDK is installed and an engine answers."""
    try:
        import docker
    except ImportError:
        return False
    try:
        docker.from_env(timeout=5).ping()
        return True
    except Exception:  # the SDK raises several unrelated types when no engine is reachable
        return False


class DockerSolr:
    def __init__(self, port: int = settings.DEFAULT_PORT, name: str = "neardup-solr", core: str = settings.CORE_NAME):
        self.port = port
        self.name = name
        self.core = core

    @property
    def core_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/solr/{self.core}"

    def _client(self):
        try:
            import docker
        except ImportError as exc:
            raise LauncherError("the Docker SDK is not installed: pip install 'neardup-solr[docker]'") from exc
        try:
            client = docker.from_env(timeout=10)
            client.ping()
            return client
        except Exception as exc:
            raise LauncherError(
                "no Docker engine answers here; use the local launcher ('neardup-solr solr start') instead"
            ) from exc

    def start(self, timeout: float = 180.0) -> StartResult:
        started = time.monotonic()
        client = self._client()
        existing = [c for c in client.containers.list(all=True, filters={"name": self.name}) if c.name == self.name]
        if existing and existing[0].status == "running":
            return StartResult(self.core_url, True, time.monotonic() - started)
        if existing:
            existing[0].start()
        else:
            client.containers.run(
                IMAGE,
                ["solr-precreate", self.core, CONTAINER_CONFIGSET],
                name=self.name,
                detach=True,
                ports={"8983/tcp": ("127.0.0.1", self.port)},
                environment={"SOLR_OPTS": "-Dsolr.max.booleanClauses=1000000"},
                volumes={
                    str(settings.configset_dir()): {"bind": CONTAINER_CONFIGSET, "mode": "ro"},
                    f"{self.name}-data": {"bind": "/var/solr", "mode": "rw"},
                },
            )
        while time.monotonic() - started < timeout:
            try:
                resp = requests.get(f"{self.core_url}/admin/ping", params={"wt": "json"}, timeout=2)
                if resp.ok and resp.json().get("status") == "OK":
                    return StartResult(self.core_url, False, time.monotonic() - started)
            except (requests.RequestException, ValueError):
                pass
            time.sleep(1)
        raise LauncherError(f"the Solr container {self.name!r} did not answer ping within {timeout:.0f} s")

    def stop(self) -> bool:
        client = self._client()
        for container in client.containers.list(filters={"name": self.name}):
            if container.name == self.name:
                container.stop(timeout=10)
                return True
        return False

    def status(self) -> dict:
        """Whether the container runs, and its core URL; ``error`` says why when no Docker engine answers."""
        try:
            client = self._client()
        except LauncherError as exc:
            return {"running": False, "core_url": None, "container": self.name, "error": str(exc)}
        running = any(c.name == self.name for c in client.containers.list(filters={"name": self.name}))
        return {"running": running, "core_url": self.core_url if running else None, "container": self.name,
                "image": IMAGE, "error": None}
