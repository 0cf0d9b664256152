"""The epochs study (Lourie et al. Figs. 4, 17, 20) on the released DeBERTaV3/MultiNLI search: its rows beside the paper's."""

from __future__ import annotations

import pytest

from experiments import epochs_effect

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_epochs_study_reproduces_figs_17_20_and_fig_4_per_trial(tmp_path, monkeypatch, shared_data_dir):
    monkeypatch.setenv("SHOWWORK_DATA_DIR", str(shared_data_dir))
    assert epochs_effect.main(["--out", str(tmp_path)]) == 0
    result = epochs_effect.run(quick=False, seed=0)
    assert [f.results.n_trials for f in result.risk.families] == [48, 48]
    assert [f.name for f in result.by.families] == ["epochs=1", "epochs=2", "epochs=3", "epochs=4"]
    assert all(f.results.n_trials == 245 for f in result.by.families)
    assert result.risk.cost.mean_costs["default 3 epochs"] == 3.0
    assert 2.0 < result.risk.cost.mean_costs["tune epochs"] < 2.7  # epochs drawn from 1-4, failed trials included
    rows = {c.quantity: c for c in epochs_effect.comparisons(result)}
    disagree = [q for q, c in rows.items() if not c.agrees]
    # Every row agrees with the paper but Fig. 4 at equal cost, as experiments/README.md says.
    assert disagree == ["Fig. 4, equal cost (num_train_epochs): strongest evidence (0-3) that the default 3 epochs beats tuning them"]
    assert rows["Fig. 4, per trial: strongest evidence (0-3) that the default 3 epochs beats tuning them"].ours == 1
    assert rows["Figs. 17/20, per trial: strongest evidence (0-3) that 2 epochs beat 1"].ours == 3
    table = (tmp_path / "epochs_effect.md").read_text()
    assert "weak evidence that the default wins" in table and "3 or 4 epochs appears to be enough" in table
    assert (tmp_path / "epochs_effect.png").is_file() and (tmp_path / "epochs_effect.csv").is_file()
