"""Tang et al. (2020)'s studies: false conclusions of the V- and U-statistics, and bootstrap coverage.

The slow tests run each study once in quick mode (module fixtures) and check its key numbers
against ranges derived from the quick replicate counts (1,000 and 200): a binomial proportion p
estimated from R replicates has standard error sqrt(p (1 - p) / R) <= 0.5 / sqrt(R), i.e. 0.016
(R = 1,000) and 0.035 (R = 200); every threshold below sits at least 4 such errors away from the
value the full-mode run gives, so a correct study fails with probability below ~1e-4 per check.
"""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest

from experiments import bootstrap_coverage, false_conclusions
from experiments.common import clopper_pearson, family_kde
from showwork.statistics import bootstrap_interval, u_statistic, v_statistic

# -- fast unit tests of the helpers


@pytest.mark.parametrize("statistic, reference", [("v", v_statistic), ("u", u_statistic)])
def test_weight_matrix_gives_showworks_statistics(statistic, reference):
    rng = np.random.default_rng(3)
    samples = rng.beta(2.0, 5.0, size=(5, 50))
    weights = false_conclusions.weight_matrix(50, statistic)
    assert np.allclose(weights.sum(axis=0), 1.0, atol=1e-12)
    fast = np.sort(samples, axis=1) @ weights
    for row, estimates in zip(samples, fast):
        assert np.allclose(estimates, reference(row), rtol=0, atol=1e-12)


def test_weight_matrix_rejects_unknown_statistic():
    with pytest.raises(ValueError, match="'v' or 'u'"):
        false_conclusions.weight_matrix(10, "w")


@pytest.mark.parametrize("statistic", ["v", "u"])
def test_bootstrap_intervals_never_reach_above_the_sample_maximum(statistic):
    # The reason for bootstrap_coverage's ceiling 1 - F(mu_k)^B.
    rng = np.random.default_rng(5)
    for seed in range(5):
        scores = rng.normal(size=50)
        lower, upper = bootstrap_interval(scores, np.arange(1, 51), statistic, 0.95, 200, seed)
        assert np.all(upper <= scores.max()) and np.all(lower <= upper)


# -- false conclusions (Tang et al. Fig. 3), quick: 1,000 replicates


@pytest.fixture(scope="module")
def conclusions():
    return false_conclusions.run(quick=True, seed=0)


def _rate(counts, replicates, n):
    return counts[n - 1] / replicates


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.parametrize("family", ["mlp", "lstm"])
def test_v_underestimates_more_often_as_the_budget_grows(conclusions, family):
    r, reps = conclusions.families[family], conclusions.replicates
    assert reps == false_conclusions.QUICK_REPLICATES
    # Full mode gives ~0.70 (MLP) and ~0.67 (LSTM) at n = 50: 0.6 is > 4 s.e. (0.016) below both.
    assert _rate(r.below_truth["v"], reps, 50) > 0.6
    # ~0.55 at n = 5 against ~0.67-0.70 at n = 50: a rise of > 7 s.e. of the difference.
    assert _rate(r.below_truth["v"], reps, 50) - _rate(r.below_truth["v"], reps, 5) > 0.05
    # V is biased low at n = 50 (by ~15 Monte Carlo s.e. in full mode).
    assert r.bias("v")[-1] < -4 * r.bias_se["v"][-1]


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.parametrize("family", ["mlp", "lstm"])
def test_u_is_unbiased_and_falls_below_half_the_time_against_a_realised_best(conclusions, family):
    r, reps = conclusions.families[family], conclusions.replicates
    # U_B is the sample maximum: against an independent best of B it is below with probability 1/2
    # exactly (exchangeability); 4 binomial s.e. at p = 1/2 and R = 1,000 is 0.063.
    assert abs(_rate(r.below_realised["u"], reps, 50) - 0.5) <= 4 * math.sqrt(0.25 / reps)
    # Against E[max_B] the exact probability is F(mu_B)^B (0.52 MLP, 0.44 LSTM), not 1/2.
    p = r.exact_u_below_truth_at_b
    assert abs(_rate(r.below_truth["u"], reps, 50) - p) <= 4 * math.sqrt(p * (1 - p) / reps)
    # Unbiased: the mean estimate is within 4 Monte Carlo s.e. of the truth.
    for n in (10, 50):
        assert abs(r.bias("u")[n - 1]) <= 4 * r.bias_se["u"][n - 1]


@pytest.mark.slow
@pytest.mark.integration
def test_false_conclusions_main_writes_the_three_outputs(conclusions, tmp_path, monkeypatch):
    calls = []

    def fake_run(quick, seed):
        calls.append((quick, seed))
        return conclusions

    monkeypatch.setattr(false_conclusions, "run", fake_run)
    assert false_conclusions.main(["--quick", "--seed", "7", "--out", str(tmp_path)]) == 0
    assert calls == [(True, 7)]
    study = false_conclusions.STUDY
    with (tmp_path / f"{study}.csv").open() as handle:
        table = list(csv.DictReader(handle))
    assert len(table) == 2 * 2 * false_conclusions.TRIALS
    assert (tmp_path / f"{study}.png").stat().st_size > 0
    markdown = (tmp_path / f"{study}.md").read_text()
    assert "mlp: P(V_50 < E[max_50])" in markdown and "lstm: P(U_50 < a realised best of 50)" in markdown


# -- bootstrap coverage (Tang et al. Fig. 4), quick: 200 replicates x 500 resamples


@pytest.fixture(scope="module")
def coverage():
    return bootstrap_coverage.run(quick=True, seed=0)


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.parametrize("family", ["mlp", "lstm"])
def test_bootstrap_intervals_of_v_undercover_at_large_budgets(coverage, family):
    r, reps = coverage.families[family], coverage.replicates
    assert reps == bootstrap_coverage.QUICK["replicates"]
    covered = r.covered["v"] / reps
    # Full mode: ~0.5-0.6 at k = 50, so 0.8 is > 6 s.e. (0.035) above it.
    assert covered[49] < 0.8
    # Near nominal at k = 1 (the bootstrap of a mean; full mode ~0.94): 0.85 is > 4 s.e. below.
    assert covered[0] > 0.85


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.parametrize("family", ["mlp", "lstm"])
def test_bootstrap_coverage_is_capped_by_the_sample_maximum(coverage, family):
    r, reps = coverage.families[family], coverage.replicates
    for s in bootstrap_coverage.ESTIMATORS:
        # Covered replicates are a subset of those whose maximum reaches mu_k: exact, no noise.
        assert np.all(r.covered[s] <= r.max_reaches)
        assert np.all(r.covered[s] + r.missed_low[s] <= reps)
    # The simulated event {y_(B) >= mu_k} has the exact probability 1 - F(mu_k)^B: inside the exact
    # 99.99 % Clopper-Pearson interval of its count at every k (the ceiling is ~1 at small k, where a
    # normal-approximation range would have zero width).
    low, high = clopper_pearson(r.max_reaches, reps, 0.9999)
    assert np.all((low <= r.ceiling) & (r.ceiling <= high))
    kde = family_kde(family)
    assert np.allclose(r.truth, kde.mean_curve(coverage.budgets))


@pytest.mark.slow
@pytest.mark.integration
def test_bootstrap_coverage_main_writes_the_three_outputs(coverage, tmp_path, monkeypatch):
    calls = []

    def fake_run(quick, seed):
        calls.append((quick, seed))
        return coverage

    monkeypatch.setattr(bootstrap_coverage, "run", fake_run)
    assert bootstrap_coverage.main(["--quick", "--out", str(tmp_path)]) == 0
    assert calls == [(True, 0)]
    study = bootstrap_coverage.STUDY
    with (tmp_path / f"{study}.csv").open() as handle:
        table = list(csv.DictReader(handle))
    assert len(table) == 2 * 2 * bootstrap_coverage.TRIALS
    assert {row["resamples"] for row in table} == {"500"}
    assert (tmp_path / f"{study}.png").stat().st_size > 0
    markdown = (tmp_path / f"{study}.md").read_text()
    assert "coverage of the 95 % bootstrap interval of V_50" in markdown
