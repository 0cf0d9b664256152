"""Issue 17 item 4: a W&B sweep's runs-table CSV export, read with ``--score``, ``--runtime`` and ``--params``.

W&B's export ("Export as CSV" on a project's or sweep's runs table) has one row per run: "Name",
"State", "Notes", "User", "Tags", "Created", "Runtime" (seconds), "Sweep", then the config
columns, then the summary metrics (each run's last logged value). A run that crashed, failed, was
killed or is still running keeps the last value it logged: it is a failed trial under the report's
failure policy, not a result.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from showwork.report.inputs import from_results_file
from showwork.results_table import read_results_table

from helpers import run_cli

# Laid out as W&B writes it: every cell quoted, "-" for no notes, the newest run first.
EXPORT = '''\
"Name","State","Notes","User","Tags","Created","Runtime","Sweep","batch_size","learning_rate","optimizer","_runtime","_step","_timestamp","train_loss","val_acc"
"wise-sweep-8","finished","-","ada","","2025-03-04T10:40:11.000Z","398","k3j2h1g0","32","0.0003","adam","398.2","9","1741085209.5","0.31","0.80"
"lucky-sweep-7","running","-","ada","","2025-03-04T10:31:02.000Z","211","k3j2h1g0","64","0.001","adam","211.7","4","1741084473.1","0.52","0.61"
"vivid-sweep-6","killed","-","ada","","2025-03-04T10:22:40.000Z","120","k3j2h1g0","16","0.01","sgd","120.0","2","1741083880.4","0.88","0.70"
"swift-sweep-5","finished","-","ada","baseline, lr-sweep","2025-03-04T10:14:09.000Z","405","k3j2h1g0","32","0.001","adam","405.9","9","1741083654.2","0.28","0.84"
"eager-sweep-4","failed","OOM at batch 128","ada","","2025-03-04T10:08:51.000Z","5","k3j2h1g0","128","0.003","adam","5.1","","","",""
"proud-sweep-3","crashed","-","ada","","2025-03-04T10:02:17.000Z","97","k3j2h1g0","64","0.03","sgd","97.4","1","1741082634.0","1.10","0.55"
"brisk-sweep-2","finished","-","ada","","2025-03-04T09:55:30.000Z","390","k3j2h1g0","16","0.0001","sgd","390.3","9","1741082520.8","0.35","0.78"
"calm-sweep-1","finished","-","ada","","2025-03-04T09:48:12.000Z","401","k3j2h1g0","32","0.0003","adam","401.0","9","1741082093.2","0.30","0.81"
'''
FINISHED = [0, 3, 6, 7]  # rows of finished runs
SCORES = [0.80, math.nan, math.nan, 0.84, math.nan, math.nan, 0.78, 0.81]
RUNTIMES = [398, 211, 120, 405, 5, 97, 390, 401]  # every run's wall time counts: the compute was spent
PARAMS = ["learning_rate", "batch_size", "optimizer"]


@pytest.fixture
def export(tmp_path):
    path = tmp_path / "wandb_export_2025-03-04.csv"
    path.write_text(EXPORT)
    return path


def test_only_finished_runs_have_scores_and_every_run_keeps_its_runtime_and_params(export):
    [family] = from_results_file(export, "val_acc", runtime="Runtime", params=PARAMS)
    np.testing.assert_array_equal(family.scores, SCORES)  # NaN == NaN here
    assert family.statuses == tuple("finished" if i in FINISHED else "failed" for i in range(8))
    assert family.n_failed == 4 and family.name == "wandb_export_2025-03-04"
    np.testing.assert_array_equal(family.runtimes_s, RUNTIMES)
    assert family.params[0] == {"learning_rate": 0.0003, "batch_size": 32, "optimizer": "adam"}
    assert family.params[4] == {"learning_rate": 0.003, "batch_size": 128, "optimizer": "adam"}


def test_a_state_column_that_is_not_wandbs_leaves_the_scores_alone(tmp_path):
    path = tmp_path / "by_state.csv"
    path.write_text("State,f1\nOhio,0.7\nUtah,0.8\n")
    assert read_results_table(path).score_column("f1") == [0.7, 0.8]


def test_curve_counts_the_unfinished_runs_as_failed_under_the_policy(export, capsys):
    code, out, err = run_cli(capsys, "curve", export, "--score", "val_acc", "--runtime", "Runtime", "--failed", "worst", "--json")
    assert code == 0, err
    curve = json.loads(out)
    assert (curve["n_trials"], curve["n_failed"], curve["n"]) == (8, 4, 8)
    code, out, err = run_cli(capsys, "curve", export, "--score", "val_acc", "--failed", "exclude", "--json")
    assert code == 0, err
    assert (json.loads(out)["n"], json.loads(out)["n_failed"]) == (4, 4)
    code, out, err = run_cli(capsys, "curve", export, "--score", "val_acc", "--failed", "error")
    assert code == 2 and err.startswith("showwork: error: ") and len(err.strip().splitlines()) == 1, err


@pytest.mark.integration
def test_the_report_of_a_wandb_sweep_export(export, tmp_path, capsys):
    """The README's command for a W&B sweep."""
    out_dir = tmp_path / "report"
    code, out, err = run_cli(capsys, "report", export, "--score", "val_acc", "--runtime", "Runtime",
                             "--params", ",".join(PARAMS), "--label", "sweep k3j2h1g0", "--out", out_dir, "--formats", "png")
    assert code == 0, err
    report = (out_dir / "report.md").read_text()
    assert "8 trials run, 4 failed" in report
    assert "0.84" in report and "sweep k3j2h1g0" in report
    code, out, err = run_cli(capsys, "report", export, "--score", "val_acc", "--failed", "error", "--out", tmp_path / "e",
                             "--formats", "png")
    assert code == 2 and "4 of 8" in err, err
