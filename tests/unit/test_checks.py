"""``iris check-config`` runs every check start-up runs: what it passes, IRIS accepts; what
IRIS refuses, it refuses first, with exit 78 and the key named."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from iris_voice.app import checks
from iris_voice.app.assembly import build_app
from iris_voice.cli.main import main
from iris_voice.config import parse
from iris_voice.errors import ConfigError

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
