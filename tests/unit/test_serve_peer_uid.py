"""Who is on the other end of a loopback connection: the socket table, read in blocks."""

from __future__ import annotations

import os
import socket

import pytest

from iris_voice.wyoming import trust as serve_trust
from iris_voice.wyoming.trust import _find_owner, _proc_address, peer_uid, tcp_peer_uid

HEADER = b"  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"


def _line(n: int, local: str, remote: str, uid: int) -> bytes:
    timers = "06 00000000:00000000 03:00000F3A 00000000"
    return f"{n:4d}: {local} {remote} {timers} {uid:5d} 0 0 3 0000000000000000\n".encode()


def _table(path, rows: int, hit_at: int, key: tuple[str, str], uid: int, *, last_newline: bool = True):
    lines = [HEADER]
    for n in range(rows):
        if n == hit_at:
            lines.append(_line(n, *key, uid))
        else:
            lines.append(_line(n, f"0100007F:{1024 + n:04X}", "0100007F:1F90", 999))
    data = b"".join(lines)
    path.write_bytes(data if last_newline else data.rstrip(b"\n"))


@pytest.mark.parametrize("block", [37, 150, 4096, 1 << 16])
@pytest.mark.parametrize("hit_at", [0, 1, 57, 199])
def test_the_owner_is_found_wherever_the_blocks_cut_the_table(tmp_path, monkeypatch, block, hit_at):
    # Blocks of every size cut the wanted line somewhere: at its start, in the key, in its uid.
    monkeypatch.setattr(serve_trust, "PROC_BLOCK", block)
    key = ("0100007F:D431", "0100007F:2A0B")
    table = tmp_path / "tcp"
    _table(table, 200, hit_at, key, 4321, last_newline=hit_at != 199)
    assert _find_owner(str(table), f" {key[0]} {key[1]} ".encode()) == 4321
    assert _find_owner(str(table), f" {key[1]} {key[0]} ".encode()) is None  # the server's end is not asked


def test_a_loopback_client_is_found_in_the_kernels_table():
    server = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(server.getsockname(), timeout=5)
    conn, peer = server.accept()
    try:
        here = conn.getsockname()
        assert tcp_peer_uid(peer, here) == os.getuid()
        assert peer_uid(conn, peer, here) == os.getuid()
        assert tcp_peer_uid(("127.0.0.1", 1), here) is None  # nobody there
        assert _proc_address("127.0.0.1", 8080, v6=False) in {"0100007F:1F90", "7F000001:1F90"}
    finally:
        for sock in (conn, client, server):
            sock.close()
