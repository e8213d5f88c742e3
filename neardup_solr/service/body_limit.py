"""The request body limit for bodies without a ``Content-Length`` (``Transfer-Encoding: chunked``).

A ``Content-Length`` over the limit is refused before anything is read (the app's guard), and the server
holds the client to the length it declared. A chunked body declares nothing, so this ASGI middleware reads it
first, counting, and answers 413 as soon as the count passes the limit, without reading the rest: the app
never holds more than the limit and a client cannot get around it by leaving the length out. Under the limit
the app receives the body as one message, as if it had been sent with a length.

Over the limit, up to :data:`DRAIN_BYTES` more of the body are read and thrown away before the 413 is sent: a
server that closes a connection with unread data makes the client's system reset it, and the reset can discard
the answer before the client reads it. A longer body is cut off there.

Why read ahead instead of counting inside the app's own reads: an exception raised from ``receive`` reaches
FastAPI's body parsing wrapped by the task groups of the middleware in between, and comes out as a 400.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable, MutableMapping

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

DRAIN_BYTES = 1 << 20


def too_large_detail(size: int, limit: int, *, streamed: bool = False) -> str:
    """The 413's message: how much, the limit, and what to do."""
    amount = f"more than {limit:,} bytes" if streamed else f"{size:,} bytes"
    return (f"the request body ({amount}) is over this service's limit of {limit:,} bytes; "
            "send it in smaller parts")


class ChunkedBodyLimit:
    """Reads a request body that has no ``Content-Length`` up to ``max_body_bytes``; over that, answers with
    ``too_large(detail)`` (an ASGI response) and closes the request. Other requests pass untouched."""

    def __init__(self, app: ASGIApp, max_body_bytes: int, too_large: Callable[[str], ASGIApp]) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.too_large = too_large

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not any(name == b"transfer-encoding" for name, _ in scope.get("headers", ())):
            # A Content-Length body (checked by the guard, held to by the server), or no body at all.
            await self.app(scope, receive, send)
            return
        parts: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away: let the app see that
                await self.app(scope, _replay(None, message, receive), send)
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                response = self.too_large(too_large_detail(size, self.max_body_bytes, streamed=True))
                more = message.get("more_body", False)
                discarded = 0
                while more and discarded < DRAIN_BYTES:
                    message = await receive()
                    discarded += len(message.get("body", b""))
                    more = message["type"] == "http.request" and message.get("more_body", False)
                await response(scope, receive, send)
                return
            parts.append(chunk)
            if not message.get("more_body", False):
                break
        body = {"type": "http.request", "body": b"".join(parts), "more_body": False}
        await self.app(scope, _replay(body, None, receive), send)


def _replay(body: Message | None, other: Message | None, receive: Receive) -> Receive:
    """A ``receive`` that gives the message read ahead once, then the client's own ``receive``."""
    pending = [m for m in (body, other) if m is not None]

    async def replayed() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()

    return replayed
