"""Extrapolated tuning curves (showwork.statistics.extrapolation): the fit, the consonance bands, the guard."""

from __future__ import annotations

import csv
import json
import math
import os

import numpy as np
import pytest

from showwork.constants import EXTRAPOLATION_TAIL_FRACTION
from showwork.statistics import ArgumentError, NoisyQuadratic, extrapolate, tuning_curve
from showwork.statistics.extrapolation import Extrapolation, ExtrapolationRefused

DATA = os.path.join(os.environ.get("SHOWWORK_DATA_DIR", "/work/shared/data"), "search-results", "deberta-v3-base_mnli_tuning.csv")


def _deberta_v3() -> np.ndarray:
    if not os.path.exists(DATA):
        pytest.skip(f"no {DATA}")
    with open(DATA, newline="") as handle:
        return np.array([float(row["matched_acc_best"]) for row in csv.DictReader(handle)])


@pytest.mark.parametrize("seed", range(7))
def test_deberta_subsamples_never_give_a_falling_curve(seed):
    # The case: opda's fit of 48 DeBERTaV3 scores returned a falling curve in 1 of 6 random subsamples.
    scores = np.random.default_rng(seed).choice(_deberta_v3(), 48, replace=False)
    curve = tuning_curve(scores, a=0.0, b=1.0)
    result = extrapolate(curve, 480)
    if isinstance(result, ExtrapolationRefused):  # seed 1 draws the best score three times: the tie rule's ~1 %
        assert "a ceiling" in result.reason and np.count_nonzero(scores == scores.max()) == 3
        return
    assert isinstance(result, Extrapolation)
    assert np.all(np.diff(result.point) >= 0) and np.all(np.diff(result.lower) >= 0)
    assert np.all(result.lower <= result.point) and np.all(result.point <= result.upper)
    assert np.all(result.mean_lower <= result.mean_point) and np.all(result.mean_point <= result.mean_upper)
    for estimate in (result.asymptote, result.gamma, result.sigma):
        assert estimate.lower <= estimate.estimate <= estimate.upper
    informative = math.floor(result.informative_k)
    assert set(result.source[:informative]) == {"nonparametric"} and set(result.source[informative:]) == {"model-based"}
    # Where the exact band is informative it is the curve's own band, untouched by the model.
    np.testing.assert_array_equal(result.lower[:informative], curve.quantile_curve_lower[:informative])
    np.testing.assert_array_equal(result.upper[:informative], curve.quantile_curve_upper[:informative])
    # So is the mean band there (rows called nonparametric hold no model-based number; it was tighter before).
    np.testing.assert_allclose(result.mean_lower[:informative], curve.mean_lower[:informative], rtol=0, atol=1e-12)
    np.testing.assert_allclose(result.mean_upper[:informative], curve.mean_upper[:informative], rtol=0, atol=1e-12)
    assert result.tail_fraction == EXTRAPOLATION_TAIL_FRACTION and result.n_tail == 24
    assert result.threshold == np.sort(scores)[24]
    # The full search of 1,024 trials reaches its best; the extrapolation from 48 says it lies below the band's top.
    assert result.upper[-1] >= np.median(np.sort(_deberta_v3())[-3:])


def test_json_follows_the_contract():
    scores = NoisyQuadratic(0.0, 1.0, 3.0, 0.02).sample(60, np.random.default_rng(1))
    data = json.loads(json.dumps(extrapolate(tuning_curve(scores), 100).to_dict(), allow_nan=False))
    assert {"k", "median", "lower", "upper", "source", "mean_point", "mean_lower", "mean_upper", "informative_k", "estimates",
            "goodness_of_fit", "tail_fraction", "threshold", "n", "n_tail", "confidence", "method", "quantile", "minimize",
            "assumption"} <= set(data)
    assert data["k"] == list(range(1, 101)) and data["mean_lower"] is None  # no support bounds, no mean bands
    assert set(data["estimates"]) == {"asymptote", "gamma", "sigma"}
    assert "noisy-quadratic" in data["assumption"]


def test_minimizing_mirrors_maximizing():
    scores = NoisyQuadratic(0.0, 1.0, 3.0, 0.02).sample(60, np.random.default_rng(0))
    up = extrapolate(tuning_curve(scores, quantile=0.3), 100)
    down = extrapolate(tuning_curve(-scores, minimize=True, quantile=0.7), 100)
    assert isinstance(up, Extrapolation) and isinstance(down, Extrapolation)
    np.testing.assert_allclose(down.point, -up.point, atol=1e-6)
    np.testing.assert_allclose(down.lower, -up.upper, atol=1e-9)
    np.testing.assert_allclose(down.upper, -up.lower, atol=1e-9)
    assert down.asymptote.lower == pytest.approx(-up.asymptote.upper) and down.threshold == -up.threshold
    assert down.law.minimize and down.law.alpha == pytest.approx(-up.law.beta, abs=1e-6)


def test_interpolated_quantiles_match_the_exact_ones(monkeypatch):
    # Past 192 budgets the shapes' quantiles are Chebyshev-interpolated; below, computed one by one. (The shapes
    # refined off the grid depend on K, so the same shapes are compared: the grid's.)
    from showwork.statistics import extrapolation as module

    monkeypatch.setattr(module, "refine_extremes", lambda tail, polygons, level: [])
    scores = np.random.default_rng(2).choice(_deberta_v3(), 48, replace=False)
    curve = tuning_curve(scores)
    long, short = extrapolate(curve, 2000), extrapolate(curve, 150)
    scale = float(np.ptp(scores))
    np.testing.assert_allclose(long.lower[:150], short.lower, rtol=0, atol=1e-8 * scale)
    np.testing.assert_allclose(long.upper[:150], short.upper, rtol=0, atol=1e-8 * scale)


def test_trials_within_reads_the_curves():
    scores = np.random.default_rng(4).choice(_deberta_v3(), 48, replace=False)
    result = extrapolate(tuning_curve(scores), 400)
    gap = result.asymptote.estimate - result.point
    for epsilon in (0.003, 0.001):
        by_fit, every_law = result.trials_within(epsilon)
        assert by_fit is not None and gap[by_fit - 1] <= epsilon * (1 + 1e-9)
        assert by_fit == 1 or gap[by_fit - 2] > epsilon
        assert every_law is None or every_law >= by_fit
    assert result.trials_within(1e-12)[1] is None  # beyond 10^9 trials for some consonant law
    with pytest.raises(ArgumentError, match="epsilon"):
        result.trials_within(0.0)


def test_the_polygon_is_the_consonance_set():
    # Laws found consonant directly (their CDF checked against the band at the tail's scores, on a fine grid of
    # (beta, s)) all have curves inside the model-based band, and the band's top is reached up to the grid's step.
    scores = np.random.default_rng(5).choice(_deberta_v3(), 48, replace=False)
    curve = tuning_curve(scores)
    result = extrapolate(curve, 300)
    top = np.sort(scores)[-result.n_tail:]
    band = curve.band
    below, upto = np.searchsorted(band.values, top, side="left"), np.searchsorted(band.values, top, side="right")
    k = np.array([100.0, 300.0])
    best = -np.inf
    for gamma, sigma_share in [(1.0, 0.0), (4.0, 0.0), (2.0, 0.05)]:
        for beta in np.linspace(top[-1], top[-1] + 0.05, 60):
            for s in np.geomspace(0.005, 1.0, 60):
                law = NoisyQuadratic(beta - s, beta, gamma, sigma_share * s)
                cdf = law.cdf(top)
                if np.all(cdf >= band.lower[upto] - 1e-12) and np.all(cdf <= band.upper[below] + 1e-12):
                    curve_k = law.quantile_tuning_curve(k)
                    assert np.all(curve_k <= result.upper[-200::200][: k.size] + 1e-9) or np.all(curve_k <= result.upper[k.astype(int) - 1] + 1e-9)
                    best = max(best, float(curve_k[-1]))
    assert best > -np.inf and best <= result.upper[-1] + 1e-9


def test_the_rho_grid_narrows_the_band_by_little():
    # Against a brute force over 400 noise levels per gamma: the band's ends within 0.5 % of its width.
    from showwork.statistics import consonance as module

    scores = np.random.default_rng(3).choice(_deberta_v3(), 48, replace=False)
    curve = tuning_curve(scores)
    coarse = extrapolate(curve, 480)
    fine_rhos = np.concatenate([[0.0], np.geomspace(1e-4, 100.0, 400)])
    original = module._RHOS
    try:
        module._RHOS = fine_rhos
        fine = extrapolate(curve, 480)
    finally:
        module._RHOS = original
    width = fine.upper - fine.lower
    past = coarse.source == "model-based"
    assert np.all(coarse.upper[past] >= fine.upper[past] - 0.005 * width[past])
    assert np.all(coarse.lower[past] <= fine.lower[past] + 0.005 * width[past])
    assert coarse.asymptote.upper >= fine.asymptote.upper - 0.005 * (fine.asymptote.upper - fine.asymptote.lower)


def test_too_few_tail_trials_is_refused():
    result = extrapolate(tuning_curve(np.linspace(0.0, 1.0, 12)), 50)
    assert isinstance(result, ExtrapolationRefused)
    assert "at least 10" in result.reason and "run at least 20 trials" in result.reason
    assert result.to_dict() == {"refused": result.reason, "tail_fraction": 0.5}  # the tail rule stated in every output


def test_nothing_is_extrapolated_past_the_scores_bounds():
    """With bounds [a, b] no best score lies past b: the asymptote's interval, the fitted curve and the band stay inside
    (a search of 40 noisy scores capped at 1 fitted an asymptote of 1.1 in [0.65, 1.6] before)."""
    rng = np.random.default_rng(1)
    lr = rng.uniform(-5, -1, 40)
    scores = np.minimum(0.6 + 0.3 * np.exp(-((lr + 3) ** 2)) + rng.normal(0, 0.02, 40), 1.0)
    free, bounded = extrapolate(tuning_curve(scores), 400), extrapolate(tuning_curve(scores, a=0.0, b=1.0), 400)
    assert isinstance(free, Extrapolation) and isinstance(bounded, Extrapolation)
    assert free.asymptote.upper > 1.0  # unbounded, the consonant laws reach past 1
    assert bounded.asymptote.lower <= bounded.asymptote.estimate <= bounded.asymptote.upper <= 1.0
    assert np.all(bounded.point <= 1.0) and np.all(bounded.upper <= 1.0)


def test_a_tied_tail_is_refused():
    scores = np.concatenate([np.linspace(0.1, 0.5, 20), np.full(20, 0.9)])
    result = extrapolate(tuning_curve(scores), 50)
    assert isinstance(result, ExtrapolationRefused) and "distinct" in result.reason


def test_a_top_atom_is_refused_as_a_ceiling():
    rng = np.random.default_rng(0)
    scores = NoisyQuadratic(0.0, 1.0, 3.0).sample(48, rng)
    scores = np.minimum(scores, np.quantile(scores, 0.8))  # the best fifth piled on one value
    result = extrapolate(tuning_curve(scores), 50)
    assert isinstance(result, ExtrapolationRefused) and "the best score is shared by 10 of 48 trials" in result.reason


def test_a_top_atom_the_consonance_set_lets_through_is_refused():
    # experiments/extrapolation.py found 48-trial samples with a quarter of the mass at the best score that some
    # noisy-quadratic law fits inside the band; their extrapolated bands all promised more than the ceiling.
    # Before the tie rule these were extrapolated; now they are refused.
    from showwork.statistics.consonance import consonant_polygons, tail_of

    law = NoisyQuadratic(0.7, 0.9, 2.0, 0.002)
    let_through = 0
    for seed in range(40):
        u = np.random.default_rng(seed).uniform(size=48)
        scores = law.ppf(np.minimum(u, 0.75))
        curve = tuning_curve(scores)
        if consonant_polygons(tail_of(curve, EXTRAPOLATION_TAIL_FRACTION)):
            let_through += 1
            result = extrapolate(curve, 480)
            assert isinstance(result, ExtrapolationRefused) and "a ceiling" in result.reason
    assert let_through >= 1  # the case exists (else this test shows nothing)


@pytest.mark.parametrize(("copies", "refused"), [(2, False), (3, True)])
def test_the_best_score_may_be_shared_by_two_trials_not_three(copies, refused):
    scores = NoisyQuadratic(0.0, 1.0, 2.0, 0.01).sample(48, np.random.default_rng(3))
    order = np.argsort(scores)
    scores[order[-copies:]] = scores[order[-1]]
    result = extrapolate(tuning_curve(scores), 480)
    is_ceiling = isinstance(result, ExtrapolationRefused) and "a ceiling" in result.reason
    assert is_ceiling == refused


def test_the_released_searches_seldom_tie_their_best_score_three_times():
    # The claim of EXTRAPOLATION_MAX_TIES_AT_BEST's docstring: the tie rule refuses about 1 % at most of real subsamples.
    from showwork.constants import EXTRAPOLATION_MAX_TIES_AT_BEST

    rng = np.random.default_rng(0)
    scores = _deberta_v3()
    for n in (24, 48, 96):
        draws = np.array([rng.choice(scores, n, replace=False) for _ in range(2000)])
        tied = (draws == draws.max(axis=1, keepdims=True)).sum(axis=1) > EXTRAPOLATION_MAX_TIES_AT_BEST
        assert tied.mean() <= 0.02


def test_the_goodness_of_fit_test_rejects_a_gap_and_keeps_its_size():
    rng = np.random.default_rng(7)
    rejected_null = rejected_gap = 0
    for _ in range(20):
        null = NoisyQuadratic(0.0, 1.0, 1.0).sample(48, rng)  # gamma = 1, no noise: the calibration's heaviest case
        rejected_null += isinstance(extrapolate(tuning_curve(null), 1), ExtrapolationRefused)
        gap = NoisyQuadratic(0.0, 1.0, 3.0).sample(48, rng)
        gap = np.where(gap > np.quantile(gap, 0.85), gap + 0.5, gap)
        refused = extrapolate(tuning_curve(gap), 1)
        rejected_gap += isinstance(refused, ExtrapolationRefused) and "Anderson" in refused.reason
    assert rejected_null <= 3  # size 0.05: 3 or more of 20 has probability 0.08, more than 3 0.016
    assert rejected_gap >= 2  # power about 0.3


def test_bad_arguments_are_refused():
    curve = tuning_curve(np.linspace(0.0, 1.0, 30))
    with pytest.raises(ArgumentError, match="K must be"):
        extrapolate(curve, 0)
    with pytest.raises(ArgumentError, match="from 1 to 100,000"):
        extrapolate(curve, 10**9)  # its arrays of every budget would take 7 GiB
    with pytest.raises(ArgumentError, match="tail_fraction"):
        extrapolate(curve, 10, tail_fraction=1.5)


@pytest.mark.slow
def test_the_fit_lands_on_opdas():
    parametric = pytest.importorskip("opda.parametric")
    scores = np.random.default_rng(0).choice(_deberta_v3(), 48, replace=False)
    ours = extrapolate(tuning_curve(scores), 480)
    threshold = float(np.sort(scores)[24])
    theirs = parametric.NoisyQuadraticDistribution.fit(
        scores, limits=(threshold, np.inf), constraints={"convex": False}, generator=np.random.RandomState(0)
    )
    assert ours.law.gamma == theirs.c
    assert ours.law.beta == pytest.approx(theirs.b, abs=1e-3)
    assert ours.point[-1] == pytest.approx(float(theirs.quantile_tuning_curve([480])[0]), abs=1e-3)


@pytest.mark.slow
def test_bands_cover_a_noisy_quadratic_law_at_the_nominal_level():
    # Simulation against the exact truth: 40 searches of 48 trials from a law on [0, 1], bands to K = 200.
    law = NoisyQuadratic(0.3, 0.9, 3.0, 0.0)
    ks = np.arange(1, 201.0)
    truth, truth_mean = law.quantile_tuning_curve(ks), law.mean_tuning_curve(ks)
    rng = np.random.default_rng(11)
    covered = covered_mean = runs = 0
    for _ in range(40):
        result = extrapolate(tuning_curve(law.sample(48, rng), a=0.0, b=1.0), 200)
        if isinstance(result, ExtrapolationRefused):
            continue
        runs += 1
        covered += bool(np.all((result.lower <= truth + 1e-12) & (truth <= result.upper + 1e-12)))
        covered_mean += bool(np.all((result.mean_lower <= truth_mean + 1e-9) & (truth_mean <= result.mean_upper + 1e-9)))
    assert runs >= 35
    assert covered >= 0.8 * runs - 4 and covered_mean >= 0.8 * runs - 4  # nominal 0.8, with binomial slack


def _pairwise_polygon(tail, a, b):
    """The polygon's vertices by brute force: every pair of constraint lines met, the feasible meets kept (O(m³))."""
    x = tail.x
    fa, fb = np.isfinite(a), np.isfinite(b)
    A = np.concatenate([np.stack([-np.ones(fa.sum()), a[fa]], axis=1), np.stack([np.ones(fb.sum()), -b[fb]], axis=1), [[0.0, -1.0]]])
    c = np.concatenate([-x[fa], x[fb], [0.0]])
    i, j = np.triu_indices(c.size, 1)
    det = A[i, 0] * A[j, 1] - A[i, 1] * A[j, 0]
    ok = np.abs(det) > 1e-300
    i, j, det = i[ok], j[ok], det[ok]
    points = np.stack([(c[i] * A[j, 1] - A[i, 1] * c[j]) / det, (A[i, 0] * c[j] - c[i] * A[j, 0]) / det], axis=1)
    slack = points @ A.T - c
    return points[np.all(slack <= 1e-9 * (np.abs(points) @ np.abs(A.T) + np.abs(c)), axis=1)]


@pytest.mark.parametrize("n", [24, 96])
def test_the_envelopes_find_the_polygons_vertices(n):
    from showwork.statistics import consonance

    scores = np.random.default_rng(n).choice(_deberta_v3(), n, replace=False)
    tail = consonance.tail_of(tuning_curve(scores), 0.5)
    weights = np.array([-0.5, 0.0, 0.3, 1.0, 2.0])
    for gamma, rho in [(1.0, 0.0), (3.0, 0.001), (10.0, 0.05), (2.0, 1.0), (0.0, math.inf)]:
        a, b = consonance.shape_quantiles(tail.p_low, gamma, rho), consonance.shape_quantiles(tail.p_high, gamma, rho)
        polygon, brute = consonance.consonant_polygon(tail, gamma, rho), _pairwise_polygon(tail, a, b)
        assert (polygon is None) == (brute.size == 0)
        if polygon is not None and not polygon.on_box.any():
            values = brute[:, :1] - brute[:, 1:] * weights
            lower, upper = consonance.linear_range(polygon, weights)
            np.testing.assert_allclose(lower, values.min(axis=0), rtol=0, atol=1e-12)
            np.testing.assert_allclose(upper, values.max(axis=0), rtol=0, atol=1e-12)
