"""The budget axis in compute rather than trials (Dodge et al. 2019, §3).

Random search spends, on average, k × (cost of a trial) to run k trials, so a tuning curve over k
is also a curve over expected cost. Failed trials cost time too. What "a trial" is follows the
failure policy (:func:`cost_per_trial`): where failures count as the worst score every trial is a
trial of the curve, and one costs the mean cost of all trials; where failures are excluded the
curve counts successful trials, and one costs the compute of all trials over the successful ones
(the failed attempts it took included).
"""

from __future__ import annotations

import math
from typing import Mapping

import numpy as np
from numpy.typing import ArrayLike, NDArray

from showwork.constants import COST_UNITS
from showwork.statistics.errors import ArgumentError
from showwork.statistics.failures import FailureReport
from showwork.statistics.point_estimates import exact_mean

__all__ = ["COST_UNITS", "mean_runtime", "cost_per_trial", "budget_cost", "budget_for_cost", "EQUAL_COST_POINTS", "equal_cost_axis"]

EQUAL_COST_POINTS = 120
"""Points of the cost axis on which families are compared at equal compute (geometric spacing)."""

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


def cost_per_trial(costs: ArrayLike, failures: FailureReport | None = None) -> float:
    """Expected cost of one trial of a tuning curve: the compute of all the trials over the trials it counts.

    With n trials of mean known cost m (failed trials included; a trial that recorded no cost, NaN,
    is left out of the mean), the search's total cost is T = n m (the sum, where every cost is
    known). The curve counts N trials (:attr:`FailureReport.n_counted`), and one of them costs T / N:

    - failures counted as the worst score (``worst``), or none failed: N = n, so m. Every trial is
      a trial of the curve, a failed one at its own cost.
    - failures excluded (``exclude``): the curve is the distribution of a *successful* trial's score
      and k counts successful trials, N = n_ok of them. A search that gets k successes also runs
      the failed trials among them: with i.i.d. trials that succeed with probability p, the
      attempts per success are geometric with mean 1/p, so by Wald's identity a success costs
      m / p on average, failed and successful trials' costs differing or not; with p estimated
      by n_ok / n that is m n / n_ok = T / n_ok. The mean cost of all trials, m, would charge a
      search of k successes for k attempts only.

    At total cost c the curve is then read at k = c / (T / N) = c N / T (Lourie, Cho & He 2024, §2;
    Dodge et al. 2019's budgets in time): :func:`equal_cost_axis`.

    Parameters
    ----------
    costs : 1-D array of floats
        Every trial's cost (runtime, epochs, ...), in trial order, failed trials included; NaN
        where not recorded; at least one finite, none negative.
    failures : FailureReport, optional
        What the curve's failure policy did (:func:`~showwork.statistics.apply_failure_policy`);
        None: every trial is a trial of the curve.

    Returns
    -------
    float
        T / N, in the unit of ``costs``.

    Examples
    --------
    >>> from showwork.statistics.failures import FailureReport
    >>> costs = [1.0, 1.0, 3.0, 3.0]  # 8 epochs in all; the last two trials failed after 3 epochs each
    >>> cost_per_trial(costs, FailureReport("worst", 4, (2, 3))), cost_per_trial(costs, FailureReport("exclude", 4, (2, 3)))
    (2.0, 4.0)
    """
    m = mean_runtime(costs)
    if failures is None:
        return m
    n = np.shape(costs)[0]
    if n != failures.n_trials:
        raise ArgumentError(f"give one cost per trial: {n} costs for the {failures.n_trials} trials of the failure report.")
    return m * (n / failures.n_counted)  # the ratio first: m × n could overflow where m × n / N does not


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


def equal_cost_axis(
    mean_costs: Mapping[str, float], n_trials: Mapping[str, int], points: int = EQUAL_COST_POINTS
) -> tuple[NDArray[np.float64], dict[str, NDArray[np.float64]]]:
    """The total costs at which families are compared at equal compute, and each family's budget there.

    At total cost c a family whose curve's trials cost ``m`` each on average runs ``k = c / m`` of
    them (Lourie et al. 2024, §2; Dodge et al. 2019's budgets in time); k need not be an integer
    (the band is F^k). The axis starts where every family has at least one trial (the largest cost
    per trial) and ends at the largest total cost n × m of a family: where the family with the most
    compute has run all its trials; it is geometric, ``points`` points (fewer when they coincide).

    Parameters
    ----------
    mean_costs : mapping name -> float
        Expected cost of one trial of each family's curve (any unit, the same for all):
        :func:`cost_per_trial`, which charges the failed trials to the curve's trials.
    n_trials : mapping name -> int
        The trials each family's curve counts (same keys): all of them, or the successful ones
        where failures are excluded (:attr:`~showwork.statistics.FailureReport.n_counted`), so
        that n × m is the family's total cost.

    Returns
    -------
    cost : array of float, increasing
    budgets : dict name -> array of float
        ``cost / mean_costs[name]``: the family's budget in trials at each point.

    Examples
    --------
    >>> cost, ks = equal_cost_axis({"cheap": 0.5, "dear": 2.0}, {"cheap": 10, "dear": 4}, points=3)
    >>> cost.round(9).tolist(), ks["cheap"].round(9).tolist(), ks["dear"].round(9).tolist()
    ([2.0, 4.0, 8.0], [4.0, 8.0, 16.0], [1.0, 2.0, 4.0])
    """
    if set(mean_costs) != set(n_trials) or not mean_costs:
        raise ArgumentError("give the mean cost and the number of trials of the same families.")
    for name, m in mean_costs.items():
        if not (math.isfinite(m) and m > 0):
            raise ArgumentError(f"{name}: the mean cost of a trial must be a positive number to compare at equal cost (got {m!r}).")
    start = max(mean_costs.values())
    end = max(max(n_trials[name], 1) * m for name, m in mean_costs.items())
    cost = np.unique(np.geomspace(start, end, max(int(points), 1))) if end > start else np.array([start])
    cost[0], cost[-1] = start, max(end, start)  # exact ends: the dearest family at k = 1; the biggest search at its n
    return cost, {name: cost / m for name, m in mean_costs.items()}
