"""A TCP relay, run inside a network namespace by tests/netlab.py: accepts on ADDRESS:PORT and forwards each
connection to 127.0.0.1:TARGET_PORT. Solr's embedded Jetty binds the loopback only, and a namespace's loopback is
its own; the relay makes the node reachable on the namespace's address, where links can be cut.

    python tcp_relay.py 10.213.7.3 8983 8983
"""

from __future__ import annotations

import asyncio
import sys


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


async def main(address: str, port: int, target: int) -> None:
    async def handle(reader, writer):
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", target)
        except OSError:
            writer.close()
            return
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))

    server = await asyncio.start_server(handle, address, port, reuse_address=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
