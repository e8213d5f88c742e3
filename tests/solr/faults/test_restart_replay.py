"""check_and_add right after Solr was killed and started again, while the core replays its update log (issue 47,
the soak's 106 pairs admitted twice): a standalone core answers during the replay, but its searches and the
version checks of create-only writes do not see the replayed documents yet. The client waits for the replay to
end (neardup_solr.solr.update_log), so a near duplicate or an exact copy of a text acknowledged before the kill is
refused, by a client that was idle through the restart as by a new one."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest
import requests

from strict_pairs import near_duplicate_groups
from netutil import free_port

from neardup_solr.engine.online import ADDED, DUPLICATE, check_and_add
from neardup_solr.solr.backends.local import LocalSolr
from neardup_solr.solr.collection import SolrCollection
from neardup_solr.solr.client import SolrClient
from neardup_solr.solr.searcher import Searcher
from neardup_solr.solr.update_log import ACTIVE

pytestmark = [pytest.mark.solr, pytest.mark.slow]

# Enough documents in the update log (no hard commit since: the configset's autoCommit is 60 s) that the replay
# lasts seconds on 2 cores, so the checks below run while it does.
LOGGED_DOCUMENTS = 20_000


def _wait_until_the_core_answers(solr: LocalSolr, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if requests.get(f"{solr.core_url}/admin/ping", timeout=2).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.05)
    raise AssertionError(f"core {solr.core} did not answer within {timeout:.0f} s after the restart")


def test_checks_during_the_replay_after_a_kill_see_what_was_acknowledged(tmp_path):
    solr = LocalSolr(port=free_port(), data_dir=tmp_path / "solr", heap="1g")
    solr.start()
    try:
        idle = SolrClient(solr.core_url)
        groups = near_duplicate_groups(3)
        anchor, bulk_last = groups[0], groups[1]
        assert check_and_add(idle, "anchor", anchor[0], strict=True).added  # stores the settings too

        # Many documents acknowledged and made searchable (soft commit), durable only in the update log.
        texts = near_duplicate_groups(LOGGED_DOCUMENTS - 1, size=1, seed=5)
        items = [(f"bulk{i}", t[0]) for i, t in enumerate(texts)] + [("bulk-last", bulk_last[0])]
        kept = Searcher(idle)
        builder = kept.builder
        for start in range(0, len(items), 2000):
            idle.add(builder.build(items[start:start + 2000]).documents)
        assert check_and_add(idle, "anchor-2", groups[2][0]).added  # not strict: sent with commitWithin
        SolrCollection(idle).commit(soft=True)
        assert idle.count() >= LOGGED_DOCUMENTS + 2

        os.kill(solr.pid(), signal.SIGKILL)
        time.sleep(1.5)
        restarted = LocalSolr(port=solr.port, data_dir=tmp_path / "solr", heap="1g")
        started: dict = {}
        starter = threading.Thread(target=lambda: started.setdefault("result", restarted.start()), daemon=True)
        starter.start()
        _wait_until_the_core_answers(restarted)
        state_when_answering = restarted.update_log_state()

        # At once, while the replay runs: a client idle since before the kill, with its searcher (settings read
        # then, as NearDupIndex and the service keep them), and a new client.
        fresh = SolrClient(restarted.core_url)
        outcomes = {
            "near duplicate of a strict add": check_and_add(idle, "late-near", anchor[1], strict=True,
                                                            searcher=kept),
            "exact copy of a commitWithin add": check_and_add(idle, "late-copy", groups[2][0], searcher=kept),
            "exact copy of a strict add": check_and_add(fresh, "late-exact", anchor[0], strict=True),
            "near duplicate of a bulk add": check_and_add(fresh, "late-bulk", bulk_last[1], strict=True),
        }
        starter.join(300)
        assert "result" in started, "the restarted Solr did not finish starting"
        # The checks did run during a replay, or this test proves nothing.
        assert state_when_answering is not None and state_when_answering != ACTIVE, state_when_answering
        assert started["result"].replay_wait > 0

        assert {name: r.status for name, r in outcomes.items()} == {name: DUPLICATE for name in outcomes}
        assert outcomes["near duplicate of a strict add"].matches[0].id == "anchor"
        assert outcomes["exact copy of a strict add"].matches[0].id == "anchor"
        assert outcomes["near duplicate of a bulk add"].matches[0].id == "bulk-last"
        assert outcomes["exact copy of a commitWithin add"].matches[0].id == "anchor-2"
        SolrCollection(fresh).commit(soft=True)
        assert fresh.get_by_ids(["late-near", "late-exact", "late-bulk", "late-copy"], "id") == []
        # And an unrelated text is still added.
        assert check_and_add(fresh, "new", near_duplicate_groups(1, seed=99)[0][0], strict=True).status == ADDED
    finally:
        try:
            LocalSolr(port=solr.port, data_dir=tmp_path / "solr").stop()
        finally:
            solr.stop()
