"""The launchers' free ports (neardup_solr/solr/backends/ports.py): below the kernel's ephemeral range, distinct,
free; the kernel's own choice where that range leaves no room below it."""

from __future__ import annotations

import random
import socket

from neardup_solr.solr.backends import ports


def _range_file(tmp_path, monkeypatch, text: str) -> None:
    path = tmp_path / "ip_local_port_range"
    path.write_text(text)
    monkeypatch.setattr(ports, "_EPHEMERAL_RANGE", path)


def test_ports_are_distinct_free_and_below_the_ephemeral_range(tmp_path, monkeypatch):
    _range_file(tmp_path, monkeypatch, "32768\t60999\n")
    chosen = ports.free_ports(5)
    assert len(set(chosen)) == 5 and all(10000 <= port < 32768 for port in chosen)
    for port in chosen:
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))  # free indeed


def test_a_port_in_use_is_never_chosen(tmp_path, monkeypatch):
    _range_file(tmp_path, monkeypatch, "11000 60999")  # 10000-10999: a thousand candidates
    busy = set(range(10000, 10990))
    monkeypatch.setattr(ports, "port_is_free", lambda port: port not in busy)
    for seed in range(20):
        chosen = ports.free_ports(3, random.Random(seed))
        assert len(set(chosen)) == 3 and not busy & set(chosen) and all(10990 <= p < 11000 for p in chosen)


def test_without_room_below_the_range_or_without_the_file_the_kernel_chooses(tmp_path, monkeypatch):
    _range_file(tmp_path, monkeypatch, "10500 60999")
    assert all(port >= 10500 for port in ports.free_ports(3))
    monkeypatch.setattr(ports, "_EPHEMERAL_RANGE", tmp_path / "absent")
    assert len(set(ports.free_ports(3))) == 3


def test_a_port_in_time_wait_is_taken_unless_bound_as_a_server_binds():
    with socket.socket() as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        client = socket.create_connection(("127.0.0.1", port))
        accepted, _ = server.accept()
        accepted.close()  # the server side closes first: its end of the connection waits in TIME_WAIT
        client.close()
    assert not ports.port_is_free(port)
    assert ports.port_is_free(port, reuse_address=True)
