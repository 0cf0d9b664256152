"""Extrapolated tuning curves past the search (Lourie, He & Cho 2025, "Hyperparameter Loss Surfaces
Are Simple Near their Optima").

The exact nonparametric bands of a tuning curve go trivial past the informative budget (about n/6
trials). Near the optimum the law of the scores' tail tends to a noisy quadratic
(:class:`~showwork.statistics.quadratic_laws.NoisyQuadratic`). Taking the best ``tail_fraction``
of the trials (a rule fixed in advance, default 0.5) to follow one, :func:`extrapolate` fits it
(censored maximum spacing), tests the fit, and bands its tuning curve past the search with the
*consonance set* — the noisy-quadratic laws whose CDF lies inside the curve's own simultaneous CDF
band at the tail's scores — computed exactly per shape as a polygon of (beta, s)
(:mod:`~showwork.statistics.consonance`).

What holds. On the event that the CDF band holds (probability at least ``confidence``, exactly as
for the nonparametric bands), the true law is consonant whenever the scores' law above the tail's
threshold is noisy-quadratic. So the band up to the informative budget, the curve's own, is exact;
past it the band and the intervals of the asymptote, gamma and sigma hold at ``confidence`` only if
the tail is noisy-quadratic; the mean bands are in addition conservative. An empty consonance set is
a level-(1 - confidence) rejection of the noisy-quadratic tail, and refuses the extrapolation, as
do too small a tail, a tail of ties and a goodness-of-fit rejection.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray
from scipy import optimize, special

from showwork.constants import (
    EXTRAPOLATION_GOF_CRITICAL_VALUES,
    EXTRAPOLATION_GOF_LEVEL,
    EXTRAPOLATION_MAX_K,
    EXTRAPOLATION_MAX_TIES_AT_BEST,
    EXTRAPOLATION_MIN_TAIL_TRIALS,
    EXTRAPOLATION_TAIL_FRACTION,
)
from showwork.statistics.consonance import (
    Polygon,
    Tail,
    consonant_polygon,
    consonant_polygons,
    contains,
    curve_quantiles,
    linear_range,
    mean_curves,
    refine_extremes,
    tail_of,
)
from showwork.statistics.errors import ArgumentError
from showwork.statistics.planning import informative_budget
from showwork.statistics.quadratic_laws import NoisyQuadratic, shape_cdf
from showwork.statistics.tuning_curve_bands import quantile_tuning_curve
from showwork.statistics.tuning_curves import TuningCurve

__all__ = ["ConsonantScale", "Estimate", "Extrapolation", "ExtrapolationRefused", "GoodnessOfFit", "extrapolate", "gof_critical_value", "tail_statistic"]

ASSUMPTION = (
    "Past the informative budget the band holds only if the scores' law above the tail's threshold is "
    "noisy-quadratic (Lourie, He & Cho 2025); up to it the band is the exact nonparametric one."
)
_MAX_BUDGET = 1e9  # trials_within: beyond it, None


def _none_if_not_finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def _json_list(values: NDArray[np.float64] | None) -> list | None:
    return None if values is None else [_none_if_not_finite(x) for x in np.asarray(values, dtype=float).tolist()]


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
    mean_point: NDArray[np.float64] | None  # the mean best of k: the empirical CDF below the threshold, the fitted tail above
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
        return {"refused": self.reason, "tail_fraction": self.tail_fraction}


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


def _fit(tail: Tail, x_tail: NDArray[np.float64], polygons: list[Polygon]) -> tuple[float, float, float, float]:
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
            if contains(tail, gamma, r2, b2, s2):
                best = (float(result.fun), gamma, r2, b2, s2)
    _, gamma, rho, beta, s = best
    return gamma, rho, beta, s


class _NoFit(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# The goodness-of-fit test: a right-censored Anderson–Darling statistic on the probability-integral transform.

def gof_critical_value(n: int, table: Sequence[tuple[int, float]] = EXTRAPOLATION_GOF_CRITICAL_VALUES) -> float:
    """The goodness-of-fit test's critical value at n trials, read from ``table`` ((n, value) pairs, n ascending).

    Linear in log n between the calibrated sizes; below the smallest and past the largest, the value there
    (the simulated 95th percentile grows slowly from n = 96 on: 0.63, 0.67, 0.68 at 96, 192, 384; past 384 it
    was not checked; see ``EXTRAPOLATION_GOF_CRITICAL_VALUES``).
    """
    sizes, values = zip(*table)
    return float(np.interp(math.log(n), np.log(sizes), values))


def _censored_anderson_darling(u_tail: NDArray[np.float64], n: int) -> float:
    """``n ∫ (F_n(u) - u)^2 / (u (1 - u)) du`` from the smallest to 1, for the top scores' PIT ``u_tail`` (ascending).

    On a stretch where the empirical CDF is a, the integrand is ``a²/u + (1 - a)²/(1 - u) - 1``, integrated exactly.
    """
    u = np.clip(u_tail, 1e-300, 1.0 - 1e-15)
    m = u.size
    ends = np.concatenate([u, [1.0]])
    left, right = ends[:-1], ends[1:]
    a = (n - m + 1 + np.arange(m)) / n  # the empirical CDF from each tail score to the next
    with np.errstate(divide="ignore", invalid="ignore"):
        upper_term = np.where(a < 1.0, (1.0 - a) ** 2 * (np.log1p(-left) - np.log1p(-np.minimum(right, 1.0 - 1e-15))), 0.0)
        pieces = a**2 * (np.log(right) - np.log(left)) + upper_term - (right - left)
    return float(n * pieces.sum())


def _fitted_statistic(tail: Tail, x_tail: NDArray[np.float64], gamma: float, rho: float, beta: float, s: float) -> float:
    """The censored Anderson–Darling statistic of the tail scores ``x_tail`` (maximizing frame) under the law (gamma, rho, beta, s)."""
    return _censored_anderson_darling(1.0 - shape_cdf((beta - x_tail) / s, gamma, rho), tail.n)


def _goodness_of_fit(
    tail: Tail, x_tail: NDArray[np.float64], gamma: float, rho: float, beta: float, s: float, confidence: float, shapes: int
) -> GoodnessOfFit:
    """The censored Anderson–Darling test of the tail under the fitted law, against the calibrated critical value.

    The consonance set, already non-empty here, is the first test (at level 1 - confidence).
    """
    statistic = _fitted_statistic(tail, x_tail, gamma, rho, beta, s)
    critical = gof_critical_value(tail.n)
    return GoodnessOfFit(
        f"consonance with the {confidence:.0%} band ({shapes} consonant shapes), then a censored Anderson–Darling test "
        f"of the tail's probability-integral transform under the fitted law (critical value {critical:.2g} at level "
        f"{EXTRAPOLATION_GOF_LEVEL:g}, calibrated by simulation)",
        statistic,
        None,
        statistic > critical,
    )


@dataclass
class _FittedTail:
    """The tail, its consonant shapes and the fitted law (gamma, rho, beta, s) in the maximizing frame."""
    tail: Tail
    x_tail: NDArray[np.float64]
    polygons: list[Polygon]
    tail_fraction: float
    gamma: float
    rho: float
    beta: float
    s: float


def _fit_tail(curve: TuningCurve, tail_fraction: float | None) -> _FittedTail | ExtrapolationRefused:
    """Everything :func:`extrapolate` does before its goodness-of-fit test: the checks, the consonance set, the fit."""
    fraction = EXTRAPOLATION_TAIL_FRACTION if tail_fraction is None else tail_fraction
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not (0.0 < fraction <= 1.0):
        raise ArgumentError(f"tail_fraction must be a number in (0, 1] (got tail_fraction={fraction!r}).")
    fraction = float(fraction)
    tail = tail_of(curve, fraction)
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
    x_sorted = np.sort(-curve.band.values if curve.minimize else curve.band.values)
    best_copies = int(np.count_nonzero(x_sorted == x_sorted[-1]))
    if best_copies > EXTRAPOLATION_MAX_TIES_AT_BEST:
        # A continuous law never ties its best score; a pile of ties there is a ceiling the consonance set let through
        # in 17 % of 48-trial samples with a 25 % top atom, every band promising more than it (experiments/extrapolation.py).
        return ExtrapolationRefused(
            f"the best score is shared by {best_copies} of {tail.n} trials: a ceiling (an atom at the top), which no "
            "noisy-quadratic law has, so more trials would tie it rather than beat it; report the observed curve only "
            "(or record the scores with more precision, if the ties are rounding).",
            fraction,
        )
    polygons = consonant_polygons(tail)
    if not polygons:
        return ExtrapolationRefused(
            f"no noisy-quadratic law lies inside the {curve.band.confidence:.0%} band at the best {tail.n_tail} of {tail.n} scores, "
            f"so the tail is not noisy-quadratic (rejected at level {1 - curve.band.confidence:.2g}); extrapolation would be a guess — "
            "report the observed curve only (a tail fraction changed after seeing this is a tail chosen by eye).",
            fraction,
        )
    x_tail = x_sorted[tail.n - tail.n_tail:]
    try:
        gamma, rho, beta, s = _fit(tail, x_tail, polygons)
    except _NoFit:
        return ExtrapolationRefused("the noisy-quadratic fit of the tail did not converge; report the observed curve only.", fraction)
    return _FittedTail(tail, x_tail, polygons, fraction, gamma, rho, beta, s)


def tail_statistic(curve: TuningCurve, tail_fraction: float | None = None) -> float | None:
    """The censored Anderson–Darling statistic of ``curve``'s tail under its fitted noisy-quadratic law.

    What :func:`extrapolate`'s goodness-of-fit test compares with its critical value (same tail, consonance
    set and fit; same arguments and ArgumentError), public for ``experiments/extrapolation_calibration.py``.
    None where :func:`extrapolate` refuses before the test (too small a tail, ties, no consonant law, no fit).
    """
    fitted = _fit_tail(curve, tail_fraction)
    if isinstance(fitted, ExtrapolationRefused):
        return None
    return _fitted_statistic(fitted.tail, fitted.x_tail, fitted.gamma, fitted.rho, fitted.beta, fitted.s)


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
    Extrapolation
        The band 1..K: the curve's own nonparametric band up to its informative budget (exact),
        past it the consonance band met with the nonparametric one (holds at the curve's
        confidence only if the tail is noisy-quadratic); the fitted law's curve as the point; the
        estimates of the asymptote, gamma and sigma with their ranges over the consonant laws; with
        support bounds a and b, the mean curve and its (conservative) bands.
    ExtrapolationRefused
        With the reason, one sentence, when the tail holds fewer than
        ``EXTRAPOLATION_MIN_TAIL_TRIALS`` trials or fewer than 3 distinct scores, when no
        noisy-quadratic law is consonant, or when the censored Anderson–Darling test rejects.

    Raises
    ------
    ArgumentError
        On K not a whole number >= 1 or tail_fraction outside (0, 1].

    Examples
    --------
    >>> import numpy as np
    >>> from showwork.statistics import tuning_curve
    >>> scores = NoisyQuadratic(0.0, 1.0, 2.0, 0.01).sample(48, np.random.default_rng(0))
    >>> result = extrapolate(tuning_curve(scores), 480)
    >>> result.n_tail, str(result.source[0]), str(result.source[-1])
    (24, 'nonparametric', 'model-based')
    >>> bool(result.lower[-1] <= result.point[-1] <= result.upper[-1])
    True
    """
    if isinstance(K, bool) or not isinstance(K, (int, np.integer)) or not 1 <= K <= EXTRAPOLATION_MAX_K:
        raise ArgumentError(f"K must be a whole number of trials from 1 to {EXTRAPOLATION_MAX_K:,} (got K={K!r}).")
    fitted_tail = _fit_tail(curve, tail_fraction)
    if isinstance(fitted_tail, ExtrapolationRefused):
        return fitted_tail
    tail, x_tail, polygons, fraction = fitted_tail.tail, fitted_tail.x_tail, fitted_tail.polygons, fitted_tail.tail_fraction
    gamma, rho, beta, s = fitted_tail.gamma, fitted_tail.rho, fitted_tail.beta, fitted_tail.s
    shapes = len(polygons)
    fitted = consonant_polygon(tail, gamma, rho)
    if fitted is not None and not any(p.gamma == gamma and p.rho == rho for p in polygons):
        polygons.append(fitted)  # consonant by construction: its intervals then contain the estimates
    gof = _goodness_of_fit(tail, x_tail, gamma, rho, beta, s, curve.band.confidence, shapes)
    if gof.rejected:
        return ExtrapolationRefused(
            f"the best {tail.n_tail} of {tail.n} scores do not follow the fitted noisy-quadratic law "
            f"(censored Anderson–Darling statistic {gof.statistic:.3g} > {gof_critical_value(tail.n):.2g}, level {EXTRAPOLATION_GOF_LEVEL:g}), so the "
            "tail is not noisy-quadratic and an "
            "extrapolation would be a guess; report the observed curve only (a tail fraction changed after seeing this is a tail chosen by eye).",
            fraction,
        )

    ks = np.arange(1, K + 1, dtype=float)
    q = curve.quantile
    q_x = 1.0 - q if curve.minimize else q  # in the maximizing frame the q-quantile of the worst of -Y is the (1-q) one
    w_levels = -np.expm1(math.log(q_x) / ks)  # the best of k is beta - s min(W): min(W)'s (1 - q_x) quantile
    model_lo, model_hi = np.full(K, np.inf), np.full(K, -np.inf)
    beta_lo, beta_hi, sigma_lo, sigma_hi = math.inf, -math.inf, math.inf, -math.inf
    polygons.extend(refine_extremes(tail, polygons, float(w_levels[-1])))
    quantiles = curve_quantiles(polygons, w_levels)
    for poly, w in zip(polygons, quantiles):
        lo, hi = linear_range(poly, w)
        model_lo, model_hi = np.minimum(model_lo, lo), np.maximum(model_hi, hi)
        b_lo, b_hi = linear_range(poly, np.zeros(1))
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
    a, b = curve.band.a, curve.band.b  # scores in [a, b] have no best beyond them: clip the fitted curve and the asymptote
    point, asym = np.clip(point, a, b), Estimate(*(min(max(v, a), b) for v in (asym.estimate, asym.lower, asym.upper)))
    informative = informative_budget(tail.n, bands=curve.bands, minimize=curve.minimize)
    nonparametric = ks <= informative
    # Past the informative budget: the model-based band met with the nonparametric one (both hold on the band's event).
    lower = np.where(nonparametric, np_lower, np.maximum(np_lower, model_lower))
    upper = np.where(nonparametric, np_upper, np.minimum(np_upper, model_upper))
    lower, upper = np.clip(lower, a, b), np.clip(upper, a, b)
    source = np.where(nonparametric, "nonparametric", "model-based")
    mean_point = mean_lower = mean_upper = None
    if math.isfinite(curve.band.a) and math.isfinite(curve.band.b):
        mean_lower, mean_point, mean_upper = mean_curves(curve, tail, polygons, law_x, ks, nonparametric)
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
