"""The Collections and Configsets APIs of any SolrCloud, through any node's HTTP API (no ZooKeeper access):
upload our configset, create the collection, read the cluster's state and wait for its replicas.

These take the URL of any node (``http://host:8983/solr``) and are what ``neardup-solr solr create-collection``
runs against users' own clusters, what the local cluster launcher (:mod:`.backends.cloud`) uses to set itself up,
and how the whole-collection report finds each shard's replicas.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import requests

from neardup_solr.errors import CollectionSetupError, LauncherError
from neardup_solr.solr import settings

log = logging.getLogger(__name__)



def node_base_url(url: str) -> str:
    """``http://host:8983/solr`` from a node URL, a collection URL or a bare ``http://host:8983``."""
    parts = urlsplit(url.rstrip("/"))
    segments = [s for s in parts.path.split("/") if s]
    if "solr" in segments:
        segments = segments[: segments.index("solr") + 1]
    elif not segments:
        segments = ["solr"]
    return urlunsplit((parts.scheme or "http", parts.netloc, "/" + "/".join(segments), "", ""))


def _redact(url: str) -> str:
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def _solr_reason(resp: requests.Response, body: dict | None) -> str:
    msg = None
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict):
            msg = err.get("msg")
        if not msg and body.get("failure"):
            msg = json.dumps(body["failure"])[:300]
        if not msg and body.get("exception"):
            msg = str(body["exception"])
    if not msg:
        msg = resp.text.strip()[:300] or resp.reason
    first = str(msg).strip().splitlines()[0] if str(msg).strip() else ""
    if resp.status_code in (401, 403):
        first += " (set SOLR_USERNAME/SOLR_PASSWORD or the [solr] section of the config file)"
    return first[:400]


def admin_call(node_url: str, path: str, params: dict, step: str, *, auth=None, method: str = "GET",
           data: bytes | None = None, timeout: float = 60.0) -> dict:
    node_url = node_base_url(node_url)
    headers = {"Content-Type": "application/octet-stream"} if data is not None else None
    try:
        resp = requests.request(method, f"{node_url}/{path}", params={**params, "wt": "json"}, data=data,
                                headers=headers, timeout=timeout, auth=auth)
    except requests.RequestException as exc:
        raise CollectionSetupError(
            step,
            f"could not reach Solr at {_redact(node_url)} to {step} ({type(exc).__name__}); is it running, and is "
            "--solr-url a node URL such as http://host:8983/solr?",
        ) from None
    try:
        body = resp.json()
    except ValueError:
        body = None
    if resp.status_code != 200 or not isinstance(body, dict) or body.get("failure") or body.get("error"):
        raise CollectionSetupError(step, f"Solr refused to {step} (HTTP {resp.status_code}): {_solr_reason(resp, body)}")
    return body


def list_configsets(node_url: str, *, auth=None) -> list[str]:
    return admin_call(node_url, "admin/configs", {"action": "LIST"}, "list configsets", auth=auth).get("configSets", [])


def list_collections(node_url: str, *, auth=None) -> list[str]:
    return admin_call(node_url, "admin/collections", {"action": "LIST"}, "list collections", auth=auth).get(
        "collections", [])


def configset_files(conf_dir: str | Path | None = None) -> dict[str, bytes]:
    """The configset's files by their path inside ``conf/`` (default: the repository's ``neardup`` configset)."""
    root = Path(conf_dir) if conf_dir else settings.configset_dir() / "conf"
    if not (root / "solrconfig.xml").is_file():
        raise LauncherError(f"{root} is not a configset conf directory (no solrconfig.xml in it)")
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def configset_digest(conf_dir: str | Path | None = None) -> str:
    h = hashlib.sha256()
    for name, content in configset_files(conf_dir).items():
        h.update(name.encode() + b"\0" + hashlib.sha256(content).digest())
    return h.hexdigest()


def configset_zip(conf_dir: str | Path | None = None) -> bytes:
    """The configset as the Configsets API's UPLOAD wants it: a zip with solrconfig.xml at its root."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, content in configset_files(conf_dir).items():
            zf.writestr(name, content)
    return buf.getvalue()


def upload_configset(node_url: str, name: str = settings.CONFIGSET_NAME, conf_dir: str | Path | None = None, *,
                     overwrite: bool = False, auth=None) -> None:
    """Upload the configset to the cluster's ZooKeeper through the Configsets API (``action=UPLOAD``).

    With ``overwrite`` an existing configset of that name is replaced and files no longer in it are removed
    (``cleanup``); collections using it see the change on their next reload.
    """
    params = {"action": "UPLOAD", "name": name, "overwrite": str(overwrite).lower()}
    if overwrite:
        params["cleanup"] = "true"
    log.info("uploading configset %s to %s", name, _redact(node_base_url(node_url)))
    admin_call(node_url, "admin/configs", params, f"upload configset {name!r}", auth=auth, method="POST",
           data=configset_zip(conf_dir), timeout=120)


def cluster_status(node_url: str, collection: str | None = None, *, auth=None) -> dict:
    """The ``cluster`` part of the Collections API's CLUSTERSTATUS (``collections``, ``live_nodes``...)."""
    params = {"action": "CLUSTERSTATUS"}
    if collection:
        params["collection"] = collection
    return admin_call(node_url, "admin/collections", params, "read the cluster status", auth=auth).get("cluster", {})


@dataclass
class ReplicaState:
    shard: str
    name: str
    node_name: str
    base_url: str
    state: str
    leader: bool
    live: bool

    @property
    def active(self) -> bool:
        """Serving: Solr says active *and* its node is live (a killed node's replicas keep their last state in
        ZooKeeper until the node's session expires)."""
        return self.state == "active" and self.live

    @property
    def port(self) -> int | None:
        return urlsplit(self.base_url).port if self.base_url else None


def replica_states(cluster: dict, collection: str) -> list[ReplicaState]:
    """Every replica of ``collection`` in a :func:`cluster_status` answer."""
    live = set(cluster.get("live_nodes", []))
    coll = cluster.get("collections", {}).get(collection)
    if coll is None:
        return []
    out = []
    for shard_name, shard in sorted(coll.get("shards", {}).items()):
        for name, rep in sorted(shard.get("replicas", {}).items()):
            out.append(ReplicaState(
                shard=shard_name, name=name, node_name=rep.get("node_name", ""), base_url=rep.get("base_url", ""),
                state=rep.get("state", "?"), leader=str(rep.get("leader", "false")).lower() == "true",
                live=rep.get("node_name") in live,
            ))
    return out


def wait_for_active(node_url: str, collection: str, *, timeout: float = 180.0, auth=None,
                    nodes: list[str] | None = None) -> list[ReplicaState]:
    """Wait until every replica of ``collection`` is active on a live node (and every node named in ``nodes``,
    as ``host:port_solr``, is live); returns the replicas."""
    deadline = time.monotonic() + timeout
    last = "no answer"
    while True:
        try:
            cluster = cluster_status(node_url, collection, auth=auth)
            reps = replica_states(cluster, collection)
            missing = sorted(set(nodes or ()) - set(cluster.get("live_nodes", [])))
            if reps and all(r.active for r in reps) and not missing:
                return reps
            waiting = [f"{r.shard}/{r.name} {r.state}{'' if r.live else ' (node down)'}" for r in reps if not r.active]
            last = ", ".join(waiting + [f"node {n} not live" for n in missing]) or "no replicas yet"
        except CollectionSetupError as exc:
            last = str(exc)
        if time.monotonic() > deadline:
            raise LauncherError(f"collection {collection!r} not fully active within {timeout:.0f} s: {last}")
        time.sleep(0.5)


@dataclass
class CreateResult:
    collection: str
    created: bool
    configset_uploaded: bool
    replicas: list[ReplicaState]

    @property
    def message(self) -> str:
        active = sum(r.active for r in self.replicas)
        n = len({r.shard for r in self.replicas})
        shards = f"{n} shard{'' if n == 1 else 's'}"
        if self.created:
            return f"collection {self.collection!r} created: {shards}, {active}/{len(self.replicas)} replicas active"
        return (f"collection {self.collection!r} already exists with our configset ({shards}, "
                f"{active}/{len(self.replicas)} replicas active); nothing to do")


def collection_configset(node_url: str, collection: str, *, auth=None) -> str | None:
    coll = cluster_status(node_url, collection, auth=auth).get("collections", {}).get(collection, {})
    return coll.get("configName")


def create_collection(node_url: str, name: str, shards: int, replicas: int, *,
                      configset: str = settings.CONFIGSET_NAME, conf_dir: str | Path | None = None,
                      overwrite_configset: bool = False, auth=None, timeout: float = 180.0) -> CreateResult:
    """Upload the configset (unless the cluster has it) and create the collection, idempotently.

    An existing collection that uses ``configset`` is left as it is; one that uses another configset is refused
    (:class:`CollectionSetupError`), since it was not made for neardup-solr. ``overwrite_configset`` replaces
    a configset already in ZooKeeper with ours.
    """
    if shards < 1 or replicas < 1:
        raise LauncherError(f"--shards and --replicas must be at least 1 (got {shards} and {replicas})")
    if name in list_collections(node_url, auth=auth):
        used = collection_configset(node_url, name, auth=auth)
        if used != configset:
            raise CollectionSetupError(
                "check the existing collection",
                f"collection {name!r} already exists with configset {used!r}, not {configset!r}; "
                "it was not made for neardup-solr, so it is left alone: choose another collection name",
            )
        return CreateResult(name, False, False, wait_for_active(node_url, name, timeout=timeout, auth=auth))
    uploaded = False
    if overwrite_configset or configset not in list_configsets(node_url, auth=auth):
        upload_configset(node_url, configset, conf_dir, overwrite=overwrite_configset, auth=auth)
        uploaded = True
    log.info("creating collection %s (%d shards x %d replicas, configset %s)", name, shards, replicas, configset)
    admin_call(node_url, "admin/collections",
           {"action": "CREATE", "name": name, "numShards": shards, "replicationFactor": replicas,
            "collection.configName": configset, "waitForFinalState": "true"},
           f"create collection {name!r}", auth=auth, timeout=timeout)
    return CreateResult(name, True, uploaded, wait_for_active(node_url, name, timeout=timeout, auth=auth))


def wait_for_active_nodes(node_url: str, names: list[str], deadline: float) -> None:
    """Wait until every node in ``names`` (``host:port_solr``) is in live_nodes."""
    last = ""
    while True:
        try:
            live = set(cluster_status(node_url).get("live_nodes", []))
            missing = [n for n in names if n not in live]
            if not missing:
                return
            last = f"not live yet: {', '.join(missing)}"
        except CollectionSetupError as exc:
            last = str(exc)
        if time.monotonic() > deadline:
            raise LauncherError(f"the Solr nodes did not all join the cluster in time ({last})")
        time.sleep(0.3)
