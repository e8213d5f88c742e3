"""Run the real Apache Solr locally without Docker.

The Maven module in ``solr_config/launcher`` pulls Solr's jars from Maven Central (cached in ``~/.m2``) and
starts Solr's own embedded Jetty runner on 127.0.0.1. This module builds that launcher on first use, starts
it in the background, waits until the core answers ``/admin/ping``, and stops it again.

    >>> solr = LocalSolr(port=8983)
    >>> solr.start()          # builds on first use, creates the core from our configset
    >>> solr.core_url
    'http://127.0.0.1:8983/solr/neardup'
    >>> solr.stop()

Two properties hold for every JVM started here (the single node and each SolrCloud node of :mod:`.cloud`):
it runs with ``-XX:+ExitOnOutOfMemoryError``, and Lucene's indexing buffers are sized from its heap
(:func:`ram_buffer_mb`). ``start()`` returns only once the core accepts updates, which after a crash means
after Solr has replayed its update log.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shlex
import shutil
import signal
import subprocess
import time
from pathlib import Path

import requests

from neardup_solr.solr import settings
from neardup_solr.errors import LauncherError
from neardup_solr.processes import process_alive
from neardup_solr.solr.backends.base import StartResult
from neardup_solr.solr.update_log import ACTIVE, LOADING, core_is_loading, describe_state, metrics_key, state_of

log = logging.getLogger(__name__)

_LAUNCHER_CLASS = "io.neardup.solr.Launcher"

# Deleting an id that is never indexed is an update Solr must accept (it goes through the update log like any
# other) and leaves the index as it was.
PROBE_ID = "__neardup_start_probe__"

# Lucene buffers each core's new documents in the heap until ramBufferSizeMB is reached, then flushes a segment.
# The configset used to fix that at 256 MB per core; a node hosting several cores (SolrCloud after a failover
# puts every replica of a collection on the survivor) could then need more buffer than heap, hit an
# OutOfMemoryError and, since we exit on one, die again on every restart. So the launcher gives the buffers a
# quarter of the heap, shared by the cores the node may host, capped at the old 256 MB (more gained nothing in
# the indexing benchmarks), and refuses a heap whose share would fall below 16 MB per core: that small a buffer
# flushes tiny segments and indexing time goes to merging them.
RAM_BUFFER_SHARE = 0.25
RAM_BUFFER_MAX_MB = 256
RAM_BUFFER_MIN_MB = 16
# Below this Solr itself (caches, the servlet container, ZooKeeper client) does not start reliably.
MIN_HEAP_MB = 256


def parse_heap_mb(heap: str) -> int:
    """``2g`` / ``512m`` / ``1048576k`` as megabytes (the JVM's own ``-Xmx`` syntax)."""
    m = re.fullmatch(r"\s*(\d+)\s*([kKmMgG]?)\s*", str(heap))
    if not m:
        raise LauncherError(f"cannot read the heap size {heap!r}; give it as the JVM does, e.g. 512m or 2g")
    value, unit = int(m.group(1)), m.group(2).lower()
    return {"g": value * 1024, "m": value, "k": value // 1024, "": value // (1024 * 1024)}[unit]


def ram_buffer_mb(heap: str, cores: int) -> int:
    """The per-core ``solr.ramBufferSizeMB`` for a node with ``heap`` that may host ``cores`` cores at once."""
    heap_mb = parse_heap_mb(heap)
    cores = max(1, int(cores))
    if heap_mb < MIN_HEAP_MB:
        raise LauncherError(f"a heap of {heap} ({heap_mb} MB) is too small for Solr; use --heap {MIN_HEAP_MB}m or more")
    per_core = int(heap_mb * RAM_BUFFER_SHARE) // cores
    if per_core < RAM_BUFFER_MIN_MB:
        needed = -(-RAM_BUFFER_MIN_MB * cores // RAM_BUFFER_SHARE)  # ceiling
        raise LauncherError(
            f"a heap of {heap} ({heap_mb} MB) cannot hold the indexing buffers of {cores} cores: "
            f"{RAM_BUFFER_SHARE:.0%} of it gives {per_core} MB per core, below the {RAM_BUFFER_MIN_MB} MB minimum; "
            f"use --heap {int(needed)}m or more (or fewer shards x replicas per node)"
        )
    return min(RAM_BUFFER_MAX_MB, per_core)


def java_command(heap: str, classpath: str, main: str, *args: str, props: dict | None = None) -> list[str]:
    """A JVM command line as every process of ours gets it."""
    java = shutil.which("java")
    if java is None:
        raise LauncherError("Java ('java', 17 or newer) is not on PATH; Solr 9 needs it.")
    cmd = [
        java,
        f"-Xmx{heap}",
        "-XX:+UseG1GC",
        # Solr's bin/solr kills the JVM on an OutOfMemoryError (its oom script) for the same reason: after one,
        # Solr runs on with a closed IndexWriter and fails every update. Exiting instead lets a restart replay
        # the update log and serve again.
        "-XX:+ExitOnOutOfMemoryError",
        "-Djava.net.preferIPv4Stack=true",
    ]
    # Options of the user's for every JVM we start (Solr, its cloud nodes, ZooKeeper), after ours so that they win:
    # GC logging, another collector, or -XX:TieredStopAtLevel=1 for short-lived JVMs (the test suite's).
    cmd += shlex.split(os.environ.get("NEARDUP_JAVA_OPTIONS", ""))
    cmd += [f"-D{key}={value}" for key, value in (props or {}).items()]
    return cmd + ["-cp", classpath, main, *args]


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

    def _main_class(self) -> Path:
        return self.launcher_dir / "target" / "classes" / "io" / "neardup" / "solr" / "Launcher.class"

    def _is_built(self) -> bool:
        cp_file = self._classpath_file()
        main_class = self._main_class()
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
            # Maven leaves an output it finds up to date untouched (the classpath file when the jars are the same,
            # a class whose source it judges unchanged), and _is_built compares their times with the sources':
            # mark the build as of now, or every start after a source change would run Maven again.
            for output in (self._classpath_file(), self._main_class()):
                if output.exists():
                    os.utime(output)
        jars = self._classpath_file().read_text().strip()
        return os.pathsep.join([str(self.launcher_dir / "target" / "classes"), jars])

    # ------------------------------------------------------------------ state
    def pid(self) -> int | None:
        """The pid of our running Solr, or None (a stale pid file is removed)."""
        try:
            pid = int(self.pid_file.read_text().strip())
        except (FileNotFoundError, ValueError):
            return None
        if process_alive(pid) and _is_our_java(pid):
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

    def _cores_hosted(self) -> int:
        """Cores this node may index into at once: the existing ones plus ours if it is still to be created."""
        names = {p.parent.name for p in self.data_dir.glob("*/core.properties")}
        names.add(self.core)
        return len(names)

    def start(self, timeout: float = 180.0) -> StartResult:
        """Start Solr in the background (idempotent), make sure the core exists, and return once it accepts
        updates."""
        started_at = time.monotonic()
        if (self.data_dir / CLOUD_STATE_FILE).exists():
            raise LauncherError(
                f"{self.data_dir} holds a local SolrCloud; start it with 'neardup-solr solr start --cloud' "
                "or give the single node another --data-dir"
            )
        if self.is_running():
            self.ensure_core()
            return StartResult(self.core_url, True, time.monotonic() - started_at)
        classpath = self.build()
        buffer_mb = ram_buffer_mb(self.heap, self._cores_hosted())
        self._prepare_home()
        self.port_file.unlink(missing_ok=True)
        cmd = java_command(
            self.heap,
            classpath,
            _LAUNCHER_CLASS,
            str(self.data_dir),
            str(self.port),
            str(self.port_file),
            props={
                "log4j2.configurationFile": self.config_dir / "solr_home" / "log4j2.xml",
                "solr.max.booleanClauses": 1000000,
                "solr.ramBufferSizeMB": buffer_mb,
                # Without a distribution there is no bin/solr to set this; keeps Solr from phoning nowhere.
                "solr.disableRequestId": "true",
            },
        )
        log.info("starting Solr %s on 127.0.0.1:%s (home %s, heap %s, ramBufferSizeMB %s)",
                 settings.SOLR_VERSION, self.port, self.data_dir, self.heap, buffer_mb)
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
                    + _tail(self.log_file) + _start_errors(self.data_dir / "logs" / "solr.log")
                )
            if time.monotonic() > deadline:
                self.stop()
                raise LauncherError(f"Solr did not start within {timeout:.0f} s; see {self.log_file}")
            time.sleep(0.2)
        register_running(self.bound_port(), self.data_dir, "single")
        self.ensure_core()
        while not self.ping():
            if time.monotonic() > deadline:
                raise LauncherError(f"core {self.core!r} did not answer ping within {timeout:.0f} s")
            time.sleep(0.2)
        replay_wait = self.wait_until_updatable(deadline - time.monotonic())
        return StartResult(self.core_url, False, time.monotonic() - started_at, replay_wait)

    def update_log_state(self) -> int | None:
        """The core's update-log state (0 replaying, 1 buffering, 2 applying buffered, 3 active; LOADING while the
        core admin API says the core is still being loaded), or None when neither says.

        The core admin API is asked first: Solr builds a restarted core with the metric at 3 and starts the replay
        only afterwards (``CoreContainer.createFromDescriptor``), so the metric alone reads "active" in between."""
        try:
            resp = requests.get(f"{self.base_url}/admin/cores", timeout=10, auth=self.auth,
                                params={"action": "STATUS", "core": self.core, "wt": "json"})
            if resp.status_code == 200 and core_is_loading(resp.json(), self.core):
                return LOADING
        except (requests.RequestException, ValueError):
            pass
        try:
            resp = requests.get(f"{self.base_url}/admin/metrics", timeout=10, auth=self.auth,
                                params={"key": metrics_key(self.core), "wt": "json"})
            return state_of(resp.json(), self.core) if resp.status_code == 200 else None
        except (requests.RequestException, ValueError):
            return None

    def wait_until_updatable(self, timeout: float = 120.0) -> float:
        """Wait until the core accepts updates; returns the seconds spent waiting for a replay (0 if none).

        After a crash Solr replays the update log in the background while the core already answers ping. Until
        the replay is done the log's state is REPLAYING and requests that look an id up in the log (real-time
        get, and with it the indexer's settings check) fail with HTTP 500 ("lookupLog" is null) because no log
        is open for writing yet. So: wait for the ACTIVE state, then prove it with a harmless update.
        """
        t0 = time.monotonic()
        deadline = t0 + max(timeout, 1.0)
        last = "no answer"
        replaying = False
        while True:
            state = self.update_log_state()
            if state in (None, ACTIVE):
                ok, last = probe_update(self.core_url, self.auth)
                if ok:
                    waited = time.monotonic() - t0 if replaying else 0.0
                    if replaying:
                        log.info("core %s accepts updates after %.1f s (update log replayed)", self.core, waited)
                    return waited
            else:
                replaying = True
                last = f"the core is {describe_state(state)}"
            if time.monotonic() > deadline:
                raise LauncherError(
                    f"core {self.core!r} answers ping but did not accept updates within {timeout:.0f} s ({last}); "
                    f"see {self.data_dir / 'logs' / 'solr.log'}"
                )
            time.sleep(0.25)

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
        while process_alive(pid):
            if time.monotonic() > deadline:
                log.warning("Solr (pid %s) did not stop within %.0f s; killing it", pid, timeout)
                os.kill(pid, signal.SIGKILL)
                time.sleep(0.2)
                break
            time.sleep(0.1)
        port = self.bound_port()
        self.pid_file.unlink(missing_ok=True)
        self.port_file.unlink(missing_ok=True)
        unregister_running(port, self.data_dir)
        return True


CLOUD_STATE_FILE = "cloud.json"


def probe_update(core_url: str, auth=None, timeout: float = 10.0) -> tuple[bool, str]:
    """Send the harmless probe update; (accepted, what Solr said)."""
    try:
        resp = requests.post(f"{core_url}/update", params={"wt": "json"}, json={"delete": {"id": PROBE_ID}},
                             timeout=timeout, auth=auth)
    except requests.RequestException as exc:
        return False, type(exc).__name__
    if resp.status_code == 200:
        return True, "OK"
    try:
        msg = resp.json()["error"]["msg"]
    except (ValueError, KeyError, TypeError):
        msg = resp.text[:200]
    return False, f"HTTP {resp.status_code}: {str(msg).splitlines()[0][:200] if msg else ''}"


# ---------------------------------------------------------------------- registry of running launchers
# `solr stop --port P` must find a node started with any --data-dir. Each start records its data dir here under
# the port it listens on; entries whose process is gone are ignored.

def _registry_file(port: int) -> Path:
    return settings.run_dir() / f"{int(port)}.json"


def register_running(port: int, data_dir: Path, kind: str) -> None:
    try:
        settings.run_dir().mkdir(parents=True, exist_ok=True)
        tmp = _registry_file(port).with_suffix(".tmp")
        tmp.write_text(json.dumps({"port": int(port), "data_dir": str(Path(data_dir).resolve()), "kind": kind}))
        tmp.replace(_registry_file(port))
    except OSError as exc:  # the registry is a convenience; a read-only home must not stop Solr from starting
        log.warning("could not record the running Solr in %s: %s", settings.run_dir(), exc)


def unregister_running(port: int, data_dir: Path | None = None) -> None:
    entry = registered(port)
    if entry and (data_dir is None or Path(entry["data_dir"]) == Path(data_dir).resolve()):
        _registry_file(port).unlink(missing_ok=True)


def registered(port: int) -> dict | None:
    """The registry entry for ``port`` (``{"port", "data_dir", "kind"}``), or None."""
    try:
        return json.loads(_registry_file(port).read_text())
    except (OSError, ValueError):
        return None


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


_EXCEPTION_LINE = re.compile(r"[\w.$]+(Exception|Error)\b")


def _start_errors(solr_log: Path, limit: int = 8) -> str:
    """Solr's own account of a failed start: its log's ERROR lines and the causes under them (the launcher's
    trace names only the symptom, e.g. "The CoreContainer is unavailable!")."""
    try:
        text = solr_log.read_text(errors="replace")
    except OSError:
        return ""
    lines = text.splitlines()
    # An ERROR line, the exception it logged (the next line), and that exception's causes.
    said = [line for before, line in zip([""] + lines, lines)
            if " ERROR " in line or line.startswith("Caused by:")
            or (" ERROR " in before and _EXCEPTION_LINE.match(line))][:limit]
    return f"\n{solr_log} says:\n" + "\n".join(said) if said else ""


def crash_cause(port: int) -> str | None:
    """Why a Solr this launcher started on ``port`` (a single node, or any node of a local cluster) ended, when
    its log says so: a clean run that found Solr gone can then tell the user what to change."""
    entry = registered(port)
    if not entry:
        return None
    for log_path in sorted(Path(entry["data_dir"]).rglob("launcher.out")):
        tail = _tail(log_path, 5)
        if "OutOfMemoryError" in tail:
            return (f"the local Solr ran out of memory and exited (see {log_path}): start it again with a larger "
                    "--heap (e.g. 'neardup-solr solr start --heap 4g'), then run the same command with --resume")
    return None
