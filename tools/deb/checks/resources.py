"""Resource and file-system steps of the .deb install test (run by ``python3.11 -m
tools.deb.checks`` in the container), for each running IRIS: it still writes its state
under ``ProtectSystem=strict`` (a timer set through the daemon lands in the user's
~/.local/state/iris), and its unit's ``MemoryMax=``, ``TasksMax=`` and ``LimitNOFILE=``
hold for the daemon's own cgroup and process — for the system units that is the logind
session scope ``PAMName=`` moves it into — with what it really uses printed beside them.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from tools.deb.checks.common import USERS, Fail, session_env, sh, show
from tools.deb.checks.iris_unit import iris_status

INSTANCES = (("iris.service", "tester", None), ("iris@tester2.service", "tester2", None),
             ("iris.service", "tester3", "tester3"))  # fmt: skip
"""(unit, the user it runs as, the user manager it lives in or None for the system)."""
CGROUP = Path("/sys/fs/cgroup")
UNLIMITED = 1 << 62  # cgroup v1 writes "no limit" as a huge number, v2 as "max"
MAX_SHARE = 0.5
"""What a daemon may use of each limit here: it has had every model loaded and a spoken
turn (tester's); more than half would leave too little room."""


def _where(unit: str, user: str | None) -> str:
    return f"{user}'s {unit}" if user else unit


def _number(text: str) -> int | None:
    """A limit as systemd or the kernel writes it; None for no limit."""
    text = text.strip()
    if text in ("max", "infinity", ""):
        return None
    value = int(text)
    return None if value >= UNLIMITED else value


def _cgroup_files(pid: int) -> tuple[str, Path, Path]:
    """The daemon's cgroup (its unified path) and the directories holding its memory and
    pids controller files (cgroup v2, or v1 when the machine runs the legacy layout)."""
    paths: dict[str, str] = {}
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            paths[controller] = path.lstrip("/")
    name = paths.get("") or paths.get("name=systemd", "?")
    if (CGROUP / "cgroup.controllers").exists():
        return name, CGROUP / paths[""], CGROUP / paths[""]
    if "memory" not in paths or "pids" not in paths:
        raise Fail(f"pid {pid} has no memory or pids cgroup: {paths}")
    return name, CGROUP / "memory" / paths["memory"], CGROUP / "pids" / paths["pids"]


def _read(directory: Path, *names: str) -> str:
    for name in names:
        path = directory / name
        if path.exists():
            return path.read_text().strip()
    raise Fail(f"none of {', '.join(names)} in {directory}")


def _process(pid: int) -> dict[str, int]:
    status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    limits = Path(f"/proc/{pid}/limits").read_text().splitlines()
    soft, hard = next(line for line in limits if "open files" in line).split()[3:5]
    return {
        "rss_mb": int(status["VmRSS"].split()[0]) // 1024,
        "peak_mb": int(status["VmHWM"].split()[0]) // 1024,
        "threads": int(status["Threads"]),
        "fds": len(list(Path(f"/proc/{pid}/fd").iterdir())),
        "nofile_soft": int(soft),
        "nofile_hard": int(hard),
    }


def _one(unit: str, user: str | None) -> tuple[str, dict]:
    props = show(unit, user)
    pid = int(props["MainPID"])
    want_memory, want_tasks = _number(props["MemoryMax"]), _number(props["TasksMax"])
    want_nofile = int(props["LimitNOFILE"])
    where = _where(unit, user)
    if want_memory is None or want_tasks is None:
        raise Fail(f"{where} sets no MemoryMax= or TasksMax=: {props['MemoryMax']}, {props['TasksMax']}")
    cgroup, memory_dir, pids_dir = _cgroup_files(pid)
    memory = _number(_read(memory_dir, "memory.max", "memory.limit_in_bytes"))
    tasks = _number(_read(pids_dir, "pids.max"))
    in_cgroup = int(_read(pids_dir, "pids.current"))
    proc = _process(pid)
    problems = []
    if (memory, tasks) != (want_memory, want_tasks):
        problems.append(f"its cgroup {cgroup} has memory {memory}, tasks {tasks}; the unit says "
                        f"{want_memory}, {want_tasks}")  # fmt: skip
    if (proc["nofile_soft"], proc["nofile_hard"]) != (want_nofile, want_nofile):
        problems.append(f"open files limit {proc['nofile_soft']}/{proc['nofile_hard']}, not {want_nofile}")
    if proc["peak_mb"] * 2**20 > MAX_SHARE * want_memory:
        problems.append(f"peak {proc['peak_mb']} MB is over {MAX_SHARE:.0%} of MemoryMax")
    if in_cgroup > MAX_SHARE * want_tasks or proc["fds"] > MAX_SHARE * want_nofile:
        problems.append(f"{in_cgroup} tasks or {proc['fds']} files: over {MAX_SHARE:.0%} of the limit")
    if problems:
        raise Fail(f"{where}: " + "; ".join(problems))
    figures = {**proc, "cgroup": cgroup, "memory_max_mb": want_memory >> 20, "tasks_max": want_tasks,
               "tasks_in_cgroup": in_cgroup}  # fmt: skip
    line = (
        f"{where} in {cgroup.rsplit('/', 1)[-1]}: {proc['rss_mb']} MB resident (peak {proc['peak_mb']}) "
        f"of MemoryMax {want_memory >> 20} MB, {in_cgroup} tasks of {want_tasks}, "
        f"{proc['fds']} files of {want_nofile}"
    )
    return line, figures


def limits(ctx: dict) -> str:
    """Each IRIS's cgroup carries its unit's MemoryMax=/TasksMax=, its process the
    LimitNOFILE=; what it uses is well inside them."""
    lines = []
    ctx["resources"] = {}
    for unit, _owner, user in INSTANCES:
        line, figures = _one(unit, user)
        ctx["resources"][_where(unit, user)] = figures
        lines.append(line)
    return "\n".join(lines)


def state_written() -> str:
    """A timer set through each daemon is stored in its user's ~/.local/state/iris: the
    home stays writable under ProtectSystem=strict."""
    done = []
    for unit, owner, user in INSTANCES:
        env, where = session_env(owner), _where(unit, user)
        before = iris_status(owner)["turn_count"]
        started = time.time()
        ask = ["iris", "ask", "set a timer for 2 hours"]
        reply = sh(ask, user=owner, env=env, timeout=120).stdout.strip()
        turns = iris_status(owner)["turn_count"]
        if turns != before + 1:  # else the CLI answered in its own process
            raise Fail(f"{where} did not answer the question itself: {turns} turns, {before} before")
        db = Path("/home", owner, ".local", "state", "iris", "timers.db")
        if not db.is_file() or db.stat().st_mtime < started - 1 or db.stat().st_uid != USERS[owner]:
            raise Fail(f"{where} said {reply!r} but {db} was not written")
        timers = json.loads(sh(["iris", "timers", "--json"], user=owner, env=env).stdout)["timers"]
        mine = [t for t in timers if 7000 < t["remaining_s"] <= 7200]
        if not mine:
            raise Fail(f"{where} said {reply!r}; its timers: {timers}")
        sh(["iris", "timers", "cancel", str(mine[-1]["id"])], user=owner, env=env)
        done.append(f"{where}: {reply!r}")
    return "; ".join(done) + " (in ~/.local/state/iris/timers.db; then cancelled)"


def steps() -> list:
    """(name, function, critical) for the resource and file-system steps."""
    ctx: dict = {}
    return [
        ("ProtectSystem=strict: each IRIS writes its timers in the user's home", state_written, False),
        (
            "MemoryMax/TasksMax on each daemon's cgroup, LimitNOFILE: usage well inside",
            lambda: limits(ctx),
            False,
        ),  # fmt: skip
    ]
