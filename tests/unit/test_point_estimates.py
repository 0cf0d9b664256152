"""Point estimates (V, U, running max, Dodge's std), the bootstrap baseline, failures and cost.

References are computed independently of the implementation: exact rational arithmetic
(``fractions.Fraction``, ``math.comb``) for integer budgets, 50-digit ``decimal`` arithmetic for
real-valued budgets, and closed forms on a uniform grid for B = 10^6.
"""

from __future__ import annotations

import math
import warnings
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from showwork.statistics import (
    FAILURE_POLICIES,
    apply_failure_policy,
    best_of_k_std,
    bootstrap_interval,
    budget_cost,
    budget_for_cost,
    mean_runtime,
    running_max,
    u_statistic,
    v_statistic,
)

RTOL = 1e-12
SIZES = [1, 2, 3, 10, 57, 200]


def tied_scores(size: int, seed: int) -> np.ndarray:
    """Positive random floats with ties: ``size`` draws from a pool of about ``size / 3`` values."""
    rng = np.random.default_rng(seed)
    pool = rng.uniform(0.1, 10.0, size=max(1, size // 3))
    return rng.choice(pool, size=size)


def worst_to_best(scores: np.ndarray, minimize: bool) -> list[Fraction]:
    """The scores as exact fractions, ordered from worst to best."""
    return [Fraction(x) for x in sorted(scores.tolist(), reverse=minimize)]


def exact_v(ordered: list[Fraction], k: int) -> Fraction:
    """Dodge's V_k = sum_j (j^k - (j-1)^k) / B^k v_(j), exactly."""
    size = len(ordered)
    total = sum(((j**k - (j - 1) ** k) * v for j, v in enumerate(ordered, start=1)), Fraction(0))
    return total / size**k


def exact_u(ordered: list[Fraction], k: int) -> Fraction:
    """Tang's U_k = sum_j C(j-1, k-1) / C(B, k) v_(j), exactly."""
    size = len(ordered)
    total = sum((math.comb(j - 1, k - 1) * v for j, v in enumerate(ordered, start=1)), Fraction(0))
    return total / math.comb(size, k)


def relative_errors(got: np.ndarray, exact: list[Fraction]) -> np.ndarray:
    return np.array([float(abs(Fraction(g) - e) / abs(e)) for g, e in zip(got.tolist(), exact)])


# --- V and U against exact arithmetic ---------------------------------------------------------


@pytest.mark.parametrize("minimize", [False, True], ids=["maximize", "minimize"])
@pytest.mark.parametrize("size", SIZES)
def test_v_statistic_matches_exact_rational_arithmetic(size, minimize):
    scores = tied_scores(size, seed=size)
    ordered = worst_to_best(scores, minimize)
    ks = np.arange(1, size + 1)
    exact = [exact_v(ordered, int(k)) for k in ks]
    errors = relative_errors(v_statistic(scores, ks, minimize=minimize), exact)
    assert errors.max() <= RTOL, f"worst k={ks[errors.argmax()]}, relative error {errors.max():.3g}"


@pytest.mark.parametrize("minimize", [False, True], ids=["maximize", "minimize"])
@pytest.mark.parametrize("size", SIZES)
def test_u_statistic_matches_exact_rational_arithmetic(size, minimize):
    scores = tied_scores(size, seed=1000 + size)
    ordered = worst_to_best(scores, minimize)
    ks = np.arange(1, size + 1)
    exact = [exact_u(ordered, int(k)) for k in ks]
    errors = relative_errors(u_statistic(scores, ks, minimize=minimize), exact)
    assert errors.max() <= RTOL, f"worst k={ks[errors.argmax()]}, relative error {errors.max():.3g}"


def decimal_v(ordered: list[float], k: float) -> Decimal:
    """V_k for real k in 50-digit decimal arithmetic: ((j/B)^k - ((j-1)/B)^k) v_(j) summed."""
    with localcontext() as ctx:
        ctx.prec = 50
        size = Decimal(len(ordered))
        power = Decimal(k)  # exact: k is a float
        total = Decimal(0)
        prev = Decimal(0)
        for j, v in enumerate(ordered, start=1):
            top = (Decimal(j) / size) ** power
            total += (top - prev) * Decimal(v)
            prev = top
        return total


@pytest.mark.parametrize("minimize", [False, True], ids=["maximize", "minimize"])
@pytest.mark.parametrize("size", SIZES)
def test_v_statistic_at_real_budgets_matches_50_digit_decimal(size, minimize):
    scores = tied_scores(size, seed=2000 + size)
    ordered = sorted(scores.tolist(), reverse=minimize)
    ks = [1.0, 1.5, 2.25, math.e, 7.3, 56.75, 199.5, 1234.567]
    got = v_statistic(scores, ks, minimize=minimize)
    for k, value in zip(ks, got.tolist()):
        reference = decimal_v(ordered, k)
        error = abs(Decimal(value) - reference) / abs(reference)
        assert error <= Decimal(RTOL), f"k={k}: got {value!r}, reference {reference}"


def test_v_statistic_at_integer_valued_real_budget_equals_integer_budget():
    scores = tied_scores(57, seed=3)
    np.testing.assert_array_equal(v_statistic(scores, [5.0, 12.0]), v_statistic(scores, [5, 12]))


# --- stability at B = 10^6 ---------------------------------------------------------------------

BIG = 10**6
BIG_KS = [1, 2, 10, 1000, 10**5, 10**6]


@pytest.mark.parametrize("minimize", [False, True], ids=["maximize", "minimize"])
def test_large_sample_estimates_are_finite_bounded_and_monotone(minimize):
    scores = np.random.default_rng(7).normal(0.8, 0.05, size=BIG)
    for statistic in (v_statistic, u_statistic):
        values = statistic(scores, BIG_KS, minimize=minimize)
        assert np.all(np.isfinite(values)), statistic.__name__
        assert np.all((values >= scores.min()) & (values <= scores.max())), statistic.__name__
        steps = np.diff(values)
        assert np.all(-steps >= 0 if minimize else steps >= 0), f"{statistic.__name__} not monotone: {values}"
    u_first = u_statistic(scores, [1], minimize=minimize)[0]
    assert u_first == pytest.approx(math.fsum(scores.tolist()) / BIG, rel=RTOL)


def test_u_statistic_on_uniform_grid_matches_closed_form():
    # Scores j/B, j = 1..B: the best of k draws without replacement has mean index k(B+1)/(k+1).
    scores = np.arange(1, BIG + 1) / BIG
    got = u_statistic(scores, BIG_KS)
    expected = np.array([float(Fraction(k * (BIG + 1), (k + 1) * BIG)) for k in BIG_KS])
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=0)


def grid_v_reference(size: int, k: int) -> Decimal:
    """V_k for scores j/B, j = 1..B, to ~40 digits: ``1 - (1/B) sum_{j<B} (j/B)^k``.

    The sum runs from the top down and stops once the bound ``J (J/B)^k`` on everything below
    index J is under 1e-45.
    """
    with localcontext() as ctx:
        ctx.prec = 50
        b = Decimal(size)
        total = Decimal(0)
        for j in range(size - 1, 0, -1):
            term = (Decimal(j) / b) ** k
            total += term
            if Decimal(j) * term < Decimal("1e-45"):
                break
        return 1 - total / b


@pytest.mark.parametrize("k", [10**5, 10**6])
def test_v_statistic_on_uniform_grid_at_large_budgets_matches_50_digit_decimal(k):
    scores = np.arange(1, BIG + 1) / BIG
    got = v_statistic(scores, [k])[0]
    reference = grid_v_reference(BIG, k)
    assert abs(Decimal(got) - reference) / reference <= Decimal(RTOL), (got, reference)


def test_v_statistic_on_uniform_grid_at_small_budgets_matches_closed_form():
    scores = np.arange(1, BIG + 1) / BIG
    # sum_{j<B} j = (B-1)B/2 and sum_{j<B} j^2 = (B-1)B(2B-1)/6.
    expected = [
        1 - Fraction((BIG - 1) * BIG // 2, BIG**2),
        1 - Fraction((BIG - 1) * BIG * (2 * BIG - 1) // 6, BIG**3),
    ]
    np.testing.assert_allclose(v_statistic(scores, [1, 2]), [float(e) for e in expected], rtol=RTOL, atol=0)


@pytest.mark.parametrize("minimize", [False, True], ids=["maximize", "minimize"])
def test_v_statistic_with_heavy_ties_at_large_sample_matches_50_digit_decimal(minimize):
    # Ten distinct values with large multiplicities: V_k = sum_i (F_i^k - F_{i-1}^k) x_i over the
    # distinct values, F_i the fraction of scores at or below (above, if minimizing) x_i.
    rng = np.random.default_rng(11)
    values = np.sort(rng.uniform(0.2, 0.9, size=10))
    counts = rng.multinomial(BIG, np.full(10, 0.1))
    scores = rng.permutation(np.repeat(values, counts))
    ordered_values = values[::-1] if minimize else values
    ordered_counts = counts[::-1] if minimize else counts
    got = v_statistic(scores, BIG_KS, minimize=minimize)
    with localcontext() as ctx:
        ctx.prec = 50
        for k, value in zip(BIG_KS, got.tolist()):
            reference, below, prev = Decimal(0), 0, Decimal(0)
            for x, c in zip(ordered_values.tolist(), ordered_counts.tolist()):
                below += c
                top = (Decimal(below) / BIG) ** k
                reference += (top - prev) * Decimal(x)
                prev = top
            assert abs(Decimal(value) - reference) / reference <= Decimal(RTOL), (k, value, reference)


# --- properties -----------------------------------------------------------------------------------

finite_scores = arrays(
    np.float64,
    st.integers(1, 60),
    elements=st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False),
)


@settings(max_examples=60, deadline=None)
@given(scores=finite_scores)
def test_minimize_equals_negation_trick(scores):
    ks = np.arange(1, scores.size + 1)
    scale = max(1.0, float(np.abs(scores).max()))
    # Mathematically exact identities; the tolerance only absorbs a BLAS dot product that may sum
    # in a different order for differently aligned arrays.
    close = {"rtol": 1e-14, "atol": 1e-14 * scale}
    np.testing.assert_allclose(v_statistic(-scores, ks), -v_statistic(scores, ks, minimize=True), **close)
    np.testing.assert_allclose(u_statistic(-scores, ks), -u_statistic(scores, ks, minimize=True), **close)
    np.testing.assert_allclose(best_of_k_std(-scores, ks), best_of_k_std(scores, ks, minimize=True), **close)
    np.testing.assert_array_equal(running_max(-scores, ks), -running_max(scores, ks, minimize=True))


@settings(max_examples=60, deadline=None)
@given(scores=finite_scores)
def test_u_is_at_least_v_and_both_lie_between_min_and_max(scores):
    # C(j,k)/C(B,k) <= (j/B)^k: the best of k without replacement dominates the best with it.
    ks = np.arange(1, scores.size + 1)
    v, u = v_statistic(scores, ks), u_statistic(scores, ks)
    slack = 1e-12 * max(1.0, float(np.abs(scores).max()))
    assert np.all(u >= v - slack)
    assert np.all(v >= scores.min() - slack) and np.all(u <= scores.max() + slack)
    assert u[-1] == scores.max()
    assert v[0] == pytest.approx(u[0], rel=1e-12, abs=slack)


def test_u_statistic_is_nan_outside_integer_budgets_up_to_b():
    scores = tied_scores(10, seed=5)
    got = u_statistic(scores, [1, 2.5, 10, 11, 1000])
    assert np.isnan(got[[1, 3, 4]]).all()
    assert np.isfinite(got[[0, 2]]).all()
    assert got[2] == scores.max()


def test_docstring_examples():
    assert v_statistic([0.1, 0.5, 0.3], k=[1, 3]).round(4).tolist() == [0.3, 0.4333]
    got = u_statistic([0.1, 0.5, 0.3], k=[1, 2, 3, 4]).round(4)
    np.testing.assert_array_equal(got, [0.3, 0.4333, 0.5, np.nan])


# --- running max and Dodge's std -------------------------------------------------------------------


@pytest.mark.parametrize("minimize", [False, True], ids=["maximize", "minimize"])
def test_running_max_follows_trial_order(minimize):
    scores = np.array([0.3, 0.1, 0.5, 0.2, 0.5, 0.9, 0.0])
    better = min if minimize else max
    expected = [better(scores[:k].tolist()) for k in range(1, scores.size + 1)]
    np.testing.assert_array_equal(running_max(scores, minimize=minimize), expected)


def test_running_max_is_nan_for_non_integer_or_too_large_budgets():
    got = running_max([0.3, 0.1, 0.5], k=[1, 1.5, 3, 4])
    np.testing.assert_array_equal(got, [0.3, np.nan, 0.5, np.nan])


def exact_best_of_k_std(ordered: list[Fraction], k: int) -> float:
    size = len(ordered)
    weights = [Fraction(j**k - (j - 1) ** k, size**k) for j in range(1, size + 1)]
    mean = sum((w * v for w, v in zip(weights, ordered)), Fraction(0))
    variance = sum((w * (v - mean) ** 2 for w, v in zip(weights, ordered)), Fraction(0))
    return math.sqrt(variance)


@pytest.mark.parametrize("minimize", [False, True], ids=["maximize", "minimize"])
@pytest.mark.parametrize("size", [1, 2, 3, 10, 57])
def test_best_of_k_std_matches_exact_formula(size, minimize):
    scores = tied_scores(size, seed=4000 + size)
    ordered = worst_to_best(scores, minimize)
    ks = np.arange(1, size + 1)
    expected = [exact_best_of_k_std(ordered, int(k)) for k in ks]
    # Two-pass weighted variance: relative error ~ eps * (value / std), hence the absolute term.
    np.testing.assert_allclose(best_of_k_std(scores, ks, minimize=minimize), expected, rtol=1e-9, atol=1e-12)


def test_best_of_k_std_at_k1_is_population_std():
    scores = tied_scores(57, seed=9)
    assert best_of_k_std(scores, [1])[0] == pytest.approx(np.std(scores), rel=1e-12)


def test_best_of_k_std_of_constant_scores_is_zero():
    np.testing.assert_array_equal(best_of_k_std([0.7] * 5, [1, 2, 5, 7.5]), 0.0)


# --- validation -------------------------------------------------------------------------------------

ESTIMATORS = [v_statistic, u_statistic, running_max, best_of_k_std]


@pytest.mark.parametrize("statistic", ESTIMATORS, ids=lambda f: f.__name__)
@pytest.mark.parametrize(
    ("scores", "match"),
    [
        ([], "non-empty"),
        ([[0.1, 0.2], [0.3, 0.4]], "1-D"),
        ([0.1, np.nan, 0.3], "NaN or infinite"),
        ([0.1, np.inf], "NaN or infinite"),
    ],
    ids=["empty", "2d", "nan", "inf"],
)
def test_invalid_scores_are_rejected(statistic, scores, match):
    with pytest.raises(ValueError, match=match):
        statistic(scores)


@pytest.mark.parametrize("statistic", ESTIMATORS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("k", [0, 0.5, -3, [1, 2, 0.99], np.nan, np.inf, [[1, 2]]], ids=str)
def test_invalid_budgets_are_rejected(statistic, k):
    with pytest.raises(ValueError, match="k"):
        statistic([0.1, 0.2, 0.3], k)


# --- the bootstrap baseline -------------------------------------------------------------------------


@pytest.fixture
def sample():
    return np.random.default_rng(2024).beta(8, 2, size=50)


@pytest.mark.parametrize("statistic", ["v", "u"])
def test_bootstrap_is_deterministic_given_the_seed(sample, statistic):
    first = bootstrap_interval(sample, statistic=statistic, n_resamples=500, seed=3)
    second = bootstrap_interval(sample, statistic=statistic, n_resamples=500, seed=3)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)


def test_bootstrap_differs_between_seeds(sample):
    lower0, upper0 = bootstrap_interval(sample, k=[1, 5, 20], n_resamples=500, seed=0)
    lower1, upper1 = bootstrap_interval(sample, k=[1, 5, 20], n_resamples=500, seed=1)
    assert not (np.array_equal(lower0, lower1) and np.array_equal(upper0, upper1))


@pytest.mark.parametrize("minimize", [False, True], ids=["maximize", "minimize"])
@pytest.mark.parametrize("statistic", ["v", "u"])
def test_bootstrap_lower_is_below_upper_and_contains_the_mean_at_k1(sample, statistic, minimize):
    ks = np.arange(1, sample.size + 1)
    lower, upper = bootstrap_interval(sample, ks, statistic=statistic, minimize=minimize, n_resamples=1000)
    assert np.all(lower <= upper)
    assert np.all((lower >= sample.min()) & (upper <= sample.max()))
    point = v_statistic(sample, [1], minimize=minimize)[0]
    assert lower[0] <= point <= upper[0]


def test_bootstrap_u_is_nan_beyond_the_sample_and_v_is_not(sample):
    ks = [1, 50, 51, 75.5]
    lower, upper = bootstrap_interval(sample, ks, statistic="u", n_resamples=200)
    assert np.isnan(lower[2:]).all() and np.isnan(upper[2:]).all()
    assert np.isfinite(lower[:2]).all() and np.isfinite(upper[:2]).all()
    lower, upper = bootstrap_interval(sample, ks, statistic="v", n_resamples=200)
    assert np.isfinite(lower).all() and np.isfinite(upper).all()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"statistic": "w"}, "statistic"),
        ({"confidence": 1.0}, "confidence"),
        ({"confidence": 0.0}, "confidence"),
        ({"n_resamples": 0}, "n_resamples"),
    ],
)
def test_bootstrap_validation(sample, kwargs, match):
    with pytest.raises(ValueError, match=match):
        bootstrap_interval(sample, **kwargs)


# --- failures ---------------------------------------------------------------------------------------

RAW = [0.5, np.nan, 0.7, np.inf, 0.2, -np.inf]
FINISHED = [0.5, 0.7, 0.2]


def test_failure_policies_are_the_documented_three():
    assert FAILURE_POLICIES == ("error", "worst", "exclude")


def test_error_policy_refuses_and_names_the_first_failure():
    with pytest.raises(ValueError, match=r"3 of 6 trials .* \(the first is trial 2, counting from 1"):
        apply_failure_policy(RAW)


@pytest.mark.parametrize(
    ("minimize", "bounds", "expected"),
    [
        (False, {}, 0.2),  # worst finished score when maximizing
        (True, {}, 0.7),  # worst finished score when minimizing
        (False, {"a": 0.0, "b": 1.0}, 0.0),  # the lower support bound
        (True, {"a": 0.0, "b": 1.0}, 1.0),  # the upper support bound
        (False, {"b": 1.0}, 0.2),  # an infinite a falls back to the worst finished score
        (True, {"a": 0.0}, 0.7),  # an infinite b falls back to the worst finished score
    ],
)
def test_worst_policy_replaces_failures_in_place(minimize, bounds, expected):
    scores, report = apply_failure_policy(RAW, "worst", minimize=minimize, **bounds)
    np.testing.assert_array_equal(scores, [0.5, expected, 0.7, expected, 0.2, expected])
    assert report.policy == "worst"
    assert report.n_trials == 6
    assert report.failed == (1, 3, 5)
    assert report.n_failed == 3
    assert report.replacement == expected
    assert "3 of 6 trials failed" in report.describe()
    assert repr(expected) in report.describe()


def test_exclude_policy_drops_failures_with_a_warning():
    with pytest.warns(UserWarning, match="excluding 3 failed trials of 6"):
        scores, report = apply_failure_policy(RAW, "exclude")
    np.testing.assert_array_equal(scores, FINISHED)
    assert report.failed == (1, 3, 5)
    assert report.replacement is None
    assert "conditional on success" in report.describe()


@pytest.mark.parametrize("policy", FAILURE_POLICIES)
def test_no_failures_passes_scores_through_silently(policy):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scores, report = apply_failure_policy(FINISHED, policy)
    np.testing.assert_array_equal(scores, FINISHED)
    assert report.n_failed == 0 and report.n_trials == 3
    assert report.describe() == "3 trials, none failed"


@pytest.mark.parametrize("policy", FAILURE_POLICIES)
def test_all_failed_is_an_error_under_every_policy(policy):
    with pytest.raises(ValueError, match="all 3 trials failed"):
        apply_failure_policy([np.nan, np.inf, -np.inf], policy, a=0.0, b=1.0)


def test_unknown_failure_policy_is_rejected():
    with pytest.raises(ValueError, match="failure policy must be one of"):
        apply_failure_policy(FINISHED, "drop")


# --- cost ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("unit", "gpus", "seconds_per_unit"),
    [("seconds", 1.0, 1.0), ("minutes", 1.0, 60.0), ("hours", 1.0, 3600.0), ("gpu-hours", 4.0, 900.0)],
)
def test_budget_cost_units_and_round_trip(unit, gpus, seconds_per_unit):
    ks = np.array([1.0, 2.0, 10.0, 37.5, 1000.0])
    runtime = 123.4
    cost = budget_cost(ks, runtime, unit=unit, gpus_per_trial=gpus)
    np.testing.assert_allclose(cost, ks * runtime / seconds_per_unit, rtol=1e-15)
    np.testing.assert_allclose(budget_for_cost(cost, runtime, unit=unit, gpus_per_trial=gpus), ks, rtol=1e-14)


def test_budget_cost_docstring_examples():
    assert budget_cost([1, 10], 360.0, unit="hours").tolist() == [0.1, 1.0]
    assert budget_cost([10], 360.0, unit="gpu-hours", gpus_per_trial=0.5).tolist() == [0.5]


@pytest.mark.parametrize("function", [budget_cost, budget_for_cost])
def test_cost_validation(function):
    with pytest.raises(ValueError, match="unit must be one of"):
        function([1.0], 10.0, unit="days")
    with pytest.raises(ValueError, match="gpus_per_trial must be positive"):
        function([1.0], 10.0, unit="gpu-hours", gpus_per_trial=0.0)


@pytest.mark.parametrize("runtime", [0.0, -1.0, np.nan])
def test_budget_for_cost_needs_a_positive_runtime(runtime):
    with pytest.raises(ValueError, match="mean runtime must be positive"):
        budget_for_cost([1.0], runtime)


def test_mean_runtime_ignores_unknown_runtimes():
    assert mean_runtime([10.0, np.nan, 20.0, np.inf, 30.0]) == 20.0


@pytest.mark.parametrize(
    ("runtimes", "match"),
    [([np.nan, np.inf], "no finite runtime"), ([], "no finite runtime"), ([5.0, -1.0], "non-negative")],
)
def test_mean_runtime_validation(runtimes, match):
    with pytest.raises(ValueError, match=match):
        mean_runtime(runtimes)


# --- extreme finite scores (issue 14, item 12): no overflow, accuracy relative to the largest magnitude -----

extreme_scores = st.lists(
    st.one_of(
        st.floats(allow_nan=False, allow_infinity=False),  # the whole range: ±1.8e308, subnormals, -0.0
        st.sampled_from([1e308, -1e308, 1.7976931348623157e308, -1.7976931348623157e308, 5e-324, 0.5, 0.6]),
    ),
    min_size=1,
    max_size=8,
)


def scaled_fraction(x: Fraction, e: int) -> float:
    """``float(x / 2**e)``: an exact value as a float without overflowing."""
    return float(x / Fraction(2) ** e)


@settings(max_examples=300, deadline=None)
@given(values=extreme_scores, minimize=st.booleans())
def test_every_statistic_is_finite_and_matches_exact_arithmetic_on_extreme_finite_scores(values, minimize):
    scores = np.array(values)
    ordered = worst_to_best(scores, minimize)
    size = len(ordered)
    ks = np.arange(1, size + 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an overflow warning fails the test
        v, u = v_statistic(scores, ks, minimize=minimize), u_statistic(scores, ks, minimize=minimize)
        std, best = best_of_k_std(scores, ks, minimize=minimize), running_max(scores, ks, minimize=minimize)
    for series in (v, u, std, best):
        assert np.all(np.isfinite(series))
    assert np.all((v >= scores.min()) & (v <= scores.max()) & (u >= scores.min()) & (u <= scores.max()))
    # Accuracy relative to the largest magnitude 2**e: weights carry ~1e-14 relative error.
    e = max(math.frexp(float(np.abs(scores).max()))[1], -1000)
    for k in ks.tolist():
        assert abs(scaled_fraction(Fraction(v[k - 1]) - exact_v(ordered, k), e)) <= 1e-13, (k, v[k - 1])
        assert abs(scaled_fraction(Fraction(u[k - 1]) - exact_u(ordered, k), e)) <= 1e-13, (k, u[k - 1])
        weights = [Fraction(j**k - (j - 1) ** k, size**k) for j in range(1, size + 1)]
        mean = sum((w * x for w, x in zip(weights, ordered)), Fraction(0))
        variance = sum((w * (x - mean) ** 2 for w, x in zip(weights, ordered)), Fraction(0))
        exact_std = math.sqrt(float(variance / Fraction(4) ** e))  # in units of 2**e
        # A two-pass variance of values within 2**e has absolute error ~eps; its square root ~sqrt(eps).
        assert abs(math.ldexp(std[k - 1], -e) - exact_std) <= 1e-7, (k, std[k - 1])
    # The mean (k = 1) is summed exactly: correctly rounded but for the final division.
    exact_mean = sum(map(Fraction, values), Fraction(0)) / size
    assert v[0] == u[0]
    assert abs(Fraction(v[0]) - exact_mean) <= abs(exact_mean) * Fraction(2) ** -52 + Fraction(2) ** (-1074 + 4)


def test_the_issue_example_of_huge_scores_gives_the_true_mean_and_no_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scores = [1e308, -1e308, 0.5, 0.6]
        assert v_statistic(scores, [1])[0] == 0.275 and u_statistic(scores, [1])[0] == 0.275  # was -4.99e291
        std = best_of_k_std(scores, [1, 2, 4])  # the squares overflowed to inf
        assert std[0] == pytest.approx(1e308 / math.sqrt(2), rel=1e-12)  # the population std
        assert np.all(np.isfinite(std))
        assert mean_runtime([1e308, 1e308, 1e308]) == 1e308  # the sum overflowed


@given(value=st.floats(allow_nan=False, allow_infinity=False), size=st.integers(1, 40))
@example(value=0.7, size=5)  # gave 1.1e-16: the weights' sum is not exactly 1
@example(value=1e308, size=3)
def test_best_of_k_std_of_equal_scores_is_exactly_zero_at_every_magnitude(value, size):
    np.testing.assert_array_equal(best_of_k_std([value] * size, [1, 2, 3.5, size + 10]), 0.0)


LARGEST = float(np.finfo(float).max)


@settings(max_examples=120, deadline=None)
@given(
    values=st.lists(
        st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.sampled_from([LARGEST, -LARGEST, 1e308, -1e308, 0.5])),
        min_size=1,
        max_size=12,
    ),
    minimize=st.booleans(),
    method=st.sampled_from(["ld-hd", "ld-et", "ks", "dkw"]),
    bounded=st.booleans(),
)
def test_the_whole_tuning_curve_is_finite_and_ordered_for_extreme_finite_scores(values, minimize, method, bounded):
    """Every public statistic a curve is made of, at the float limit: no overflow warning, nothing infinite
    that the data bound, bands around their estimates (up to rounding relative to the largest magnitude)."""
    from showwork.statistics import bootstrap_interval, compare_curves, tuning_curve

    bounds = {"a": -LARGEST, "b": LARGEST} if bounded else {}
    scores = np.array(values)
    slack = 1e-12 * float(np.abs(scores).max())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an overflow (or invalid-value) warning fails the test
        curve = tuning_curve(scores, method=method, minimize=minimize, **bounds)
        other = tuning_curve(scores[::-1], method=method, minimize=minimize, name="other", **bounds)
        compare_curves([curve, other], "mean" if bounded else "median")
        lower, upper = bootstrap_interval(scores, [1, 2], n_resamples=50, minimize=minimize)
    for series in (curve.v, curve.u[np.isfinite(curve.u) | (curve.k > scores.size)], curve.v_std, curve.running_max,
                   curve.median, lower, upper):
        assert np.all(np.isfinite(series[~np.isnan(series)]))
    assert np.all((curve.median >= scores.min()) & (curve.median <= scores.max()))
    assert np.all(curve.median_lower <= curve.median) and np.all(curve.median <= curve.median_upper)
    if bounded:
        assert np.all(np.isfinite(curve.mean_lower)) and np.all(np.isfinite(curve.mean_upper))
        half = 0.5  # compared at half scale, so that the slack cannot overflow near the float limit
        assert np.all(half * curve.mean_lower <= half * curve.v + half * slack)
        assert np.all(half * curve.v <= half * curve.mean_upper + half * slack)


def test_bootstrap_intervals_at_the_float_limit_do_not_overflow():
    """A case the property test found in CI: the resampled weighted sums of DBL_MAX overflowed (the
    weights sum to 1 only up to rounding); now they are taken on scores scaled by a power of two."""
    from showwork.statistics import bootstrap_interval

    scores = [0.0] * 3 + [LARGEST] * 4
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for minimize in (False, True):
            lower, upper = bootstrap_interval(scores, [1, 2, 7], n_resamples=200, minimize=minimize)
            assert np.all(np.isfinite(lower)) and np.all(np.isfinite(upper))
            assert np.all((0.0 <= lower) & (lower <= upper) & (upper <= LARGEST))
        ordinary = bootstrap_interval([0.1, 0.5, 0.7, 0.65], [1, 2], n_resamples=200)
    scaled = bootstrap_interval(np.array([0.1, 0.5, 0.7, 0.65]) * 2.0**900, [1, 2], n_resamples=200)
    np.testing.assert_array_equal(np.ldexp(ordinary, 900), scaled)  # scaling by powers of two is exact
