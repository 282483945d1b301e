"""The one ONNX Runtime session builder and the two detectors that use it (a fake
onnxruntime records what it is asked; one test loads a broken file with the real one)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from iris_voice.errors import Code, SpeechError
from iris_voice.speech import onnx
from iris_voice.speech.onnx import onnx_session
from iris_voice.speech.turn import SmartTurnDetector
from iris_voice.speech.vad import SileroDetector


class FakeOrt:
    """Stands in for the onnxruntime module: records the sessions asked for, or fails them."""

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.sessions: list[dict] = []

    @staticmethod
    def SessionOptions() -> SimpleNamespace:  # noqa: N802 - onnxruntime's name
        return SimpleNamespace()

    def InferenceSession(self, path, providers, sess_options):  # noqa: N802 - onnxruntime's name
        if self.fail:
            raise RuntimeError("INVALID_PROTOBUF")
        self.sessions.append({"path": path, "providers": providers, "opts": vars(sess_options)})
        return "session"


@pytest.fixture
def fake_ort(monkeypatch) -> FakeOrt:
    ort = FakeOrt()
    loaded: list[str] = []

    def load(name: str):
        loaded.append(name)
        return ort

    monkeypatch.setattr(onnx.heavy, "load", load)
    ort.loaded = loaded  # type: ignore[attr-defined]
    return ort


def test_the_session_is_single_inter_op_quiet_and_on_the_cpu(fake_ort):
    assert onnx_session(Path("/m/x.onnx"), threads=2, what="X") == "session"
    assert fake_ort.loaded == ["onnxruntime"]  # through heavy.load's one lock
    assert fake_ort.sessions == [
        {
            "path": "/m/x.onnx",
            "providers": ["CPUExecutionProvider"],
            "opts": {"intra_op_num_threads": 2, "inter_op_num_threads": 1, "log_severity_level": 3},
        }
    ]


def test_a_model_onnxruntime_refuses_is_model_invalid_naming_the_model(fake_ort):
    fake_ort.fail = True
    with pytest.raises(SpeechError) as err:
        onnx_session(Path("/m/x.onnx"), threads=1, what="the X model")
    assert err.value.code == Code.MODEL_INVALID
    assert "cannot load the X model /m/x.onnx: INVALID_PROTOBUF" in str(err.value)
    assert isinstance(err.value.__cause__, RuntimeError)


def test_smart_turn_uses_its_thread_count_and_loads_once(fake_ort):
    det = SmartTurnDetector(model_path="/m/turn.onnx", threads=2)
    assert det._load() == det._load() == "session"
    assert len(fake_ort.sessions) == 1
    assert fake_ort.sessions[0]["opts"]["intra_op_num_threads"] == 2
    assert SmartTurnDetector(model_path="/m/turn.onnx")._load() == "session"
    assert fake_ort.sessions[1]["opts"]["intra_op_num_threads"] == 1  # the default


def test_silero_runs_on_one_thread(fake_ort):
    det = SileroDetector(model_path="/m/vad.onnx")
    assert det._load() == "session"
    assert fake_ort.sessions[0]["opts"]["intra_op_num_threads"] == 1


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: SmartTurnDetector(model_path=p), "cannot load the Smart Turn model"),
        (lambda p: SileroDetector(model_path=p), "cannot load Silero VAD"),
    ],
)
def test_each_detector_names_its_model_when_the_file_is_broken(fake_ort, make, message):
    fake_ort.fail = True
    with pytest.raises(SpeechError, match=f"^{message} /m/broken.onnx: "):
        make("/m/broken.onnx")._load()


def test_the_real_onnxruntime_refuses_a_file_that_is_not_a_model(tmp_path):
    pytest.importorskip("onnxruntime")
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    with pytest.raises(SpeechError) as err:
        onnx_session(bad, threads=1, what="the test model")
    assert err.value.code == Code.MODEL_INVALID
    assert str(err.value).startswith(f"cannot load the test model {bad}: ")
