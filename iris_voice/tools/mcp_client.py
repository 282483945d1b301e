"""One long-lived connection per MCP server, restarted with backoff when it dies.

The SDK's transports and ``ClientSession`` are anyio context managers whose task groups
must be entered and left by the same task, so each server gets one runner task that
opens the transport, initializes, lists the tools and then sleeps until the
connection closes, a ``notifications/tools/list_changed`` asks for a fresh list, or
IRIS stops. Tool calls are ordinary requests on that session from the caller's task
(the SDK correlates responses by id), each under its own timeout, so a slow tool never
holds up another call or a voice turn. A failure never escapes to the caller: it
becomes a ``CallOutcome`` with ``ok=False`` and text the model can read.

Targets the mcp 1.x client API (``mcp==1.30.0``); see the pins in requirements.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any, Literal, TextIO, TypeVar

import anyio
import httpx
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import ClientSession, McpError, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from iris_voice.tools.mcp_config import McpServerConfig
from iris_voice.tools.mcp_results import CallOutcome, describe_error, leaf_error, result_text

log = logging.getLogger(__name__)

State = Literal["stopped", "starting", "ready", "down"]
T = TypeVar("T")
_STABLE_S = 10.0  # a connection that lived this long resets the backoff
_MAX_PAGES = 50  # tools/list pages; a server that always returns a cursor must not loop forever
_TRANSPORT_ERRORS = (
    anyio.ClosedResourceError,
    anyio.BrokenResourceError,
    anyio.EndOfStream,
    OSError,
    httpx.HTTPError,
)


class _ConnectionLost(Exception):
    """The session ended under the runner; ``last_error`` already says why."""


async def _unless_lost(coro: Coroutine[Any, Any, T], lost: asyncio.Event) -> T:
    """Await ``coro`` but give up with ``_ConnectionLost`` as soon as ``lost`` is set.

    When a server dies, the runner tears its session down; a request still waiting
    for its response would otherwise sit out its whole timeout.
    """
    call = asyncio.ensure_future(coro)
    watcher = asyncio.ensure_future(lost.wait())
    try:
        await asyncio.wait({call, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watcher.cancel()
        if not call.done():
            call.cancel()
            call.add_done_callback(_consume)
    if not call.done():
        raise _ConnectionLost()
    return call.result()


def _consume(task: asyncio.Future[Any]) -> None:
    """Retrieve an abandoned call's outcome so asyncio does not warn about it."""
    if not task.cancelled():
        task.exception()


class McpServerConnection:
    """Owns one MCP server: start, cached tool list, calls, restart with exponential backoff."""

    def __init__(
        self,
        config: McpServerConfig,
        *,
        backoff_initial_s: float = 0.5,
        backoff_max_s: float = 30.0,
        errlog: TextIO | None = None,
    ) -> None:
        self.config = config
        self._errlog = errlog  # where a stdio server's stderr goes; None: IRIS's own (journald)
        self.state: State = "stopped"
        """``starting`` until the first tools/list, ``ready``, ``down`` while waiting to restart."""
        self.last_error = ""
        """Why the server last failed; empty while it is healthy."""
        self.restarts = 0
        """How many times the connection was re-established after a failure."""
        self._backoff = (backoff_initial_s, backoff_max_s)
        self._tools: tuple[types.Tool, ...] = ()
        self._listed = False
        self._session: ClientSession | None = None
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._ready_at: float | None = None
        self._first_attempt = asyncio.Event()  # set once the first start succeeded or failed
        self._wake = asyncio.Event()
        self._stopping = False
        self._closed = False
        self._lost = asyncio.Event()
        self._refresh_pending = False
        self._listeners: list[Callable[[McpServerConnection], None]] = []

    @property
    def name(self) -> str:
        """The server's configured name."""
        return self.config.name

    @property
    def tools(self) -> tuple[types.Tool, ...]:
        """The last tool list the server sent (kept while it restarts)."""
        return self._tools

    @property
    def listed(self) -> bool:
        """True once a tool list has been received at least once."""
        return self._listed

    def on_tools_changed(self, callback: Callable[[McpServerConnection], None]) -> None:
        """Call ``callback(connection)`` whenever a new tool list arrives."""
        self._listeners.append(callback)

    def start(self, task_group: asyncio.TaskGroup | None = None) -> None:
        """Start the runner task in the background; returns at once."""
        if self._task is not None and not self._task.done():
            return
        self._stopping = False
        self.state = "starting"
        name = f"mcp-{self.name}"
        self._task = (
            task_group.create_task(self._run(), name=name)
            if task_group
            else asyncio.create_task(self._run(), name=name)
        )

    async def stop(self, timeout: float = 8.0) -> None:
        """Close the session and end the server process; cancel the runner if it hangs."""
        task = self._task
        self._stopping = True
        self._wake.set()
        if task is not None and not task.done() and self.state == "starting":
            task.cancel()  # initialize may take the whole startup timeout: no reason to wait for it
        if task is not None and not task.done():
            # The SDK's stdio shutdown waits up to ~4 s for a stubborn process: allow for it.
            await asyncio.wait({task}, timeout=timeout)
            if not task.done():
                task.cancel()
                await asyncio.wait({task}, timeout=2.0)
        self.state = "stopped"

    async def wait_ready(self, timeout: float) -> bool:
        """Wait until the server is ready; False if it is not within ``timeout`` seconds."""
        try:
            await asyncio.wait_for(self._ready.wait(), timeout)
        except TimeoutError:
            return False
        return True

    async def wait_settled(self, timeout: float) -> bool:
        """Wait until the first start succeeded or failed (not for restarts); True if ready."""
        await self._wait_first_attempt(timeout)
        return self.state == "ready"

    async def wait_listed(self, timeout: float) -> tuple[types.Tool, ...]:
        """The tool list, waiting up to ``timeout`` while the server is still starting.

        A server that is down answers from its cache at once; one that never listed its
        tools raises ``ConnectionError`` with the reason.
        """
        if not self._listed and self._first_start():
            await self._wait_first_attempt(timeout)
        if not self._listed:
            raise ConnectionError(self._unavailable_reason())
        return self._tools

    async def call(self, tool: str, arguments: dict[str, Any], timeout: float | None = None) -> CallOutcome:
        """Call one tool; every failure becomes a ``CallOutcome`` with ``ok=False``."""
        timeout = timeout or self.config.timeout_s
        if self._first_start():
            await self._wait_first_attempt(timeout)
        session, lost = self._session, self._lost
        if self.state != "ready" or session is None:
            return CallOutcome(
                False, f"MCP server '{self.name}' is not available: {self._unavailable_reason()}"
            )
        try:
            async with asyncio.timeout(timeout):
                result = await _unless_lost(session.call_tool(tool, arguments), lost)
        except _ConnectionLost:
            return CallOutcome(
                False, f"MCP server '{self.name}' is not available: {self._unavailable_reason()}"
            )
        except TimeoutError:
            log.warning("MCP %s/%s timed out after %.1f s", self.config.category, tool, timeout)
            return CallOutcome(False, f"{self.config.category}/{tool} timed out after {timeout:g} s")
        except Exception as exc:
            leaf = leaf_error(exc)
            closed = isinstance(leaf, McpError) and leaf.error.code == types.CONNECTION_CLOSED
            if closed or isinstance(leaf, _TRANSPORT_ERRORS):
                self._connection_lost(describe_error(leaf))
                return CallOutcome(
                    False, f"MCP server '{self.name}' is not available: {describe_error(leaf)}"
                )
            # A JSON-RPC error (unknown tool, bad params) or a result the SDK rejected.
            return CallOutcome(False, f"{self.config.category}/{tool} failed: {describe_error(leaf)}")
        text = result_text(result)
        return CallOutcome(not result.isError, text)

    def _first_start(self) -> bool:
        """Starting for the first time (pre-warm): worth waiting for, unlike a failing restart."""
        return self.state == "starting" and not self._first_attempt.is_set()

    async def _wait_first_attempt(self, timeout: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._first_attempt.wait(), timeout)

    def _unavailable_reason(self) -> str:
        if self.state == "stopped":
            return "not started"
        return self.last_error or ("still starting" if self.state == "starting" else "restarting")

    def _connection_lost(self, reason: str) -> None:
        """Mark the session dead so the runner tears it down and restarts the server."""
        if self.state == "ready":
            self.last_error = reason
            self.state = "down"
        self._closed = True
        self._ready.clear()
        self._lost.set()  # fails the calls still waiting on this session at once
        self._wake.set()

    async def _run(self) -> None:
        """Keep the server connected until ``stop``: connect, serve, back off, retry."""
        delay, failures = self._backoff[0], 0
        while not self._stopping:
            self.state, self._ready_at = "starting", None
            try:
                await self._serve_once()
            except asyncio.CancelledError:
                raise
            except _ConnectionLost:
                pass
            except Exception as exc:  # any failure of a server means a restart, never a daemon crash
                self.last_error = describe_error(exc)
            finally:
                self._session = None
                self._ready.clear()
                self._first_attempt.set()
            if self._stopping:
                break
            ready_at = self._ready_at
            if ready_at is not None and time.monotonic() - ready_at >= _STABLE_S:
                delay = self._backoff[0]
            self.state = "down"
            failures = 1 if ready_at is not None else failures + 1
            # Warn once per outage; a server that stays broken logs quietly (journald is not a ticker).
            level = logging.WARNING if failures == 1 else logging.INFO
            log.log(
                level, "MCP server %s is down (%s); restarting in %.1f s", self.name, self.last_error, delay
            )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wait_stop(), delay)
            delay = min(delay * 2, self._backoff[1])
            self.restarts += 1
        self.state = "stopped"

    async def _wait_stop(self) -> None:
        while not self._stopping:
            await self._wake.wait()
            self._wake.clear()

    @contextlib.asynccontextmanager
    async def _transport(self) -> AsyncIterator[tuple[Any, Any]]:
        """The SDK transport for this server's config: (read stream, write stream)."""
        cfg = self.config
        if cfg.url:
            async with streamable_http_client(cfg.url) as streams:
                yield streams[0], streams[1]
        else:
            params = StdioServerParameters(
                command=cfg.command, args=cfg.args, env=cfg.env or None, cwd=cfg.cwd or None
            )
            async with stdio_client(params, errlog=self._errlog or sys.stderr) as (read, write):
                yield read, write

    async def _serve_once(self) -> None:
        """One connection's life: returns on stop, raises when the connection fails or ends."""
        self._closed = False
        self._lost = asyncio.Event()
        async with contextlib.AsyncExitStack() as stack:
            read, write = await stack.enter_async_context(self._transport())
            group = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(group.cancel_scope.cancel)
            send, receive = anyio.create_memory_object_stream[Any](0)
            # Relay the transport's messages so that its end (the server died) is noticed
            # even when no request is waiting: the SDK session has no hook for it.
            group.start_soon(self._relay, read, send)
            session = await stack.enter_async_context(
                ClientSession(receive, write, message_handler=self._on_message)
            )
            async with asyncio.timeout(self.config.startup_timeout_s):
                await session.initialize()
                self._set_tools(await self._list_tools(session))
            self._session, self.state, self.last_error = session, "ready", ""
            self._ready_at = time.monotonic()
            self._ready.set()
            self._first_attempt.set()
            log.info("MCP server %s ready with %d tools", self.name, len(self._tools))
            while not (self._stopping or self._closed):
                await self._wake.wait()
                self._wake.clear()
                if self._refresh_pending and not (self._stopping or self._closed):
                    self._refresh_pending = False
                    await self._refresh(session)
            if self._closed and not self._stopping:
                self.last_error = self.last_error or "the connection closed"
                raise _ConnectionLost(self.last_error)

    async def _relay(self, source: MemoryObjectReceiveStream[Any], sink: MemoryObjectSendStream[Any]) -> None:
        try:
            async with source, sink:  # the SDK's HTTP transport leaves its read end to the reader
                async for item in source:
                    await sink.send(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        finally:
            if not self._stopping and not self._closed:
                log.info("MCP server %s: connection closed", self.name)
                self._connection_lost("the server closed the connection")
            self._closed = True
            self._wake.set()

    async def _on_message(self, message: Any) -> None:
        """SDK message hook: note list_changed (refresh happens in the runner, not here)."""
        if isinstance(message, Exception):
            # e.g. a line on stdout that is not JSON-RPC: the connection itself goes on.
            log.warning("MCP server %s sent something unreadable: %s", self.name, describe_error(message))
            return
        if isinstance(getattr(message, "root", None), types.ToolListChangedNotification):
            # Awaiting tools/list here would deadlock: this runs inside the session's receive loop.
            self._refresh_pending = True
            self._wake.set()

    async def _list_tools(self, session: ClientSession) -> list[types.Tool]:
        tools: list[types.Tool] = []
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await session.list_tools(params=params)
            tools.extend(page.tools)
            cursor = page.nextCursor
            if not cursor:
                break
        return tools

    async def _refresh(self, session: ClientSession) -> None:
        try:
            async with asyncio.timeout(self.config.startup_timeout_s):
                tools = await self._list_tools(session)
        except Exception as exc:
            log.warning(
                "MCP server %s: tools/list after list_changed failed (%s)", self.name, describe_error(exc)
            )
            return
        self._set_tools(tools)
        log.info("MCP server %s: tool list changed, now %d tools", self.name, len(tools))

    def _set_tools(self, tools: list[types.Tool]) -> None:
        # A server may list a name twice; the model can only address one of them.
        unique = {t.name: t for t in tools}
        self._tools = tuple(unique.values())
        self._listed = True
        for callback in list(self._listeners):
            try:
                callback(self)
            except Exception:  # a listener's bug must not take the connection down
                log.exception("MCP tools-changed listener failed for %s", self.name)
