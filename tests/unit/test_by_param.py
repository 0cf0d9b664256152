"""A hyperparameter's effect and its tuning risk (issue 24 item 7): ``report --by PARAM``, ``--tuning-risk PARAM=DEFAULT``."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from showwork.errors import InputError
from showwork.report import ReportSettings, analyze
from showwork.report.by_param import split_by, tuning_risk_families
from showwork.report.inputs import from_results_file
from showwork.statistics import tuning_curve

from helpers import run_cli


@pytest.fixture
def search_file(tmp_path):
    """60 trials: optimizer adam|sgd, momentum only with sgd (a `when:` parameter), epochs 1..3, a continuous lr,
    and 'rmsprop' drawn twice (too few for a band)."""
    rng = np.random.default_rng(11)
    rows = ["trial,acc,optimizer,momentum,epochs,lr"]
    for i in range(60):
        optimizer = "rmsprop" if i in (7, 30) else ("adam" if rng.random() < 0.5 else "sgd")
        epochs = int(rng.integers(1, 4))
        acc = float(np.clip(rng.normal(0.6 + 0.08 * epochs + (0.05 if optimizer == "adam" else 0.0), 0.05), 0, 1))
        momentum = f"{rng.uniform(0.8, 0.99):.3f}" if optimizer == "sgd" else ""
        rows.append(f"{i},{acc!r},{optimizer},{momentum},{epochs},{rng.uniform(1e-5, 1e-2)!r}")
    path = tmp_path / "search.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def read(path, *params):
    return from_results_file(path, "acc", params=list(params))


def test_by_draws_one_curve_per_value_from_the_trials_that_drew_it(search_file):
    (family,) = read(search_file, "optimizer")
    split = split_by([family], "optimizer", min_trials=4)
    assert [f.name for f in split.families] == ["optimizer=adam", "optimizer=sgd"]
    for f in split.families:
        rows = [i for i, p in enumerate(family.params) if f"optimizer={p['optimizer']}" == f.name]
        np.testing.assert_array_equal(f.scores, family.scores[rows])
        assert all(p["optimizer"] == f.name.split("=")[1] for p in f.params)
    assert split.notes == ("optimizer=rmsprop: only 2 trials, too few for a band that bounds even k = 1 (at least 4 at these settings); no curve.",)
    report = analyze(split.families, ReportSettings(a=0, b=1))
    assert len(report.pairs) == 1  # the evidence between the values
    adam = report.family("optimizer=adam")
    np.testing.assert_array_equal(adam.curve.quantile_curve, tuning_curve(adam.results.scores, k=report.budgets, a=0, b=1).quantile_curve)


def test_by_a_discrete_number_orders_its_values(search_file):
    split = split_by(read(search_file, "epochs"), "epochs", min_trials=4)
    assert [f.name for f in split.families] == ["epochs=1", "epochs=2", "epochs=3"] and split.notes == ()


def test_by_a_conditional_parameter_explains_the_trials_without_it(search_file):
    (family,) = read(search_file, "momentum")
    with pytest.raises(InputError, match="momentum took .* distinct values; --by takes a categorical or discrete parameter"):
        split_by([family], "momentum", min_trials=4)  # continuous: refused
    (family,) = read(search_file, "optimizer", "epochs")
    absent = sum(1 for p in family.params if p["optimizer"] != "sgd")
    # epochs drawn only `when: {optimizer: sgd}`: absent from the other trials
    family = dataclasses.replace(family, params=tuple({**p, "epochs": p["epochs"] if p["optimizer"] == "sgd" else None} for p in family.params))
    split = split_by([family], "epochs", min_trials=4)
    assert split.notes[0] == (f"search: {absent} of 60 trials did not draw epochs (a conditional parameter, `when:`, absent where"
                              " its condition fails, or an empty cell); they belong to no value's curve.")
    assert sum(f.n_trials for f in split.families) == 60 - absent


def test_tuning_risk_is_all_trials_against_the_trials_at_the_default(search_file):
    (family,) = read(search_file, "epochs")
    split = tuning_risk_families([family], "epochs", "2", min_trials=4)
    tuned, default = split.families
    assert (tuned.name, default.name) == ("tuning epochs", "epochs=2 (default)")
    np.testing.assert_array_equal(tuned.scores, family.scores)
    assert all(p["epochs"] == 2 for p in default.params) and default.n_trials == sum(p["epochs"] == 2 for p in family.params)
    with pytest.raises(InputError, match=r"0 trials drew epochs=7, fewer than the 4 a curve needs \(values drawn, with their trials: 1 \("):
        tuning_risk_families([family], "epochs", "7", min_trials=4)


def test_report_cli_by_and_tuning_risk(search_file, tmp_path, capsys):
    code, out, err = run_cli(capsys, "report", search_file, "--score", "acc", "--a", "0", "--b", "1", "--by", "optimizer",
                             "--out", tmp_path / "by", "--no-mlflow", "--formats", "png")
    assert code == 0, err
    assert "optimizer=rmsprop: only 2 trials" in out and "optimizer=adam vs optimizer=sgd:" in out
    data = json.loads((tmp_path / "by" / "report.json").read_text())
    assert [f["name"] for f in data["families"]] == ["optimizer=adam", "optimizer=sgd"] and data["notes"]
    assert "optimizer=rmsprop: only 2 trials" in (tmp_path / "by" / "report.md").read_text()

    code, out, err = run_cli(capsys, "report", search_file, "--score", "acc", "--a", "0", "--b", "1", "--tuning-risk", "epochs=3",
                             "--cost", "epochs", "--out", tmp_path / "risk", "--no-mlflow", "--formats", "png")
    assert code == 0, err
    assert "tuning epochs vs epochs=3 (default):" in out and "tuning epochs vs epochs=3 (default) at equal cost:" in out
    data = json.loads((tmp_path / "risk" / "report.json").read_text())
    assert data["cost"]["mean_costs"]["epochs=3 (default)"] == 3.0
    assert (tmp_path / "risk" / "figures" / "comparison_cost.png").is_file()


@pytest.mark.parametrize("argv, message", [
    (["--tuning-risk", "epochs"], "--tuning-risk takes PARAM=DEFAULT"),
    (["--by", "lr"], "lr took 60 distinct values"),
    (["--by", "nothing"], "no column 'nothing'"),
])
def test_report_cli_refuses_what_it_cannot_split(search_file, tmp_path, capsys, argv, message):
    code, _, err = run_cli(capsys, "report", search_file, "--score", "acc", *argv, "--out", tmp_path / "r", "--no-mlflow")
    assert code == 2 and message in err and err.count("\n") == 1


def test_by_and_tuning_risk_exclude_each_other(search_file, tmp_path, capsys):
    code, _, err = run_cli(capsys, "report", search_file, "--score", "acc", "--by", "epochs", "--tuning-risk", "epochs=3",
                           "--out", tmp_path / "r")
    assert code == 2 and "not allowed with argument" in err


def test_by_a_when_parameter_of_a_recorded_search(tmp_path, capsys):
    """A ledger whose space draws beta2 only `when: {optimizer: adam}`: the sgd trials have no beta2, and the report says so."""
    from showwork.space import load_search_spec
    from showwork.store import Ledger

    from helpers import trial_record, write_search

    path = tmp_path / "cond.yaml"
    path.write_text("name: cond\nfamily: mlp\nmetric: {name: val_acc, mode: max, bounds: [0, 1]}\nnum_trials: 40\nseed: 5\n"
                    "space:\n  optimizer: {distribution: categorical, choices: [sgd, adam]}\n"
                    "  beta2: {distribution: categorical, choices: [0.99, 0.999], when: {optimizer: adam}}\n")
    spec = load_search_spec(path)
    rng = np.random.default_rng(2)
    records = write_search(Ledger(tmp_path / "runs", "cond"), spec,
                           [trial_record(i, score=float(rng.uniform(0.5, 0.9))) for i in range(40)])
    without = sum(1 for r in records if "beta2" not in r.params)
    assert 0 < without < 40 and all((r.params["optimizer"] == "adam") == ("beta2" in r.params) for r in records)
    code, out, err = run_cli(capsys, "report", "cond", "--storage", tmp_path / "runs", "--by", "beta2", "--out", tmp_path / "r",
                             "--no-mlflow", "--formats", "png")
    assert code == 0, err
    assert f"cond: {without} of 40 trials did not draw beta2 (a conditional parameter, `when:`" in out
    assert "beta2=0.99 vs beta2=0.999:" in out
    code, out, err = run_cli(capsys, "report", "cond", "--storage", tmp_path / "runs", "--tuning-risk", "beta2=0.999",
                             "--out", tmp_path / "risk", "--no-mlflow", "--formats", "png")
    assert code == 0, err
    assert "they count in the tuned search only" in out and "tuning beta2 vs beta2=0.999 (default):" in out
