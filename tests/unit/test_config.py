"""Configuration loading: defaults, search order, OLLAMA_HOST, errors that name the key."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from iris_voice import config
from iris_voice.cli.main import main
from iris_voice.errors import ConfigError
from tests.support.hostile.local_user import deep_toml, invalid_utf8_toml

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch, tmp_path):
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    monkeypatch.delenv("IRIS_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))


def test_shipped_config_equals_defaults():
    cfg, path = config.load(REPO / "config.toml")
    assert path == REPO / "config.toml"
    assert cfg == config.Config()


def test_errors_name_the_key():
    with pytest.raises(ConfigError) as err:
        config.parse({"llm": {"max_tool_calls": 0, "tool_mode": "magic", "colour": 1}, "extra": {}})
    problems = err.value.problems
    assert "llm.max_tool_calls: must be greater than 0" in problems
    assert any(p.startswith("llm.tool_mode: must be 'auto'") for p in problems)
    assert "llm.colour: unknown key" in problems
    assert "extra: unknown key" in problems


def test_an_early_decode_pause_as_long_as_the_hangover_is_refused():
    with pytest.raises(ConfigError) as err:
        config.parse({"audio": {"vad_hangover_ms": 200}, "stt": {"incremental_pause_ms": 200}})
    assert err.value.problems == ["stt.incremental_pause_ms: must be below audio.vad_hangover_ms (200)"]
    off = config.parse(
        {"audio": {"vad_hangover_ms": 200}, "stt": {"incremental": False, "incremental_pause_ms": 200}}
    )
    assert not off.stt.incremental


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("localhost", "http://localhost:11434"),
        ("0.0.0.0", "http://127.0.0.1:11434"),
        ("0.0.0.0:9999", "http://127.0.0.1:9999"),
        ("http://box:8080/", "http://box:8080"),
        ("https://ollama.example", "https://ollama.example:443"),
    ],
)
def test_ollama_host_override(monkeypatch, raw, expected):
    monkeypatch.setenv("OLLAMA_HOST", raw)
    assert config.parse({"llm": {"host": "http://elsewhere:1"}}).llm.host == expected


def test_search_order(monkeypatch, tmp_path):
    user = tmp_path / "xdg" / "iris" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text('[llm]\nmodel = "from-user"\n')
    assert config.load()[0].llm.model == "from-user"
    env = tmp_path / "env.toml"
    env.write_text('[llm]\nmodel = "from-env"\n')
    monkeypatch.setenv("IRIS_CONFIG", str(env))
    assert config.load()[0].llm.model == "from-env"
    explicit = tmp_path / "explicit.toml"
    explicit.write_text('[llm]\nmodel = "from-flag"\n')
    assert config.load(explicit)[0].llm.model == "from-flag"


def test_missing_explicit_file_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        config.load(tmp_path / "nope.toml")


def test_config_is_frozen():
    cfg = config.Config()
    with pytest.raises(ValidationError):
        cfg.llm.model = "x"  # type: ignore[misc]


def test_check_config_cli(tmp_path, capsys):
    good = tmp_path / "good.toml"
    good.write_text("[llm]\nmax_tool_calls = 2\n")
    assert main(["check-config", str(good)]) == 0
    assert capsys.readouterr().out.strip() == "ok"
    bad = tmp_path / "bad.toml"
    bad.write_text('[llm]\nmax_tool_calls = 0\n[tools]\ntimezone = "Mars/Olympus"\n')
    assert main(["check-config", str(bad)]) == 78
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "llm.max_tool_calls: must be greater than 0"
    assert lines[1].startswith("tools.timezone: unknown IANA time zone 'Mars/Olympus'")
    broken = tmp_path / "broken.toml"
    broken.write_text("[llm\n")
    assert main(["check-config", str(broken)]) == 78
    assert "TOML syntax error" in capsys.readouterr().out


@pytest.mark.parametrize("content", ["invalid UTF-8", "nested 10,000 deep"])
def test_an_unreadable_config_is_exit_78_naming_the_file(content, tmp_path, capsys):
    """Not a traceback: one line naming the file, from check-config and from any command."""
    path = tmp_path / "config.toml"
    if content == "invalid UTF-8":
        path.write_bytes(invalid_utf8_toml())
        why = "not UTF-8 text (byte 19: invalid start byte); TOML must be UTF-8"
    else:
        path.write_text(deep_toml(10_000))
        why = "arrays or tables nested too deeply to read"
    with pytest.raises(ConfigError) as err:
        config.load(path)
    assert err.value.problems == [f"{path}: {why}"]
    assert main(["check-config", str(path)]) == 78
    assert capsys.readouterr().out.splitlines() == err.value.problems
    assert main(["--config", str(path), "status"]) == 78
    assert capsys.readouterr().err.splitlines() == [f"iris: config: {err.value.problems[0]}"]
