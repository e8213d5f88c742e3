"""Which Solr error answers the client waits out and which it reports at once: the messages have the
form Solr 9 gives them (the first ended a partition test in CI: a node cut off mid-forward)."""
import pytest

from neardup_solr.solr.failures import server_failure, solr_error_text, transient_state


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
    state = transient_state(status, message)
    assert state is not None and says in state


@pytest.mark.parametrize("message, kind", [
    ("java.lang.OutOfMemoryError: Java heap space", "out_of_memory"),
    ("java.io.IOException: No space left on device", "disk_full"),
    ("this IndexWriter is closed", "writer_closed"),
    ("org.apache.solr.common.SolrException: unknown field 'nope'", "server"),
])
def test_a_failed_solr_is_reported_at_once_with_what_to_do(message, kind):
    assert transient_state(500, message) is None
    found, advice = server_failure(message)
    assert found == kind and "--resume" in advice


def test_a_generic_solr_error_is_named_by_its_root_cause():
    """Solr answered a commit on a full disk with "Error opening new searcher"; the cause is in the trace."""
    import json

    import requests

    trace = ("org.apache.solr.common.SolrException: Error opening new searcher\n\tat org.apache.solr.core...\n"
             "Caused by: org.apache.lucene.store.AlreadyClosedException: this IndexWriter is closed\n\tat ...\n"
             "Caused by: java.io.IOException: No space left on device\n\tat java.base/sun.nio.ch...\n")
    resp = requests.Response()
    resp.status_code = 500
    resp._content = json.dumps({"error": {"msg": "Error opening new searcher", "trace": trace, "code": 500}}).encode()
    message = solr_error_text(resp)
    assert message == "Error opening new searcher (caused by java.io.IOException: No space left on device)"
    assert transient_state(500, message) is None and server_failure(message)[0] == "disk_full"
    resp._content = json.dumps({"error": {"msg": "unknown field 'x'", "code": 400}}).encode()
    assert solr_error_text(resp) == "unknown field 'x'"
