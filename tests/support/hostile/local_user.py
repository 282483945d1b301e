"""Hostile inputs for IRIS's local surfaces: the control socket, the CLI reading a
daemon's replies, the runtime directory and the config file.

Plain functions (and one small fake daemon) so the unit tests and an abuse benchmark
throw the same things. Nothing here knows IRIS's internals: it speaks bytes, sockets and
files.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

NOBODY = 65534
"""A uid that is not ours (``nobody``), for planting another user's files as root."""


def deep_json(depth: int, kind: str = "array") -> str:
    """Balanced JSON nested ``depth`` levels: ``[[[…]]]`` or ``{"a": {"a": … 1}}``."""
    if kind == "array":
        return "[" * depth + "]" * depth
    return '{"a": ' * depth + "1" + "}" * depth


def deep_request(depth: int, kind: str = "array", cmd: str = "ping") -> bytes:
    """One control request line whose extra field ``x`` nests ``depth`` levels deep."""
    return f'{{"cmd": "{cmd}", "x": {deep_json(depth, kind)}}}\n'.encode()


def unclosed_json(depth: int) -> str:
    """``depth`` opening brackets and nothing else: invalid, but a recursive parser dives in first."""
    return "[" * depth


def deep_toml(depth: int) -> str:
    """A config file whose ``llm.model`` is an inline array nested ``depth`` levels deep."""
    return "[llm]\nmodel = " + "[" * depth + "]" * depth + "\n"


def invalid_utf8_toml() -> bytes:
    """A config file that is valid TOML except for bytes that are not UTF-8."""
    return b'[llm]\nmodel = "qwen\xff\xfe2.5"\n'


GARBAGE_REPLIES = {
    "garbage": b"\x00\xff\x1b[2Jnot json at all\n",
    "non-object": b"[1, 2, 3]\n",
    "no-ok": b'{"state": "idle"}\n',
    "deep": deep_json(100_000).encode() + b"\n",
}
"""Reply lines a control client must turn into one clear error, by name."""

ENDLESS = None
"""The fake daemon's reply meaning: one line that never ends (until the client hangs up)."""


def open_idle_connections(path: Path, count: int) -> list[socket.socket]:
    """``count`` connections to the Unix socket at ``path`` that send nothing; close them yourself.

    A connection the server refuses is still returned (it reads an error line, then EOF).
    """
    conns = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            conns.append(s)
            s.settimeout(5.0)
            s.connect(str(path))
    except BaseException:
        for s in conns:
            s.close()
        raise
    return conns


@contextlib.contextmanager
def fake_daemon(path: Path, reply: bytes | None, trickle_s: float = 0.0) -> Iterator[Path]:
    """Serve ``path`` as a daemon that answers every request line with ``reply``.

    ``reply`` is sent as given (add the newline yourself); ``ENDLESS`` sends ``a`` without
    end, 64 KiB at a time (at most 64 MiB) until the client hangs up; with ``trickle_s``
    the reply goes one byte at a time with that pause between bytes. A thread, so a
    blocking client (the CLI) can be tested against it; stopped on exit.
    """
    stop = threading.Event()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(8)
    server.settimeout(0.05)

    def answer(conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):
            conn.settimeout(5.0)
            conn.recv(65536)  # the request line (the CLI sends it in one go)
            if reply is ENDLESS:
                chunk = b"a" * 65536
                for _ in range(1024):
                    if stop.is_set():
                        return
                    conn.sendall(chunk)
            elif trickle_s:
                for byte in reply or b"":
                    if stop.wait(trickle_s):
                        return
                    conn.sendall(bytes([byte]))
            else:
                conn.sendall(reply)

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            threading.Thread(target=answer, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=serve, name="fake-daemon", daemon=True)
    thread.start()
    try:
        yield path
    finally:
        stop.set()
        thread.join(5)
        server.close()
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def read_umask() -> int:
    """The process's umask, read from /proc without changing it (``os.umask`` can only swap it)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("Umask:"):
            return int(line.split()[1], 8)
    raise RuntimeError("no Umask line in /proc/self/status (Linux 4.7 or later has one)")


def plant_symlink(link: Path, target: Path) -> Path:
    """Put a symlink at ``link`` pointing at ``target`` (what an attacker leaves in /tmp)."""
    os.symlink(target, link)
    return link


def plant_foreign_dir(path: Path, uid: int = NOBODY, mode: int = 0o700) -> Path:
    """A directory at ``path`` owned by another user (needs root: chown)."""
    path.mkdir(mode=mode)
    os.chmod(path, mode)
    os.chown(path, uid, uid)
    return path
