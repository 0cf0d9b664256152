"""Issue 17 item 9: reading an ``mlflow:`` source draws no "Downloading artifacts" progress bars on stderr.

MLflow draws a tqdm bar for each artifact it downloads (the search's ``environment.json`` and
``search.yaml``) unless ``MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR`` is false. The report turns it off
while it reads, leaves the environment as it was, and keeps a user's own setting.
"""

from __future__ import annotations

import os

import pytest
from test_report_mlflow import SPEC_YAML, project_search

from showwork.report.sources_mlflow import from_mlflow

pytestmark = pytest.mark.integration

VARIABLE = "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"


@pytest.fixture
def store(tmp_path) -> str:
    """A showwork search's parent run with its artifacts, and its trials, in a SQLite store."""
    (tmp_path / "search.yaml").write_text(SPEC_YAML)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    project_search(uri, tmp_path / "runs", tmp_path / "search.yaml")
    return uri


def test_reading_a_search_from_mlflow_draws_no_progress_bar_and_leaves_the_environment_as_it_was(store, capsys, monkeypatch):
    monkeypatch.delenv(VARIABLE, raising=False)
    capsys.readouterr()
    family = from_mlflow(store, "sst-bow")
    err = capsys.readouterr().err
    assert family.meta["spec_yaml"] == SPEC_YAML  # the artifacts were downloaded
    assert "Downloading artifacts" not in err and "\r" not in err, err
    assert VARIABLE not in os.environ


def test_a_users_own_setting_of_the_progress_bars_is_kept(store, capsys, monkeypatch):
    monkeypatch.setenv(VARIABLE, "true")
    capsys.readouterr()
    family = from_mlflow(store, "sst-bow")
    assert family.meta["spec_yaml"] == SPEC_YAML
    assert "Downloading artifacts" in capsys.readouterr().err  # the bars the user asked for (and what the test above looks for)
    assert os.environ[VARIABLE] == "true"
