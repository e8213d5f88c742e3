"""Run the real Apache Solr locally without Docker.

The Maven module in ``solr_config/launcher`` pulls Solr's jars from Maven Central (cached in ``~/.m2``) and
starts Solr's own embedded Jetty runner on 127.0.0.1. This module builds that launcher on first use, starts
it in the background, waits until the core answers ``/admin/ping``, and stops it again.

    >>> solr = LocalSolr(port=8983)
    >>> solr.start()          # builds on first use, creates the core from our configset
    >>> solr.core_url
    'http://127.0.0.1:8983/solr/neardup'
    >>> solr.stop()
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import requests

from .. import settings
from ..errors import LauncherError

log = logging.getLogger(__name__)

_LAUNCHER_CLASS = "io.neardup.solr.Launcher"


@dataclass
class StartResult:
    url: str
    already_running: bool
    seconds: float


class LocalSolr:
    """One local Solr node with the ``neardup`` core, identified by its data directory and port."""

    def __init__(
        self,
        port: int | None = None,
        data_dir: str | Path | None = None,
        heap: str | None = None,
        core: str = settings.CORE_NAME,
        auth: tuple[str, str] | None = None,
        security_json: str | Path | None = None,
    ):
        self.port = settings.local_port() if port is None else int(port)
        self.data_dir = Path(data_dir) if data_dir else settings.local_data_dir(self.port)
        self.heap = heap or os.environ.get("NEARDUP_SOLR_HEAP", "2g")
        self.core = core
        # Credentials for our own admin calls (ping, core creation) when security.json enables BasicAuth.
        self.auth = auth
        self.security_json = Path(security_json) if security_json else None
        self.config_dir = settings.solr_config_dir()
        self.launcher_dir = self.config_dir / "launcher"

    # ------------------------------------------------------------------ paths
    @property
    def pid_file(self) -> Path:
        return self.data_dir / "solr.pid"

    @property
    def port_file(self) -> Path:
        return self.data_dir / "solr.port"

    @property
    def log_file(self) -> Path:
        return self.data_dir / "logs" / "launcher.out"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.bound_port()}/solr"

    @property
    def core_url(self) -> str:
        return f"{self.base_url}/{self.core}"

    def bound_port(self) -> int:
        if self.port == 0 and self.port_file.exists():
            return int(self.port_file.read_text().strip())
        return self.port

    # ------------------------------------------------------------------ build
    def _classpath_file(self) -> Path:
        return self.launcher_dir / "target" / "classpath.txt"

    def _is_built(self) -> bool:
        cp_file = self._classpath_file()
        main_class = self.launcher_dir / "target" / "classes" / "io" / "neardup" / "solr" / "Launcher.class"
        if not (cp_file.exists() and main_class.exists()):
            return False
        sources = [self.launcher_dir / "pom.xml", *self.launcher_dir.joinpath("src").rglob("*.java")]
        built_at = min(cp_file.stat().st_mtime, main_class.stat().st_mtime)
        if any(src.stat().st_mtime > built_at for src in sources):
            return False
        return all(Path(jar).exists() for jar in cp_file.read_text().strip().split(os.pathsep) if jar)

    def build(self) -> str:
        """Compile the launcher and resolve Solr's jars. The first run downloads about 120 MB from Maven Central
        (87 MB of Solr's jars, the rest Maven's plugins) in about 20 s here."""
        if not self._is_built():
            mvn = shutil.which("mvn")
            if mvn is None:
                raise LauncherError(
                    "Maven ('mvn') is not on PATH; it is needed once to fetch Solr's jars. "
                    "Install it (e.g. 'apt-get install maven'), or point SOLR_URL at a running Solr."
                )
            log.info("building the Solr launcher with Maven (first run downloads Solr's jars)")
            cmd = [mvn, "-q", "-B", "compile", "dependency:build-classpath",
                   f"-Dmdep.outputFile={self._classpath_file()}"]
            proc = subprocess.run(cmd, cwd=self.launcher_dir, capture_output=True, text=True)
            if proc.returncode != 0:
                tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
                raise LauncherError(f"Maven could not build the Solr launcher in {self.launcher_dir}:\n{tail}")
        jars = self._classpath_file().read_text().strip()
        return os.pathsep.join([str(self.launcher_dir / "target" / "classes"), jars])

    # ------------------------------------------------------------------ state
    def pid(self) -> int | None:
        """The pid of our running Solr, or None (a stale pid file is removed)."""
        try:
            pid = int(self.pid_file.read_text().strip())
        except (FileNotFoundError, ValueError):
            return None
        if _process_alive(pid) and _is_our_java(pid):
            return pid
        self.pid_file.unlink(missing_ok=True)
        return None

    def is_running(self) -> bool:
        return self.pid() is not None

    def ping(self, timeout: float = 2.0) -> bool:
        try:
            resp = requests.get(f"{self.core_url}/admin/ping", params={"wt": "json"}, timeout=timeout,
                                auth=self.auth)
            return resp.status_code == 200 and resp.json().get("status") == "OK"
        except (requests.RequestException, ValueError):
            return False

    def status(self) -> dict:
        pid = self.pid()
        return {
            "running": pid is not None,
            "pid": pid,
            "port": self.bound_port() if pid else self.port,
            "core_url": self.core_url if pid else None,
            "core_ok": self.ping() if pid else False,
            "data_dir": str(self.data_dir),
            "solr_version": settings.SOLR_VERSION,
        }

    # ------------------------------------------------------------------ start / stop
    def _prepare_home(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        (self.data_dir / "logs").mkdir(exist_ok=True)
        shutil.copyfile(self.config_dir / "solr_home" / "solr.xml", self.data_dir / "solr.xml")
        if self.security_json is not None:
            # Standalone Solr reads security.json from its home at start-up (authentication, authorization).
            shutil.copyfile(self.security_json, self.data_dir / "security.json")
        # Refreshed on every start so that schema changes in the repository reach the core on restart.
        target = self.data_dir / "configsets"
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(self.config_dir / "configsets", target)

    def start(self, timeout: float = 180.0) -> StartResult:
        """Start Solr in the background (idempotent) and make sure the core exists."""
        started_at = time.monotonic()
        if self.is_running():
            self.ensure_core()
            return StartResult(self.core_url, True, time.monotonic() - started_at)
        classpath = self.build()
        self._prepare_home()
        self.port_file.unlink(missing_ok=True)
        java = shutil.which("java")
        if java is None:
            raise LauncherError("Java ('java', 17 or newer) is not on PATH; Solr 9 needs it.")
        cmd = [
            java,
            f"-Xmx{self.heap}",
            "-XX:+UseG1GC",
            "-Djava.net.preferIPv4Stack=true",
            f"-Dlog4j2.configurationFile={self.config_dir / 'solr_home' / 'log4j2.xml'}",
            "-Dsolr.max.booleanClauses=1000000",
            # Without a distribution there is no bin/solr to set this; keeps Solr from phoning nowhere.
            "-Dsolr.disableRequestId=true",
            "-cp",
            classpath,
            _LAUNCHER_CLASS,
            str(self.data_dir),
            str(self.port),
            str(self.port_file),
        ]
        log.info("starting Solr %s on 127.0.0.1:%s (home %s)", settings.SOLR_VERSION, self.port, self.data_dir)
        with open(self.log_file, "ab") as out:
            proc = subprocess.Popen(
                cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
            )
        self.pid_file.write_text(str(proc.pid))
        deadline = started_at + timeout
        while not self.port_file.exists():
            if proc.poll() is not None:
                self.pid_file.unlink(missing_ok=True)
                raise LauncherError(
                    f"Solr exited during start-up (code {proc.returncode}); see {self.log_file}:\n"
                    + _tail(self.log_file)
                )
            if time.monotonic() > deadline:
                self.stop()
                raise LauncherError(f"Solr did not start within {timeout:.0f} s; see {self.log_file}")
            time.sleep(0.2)
        self.ensure_core()
        while not self.ping():
            if time.monotonic() > deadline:
                raise LauncherError(f"core {self.core!r} did not answer ping within {timeout:.0f} s")
            time.sleep(0.2)
        return StartResult(self.core_url, False, time.monotonic() - started_at)

    def ensure_core(self) -> None:
        """Create the core from our configset unless it exists already."""
        admin = f"{self.base_url}/admin/cores"
        resp = requests.get(admin, params={"action": "STATUS", "core": self.core, "wt": "json"}, timeout=30,
                            auth=self.auth)
        resp.raise_for_status()
        if resp.json().get("status", {}).get(self.core, {}).get("name"):
            return
        log.info("creating core %s from configset %s", self.core, settings.CONFIGSET_NAME)
        resp = requests.get(
            admin,
            params={
                "action": "CREATE",
                "name": self.core,
                "configSet": settings.CONFIGSET_NAME,
                "instanceDir": self.core,
                "wt": "json",
            },
            timeout=120,
            auth=self.auth,
        )
        if resp.status_code != 200:
            raise LauncherError(f"could not create core {self.core!r}: {resp.text[:500]}")

    def stop(self, timeout: float = 10.0) -> bool:
        """Stop our Solr; returns False when nothing was running."""
        pid = self.pid()
        if pid is None:
            return False
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while _process_alive(pid):
            if time.monotonic() > deadline:
                log.warning("Solr (pid %s) did not stop within %.0f s; killing it", pid, timeout)
                os.kill(pid, signal.SIGKILL)
                time.sleep(0.2)
                break
            time.sleep(0.1)
        self.pid_file.unlink(missing_ok=True)
        self.port_file.unlink(missing_ok=True)
        return True


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child still answers kill(0); reap it if it is ours.
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done == 0
    except ChildProcessError:
        stat = Path(f"/proc/{pid}/stat")
        try:
            return stat.read_text().split(") ", 1)[1][0] != "Z"
        except (OSError, IndexError):
            return True


def _is_our_java(pid: int) -> bool:
    """Guards against a recycled pid: the process must be a JVM running our launcher class."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return True  # no /proc (not Linux): trust the pid file
    return _LAUNCHER_CLASS.encode() in cmdline


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""
