"""Free TCP ports on 127.0.0.1 for the JVMs the launchers start at ports they choose (the local SolrCloud's nodes
and ZooKeeper, whose ports must be known before they start and stay the same across restarts), and whether a
port can be bound.

A port the kernel hands out for ``bind(port 0)`` lies in its ephemeral range, the range it also takes the local
port of every outgoing connection from. Chosen that way and bound a few seconds later by a starting JVM, the port
was sometimes taken meanwhile by a connection of another process (on a busy machine, thousands a second): the
node then failed to start. These ports come from below that range, where the kernel never puts a connection.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

_EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
# Where to look when the range starts high enough: above the ports well-known services and Solr's own defaults
# (8983, 9983) use.
_LOWEST = 10000


def _ephemeral_start() -> int | None:
    try:
        return int(_EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def port_is_free(port: int, reuse_address: bool = False) -> bool:
    """Whether ``port`` on 127.0.0.1 can be bound: nothing bound to it, a connection in TIME_WAIT included, or with
    ``reuse_address`` as a server binds (SO_REUSEADDR: a connection in TIME_WAIT does not hold the port)."""
    with socket.socket() as probe:
        if reuse_address:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_ports(count: int, rng: random.Random | None = None) -> list[int]:
    """``count`` distinct free ports, below the kernel's ephemeral range where it leaves room for them (else
    ports the kernel picks, as before)."""
    rng = rng or random.Random()
    start = _ephemeral_start()
    if start is None or start - _LOWEST < 1000:
        return _kernel_ports(count)
    chosen: list[int] = []
    for _ in range(200 * count):
        port = rng.randrange(_LOWEST, start)
        if port not in chosen and port_is_free(port):
            chosen.append(port)
            if len(chosen) == count:
                return chosen
    return _kernel_ports(count)


def _kernel_ports(count: int) -> list[int]:
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()
