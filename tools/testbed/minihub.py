"""A minimal Wyoming server around IRIS's ``SatellitePart``: the hub for tests and benchmarks.

``iris serve`` (``app.serve``) is the real server: it offers each event to every part of
the service and answers ``describe``. Until the two meet, this stands in for it with the
``wyoming`` package's own ``AsyncTcpServer``: one ``Connection`` per client, each event
offered to the part, ``closed`` when the client goes. Run as a process::

    python -m tools.testbed.minihub --config hub.toml --uri tcp://127.0.0.1:10700

(it prints ``READY <port>`` once the speech models are loaded), or in-process with
``start_hub``.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from wyoming.event import Event
from wyoming.server import AsyncEventHandler, AsyncTcpServer

from iris_voice.app.service_parts import Connection, ServicePart

log = logging.getLogger(__name__)


class PartsHandler(AsyncEventHandler):
    """One client: every event offered to the parts in order (as ``iris serve`` does)."""

    def __init__(self, parts: Sequence[ServicePart], reader: Any, writer: Any) -> None:
        super().__init__(reader, writer)
        self.parts = parts
        self._write_lock = asyncio.Lock()
        peer = writer.get_extra_info("peername") or ("?", 0)
        self.conn = Connection(f"{peer[0]}:{peer[1]}", self._write)

    async def _write(self, event: Event) -> None:
        async with self._write_lock:  # events from several tasks must not interleave bytes
            await self.write_event(event)

    async def handle_event(self, event: Event) -> bool:
        """Offer ``event`` to each part until one takes it; unknown events are ignored."""
        for part in self.parts:
            if await part.handle(event, self.conn):
                break
        return True

    async def disconnect(self) -> None:
        """Tell every part the client is gone."""
        for part in self.parts:
            await part.closed(self.conn)


async def start_hub(
    parts: Sequence[ServicePart], host: str = "127.0.0.1", port: int = 0
) -> tuple[AsyncTcpServer, int]:
    """Serve ``parts`` on ``host:port`` (0: any free port); the server and its port."""
    server = AsyncTcpServer(host, port)
    await server.start(lambda reader, writer: PartsHandler(parts, reader, writer))
    assert server._server is not None  # started just above
    bound = server._server.sockets[0].getsockname()[1]
    return server, int(bound)


async def _main(args: argparse.Namespace) -> int:
    from urllib.parse import urlparse

    from iris_voice.app.assembly import build_app, warm_up
    from iris_voice.app.hub import SatellitePart
    from iris_voice.config import load

    cfg, _path = load(Path(args.config) if args.config else None)
    app = build_app(cfg, speech=True, wake=False)
    assert app.engines is not None
    await warm_up(app.engines)
    part = SatellitePart(
        app.cfg, app.registry, app.engines.stt, app.engines.tts, publish=app.bus.publish,
        hold_timers_s=cfg.satellite.hold_timers_s, speech_jobs=cfg.satellite.hub_speech_jobs,
    )  # fmt: skip
    part.attach_timers(app.timers, app.bus.subscribe)
    uri = urlparse(args.uri)
    server, port = await start_hub([part], uri.hostname or "127.0.0.1", uri.port or 0)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    timers = asyncio.create_task(app.timers.run(), name="timers")
    print(f"READY {port}", flush=True)
    await stop.wait()
    timers.cancel()
    await part.aclose()
    await server.stop()
    await app.close()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run a hub process until SIGTERM."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", help="IRIS config.toml for the hub")
    parser.add_argument("--uri", default="tcp://127.0.0.1:0")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s: %(message)s")
    return asyncio.run(_main(args))


if __name__ == "__main__":
    raise SystemExit(main())
