"""An Ollama-protocol server backed by llama.cpp, for IRIS's tests and demo.

No Ollama binary exists on the test machines, so this serves one GGUF through the parts of
Ollama's HTTP API that IRIS uses (``/``, ``/api/version``, ``/api/tags``, ``/api/show``,
``/api/ps``, ``/api/chat``) with Ollama's wire format, status codes and error texts. The
prompt is built with the GGUF's own chat template; one ``Llama`` instance is reused so
llama-cpp-python's longest-prefix KV reuse gives real prompt caching between turns.

    python -m tools.testbed.ollama_server --model-path GGUF [--model NAME ...] [--no-tools-model NAME ...]
        [--host 127.0.0.1] [--port 0] [--n-ctx 4096] [--threads 2]
    python -m tools.testbed.ollama_server --scripted [--port 0]     # a broken model on demand

With ``--scripted`` no model is loaded: replies are queued with ``POST /_script``
(``tools/testbed/scripted_engine.py``), for the abuse benchmark.

Prints exactly one line, ``listening on http://HOST:PORT``, once the model is loaded.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import logging
import os
import signal
import socket
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from tools.testbed import ollama_proto as proto
from tools.testbed import ollama_replies as replies
from tools.testbed.fetch_models import gguf_path
from tools.testbed.llama_engine import Engine, Job
from tools.testbed.scripted_engine import ScriptedEngine

log = logging.getLogger("ollama_server")

OLLAMA_VERSION = "0.12.0"
DEFAULT_MODEL = "qwen2.5-coder:1.5b"
FOREVER = 292 * 365.25 * 86400  # Ollama turns a negative keep_alive into MaxInt64 ns ≈ 292 years


@dataclass(frozen=True)
class ServedModel:
    """One name under which the GGUF is served."""

    name: str
    """Canonical display name, e.g. ``qwen2.5-coder:1.5b`` or ``qwen-notools:latest``."""
    tools: bool
    """Whether the name advertises (and accepts) tools."""
    digest: str
    """A stable 64-hex digest, distinct per name like Ollama's manifest digests."""


class OllamaApp:
    """The HTTP layer: validation, model lookup and response shaping around an :class:`Engine`."""

    def __init__(self, engine: Engine | ScriptedEngine, models: list[ServedModel]) -> None:
        self.engine = engine
        self.models = {m.name: m for m in models}
        self.loaded: dict[str, float] = {}  # name → expiry (epoch seconds), for /api/ps
        routes = [
            Route("/", self.root, methods=["GET"]),
            Route("/api/version", self.version, methods=["GET"]),
            Route("/api/tags", self.tags, methods=["GET"]),
            Route("/api/ps", self.ps, methods=["GET"]),
            Route("/api/show", self.show, methods=["POST"]),
            Route("/api/chat", self.chat, methods=["POST"]),
        ]
        if isinstance(engine, ScriptedEngine):
            routes.append(Route("/_script", self.script, methods=["POST"]))
            routes.append(Route("/_script", self.seen, methods=["GET"]))
        self.asgi = Starlette(routes=routes)

    # --- metadata endpoints ---------------------------------------------------------------------

    def _describe(self, m: ServedModel) -> dict[str, Any]:
        return replies.model_entry(
            m.name, m.digest, self.engine.size, self.engine.modified, self.engine.metadata
        )

    async def root(self, request: Request) -> Response:
        """``GET /``: the liveness probe Ollama answers."""
        return PlainTextResponse("Ollama is running")

    async def version(self, request: Request) -> Response:
        """``GET /api/version``."""
        return JSONResponse({"version": OLLAMA_VERSION})

    async def tags(self, request: Request) -> Response:
        """``GET /api/tags``: every served name."""
        return JSONResponse({"models": [self._describe(m) for m in self.models.values()]})

    async def ps(self, request: Request) -> Response:
        """``GET /api/ps``: names used recently whose keep_alive has not run out."""
        now, ctx = time.time(), self.engine.n_ctx
        out = [
            {
                **self._describe(self.models[n]),
                "expires_at": replies.rfc3339(t),
                "size_vram": 0,
                "context_length": ctx,
            }
            for n, t in self.loaded.items()
            if t > now
        ]
        return JSONResponse({"models": out})

    async def show(self, request: Request) -> Response:
        """``POST /api/show``: template, parameters, details, model_info and capabilities."""
        body = await _json_body(request)
        if isinstance(body, Response):
            return body
        name = body.get("model") or body.get("name") if isinstance(body, dict) else None
        if not isinstance(name, str) or not name:
            return _error(400, "model is required")
        m = self.models.get(proto.canonical_name(name))
        if m is None:
            return _error(404, f"model '{name}' not found")
        eng = self.engine
        body = replies.show_body(
            m.name, m.tools, eng.metadata, eng.template.source, str(eng.model_path), eng.modified
        )
        body["model_info"]["general.parameter_count"] = eng.n_params  # computed by Ollama, not a GGUF key
        return JSONResponse(body)

    async def script(self, request: Request) -> Response:
        """``POST /_script {"replies": [...]}``: queue the scripted model's next replies."""
        body = await _json_body(request)
        if isinstance(body, Response):
            return body
        try:
            queued = self.engine.script(body.get("replies", []) if isinstance(body, dict) else [])
        except ValueError as exc:
            return _error(400, str(exc))
        return JSONResponse({"queued": queued})

    async def seen(self, request: Request) -> Response:
        """``GET /_script``: what each request to the scripted model carried (sizes only)."""
        return JSONResponse({"requests": self.engine.requests[-50:], "queued": len(self.engine.queue)})

    # --- chat ------------------------------------------------------------------------------------

    def _touch(self, name: str, keep_alive: float | None) -> None:
        # Ollama keeps a runner per model; here the names share one Llama, only /api/ps differs.
        if keep_alive == 0:
            self.loaded.pop(name, None)
        else:
            self.loaded[name] = time.time() + (FOREVER if keep_alive is None else keep_alive)

    async def chat(self, request: Request) -> Response:
        """``POST /api/chat``: NDJSON stream by default, one JSON object with ``stream: false``."""
        t0 = time.perf_counter()
        body = await _json_body(request)
        if isinstance(body, Response):
            return body
        try:
            req = proto.parse_chat_request(body)
        except proto.ProtocolError as exc:
            return _error(exc.status, exc.message)
        m = self.models.get(proto.canonical_name(req.model))
        if m is None:
            return _error(404, f'model "{req.model}" not found, try pulling it first')
        # Same order of checks as Ollama's ChatHandler: thinking first, then the capabilities.
        if req.think:
            return _error(400, f'"{req.model}" does not support thinking')
        if req.tools and not m.tools:
            return _error(400, f"{proto.registry_name(req.model)} does not support tools")
        self._touch(m.name, req.keep_alive)
        if not req.messages:  # Ollama's way to preload (or, with keep_alive 0, unload) a model
            return JSONResponse(
                replies.chat_final(req.model, {"done_reason": "unload" if req.keep_alive == 0 else "load"})
            )
        job = Job(
            messages=req.messages,
            tools=req.tools,
            options=req.options,
            t_request=t0,
            think=req.think,
            format=req.format,
        )
        events = self._events(req, job)
        if req.stream:
            lines = (json.dumps(o, ensure_ascii=False, separators=(",", ":")) + "\n" async for o in events)
            return StreamingResponse(lines, media_type="application/x-ndjson")
        # stream: false gets the same pieces merged into one object, as Ollama does.
        content, calls = [], []
        async for obj in events:
            if "error" in obj:
                return _error(500, obj["error"])
            content.append(obj["message"]["content"])
            calls.extend(obj["message"].get("tool_calls", []))
            if obj["done"]:
                message = {"role": "assistant", "content": "".join(content)}
                return JSONResponse({**obj, "message": message | ({"tool_calls": calls} if calls else {})})
        return _error(500, "generation ended without a result")

    async def _events(self, req: proto.ChatRequest, job: Job) -> AsyncIterator[dict[str, Any]]:
        """Engine output → Ollama response objects, with the ``<tool_call>`` filter applied."""
        tool_filter = proto.ToolCallFilter(bool(req.tools))
        try:
            async for kind, value in self.engine.stream(job):
                if kind == "text":
                    out = tool_filter.feed(value)
                    if out:
                        yield replies.chat_chunk(req.model, out)
                    if calls := tool_filter.ready():  # each call as soon as it is complete
                        yield replies.chat_chunk(req.model, "", calls)
                elif kind == "error":
                    yield {"error": value}
                    return
                elif kind == "wire":  # a recorded response object, sent as it was
                    yield {**value, "model": req.model}
                    if value.get("done"):
                        return
                else:  # "done"
                    rest, calls = tool_filter.finish()
                    if calls:
                        yield replies.chat_chunk(req.model, "", calls)
                    if rest:
                        yield replies.chat_chunk(req.model, rest)
                    value["total_duration"] = replies.ns(time.perf_counter() - job.t_request)
                    yield replies.chat_final(req.model, value)
        finally:
            # The keep_alive clock starts when the request ends, as in Ollama's scheduler.
            self._touch(self.models[proto.canonical_name(req.model)].name, req.keep_alive)


async def _json_body(request: Request) -> Any:
    raw = await request.body()
    if not raw.strip():
        return _error(400, "missing request body")
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        return _error(400, f"invalid JSON: {exc}")


def _error(status: int, message: str) -> Response:
    return JSONResponse({"error": message}, status_code=status)


def _digest(name: str, model_path: Path) -> str:
    # Hashing 1 GB at every start would cost seconds; the assembler's stamp (or size+mtime) is stable enough.
    stamp = model_path.with_suffix(".sha256")
    st = model_path.stat()
    base = stamp.read_text().strip() if stamp.exists() else f"{model_path}:{st.st_size}:{st.st_mtime_ns}"
    return hashlib.sha256(f"{name}\0{base}".encode()).hexdigest()


class _Server(uvicorn.Server):
    """uvicorn without its own signal capture: we install loop signal handlers ourselves,
    because uvicorn re-raises a captured SIGTERM after serving, which skips our cleanup."""

    @contextlib.contextmanager
    def capture_signals(self):
        """No-op: signals are handled by :func:`_serve`."""
        yield


async def _serve(server: _Server, sock: socket.socket, engine: Engine | ScriptedEngine) -> None:
    loop = asyncio.get_running_loop()

    def stop() -> None:
        engine.cancel_all()  # end running generations so the graceful shutdown is quick
        server.force_exit = server.should_exit  # a second signal skips waiting for connections
        server.should_exit = True

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop)
    await server.serve(sockets=[sock])


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)  # listening before we announce the port, so early clients queue instead of failing
    return sock


def main(argv: list[str] | None = None) -> int:
    """Parse the CLI, load the model, serve until SIGTERM/SIGINT."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--model-path", type=Path, help="GGUF file (default: tools.testbed.fetch_models's location)"
    )
    p.add_argument("--model", action="append", default=[], help=f"served name (default {DEFAULT_MODEL})")
    p.add_argument(
        "--no-tools-model", action="append", default=[], help="extra name without the tools capability"
    )
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0 picks a free port")
    p.add_argument(
        "--n-ctx", type=int, default=4096, help="context loaded at start and used when num_ctx is unset"
    )
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--verbose", action="store_true", help="debug logging")
    p.add_argument("--scripted", action="store_true", help="no model: replies queued with POST /_script")
    args = p.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    model_path = args.model_path or gguf_path()
    engine: Engine | ScriptedEngine
    if args.scripted:
        engine, model_path = ScriptedEngine(args.n_ctx), Path(__file__)
    elif not model_path.is_file():
        p.error(f"model file not found: {model_path}")
    else:
        engine = Engine(model_path, n_ctx=args.n_ctx, threads=args.threads)
    served = [
        ServedModel(proto.canonical_name(n), True, _digest(n, model_path))
        for n in args.model or [DEFAULT_MODEL]
    ]
    served += [
        ServedModel(proto.canonical_name(n), False, _digest(n, model_path)) for n in args.no_tools_model
    ]
    app = OllamaApp(engine, served)
    sock = _bind(args.host, args.port)
    config = uvicorn.Config(
        app.asgi, log_level="warning", access_log=False, lifespan="off", timeout_graceful_shutdown=2
    )
    host, port = sock.getsockname()[:2]
    print(f"listening on http://{host if ':' not in host else f'[{host}]'}:{port}", flush=True)
    asyncio.run(_serve(_Server(config), sock, engine))
    if not engine.close(timeout=2.0):
        log.warning("generation still running at exit; leaving without cleanup")
        sys.stderr.flush()
        os._exit(0)  # a llama_decode in flight cannot be interrupted, and the worker thread would block exit
    return 0


if __name__ == "__main__":
    sys.exit(main())
