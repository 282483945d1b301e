"""``pip install .`` alone, as a user would, into a fresh virtualenv: no test bed, no
speech-model packages, nothing of this checkout on the path. Then ``iris --version``,
``iris check-config``, every module of ``iris_voice`` and every third-party module it
imports (lazy ones included) must load.

The runtime wheels are kept in ``$IRIS_CACHE/deb-wheels``, the folder the .deb build
fills from the same list (``debian/rules``), so only the first run on a machine downloads
them (183 MB, about 20 s here); the install itself is offline (``--no-index``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from iris_voice import __version__
from tests.packaging.test_dependencies import imported_modules
from tools.deb.rootfs import cache_dir

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
WHEELS = cache_dir() / "deb-wheels"
CONSTRAINTS = ROOT / "requirements" / "constraints.txt"
BUILD_FILES = ["pyproject.toml", "README.md", "requirements", "iris_voice"]
"""What ``pip install .`` reads: the metadata, the dependency list and the package."""
REMOTE_SPEECH = """
[stt]
engine = "wyoming"
uri = "tcp://127.0.0.1:10300"
[tts]
engine = "wyoming"
uri = "tcp://127.0.0.1:10200"
[audio]
end_of_turn = "silence"
"""
"""Speech on a Wyoming server: the speech models are separate packages, not dependencies."""
IMPORT_ALL = """
import importlib, pkgutil, sys
import iris_voice
names = [m.name for m in pkgutil.walk_packages(iris_voice.__path__, "iris_voice.")]
names = [n for n in names if not n.endswith(".__main__")] + sys.argv[1:]
failed = []
for name in names:
    try:
        importlib.import_module(name)
    except Exception as exc:
        failed.append(f"{name}: {type(exc).__name__}: {exc}")
print(f"{len(names)} modules from {iris_voice.__file__}")
print("\\n".join(failed))
sys.exit(1 if failed else 0)
"""


def _pip(python: Path | str, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [str(python), "-m", "pip", "--disable-pip-version-check", "--no-input", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=False)


def _why(out: subprocess.CompletedProcess[str]) -> str:
    """pip's first error line (the cause, where the last one is its summary)."""
    lines = [line for line in out.stderr.splitlines() if line.startswith("ERROR")]
    return lines[0] if lines else f"pip exited {out.returncode}"


def fill_wheels() -> None:
    """The pinned runtime wheels and the build backend in ``WHEELS``; the index is asked
    only when one is missing (skips the module when it cannot be reached)."""
    want = ["-d", str(WHEELS), "-r", str(ROOT / "requirements" / "runtime.txt"), "-c", str(CONSTRAINTS)]
    want.append("setuptools>=68")
    offline = _pip(sys.executable, "download", "-q", "--no-index", "--find-links", str(WHEELS), *want)
    if offline.returncode == 0:
        return
    online = _pip(sys.executable, "download", "-q", *want)
    if online.returncode != 0:
        pytest.skip(f"the runtime wheels are not in {WHEELS} and cannot be downloaded: {_why(online)}")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A fresh venv with IRIS installed by ``pip install .``; its bin folder and an
    environment whose home, config, state and cache are empty temporary folders."""
    WHEELS.mkdir(parents=True, exist_ok=True)
    fill_wheels()
    base = tmp_path_factory.mktemp("install")
    src = base / "src"  # a copy: an in-tree build would leave build/ in the checkout
    src.mkdir()
    for name in BUILD_FILES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / name, src / name)
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    out = _pip(
        venv / "bin" / "python",
        "install",
        "-q",
        "--no-compile",
        "--no-index",
        "--find-links",
        str(WHEELS),
        "-c",
        str(CONSTRAINTS),
        str(src),
    )
    assert out.returncode == 0, out.stdout + out.stderr
    home = base / "home"
    env = {
        "PATH": f"{venv / 'bin'}{os.pathsep}/usr/bin:/bin",
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "IRIS_CACHE": str(home / ".cache" / "iris"),
        "LANG": "C.UTF-8",
    }
    (home / ".config").mkdir(parents=True)
    return venv / "bin", env


def run(installed: tuple[Path, dict[str, str]], *cmd: str) -> subprocess.CompletedProcess[str]:
    """``cmd`` in the fresh venv, from its home folder (not the checkout)."""
    bin_dir, env = installed
    exe = cmd[0] if "/" in cmd[0] else str(bin_dir / cmd[0])
    return subprocess.run(
        [exe, *cmd[1:]], env=env, cwd=env["HOME"], capture_output=True, text=True, timeout=300, check=False
    )


def test_iris_says_its_version(installed):
    out = run(installed, "iris", "--version")
    assert (out.returncode, out.stdout.strip()) == (0, f"iris {__version__}"), out.stderr


def test_check_config_passes_a_valid_config_and_refuses_an_uncreatable_timers_db(installed):
    config = Path(installed[1]["HOME"]) / "config.toml"
    config.write_text(REMOTE_SPEECH)
    out = run(installed, "iris", "check-config", str(config))
    assert (out.returncode, out.stdout) == (0, "ok\n"), out.stdout + out.stderr
    config.write_text(REMOTE_SPEECH + '[tools]\ntimers_db = "/proc/iris-cannot-write-here/timers.db"\n')
    out = run(installed, "iris", "check-config", str(config))
    assert out.returncode == 78 and out.stdout.startswith("tools.timers_db: "), out.stdout + out.stderr
    assert not (Path(installed[1]["XDG_STATE_HOME"]) / "iris").exists()  # the probe removed its folder


def test_every_module_and_every_library_it_imports_loads(installed):
    modules = set(imported_modules(ROOT / "iris_voice")) - set(sys.stdlib_module_names) - {"iris_voice"}
    third_party = sorted(modules)
    out = run(installed, "python", "-c", IMPORT_ALL, *third_party)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"from {installed[0].parent}/lib/" in out.stdout  # the installed copy, not the checkout
