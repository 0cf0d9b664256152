"""Issue 16: a real search whose space has conditional and stepped parameters, through Ray, the ledger and MLflow.

The trainable refuses a configuration with a parameter its condition leaves out (or without one
its condition draws), so a condition the workers did not honour fails trials; the MLflow child runs
must not carry a left-out parameter, and the report's checklist must state the step and the condition.
"""

from __future__ import annotations

import contextlib
import io
import json
import textwrap

import pytest

from showwork.sampling import trial_config
from showwork.space import load_search_spec
from showwork.store import Ledger

from helpers import search_environment

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def cli(*argv) -> tuple[int, str, str]:
    """Run ``showwork ARGV`` in this process; return (exit status, stdout, stderr)."""
    from showwork.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()

TRAINABLE = """
    def train(config, *, seed, device, reporter, data):
        sgd = config["optimizer"] == "sgd"
        if ("momentum" in config) != sgd or ("beta2" in config) == sgd:
            raise RuntimeError(f"a condition was not honoured: {sorted(config)}")
        if sgd and abs(config["momentum"] * 20 - round(config["momentum"] * 20)) > 1e-9:
            raise RuntimeError(f"momentum {config['momentum']!r} is not on its step")
        if not isinstance(config["width"], int) or config["width"] % 16:
            raise RuntimeError(f"width {config['width']!r} is not an integer multiple of 16")
        score = 0.5 + 0.4 * config.get("momentum", 0.5) - config["width"] / 10_000
        reporter(epoch=0, val_accuracy=score)
        return {"val_accuracy": score, "test_accuracy": score - 0.01}
"""

SPACE = """
    name: conditional
    family: conditional.py:train
    metric: {name: val_accuracy, mode: max, test: test_accuracy, bounds: [0, 1]}
    num_trials: 8
    seed: 3
    max_concurrent: 2
    space:
      optimizer: {distribution: categorical, choices: [sgd, adam]}
      momentum: {distribution: uniform, low: 0.0, high: 0.95, step: 0.05, when: {optimizer: sgd}}
      beta2: {distribution: categorical, choices: [0.99, 0.999], when: {optimizer: {in: [adam]}}}
      width: {distribution: int_truncated_exponential, low: 16, high: 256, scale: 64, step: 16}
"""


@pytest.fixture(scope="module")
def search(tmp_path_factory):
    root = tmp_path_factory.mktemp("conditional")
    (root / "conditional.py").write_text(textwrap.dedent(TRAINABLE).lstrip())
    space = root / "conditional.yaml"
    space.write_text(textwrap.dedent(SPACE).lstrip())
    storage, uri = root / "runs", f"sqlite:///{root / 'mlflow.db'}"
    with search_environment(root):
        code, out, err = cli("search", space, "--no-progress", "--storage", storage, "--tracking-uri", uri)
        yield root, space, storage, uri, code, out, err


def test_every_trial_gets_exactly_the_parameters_its_conditions_draw(search):
    root, space, storage, uri, code, out, err = search
    assert code == 0, err
    assert "8 finished, 0 failed" in out, out
    spec = load_search_spec(space)
    records = Ledger(storage, spec.name).records()
    assert [r.status for r in records] == ["finished"] * 8, [r.error for r in records]
    for record in records:
        assert record.params == trial_config(spec.space, spec.seed, record.index)  # what `showwork sample` shows
    optimizers = {r.params["optimizer"] for r in records}
    assert optimizers == {"sgd", "adam"}  # seed 3 draws both, so both branches ran


def test_a_left_out_parameter_is_absent_from_the_mlflow_child_run(search):
    from mlflow.tracking import MlflowClient

    root, space, storage, uri, code, out, err = search
    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("conditional")
    runs = client.search_runs([experiment.experiment_id], max_results=100)
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    assert len(children) == 8
    (parent,) = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    # The parent's description of the space states the step and the condition.
    assert parent.data.params["space.momentum"] == "uniform on [0.0, 0.95] step 0.05 (only when optimizer = 'sgd')"
    for run in children:
        params = run.data.params
        sgd = params["optimizer"] == "sgd"
        assert ("momentum" in params) == sgd and ("beta2" in params) == (not sgd), params


def test_the_checklist_states_the_step_and_the_condition(search):
    root, space, storage, uri, code, out, err = search
    code, out, err = cli("report", "conditional", "--storage", storage, "--out", root / "report", "--formats", "png")
    assert code == 0, err
    data = json.loads((root / "report" / "report.json").read_text())
    answers = json.dumps([item["answers"] for item in data["checklist"]])
    assert "momentum: uniform [0.0, 0.95] step 0.05 (only when optimizer = 'sgd')" in answers
    assert "beta2: categorical 0.99, 0.999 (only when optimizer in {'adam'})" in answers
    assert "width: int_truncated_exponential (scale 64.0) {16, ..., 256} step 16" in answers


def test_the_results_table_leaves_a_left_out_parameter_empty(search):
    import csv
    import io as text_io

    root, space, storage, uri, code, out, err = search
    code, out, err = cli("results", "conditional", "--storage", storage, "--csv")
    assert code == 0, err
    rows = list(csv.DictReader(text_io.StringIO(out)))
    assert len(rows) == 8
    for row in rows:
        sgd = row["param.optimizer"] == "sgd"
        assert (row["param.momentum"] != "") == sgd and (row["param.beta2"] != "") == (not sgd), row
