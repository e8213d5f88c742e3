"""The replay guard's rules (neardup_solr.solr.update_log): when a client asks Solr whether the core replays its
update log, and how it reads the answer. The real replay after a kill: tests/solr/faults/test_restart_replay.py."""

from __future__ import annotations

import pytest

from neardup_solr.solr import update_log
from neardup_solr.solr.update_log import ACTIVE, LOADING, NO_METRICS, ReplayGuard, core_is_loading, state_of


class Node:
    """What one node tells the guard, the states given in turn (then the last one again)."""

    def __init__(self, *states):
        self.states = list(states)
        self.asked = 0

    def __call__(self, node: str):
        self.asked += 1
        state = self.states[min(self.asked, len(self.states)) - 1]
        if isinstance(state, Exception):
            raise state
        return state


def guard(node: Node, cloud: bool = False) -> ReplayGuard:
    return ReplayGuard("neardup", node, lambda: cloud)


@pytest.mark.parametrize("answer, expected", [
    ({"metrics": {"solr.core.neardup:TLOG.state": 0}}, 0),
    ({"metrics": {"solr.core.neardup:TLOG.state": 3}}, 3),
    ({"metrics": {"solr.core.neardup": {"TLOG.state": 1}}}, 1),  # the group=core&prefix= form
    ({"metrics": {}, "errors": {"solr.core.neardup:TLOG.state": "registry 'solr.core.neardup' not found"}}, None),
    ({"metrics": {"solr.core.other:TLOG.state": 0}}, None),
    ({"metrics": {"solr.core.neardup:TLOG.state": "3"}}, None),
    ({"metrics": {"solr.core.neardup:TLOG.state": True}}, None),
    ([], None),
])
def test_state_of_reads_only_this_cores_integer_state(answer, expected):
    assert state_of(answer, "neardup") == expected


def test_a_new_client_asks_once_then_not_while_solr_keeps_answering():
    node = Node(ACTIVE)
    g = guard(node)
    assert g.replaying("n") is None and node.asked == 1
    g.answered()
    assert g.replaying("n") is None and node.asked == 1


def test_while_replaying_the_reason_is_given_and_asked_again_until_active():
    node = Node(0, 0, ACTIVE)
    g = guard(node)
    first = g.replaying("n")
    assert first is not None and "replaying its update log" in first and "'neardup'" in first
    g.answered()  # an answer meanwhile (another thread's request) does not end the doubt
    assert g.replaying("n") is not None
    assert g.replaying("n") is None and node.asked == 3
    assert g.replaying("n") is None and node.asked == 3


def test_a_failed_attempt_makes_it_ask_again():
    node = Node(ACTIVE)
    g = guard(node)
    g.replaying("n")
    g.answered()
    g.failed()
    assert g.replaying("n") is None and node.asked == 2


def test_a_silence_longer_than_a_restart_could_take_makes_it_ask_again(monkeypatch):
    node = Node(ACTIVE)
    g = guard(node)
    clock = [100.0]
    monkeypatch.setattr(update_log.time, "monotonic", lambda: clock[0])
    g.replaying("n")
    clock[0] += update_log.IDLE_SECONDS * 0.9
    g.answered()
    clock[0] += update_log.IDLE_SECONDS * 0.9
    assert g.replaying("n") is None and node.asked == 1
    clock[0] += update_log.IDLE_SECONDS * 0.2
    assert g.replaying("n") is None and node.asked == 2


def test_a_cloud_is_never_asked_and_a_node_without_metrics_only_once():
    cloud_node = Node(0)
    assert guard(cloud_node, cloud=True).replaying("n") is None and cloud_node.asked == 0
    closed = Node(NO_METRICS)
    g = guard(closed)
    g.replaying("n")
    g.failed()
    assert g.replaying("n") is None and closed.asked == 1


def test_no_connection_for_the_question_fails_the_attempt_and_it_is_asked_again():
    node = Node(ConnectionRefusedError("refused"), 0)
    g = guard(node)
    with pytest.raises(ConnectionRefusedError):
        g.replaying("n")
    # Still in doubt: the next attempt asks again, and waits while the core replays.
    assert g.replaying("n") is not None and node.asked == 2


def test_an_answer_that_cannot_be_read_lets_the_request_go_and_is_asked_again():
    node = Node(ValueError("not JSON"), ACTIVE)
    g = guard(node)
    assert g.replaying("n") is None
    assert g.replaying("n") is None and node.asked == 2


@pytest.mark.parametrize("answer, expected", [
    ({"status": {"neardup": {"name": "neardup", "isLoaded": "false", "isLoading": "true"}}}, True),
    ({"status": {"neardup": {"name": "neardup", "startTime": "2026-12-02T00:00:00Z", "uptime": 5}}}, False),
    ({"status": {"neardup": {}}}, False),  # no such core
    ({"status": {"other": {"isLoading": "true"}}}, False),
    ({"initFailures": {}}, False),
    ([], False),
])
def test_core_is_loading_reads_the_core_admin_status_of_this_core(answer, expected):
    assert core_is_loading(answer, "neardup") is expected


def test_a_core_still_loading_is_waited_for_even_when_its_metric_would_say_active():
    """The update-log metric reads 3 while the core is built, before Solr starts the replay: a loading core is
    waited for, and asked about again until it is active."""
    node = Node(LOADING, 0, ACTIVE)
    g = guard(node)
    first = g.replaying("n")
    assert first is not None and "still loading" in first
    assert "replaying its update log" in g.replaying("n")
    assert g.replaying("n") is None and node.asked == 3


def test_a_node_without_the_core_lets_the_request_go_and_is_asked_again_only_after_a_failure():
    """No such core on the node (a SolrCloud collection, before the client knows it talks to one): the request
    goes, and a busy client does not ask before every request."""
    node = Node(None, ACTIVE)
    g = guard(node)
    assert g.replaying("n") is None
    g.answered()
    assert g.replaying("n") is None and node.asked == 1
    g.failed()
    assert g.replaying("n") is None and node.asked == 2
