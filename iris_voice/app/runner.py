"""One runner for every IRIS process: the desktop daemon (``iris run``), the headless hub
(``iris serve``) and the satellite (``iris satellite``).

A ``Mode`` says what its process starts, runs and answers; ``run`` does the rest the same
way for all three: the instance lock (one IRIS per user session), SIGTERM/SIGINT, the
control socket (``iris status`` and the other commands), the event-loop lag monitor, one
TaskGroup for the mode's tasks, ``sd_notify`` READY/STOPPING, and an orderly stop. Which
engines, timer policy and conversations a mode has is decided where it is assembled
(``app.assembly`` and the mode's own ``__init__``), never here.

To add a mode: a ``Runs`` subclass with the members of ``Mode`` (its status through
``app.status.status``), and a command in ``cli`` that runs it with ``run``.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from typing import Any, Protocol

from iris_voice.app.control import ControlServer, Handler
from iris_voice.app.looplag import LoopLagMonitor
from iris_voice.app.runtime import InstanceLock, sd_notify

log = logging.getLogger(__name__)


class Mode(Protocol):
    """One way IRIS runs."""

    looplag: LoopLagMonitor
    """The loop-lag monitor ``run`` runs (its status shows it)."""

    async def start(self) -> str:
        """Check what start-up needs, load the models, open devices and services; the
        ``sd_notify`` STATUS line once ready."""
        ...

    async def tasks(self, tg: asyncio.TaskGroup) -> list[asyncio.Task[Any]]:
        """Start the mode's long-running tasks in ``tg`` (cancelled at the stop)."""
        ...

    async def settle(self, stopping: asyncio.Event) -> None:
        """Wait, bounded, for what READY should mean (the desktop: the model's first try)."""
        ...

    def handlers(self) -> dict[str, Handler]:
        """The control commands it answers: ``ping``, ``status`` and its own."""
        ...

    async def close(self) -> None:
        """Stop services and devices (idempotent; also after a failed start)."""
        ...


class Runs:
    """``run()`` and ``request_stop()``, the same for every ``Mode`` (a base class)."""

    _stopping: asyncio.Event | None = None

    @property
    def stopping(self) -> asyncio.Event:
        """Set to stop (SIGTERM, SIGINT, ``request_stop``)."""
        if self._stopping is None:
            self._stopping = asyncio.Event()
        return self._stopping

    def request_stop(self) -> None:
        """Begin a clean shutdown."""
        self.stopping.set()

    async def run(self) -> int:
        """Run until stopped (``app.runner.run``); the process exit code. A start-up that
        cannot bind what it serves raises ``ConfigError`` naming the key (``iris`` exits 78)."""
        return await run(self, self.stopping)  # type: ignore[arg-type]  # subclasses are Modes


async def run(mode: Mode, stopping: asyncio.Event) -> int:
    """Run ``mode`` until ``stopping`` is set (SIGTERM and SIGINT set it); the exit code."""
    lock = InstanceLock()
    lock.acquire()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    control = ControlServer(mode.handlers())
    try:
        status = await mode.start()
        await control.start()
        async with asyncio.TaskGroup() as tg:
            tasks = [tg.create_task(mode.looplag.run(), name="loop-lag"), *(await mode.tasks(tg))]
            await mode.settle(stopping)
            sd_notify(f"READY=1\nSTATUS={status}")
            await stopping.wait()
            sd_notify("STOPPING=1")
            log.info("stopping")
            for task in tasks:
                task.cancel()
            await mode.close()
    finally:
        await control.close()
        await mode.close()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
        lock.release()
    return 0
