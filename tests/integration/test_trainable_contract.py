"""The trainable contract of the README, claim by claim (issue 16 item 6).

What a user's ``train(config, *, seed, device, reporter, data)`` receives, what it may return
(the validation metric, the test metric, ``parameters``, ``split_sizes``, any other number), what
``reporter`` does, and where each lands: the trial's ledger record, its MLflow child run, the
report's checklist. The per-claim tests run one trial in this process (:func:`run_trial`, no Ray);
the last one runs a real search and its report.
"""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from showwork.sampling import trial_config, trial_seed
from showwork.space import SearchSpace
from showwork.trials.execution import SearchContext, run_trial

from helpers import search_process_environment

CONTRACT_FAMILY = """
    import math

    SEEN = {}


    def train(config, *, seed, device, reporter, data):
        behaviour = data["behaviour"]
        SEEN.update(config=config, seed=seed, device=device, data=data)
        if behaviour == "reports_only":  # no validation metric returned: the best reported value is the score
            for epoch, value in enumerate([0.3, 0.9, 0.5]):
                reporter(epoch=epoch, val_acc=value, train_loss=1.0 - value)
            return {"test_acc": 0.7}
        if behaviour == "nothing":
            return None
        if behaviour == "string_metric":
            return {"val_acc": 0.5, "note": "fine"}
        if behaviour == "bool_report":
            reporter(epoch=0, converged=True)
        if behaviour == "epoch_beyond_int64":  # accepted before, then refused by MLflow (issue 23 item 2)
            reporter(epoch=2**63, val_acc=0.3)
        if behaviour == "value_beyond_float":
            reporter(epoch=0, val_acc=10**400)
        if behaviour == "largest_values":
            reporter(epoch=2**63 - 1, val_acc=1.7976931348623157e308, loss=math.inf, other=math.nan)
        if behaviour == "nan":
            return {"val_acc": math.nan}
        return {
            "val_acc": 0.8,
            "test_acc": 0.75,
            "parameters": 4321,
            "split_sizes": {"train": 30, "dev": 10, "test": 5},
            "train_loss_final": 0.125,
        }
"""

SPACE = {"optimizer.lr": {"distribution": "loguniform", "low": 1e-4, "high": 1e-1}, "layers": {"distribution": "constant", "value": 2}}


def one_trial(tmp_path: Path, behaviour: str, mode: str = "max"):
    """Run trial 0 of a search of ``CONTRACT_FAMILY`` with ``data.behaviour``; return (record, what train saw)."""
    family = tmp_path / "contract_family.py"
    family.write_text(textwrap.dedent(CONTRACT_FAMILY).lstrip())
    space = SearchSpace.from_dict(SPACE)
    context = SearchContext(
        name=f"contract-{behaviour}", storage_dir=str(tmp_path / "runs"), space=space.to_dict(), seed=11,
        family="contract_family.py:train", base_dir=str(tmp_path), data={"behaviour": behaviour},
        metric="val_acc", mode=mode, test_metric="test_acc",
    )
    record = run_trial(context, 0)
    seen = sys.modules[next(n for n, m in sys.modules.items() if getattr(m, "__file__", None) == str(family.resolve()))].SEEN
    return record, seen


@pytest.fixture(autouse=True)
def _path_restored(monkeypatch):
    monkeypatch.setattr(sys, "path", list(sys.path))


def test_train_receives_the_nested_config_its_seed_the_device_and_the_data(tmp_path):
    record, seen = one_trial(tmp_path, "full")
    flat = trial_config(SearchSpace.from_dict(SPACE), 11, 0)
    assert seen["config"] == {"optimizer": {"lr": flat["optimizer.lr"]}, "layers": 2}  # dotted names nested, constants in
    assert seen["seed"] == trial_seed(11, 0) == record.seed
    assert seen["device"] == "cpu"  # no GPU given to the trial
    assert seen["data"] == {"behaviour": "full"}
    assert record.params == flat  # the record keeps the dotted names


def test_every_returned_key_is_kept_in_the_record_with_score_and_test_score(tmp_path):
    record, _ = one_trial(tmp_path, "full")
    assert record.status == "finished" and record.score == 0.8 and record.test_score == 0.75
    assert record.metrics == {"val_acc": 0.8, "test_acc": 0.75, "parameters": 4321.0,
                              "split_sizes": {"train": 30, "dev": 10, "test": 5}, "train_loss_final": 0.125}


@pytest.mark.parametrize("mode, best", [("max", 0.9), ("min", 0.3)])
def test_without_a_returned_metric_the_best_reported_value_is_the_score(tmp_path, mode, best):
    record, _ = one_trial(tmp_path, "reports_only", mode)
    assert record.status == "finished" and record.score == best and record.test_score == 0.7
    assert [row["epoch"] for row in record.history] == [0, 1, 2]
    assert [row["val_acc"] for row in record.history] == [0.3, 0.9, 0.5]
    assert record.history[1]["train_loss"] == pytest.approx(0.1)


def test_a_trial_that_neither_returns_nor_reports_the_metric_fails(tmp_path):
    record, _ = one_trial(tmp_path, "nothing")
    assert record.status == "failed" and record.error == "the trainable neither returned nor reported the metric 'val_acc'"


@pytest.mark.parametrize("behaviour, error", [
    ("string_metric", "the trainable returned metric 'note' = 'fine', which is not a number."),
    ("bool_report", "reporter: metric 'converged' must be a number (got bool)."),
    ("nan", "non-finite score val_acc = nan"),
    ("epoch_beyond_int64", "reporter: epoch 9223372036854775808 is beyond 9223372036854775807 (2**63 - 1, MLflow's largest step)."),
    ("value_beyond_float", "reporter: metric 'val_acc' is beyond a float's range (±1.8e308)."),
])
def test_what_is_not_a_number_fails_the_trial_and_says_which(tmp_path, behaviour, error):
    record, _ = one_trial(tmp_path, behaviour)
    assert record.status == "failed" and error in record.error, record.error
    assert behaviour != "nan" or math.isnan(record.score)


def test_the_reporter_takes_the_largest_epoch_and_values_mlflow_stores(tmp_path):
    record, _ = one_trial(tmp_path, "largest_values")
    assert record.status == "finished", record.error
    [row] = record.history
    assert row["epoch"] == 2**63 - 1 and row["val_acc"] == 1.7976931348623157e308 and row["loss"] == math.inf
    assert math.isnan(row["other"])


@pytest.mark.slow
@pytest.mark.integration
def test_a_search_logs_every_returned_number_to_mlflow_and_the_report_states_parameters_splits_and_test(tmp_path):
    """The real path: Ray, the ledger, MLflow's child runs, and the report's checklist."""
    from mlflow.tracking import MlflowClient

    (tmp_path / "contract_family.py").write_text(textwrap.dedent(CONTRACT_FAMILY).lstrip())
    space = tmp_path / "contract.yaml"
    space.write_text(textwrap.dedent("""
        name: contract
        family: contract_family.py:train
        data: {behaviour: full}
        metric: {name: val_acc, mode: max, test: test_acc}
        num_trials: 3
        seed: 11
        space:
          optimizer.lr: {distribution: loguniform, low: 1e-4, high: 1e-1}
    """).lstrip())
    db = f"sqlite:///{tmp_path / 'mlflow.db'}"
    env = search_process_environment()
    done = subprocess.run([sys.executable, "-m", "showwork", "search", str(space), "--no-progress", "--num-cpus", "2",
                           "--storage", str(tmp_path / "runs"), "--tracking-uri", db],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    client = MlflowClient(tracking_uri=db)
    experiment = client.get_experiment_by_name("contract")
    children = [r for r in client.search_runs([experiment.experiment_id]) if "showwork.trial_index" in r.data.tags]
    assert len(children) == 3
    for run in children:
        metrics = run.data.metrics
        assert metrics["train_loss_final"] == 0.125 and metrics["parameters"] == 4321.0
        assert (metrics["split_sizes.train"], metrics["split_sizes.dev"], metrics["split_sizes.test"]) == (30, 10, 5)
        assert metrics["best_val_score"] == 0.8 and metrics["test_score"] == 0.75
    report = subprocess.run([sys.executable, "-m", "showwork", "report", "contract", "--out", str(tmp_path / "report"),
                             "--storage", str(tmp_path / "runs")], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert report.returncode == 0, report.stderr[-3000:]
    text = "\n".join(p.read_text() for p in (tmp_path / "report").rglob("*") if p.suffix in (".md", ".json"))
    assert "parameters of the selected model: 4,321" in text
    assert "examples per split: train 30, dev 10, test 5" in text
    assert "test test_acc of that configuration: 0.75" in text
