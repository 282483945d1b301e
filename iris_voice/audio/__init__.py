"""Audio stages of the voice daemon: capture, playback, speech detection, wake word."""

FRAME_SAMPLES = 512
"""Samples per captured frame at 16 kHz (32 ms): one Silero VAD window."""
SAMPLE_RATE = 16000
"""Capture rate of every audio stage."""
