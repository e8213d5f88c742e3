"""A collection that is not ours, as a Solr user's would be: a core made from ``tests/data/user_configset`` (a
managed schema with the user's own fields title, body, url, published, tags, views) on the session's local Solr,
filled by clients that are not neardup-solr's (plain JSON over HTTP, CSV through /update/csv).

Used by the install / backfill / sync tests (tests/solr/engine/test_own_collection.py).
"""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path

import requests

USER_CONFIGSET = Path(__file__).parent / "data" / "user_configset"
_names = itertools.count()


class UserCore:
    """One core made from the user configset on a local Solr; ``url`` is its core URL. ``drop()`` unloads it and
    deletes its directory."""

    def __init__(self, solr_home: Path, base_url: str, name: str):
        self.solr_home, self.base_url, self.name = solr_home, base_url.rstrip("/"), name
        self.url = f"{self.base_url}/{name}"

    @classmethod
    def create(cls, local_solr, prefix: str = "user_articles", *, classic: bool = False,
               unique_key: str = "id") -> "UserCore":
        """A fresh core (its own instance directory, a copy of the configset) on ``local_solr`` (a LocalSolr).
        ``classic``: the same schema as a classic schema.xml, which the Schema API cannot change; ``unique_key``:
        another field of the schema as the unique key."""
        name = f"{prefix}_{next(_names)}"
        instance = Path(local_solr.data_dir) / name
        if instance.exists():
            shutil.rmtree(instance)
        shutil.copytree(USER_CONFIGSET / "conf", instance / "conf")
        if unique_key != "id":
            schema = instance / "conf" / "managed-schema.xml"
            schema.write_text(schema.read_text().replace("<uniqueKey>id</uniqueKey>",
                                                         f"<uniqueKey>{unique_key}</uniqueKey>"))
        if classic:
            conf = instance / "conf"
            (conf / "managed-schema.xml").rename(conf / "schema.xml")
            config = (conf / "solrconfig.xml").read_text()
            start, end = config.index("<schemaFactory"), config.index("</schemaFactory>") + len("</schemaFactory>")
            (conf / "solrconfig.xml").write_text(config[:start] + '<schemaFactory class="ClassicIndexSchemaFactory"/>'
                                                 + config[end:])
        base = local_solr.base_url
        resp = requests.get(f"{base}/admin/cores", params={"action": "CREATE", "name": name, "instanceDir": name,
                                                           "wt": "json"}, timeout=120)
        if resp.status_code != 200:
            raise RuntimeError(f"could not create the user core {name}: {resp.text[:500]}")
        return cls(Path(local_solr.data_dir), base, name)

    def drop(self) -> None:
        requests.get(f"{self.base_url}/admin/cores", params={"action": "UNLOAD", "core": self.name,
                                                              "deleteInstanceDir": "true", "wt": "json"}, timeout=120)

    # ------------------------------------------------------------------ what the user's own clients do
    def post_json(self, docs: list[dict], commit: bool = True) -> None:
        """Plain JSON over HTTP, as a user's pipeline posts (no neardup-solr code involved)."""
        resp = requests.post(f"{self.url}/update", params={"commit": str(commit).lower(), "wt": "json"},
                             json=docs, timeout=60)
        resp.raise_for_status()

    def post_csv(self, csv_text: str, commit: bool = True) -> None:
        """CSV through /update/csv."""
        resp = requests.post(f"{self.url}/update/csv", params={"commit": str(commit).lower(), "wt": "json"},
                             data=csv_text.encode("utf-8"), headers={"Content-Type": "text/csv; charset=utf-8"},
                             timeout=60)
        resp.raise_for_status()

    def atomic_set(self, doc_id: str, **fields) -> None:
        """An in-place edit by the user's pipeline (an atomic update of their own fields)."""
        doc = {"id": doc_id, **{name: {"set": value} for name, value in fields.items()}}
        self.post_json([doc])

    def delete(self, ids: list[str]) -> None:
        resp = requests.post(f"{self.url}/update", params={"commit": "true", "wt": "json"},
                             json={"delete": ids}, timeout=60)
        resp.raise_for_status()

    def commit(self) -> None:
        requests.get(f"{self.url}/update", params={"commit": "true", "wt": "json"}, timeout=60).raise_for_status()

    def docs(self, fields: str = "*") -> dict[str, dict]:
        """Every document by id (fields as asked), read with a plain HTTP query."""
        resp = requests.get(f"{self.url}/select", params={"q": "*:*", "rows": 100000, "fl": fields, "sort": "id asc",
                                                          "wt": "json"}, timeout=60)
        resp.raise_for_status()
        return {d["id"]: d for d in resp.json()["response"]["docs"]}

    def raw_documents(self) -> bytes:
        """Every document with every field Solr returns (``fl=*`` and ``_version_``), as the exact bytes of its
        answer: equal before and after means nothing was written to any document, not even an update that left the
        values as they were (that would raise ``_version_``)."""
        resp = requests.get(f"{self.url}/select", params={"q": "*:*", "rows": 100000, "fl": "*,_version_",
                                                          "sort": "id asc", "wt": "json", "omitHeader": "true"},
                            timeout=60)
        resp.raise_for_status()
        return resp.content

    def schema(self) -> dict:
        resp = requests.get(f"{self.url}/schema", params={"wt": "json"}, timeout=60)
        resp.raise_for_status()
        return resp.json()["schema"]
