"""Which Solr error answers the client waits out and which it reports at once: the messages have the
form Solr 9 gives them (the first ended a partition test in CI: a node cut off mid-forward)."""
import pytest

from neardup_solr.solr.client import _server_failure, _transient_state


@pytest.mark.parametrize("status, message, says", [
    (500, "Task queue processing has stalled for 20204 ms with 0 remaining elements to process.",
     "stopped answering"),
    (503, "No registered leader was found after waiting for 4000ms , collection: neardup slice: shard2 saw "
          "state=DocCollection(neardup//collections/neardup/state.json/12)", "no leader"),
    (503, "SolrCore is loading", "loading"),
    (500, "Error, lookupLog bad state", "replaying its update log"),
    (503, "no servers hosting shard: shard1", "no live replica"),
    (502, "Bad Gateway", "HTTP 502"),
])
def test_a_cluster_in_motion_is_waited_out(status, message, says):
    state = _transient_state(status, message)
    assert state is not None and says in state


@pytest.mark.parametrize("message, kind", [
    ("java.lang.OutOfMemoryError: Java heap space", "out_of_memory"),
    ("java.io.IOException: No space left on device", "disk_full"),
    ("this IndexWriter is closed", "writer_closed"),
    ("org.apache.solr.common.SolrException: unknown field 'nope'", "server"),
])
def test_a_failed_solr_is_reported_at_once_with_what_to_do(message, kind):
    assert _transient_state(500, message) is None
    found, advice = _server_failure(message)
    assert found == kind and "--resume" in advice
