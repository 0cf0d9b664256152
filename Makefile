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

# The main job: a real 20-trial random search on SST-2 (Ray Tune + MLflow), then its tuning curve,
# and the evidence between two recorded families. Re-running it resumes (and so only reports).
demo: $(VENV)/.installed
	$(VENV)/bin/showwork search search_spaces/demo_sst2.yaml --resume
	$(VENV)/bin/showwork results demo-sst2-bow --csv > showwork_runs/demo-sst2-bow.csv
	$(VENV)/bin/showwork curve showwork_runs/demo-sst2-bow.csv --score score --a 0 --b 1 --k 1..10 --failed worst
	$(VENV)/bin/showwork compare $(SHOWWORK_DATA_DIR)/search-results/deberta-base_mnli_tuning.csv \
	    $(SHOWWORK_DATA_DIR)/search-results/deberta-v3-base_mnli_tuning.csv --score matched_acc_best --k 1..20 --target 0.89
	$(VENV)/bin/showwork plan --k 20

bench: $(VENV)/.installed
	$(PY) benchmarks/stats.py
	$(PY) benchmarks/search.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info
