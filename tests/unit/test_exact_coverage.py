"""Exact simultaneous coverage of order-statistic intervals, Beta intervals and the LD critical level.

``order_statistics_coverage`` is checked against scipy's exact Kolmogorov–Smirnov distribution,
against two slow exact references written here in rational arithmetic (an enumeration of
multinomial cell counts, and Steck's determinant), and the critical level ``c*`` against Monte
Carlo. The on-disk cache of ``c*`` is exercised with an isolated cache directory per test.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import special, stats

from showwork.statistics import beta_intervals, cache_directory, critical_levels, ld_critical_coverage, order_statistics_coverage

KINDS = ("highest_density", "equal_tailed")


# --- slow exact references ---------------------------------------------------------------------


def _multinomial_coverage(lower, upper) -> Fraction:
    """``P(l_i <= U_(i) <= h_i for all i)`` by enumerating how many uniforms fall in each cell.

    All 2n end points (as exact rationals) cut [0, 1] into cells; the vector of counts per cell is
    multinomial. With ``N(t) = #{U < t}`` (equal to ``#{U <= t}`` almost surely),
    ``U_(i) >= l_i`` iff ``N(l_i) <= i - 1`` and ``U_(i) <= h_i`` iff ``N(h_i) >= i``. Count vectors
    are enumerated cell by cell, pruned as soon as a constraint at a cut point fails.
    """
    lower = [Fraction(x) for x in lower]
    upper = [Fraction(x) for x in upper]
    n = len(lower)
    cuts = sorted({Fraction(0), Fraction(1), *lower, *upper})
    at_least = [0] * len(cuts)  # N(cuts[j]) >= at_least[j]
    at_most = [n] * len(cuts)  # N(cuts[j]) <= at_most[j]
    for i in range(1, n + 1):
        j = cuts.index(upper[i - 1])
        at_least[j] = max(at_least[j], i)
        j = cuts.index(lower[i - 1])
        at_most[j] = min(at_most[j], i - 1)
    widths = [b - a for a, b in zip(cuts, cuts[1:])]  # cell j = [cuts[j], cuts[j + 1])

    def walk(j: int, count: int) -> Fraction:
        # `count` uniforms lie below cuts[j]; return the summed weight prod(p^c / c!) of the rest.
        if not at_least[j] <= count <= at_most[j]:
            return Fraction(0)
        if j == len(widths):
            return Fraction(1) if count == n else Fraction(0)
        total = Fraction(0)
        for c in range(n - count + 1):
            total += widths[j] ** c / math.factorial(c) * walk(j + 1, count + c)
        return total

    return math.factorial(n) * walk(0, 0)


def _steck_coverage(lower, upper) -> Fraction:
    """Steck's (1971) determinant: ``P(l_i < U_(i) < h_i for all i) = n! det(M)``.

    ``M[i][j] = (h_i - l_j)_+^(j - i + 1) / (j - i + 1)!`` for ``j >= i - 1`` and 0 otherwise, for
    non-decreasing l and h. Evaluated by Gaussian elimination over the rationals.
    """
    lower = [Fraction(x) for x in lower]
    upper = [Fraction(x) for x in upper]
    n = len(lower)
    m = [
        [
            (max(upper[i] - lower[j], Fraction(0)) ** (j - i + 1) / math.factorial(j - i + 1)) if j >= i - 1 else Fraction(0)
            for j in range(n)
        ]
        for i in range(n)
    ]
    det = Fraction(1)
    for col in range(n):
        pivot = next((r for r in range(col, n) if m[r][col] != 0), None)
        if pivot is None:
            return Fraction(0)
        if pivot != col:
            m[col], m[pivot] = m[pivot], m[col]
            det = -det
        det *= m[col][col]
        for r in range(col + 1, n):
            factor = m[r][col] / m[col][col]
            if factor:
                for c in range(col, n):
                    m[r][c] -= factor * m[col][c]
    return math.factorial(n) * det


def _random_band(rng: np.random.Generator, n: int, grid: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A random monotone band around the expected order statistics i/(n+1), optionally on a grid.

    On a grid of 1/grid (exact in binary floating point when grid is a power of two) end points
    tie with one another, which exercises the tie handling.
    """
    centre = np.arange(1, n + 1) / (n + 1)
    lower = np.clip(centre - rng.uniform(0.0, 0.5, n), 0.0, 1.0)
    upper = np.clip(centre + rng.uniform(0.0, 0.5, n), 0.0, 1.0)
    if grid is not None:
        lower, upper = np.floor(lower * grid) / grid, np.ceil(upper * grid) / grid
    lower = np.maximum.accumulate(lower)
    upper = np.minimum.accumulate(upper[::-1])[::-1]
    assert np.all(lower <= upper)
    return lower, upper


# --- order_statistics_coverage -------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 3, 10, 50, 140])
def test_ks_bands_match_scipy_exact_kolmogorov_smirnov(n):
    i = np.arange(1, n + 1)
    quantiles = stats.kstwo.ppf([0.01, 0.2, 0.5, 0.8, 0.95, 0.999], n)
    others = np.array([0.3 / n, 0.5 / n, 0.7 / n, 1.0 / n + 1e-3, 0.5, 0.9])
    for eps in np.concatenate([quantiles, others]):
        got = order_statistics_coverage(i / n - eps, (i - 1) / n + eps)
        assert got == pytest.approx(stats.kstwo.cdf(eps, n), abs=1e-12), eps


def test_reference_implementations_agree_with_each_other():
    # The two references are independent derivations; check them on each other before trusting them.
    rng = np.random.default_rng(20240)
    for n in (1, 2, 3, 4):
        for grid in (None, 8):
            lower, upper = _random_band(rng, n, grid)
            assert _multinomial_coverage(lower, upper) == _steck_coverage(lower, upper)
    assert _multinomial_coverage([0.0, 0.0], [1.0, 1.0]) == 1
    assert _steck_coverage([0.25], [0.75]) == Fraction(1, 2)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6])
@pytest.mark.parametrize("grid", [None, 16])
def test_coverage_matches_multinomial_enumeration(n, grid):
    rng = np.random.default_rng(1000 * n + (grid or 0))
    for _ in range(8 if n <= 4 else 4):
        lower, upper = _random_band(rng, n, grid)
        expected = float(_multinomial_coverage(lower, upper))
        assert order_statistics_coverage(lower, upper) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("n", [7, 10, 15, 25])
def test_coverage_matches_steck_determinant(n):
    rng = np.random.default_rng(n)
    for grid in (None, None, 32):
        lower, upper = _random_band(rng, n, grid)
        expected = float(_steck_coverage(lower, upper))
        assert order_statistics_coverage(lower, upper) == pytest.approx(expected, abs=1e-12)


def test_coverage_of_ld_band_matches_steck_determinant():
    # The bands the library actually builds: narrow, one-sided at both ends.
    n, confidence = 12, 0.8
    for kind in KINDS:
        lower, upper, _ = beta_intervals(n, 1.0 - ld_critical_coverage(n, confidence, kind), kind)
        expected = float(_steck_coverage(lower, upper))
        assert expected == pytest.approx(confidence, abs=1e-10)
        assert order_statistics_coverage(lower, upper) == pytest.approx(expected, abs=1e-12)


def test_non_monotone_bounds_are_tightened_first():
    rng = np.random.default_rng(7)
    n = 5
    raw_lower = rng.uniform(0.0, 0.5, n) * np.arange(1, n + 1) / n
    raw_upper = 1.0 - rng.uniform(0.0, 0.5, n) * np.arange(n, 0, -1) / n
    lower = np.maximum.accumulate(raw_lower)
    upper = np.minimum.accumulate(raw_upper[::-1])[::-1]
    expected = float(_multinomial_coverage(lower, upper))
    assert order_statistics_coverage(raw_lower, raw_upper) == pytest.approx(expected, abs=1e-12)


def test_coverage_simple_cases():
    assert order_statistics_coverage([0.2], [0.7]) == pytest.approx(0.5, abs=1e-15)
    assert order_statistics_coverage(np.zeros(30), np.ones(30)) == pytest.approx(1.0, abs=1e-13)
    # A lower bound above a later upper bound: the sorted order statistics cannot satisfy both.
    assert order_statistics_coverage([0.6, 0.6], [1.0, 0.5]) == 0.0
    # Out-of-range bounds are clipped to [0, 1].
    assert order_statistics_coverage([-1.0, -1.0], [2.0, 2.0]) == pytest.approx(1.0, abs=1e-15)
    # U_(1) <= 1/2 <= U_(2): exactly one of two uniforms below 1/2.
    assert order_statistics_coverage([0.0, 0.5], [0.5, 1.0]) == pytest.approx(0.5, abs=1e-15)


@pytest.mark.parametrize(
    "lower, upper",
    [([], []), ([0.1, 0.2], [0.9]), ([[0.1]], [[0.9]])],
    ids=["empty", "different-lengths", "two-dimensional"],
)
def test_coverage_rejects_malformed_bounds(lower, upper):
    with pytest.raises(ValueError):
        order_statistics_coverage(lower, upper)


# --- Monte Carlo check of the critical level -------------------------------------------------------


@pytest.mark.parametrize("n", [10, 50])
@pytest.mark.parametrize("kind", KINDS)
def test_ld_critical_level_gives_nominal_simultaneous_coverage_by_simulation(n, kind):
    confidence, samples = 0.8, 200_000
    critical = ld_critical_coverage(n, confidence, kind)
    lower, upper, _ = beta_intervals(n, 1.0 - critical, kind)
    rng = np.random.default_rng([n, len(kind)])
    covered = 0
    for _ in range(samples // 50_000):
        u = np.sort(rng.random((50_000, n)), axis=1)
        covered += int(np.count_nonzero(np.all((lower <= u) & (u <= upper), axis=1)))
    standard_error = math.sqrt(confidence * (1.0 - confidence) / samples)
    assert abs(covered / samples - confidence) < 4.0 * standard_error


# --- beta_intervals ----------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 3, 10, 57, 200])
@pytest.mark.parametrize("excluded", [0.5, 0.2, 1e-3, 1e-8])
@pytest.mark.parametrize("kind", KINDS)
def test_beta_intervals_hold_the_requested_probability(n, excluded, kind):
    lower, upper, share = beta_intervals(n, excluded, kind)
    i = np.arange(1, n + 1)
    below = special.betainc(i, n + 1 - i, lower)
    above = special.betaincc(i, n + 1 - i, upper)
    np.testing.assert_allclose(1.0 - below - above, 1.0 - excluded, rtol=0, atol=1e-12)
    # Through scipy.stats as well, and the documented split of the excluded mass.
    dist = stats.beta(i, n + 1 - i)
    np.testing.assert_allclose(dist.cdf(upper) - dist.cdf(lower), 1.0 - excluded, rtol=0, atol=1e-12)
    # scipy's incomplete-Beta inverses are accurate to ~1e-7 relative in the far tails.
    np.testing.assert_allclose(below, share * excluded, rtol=0, atol=1e-6 * excluded)
    np.testing.assert_allclose(above, (1.0 - share) * excluded, rtol=0, atol=1e-6 * excluded)
    assert np.all((0.0 <= lower) & (lower < upper) & (upper <= 1.0))


@pytest.mark.parametrize("n", [3, 4, 10, 57, 200])
@pytest.mark.parametrize("excluded", [0.5, 0.2, 1e-3, 1e-8])
def test_highest_density_intervals_have_equal_density_at_both_ends(n, excluded):
    lower, upper, _ = beta_intervals(n, excluded, "highest_density")
    i = np.arange(2, n)  # i = 1 and i = n are one-sided
    lo, hi = lower[i - 1], upper[i - 1]
    log_lo = stats.beta.logpdf(lo, i, n + 1 - i)
    log_hi = stats.beta.logpdf(hi, i, n + 1 - i)
    # Densities equal to 1e-8 relative, or to what the end points can resolve: an end point within
    # 1e-9 of 1 carries a relative error of ~1e-7 in 1 - x, and the density follows (1 - x)^(n - i).
    slope_lo = (i - 1) / lo + (n - i) / (1.0 - lo)  # |d log pdf / dx| bounds, at each end
    slope_hi = (i - 1) / hi + (n - i) / (1.0 - hi)
    tolerance = 1e-8 + 2.0 * np.finfo(float).eps * (slope_lo + slope_hi)
    assert np.all(np.abs(log_lo - log_hi) <= tolerance)


@pytest.mark.parametrize("n", [2, 3, 10, 57, 200])
@pytest.mark.parametrize("excluded", [0.5, 0.2, 1e-3, 1e-8])
def test_highest_density_intervals_are_shortest(n, excluded):
    lo_hd, hi_hd, _ = beta_intervals(n, excluded, "highest_density")
    lo_et, hi_et, _ = beta_intervals(n, excluded, "equal_tailed")
    width_hd, width_et = hi_hd - lo_hd, hi_et - lo_et
    i = np.arange(1, n + 1)
    middle = 2 * i == n + 1  # Beta(m, m) is symmetric: both kinds coincide
    np.testing.assert_allclose(width_hd[middle], width_et[middle], rtol=1e-12)
    assert np.all(width_hd[~middle] < width_et[~middle])


@pytest.mark.parametrize("n", [2, 3, 10, 200])
@pytest.mark.parametrize("excluded", [0.2, 1e-6])
def test_highest_density_end_intervals_are_one_sided(n, excluded):
    lower, upper, share = beta_intervals(n, excluded, "highest_density")
    # Beta(1, n) has a decreasing density: [0, q] with P(U_(1) > q) = (1 - q)^n = excluded.
    assert lower[0] == 0.0 and share[0] == 0.0
    assert upper[0] == pytest.approx(-math.expm1(math.log(excluded) / n), rel=1e-12)
    # Beta(n, 1) has an increasing density: [q, 1] with q^n = excluded.
    assert upper[-1] == 1.0 and share[-1] == 1.0
    assert lower[-1] == pytest.approx(excluded ** (1.0 / n), rel=1e-12)


@pytest.mark.parametrize("n", [1, 2, 5, 10, 57, 200])
@pytest.mark.parametrize("kind", KINDS)
def test_beta_intervals_mirror_symmetry(n, kind):
    lower, upper, share = beta_intervals(n, 0.05, kind)
    np.testing.assert_allclose(lower, 1.0 - upper[::-1], rtol=0, atol=1e-12)
    np.testing.assert_allclose(share, 1.0 - share[::-1], rtol=0, atol=1e-12)


@pytest.mark.parametrize("kind", KINDS)
def test_beta_intervals_single_order_statistic(kind):
    # Beta(1, 1) is uniform: no unique shortest interval, so both kinds are equal-tailed.
    lower, upper, share = beta_intervals(1, 0.2, kind)
    np.testing.assert_allclose(lower, [0.1], rtol=1e-12)
    np.testing.assert_allclose(upper, [0.9], rtol=1e-12)
    np.testing.assert_array_equal(share, [0.5])


def test_beta_intervals_warm_start_gives_the_same_intervals():
    _, _, share = beta_intervals(40, 0.011, "highest_density")
    cold = beta_intervals(40, 0.01, "highest_density")
    warm = beta_intervals(40, 0.01, "highest_density", initial_share=share)
    for a, b in zip(cold, warm):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-15)


def test_beta_intervals_accept_numpy_integers():
    lower, upper, _ = beta_intervals(np.int64(5), 0.1)
    assert lower.shape == upper.shape == (5,)


@pytest.mark.parametrize(
    "args",
    [(0, 0.1, "equal_tailed"), (-3, 0.1, "equal_tailed"), (2.0, 0.1, "equal_tailed"), (5, 0.0, "equal_tailed"),
     (5, 1.0, "equal_tailed"), (5, -0.1, "highest_density"), (5, float("nan"), "highest_density"), (5, 0.1, "hd")],
)
def test_beta_intervals_validation(args):
    with pytest.raises(ValueError):
        beta_intervals(*args)


# --- ld_critical_coverage ----------------------------------------------------------------------


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    """An empty cache directory and an empty in-memory cache, restored afterwards."""
    monkeypatch.setenv("SHOWWORK_CACHE_DIR", str(tmp_path / "cache"))
    critical_levels._critical_coverage_cached.cache_clear()
    yield tmp_path / "cache"
    critical_levels._critical_coverage_cached.cache_clear()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("confidence", [0.1, 0.5, 0.8, 0.95])
def test_single_score_critical_level_is_the_confidence(kind, confidence):
    assert ld_critical_coverage(1, confidence, kind) == confidence


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [2, 5, 30, 145])
@pytest.mark.parametrize("confidence", [0.5, 0.8, 0.95])
def test_critical_level_solves_the_coverage_equation(kind, n, confidence):
    critical = ld_critical_coverage(n, confidence, kind)
    assert confidence < critical < 1.0
    # Never beyond Bonferroni's level.
    assert 1.0 - critical >= (1.0 - confidence) / n * (1.0 - 1e-12)
    lower, upper, _ = beta_intervals(n, 1.0 - critical, kind)
    assert order_statistics_coverage(lower, upper) == pytest.approx(confidence, abs=1e-10)


@pytest.mark.parametrize("kind", KINDS)
def test_critical_level_increases_with_confidence(kind):
    levels = [ld_critical_coverage(20, c, kind) for c in (0.3, 0.5, 0.8, 0.9, 0.95, 0.99)]
    assert all(a < b for a, b in zip(levels, levels[1:]))


@pytest.mark.parametrize("kind", KINDS)
def test_excluded_pointwise_mass_decreases_with_n(kind):
    excluded = [1.0 - ld_critical_coverage(n, 0.8, kind) for n in (1, 2, 3, 5, 10, 30, 100, 300)]
    assert all(a > b for a, b in zip(excluded, excluded[1:]))


def test_critical_level_is_deterministic(fresh_cache):
    first = ld_critical_coverage(37, 0.8)
    critical_levels._critical_coverage_cached.cache_clear()
    for path in fresh_cache.rglob("*.json"):
        path.unlink()
    assert ld_critical_coverage(37, 0.8) == first  # recomputed from scratch, bit for bit


def test_critical_level_accepts_numpy_integers():
    assert ld_critical_coverage(np.int32(12), 0.8) == ld_critical_coverage(12, 0.8)


def test_critical_level_is_read_back_from_the_disk_cache(fresh_cache, monkeypatch):
    assert cache_directory() == fresh_cache
    value = ld_critical_coverage(23, 0.77, "equal_tailed")
    files = list(cache_directory().rglob("*.json"))
    assert len(files) == 1
    record = json.loads(files[0].read_text())
    assert record["critical_coverage"] == value
    assert (record["n"], record["confidence"], record["kind"]) == (23, 0.77, "equal_tailed")

    def no_solving(*args):
        raise AssertionError("the cached value should have been read from disk")

    critical_levels._critical_coverage_cached.cache_clear()
    monkeypatch.setattr(critical_levels, "_solve_critical_coverage", no_solving)
    assert ld_critical_coverage(23, 0.77, "equal_tailed") == value


@pytest.mark.parametrize(
    "content",
    ["", "{not json", "[]", "null", '"text"', '{"other": 0.9}', '{"critical_coverage": "x"}',
     '{"critical_coverage": 1.5}', '{"critical_coverage": 0.0}'],
)
def test_corrupt_cache_file_is_ignored_and_recomputed(fresh_cache, content):
    value = ld_critical_coverage(19, 0.8)
    (path,) = list(cache_directory().rglob("*.json"))
    path.write_text(content)
    critical_levels._critical_coverage_cached.cache_clear()
    assert ld_critical_coverage(19, 0.8) == value
    assert json.loads(path.read_text())["critical_coverage"] == value  # rewritten


def test_unwritable_cache_directory_does_not_raise(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("SHOWWORK_CACHE_DIR", str(blocker))
    critical_levels._critical_coverage_cached.cache_clear()
    try:
        value = ld_critical_coverage(21, 0.8)
        assert blocker.read_text() == "not a directory"
    finally:
        critical_levels._critical_coverage_cached.cache_clear()
    monkeypatch.setenv("SHOWWORK_CACHE_DIR", str(tmp_path / "writable"))
    assert ld_critical_coverage(21, 0.8) == value


def test_cache_directory_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("SHOWWORK_CACHE_DIR", str(tmp_path / "x"))
    assert cache_directory() == tmp_path / "x"
    monkeypatch.delenv("SHOWWORK_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_directory() == tmp_path / "xdg" / "showwork"


@pytest.mark.parametrize(
    "n, confidence, kind",
    [(0, 0.8, "highest_density"), (-1, 0.8, "highest_density"), (2.5, 0.8, "highest_density"),
     ("3", 0.8, "highest_density"), (5, 0.0, "highest_density"), (5, 1.0, "equal_tailed"),
     (5, 1.2, "equal_tailed"), (5, -0.1, "equal_tailed"), (5, float("nan"), "equal_tailed"),
     (5, 0.8, "hd"), (5, 0.8, "ld-hd")],
)
def test_critical_level_validation(n, confidence, kind):
    with pytest.raises(ValueError):
        ld_critical_coverage(n, confidence, kind)

