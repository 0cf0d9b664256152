"""The exact-coverage study (Lourie et al. 2024, Figs. 6 and 12): its event checks, and its quick run."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import experiments.exact_coverage as study
from experiments.common import rank_band, rank_band_indices
from experiments.exact_coverage import (
    bonferroni_z,
    budget_grid,
    cdf_band_holds,
    curve_band_holds,
    ks_bound,
    ks_distance,
    mean_band_tails,
    mean_bands,
)
from showwork.statistics import cdf_band, mean_tuning_curve, quantile_tuning_curve

# -- the event checks (fast)


def test_cdf_event_holds_inside_and_fails_outside_the_band_by_construction():
    band = rank_band(5, 0.5, "ld-hd")
    lo, hi = band.lower[1:], band.upper[:-1]  # the interval of F(y_(i)), i = 1..5
    inside = 0.5 * (lo + hi)  # increasing in i, so a valid sorted sample
    assert cdf_band_holds(band, inside[None, :]).tolist() == [True]
    too_high_first = inside.copy()
    too_high_first[0] = np.nextafter(hi[0], 1.0)  # F(y_(1)) just above its upper end
    too_low_last = inside.copy()
    too_low_last[-1] = np.nextafter(lo[-1], 0.0)  # F(y_(n)) just below its lower end
    assert cdf_band_holds(band, np.vstack([too_high_first, too_low_last, inside])).tolist() == [False, False, True]
    with pytest.raises(ValueError, match="columns"):
        cdf_band_holds(band, np.zeros((2, 4)))


def test_cdf_event_matches_the_band_step_functions_and_the_nominal_level():
    # Uniform scores, F(y) = y: the helper agrees with the band's own step functions, checked at each
    # score and just below it, and its frequency is the nominal level (exact) within 4 standard errors.
    rng = np.random.default_rng(7)
    n, confidence, replicates = 8, 0.6, 20_000
    y = np.sort(rng.uniform(size=(replicates, n)), axis=1)
    band = rank_band(n, confidence, "ld-hd")
    events = cdf_band_holds(band, y)
    for r in range(200):
        own = cdf_band(y[r], confidence, "ld-hd", a=0.0, b=1.0)
        at_lower, _, _ = own.cdf(y[r])
        _, _, below_upper = own.cdf(np.nextafter(y[r], -np.inf))
        assert events[r] == bool(np.all((at_lower <= y[r]) & (y[r] <= below_upper)))
    standard_error = np.sqrt(confidence * (1 - confidence) / replicates)
    assert abs(events.mean() - confidence) < 4 * standard_error


def test_curve_event_needs_every_budget():
    lower, upper = np.array([[0.1, 0.2, 0.3], [0.1, 0.2, 0.3]]), np.array([[0.5, 0.6, 0.7], [0.5, 0.6, 0.29]])
    assert curve_band_holds(lower, upper, np.array([0.3, 0.4, 0.3])).tolist() == [True, False]


def test_rank_shortcuts_equal_showworks_bands_on_a_sample():
    rng = np.random.default_rng(3)
    n, ks = 7, budget_grid(7)
    y = np.sort(rng.beta(5.0, 2.0, size=(4, n)), axis=1)
    for method, confidence in (("ld-hd", 0.3), ("ld-et", 0.9)):
        band = rank_band(n, confidence, method)
        lo_idx, _, hi_idx = rank_band_indices(band, ks)
        mean_lower, mean_upper = mean_bands(mean_band_tails(band, ks), y)
        extended = np.concatenate([np.zeros((4, 1)), y, np.ones((4, 1))], axis=1)
        for r in range(4):
            own = cdf_band(y[r], confidence, method, a=0.0, b=1.0)
            assert np.array_equal(own.lower, band.lower) and np.array_equal(own.upper, band.upper)
            q_lower, _, q_upper = quantile_tuning_curve(own, ks)
            np.testing.assert_array_equal(extended[r, lo_idx], q_lower)
            np.testing.assert_array_equal(extended[r, hi_idx], q_upper)
            m_lower, _, m_upper = mean_tuning_curve(own, ks)
            np.testing.assert_allclose(mean_lower[r], m_lower, rtol=0, atol=1e-13)
            np.testing.assert_allclose(mean_upper[r], m_upper, rtol=0, atol=1e-13)


def test_mean_band_tails_are_probabilities_decreasing_in_the_atom():
    band = rank_band(6, 0.8, "ld-hd")
    for tails in mean_band_tails(band, budget_grid(6)):
        assert np.all((tails >= -1e-15) & (tails <= 1 + 1e-15))
        assert np.all(np.diff(tails, axis=0) <= 1e-15)  # P(best of k reaches atom j) falls with j


def test_mean_bands_of_a_sample_at_the_ends_of_the_support():
    # All scores at b = 1: every distribution between the bands puts all its mass at 1.
    band = rank_band(4, 0.5, "ld-et")
    lower, upper = mean_bands(mean_band_tails(band, np.array([1.0, 10.0])), np.ones((1, 4)))
    np.testing.assert_allclose(upper, 1.0)
    assert np.all(lower <= 1.0)
    scaled = dataclasses.replace(band, values=np.ones(4), a=0.0, b=1.0)
    np.testing.assert_allclose(lower[0], mean_tuning_curve(scaled, [1.0, 10.0])[0], atol=1e-14)


def test_ks_distance_and_bound():
    points = [study.CoveragePoint("deberta", 5, "ld-hd", "cdf", c, 100, s) for c, s in ((0.25, 20), (0.5, 53), (0.75, 75))]
    assert ks_distance(points) == pytest.approx(0.05 * 10)
    # One block: the 99 % quantile of sqrt(R) D_R approaches the Kolmogorov limit 1.628 as R grows.
    assert ks_bound(100_000, 1) == pytest.approx(1.628, abs=0.01)
    assert ks_bound(1_000, 2) > ks_bound(1_000, 1)


# -- the quick study (slow)


@pytest.fixture(scope="module")
def quick():
    return study.run(quick=True, seed=0)


@pytest.mark.slow
@pytest.mark.integration
def test_ld_cdf_bands_are_exact(quick):
    # 7 levels x 2 KDEs = 14 points per method, each a Binomial(1,000, c) count. Every Clopper–Pearson
    # interval at the Bonferroni level 1 - 0.01 / 14 (family-wise 99 %) must contain the nominal level,
    # and so must the largest |z| stay below the matching normal bound (3.38).
    for method in ("ld-hd", "ld-et"):
        points = quick.select(event="cdf", method=method)
        assert len(points) == 14
        for p in points:
            lo, hi = p.interval(1 - 0.01 / len(points))
            assert lo <= p.nominal <= hi, (method, p)
        assert max(abs(p.z) for p in points) <= bonferroni_z(len(points))
        # The coverage curve of each KDE is the empirical CDF of 1,000 uniform critical levels: its
        # scaled KS distance from y = x stays below the exact 99.5 % quantile (about 1.7).
        for family in ("deberta", "debertav3"):
            curve = quick.select(event="cdf", method=method, family=family)
            assert ks_distance(curve) <= ks_bound(quick.replicates, 2), (method, family)


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.parametrize("event", ["median", "mean"])
def test_curve_bands_cover_at_least_nominally(quick, event):
    # Implied by the CDF event, so P >= c; allow 3 binomial standard errors (at c) below it.
    for method in ("ld-hd", "ld-et"):
        for p in quick.select(event=event, method=method):
            assert p.coverage >= p.nominal - 3 * p.standard_error, (method, p)
            cdf = quick.select(event="cdf", method=method, family=p.family, n=p.n, nominal=p.nominal)[0]
            assert p.successes >= cdf.successes  # the CDF event implies the curve events, replicate by replicate


@pytest.mark.slow
@pytest.mark.integration
def test_main_writes_the_three_files(quick, tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(study, "run", lambda is_quick, seed: calls.append((is_quick, seed)) or quick)
    assert study.main(["--quick", "--out", str(tmp_path)]) == 0
    assert calls == [(True, 0)]
    for suffix in ("csv", "png", "md"):
        assert (tmp_path / f"exact_coverage.{suffix}").stat().st_size > 0
    markdown = (tmp_path / "exact_coverage.md").read_text(encoding="utf-8")
    assert markdown.count("| yes |") == 8 and "| no |" not in markdown
    header, *lines = (tmp_path / "exact_coverage.csv").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2 * 2 * 3 * 7  # families x methods x events x levels (n = 48)
    assert header.startswith("family,n,method,event,nominal")
