"""The start-up checks of a configuration that go beyond its schema, without starting anything.

``config.parse`` checks each value (types, ranges, finite numbers, URLs); these check
what a value refers to: tool names, the timers database, the boost planner's key, MCP
server commands and working folders, the Wyoming service's token file and socket, and
the speech models. A path that must be writable is tried (a probe file made and
removed), never asked with ``os.access``, which says yes to root for paths no one can
write; so is the address a serving configuration listens on (``bind_problem``: bound
and released). ``iris check-config`` runs all of them, and every entry point runs the
ones its parts need before it builds them (``assembly``), so a configuration that
``check-config`` passes is one IRIS accepts. Each problem is a ``key: reason`` line,
like the schema's.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import socket
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlparse

from iris_voice.config import Config
from iris_voice.errors import ConfigError
from iris_voice.speech.model_files import ModelMissing, piper_voice_files, smart_turn_model, whisper_model_dir
from iris_voice.speech.wake import resolve_wake_model
from iris_voice.timers.store import default_db_path
from iris_voice.tools.builtin import declared_names, name_problems

_SUN_PATH_MAX = 108
"""Linux's limit on a Unix socket path (``sun_path``), its final NUL included."""
UNIX_PROBE_TIMEOUT_S = 2.0
"""How long a connection to a socket file may take to say whether a server is behind it."""
IN_USE = (
    "the address is in use, by another program or by an IRIS already serving there "
    "(iris serve, or iris run with serve.enabled)"
)


def _first_existing(path: Path) -> Path:
    """``path`` or its nearest ancestor that exists (a dangling symlink counts: it is in the way)."""
    while not os.path.lexists(path) and path != path.parent:
        path = path.parent
    return path


def folder_problem(folder: Path, *, create: bool) -> str | None:
    """Why no new file can be made in ``folder``, or None; tried for real, not asked.

    ``os.access`` answers yes to root for any folder, even one under /proc where nothing
    can be made, and nothing for folders still to be made; so this makes what start-up
    would make: the missing folders (only with ``create``; else a missing folder is the
    problem) and a probe file in the last one; then it removes the probe and the folders
    it made, and nothing else.
    """
    base = _first_existing(folder)
    if base != folder and not create:
        return f"the folder {folder} does not exist"
    if not base.is_dir():
        return f"{base} is not a directory"
    made: list[Path] = []
    try:
        for missing in reversed([folder, *folder.parents][: len(folder.parts) - len(base.parts)]):
            try:
                missing.mkdir()
            except FileExistsError:  # made meanwhile by someone else: theirs, not ours to remove
                continue
            except OSError as exc:
                return f"{missing}: {exc.strerror or exc}"
            made.append(missing)
        try:
            fd, probe = tempfile.mkstemp(prefix=".iris-check-", dir=folder)
        except OSError as exc:
            return f"{folder}: {exc.strerror or exc}"
        os.close(fd)
        os.unlink(probe)
    finally:
        for path in reversed(made):
            with contextlib.suppress(OSError):  # not empty: someone else's files are in it now
                path.rmdir()
    return None


def timers_db_problem(cfg: Config) -> str | None:
    """Why ``tools.timers_db`` (or the default path) cannot hold the timers at all, or None.

    Only what IRIS cannot work around: a path that is not a regular file, a file this
    user cannot open for reading and writing, a folder where SQLite cannot put its -wal
    and -shm files (or a damaged file cannot be moved aside), a folder that cannot be
    created. Each is tried (``folder_problem``), as root too. A file that is not a SQLite
    database, or a damaged one, is no configuration problem: the store moves it aside,
    starts a new one and says so (``timers.store``).
    """
    path = Path(cfg.tools.timers_db).expanduser() if cfg.tools.timers_db else default_db_path()
    key = f"tools.timers_db ({path})" if not cfg.tools.timers_db else "tools.timers_db"
    if not os.path.lexists(path):
        problem = folder_problem(path.parent, create=True)
        return f"{key}: {path} cannot be created ({problem})" if problem else None
    if not path.is_file():
        return f"{key}: {path} is not a file"
    try:
        # Opened and closed before the store opens it (build_app checks first), so no
        # SQLite lock of this process is on it for the close to drop.
        os.close(os.open(path, os.O_RDWR | os.O_CLOEXEC))
    except OSError as exc:
        return f"{key}: {path} cannot be opened for reading and writing ({exc.strerror or exc})"
    if problem := folder_problem(path.parent, create=False):
        return f"{key}: SQLite cannot add its -wal file beside {path} ({problem})"
    return None


def socket_folder_problem(folder: Path) -> str | None:
    """Why a ``unix://`` socket cannot be made in ``folder``, or None (tried: ``folder_problem``).

    Start-up makes a missing folder when its parent exists (``runtime.prepare_serve``, mode
    0700), as ``/run/user/UID/iris-wyoming`` is expected to appear; two or more missing
    levels are refused, so a mistyped path grows no tree of folders.
    """
    base = _first_existing(folder)
    if base.is_dir() and len(folder.parts) - len(base.parts) > 1:
        return f"the folder {folder.parent} does not exist"
    return folder_problem(folder, create=True)


def serve_problems(cfg: Config) -> list[str]:
    """The ``[serve]`` files: ``token_file`` must hold a token, a ``unix://`` socket must be
    creatable in its folder (see ``socket_folder_problem``), and a file already at its
    path must be a socket: the server deletes what is there to listen."""
    out = []
    if cfg.serve.token_file:
        from iris_voice.wyoming.trust import load_token  # imports wyoming: only when needed

        try:
            load_token(cfg.serve)
        except ConfigError as exc:
            out += exc.problems
    parsed = urlparse(cfg.serve.uri)
    if parsed.scheme == "unix":
        sock = Path(parsed.path)
        if len(os.fsencode(sock)) >= _SUN_PATH_MAX:
            out.append(f"serve.uri: the socket path {sock} is longer than {_SUN_PATH_MAX - 1} bytes")
        elif sock.is_dir():
            out.append(f"serve.uri: {sock} is a directory, not a socket path")
        elif os.path.lexists(sock) and not stat.S_ISSOCK(os.lstat(sock).st_mode):
            out.append(f"serve.uri: {sock} is not a socket, and the server would delete it to listen there")
        elif problem := socket_folder_problem(sock.parent):
            out.append(f"serve.uri: the socket {sock} cannot be created ({problem})")
    return out


def bind_reason(exc: OSError, host: str | None = None, port: int | None = None) -> str:
    """Why binding failed, for people: the errno's meaning for a listening address."""
    if isinstance(exc, socket.gaierror):
        return f"the host {host} cannot be resolved ({exc.strerror or exc})"
    if exc.errno == errno.EADDRINUSE:
        return IN_USE
    if exc.errno == errno.EADDRNOTAVAIL:
        return f"{host} is not an address of this machine"
    if exc.errno == errno.EACCES and port is not None and port < 1024:
        return f"port {port} is below 1024, which only root (or CAP_NET_BIND_SERVICE) may listen on"
    return exc.strerror or str(exc)


def bind_error(uri: str, exc: OSError) -> ConfigError:
    """The refusal of ``serve.uri`` when the server's own bind failed (``exc``): the same
    line as ``bind_problem``'s, so ``iris serve`` exits 78 with the key named, no traceback."""
    parsed = urlparse(uri)
    host, port = (parsed.hostname, parsed.port) if parsed.scheme == "tcp" else (None, None)
    return ConfigError([f"serve.uri: cannot listen at {uri}: {bind_reason(exc, host, port)}"])


def _tcp_bind(host: str, port: int) -> None:
    """Bind every address ``host`` resolves to as asyncio's ``start_server`` would (passive
    lookup, ``SO_REUSEADDR``, IPv6 sockets v6-only), then close them; raises its OSError."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    for family, kind, proto, _, address in dict.fromkeys(infos):
        try:
            sock = socket.socket(family, kind, proto)
        except OSError:  # a family this kernel lacks (no IPv6): asyncio skips it too
            continue
        with sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)


def _live_unix_server(path: Path) -> str | None:
    """Why the socket file at ``path`` must not be replaced, or None (absent, or stale).

    The server deletes the file before it listens, so a live server there would lose its
    socket without a word: a connection is tried, and only a refused one (no listener)
    counts as stale. What is not a socket is ``serve_problems``'s to report.
    """
    try:
        if not stat.S_ISSOCK(os.lstat(path).st_mode):
            return None
    except OSError:  # absent (or its folder is): serve_problems says why, if anything
        return None
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(UNIX_PROBE_TIMEOUT_S)
        try:
            sock.connect(os.fspath(path))
        except ConnectionRefusedError:
            return None
        except TimeoutError:  # a listener whose backlog is full is still a listener
            pass
        except OSError as exc:
            return f"{path} cannot be tried ({exc.strerror or exc})"
    return f"a server is listening on {path} (an IRIS already serving there?)"


def bind_problem(uri: str) -> str | None:
    """Why the Wyoming service could not listen at ``uri`` right now, or None.

    ``tcp://``: every address of the host is bound and released again (``_tcp_bind``), so
    a port another program (or IRIS) listens on is found before the speech models load.
    ``unix://``: a socket file already there must not belong to a live server. The answer
    holds for this moment only: the server's own bind may still fail (``bind_error``).
    """
    parsed = urlparse(uri)
    if parsed.scheme == "unix":
        live = _live_unix_server(Path(parsed.path))
        return f"serve.uri: cannot listen at {uri}: {live}" if live else None
    if parsed.scheme != "tcp" or parsed.hostname is None or parsed.port is None:
        return None  # the schema refuses these
    try:
        _tcp_bind(parsed.hostname, parsed.port)
    except OSError as exc:
        return bind_error(uri, exc).problems[0]
    return None


def boost_problems(cfg: Config) -> list[str]:
    """The boost planner's API key variable, when one is named."""
    b = cfg.boost
    if b.enabled and b.backend == "openai" and b.api_key_env and not os.environ.get(b.api_key_env):
        return [f"boost.api_key_env: the environment variable {b.api_key_env} is not set or empty"]
    return []


def mcp_problems(cfg: Config) -> list[str]:
    """Every enabled stdio MCP server's command must be found (on its PATH, or as a path),
    in a working directory (``cwd``) that exists."""
    out = []
    for i, server in enumerate(cfg.mcp.servers):
        if not server.enabled or not server.command:
            continue
        if server.cwd and not Path(server.cwd).is_dir():
            out.append(f"mcp.servers[{i}].cwd: {server.cwd!r} is not a directory")
        search = server.env.get("PATH") or os.environ.get("PATH", os.defpath)
        if shutil.which(server.command, path=search) is None:
            where = "is not an executable file" if "/" in server.command else "is not found on PATH"
            out.append(f"mcp.servers[{i}].command: {server.command!r} {where}")
    return out


def speech_problems(cfg: Config) -> list[str]:
    """The speech models the voice daemon loads must be there (found, not loaded); a remote
    engine (``engine = "wyoming"``) has its models on its server (``iris doctor`` asks it)."""
    out = []
    checks: list[Callable[[], object]] = []
    if cfg.stt.engine == "local":
        checks.append(lambda: whisper_model_dir(cfg.stt.model, join=False))
    if cfg.tts.engine == "local":
        checks.append(lambda: piper_voice_files(cfg.tts.voice))
    if cfg.audio.activation == "wake_word" or cfg.audio.barge_in == "wake_word":
        checks.append(lambda: resolve_wake_model(cfg.wake.model))
    if cfg.audio.end_of_turn == "smart_turn":
        checks.append(smart_turn_model)
    for check in checks:
        try:
            check()
        except ModelMissing as exc:
            out.append(exc.message)
    return out


def problems(cfg: Config, *, speech: bool = True, serving: bool = False) -> list[str]:
    """Every problem of ``cfg`` beyond its schema; ``speech`` includes the speech models,
    ``serving`` whether ``serve.uri`` can be listened on now (``bind_problem``)."""
    out = name_problems(cfg, declared_names())
    if (db := timers_db_problem(cfg)) is not None:
        out.append(db)
    out += boost_problems(cfg) + mcp_problems(cfg) + serve_problems(cfg)
    if speech:
        out += speech_problems(cfg)
    if serving and (bind := bind_problem(cfg.serve.uri)) is not None:
        out.append(bind)
    return out


def check(cfg: Config, *, speech: bool = True, source: str = "", serving: bool = False) -> None:
    """Raise one ``ConfigError`` listing every problem (see ``problems``).

    ``serving``: also try ``serve.uri``'s bind. ``iris check-config`` asks for it when the
    file serves under ``iris run`` (``serve.enabled``); ``build_app``'s check of the parts
    it builds never binds: a one-shot command (``iris ask``, ``iris tools``) does not serve,
    and may run while IRIS holds the port. ``iris run`` and ``iris serve`` try the bind
    themselves once they hold the instance lock, before their models load
    (``runtime.prepare_serve``).
    """
    found = problems(cfg, speech=speech, serving=serving)
    if found:
        raise ConfigError(found, source)
