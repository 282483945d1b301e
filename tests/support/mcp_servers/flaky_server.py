"""An MCP server (FastMCP) that misbehaves on request, for IRIS's failure tests.

Tools: ``echo`` (normal), ``pid``, ``repeat`` (an integer argument, for coercion), ``slow``
(sleeps past any sensible timeout), ``crash`` (the process exits mid-call), ``odd`` and
``bare`` (malformed input schemas, which IRIS must skip), ``quirky`` (an odd but valid
schema, which IRIS must keep), ``add_tool`` (adds a tool at run time and sends
``notifications/tools/list_changed``), ``match`` (its ``text`` must match a pattern that
backtracks exponentially), ``huge`` (answers with megabytes of text, at once or late)
and ``huge_error`` (fails with a megabytes-long error message).

``--hostile KIND`` (repeatable) adds the tool lists of tests/support/hostile_mcp.py:
``names`` (names that must never reach a prompt), ``schemas`` (definitions far beyond a
small model's context), ``many`` (more tools than any prompt holds). They are listed,
not callable.

Run: ``python flaky_server.py`` (stdio) or ``python flaky_server.py --http PORT``
(streamable HTTP at ``http://127.0.0.1:PORT/mcp``, answering with SSE or, with
``--json-response``, plain JSON); ``--start-delay S`` sleeps before
serving, like a server that is slow to start. The repository root must be on
``PYTHONPATH`` (``tests.support.mcp_servers.flaky`` sets it).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from typing import Any

from mcp.server.fastmcp import Context, FastMCP
from mcp.shared.exceptions import McpError
from mcp.types import ErrorData
from mcp.types import Tool as McpTool

from tests.support.hostile import tool_servers as hostile_mcp

# Invalid JSON Schema, as real servers write it: a property that is not a schema and a
# required list that is a string.
ODD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"count": {"type": "integer"}, "weird": 42},
    "required": "count",
}
# Not even an object schema.
BARE_SCHEMA: dict[str, Any] = {"type": "string", "description": "arguments? what arguments"}
# Valid but odd: a parameter called "title", a recursive $ref, a default of the wrong
# type, an enum mixing types, optional-as-anyOf-null.
QUIRKY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": "quirkyArguments",
    "properties": {
        "count": {"type": "integer", "minimum": 1, "title": "Count", "default": "one"},
        "title": {"type": "string", "description": "A parameter that is literally named title"},
        "tree": {"$ref": "#/$defs/Node"},
        "mode": {"enum": ["a", 2, None]},
        "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
    },
    "required": ["count"],
    "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}},
}


_HOSTILE_KINDS = ("names", "schemas", "many")


def _hostile_tools(kind: str) -> list[McpTool]:
    """The listed-only tools of one ``--hostile`` kind."""
    if kind == "names":
        schema = {"type": "object", "properties": {}}
        names = hostile_mcp.evil_tool_names()
        return [McpTool(name=n, description="evil", inputSchema=schema) for n in names]
    made = hostile_mcp.bloated_server_tools() if kind == "schemas" else hostile_mcp.many_tools()
    return [McpTool(**t) for t in made]


class FlakyMCP(FastMCP):
    """FastMCP whose tool list carries the malformed schemas above, and hostile ones on request."""

    hostile: tuple[str, ...] = ()
    """The ``--hostile`` kinds whose tools are appended to the list."""

    async def list_tools(self) -> list[McpTool]:
        """The normal list, with ``odd`` and ``bare`` given their broken schemas."""
        odd = {
            "odd": ODD_SCHEMA,
            "bare": BARE_SCHEMA,
            "quirky": QUIRKY_SCHEMA,
            "match": hostile_mcp.pattern_schema(),
        }
        tools = [
            t.model_copy(update={"inputSchema": odd[t.name]}) if t.name in odd else t
            for t in await super().list_tools()
        ]
        for kind in self.hostile:
            tools += _hostile_tools(kind)
        return tools


server = FlakyMCP("flaky", log_level="WARNING")


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def pid() -> int:
    """The server's process id (tests check that stopping IRIS ends the process)."""
    return os.getpid()


@server.tool()
def repeat(text: str, times: int) -> str:
    """Repeat the text a number of times, space separated."""
    return " ".join([text] * times)


@server.tool()
async def slow(seconds: float = 30.0) -> str:
    """Sleep, then answer (for timeouts)."""
    await asyncio.sleep(seconds)
    return f"slept {seconds} s"


@server.tool()
def crash() -> str:
    """End the server process in the middle of the call."""
    sys.stdout.flush()
    os._exit(3)


@server.tool()
def odd(count: int = 1, title: str = "") -> str:
    """A tool whose advertised schema is malformed (IRIS must not offer it)."""
    return f"odd count={count} title={title}"


@server.tool()
def quirky(
    count: int = 1, title: str = "", tree: dict | None = None, mode: Any = None, note: Any = None
) -> str:
    """A tool whose advertised schema is odd but valid."""
    return f"quirky count={count} title={title}"


@server.tool()
def bare() -> str:
    """A tool whose advertised schema is not an object."""
    return "bare ok"


@server.tool()
def match(text: str) -> str:
    """Echo ``text``; its advertised schema demands a catastrophically backtracking pattern."""
    return f"matched {text}"


@server.tool()
async def huge(megabytes: float = 20.0, delay: float = 0.0) -> str:
    """Answer with ``megabytes`` MB of text, after ``delay`` seconds (late, past a timeout)."""
    await asyncio.sleep(delay)
    return hostile_mcp.huge_text(megabytes)


@server.tool()
def huge_error(megabytes: float = 5.0) -> str:
    """Fail with a JSON-RPC error whose message is ``megabytes`` MB long."""
    raise McpError(ErrorData(code=-32000, message=hostile_mcp.huge_text(megabytes)))


@server.tool()
async def add_tool(name: str, ctx: Context) -> str:
    """Add a tool called ``name`` (it answers with its name) and announce the new list."""

    def added() -> str:
        """Answer with the tool's own name."""
        return f"I am {name}"

    server.add_tool(added, name=name, description=f"A tool added at run time: {name}")
    await ctx.session.send_tool_list_changed()
    return f"added {name}"


def main() -> None:
    """Serve on stdio, or on streamable HTTP with ``--http PORT``."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, metavar="PORT")
    parser.add_argument("--start-delay", type=float, default=0.0, metavar="S")
    parser.add_argument("--hostile", action="append", default=[], choices=_HOSTILE_KINDS)
    parser.add_argument("--json-response", action="store_true", help="HTTP: answer JSON, not SSE")
    args = parser.parse_args()
    server.hostile = tuple(args.hostile)
    server.settings.json_response = args.json_response
    time.sleep(args.start_delay)
    if args.http:
        server.settings.port = args.http
        server.run("streamable-http")
    else:
        server.run()


if __name__ == "__main__":
    main()
