"""The quadratic and noisy-quadratic laws of scores near the optimum (Lourie, He & Cho 2025).

Near a smooth optimum, the score of a random-search trial is (to second order) a quadratic form of
the hyperparameters, and its distribution's tail tends to the *quadratic law*; with seed noise
added, to the *noisy quadratic*. Both are written here through one standard variable,

.. math:: W = W_0 + \\rho E, \\qquad P(W_0 \\le w) = w^{\\gamma/2} \\ (0 \\le w \\le 1), \\qquad E \\sim N(0, 1),

so that a maximized score is :math:`Y = \\beta - s W` and a minimized one :math:`Y = \\alpha + s W`,
with :math:`s = \\beta - \\alpha` and :math:`\\sigma = s \\rho`. The *shape* :math:`(\\gamma, \\rho)`
fixes the law of W; :math:`(\\beta, s)` (or :math:`(\\alpha, s)`) are location and scale. The
functions :func:`shape_cdf`, :func:`shape_pdf`, :func:`shape_ppf` and :func:`shape_mean_of_min`
compute W's law numerically (Gauss–Jacobi quadrature over the normal noise, which absorbs the
power singularity of :math:`W_0`'s density at 0; Newton steps safeguarded by bisection for the
inverse), for any real :math:`\\gamma > 0`; for integer :math:`\\gamma` they agree with opda
0.8.0's closed forms to ~1e-10 (tests/unit/test_quadratic_laws.py).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from showwork.statistics.errors import ArgumentError, check_probability

__all__ = ["NoisyQuadratic", "shape_cdf", "shape_mean_of_min", "shape_pdf", "shape_ppf"]

_NODES = 48  # quadrature nodes per evaluation: ~1e-12 relative on the tests' grid
_NORMAL_REACH = 9.5  # |e| beyond which the normal density is below 1e-19 of its peak
_NEWTON_STEPS = 60


@functools.lru_cache(maxsize=64)
def _jacobi_rule(power: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Nodes and weights on [-1, 1] for the weight ``(1 - x)^power`` (power > -1)."""
    x, w = special.roots_jacobi(_NODES, power, 0.0)
    return x, w


@functools.lru_cache(maxsize=1)
def _legendre_rule() -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    return np.polynomial.legendre.leggauss(_NODES)


def _noise_integral(w: NDArray[np.float64], rho: NDArray[np.float64], power: float) -> NDArray[np.float64]:
    """``∫ (w - rho e)^power φ(e) de`` over ``0 < w - rho e < 1`` (rho > 0), elementwise over w and rho (1-D).

    With ``e0 = w / rho`` (where ``w - rho e`` reaches 0) the integrand is
    ``rho^power (e0 - e)^power φ(e)``: Gauss–Jacobi with the weight ``(e0 - e)^power`` when e0 is
    within the normal's reach, Gauss–Legendre (smooth integrand) when it lies beyond.
    """
    e0 = w / rho
    e1 = (w - 1.0) / rho
    # Where the integrand's mass lies: near 0 while e0 is reachable, in a width ~30/|e0| below e0 past it.
    far = e0 < -8.0
    lo = np.where(far, np.maximum(e1, e0 - 30.0 / np.maximum(np.abs(e0), 1.0)), np.maximum(e1, -_NORMAL_REACH))
    singular = e0 <= _NORMAL_REACH
    hi = np.where(singular, e0, _NORMAL_REACH)
    out = np.zeros_like(w)
    ok = hi > lo
    if not ok.any():
        return out
    half = (hi - lo) / 2.0
    mid = (hi + lo) / 2.0
    jac = ok & singular
    if jac.any():
        x, wt = _jacobi_rule(power)
        h = half[jac]
        e = mid[jac, None] + h[:, None] * x
        out[jac] = (rho[jac] * h) ** power * h * (np.exp(-0.5 * e * e) @ wt) * _INV_SQRT_2PI
    leg = ok & ~singular
    if leg.any():
        x, wt = _legendre_rule()
        e = mid[leg, None] + half[leg, None] * x
        out[leg] = half[leg] * (((w[leg, None] - rho[leg, None] * e) ** power * np.exp(-0.5 * e * e)) @ wt) * _INV_SQRT_2PI
    return out


_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _check_shape(gamma: float, rho: float) -> None:
    if not (math.isfinite(gamma) and gamma > 0):
        raise ArgumentError(f"gamma must be a positive number (got gamma={gamma!r}).")
    if not (math.isfinite(rho) and rho >= 0):
        raise ArgumentError(f"the relative noise rho must be a finite number >= 0 (got rho={rho!r}).")


def _flat(x: ArrayLike, rho: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64], tuple[int, ...]]:
    x, rho = np.broadcast_arrays(np.asarray(x, dtype=float), np.asarray(rho, dtype=float))
    return x.reshape(-1), rho.reshape(-1), x.shape


def shape_cdf(w: ArrayLike, gamma: float, rho: ArrayLike) -> NDArray[np.float64]:
    """H(w) = P(W <= w) for the standard variable W = W0 + rho E of shape (gamma, rho).

    Parameters
    ----------
    w : array of floats
    gamma : float > 0
        Effective number of hyperparameters.
    rho : float >= 0, or an array of them broadcast against w
        Noise relative to the quadratic's range, ``sigma / (beta - alpha)``; 0 is the quadratic law.
    """
    flat, rhos, shape = _flat(w, rho)
    out = np.clip(flat, 0.0, 1.0) ** (gamma / 2.0)
    noisy = rhos > 0
    if noisy.any():
        wn, rn = flat[noisy], rhos[noisy]
        out[noisy] = np.clip(special.ndtr((wn - 1.0) / rn) + _noise_integral(wn, rn, gamma / 2.0), 0.0, 1.0)
    return out.reshape(shape)


def shape_pdf(w: ArrayLike, gamma: float, rho: ArrayLike) -> NDArray[np.float64]:
    """h(w), the density of W of shape (gamma, rho) (infinite at w = 0 when rho = 0 and gamma < 2)."""
    flat, rhos, shape = _flat(w, rho)
    inside = (flat > 0.0) & (flat <= 1.0)
    with np.errstate(divide="ignore"):
        out = np.where(inside, gamma / 2.0 * np.where(inside, flat, 1.0) ** (gamma / 2.0 - 1.0), 0.0)
    noisy = rhos > 0
    if noisy.any():
        out[noisy] = gamma / 2.0 * _noise_integral(flat[noisy], rhos[noisy], gamma / 2.0 - 1.0)
    return out.reshape(shape)


def shape_ppf(p: ArrayLike, gamma: float, rho: ArrayLike) -> NDArray[np.float64]:
    """H^{-1}(p), the p-quantile of W of shape (gamma, rho); -inf at p = 0 (and +inf at 1) when rho > 0.

    Noiseless, ``p^(2/gamma)``. Noisy, Newton's method on log H from ``p^(2/gamma) + rho Φ^{-1}(p)``,
    kept inside the bracket ``[rho Φ^{-1}(p), 1 + rho Φ^{-1}(p)]`` (W0 lies in [0, 1]) by
    bisection, until H(w) is within 1e-12 of p relatively (about 6 steps). rho may be an array
    broadcast against p (one call for many shapes of one gamma).
    """
    flat, rhos, shape = _flat(p, rho)
    if np.any((flat < 0) | (flat > 1) | np.isnan(flat)):
        raise ArgumentError("probabilities must lie in [0, 1].")
    out = flat ** (2.0 / gamma)
    noisy = rhos > 0
    out[noisy & (flat <= 0.0)] = -np.inf
    out[noisy & (flat >= 1.0)] = np.inf
    inner = noisy & (flat > 0.0) & (flat < 1.0)
    if inner.any():
        out[inner] = _noisy_ppf(flat[inner], gamma, rhos[inner])
    return out.reshape(shape)


def _noisy_ppf(target: NDArray[np.float64], gamma: float, rho: NDArray[np.float64]) -> NDArray[np.float64]:
    log_target = np.log(target)
    z = special.ndtri(target)
    lo, hi = rho * z, 1.0 + rho * z
    w = np.clip(target ** (2.0 / gamma) + rho * z, lo, hi)
    active = np.arange(target.size)
    for _ in range(_NEWTON_STEPS):
        if active.size == 0:
            break
        wa, ra = w[active], rho[active]
        cdf = shape_cdf(wa, gamma, ra)
        d = shape_pdf(wa, gamma, ra)
        with np.errstate(divide="ignore"):
            gap = np.log(cdf) - log_target[active]
        below = gap < 0
        lo[active] = np.where(below, wa, lo[active])
        hi[active] = np.where(below, hi[active], wa)
        # Newton on log H (nearly quadratic in the normal lower tail, where H itself is not).
        with np.errstate(divide="ignore", invalid="ignore"):
            step = wa - gap * cdf / d
        lo_a, hi_a = lo[active], hi[active]
        bad = ~np.isfinite(step) | (step <= lo_a) | (step >= hi_a)
        # Done once H(w) is within 1e-12 of p, relatively (the quadrature's own accuracy), or the bracket is closed.
        done = (np.abs(gap) <= 1e-12) | (hi_a - lo_a <= 1e-15 * np.maximum(1.0, np.abs(wa)))
        w[active] = np.where(done, wa, np.where(bad, (lo_a + hi_a) / 2.0, step))
        active = active[~done]
    return w


def shape_mean_of_min(k: ArrayLike, gamma: float, rho: float) -> NDArray[np.float64]:
    """μ_k = E[min of k independent W's] for W of shape (gamma, rho), for each k >= 1.

    Noiseless: the closed form ``Γ(1 + 2/γ) Γ(k + 1) / Γ(k + 1 + 2/γ)``. Noisy:
    ``∫_0^1 H^{-1}(u) dB_k(u)`` with ``B_k(u) = 1 - (1 - u)^k``, on a grid of u log-spaced in the
    lower tail (where the minimum lives), by the trapezoid rule on each cell; within ~1e-5 of s (tested against a quadrature reference).
    """
    ks = np.asarray(k, dtype=float)
    if rho == 0.0:
        a = 2.0 / gamma
        return np.exp(special.gammaln(1.0 + a) + special.gammaln(ks + 1.0) - special.gammaln(ks + 1.0 + a))
    u = _mean_grid()
    wq = shape_ppf(u, gamma, rho)
    return _mean_over_grid(u, wq, ks, rho)


@functools.lru_cache(maxsize=1)
def _mean_grid() -> NDArray[np.float64]:
    low = np.logspace(-16, math.log10(0.02), 600)
    mid = np.linspace(0.02, 0.98, 2001)[1:-1]
    high = 1.0 - np.logspace(math.log10(0.02), -16, 600)
    return np.concatenate([low, mid, high])


def _mean_over_grid(u: NDArray[np.float64], wq: NDArray[np.float64], ks: NDArray[np.float64], rho: float) -> NDArray[np.float64]:
    """∫ H^{-1} dB_k over the grid ``u`` (quantiles ``wq``), the ends by the normal tail (negligible)."""
    cum = -np.expm1(ks[:, None] * np.log1p(-u)[None, :])  # B_k(u) per k, per grid point
    mass = np.diff(cum, axis=1)
    mids = (wq[1:] + wq[:-1]) / 2.0
    return mass @ mids + cum[:, 0] * wq[0] + (1.0 - cum[:, -1]) * wq[-1]


def _check_budgets(k: ArrayLike) -> NDArray[np.float64]:
    ks = np.asarray(k, dtype=float)
    if np.any(~np.isfinite(ks) | (ks < 1)):
        raise ArgumentError("budgets k must be finite numbers >= 1.")
    return ks


@dataclass(frozen=True)
class NoisyQuadratic:
    r"""The noisy-quadratic law of a score near its optimum; ``sigma = 0`` is the quadratic law.

    Maximizing (the concave form, ``minimize=False``): :math:`Y = \beta - (\beta - \alpha) W_0 + \sigma E`,
    so that without noise :math:`P(Y \le y) = 1 - ((\beta - y)/(\beta - \alpha))^{\gamma/2}` on
    :math:`[\alpha, \beta]` and the best score more tuning can reach is β. Minimizing (the convex
    form): :math:`Y = \alpha + (\beta - \alpha) W_0 + \sigma E`, :math:`P(Y \le y) =
    ((y - \alpha)/(\beta - \alpha))^{\gamma/2}` without noise, the best score α. The two are
    mirror images: :math:`Y \sim Q_{\max}(\alpha, \beta, \gamma, \sigma) \iff -Y \sim
    Q_{\min}(-\beta, -\alpha, \gamma, \sigma)`. W0 has CDF :math:`w^{\gamma/2}` on [0, 1] and E is
    standard normal, independent of it.

    Attributes
    ----------
    alpha, beta : finite floats, alpha < beta
        The ends of the quadratic part's support (both included).
    gamma : float > 0
        The effective number of hyperparameters (opda: integer c from 1 to 10; any real here).
    sigma : float >= 0, default 0
        The standard deviation of the additive normal (seed) noise.
    minimize : bool, default False
        The convex form (lower scores are better).

    Examples
    --------
    >>> law = NoisyQuadratic(0.0, 1.0, 2.0)
    >>> float(law.cdf(0.75)), float(law.quantile_tuning_curve(1))
    (0.75, 0.5)
    """

    alpha: float
    beta: float
    gamma: float
    sigma: float = 0.0
    minimize: bool = False

    def __post_init__(self) -> None:
        for name in ("alpha", "beta", "gamma", "sigma"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
                raise ArgumentError(f"{name} must be a number (got {name}={value!r}).")
            object.__setattr__(self, name, float(value))
        if not (math.isfinite(self.alpha) and math.isfinite(self.beta) and self.alpha < self.beta):
            raise ArgumentError(f"alpha and beta must be finite with alpha < beta (got alpha={self.alpha!r}, beta={self.beta!r}).")
        if not (math.isfinite(self.sigma) and self.sigma >= 0):
            raise ArgumentError(f"sigma must be a finite number >= 0 (got sigma={self.sigma!r}).")
        _check_shape(self.gamma, self.rho)
        object.__setattr__(self, "minimize", bool(self.minimize))

    @property
    def scale(self) -> float:
        """s = beta - alpha, the range of the quadratic part."""
        return self.beta - self.alpha

    @property
    def rho(self) -> float:
        """sigma / (beta - alpha), the noise relative to the range (with gamma, the law's shape)."""
        return self.sigma / (self.beta - self.alpha)

    @property
    def best(self) -> float:
        """The asymptote of the tuning curves: beta when maximizing, alpha when minimizing."""
        return self.alpha if self.minimize else self.beta

    def _standard(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        """W for the score y: (beta - y) / s maximizing, (y - alpha) / s minimizing."""
        return (y - self.alpha) / self.scale if self.minimize else (self.beta - y) / self.scale

    def _score(self, w: NDArray[np.float64]) -> NDArray[np.float64]:
        return self.alpha + self.scale * w if self.minimize else self.beta - self.scale * w

    def cdf(self, y: ArrayLike) -> NDArray[np.float64]:
        """P(Y <= y) for each y."""
        w = self._standard(np.asarray(y, dtype=float))
        h = shape_cdf(w, self.gamma, self.rho)
        if self.minimize:
            return h
        # 1 - H((beta - y)/s), continuous, so P(Y <= y) = P(W >= w); 1 - H is exact where H is tiny.
        return 1.0 - h

    def pdf(self, y: ArrayLike) -> NDArray[np.float64]:
        """The density of Y at each y."""
        w = self._standard(np.asarray(y, dtype=float))
        return shape_pdf(w, self.gamma, self.rho) / self.scale

    def ppf(self, p: ArrayLike) -> NDArray[np.float64]:
        """The p-quantile of Y, ``inf {y : P(Y <= y) >= p}``, for each p in [0, 1]."""
        p = np.asarray(p, dtype=float)
        if np.any((p < 0) | (p > 1) | np.isnan(p)):
            raise ArgumentError("probabilities p must lie in [0, 1].")
        w = shape_ppf(p if self.minimize else 1.0 - p, self.gamma, self.rho)
        return self._score(w)

    def sample(self, size: int | tuple[int, ...], rng: np.random.Generator) -> NDArray[np.float64]:
        """Draw i.i.d. scores: W0 by inversion of its CDF, E standard normal, from ``rng``."""
        w0 = rng.random(size) ** (2.0 / self.gamma)
        w = w0 + self.rho * rng.standard_normal(size) if self.sigma > 0 else w0
        return self._score(w)

    def quantile_tuning_curve(self, k: ArrayLike, quantile: float = 0.5) -> NDArray[np.float64]:
        """The q-quantile of the best of k scores: ``ppf(q^(1/k))`` maximizing, ``ppf(1 - (1 - q)^(1/k))`` minimizing.

        k: real numbers >= 1; the curve rises (falls when minimizing) with k towards :attr:`best`.
        """
        check_probability(quantile, "quantile")
        ks = _check_budgets(k)
        # The best of k is beta - s min(W_1..W_k) (alpha + s min when minimizing): a quantile of the minimum.
        level = -np.expm1(np.log1p(-quantile) / ks) if self.minimize else -np.expm1(math.log(quantile) / ks)
        return self._score(shape_ppf(level, self.gamma, self.rho))

    def mean_tuning_curve(self, k: ArrayLike) -> NDArray[np.float64]:
        """The expected best of k scores, ``beta - s μ_k`` (``alpha + s μ_k`` minimizing), μ_k from :func:`shape_mean_of_min`."""
        ks = _check_budgets(k)
        return self._score(shape_mean_of_min(ks, self.gamma, self.rho))
