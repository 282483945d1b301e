"""Audio devices as PortAudio (sounddevice) sees them, and the config value → device lookup.

``audio.input_device`` / ``audio.output_device`` hold a name (any part of it, case-
insensitive), an index, or "" for the system default. On a PipeWire desktop PortAudio's
ALSA host API lists ``pipewire`` and ``default`` (both reach PipeWire's default source and
sink) next to any raw hardware devices.

sounddevice is imported lazily so that file mode and ``iris --help`` work on a machine
without libportaudio2; :func:`sounddevice` turns its absence into an ``AudioError``.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from types import ModuleType
from typing import Literal

from iris_voice import heavy
from iris_voice.errors import AudioError, Code

log = logging.getLogger(__name__)

Kind = Literal["input", "output"]

PORTAUDIO_LOCK = threading.Lock()
"""Held around opening and closing streams: PortAudio is not thread-safe, and the
microphone and speaker open and close theirs from different worker threads."""


@dataclass(frozen=True)
class AudioDevice:
    """One PortAudio device."""

    index: int
    """PortAudio's index (valid until PortAudio is re-initialised)."""
    name: str
    """Device name, e.g. ``pipewire`` or ``HDA Intel PCH: ALC3246 Analog (hw:0,0)``."""
    hostapi: str
    """Host API, e.g. ``ALSA``."""
    input_channels: int
    """Maximum capture channels (0: not an input)."""
    output_channels: int
    """Maximum playback channels (0: not an output)."""
    default_samplerate: float
    """The rate the device prefers, Hz."""
    is_default_input: bool
    """PortAudio's default input device."""
    is_default_output: bool
    """PortAudio's default output device."""

    def channels(self, kind: Kind) -> int:
        """Maximum channels in the ``kind`` direction."""
        return self.input_channels if kind == "input" else self.output_channels


def sounddevice() -> ModuleType:
    """The sounddevice module; AudioError ``audio-unavailable`` when PortAudio is missing."""
    try:
        sd = heavy.load("sounddevice")
    except OSError as exc:  # sounddevice raises OSError when libportaudio is not found
        raise AudioError(
            Code.AUDIO_UNAVAILABLE, f"PortAudio is not installed (apt install libportaudio2): {exc}"
        ) from None
    except ImportError as exc:
        raise AudioError(Code.AUDIO_UNAVAILABLE, f"the sounddevice package is missing: {exc}") from None
    return sd


def list_devices() -> list[AudioDevice]:
    """Every device PortAudio knows, inputs and outputs, in index order."""
    sd = sounddevice()
    hostapis = sd.query_hostapis()
    default_in, default_out = _defaults(sd)
    devices = []
    for info in sd.query_devices():
        devices.append(
            AudioDevice(
                index=info["index"],
                name=info["name"],
                hostapi=hostapis[info["hostapi"]]["name"],
                input_channels=info["max_input_channels"],
                output_channels=info["max_output_channels"],
                default_samplerate=float(info["default_samplerate"]),
                is_default_input=info["index"] == default_in,
                is_default_output=info["index"] == default_out,
            )
        )
    return devices


def _defaults(sd: ModuleType) -> tuple[int, int]:
    try:
        default_in, default_out = (int(i) for i in sd.default.device)
    except (TypeError, ValueError):
        return -1, -1
    # sd.default.device is [-1, -1] until set; PortAudio's own defaults are per host API.
    if default_in < 0 or default_out < 0:
        try:
            api = sd.query_hostapis(sd._lib.Pa_GetDefaultHostApi())
        except Exception:  # no host API at all
            return default_in, default_out
        default_in = default_in if default_in >= 0 else api["default_input_device"]
        default_out = default_out if default_out >= 0 else api["default_output_device"]
    return default_in, default_out


def describe(devices: list[AudioDevice], kind: Kind) -> str:
    """``0 pipewire, 1 default*`` — the devices of one direction (``*`` = default)."""
    items = [
        f"{d.index} {d.name}{'*' if (d.is_default_input if kind == 'input' else d.is_default_output) else ''}"
        for d in devices
        if d.channels(kind) > 0
    ]
    return ", ".join(items) if items else "none"


def resolve(value: str | int, kind: Kind) -> AudioDevice:
    """The device a config value names: an index, a case-insensitive part of the name
    (an exact name wins over a partial one), or "" for the default. AudioError
    ``audio-device-not-found`` names the config key and lists the devices that exist."""
    key = f"audio.{kind}_device"
    devices = list_devices()
    usable = [d for d in devices if d.channels(kind) > 0]
    text = str(value).strip()

    def fail(why: str) -> AudioError:
        return AudioError(
            "audio-device-not-found", f"{key}: {why}; {kind} devices: {describe(devices, kind)}"
        )

    if not usable:
        raise fail(f"no {kind} device found (is PipeWire or PulseAudio running for this user?)")
    if text == "":
        default = [d for d in usable if (d.is_default_input if kind == "input" else d.is_default_output)]
        if not default:
            raise fail(f"there is no default {kind} device")
        return default[0]
    if text.lstrip("-").isdigit():
        index = int(text)
        for d in devices:
            if d.index == index:
                if d.channels(kind) == 0:
                    raise fail(f"device {index} ({d.name}) has no {kind} channels")
                return d
        raise fail(f"no device has index {index}")
    wanted = text.casefold()
    exact = [d for d in usable if d.name.casefold() == wanted]
    partial = [d for d in usable if wanted in d.name.casefold()]
    matches = exact or partial
    if not matches:
        raise fail(f"no {kind} device name contains {text!r}")
    if len(matches) > 1:
        log.info(
            "%s=%r matches %d devices; using %d %s",
            key,
            text,
            len(matches),
            matches[0].index,
            matches[0].name,
        )
    return matches[0]
