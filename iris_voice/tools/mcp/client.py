"""One long-lived connection per MCP server, restarted with backoff when it dies.

The SDK's transports and ``ClientSession`` are anyio context managers whose task groups
(cancel scopes) must be entered and left by one task, so each server gets one runner
task that opens the transport, initializes, lists the tools and then sleeps until the
connection closes, a ``notifications/tools/list_changed`` asks for a fresh list, or IRIS
stops. Tool calls are ordinary requests on that session from the caller's task (the SDK
matches responses by id), each under its own timeout, so a slow tool holds up neither
another call nor a voice turn. No failure escapes to the caller: it becomes a
``CallOutcome`` with ``ok=False`` and a line the model can read.

Targets the mcp 1.x client API (``mcp==1.30.0``, see requirements/runtime.txt).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any, Literal, TextIO, TypeVar

import anyio
import httpx
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import ClientSession, McpError, types

from iris_voice.config import McpServerConfig
from iris_voice.tools.mcp.results import CallOutcome, describe_error, leaf_error, result_text
from iris_voice.tools.mcp.transport import open_transport
from iris_voice.tools.mcp.vetting import Vetted, vet_tools

log = logging.getLogger(__name__)

State = Literal["stopped", "starting", "ready", "down"]
T = TypeVar("T")
_STABLE_S = 10.0  # a connection that lived this long resets the backoff
_MAX_PAGES = 50  # tools/list pages: a server that always returns a cursor must not loop forever
_TRANSPORT_ERRORS = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError)


class _ConnectionLost(Exception):
    """The session ended under the runner; ``last_error`` already says why."""


async def _unless_lost(coro: Coroutine[Any, Any, T], lost: asyncio.Event) -> T:
    """Await ``coro``, but give up with ``_ConnectionLost`` as soon as ``lost`` is set.

    When a server dies the runner tears its session down; a request still waiting for
    its response would otherwise sit out its whole timeout.
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
    """Owns one MCP server: background start, cached tool list, calls, restarts with backoff."""

    def __init__(
        self,
        config: McpServerConfig,
        *,
        start_wait_s: float = 2.0,
        backoff_initial_s: float = 0.5,
        backoff_max_s: float = 30.0,
        errlog: TextIO | None = None,
    ) -> None:
        self.config = config
        self.start_wait_s = start_wait_s
        """Longest a call waits for a server that is (re)starting before it gets an error."""
        self.state: State = "stopped"
        """``starting`` during an attempt, ``ready``, ``down`` while waiting to restart."""
        self.last_error = ""
        """Why the server last failed; empty while it is healthy."""
        self.restarts = 0
        """How many times a new connection was attempted after a failure."""
        self._errlog = errlog  # a stdio server's stderr; None: IRIS's own (journald)
        self._backoff = (backoff_initial_s, backoff_max_s)
        self._retry_at = 0.0
        self._tools: tuple[types.Tool, ...] = ()
        self.skipped: dict[str, str] = {}
        """Tools left out of the last list (``vetting``): printable name -> why."""
        self.more_skipped = 0
        """Tools left out beyond those named in ``skipped``."""
        self._listed = False
        self._session: ClientSession | None = None
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._settled = asyncio.Event()  # the current attempt succeeded or failed
        self._first_attempt = asyncio.Event()  # the first attempt succeeded or failed
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
        """True once a tool list has been received."""
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
        spawn = task_group.create_task if task_group else asyncio.create_task
        self._task = spawn(self._run(), name=name)

    async def stop(self, timeout: float = 8.0) -> None:
        """Close the session and end the server process; cancel the runner if it hangs."""
        task = self._task
        self._stopping = True
        self._wake.set()
        if task is not None and not task.done() and self.state == "starting":
            task.cancel()  # initialize may take the whole startup timeout: no reason to wait
        if task is not None and not task.done():
            # The SDK's stdio shutdown waits ~2 s for the process, then terminates it.
            await asyncio.wait({task}, timeout=timeout)
            if not task.done():
                task.cancel()
                await asyncio.wait({task}, timeout=2.0)
        self.state = "stopped"

    async def wait_ready(self, timeout: float) -> bool:
        """Wait until the server is ready; False if it is not within ``timeout`` seconds."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._ready.wait(), timeout)
        return self._ready.is_set()

    async def wait_settled(self, timeout: float) -> bool:
        """Wait until the first start succeeded or failed (not for restarts); True if ready.

        For the command line, which starts servers on demand and may wait for them.
        """
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._first_attempt.wait(), timeout)
        return self.state == "ready"

    async def _wait_if_starting(self) -> None:
        """During a start attempt, wait up to ``start_wait_s`` for its outcome (never longer)."""
        if self.state == "starting" and self.start_wait_s > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._settled.wait(), self.start_wait_s)

    def unavailable(self) -> str:
        """One line saying why the server cannot answer now."""
        if self.state == "stopped":
            return f"MCP server '{self.name}' is not running"
        if self.state == "starting":
            return f"MCP server '{self.name}' is still starting; try again in a few seconds"
        why = f": {self.last_error}" if self.last_error else ""
        wait = max(0.0, self._retry_at - time.monotonic())
        when = f"restarting in {wait:.1f} s" if wait > 0.05 else "restarting"
        return f"MCP server '{self.name}' is not available{why} ({when})"

    async def wait_listed(self) -> tuple[types.Tool, ...]:
        """The tool list; waits up to ``start_wait_s`` while the server starts.

        A server that is down answers from its cache; one that never listed its tools
        raises ``ConnectionError`` saying why.
        """
        if not self._listed:
            await self._wait_if_starting()
        if not self._listed:
            raise ConnectionError(self.unavailable())
        return self._tools

    async def call(self, tool: str, arguments: dict[str, Any], timeout: float | None = None) -> CallOutcome:
        """Call one tool; every failure becomes a ``CallOutcome`` with ``ok=False``."""
        timeout = timeout or self.config.timeout_s
        await self._wait_if_starting()
        session, lost = self._session, self._lost
        if self.state != "ready" or session is None:
            return CallOutcome(False, self.unavailable())
        path = f"{self.config.category}/{tool}"
        try:
            async with asyncio.timeout(timeout):
                result = await _unless_lost(session.call_tool(tool, arguments), lost)
        except _ConnectionLost:
            return CallOutcome(False, f"{path} failed: MCP server '{self.name}' stopped ({self.last_error})")
        except TimeoutError:
            log.warning("MCP %s timed out after %.1f s", path, timeout)
            return CallOutcome(False, f"{path} timed out after {timeout:g} s")
        except Exception as exc:
            leaf = leaf_error(exc)
            closed = isinstance(leaf, McpError) and leaf.error.code == types.CONNECTION_CLOSED
            if closed or isinstance(leaf, _TRANSPORT_ERRORS + (httpx.HTTPError,)):
                self._connection_lost(describe_error(leaf))
                return CallOutcome(False, f"{path} failed: MCP server '{self.name}' stopped")
            # A JSON-RPC error (unknown tool, bad params) or a result the SDK rejected.
            return CallOutcome(False, f"{path} failed: {describe_error(leaf)}")
        return CallOutcome(not result.isError, result_text(result))

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
        delay = self._backoff[0]
        while not self._stopping:
            self.state, ready_at = "starting", None
            self._settled.clear()
            try:
                ready_at = await self._serve_once()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # any failure of a server means a restart, never a daemon crash
                leaf = leaf_error(exc)  # anyio's task groups wrap what is raised in their body
                if isinstance(leaf, _ConnectionLost):
                    ready_at = leaf.args[0] if leaf.args else None
                else:
                    self.last_error = describe_error(leaf)
            finally:
                self._session = None
                self._ready.clear()
                self._settled.set()
                self._first_attempt.set()
            if self._stopping:
                break
            if ready_at is not None and time.monotonic() - ready_at >= _STABLE_S:
                delay = self._backoff[0]
            self.state = "down"
            self._retry_at = time.monotonic() + delay
            # Warn once per outage; a server that stays broken logs quietly (journald is not a ticker).
            level = logging.WARNING if ready_at is not None or self.restarts == 0 else logging.INFO
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

    async def _serve_once(self) -> float | None:
        """One connection's life; returns (on stop) or raises ``_ConnectionLost`` with when it got ready."""
        self._closed = False
        self._lost = asyncio.Event()
        async with contextlib.AsyncExitStack() as stack:
            read, write = await stack.enter_async_context(open_transport(self.config, self._errlog))
            group = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(group.cancel_scope.cancel)
            send, receive = anyio.create_memory_object_stream[Any](0)
            # Relay the transport's messages so that its end (the server died) is noticed even
            # when no request is waiting: the SDK session has no hook for it.
            group.start_soon(self._relay, read, send)
            session = await stack.enter_async_context(
                ClientSession(receive, write, message_handler=self._on_message)
            )
            # asyncio.timeout, not wait_for: wait_for (3.11) would run this in another task,
            # and the SDK's cancel scopes must be left by the task that entered them.
            async with asyncio.timeout(self.config.startup_timeout_s):
                await session.initialize()
                self._set_tools(await self._vetted(await self._list_tools(session)))
            ready_at = time.monotonic()
            self._session, self.state, self.last_error = session, "ready", ""
            self._ready.set()
            self._settled.set()
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
                raise _ConnectionLost(ready_at)
        return ready_at

    async def _relay(self, source: MemoryObjectReceiveStream[Any], sink: MemoryObjectSendStream[Any]) -> None:
        try:
            async with source, sink:  # the SDK's HTTP transport leaves its read end to the reader
                async for item in source:
                    await sink.send(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        finally:
            if not self._stopping and not self._closed:
                log.info("MCP server %s closed the connection", self.name)
                self._connection_lost("the server closed the connection")
            self._closed = True
            self._wake.set()

    async def _on_message(self, message: Any) -> None:
        """SDK message hook: note list_changed (the refresh happens in the runner, not here)."""
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
        self._set_tools(await self._vetted(tools))
        log.info("MCP server %s: tool list changed, now %d tools", self.name, len(self._tools))

    async def _vetted(self, tools: list[types.Tool]) -> Vetted:
        """The list sorted by ``vetting``, in a worker thread: checking schemas takes time."""
        return await asyncio.to_thread(
            vet_tools, self.config.category, tools, eager=self.config.mode == "eager"
        )

    def _set_tools(self, vetted: Vetted) -> None:
        for name, why in vetted.skipped.items():
            if self.skipped.get(name) != why:  # once per list, not on every refresh
                log.warning("MCP server %s: tool %s skipped: %s", self.name, name, why)
        if vetted.more_skipped and vetted.more_skipped != self.more_skipped:
            log.warning("MCP server %s: %d more tools skipped", self.name, vetted.more_skipped)
        self._tools, self.skipped = tuple(vetted.usable), vetted.skipped
        self.more_skipped = vetted.more_skipped
        self._listed = True
        for callback in list(self._listeners):
            try:
                callback(self)
            except Exception:  # a listener's bug must not take the connection down
                log.exception("MCP tools-changed listener failed for %s", self.name)
