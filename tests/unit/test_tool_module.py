"""A tool declares itself once: one new module in ``iris_voice/tools/builtin`` is all it takes
for the registry, the config checks, boost's word check and the fast path to know it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from iris_voice.app import checks
from iris_voice.app.assembly import build_app
from iris_voice.config import parse
from iris_voice.conversation.boost import may_need_tools
from iris_voice.conversation.fastpath import templates
from iris_voice.conversation.responder import ask
from iris_voice.tools import builtin

WEATHER = '''"""A weather tool, as a new module would declare it."""

from iris_voice.tools.builtin.context import ToolContext
from iris_voice.tools.intents import Action
from iris_voice.tools.registry import Tool, tool_from_function

ORDER = 40


def get_weather(place: str = "here") -> str:
    """Get the weather forecast for a place."""
    return f"It will rain in {place} this afternoon."


def provide(ctx: ToolContext) -> list[Tool]:
    """The weather tool."""
    intents = {"IrisWeather": lambda intent, slots: Action(intent, "get_weather", {"place": "Oslo"})}
    words = ("umbrella|forecast",)
    return [tool_from_function(get_weather, direct_return=True, words=words, intents=intents)]
'''


@pytest.fixture
def weather_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``weather.py`` dropped into the built-in tools package (and its sentence in the templates)."""
    (tmp_path / "weather.py").write_text(WEATHER)
    monkeypatch.setattr(builtin, "__path__", [*builtin.__path__, str(tmp_path)])
    monkeypatch.delitem(sys.modules, "iris_voice.tools.builtin.weather", raising=False)
    own = templates.iris_templates

    def with_weather(language: str = "en") -> dict:
        data = own(language)
        data["intents"]["IrisWeather"] = {"data": [{"sentences": ["what's the weather in oslo"]}]}
        return data

    monkeypatch.setattr(templates, "iris_templates", with_weather)
    yield
    sys.modules.pop("iris_voice.tools.builtin.weather", None)


async def test_a_new_tool_module_is_known_everywhere(weather_module, tmp_path: Path) -> None:
    assert builtin.declared_names()[-1] == "get_weather"  # ORDER 40: after the clock
    cfg = parse({"tools": {"timers_db": str(tmp_path / "t.db")}, "llm": {"host": "http://127.0.0.1:9"}})
    app = build_app(cfg)
    assert "get_weather" in app.registry and app.registry.get("get_weather").direct_return
    assert may_need_tools("Do I need an umbrella?", app.registry)  # its own words
    trace = await ask(app.responder, "What's the weather in Oslo?")  # its own intent: no model
    assert trace.execution_path == "fast" and trace.reply == "It will rain in Oslo this afternoon."
    bad = parse({"tools": {"disabled": ["get_weather", "get_wether"], "timers_db": str(tmp_path / "t.db")}})
    assert [p.split(":")[0] for p in checks.problems(bad, speech=False)] == ["tools.disabled"]
    app.timers.store.close()


def test_without_the_module_the_tool_does_not_exist() -> None:
    assert "get_weather" not in builtin.declared_names()
