"""Distributions: support and inclusive ends, moments and frequencies, JSON round trip, validation."""

import dataclasses
import json
import math
import subprocess
import sys
from typing import ClassVar

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from showwork.distributions import (
    DISTRIBUTION_ARGUMENTS,
    DISTRIBUTIONS,
    Categorical,
    Constant,
    DistributionError,
    IntNormal,
    IntTruncatedExponential,
    IntUniform,
    LogIntUniform,
    LogUniform,
    Normal,
    TruncatedExponential,
    Uniform,
    distribution_from_dict,
)
from showwork.errors import InputError, did_you_mean, show_value

N = 20_000
P_MIN = 1e-3  # fixed seeds: each goodness-of-fit test either always passes or always fails


def draws(dist, n=N, seed=0):
    rng = np.random.default_rng(seed)
    return [dist.sample(rng) for _ in range(n)]


EXAMPLES = [
    Uniform(0.05, 0.7),
    LogUniform(1e-6, 1e-3),
    IntUniform(16, 64),
    LogIntUniform(1, 1000),
    TruncatedExponential(0.001, 0.1, 1.0),
    Categorical(["nonstatic", "static", "rand"], [0.5, 0.4, 0.1]),
    Categorical([16, 32, 64]),
    Categorical([True, False, None, 1, 2.5, "x"]),
    Normal(0.0, 1.0),
    Normal(0.5, 0.2, low=0.0, high=1.0),
    Normal(0.0, 1.0, low=1.0),
    Constant(10),
    Constant("adam"),
    # issue 16: steps and the integer forms
    Uniform(0.0, 0.95, step=0.05),
    LogUniform(0.001, 0.1, step=0.001),
    TruncatedExponential(0.0, 1.0, 0.3, step=0.1),
    Normal(0.5, 0.2, step=0.1),
    Normal(0.5, 0.2, low=0.0, high=1.0, step=0.25),
    IntTruncatedExponential(16, 256, 64.0, step=16),
    IntTruncatedExponential(1, 10, 3.0),
    IntNormal(10, 3),
    IntNormal(10, 3, low=4, high=20, step=2),
]


# --- every distribution ----------------------------------------------------------------------


@pytest.mark.parametrize("dist", EXAMPLES, ids=repr)
def test_json_round_trip_is_exact(dist):
    text = json.dumps(dist.to_dict(), allow_nan=False)
    again = distribution_from_dict(json.loads(text))
    assert again == dist and type(again) is type(dist) and hash(again) == hash(dist)
    assert again.to_dict() == dist.to_dict()


@pytest.mark.parametrize("dist", EXAMPLES, ids=repr)
def test_samples_are_plain_python_values(dist):
    for value in draws(dist, 200):
        assert type(value) in (float, int, str, bool, type(None))
    json.dumps(draws(dist, 50), allow_nan=False)


@pytest.mark.parametrize("dist", EXAMPLES, ids=repr)
def test_describe_is_one_line_and_bounds_are_json(dist):
    assert dist.describe() and "\n" not in dist.describe()
    json.dumps(dist.bounds(), allow_nan=False)


def test_every_distribution_name_is_registered():
    assert set(DISTRIBUTIONS) == {
        "uniform", "loguniform", "int_uniform", "log_int_uniform", "truncated_exponential",
        "int_truncated_exponential", "categorical", "normal", "int_normal", "constant",
    }


def test_the_dict_form_is_derived_from_the_dataclass_fields():
    # issue 18: no hand-written key table and no to_dict per class; the fields are the one declaration
    assert Normal.arguments() == (("mean", "std"), ("low", "high", "step"))
    assert IntTruncatedExponential.arguments() == (("low", "high", "scale"), ("step",))
    assert Constant.arguments() == (("value",), ())
    for cls in DISTRIBUTIONS.values():
        required, optional = cls.arguments()
        assert required + optional == tuple(f.name for f in dataclasses.fields(cls))
    assert IntNormal(10, 3).to_dict() == {"distribution": "int_normal", "mean": 10.0, "std": 3.0}  # step 1: the default
    assert Normal(0, 1, step=1).to_dict() == {"distribution": "normal", "mean": 0.0, "std": 1.0, "step": 1.0}  # not a default
    assert Categorical([1, 2], [0.5, 0.5]).to_dict() == {"distribution": "categorical", "choices": [1, 2], "weights": [0.5, 0.5]}
    assert DISTRIBUTION_ARGUMENTS == ("low", "high", "step", "scale", "choices", "weights", "mean", "std", "value", "when")


def test_a_subclass_with_a_kind_is_registered_and_read_back():
    @dataclasses.dataclass(frozen=True)
    class Coin(Categorical):
        kind: ClassVar[str] = "coin_for_this_test"

    try:
        assert DISTRIBUTIONS["coin_for_this_test"] is Coin
        coin = Coin((True, False))
        assert coin.to_dict() == {"distribution": "coin_for_this_test", "choices": [True, False]}
        assert distribution_from_dict(coin.to_dict()) == coin
        with pytest.raises(TypeError, match="two distributions are named 'uniform'"):
            type("Again", (Uniform,), {"kind": "uniform"})
    finally:
        del DISTRIBUTIONS["coin_for_this_test"]


@pytest.mark.parametrize("dist", EXAMPLES, ids=repr)
def test_describe_words_the_support_as_the_space_table_does(dist):
    # issue 18: Distribution.describe() and SearchSpace.describe() share bounds_text(); only an
    # unbounded normal keeps its own wording (its bounds would read (-inf, inf)).
    if not (isinstance(dist, Normal) and dist.low is None and dist.high is None):
        assert dist.bounds_text() in dist.describe()
    assert "\n" not in dist.kind_text() + dist.bounds_text() and dist.kind_text().startswith(dist.kind)


def test_a_truncated_normal_is_described_with_the_bounds_of_the_space_table():
    assert IntNormal(10, 3, low=4, high=20, step=2).describe() == "integers normal (mean 10.0, std 3.0) truncated to {4, ..., 20} step 2"
    assert Normal(0, 1, high=3.0, step=0.5).describe() == "normal (mean 0.0, std 1.0) truncated to (-inf, 3.0] multiples of 0.5"
    assert Normal(0.5, 0.2, step=0.1).describe() == "normal (mean 0.5, std 0.2) on multiples of 0.1"
    assert IntNormal(10, 3).describe() == "integers normal (mean 10.0, std 3.0)"


def test_the_message_helpers_have_one_home():
    assert did_you_mean("lo", ("low", "high")) == "; did you mean 'low'?" and did_you_mean("zzz", ("low",)) == ""
    assert show_value(True) == "True" and show_value(True, as_yaml=True) == "true"
    assert show_value(10**50) == "10000000000000000000...00000000 (51 characters)"
    assert show_value("x" * 70, as_yaml=True) == '"' + "x" * 39 + "..." + "x" * 9 + '"'
    assert show_value("\ud800", as_yaml=True) == '"\\ud800"'
    for name, cls in DISTRIBUTIONS.items():
        assert cls.kind == name


def test_same_generator_state_gives_the_same_draws():
    for dist in EXAMPLES:
        assert draws(dist, 50, seed=7) == draws(dist, 50, seed=7)


def test_importing_distributions_loads_neither_numpy_nor_scipy():
    probe = "import sys, showwork.distributions; print('numpy' in sys.modules, 'scipy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


# --- continuous uniform and log-uniform -----------------------------------------------------------


def test_uniform_support_moments_and_fit():
    d = Uniform(0.05, 0.7)
    xs = np.array(draws(d))
    assert xs.min() >= 0.05 and xs.max() < 0.7
    se = (0.65 / math.sqrt(12)) / math.sqrt(N)
    assert abs(xs.mean() - 0.375) < 5 * se
    assert stats.kstest(xs, stats.uniform(loc=0.05, scale=0.65).cdf).pvalue > P_MIN
    assert d.bounds() == {"low": 0.05, "high": 0.7, "low_included": True, "high_included": False}
    assert d.describe() == "uniform on [0.05, 0.7)"


def test_uniform_never_returns_high_even_when_rounding_would():
    class AlmostOne:  # the largest double below 1: low + u (high - low) rounds up to high
        def random(self):
            return 1.0 - 2.0**-53

    d = Uniform(1.0, 1.0 + 2.0**-52)
    assert d.sample(AlmostOne()) < d.high
    assert LogUniform(1.0, 1.0 + 2.0**-52).sample(AlmostOne()) < 1.0 + 2.0**-52


@settings(max_examples=200, deadline=None)
@given(
    low=st.floats(-1e300, 1e300, allow_nan=False, allow_infinity=False),
    width=st.floats(1e-300, 1e300, allow_nan=False, allow_infinity=False),
    seed=st.integers(0, 2**32 - 1),
)
def test_uniform_stays_in_its_half_open_interval(low, width, seed):
    high = low + width
    if not low < high:
        return
    d = Uniform(low, high)
    rng = np.random.default_rng(seed)
    for _ in range(20):
        assert low <= d.sample(rng) < high


def test_loguniform_is_uniform_in_log_space():
    d = LogUniform(1e-6, 1e-3)
    xs = np.array(draws(d))
    assert xs.min() >= 1e-6 and xs.max() < 1e-3
    logs = np.log10(xs)
    assert stats.kstest(logs, stats.uniform(loc=-6, scale=3).cdf).pvalue > P_MIN
    assert abs(np.median(logs) - (-4.5)) < 0.05


# --- integers: both ends included --------------------------------------------------------------


def test_int_uniform_reaches_both_ends_with_equal_frequencies():
    d = IntUniform(1, 6)
    xs = draws(d, 6000)
    counts = np.array([xs.count(k) for k in range(1, 7)])
    assert counts.sum() == 6000  # nothing outside {1, ..., 6}
    assert counts.min() > 0  # 1 and 6 both drawn
    assert stats.chisquare(counts).pvalue > P_MIN
    assert d.bounds() == {"low": 1, "high": 6, "low_included": True, "high_included": True}


def test_int_uniform_accepts_integral_floats_and_stores_ints():
    d = IntUniform(0, 1e7)
    assert d == IntUniform(0, 10_000_000) and type(d.high) is int
    assert type(d.sample(np.random.default_rng(0))) is int


def test_int_uniform_on_the_widest_allowed_range():
    d = IntUniform(-(2**53), 2**53)
    values = draws(d, 100)
    assert all(-(2**53) <= v <= 2**53 for v in values)


def test_log_int_uniform_reaches_both_ends_and_matches_its_pmf():
    d = LogIntUniform(1, 8)
    xs = draws(d)
    counts = np.array([xs.count(k) for k in range(1, 9)])
    assert counts.sum() == N and counts[0] > 0 and counts[-1] > 0
    expected = np.array([d.probability(k) for k in range(1, 9)])
    assert math.isclose(expected.sum(), 1.0, rel_tol=1e-12)
    assert stats.chisquare(counts, expected * N).pvalue > P_MIN
    # The scheme in the docstring: P(k) = log((k + 1/2) / (k - 1/2)) / log(8.5 / 0.5)
    assert math.isclose(d.probability(1), math.log(3) / math.log(17))
    assert d.probability(0) == 0.0 and d.probability(9) == 0.0


def test_log_int_uniform_is_roughly_uniform_in_log_space():
    d = LogIntUniform(10, 100_000)
    logs = np.log10(draws(d))
    quarters = np.histogram(logs, bins=[1, 2, 3, 4, 5])[0] / N
    assert np.all(np.abs(quarters - 0.25) < 0.02)


# --- truncated exponential ---------------------------------------------------------------------


def test_truncated_exponential_is_scipys_truncexpon():
    d = TruncatedExponential(low=0.5, high=3.0, scale=0.7)
    reference = stats.truncexpon(b=(3.0 - 0.5) / 0.7, loc=0.5, scale=0.7)
    xs = np.array(draws(d))
    assert xs.min() >= 0.5 and xs.max() <= 3.0
    assert abs(xs.mean() - reference.mean()) < 5 * reference.std() / math.sqrt(N)
    assert stats.kstest(xs, reference.cdf).pvalue > P_MIN


def test_tang_reuters_lstm_learning_rate_is_expressible():
    # TEXP[0.001, 0.099] in Tang et al. (2020): scipy.stats.truncexpon(b=0.099, loc=0.001, scale=1)
    d = TruncatedExponential(low=0.001, high=0.1, scale=1)
    reference = stats.truncexpon(b=0.099, loc=0.001, scale=1)
    assert math.isclose(d.b, 0.099, rel_tol=1e-12)
    assert reference.support() == pytest.approx((0.001, 0.1), rel=1e-12)
    xs = np.array(draws(d))
    assert xs.min() >= 0.001 and xs.max() <= 0.1
    assert abs(xs.mean() - reference.mean()) < 5 * reference.std() / math.sqrt(N)
    assert stats.kstest(xs, reference.cdf).pvalue > P_MIN
    assert "truncexpon(b=0.099, loc=0.001, scale=1.0)" in d.describe()


@pytest.mark.parametrize("scale", [1e-12, 1e-3, 1e3, 1e12])
def test_truncated_exponential_extreme_scales_stay_in_bounds(scale):
    d = TruncatedExponential(0.0, 1.0, scale)
    xs = np.array(draws(d, 2000))
    assert np.all((xs >= 0.0) & (xs <= 1.0)) and np.all(np.isfinite(xs))
    # scipy's truncexpon loses the mean for b ~ 1e-12; there the distribution is uniform on [0, 1].
    reference = stats.truncexpon(b=1.0 / scale, scale=scale) if scale < 1e6 else stats.uniform()
    assert abs(xs.mean() - reference.mean()) < 5 * reference.std() / math.sqrt(2000) + 1e-15


# --- categorical -------------------------------------------------------------------------------


def test_weighted_categorical_frequencies_follow_the_weights():
    d = Categorical(["nonstatic", "static", "rand"], [0.5, 0.4, 0.1])
    xs = draws(d)
    counts = np.array([xs.count(c) for c in d.choices])
    assert counts.sum() == N
    assert stats.chisquare(counts, np.array(d.weights) * N).pvalue > P_MIN


def test_unweighted_categorical_is_uniform_and_keeps_types():
    d = Categorical([1, "1", True, None])
    xs = draws(d, 8000)
    counts = [sum(1 for x in xs if type(x) is type(c) and x == c) for c in d.choices]
    assert sum(counts) == 8000 and stats.chisquare(counts).pvalue > P_MIN
    assert d.probabilities() == (0.25,) * 4


def test_zero_weight_choices_are_never_drawn():
    d = Categorical(["never", "a", "never too", "b", "last never"], [0.0, 0.5, 0.0, 0.5, 0.0])
    assert set(draws(d, 5000)) == {"a", "b"}


def test_categorical_describe_lists_probabilities():
    d = Categorical([16, 32, 64], [0.25, 0.5, 0.25])
    assert d.describe() == "weighted choice among 16 (p=0.25), 32 (p=0.5), 64 (p=0.25)"
    assert d.bounds() == {"choices": [16, 32, 64]}


# --- normal --------------------------------------------------------------------------------------


def test_normal_without_bounds_has_the_right_moments():
    d = Normal(3.0, 2.0)
    xs = np.array(draws(d))
    assert abs(xs.mean() - 3.0) < 5 * 2.0 / math.sqrt(N)
    assert stats.kstest(xs, stats.norm(3.0, 2.0).cdf).pvalue > P_MIN
    assert d.bounds() == {"low": None, "high": None, "low_included": False, "high_included": False}


@pytest.mark.parametrize(
    "mean, std, low, high",
    [(0.5, 0.2, 0.0, 1.0), (0.0, 1.0, 1.0, None), (0.0, 1.0, None, -2.0), (0.0, 1.0, 5.0, 6.0), (0.0, 1.0, -9.0, -8.5)],
)
def test_truncated_normal_is_scipys_truncnorm(mean, std, low, high):
    d = Normal(mean, std, low=low, high=high)
    a = -np.inf if low is None else (low - mean) / std
    b = np.inf if high is None else (high - mean) / std
    reference = stats.truncnorm(a, b, loc=mean, scale=std)
    xs = np.array(draws(d))
    assert xs.min() >= (low if low is not None else -np.inf)
    assert xs.max() <= (high if high is not None else np.inf)
    assert abs(xs.mean() - reference.mean()) < 5 * reference.std() / math.sqrt(N)
    assert stats.kstest(xs, reference.cdf).pvalue > P_MIN


def test_normal_far_in_the_tail_stays_finite_and_in_bounds():
    d = Normal(0.0, 1.0, low=40.0, high=41.0)  # Phi underflows here: scipy's truncnorm takes over
    xs = np.array(draws(d, 500))
    assert np.all((xs >= 40.0) & (xs <= 41.0))
    assert abs(xs.mean() - stats.truncnorm(40, 41).mean()) < 0.01


def test_normal_truncated_up_to_the_limit_is_sampled_next_to_its_bound():
    # 1e6 standard deviations out (the limit) the mass lies within ~1e-5 std of the bound;
    # before the limit existed, high=-1e300 drew -inf and std=5e-324 with low=1 drew NaN.
    for d, bound in ((Normal(0.0, 1.0, low=1e6), 1e6), (Normal(0.0, 1.0, high=-1e6), -1e6)):
        xs = draws(d, 200)
        assert all(math.isfinite(x) and abs(x - bound) < 1e-4 for x in xs)
    assert Normal(0.0, 5e-324, low=-1.0, high=1.0).sample(np.random.default_rng(0)) in (0.0, 5e-324, -5e-324)


class FixedUniform:
    """A generator whose uniform draw is fixed: the ends of [0, 1) that a real generator reaches rarely."""

    def __init__(self, u: float):
        self.u = u
        self.rng = np.random.default_rng(0)

    def random(self) -> float:
        return self.u

    def integers(self, *args, **kwargs):
        return self.rng.integers(*args, **kwargs)


EDGE_UNIFORMS = [0.0, 2.0**-53, 0.5, 1.0 - 2.0**-53]
EXTREME = st.one_of(
    st.sampled_from([0.0, 5e-324, -5e-324, 1e-320, 1e-300, -1e-300, 1e300, -1e300, 1.7976931348623157e308, -1.7976931348623157e308, 1.0, -1.0]),
    st.floats(allow_nan=False, allow_infinity=False),
)
KINDS = {
    "uniform": lambda a, b, c: Uniform(a, b),
    "loguniform": lambda a, b, c: LogUniform(a, b),
    "int_uniform": lambda a, b, c: IntUniform(round(a) if abs(a) < 2**60 else 0, round(b) if abs(b) < 2**60 else 0),
    "log_int_uniform": lambda a, b, c: LogIntUniform(round(a) if abs(a) < 2**60 else 0, round(b) if abs(b) < 2**60 else 0),
    "truncated_exponential": lambda a, b, c: TruncatedExponential(a, b, c),
    "normal": lambda a, b, c: Normal(c, abs(a - b) / 7 or 5e-324, low=a, high=b),
    "normal_low_only": lambda a, b, c: Normal(c, abs(b) or 5e-324, low=a),
    "normal_high_only": lambda a, b, c: Normal(c, abs(a) or 5e-324, high=b),
    "categorical": lambda a, b, c: Categorical(["x", "y"], [abs(a) % 1, 1 - abs(a) % 1]),
}


@settings(max_examples=300, deadline=None)
@given(kind=st.sampled_from(sorted(KINDS)), a=EXTREME, b=EXTREME, c=EXTREME)
def test_every_accepted_distribution_samples_finite_values_in_its_support(kind, a, b, c):
    """Issue 14: whatever validation accepts can be sampled, however extreme the numbers (no inf, NaN, crash)."""
    try:
        d = KINDS[kind](a, b, c)
    except DistributionError:
        return
    bounds = d.bounds()
    for u in EDGE_UNIFORMS:
        x = d.sample(FixedUniform(u))
        if isinstance(d, Categorical):
            assert d.probabilities()[d.choices.index(x)] > 0
            continue
        assert math.isfinite(x), (d, u, x)
        if bounds["low"] is not None:
            assert x >= bounds["low"], (d, u, x)
        if bounds["high"] is not None:
            assert x <= bounds["high"] and (bounds["high_included"] or x < bounds["high"]), (d, u, x)


def test_truncated_exponential_whose_rate_underflows_is_uniform_not_stuck_at_low():
    d = TruncatedExponential(0.0, 1e-300, 1e308)  # b = 1e-300 / 1e308 underflows to 0
    xs = draws(d, 2000)
    assert all(0.0 <= x <= 1e-300 for x in xs)
    assert stats.kstest(np.array(xs) / 1e-300, "uniform").pvalue > P_MIN


# --- constant ------------------------------------------------------------------------------------


def test_constant_always_returns_its_value():
    assert set(draws(Constant(0.5), 100)) == {0.5}
    assert Constant(None).sample(np.random.default_rng(0)) is None
    assert Constant(np.int64(3)).value == 3 and type(Constant(np.int64(3)).value) is int


# --- validation ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make, field, fragment",
    [
        (lambda: Uniform(3, 1), "low", "`low` must be smaller than `high` (low=3, high=1)"),
        (lambda: Uniform(1, 1), "low", "use `constant`"),
        (lambda: Uniform(0, math.inf), "high", "must be finite (high=inf)"),
        (lambda: Uniform(math.nan, 1), "low", "must be finite"),
        (lambda: Uniform(True, 2), "low", "not a boolean"),
        (lambda: Uniform("0", 1), "low", "must be a number, not text (low='0')"),
        (lambda: Uniform(0, 10**400), "high", "too large to be a float"),
        (lambda: Uniform(-1e308, 1e308), "high", "minus `low` must be finite"),
        (lambda: LogUniform(0, 1), "low", "must be positive for a log-uniform distribution (low=0)"),
        (lambda: LogUniform(-1, 1), "low", "(low=-1)"),
        (lambda: IntUniform(1.5, 3), "low", "must be an integer (low=1.5)"),
        (lambda: IntUniform(0, 2**53 + 1), "high", "within ±2**53"),
        (lambda: IntUniform(5, 5), "low", "smaller than `high` (low=5, high=5)"),
        (lambda: LogIntUniform(0, 10), "low", "at least 1"),
        (lambda: TruncatedExponential(0, 1, 0), "scale", "must be positive (scale=0)"),
        (lambda: TruncatedExponential(1, 0, 1), "low", "smaller than `high`"),
        (lambda: Categorical([]), "choices", "must not be empty"),
        (lambda: Categorical("abc"), "choices", "must be a list"),
        (lambda: Categorical([1, 1.0]), "choices", "must be unique"),
        (lambda: Categorical([[1, 2], 3]), "choices", "not a list"),
        (lambda: Categorical([{"a": 1}]), "choices", "not a mapping"),
        (lambda: Categorical([math.inf]), "choices", "must be finite"),
        (lambda: Categorical([1, 2], [0.5]), "weights", "one entry per choice (1 weights for 2 choices)"),
        (lambda: Categorical([1, 2], [1.5, -0.5]), "weights", "non-negative (weights=[1.5, -0.5])"),
        (lambda: Categorical([1, 2], [0.5, 0.6]), "weights", "must sum to 1 (weights=[0.5, 0.6] sum to 1.1)"),
        (lambda: Categorical([1, 2], [1, 2]), "weights", "must sum to 1"),
        (lambda: Categorical([1, 2], [0.5, True]), "weights", "not a boolean"),
        (lambda: Normal(0, 0), "std", "must be positive (std=0)"),
        (lambda: Normal(0, 1e307), "std", "too large"),
        (lambda: Normal(0, 1, low=2, high=1), "low", "smaller than `high`"),
        (lambda: Constant([1, 2]), "value", "not a list"),
        (lambda: Constant(math.nan), "value", "must be finite"),
        # issue 14, item 5: normals that could only draw -inf or NaN, and text that is not Unicode
        (lambda: Normal(0, 1, high=-1e300), "high", "lies 1e+300 standard deviations from the mean"),
        (lambda: Normal(0, 5e-324, low=1, high=2), "low", "lies inf standard deviations from the mean"),
        (lambda: Normal(0, 1, low=1e6 + 1), "low", "(at most 1e+06 allowed)"),
        (lambda: Normal(-1e308, 1e300, low=1e308), "low", "lies inf standard deviations"),
        (lambda: Constant("\ud800"), "value", "without lone surrogates (value='\\ud800')"),
        (lambda: Categorical(["a", "b\udfff"]), "choices", "without lone surrogates"),
    ],
)
def test_invalid_arguments_are_refused_with_the_values(make, field, fragment):
    with pytest.raises(DistributionError) as caught:
        make()
    assert caught.value.field == field
    assert fragment in str(caught.value)
    assert isinstance(caught.value, InputError)  # the CLI turns it into exit status 2


def test_weights_summing_to_one_within_tolerance_are_accepted():
    Categorical(["a", "b", "c"], [0.1, 0.2, 0.7 + 5e-10])
    with pytest.raises(DistributionError, match="sum to 1"):
        Categorical(["a", "b", "c"], [0.1, 0.2, 0.7 + 5e-9])


@pytest.mark.parametrize(
    "d, fragment",
    [
        ({"distribution": "unifrom", "low": 0, "high": 1}, "did you mean 'uniform'?"),
        ({"distribution": "gaussian"}, "choose one of uniform, loguniform"),
        ({"distribution": 3}, "is unknown (3)"),
        ({"low": 0, "high": 1}, "missing the `distribution` key"),
        ({"distribution": "uniform", "lo": 0, "high": 1}, "did you mean 'low'?"),
        ({"distribution": "uniform", "low": 0}, "a uniform distribution needs `high`"),
        ({"distribution": "categorical", "choices": [1], "weight": [1]}, "did you mean 'weights'?"),
        ([1, 2], "must be a mapping"),
    ],
)
def test_distribution_from_dict_errors(d, fragment):
    with pytest.raises(DistributionError) as caught:
        distribution_from_dict(d)
    assert fragment in str(caught.value)


def test_equal_values_give_equal_distributions():
    assert Uniform(0, 1) == Uniform(0.0, 1.0) and hash(Uniform(0, 1)) == hash(Uniform(0.0, 1.0))
    assert IntUniform(1, 3) != LogIntUniform(1, 3)
    assert len({Categorical([1, 2]), Categorical((1, 2)), Categorical([1, 2], [0.5, 0.5])}) == 2
    with pytest.raises(AttributeError):
        Uniform(0, 1).low = 2  # frozen


# --- steps and the integer forms (issue 16) ---------------------------------------------------------


def assert_frequencies(dist, probabilities, n=N):
    """Chi-square test of ``n`` draws against ``{value: probability}`` (every draw must be a listed value)."""
    values = draws(dist, n)
    assert set(values) <= set(probabilities), sorted(set(values) - set(probabilities))[:5]
    keys = sorted(probabilities)
    observed = [values.count(k) for k in keys]
    expected = np.array([probabilities[k] for k in keys]) * n
    assert math.isclose(sum(probabilities.values()), 1.0, rel_tol=1e-9)
    keep = expected >= 5  # pool the rare values into one cell
    obs = [o for o, k in zip(observed, keep) if k] + [sum(o for o, k in zip(observed, keep) if not k)]
    exp = list(expected[keep]) + [n - expected[keep].sum()]
    if exp[-1] < 1e-9:
        obs, exp = obs[:-1], exp[:-1]
    assert stats.chisquare(obs, exp).pvalue > P_MIN


def test_a_stepped_uniform_gives_every_grid_value_alike_both_ends_included():
    dist = Uniform(0.0, 0.95, step=0.05)
    grid = [round(0.05 * j, 2) for j in range(20)]  # 0.0, 0.05, ..., 0.95: the decimal values, no 0.15000000000000002
    assert_frequencies(dist, {g: 1 / 20 for g in grid})
    assert dist.bounds() == {"low": 0.0, "high": 0.95, "low_included": True, "high_included": True, "step": 0.05}
    assert dist.describe() == "uniform on [0.0, 0.95] step 0.05"


def test_a_step_that_does_not_divide_the_range_stops_at_the_last_grid_value_below_high():
    dist = Uniform(0.0, 1.0, step=0.3)  # 0.0, 0.3, 0.6, 0.9: high itself is not a value
    assert_frequencies(dist, {0.0: 0.25, 0.3: 0.25, 0.6: 0.25, 0.9: 0.25})
    assert dist.bounds()["high"] == 0.9 and dist.to_dict() == {"distribution": "uniform", "low": 0.0, "high": 1.0, "step": 0.3}


def test_a_stepped_loguniform_gives_each_value_the_log_mass_of_its_cell():
    dist = LogUniform(0.01, 0.1, step=0.01)
    grid = [round(0.01 * j, 2) for j in range(1, 11)]
    total = math.log(0.105 / 0.005)
    assert_frequencies(dist, {g: math.log((g + 0.005) / (g - 0.005)) / total for g in grid})


def test_a_stepped_truncated_exponential_is_geometric_on_its_grid():
    dist = TruncatedExponential(0.0, 1.0, 0.3, step=0.1)
    grid = [round(0.1 * j, 1) for j in range(11)]
    weights = {g: math.exp(-g / 0.3) for g in grid}  # every cell has the same width: P(g) ~ exp(-(g - low) / scale)
    total = sum(weights.values())
    assert_frequencies(dist, {g: w / total for g, w in weights.items()})


def test_the_integer_truncated_exponential_draws_integers_on_its_step():
    dist = IntTruncatedExponential(16, 256, 64.0, step=16)
    grid = range(16, 257, 16)
    weights = {k: math.exp(-(k - 16) / 64) for k in grid}
    total = sum(weights.values())
    assert_frequencies(dist, {k: w / total for k, w in weights.items()})
    assert all(type(v) is int for v in draws(dist, 100))
    assert dist.describe().startswith("integers truncated exponential on {16, ..., 256} step 16")


def test_the_integer_normal_is_the_normal_rounded_to_the_nearest_integer():
    dist = IntNormal(10, 3)
    probabilities = {k: stats.norm.cdf(k + 0.5, 10, 3) - stats.norm.cdf(k - 0.5, 10, 3) for k in range(-20, 41)}
    assert_frequencies(dist, probabilities)
    assert all(type(v) is int for v in draws(dist, 100))
    assert dist.to_dict() == {"distribution": "int_normal", "mean": 10.0, "std": 3.0}  # step 1 is the default


def test_a_bounded_stepped_normal_renormalises_over_its_widened_grid():
    dist = Normal(0.5, 0.2, low=0.0, high=1.0, step=0.25)
    cell = lambda g: stats.norm.cdf(g + 0.125, 0.5, 0.2) - stats.norm.cdf(g - 0.125, 0.5, 0.2)
    grid = [0.0, 0.25, 0.5, 0.75, 1.0]
    total = sum(cell(g) for g in grid)
    assert_frequencies(dist, {g: cell(g) / total for g in grid})
    bounded = IntNormal(10, 3, low=4, high=19, step=2)  # 4, 6, ..., 18: 19 is not on the grid
    assert max(draws(bounded, 5000)) == 18 and bounded.bounds()["high"] == 18


def test_a_normal_stepped_without_low_lies_on_multiples_of_step():
    values = draws(Normal(0.5, 0.2, step=0.1), 2000)
    assert all(abs(v * 10 - round(v * 10)) < 1e-9 and v == round(v, 1) for v in values)


@pytest.mark.parametrize(
    "d, field, fragment",
    [
        ({"distribution": "uniform", "low": 0, "high": 1, "step": 0}, "step", "must be positive"),
        ({"distribution": "uniform", "low": 0, "high": 1, "step": -0.1}, "step", "must be positive"),
        ({"distribution": "uniform", "low": 0, "high": 1, "step": 2}, "step", "`low` would be the only value"),
        ({"distribution": "uniform", "low": 0, "high": 1, "step": True}, "step", "not a boolean"),
        ({"distribution": "loguniform", "low": 1e-4, "high": 1, "step": 2e-4}, "step", "smaller than twice `low`"),
        ({"distribution": "truncated_exponential", "low": 0, "high": 1, "scale": 1, "step": 1.5}, "step", "only value"),
        ({"distribution": "int_truncated_exponential", "low": 0, "high": 9, "scale": 1, "step": 0.5}, "step", "integer"),
        ({"distribution": "int_normal", "mean": 0, "std": 1, "low": 0.5}, "low", "integer"),
        ({"distribution": "normal", "mean": 0, "std": 1, "low": 0, "high": 1, "step": 1.5}, "step", "only value"),
        ({"distribution": "int_uniform", "low": 0, "high": 9, "step": 3}, "step", "not an argument"),
        # grids too fine for (x - low) / step to stay finite and exact (an OverflowError in sample() before)
        ({"distribution": "uniform", "low": 0, "high": 1e300, "step": 1e-300}, "step", "more than 2\\*\\*53 values"),
        ({"distribution": "normal", "mean": 0, "std": 1e300, "step": 1e-300}, "step", "more than 2\\*\\*53 values"),
        ({"distribution": "int_normal", "mean": 0, "std": 1e300}, "std", "integer values would pass"),
    ],
)
def test_bad_steps_are_refused_naming_the_field(d, field, fragment):
    with pytest.raises(DistributionError, match=fragment) as error:
        distribution_from_dict(d)
    assert error.value.field == field


finite = st.floats(min_value=-1e12, max_value=1e12, allow_nan=False, allow_infinity=False)
positive = st.floats(min_value=1e-12, max_value=1e12, allow_nan=False, allow_infinity=False)


@settings(max_examples=200, deadline=None)
@given(kind=st.sampled_from(["uniform", "loguniform", "truncated_exponential", "normal"]), a=finite, b=finite, step=positive)
def test_a_stepped_distribution_is_refused_or_draws_on_its_grid(kind, a, b, step):
    low, high = min(a, b), max(a, b)
    d = {"distribution": kind, "low": low, "high": high, "step": step}
    if kind == "truncated_exponential":
        d["scale"] = 1.0
    if kind == "normal":
        d.update(mean=(low + high) / 2, std=max(high - low, 1e-9))
    try:
        dist = distribution_from_dict(d)
    except DistributionError:
        return  # a one-line refusal naming a field; never another exception
    bounds = dist.bounds()
    for value in draws(dist, 20):
        assert bounds["low"] <= value <= bounds["high"] <= high
        j = round((value - low) / step)
        assert math.isclose(value, low + j * step, rel_tol=1e-9, abs_tol=1e-9 * max(step, abs(low)))
