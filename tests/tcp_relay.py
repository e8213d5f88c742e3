"""A TCP relay, run inside a network namespace by tests/netlab.py: accepts on ADDRESS:PORT and forwards each
connection to 127.0.0.1:TARGET_PORT. Solr's embedded Jetty binds the loopback only, and a namespace's loopback is
its own; the relay makes the node reachable on the namespace's address, where links can be cut.

    python tcp_relay.py 10.213.7.3 8983 8983 /path/impairment.json

The optional JSON file (``{"delay_ms": 200, "loss": 0.1}``, read again for every connection and chunk) makes the
link bad where the kernel has no netem qdisc: every chunk forwarded in either direction waits ``delay_ms``, and
a share ``loss`` of new connections is reset at once (what a lost handshake or a dropped connection looks like
to the peer). It stands in for netem's delay and loss on this node's inbound traffic.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
from pathlib import Path


def _impairment(path: Path | None) -> tuple[float, float]:
    if path is None:
        return 0.0, 0.0
    try:
        spec = json.loads(path.read_text())
    except (OSError, ValueError):
        return 0.0, 0.0
    return float(spec.get("delay_ms", 0)) / 1000.0, float(spec.get("loss", 0))


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, control: Path | None) -> None:
    try:
        while data := await reader.read(65536):
            delay, _ = _impairment(control)
            if delay:
                await asyncio.sleep(delay)
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


async def main(address: str, port: int, target: int, control: Path | None) -> None:
    async def handle(reader, writer):
        _, loss = _impairment(control)
        if loss and random.random() < loss:
            writer.transport.abort()  # a reset, as a dropped connection looks
            return
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", target)
        except OSError:
            writer.close()
            return
        await asyncio.gather(_pipe(reader, up_writer, control), _pipe(up_reader, writer, control))

    server = await asyncio.start_server(handle, address, port, reuse_address=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]),
                     Path(sys.argv[4]) if len(sys.argv) > 4 else None))
