"""The transport for one MCP server's config: IRIS's bounded stdio, or streamable HTTP with a bounded client.

Both read at most ``MAX_MESSAGE_BYTES`` of any one message a server sends (see ``stdio``
and ``http_transport``); the SDK's own would read a message of any size whole.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from typing import Any, TextIO

from mcp import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from iris_voice.config import McpServerConfig
from iris_voice.tools.mcp.http_transport import http_client
from iris_voice.tools.mcp.stdio import stdio_client


@contextlib.asynccontextmanager
async def open_transport(
    config: McpServerConfig, errlog: TextIO | None = None
) -> AsyncIterator[tuple[Any, Any]]:
    """(read stream, write stream) to the server; a stdio server's stderr goes to ``errlog``."""
    if config.url:
        # The SDK's timeouts (30 s connect, 300 s stream read); each call is bounded by
        # timeout_s on top of that.
        async with (
            http_client() as client,
            streamable_http_client(config.url, http_client=client) as streams,
        ):
            yield streams[0], streams[1]
    else:
        params = StdioServerParameters(
            command=config.command, args=config.args, env=config.env or None, cwd=config.cwd or None
        )
        async with stdio_client(params, errlog=errlog or sys.stderr) as (read, write):
            yield read, write
