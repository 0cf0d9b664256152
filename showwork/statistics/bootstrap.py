"""Percentile-bootstrap intervals of the V- and U-statistics: the baseline that fails.

Tang et al. (2020, Fig. 4) and Lourie et al. (2024, Fig. 5) show that these intervals under-cover
badly — about 0.7 at k = 20 and 0.5 at k = 50 for a nominal 0.95 with B = 50 — because the best
of k depends on the upper tail, which a resample of B scores cannot reach beyond its own maximum.
They are here so that reports and experiments can show that failure; use the bands of
:mod:`showwork.statistics.tuning_curve_bands` for inference.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from showwork.statistics.errors import ArgumentError, check_probability
from showwork.statistics.point_estimates import budgets, scale_exponent, sorted_for_tuning, u_weights, v_weights

__all__ = ["bootstrap_interval"]


def bootstrap_interval(
    scores: ArrayLike,
    k: ArrayLike | None = None,
    statistic: str = "v",
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
    minimize: bool = False,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Return pointwise percentile-bootstrap intervals of the V- or U-statistic.

    Parameters
    ----------
    scores : 1-D array of finite floats
    k : budgets, optional
        Default ``1..B``. For ``statistic="u"`` budgets above B give NaN.
    statistic : {"v", "u"}
    confidence : float strictly between 0 and 1
        Nominal pointwise coverage.
    n_resamples : int
        Bootstrap resamples (with replacement, size B each).
    seed : int
        Seed of the resampling; the same seed gives the same intervals.
    minimize : bool

    Returns
    -------
    lower, upper : arrays of floats, one per budget
    """
    if statistic not in ("v", "u"):
        raise ArgumentError(f"statistic must be 'v' or 'u' (got {statistic!r}).")
    check_probability(confidence, "confidence")
    if n_resamples < 1:
        raise ArgumentError(f"n_resamples must be positive (got {n_resamples!r}).")
    ys = sorted_for_tuning(scores, minimize)
    n = ys.size
    ks = budgets(k, n)
    rng = np.random.default_rng(seed)
    resamples = np.sort(rng.choice(ys, size=(n_resamples, n), replace=True), axis=1)
    if minimize:
        resamples = resamples[:, ::-1]
    weights = np.zeros((n, ks.size))
    valid = np.ones(ks.size, dtype=bool)
    for i, kk in enumerate(ks):
        if statistic == "v":
            start, w = v_weights(n, float(kk))
        elif kk == int(kk) and kk <= n:
            start, w = u_weights(n, int(kk))
        else:
            valid[i] = False
            continue
        weights[start:, i] = w
    # On scores divided by a power of two (exact), so that no weighted sum or quantile interpolation
    # overflows near the float limit; every weighted mean lies within the scores, up to rounding.
    e = scale_exponent(ys)
    values = np.clip(np.ldexp(resamples, -e) @ weights, math.ldexp(float(ys.min()), -e), math.ldexp(float(ys.max()), -e))
    alpha = (1.0 - confidence) / 2.0
    lower, upper = np.ldexp(np.quantile(values, [alpha, 1.0 - alpha], axis=0), e)
    lower[~valid] = np.nan
    upper[~valid] = np.nan
    return lower, upper
