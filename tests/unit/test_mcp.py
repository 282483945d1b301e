"""MCP tools with the real PyPI servers mcp-server-time and mcp-server-calculator over stdio.

Each test starts its own servers (about a second each) so no test depends on another.
Failure cases with the misbehaving FastMCP server are in test_mcp_failures.py.
"""

from __future__ import annotations

import json
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from iris_voice import config
from iris_voice.cli.main import main
from iris_voice.errors import ConfigError, ToolError
from iris_voice.tools.mcp.manager import BROWSE_TOOL, EXECUTE_TOOL
from iris_voice.tools.mcp.results import MAX_RESULT_CHARS, result_text
from iris_voice.tools.mcp.schema import check_arguments, compact_input_schema, schema_problem
from iris_voice.tools.render import FORMATS, render
from tests.support.mcp_servers import PY, calculator, execute, running, time_server

pytestmark = pytest.mark.timeout(90)


# --- configuration and schemas (no server) ---------------------------------------------


def test_config_defaults_and_errors_name_the_key():
    cfg = config.parse({"mcp": {"servers": [{"name": "time", "category": "/time/", "command": "x"}]}})
    server = cfg.mcp.servers[0]
    assert (server.category, server.mode, server.timeout_s, server.enabled) == ("time", "lazy", 10.0, True)
    assert cfg.mcp.start_wait_s == 2.0 and cfg.mcp.active() == [server]
    bad = [
        ({"name": "a", "category": "time"}, "mcp.servers[0]: set exactly one of 'command'"),
        (
            {"name": "a", "category": "t", "command": "x", "url": "http://h/mcp"},
            "mcp.servers[0]: set exactly",
        ),
        ({"name": "a", "category": "Time Zones", "command": "x"}, "mcp.servers[0].category: must be a path"),
        ({"name": "a", "category": "time", "url": "ftp://h"}, "mcp.servers[0].url: must start with http"),
        ({"name": "a", "category": "t", "command": "x", "mode": "sometimes"}, "mcp.servers[0].mode: must be"),
        ({"name": "a", "category": "t", "command": "x", "timeout": 3}, "mcp.servers[0].timeout: unknown key"),
        ({"name": "a", "category": "t", "command": "x", "timeout_s": 0}, "mcp.servers[0].timeout_s: must be"),
        ({"category": "t", "command": "x"}, "mcp.servers[0].name: is required"),
    ]
    for entry, message in bad:
        with pytest.raises(ConfigError) as err:
            config.parse({"mcp": {"servers": [entry]}})
        assert any(p.startswith(message) for p in err.value.problems), (message, err.value.problems)
    twice = [{"name": "a", "category": "t", "command": "x"}, {"name": "b", "category": "t", "command": "x"}]
    with pytest.raises(ConfigError, match="two servers have the category 't'"):
        config.parse({"mcp": {"servers": twice}})
    off = config.parse(
        {"mcp": {"servers": [{"name": "a", "category": "t", "command": "x", "enabled": False}]}}
    )
    assert off.mcp.active() == []


def test_compact_schema_keeps_a_parameter_named_title():
    schema = {
        "type": "object",
        "title": "noteArguments",
        "properties": {
            "title": {"type": "string", "title": "Title"},
            "n": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        },
        "required": ["title"],
    }
    assert compact_input_schema(schema) == {
        "type": "object",
        "properties": {"title": {"type": "string"}, "n": {"type": "integer"}},
        "required": ["title"],
    }
    assert schema["title"] == "noteArguments"  # the server's copy is left alone
    assert compact_input_schema("garbage") == {"type": "object", "properties": {}}


def test_schema_problems_are_named():
    assert schema_problem({"type": "object", "properties": {"a": {"type": "string"}}}) is None
    assert schema_problem({"type": "object"}) is None
    assert "properties/a" in schema_problem({"type": "object", "properties": {"a": 42}})
    assert "required" in schema_problem({"type": "object", "required": "a"})
    assert schema_problem({"type": "string"}) == "the input schema has type 'string', not 'object'"
    assert schema_problem(None) == "the input schema is not an object"


def test_arguments_are_coerced_then_validated():
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer"},
            "x": {"type": "number"},
            "flag": {"type": "boolean"},
            "name": {"type": "string"},
            "inner": {"type": "object", "properties": {"k": {"type": "integer"}}},
        },
        "required": ["n"],
        "additionalProperties": False,
    }
    args = check_arguments(
        "t/x", {"n": "12", "x": "2.5", "flag": "true", "name": 7, "inner": {"k": "3"}}, schema
    )
    assert args == {"n": 12, "x": 2.5, "flag": True, "name": "7", "inner": {"k": 3}}
    usage = "Arguments: n (integer, required), x (number), flag (boolean), name (string), inner (object)"
    with pytest.raises(ToolError) as err:
        check_arguments("t/x", {}, schema)
    assert err.value.message == f"invalid arguments for t/x: n: is required. {usage}"
    with pytest.raises(ToolError, match=r"n: 'twelve' is not of type 'integer'"):
        check_arguments("t/x", {"n": "twelve"}, schema)
    with pytest.raises(ToolError, match=r"tz: unknown argument"):
        check_arguments("t/x", {"n": 1, "tz": "UTC"}, schema)


def test_result_text_names_media_and_caps_length():
    from mcp import types

    blocks = [
        types.TextContent(type="text", text="hello"),
        types.ImageContent(type="image", data="AAAA", mimeType="image/png"),
        types.EmbeddedResource(
            type="resource", resource=types.TextResourceContents(uri="file:///a.txt", text="inside")
        ),
    ]
    assert result_text(types.CallToolResult(content=blocks)) == "hello\n[image omitted]\ninside"
    structured = types.CallToolResult(content=[], structuredContent={"result": 42})
    assert result_text(structured) == '{"result": 42}'
    long = result_text(types.CallToolResult(content=[types.TextContent(type="text", text="x" * 10_000)]))
    assert len(long) <= MAX_RESULT_CHARS and long.endswith("(truncated)")


# --- real servers: lazy browse and execute ----------------------------------------------


async def test_lazy_mode_shows_two_short_meta_tools_and_browses_the_tree():
    time_cfg = time_server(description="current time in any time zone")
    async with running(time_cfg, calculator()) as (_, registry):
        assert registry.names() == [EXECUTE_TOOL, BROWSE_TOOL]
        run, browse = registry.specs()
        assert browse.description == (
            'Current time in any time zone, or the "utilities/math" tools: call this with the category '
            '("time" or "utilities/math"); it answers with the tool to run next.'
        )
        assert browse.parameters["properties"]["path"]["enum"] == ["time", "utilities/math", ""]
        assert BROWSE_TOOL in run.description
        # Both render in every format, with no MCP tool leaking into the prompt.
        for fmt in FORMATS:
            text = json.dumps(render(registry.specs(), fmt))
            assert "get_current_time" not in text and "calculate" not in text
        root = await registry.call(BROWSE_TOOL, {"path": ""})
        assert root.result.splitlines() == [
            "Categories:",
            "- time: current time in any time zone (2 tools)",
            "- utilities (1 subcategory, 1 tool)",
            f"Next: call {BROWSE_TOOL} with one of these paths.",
        ]
        assert (await registry.call(BROWSE_TOOL, {"path": "/"})).result == root.result
        inner = (await registry.call(BROWSE_TOOL, {"path": "Utilities/"})).result
        assert "- utilities/math: tools calculate (1 tool)" in inner
        leaf = await registry.call(BROWSE_TOOL, {"path": "time"})
        assert leaf.ok
        assert "time/get_current_time: Get current time" in leaf.result
        assert "time/convert_time:" in leaf.result
        assert "timezone (string, required)" in leaf.result
        assert leaf.result.splitlines()[-1] == (
            f'To run a tool, call: {{"name": "{EXECUTE_TOOL}", "arguments": '
            '{"tool_path": "time/get_current_time", "arguments": {"timezone": "..."}}}'
        )
        unknown = await registry.call(BROWSE_TOOL, {"path": "weather"})
        assert (
            unknown.result
            == "Error: unknown category 'weather'. Categories: time, utilities. Use \"\" for the top level"
        )


async def test_execute_tool_answers_the_time_in_paris():
    async with running(time_server()) as (_, registry):
        res = await execute(registry, "time/get_current_time", {"timezone": "Europe/Paris"})
        assert res.ok, res.result
        data = json.loads(res.result)
        assert data["timezone"] == "Europe/Paris"
        answered = datetime.fromisoformat(data["datetime"])
        now = datetime.now(ZoneInfo("Europe/Paris"))
        assert answered.utcoffset() == now.utcoffset()
        assert abs((answered - now).total_seconds()) < 120
        # What small models send: arguments as a JSON string, a path without its category,
        # or the tool's arguments beside tool_path.
        again = await execute(registry, "get_current_time", '{"timezone": "Asia/Tokyo"}')
        assert again.ok and json.loads(again.result)["timezone"] == "Asia/Tokyo"
        beside = await registry.call(EXECUTE_TOOL, {"tool_path": "time/get_current_time", "timezone": "UTC"})
        assert beside.ok and json.loads(beside.result)["timezone"] == "UTC"


async def test_invalid_calls_are_refused_before_sending(monkeypatch):
    async with running(time_server(), calculator()) as (manager, registry):
        sent = []
        conn = manager.server("time")
        real_call = conn.call

        async def spy(tool, arguments, timeout=None):
            sent.append(tool)
            return await real_call(tool, arguments, timeout)

        monkeypatch.setattr(conn, "call", spy)
        missing = await execute(registry, "time/get_current_time", {})
        assert missing.result == (
            "Error: invalid arguments for time/get_current_time: timezone: is required. "
            "Arguments: timezone (string, required)"
        )
        wrong = await execute(registry, "time/get_current_time", {"timezone": ["Europe/Paris"]})
        assert "timezone: ['Europe/Paris'] is not of type 'string'" in wrong.result
        paths = "time/get_current_time, time/convert_time, utilities/math/calculate"
        no_tool = await execute(registry, "time/get_weather", {})
        assert no_tool.result == f"Error: time has no tool 'get_weather'. Valid tool paths: {paths}"
        elsewhere = await execute(registry, "weather/now", {})
        assert elsewhere.result == f"Error: unknown tool 'weather/now'. Valid tool paths: {paths}"
        category = await execute(registry, "time", {})
        assert "is a category, not a tool" in category.result
        not_json = await execute(registry, "time/get_current_time", "{timezone: Paris}")
        assert not_json.result.startswith("Error: arguments must be a JSON object; this is not valid JSON")
        no_path = await registry.call(EXECUTE_TOOL, {"arguments": {}})
        assert no_path.result.startswith('Error: tool_path is required, e.g. "time/tool_name"')
        assert sent == []
        # The server's own refusal (a valid string, an unknown zone) comes back as an error too.
        refused = await execute(registry, "time/get_current_time", {"timezone": "Mars/Olympus"})
        assert not refused.ok and refused.result.startswith("Error: ") and "Mars/Olympus" in refused.result
        assert sent == ["get_current_time"]


async def test_eager_mode_registers_category_tool_names_with_schemas():
    async with running(time_server(mode="eager"), calculator(mode="eager")) as (_, registry):
        names = ["time/get_current_time", "time/convert_time", "utilities/math/calculate"]
        assert registry.names() == names  # config order, then each server's own order
        spec = registry.get("time/get_current_time").spec
        assert spec.parameters["required"] == ["timezone"]
        assert spec.parameters["properties"]["timezone"]["type"] == "string"
        res = await registry.call("time/get_current_time", {"timezone": "UTC"})
        assert res.ok and json.loads(res.result)["timezone"] == "UTC"
        bad = await registry.call("time/get_current_time", {})
        assert bad.result.startswith(
            "Error: invalid arguments for time/get_current_time: timezone: is required"
        )
        calc = await registry.call("utilities/math/calculate", {"expression": "23*47"})
        assert (calc.ok, calc.result) == (True, "1081")
        assert BROWSE_TOOL not in registry  # no lazy server, no meta-tools


async def test_configured_arguments_are_filled_in_and_hidden_from_the_model():
    fixed = {"timezone": "Asia/Tokyo", "not_a_parameter": 1}
    async with running(time_server(mode="eager", arguments=fixed)) as (_, registry):
        spec = registry.get("time/get_current_time").spec
        assert "timezone" not in spec.parameters["properties"] and spec.parameters.get("required") == []
        convert = registry.get("time/convert_time").spec.parameters
        assert "timezone" not in convert["properties"] and "source_timezone" in convert["properties"]
        # the call runs with the configured value, whatever the model sent for it
        for sent in ({}, {"timezone": "Europe/Paris"}):
            res = await registry.call("time/get_current_time", sent)
            assert res.ok and json.loads(res.result)["timezone"] == "Asia/Tokyo", res.result
    async with running(time_server(arguments={"timezone": "Asia/Tokyo"})) as (_, registry):
        listing = (await registry.call(BROWSE_TOOL, {"path": "time"})).result
        # the example call the listing ends with asks for no argument: timezone is IRIS's
        assert listing.endswith('"tool_path": "time/get_current_time", "arguments": {}}}'), listing
        res = await execute(registry, "time/get_current_time", {})
        assert res.ok and json.loads(res.result)["timezone"] == "Asia/Tokyo"


def _write_config(tmp_path, mode: str) -> str:
    path = tmp_path / "iris.toml"
    path.write_text(
        "[[mcp.servers]]\n"
        'name = "time"\ncategory = "time"\n'
        f"command = {json.dumps(PY)}\n"
        'args = ["-m", "mcp_server_time", "--local-timezone", "UTC"]\n'
        f'mode = "{mode}"\n'
    )
    return str(path)


def test_cli_lists_and_calls_mcp_tools(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    lazy = _write_config(tmp_path, "lazy")
    assert main(["--config", lazy, "tools", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    # retrieval on (the default): lazy tools are hidden but callable, no meta-tools listed
    assert not any(line.startswith(BROWSE_TOOL) for line in lines)
    assert any(line.startswith("time/get_current_time") and "[lazy]" in line for line in lines)
    call = json.dumps({"timezone": "Europe/Paris"})
    assert main(["--config", lazy, "tools", "call", "time/get_current_time", call]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] and json.loads(out["result"])["timezone"] == "Europe/Paris"
    assert main(["--config", lazy, "tools", "call", "time/get_current_time", "{}"]) == 1
    assert "timezone: is required" in json.loads(capsys.readouterr().out)["error"]
    eager = _write_config(tmp_path, "eager")
    assert main(["--config", eager, "tools", "list", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["time/get_current_time"]["mode"] == "eager" and BROWSE_TOOL not in rows


async def test_meta_tools_come_before_the_native_tools():
    from iris_voice.tools.registry import ToolRegistry, tool_from_function

    def calculator(expression: str) -> str:
        """Evaluate arithmetic."""
        return expression

    async with running(time_server(description="current time in any time zone")) as (manager, _):
        native = ToolRegistry([tool_from_function(calculator)])
        manager.register(native)
        assert native.names() == [EXECUTE_TOOL, BROWSE_TOOL, "calculator"]
