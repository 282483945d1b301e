"""MCP servers that attack IRIS: runaway patterns, evil names, oversized schemas and answers.

Every server here is the real FastMCP test server over stdio
(tests/support/mcp_servers/flaky_server.py, ``--hostile KIND``); the payloads come
from tests/support/hostile/tool_servers.py. Responsiveness is asserted with a ticker task whose
largest gap between 10 ms sleeps must stay under a generous bound, never with exact times.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from iris_voice.cli.main import main
from iris_voice.config import McpServerConfig
from iris_voice.errors import ToolError
from iris_voice.tools.mcp.manager import BROWSE_TOOL
from iris_voice.tools.mcp.results import MAX_RESULT_CHARS
from iris_voice.tools.mcp.schema import check_arguments
from iris_voice.tools.render import FORMATS, SYSTEM_TOOL_INSTRUCTIONS, render
from tests.support.hostile import tool_servers as hostile_mcp
from tests.support.mcp_servers import FLAKY, FLAKY_ENV, PY, execute, flaky, hostile, http_flaky, running

pytestmark = pytest.mark.timeout(120)

_STALL_BOUND_S = 1.0  # a voice turn notices a 1 s freeze; catastrophic backtracking is many seconds
_LOG_BOUND = 2_000  # characters of one log record about something a server sent
# num_ctx 4,096 tokens is about 16,000 characters for the system prompt, the tools and the
# conversation: one server's eager definitions must leave most of it, a browse answer too.
_EAGER_SERVER_CHARS = 10_000
_BROWSE_CHARS = 4_000


@dataclass
class LoopWatch:
    """The largest gap seen between a ticker's 10 ms sleeps, beyond the 10 ms themselves."""

    worst: float = 0.0


@contextlib.asynccontextmanager
async def watched_loop() -> AsyncIterator[LoopWatch]:
    """Run a ticker while the body runs; ``worst`` says how long the event loop was blocked."""
    watch, done = LoopWatch(), asyncio.Event()

    async def tick() -> None:
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(0.01)
            now = time.perf_counter()
            watch.worst = max(watch.worst, now - last - 0.01)
            last = now

    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0.05)
    try:
        yield watch
    finally:
        await asyncio.sleep(0.05)  # a stall at the very end shows too
        done.set()
        await ticker


def _log_levels(caplog) -> None:
    """IRIS's own records down to DEBUG, everyone's from INFO (the SDK logs whole messages at DEBUG)."""
    caplog.set_level(logging.INFO)
    caplog.set_level(logging.DEBUG, logger="iris_voice")


# --- 1. patterns ------------------------------------------------------------------------


async def test_a_catastrophic_pattern_never_stalls_the_event_loop():
    evil = hostile_mcp.catastrophic_argument(28)  # Python's re: several seconds, doubling per character
    async with running(flaky(mode="eager"), flaky(category="test/lazy", name="lazy")) as (_, registry):
        async with watched_loop() as watch:
            eager = await registry.call("test/flaky/match", {"text": evil})
            lazy = await execute(registry, "test/lazy/match", {"text": evil})
        assert watch.worst < _STALL_BOUND_S, f"event loop blocked {watch.worst:.2f} s"
        for res in (eager, lazy):
            # Refused by a linear-time check, or (no safe engine) left for the server to judge.
            assert res.result.endswith(f"matched {evil}") or "does not match" in res.result, res.result
        fine = await registry.call("test/flaky/match", {"text": "aaaa"})
        assert (fine.ok, fine.result) == (True, "matched aaaa")


def _timed_check(schema, arguments):
    """check_arguments' outcome (the args or the error text) and how long it took."""
    t0 = time.perf_counter()
    try:
        out = check_arguments("t/x", arguments, schema)
    except ToolError as exc:
        out = exc.message
    return out, time.perf_counter() - t0


def test_patterns_are_checked_in_linear_time_with_re2():
    pytest.importorskip("re2")
    from iris_voice.tools.mcp import patterns

    patterns.clear_cache()
    evil = hostile_mcp.catastrophic_argument(1_000)  # Python's re: longer than the universe
    out, took = _timed_check(hostile_mcp.pattern_schema(), {"text": evil})
    assert (
        out.startswith("invalid arguments for t/x: text: does not match the pattern '^(a+)+$'")
        and took < _STALL_BOUND_S
    )
    assert _timed_check(hostile_mcp.pattern_schema(), {"text": "aaaa"})[0] == {"text": "aaaa"}
    # A key matched by patternProperties, and additionalProperties judged through the same engine.
    keyed = {
        "type": "object",
        "patternProperties": {hostile_mcp.CATASTROPHIC_PATTERN: {"type": "integer"}},
        "additionalProperties": False,
    }
    out, took = _timed_check(keyed, {evil: 1})
    assert "unknown argument" in out and took < _STALL_BOUND_S
    out, _ = _timed_check(keyed, {"aaa": "not a number"})
    assert "is not of type 'integer'" in out


def test_a_pattern_re2_cannot_run_is_left_to_the_server_with_one_log_line(caplog, monkeypatch):
    from iris_voice.tools.mcp import patterns

    caplog.set_level(logging.WARNING, logger="iris_voice.tools.mcp.patterns")
    patterns.clear_cache()
    lookahead = hostile_mcp.pattern_schema("^(?=a)(a+)+$")  # RE2 has no look-around
    for _ in range(3):
        out, took = _timed_check(lookahead, {"text": hostile_mcp.catastrophic_argument(28)})
        assert out == {"text": hostile_mcp.catastrophic_argument(28)} and took < _STALL_BOUND_S
    logged = [r.getMessage() for r in caplog.records]
    assert len(logged) == 1 and "not checked" in logged[0], logged
    # Without google-re2 installed, no pattern runs at all (never Python's re).
    monkeypatch.setattr(patterns, "ENGINE", None)
    patterns.clear_cache()
    out, took = _timed_check(hostile_mcp.pattern_schema(), {"text": hostile_mcp.catastrophic_argument(28)})
    assert isinstance(out, dict) and took < _STALL_BOUND_S
    assert "google-re2 is not installed" in caplog.records[-1].getMessage()
    patterns.clear_cache()


def test_oversized_arguments_are_refused_before_any_check():
    from iris_voice.tools.mcp.schema import MAX_ARGUMENT_CHARS

    out, _ = _timed_check(hostile_mcp.pattern_schema(), {"text": "a" * (MAX_ARGUMENT_CHARS + 1)})
    assert isinstance(out, str) and out.startswith("arguments for t/x are too long (")


# --- 2. names and sizes -----------------------------------------------------------------


def _prompt_text(specs) -> str:
    """The tools in every format, without IRIS's own call instructions (which name </tool_call>)."""
    texts = []
    for fmt in FORMATS:
        out = render(specs, fmt)
        text = out if isinstance(out, str) else json.dumps(out, ensure_ascii=False)
        texts.append(text.replace(SYSTEM_TOOL_INSTRUCTIONS.get(fmt, "\0"), ""))
    return "\n".join(texts)


async def test_evil_tool_names_never_reach_the_prompt_and_are_listed_as_skipped(caplog):
    caplog.set_level(logging.INFO, logger="iris_voice.tools.mcp")
    async with running(hostile("names"), hostile("names", mode="lazy", category="evil/lazy")) as (
        manager,
        registry,
    ):
        names = registry.names()
        assert "evil/echo" in names  # the sane tools of the same server are kept
        mcp_names = [n for n in names if n.startswith("evil/")]
        for name in mcp_names:
            assert re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", name.removeprefix("evil/")), name
        prompt = _prompt_text(registry.specs())
        for marker in (
            "</tool_call>",
            "<|im_end|>",
            "etc/passwd",
            "x" * 100,
            "line\\nbreak",
            "back\\\\slash",
        ):
            assert marker not in prompt, marker
        browse = (await registry.call(BROWSE_TOOL, {"path": "evil/lazy"})).result
        assert "evil/lazy/echo" in browse
        for marker in ("</tool_call>", "<|im_end|>", "etc/passwd", "x" * 100, "\nbreak"):
            assert marker not in browse, marker
        # Each refused tool is one row of `iris tools list`, its name shown safely, with the reason.
        skipped = [i for i in manager.listing() if i.description.startswith("(skipped:")]
        evil_count = len(hostile_mcp.evil_tool_names())
        badly_named = [i for i in skipped if i.server == "evil" and "not a usable tool name" in i.description]
        assert len(badly_named) == evil_count
        assert all("\n" not in i.path and len(i.path) < 120 for i in skipped)
        # Logged once each, briefly; a fresh list (list_changed) does not log them again.
        warned = [r for r in caplog.records if "skipped" in r.getMessage() and r.name.endswith("client")]
        assert all(len(r.getMessage()) < _LOG_BOUND and "\n" not in r.getMessage() for r in warned)
        before = len(warned)
        added = await registry.call("evil/add_tool", {"name": "late_tool"})
        assert added.ok, added.result
        deadline = time.monotonic() + 10
        while "evil/late_tool" not in registry and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert "evil/late_tool" in registry
        warned = [r for r in caplog.records if "skipped" in r.getMessage() and r.name.endswith("client")]
        assert len(warned) == before


def test_iris_tools_list_shows_refused_tools_as_skipped(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    path = tmp_path / "iris.toml"
    path.write_text(
        '[[mcp.servers]]\nname = "evil"\ncategory = "evil"\nmode = "eager"\n'
        f"command = {json.dumps(PY)}\nargs = {json.dumps([FLAKY, '--hostile', 'names'])}\n"
        f"env = {{PYTHONPATH = {json.dumps(FLAKY_ENV['PYTHONPATH'])}}}\n"
    )
    assert main(["--config", str(path), "tools", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    skipped = [line for line in lines if "(skipped: not a usable tool name" in line]
    assert len(skipped) == len(hostile_mcp.evil_tool_names()), lines
    assert any(line.startswith("evil/echo ") for line in lines)
    # Printed escaped and cut: a name cannot break a line or flood the terminal.
    assert any(line.startswith('evil/"line\\nbreak"') for line in lines), lines
    assert not any("x" * 100 in line for line in lines)


async def test_eager_definitions_stay_within_the_prompt_budget():
    async with running(hostile("schemas")) as (manager, registry):
        specs = [s for s in registry.specs() if s.name.startswith("evil/")]
        size = len(json.dumps(render(specs, "ollama"), ensure_ascii=False))
        assert size <= _EAGER_SERVER_CHARS, size
        assert "evil/echo" in registry.names()  # the server's own small tools came first and fit
        refused = [
            i for i in manager.listing() if i.server == "evil" and i.description.startswith("(skipped:")
        ]
        assert any("budget" in i.description for i in refused), refused[:3]
        assert any("input schema takes" in i.description for i in refused), refused[:3]
        for spec in specs:
            assert len(json.dumps(spec.parameters)) <= 2_000 and len(spec.description) <= 300


async def test_a_lazy_browse_answer_is_capped_and_says_how_many_more():
    async with running(hostile("many", "schemas", mode="lazy")) as (manager, registry):
        answer = (await registry.call(BROWSE_TOOL, {"path": "evil"})).result
        assert len(answer) <= _BROWSE_CHARS, len(answer)
        assert "evil/echo" in answer and "more tools" in answer
        assert answer.splitlines()[-1].startswith("To run a tool, call:")
        # The server's tools still run by their paths.
        res = await execute(registry, "evil/repeat", {"text": "hi", "times": 2})
        assert (res.ok, res.result) == (True, "hi hi")
        conn = manager.server("evil")
        assert len(conn.tools) <= 128 and any("more than" in why for why in conn.skipped.values())


# --- 3. results -------------------------------------------------------------------------


async def test_a_huge_answer_reaches_the_model_cut_and_the_loop_stays_responsive():
    async with running(flaky(timeout_s=30.0)) as (_, registry):
        async with watched_loop() as watch:
            res = await execute(registry, "test/flaky/huge", {"megabytes": 20})
        assert watch.worst < _STALL_BOUND_S, f"event loop blocked {watch.worst:.2f} s"
        assert len(res.result) <= MAX_RESULT_CHARS + 200, len(res.result)
        again = await execute(registry, "test/flaky/echo", {"text": "still here"})
        assert (again.ok, again.result) == (True, "still here")


async def test_late_answers_and_huge_errors_are_logged_and_told_briefly(caplog):
    _log_levels(caplog)
    async with running(flaky(timeout_s=1.0)) as (_, registry):
        late = await execute(registry, "test/flaky/huge", {"megabytes": 5, "delay": 1.5})
        assert late.result == "Error: test/flaky/huge timed out after 1 s"
        error = await execute(registry, "test/flaky/huge_error", {"megabytes": 5})
        assert error.result.startswith("Error: ") and len(error.result) <= MAX_RESULT_CHARS + 200
        await asyncio.sleep(3)  # the late answer arrives and is noticed
        echo = await execute(registry, "test/flaky/echo", {"text": "after"})
        assert (echo.ok, echo.result) == (True, "after")
    longest = max(caplog.records, key=lambda r: len(r.getMessage()))
    assert len(longest.getMessage()) < _LOG_BOUND, (longest.name, longest.getMessage()[:200])


@pytest.mark.parametrize("answer", ["sse", "json"])
async def test_a_huge_answer_over_http_fails_at_once_saying_why(answer, caplog):
    _log_levels(caplog)
    args = ["--json-response"] if answer == "json" else []
    async with http_flaky(*args) as url:
        web = McpServerConfig(name="web", category="web", url=url, timeout_s=30.0)
        async with running(web) as (_, registry):
            async with watched_loop() as watch:
                res = await execute(registry, "web/huge", {"megabytes": 20})
            assert res.result.startswith("Error: web/huge failed: the server's answer is too large"), (
                res.result
            )
            assert watch.worst < _STALL_BOUND_S, f"event loop blocked {watch.worst:.2f} s"
            again = await execute(registry, "web/echo", {"text": "still here"})
            assert (again.ok, again.result) == (True, "still here")
    longest = max(caplog.records, key=lambda r: len(r.getMessage()))
    assert len(longest.getMessage()) < _LOG_BOUND, (longest.name, longest.getMessage()[:200])


def test_a_line_reader_assembles_lines_across_chunks_and_never_an_oversized_one():
    from iris_voice.tools.mcp.stdio import LineReader

    reader = LineReader(limit=1_000)
    small = b'{"jsonrpc":"2.0","id":1,"result":{"content":[]}}'
    assert reader.feed(small[:10]) == []
    done = reader.feed(small[10:] + b"\n\n")  # and a blank line, which is no message
    assert [m.message.root.id for m in done] == [1]
    big_py = (
        b'{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"' + b"x" * 5_000 + b'"}]}}\n'
    )
    big_ts = (
        b'{"result":{"content":[{"type":"text","text":"' + b"y" * 5_000 + b'"}]},"jsonrpc":"2.0","id":"8"}\n'
    )
    request = (
        b'{"jsonrpc":"2.0","id":9,"method":"sampling/createMessage","params":{"x":"' + b"z" * 5_000 + b'"}}\n'
    )
    out = []
    for stream in (big_py, big_ts, request):
        for i in range(0, len(stream), 700):  # in pieces, as a pipe delivers them
            out += reader.feed(stream[i : i + 700])
    errors = [m.message.root for m in out[:2]]
    assert [e.id for e in errors] == [7, "8"]
    assert all(e.error.message.startswith("the server's answer is too large (") for e in errors)
    assert isinstance(out[2], ValueError)  # a request, not an answer: nobody to tell but the log
    assert reader._parts == [] and reader._size == 0


def test_a_result_is_cut_block_by_block():
    from mcp import types

    from iris_voice.tools.mcp.results import result_text

    exact = types.CallToolResult(content=[types.TextContent(type="text", text="a" * MAX_RESULT_CHARS)])
    assert result_text(exact) == "a" * MAX_RESULT_CHARS
    many = [types.TextContent(type="text", text="b" * 3_000) for _ in range(1_000)]
    cut = result_text(types.CallToolResult(content=many))
    assert len(cut) <= MAX_RESULT_CHARS and cut.endswith("(truncated)")


def test_a_20_mb_answer_costs_bounded_memory():
    """ru_maxrss of a fresh process before and after one 20 MB answer (tests/support/mcp_rss.py)."""
    out = subprocess.run(
        [sys.executable, "-m", "tests.support.mcp_rss", "20"], capture_output=True, text=True, timeout=100
    )
    assert out.returncode == 0, out.stderr[-2000:]
    measured = json.loads(out.stdout.splitlines()[-1])
    assert measured["peak_reset"], "the kernel would not reset the peak RSS: nothing measured"
    assert measured["growth_mb"] < 40, f"a 20 MB answer grew the peak RSS by {measured['growth_mb']:.0f} MB"
