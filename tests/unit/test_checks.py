"""``iris check-config`` runs every check start-up runs: what it passes, IRIS accepts; what
IRIS refuses, it refuses first, with exit 78 and the key named."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

from iris_voice.app import checks
from iris_voice.app.assembly import build_app
from iris_voice.cli.main import main
from iris_voice.config import parse
from iris_voice.errors import ConfigError
from iris_voice.timers.store import TimerStore

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    monkeypatch.delenv("IRIS_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


def check_config(tmp_path: Path, capsys: pytest.CaptureFixture[str], toml: str) -> tuple[int, list[str]]:
    path = tmp_path / "config.toml"
    path.write_text(toml)
    code = main(["check-config", str(path)])
    return code, capsys.readouterr().out.splitlines()


CASES = [
    ('[tools]\ndisabled = ["nope"]\n', "tools.disabled: unknown tool 'nope'"),
    ('[tools]\nenabled = ["calculator", "nope"]\n', "tools.enabled: unknown tool 'nope'"),
    ('[llm]\ndirect_return = ["nope"]\n', "llm.direct_return: unknown tool 'nope'"),
    (
        '[boost]\nenabled = true\nbackend = "openai"\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n'
        'api_key_env = "IRIS_TEST_UNSET_KEY"\n',
        "boost.api_key_env: the environment variable IRIS_TEST_UNSET_KEY is not set or empty",
    ),
    (
        '[[mcp.servers]]\nname = "x"\ncategory = "x"\ncommand = "iris-no-such-mcp-server"\n',
        "mcp.servers[0].command: 'iris-no-such-mcp-server' is not found on PATH",
    ),
    (
        '[[mcp.servers]]\nname = "x"\ncategory = "x"\ncommand = "/nonexistent/bin/server"\n',
        "mcp.servers[0].command: '/nonexistent/bin/server' is not an executable file",
    ),
    ("[llm]\nrequest_timeout_s = inf\n", "llm.request_timeout_s: must be a finite number"),
    ("[audio]\nfollow_up_s = nan\n", "audio.follow_up_s: must be a finite number"),
    ('[stt]\nmodel = "/nonexistent/whisper"\n', "stt.model: '/nonexistent/whisper' is neither"),
    (
        '[[mcp.servers]]\nname = "x"\ncategory = "x"\ncommand = "sh"\ncwd = "/nonexistent/dir"\n',
        "mcp.servers[0].cwd: '/nonexistent/dir' is not a directory",
    ),
    ('[serve]\ntoken_file = "/nonexistent/token"\n', "serve.token_file: cannot read /nonexistent/token"),
    (
        '[serve]\nuri = "unix:///nonexistent/iris/wyoming.sock"\n',
        "serve.uri: the socket /nonexistent/iris/wyoming.sock cannot be created",
    ),
    ('[serve]\nuri = "unix:///proc/iris-wyoming.sock"\n', "serve.uri: the socket /proc/iris-wyoming.sock"),
]


@pytest.mark.parametrize(("toml", "problem"), CASES)
def test_check_config_refuses_what_start_up_refuses(tmp_path, capsys, monkeypatch, toml, problem):
    monkeypatch.delenv("IRIS_TEST_UNSET_KEY", raising=False)
    code, lines = check_config(tmp_path, capsys, toml)
    assert code == 78, lines
    assert any(line.startswith(problem) for line in lines), lines


def test_an_unwritable_timers_db_is_refused(tmp_path, capsys):
    if os.geteuid() == 0:
        # root writes anywhere; a regular file in the way of the folder fails for everyone
        (tmp_path / "blocker").write_text("not a folder")
        db = tmp_path / "blocker" / "timers.db"
    else:
        locked = tmp_path / "locked"
        locked.mkdir()
        locked.chmod(stat.S_IRUSR | stat.S_IXUSR)
        db = locked / "timers.db"
    code, lines = check_config(tmp_path, capsys, f'[tools]\ntimers_db = "{db}"\n')
    assert code == 78 and lines and lines[0].startswith("tools.timers_db: "), lines


def test_a_timers_db_that_is_not_a_database_is_replaced_at_start_not_refused(tmp_path, capsys):
    """Start-up moves such a file aside for a new one and says so (test_timer_damage.py), so
    it is no configuration problem; check-config looks at it without touching it."""
    db = tmp_path / "timers.db"
    db.write_text("this is not SQLite\n")
    code, lines = check_config(tmp_path, capsys, f'[tools]\ntimers_db = "{db}"\n')
    assert (code, lines) == (0, ["ok"])
    assert db.read_text() == "this is not SQLite\n" and list(tmp_path.glob("timers.db?*")) == []
    app = build_app(parse({"tools": {"timers_db": str(db)}}))
    try:
        (recovery,) = app.timers.store.take_recoveries()
        assert Path(recovery.moved_to).read_text() == "this is not SQLite\n"
        assert db.read_bytes().startswith(b"SQLite format 3\x00")
    finally:
        app.timers.store.close()


def test_a_timers_db_that_is_a_folder_is_still_refused(tmp_path, capsys):
    db = tmp_path / "timers.db"
    db.mkdir()
    code, lines = check_config(tmp_path, capsys, f'[tools]\ntimers_db = "{db}"\n')
    assert code == 78 and lines == [f"tools.timers_db: {db} is not a file"], lines


def test_the_shipped_config_passes(capsys):
    assert main(["check-config", str(ROOT / "config.toml")]) == 0
    assert capsys.readouterr().out.strip() == "ok"


@pytest.mark.parametrize(("toml", "problem"), CASES[:6])
def test_start_up_refuses_the_same_configs(tmp_path, monkeypatch, toml, problem):
    """The assembly every entry point uses runs the same checks (not only the command)."""
    monkeypatch.delenv("IRIS_TEST_UNSET_KEY", raising=False)
    import tomllib

    with pytest.raises(ConfigError) as err:
        build_app(parse(tomllib.loads(toml)))
    assert any(p.startswith(problem) for p in err.value.problems), err.value.problems


def test_problems_are_all_reported_at_once(tmp_path):
    cfg = parse(
        {"tools": {"disabled": ["a"], "timers_db": str(tmp_path / "t.db")}, "llm": {"direct_return": ["b"]}}
    )
    found = checks.problems(cfg, speech=False)
    assert [p.split(":")[0] for p in found] == ["tools.disabled", "llm.direct_return"]


# -- paths are tried, not asked: the same answers for root and for a user ------------------

UNCREATABLE = "/proc/iris-cannot-write-here/timers.db"
"""A timers path no one can create, root included (os.access says yes to root for /proc)."""
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
QUIET = '[audio]\nend_of_turn = "silence"\n'
"""Leaves out the Smart Turn model, which lives in the (root's) cache, not the venv."""


def test_an_uncreatable_timers_db_is_refused_and_the_store_fails_there_too(tmp_path, capsys):
    code, lines = check_config(tmp_path, capsys, f'[tools]\ntimers_db = "{UNCREATABLE}"\n')
    assert code == 78, lines
    assert lines[0].startswith(f"tools.timers_db: {UNCREATABLE} cannot be created ("), lines
    with pytest.raises(OSError):  # what the check refuses is what start-up would die on
        TimerStore(UNCREATABLE)


def test_missing_folders_are_made_for_the_probe_and_removed_again(tmp_path, capsys):
    db = tmp_path / "a" / "b" / "timers.db"
    (tmp_path / "kept").mkdir()
    code, lines = check_config(tmp_path, capsys, f'[tools]\ntimers_db = "{db}"\n')
    assert (code, lines) == (0, ["ok"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.toml", "kept"]
    store = TimerStore(db)  # and the store can make them for real
    store.close()


def test_a_folder_the_probe_cannot_write_is_refused_when_the_kernel_refuses_it(tmp_path):
    """A folder without write permission: refused for a user, accepted for root (who can
    write there), exactly as SQLite would fare."""
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(stat.S_IRUSR | stat.S_IXUSR)
    problem = checks.folder_problem(locked, create=False)
    if os.geteuid() == 0:
        assert problem is None
        (locked / "probe").write_text("root writes here")
    else:
        assert problem == f"{locked}: Permission denied"
    assert sorted(p.name for p in locked.iterdir()) in ([], ["probe"])


def test_a_socket_folder_is_not_made(tmp_path):
    """The Wyoming server does not make its socket's folder, so the check does not either."""
    folder = tmp_path / "run"
    assert checks.folder_problem(folder, create=False) == f"the folder {folder} does not exist"
    assert not folder.exists()
    assert checks.folder_problem(tmp_path, create=False) is None
    assert list(tmp_path.iterdir()) == []


def test_a_unix_socket_in_a_writable_folder_and_a_token_file_pass(tmp_path, capsys):
    token = tmp_path / "token"
    token.write_text("s3cret-kitchen-token\n")
    toml = f'[serve]\nuri = "unix://{tmp_path}/w.sock"\ntoken_file = "{token}"\n'
    assert check_config(tmp_path, capsys, toml) == (0, ["ok"])


@pytest.fixture(scope="module")
def as_nobody() -> tuple[list[str], dict[str, str]]:
    """A command prefix running this checkout's code as the user nobody, and its environment."""
    if os.geteuid() != 0:
        pytest.skip("not root: the checks run as this user only (cannot switch to nobody)")
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is not installed: cannot switch to nobody")
    paths = dict.fromkeys([str(ROOT), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": os.pathsep.join(paths), "HOME": "/nonexistent"}
    # The venv's interpreter may sit under /root (a pyenv build); Debian's python3.11 runs
    # the same code from the venv's site-packages.
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    tried = []
    for python in dict.fromkeys([sys.executable, f"/usr/bin/{version}"]):
        cmd = [*NOBODY, python, "-c", "import iris_voice.app.checks"]
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, check=False)
        if out.returncode == 0:
            return [*NOBODY, python, "-m", "iris_voice.cli", "check-config"], env
        tried.append(f"{python}: {(out.stderr.strip().splitlines() or ['?'])[-1]}")
    pytest.skip("nobody cannot run this checkout's code: " + "; ".join(tried))


@pytest.fixture
def nobody_home():
    """A folder of nobody's own (pytest's tmp_path is private to root)."""
    home = Path(tempfile.mkdtemp(prefix="iris-nobody-"))
    os.chown(home, 65534, 65534)
    yield home
    shutil.rmtree(home)


def nobody_check_config(as_nobody, home: Path, toml: str) -> tuple[int, list[str]]:
    cmd, env = as_nobody
    config = home / "config.toml"
    config.write_text(QUIET + toml)
    env = {**env, "HOME": str(home), "XDG_STATE_HOME": str(home / "state")}
    out = subprocess.run([*cmd, str(config)], env=env, capture_output=True, text=True, timeout=120)
    return out.returncode, (out.stdout + out.stderr).splitlines()


def test_as_nobody_an_uncreatable_timers_db_is_refused(as_nobody, nobody_home):
    code, lines = nobody_check_config(as_nobody, nobody_home, f'[tools]\ntimers_db = "{UNCREATABLE}"\n')
    assert code == 78 and lines[0].startswith(f"tools.timers_db: {UNCREATABLE} cannot be created ("), lines


def test_as_nobody_a_root_folder_is_refused_and_its_own_accepted(as_nobody, nobody_home):
    root_owned = nobody_home / "root-owned"
    root_owned.mkdir(mode=0o755)
    db = root_owned / "t.db"
    code, lines = nobody_check_config(as_nobody, nobody_home, f'[tools]\ntimers_db = "{db}"\n')
    assert code == 78, lines
    assert lines == [f"tools.timers_db: {db} cannot be created ({root_owned}: Permission denied)"]
    own = nobody_home / "a" / "b" / "t.db"
    code, lines = nobody_check_config(as_nobody, nobody_home, f'[tools]\ntimers_db = "{own}"\n')
    assert (code, lines) == (0, ["ok"])
    assert not (nobody_home / "a").exists() and list(root_owned.iterdir()) == []
