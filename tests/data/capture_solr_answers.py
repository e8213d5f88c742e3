"""Writes tests/data/solr-answers.json: real exchanges with a real Solr, which tests/solr_replay.py plays back
so that the client's, the searcher's and the indexer's own logic is tested without a Solr (tests/unit/solr/).

Run it again when the requests those modules send change (a replayed test then fails with "no recorded
answer"), from the repository root:

    .venv/bin/python tests/data/capture_solr_answers.py

It starts a throwaway local Solr (the launcher's, on a free port), indexes a few restaurant-like records, and
records each scenario's requests and Solr's answers as they went over the wire.
"""

from __future__ import annotations

import contextlib
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from solr_replay import SETTINGS, exchange_of  # noqa: E402

from neardup_solr.solr.backends.local import LocalSolr  # noqa: E402
from neardup_solr.solr.client import SolrClient  # noqa: E402
from neardup_solr.solr.indexer import Indexer  # noqa: E402
from neardup_solr.solr.searcher import Searcher, cursor_docs  # noqa: E402
from neardup_solr.signing.builder import DocumentBuilder  # noqa: E402

RECORDS = [
    ("1", "Arnie Morton's of Chicago 435 S. La Cienega Blvd. Los Angeles"),
    ("2", "Arnie Morton's of Chicago 435 S. La Cienega Boulevard Los Angeles"),
    ("3", "Art's Deli 12224 Ventura Blvd. Studio City"),
    ("536", "Art's Delicatessen 12224 Ventura Blvd. Studio City"),
    ("10", "Art's Deli 12224 Ventura Blvd. Studio City"),
    ("7", "Bel-Air Hotel 701 Stone Canyon Rd. Bel Air"),
    ("8", "Cafe Bizou 14016 Ventura Blvd. Sherman Oaks"),
]
NEW_TEXT = "Art's Deli 12224 Ventura Boulevard Studio City"


class Recorder(SolrClient):
    """A SolrClient that keeps every exchange of the scenario being recorded."""

    def __init__(self, url: str):
        super().__init__(url)
        self.scenario: list[dict] | None = None

    def _send(self, node, method, url, *, params, data, json_body, headers, timeout, stream):
        resp = super()._send(node, method, url, params=params, data=data, json_body=json_body, headers=headers,
                             timeout=timeout, stream=stream)
        if self.scenario is not None:
            self.scenario.append(exchange_of(url.split(f"/{self.collection}/", 1)[1], method, params, data,
                                             json_body, resp))
        return resp


def main() -> None:
    solr = LocalSolr(port=0, data_dir=Path(tempfile.mkdtemp(prefix="neardup-capture-")))
    solr.start()
    scenarios: dict[str, list[dict]] = {}
    try:
        client = Recorder(solr.core_url)
        client.delete_all()
        Indexer(client, SETTINGS).index_records(RECORDS)

        @contextlib.contextmanager
        def scenario(name: str):
            client.scenario = scenarios.setdefault(name, [])
            try:
                yield
            finally:
                client.scenario = None

        searcher = Searcher(client, settings=SETTINGS)
        with scenario("ping"):
            client.ping()
        with scenario("add"):
            client.add(DocumentBuilder(SETTINGS).build([("900", "Cafe Bizou 14016 Ventura Boulevard")]).documents)
        with scenario("add_refused"):
            with contextlib.suppress(Exception):
                client.add([{"id": "901", "no_such_field": "x"}])
        with scenario("count"):
            client.count()
        with scenario("get_by_ids"):
            client.get_by_ids(["536", "missing", "3"], "id,content")
        with scenario("lookup_text_rows"):
            searcher.find_near_dups(text=NEW_TEXT, rows=10, min_jaccard=None)
        with scenario("lookup_text_all"):
            searcher.find_near_dups(text=NEW_TEXT, min_jaccard=None, max_edit_distance=2)
        with scenario("lookup_id"):
            searcher.find_near_dups("3", min_jaccard=None)
        with scenario("lookup_missing_id"):
            with contextlib.suppress(Exception):
                searcher.find_near_dups("no-such-id")
        with scenario("cursor_pages"):
            list(cursor_docs(client, [("q", "*:*"), ("fl", "id"), ("sort", "id asc")], page_size=3))
        missing = Recorder(solr.core_url.rsplit("/", 1)[0] + "/no_such_core")
        missing.scenario = scenarios.setdefault("missing_core", [])
        with contextlib.suppress(Exception):
            missing.get_json("admin/ping", retry=False)
    finally:
        solr.stop()
    out = HERE / "solr-answers.json"
    out.write_text(json.dumps(scenarios, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {out}: {', '.join(f'{k} ({len(v)})' for k, v in scenarios.items())}")


if __name__ == "__main__":
    main()
