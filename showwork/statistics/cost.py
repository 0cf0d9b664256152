"""The budget axis in compute rather than trials (Dodge et al. 2019, §3).

Random search spends, on average, k × (mean runtime of a trial) to run k trials, so a tuning curve
over k is also a curve over expected cost. Failed trials cost time too and count in the mean.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from showwork.constants import COST_UNITS
from showwork.statistics.errors import ArgumentError
from showwork.statistics.point_estimates import exact_mean

__all__ = ["COST_UNITS", "mean_runtime", "budget_cost", "budget_for_cost"]



def mean_runtime(runtimes: ArrayLike) -> float:
    """Return the mean runtime in seconds over the trials whose runtime is known.

    Raises
    ------
    ValueError
        If no runtime is finite, or one is negative.
    """
    rs = np.asarray(runtimes, dtype=float)
    if rs.ndim != 1:
        raise ArgumentError(f"runtimes must be a 1-D list of numbers (one per trial), not a {rs.ndim}-D array.")
    rs = rs[np.isfinite(rs)]
    if rs.size == 0:
        raise ArgumentError("no finite runtime: the cost axis needs at least one measured trial.")
    if np.any(rs < 0):
        raise ArgumentError(f"runtimes must be non-negative (got {float(rs[rs < 0][0])!r}).")
    return exact_mean(rs)  # no overflow for huge runtimes (the cost axis then says how large)


def _seconds_per_unit(unit: str, gpus_per_trial: float) -> float:
    if unit not in COST_UNITS:
        raise ArgumentError(f"unit must be one of {', '.join(COST_UNITS)} (got {unit!r}).")
    if not gpus_per_trial > 0:
        raise ArgumentError(f"gpus_per_trial must be positive (got {gpus_per_trial!r}).")
    return COST_UNITS[unit] / (gpus_per_trial if unit == "gpu-hours" else 1.0)


def budget_cost(k: ArrayLike, mean_runtime_s: float, unit: str = "hours", gpus_per_trial: float = 1.0) -> NDArray[np.float64]:
    """Expected cost of k trials: ``k × mean_runtime`` expressed in ``unit`` (inf beyond the float range).

    Examples
    --------
    >>> budget_cost([1, 10], 360.0, unit="hours").tolist()
    [0.1, 1.0]
    >>> budget_cost([10], 360.0, unit="gpu-hours", gpus_per_trial=0.5).tolist()
    [0.5]
    """
    # The runtime is converted first, so that k × runtime overflows only where the cost itself exceeds
    # the float range (1.8e308); it is then inf, without a warning.
    with np.errstate(over="ignore"):
        return np.asarray(k, dtype=float) * (mean_runtime_s / _seconds_per_unit(unit, gpus_per_trial))


def budget_for_cost(cost: ArrayLike, mean_runtime_s: float, unit: str = "hours", gpus_per_trial: float = 1.0) -> NDArray[np.float64]:
    """Inverse of :func:`budget_cost`: the (real-valued) number of trials a cost buys."""
    if not mean_runtime_s > 0:
        raise ArgumentError(f"mean runtime must be positive to convert cost to trials (got {float(mean_runtime_s)!r}).")
    return np.asarray(cost, dtype=float) * _seconds_per_unit(unit, gpus_per_trial) / mean_runtime_s
