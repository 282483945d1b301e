"""Resource and file-system steps of the .deb install test (run by ``python3.11 -m
tools.deb.checks`` in the container), for each running IRIS: it still writes its state
under ``ProtectSystem=strict`` (a timer set through the daemon lands in the user's
~/.local/state/iris), and its unit's ``MemoryMax=``, ``TasksMax=`` and ``LimitNOFILE=``
hold for the cgroup the daemon really runs in — for the system units that is the logind
session scope ``PAMName=`` moves it into — and its process, with what it uses beside them.

Where the kernel's memory and pids controllers can be used (cgroup v2, or a v1 hierarchy
that systemd manages) the limits are read from the daemon's cgroup files. On a cgroup v1
host that does not delegate them to the container (this test bed: they are mounted
read-only, every process at their root), the kernel enforces nothing in the container;
then the check reads what systemd set on the daemon's unit or scope, and says so.
"""

from __future__ import annotations

import json
import os
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


def _cgroups(pid: int) -> dict[str, str]:
    """Controller ("" for the unified hierarchy) → the process's path in it."""
    paths: dict[str, str] = {}
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            paths[controller] = path.strip("/")
    return paths


def _kernel_limits(paths: dict[str, str]) -> tuple[int | None, int | None] | None:
    """(memory, tasks) limits of the process's cgroups as the kernel holds them; None
    when this system gives its processes no usable memory and pids controllers."""
    if (CGROUP / "cgroup.controllers").exists():  # cgroup v2
        memory_dir = pids_dir = CGROUP / paths[""]
        memory_file = "memory.max"
    elif paths.get("memory") and paths.get("pids"):  # v1, with cgroups systemd made
        memory_dir, pids_dir = CGROUP / "memory" / paths["memory"], CGROUP / "pids" / paths["pids"]
        memory_file = "memory.limit_in_bytes"
    else:
        return None
    return (
        _number((memory_dir / memory_file).read_text()),
        _number((pids_dir / "pids.max").read_text()),
    )


def _tasks(pid: int) -> int:
    """Threads of ``pid`` and of every process below it."""
    parent, threads = {}, {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parent[int(entry)], threads[int(entry)] = int(fields[1]), int(fields[17])
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        total += threads.get(current, 0)
        todo.extend(child for child, up in parent.items() if up == current)
    return total


def _process(pid: int) -> dict[str, int]:
    status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    limits = Path(f"/proc/{pid}/limits").read_text().splitlines()
    soft, hard = next(line for line in limits if "open files" in line).split()[3:5]
    return {
        "rss_mb": int(status["VmRSS"].split()[0]) // 1024,
        "peak_mb": int(status["VmHWM"].split()[0]) // 1024,
        "tasks": _tasks(pid),
        "fds": len(list(Path(f"/proc/{pid}/fd").iterdir())),
        "nofile_soft": int(soft),
        "nofile_hard": int(hard),
    }


def _one(unit: str, user: str | None) -> tuple[str, dict]:
    where = _where(unit, user)
    props = show(unit, user)
    pid = int(props["MainPID"])
    want = (_number(props["MemoryMax"]), _number(props["TasksMax"]))
    want_nofile = int(props["LimitNOFILE"])
    if None in want:
        raise Fail(f"{where} sets no MemoryMax= or TasksMax=: {props['MemoryMax']}, {props['TasksMax']}")
    paths = _cgroups(pid)
    runs_in = (paths.get("") or paths.get("name=systemd", "?")).rsplit("/", 1)[-1]
    kernel = _kernel_limits(paths)
    if kernel is not None:
        got, source = kernel, "its cgroup"
    else:  # what systemd set on the unit or scope the daemon runs in
        scope = show(runs_in, user)
        got, source = (_number(scope["MemoryMax"]), _number(scope["TasksMax"])), "systemd (not the kernel)"
    proc = _process(pid)
    memory, tasks = want
    problems = []
    if got != want:
        problems.append(f"{runs_in} has memory and tasks limits {got} by {source}; the unit says {want}")
    if (proc["nofile_soft"], proc["nofile_hard"]) != (want_nofile, want_nofile):
        problems.append(f"open files limit {proc['nofile_soft']}/{proc['nofile_hard']}, not {want_nofile}")
    if proc["peak_mb"] * 2**20 > MAX_SHARE * memory:
        problems.append(f"peak {proc['peak_mb']} MB is over {MAX_SHARE:.0%} of MemoryMax")
    if proc["tasks"] > MAX_SHARE * tasks or proc["fds"] > MAX_SHARE * want_nofile:
        problems.append(f"{proc['tasks']} tasks or {proc['fds']} files: over {MAX_SHARE:.0%} of the limit")
    if problems:
        raise Fail(f"{where}: " + "; ".join(problems))
    line = (
        f"{where} in {runs_in} (limits read from {source}): {proc['rss_mb']} MB resident "
        f"(peak {proc['peak_mb']}) of MemoryMax {memory >> 20} MB, {proc['tasks']} tasks of {tasks}, "
        f"{proc['fds']} files of {want_nofile}"
    )
    return line, {**proc, "runs_in": runs_in, "limits_from": source}


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


def _writable(pid: int, paths: tuple[str, ...]) -> dict[str, bool]:
    """Whether each path is on a writable mount in ``pid``'s mount namespace."""
    mounts = []
    for line in Path(f"/proc/{pid}/mountinfo").read_text().splitlines():
        fields = line.split()
        mounts.append((fields[4], "rw" in fields[5].split(",")))
    found = {}
    for path in paths:  # the mount holding a path: the longest matching point, the last one on it
        best = -1
        for point, rw in mounts:
            if (path == point or path.startswith(point.rstrip("/") + "/")) and len(point) >= best:
                best, found[path] = len(point), rw
    return found


def strict_mounts() -> str:
    """In the system units' mount namespace only the homes and /run/user are writable."""
    seen = []
    for unit, owner, user in INSTANCES:
        if user is not None:
            continue  # the user unit has no file-system namespace
        pid = int(show(unit)["MainPID"])
        want = {"/": False, "/usr": False, "/etc": False, "/var/lib": False, f"/home/{owner}": True,
                f"/run/user/{USERS[owner]}": True, "/tmp": True}  # fmt: skip
        got = _writable(pid, tuple(want))
        if got != want:
            wrong = {p: "rw" if rw else "ro" for p, rw in got.items() if rw != want[p]}
            raise Fail(f"{unit}: {wrong} (ProtectSystem=strict, ReadWritePaths=/home /run/user)")
        seen.append(unit)
    return f"{', '.join(seen)}: / /usr /etc /var/lib read-only; the home, /run/user/UID, /tmp writable"


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
        # SQLite in WAL mode writes the -wal file; the database file itself only at a checkpoint.
        files = [Path("/home", owner, ".local", "state", "iris", f"timers.db{end}") for end in ("", "-wal")]
        written = [f for f in files if f.is_file() and f.stat().st_mtime >= started - 1]
        if not written or any(f.stat().st_uid != USERS[owner] for f in written):
            raise Fail(f"{where} said {reply!r} but wrote none of {', '.join(map(str, files))}")
        timers = json.loads(sh(["iris", "timers", "--json"], user=owner, env=env).stdout)["timers"]
        mine = [t for t in timers if 7000 < t["remaining_s"] <= 7200]
        if not mine:
            raise Fail(f"{where} said {reply!r}; its timers: {timers}")
        sh(["iris", "timers", "cancel", str(mine[-1]["id"])], user=owner, env=env)
        done.append(f"{where}: {reply!r}, {written[-1].name} written")
    return "; ".join(done) + " (in ~/.local/state/iris; then cancelled)"


def steps() -> list:
    """(name, function, critical) for the resource and file-system steps."""
    ctx: dict = {}
    return [
        ("ProtectSystem=strict: read-only but for the home and /run/user", strict_mounts, False),
        ("ProtectSystem=strict: each IRIS writes its timers in the user's home", state_written, False),
        (
            "MemoryMax/TasksMax where each daemon runs, LimitNOFILE: usage well inside",
            lambda: limits(ctx),
            False,
        ),  # fmt: skip
    ]
