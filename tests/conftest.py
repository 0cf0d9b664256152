"""Shared fixtures: an isolated cache directory, the real data, one torch thread, a search's module environment,
an empty MLflow store to copy, a Ray that must not start (``isolated``), and a tiny DeBERTa checkpoint.

The helpers the tests import (``search_environment``, ``trial_record``, ``run_cli``, ...) are in helpers.py.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from helpers import DEFAULT_DATA_DIR, REPO_ROOT, search_environment, store_files

# The bad inputs' family files are the cases' code, not tests: never imported by --doctest-modules
# (broken_import.py fails at import on purpose).
collect_ignore_glob = ["bad_inputs/*", "standins/*"]  # standins/: modules that stand in for absent libraries (pynvml)
# The fault harness, imported by Python at start-up as `sitecustomize` (PYTHONPATH), not a test module: on a
# Python whose stdlib has its own sitecustomize (Debian's /usr/bin/python3), `--doctest-modules tests`
# would import it under that name again and stop the collection with an import-file mismatch.
collect_ignore = ["faults/sitecustomize.py"]


@pytest.fixture(scope="session", autouse=True)
def isolated_cache_dir(tmp_path_factory):
    """Point ``SHOWWORK_CACHE_DIR`` at a fresh directory so no test reads or writes ~/.cache."""
    cache = tmp_path_factory.mktemp("showwork-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SHOWWORK_CACHE_DIR", str(cache))
        yield cache


@pytest.fixture(scope="session", autouse=True)
def no_store_left_in_the_repository():
    """Fail the run (at its last test's teardown) when a test left an MLflow store or a lock in the repository's
    root: a search given a relative ``sqlite:///x.db``, or none (``./mlflow.db``), from the root's folder does.
    Only files the run created count: a developer's own ``mlflow.db`` there is left alone."""
    before = store_files(REPO_ROOT.iterdir())
    yield
    left = sorted(store_files(REPO_ROOT.iterdir()) - before)
    assert not left, f"the tests left {', '.join(Path(name).name for name in left)} in {REPO_ROOT}: a test ran a search there"


@pytest.fixture(scope="session")
def shared_data_dir() -> Path:
    """The real datasets: ``$SHOWWORK_DATA_DIR`` (default ``<repo root>/../shared/data``); missing is a failure."""
    root = Path(os.environ.get("SHOWWORK_DATA_DIR") or DEFAULT_DATA_DIR)
    if not (root / "sst").is_dir():
        pytest.fail(f"datasets not found at {root}; set SHOWWORK_DATA_DIR (default: <repo root>/../shared/data).", pytrace=False)
    return root


@pytest.fixture(scope="module")
def one_torch_thread():
    """Run a test module's torch code on one intra-op thread; the previous setting is restored after the module.

    Small models (LSTMs, tiny transformers, small convolutions) run faster on one thread than on two,
    and several times faster when other processes share a 2-core machine. Module-scoped so that the
    module's model-training fixtures run single-threaded too. The model-family test modules opt in
    with ``pytestmark = pytest.mark.usefixtures("one_torch_thread")``; torch is imported here, not at
    the top, so this file imports without torch.
    """
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def search_results_dir() -> Path:
    """The directory of real search results: ``$SHOWWORK_DATA_DIR/search-results``.

    ``SHOWWORK_DATA_DIR`` defaults to ``<repo root>/../shared/data``. A missing directory is a
    failure, not a skip: the reference tests must not pass silently without their data.
    """
    root = Path(os.environ.get("SHOWWORK_DATA_DIR") or DEFAULT_DATA_DIR)
    path = root / "search-results"
    if not path.is_dir():
        pytest.fail(
            f"search results not found at {path}; set SHOWWORK_DATA_DIR to the directory that"
            " holds search-results/ (default: <repo root>/../shared/data).",
            pytrace=False,
        )
    return path


@pytest.fixture
def isolated(monkeypatch, tmp_path):
    """For tests of inputs refused before a search runs: a temporary current directory, ``sys.path``
    restored after the test (a family file's folder is put on it), no cluster address or tracking URI
    inherited, no MLflow telemetry, and a Ray that must not start (entering ``RayExecutor`` fails the test).

    The modules that use it opt in with ``pytestmark = pytest.mark.usefixtures("isolated")``.
    """
    from showwork.trials.ray_executor import RayExecutor

    def no_ray(self):
        raise AssertionError("the search started Ray: the bad input was not refused before the run")

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setattr(RayExecutor, "__enter__", no_ray)


@pytest.fixture(scope="module")
def environment(tmp_path_factory):
    """Data directory, no MLflow telemetry, a local Ray, and a temporary current directory for the whole module."""
    with search_environment(tmp_path_factory.mktemp("cwd")) as home:
        yield home


@pytest.fixture(scope="module")
def template_db(environment, tmp_path_factory) -> Path:
    """An empty MLflow SQLite database, created once: its schema migrations take seconds."""
    from mlflow.tracking import MlflowClient

    path = tmp_path_factory.mktemp("mlflow-template") / "mlflow.db"
    MlflowClient(tracking_uri=f"sqlite:///{path}").search_experiments(max_results=1)
    return path


@pytest.fixture
def home(tmp_path, template_db):
    """The test's folder as the current directory, with its own copy of the MLflow database."""
    shutil.copy(template_db, tmp_path / "mlflow.db")
    with search_environment(tmp_path):
        yield tmp_path


@pytest.fixture(scope="session")
def nli_texts(shared_data_dir) -> list:
    """The training texts (premise, hypothesis pairs) of the local SNLI and MultiNLI samples."""
    from showwork_models.data import load_dataset

    data = {"dir": str(shared_data_dir)}
    return list(load_dataset("snli", data).train.texts) + list(load_dataset("mnli", data).train.texts)


@pytest.fixture(scope="session")
def tiny_deberta(tmp_path_factory, nli_texts) -> Path:
    """A tiny random DeBERTa checkpoint directory (:func:`showwork_models.deberta.build_tiny_checkpoint`'s defaults:
    a 2-layer, 64-wide DeBERTaV3-style encoder and a 1,000-piece tokenizer learned from ``nli_texts``),
    built once per session: the hub is not reachable from the tests. Load it with ``data: {model: str(path)}``.
    Tests read it and never write into it.
    """
    from showwork_models.deberta import build_tiny_checkpoint

    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny-deberta"), nli_texts)
