"""Users' own collections with the schemas search teams actually run, on the test session's Solr: the test
infrastructure of near-duplicate detection on a user's collection through a companion index (our signatures in a
collection of ours beside the user's, whose documents are never rewritten).

Three kinds:

* the stock features (``tests/data/stock_features_configset``, our own small configset with the features of
  Solr's ``_default`` and ``sample_techproducts_configs``: implicit managed schema, the schemaless update chain,
  a stored currency copyField target, non-stored fields, ``ignored_*``, a dense vector, a binary field, a
  configurable unique key): :func:`create_stock_features` (a core) and :func:`create_stock_features_cloud`
  (a collection on a SolrCloud, the configset uploaded through the Configsets API);
* schemas that real applications ship in their packages, fetched at test time (never committed here) and cached
  under ``~/.cache/neardup-solr-test-schemas`` (``NEARDUP_TEST_SCHEMA_CACHE`` moves it):
  :func:`create_from_package` with ``"haystack"`` (django-haystack's schema and solrconfig templates, PyPI),
  ``"dovecot"`` (Dovecot's Solr 7.7 schema and solrconfig from Debian's ``dovecot-core``), ``"dovecot-legacy"``
  (the older schema Debian's ``dovecot-solr`` ships, with that solrconfig) and ``"ckan"`` (CKAN's schema, PyPI).
  Fetching needs PyPI (``pip download``) or Debian's archive (``apt-get download``, as root); when it cannot be
  had the test is skipped with the reason. Each package's files are patched only where a stock
  Solr 9.10.1 cannot load them (``_HAYSTACK_SCHEMA_PATCHES``, ``_HAYSTACK_CONFIG_PATCHES``,
  ``_DOVECOT_CONFIG_PATCHES``, ``_CKAN_SCHEMA_PATCHES``), and the resource files their analyzers name that they
  do not ship are written empty (``_resource_files``).

Every kind comes back as a :class:`UserCollection`: the user's own clients (plain JSON over HTTP, pysolr, the
``curl`` binary), atomic updates, deletes, and :meth:`UserCollection.snapshot`, a byte-exact picture of the
user's data and schema to compare before and after our work.
"""

from __future__ import annotations

import base64
import copy
import gzip
import hashlib
import html
import io
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path
from typing import Callable

import pytest
import requests

from neardup_solr.solr.cluster import cluster_status, create_collection

STOCK_FEATURES_CONFIGSET = Path(__file__).parent / "data" / "stock_features_configset"
CACHE_DIR = Path(os.environ.get("NEARDUP_TEST_SCHEMA_CACHE", Path.home() / ".cache" / "neardup-solr-test-schemas"))
PACKAGES = ("haystack", "dovecot", "dovecot-legacy", "ckan")
_names = itertools.count()
_TIMEOUT = 120


def _unique_name(prefix: str) -> str:
    return f"{prefix}_{os.getpid()}_{next(_names)}"


# =====================================================================================================
# The user's collection and the user's clients
# =====================================================================================================
class UserCollection:
    """One user's core (standalone) or collection (SolrCloud) with its own schema.

    ``url`` is the core's or collection's URL, ``base_url`` the node's (``http://host:port/solr``), ``key_field``
    the schema's unique key, ``text_fields`` the fields that hold the documents' text, ``kind`` what it was made
    from (``stock_features``, ``haystack``, ...). ``documents()`` gives a few realistic documents for its schema
    (with near-duplicate pairs among them). ``drop()`` removes it (and, on a cloud, its configset)."""

    def __init__(self, base_url: str, name: str, *, key_field: str = "id", cloud: bool = False,
                 text_fields: tuple[str, ...] = (), kind: str = "", configset: str | None = None,
                 documents: Callable[[], list[dict]] | None = None, atomic_via: str = "json"):
        self.base_url, self.name = base_url.rstrip("/"), name
        self.url = f"{self.base_url}/{name}"
        self.key_field, self.cloud, self.text_fields, self.kind = key_field, cloud, tuple(text_fields), kind
        self.configset = configset
        self._documents = documents
        self.atomic_via = atomic_via

    def __repr__(self) -> str:
        where = "collection" if self.cloud else "core"
        return f"<UserCollection {self.kind} {where} {self.url} key={self.key_field}>"

    def documents(self) -> list[dict]:
        """A fresh copy of this kind's example documents (keyed by ``key_field``)."""
        if self._documents is None:
            raise NotImplementedError(f"no example documents for {self.kind!r}")
        return copy.deepcopy(self._documents())

    # ------------------------------------------------------------------ the user's own clients
    def post_json(self, docs: list[dict], commit: bool = True) -> None:
        """Plain JSON over HTTP (requests), as a user's pipeline posts."""
        resp = requests.post(f"{self.url}/update", params={"commit": str(commit).lower(), "wt": "json"},
                             json=docs, timeout=_TIMEOUT)
        _raise_for(resp, f"post {len(docs)} documents to {self.url}")

    def post_pysolr(self, docs: list[dict], commit: bool = True) -> None:
        """With pysolr (a test dependency of the project: the ``test`` extra), as many Python users post."""
        import pysolr

        pysolr.Solr(self.url, always_commit=commit, timeout=_TIMEOUT).add(docs)

    def post_curl(self, docs: list[dict], commit: bool = True) -> None:
        """With the real ``curl`` binary: ``curl -H 'Content-Type: application/json' --data-binary @-``."""
        curl = shutil.which("curl")
        if curl is None:
            pytest.skip("no curl binary on PATH")
        url = f"{self.url}/update?commit={str(commit).lower()}&wt=json"
        proc = subprocess.run([curl, "-sS", "--fail-with-body", "-H", "Content-Type: application/json",
                               "--data-binary", "@-", url], input=json.dumps(docs).encode("utf-8"),
                              capture_output=True, timeout=_TIMEOUT)
        if proc.returncode != 0:
            raise RuntimeError(f"curl could not post to {url} (exit {proc.returncode}): "
                               f"{(proc.stdout + proc.stderr).decode('utf-8', 'replace')[:800]}")

    def atomic_set(self, key, *, via: str | None = None, **fields) -> None:
        """An in-place edit of the user's own fields (an atomic update, ``set``), as JSON (``via="json"``) or as
        an XML update message (``via="xml"``); by default the way that works on this schema (``atomic_via``:
        XML on CKAN's, whose catch-all dynamic field ``*`` makes Solr's JSON loader read ``{"set": value}`` as a
        child document (JsonLoader.isChildDoc: a one-key map whose key is a field of the schema, and ``*`` makes
        every name one), so a JSON atomic update there is refused as a new document without its required
        fields)."""
        via = via or self.atomic_via
        if via == "json":
            self.post_json([{self.key_field: key, **{name: {"set": value} for name, value in fields.items()}}])
            return
        if via != "xml":
            raise ValueError(f"via must be json or xml, not {via!r}")
        parts = [f'<field name="{html.escape(self.key_field)}">{html.escape(str(key), quote=False)}</field>']
        for name, value in fields.items():
            for one in (value if isinstance(value, list) else [value]):
                text = str(one).lower() if isinstance(one, bool) else str(one)
                parts.append(f'<field name="{html.escape(name)}" update="set">{html.escape(text, quote=False)}</field>')
        resp = requests.post(f"{self.url}/update", params={"commit": "true", "wt": "json"},
                             data=f"<add><doc>{''.join(parts)}</doc></add>".encode("utf-8"),
                             headers={"Content-Type": "text/xml; charset=utf-8"}, timeout=_TIMEOUT)
        _raise_for(resp, f"update {key!r} in {self.url}")

    def delete(self, keys: list) -> None:
        resp = requests.post(f"{self.url}/update", params={"commit": "true", "wt": "json"},
                             json={"delete": list(keys)}, timeout=_TIMEOUT)
        _raise_for(resp, f"delete {len(keys)} documents from {self.url}")

    def commit(self) -> None:
        _raise_for(requests.get(f"{self.url}/update", params={"commit": "true", "wt": "json"}, timeout=_TIMEOUT),
                   f"commit {self.url}")

    def count(self) -> int:
        resp = requests.get(f"{self.url}/select", params={"q": "*:*", "rows": "0", "wt": "json"}, timeout=_TIMEOUT)
        _raise_for(resp, f"count {self.url}")
        return resp.json()["response"]["numFound"]

    def get(self, key, fl: str = "*") -> dict | None:
        """One document by its key, as a search sees it (``{!term}`` on the key: no escaping needed). Not the
        real-time get: that one may answer from the update log, whose copy of the document has no copyField
        targets (no price_c)."""
        resp = requests.post(f"{self.url}/select", data={"q": f"{{!term f={self.key_field}}}{key}", "fl": fl,
                                                         "wt": "json", "rows": 2}, timeout=_TIMEOUT)
        _raise_for(resp, f"get {key!r} from {self.url}")
        docs = resp.json()["response"]["docs"]
        if len(docs) > 1:
            raise AssertionError(f"{len(docs)} documents with key {key!r} in {self.url}")
        return docs[0] if docs else None

    def drop(self) -> None:
        """Remove the core (and its instance directory) or the collection and its configset. Quiet when it is
        already gone."""
        if self.cloud:
            requests.get(f"{self.base_url}/admin/collections",
                         params={"action": "DELETE", "name": self.name, "wt": "json"}, timeout=_TIMEOUT)
            if self.configset:
                requests.get(f"{self.base_url}/admin/configs",
                             params={"action": "DELETE", "name": self.configset, "wt": "json"}, timeout=_TIMEOUT)
        else:
            requests.get(f"{self.base_url}/admin/cores", params={"action": "UNLOAD", "core": self.name,
                         "deleteInstanceDir": "true", "wt": "json"}, timeout=_TIMEOUT)

    # ------------------------------------------------------------------ the user's schema and config
    def schema(self) -> dict:
        """The whole ``GET /schema`` (name, version, uniqueKey, similarity, fieldTypes, fields, dynamicFields,
        copyFields) without the volatile ``responseHeader``."""
        resp = requests.get(f"{self.url}/schema", params={"wt": "json"}, timeout=_TIMEOUT)
        _raise_for(resp, f"read the schema of {self.url}")
        return resp.json()["schema"]

    def schema_fields(self) -> list[dict]:
        """Every field of the schema with all its properties (``showDefaults=true``)."""
        return self._schema_list("fields")

    def schema_dynamic_fields(self) -> list[dict]:
        return self._schema_list("dynamicfields")

    def schema_field(self, name: str) -> dict | None:
        resp = requests.get(f"{self.url}/schema/fields/{name}", params={"wt": "json", "showDefaults": "true"},
                            timeout=_TIMEOUT)
        if resp.status_code == 404:
            return None
        _raise_for(resp, f"read field {name} of {self.url}")
        return resp.json()["field"]

    def _schema_list(self, what: str) -> list[dict]:
        resp = requests.get(f"{self.url}/schema/{what}", params={"wt": "json", "showDefaults": "true"},
                            timeout=_TIMEOUT)
        _raise_for(resp, f"read the {what} of {self.url}")
        body = resp.json()
        return body["fields" if what == "fields" else "dynamicFields"]

    def config(self, path: str = "") -> dict:
        """The Config API's answer for ``path`` (``schemaFactory``, ``updateHandler``...): the ``config`` part."""
        resp = requests.get(f"{self.url}/config/{path}".rstrip("/"), params={"wt": "json"}, timeout=_TIMEOUT)
        _raise_for(resp, f"read the config of {self.url}")
        return resp.json()["config"]

    # ------------------------------------------------------------------ snapshot
    def index_field_names(self) -> set[str]:
        """The names of every field the index holds (Luke on the core; on a cloud, on every replica's core)."""
        cores = [self.url]
        if self.cloud:
            coll = cluster_status(self.base_url, self.name).get("collections", {}).get(self.name, {})
            cores = [f"{rep['base_url'].rstrip('/')}/{rep['core']}"
                     for shard in coll.get("shards", {}).values() for rep in shard.get("replicas", {}).values()]
        names: set[str] = set()
        for core in cores:
            resp = requests.get(f"{core}/admin/luke", params={"numTerms": "0", "wt": "json"}, timeout=_TIMEOUT)
            _raise_for(resp, f"list the index's fields of {core}")
            names |= set(resp.json().get("fields", {}))
        return names

    def returnable_fields(self) -> list[str]:
        """Every field whose values Solr can give back, listed by name: each field of the schema that is stored
        or has docValues, and each field in the index that matches a dynamic field that is stored or has
        docValues (Solr's rule: the longest pattern that matches). ``_version_`` left out (it is Solr's)."""
        def returnable(props: dict) -> bool:
            return bool(props.get("stored") or props.get("docValues"))

        fields = {f["name"]: f for f in self.schema_fields()}
        names = {name for name, props in fields.items() if returnable(props)}
        patterns = sorted(self.schema_dynamic_fields(), key=lambda d: len(d["name"]), reverse=True)
        for name in self.index_field_names() - set(fields):
            for dyn in patterns:
                if _glob_match(dyn["name"], name):
                    if returnable(dyn):
                        names.add(name)
                    break
        names.discard("_version_")
        names.add(self.key_field)
        return sorted(names)

    def snapshot(self, rows: int = 500) -> dict:
        """A byte-exact picture of the user's data, for before/after comparisons.

        Every document is read with a cursor sorted by the key, twice: (a) with ``fl=*`` (``docs_star``) and
        (b) with ``fl=`` every returnable field listed by name (``docs_listed``, the list in ``fields_listed``):
        that one also shows the docValues-only fields that ``fl=*`` leaves out (``useDocValuesAsStored=false``,
        as the ``*_str`` copies of the schemaless chain). Each document is kept as the exact text Solr sent for
        it (``indent=false``), cut out of the page's raw response text, with only the ``"_version_":...`` member
        taken out (Solr changes it on every write; taking it out is checked against the parsed document): number
        formats, string escapes and the order of the fields are Solr's own bytes. Both maps go from the key (as
        Solr returned it, in JSON) to that text. ``schema`` is :meth:`schema` (a schemaless guess or a Schema API
        change shows there), ``count`` the number of documents. What is indexed but neither stored nor in
        docValues (Dovecot's body, the catch-all ``text``) cannot be read back and is not in the picture. A
        cursor needs a key Solr can sort on (docValues, or indexed and uninvertible): every schema here has one.
        """
        fields = self.returnable_fields()
        return {
            "key_field": self.key_field,
            "count": self.count(),
            "docs_star": self._read_all("*", rows),
            "fields_listed": fields,
            "docs_listed": self._read_all(",".join(fields), rows),
            "schema": self.schema(),
        }

    def _read_all(self, fl: str, rows: int) -> dict[str, str]:
        out: dict[str, str] = {}
        cursor = "*"
        while True:
            params = {"q": "*:*", "fl": fl, "rows": rows, "sort": f"{self.key_field} asc", "cursorMark": cursor,
                      "wt": "json", "indent": "false", "echoParams": "none"}
            resp = requests.post(f"{self.url}/select", data=params, timeout=_TIMEOUT)
            _raise_for(resp, f"read the documents of {self.url}")
            for key, raw in _raw_docs(resp.text, self.key_field):
                if key in out:
                    raise AssertionError(f"key {key} twice in {self.url}")
                out[key] = raw
            following = resp.json()["nextCursorMark"]
            if following == cursor:
                return out
            cursor = following


def _raise_for(resp: requests.Response, what: str) -> None:
    if resp.status_code != 200:
        raise RuntimeError(f"could not {what}: HTTP {resp.status_code}: {resp.text[:800]}")


def _glob_match(pattern: str, name: str) -> bool:
    """Solr's dynamic field patterns: ``*`` alone, ``*suffix`` or ``prefix*``."""
    if pattern == "*":
        return True
    if pattern.startswith("*"):
        return name.endswith(pattern[1:])
    if pattern.endswith("*"):
        return name.startswith(pattern[:-1])
    return pattern == name


# A "_version_" member in compact JSON (no whitespace) with the comma that joins it to its neighbour: a number
# or a string (CKAN's _version_ is a string field). An unescaped '"_version_":' can only be a member name: a quote
# inside a JSON string is always escaped.
_VERSION_MEMBER = re.compile(r'"_version_":(?:-?\d+|"(?:[^"\\]|\\.)*")')


def _strip_version(raw: str) -> str:
    match = _VERSION_MEMBER.search(raw)
    if match is None:
        return raw
    start, end = match.span()
    if raw[end] == ",":
        end += 1
    elif raw[start - 1] == ",":
        start -= 1
    return raw[:start] + raw[end:]


def _raw_docs(text: str, key_field: str):
    """(key, raw document text without _version_) for each document of a /select answer's raw text."""
    decoder = json.JSONDecoder()
    head = text.index('"response":{')
    pos = text.index('"docs":[', head) + len('"docs":[')
    while True:
        while text[pos] in " \t\r\n,":
            pos += 1
        if text[pos] == "]":
            return
        doc, end = decoder.raw_decode(text, pos)
        raw = _strip_version(text[pos:end])
        doc.pop("_version_", None)
        if json.loads(raw) != doc:
            raise AssertionError(f"taking _version_ out of {text[pos:end][:300]} changed the document")
        yield json.dumps(doc[key_field], ensure_ascii=False), raw
        pos = end


def snapshot_diff(before: dict, after: dict) -> list[str]:
    """What differs between two snapshots, one line a difference (empty when they are identical)."""
    lines = []
    for part in ("key_field", "count", "fields_listed", "schema"):
        if before.get(part) != after.get(part):
            lines.append(f"{part}: {json.dumps(before.get(part))[:300]} -> {json.dumps(after.get(part))[:300]}")
    for part in ("docs_star", "docs_listed"):
        b, a = before.get(part, {}), after.get(part, {})
        for key in sorted(set(b) | set(a)):
            if b.get(key) != a.get(key):
                lines.append(f"{part} {key}: {b.get(key)} -> {a.get(key)}")
    return lines


# =====================================================================================================
# Cores and collections
# =====================================================================================================
def _create_core(local_solr, name: str, conf_files: dict[str, bytes]) -> None:
    """A core with its own instance directory (``<data_dir>/<name>/conf``) made through CoreAdmin, as
    tests/usercoll.py does."""
    instance = Path(local_solr.data_dir) / name
    if instance.exists():
        shutil.rmtree(instance)
    for rel, content in conf_files.items():
        target = instance / "conf" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    resp = requests.get(f"{local_solr.base_url}/admin/cores", params={"action": "CREATE", "name": name,
                        "instanceDir": name, "wt": "json"}, timeout=_TIMEOUT)
    if resp.status_code != 200:
        shutil.rmtree(instance, ignore_errors=True)
        raise RuntimeError(f"could not create the core {name}: {resp.text[:1500]}")


def _conf_files(conf_dir: Path) -> dict[str, bytes]:
    return {p.relative_to(conf_dir).as_posix(): p.read_bytes() for p in sorted(conf_dir.rglob("*")) if p.is_file()}


def stock_features_conf(unique_key: str = "id") -> dict[str, bytes]:
    """The stock-features configset's files, its <uniqueKey> rewritten to ``unique_key`` (a field the schema does
    not declare is declared as a string field)."""
    files = _conf_files(STOCK_FEATURES_CONFIGSET / "conf")
    schema = files["managed-schema.xml"].decode("utf-8")
    if unique_key != "id":
        schema = schema.replace("<uniqueKey>id</uniqueKey>", f"<uniqueKey>{unique_key}</uniqueKey>")
        if f'<field name="{unique_key}" ' not in schema:
            schema = schema.replace(
                '  <field name="_version_"',
                f'  <field name="{unique_key}" type="string" indexed="true" stored="true" multiValued="false"/>\n'
                '  <field name="_version_"', 1)
    files["managed-schema.xml"] = schema.encode("utf-8")
    return files


def create_stock_features(local_solr, *, unique_key: str = "id", prefix: str = "user_stock") -> UserCollection:
    """A core made from tests/data/stock_features_configset on ``local_solr`` (a LocalSolr), with its own
    instance directory; ``unique_key`` another field as the unique key (``doc_key``)."""
    name = _unique_name(prefix)
    _create_core(local_solr, name, stock_features_conf(unique_key))
    return UserCollection(local_solr.base_url, name, key_field=unique_key, kind="stock_features",
                          text_fields=("name", "features"),
                          documents=lambda: techproducts_like_documents(unique_key))


def create_stock_features_cloud(cloud, *, unique_key: str = "id", shards: int = 2,
                                prefix: str = "user_stock") -> UserCollection:
    """A collection (``shards`` x 1 replica) on ``cloud`` (a LocalSolrCloud) made from the stock-features
    configset, uploaded under a name of its own through the Configsets API (zipped in memory by
    ``neardup_solr.solr.cluster.upload_configset``); ``drop()`` deletes the collection and the configset."""
    name = _unique_name(prefix)
    node = cloud.node_urls[0]
    with tempfile.TemporaryDirectory(prefix="stock-features-conf-") as tmp:
        for rel, content in stock_features_conf(unique_key).items():
            (Path(tmp) / rel).parent.mkdir(parents=True, exist_ok=True)
            (Path(tmp) / rel).write_bytes(content)
        create_collection(node, name, shards, 1, configset=name, conf_dir=tmp)
    return UserCollection(node, name, key_field=unique_key, cloud=True, kind="stock_features", configset=name,
                          text_fields=("name", "features"),
                          documents=lambda: techproducts_like_documents(unique_key))


# =====================================================================================================
# Example documents
# =====================================================================================================
# (id, name, manu, cat, features, price, inStock, store, manufactured, series, popularity, vec)
_PRODUCTS = [
    ("KST-SSD-1T", "Kestrel Glide 1TB NVMe solid state drive", "Kestrel Storage", ["electronics", "storage"],
     ["PCIe 4.0 x4 interface with sequential reads up to 7000 MB/s",
      "Five year limited warranty and a heat spreader for laptops"],
     89.99, True, "45.5017,-73.5673", "2023-03-14T09:30:00Z", "Glide", 8, [0.11, 0.52, 0.31, 0.08]),
    # near duplicate of KST-SSD-1T: one word changed (laptops -> desktops)
    ("KST-SSD-1T-B", "Kestrel Glide 1TB NVMe solid state drive", "Kestrel Storage", ["electronics", "storage"],
     ["PCIe 4.0 x4 interface with sequential reads up to 7000 MB/s",
      "Five year limited warranty and a heat spreader for desktops"],
     92.5, True, "45.5017,-73.5673", "2023-03-14T09:30:00Z", "Glide", 7, [0.12, 0.51, 0.30, 0.09]),
    ("a:b", "Orbis 27 inch 4K IPS monitor with USB-C power delivery", "Orbis Displays", ["electronics", "monitor"],
     ["3840 x 2160 resolution, 60 Hz, 5 ms response time",
      "USB-C port delivers 65 W to charge a notebook over the same cable"],
     329.0, True, "52.5200,13.4050", "2022-11-02T00:00:00Z", "Vista", 9, [0.71, 0.12, 0.05, 0.33]),
    # near duplicate of a:b: one word changed (notebook -> laptop)
    ("x y", "Orbis 27 inch 4K IPS monitor with USB-C power delivery", "Orbis Displays", ["electronics", "monitor"],
     ["3840 x 2160 resolution, 60 Hz, 5 ms response time",
      "USB-C port delivers 65 W to charge a laptop over the same cable"],
     319.0, False, "52.5200,13.4050", "2022-11-02T00:00:00Z", "Vista", 6, [0.70, 0.13, 0.05, 0.34]),
    ('q"1', "Lumen mechanical keyboard with hot swappable brown switches", "Lumen Peripherals",
     ["electronics", "keyboard"],
     ["Tenkeyless layout in an aluminium case", "Per key white backlight and a detachable braided cable"],
     119.95, True, "37.7749,-122.4194", "2021-06-21T12:00:00Z", "Forge", 5, [0.21, 0.22, 0.83, 0.10]),
    # near duplicate of q"1: one word changed (brown -> red)
    ("LMN-KB-RED", "Lumen mechanical keyboard with hot swappable red switches", "Lumen Peripherals",
     ["electronics", "keyboard"],
     ["Tenkeyless layout in an aluminium case", "Per key white backlight and a detachable braided cable"],
     119.95, True, "37.7749,-122.4194", "2021-06-21T12:00:00Z", "Forge", 5, [0.20, 0.23, 0.82, 0.11]),
    ("HLC-HP-200", "Halcyon over ear wireless headphones with active noise cancelling", "Halcyon Audio",
     ["electronics", "audio"],
     ["Thirty hours of playback on one charge", "Bluetooth 5.3 with multipoint pairing and a carrying case"],
     199.0, True, "51.5072,-0.1276", "2023-09-01T08:00:00Z", "Calm", 10, [0.05, 0.91, 0.14, 0.20]),
    ("TSR-RT-AX", "Tessera dual band Wi-Fi 6 router", "Tessera Networks", ["electronics", "networking"],
     ["Four gigabit LAN ports and one WAN port", "WPA3 security and a parental control app"],
     74.49, False, "48.8566,2.3522", "2022-02-10T10:15:00Z", "Mesh", 4, [0.44, 0.40, 0.41, 0.42]),
    ("back\\slash", "Kestrel portable 2TB USB 3.2 hard drive", "Kestrel Storage", ["electronics", "storage"],
     ["Shock resistant rubber casing", "Backup software for Windows and macOS included"],
     64.0, True, "45.5017,-73.5673", "2020-08-30T00:00:00Z", "Trek", 6, [0.15, 0.48, 0.27, 0.02]),
    ("star*", "Orbis compact photo printer for 4x6 prints", "Orbis Imaging", ["electronics", "printer"],
     ["Dye sublimation prints in under a minute", "Prints from a phone over Wi-Fi Direct"],
     129.0, True, "35.6762,139.6503", "2021-12-05T00:00:00Z", "Snap", 3, [0.61, 0.09, 0.28, 0.52]),
    ("plus+minus", "Lumen ergonomic wireless mouse", "Lumen Peripherals", ["electronics", "mouse"],
     ["Vertical grip that keeps the wrist in a handshake position", "Rechargeable battery lasts ten weeks"],
     39.99, True, "37.7749,-122.4194", "2022-04-18T00:00:00Z", "Forge", 7, [0.25, 0.19, 0.79, 0.05]),
    ("HLC-SPK-10", "Halcyon waterproof Bluetooth speaker", "Halcyon Audio", ["electronics", "audio"],
     ["IP67 rated against dust and water", "Twelve hours of playback and a built in microphone"],
     49.5, True, "51.5072,-0.1276", "2022-06-06T00:00:00Z", "Calm", 6, [0.07, 0.88, 0.18, 0.25]),
    ("TSR-NAS-2B", "Tessera two bay network attached storage", "Tessera Networks",
     ["electronics", "storage", "networking"],
     ["Holds two 3.5 inch drives in RAID 1", "Streams media to televisions in the home"],
     249.0, True, "48.8566,2.3522", "2023-01-23T00:00:00Z", "Vault", 5, [0.40, 0.45, 0.35, 0.30]),
    ("KST-RAM-32", "Kestrel 32GB DDR5 desktop memory kit", "Kestrel Memory", ["electronics", "memory"],
     ["Two 16GB modules at 6000 MT/s", "Low profile heat spreaders fit under large coolers"],
     104.0, True, "45.5017,-73.5673", "2023-05-09T00:00:00Z", "Glide", 6, [0.13, 0.55, 0.29, 0.12]),
    ("ORB-PRJ-1080", "Orbis 1080p home cinema projector", "Orbis Displays", ["electronics", "projector"],
     ["3000 lumens and a contrast ratio of 15000 to 1", "Keystone correction and two HDMI inputs"],
     549.0, False, "52.5200,13.4050", "2021-10-11T00:00:00Z", "Vista", 4, [0.68, 0.16, 0.09, 0.37]),
    ("LMN-CAM-4K", "Lumen 4K webcam with privacy shutter", "Lumen Peripherals", ["electronics", "camera"],
     ["Autofocus and automatic light correction", "Two stereo microphones with noise reduction"],
     89.0, True, "37.7749,-122.4194", "2023-07-27T00:00:00Z", "Forge", 8, [0.30, 0.26, 0.70, 0.18]),
    ("HLC-CHG-65", "Halcyon 65W gallium nitride USB-C charger", "Halcyon Power", ["electronics", "power"],
     ["Two USB-C ports and one USB-A port", "Folding plug for travel"],
     45.0, True, "51.5072,-0.1276", "2023-02-02T00:00:00Z", "Volt", 9, [0.09, 0.80, 0.22, 0.31]),
    ("TSR-PLUG-4", "Tessera smart plug four pack with energy monitoring", "Tessera Home", ["electronics", "home"],
     ["Works with voice assistants", "Schedules and away mode from the app"],
     34.99, True, "48.8566,2.3522", "2022-09-19T00:00:00Z", "Nest", 5, [0.47, 0.38, 0.44, 0.46]),
    ("ORB-TAB-11", "Orbis 11 inch tablet with stylus", "Orbis Mobile", ["electronics", "tablet"],
     ["Octa core processor and 128GB of storage", "Pressure sensitive stylus clips to the case"],
     379.0, True, "35.6762,139.6503", "2023-10-30T00:00:00Z", "Slate", 8, [0.66, 0.11, 0.15, 0.49]),
    ("KST-EREAD-6", "Kestrel 6 inch e-reader with warm light", "Kestrel Reading", ["electronics", "reader"],
     ["Glare free 300 ppi display", "Weeks of reading on one charge"],
     119.0, True, "45.5017,-73.5673", "2022-12-12T00:00:00Z", "Page", 7, [0.17, 0.57, 0.26, 0.06]),
]


def techproducts_like_documents(key_field: str = "id") -> list[dict]:
    """Twenty product records in the spirit of Solr's example documents (our own products): name, features
    (multi-valued), cat, manu, price (copied into price_c by the schema: ``"89.99,USD"``), inStock, store,
    manufacturedate_dt, series_t, popularity, vec, and bin on a few. Three near-duplicate pairs (one word
    changed): KST-SSD-1T / KST-SSD-1T-B, ``a:b`` / ``x y``, ``q"1`` / LMN-KB-RED; keys that need escaping in a
    query: ``a:b``, ``x y``, ``q"1``, ``back\\slash``, ``star*``, ``plus+minus``."""
    docs = []
    for i, (key, name, manu, cat, features, price, in_stock, store, made, series, popularity, vec) in \
            enumerate(_PRODUCTS):
        doc = {key_field: key, "name": name, "manu": manu, "cat": list(cat), "features": list(features),
               # Every third price as the text Solr's example data carries ("185.00"): the stored copy in price_c
               # keeps that text, which a full atomic update (a rebuild from the stored float) would rewrite.
               "price": f"{price:.2f}" if i % 3 == 1 else price, "inStock": in_stock, "store": store, "manufacturedate_dt": made,
               "series_t": series, "popularity": popularity, "vec": list(vec)}
        if i % 5 == 0:  # a small binary attachment (base64, as JSON carries binary fields)
            doc["bin"] = base64.b64encode(f"spec sheet {key} rev {i}".encode("utf-8")).decode("ascii")
        docs.append(doc)
    return docs


_BOOKS = [
    ("bk-001", "The Lighthouse Keeper's Daughter", "Mara Ellison", "fiction", 312, "2018-04-03T00:00:00Z", True,
     "A girl raised on a remote island learns to read the weather and the sea, and keeps the lamp burning "
     "through the long winter after her father falls ill."),
    # near duplicate of bk-001: one word changed (winter -> autumn)
    ("bk-001-reprint", "The Lighthouse Keeper's Daughter", "Mara Ellison", "fiction", 312, "2021-09-14T00:00:00Z",
     True,
     "A girl raised on a remote island learns to read the weather and the sea, and keeps the lamp burning "
     "through the long autumn after her father falls ill."),
    ("bk-002", "Practical Bread Baking", "Tomas Varga", "cooking", 208, "2016-10-20T00:00:00Z", False,
     "From a first sourdough starter to rye loaves and flatbreads, with timings for a home oven and a "
     "chapter on milling your own flour."),
    ("bk-003", "Rivers of the North", "Ingrid Sol", "travel", 254, "2019-06-01T00:00:00Z", True,
     "Canoe routes through lakes and rivers of the northern forests, with maps, portages and advice on "
     "camping without leaving a trace."),
    # near duplicate of bk-003: one word changed (canoe -> kayak)
    ("bk-003-uk", "Rivers of the North", "Ingrid Sol", "travel", 254, "2019-06-01T00:00:00Z", True,
     "Kayak routes through lakes and rivers of the northern forests, with maps, portages and advice on "
     "camping without leaving a trace."),
    ("bk-004", "A Short History of Clocks", "Henri Dufour", "history", 176, "2015-01-12T00:00:00Z", True,
     "How people measured time, from water clocks and sundials to the pendulum and the quartz crystal."),
]


def default_like_documents(key_field: str = "id") -> list[dict]:
    """Book records for a schemaless collection (Solr's ``_default``): none of their field names but the key is
    in the schema, so the schemaless chain guesses each (title, author, genre, summary: multiValued text with a
    ``*_str`` copy; pages: plongs; published: pdates; in_print: booleans). Two near-duplicate pairs (one word
    changed): bk-001 / bk-001-reprint, bk-003 / bk-003-uk."""
    return [{key_field: key, "title": title, "author": author, "genre": genre, "pages": pages,
             "published": published, "in_print": in_print, "summary": summary}
            for key, title, author, genre, pages, published, in_print, summary in _BOOKS]


# =====================================================================================================
# Schemas that applications ship in their packages
# =====================================================================================================
def _cache(which: str) -> Path:
    path = CACHE_DIR / which
    path.mkdir(parents=True, exist_ok=True)
    return path


def _run_fetch(cmd: list[str], cwd: Path, what: str) -> None:
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"could not fetch {what} ({' '.join(cmd)}): {exc}")
    if proc.returncode != 0:
        tail = " ".join((proc.stdout + proc.stderr).strip().splitlines()[-3:])
        pytest.skip(f"could not fetch {what} ({' '.join(cmd)} exited {proc.returncode}): {tail[:500]}")


def _pip_download(requirement: str, dest: Path, *, sdist: bool) -> Path:
    """The package's sdist (``sdist``) or wheel from PyPI, downloaded once into ``dest``."""
    pattern = "*.tar.gz" if sdist else "*.whl"
    found = sorted(dest.glob(pattern))
    if not found:
        fmt = ["--no-binary", ":all:"] if sdist else ["--only-binary", ":all:"]
        _run_fetch([sys.executable, "-m", "pip", "download", requirement, "--no-deps", *fmt, "--timeout", "60",
                    "--disable-pip-version-check", "-d", str(dest)], dest, f"{requirement} from PyPI")
        found = sorted(dest.glob(pattern))
    if not found:
        pytest.skip(f"pip download {requirement} left no {pattern} in {dest}")
    return found[-1]


def _apt_download(package: str, dest: Path) -> Path:
    """Debian's ``package`` (.deb), downloaded once into ``dest`` with ``apt-get download`` (as root; after an
    ``apt-get update`` when the package lists do not know it yet)."""
    found = sorted(dest.glob(f"{package}_*.deb"))
    if found:
        return found[-1]
    if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
        pytest.skip(f"{package}: no apt-get/dpkg-deb here (not a Debian system)")
    proc = subprocess.run(["apt-get", "download", package], cwd=dest, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0 and os.geteuid() == 0:
        _run_fetch(["apt-get", "update", "-qq"], dest, "Debian's package lists")
        proc = subprocess.run(["apt-get", "download", package], cwd=dest, capture_output=True, text=True,
                              timeout=300)
    if proc.returncode != 0:
        tail = " ".join((proc.stdout + proc.stderr).strip().splitlines()[-3:])
        pytest.skip(f"could not fetch Debian's {package} (apt-get download exited {proc.returncode}): {tail[:500]}")
    found = sorted(dest.glob(f"{package}_*.deb"))
    if not found:
        pytest.skip(f"apt-get download {package} left no .deb in {dest}")
    return found[-1]


def _member(names: list[str], suffix: str, archive: Path) -> str:
    hits = [n for n in names if n.endswith(suffix)]
    if len(hits) != 1:
        raise RuntimeError(f"{archive.name}: expected one member ending with {suffix!r}, found {hits}")
    return hits[0]


class _Patch:
    """One change to a package's file: ``old`` (a regular expression) replaced by ``new``, with the reason. It
    must match (``count`` times at least): a package that no longer needs it is noticed."""

    def __init__(self, old: str, new: str, why: str, *, count: int = 1):
        self.old, self.new, self.why, self.count = re.compile(old, re.S), new, why, count

    def apply(self, text: str, where: str) -> str:
        out, n = self.old.subn(self.new, text)
        if n < self.count:
            raise RuntimeError(f"{where}: the patch {self.old.pattern!r} matched {n} times, not {self.count}+: "
                               f"the package changed ({self.why})")
        return out


def _patched(text: str, patches: list[_Patch], where: str) -> str:
    for patch in patches:
        text = patch.apply(text, where)
    return text


# Solr 9 removed the LRUCache, FastLRUCache and LFUCache implementations (CaffeineCache is the one left): a
# solrconfig.xml that names them does not load ("Error loading class 'solr.FastLRUCache'").
_CACHE_PATCH = _Patch(r'class="solr\.(?:search\.)?(?:Fast)?LRUCache"', 'class="solr.CaffeineCache"',
                      "Solr 9 has no LRUCache/FastLRUCache", count=3)

# Resource files an analyzer reads (stopwords, synonyms, protected words, elisions, stem dictionaries, stop tags):
# the packages' schemas name files of the configset they expect around them (Solr's own _default/basic_configs,
# whose lists are Solr's files and are not copied here); written empty where the package does not ship them.
_RESOURCE_ATTR = re.compile(r'\b(?:words|synonyms|protected|articles|dictionary|tags)="([^"$]+)"')

# currency.xml, for a schema whose currency field type names it and a package that does not ship one: our own
# short list of rates.
_CURRENCY_XML = STOCK_FEATURES_CONFIGSET / "conf" / "currency.xml"


def _resource_files(schema_text: str, shipped: dict[str, bytes]) -> dict[str, bytes]:
    """Empty files for every resource the schema names that ``shipped`` lacks."""
    out = {}
    for match in _RESOURCE_ATTR.finditer(_strip_comments(schema_text)):
        for name in match.group(1).split(","):
            name = name.strip()
            if name and name not in shipped:
                out[name] = b""
    return out


def _strip_comments(xml: str) -> str:
    return re.sub(r"<!--.*?-->", "", xml, flags=re.S)


# ----------------------------------------------------------------------------------- django-haystack
HAYSTACK_REQUIREMENT = "django-haystack==3.4.0"

# What a typical haystack site indexes (haystack's tutorial: a Note model with a document field ``text`` rendered
# from a template, ``author``, ``pub_date``; and ``title``), as haystack's SolrSearchBackend.build_schema turns
# the SearchIndex's fields into the template's context: CharField -> text_en, DateTimeField -> date.
HAYSTACK_CONTEXT = {
    "ID": "id", "DJANGO_CT": "django_ct", "DJANGO_ID": "django_id",  # haystack.constants
    "content_field_name": "text",
    "default_operator": "AND",
    "fields": [
        {"field_name": "text", "type": "text_en", "indexed": "true", "stored": "true", "multi_valued": "false"},
        {"field_name": "title", "type": "text_en", "indexed": "true", "stored": "true", "multi_valued": "false"},
        {"field_name": "author", "type": "text_en", "indexed": "true", "stored": "true", "multi_valued": "false"},
        {"field_name": "pub_date", "type": "date", "indexed": "true", "stored": "true", "multi_valued": "false"},
    ],
}

_HAYSTACK_SCHEMA_PATCHES = [
    # LatLonType was removed in Solr 9 (LatLonPointSpatialField replaces it; subFieldSuffix is not one of its
    # attributes): the schema does not load without this. Only the *_p dynamic field uses the type.
    _Patch(r'class="solr\.LatLonType" subFieldSuffix="_coordinate"', 'class="solr.LatLonPointSpatialField"',
           "Solr 9 has no LatLonType"),
]
_HAYSTACK_CONFIG_PATCHES = [
    _CACHE_PATCH,
    # The XSLT response writer moved out of Solr's core into the "scripting" module in Solr 9, which a stock
    # Solr does not load: "ClassNotFoundException: solr.XSLTResponseWriter" fails the core.
    _Patch(r'\s*<queryResponseWriter name="xslt" class="solr\.XSLTResponseWriter">.*?</queryResponseWriter>', "",
           "Solr 9 has no XSLTResponseWriter in its core"),
]


def render_django_template(template: str, context: dict) -> str:
    """A tiny renderer for exactly the Django template tags haystack's two templates use: ``{{ name }}`` and
    ``{{ item.key }}`` (HTML-escaped, as Django's autoescape does) and ``{% for x in list %}...{% endfor %}``
    (the body rendered once per item, whitespace as written). Any other tag is an error, so a new template
    that needs more than this is noticed."""
    tokens = re.split(r"({%.*?%}|{{.*?}}|{#.*?#})", template, flags=re.S)

    def lookup(expr: str, scope: dict):
        parts = expr.strip().split(".")
        if not all(re.fullmatch(r"\w+", p) for p in parts):
            raise ValueError(f"unsupported template expression {{{{ {expr} }}}}")
        value = scope[parts[0]]
        for part in parts[1:]:
            value = value[part]
        return value

    def render(pos: int, scope: dict, stop: str | None) -> tuple[str, int]:
        out = []
        while pos < len(tokens):
            tok = tokens[pos]
            if tok.startswith("{{"):
                out.append(html.escape(str(lookup(tok[2:-2], scope)), quote=True))
            elif tok.startswith("{#"):
                pass
            elif tok.startswith("{%"):
                words = tok[2:-2].split()
                if words == [stop]:
                    return "".join(out), pos
                if len(words) == 4 and words[0] == "for" and words[2] == "in":
                    end = _endfor(tokens, pos + 1)
                    for item in lookup(words[3], scope):
                        out.append(render(pos + 1, {**scope, words[1]: item}, "endfor")[0])
                    pos = end
                else:
                    raise ValueError(f"unsupported template tag {tok}")
            else:
                out.append(tok)
            pos += 1
        if stop is not None:
            raise ValueError(f"missing {{% {stop} %}}")
        return "".join(out), pos

    text, _ = render(0, dict(context), None)
    return text


def _endfor(tokens: list[str], pos: int) -> int:
    """The index of the {% endfor %} that closes the loop whose body starts at ``pos``."""
    depth = 0
    while pos < len(tokens):
        words = tokens[pos][2:-2].split() if tokens[pos].startswith("{%") else []
        if words[:1] == ["for"]:
            depth += 1
        elif words == ["endfor"]:
            if depth == 0:
                return pos
            depth -= 1
        pos += 1
    raise ValueError("missing {% endfor %}")


def haystack_conf() -> dict[str, bytes]:
    """django-haystack's ``search_configuration/schema.xml`` and ``solrconfig.xml`` (the templates its
    ``build_solr_schema --configure-directory`` writes into a core), rendered for HAYSTACK_CONTEXT and patched
    for Solr 9.10.1, with the files the schema names that haystack does not ship (written empty; currency.xml
    ours)."""
    sdist = _pip_download(HAYSTACK_REQUIREMENT, _cache("haystack"), sdist=True)
    with tarfile.open(sdist) as tar:
        names = tar.getnames()
        raw = {}
        for base in ("schema.xml", "solrconfig.xml"):
            member = tar.extractfile(_member(names, f"haystack/templates/search_configuration/{base}", sdist))
            assert member is not None
            raw[base] = member.read().decode("utf-8")
    schema = _patched(render_django_template(raw["schema.xml"], HAYSTACK_CONTEXT), _HAYSTACK_SCHEMA_PATCHES,
                      "haystack schema.xml")
    config = _patched(render_django_template(raw["solrconfig.xml"], HAYSTACK_CONTEXT), _HAYSTACK_CONFIG_PATCHES,
                      "haystack solrconfig.xml")
    files = {"schema.xml": schema.encode("utf-8"), "solrconfig.xml": config.encode("utf-8"),
             # The currency field type names currency.xml: ours.
             "currency.xml": _CURRENCY_XML.read_bytes(),
             # The QueryElevationComponent's config-file (the core does not load without it): no elevations.
             "elevate.xml": b'<?xml version="1.0" encoding="UTF-8" ?>\n<elevate>\n</elevate>\n'}
    files.update(_resource_files(schema, files))
    files.update(_resource_files(config, files))
    return files


def haystack_documents() -> list[dict]:
    """Notes as haystack indexes them: ``id`` is ``app_label.model_name.pk``, ``django_ct`` and ``django_id``
    the model and the primary key, ``text`` the rendered document template (title, author and body). Two
    near-duplicate pairs (one word changed): notes.note.1 / notes.note.2, notes.note.4 / notes.note.5."""
    notes = [
        (1, "Quarterly planning", "alice", "2024-01-08T09:00:00Z",
         "We agreed to ship the billing export before the end of March and to move the reporting work to the "
         "second quarter."),
        (2, "Quarterly planning", "alice", "2024-01-08T09:05:00Z",
         "We agreed to ship the billing export before the end of April and to move the reporting work to the "
         "second quarter."),
        (3, "Office move", "bob", "2024-02-12T14:30:00Z",
         "The team moves to the third floor on Friday; pack your desks on Thursday afternoon."),
        (4, "Incident review", "carol", "2024-03-03T11:00:00Z",
         "The outage started when the certificate expired; renewals are now checked every night by a job."),
        (5, "Incident review", "carol", "2024-03-03T11:20:00Z",
         "The outage started when the certificate expired; renewals are now checked every morning by a job."),
        (6, "Reading list", "dave", "2024-04-22T16:45:00Z",
         "Three books on distributed systems and one on writing clearly, to share in the book club."),
    ]
    return [{"id": f"notes.note.{pk}", "django_ct": "notes.note", "django_id": str(pk),
             "text": f"{title}\n{author}\n{body}\n", "title": title, "author": author, "pub_date": pub}
            for pk, title, author, pub, body in notes]


# ----------------------------------------------------------------------------------- Dovecot
_DOVECOT_DOC = "usr/share/doc/dovecot-core"

_DOVECOT_CONFIG_PATCHES = [
    _CACHE_PATCH,
]


def _deb_files(package: str, paths: list[str]) -> dict[str, bytes]:
    """The files at ``paths`` (relative to /) in Debian's ``package``, read from its .deb (fetched and cached on
    first use) with ``dpkg-deb --fsys-tarfile``, without installing it."""
    deb = _apt_download(package, _cache("dovecot"))
    proc = subprocess.run(["dpkg-deb", "--fsys-tarfile", str(deb)], capture_output=True, timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"dpkg-deb could not read {deb}: {proc.stderr.decode('utf-8', 'replace')[:500]}")
    with tarfile.open(fileobj=io.BytesIO(proc.stdout)) as tar:
        names = tar.getnames()
        out = {}
        for path in paths:
            member = tar.extractfile(_member(names, path, deb))
            assert member is not None
            out[path] = member.read()
    return out


def _dovecot_solrconfig() -> str:
    raw = _deb_files("dovecot-core", [f"{_DOVECOT_DOC}/solr-config-7.7.0.xml.gz"])
    return _patched(gzip.decompress(raw[f"{_DOVECOT_DOC}/solr-config-7.7.0.xml.gz"]).decode("utf-8"),
                    _DOVECOT_CONFIG_PATCHES, "dovecot solrconfig.xml")


def dovecot_conf() -> dict[str, bytes]:
    """Dovecot's Solr files from Debian's ``dovecot-core`` (``/usr/share/doc/dovecot-core/solr-schema-7.7.0.xml``
    and ``solr-config-7.7.0.xml.gz``: the pair Dovecot's documentation has a user copy into a core as
    ``schema.xml`` and ``solrconfig.xml``), the solrconfig patched for Solr 9.10.1. It names no schema factory:
    Solr's managed schema takes schema.xml over on the first load, as Dovecot's documentation says."""
    path = f"{_DOVECOT_DOC}/solr-schema-7.7.0.xml"
    schema = _deb_files("dovecot-core", [path])[path].decode("utf-8")
    files = {"schema.xml": schema.encode("utf-8"), "solrconfig.xml": _dovecot_solrconfig().encode("utf-8")}
    files.update(_resource_files(schema, files))
    return files


def dovecot_legacy_conf() -> dict[str, bytes]:
    """The schema Debian's ``dovecot-solr`` ships (``/usr/share/dovecot/solr-schema.xml``: Dovecot's older one,
    schema version 1.5 in <types>/<fields> sections, TrieLongField, WordDelimiterFilterFactory,
    SynonymFilterFactory, a stored _version_; Solr 9.10.1 still loads all of it, unpatched), with Dovecot's
    solrconfig from ``dovecot-core`` (the package ships none), patched as for ``dovecot``."""
    path = "usr/share/dovecot/solr-schema.xml"
    schema = _deb_files("dovecot-solr", [path])[path].decode("utf-8")
    files = {"schema.xml": schema.encode("utf-8"), "solrconfig.xml": _dovecot_solrconfig().encode("utf-8")}
    files.update(_resource_files(schema, files))
    return files


def dovecot_documents() -> list[dict]:
    """Mails as Dovecot's fts-solr plugin indexes them: ``id`` is ``uid/uidvalidity/mailbox GUID/user``, ``uid``,
    ``box`` and ``user`` stored; the headers, the body and the address fields indexed only (not stored). Two
    near-duplicate pairs (one word changed in the body): uids 1 / 2 and 4 / 5."""
    box = "3f2a9c1e5b7d4e08a1c2d3e4f5061728"
    mails = [
        (1, "alice@example.org", "bob@example.org", "Invoice for March",
         "Hello Bob, please find attached the invoice for March. Payment is due within thirty days. Regards, "
         "Alice"),
        (2, "alice@example.org", "bob@example.org", "Invoice for March",
         "Hello Bob, please find attached the invoice for March. Payment is due within fourteen days. Regards, "
         "Alice"),
        (3, "carol@example.org", "team@example.org", "Lunch on Friday",
         "Shall we try the new noodle place near the station this Friday at noon?"),
        (4, "newsletter@shop.example", "alice@example.org", "Your weekly deals",
         "This week only: twenty percent off garden furniture and free delivery on orders over fifty euros."),
        (5, "newsletter@shop.example", "alice@example.org", "Your weekly deals",
         "This week only: twenty percent off kitchen furniture and free delivery on orders over fifty euros."),
        (6, "dave@example.org", "alice@example.org", "Re: server migration",
         "The database moved cleanly; I will switch the DNS records tomorrow morning."),
    ]
    docs = []
    for uid, sender, to, subject, body in mails:
        hdr = f"From: {sender}\nTo: {to}\nSubject: {subject}\nMessage-ID: <{uid}.{box[:8]}@mail.example.org>\n"
        docs.append({"id": f"{uid}/1700000000/{box}/alice@example.org", "uid": uid, "box": box,
                     "user": "alice@example.org", "hdr": hdr, "body": body, "from": sender, "to": to,
                     "subject": subject})
    return docs


# ----------------------------------------------------------------------------------- CKAN
CKAN_REQUIREMENT = "ckan==2.12.0"

# CKAN ships its schema.xml (ckan/config/solr/schema.xml) and no solrconfig.xml: the CKAN Solr images put the
# schema into a Solr configset with the classic (read-only) schema factory. This one is ours, minimal, with the
# update log on.
_CKAN_SOLRCONFIG = """<?xml version="1.0" encoding="UTF-8" ?>
<!-- A minimal solrconfig.xml of ours around CKAN's schema.xml: the classic schema factory (CKAN's schema is
     read-only), the update log on, df=text (CKAN's catch-all). -->
<config>
  <luceneMatchVersion>9.12</luceneMatchVersion>
  <dataDir>${solr.data.dir:}</dataDir>
  <schemaFactory class="ClassicIndexSchemaFactory"/>
  <updateHandler class="solr.DirectUpdateHandler2">
    <updateLog><str name="dir">${solr.ulog.dir:}</str></updateLog>
    <autoCommit><maxTime>${solr.autoCommit.maxTime:15000}</maxTime><openSearcher>false</openSearcher></autoCommit>
  </updateHandler>
  <requestHandler name="/select" class="solr.SearchHandler">
    <lst name="defaults"><str name="echoParams">explicit</str><int name="rows">10</int><str name="df">text</str></lst>
  </requestHandler>
</config>
"""

# None needed: Solr 9.10.1 loads CKAN 2.12's schema as it is (it is written for Solr 9: point fields, graph
# filters); only the resource files it names are missing.
_CKAN_SCHEMA_PATCHES: list[_Patch] = []


def ckan_conf() -> dict[str, bytes]:
    """CKAN's ``ckan/config/solr/schema.xml`` from its wheel on PyPI, with a minimal solrconfig.xml of ours."""
    wheel = _pip_download(CKAN_REQUIREMENT, _cache("ckan"), sdist=False)
    with zipfile.ZipFile(wheel) as zf:
        schema = zf.read(_member(zf.namelist(), "ckan/config/solr/schema.xml", wheel)).decode("utf-8")
    schema = _patched(schema, _CKAN_SCHEMA_PATCHES, "ckan schema.xml")
    files = {"schema.xml": schema.encode("utf-8"), "solrconfig.xml": _CKAN_SOLRCONFIG.encode("utf-8")}
    files.update(_resource_files(schema, files))
    return files


def ckan_documents() -> list[dict]:
    """Datasets as CKAN indexes them: ``index_id`` (the unique key) is the MD5 of site id and dataset id, ``id``
    the dataset's UUID, ``title`` and ``notes`` its text, tags, organization, resources, extras, and the dataset
    as JSON in ``data_dict``. Two near-duplicate pairs (one word changed in the notes): the air-quality and the
    bus-stop datasets."""
    sets = [
        ("6f1e2d3c-0001-4a5b-8c9d-0e1f2a3b4c5d", "air-quality-2023", "Air quality measurements 2023",
         "Hourly measurements of nitrogen dioxide and fine particles from twelve city stations during 2023.",
         ["air", "environment"], "city-environment"),
        ("6f1e2d3c-0002-4a5b-8c9d-0e1f2a3b4c5d", "air-quality-2023-copy", "Air quality measurements 2023",
         "Hourly measurements of nitrogen dioxide and fine particles from eleven city stations during 2023.",
         ["air", "environment"], "city-environment"),
        ("6f1e2d3c-0003-4a5b-8c9d-0e1f2a3b4c5d", "bus-stops", "Bus stops",
         "Locations, names and accessibility of every bus stop served by the municipal transport company.",
         ["transport", "geo"], "city-transport"),
        ("6f1e2d3c-0004-4a5b-8c9d-0e1f2a3b4c5d", "bus-stops-archive", "Bus stops",
         "Locations, names and accessibility of every bus stop served by the regional transport company.",
         ["transport", "geo"], "city-transport"),
        ("6f1e2d3c-0005-4a5b-8c9d-0e1f2a3b4c5d", "library-loans", "Library loans by branch",
         "Monthly number of loans per library branch and category of media since 2015.",
         ["culture"], "city-culture"),
    ]
    docs = []
    for i, (uuid, name, title, notes, tags, org) in enumerate(sets):
        data_dict = {"id": uuid, "name": name, "title": title, "notes": notes, "tags": [{"name": t} for t in tags],
                     "organization": {"name": org}, "state": "active", "type": "dataset"}
        docs.append({
            "index_id": hashlib.md5(f"default{uuid}".encode()).hexdigest(), "id": uuid, "site_id": "default",
            "name": name, "title": title, "notes": notes, "tags": tags, "organization": org,
            "entity_type": "package", "dataset_type": "dataset", "state": "active", "capacity": "public",
            "license_id": "cc-by", "author": "Open Data Team", "maintainer_email": "opendata@example.org",
            "res_name": [f"{title} (CSV)"], "res_format": ["CSV"], "res_url": [f"https://data.example.org/{name}.csv"],
            "extras_update_frequency": "monthly" if i % 2 else "yearly",
            "metadata_created": f"2023-0{i + 1}-01T10:00:00Z", "metadata_modified": f"2024-0{i + 1}-15T10:00:00Z",
            "data_dict": json.dumps(data_dict), "validated_data_dict": json.dumps(data_dict),
            "permission_labels": ["public"],
        })
    return docs


# ----------------------------------------------------------------------------------- one entry point
_PACKAGE_KINDS: dict[str, tuple[Callable[[], dict[str, bytes]], str, tuple[str, ...], Callable[[], list[dict]],
                                str]] = {
    # which: (conf builder, key field, text fields, documents, how atomic updates are posted)
    "haystack": (haystack_conf, "id", ("text",), haystack_documents, "json"),
    "dovecot": (dovecot_conf, "id", ("subject", "body"), dovecot_documents, "json"),
    "dovecot-legacy": (dovecot_legacy_conf, "id", ("subject", "body"), dovecot_documents, "json"),
    "ckan": (ckan_conf, "index_id", ("title", "notes"), ckan_documents, "xml"),
}


def package_conf(which: str) -> dict[str, bytes]:
    """The conf directory's files (relative path -> bytes) for ``which``, fetched and cached on first use."""
    if which not in _PACKAGE_KINDS:
        raise ValueError(f"unknown package schema {which!r}; one of {', '.join(_PACKAGE_KINDS)}")
    return _PACKAGE_KINDS[which][0]()


def create_from_package(local_solr, which: str) -> UserCollection:
    """A core on ``local_solr`` (a LocalSolr) made from the Solr files that application ``which`` (``haystack``,
    ``dovecot``, ``dovecot-legacy``, ``ckan``) ships in its package; skips the test when the package cannot be
    fetched."""
    files = package_conf(which)
    _, key_field, text_fields, documents, atomic_via = _PACKAGE_KINDS[which]
    name = _unique_name(f"user_{which.replace('-', '_')}")
    _create_core(local_solr, name, files)
    return UserCollection(local_solr.base_url, name, key_field=key_field, kind=which, text_fields=text_fields,
                          documents=documents, atomic_via=atomic_via)


def drop_all(collections: list[UserCollection]) -> None:
    """Drop each (a fixture's finalizer)."""
    for coll in collections:
        try:
            coll.drop()
        except requests.RequestException:
            pass


__all__ = [
    "UserCollection", "create_stock_features", "create_stock_features_cloud", "create_from_package",
    "techproducts_like_documents", "default_like_documents", "haystack_documents", "dovecot_documents",
    "ckan_documents", "snapshot_diff", "render_django_template", "package_conf", "stock_features_conf",
    "drop_all", "PACKAGES", "CACHE_DIR", "STOCK_FEATURES_CONFIGSET",
]
