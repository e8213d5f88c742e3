"""Small network helpers for the tests: free ports and the kernel's socket tables (no ss/netstat needed)."""

from __future__ import annotations

import socket

from neardup_solr.solr.backends.ports import free_ports


def free_port() -> int:
    """A free port below the kernel's ephemeral range (neardup_solr/solr/backends/ports.py says why): a test
    binds it seconds later, by then another process's outgoing connection may hold a port the kernel picked."""
    return free_ports(1)[0]


def _tcp_rows(with_inode: bool = False):
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = open(table).read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            local_addr, local_port = cols[1].split(":")
            remote_port = int(cols[2].split(":")[1], 16)
            if with_inode:
                yield local_addr, int(local_port, 16), remote_port, cols[3], cols[9]
            else:
                yield local_addr, int(local_port, 16), remote_port, cols[3]


def _own_socket_inodes() -> set[str]:
    """Inodes of the sockets this process holds open."""
    import os

    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    return inodes


def _address(hex_addr: str) -> str:
    raw = bytes.fromhex(hex_addr)
    if len(raw) == 4:
        return socket.inet_ntop(socket.AF_INET, raw[::-1])
    return socket.inet_ntop(socket.AF_INET6, b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4)))


def listening_addresses(port: int) -> list[str]:
    """Addresses with a socket listening on ``port``."""
    return [_address(addr) for addr, lport, _, state in _tcp_rows() if state == "0A" and lport == port]


def client_connections(port: int) -> int:
    """Established connections *to* ``port`` that this process holds (the client side of each): a connection of
    another process (a CLI or service subprocess still winding down) is not the client under test's."""
    own = _own_socket_inodes()
    return sum(1 for _, _, rport, state, inode in _tcp_rows(with_inode=True)
               if state == "01" and rport == port and inode in own)
