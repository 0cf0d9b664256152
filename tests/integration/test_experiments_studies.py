"""The `small_samples` and `ablations` studies: their helpers (fast) and their --quick runs (slow).

The quick runs are seeded, but the ranges asserted are wide enough for any seed: each is the
full-mode value (10,000 replicates, experiments/results/) widened by about 4.5 binomial standard
errors of the quick replicate count, as stated next to each assertion.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from experiments import ablations, small_samples
from experiments.common import family_kde, family_scores, rank_band, rank_band_indices
from showwork.statistics import compare_curves, evidence, tuning_curve, u_statistic, v_statistic

# ------------------------------------------------------------------ small_samples helpers


def test_statistic_weights_give_the_v_and_u_statistics():
    rng = np.random.default_rng(1)
    n = 25
    k = np.arange(1.0, n + 1.0)
    samples = np.sort(rng.beta(2.0, 5.0, size=(5, n)), axis=1)
    wv, wu = small_samples.statistic_weights(n, k)
    for ys in samples:
        np.testing.assert_allclose(ys @ wv.T, v_statistic(ys, k), rtol=0, atol=1e-13)
        np.testing.assert_allclose(ys @ wu.T, u_statistic(ys, k), rtol=0, atol=1e-13)


def test_subsamples_are_drawn_without_replacement():
    rng = np.random.default_rng(2)
    draws = small_samples.subsample_sorted(np.arange(40.0), 25, 200, rng)
    assert draws.shape == (200, 25)
    assert np.all(np.diff(draws, axis=1) > 0)  # distinct values: no trial drawn twice
    assert draws.min() >= 0 and draws.max() <= 39


def test_rank_bands_and_evidence_match_the_public_api_on_real_subsamples():
    """The vectorised bands and evidence equal tuning_curve + compare_curves (MLP scores have ties)."""
    n = small_samples.SUBSAMPLE_SIZE
    k = np.arange(1.0, n + 1.0)
    rng = np.random.default_rng(3)
    samples = {f: small_samples.subsample_sorted(family_scores(f), n, 20, rng) for f in ("mlp", "lstm")}
    assert any(np.any(np.diff(row) == 0) for row in samples["mlp"])  # ties are exercised
    lower_i, point_i, upper_i = rank_band_indices(rank_band(n, small_samples.CONFIDENCE, small_samples.METHOD), k)
    for s in range(20):
        curves, series = {}, {}
        for f in ("mlp", "lstm"):
            ys = samples[f][s]
            extended = np.concatenate([[0.0], ys, [1.0]])
            series[f] = (extended[point_i], extended[lower_i], extended[upper_i])
            curves[f] = tuning_curve(ys, k, confidence=0.8, method="ld-hd", a=0.0, b=1.0, name=f)
            np.testing.assert_array_equal(series[f], (curves[f].median, curves[f].median_lower, curves[f].median_upper))
        (pair,) = compare_curves(curves, "median")
        levels, favoured = evidence(*series["mlp"], *series["lstm"])
        np.testing.assert_array_equal(levels, pair.levels)
        np.testing.assert_array_equal(favoured, pair.favoured)


# ------------------------------------------------------------------ ablations helpers


@pytest.mark.parametrize("method", ablations.BAND_METHODS)
def test_mean_cdf_width_is_the_integral_of_the_profile(method):
    n = 20
    widths = ablations.band_widths(n, method)
    # Over all p, each count is equally likely: ∫ Binom(c; n, p) dp = 1 / (n + 1).
    assert ablations.cdf_width_mean(n, method, ((0.0, 1.0),)) == pytest.approx(widths.mean(), abs=1e-12)
    p = (np.arange(20_000) + 0.5) / 20_000
    profile = ablations.cdf_width_profile(n, method, p)
    assert ablations.cdf_width_mean(n, method, ((0.95, 1.0),)) == pytest.approx(profile[p > 0.95].mean(), abs=1e-6)


def test_expected_order_statistics_of_the_kde():
    kde = family_kde("deberta")
    n = 12
    expected = ablations.expected_order_statistics(kde, n)
    assert np.all(np.diff(expected) > 0)
    # The largest of n is the mean tuning curve at k = n, and the order statistics sum to n times the mean.
    assert expected[-1] == pytest.approx(float(kde.mean_curve(n)), abs=1e-9)
    assert expected.sum() == pytest.approx(n * float(kde.mean_curve(1)), abs=1e-8)


@pytest.mark.parametrize("method", ablations.BAND_METHODS)
def test_expected_bands_are_linear_in_the_order_statistics(method):
    """The premise of the exact widths: the band ends of the average of two samples are the averages."""
    rng = np.random.default_rng(4)
    k = np.array([1.0, 2.5, 5.0, 10.0])
    first, second = np.sort(rng.beta(5.0, 2.0, size=(2, 15)), axis=1)
    bands = [ablations.expected_bands(ys, method, k) for ys in (first, second, 0.5 * (first + second))]
    for field in ("median_lower", "median", "median_upper", "mean_lower", "v", "mean_upper"):
        np.testing.assert_allclose(
            getattr(bands[2], field), 0.5 * (getattr(bands[0], field) + getattr(bands[1], field)), rtol=0, atol=1e-12
        )


def test_fit_line_reads_an_exact_line():
    fit = ablations.fit_line(np.array([6.0, 20.0, 34.0, 48.0]), np.array([6.0, 20.0, 34.0, 48.0]) / 6.2 + 0.5)
    assert fit["inverse_slope"] == pytest.approx(6.2)
    assert fit["intercept"] == pytest.approx(0.5)
    assert fit["r2"] == pytest.approx(1.0)


# ------------------------------------------------------------------ the quick studies


def _check_main_writes(module, result, study, tmp_path, monkeypatch):
    monkeypatch.setattr(module, "run", lambda quick, seed=0: result)
    assert module.main(["--quick", "--out", str(tmp_path)]) == 0
    for suffix in ("csv", "png", "md"):
        assert (tmp_path / f"{study}.{suffix}").stat().st_size > 0
    text = (tmp_path / f"{study}.md").read_text()
    assert "| quantity | ours | paper |" in text


@pytest.fixture(scope="module")
def small_result():
    return small_samples.run(quick=True, seed=0)


@pytest.mark.slow
@pytest.mark.integration
def test_small_samples_main_writes_its_outputs(small_result, tmp_path, monkeypatch):
    _check_main_writes(small_samples, small_result, "small_samples", tmp_path, monkeypatch)


@pytest.mark.slow
@pytest.mark.integration
def test_small_samples_point_estimates_flip_while_the_bands_stay_unresolved(small_result):
    r = small_result
    assert r.replicates == 500 and r.k[-1] == 25
    se = math.sqrt(0.25 / r.replicates)  # largest binomial standard error at 500 replicates: 0.022
    # Full mode (10,000 subsamples): V says MLP at k = 25 in 0.551, U in 0.334, V and U disagree at
    # some k in 0.665. Quick ranges: those ± 4.5 standard errors.
    assert abs(r.v_mlp_wins[-1] - 0.551) <= 4.5 * se
    assert abs(r.u_mlp_wins[-1] - 0.334) <= 4.5 * se
    assert abs(r.vu_disagree_any - 0.665) <= 4.5 * se
    # The ranking flips between subsamples, and every estimator agrees at k = 1 (MLP's mean is far higher).
    assert 0.1 < r.u_mlp_wins[-1] < r.v_mlp_wins[-1] < 0.9
    assert r.v_mlp_wins[0] == r.u_mlp_wins[0] == 1.0
    # The bands: fair/strong evidence (for MLP) at k <= 2 in most subsamples (full: 1.0 and 0.910),
    # none at k = 25 (full: 0; at most 'weak' once both upper bands are trivial, k > 4.57).
    fair_or_strong = r.fair_or_strong()
    assert fair_or_strong[0] == 1.0 and fair_or_strong[1] > 0.8
    assert fair_or_strong[-1] < 0.2
    # Full data: the V curves cross at k = 22 and the median curves at k = 18 (deterministic).
    assert r.full_v_crossovers == (22.0,) and r.full_median_crossovers == (18.0,)


@pytest.fixture(scope="module")
def ablation_result():
    return ablations.run(quick=True, seed=0)


@pytest.mark.slow
@pytest.mark.integration
def test_ablations_main_writes_its_outputs(ablation_result, tmp_path, monkeypatch):
    _check_main_writes(ablations, ablation_result, "ablations", tmp_path, monkeypatch)


@pytest.mark.slow
@pytest.mark.integration
def test_ablations_sample_size_fit_matches_the_paper(ablation_result):
    fit = ablation_result.fits["ld-hd", "paper n"]
    # Paper: 1/slope ≈ 6.2, R² ≈ 0.9995 (exact computation, no Monte Carlo error).
    assert 6.0 <= fit["inverse_slope"] <= 6.4
    assert fit["r2"] > 0.999
    # Over larger n the fit creeps up (n/k* grows with n).
    assert ablation_result.fits["ld-hd", "all n"]["inverse_slope"] > fit["inverse_slope"]
    et = ablation_result.fits["ld-et", "paper n"]
    assert 0.82 <= et["slope"] / fit["slope"] <= 0.88


@pytest.mark.slow
@pytest.mark.integration
def test_ablations_band_widths_order_as_in_the_paper(ablation_result):
    r = ablation_result
    for n in r.width_ns:  # 20 and 48: LD-HD < LD-ET < KS <= DKW in the tails
        tails = [r.cdf_width[n, m, "tails"] for m in ("ld-hd", "ld-et", "ks", "dkw")]
        assert tails == sorted(tails), (n, tails)
    assert r.width_ratio(48, "ld-hd", "dkw") < 0.8  # exact: 0.681
    b = r.bands[48, "ld-hd"]
    informative = ~b.median_upper_trivial
    assert informative.any() and np.all(b.mean_width[informative] > b.median_width[informative])


@pytest.mark.slow
@pytest.mark.integration
def test_ablations_exact_widths_agree_with_simulation(ablation_result):
    """The Monte Carlo widths (1,000 samples from the KDE) agree with the exact expectations.

    Tolerance: 5 standard errors, plus 1e-3 where the simulated width barely varies (DKW in the
    centre: the rare clipped counts that the exact value includes are not sampled).
    """
    r = ablation_result
    for key, exact in r.profile.items():
        mc, se = r.profile_mc[key]
        assert np.all(np.abs(mc - exact) <= 5 * se + 1e-3), key
    for key, b in r.bands.items():
        mc, se = r.median_width_mc[key]
        assert np.all(np.abs(mc - b.median_width) <= 5 * se + 1e-4), key
