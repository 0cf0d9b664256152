"""Confidence bands for tuning curves, read off a simultaneous CDF band.

The best of k i.i.d. scores has CDF ``F_k = F^k`` (maximizing; ``1 - (1 - F)^k`` when
minimizing). A CDF band ``L <= F <= U`` that holds simultaneously therefore bounds every ``F_k``
at once, for all k (Lourie, Cho & He 2024, §3):

- **Quantile (e.g. median) tuning curve** ``Q_k(q) = F^{-1}(q^{1/k})``: the quantile of U gives
  the lower band and the quantile of L the upper band. The CDF band is exact for continuous
  scores; the curve bands over k >= 1 hold at least as often. Any real k >= 1; no support
  bounds needed.
- **Mean tuning curve** ``E[max of k]``: the means of the distributions U and L (with their
  leftover mass put on the support bounds a and b) give conservative bands; they are infinite
  unless a and b are finite.

Quantiles of step functions are ambiguous; as in opda we use
``Q(p) = inf {y in [a, b] : G(y) >= p}``, so that ``Q(0) = a``.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from showwork.statistics._deprecation import renamed_keyword
from showwork.statistics.cdf_bands import CDFBand
from showwork.statistics.errors import check_probability
from showwork.statistics.point_estimates import budgets

__all__ = ["quantile_levels", "quantile_tuning_curve", "mean_tuning_curve", "mean_tuning_curve_bands"]

_LOG_MASS_CUTOFF = 60.0  # points with c^k < exp(-60) ~ 1e-26 are left out of the mean

Curves = tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]


@renamed_keyword("q", "quantile", removed_in="0.2.0")
def quantile_levels(k: ArrayLike, quantile: float = 0.5, minimize: bool = False) -> NDArray[np.float64]:
    """Return the level p of the score CDF whose quantile is the q-quantile of the best of k.

    ``p = q^(1/k)`` when maximizing; ``1 - (1 - q)^(1/k)`` when minimizing (q = ``quantile``).
    """
    ks = np.asarray(k, dtype=float)
    q = quantile
    return -np.expm1(np.log1p(-q) / ks) if minimize else np.exp(np.log(q) / ks)


@renamed_keyword("q", "quantile", removed_in="0.2.0")
def quantile_tuning_curve(
    band: CDFBand, k: ArrayLike | None = None, quantile: float = 0.5, minimize: bool = False
) -> Curves:
    """Return the lower band, point estimate and upper band of the q-quantile tuning curve.

    Parameters
    ----------
    band : CDFBand
        From :func:`showwork.statistics.cdf_band`.
    k : positive float or array of floats, optional
        Budgets (real values >= 1 allowed); default ``1..n``.
    quantile : float strictly between 0 and 1
        The q of the q-quantile curve; 0.5 gives the median tuning curve. Named as in
        :func:`~showwork.statistics.tuning_curve`; ``q=`` is its deprecated name (a
        DeprecationWarning; removed in showwork 0.2.0).
    minimize : bool
        Scores are losses: the curve tracks the q-quantile of the minimum of k scores.

    Returns
    -------
    lower, point, upper : arrays of floats, one value per budget
        The bands hold simultaneously for all k with probability at least ``band.confidence``.
        They are read off a CDF band whose coverage is exact for continuous scores; over all real
        k > 0 the q-quantile curve traces the whole quantile function, so the curve bands would be
        exact too, but budgets k >= 1 only read CDF levels >= q (<= 1 - q when minimizing), which
        makes them hold more often: for the median at nominal 0.8 (LD-HD) and n = 30 the exact
        coverage is 0.881 over all real k >= 1 and 0.941 over the integer budgets k = 1..30 (by
        :func:`~showwork.statistics.order_statistics_coverage`; see
        tests/unit/test_statistics_audit.py). A band is ``a`` or ``b`` (possibly infinite) where the
        data do not bound the curve.
    """
    check_probability(quantile, "quantile")
    ks = budgets(k, band.n)
    p = quantile_levels(ks, quantile, minimize)
    ecdf = np.arange(band.n + 1) / band.n
    return (
        _step_quantile(band, band.upper, p),
        _step_quantile(band, ecdf, p),
        _step_quantile(band, band.lower, p),
    )


def _step_quantile(band: CDFBand, g: NDArray[np.float64], p: NDArray[np.float64]) -> NDArray[np.float64]:
    """``inf {y in [a, b] : G(y) >= p}`` for the step CDF G with value ``g[c]`` where c scores are <= y."""
    first = np.searchsorted(g, p, side="left")  # smallest count c with g[c] >= p
    at_a = int(np.searchsorted(band.values, band.a, side="right"))  # scores equal to a
    padded = np.concatenate([band.values, [band.b]])
    out = padded[np.clip(first - 1, 0, band.n)]
    return np.where(first <= at_a, band.a, out)


def mean_tuning_curve(band: CDFBand, k: ArrayLike | None = None, minimize: bool = False) -> Curves:
    """Return the lower band, point estimate (the V-statistic) and upper band of the mean tuning curve.

    The mean of the best of k draws from a CDF G on ``[a, b]`` is ``sum_x (G(x)^k - G(x^-)^k) x``.
    Evaluated at the upper CDF band (stochastically smallest distribution) it bounds the curve
    from below, at the lower CDF band from above. The bands are conservative — they hold with at
    least ``band.confidence`` — and infinite unless ``band.a`` and ``band.b`` are finite.

    Parameters
    ----------
    band : CDFBand
    k : positive float or array of floats, optional
        Default ``1..n``.
    minimize : bool
        Use ``1 - (1 - G)^k`` (the CDF of the minimum).

    Returns
    -------
    lower, point, upper : arrays of floats, one value per budget
    """
    ks = budgets(k, band.n)
    ecdf = np.arange(band.n + 1) / band.n
    lower, upper = mean_tuning_curve_bands(band, ks, minimize)
    return lower, _step_mean(band, ecdf, ks, minimize), upper


def mean_tuning_curve_bands(
    band: CDFBand, k: ArrayLike | None = None, minimize: bool = False
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The lower and upper bands of :func:`mean_tuning_curve` without its point estimate.

    The point estimate is the V-statistic, which :func:`~showwork.statistics.tuning_curve` has
    already; skipping it saves a third of the work at large n.
    """
    ks = budgets(k, band.n)
    return _step_mean(band, band.upper, ks, minimize), _step_mean(band, band.lower, ks, minimize)


def _step_mean(band: CDFBand, g: NDArray[np.float64], ks: NDArray[np.float64], minimize: bool) -> NDArray[np.float64]:
    """Mean of the best of k draws from the step CDF G (values ``g`` at a, y_(1..n); 1 at b), per k.

    Ordered from worst to best (x_0 <= x_1 <= ...; from b down to a when minimizing), point j
    carries the probability ``c_j^k - c_{j-1}^k``, c being the CDF (maximizing) or the survival
    function ``P(X >= x_j)`` (minimizing). Summed by parts, the mean is
    ``x_L - sum_{j<L} c_j^k (x_{j+1} - x_j)`` with L the first point where c reaches 1. Only points
    with ``c_j^k >= exp(-_LOG_MASS_CUTOFF)`` enter the sum (the rest hold under 1e-26 of the mass,
    which is moved up to the first kept point), so a budget costs ~n/k operations instead of n:
    at n = 10^6 the full sums took minutes. ``c^k`` is ``exp(k log c)``, within ~1e-14 relative
    where kept. Tied scores telescope, so no de-duplication.
    """
    points = np.concatenate([[band.a], band.values, [band.b]])
    cdf = np.concatenate([g, [1.0]])
    if minimize:
        points = points[::-1]
        c = 1.0 - np.concatenate([[0.0], cdf[:-1]])[::-1]
    else:
        c = cdf
    # Near the float limit (bounds of ±DBL_MAX) the steps x_{j+1} - x_j overflow: work on the points
    # divided by 4 (exact, a power of two) and scale the means back; they lie within [a, b].
    finite = points[np.isfinite(points)]
    scale = 2 if finite.size and float(np.abs(finite).max()) > 2.0**1020 else 0
    points = np.ldexp(points, -scale)
    last = int(np.searchsorted(c, 1.0, side="left"))  # all the mass is at or before this point
    with np.errstate(divide="ignore"):
        log_c = np.log(c[: last + 1])
    with np.errstate(invalid="ignore"):  # an infinite bound; handled below
        steps = np.diff(points[: last + 1])
    worst, best = float(points[0]), float(points[last])
    buffer = np.empty(last)
    out = np.empty(ks.size)
    for i, k in enumerate(ks.tolist()):
        if not math.isfinite(worst) and math.exp(k * log_c[0]) > 0.0:
            out[i] = worst  # some mass on an infinite worst bound: unbounded
            continue
        if not math.isfinite(best) and last > 0 and math.exp(k * log_c[last - 1]) < 1.0:
            out[i] = best  # some mass on an infinite best bound
            continue
        start = int(np.searchsorted(c[:last], math.exp(-_LOG_MASS_CUTOFF / k), side="left"))
        power = buffer[: last - start]
        np.multiply(log_c[start:last], k, out=power)
        np.exp(power, out=power)
        out[i] = best - float(np.dot(power, steps[start:last])) if power.size else best
    return np.ldexp(out, scale)
