"""Conversations by origin: the desktop, each satellite and each Wyoming client keep their own."""

from __future__ import annotations

import pytest
from wyoming.asr import Transcript
from wyoming.client import AsyncTcpClient

from iris_voice.app.assembly import Engines, build_app
from iris_voice.app.commands import forget_command
from iris_voice.cli.main import _parser as build_parser
from iris_voice.config import Config, ConversationsConfig, LlmConfig, ServeConfig, ToolsConfig
from iris_voice.conversation.origins import (
    DESKTOP,
    Conversations,
    OriginResponder,
    satellite_origin,
    wyoming_origin,
)
from iris_voice.conversation.responder import build_responder
from iris_voice.errors import IrisError
from iris_voice.tools.registry import ToolRegistry
from iris_voice.wyoming.parts import service_parts
from iris_voice.wyoming.server import WyomingService
from tests.support.fakes_audio import FakeStt, FakeTts, FakeVad
from tests.support.hub_helpers import EchoBackend
from tests.unit.test_serve import read_until
from tools.testbed.servers import free_port


class Clock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _conversations(backend: EchoBackend, clock: Clock, keep: int = 3, idle_s: float = 60.0) -> Conversations:
    cfg = Config(llm=LlmConfig(warm_cache=True))
    home = build_responder(cfg, ToolRegistry(), backend=backend)
    return Conversations(
        lambda: build_responder(cfg, ToolRegistry(), backend=backend),
        keep=keep, idle_s=idle_s, home=home, clock=clock,
    )  # fmt: skip


async def _ask(conversations: Conversations, origin: str, text: str) -> str:
    return " ".join([s async for s in conversations.get(origin).sentences(text)])


def test_origins_of_wyoming_clients():
    # one chat of a client across its connections; the same id from elsewhere is another's
    assert wyoming_origin({"conversation_id": "01HQ"}, "10.0.0.5:4242") == "wyoming:10.0.0.5/01HQ"
    assert wyoming_origin({"conversation_id": "01HQ"}, "10.0.0.5:5151") == "wyoming:10.0.0.5/01HQ"
    assert wyoming_origin({"conversation_id": "01HQ"}, "10.0.0.9:4242") == "wyoming:10.0.0.9/01HQ"
    assert wyoming_origin({"conversation_id": "01HQ"}, "::1:4242") == "wyoming:::1/01HQ"
    for context in (
        None,
        {},
        {"conversation_id": ""},
        {"conversation_id": 7},
        {"conversation_id": "x" * 129},
        {"conversation_id": "a\nCRITICAL iris_voice.app.serve: FORGED"},
        {"conversation_id": "\x1b[2Jgone"},
    ):
        assert wyoming_origin(context, "10.0.0.5:4242") == "wyoming:10.0.0.5:4242"
    assert satellite_origin("kitchen") == "satellite:kitchen"


async def test_each_origin_remembers_only_its_own_turns():
    backend, clock = EchoBackend(delay=0), Clock()
    conv = _conversations(backend, clock)
    assert "I remember 0" in await _ask(conv, DESKTOP, "desktop one?")
    assert "I remember 0" in await _ask(conv, "satellite:kitchen", "kitchen one?")
    assert "I remember 1" in await _ask(conv, DESKTOP, "desktop two?")
    assert "I remember 1" in await _ask(conv, "satellite:kitchen", "kitchen two?")
    for request in backend.requests:
        said = " ".join(m["content"] for m in request if m["role"] == "user")
        assert not ("desktop" in said and "kitchen" in said), said


async def test_unused_and_surplus_conversations_are_forgotten_but_never_home_or_held():
    backend, clock = EchoBackend(delay=0), Clock()
    conv = _conversations(backend, clock, keep=3, idle_s=60.0)
    conv.hold("satellite:kitchen")
    for origin in ("satellite:kitchen", "wyoming:a", "wyoming:b", "wyoming:c"):
        conv.get(origin)
    assert [c["origin"] for c in conv.listed()] == ["wyoming:c", "wyoming:b", "satellite:kitchen", DESKTOP]
    clock.now += 61
    conv.get("wyoming:d")  # the rest aged out; the kitchen is connected, the desktop is home
    assert [c["origin"] for c in conv.listed()] == ["wyoming:d", "satellite:kitchen", DESKTOP]
    conv.release("satellite:kitchen")  # the kitchen left long ago: now it goes too
    assert [c["origin"] for c in conv.listed()] == ["wyoming:d", DESKTOP]


async def test_forget_one_origin_or_all():
    backend, clock = EchoBackend(delay=0), Clock()
    conv = _conversations(backend, clock)
    for origin in (DESKTOP, "satellite:kitchen", "satellite:office"):
        await _ask(conv, origin, f"{origin} one?")
    assert forget_command(conv, {"origin": "kitchen"}) == {
        "forgotten": {"satellite:kitchen": 1}, "forgotten_turns": 1,
    }  # fmt: skip
    assert "satellite:kitchen" not in conv and "satellite:office" in conv
    assert len(conv.peek(DESKTOP).conversation) == 1
    with pytest.raises(IrisError, match="no conversation 'attic'.*satellite:office"):
        forget_command(conv, {"origin": "attic"})
    gone = forget_command(conv, {})
    assert gone == {"forgotten": {DESKTOP: 1, "satellite:office": 1}, "forgotten_turns": 2}
    assert len(conv.peek(DESKTOP).conversation) == 0 and list(conv.listed())[0]["origin"] == DESKTOP
    assert build_parser().parse_args(["forget", "kitchen"]).origin == "kitchen"
    assert build_parser().parse_args(["forget"]).origin == ""


class WarmEcho(EchoBackend):
    """``EchoBackend`` that also keeps the warm-ups' messages."""

    def __init__(self) -> None:
        super().__init__(delay=0)
        self.warmed: list[list[str]] = []

    def stream(self, messages, tools, options=None):
        if (options or {}).get("num_predict") == 1:
            self.warmed.append([m["content"] for m in messages if m["role"] == "user"])
        return super().stream(messages, tools, options)


async def test_the_warm_up_follows_the_latest_turns_conversation():
    backend, clock = WarmEcho(), Clock()
    conv = _conversations(backend, clock)
    await _ask(conv, DESKTOP, "desktop one?")
    await _ask(conv, "satellite:kitchen", "kitchen one?")
    desktop, kitchen = conv.peek(DESKTOP), conv.peek("satellite:kitchen")
    conv.idle(DESKTOP)  # the kitchen spoke last: the desktop's going idle warms nothing
    assert not desktop.warmer.busy and not kitchen.warmer.busy
    conv.idle("satellite:kitchen")
    await kitchen.warmer.settle()
    assert kitchen.warmer.warmups == 1 and desktop.warmer.warmups == 0
    assert "kitchen one?" in backend.warmed[-1] and "desktop one?" not in backend.warmed[-1]
    await _ask(conv, DESKTOP, "desktop two?")  # the cache now holds the desktop's turn ...
    conv.idle(DESKTOP)
    await desktop.warmer.settle()
    assert desktop.warmer.warmups == 1 and "desktop two?" in backend.warmed[-1]
    conv.idle("satellite:kitchen")  # ... so the kitchen is warmed again from its start
    assert not kitchen.warmer.busy  # not its turn: the desktop spoke last


async def test_a_home_assistant_client_and_the_microphone_never_see_each_others_turns(tmp_path):
    backend = EchoBackend(delay=0)
    port = free_port()
    cfg = Config(
        llm=LlmConfig(warm_cache=False),
        tools=ToolsConfig(timezone="UTC", timers_db=str(tmp_path / "timers.db")),
        serve=ServeConfig(uri=f"tcp://127.0.0.1:{port}"),
        conversations=ConversationsConfig(keep=8),
    )
    engines = Engines(FakeStt("unused"), FakeTts(), FakeVad(), None)
    app = build_app(cfg, speech=True, engines=engines, backend=backend)
    service = WyomingService(cfg.serve, service_parts(app))
    microphone = OriginResponder(app.conversations, DESKTOP)  # what the daemon's pipeline answers with

    async def home_assistant(text: str, context: dict | None) -> str:
        async with AsyncTcpClient("127.0.0.1", port) as client:  # one connection per turn, as HA does
            await client.write_event(Transcript(text=text, context=context, language="en").event())
            return str((await read_until(client, "handled"))[-1].data["text"])

    async def spoken(text: str) -> str:
        return " ".join([s async for s in microphone.sentences(text)])

    await service.start()
    try:
        chat = {"conversation_id": "01JHAROOM"}
        assert "I remember 0" in await home_assistant("living room one?", chat)
        assert "I remember 0" in await spoken("desk one?")
        assert "I remember 1" in await home_assistant("living room two?", chat)
        assert "I remember 1" in await spoken("desk two?")
        assert "I remember 0" in await home_assistant("no id one?", None)  # its connection's own
        assert "I remember 0" in await home_assistant("no id two?", None)  # a new connection: new
    finally:
        await service.stop()
        await app.close()
    # another origin's conversation shares the compiled producers: only its history is its own
    a, b = app.conversations.get("wyoming:a"), app.conversations.get("wyoming:b")
    assert a.fast is b.fast and a.chat is b.chat and a.conversation is not b.conversation
    app.conversations.forget("wyoming:a")
    app.conversations.forget("wyoming:b")
    # the connections without an id took their conversations with them
    assert [c["origin"] for c in app.conversations.listed()] == [DESKTOP, "wyoming:127.0.0.1/01JHAROOM"]
    for request in backend.requests:
        said = " ".join(m["content"] for m in request if m["role"] == "user")
        assert not ("desk" in said and ("living room" in said or "no id" in said)), said
