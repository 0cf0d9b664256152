"""Shared fixtures: an isolated cache directory, the real data, one torch thread, a CSV column reader."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from showwork.results_table import read_results_table

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA_DIR = REPO_ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session", autouse=True)
def isolated_cache_dir(tmp_path_factory):
    """Point ``SHOWWORK_CACHE_DIR`` at a fresh directory so no test reads or writes ~/.cache."""
    cache = tmp_path_factory.mktemp("showwork-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SHOWWORK_CACHE_DIR", str(cache))
        yield cache


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


def load_column(path: str | os.PathLike, column: str) -> np.ndarray:
    """Return one column of a results file as floats, in file order; a missing cell becomes NaN.

    Goes through showwork's own reader, so the tests read data exactly as the CLI does.
    """
    path = Path(path)
    if not path.is_file():
        pytest.fail(f"data file not found: {path} (is SHOWWORK_DATA_DIR right?)", pytrace=False)
    return np.asarray(read_results_table(path).numeric_column(column), dtype=float)
