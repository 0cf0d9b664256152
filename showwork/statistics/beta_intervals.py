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
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy import special

__all__ = ["KINDS", "beta_intervals"]

KINDS = ("equal_tailed", "highest_density")

_MAX_NEWTON_STEPS = 80
_S_TOLERANCE = 1e-13  # on the logit of the lower-tail share, ~1e-13 relative on the end points


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
        raise ValueError(f"n must be a positive integer (got n={n!r}).")
    if not 0.0 < excluded < 1.0:
        raise ValueError(f"excluded must be strictly between 0 and 1 (got {excluded!r}).")
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS} (got {kind!r}).")
    i = np.arange(1, n + 1, dtype=float)
    a, b = i, n + 1 - i
    if kind == "equal_tailed" or n == 1:
        share = np.full(n, 0.5)
    else:
        share = _highest_density_shares(n, excluded, initial_share)
    lower = special.betaincinv(a, b, share * excluded)
    upper = special.betainccinv(a, b, (1.0 - share) * excluded)
    # Ends that are exactly one-sided (t = 0 or 1) must be exactly 0 or 1.
    lower[share == 0.0] = 0.0
    upper[share == 1.0] = 1.0
    return lower, upper, share


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
    log_norm = special.betaln(a, b)
    s = np.log(t0) - np.log1p(-t0)
    s_lo = np.full_like(s, -745.0)
    s_hi = np.full_like(s, 40.0)
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
