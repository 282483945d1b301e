"""``iris serve`` around the server: the allow-list check, the token file, zeroconf, finished
timers with no speaker, and the headless hub's lifecycle (READY, status, SIGTERM-style stop)."""

from __future__ import annotations

import asyncio
import dataclasses
import ipaddress
import socket
import sys

import pytest
from wyoming.asr import Transcript
from wyoming.client import AsyncTcpClient

from iris_voice.app.assembly import Engines
from iris_voice.app.control import request
from iris_voice.app.headless import Hub
from iris_voice.config import Config, LlmConfig, ServeConfig, ToolsConfig
from iris_voice.errors import ConfigError
from iris_voice.events import TimerFinished
from iris_voice.wyoming.timer_router import TimerRouter
from iris_voice.wyoming.trust import load_token, peer_allowed
from tests.support.fakes import ScriptedBackend
from tests.support.fakes_audio import FakeStt, FakeTts, FakeVad
from tools.testbed.servers import free_port

LAN = [ipaddress.ip_network("192.168.1.0/24"), ipaddress.ip_network("fd00::/8")]


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("127.0.0.1", True),  # loopback always
        ("127.8.9.10", True),
        ("::1", True),
        ("192.168.1.77", True),
        ("::ffff:192.168.1.77", True),  # IPv4 seen through an IPv6 socket
        ("fd00::12", True),
        ("192.168.2.1", False),
        ("10.0.0.1", False),
        ("::ffff:10.0.0.1", False),
        ("fe80::1%eth0", False),
        ("not-an-address", False),
        (None, True),  # a Unix socket
    ],
)
def test_allow_list(host, allowed):
    assert peer_allowed(host, LAN) is allowed


def test_no_allow_list_lets_everyone_in():
    assert peer_allowed("10.0.0.1", []) and peer_allowed("2001:db8::1", [])


def test_token_file(tmp_path):
    f = tmp_path / "token"
    f.write_text("  abc123-kitchen-token  \nsecond line\n")
    assert load_token(ServeConfig(token_file=str(f))) == "abc123-kitchen-token"
    f.write_text("abc123\n")
    with pytest.raises(ConfigError) as err:
        load_token(ServeConfig(token_file=str(f)))
    assert "shorter than 16 characters" in err.value.problems[0]
    f.write_text("\n")
    with pytest.raises(ConfigError) as err:
        load_token(ServeConfig(token_file=str(f)))
    assert err.value.problems[0].startswith("serve.token_file:")
    with pytest.raises(ConfigError):
        load_token(ServeConfig(token_file=str(tmp_path / "missing")))


def test_bad_allow_entries_and_uris_name_their_key():
    from iris_voice.config import parse

    bad_ones = (
        {"allow": ["192.168.1.0/33"]}, {"uri": "http://x:1"}, {"uri": "tcp://127.0.0.1"}, {"token": "a"},
    )  # fmt: skip
    for bad in bad_ones:
        with pytest.raises(ConfigError) as err:
            parse({"serve": bad})
        assert err.value.problems[0].startswith(f"serve.{next(iter(bad))}")


def test_zeroconf_is_not_advertised_for_loopback_and_the_record_is_well_formed():
    from iris_voice.wyoming.advert import SERVICE_TYPE, service_info, why_not

    assert "loopback" in (why_not(ServeConfig(zeroconf=True)) or "")
    assert why_not(ServeConfig(zeroconf=False)) == "serve.zeroconf is off"
    lan = ["192.168.1.0/24"]
    wide = ServeConfig(uri="tcp://0.0.0.0:10799", zeroconf=True, allow=lan, name="IRIS kitchen")
    assert why_not(wide) is None
    info = service_info(wide, "192.168.1.20")
    assert info.type == SERVICE_TYPE and info.name == f"IRIS kitchen.{SERVICE_TYPE}"
    assert info.port == 10799 and info.parsed_addresses() == ["192.168.1.20"]
    assert info.properties[b"program"] == b"iris"


def _multicast_reason() -> str | None:
    """Why mDNS cannot work here, or None."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("224.0.0.251", 5353))
            if probe.getsockname()[0].startswith("127."):
                return "the only route to the mDNS group is loopback"
    except OSError as exc:
        return f"no route to the mDNS group 224.0.0.251: {exc}"
    return None


async def test_zeroconf_advert_is_found_by_zeroconfs_own_browser():
    reason = _multicast_reason()
    if reason:
        print(f"\nskipping the zeroconf browse test: {reason}", file=sys.stderr)
        pytest.skip(reason)
    from zeroconf.asyncio import AsyncServiceInfo, AsyncZeroconf

    from iris_voice.wyoming.advert import SERVICE_TYPE, advertise

    port = free_port()
    name = f"IRIS test {port}"
    cfg = ServeConfig(uri=f"tcp://0.0.0.0:{port}", zeroconf=True, allow=["10.0.0.0/8"], name=name)
    advert, state = await advertise(cfg)
    if advert is None:
        print(f"\nskipping the zeroconf browse test: {state}", file=sys.stderr)
        pytest.skip(state)
    browser = AsyncZeroconf()
    try:
        info = AsyncServiceInfo(SERVICE_TYPE, f"{name}.{SERVICE_TYPE}")
        found = await info.async_request(browser.zeroconf, 3000)
        assert found, "the advertised service was not resolved"
        assert info.port == port and info.properties[b"program"] == b"iris"
    finally:
        await browser.async_close()
        await advert.close()


def _finished(timer_id: int) -> TimerFinished:
    return TimerFinished(timer_id, "timer", "tea", 0.0, False, "Your tea timer is done.")


async def test_a_timer_with_nowhere_to_be_said_is_logged_and_kept(caplog):
    router = TimerRouter(keep=2)
    for timer_id in (1, 2, 3):
        router.deliver(_finished(timer_id))
    assert "no speaker or satellite" in caplog.text and "Your tea timer is done." in caplog.text
    assert [t["id"] for t in router.unannounced] == [2, 3]  # the newest `keep`
    kitchen = dataclasses.replace(_finished(4), origin="kitchen")
    router.on_event(kitchen)  # a satellite's timer is its part's to ring, not kept here
    router.on_event(_finished(5))
    assert router._queue.qsize() == 1 and router._queue.get_nowait().timer_id == 5


def _hub(tmp_path, monkeypatch) -> tuple[Hub, socket.socket, int]:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(str(tmp_path / "notify"))
    notify.setblocking(False)
    monkeypatch.setenv("NOTIFY_SOCKET", str(tmp_path / "notify"))
    port = free_port()
    cfg = Config(
        llm=LlmConfig(host=f"http://127.0.0.1:{free_port()}", connect_timeout_s=0.5),
        tools=ToolsConfig(timezone="UTC", timers_db=str(tmp_path / "timers.db")),
        serve=ServeConfig(uri=f"tcp://127.0.0.1:{port}"),
    )
    return Hub(cfg, Engines(FakeStt(), FakeTts(), FakeVad(), None), ScriptedBackend()), notify, port


async def test_headless_hub_serves_reports_and_stops_cleanly(tmp_path, monkeypatch):
    hub, notify, port = _hub(tmp_path, monkeypatch)
    task = asyncio.create_task(hub.run())
    loop = asyncio.get_running_loop()
    ready = await asyncio.wait_for(loop.sock_recv(notify, 4096), 30)
    assert ready.startswith(b"READY=1") and str(port).encode() in ready
    async with AsyncTcpClient("127.0.0.1", port) as client:
        await client.write_event(Transcript(text="set a tea timer for 2 seconds").event())
        async with asyncio.timeout(10):
            answer = await client.read_event()
        sock = tmp_path / "run" / "iris" / "control.sock"
        status = await asyncio.to_thread(request, "status", 10.0, sock)
        asked = await asyncio.to_thread(request, "ask", 10.0, sock, text="what time is it")
        for _ in range(100):  # the timer fires on the hub: nobody to say it to
            if hub.router.unannounced:
                break
            await asyncio.sleep(0.05)
        timers = await asyncio.to_thread(request, "status", 10.0, sock)
    hub.request_stop()
    assert await asyncio.wait_for(task, 10) == 0
    assert answer is not None and answer.type == "handled", answer
    assert status["mode"] == "serve" and status["serve"]["uri"] == f"tcp://127.0.0.1:{port}"
    assert len(status["serve"]["clients"]) == 1
    assert asked["ok"] and asked["trace"]["execution_path"] == "fast" and ":" in asked["trace"]["reply"]
    assert status["llm"]["reachable"] is False
    assert "tea" in timers["timers"]["unannounced"][0]["message"]
    assert b"STOPPING=1" in notify.recv(4096)
    assert not sock.exists()
    with pytest.raises(OSError):  # the port is free again, nothing listens
        socket.create_connection(("127.0.0.1", port), timeout=1).close()


def test_iris_serve_refuses_a_wide_uri_without_allow_or_token(tmp_path, monkeypatch, capsys):
    from iris_voice.cli.main import main
    from iris_voice.errors import EXIT_CONFIG

    monkeypatch.setenv("IRIS_CONFIG", str(tmp_path / "none.toml"))
    (tmp_path / "none.toml").write_text("")
    assert main(["serve", "--uri", "tcp://0.0.0.0:10799"]) == EXIT_CONFIG
    err = capsys.readouterr().err
    assert "serve.uri: tcp://0.0.0.0:10799 is reachable from other machines" in err and "serve.allow" in err


async def test_the_desktop_daemon_serves_the_same_parts_when_enabled(tmp_path, monkeypatch):
    from iris_voice.app.daemon import Daemon
    from tests.support.fakes_audio import SILENCE, FakeSink, FakeWake, ScriptSource, frames

    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    port = free_port()
    cfg = Config(
        llm=LlmConfig(host=f"http://127.0.0.1:{free_port()}", connect_timeout_s=0.5),
        tools=ToolsConfig(timezone="UTC", timers_db=str(tmp_path / "timers.db")),
        serve=ServeConfig(enabled=True, uri=f"tcp://127.0.0.1:{port}"),
    )
    engines = Engines(FakeStt(), FakeTts(), FakeVad(), FakeWake())
    daemon = Daemon(cfg, engines, ScriptSource(frames(SILENCE, 1.0), tail_s=600), FakeSink(speed=50))
    task = asyncio.create_task(daemon.run())
    try:
        for _ in range(200):  # until the service listens
            try:
                async with AsyncTcpClient("127.0.0.1", port) as client:
                    await client.write_event(Transcript(text="what time is it").event())
                    async with asyncio.timeout(10):
                        answer = await client.read_event()
                    status = daemon.status()
                    # a spoken turn holds the conversation: a client's turn waits for it
                    async with daemon.pipeline.speech_lock:
                        await client.write_event(Transcript(text="what time is it").event())
                        with pytest.raises(TimeoutError):
                            async with asyncio.timeout(0.5):
                                await client.read_event()
                    async with asyncio.timeout(10):
                        waited = await client.read_event()
                break
            except OSError:
                await asyncio.sleep(0.05)
        else:
            raise AssertionError("the daemon never served")
    finally:
        daemon.request_stop()
        assert await asyncio.wait_for(task, 10) == 0
    assert answer is not None and answer.type == "handled" and ":" in answer.data["text"]
    assert waited is not None and waited.type == "handled"
    assert status["serve"]["uri"] == f"tcp://127.0.0.1:{port}" and len(status["serve"]["clients"]) == 1
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
