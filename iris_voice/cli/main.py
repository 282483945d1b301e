"""The ``iris`` command line.

Exit codes: 0 ok; 1 a tool or check failed (``iris wake``: the wake word was not heard); 2 bad
usage (``iris wake``: also a WAV file it cannot read); 3 the daemon is not running;
69 the LLM server is unavailable (EX_UNAVAILABLE); 75 IRIS already runs for this user
(EX_TEMPFAIL); 76 what answers on the control socket does not speak its protocol
(EX_PROTOCOL); 78 the configuration is invalid or the runtime directory is unsafe
(EX_CONFIG).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from typing import Any, TextIO

from iris_voice import __version__
from iris_voice import config as config_mod
from iris_voice.errors import (
    EXIT_CONFIG,
    EXIT_FAILED,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    ConfigError,
    IrisError,
    LlmError,
    exit_code,
    is_llm_code,
)
from iris_voice.logsafe import configure as configure_logging


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="iris", description="IRIS, a local voice assistant for the Linux desktop."
    )
    p.add_argument("--version", action="version", version=f"iris {__version__}")
    p.add_argument(
        "--config", metavar="PATH", help="config file (default: $IRIS_CONFIG, ~/.config/iris, /etc/iris)"
    )
    p.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-vv for debug)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    cc = sub.add_parser("check-config", help="validate a config file; prints ok or one line per problem")
    cc.add_argument("path", nargs="?", help="file to check (default: the one IRIS would load)")
    cc.add_argument(
        "--serve", action="store_true",
        help="check as `iris serve` starts: its address is tried whatever serve.enabled says",
    )  # fmt: skip

    tools = sub.add_parser("tools", help="list, render or call the assistant's tools")
    tsub = tools.add_subparsers(dest="tools_command", metavar="ACTION", required=True)
    tl = tsub.add_parser("list", help="the enabled tools; MCP tools under their category/tool paths")
    tl.add_argument("--json", action="store_true")
    ts = tsub.add_parser("schema", help="render the tools for a model")
    ts.add_argument(
        "--format", default="ollama", choices=("ollama", "openai", "anthropic", "text", "concise", "qwen-xml")
    )
    tc = tsub.add_parser("call", help="call a tool (or a lazy MCP tool by its path) with JSON arguments")
    tc.add_argument("name")
    tc.add_argument("arguments", nargs="?", default="{}", help="JSON object")

    ask = sub.add_parser("ask", help="one turn: typed, or spoken in a WAV file")
    ask.add_argument("text", nargs="?", help="the question (leave out with --wav)")
    ask.add_argument("--json", action="store_true", help="print the turn's trace as JSON")
    ask.add_argument("--wav", metavar="IN", help="a WAV file with the spoken question (file mode)")
    ask.add_argument("--out", metavar="OUT", help="with --wav: write the spoken answer to this WAV")
    ask.add_argument("--local", action="store_true", help="answer in this process even if the daemon runs")
    ask.add_argument("--speak", action="store_true", help="through the daemon: also speak the answer")

    wk = sub.add_parser("wake", help="run the wake-word detector over a WAV file (to tune wake.threshold)")
    wk.add_argument("--wav", metavar="FILE", required=True, help="a WAV file, any rate and channel count")
    wk.add_argument("--threshold", type=_threshold, help="instead of wake.threshold (0 < T < 1)")
    wk.add_argument(
        "--patience", type=int, choices=range(1, 9), metavar="K", help="instead of wake.patience (1-8 steps)"
    )
    wk.add_argument(
        "--model", metavar="NAME", help="instead of wake.model: a built-in name or a .tflite file"
    )
    wk.add_argument(
        "--verifier",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="instead of wake.verifier: ask hey_jarvis's verifier (or not)",
    )

    sub.add_parser(
        "doctor", help="check the Ollama server, the model, tools, echo cancellation and Wyoming servers"
    )
    sub.add_parser("run", help="run the voice daemon in the foreground (what the systemd units start)")
    sv = sub.add_parser("serve", help="run IRIS headless as a Wyoming service for other machines ([serve])")
    sv.add_argument("--uri", help="instead of serve.uri, e.g. tcp://0.0.0.0:10700 (needs allow or token)")
    sat = sub.add_parser("satellite", help="be a hub's satellite in another room (mic, wake word, speaker)")
    sat.add_argument("--hub", metavar="tcp://HOST:PORT", help="the hub (default: satellite.hub)")
    sat.add_argument("--name", help="this satellite's room (default: satellite.name, else the host name)")
    sat.add_argument(
        "--listen", metavar="tcp://HOST:PORT",
        help="wait here for the hub to connect, as Home Assistant's satellites do (satellite.listen)",
    )  # fmt: skip
    st = sub.add_parser("status", help="the daemon's state, models, latency and last turns")
    st.add_argument("--json", action="store_true")
    for name, what in (
        ("listen", "start listening for a question now (push-to-talk)"),
        ("stop", "stop speaking and dismiss a ringing timer"),
        ("mute", "stop listening to the microphone"),
        ("unmute", "listen to the microphone again"),
    ):
        sub.add_parser(name, help=what)
    fg = sub.add_parser("forget", help="start new conversations: forget what was said so far")
    fg.add_argument(
        "origin", nargs="?", default="",
        help="only this conversation: a satellite's name (kitchen), desktop, or an origin from "
        "iris status (wyoming:...); none: every conversation",
    )  # fmt: skip
    say = sub.add_parser("say", help="speak a text")
    say.add_argument("text")
    tm = sub.add_parser("timers", help="list or cancel timers and reminders")
    tm.add_argument("action", nargs="?", default="list", choices=("list", "cancel"))
    tm.add_argument("which", nargs="?", default="", help="with cancel: number, label, 'all' or 'last'")
    tm.add_argument("--json", action="store_true")
    dv = sub.add_parser("devices", help="list audio input and output devices")
    dv.add_argument("--json", action="store_true")
    return p


def _threshold(text: str) -> float:
    """``--threshold``: a score strictly between 0 and 1, as ``wake.threshold``."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not between 0 and 1 (exclusive)")
    return value


def _load(args: argparse.Namespace) -> config_mod.Config:
    cfg, _ = config_mod.load(args.config)
    return cfg


def cmd_check_config(args: argparse.Namespace) -> int:
    """Validate a config file: its schema, then every check start-up runs (nothing is started).
    The address ``serve.uri`` is tried when the config serves under ``iris run``
    (``serve.enabled``), or with ``--serve``: ``iris serve`` listens there whatever it says."""
    from iris_voice.app import checks

    try:
        cfg, path = config_mod.load(args.path or args.config)
        checks.check(cfg, source=str(path or "defaults"), serving=cfg.serve.enabled or args.serve)
    except ConfigError as exc:
        for line in exc.problems:
            print(line)
        return EXIT_CONFIG
    print("ok")
    return 0


def cmd_tools(args: argparse.Namespace) -> int:
    """``iris tools list|schema|call``."""
    from iris_voice.safejson import loads

    arguments: Any = None
    if args.tools_command == "call":
        try:
            arguments = loads(args.arguments)  # depth-bounded: 30,000 "[" is no traceback
        except ValueError as exc:
            print(f"iris tools call: arguments are not valid JSON: {exc}", file=sys.stderr)
            return EXIT_USAGE
        if not isinstance(arguments, dict):
            print("iris tools call: arguments must be a JSON object", file=sys.stderr)
            return EXIT_USAGE
    return asyncio.run(_tools(_load(args), args, arguments))


async def _tools(cfg: config_mod.Config, args: argparse.Namespace, arguments: Any) -> int:
    from iris_voice.app.assembly import open_app
    from iris_voice.tools.render import render_json

    async with open_app(cfg, errlog=_server_log(args)) as app:
        registry, mcp = app.registry, app.mcp
        if args.tools_command == "list":
            rows = [
                {"name": s.name, "description": s.description, "parameters": s.parameters}
                for s in registry.specs()
            ]
            for info in mcp.listing() if mcp else []:
                # Eager tools are in the registry already; skipped ones (either mode) are not.
                if info.mode == "lazy" or info.path not in registry:
                    rows.append(
                        {
                            "name": info.path,
                            "description": info.description,
                            "parameters": info.parameters,
                            "mode": "lazy",
                            "server": info.server,
                        }
                    )
            for row in rows:
                if row["name"] in registry and registry.get(row["name"]).meta.get("mode") == "eager":
                    row.update(mode="eager", server=registry.get(row["name"]).meta["server"])
            if args.json:
                print(json.dumps(rows, indent=2, ensure_ascii=False))
            else:
                for row in rows:
                    mark = f"[{row['mode']}] " if row.get("mode") else ""
                    print(f"{row['name']:28} {mark}{row['description']}")
            return 0
        if args.tools_command == "schema":
            print(render_json(registry.specs(), args.format))
            return 0
        name = args.name
        if registry.get(name) is None and mcp and mcp.lazy and "/" in name:
            # A lazy tool not listed yet (hidden tools run by name): through execute_tool.
            arguments, name = {"tool_path": name, "arguments": arguments}, "execute_tool"
        res = await registry.call(name, arguments)
    out: dict[str, Any] = {"ok": res.ok}
    out["result" if res.ok else "error"] = res.result if res.ok else res.result.removeprefix("Error: ")
    print(json.dumps(out, ensure_ascii=False))
    return 0 if res.ok else EXIT_FAILED


def _server_log(args: argparse.Namespace) -> TextIO | None:
    """Where MCP servers' stderr goes: ours with -v, else nowhere (their chatter is not output)."""
    return None if args.verbose else open(os.devnull, "w")  # noqa: SIM115 - lives as long as the command


async def _ask(cfg: config_mod.Config, text: str, as_json: bool, errlog: TextIO | None = None) -> int:
    from iris_voice.app.assembly import open_app
    from iris_voice.conversation.trace import TurnTrace

    async with open_app(cfg, errlog=errlog) as app:
        trace = TurnTrace(text=text)
        async for sentence in app.responder.sentences(text, trace):
            if not as_json:
                print(sentence, flush=True)
    if as_json:
        print(json.dumps(trace.to_dict(), indent=2, ensure_ascii=False))
    return 0


def cmd_ask(args: argparse.Namespace) -> int:
    """One turn: from a WAV file, through the running daemon, or in this process."""
    if args.wav:
        from iris_voice.cli.voice import ask_wav

        return ask_wav(_load(args), args, _server_log(args))
    if not args.text:
        print("iris ask: give a question, or --wav FILE", file=sys.stderr)
        return EXIT_USAGE
    cfg = _load(args)
    if not args.local:
        from iris_voice.app.control import daemon_running, reply_fields, request
        from iris_voice.safejson import one_line

        if daemon_running():
            answer = request("ask", timeout=cfg.llm.request_timeout_s + 10, text=args.text, speak=args.speak)
            if not answer.get("ok"):
                print(f"iris: {one_line(answer.get('error'))}", file=sys.stderr)
                return EXIT_UNAVAILABLE if is_llm_code(answer.get("code")) else EXIT_FAILED
            with reply_fields("ask"):
                trace = answer["trace"]
                out = json.dumps(trace, indent=2, ensure_ascii=False) if args.json else str(trace["reply"])
            print(out)
            return 0
    return asyncio.run(_ask(cfg, args.text, args.json, _server_log(args)))


def cmd_doctor(args: argparse.Namespace) -> int:
    """Check the server, model, tool support and context size; one line per check."""
    from iris_voice.app.doctor import echo_check, run_checks

    cfg = _load(args)
    failed = 0
    checks: list[tuple[bool | None, str]] = [*asyncio.run(run_checks(cfg)), echo_check(cfg)]
    checks += _serve_checks(cfg)
    for ok, line in checks:
        print({True: "ok    ", False: "FAIL  ", None: "note  "}[ok] + line)
        failed += ok is False
    return EXIT_FAILED if failed else 0


def _serve_checks(cfg: config_mod.Config) -> list[tuple[bool | None, str]]:
    """``iris serve``'s lines (with its clients when the daemon or hub answers ``status``)."""
    from iris_voice.app.control import daemon_running, request
    from iris_voice.wyoming.doctor import satellite_checks, serve_checks

    try:
        status = request("status", timeout=cfg.llm.connect_timeout_s + 5) if daemon_running() else None
    except (IrisError, OSError, ValueError):
        status = None
    checks = asyncio.run(serve_checks(cfg, status if status and status.get("ok") else None))
    return checks + asyncio.run(satellite_checks(cfg))


def _voice(name: str):
    def run(args: argparse.Namespace) -> int:
        from iris_voice.cli import voice as cli_voice

        return getattr(cli_voice, f"cmd_{name}")(args, _load(args))

    return run


COMMANDS = {
    "check-config": cmd_check_config,
    "tools": cmd_tools,
    "ask": cmd_ask,
    "doctor": cmd_doctor,
    **{n: _voice(n) for n in "run serve status listen stop mute unmute forget say".split()},
    **{n: _voice(n) for n in "timers devices wake satellite".split()},
}


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``iris`` command."""
    parser = _parser()
    args = parser.parse_args(argv)
    level = [logging.WARNING, logging.INFO, logging.DEBUG][min(args.verbose, 2)]
    configure_logging(level)  # one line per record: what a client sent forges none
    if level > logging.DEBUG:  # httpx logs every request at INFO: a line per turn and per ``iris status``
        logging.getLogger("httpx").setLevel(logging.WARNING)
    if not args.command:
        parser.print_help()
        return EXIT_USAGE
    try:
        return COMMANDS[args.command](args)
    except ConfigError as exc:
        for line in exc.problems:
            print(f"iris: config: {line}", file=sys.stderr)
        return EXIT_CONFIG
    except LlmError as exc:
        print(f"iris: {exc.message} [{exc.code}]", file=sys.stderr)
        return EXIT_UNAVAILABLE
    except IrisError as exc:
        print(f"iris: {exc.message}", file=sys.stderr)
        return exit_code(exc.code)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
