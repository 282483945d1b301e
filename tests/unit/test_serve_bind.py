"""``serve.uri`` is tried before anything is loaded: ``iris check-config`` binds a serving
configuration's address and releases it, ``iris serve`` and ``iris run`` with
``serve.enabled`` try it before their speech models load, and a bind that fails anyway is
a ``serve.uri`` line with exit 78, never a traceback."""

from __future__ import annotations

import asyncio
import os
import socket
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from iris_voice.app import checks
from iris_voice.app.assembly import Engines
from iris_voice.app.headless import Hub
from iris_voice.app.runtime import InstanceLock
from iris_voice.cli.main import main
from iris_voice.config import Config, LlmConfig, ServeConfig, ToolsConfig
from iris_voice.errors import EXIT_CONFIG, ConfigError
from tests.support.fakes import ScriptedBackend
from tests.support.fakes_audio import FakeStt, FakeTts, FakeVad
from tools.testbed.servers import free_port

QUIET = '[audio]\nend_of_turn = "silence"\n'
"""Leaves out the Smart Turn model, which lives in a cache, not the venv."""


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    monkeypatch.delenv("IRIS_CONFIG", raising=False)
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))


@pytest.fixture
def listening() -> Iterator[socket.socket]:
    """A program listening on a loopback port (without SO_REUSEADDR: the bind is plain)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock


def check_config(tmp_path: Path, capsys: pytest.CaptureFixture[str], toml: str) -> tuple[int, list[str]]:
    path = tmp_path / "config.toml"
    path.write_text(QUIET + toml)
    code = main(["check-config", str(path)])
    return code, capsys.readouterr().out.splitlines()


def serving(uri: str, enabled: bool = True) -> str:
    return f'[serve]\nenabled = {str(enabled).lower()}\nuri = "{uri}"\n'


# -- iris check-config ----------------------------------------------------------------------


def test_check_config_refuses_a_port_in_use_and_accepts_it_once_free(tmp_path, capsys, listening):
    port = listening.getsockname()[1]
    uri = f"tcp://127.0.0.1:{port}"
    code, lines = check_config(tmp_path, capsys, serving(uri))
    assert code == EXIT_CONFIG, lines
    assert lines == [f"serve.uri: cannot listen at {uri}: {checks.IN_USE}"], lines
    listening.close()
    assert check_config(tmp_path, capsys, serving(uri)) == (0, ["ok"])


def test_check_config_accepts_a_free_port(tmp_path, capsys):
    assert check_config(tmp_path, capsys, serving(f"tcp://127.0.0.1:{free_port()}")) == (0, ["ok"])


def test_check_config_tries_the_port_only_when_the_config_serves(tmp_path, capsys, listening):
    """Without serve.enabled, ``iris run`` does not serve; a one-shot command never binds
    (it may run while IRIS itself holds the port)."""
    uri = f"tcp://127.0.0.1:{listening.getsockname()[1]}"
    assert check_config(tmp_path, capsys, serving(uri, enabled=False)) == (0, ["ok"])
    cfg = Config(
        serve=ServeConfig(enabled=True, uri=uri), tools=ToolsConfig(timers_db=str(tmp_path / "t.db"))
    )
    checks.check(cfg, speech=False)  # build_app's call: the parts, no bind
    with pytest.raises(ConfigError) as err:
        checks.check(cfg, speech=False, serving=True)
    assert err.value.problems == [f"serve.uri: cannot listen at {uri}: {checks.IN_USE}"]


def test_check_config_for_iris_serve_tries_the_port_whatever_serve_enabled_says(tmp_path, capsys, listening):
    """``iris serve`` listens on ``serve.uri`` with or without ``serve.enabled``: checked
    for it (``--serve``), a port in use is found before the service starts and exits 78."""
    uri = f"tcp://127.0.0.1:{listening.getsockname()[1]}"
    path = tmp_path / "config.toml"
    path.write_text(QUIET + serving(uri, enabled=False))
    assert main(["check-config", "--serve", str(path)]) == EXIT_CONFIG
    assert capsys.readouterr().out.splitlines() == [f"serve.uri: cannot listen at {uri}: {checks.IN_USE}"]
    listening.close()
    assert main(["check-config", "--serve", str(path)]) == 0
    assert capsys.readouterr().out.splitlines() == ["ok"]


def test_an_address_of_another_machine_is_named(tmp_path, capsys):
    uri = f"tcp://192.0.2.1:{free_port()}"  # TEST-NET-1: no machine has it
    toml = serving(uri) + 'allow = ["192.0.2.0/24"]\n'
    code, lines = check_config(tmp_path, capsys, toml)
    assert code == EXIT_CONFIG and lines == [
        f"serve.uri: cannot listen at {uri}: 192.0.2.1 is not an address of this machine"
    ]


CANNOT = "serve.uri: the socket {sock} cannot be created ({why}"


@pytest.mark.parametrize(
    ("where", "problem"),
    [
        ("/proc/iris-x/w.sock", CANNOT.format(sock="/proc/iris-x/w.sock", why="/proc/iris-x: ")),
        ("{tmp}/file/w.sock", CANNOT.format(sock="{tmp}/file/w.sock", why="{tmp}/file is not a directory)")),
        (
            "{tmp}/file/sub/w.sock",
            CANNOT.format(sock="{tmp}/file/sub/w.sock", why="{tmp}/file is not a directory)"),
        ),
        (
            "{tmp}/a/b/w.sock",
            CANNOT.format(sock="{tmp}/a/b/w.sock", why="the folder {tmp}/a does not exist)"),
        ),
        ("{tmp}/file", "serve.uri: {tmp}/file is not a socket, and the server would delete it"),
    ],
)
def test_check_config_refuses_a_socket_that_cannot_be_made(tmp_path, capsys, where, problem):
    (tmp_path / "file").write_text("a regular file")
    sock = where.format(tmp=tmp_path)
    code, lines = check_config(tmp_path, capsys, serving(f"unix://{sock}"))
    assert code == EXIT_CONFIG, lines
    assert any(line.startswith(problem.format(tmp=tmp_path)) for line in lines), lines
    assert (tmp_path / "file").read_text() == "a regular file"
    assert not (tmp_path / "a").exists() and not Path("/proc/iris-x").exists()


def test_check_config_accepts_a_socket_folder_start_up_can_make_and_leaves_none(tmp_path, capsys):
    """One missing level is made at start (``prepare_serve``); the check makes it for its
    probe and removes it again."""
    code, lines = check_config(tmp_path, capsys, serving(f"unix://{tmp_path}/wyoming/w.sock"))
    assert (code, lines) == (0, ["ok"])
    assert not (tmp_path / "wyoming").exists()


def test_a_live_unix_server_is_refused_and_a_stale_socket_file_is_not(tmp_path, capsys):
    path = tmp_path / "w.sock"
    uri = f"unix://{path}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as live:
        live.bind(str(path))
        live.listen()
        code, lines = check_config(tmp_path, capsys, serving(uri))
    assert code == EXIT_CONFIG, lines
    assert lines == [
        f"serve.uri: cannot listen at {uri}: a server is listening on {path} (an IRIS already serving there?)"
    ]
    assert stat.S_ISSOCK(os.lstat(path).st_mode)  # closed without unlinking: stale now
    assert check_config(tmp_path, capsys, serving(uri)) == (0, ["ok"])


# -- start-up: before the models load, and without a traceback ---------------------------------


class CountingStt(FakeStt):
    """Counts warm-ups: the stand-in for loading Whisper."""

    warmed = 0

    async def warmup(self) -> None:
        CountingStt.warmed += 1


def _hub(tmp_path: Path, uri: str) -> Hub:
    CountingStt.warmed = 0
    cfg = Config(
        llm=LlmConfig(host=f"http://127.0.0.1:{free_port()}", connect_timeout_s=0.5),
        tools=ToolsConfig(timezone="UTC", timers_db=str(tmp_path / "timers.db")),
        serve=ServeConfig(uri=uri),
    )
    return Hub(cfg, Engines(CountingStt(), FakeTts(), FakeVad(), None), ScriptedBackend())


async def test_the_hub_refuses_a_port_in_use_before_loading_its_models(tmp_path, listening):
    uri = f"tcp://127.0.0.1:{listening.getsockname()[1]}"
    hub = _hub(tmp_path, uri)
    with pytest.raises(ConfigError) as err:
        await asyncio.wait_for(hub.run(), 60)
    assert err.value.problems == [f"serve.uri: cannot listen at {uri}: {checks.IN_USE}"]
    assert CountingStt.warmed == 0
    lock = InstanceLock()  # released on the way out
    lock.acquire()
    lock.release()


async def test_the_desktop_daemon_serving_refuses_a_port_in_use_before_warming_up(tmp_path, listening):
    from iris_voice.app.daemon import Daemon
    from tests.support.fakes_audio import SILENCE, FakeSink, FakeWake, ScriptSource, frames

    class Sink(FakeSink):
        opened = False

        async def open(self) -> bool:
            Sink.opened = True
            return await super().open()

    CountingStt.warmed = 0
    uri = f"tcp://127.0.0.1:{listening.getsockname()[1]}"
    cfg = Config(
        llm=LlmConfig(host=f"http://127.0.0.1:{free_port()}", connect_timeout_s=0.5),
        tools=ToolsConfig(timezone="UTC", timers_db=str(tmp_path / "timers.db")),
        serve=ServeConfig(enabled=True, uri=uri),
    )
    engines = Engines(CountingStt(), FakeTts(), FakeVad(), FakeWake())
    daemon = Daemon(cfg, engines, ScriptSource(frames(SILENCE, 1.0), tail_s=600), Sink(speed=50))
    with pytest.raises(ConfigError) as err:
        await asyncio.wait_for(daemon.run(), 60)
    assert err.value.problems == [f"serve.uri: cannot listen at {uri}: {checks.IN_USE}"]
    assert CountingStt.warmed == 0 and not Sink.opened


async def test_a_bind_that_fails_after_the_check_is_the_same_clear_error(tmp_path, monkeypatch):
    """The port taken between the check and the server's bind: ``serve.uri``, not an OSError."""
    port = free_port()
    uri = f"tcp://127.0.0.1:{port}"
    hub = _hub(tmp_path, uri)
    taken: list[socket.socket] = []

    def take_it(_uri: str) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", port))
        sock.listen()
        taken.append(sock)

    monkeypatch.setattr("iris_voice.app.headless.prepare_serve", lambda cfg: take_it(cfg.uri))
    try:
        with pytest.raises(ConfigError) as err:
            await asyncio.wait_for(hub.run(), 60)
    finally:
        for sock in taken:
            sock.close()
    assert err.value.problems == [f"serve.uri: cannot listen at {uri}: {checks.IN_USE}"]


async def test_the_hub_makes_its_sockets_folder_private_and_serves(tmp_path):
    folder = tmp_path / "wyoming"
    hub = _hub(tmp_path, f"unix://{folder}/w.sock")
    task = asyncio.create_task(hub.run())
    try:
        for _ in range(1200):  # until it listens (generous: a loaded machine)
            if (folder / "w.sock").exists() or task.done():
                break
            await asyncio.sleep(0.05)
        assert stat.S_ISSOCK(os.lstat(folder / "w.sock").st_mode)
        assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    finally:
        hub.request_stop()
        assert await asyncio.wait_for(task, 30) == 0


def test_iris_serve_with_the_port_in_use_exits_78_naming_serve_uri(tmp_path, monkeypatch, capsys, listening):
    """The whole command, real engines built (remote ones: nothing to load), no traceback."""
    uri = f"tcp://127.0.0.1:{listening.getsockname()[1]}"
    dead = f"tcp://127.0.0.1:{free_port()}"
    config = tmp_path / "config.toml"
    config.write_text(
        QUIET + f'[stt]\nengine = "wyoming"\nuri = "{dead}"\n[tts]\nengine = "wyoming"\nuri = "{dead}"\n'
        f'[tools]\ntimers_db = "{tmp_path}/timers.db"\n' + serving(uri, enabled=False)
    )
    assert main(["--config", str(config), "serve"]) == EXIT_CONFIG
    err = capsys.readouterr().err
    assert f"iris: config: serve.uri: cannot listen at {uri}: the address is in use" in err, err
    assert "Traceback" not in err
