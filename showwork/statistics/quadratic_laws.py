"""The quadratic and noisy-quadratic laws of scores near the optimum (Lourie, He & Cho 2025).

API SKELETON (branch i38-core): bodies being written; names are the contract.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["NoisyQuadratic"]


@dataclass(frozen=True)
class NoisyQuadratic:
    """Y = Q + sigma * E, E ~ N(0, 1), Q quadratic on [alpha, beta] with gamma effective hyperparameters.

    Concave form (maximizing): P(Q <= y) = 1 - ((beta - y) / (beta - alpha))^(gamma / 2); convex form
    (``minimize=True``): P(Q <= y) = ((y - alpha) / (beta - alpha))^(gamma / 2). sigma = 0 is the
    (noiseless) quadratic law.
    """

    alpha: float
    beta: float
    gamma: float
    sigma: float = 0.0
    minimize: bool = False

    def cdf(self, y: ArrayLike) -> NDArray[np.float64]: ...
    def pdf(self, y: ArrayLike) -> NDArray[np.float64]: ...
    def ppf(self, p: ArrayLike) -> NDArray[np.float64]: ...
    def sample(self, size: int | tuple[int, ...], rng: np.random.Generator) -> NDArray[np.float64]: ...
    def quantile_tuning_curve(self, k: ArrayLike, quantile: float = 0.5) -> NDArray[np.float64]: ...
    def mean_tuning_curve(self, k: ArrayLike) -> NDArray[np.float64]: ...
