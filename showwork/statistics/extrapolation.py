"""Extrapolated tuning curves past the search (Lourie, He & Cho 2025, "Hyperparameter Loss Surfaces
Are Simple Near their Optima").

The exact nonparametric bands of a tuning curve go trivial past the informative budget (about n/6
trials). Near the optimum the law of the scores' tail tends to a noisy quadratic
(:class:`~showwork.statistics.quadratic_laws.NoisyQuadratic`); taking the best
``tail_fraction`` of the trials to follow one, :func:`extrapolate` fits it and bands its tuning
curve past the search with the *consonance set*: the noisy-quadratic laws whose CDF lies inside the
curve's own simultaneous CDF band at the tail's scores.

The consonance set, computed. Write a maximized score as ``Y = beta - s W`` with W of shape
``(gamma, rho)`` (:func:`~showwork.statistics.quadratic_laws.shape_cdf` H). For a fixed shape,
``P(Y <= y) = 1 - H((beta - y) / s)``, and the band's constraint at a tail score y_i,
``L_i <= F(y_i) <= U_i⁻``, reads ``s H^{-1}(1 - U_i⁻) <= beta - y_i <= s H^{-1}(1 - L_i)``:
linear in (beta, s). The consonant (beta, s) of a shape form a convex polygon, and every quantity
banded here is linear in (beta, s) too — the q-quantile tuning curve ``beta - s H^{-1}(1 - q^{1/k})``,
the asymptote beta, the noise ``s rho`` — so its extremes over the polygon are at the polygon's
vertices: exact two-variable linear programmes, solved by enumerating the vertices once per shape.
Over the shapes: gamma in :data:`~showwork.constants.EXTRAPOLATION_GAMMAS`, rho on a grid with the
ends of each gamma's consonant rho range found by bisection (see :func:`extrapolate`).

What holds. On the event that the CDF band holds (probability at least ``confidence``, exactly as
for the nonparametric bands), the true law is consonant whenever the scores' law above the tail's
threshold is noisy-quadratic; so the model-based bands and the intervals of the asymptote, gamma
and sigma hold at ``confidence`` under that assumption only. The nonparametric part is exact
(conservative over integer budgets, as everywhere). An empty consonance set is a
level-(1 - confidence) rejection of the noisy-quadratic tail, and refuses the extrapolation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import optimize, special

from showwork.constants import EXTRAPOLATION_GAMMAS, EXTRAPOLATION_MIN_TAIL_TRIALS, EXTRAPOLATION_TAIL_FRACTION
from showwork.statistics.errors import ArgumentError
from showwork.statistics.planning import informative_budget
from showwork.statistics.quadratic_laws import NoisyQuadratic, shape_cdf, shape_ppf
from showwork.statistics.tuning_curve_bands import quantile_levels, quantile_tuning_curve
from showwork.statistics.tuning_curves import TuningCurve

__all__ = ["Estimate", "Extrapolation", "ExtrapolationRefused", "GoodnessOfFit", "extrapolate"]

ASSUMPTION = (
    "Past the informative budget the band holds only if the scores' law above the tail's threshold is "
    "noisy-quadratic (Lourie, He & Cho 2025); up to it the band is the exact nonparametric one."
)
_RHOS = np.concatenate([[0.0], np.geomspace(1e-3, 100.0, 16)])  # relative noise sigma / (beta - alpha)
_BISECTIONS = 10  # per end of a gamma's consonant rho range: the end within 2^-10 of a grid step
_BOX = 1e6  # the polygon is clipped to |beta|, s within 1e6 spans of the scores; a vertex there is "unbounded"
_MAX_BUDGET = 1e9  # trials_within: beyond it, None


def _none_if_not_finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def _json_list(values: NDArray[np.float64] | None) -> list | None:
    if values is None:
        return None
    return [_none_if_not_finite(x) for x in np.asarray(values, dtype=float).tolist()]


@dataclass(frozen=True)
class Estimate:
    """A point estimate (of the fitted law) and its confidence interval (its range over the consonant laws).

    ``lower`` or ``upper`` is infinite where the consonant laws do not bound it.
    """

    estimate: float
    lower: float
    upper: float

    def to_dict(self) -> dict:
        return {"estimate": _none_if_not_finite(self.estimate), "lower": _none_if_not_finite(self.lower), "upper": _none_if_not_finite(self.upper)}


@dataclass(frozen=True)
class GoodnessOfFit:
    """The test of the tail against the noisy-quadratic family; ``rejected`` refuses the extrapolation.

    Attributes
    ----------
    test : str
        What was tested, in words.
    statistic : float
        The test's statistic (for the consonance test, the number of consonant shapes).
    p_value : float or None
        None where the test gives only a decision at its level.
    rejected : bool
    """

    test: str
    statistic: float
    p_value: float | None
    rejected: bool

    def to_dict(self) -> dict:
        return {"test": self.test, "statistic": _none_if_not_finite(self.statistic), "p_value": self.p_value, "rejected": self.rejected}


@dataclass(frozen=True)
class Extrapolation:
    """The q-quantile (median for q = 0.5) tuning curve from k = 1 to K with a band at the curve's confidence.

    ``source[i]`` is "nonparametric" where the exact band is informative (k <= ``informative_k``)
    and "model-based" past it, where the band is the intersection of the consonance band (which
    holds only if the tail is noisy-quadratic) with the nonparametric one (exact, trivial on one
    side there). ``point`` is the fitted law's curve at every k. The mean-curve fields are None
    unless the curve's support bounds a and b are finite.
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
    def K(self) -> int:
        """The largest budget extrapolated to."""
        return int(self.k[-1])

    def trials_within(self, epsilon: float) -> tuple[int | None, int | None]:
        """Trials for the q-quantile curve to come within ``epsilon`` of the asymptote.

        Returns ``(by the fit, for every consonant law)``: the smallest k whose fitted curve is within
        ``epsilon`` of the fitted asymptote, and the smallest k for which this holds for every law of
        the consonance set (so, at ``confidence``, for the true law if the tail is noisy-quadratic).
        None where it is beyond 10^9 trials.
        """
        if not (isinstance(epsilon, (int, float)) and not isinstance(epsilon, bool) and math.isfinite(epsilon) and epsilon > 0):
            raise ArgumentError(f"epsilon must be a positive number (got epsilon={epsilon!r}).")
        raise NotImplementedError

    def to_dict(self) -> dict:
        """A JSON-ready dict (non-finite numbers become None).

        Keys: ``k``, ``median`` (the point curve, the q-quantile one for any q), ``lower``,
        ``upper``, ``source``, ``mean_point``, ``mean_lower``, ``mean_upper``, ``informative_k``,
        ``estimates`` (``asymptote``, ``gamma``, ``sigma``: each ``{"estimate", "lower", "upper"}``),
        ``law`` (the fitted law's parameters), ``goodness_of_fit``, ``tail_fraction``,
        ``threshold``, ``n``, ``n_tail``, ``confidence``, ``method``, ``quantile``, ``minimize``
        and ``assumption`` (the sentence saying what the model-based part assumes).
        """
        return {
            "k": [int(x) for x in self.k.tolist()],
            "median": _json_list(self.point),
            "lower": _json_list(self.lower),
            "upper": _json_list(self.upper),
            "source": [str(x) for x in self.source.tolist()],
            "mean_point": _json_list(self.mean_point),
            "mean_lower": _json_list(self.mean_lower),
            "mean_upper": _json_list(self.mean_upper),
            "informative_k": _none_if_not_finite(self.informative_k),
            "estimates": {"asymptote": self.asymptote.to_dict(), "gamma": self.gamma.to_dict(), "sigma": self.sigma.to_dict()},
            "law": {"alpha": self.law.alpha, "beta": self.law.beta, "gamma": self.law.gamma, "sigma": self.law.sigma, "minimize": self.law.minimize},
            "goodness_of_fit": self.goodness_of_fit.to_dict(),
            "tail_fraction": self.tail_fraction,
            "threshold": self.threshold,
            "n": self.n,
            "n_tail": self.n_tail,
            "confidence": self.confidence,
            "method": self.method,
            "quantile": self.quantile,
            "minimize": self.minimize,
            "assumption": ASSUMPTION,
        }


@dataclass(frozen=True)
class ExtrapolationRefused:
    """No extrapolation: the reason, one sentence a user can act on (what the command line prints)."""

    reason: str
    tail_fraction: float

    def to_dict(self) -> dict:
        return {"refused": self.reason}


# ---------------------------------------------------------------------------------------------
# The consonance set: per shape, the polygon of consonant (beta, s) (in the maximizing frame).


@dataclass(frozen=True)
class _Tail:
    """The tail in the maximizing frame (scores negated when minimizing), and the band at its scores.

    ``x`` ascending distinct tail scores; ``p_low``/``p_high``: the band's bounds on H at each,
    ``1 - U(x⁻) <= H((beta - x)/s) <= 1 - L(x)``.
    """

    x: NDArray[np.float64]
    p_low: NDArray[np.float64]
    p_high: NDArray[np.float64]
    n: int
    n_tail: int
    threshold: float  # in the maximizing frame
    span: float  # of all the scores, for the bounding box


def _tail(curve: TuningCurve, tail_fraction: float) -> _Tail:
    band = curve.band
    values = band.values  # ascending
    n = values.size
    n_tail = math.ceil(tail_fraction * n)
    x_all = -values[::-1] if curve.minimize else values
    threshold = float(x_all[n - n_tail])
    x = np.unique(x_all[x_all >= threshold])
    if curve.minimize:
        y = -x
        below = np.searchsorted(values, y, side="left")  # #{scores < y}
        upto = np.searchsorted(values, y, side="right")  # #{scores <= y}
        # For X = -Y, continuous law: F_X(x) = 1 - F_Y(y) in [1 - U(y⁻), 1 - L(y)] with U(y⁻) = upper[#<y], L(y) = lower[#<=y].
        f_low, f_high = 1.0 - band.upper[below], 1.0 - band.lower[upto]
    else:
        below = np.searchsorted(values, x, side="left")
        upto = np.searchsorted(values, x, side="right")
        f_low, f_high = band.lower[upto], band.upper[below]
    # F(x) = 1 - H(z): bounds on H.
    return _Tail(x, 1.0 - f_high, 1.0 - f_low, n, n_tail, threshold, float(values[-1] - values[0]))


@dataclass(frozen=True)
class _Polygon:
    """The consonant (beta, s) of one shape: its vertices, and which of them lie on the bounding box."""

    gamma: float
    rho: float
    vertices: NDArray[np.float64]  # (m, 2): beta, s
    on_box: NDArray[np.bool_]


def _ppf(p: NDArray[np.float64], gamma: float, rho: float) -> NDArray[np.float64]:
    """H^{-1} of the shape; rho = inf is the normal limit (then the scale s stands for sigma)."""
    return special.ndtri(p) if math.isinf(rho) else shape_ppf(p, gamma, rho)


def _polygon(tail: _Tail, gamma: float, rho: float) -> _Polygon | None:
    """Vertices of ``{(beta, s): s >= 0, s a_i <= beta - x_i <= s b_i}`` within the box, None if empty."""
    a = _ppf(tail.p_low, gamma, rho)
    b = _ppf(tail.p_high, gamma, rho)
    x = tail.x
    # Half-planes A (beta, s) <= c.
    rows, rhs = [], []
    fa, fb = np.isfinite(a), np.isfinite(b)
    rows.append(np.stack([-np.ones(fa.sum()), a[fa]], axis=1))  # -beta + a s <= -x
    rhs.append(-x[fa])
    rows.append(np.stack([np.ones(fb.sum()), -b[fb]], axis=1))  # beta - b s <= x
    rhs.append(x[fb])
    span = max(tail.span, abs(float(x[-1])), 1e-300)
    box_rows = np.array([[0.0, -1.0], [0.0, 1.0], [1.0, 0.0], [-1.0, 0.0]])
    box_rhs = np.array([0.0, _BOX * span, float(x[-1]) + _BOX * span, -(float(x[0]) - _BOX * span)])
    A = np.concatenate([*rows, box_rows])
    c = np.concatenate([*rhs, box_rhs])
    is_box = np.zeros(c.size, dtype=bool)
    is_box[-3:] = True  # s >= 0 is a true constraint, not the box
    i, j = np.triu_indices(c.size, 1)
    det = A[i, 0] * A[j, 1] - A[i, 1] * A[j, 0]
    ok = np.abs(det) > 1e-300
    i, j, det = i[ok], j[ok], det[ok]
    beta = (c[i] * A[j, 1] - A[i, 1] * c[j]) / det
    s = (A[i, 0] * c[j] - c[i] * A[j, 0]) / det
    points = np.stack([beta, s], axis=1)
    slack = points @ A.T - c  # <= 0 when feasible
    scale = np.abs(points) @ np.abs(A.T) + np.abs(c)
    feasible = np.all(slack <= 1e-9 * scale, axis=1)
    if not feasible.any():
        return None
    on_box = is_box[i[feasible]] | is_box[j[feasible]]
    return _Polygon(gamma, rho, points[feasible], on_box)


def _linear_range(poly: _Polygon, weights: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """min and max over the polygon of ``beta - s w`` for each w (``weights``); ±inf where attained on the box."""
    values = poly.vertices[:, :1] - poly.vertices[:, 1:] * weights[None, :]
    lo_i, hi_i = values.argmin(axis=0), values.argmax(axis=0)
    cols = np.arange(weights.size)
    lo, hi = values[lo_i, cols], values[hi_i, cols]
    return np.where(poly.on_box[lo_i], -np.inf, lo), np.where(poly.on_box[hi_i], np.inf, hi)


def _consonant_polygons(tail: _Tail) -> list[_Polygon]:
    """The non-empty polygons over the shape grid, each gamma's rho range refined at its ends by bisection."""
    found: list[_Polygon] = []
    for gamma in EXTRAPOLATION_GAMMAS:
        on_grid = [_polygon(tail, float(gamma), float(rho)) for rho in _RHOS]
        found.extend(p for p in on_grid if p is not None)
        feasible = [p is not None for p in on_grid]
        for j in range(len(_RHOS) - 1):
            if feasible[j] != feasible[j + 1]:  # an end of the consonant rho range lies between
                inside, outside = (_RHOS[j], _RHOS[j + 1]) if feasible[j] else (_RHOS[j + 1], _RHOS[j])
                best = None
                for _ in range(_BISECTIONS):
                    mid = math.sqrt(inside * outside) if inside > 0 and outside > 0 else (inside + outside) / 2.0
                    poly = _polygon(tail, float(gamma), float(mid))
                    if poly is None:
                        outside = mid
                    else:
                        inside, best = mid, poly
                if best is not None:
                    found.append(best)
    # As rho grows with s rho fixed, the law tends to the normal one (of any gamma): the closure of the set.
    if any(p.rho == _RHOS[-1] for p in found):
        normal = _polygon(tail, 0.0, math.inf)
        if normal is not None:
            found.append(normal)
    return found


# ---------------------------------------------------------------------------------------------
# The fit: censored maximum spacing on the tail.


def _spacing_objective(x_tail: NDArray[np.float64], n: int, gamma: float, rho: float, beta: float, s: float) -> float:
    """Minus the censored log-spacing of the tail scores (ascending, ties kept) under the law (beta, s, shape).

    Spacings of ``1 - H`` between consecutive tail scores and above the best one; the ``n - n_tail``
    censored scores below the threshold share the spacing below it equally (its maximum given
    F(threshold)). A zero spacing (a tie) counts as the density times a small width.
    """
    if not (s > 0):
        return math.inf
    z = (beta - x_tail) / s
    surv = shape_cdf(z, gamma, rho)  # P(Y >= x) = H(z), decreasing along ascending x
    cdf_first = 1.0 - surv[0]
    gaps = np.concatenate([surv[:-1] - surv[1:], [surv[-1]]])
    floor = 1e-300
    censored = n - x_tail.size + 1  # the spacings up to the first tail score
    if cdf_first <= 0:
        return math.inf
    total = censored * math.log(cdf_first / censored) + float(np.sum(np.log(np.maximum(gaps, floor))))
    return -total


def _fit(tail: _Tail, x_tail: NDArray[np.float64], polygons: list[_Polygon]) -> tuple[float, float, float, float]:
    """(gamma, rho, beta, s): the best consonant start on the grid, polished by Nelder–Mead within its gamma.

    The polished law is kept only if it is still consonant; so the fitted law is always in the set.
    """
    best = (math.inf, 0.0, 0.0, 0.0, 0.0)
    for poly in polygons:
        if math.isinf(poly.rho):
            continue  # the normal limit is no noisy-quadratic law
        finite = ~poly.on_box
        candidates = [poly.vertices[finite].mean(axis=0)] if finite.any() else []
        for beta, s in candidates:
            value = _spacing_objective(x_tail, tail.n, poly.gamma, poly.rho, float(beta), float(s))
            if value < best[0]:
                best = (value, poly.gamma, poly.rho, float(beta), float(s))
    value, gamma, rho, beta, s = best
    if not math.isfinite(value):
        raise _NoFit()

    def objective(v: NDArray[np.float64]) -> float:
        return _spacing_objective(x_tail, tail.n, gamma, math.exp(v[2]) if v[2] > -20 else 0.0, v[0], math.exp(v[1]))

    start = np.array([beta, math.log(s), math.log(rho) if rho > 0 else -8.0])
    result = optimize.minimize(objective, start, method="Nelder-Mead", options={"xatol": 1e-9, "fatol": 1e-9, "maxiter": 400})
    if result.fun < value:
        b2, s2, r2 = float(result.x[0]), math.exp(result.x[1]), math.exp(result.x[2])
        if _polygon_contains(tail, gamma, r2, b2, s2):
            return gamma, r2, b2, s2
    return gamma, rho, beta, s


def _polygon_contains(tail: _Tail, gamma: float, rho: float, beta: float, s: float) -> bool:
    z = (beta - tail.x) / s
    h = shape_cdf(z, gamma, rho)
    eps = 1e-9
    return bool(np.all(h >= tail.p_low - eps) and np.all(h <= tail.p_high + eps))


class _NoFit(Exception):
    pass


def extrapolate(curve: TuningCurve, K: int, *, tail_fraction: float | None = None) -> Extrapolation | ExtrapolationRefused:
    """Extrapolate ``curve``'s q-quantile tuning curve (its scores, band settings, quantile, minimize, a and b) to budgets 1..K.

    Parameters
    ----------
    curve : TuningCurve
        From :func:`~showwork.statistics.tuning_curve`; its CDF band (method, confidence), quantile,
        direction and support bounds are used as they are.
    K : int >= 1
        The largest budget.
    tail_fraction : float in (0, 1], default ``EXTRAPOLATION_TAIL_FRACTION`` (0.5)
        The share of the trials, the best ones (``ceil(tail_fraction n)`` of them), taken to follow
        a noisy-quadratic law.

    Returns
    -------
    Extrapolation, or ExtrapolationRefused with the reason when the tail is too small, tied, or
    not noisy-quadratic by the goodness-of-fit tests.
    """
    if isinstance(K, bool) or not isinstance(K, (int, np.integer)) or K < 1:
        raise ArgumentError(f"K must be a whole number of trials >= 1 (got K={K!r}).")
    fraction = EXTRAPOLATION_TAIL_FRACTION if tail_fraction is None else tail_fraction
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not (0.0 < fraction <= 1.0):
        raise ArgumentError(f"tail_fraction must be a number in (0, 1] (got tail_fraction={fraction!r}).")
    fraction = float(fraction)
    tail = _tail(curve, fraction)
    if tail.n_tail < EXTRAPOLATION_MIN_TAIL_TRIALS:
        return ExtrapolationRefused(
            f"the tail holds {tail.n_tail} of {tail.n} trials (tail fraction {fraction:g}) and an extrapolation needs at least "
            f"{EXTRAPOLATION_MIN_TAIL_TRIALS}: run at least {math.ceil(EXTRAPOLATION_MIN_TAIL_TRIALS / fraction)} trials.",
            fraction,
        )
    if tail.x.size < 3:
        return ExtrapolationRefused(
            f"the best {tail.n_tail} of {tail.n} scores take only {tail.x.size} distinct value(s): a tail of ties has no "
            "shape to extrapolate; record the scores with more precision or run more trials.",
            fraction,
        )
    polygons = _consonant_polygons(tail)
    shapes = len(polygons)
    if shapes == 0:
        return ExtrapolationRefused(
            f"no noisy-quadratic law lies inside the {curve.band.confidence:.0%} band at the best {tail.n_tail} of {tail.n} scores, "
            f"so the tail is not noisy-quadratic (rejected at level {1 - curve.band.confidence:.2g}); extrapolation would be a guess — "
            "report the observed curve only, or try a smaller tail fraction.",
            fraction,
        )
    gof = GoodnessOfFit(
        f"consonance: a noisy-quadratic law inside the {curve.band.confidence:.0%} {curve.band.method} band at the tail's scores "
        f"(a level-{1 - curve.band.confidence:.2g} test)",
        float(shapes),
        None,
        False,
    )
    x_sorted = np.sort(-curve.band.values if curve.minimize else curve.band.values)
    x_tail = x_sorted[tail.n - tail.n_tail:]
    try:
        gamma, rho, beta, s = _fit(tail, x_tail, polygons)
    except _NoFit:
        return ExtrapolationRefused("the noisy-quadratic fit of the tail did not converge; report the observed curve only.", fraction)

    ks = np.arange(1, K + 1, dtype=float)
    q = curve.quantile
    # In the maximizing frame the best of k is beta - s min(W): its q-quantile (its (1-q) one when minimizing, mirrored).
    level = quantile_levels(ks, 1.0 - q if curve.minimize else q)  # q'^(1/k)
    w_levels = 1.0 - level
    model_lo = np.full(K, np.inf)
    model_hi = np.full(K, -np.inf)
    beta_lo, beta_hi, sigma_lo, sigma_hi = math.inf, -math.inf, math.inf, -math.inf
    gammas = []
    for poly in polygons:
        w = _ppf(w_levels, poly.gamma, poly.rho)
        lo, hi = _linear_range(poly, w)
        model_lo, model_hi = np.minimum(model_lo, lo), np.maximum(model_hi, hi)
        b_lo, b_hi = _linear_range(poly, np.zeros(1))
        beta_lo, beta_hi = min(beta_lo, float(b_lo[0])), max(beta_hi, float(b_hi[0]))
        # sigma = s rho: minus the linear form beta - s (-rho) - beta... evaluated directly on the vertices.
        sig = poly.vertices[:, 1] * (1.0 if math.isinf(poly.rho) else poly.rho)
        sigma_lo = min(sigma_lo, float(sig.min()))
        sigma_hi = max(sigma_hi, math.inf if (poly.rho > 0 and poly.on_box[sig.argmax()]) else float(sig.max()))
        if not math.isinf(poly.rho):
            gammas.append(poly.gamma)

    law_x = NoisyQuadratic(beta - s, beta, gamma, s * rho)
    point_x = law_x.quantile_tuning_curve(ks, 1.0 - q if curve.minimize else q)
    if curve.minimize:  # back from the maximizing frame: negate and swap
        law = NoisyQuadratic(-beta, -(beta - s), gamma, s * rho, minimize=True)
        point, model_lower, model_upper = -point_x, -model_hi, -model_lo
        asym = Estimate(-beta, -beta_hi, -beta_lo)
    else:
        law = law_x
        point, model_lower, model_upper = point_x, model_lo, model_hi
        asym = Estimate(beta, beta_lo, beta_hi)
    np_lower, _, np_upper = quantile_tuning_curve(curve.band, ks, q, curve.minimize)
    informative = informative_budget(tail.n, bands=curve.bands, minimize=curve.minimize)
    nonparametric = ks <= informative
    lower = np.where(nonparametric, np_lower, np.maximum(np_lower, model_lower))
    upper = np.where(nonparametric, np_upper, np.minimum(np_upper, model_upper))
    lower, upper = np.clip(lower, curve.band.a, curve.band.b), np.clip(upper, curve.band.a, curve.band.b)
    source = np.where(nonparametric, "nonparametric", "model-based")
    return Extrapolation(
        k=ks,
        point=point,
        lower=lower,
        upper=upper,
        source=source,
        mean_point=None,
        mean_lower=None,
        mean_upper=None,
        informative_k=informative,
        asymptote=asym,
        gamma=Estimate(float(gamma), float(min(gammas)), float(max(gammas))),
        sigma=Estimate(s * rho, sigma_lo, sigma_hi),
        law=law,
        goodness_of_fit=gof,
        tail_fraction=fraction,
        threshold=-tail.threshold if curve.minimize else tail.threshold,
        n=tail.n,
        n_tail=tail.n_tail,
        confidence=curve.band.confidence,
        method=curve.band.method,
        quantile=q,
        minimize=curve.minimize,
    )
