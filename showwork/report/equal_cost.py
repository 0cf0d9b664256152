"""Per-trial costs of a family, for comparisons at equal compute (``--cost runtime|COLUMN``).

Lourie, Cho & He (2024, §2) and Dodge et al. (2019, budgets in time) compare model families at equal
total cost c rather than equal numbers of trials: each family at k = c / (its mean cost per trial).
A trial's cost is its runtime (``runtime``) or a value it recorded (``COLUMN``: epochs, FLOPs, ...):
a column of a results file, or a hyperparameter or final metric of a ledger, MLflow, Ray or Optuna
trial. Failed trials cost too: they count in the mean.
"""

from __future__ import annotations

import math

import numpy as np

from showwork.errors import InputError
from showwork.report.inputs import FamilyResults

__all__ = ["RUNTIME_COST", "trial_costs"]

RUNTIME_COST = "runtime"
"""``--cost runtime``: each trial's wall time in seconds (a ledger's runtime_s, a results file's --runtime column)."""


def trial_costs(results: FamilyResults, cost: str) -> np.ndarray:
    """The cost of every trial of ``results`` (failed ones included), NaN where not recorded.

    Parameters
    ----------
    results : FamilyResults
    cost : str
        ``"runtime"`` (seconds), or the name of a per-trial value: a hyperparameter (``params``),
        else a final metric (``trial_metrics``).

    Raises
    ------
    InputError
        No trial records the cost, a recorded cost is not a number, or one is negative or infinite.
    """
    where = f"{results.name} ({results.source})"
    if cost == RUNTIME_COST:
        if results.runtimes_s is None or not np.isfinite(results.runtimes_s).any():
            raise InputError(f"{where}: --cost runtime needs each trial's runtime; none was recorded"
                             " (a results file: give --runtime COLUMN)")
        values = np.asarray(results.runtimes_s, dtype=float)
    else:
        values = np.array([_recorded(results, i, cost, where) for i in range(results.n_trials)], dtype=float)
        if not np.isfinite(values).any():
            raise InputError(f"{where}: no trial recorded the cost {cost!r} (a hyperparameter or metric of each trial;"
                             " a results file: the column is read as one)")
    bad = values[(values < 0) | np.isinf(values)]
    if bad.size:
        raise InputError(f"{where}: the cost {cost!r} of a trial is {float(bad[0])!r}; costs must be finite and >= 0")
    return values


def _recorded(results: FamilyResults, i: int, cost: str, where: str) -> float:
    value = (results.params[i] if results.params else {}).get(cost)
    if value is None:
        value = (results.trial_metrics[i] if results.trial_metrics else {}).get(cost)
    if value is None:
        return math.nan
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"{where}: trial {i + 1} records the cost {cost!r} as {value!r}, not a number")
    return float(value)
