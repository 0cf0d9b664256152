"""The real search study's plumbing: two tiny searches through Ray and MLflow, then their report.

The study itself (50 trials of each family, the CNN with a CPU budget) is run by hand and its results
are committed in experiments/results/real_search/; CI runs ``--smoke``.
"""

from __future__ import annotations

import json

import pytest

from experiments.real_search import SMOKE_DATA, main


@pytest.mark.slow
@pytest.mark.integration
def test_smoke_run_searches_both_families_and_reports_them(tmp_path, monkeypatch, shared_data_dir):
    monkeypatch.setenv("SHOWWORK_DATA_DIR", str(shared_data_dir))
    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    out = tmp_path / "report"
    code = main(["--smoke", "--storage", str(tmp_path / "runs"), "--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}",
                 "--out", str(out)])
    assert code == 0
    data = json.loads((out / "report" / "report.json").read_text())
    assert [f["name"] for f in data["families"]] == ["logistic regression", "CNN"]
    for family in data["families"]:
        assert family["summary"]["n_trials"] == 2 and family["summary"]["n_failed"] == 0
    dodge_splits = next(item for item in data["checklist"] if item["checklist"].startswith("Dodge") and item["number"] == "3")
    assert f"train {SMOKE_DATA['train_size']}" in json.dumps(dodge_splits["answers"])
    assert (out / "report" / "figures" / "comparison.png").is_file()
    assert (out / "report" / "figures" / "comparison_cost.png").is_file()  # the cost view beside the trial view
    assert data["cost"]["cost"] == "runtime" and data["cost"]["unit"] == "seconds" and len(data["cost"]["pairs"]) == 1
    for name in ("sst5-logreg-study-smoke", "sst5-cnn-cpu-study-smoke"):  # each search's trials, as `results --csv` gives them
        rows = (out / "results" / f"{name}.csv").read_text().splitlines()
        assert rows[0].startswith("trial,status,score,") and len(rows) == 3
