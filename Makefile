# One entry point for a newcomer and for CI. Every target sets up its own virtual environment.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
# The BCN family's allennlp-light cannot share an environment with transformers 5 (see pyproject.toml).
VENV_BCN ?= .venv-bcn
# Local data: $SHOWWORK_DATA_DIR if set, else ../shared/data when it exists; without either, the
# families download their datasets from the Hugging Face hub (and NLTK for Reuters).
SHARED_DATA ?= $(abspath ../shared/data)
ifeq ($(origin SHOWWORK_DATA_DIR),undefined)
ifneq ($(wildcard $(SHARED_DATA)/README.md),)
export SHOWWORK_DATA_DIR := $(SHARED_DATA)
endif
endif
export MLFLOW_DISABLE_TELEMETRY = true

.PHONY: setup test test-fast demo docs figure-gallery notebook bench gpu-bundle experiments experiments-quick clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

$(VENV_BCN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV_BCN)
	$(VENV_BCN)/bin/python -m pip install --quiet --upgrade pip
	$(VENV_BCN)/bin/python -m pip install --quiet -e '.[bcn]' 'pytest>=8' 'hypothesis>=6.100'
	touch $@

setup: $(VENV)/.installed

# The full suite, slow and integration tests included (what CI runs), then the BCN family's tests
# in its own environment.
# The lint gate first (pyflakes, import order, complexity <= 15: [tool.ruff] in pyproject.toml; the
# layers' import directions and no private names across modules: tests/unit/test_layers.py and
# test_private_imports.py).
# The doctests of models/ run through its link showwork_models, the name the tests import it by
# (one copy of each module in the process).
LINT = $(PY) -m ruff check showwork models experiments benchmarks tests docs/_hooks && \
	$(PY) -m pytest -q -p no:cacheprovider tests/unit/test_layers.py tests/unit/test_private_imports.py

test: $(VENV)/.installed $(VENV_BCN)/.installed
	$(LINT)
	$(PY) -m pytest -m "slow or not slow" --doctest-modules showwork showwork_models experiments tests
	$(VENV_BCN)/bin/python -m pytest -m "slow or not slow" -p no:cacheprovider tests/unit/test_family_bcn.py

# The quick loop while developing (about 3 minutes on 2 quiet cores): the lint gate, then every test
# not marked slow. Tests that train a model on real data, start Ray or run a search are marked
# @pytest.mark.slow and run in `make test` (and CI).
test-fast: $(VENV)/.installed
	$(LINT)
	$(PY) -m pytest

# The main job: a real 50-trial random search on SST-2 (Ray Tune + MLflow; about 2 minutes on 2 cores), then its
# report (figures, tables, checklist; also on the search's MLflow parent run): with 50 trials its bands are
# informative up to k ≈ 8.5. The same trials split by ngrams compare unigrams with bigrams (--by); a report compares
# two recorded families, per trial and at equal cost in epochs (--cost: figures/comparison_cost.png), with strong
# evidence up to k ≈ 140. Re-running it resumes the search (and so only reports).
demo: $(VENV)/.installed
	$(VENV)/bin/showwork search search_spaces/demo_sst2.yaml --resume
	$(VENV)/bin/showwork report demo-sst2-bow --out reports/demo-sst2-bow
	$(VENV)/bin/showwork report demo-sst2-bow --by ngrams --out reports/demo-sst2-bow-ngrams --no-mlflow
	$(VENV)/bin/showwork report $(SHOWWORK_DATA_DIR)/search-results/deberta-base_mnli_tuning.csv \
	    $(SHOWWORK_DATA_DIR)/search-results/deberta-v3-base_mnli_tuning.csv --score matched_acc_best \
	    --label DeBERTa --label DeBERTaV3 --sampler random --a 0 --b 1 --target 0.89 --cost num_train_epochs --out reports/deberta
	$(VENV)/bin/showwork plan --k 20

# The documentation site (mkdocs.yml) into site/, strictly: a warning, a broken link or a missing anchor
# fails. The CLI reference is generated from the parser, the API reference from the docstrings.
# `$(VENV)/bin/mkdocs serve` serves it at http://127.0.0.1:8000 while you edit.
docs: $(VENV)/.installed
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

# The images of docs/figure-gallery.md: every kind of figure at the figures' own size, one column and two
# columns of a paper (docs/images/figures/); each is checked for texts off the canvas or overlapping as it is
# drawn, and tests/deploy/test_figure_gallery.py fails when one is not current.
figure-gallery: $(VENV)/.installed
	$(PY) docs/_hooks/figure_gallery.py

# examples/notebook.ipynb executed in a fresh Jupyter kernel and written back with its outputs (the docs site
# shows them); tests/integration/test_example_notebook.py fails when a cell's source changed since.
notebook: $(VENV)/.installed
	$(PY) docs/_hooks/notebook.py

bench: $(VENV)/.installed
	$(PY) benchmarks/stats.py
	$(PY) benchmarks/search.py
	$(PY) benchmarks/report.py
	$(PY) benchmarks/families.py

# What a GPU machine without a package index needs, in build/gpu-bundle/ (the working tree travels beside it):
# the packages showwork and its models extra need that the machine's Python 3.12 image lacks
# (benchmarks/gpu_image_packages.txt lists what it has; torch is the image's), Ray and MLflow trimmed to what a
# local Tune run and the SQLite store load, and the data the GPU run reads: it fails when the bundle and the
# working tree come to more than the 64 MiB one call carries. There, benchmarks/gpu_machine.sh runs the GPU tests,
# benchmarks/gpu.py and the Reuters MLP (docs/how-to/gpu-packing.md). `$(PY) benchmarks/gpu_bundle.py verify`
# runs the bundle under a Python 3.12 here.
gpu-bundle: $(VENV)/.installed
	$(PY) benchmarks/gpu_bundle.py build

# The papers' statistical studies (experiments/README.md): full mode writes experiments/results/.
STUDIES = false_conclusions bootstrap_coverage small_samples exact_coverage ablations evidence_errors epochs_effect sequential extrapolation
experiments: $(VENV)/.installed
	for study in $(STUDIES); do $(PY) -m experiments.$$study || exit 1; done
	$(PY) -m experiments.collect

experiments-quick: $(VENV)/.installed
	for study in $(STUDIES); do $(PY) -m experiments.$$study --quick || exit 1; done

clean:
	rm -rf $(VENV) $(VENV_BCN) reports site .pytest_cache .hypothesis build *.egg-info
