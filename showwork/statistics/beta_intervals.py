"""Pointwise intervals for uniform order statistics, the building blocks of the LD bands.

If U_(1) <= ... <= U_(n) are the order statistics of n i.i.d. Uniform(0, 1) variables, then
``U_(i) ~ Beta(i, n + 1 - i)``. For a continuous score distribution F, ``F(y_(i))`` has that law,
so an interval holding mass ``1 - excluded`` of Beta(i, n + 1 - i) bounds the CDF at the i-th
order statistic (Learned-Miller & DeStefano 2008). Two kinds of interval are offered:

- ``equal_tailed``: ``excluded / 2`` of the mass below and above.
- ``highest_density``: the shortest interval, i.e. equal density at both ends. For i = 1 (and
  i = n) the density is monotone and the interval is one-sided: ``[0, q]`` (and ``[q, 1]``).

Both are parametrised by ``excluded = 1 - coverage`` rather than the coverage, because the
pointwise coverages the LD bands need are close to 1 and their digits live in ``1 - c``.

Large n. scipy's ``betaincinv`` costs ~5-15 µs a call, which made the n = 10^6 intervals take
minutes. Above ``INTERPOLATED_ABOVE_N`` order statistics the shares t_i (a smooth function of i)
are solved exactly on a few thousand i and interpolated in between, and every end point is then
found by Newton's method on the forward ``betainc`` (~1 µs, accurate to ~1e-15) from interpolated
starting points. The tail masses, and hence each interval's pointwise coverage, are exact to
1e-10 relative (betaincinv itself is off by up to ~1e-7 there); only the equal-density property holds to the interpolation's accuracy (a
second-order effect on the widths). Up to ``INTERPOLATED_ABOVE_N`` the intervals are unchanged.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy import special
from scipy.interpolate import CubicSpline

from showwork.statistics.errors import ArgumentError, check_probability

__all__ = ["KINDS", "INTERPOLATED_ABOVE_N", "beta_intervals", "last_lower_end"]

KINDS = ("equal_tailed", "highest_density")

_MAX_NEWTON_STEPS = 80
_S_TOLERANCE = 1e-13  # on the logit of the lower-tail share, ~1e-13 relative on the end points
INTERPOLATED_ABOVE_N = 16384
"""Above this many order statistics the intervals come from the interpolated, Newton-polished path."""
_DENSE_HEAD = 256  # the first (and last) i are solved directly: the shares change fastest there
_KNOTS = 2048  # geometrically spaced i between the head and the middle where shares are solved
_ENDPOINT_NEWTON_STEPS = 6
_ENDPOINT_TOLERANCE = 1e-10  # on log tail mass (betainc's own noise is ~1e-12 at n = 10^6)
# For a, b >= 2 the mass below the mode, F(m), and above it both exceed 1 - 2/e ~ 0.264 (the limit
# a = 2, b -> inf: a Gamma(2) at its mode), so for excluded <= 0.25 every share keeps the mode inside.
_MODE_BRACKET_FROM_EXCLUDED = 0.25


def beta_intervals(
    n: int,
    excluded: float,
    kind: str = "highest_density",
    *,
    initial_share: NDArray[np.float64] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Return intervals of Beta(i, n+1-i), i = 1..n, each holding probability ``1 - excluded``.

    Parameters
    ----------
    n : positive int
        Number of order statistics.
    excluded : float strictly between 0 and 1
        Probability outside each interval (one minus the pointwise coverage).
    kind : {"equal_tailed", "highest_density"}
        Equal tails, or the shortest interval (equal density at both end points). For n = 1 the
        Beta(1, 1) density is flat and has no unique shortest interval; the equal-tailed one is used.
    initial_share : array of floats in (0, 1), optional
        Starting values for the lower-tail share ``t_i`` (see Returns), e.g. from a nearby
        ``excluded``; only used for ``highest_density``.

    Returns
    -------
    lower, upper : arrays of floats, length n
        ``P(U_(i) < lower_i) = t_i * excluded`` and ``P(U_(i) > upper_i) = (1 - t_i) * excluded``.
    share : array of floats in [0, 1], length n
        The lower-tail share ``t_i`` (0.5 for equal-tailed intervals).
    """
    if not (isinstance(n, (int, np.integer)) and n >= 1):
        raise ArgumentError(f"n must be a positive integer (got n={n!r}).")
    check_probability(excluded, "excluded")
    if kind not in KINDS:
        raise ArgumentError(f"kind must be one of {KINDS} (got {kind!r}).")
    i = np.arange(1, n + 1, dtype=float)
    a, b = i, n + 1 - i
    if n > INTERPOLATED_ABOVE_N:
        return _large_n_intervals(n, excluded, kind)
    if kind == "equal_tailed" or n == 1:
        share = np.full(n, 0.5)
    else:
        share = _highest_density_shares(n, excluded, initial_share)
    lower = special.betaincinv(a, b, share * excluded)
    upper = special.betainccinv(a, b, (1.0 - share) * excluded)
    # Ends that are exactly one-sided (t = 0 or 1) must be exactly 0 or 1.
    lower[share == 0.0] = 0.0
    upper[share == 1.0] = 1.0
    if kind == "highest_density" and n > 1:
        lower, upper = _around_mode(n, lower, upper)
    return lower, upper, share


def _around_mode(n: int, lower: NDArray[np.float64], upper: NDArray[np.float64]):
    """Make each highest-density interval contain the mode (i - 1) / (n - 1) of Beta(i, n + 1 - i).

    The shares are bracketed so that it does (:func:`_solve_equal_density`); this absorbs the last
    rounding of the inverses (a few ulp), so that the property holds exactly at every coverage.
    """
    mode = np.arange(n, dtype=float) / (n - 1)
    return np.minimum(lower, mode), np.maximum(upper, mode)


def last_lower_end(n: int, excluded: float, kind: str = "highest_density") -> float:
    """The lower end of the interval of ``U_(n) ~ Beta(n, 1)``, the largest order statistic.

    The same number as ``beta_intervals(n, excluded, kind)[0][-1]`` without the other n - 1
    intervals: Beta(n, 1) has an increasing density, so the highest-density interval is
    one-sided (share 1) for n >= 2; equal-tailed intervals (and n = 1) have share 1/2.
    """
    share = 1.0 if kind == "highest_density" and n > 1 else 0.5
    return float(special.betaincinv(float(n), 1.0, share * excluded))


def _highest_density_shares(
    n: int, excluded: float, initial_share: NDArray[np.float64] | None
) -> NDArray[np.float64]:
    """Solve, for each i, the lower-tail share t_i at which both interval ends have equal density.

    With ``l(t) = I^{-1}(t e)`` and ``h(t) = I_c^{-1}((1 - t) e)`` (regularized incomplete Beta
    inverses, e = excluded), ``g(t) = log pdf(l) - log pdf(h)`` increases from -inf to +inf in t.
    Newton's method runs on ``s = logit(t)``, vectorised over i, safeguarded by bisection inside a
    bracket. By the mirror symmetry Beta(i, n+1-i) <-> Beta(n+1-i, i), ``t_{n+1-i} = 1 - t_i``:
    only i <= (n+1)/2 are solved. i = 1 has a decreasing density: t_1 = 0 exactly.
    """
    share = np.empty(n)
    share[0], share[-1] = 0.0, 1.0
    half = np.arange(2, n // 2 + 1)  # 2 <= i <= n/2; the middle (odd n) has t = 1/2
    if n % 2 == 1 and n > 1:
        share[n // 2] = 0.5
    if half.size:
        a = half.astype(float)
        b = n + 1 - a
        if initial_share is not None:
            t0 = np.clip(np.asarray(initial_share, dtype=float)[half - 1], 1e-300, 0.5)
        else:
            t0 = np.full(half.size, 0.25)
        t = _solve_equal_density(a, b, excluded, t0)
        share[half - 1] = t
        share[n - half] = 1.0 - t
    return share


def _solve_equal_density(a, b, e, t0):
    """The shares t (see :func:`_highest_density_shares`) for Beta(a, b) with a, b > 1, from starts t0.

    The search is bracketed to the shares whose interval contains the mode m: ``l <= m`` iff
    ``t e <= F(m)`` and ``h >= m`` iff ``(1 - t) e <= 1 - F(m)``. At small coverages (``e`` near 1)
    the density is flat across the interval, ``g`` is lost in rounding (~1e-16) and Newton would
    wander anywhere in (0, 1) — to an interval far from the mode; inside the bracket any share
    is an interval around the mode with the exact coverage, and there equal density holds to
    the rounding of the density itself.
    """
    log_norm = special.betaln(a, b)
    s_lo = np.full(a.size, -745.0)
    s_hi = np.full(a.size, 40.0)
    if e > _MODE_BRACKET_FROM_EXCLUDED:  # else the bracket is all of (0, 1): skip its 2 betainc a share
        mode = (a - 1.0) / (a + b - 2.0)
        below, above = special.betainc(a, b, mode), special.betaincc(a, b, mode)  # F(m), 1 - F(m)
        with np.errstate(divide="ignore", invalid="ignore"):
            # logit(t_min) with t_min = 1 - (1 - F(m)) / e, logit(t_max) with t_max = F(m) / e.
            s_lo = np.where(e > above, np.log(e - above) - np.log(above), s_lo)
            s_hi = np.where(e > below, np.log(below) - np.log(e - below), s_hi)
        s_lo = np.nan_to_num(np.maximum(s_lo, -745.0), nan=-745.0)
        s_hi = np.nan_to_num(np.minimum(s_hi, 40.0), nan=40.0)
    s = np.log(t0) - np.log1p(-t0)
    s = np.where((s > s_lo) & (s < s_hi), s, 0.5 * (s_lo + s_hi))
    active = np.ones(s.size, dtype=bool)
    for _ in range(_MAX_NEWTON_STEPS):
        idx = np.nonzero(active)[0]
        if idx.size == 0:
            break
        si, ai, bi = s[idx], a[idx], b[idx]
        t = special.expit(si)
        lo = special.betaincinv(ai, bi, t * e)
        hi = special.betainccinv(ai, bi, (1.0 - t) * e)
        with np.errstate(divide="ignore", invalid="ignore"):
            log_lo, log_hi = np.log(lo), np.log(hi)
            log1m_lo, log1m_hi = np.log1p(-lo), np.log1p(-hi)
            g = (ai - 1) * (log_lo - log_hi) + (bi - 1) * (log1m_lo - log1m_hi)
            # d log pdf / dx at each end, divided by the pdf there (dl/dt = e / pdf(l), dh/dt = e / pdf(h))
            slope_lo = ((ai - 1) / lo - (bi - 1) / (1 - lo)) * np.exp(
                log_norm[idx] - (ai - 1) * log_lo - (bi - 1) * log1m_lo
            )
            slope_hi = ((ai - 1) / hi - (bi - 1) / (1 - hi)) * np.exp(
                log_norm[idx] - (ai - 1) * log_hi - (bi - 1) * log1m_hi
            )
            dg_ds = e * (slope_lo - slope_hi) * t * (1 - t)
            step = g / dg_ds
        # Keep the bracket: g < 0 means t is too small.
        s_lo[idx] = np.where(g < 0, np.maximum(s_lo[idx], si), s_lo[idx])
        s_hi[idx] = np.where(g > 0, np.minimum(s_hi[idx], si), s_hi[idx])
        new = si - step
        bad = ~np.isfinite(new) | (new <= s_lo[idx]) | (new >= s_hi[idx])
        new = np.where(bad, 0.5 * (s_lo[idx] + s_hi[idx]), new)
        done = (g == 0) | (np.abs(new - si) <= _S_TOLERANCE * np.maximum(1.0, np.abs(si)))
        s[idx] = np.where(g == 0, si, new)
        active[idx[done]] = False
    return special.expit(s)


def _large_n_intervals(n: int, excluded: float, kind: str):
    """The intervals for n > INTERPOLATED_ABOVE_N: solve on knots, interpolate, polish with Newton.

    Only i <= (n+1)/2 are computed; the rest follow from the mirror symmetry
    ``lower_{n+1-i} = 1 - upper_i`` (the shares mirror as ``t_{n+1-i} = 1 - t_i``).
    """
    half = (n + 1) // 2  # i = 1..half (the middle one too when n is odd)
    i = np.arange(1, half + 1, dtype=float)
    knots = np.unique(
        np.concatenate(
            [np.arange(1, _DENSE_HEAD + 1), np.round(np.geomspace(_DENSE_HEAD, half, _KNOTS)).astype(int)]
        )
    )
    knot_lower, knot_upper, knot_share = _knot_intervals(n, excluded, kind, knots)
    # Interpolate in log i (smooth there), on standardised end points (l - mean) / sd.
    mean = i / (n + 1.0)
    sd = np.sqrt(mean * (1.0 - mean) / (n + 2.0))
    log_i, log_knots = np.log(i), np.log(knots.astype(float))
    knot_mean, knot_sd = mean[knots - 1], sd[knots - 1]
    # Cubic splines: the starting points are then good to ~1e-11, so most end points pass the
    # Newton check at once (one betainc each).
    share = np.clip(CubicSpline(log_knots, knot_share)(log_i), 0.0, 1.0)
    if kind == "highest_density":
        share[0] = 0.0  # i = 1 is one-sided
    guess_lower = mean + sd * CubicSpline(log_knots, (knot_lower - knot_mean) / knot_sd)(log_i)
    guess_upper = mean + sd * CubicSpline(log_knots, (knot_upper - knot_mean) / knot_sd)(log_i)
    a, b = i, n + 1.0 - i
    log_norm = special.betaln(a, b)
    lower = _tail_endpoint(a, b, log_norm, share * excluded, guess_lower, upper_tail=False)
    upper = _tail_endpoint(a, b, log_norm, (1.0 - share) * excluded, guess_upper, upper_tail=True)
    share[knots - 1] = knot_share  # exactly; the end points are polished like the others
    lower[share == 0.0] = 0.0
    full_lower, full_upper, full_share = np.empty(n), np.empty(n), np.empty(n)
    full_lower[:half], full_upper[:half], full_share[:half] = lower, upper, share
    mirror = n - half  # i = half+1..n mirror i = n-half..1
    full_lower[half:] = 1.0 - upper[:mirror][::-1]
    full_upper[half:] = 1.0 - lower[:mirror][::-1]
    full_share[half:] = 1.0 - share[:mirror][::-1]
    if kind == "highest_density":
        full_lower, full_upper = _around_mode(n, full_lower, full_upper)
    return full_lower, full_upper, full_share


def _knot_intervals(n: int, excluded: float, kind: str, knots: NDArray[np.int64]):
    """Exact (betaincinv) intervals at the knots i, all with i <= (n+1)/2."""
    a = knots.astype(float)
    b = n + 1.0 - a
    share = np.full(a.size, 0.5)
    if kind == "highest_density":
        share[knots == 1] = 0.0
        inner = (knots > 1) & (2 * knots < n + 1)  # the middle of odd n keeps t = 1/2
        if inner.any():
            share[inner] = _solve_equal_density(a[inner], b[inner], excluded, np.full(int(inner.sum()), 0.25))
    lower = special.betaincinv(a, b, share * excluded)
    upper = special.betainccinv(a, b, (1.0 - share) * excluded)
    lower[share == 0.0] = 0.0
    return lower, upper, share


def _tail_endpoint(a, b, log_norm, mass, guess, *, upper_tail: bool):
    """x with ``P(Beta(a, b) < x) = mass`` (or ``> x`` if ``upper_tail``), by Newton on the log tail mass.

    Starts from ``guess``; where a start is unusable or Newton does not reach the tolerance the
    end point falls back to scipy's inverse.
    """
    tail = special.betaincc if upper_tail else special.betainc
    sign = -1.0 if upper_tail else 1.0
    x = np.clip(guess, 1e-300, 1.0 - 1e-16)
    active = np.nonzero(mass > 0.0)[0]
    converged = np.zeros(x.size, dtype=bool)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for _ in range(_ENDPOINT_NEWTON_STEPS):
            xa, aa, ba = x[active], a[active], b[active]
            p = tail(aa, ba, xa)
            residual = np.log(p) - np.log(mass[active])
            done = np.abs(residual) <= _ENDPOINT_TOLERANCE
            converged[active[done]] = True
            keep = ~done
            if not keep.any():
                break
            xa, aa, ba, p, residual = xa[keep], aa[keep], ba[keep], p[keep], residual[keep]
            active = active[keep]
            log_pdf = (aa - 1.0) * np.log(xa) + (ba - 1.0) * np.log1p(-xa) - log_norm[active]
            step = residual * p / (sign * np.exp(log_pdf))  # d log P / dx = ± pdf / P
            x[active] = np.clip(xa - step, 0.5 * xa, 0.5 * (1.0 + xa))
    bad = ~converged | (mass <= 0.0)
    if bad.any():
        inverse = special.betainccinv if upper_tail else special.betaincinv
        x[bad] = inverse(a[bad], b[bad], mass[bad])
    return x
