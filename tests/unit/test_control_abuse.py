"""The control socket and its client under attack: deep JSON, silent, idle and surplus
connections, and daemons that answer garbage.

The server side runs a real ``ControlServer`` on a temporary socket; the client side runs
``iris`` (``main([...])``) against a fake daemon in a thread. The hostile inputs come
from ``tests/support/hostile/local_user.py``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import stat
import time

import pytest

from iris_voice.app.control import ControlServer, request
from iris_voice.app.runtime import runtime_dir
from iris_voice.cli.main import main
from iris_voice.errors import Code, IrisError
from tests.support.hostile.local_user import (
    ENDLESS,
    GARBAGE_REPLIES,
    deep_json,
    deep_request,
    fake_daemon,
    open_idle_connections,
    read_umask,
    unclosed_json,
)


@pytest.fixture
def sock_path(monkeypatch, tmp_path):
    """The control socket's path in a private runtime directory of the test's own."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    return runtime_dir() / "control.sock"


async def _ping(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bytes:
    writer.write(b'{"cmd": "ping"}\n')
    await writer.drain()
    return await asyncio.wait_for(reader.readline(), 5)


async def ping(req):
    return {}


OK = b'{"ok": true}\n'


async def _ask(path) -> bytes:
    """One ``ping`` on a connection of its own (closed after), with a generous deadline."""
    reader, writer = await asyncio.open_unix_connection(str(path))
    try:
        writer.write(b'{"cmd": "ping"}\n')
        await writer.drain()
        return await asyncio.wait_for(reader.readline(), 30)
    finally:
        writer.close()


async def _until(condition, what: str) -> None:
    """Wait (up to 30 s) until ``condition()`` holds: the server admits connections in its own time."""
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, f"still not {what}"
        await asyncio.sleep(0.01)


async def _closed_for_a_newer_one(reader: asyncio.StreamReader) -> None:
    """The connection was told it made way for a newer one, then closed."""
    answer = json.loads(await asyncio.wait_for(reader.readline(), 30))
    assert answer["ok"] is False and answer["code"] == Code.DAEMON_ERROR, answer
    assert answer["error"].startswith("closed to serve a newer control connection"), answer
    assert await asyncio.wait_for(reader.read(), 30) == b""


@pytest.fixture
async def serve(sock_path):
    """Start a control server that knows ``ping`` (``await serve(**options)``); closed after the test."""
    servers = []

    async def start(**options) -> ControlServer:
        srv = ControlServer({"ping": ping}, **options)
        servers.append(srv)
        await srv.start()
        return srv

    yield start
    for srv in servers:
        await srv.close()


@pytest.fixture
async def server(serve):
    """A control server closing clients silent for 0.2 s and serving at most 4 at once."""
    return await serve(idle_timeout=0.2, max_clients=4)


@pytest.mark.parametrize(
    "line",
    [
        deep_request(5_000),
        deep_request(100_000),
        deep_request(100_000, "object"),
        unclosed_json(100_000).encode(),
    ],
    ids=["array-5k", "array-100k", "object-100k", "unclosed-100k"],
)
async def test_deep_json_gets_an_error_and_the_server_keeps_answering(serve, sock_path, line):
    await serve()
    reader, writer = await asyncio.open_unix_connection(str(sock_path))
    try:
        writer.write(line.rstrip(b"\n") + b"\n")
        await writer.drain()
        answer = await asyncio.wait_for(reader.readline(), 5)
        assert answer.startswith(b'{"ok": false, "error": "bad request: '), answer[:200]
        assert b"nested more than" in answer
        assert await _ping(reader, writer) == b'{"ok": true}\n'  # the same connection still works
    finally:
        writer.close()
    reader, writer = await asyncio.open_unix_connection(str(sock_path))
    assert await _ping(reader, writer) == b'{"ok": true}\n'
    writer.close()


async def test_nesting_up_to_the_limit_is_still_a_request(server, sock_path):
    from iris_voice.safejson import MAX_DEPTH

    reader, writer = await asyncio.open_unix_connection(str(sock_path))
    writer.write(deep_request(MAX_DEPTH - 1))  # the request object is one more level
    await writer.drain()
    assert await asyncio.wait_for(reader.readline(), 5) == b'{"ok": true}\n'
    writer.close()


async def test_a_silent_client_is_closed_after_the_idle_timeout(server, sock_path):
    for greeting in (b"", b'{"cmd": "pi'):  # nothing at all, or a line that never ends
        reader, writer = await asyncio.open_unix_connection(str(sock_path))
        writer.write(greeting)
        start = time.monotonic()
        assert await asyncio.wait_for(reader.read(), 5) == b""  # closed by the server
        assert 0.15 < time.monotonic() - start < 3
        writer.close()


async def test_connections_over_the_cap_are_refused_and_later_ones_served(serve, sock_path, caplog):
    """With every slot busy, none idle long enough to give way and no room to wait: refused."""
    server = await serve(idle_timeout=30, max_clients=4, evict_after=30, max_waiting=0)
    caplog.set_level(logging.INFO, "iris_voice.app.control")
    held = [await asyncio.open_unix_connection(str(sock_path)) for _ in range(server.max_clients)]
    for reader, writer in held:  # each is being served: counted against the cap
        assert await _ping(reader, writer) == b'{"ok": true}\n'
    extra = await asyncio.to_thread(open_idle_connections, sock_path, 5)
    try:
        for s in extra:
            got = await asyncio.to_thread(s.recv, 4096)
            assert got == b'{"ok": false, "error": "too many control connections; try again"}\n'
            assert await asyncio.to_thread(s.recv, 4096) == b""
    finally:
        for s in extra:
            s.close()
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "refusing the excess" in warnings[0].getMessage()
    for _, writer in held:
        writer.close()
    for _ in range(100):  # the server notices the closes within a loop iteration or two
        reader, writer = await asyncio.open_unix_connection(str(sock_path))
        answer = await _ping(reader, writer)
        writer.close()
        if answer == b'{"ok": true}\n':
            break
        await asyncio.sleep(0.02)
    assert answer == b'{"ok": true}\n'
    # the 5 extra ones, plus any retry above that came before the server saw the closes
    refused = re.search(r"the burst is over; (\d+) connections were refused", caplog.text)
    assert refused and int(refused.group(1)) >= 5, caplog.text


async def test_a_full_house_of_idle_connections_gives_way_to_each_new_command(serve, sock_path):
    """Idle connections never lock the user out: each newcomer is answered, and closes the
    oldest connection without a complete request (silent or half a line), then the one idle
    longest after its request."""
    server = await serve(max_clients=4, idle_timeout=30, first_line_timeout=30, evict_after=0)
    done = await asyncio.open_unix_connection(str(sock_path))
    assert await _ping(*done) == OK  # asked once, then idle
    silent = await asyncio.open_unix_connection(str(sock_path))
    half = await asyncio.open_unix_connection(str(sock_path))
    half[1].write(b'{"cmd": "pi')
    await half[1].drain()
    silent_too = await asyncio.open_unix_connection(str(sock_path))
    await _until(lambda: server.connections == 4, "serving the four held connections")
    newcomers = []
    try:
        for held in (silent, half, silent_too, done):  # the order they give way in
            newcomers.append(await asyncio.open_unix_connection(str(sock_path)))
            assert await _ping(*newcomers[-1]) == OK  # every slot was taken, yet it is answered
            await _closed_for_a_newer_one(held[0])
            assert server.connections <= server.max_clients
    finally:
        for _, writer in (silent, half, silent_too, done, *newcomers):
            writer.close()


async def test_a_burst_past_the_cap_waits_for_slots_that_idle_connections_give_up(serve, sock_path):
    """Forty commands at once while four idle connections hold every slot: the idle ones give
    way once idle past ``evict_after``, the commands wait their turn, and all are answered
    (they were refused before; none of them is ever closed for another)."""
    server = await serve(max_clients=4, idle_timeout=30, first_line_timeout=30)
    hogs = [await asyncio.open_unix_connection(str(sock_path)) for _ in range(4)]
    try:
        await _until(lambda: server.connections == 4, "serving the four idle connections")
        assert await asyncio.gather(*(_ask(sock_path) for _ in range(40))) == [OK] * 40
        for reader, _ in hogs:
            await _closed_for_a_newer_one(reader)
    finally:
        for _, writer in hogs:
            writer.close()


async def test_the_first_request_is_due_soon_even_when_later_ones_may_wait(serve, sock_path):
    """``first_line_timeout`` closes a connection that sends no complete first line, silent
    or half a request, however long ``idle_timeout`` lets it pause between requests."""
    await serve(idle_timeout=30, first_line_timeout=0.2)
    for greeting in (b"", b'{"cmd": "pi'):
        reader, writer = await asyncio.open_unix_connection(str(sock_path))
        try:
            writer.write(greeting)
            assert await asyncio.wait_for(reader.read(), 30) == b""  # closed by the server
        finally:
            writer.close()


async def test_the_socket_is_0600_and_the_umask_never_changes_while_others_run(sock_path):
    """The umask is process-wide: a coroutine (or thread) running while the server starts
    must never see it changed. The old code awaited with umask 0177 in force."""
    old = os.umask(0o022)
    seen: set[int] = set()
    done = False

    async def watch():
        while not done:
            seen.add(read_umask())
            await asyncio.sleep(0)

    try:
        watcher = asyncio.create_task(watch())
        await asyncio.sleep(0)
        srv = ControlServer({"ping": ping})
        await srv.start()
        done = True
        await watcher
        assert seen == {0o022}, [oct(m) for m in seen]
        assert read_umask() == 0o022
        assert stat.S_IMODE(os.stat(sock_path).st_mode) == 0o600
        await srv.close()
    finally:
        os.umask(old)


async def test_a_line_over_one_mebibyte_is_answered_then_closed(server, sock_path):
    reader, writer = await asyncio.open_unix_connection(str(sock_path))
    writer.write(b'{"cmd": "ping", "x": "' + b"a" * (1 << 20) + b'"}\n')
    answer = await asyncio.wait_for(reader.readline(), 5)
    assert answer.startswith(b'{"ok": false, "error": "bad request: longer than')
    writer.close()


# --- the client: the CLI against a daemon that answers garbage ---------------------------


@pytest.mark.parametrize("name", [*GARBAGE_REPLIES, "endless"])
def test_the_cli_turns_a_garbage_reply_into_one_line_and_exit_76(name, sock_path, capsys):
    reply = ENDLESS if name == "endless" else GARBAGE_REPLIES[name]
    with fake_daemon(sock_path, reply):
        start = time.monotonic()
        assert main(["listen"]) == 76
        assert time.monotonic() - start < 9  # the endless line is cut at 4 MiB, not at the timeout
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("iris: the answer to 'listen' from "), err
    assert "Traceback" not in err[0] and "\x1b" not in err[0]


def test_the_cli_turns_a_reply_without_its_fields_into_one_line(sock_path, capsys):
    with fake_daemon(sock_path, b'{"ok": true, "state": "idle"}\n'):
        assert main(["status"]) == 76
        assert main(["timers"]) == 76
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and all(line.startswith("iris: IRIS's answer to '") for line in err), err


def test_the_client_gives_up_at_its_deadline_on_a_trickle(sock_path):
    """One byte every 50 ms never finishes a line: the timeout covers the whole reply."""
    with fake_daemon(sock_path, b"x" * 200 + b"\n", trickle_s=0.05), pytest.raises(IrisError) as err:
        request("listen", timeout=0.5, path=sock_path)
    assert err.value.code == Code.DAEMON_TIMEOUT


def test_tools_call_with_deep_arguments_is_one_line_and_exit_2(capsys):
    assert main(["tools", "call", "calculator", deep_json(30_000, "object")]) == 2
    assert main(["tools", "call", "calculator", unclosed_json(30_000)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == ["iris tools call: arguments are not valid JSON: nested more than 32 levels deep"] * 2
