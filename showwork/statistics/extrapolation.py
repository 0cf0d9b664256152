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

import functools
import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray
from scipy import optimize, special

from showwork.constants import (
    EXTRAPOLATION_GAMMAS,
    EXTRAPOLATION_GOF_LEVEL,
    EXTRAPOLATION_MIN_TAIL_TRIALS,
    EXTRAPOLATION_TAIL_FRACTION,
)
from showwork.statistics.errors import ArgumentError
from showwork.statistics.planning import informative_budget
from showwork.statistics.quadratic_laws import NoisyQuadratic, shape_cdf, shape_ppf
from showwork.statistics.tuning_curve_bands import quantile_tuning_curve
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
class ConsonantScale:
    """The largest scale ``beta - alpha`` (sigma for the normal limit, ``rho = inf``) of the consonant laws of one shape.

    What :meth:`Extrapolation.trials_within` needs: for a fixed shape the gap to the asymptote at k
    is ``s H^{-1}(1 - q^{1/k})``, largest at the largest s.
    """

    gamma: float
    rho: float
    scale_max: float


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
    consonant_scales: tuple[ConsonantScale, ...] = field(default=(), repr=False)

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
        q_x = 1.0 - self.quantile if self.minimize else self.quantile
        law = self.law
        by_fit = _budget_within(epsilon / law.scale, law.gamma, law.rho, q_x)
        if not self.consonant_scales:
            return by_fit, None
        budgets = [
            None if not math.isfinite(c.scale_max) else _budget_within(epsilon / c.scale_max if c.scale_max > 0 else math.inf, c.gamma, c.rho, q_x)
            for c in self.consonant_scales
        ]
        return by_fit, None if any(b is None for b in budgets) else max(budgets)

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


_CHEBYSHEV_NODES = 96  # H^{-1} over log-levels by Chebyshev interpolation: within 2e-9 of the scale (tested)


def _curve_quantiles(polygons: list[_Polygon], levels: NDArray[np.float64]) -> list[NDArray[np.float64]]:
    """``H^{-1}(levels)`` for each polygon's shape, one call per gamma.

    With many levels (budgets), H^{-1} is computed at ``_CHEBYSHEV_NODES`` Chebyshev points in
    ``log(level)`` and interpolated: it is smooth there (``p^{2/gamma}`` noiseless, an entire
    function of ``log p``), and the budgets 1..K cost the same as 96.
    """
    logs = np.log(levels)
    interpolate = levels.size > 2 * _CHEBYSHEV_NODES and logs.max() > logs.min()
    if interpolate:
        low, high = float(logs.min()), float(logs.max())
        unit = np.cos(np.pi * (np.arange(_CHEBYSHEV_NODES) + 0.5) / _CHEBYSHEV_NODES)
        nodes = np.exp((high + low) / 2.0 + (high - low) / 2.0 * unit)
        position = (2.0 * logs - (high + low)) / (high - low)
        at = nodes
    else:
        at = levels
    out: list[NDArray[np.float64] | None] = [None] * len(polygons)
    by_gamma: dict[float, list[int]] = {}
    for i, poly in enumerate(polygons):
        by_gamma.setdefault(math.inf if math.isinf(poly.rho) else poly.gamma, []).append(i)
    for gamma, members in by_gamma.items():
        if math.isinf(gamma):
            rows = np.tile(special.ndtri(at), (len(members), 1))
        else:
            rhos = np.array([polygons[i].rho for i in members])
            rows = shape_ppf(at[None, :], gamma, rhos[:, None])
        if interpolate:
            coefficients = np.polynomial.chebyshev.chebfit(unit, rows.T, _CHEBYSHEV_NODES - 1)
            rows = np.polynomial.chebyshev.chebval(position, coefficients)
        for i, row in zip(members, np.atleast_2d(rows)):
            out[i] = row
    return out  # type: ignore[return-value]


def _budget_within(gap: float, gamma: float, rho: float, q: float) -> int | None:
    """The smallest k with ``H^{-1}(1 - q^{1/k}) <= gap`` (the curve within ``gap`` scales of beta), None past 10^9.

    ``H^{-1}(1 - q^{1/k}) <= gap  <=>  1 - q^{1/k} <= H(gap)  <=>  k >= log q / log(1 - H(gap))``.
    """
    if math.isinf(gap):
        return 1
    h = float(special.ndtr(gap)) if math.isinf(rho) else float(shape_cdf(np.array([gap]), gamma, rho)[0])
    if h >= 1.0:
        return 1
    if h <= 0.0:
        return None
    k = max(1, math.ceil(math.log(q) / math.log1p(-h) * (1.0 - 1e-12)))
    return None if k > _MAX_BUDGET else k


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
    return _polygon_of(tail, gamma, rho, _ppf(tail.p_low, gamma, rho), _ppf(tail.p_high, gamma, rho))


def _polygons(tail: _Tail, gamma: float, rhos: NDArray[np.float64]) -> list[_Polygon | None]:
    """:func:`_polygon` for many rho of one gamma, the quantiles in one call."""
    both = shape_ppf(np.concatenate([tail.p_low, tail.p_high])[None, :], gamma, rhos[:, None])
    m = tail.p_low.size
    return [_polygon_of(tail, gamma, float(rho), row[:m], row[m:]) for rho, row in zip(rhos, both)]


def _polygon_of(tail: _Tail, gamma: float, rho: float, a: NDArray[np.float64], b: NDArray[np.float64]) -> _Polygon | None:
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
        on_grid = _polygons(tail, float(gamma), _RHOS)
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


def _spacing_objective(
    x_tail: NDArray[np.float64], n: int, gamma: float, rho: float, beta: NDArray[np.float64], s: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Minus the censored log-spacing of the tail scores (ascending, ties kept) under each law (beta_j, s_j) of one shape.

    The spacings of the law's CDF between consecutive tail scores and above the best one; the
    ``n - n_tail`` censored scores below the threshold share the spacing below the first tail score
    equally (its largest value given the CDF there; as opda's censored spacing function). A tie's
    zero spacing is replaced by the law's probability of the tied score's rounding cell (see below).
    """
    beta, s = np.atleast_1d(beta)[:, None], np.atleast_1d(s)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (beta - x_tail[None, :]) / s
    shape = z.shape
    surv = shape_cdf(z.reshape(-1), gamma, rho).reshape(shape)  # P(Y >= x) = H(z), falling along ascending x
    cdf_first = 1.0 - surv[:, 0]
    gaps = np.concatenate([surv[:, :-1] - surv[:, 1:], surv[:, -1:]], axis=1)
    steps = np.diff(x_tail)
    ties = np.concatenate([steps == 0, [False]])
    if ties.any():
        # Ties come from rounding: a tied score's spacing is the probability of its rounding cell, as wide as
        # the smallest step between distinct tail scores (bounded, unlike a density at the top of the support).
        half = steps[steps > 0].min() / 2.0
        tied = x_tail[ties][None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            z_lo, z_hi = (beta - (tied - half)) / s, (beta - (tied + half)) / s
        cell = shape_cdf(z_lo.reshape(-1), gamma, rho) - shape_cdf(z_hi.reshape(-1), gamma, rho)
        gaps[:, ties] = cell.reshape(shape[0], -1)
    censored = n - x_tail.size + 1  # the spacings up to the first tail score
    with np.errstate(divide="ignore", invalid="ignore"):
        total = censored * np.log(cdf_first / censored) + np.log(np.maximum(gaps, 0.0)).sum(axis=1)
    return np.where((s[:, 0] > 0) & np.isfinite(total), -total, np.inf)


_POLISHED_GAMMAS = 3  # Nelder–Mead from the best start of this many gammas (the spacing function has local optima)


def _fit(tail: _Tail, x_tail: NDArray[np.float64], polygons: list[_Polygon]) -> tuple[float, float, float, float]:
    """(gamma, rho, beta, s): the censored maximum-spacing law among the consonant ones.

    Starts: for each consonant shape, its polygon's vertex mean and the midpoints between it and each
    vertex (all consonant: the polygon is convex). The best start of each of the best
    ``_POLISHED_GAMMAS`` gammas is polished by Nelder–Mead over (beta, log s, log rho); a polished
    law is kept only if it is still consonant, so the fitted law is always in the set.
    """
    starts: dict[float, tuple[float, float, float, float]] = {}  # gamma -> (value, rho, beta, s)
    for poly in polygons:
        if math.isinf(poly.rho):
            continue  # the normal limit is no noisy-quadratic law
        finite = poly.vertices[~poly.on_box]
        if finite.size == 0:
            continue
        centre = finite.mean(axis=0)
        candidates = np.concatenate([centre[None, :], (finite + centre) / 2.0])
        values = _spacing_objective(x_tail, tail.n, poly.gamma, poly.rho, candidates[:, 0], candidates[:, 1])
        j = int(values.argmin())
        if values[j] < starts.get(poly.gamma, (math.inf,))[0]:
            starts[poly.gamma] = (float(values[j]), poly.rho, float(candidates[j, 0]), float(candidates[j, 1]))
    ranked = sorted((start[0], gamma) for gamma, start in starts.items() if math.isfinite(start[0]))
    if not ranked:
        raise _NoFit()
    best = (math.inf, 0.0, 0.0, 0.0, 0.0)
    for _, gamma in ranked[:_POLISHED_GAMMAS]:
        value, rho, beta, s = starts[gamma]
        if value < best[0]:
            best = (value, gamma, rho, beta, s)

        def objective(v: NDArray[np.float64], gamma: float = gamma) -> float:
            return float(_spacing_objective(x_tail, tail.n, gamma, math.exp(v[2]), np.array([v[0]]), np.array([math.exp(v[1])]))[0])

        start = np.array([beta, math.log(s), math.log(max(rho, 1e-5))])
        # The simplex in the problem's own units: beta by a tenth of the scale, s by 20 %, rho by a factor e.
        simplex = start + np.array([[0.0, 0.0, 0.0], [0.1 * s, 0.0, 0.0], [0.0, 0.2, 0.0], [0.0, 0.0, 1.0]])
        options = {"xatol": 1e-6, "fatol": 1e-7, "maxiter": 400, "initial_simplex": simplex}
        result = optimize.minimize(objective, start, method="Nelder-Mead", options=options)
        if result.fun < best[0]:
            b2, s2, r2 = float(result.x[0]), math.exp(result.x[1]), math.exp(result.x[2])
            if _polygon_contains(tail, gamma, r2, b2, s2):
                best = (float(result.fun), gamma, r2, b2, s2)
    _, gamma, rho, beta, s = best
    return gamma, rho, beta, s


def _polygon_contains(tail: _Tail, gamma: float, rho: float, beta: float, s: float) -> bool:
    z = (beta - tail.x) / s
    h = shape_cdf(z, gamma, rho)
    eps = 1e-9
    return bool(np.all(h >= tail.p_low - eps) and np.all(h <= tail.p_high + eps))


class _NoFit(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# The goodness-of-fit test: a right-censored Anderson–Darling statistic on the probability-integral transform.

_GOF_DRAWS = 4000  # Monte Carlo draws of the statistic's null law per (n, n_tail): p-values within ~0.007 at 0.05
_GOF_SEED = 20251003  # fixed: a test's p-value must not change from one run to the next


def _censored_anderson_darling(u_tail: NDArray[np.float64], n: int) -> NDArray[np.float64]:
    """``n ∫ (F_n(u) - u)^2 / (u (1 - u)) du`` from the smallest to 1, for the top scores' PIT ``u_tail`` (rows ascending).

    On a stretch where the empirical CDF is a, the integrand is ``a²/u + (1 - a)²/(1 - u) - 1``, integrated exactly.
    """
    u = np.clip(u_tail, 1e-300, 1.0 - 1e-15)
    m = u.shape[-1]
    ends = np.concatenate([u, np.ones(u.shape[:-1] + (1,))], axis=-1)
    left, right = ends[..., :-1], ends[..., 1:]
    a = (n - m + 1 + np.arange(m)) / n  # the empirical CDF just after each tail score
    with np.errstate(divide="ignore", invalid="ignore"):
        upper_term = np.where(a < 1.0, (1.0 - a) ** 2 * (np.log1p(-left) - np.log1p(-np.minimum(right, 1.0 - 1e-15))), 0.0)
        pieces = a**2 * (np.log(right) - np.log(left)) + upper_term - (right - left)
    return n * pieces.sum(axis=-1)


@functools.lru_cache(maxsize=64)
def _null_statistics(n: int, n_tail: int) -> NDArray[np.float64]:
    """The statistic of the top ``n_tail`` of n uniform draws, ``_GOF_DRAWS`` times (its law when the law is known)."""
    rng = np.random.default_rng(_GOF_SEED)
    # The top n_tail of n uniforms: 1 - (the bottom n_tail), the bottom ones by cumulated exponential spacings.
    spacings = rng.standard_exponential((_GOF_DRAWS, n + 1))
    bottom = np.cumsum(spacings[:, :n_tail], axis=1) / spacings.sum(axis=1, keepdims=True)
    stats = _censored_anderson_darling(np.sort(1.0 - bottom, axis=1), n)
    stats.sort()
    return stats


def _goodness_of_fit(
    tail: _Tail, x_tail: NDArray[np.float64], gamma: float, rho: float, beta: float, s: float, confidence: float, shapes: int
) -> GoodnessOfFit:
    """The censored Anderson–Darling test of the tail under the fitted law, at level ``EXTRAPOLATION_GOF_LEVEL``.

    Its null law is that of a known law (the top scores' PIT are the top order statistics of n
    uniforms), simulated once per (n, n_tail). With the law fitted to the same scores the statistic
    is smaller than with the true law, so the test is conservative: its size is at most the level
    (checked in tests/unit/test_extrapolation.py, with its power on a top atom, a gap and a heavy tail).
    The consonance set, already non-empty here, is the first test (at level 1 - confidence).
    """
    u = 1.0 - shape_cdf((beta - x_tail) / s, gamma, rho)
    statistic = float(_censored_anderson_darling(u, tail.n))
    null = _null_statistics(tail.n, x_tail.size)
    p_value = float((1 + null.size - np.searchsorted(null, statistic, side="left")) / (null.size + 1))
    return GoodnessOfFit(
        f"consonance with the {confidence:.0%} band ({shapes} consonant shapes), then a censored Anderson–Darling test "
        "of the tail's probability-integral transform under the fitted law",
        statistic,
        p_value,
        p_value < EXTRAPOLATION_GOF_LEVEL,
    )


# ---------------------------------------------------------------------------------------------
# Mean-curve bands (support bounds known).

_MEAN_GRID = 256  # points between the threshold and the top bound, beside the scores themselves


def _mean_bands(curve: TuningCurve, tail: _Tail, polygons: list[_Polygon], ks: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Conservative bands of the mean tuning curve, from the CDF band below the threshold and the consonant laws above it.

    In the maximizing frame on ``[a, b]``, ``E[max of k] = b - ∫_a^b F^k``. On the band's event,
    ``L <= F <= U`` everywhere, and (if the tail is noisy-quadratic) ``F`` lies between the pointwise
    lowest and highest consonant CDFs above the threshold: for one shape, ``1 - H((beta - x)/s)`` is
    extreme over its polygon at a vertex (a ratio of linear forms). The integral of the bounding
    monotone functions is bounded by Riemann sums at the cells' left (lower CDF) and right ends
    (upper CDF), so both bands are conservative, numerically too. An unbounded polygon leaves the
    model out (the nonparametric mean bands).
    """
    band = curve.band
    a, b = (-band.b, -band.a) if curve.minimize else (band.a, band.b)
    values = np.sort(-band.values) if curve.minimize else band.values
    fine = np.linspace(tail.threshold, b, _MEAN_GRID)
    grid = np.unique(np.concatenate([[a], values, fine, [b]]))
    left, right = grid[:-1], grid[1:]
    # The CDF band of the frame's scores: at x, and just below x.
    low_at, up_below = _frame_band(curve, values, left, right)
    f_low, f_up = low_at, up_below
    model = all(not p.on_box.any() for p in polygons)
    if model:
        beyond = left >= tail.threshold
        g_low_left = np.ones(left.size)
        g_up_right = np.zeros(right.size)
        for poly in polygons:
            beta_v, s_v = poly.vertices[:, :1], poly.vertices[:, 1:]
            with np.errstate(divide="ignore", invalid="ignore"):
                z_left = (beta_v - left[None, beyond]) / s_v
                z_right = (beta_v - right[None, beyond]) / s_v
            z_max = np.nan_to_num(z_left, nan=np.inf, posinf=np.inf).max(axis=0)  # the lowest G at the cell's left end
            z_min = np.nan_to_num(z_right, nan=-np.inf, neginf=-np.inf).min(axis=0)  # the highest G at its right end
            cdf_low = 1.0 - _shape_cdf_any(z_max, poly.gamma, poly.rho)
            cdf_up = 1.0 - _shape_cdf_any(z_min, poly.gamma, poly.rho)
            g_low_left[beyond] = np.minimum(g_low_left[beyond], cdf_low)
            g_up_right[beyond] = np.maximum(g_up_right[beyond], cdf_up)
        f_low = np.where(beyond, np.maximum(low_at, g_low_left), low_at)
        f_up = np.where(beyond, np.minimum(up_below, g_up_right), up_below)
    widths = right - left
    top = (widths[None, :] * f_low[None, :] ** ks[:, None]).sum(axis=1)  # ∫ F^k at least this
    bottom = (widths[None, :] * f_up[None, :] ** ks[:, None]).sum(axis=1)  # and at most this
    lower_x, upper_x = b - bottom, b - top
    if curve.minimize:
        return -upper_x, -lower_x
    return lower_x, upper_x


def _shape_cdf_any(z: NDArray[np.float64], gamma: float, rho: float) -> NDArray[np.float64]:
    """H for a shape, rho = inf being the normal limit; ±inf maps to 1 and 0."""
    out = np.where(z > 0, 1.0, 0.0)
    finite = np.isfinite(z)
    if finite.any():
        out[finite] = special.ndtr(z[finite]) if math.isinf(rho) else shape_cdf(z[finite], gamma, rho)
    return out


def _frame_band(
    curve: TuningCurve, values: NDArray[np.float64], left: NDArray[np.float64], right: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """In the maximizing frame: the lower CDF band at each cell's left end and the upper one just below its right end."""
    band = curve.band
    if not curve.minimize:
        low = band.lower[np.searchsorted(values, left, side="right")]
        up = band.upper[np.searchsorted(values, right, side="left")]
        return low, up
    # X = -Y: F_X(x) = 1 - F_Y((-x)⁻) >= 1 - U_Y just below -x... at x: 1 - upper[#{Y < -x}]; just below x: 1 - lower[#{Y <= -x}].
    ys = band.values
    low = 1.0 - band.upper[np.searchsorted(ys, -left, side="left")]
    up = 1.0 - band.lower[np.searchsorted(ys, -right, side="right")]
    return low, up


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
    x_sorted = np.sort(-curve.band.values if curve.minimize else curve.band.values)
    x_tail = x_sorted[tail.n - tail.n_tail:]
    try:
        gamma, rho, beta, s = _fit(tail, x_tail, polygons)
    except _NoFit:
        return ExtrapolationRefused("the noisy-quadratic fit of the tail did not converge; report the observed curve only.", fraction)

    fitted = _polygon(tail, gamma, rho)
    if fitted is not None and not any(p.gamma == gamma and p.rho == rho for p in polygons):
        polygons.append(fitted)  # consonant by construction: its intervals then contain the estimates
    gof = _goodness_of_fit(tail, x_tail, gamma, rho, beta, s, curve.band.confidence, shapes)
    if gof.rejected:
        return ExtrapolationRefused(
            f"the best {tail.n_tail} of {tail.n} scores do not follow the fitted noisy-quadratic law "
            f"({gof.test}: p = {gof.p_value:.3g} < {EXTRAPOLATION_GOF_LEVEL:g}), so the tail is not noisy-quadratic and an "
            "extrapolation would be a guess; report the observed curve only, or try a smaller tail fraction.",
            fraction,
        )

    ks = np.arange(1, K + 1, dtype=float)
    q = curve.quantile
    q_x = 1.0 - q if curve.minimize else q  # in the maximizing frame the q-quantile of the worst of -Y is the (1-q) one
    w_levels = -np.expm1(math.log(q_x) / ks)  # the best of k is beta - s min(W): min(W)'s (1 - q_x) quantile
    model_lo, model_hi = np.full(K, np.inf), np.full(K, -np.inf)
    beta_lo, beta_hi, sigma_lo, sigma_hi = math.inf, -math.inf, math.inf, -math.inf
    quantiles = _curve_quantiles(polygons, w_levels)
    for poly, w in zip(polygons, quantiles):
        lo, hi = _linear_range(poly, w)
        model_lo, model_hi = np.minimum(model_lo, lo), np.maximum(model_hi, hi)
        b_lo, b_hi = _linear_range(poly, np.zeros(1))
        beta_lo, beta_hi = min(beta_lo, float(b_lo[0])), max(beta_hi, float(b_hi[0]))
        noise = poly.vertices[:, 1] * (1.0 if math.isinf(poly.rho) else poly.rho)  # sigma = s rho, linear too
        sigma_lo = min(sigma_lo, float(noise.min()))
        top = int(noise.argmax())
        sigma_hi = max(sigma_hi, math.inf if (poly.rho > 0 and poly.on_box[top]) else float(noise[top]))
    gammas = [poly.gamma for poly in polygons if not math.isinf(poly.rho)]

    law_x = NoisyQuadratic(beta - s, beta, gamma, s * rho)
    point_x = law_x.quantile_tuning_curve(ks, q_x)
    np_lower, _, np_upper = quantile_tuning_curve(curve.band, ks, q, curve.minimize)
    if curve.minimize:  # back from the maximizing frame: negate and swap
        law = NoisyQuadratic(-beta, -(beta - s), gamma, s * rho, minimize=True)
        point, model_lower, model_upper = -point_x, -model_hi, -model_lo
        asym = Estimate(-beta, -beta_hi, -beta_lo)
    else:
        law = law_x
        point, model_lower, model_upper = point_x, model_lo, model_hi
        asym = Estimate(beta, beta_lo, beta_hi)
    informative = informative_budget(tail.n, bands=curve.bands, minimize=curve.minimize)
    nonparametric = ks <= informative
    # Past the informative budget: the model-based band met with the nonparametric one (both hold on the band's event).
    lower = np.where(nonparametric, np_lower, np.maximum(np_lower, model_lower))
    upper = np.where(nonparametric, np_upper, np.minimum(np_upper, model_upper))
    lower, upper = np.clip(lower, curve.band.a, curve.band.b), np.clip(upper, curve.band.a, curve.band.b)
    source = np.where(nonparametric, "nonparametric", "model-based")
    mean_point = mean_lower = mean_upper = None
    if math.isfinite(curve.band.a) and math.isfinite(curve.band.b):
        mean_point = law.mean_tuning_curve(ks)
        mean_lower, mean_upper = _mean_bands(curve, tail, polygons, ks)
    scales = tuple(
        ConsonantScale(poly.gamma, poly.rho, math.inf if poly.on_box[int(poly.vertices[:, 1].argmax())] else float(poly.vertices[:, 1].max()))
        for poly in polygons
    )
    return Extrapolation(
        k=ks,
        point=point,
        lower=lower,
        upper=upper,
        source=source,
        mean_point=mean_point,
        mean_lower=mean_lower,
        mean_upper=mean_upper,
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
        consonant_scales=scales,
    )
