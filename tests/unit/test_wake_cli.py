"""``iris wake --wav``: the file read and resampled, frames fed as the listener feeds them,
the threshold and model taken from the config or the options, and the exit codes — with a
fake detector (the real model is in ``tests/speech/test_wake_human.py``)."""

from __future__ import annotations

import wave
from pathlib import Path

import numpy as np
import pytest

from iris_voice.audio import FRAME_SAMPLES, SAMPLE_RATE
from iris_voice.cli.main import main
from iris_voice.speech import wake
from iris_voice.speech.wake import REFRACTORY_FRAMES, detections_at, scan


class ScriptedDetector:
    """Scores frames from a script: ``scores[i]`` for the i-th frame fed, 0.0 past its end;
    records what it was given and how often it was reset."""

    made: list[ScriptedDetector] = []
    scores: list[float] = []

    def __init__(self, cfg) -> None:
        wake.resolve_wake_model(cfg.model)  # as the real one: a bad model name raises
        self.cfg = cfg
        self.name = cfg.model
        self.frames: list[np.ndarray] = []
        self.resets = 0
        ScriptedDetector.made.append(self)

    def process_sync(self, frame: np.ndarray) -> float:
        self.frames.append(frame)
        i = len(self.frames) - 1
        return self.scores[i] if i < len(self.scores) else 0.0

    def reset(self) -> None:
        self.resets += 1


class RestartingDetector(ScriptedDetector):
    """Like ``ScriptedDetector``, but the script starts over at each reset."""

    def __init__(self) -> None:
        self.frames, self.resets, self._since_reset = [], 0, 0

    def process_sync(self, frame: np.ndarray) -> float:
        self.frames.append(frame)
        i, self._since_reset = self._since_reset, self._since_reset + 1
        return self.scores[i] if i < len(self.scores) else 0.0

    def reset(self) -> None:
        self.resets += 1
        self._since_reset = 0


@pytest.fixture
def scripted(monkeypatch, tmp_path):
    monkeypatch.setattr(wake, "OpenWakeWordDetector", ScriptedDetector)
    config = tmp_path / "config.toml"
    config.write_text('[wake]\nmodel = "alexa"\nthreshold = 0.6\n')
    monkeypatch.setenv("IRIS_CONFIG", str(config))
    ScriptedDetector.made = []
    ScriptedDetector.scores = []
    return ScriptedDetector


def write_wav(path: Path, seconds: float, rate: int = SAMPLE_RATE, channels: int = 1) -> Path:
    n = round(seconds * rate)
    tone = (np.sin(np.arange(n) * 2 * np.pi * 440 / rate) * 8000).astype(np.int16)
    with wave.open(str(path), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(np.repeat(tone, channels).tobytes())
    return path


def test_detected_prints_each_detection_and_the_highest_score(scripted, tmp_path, capsys):
    scripted.scores = [0.1] * 30 + [0.7, 0.5, 0.9]  # frames 31 to 33 (counted from 1)
    assert main(["wake", "--wav", str(write_wav(tmp_path / "a.wav", 2.0))]) == 0
    out = capsys.readouterr().out.splitlines()
    det = scripted.made[0]
    assert det.name == "alexa" and det.cfg.threshold == 0.6  # from the config file
    assert det.resets == 2  # after each detection, as the listener does
    frame_s = FRAME_SAMPLES / SAMPLE_RATE
    assert out == [
        f"alexa over {tmp_path / 'a.wav'} (2.00 s, then 1 s of silence), threshold 0.60, patience 3",
        f"detected at {31 * frame_s:.2f} s (score 0.700)",
        f"detected at {33 * frame_s:.2f} s (score 0.900)",
        f"highest score 0.900 at {33 * frame_s:.2f} s",
    ]


def test_not_detected_exits_1(scripted, tmp_path, capsys):
    scripted.scores = [0.2, 0.55, 0.3]
    assert main(["wake", "--wav", str(write_wav(tmp_path / "a.wav", 1.0))]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[1:] == ["not detected", f"highest score 0.550 at {2 * FRAME_SAMPLES / SAMPLE_RATE:.2f} s"]
    assert scripted.made[0].resets == 0


def test_options_override_the_config(scripted, tmp_path, capsys):
    scripted.scores = [0.2, 0.55, 0.3]
    wav = write_wav(tmp_path / "a.wav", 1.0)
    assert main(["wake", "--wav", str(wav), "--threshold", "0.5", "--model", "hey_jarvis"]) == 0
    det = scripted.made[0]
    assert (det.name, det.cfg.threshold) == ("hey_jarvis", 0.5)
    assert "detected at" in capsys.readouterr().out


def test_any_rate_and_channel_count_is_fed_as_16_khz_mono_frames(scripted, tmp_path):
    wav = write_wav(tmp_path / "a.wav", 1.5, rate=44100, channels=2)
    assert main(["wake", "--wav", str(wav)]) == 1
    frames = scripted.made[0].frames
    assert {f.shape for f in frames} == {(FRAME_SAMPLES,)} and frames[0].dtype == np.int16
    # 1.5 s at 16 kHz plus the second of silence, in whole frames
    assert len(frames) == (round(1.5 * SAMPLE_RATE) + SAMPLE_RATE) // FRAME_SAMPLES
    audio = np.concatenate(frames)
    assert np.abs(audio[:SAMPLE_RATE]).max() > 6000 and not audio[-SAMPLE_RATE // 2 :].any()


def test_unreadable_files_and_bad_options_are_usage_errors(scripted, tmp_path, capsys):
    assert main(["wake", "--wav", str(tmp_path / "missing.wav")]) == 2
    assert "no such file" in capsys.readouterr().err
    (tmp_path / "text.wav").write_text("not audio")
    assert main(["wake", "--wav", str(tmp_path / "text.wav")]) == 2
    assert "not a PCM WAV file" in capsys.readouterr().err
    wav = str(write_wav(tmp_path / "a.wav", 0.5))
    for bad in ("1", "0", "x"):
        with pytest.raises(SystemExit) as exit_:
            main(["wake", "--wav", wav, "--threshold", bad])
        assert exit_.value.code == 2
    assert scripted.made == []


def test_an_unknown_model_is_a_configuration_error(scripted, tmp_path, capsys):
    wav = str(write_wav(tmp_path / "a.wav", 0.5))
    assert main(["wake", "--wav", wav, "--model", "hey_computer"]) == 78
    assert "wake.model: 'hey_computer' is neither" in capsys.readouterr().err


def test_scan_resets_after_each_detection():
    det = RestartingDetector()
    det.scores = [0.0, 0.8, 0.9, 0.95, 0.0]
    result = scan(det, np.zeros(12 * FRAME_SAMPLES + 100, np.int16), 0.5)
    # Fired on the 2nd frame and reset: the 0.9 and 0.95 after it are never seen; the script
    # starts over, so it fires every second frame.
    assert [round(t / (FRAME_SAMPLES / SAMPLE_RATE)) for t, _ in result.detections] == [2, 4, 6, 8, 10, 12]
    assert det.resets == 6 and len(det.frames) == 12  # the trailing 100 samples are not a frame
    assert result.best_score == 0.8 and result.duration_s == 12 * FRAME_SAMPLES / SAMPLE_RATE


def test_replayed_thresholds_skip_the_frames_a_reset_silences():
    scores = [0.0] * 100
    scores[10] = scores[12] = 0.9  # one phrase: the second frame falls in the refractory time
    scores[10 + REFRACTORY_FRAMES] = 0.6  # the first frame a reset detector scores again
    scores[80] = 0.4  # inside the refractory time of the detection at 50
    scores[95] = 0.4
    assert detections_at(scores, 0.5) == [10, 10 + REFRACTORY_FRAMES]
    assert detections_at(scores, 0.3) == [10, 10 + REFRACTORY_FRAMES, 95]
    assert detections_at(scores, 0.95) == []
    assert REFRACTORY_FRAMES == 40  # 16 model steps of 1280 samples, in 512-sample frames


def test_patience_reaches_the_detector(scripted, tmp_path):
    scripted.scores = [0.9]
    wav = write_wav(tmp_path / "a.wav", 0.5)
    main(["wake", "--wav", str(wav), "--patience", "3"])
    assert scripted.made[0].cfg.patience == 3


class _Steps:
    """Stand-ins for openWakeWord's two models: one embedding per 80 ms step, and a
    scripted score for each."""

    input_windows = 16

    def __init__(self, scores: list[float]) -> None:
        self.scores = list(scores)
        self.embeddings = np.zeros((self.input_windows, 96), np.float32)

    def process_streaming(self, item):  # features: bytes in, embeddings out; model: embedding in
        if isinstance(item, bytes):
            yield from range(len(item) // (2 * wake.STEP_SAMPLES))
        else:
            yield self.scores.pop(0)

    def reset(self) -> None:
        pass


@pytest.mark.parametrize(
    ("patience", "expected"),
    [(1, [0.1, 0.9, 0.1, 0.9, 0.9, 0.9, 0.2]), (3, [0.0, 0.0, 0.1, 0.1, 0.1, 0.9, 0.2])],
)
def test_patience_needs_that_many_steps_in_a_row(patience, expected):
    from iris_voice.config import WakeConfig

    det = wake.OpenWakeWordDetector(WakeConfig(patience=patience, verifier=False))
    steps = _Steps([0.1, 0.9, 0.1, 0.9, 0.9, 0.9, 0.2, 0.9, 0.9, 0.9])
    det._ww = steps
    det._features = steps
    step = np.zeros(wake.STEP_SAMPLES, np.int16)
    assert [round(det.process_sync(step), 3) for _ in range(7)] == expected
    det.reset()  # a reset forgets the steps before it: three new ones are needed again
    after = [round(det.process_sync(step), 3) for _ in range(3)]
    assert after == ([0.9] * 3 if patience == 1 else [0.0, 0.0, 0.9])
