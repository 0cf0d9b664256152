"""Exact simultaneous coverage of order-statistic intervals, and the LD critical pointwise level.

The Learned-Miller–DeStefano (LD) band widens the pointwise Beta intervals of the n uniform order
statistics (see :mod:`showwork.statistics.beta_intervals`) until they hold *simultaneously* with
the requested probability. That needs the boundary-crossing probability

    P(c) = P(lower_i(c) <= U_(i) <= upper_i(c) for all i = 1..n),

computed here exactly — no Monte Carlo, no seed — and the pointwise coverage ``c*`` that solves
``P(c*) = confidence``.

Method (Moscovich & Nadler 2017, "Fast calculation of boundary crossing probabilities for Poisson
processes"): replace the n uniforms by a rate-n Poisson process N(t) on [0, 1]; conditioned on
N(1) = n its points are the uniform order statistics. ``U_(i) <= upper_i`` iff ``N(upper_i) >= i``
and ``U_(i) >= lower_i`` iff ``N(lower_i^-) <= i - 1``. Walking through the sorted end points, the
distribution of N(t) restricted to the paths that satisfy every constraint so far is convolved with
the Poisson(n Δt) pmf over each gap and then cut to the allowed window. At the end,
``P = P(N(1) = n, all constraints) / P(N(1) = n)``. All quantities stay in [0, 1]; the Poisson
kernel is cut where its tail is below ~1e-30, so the result is exact to rounding (~1e-14).

The critical level is found by a safeguarded secant method on ``x = log(1 - c)`` against
``log(-log P)``, a nearly linear relation, in 4–6 evaluations; results are cached in memory and on
disk per (n, confidence, kind).

Large n. The recursion costs ~n × (window ~ sqrt(n)) operations per evaluation: 1.5 s for the
whole solve at n = 8,192 on a loaded 2-core machine, but hours at n = 10^6. Above
``EXACT_MAX_N`` the level is *extrapolated*: ``x = log(1 - c*)`` is computed exactly at the anchors
``n = EXACT_MAX_N / 4`` and ``EXACT_MAX_N`` and continued linearly in ``log log n``. ``x`` is a
concave function of ``log log n`` at the usual confidences (its slope falls from 1.7 to 1.5
between n = 10^3 and 10^5 at 0.8; asymptotically ``1 - c* ~ 1 / (log n log log n)``, Gontscharuk,
Landwehr & Finner 2015), so the line lies below it; the line is steepened by a small margin to stay
below it at low confidences too. The extrapolated pointwise level is then higher than c*, the band
wider, and its simultaneous coverage at least ``confidence``: conservative. How much wider is
measured exactly, by running the recursion at the extrapolated level (see
``EXTRAPOLATION_COVERAGE_EXCESS`` and tests/integration/test_curve_large_n.py).
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from showwork.cache import cache_directory
from showwork.files import write_atomic
from showwork.statistics.beta_intervals import KINDS, beta_intervals
from showwork.statistics.errors import ArgumentError, check_probability

__all__ = [
    "EXACT_MAX_N",
    "safeguarded_secant",
    "EXTRAPOLATION_COVERAGE_EXCESS",
    "order_statistics_coverage",
    "ld_critical_coverage",
    "ld_critical_coverage_is_exact",
    "cache_directory",
]

_ALGORITHM_VERSION = 1  # bump to invalidate cached critical levels if the algorithm changes
_X_TOLERANCE = 1e-14
EXACT_MAX_N = 8192
"""Largest n whose critical level is computed exactly; above it the level is extrapolated."""
# The line through the anchors is steepened by this much: at confidences below ~0.2 x is slightly
# convex in log log n over 10^3..10^5 (the plain line was anti-conservative by up to 0.001 in
# coverage at confidence 0.05); the margin keeps every measured case conservative.
_EXTRAPOLATION_SLOPE_MARGIN = 0.05
EXTRAPOLATION_COVERAGE_EXCESS = 0.02
"""Bound on how far the simultaneous coverage of an extrapolated band exceeds ``confidence``.

Measured exactly (the recursion run at the extrapolated level) for n up to 10^6 at confidences
0.5, 0.8 and 0.95 (largest excess 0.013, at 10^6) and at n = 65,536 for 0.05 to 0.95; checked by
tests/integration/test_curve_large_n.py at a smaller scale. Beyond 10^6 the level is still conservative but
the excess is not measured."""


def order_statistics_coverage(lower: ArrayLike, upper: ArrayLike) -> float:
    """Return the probability that every uniform order statistic lies inside its interval.

    ``P(lower_i <= U_(i) <= upper_i for all i)`` where ``U_(1) <= ... <= U_(n)`` are the order
    statistics of n i.i.d. Uniform(0, 1) variables. The bounds need not be monotone: since the
    order statistics are sorted, the event is the same with ``lower`` replaced by its running
    maximum and ``upper`` by its running minimum from the right.

    Parameters
    ----------
    lower, upper : 1-D arrays of finite floats in [0, 1], same length n >= 1
        (values outside [0, 1] are clipped to it; NaN and infinities are refused).

    Returns
    -------
    float in [0, 1]
        Exact up to floating-point rounding (no simulation).

    Examples
    --------
    One order statistic: the probability is the length of the interval.

    >>> round(order_statistics_coverage([0.2], [0.7]), 12)
    0.5
    """
    lower, upper = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
    if lower.ndim != 1 or lower.shape != upper.shape or lower.size == 0:
        raise ArgumentError("lower and upper must be non-empty 1-D arrays of the same length.")
    if not (np.all(np.isfinite(lower)) and np.all(np.isfinite(upper))):
        # NaN would pass every comparison below as False and give a probability of 0.
        raise ArgumentError("lower and upper must be finite numbers (they hold NaN or an infinity).")
    lo = np.maximum.accumulate(np.clip(lower, 0.0, 1.0))
    hi = np.minimum.accumulate(np.clip(upper, 0.0, 1.0)[::-1])[::-1]
    if np.any(lo > hi):
        return 0.0
    n = lo.size
    # Events: lower ends (kind 0) and upper ends (kind 1), in time order. Ties need no tie-break:
    # the two truncations commute and no Poisson mass moves between equal times.
    times = np.concatenate([lo, hi])
    kinds = np.concatenate([np.zeros(n, dtype=np.int8), np.ones(n, dtype=np.int8)])
    index = np.concatenate([np.arange(1, n + 1), np.arange(1, n + 1)])
    order = np.argsort(times, kind="stable")
    times, kinds, index = times[order], kinds[order], index[order]
    gaps = np.diff(np.concatenate([[0.0], times, [1.0]])) * n  # Poisson means of the gaps

    kernels, lengths = _poisson_kernels(gaps[:-1], n)
    table_width = kernels.shape[1]
    state = np.ones(1)  # P(N(t) = base + j, constraints so far)
    base = 0
    cap = 0  # before lower_1, N must be 0; after lower_i it may reach i
    steps = zip(gaps[:-1].tolist(), lengths.tolist(), kinds.tolist(), index.tolist())
    for step, (mean, length, kind, i) in enumerate(steps):
        if mean > 0.0:
            width = cap - base + 1
            length = min(length, width)
            if length <= table_width:
                kernel = kernels[step, :length]
            else:
                kernel = _poisson_pmf(np.arange(length), mean)
            state = np.convolve(state, kernel)[:width]
        if kind == 0:
            cap = i
        elif i > base:
            state = state[i - base :]
            base = i
            if state.size == 0:
                return 0.0
    # Last gap, to t = 1: P(N(1) = n) = sum_j state[j] * pmf(n - base - j; gap)
    counts_needed = n - base - np.arange(state.size)
    final = float(np.dot(state, _poisson_pmf(counts_needed, gaps[-1])))
    return min(1.0, max(0.0, final / float(_poisson_pmf(np.array([n]), float(n))[0])))


_TABLE_WIDTH = 96  # kernels up to this length come from one vectorised table


def _poisson_kernels(means: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Poisson pmfs for the gaps, truncated where the remaining tail is below ~1e-30.

    Returns a table whose row s holds the first ``_TABLE_WIDTH`` pmf values for gap s, and the
    number of terms each gap needs; longer kernels (rare: wide gaps) are computed when used.
    """
    lengths = np.minimum(np.ceil(means + 10.0 * np.sqrt(means) + 25.0), n + 1).astype(int)
    width = int(min(_TABLE_WIDTH, lengths.max(initial=1)))
    counts = np.arange(width, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_pmf = (
            counts[None, :] * np.log(means[:, None])
            - means[:, None]
            - special.gammaln(counts + 1)[None, :]
        )
    kernels = np.exp(log_pmf)
    return kernels, lengths


def _poisson_pmf(counts: np.ndarray, mean: float) -> np.ndarray:
    counts = np.asarray(counts, dtype=float)
    out = np.zeros(counts.shape)
    ok = counts >= 0
    if mean == 0.0:
        out[ok & (counts == 0)] = 1.0
        return out
    out[ok] = np.exp(counts[ok] * math.log(mean) - mean - special.gammaln(counts[ok] + 1))
    return out


# --- the critical pointwise level ------------------------------------------------------------


def ld_critical_coverage(n: int, confidence: float, kind: str = "highest_density") -> float:
    """Return the pointwise coverage c* at which the LD intervals hold with ``confidence`` jointly.

    Solves ``P(c*) = confidence`` where ``P(c)`` is :func:`order_statistics_coverage` of the
    Beta intervals of kind ``kind`` with pointwise coverage c. Deterministic: the same
    (n, confidence, kind) always gives the same value, which is cached in memory and on disk
    (see :func:`cache_directory`).

    Parameters
    ----------
    n : positive int
        Number of scores.
    confidence : float strictly between 0 and 1
        Simultaneous coverage of the band.
    kind : {"equal_tailed", "highest_density"}

    Returns
    -------
    float in [confidence, 1)
        The critical pointwise coverage. For ``n <= EXACT_MAX_N`` it is exact: ``1 - c*`` is
        accurate to ~1e-13 relative. Above, it is extrapolated from exact levels (see the module
        docstring): conservative, with simultaneous coverage between ``confidence`` and
        ``confidence + EXTRAPOLATION_COVERAGE_EXCESS``; :func:`ld_critical_coverage_is_exact` says which.
    """
    if not (isinstance(n, (int, np.integer)) and n >= 1):
        raise ArgumentError(f"n must be a positive integer (got n={n!r}).")
    check_probability(confidence, "confidence")
    if kind not in KINDS:
        raise ArgumentError(f"kind must be one of {KINDS} (got {kind!r}).")
    return _critical_coverage_cached(int(n), float(confidence), kind)


def ld_critical_coverage_is_exact(n: int) -> bool:
    """Whether :func:`ld_critical_coverage` computes the level for n exactly (else it extrapolates)."""
    return n <= EXACT_MAX_N


@lru_cache(maxsize=1024)
def _critical_coverage_cached(n: int, confidence: float, kind: str) -> float:
    if not ld_critical_coverage_is_exact(n):
        return _extrapolated_critical_coverage(n, confidence, kind)
    path = _cache_path(n, confidence, kind)
    value = _read_cached(path)
    if value is None:
        value = _solve_critical_coverage(n, confidence, kind)
        _write_cached(path, value, n, confidence, kind)
    return value


def _solve_critical_coverage(n: int, confidence: float, kind: str) -> float:
    if n == 1:  # one order statistic: the simultaneous coverage is the pointwise one
        return confidence
    target = math.log(-math.log(confidence))
    shares = None

    def h(x: float) -> float:
        nonlocal shares
        lower, upper, shares = beta_intervals(n, math.exp(x), kind, initial_share=shares)
        p = order_statistics_coverage(lower, upper)
        if p >= 1.0:
            return -math.inf
        if p <= 0.0:
            return math.inf
        return math.log(-math.log(p)) - target

    # Bracket: the pointwise level `confidence` is too low (each interval alone already has that
    # coverage), Bonferroni's 1 - (1 - confidence)/n is high enough.
    x_hi = math.log1p(-confidence)
    x_lo = x_hi - math.log(n)
    x0 = _initial_guess(n, confidence, kind, x_lo, x_hi)
    return -math.expm1(safeguarded_secant(h, x0, x_lo, x_hi))


def _extrapolated_critical_coverage(n: int, confidence: float, kind: str) -> float:
    """Continue ``log(1 - c*)`` linearly in ``log log n`` through two exact anchors (conservative)."""
    anchors = (EXACT_MAX_N // 4, EXACT_MAX_N)
    (u1, x1), (u2, x2) = (
        (math.log(math.log(m)), math.log1p(-_critical_coverage_cached(m, confidence, kind))) for m in anchors
    )
    slope = (x2 - x1) / (u2 - u1) - _EXTRAPOLATION_SLOPE_MARGIN
    x = x2 + slope * (math.log(math.log(n)) - u2)
    # Never beyond Bonferroni's level 1 - (1 - confidence)/n, which holds for any n by the union bound.
    return -math.expm1(max(x, math.log1p(-confidence) - math.log(n)))


def _initial_guess(n: int, confidence: float, kind: str, x_lo: float, x_hi: float) -> float:
    # Empirically log(1 - c*) - log(1 - confidence) ~ -0.8 log(log(n) + 1) for LD bands at usual
    # confidences; any value inside the bracket works, a good one saves evaluations.
    guess = x_hi - 0.8 * math.log(math.log(n) + 1.0) - (0.1 if kind == "equal_tailed" else 0.0)
    return min(max(guess, x_lo + 1e-3), x_hi - 1e-3)


def safeguarded_secant(
    h, x0: float, lo: float, hi: float, tolerance: float = _X_TOLERANCE, slope: float | None = None
) -> float:
    """Root of an increasing function h on [lo, hi]: secant steps, bisection if a step leaves the bracket.

    Stops when the bracket or a step is below ``tolerance`` (relative to ``max(1, |x|)``). The
    first step is a Newton step with ``slope`` when the caller knows it, else a damped one."""
    # The caller guarantees h(lo) <= 0 <= h(hi).
    x_prev, f_prev = None, None
    x = x0
    for _ in range(200):
        f = h(x)
        if f == 0.0:
            return x
        if f < 0:
            lo = x
        else:
            hi = x
        if hi - lo <= tolerance * max(1.0, abs(x)):
            break
        candidate = None
        if x_prev is not None and math.isfinite(f) and math.isfinite(f_prev) and f != f_prev:
            candidate = x - f * (x - x_prev) / (f - f_prev)
        elif math.isfinite(f) and slope is not None:
            candidate = x - f / slope
        elif math.isfinite(f):
            # First step: the slope of log(-log P) against log(1 - c) is about 1; a damped step
            # gives the secant a second point close to the first.
            candidate = x - f * 0.3
        if candidate is None or not (lo < candidate < hi):
            candidate = 0.5 * (lo + hi)
        if abs(candidate - x) <= tolerance * max(1.0, abs(x)):
            return candidate
        x_prev, f_prev, x = x, f, candidate
    return 0.5 * (lo + hi)


# --- the on-disk cache (showwork.cache) ----------------------------------------------------------


def _cache_path(n: int, confidence: float, kind: str) -> Path:
    name = f"{kind}-n{n}-c{confidence!r}.json"
    return cache_directory() / f"ld-critical-v{_ALGORITHM_VERSION}" / name


def _read_cached(path: Path) -> float | None:
    try:
        value = float(json.loads(path.read_text())["critical_coverage"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return value if 0.0 < value < 1.0 else None


def _write_cached(path: Path, value: float, n: int, confidence: float, kind: str) -> None:
    record = {"n": n, "confidence": confidence, "kind": kind, "critical_coverage": value}
    try:
        write_atomic(path, json.dumps(record))
    except OSError:
        pass  # a read-only or full disk only costs a recomputation next time
