"""Extrapolated tuning curves past the search (Lourie, He & Cho 2025, "Hyperparameter Loss Surfaces
Are Simple Near their Optima").

API SKELETON (branch i38-core): the bodies are being written; the names, fields and JSON keys
below are the contract the commands, the report and the experiments code against.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from showwork.statistics.quadratic_laws import NoisyQuadratic
from showwork.statistics.tuning_curves import TuningCurve

__all__ = ["Estimate", "Extrapolation", "ExtrapolationRefused", "GoodnessOfFit", "extrapolate"]


@dataclass(frozen=True)
class Estimate:
    """A point estimate and its confidence interval (the range over the consonant laws)."""

    estimate: float
    lower: float
    upper: float

    def to_dict(self) -> dict: ...


@dataclass(frozen=True)
class GoodnessOfFit:
    """The test of the tail against the noisy-quadratic family: ``rejected`` refuses the extrapolation."""

    test: str  # what was tested, in words
    statistic: float
    p_value: float | None
    rejected: bool

    def to_dict(self) -> dict: ...


@dataclass(frozen=True)
class Extrapolation:
    """The median (q-quantile) tuning curve from k = 1 to K with a band at the curve's confidence.

    ``source[i]`` is "nonparametric" where the exact band is informative (k <= ``informative_k``)
    and "model-based" past it, where the band holds only if the tail is noisy-quadratic.
    """

    k: NDArray[np.float64]  # 1..K
    point: NDArray[np.float64]  # the fitted law's q-quantile tuning curve
    lower: NDArray[np.float64]
    upper: NDArray[np.float64]
    source: NDArray[np.str_]  # "nonparametric" | "model-based"
    mean_point: NDArray[np.float64] | None  # the fitted law's mean tuning curve
    mean_lower: NDArray[np.float64] | None  # None unless the curve's a and b are finite
    mean_upper: NDArray[np.float64] | None
    informative_k: float
    asymptote: Estimate  # beta (alpha when minimizing): the best score more tuning can reach
    gamma: Estimate  # effective number of hyperparameters
    sigma: Estimate  # seed noise (standard deviation)
    law: NoisyQuadratic  # the fitted law (of the tail)
    goodness_of_fit: GoodnessOfFit
    tail_fraction: float
    threshold: float  # scores beyond it (above when maximizing) are the tail
    n: int
    n_tail: int
    confidence: float
    method: str
    quantile: float
    minimize: bool

    @property
    def K(self) -> int: ...

    def trials_within(self, epsilon: float) -> tuple[int | None, int | None]:
        """Trials for the q-quantile curve to come within ``epsilon`` of the asymptote: (by the fit, for every consonant law); None if beyond reach."""
        ...

    def to_dict(self) -> dict:
        """JSON: ``{"k", "median", "lower", "upper", "source", "mean_*"?, "informative_k", "estimates": {"asymptote", "gamma", "sigma"}, "goodness_of_fit", "tail_fraction", "threshold", "n", "n_tail", "confidence", "method", "quantile", "minimize", "assumption"}`` (non-finite → None)."""
        ...


@dataclass(frozen=True)
class ExtrapolationRefused:
    """No extrapolation: the reason, one sentence a user can act on."""

    reason: str
    tail_fraction: float

    def to_dict(self) -> dict:
        return {"refused": self.reason}


def extrapolate(curve: TuningCurve, K: int, *, tail_fraction: float | None = None) -> Extrapolation | ExtrapolationRefused:
    """Extrapolate ``curve`` (its scores, band settings, quantile, minimize, a and b) to budgets 1..K."""
    raise NotImplementedError
