"""The report's inputs: families read from ledgers and from results files (showwork/report/inputs.py)."""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest

from showwork.errors import InputError
from showwork.report import FamilyResults, from_ledger, from_results_file
from showwork.space import load_search_spec
from showwork.store import Ledger, TrialRecord

from helpers import load_column, trial_record, write_search


def record(index: int, **changes) -> TrialRecord:
    """The shared test record, with the scores, runtimes and parameters these tests read."""
    fields = dict(
        score=0.5 + index / 10, test_score=0.4 + index / 10, runtime_s=10.0 + index,
        params={"lr": 10 ** -(index + 1), "layers": index % 2 + 1}, metrics={"parameters": 1234.0},
    )
    return trial_record(index, **{**fields, **changes})


def search_spec(tmp_path, name: str, metric: str, mode: str):
    """A two-parameter search space, as `showwork search` would record it."""
    path = tmp_path / f"{name}.yaml"
    path.write_text(f"name: {name}\nfamily: mlp\nmetric: {{name: {metric}, mode: {mode}}}\nnum_trials: 4\nseed: 3\n"
                    "space:\n  lr: {distribution: loguniform, low: 1e-4, high: 1e-1}\n"
                    "  layers: {distribution: int_uniform, low: 1, high: 2}\n")
    return load_search_spec(path)


def test_from_ledger_reads_trials_spec_and_environment(tmp_path):
    ledger = Ledger(tmp_path, "mlp-search")
    written = write_search(ledger, search_spec(tmp_path, "mlp-search", "val_f1", "max"),
                           [record(0), record(1, status="failed", score=None, test_score=None, error="ValueError: boom"),
                            record(2)], environment={"cpu": "x86"})
    family = from_ledger(tmp_path, "mlp-search")
    assert family.name == "mlp-search" and family.metric == "val_f1" and not family.minimize
    assert family.statuses == ("finished", "failed", "finished")
    assert family.scores[0] == 0.5 and math.isnan(family.scores[1]) and family.scores[2] == pytest.approx(0.7)
    assert family.n_trials == 3 and family.n_failed == 1
    np.testing.assert_allclose(family.finished_scores, [0.5, 0.7])
    assert family.best_trial() == 2 and family.params[2] == written[2].params and set(family.params[2]) == {"lr", "layers"}
    assert family.mean_runtime_s == pytest.approx(11.0)
    assert family.spec["metric"]["name"] == "val_f1" and family.meta["environment"] == {"cpu": "x86"}
    assert family.trial_metrics[0]["parameters"] == 1234.0
    assert from_ledger(tmp_path, "mlp-search", label="MLP").name == "MLP"


def test_from_ledger_minimize_and_errors(tmp_path):
    ledger = Ledger(tmp_path, "loss")
    write_search(ledger, search_spec(tmp_path, "loss", "val_loss", "min"),
                 [record(i, score=score) for i, score in enumerate([0.3, 0.1, 0.1, 0.2])])
    family = from_ledger(tmp_path, "loss")
    assert family.minimize and family.best_trial() == 1  # the first of the tied best
    with pytest.raises(InputError, match="no search named 'nope'"):
        from_ledger(tmp_path, "nope")
    Ledger(tmp_path, "empty").update_meta(seed=1)
    with pytest.raises(InputError, match="no trial records yet"):
        from_ledger(tmp_path, "empty")


def test_from_results_file_on_the_real_deberta_results(search_results_dir):
    path = search_results_dir / "deberta-v3-base_mnli_tuning.csv"
    (family,) = from_results_file(path, "matched_acc_best")
    assert family.name == "deberta-v3-base_mnli_tuning" and family.n_trials == 1024 and family.n_failed == 0
    np.testing.assert_array_equal(family.scores, load_column(path, "matched_acc_best"))
    assert family.runtimes_s is None and family.spec is None and family.params == ()
    assert family.scores[family.best_trial()] == family.scores.max()


def test_from_results_file_groups_failures_and_runtime(search_results_dir, tmp_path):
    # The two Reuters files as one table with a family column; two cells blanked as failures.
    rows = []
    for name in ("mlp", "lstm"):
        with open(search_results_dir / f"reuters_{name}_f1.csv", newline="") as f:
            rows += [{"family": name, "f1": r["f1"], "time_s": "60"} for r in csv.DictReader(f)]
    rows[3]["f1"] = ""
    rows[-1]["f1"] = "nan"
    combined = tmp_path / "reuters.csv"
    with open(combined, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["family", "f1", "time_s"])
        writer.writeheader()
        writer.writerows(rows)
    mlp, lstm = from_results_file(combined, "f1", runtime="time_s", group="family")
    assert (mlp.name, lstm.name) == ("mlp", "lstm")
    assert (mlp.n_trials, lstm.n_trials) == (145, 152)
    assert mlp.n_failed == 1 and mlp.statuses[3] == "failed" and lstm.n_failed == 1
    assert mlp.mean_runtime_s == 60.0
    np.testing.assert_array_equal(np.delete(mlp.scores, 3), np.delete(load_column(search_results_dir / "reuters_mlp_f1.csv", "f1"), 3))


def test_results_file_errors_name_file_and_column(search_results_dir, tmp_path):
    path = search_results_dir / "reuters_mlp_f1.csv"
    with pytest.raises(InputError, match="no column 'accuracy'"):
        from_results_file(path, "accuracy")
    with pytest.raises(InputError, match="no column 'family'"):
        from_results_file(path, "f1", group="family")
    bad = tmp_path / "bad.csv"
    bad.write_text("family,f1\na,0.5\n,0.6\n")
    with pytest.raises(InputError, match="row 2 has no value in the group column 'family'"):
        from_results_file(bad, "f1", group="family")


def test_family_results_checks_lengths():
    with pytest.raises(ValueError, match="2 statuses for 3 scores"):
        FamilyResults("x", np.zeros(3), ("finished", "finished"), "s")
    with pytest.raises(ValueError, match="1 runtimes_s for 2 scores"):
        FamilyResults("x", np.zeros(2), ("finished",) * 2, "s", runtimes_s=np.zeros(1))
    empty = FamilyResults("x", np.array([np.nan]), ("failed",), "s")
    assert empty.best_trial() is None and empty.mean_runtime_s is None


def test_from_results_file_reads_hyperparameter_columns(search_results_dir, tmp_path):
    path = search_results_dir / "deberta-base_mnli_tuning.csv"
    (family,) = from_results_file(path, "matched_acc_best", params=["learning_rate", "train_batch_size"])
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(family.params) == len(rows)
    for config, row in zip(family.params, rows):
        assert config == {"learning_rate": float(row["learning_rate"]), "train_batch_size": int(row["train_batch_size"])}
    (tmp_path / "t.csv").write_text("score,opt,flag,x\n0.5,adam,true,\n0.6,sgd,False,2.5\n")
    (family,) = from_results_file(tmp_path / "t.csv", "score", params=["opt", "flag", "x"])
    assert family.params == ({"opt": "adam", "flag": True, "x": None}, {"opt": "sgd", "flag": False, "x": 2.5})
    with pytest.raises(InputError, match="nope"):
        from_results_file(tmp_path / "t.csv", "score", params=["nope"])
