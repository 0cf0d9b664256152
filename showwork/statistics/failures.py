"""Failed trials: an explicit policy, applied and reported, never a silent drop.

A trial whose score is missing, NaN or infinite (diverged, crashed, timed out) is *failed*.
Dropping failures silently biases every tuning-curve estimate upwards: a configuration that
fails is part of what random search costs. Three policies:

- ``error`` (the default): refuse, naming how many trials failed and the first one.
- ``worst``: count each failure as the worst value — the support bound (``a`` when maximizing,
  ``b`` when minimizing) if known, else the worst finished score. This keeps i.i.d. sampling
  intact (the failure is an outcome of the configuration) and is conservative.
- ``exclude``: drop them with a warning. This estimates the curve *conditional on success*.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from showwork.constants import FAILURE_POLICIES
from showwork.statistics.errors import ArgumentError

__all__ = ["FAILURE_POLICIES", "FailedTrialsError", "FailureReport", "apply_failure_policy", "worst_bound"]


class FailedTrialsError(ArgumentError):
    """Policy ``error`` met failed trials; ``failed`` holds their positions (0-based, in the order given).

    Callers that know how their trials are named (a file's rows and lines, Ray's trial ids, a
    ledger's indices) name the first one in those terms from ``failed[0]`` (:meth:`what`).
    """

    def __init__(self, failed: tuple[int, ...], n_trials: int) -> None:
        self.failed = failed
        self.n_trials = n_trials
        super().__init__(self.what(f"trial {failed[0] + 1}, counting from 1 in the order given"))

    def what(self, first: str) -> str:
        """The message with the first failed trial named as ``first``."""
        return (
            f"{len(self.failed)} of {self.n_trials} trials have no finite score (the first is {first});"
            " choose a failure policy: 'worst' counts them as the worst value, 'exclude' drops them."
        )


@dataclass(frozen=True)
class FailureReport:
    """What the failure policy did.

    Attributes
    ----------
    policy : str
    n_trials : int
        Trials recorded, failed ones included.
    failed : tuple of int
        Positions (0-based, in the order given) of the failed trials.
    replacement : float or None
        The value failures were counted as (policy ``worst``).
    """

    policy: str
    n_trials: int
    failed: tuple[int, ...]
    replacement: float | None = None

    @property
    def n_failed(self) -> int:
        return len(self.failed)

    @property
    def n_counted(self) -> int:
        """The trials the curve counts (its n, what k counts): every trial, failed ones as the worst
        value (``worst``); the successful ones only (``exclude``)."""
        return self.n_trials - self.n_failed if self.policy == "exclude" else self.n_trials

    def describe(self) -> str:
        if not self.failed:
            return f"{self.n_trials} trials, none failed"
        head = f"{self.n_failed} of {self.n_trials} trials failed"
        if self.policy == "worst":
            return f"{head}; counted as the worst value {self.replacement!r}"
        return f"{head}; excluded (the curve is conditional on success)"


def apply_failure_policy(
    scores: ArrayLike,
    policy: str = "error",
    minimize: bool = False,
    a: float = -math.inf,
    b: float = math.inf,
) -> tuple[NDArray[np.float64], FailureReport]:
    """Apply a failure policy to raw scores, in trial order.

    Parameters
    ----------
    scores : 1-D array of floats
        One score per trial; NaN or ±inf marks a failed trial.
    policy : {"error", "worst", "exclude"}
    minimize : bool
        Whether lower scores are better (decides what "worst" means).
    a, b : floats
        Known support bounds; with ``worst``, failures count as ``a`` (maximizing) or ``b``
        (minimizing) when that bound is finite.

    Returns
    -------
    scores : array of finite floats, in trial order
    report : FailureReport

    Raises
    ------
    FailedTrialsError
        Policy ``error`` with failed trials.
    ArgumentError
        No finished trial at all; unknown policy.
    """
    if policy not in FAILURE_POLICIES:
        raise ArgumentError(f"failure policy must be one of {', '.join(FAILURE_POLICIES)} (got {policy!r}).")
    ys = np.asarray(scores, dtype=float)
    if ys.ndim != 1:  # a table of scores flattened would be read as one long search
        raise ArgumentError(f"scores must be a 1-D list of numbers (one per trial), not a {ys.ndim}-D array.")
    bad = ~np.isfinite(ys)
    failed = tuple(int(i) for i in np.flatnonzero(bad))
    if not failed:
        return ys, FailureReport(policy, ys.size, ())
    if bad.all():
        raise ArgumentError(f"all {ys.size} trials failed (no finite score): there is nothing to estimate.")
    if policy == "error":
        raise FailedTrialsError(failed, int(ys.size))
    if policy == "exclude":
        warnings.warn(
            f"excluding {len(failed)} failed trials of {ys.size}; the tuning curve is conditional on success.",
            UserWarning,
            stacklevel=2,
        )
        return ys[~bad], FailureReport(policy, ys.size, failed)
    bound = worst_bound(minimize, a, b)
    worst = bound if bound is not None else float(ys[~bad].max() if minimize else ys[~bad].min())
    out = ys.copy()
    out[bad] = worst
    return out, FailureReport(policy, ys.size, failed, worst)


def worst_bound(minimize: bool, a: float = -math.inf, b: float = math.inf) -> float | None:
    """The worst score the support allows: ``b`` when minimizing, ``a`` when maximizing; None where that bound is infinite.

    What policy ``worst`` counts a failure as, when the support is bounded.
    """
    bound = float(b if minimize else a)
    return bound if math.isfinite(bound) else None
