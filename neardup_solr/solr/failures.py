"""Reading Solr's failures: Solr's own message out of an error answer (SolrCloud's wrappers taken off), whether
a 5xx is worth waiting out (a core loading, a leader being elected, an update log replaying) or Solr has failed
(a full disk, an exhausted heap), and the errors that say so. :class:`~neardup_solr.solr.client.SolrClient`
retries or raises by these rules.
"""

from __future__ import annotations

import re

import requests

from neardup_solr.errors import SolrServerError, SolrTimeoutError

# HTTP answers that mean "not now" rather than "no".
RETRY_STATUS = {502, 503, 504}


_UNRESOLVED = re.compile(r"Failed to resolve '([^']*)'")


def short_reason(exc: Exception) -> str:
    text = str(exc)
    if "Connection refused" in text:
        return "connection refused"
    unresolved = _UNRESOLVED.search(text)
    if unresolved or "NameResolutionError" in text:
        # A host name that does not resolve is a wrong URL far more often than an outage: said as such.
        return f"could not resolve host {unresolved.group(1)}" if unresolved else "could not resolve the host"
    if isinstance(exc, requests.Timeout):
        return "timed out"
    return type(exc).__name__


def solr_error_text(resp: requests.Response) -> str:
    """Solr's own message (its JSON error, else the first line of the body), kept short.

    On a SolrCloud a document that belongs to another shard is refused by that shard's leader, and the node we
    sent the batch to wraps the leader's answer: "Async exception during distributed update: Error from server
    at <leader>: null ... Remote error message: <the real reason>" (the "null" is the HTTP/2 reason phrase,
    which does not exist). The real reason is what the user needs, so it is taken out of the wrapper."""
    trace = ""
    try:
        error = resp.json().get("error", {})
        trace = str(error.get("trace") or "")
        msg = error.get("msg") or trace.strip().split("\n", 1)[0]
    except (ValueError, AttributeError):
        msg = None
    if not msg:
        msg = resp.text.strip().splitlines()[0] if resp.text.strip() else resp.reason
    msg = _distributed_reason(msg) or msg
    cause = _root_cause(trace)
    if cause and cause.lower() not in msg.lower():
        # "Error opening new searcher" says nothing; its cause ("No space left on device") says what to do.
        msg = f"{msg} (caused by {cause})"
    # "No registered leader ... slice: shard2 saw state=DocCollection(...)={" is followed by the whole
    # collection state as JSON: the shard is the news, the state is noise.
    msg = msg.split(" saw state=", 1)[0]
    return msg[:500]


def _root_cause(trace: str) -> str:
    """The innermost "Caused by:" of a Java stack trace, shortened; empty when there is none."""
    causes = [line.strip()[len("Caused by:"):].strip() for line in trace.splitlines()
              if line.strip().startswith("Caused by:")]
    return causes[-1][:200] if causes else ""


_ASYNC_PREFIX = re.compile(r"^\s*(?:\d+ )?Async exceptions? during distributed update:\s*", re.IGNORECASE)
_REMOTE_MESSAGE = re.compile(r"Remote error message: *(.*)")
_REMOTE_SERVER = re.compile(r"Error from server at (\S+?):(?: |$)", re.MULTILINE)
# What a forwarding node says when the other node did not answer at all (it died, or its socket was cut).
_FORWARD_FAILURES = ("connectexception", "connection refused", "connection reset", "socketexception",
                     "timeoutexception", "timed out", "eofexception", "closedchannelexception", "broken pipe",
                     "closed", "no route to host", "ioexception")
FORWARD_FAILED = "forwarding to another shard's leader failed"
# request()'s mark for an update the node in use could not forward to another shard's leader.
LEADER_UNREACHABLE = object()


def _distributed_reason(msg: str) -> str | None:
    """The reasons inside Solr's "Async exception(s) during distributed update" wrapper, or None for any other
    message. One reason per failed sub-request, each with the node that gave it."""
    head = _ASYNC_PREFIX.match(msg)
    if not head:
        return None
    body = msg[head.end():]
    reasons: list[str] = []
    # Each sub-error starts on its own line: "Error from server at URL: ..." (the remote node answered) or a
    # Java exception (it did not); the remote's own message follows on a "Remote error message:" line.
    entries = re.split(r"\n(?=Error from server at |[\w$]+(?:\.[\w$]+)+: )", body.strip())
    for entry in entries:
        server = _REMOTE_SERVER.search(entry)
        remote = _REMOTE_MESSAGE.search(entry)
        if remote and remote.group(1).strip():
            where = f" (refused by another shard's leader, at {server.group(1)})" if server else ""
            reason = remote.group(1).strip() + where
        elif server:
            reason = (f"another shard's leader, at {server.group(1)}, refused it without giving a reason "
                      f"({entry.strip().splitlines()[0]})")
        else:
            first = entry.strip().splitlines()[0] if entry.strip() else "no detail"
            reason = f"{FORWARD_FAILED}: {first}"
        if reason not in reasons:
            reasons.append(reason)
    return "; ".join(reasons) if reasons else None


# Solr answers these while it is coming back, not because anything is broken: a core still loading (503), an
# update log still being replayed after a crash (the update handler's log is not open yet, so every update
# fails with a NullPointerException naming lookupLog), a shard whose leader is being elected.
_RECOVERING_MARKERS = (
    ("lookuplog", "Solr is recovering: it is replaying its update log after a restart"),
    ("no registered leader", "a shard of the collection is electing its leader"),
    ("is not the leader", "a shard of the collection is changing its leader"),
    ("core is loading", "Solr is loading the core"),
    ("solrcore is loading", "Solr is loading the core"),
    ("recovering", "the replica is recovering"),
    # Solr's node-to-node update stream gives up on a peer that took no data for its stall time (20 s in Solr
    # 9): that peer is cut off or dead, which the cluster notices and routes around; the request is whole or
    # absent, and a retry of a create is checked by the caller (check_and_add reads back a 409).
    ("task queue processing has stalled", "a node stopped answering the node forwarding its update"),
)
_NO_REPLICA = (
    re.compile(r"no (?:active )?servers hosting shard:? *([\w.-]+)", re.IGNORECASE),
    re.compile(r"no registered leader was found.*?slice: *([\w.-]+)", re.IGNORECASE | re.DOTALL),
)


def shard_without_replica(message: str) -> str | None:
    """The shard a "no servers hosting shard" / "no registered leader" answer names, if any."""
    for pattern in _NO_REPLICA:
        found = pattern.search(message)
        if found:
            return found.group(1)
    return None


def transient_state(status: int, message: str) -> str | None:
    """Why this 5xx answer is worth waiting out, or None when Solr has failed and waiting will not help."""
    lowered = message.lower()
    shard = shard_without_replica(message)
    if shard is not None and "no registered leader" not in lowered:
        return f"shard {shard} has no live replica right now (HTTP {status})"
    if shard is not None:
        return f"shard {shard} has no leader right now (HTTP {status})"
    if lowered.startswith(FORWARD_FAILED) and all(
            any(word in part.lower() for word in _FORWARD_FAILURES) for part in message.split("; ")):
        # The node we talk to could not reach another shard's leader: that node died or is dying. ZooKeeper
        # notices within its session timeout and another replica takes the lead; until then, wait.
        return (f"another shard's leader is not answering (its node may be down; a new leader is elected once "
                f"ZooKeeper notices) (HTTP {status})")
    for marker, state in _RECOVERING_MARKERS:
        if marker in lowered:
            return f"{state} (HTTP {status})"
    if status in RETRY_STATUS:
        return f"HTTP {status}"
    return None


def server_failure(message: str) -> tuple[str, str]:
    """The kind of a server-side failure and what the user should do about it."""
    lowered = message.lower()
    if "no space left on device" in lowered or "disk full" in lowered:
        return "disk_full", ("Solr's disk is full: free space on the file system of its data directory, restart "
                             "Solr, then run the same command with --resume (resume=True in Python).")
    if "outofmemoryerror" in lowered or "java heap space" in lowered:
        return "out_of_memory", ("Solr ran out of memory: restart it with a larger heap "
                                 "('neardup-solr solr start --heap 4g'), then run the same command with --resume (resume=True in Python).")
    if "indexwriter is closed" in lowered or "alreadyclosedexception" in lowered:
        return "writer_closed", ("Solr's index writer is closed after an earlier failure (a full disk or an "
                                 "exhausted heap): restart Solr, then run the same command with --resume (resume=True in Python).")
    return "server", "This is Solr's failure, not the record's: check Solr's log, then run the same command with --resume (resume=True in Python)."


def server_error(url: str, status: int, solr_message: str) -> SolrServerError:
    """The error for a 5xx that waiting will not cure: what failed, and the way out."""
    kind, advice = server_failure(solr_message)
    return SolrServerError(
        f"Solr at {url} failed on its side (HTTP {status}: {solr_message}). {advice}",
        status=status, kind=kind,
    )


def timeout_error(url: str, timeout: float, attempts: int, seconds: float) -> SolrTimeoutError:
    """Solr took longer than the timeout: not the same as Solr being down, so not "start it"."""
    what = (f"timed out: Solr at {url} did not answer within {timeout:g} s per request ({attempts} "
            f"attempt(s) over {seconds:.1f} s). If Solr is busy or the request is large, give it more time "
            "with a larger timeout")
    tail = "; if it never answers, check its log and that the URL names the right host and port."
    return SolrTimeoutError(f"{what} (SolrClient(timeout=SECONDS)){tail}", timeout,
                            cli_message=f"{what} (--timeout SECONDS){tail}")
