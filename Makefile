# One entry point for a newcomer and for CI. Every target sets up its own virtual environment.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
SHARED_DATA ?= $(abspath ../shared/data)
export SHOWWORK_DATA_DIR ?= $(SHARED_DATA)
export MLFLOW_DISABLE_TELEMETRY = true

.PHONY: setup test test-fast demo bench clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

setup: $(VENV)/.installed

# The full suite, slow and integration tests included (what CI runs).
test: $(VENV)/.installed
	$(PY) -m pytest -m "slow or not slow" --doctest-modules showwork tests

# The quick loop while developing.
test-fast: $(VENV)/.installed
	$(PY) -m pytest

# The main job available today: tuning curves and evidence from real random-search results.
demo: $(VENV)/.installed
	$(VENV)/bin/showwork curve $(SHOWWORK_DATA_DIR)/search-results/reuters_mlp_f1.csv --score f1 --a 0 --b 1 --k 1,2,5,10,20,50
	$(VENV)/bin/showwork compare $(SHOWWORK_DATA_DIR)/search-results/deberta-base_mnli_tuning.csv \
	    $(SHOWWORK_DATA_DIR)/search-results/deberta-v3-base_mnli_tuning.csv --score matched_acc_best --k 1..20 --target 0.89
	$(VENV)/bin/showwork plan --k 20

bench: $(VENV)/.installed
	$(PY) benchmarks/stats.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info
