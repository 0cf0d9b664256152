"""CDF bands, tuning-curve bands, comparisons between curves, budgets to reach a target, planning.

Property tests (hypothesis) check what must hold for any scores — ordering of the bands,
monotonicity in k, invariances — and example tests pin the evidence levels, the planning numbers
of Lourie, Cho & He (2024) and the DeBERTa comparison on real search results.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from showwork.statistics import (
    EVIDENCE_LEVELS,
    METHODS,
    budget_to_reach,
    budgets_to_reach,
    cdf_band,
    compare_curves,
    evidence,
    informative_budget,
    mean_tuning_curve,
    quantile_tuning_curve,
    trials_needed,
    tuning_curve,
)
from showwork.statistics.tuning_curve_bands import quantile_levels

from helpers import load_column

PROPERTY = settings(max_examples=50, deadline=None)

# Floats in [0, 1], with values from a coarse grid mixed in so that ties are common.
scores_strategy = st.lists(
    st.one_of(st.floats(0.0, 1.0, allow_nan=False), st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0])),
    min_size=1,
    max_size=60,
)
methods = st.sampled_from(METHODS)
confidences = st.sampled_from([0.5, 0.8, 0.95])


def _budgets(n: int) -> np.ndarray:
    """Integer budgets 1..n and some real ones beyond, sorted."""
    return np.unique(np.concatenate([np.arange(1, n + 1), np.linspace(1.0, 3.0 * n + 1.0, 21)]))


def _non_decreasing(x: np.ndarray, atol: float = 0.0) -> bool:
    return bool(np.all(np.diff(x) >= -atol))


# --- properties of the bands --------------------------------------------------------------------


@PROPERTY
@given(scores=scores_strategy, method=methods, confidence=confidences, minimize=st.booleans())
def test_median_curve_lies_inside_its_monotone_bands(scores, method, confidence, minimize):
    ks = _budgets(len(scores))
    curve = tuning_curve(scores, ks, confidence=confidence, method=method, a=0.0, b=1.0, minimize=minimize)
    assert np.all(curve.median_lower <= curve.median)
    assert np.all(curve.median <= curve.median_upper)
    assert np.all((0.0 <= curve.median_lower) & (curve.median_upper <= 1.0))
    sign = -1.0 if minimize else 1.0
    for series in (curve.median_lower, curve.median, curve.median_upper):
        assert _non_decreasing(sign * series)
    for series in (curve.mean_lower, curve.v, curve.mean_upper):
        assert _non_decreasing(sign * series, atol=1e-12)


@PROPERTY
@given(scores=scores_strategy, method=methods, confidence=confidences, minimize=st.booleans())
def test_v_statistic_lies_inside_the_mean_curve_band(scores, method, confidence, minimize):
    ks = _budgets(len(scores))
    curve = tuning_curve(scores, ks, confidence=confidence, method=method, a=0.0, b=1.0, minimize=minimize)
    assert np.all(curve.mean_lower <= curve.v + 1e-12)
    assert np.all(curve.v <= curve.mean_upper + 1e-12)
    assert np.all((0.0 <= curve.mean_lower) & (curve.mean_upper <= 1.0 + 1e-12))


@PROPERTY
@given(scores=scores_strategy, method=methods, confidence=confidences, data=st.data())
def test_curves_do_not_depend_on_the_order_of_the_scores(scores, method, confidence, data):
    shuffled = data.draw(st.permutations(scores))
    minimize = data.draw(st.booleans())
    ks = _budgets(len(scores))
    one = tuning_curve(scores, ks, confidence=confidence, method=method, a=0.0, b=1.0, minimize=minimize)
    two = tuning_curve(shuffled, ks, confidence=confidence, method=method, a=0.0, b=1.0, minimize=minimize)
    for key in ("v", "u", "v_std", "median", "median_lower", "median_upper", "mean_lower", "mean_upper"):
        np.testing.assert_array_equal(getattr(one, key), getattr(two, key), err_msg=key)


@PROPERTY
@given(scores=scores_strategy, method=methods, confidence=confidences)
def test_cdf_band_contains_the_empirical_cdf(scores, method, confidence):
    band = cdf_band(scores, confidence, method, a=0.0, b=1.0)
    n = len(scores)
    ecdf = np.arange(n + 1) / n
    assert band.lower.shape == band.upper.shape == (n + 1,)
    assert np.all((0.0 <= band.lower) & (band.lower <= ecdf) & (ecdf <= band.upper) & (band.upper <= 1.0))
    assert _non_decreasing(band.lower) and _non_decreasing(band.upper)
    # The same through the step-function view, at the scores, between them and outside [a, b].
    y = np.concatenate([[-0.5, 0.0], np.sort(scores), np.linspace(0.0, 1.0, 23), [1.0, 1.5]])
    lower, empirical, upper = band.cdf(y)
    assert np.all((lower <= empirical) & (empirical <= upper))
    order = np.argsort(y, kind="stable")
    assert _non_decreasing(lower[order]) and _non_decreasing(upper[order])
    assert lower[0] == upper[0] == 0.0 and lower[-1] == upper[-1] == 1.0


@PROPERTY
@given(
    scores=scores_strategy,
    method=methods,
    minimize=st.booleans(),
    shift=st.sampled_from([-2.5, -0.125, 0.5, 3.0, 100.0]),
)
def test_shifting_the_scores_shifts_every_curve(scores, method, minimize, shift):
    ks = _budgets(len(scores))
    base = tuning_curve(scores, ks, method=method, a=0.0, b=1.0, minimize=minimize)
    moved = tuning_curve(np.asarray(scores) + shift, ks, method=method, a=shift, b=1.0 + shift, minimize=minimize)
    for key in ("v", "u", "median", "median_lower", "median_upper", "mean_lower", "mean_upper"):
        np.testing.assert_allclose(getattr(moved, key), getattr(base, key) + shift, rtol=0, atol=1e-9, err_msg=key)
    np.testing.assert_allclose(moved.v_std, base.v_std, rtol=0, atol=1e-9)


@PROPERTY
@given(scores=scores_strategy, method=methods, confidence=confidences)
def test_minimizing_equals_maximizing_the_negated_scores(scores, method, confidence):
    x = np.asarray(scores)
    ks = _budgets(x.size)
    low = tuning_curve(x, ks, confidence=confidence, method=method, a=0.0, b=1.0, minimize=True)
    high = tuning_curve(-x, ks, confidence=confidence, method=method, a=-1.0, b=0.0)
    np.testing.assert_allclose(low.v, -high.v, rtol=0, atol=1e-12)
    np.testing.assert_allclose(low.u, -high.u, rtol=0, atol=1e-12)
    np.testing.assert_allclose(low.mean_lower, -high.mean_upper, rtol=0, atol=1e-12)
    np.testing.assert_allclose(low.mean_upper, -high.mean_lower, rtol=0, atol=1e-12)
    # Quantiles are inf{y : G(y) >= p} in both directions, so negation turns them into the other
    # (sup) convention: the two agree except where the level p lands exactly on a step value of the
    # empirical CDF or of a band (e.g. k = 1 with n even, or n = 2 at confidence 0.5, where the
    # LD-hd intervals are [0, 1/2] and [1/2, 1]).
    p = quantile_levels(ks, 0.5)
    steps = np.concatenate([np.arange(x.size + 1) / x.size, low.band.lower, low.band.upper])
    off = ~np.any(np.isclose(p[:, None], steps[None, :], rtol=0, atol=1e-9), axis=1)
    np.testing.assert_array_equal(low.median[off], -high.median[off])
    np.testing.assert_array_equal(low.median_lower[off], -high.median_upper[off])
    np.testing.assert_array_equal(low.median_upper[off], -high.median_lower[off])


# --- informative budgets and planning -----------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("n", [1, 2, 5, 30, 200])
def test_upper_band_is_trivial_exactly_beyond_the_informative_budget(method, n):
    rng = np.random.default_rng(n)
    scores = rng.normal(size=n)
    limit = informative_budget(n, 0.8, method)
    ks = np.unique(np.concatenate([np.arange(1, n + 1), np.geomspace(1.0, 20.0 * n + 20.0, 200)]))
    beyond = ks > limit * (1.0 + 1e-9)
    below = ks < limit * (1.0 - 1e-9)
    curve = tuning_curve(scores, ks, method=method)  # unbounded support: the trivial band is +inf
    assert np.all(curve.median_upper[beyond] == math.inf)
    assert np.all(np.isfinite(curve.median_upper[below]))
    # Minimizing, the lower band is the one that runs to the support bound (q = 1/2 is symmetric).
    losses = tuning_curve(scores, ks, method=method, minimize=True)
    assert np.all(losses.median_lower[beyond] == -math.inf)
    assert np.all(np.isfinite(losses.median_lower[below]))
    # With a finite bound b the trivial band is exactly b.
    bounded = tuning_curve(scores, ks, method=method, a=scores.min() - 1.0, b=scores.max() + 1.0)
    assert np.all(bounded.median_upper[beyond] == scores.max() + 1.0)
    assert np.all(bounded.median_upper[below] <= scores.max())


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("q", [0.25, 0.5, 0.8])
def test_informative_budget_when_minimizing_other_quantiles(method, q):
    # Regression: the budget used to ignore the direction, which only agrees at q = 1/2.
    n = 100
    scores = np.random.default_rng(7).normal(size=n)
    limit = informative_budget(n, 0.8, method, quantile=q, minimize=True)
    ks = np.geomspace(1.0, 50.0 * n, 400)
    losses = tuning_curve(scores, ks, method=method, quantile=q, minimize=True)
    assert np.all(losses.median_lower[ks > limit * (1 + 1e-9)] == -math.inf)
    assert np.all(np.isfinite(losses.median_lower[ks < limit * (1 - 1e-9)]))
    if q != 0.5:
        assert limit != pytest.approx(informative_budget(n, 0.8, method, quantile=q))


def test_informative_budget_grows_with_n():
    for method in METHODS:
        values = [informative_budget(n, 0.8, method) for n in (1, 2, 5, 10, 50, 200, 1000)]
        assert _non_decreasing(np.array(values)), method
        assert values[-1] > values[-2]


@pytest.mark.parametrize("k", [10, 25, 50])
def test_trials_needed_is_about_six_times_the_budget(k):
    # Lourie, Cho & He (2024): n ~ 6.2 k at 80 % with highest-density LD bands.
    n = trials_needed(k, 0.8, "ld-hd")
    assert 5.0 <= n / k <= 7.5
    assert informative_budget(n, 0.8, "ld-hd") >= k > informative_budget(n - 1, 0.8, "ld-hd")


def test_trials_needed_validation():
    for k in (0.5, -1.0, math.nan, math.inf):
        with pytest.raises(ValueError):
            trials_needed(k)
    with pytest.raises(ValueError):
        trials_needed(10, 0.8, "dkw", n_max=20)
    with pytest.raises(ValueError):
        informative_budget(0)
    with pytest.raises(ValueError):
        informative_budget(10, quantile=1.0)


# --- evidence ----------------------------------------------------------------------------------

# (point, lower, upper) of A, then of B, then the level; A is the better curve in every row.
EVIDENCE_CASES = [
    ((0.90, 0.85, 0.95), (0.70, 0.60, 0.80), "strong"),  # bands apart
    ((0.90, 0.80, 0.95), (0.70, 0.60, 0.80), "fair"),  # bands touch: not "strong"
    ((0.90, 0.75, 0.95), (0.70, 0.60, 0.80), "fair"),  # each estimate outside the other's band
    ((0.90, 0.65, 0.95), (0.70, 0.60, 0.80), "weak"),  # only A's estimate is outside B's band
    ((0.78, 0.75, 0.95), (0.70, 0.60, 0.80), "weak"),  # only B's estimate is outside A's band
    ((0.75, 0.60, 0.90), (0.70, 0.60, 0.80), "none"),
    ((0.75, 0.60, math.inf), (0.70, -math.inf, 0.80), "none"),  # uninformative bands
    ((0.70, 0.60, 0.80), (0.70, 0.60, 0.80), "none"),  # identical
]


def _columns(rows):
    return [np.array(column, dtype=float) for column in zip(*rows)]


@pytest.mark.parametrize("a, b, level", EVIDENCE_CASES)
def test_evidence_levels_in_both_directions(a, b, level):
    favour = 0 if level == "none" else 1
    levels, favoured = evidence(*_columns([a]), *_columns([b]))
    assert (levels.tolist(), favoured.tolist()) == ([level], [favour])
    levels, favoured = evidence(*_columns([b]), *_columns([a]))
    assert (levels.tolist(), favoured.tolist()) == ([level], [-favour])


@pytest.mark.parametrize("a, b, level", EVIDENCE_CASES)
def test_evidence_when_minimizing(a, b, level):
    # Negating the scores turns "higher is better" into "lower is better"; the bands swap ends.
    def negate(triple):
        point, lower, upper = triple
        return (-point, -upper, -lower)

    favour = 0 if level == "none" else 1
    levels, favoured = evidence(*_columns([negate(a)]), *_columns([negate(b)]), minimize=True)
    assert (levels.tolist(), favoured.tolist()) == ([level], [favour])
    # The same numbers read as "higher is better": the same level, for the other curve.
    levels, favoured = evidence(*_columns([negate(a)]), *_columns([negate(b)]), minimize=False)
    assert (levels.tolist(), favoured.tolist()) == ([level], [-favour])


def test_evidence_is_vectorised_over_budgets():
    a = _columns([case[0] for case in EVIDENCE_CASES])
    b = _columns([case[1] for case in EVIDENCE_CASES])
    levels, favoured = evidence(*a, *b)
    assert levels.tolist() == [case[2] for case in EVIDENCE_CASES]
    assert favoured.tolist() == [0 if case[2] == "none" else 1 for case in EVIDENCE_CASES]
    assert set(levels.tolist()) <= set(EVIDENCE_LEVELS)
    assert favoured.dtype == np.int8


# --- compare_curves ----------------------------------------------------------------------------


@pytest.mark.integration
def test_deberta_v3_beats_deberta_with_strong_evidence_at_every_budget(search_results_dir):
    base = load_column(search_results_dir / "deberta-base_mnli_tuning.csv", "matched_acc_best")
    v3 = load_column(search_results_dir / "deberta-v3-base_mnli_tuning.csv", "matched_acc_best")
    assert len(base) == len(v3) == 1024
    ks = np.arange(1, 11)
    curves = [
        tuning_curve(base, ks, confidence=0.8, method="ld-hd", a=0.0, b=1.0, name="deberta-base"),
        tuning_curve(v3, ks, confidence=0.8, method="ld-hd", a=0.0, b=1.0, name="deberta-v3-base"),
    ]
    (comparison,) = compare_curves(curves)
    assert (comparison.a, comparison.b, comparison.statistic) == ("deberta-base", "deberta-v3-base", "median")
    assert comparison.levels.tolist() == ["strong"] * 10
    assert comparison.favoured.tolist() == [-1] * 10
    assert len(comparison.ranges) == 1
    only = comparison.ranges[0]
    assert (only.k_start, only.k_end, only.level, only.favoured) == (1.0, 10.0, "strong", "deberta-v3-base")
    assert comparison.crossovers == ()
    json.dumps(comparison.to_dict(), allow_nan=False)
    # The same from a mapping, with the order reversed: now the first curve is favoured.
    (reverse,) = compare_curves({"v3": curves[1], "base": curves[0]})
    assert reverse.favoured.tolist() == [1] * 10 and reverse.ranges[0].favoured == "v3"


def test_compare_curves_ranges_and_crossovers():
    ks = [1, 2, 3, 4, 5, 6]
    steady = tuning_curve([0.5] * 20, ks, a=0.0, b=1.0, name="steady")
    # Mostly poor, a few excellent: worse at k = 1, better once the budget finds a good one.
    lucky = tuning_curve([0.1] * 14 + [0.9] * 6, ks, a=0.0, b=1.0, name="lucky")
    (comparison,) = compare_curves([steady, lucky])
    point = steady.median - lucky.median
    assert point[0] > 0 and point[-1] < 0
    assert len(comparison.crossovers) == 1
    first_after = comparison.crossovers[0]
    assert point[ks.index(first_after)] < 0 and point[ks.index(first_after) - 1] > 0
    # The ranges tile the budgets, in order, with the levels at each budget.
    covered = []
    for r in comparison.ranges:
        inside = [i for i, k in enumerate(ks) if r.k_start <= k <= r.k_end]
        assert {comparison.levels[i] for i in inside} == {r.level}
        covered += inside
    assert covered == list(range(len(ks)))


def test_compare_curves_at_equal_cost_reads_each_curve_at_its_own_budget():
    """Lourie et al. 2024 §2: at total cost c, a family of mean cost m per trial has had c / m trials."""
    rng = np.random.default_rng(7)
    cheap = rng.uniform(0.6, 0.8, 200)  # 1 hour a trial
    dear = rng.uniform(0.7, 0.9, 200)  # 4 hours a trial
    cost = np.array([4.0, 8.0, 16.0, 40.0])
    curves = {"cheap": tuning_curve(cheap, cost / 1.0, a=0.0, b=1.0), "dear": tuning_curve(dear, cost / 4.0, a=0.0, b=1.0)}
    (pair,) = compare_curves(curves, axis=cost, axis_name="hours")
    assert pair.axis == "hours" and pair.k.tolist() == cost.tolist()
    assert pair.k_a.tolist() == [4.0, 8.0, 16.0, 40.0] and pair.k_b.tolist() == [1.0, 2.0, 4.0, 10.0]
    # The evidence at each point is the one between the two curves read at their own budgets.
    at_cost = [compare_curves({"cheap": curves["cheap"].at([ka]), "dear": curves["dear"].at([kb])},
                              axis=[c])[0].levels[0] for c, ka, kb in zip(cost, pair.k_a, pair.k_b)]
    assert pair.levels.tolist() == at_cost
    assert all(r.k_start in cost and r.k_end in cost for r in pair.ranges)
    # Resolved only where each curve's own budget is within its informative budget.
    informative = informative_budget(200, 0.8, "ld-hd", 0.5, False)
    within = (pair.k_a <= informative) & (pair.k_b <= informative)
    assert not np.any(pair.resolved & ~within) and pair.informative_k == cost[within].max()
    assert pair.to_dict()["axis"] == "hours"
    with pytest.raises(ValueError, match="increasing"):
        compare_curves(curves, axis=cost[::-1])
    with pytest.raises(ValueError, match="budgets for the 3 points"):
        compare_curves(curves, axis=cost[:3])


def test_compare_curves_validation():
    ks = [1, 2, 3]
    one = tuning_curve([0.1, 0.2, 0.3], ks, a=0.0, b=1.0)
    two = tuning_curve([0.2, 0.3, 0.4], ks, a=0.0, b=1.0)
    with pytest.raises(ValueError):
        compare_curves([one])
    with pytest.raises(ValueError):
        compare_curves([one, tuning_curve([0.2, 0.3, 0.4], [1, 2], a=0.0, b=1.0)])
    with pytest.raises(ValueError):
        compare_curves([one, tuning_curve([0.2, 0.3, 0.4], ks, a=0.0, b=1.0, minimize=True)])
    with pytest.raises(ValueError):
        compare_curves([one, two], statistic="max")
    with pytest.raises(ValueError):
        compare_curves([tuning_curve([0.1, 0.2], [1]), tuning_curve([0.3, 0.4], [1])], statistic="mean")
    (by_mean,) = compare_curves([one, two], statistic="mean")
    assert by_mean.statistic == "mean" and by_mean.levels.shape == (3,)


# --- budgets to reach a target -----------------------------------------------------------------


def _first_reached(values, target, minimize):
    for k, value in enumerate(values, start=1):
        if (value <= target) if minimize else (value >= target):
            return k
    return None


@PROPERTY
@given(
    steps=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=40),
    target=st.floats(-0.5, 25.0),
    minimize=st.booleans(),
    k_max=st.one_of(st.none(), st.integers(1, 60)),
)
def test_budget_to_reach_agrees_with_a_scan(steps, target, minimize, k_max):
    values = np.cumsum(steps)  # non-decreasing, constant after the last step
    if minimize:
        values, target = -values, -target

    def series(k: float) -> float:
        assert k == int(k) and k >= 1
        return float(values[min(int(k), values.size) - 1])

    limit = 10**9 if k_max is None else k_max
    scan = _first_reached([series(k) for k in range(1, min(limit, values.size) + 1)], target, minimize)
    assert budget_to_reach(series, target, minimize, k_max=limit) == scan


@pytest.mark.parametrize("minimize", [False, True])
@pytest.mark.parametrize("method", ["ld-hd", "dkw"])
def test_budgets_to_reach_agrees_with_a_scan_of_the_curve(minimize, method):
    rng = np.random.default_rng(3)
    scores = np.round(rng.beta(5.0, 2.0, size=40), 3)
    ordered = np.sort(scores)[::-1] if minimize else np.sort(scores)
    horizon = 2_000
    ks = np.arange(1, horizon + 1)
    curve = tuning_curve(scores, ks, method=method, a=0.0, b=1.0, minimize=minimize)
    small = tuning_curve(scores, [1, 2], method=method, a=0.0, b=1.0, minimize=minimize)
    # Step curves (U, quantile curves and bands) take the scores' values exactly, so any target works.
    # The V-statistic and the mean bands only approach the best score (or b) as k grows; reaching it
    # would be a rounding accident, so those are checked on targets strictly inside.
    inner = [ordered[0], ordered[10], ordered[30], ordered[-2], 0.5]
    limits = [ordered[-1], 0.0, 1.0, 2.0 if not minimize else -1.0]
    for target in inner + limits:
        got = budgets_to_reach(small, float(target))
        assert set(got) == {"v", "u", "median", "median_lower", "median_upper", "mean_lower", "mean_upper"}
        for key, value in got.items():
            if target in limits and key in ("v", "mean_lower", "mean_upper"):
                continue
            series = getattr(curve, key)[: scores.size if key == "u" else horizon]
            scan = _first_reached(series, target, minimize)
            if scan is not None:
                assert value == scan, (key, target)
            else:  # not reached within the scan: never, or later
                assert value is None or value > series.size, (key, target)


def test_budgets_to_reach_without_support_bounds_has_no_mean_keys():
    curve = tuning_curve([0.2, 0.5, 0.7, 0.9], [1, 2])
    got = budgets_to_reach(curve, 0.7)
    assert set(got) == {"v", "u", "median", "median_lower", "median_upper"}
    assert got["median"] == 2 and got["u"] == 2
    assert got["median_upper"] == 1
    assert budgets_to_reach(curve, 5.0)["v"] is None


# --- TuningCurve.to_dict and failure policies ----------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("bounded", [False, True])
def test_to_dict_is_json_serialisable(method, bounded):
    scores = [0.71, 0.80, 0.76, 0.79, 0.62, 0.77, 0.80]
    support = {"a": 0.0, "b": 1.0} if bounded else {}
    curve = tuning_curve(scores, [1, 2, 3.5, 10], method=method, runtimes=[60.0] * 7, **support)
    out = curve.to_dict()
    text = json.dumps(out, allow_nan=False)
    assert json.loads(text) == out
    required = {"n", "k", "v", "u", "median", "median_lower", "median_upper", "mean_lower", "mean_upper",
                "method", "confidence", "critical_coverage"}
    assert required <= set(out)
    assert out["n"] == 7 and out["k"] == [1.0, 2.0, 3.5, 10.0]
    assert out["method"] == method and out["confidence"] == 0.8
    if method.startswith("ld"):
        assert out["critical_coverage"] == curve.band.critical_coverage > 0.8
    else:
        assert out["critical_coverage"] is None
    assert out["u"][2] is None and out["u"][3] is None  # undefined for k = 3.5 and k > n
    if bounded:
        assert len(out["mean_lower"]) == len(out["mean_upper"]) == 4
        assert out["median_upper"][-1] == 1.0
    else:
        assert out["mean_lower"] is None and out["mean_upper"] is None
        assert out["median_upper"][-1] is None  # the trivial band +inf
    np.testing.assert_allclose(curve.cost("hours"), [1 / 60, 2 / 60, 3.5 / 60, 10 / 60], rtol=1e-12)
    assert out["cost"] == pytest.approx([1 / 60, 2 / 60, 3.5 / 60, 10 / 60], rel=1e-12)


def test_failed_trials_raise_by_default():
    with pytest.raises(ValueError, match="failure policy"):
        tuning_curve([0.5, math.nan, 0.7], a=0.0, b=1.0)
    with pytest.raises(ValueError):
        tuning_curve([0.5, math.inf, 0.7], failure_policy="error")
    with pytest.raises(ValueError):
        tuning_curve([0.5, math.nan], failure_policy="skip")
    with pytest.raises(ValueError):
        tuning_curve([math.nan, math.nan], failure_policy="worst")


@pytest.mark.parametrize("minimize", [False, True])
def test_worst_failure_policy_counts_failures_as_the_bound(minimize):
    scores = [0.5, math.nan, 0.7, -math.inf, 0.6]
    curve = tuning_curve(scores, [1, 2], a=0.0, b=1.0, minimize=minimize, failure_policy="worst")
    worst = 1.0 if minimize else 0.0
    expected = tuning_curve([0.5, worst, 0.7, worst, 0.6], [1, 2], a=0.0, b=1.0, minimize=minimize)
    np.testing.assert_array_equal(curve.median, expected.median)
    np.testing.assert_array_equal(curve.v, expected.v)
    out = curve.to_dict()
    assert (out["n"], out["n_trials"], out["n_failed"], out["failure_policy"]) == (5, 5, 2, "worst")
    assert curve.failures.failed == (1, 3) and curve.failures.replacement == worst
    # Without a known bound, the worst finished score stands in.
    unbounded = tuning_curve(scores, [1], minimize=minimize, failure_policy="worst")
    assert unbounded.failures.replacement == (0.7 if minimize else 0.5)


def test_exclude_failure_policy_drops_failures_with_a_warning():
    scores = [0.5, math.nan, 0.7, 0.6]
    with pytest.warns(UserWarning, match="conditional on success"):
        curve = tuning_curve(scores, [1, 2], a=0.0, b=1.0, failure_policy="exclude")
    expected = tuning_curve([0.5, 0.7, 0.6], [1, 2], a=0.0, b=1.0)
    np.testing.assert_array_equal(curve.median_upper, expected.median_upper)
    out = curve.to_dict()
    assert (out["n"], out["n_trials"], out["n_failed"], out["failure_policy"]) == (3, 4, 1, "exclude")
    json.dumps(out, allow_nan=False)


# --- the band functions called directly ----------------------------------------------------------


def test_band_functions_default_to_budgets_one_to_n_and_validate():
    band = cdf_band([0.3, 0.1, 0.2, 0.4], 0.8, "ks", a=0.0, b=1.0)
    lower, point, upper = quantile_tuning_curve(band)
    assert lower.shape == point.shape == upper.shape == (4,)
    lower, point, upper = mean_tuning_curve(band)
    assert lower.shape == (4,)
    assert point[0] == pytest.approx(0.25, abs=1e-15)  # the mean of the scores
    with pytest.raises(ValueError):
        quantile_tuning_curve(band, [1.0], quantile=1.0)
    with pytest.raises(ValueError):
        quantile_tuning_curve(band, [0.5])
    for bad in ([], [0.1, math.nan], [[0.1, 0.2]]):
        with pytest.raises(ValueError):
            cdf_band(bad)
    with pytest.raises(ValueError):
        cdf_band([0.1, 0.2], method="bootstrap")
    with pytest.raises(ValueError):
        cdf_band([0.1, 0.2], confidence=1.0)
    with pytest.raises(ValueError):
        cdf_band([0.1, 0.2], a=0.15)
    with pytest.raises(ValueError):
        cdf_band([0.1, 0.2], b=0.15)


@pytest.mark.parametrize("guess", [1, 2, 7, 50, 1000])
@pytest.mark.parametrize("answer", [1, 2, 3, 17, 64, 65, 999, 1000])
def test_smallest_integer_where_finds_the_threshold_from_any_guess(guess, answer):
    from showwork.statistics._search import smallest_integer_where

    calls = []

    def holds(n):
        calls.append(n)
        return n >= answer

    assert smallest_integer_where(holds, guess, limit=1000) == answer
    assert len(calls) <= 40
    assert smallest_integer_where(lambda n: False, guess, limit=1000) is None


def test_compare_curves_refuses_bands_of_different_kinds():
    rng = np.random.default_rng(11)
    a = tuning_curve(rng.normal(size=30), [1, 2, 3], confidence=0.8, name="a")
    b = tuning_curve(rng.normal(size=30), [1, 2, 3], confidence=0.9, name="b")
    with pytest.raises(ValueError, match="different bands"):
        compare_curves([a, b])


@PROPERTY
@given(
    steps=st.lists(st.floats(0.0, 5.0, allow_nan=False), min_size=1, max_size=300),
    target=st.floats(-1.0, 400.0, allow_nan=False),
    guess=st.integers(1, 400),
)
def test_interpolated_search_agrees_with_bisection(steps, target, guess):
    # Any non-decreasing value with value(0) = 0 (flat stretches included): the interpolating
    # search that trials_needed uses must find the same smallest n as plain galloping bisection.
    from showwork.statistics._search import smallest_integer_reaching, smallest_integer_where

    values = np.concatenate([[0.0], np.cumsum(steps)])
    limit = len(steps)

    def value(n: int) -> float:
        return float(values[n])

    expected = smallest_integer_where(lambda n: value(n) >= target, guess=guess, limit=limit)
    assert smallest_integer_reaching(value, target, guess=guess, limit=limit) == expected


def test_trials_needed_is_exact_at_large_budgets():
    n = trials_needed(120, 0.8, "ld-hd")
    assert informative_budget(n, 0.8, "ld-hd") >= 120 > informative_budget(n - 1, 0.8, "ld-hd")


# --- BandSpec: the band settings in one value (issue 18, item 6) -------------------------------

SPEC_SCORES = [0.71, 0.80, 0.76, 0.79, 0.62, 0.77, 0.80, 0.55]


@pytest.mark.parametrize(
    "settings_, message",
    [
        ({"confidence": 1.0}, r"confidence must be strictly between 0 and 1 \(got 1.0\)"),
        ({"confidence": True}, r"confidence must be strictly between 0 and 1 \(got True\)"),
        ({"method": "bootstrap"}, r"method must be one of ld-hd, ld-et, ks, dkw \(got 'bootstrap'\)"),
        ({"quantile": 0.0}, r"quantile must be strictly between 0 and 1 \(got 0.0\)"),
        ({"quantile": math.nan}, r"quantile must be strictly between 0 and 1 \(got nan\)"),
        ({"quantile": "0.5"}, r"quantile must be strictly between 0 and 1 \(got '0.5'\)"),
        ({"a": math.nan}, r"support bounds a and b must be numbers, not NaN"),
        ({"b": None}, r"support bounds a and b must be numbers, not NaN"),
    ],
)
def test_band_spec_refuses_what_the_loose_keywords_refuse_with_the_same_message(settings_, message):
    from showwork.statistics import ArgumentError, BandSpec

    with pytest.raises(ArgumentError, match=message):
        BandSpec(**settings_)
    if settings_.get("b", 0) is not None:  # b=None is the loose keywords' "default", not an error there
        with pytest.raises(ArgumentError, match=message):
            tuning_curve(SPEC_SCORES, **settings_)


def test_band_spec_is_frozen_hashable_and_holds_plain_floats():
    import dataclasses

    from showwork.statistics import BandSpec

    spec = BandSpec(confidence=np.float32(0.75), quantile=np.float64(0.25), a=np.int64(0), b=1)
    assert (spec.confidence, spec.quantile, spec.a, spec.b) == (0.75, 0.25, 0.0, 1.0)
    assert all(type(getattr(spec, name)) is float for name in ("confidence", "quantile", "a", "b"))
    assert hash(spec) == hash(BandSpec(confidence=0.75, quantile=0.25, a=0.0, b=1.0))
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.confidence = 0.9


@pytest.mark.parametrize("method", METHODS)
def test_bands_keyword_gives_what_the_loose_keywords_give(method):
    from showwork.statistics import BandSpec

    loose = dict(confidence=0.9, method=method, quantile=0.25, a=0.0, b=1.0)
    spec = BandSpec(**loose)
    by_spec, by_keywords = tuning_curve(SPEC_SCORES, bands=spec), tuning_curve(SPEC_SCORES, **loose)
    assert by_spec.bands == by_keywords.bands == spec
    for key in ("v", "u", "quantile_curve", "quantile_curve_lower", "quantile_curve_upper", "mean_lower", "mean_upper"):
        np.testing.assert_array_equal(getattr(by_spec, key), getattr(by_keywords, key))
    band = cdf_band(SPEC_SCORES, bands=spec)
    positional = cdf_band(SPEC_SCORES, 0.9, method, 0.0, 1.0)
    np.testing.assert_array_equal(band.lower, positional.lower)
    np.testing.assert_array_equal(band.upper, positional.upper)
    assert (band.a, band.b, band.method, band.confidence) == (0.0, 1.0, method, 0.9)
    # The planning functions read confidence, method and quantile; the support does not matter there.
    assert informative_budget(20, bands=spec) == informative_budget(20, 0.9, method, 0.25)
    assert informative_budget(20, minimize=True, bands=spec) == informative_budget(20, 0.9, method, 0.25, True)
    if method != "dkw":  # DKW at 0.9 reaches k = 3 only with very many trials; the others quickly
        assert trials_needed(3, bands=spec) == trials_needed(3, 0.9, method, 0.25)


def test_defaults_are_the_band_spec_defaults():
    from showwork.statistics import BandSpec

    curve = tuning_curve(SPEC_SCORES)
    assert curve.bands == BandSpec() == BandSpec(0.8, "ld-hd", 0.5, -math.inf, math.inf)
    assert informative_budget(30) == informative_budget(30, bands=BandSpec())


@pytest.mark.parametrize(
    "call",
    [
        lambda spec: tuning_curve(SPEC_SCORES, bands=spec, confidence=0.9),
        lambda spec: tuning_curve(SPEC_SCORES, bands=spec, a=0.0),
        lambda spec: cdf_band(SPEC_SCORES, 0.9, bands=spec),
        lambda spec: informative_budget(20, method="ks", bands=spec),
        lambda spec: trials_needed(5, quantile=0.25, bands=spec),
    ],
)
def test_bands_and_a_loose_keyword_together_are_refused(call):
    from showwork.statistics import ArgumentError, BandSpec

    with pytest.raises(ArgumentError, match=r"give bands= or \w+=, not both"):
        call(BandSpec())


def test_bands_must_be_a_band_spec():
    from showwork.statistics import ArgumentError

    with pytest.raises(ArgumentError, match=r"bands must be a BandSpec \(got dict\)"):
        tuning_curve(SPEC_SCORES, bands={"confidence": 0.9})


def test_deprecated_q_keyword_still_works_and_is_refused_beside_bands():
    from showwork.statistics import ArgumentError, BandSpec

    with pytest.warns(DeprecationWarning, match=r"q=\.\.\.\) is deprecated"):
        assert informative_budget(20, q=0.25) == informative_budget(20, bands=BandSpec(quantile=0.25))
    with pytest.warns(DeprecationWarning), pytest.raises(ArgumentError, match="not both"):
        trials_needed(5, q=0.25, bands=BandSpec())


@pytest.mark.parametrize("quantile", [0.25, 0.5])
def test_quantile_curve_names_and_their_median_aliases(quantile):
    curve = tuning_curve(SPEC_SCORES, [1, 2, 4], quantile=quantile, a=0.0, b=1.0)
    lower, point, upper = quantile_tuning_curve(curve.band, [1, 2, 4], quantile)
    np.testing.assert_array_equal(curve.quantile_curve, point)
    np.testing.assert_array_equal(curve.quantile_curve_lower, lower)
    np.testing.assert_array_equal(curve.quantile_curve_upper, upper)
    assert curve.median is curve.quantile_curve
    assert curve.median_lower is curve.quantile_curve_lower and curve.median_upper is curve.quantile_curve_upper
    part = curve.at([2])
    assert part.median is part.quantile_curve and part.quantile_curve.tolist() == [point[1]]
    out = curve.to_dict()  # the JSON (curve --json, report.json) keeps the old keys for one release
    for new, old in (("quantile_curve", "median"), ("quantile_curve_lower", "median_lower"),
                     ("quantile_curve_upper", "median_upper")):
        assert out[new] == out[old] == [float(x) for x in getattr(curve, new)]


def test_a_probability_argument_is_checked_in_one_place_with_one_message(capsys):
    """Issue 25 item 4: 'strictly between 0 and 1' was checked in three places with three messages."""
    from showwork.cli import main
    from showwork.statistics import BandSpec, bootstrap_interval, false_strong_bound
    from showwork.statistics.critical_levels import ld_critical_coverage
    from showwork.statistics.errors import ArgumentError, check_probability

    expected = "confidence must be strictly between 0 and 1 (got 1.5)."
    for call in (lambda: BandSpec(confidence=1.5), lambda: false_strong_bound(1.5),
                 lambda: bootstrap_interval([0.1, 0.2, 0.3], [1], confidence=1.5), lambda: ld_critical_coverage(5, 1.5),
                 lambda: check_probability(1.5, "confidence")):
        with pytest.raises(ArgumentError) as raised:
            call()
        assert str(raised.value) == expected
    for bad in (0.0, 1.0, math.nan, True, "0.5", None):
        with pytest.raises(ArgumentError, match=r"^quantile must be strictly between 0 and 1 \(got "):
            check_probability(bad, "quantile")
    assert check_probability(0.25, "q") == 0.25 and type(check_probability(np.float32(0.5), "q")) is float
    with pytest.raises(SystemExit) as exited:
        main(["curve", "x.csv", "--score", "acc", "--confidence", "1.5"])
    assert exited.value.code == 2
    assert "--confidence must be strictly between 0 and 1 (got 1.5)" in capsys.readouterr().err
