"""The consonance set of an extrapolation: the noisy-quadratic laws inside a tuning curve's CDF band at its tail.

For a fixed shape (gamma, rho) of the standard variable W
(:mod:`~showwork.statistics.quadratic_laws`), a maximized score is ``Y = beta - s W`` and the
band's constraints at the tail's scores, ``L_i <= F(y_i) <= U_i⁻``, are linear in (beta, s):
``s H^{-1}(1 - U_i⁻) <= beta - y_i <= s H^{-1}(1 - L_i)``. So the consonant (beta, s) of a shape
form a convex polygon (:func:`consonant_polygon`), and every linear form of (beta, s) — a tuning
curve at budget k, the asymptote beta, the noise ``s rho`` — takes its extremes over it at a
vertex (:func:`linear_range`). :func:`consonant_polygons` covers the shapes (a grid of rho per
gamma, the ends of each gamma's consonant rho range by bisection, the normal limit);
:func:`refine_extremes` finds the band's extremes between grid points, and :func:`mean_curves` bounds
the mean tuning curve with the set. Everything works in the
maximizing frame (scores negated when minimizing); :mod:`~showwork.statistics.extrapolation` maps
back.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import special

from showwork.constants import EXTRAPOLATION_GAMMAS
from showwork.statistics.quadratic_laws import NoisyQuadratic, shape_cdf, shape_ppf
from showwork.statistics.tuning_curve_bands import mean_tuning_curve_bands
from showwork.statistics.tuning_curves import TuningCurve

__all__ = [
    "Polygon", "Tail", "consonant_polygon", "consonant_polygons", "contains", "curve_quantiles", "linear_range", "mean_curves",
    "refine_extremes", "shape_cdf_any", "shape_quantiles", "tail_of",
]

_RHOS = np.concatenate([[0.0], np.geomspace(1e-3, 100.0, 16)])  # relative noise sigma / (beta - alpha)
_BISECTIONS = 10  # per end of a gamma's consonant rho range: the end within 2^-10 of a grid step
_BOX = 1e6  # the polygon is clipped to |beta|, s within 1e6 spans of the scores; a vertex there is "unbounded"


_CHEBYSHEV_NODES = 96  # H^{-1} over log-levels by Chebyshev interpolation: within 2e-9 of the scale (tested)


def curve_quantiles(polygons: list[Polygon], levels: NDArray[np.float64]) -> list[NDArray[np.float64]]:
    """``H^{-1}(levels)`` for each polygon's shape, one call per gamma.

    With many levels (budgets), H^{-1} is computed at ``_CHEBYSHEV_NODES`` Chebyshev points in
    ``log(level)`` and interpolated: it is smooth there (``p^{2/gamma}`` noiseless, an entire
    function of ``log p``), and the budgets 1..K cost the same as 96.
    """
    logs = np.log(levels)
    interpolate = levels.size > 2 * _CHEBYSHEV_NODES and logs.max() > logs.min()
    if interpolate:
        low, high = float(logs.min()), float(logs.max())
        angles = np.pi * (np.arange(_CHEBYSHEV_NODES) + 0.5) / _CHEBYSHEV_NODES
        at = np.exp((high + low) / 2.0 + (high - low) / 2.0 * np.cos(angles))
        position = np.clip((2.0 * logs - (high + low)) / (high - low), -1.0, 1.0)
        # Values at the nodes -> values at the levels, one matrix: the discrete cosine transform gives the
        # Chebyshev coefficients (halved first), and T_j(t) = cos(j arccos t) evaluates them.
        degrees = np.arange(_CHEBYSHEV_NODES)
        to_coefficients = 2.0 / _CHEBYSHEV_NODES * np.cos(np.outer(degrees, angles))
        to_coefficients[0] /= 2.0
        interpolation = np.cos(np.outer(np.arccos(position), degrees)) @ to_coefficients
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
            rows = rows @ interpolation.T
        for i, row in zip(members, np.atleast_2d(rows)):
            out[i] = row
    return out  # type: ignore[return-value]


@dataclass(frozen=True)
class Tail:
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


def tail_of(curve: TuningCurve, tail_fraction: float) -> Tail:
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
    return Tail(x, 1.0 - f_high, 1.0 - f_low, n, n_tail, threshold, float(values[-1] - values[0]))


@dataclass(frozen=True)
class Polygon:
    """The consonant (beta, s) of one shape: its vertices, and which of them lie on the bounding box."""

    gamma: float
    rho: float
    vertices: NDArray[np.float64]  # (m, 2): beta, s
    on_box: NDArray[np.bool_]


def shape_quantiles(p: NDArray[np.float64], gamma: float, rho: float) -> NDArray[np.float64]:
    """H^{-1} of the shape; rho = inf is the normal limit (then the scale s stands for sigma)."""
    return special.ndtri(p) if math.isinf(rho) else shape_ppf(p, gamma, rho)


def consonant_polygon(tail: Tail, gamma: float, rho: float) -> Polygon | None:
    """Vertices of ``{(beta, s): s >= 0, s a_i <= beta - x_i <= s b_i}`` within the box, None if empty."""
    return _polygon_of(tail, gamma, rho, shape_quantiles(tail.p_low, gamma, rho), shape_quantiles(tail.p_high, gamma, rho))


def polygons_of_gamma(tail: Tail, gamma: float, rhos: NDArray[np.float64]) -> list[Polygon | None]:
    """:func:`consonant_polygon` for many rho of one gamma, the quantiles in one call."""
    both = shape_ppf(np.concatenate([tail.p_low, tail.p_high])[None, :], gamma, rhos[:, None])
    m = tail.p_low.size
    return [_polygon_of(tail, gamma, float(rho), row[:m], row[m:]) for rho, row in zip(rhos, both)]


def _polygon_of(tail: Tail, gamma: float, rho: float, a: NDArray[np.float64], b: NDArray[np.float64]) -> Polygon | None:
    """The polygon ``{(beta, s): 0 <= s, x_i + a_i s <= beta <= x_i + b_i s}`` within the box, by its two envelopes.

    For each s, beta lies between the upper envelope of the lines ``x_i + a_i s`` (convex) and the
    lower envelope of ``x_i + b_i s`` (concave); their gap is convex and piecewise linear, so the
    s where it is <= 0 form an interval found exactly at the envelopes' breakpoints. The vertices lie
    at the interval's ends and the breakpoints inside it: O(m log m) for m tail scores (the pairwise
    intersection of all constraints, O(m³), took seconds at n = 1,024).
    """
    x = tail.x
    span = max(tail.span, abs(float(x[-1])), 1e-300)
    s_box, beta_lo, beta_hi = _BOX * span, float(x[0]) - _BOX * span, float(x[-1]) + _BOX * span
    fa, fb = np.isfinite(a), np.isfinite(b)
    # The box's beta limits join each family as a flat line (flagged): an unbounded side then ends on the box.
    low_c, low_a = np.append(x[fa], beta_lo), np.append(a[fa], 0.0)
    up_c, up_a = np.append(x[fb], beta_hi), np.append(b[fb], 0.0)
    low_box, up_box = np.arange(low_c.size) == low_c.size - 1, np.arange(up_c.size) == up_c.size - 1
    low_hull, low_breaks = _upper_envelope(low_c, low_a)
    up_hull, up_breaks = _upper_envelope(-up_c, -up_a)  # the lower envelope of the upper lines, negated
    candidates = np.unique(np.concatenate([[0.0, s_box], low_breaks, up_breaks]))
    candidates = candidates[(candidates >= 0.0) & (candidates <= s_box)]

    def envelopes(s: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64], NDArray[np.int64]]:
        lows = low_c[low_hull][None, :] + low_a[low_hull][None, :] * s[:, None]
        ups = up_c[up_hull][None, :] + up_a[up_hull][None, :] * s[:, None]
        i, j = lows.argmax(axis=1), ups.argmin(axis=1)
        rows = np.arange(s.size)
        return lows[rows, i], ups[rows, j], low_hull[i], up_hull[j]

    low, up, _, _ = envelopes(candidates)
    gap = low - up
    tolerance = 1e-12 * (np.abs(low) + np.abs(up) + span)
    inside = np.flatnonzero(gap <= tolerance)
    if inside.size == 0:
        return None
    first, last = int(inside[0]), int(inside[-1])
    ends = []
    for k, neighbour in ((first, first - 1), (last, last + 1)):
        if 0 <= neighbour < candidates.size and gap[neighbour] > tolerance[neighbour]:  # the root on that segment
            t = gap[k] / (gap[k] - gap[neighbour])
            ends.append(candidates[k] + t * (candidates[neighbour] - candidates[k]))
        else:
            ends.append(candidates[k])
    s_points = np.unique(np.concatenate([ends, candidates[first : last + 1]]))
    low, up, i, j = envelopes(s_points)
    vertices = np.concatenate([np.stack([low, s_points], axis=1), np.stack([up, s_points], axis=1)])
    at_box = s_points >= s_box
    on_box = np.concatenate([at_box | low_box[i], at_box | up_box[j]])
    return Polygon(gamma, rho, vertices, on_box)


def _upper_envelope(intercepts: NDArray[np.float64], slopes: NDArray[np.float64]) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """The lines ``intercept + slope s`` that attain the maximum for some s, by slope, and the s where it passes from one to the next."""
    order = np.lexsort((intercepts, slopes))
    hull: list[int] = []
    for k in order.tolist():
        c, a = intercepts[k], slopes[k]
        if hull and slopes[hull[-1]] == a:
            hull.pop()  # same slope, lower intercept: never the maximum
        while len(hull) >= 2:
            c1, a1, c2, a2 = intercepts[hull[-2]], slopes[hull[-2]], intercepts[hull[-1]], slopes[hull[-1]]
            # The middle line is useless if the new one overtakes the first no later than the middle one does.
            if (c1 - c) * (a2 - a1) <= (c1 - c2) * (a - a1):
                hull.pop()
            else:
                break
        hull.append(k)
    idx = np.array(hull, dtype=np.int64)
    breaks = (intercepts[idx[:-1]] - intercepts[idx[1:]]) / (slopes[idx[1:]] - slopes[idx[:-1]])
    return idx, breaks


def linear_range(poly: Polygon, weights: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """min and max over the polygon of ``beta - s w`` for each w (``weights``); ±inf where attained on the box."""
    values = poly.vertices[:, :1] - poly.vertices[:, 1:] * weights[None, :]
    lo_i, hi_i = values.argmin(axis=0), values.argmax(axis=0)
    cols = np.arange(weights.size)
    lo, hi = values[lo_i, cols], values[hi_i, cols]
    return np.where(poly.on_box[lo_i], -np.inf, lo), np.where(poly.on_box[hi_i], np.inf, hi)


def consonant_polygons(tail: Tail) -> list[Polygon]:
    """The non-empty polygons over the shape grid, each gamma's rho range refined at its ends by bisection."""
    found: list[Polygon] = []
    for gamma in EXTRAPOLATION_GAMMAS:
        on_grid = polygons_of_gamma(tail, float(gamma), _RHOS)
        found.extend(p for p in on_grid if p is not None)
        feasible = [p is not None for p in on_grid]
        for j in range(len(_RHOS) - 1):
            if feasible[j] != feasible[j + 1]:  # an end of the consonant rho range lies between
                inside, outside = (_RHOS[j], _RHOS[j + 1]) if feasible[j] else (_RHOS[j + 1], _RHOS[j])
                best = None
                for _ in range(_BISECTIONS):
                    mid = math.sqrt(inside * outside) if inside > 0 and outside > 0 else (inside + outside) / 2.0
                    poly = consonant_polygon(tail, float(gamma), float(mid))
                    if poly is None:
                        outside = mid
                    else:
                        inside, best = mid, poly
                if best is not None:
                    found.append(best)
    # As rho grows with s rho fixed, the law tends to the normal one (of any gamma): the closure of the set.
    if any(p.rho == _RHOS[-1] for p in found):
        normal = consonant_polygon(tail, 0.0, math.inf)
        if normal is not None:
            found.append(normal)
    return found


_GOLDEN_STEPS = 8  # per extreme: the bracket of two grid steps shrunk 0.618^8 ~ 1/47 times


def refine_extremes(tail: Tail, polygons: list[Polygon], level: float) -> list[Polygon]:
    """For each gamma, the rho maximizing the band's top (minimizing its bottom) at the last budget, off the grid.

    Between grid points a band end moves smoothly with rho; a golden-section search over log rho in
    the two grid steps around the grid's best finds the shape that attains it, so the band is not
    narrowed by the grid (within 0.5 % of its width against 400 noise levels per gamma:
    tests/unit/test_extrapolation.py). The asymptote's ends lie at the ends of the rho range,
    which the bisection has found.
    """
    extra: list[Polygon] = []
    levels = np.array([level])
    for gamma in EXTRAPOLATION_GAMMAS:
        members = sorted((p for p in polygons if p.gamma == gamma and math.isfinite(p.rho)), key=lambda p: p.rho)
        if len(members) < 3:
            continue
        rhos = np.array([p.rho for p in members])
        quantiles = shape_ppf(levels[None, :], float(gamma), rhos[:, None])[:, 0]
        ranges = [linear_range(p, np.array([w])) for p, w in zip(members, quantiles)]
        for sign in (1.0, -1.0):

            def score(poly: Polygon | None, sign: float = sign) -> float:
                if poly is None:
                    return -math.inf
                lo, hi = linear_range(poly, shape_quantiles(levels, poly.gamma, poly.rho))
                return float(hi[0]) if sign > 0 else -float(lo[0])

            values = [float(hi[0]) if sign > 0 else -float(lo[0]) for lo, hi in ranges]
            j = int(np.argmax(values))
            if not (0 < j < len(members) - 1) or not math.isfinite(values[j]):
                continue
            left = math.log(rhos[j - 1]) if rhos[j - 1] > 0 else math.log(rhos[j]) - 3.0
            right = math.log(rhos[j + 1])
            ratio = (math.sqrt(5.0) - 1.0) / 2.0
            a, b = right - ratio * (right - left), left + ratio * (right - left)
            pa, pb = consonant_polygon(tail, gamma, math.exp(a)), consonant_polygon(tail, gamma, math.exp(b))
            fa, fb = score(pa), score(pb)
            for _ in range(_GOLDEN_STEPS):
                if fa >= fb:
                    right, b, pb, fb = b, a, pa, fa
                    a = right - ratio * (right - left)
                    pa = consonant_polygon(tail, gamma, math.exp(a))
                    fa = score(pa)
                else:
                    left, a, pa, fa = a, b, pb, fb
                    b = left + ratio * (right - left)
                    pb = consonant_polygon(tail, gamma, math.exp(b))
                    fb = score(pb)
            best, value = (pa, fa) if fa >= fb else (pb, fb)
            if best is not None and value > values[j]:
                extra.append(best)
    return extra


def contains(tail: Tail, gamma: float, rho: float, beta: float, s: float) -> bool:
    z = (beta - tail.x) / s
    h = shape_cdf(z, gamma, rho)
    eps = 1e-9
    return bool(np.all(h >= tail.p_low - eps) and np.all(h <= tail.p_high + eps))


def shape_cdf_any(z: NDArray[np.float64], gamma: float, rho: float) -> NDArray[np.float64]:
    """H for a shape, rho = inf being the normal limit; ±inf maps to 1 and 0."""
    out = np.where(z > 0, 1.0, 0.0)
    finite = np.isfinite(z)
    if finite.any():
        out[finite] = special.ndtr(z[finite]) if math.isinf(rho) else shape_cdf(z[finite], gamma, rho)
    return out


_MEAN_GRID = 256  # points between the threshold and the top bound, beside the scores themselves


def mean_curves(
    curve: TuningCurve, tail: Tail, polygons: list[Polygon], law_x: NoisyQuadratic, ks: NDArray[np.float64],
    exact: NDArray[np.bool_],
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """The mean tuning curve's conservative bands and its point estimate, for budgets ``ks``.

    At the budgets ``exact`` (those up to the informative budget, where the median's band is the
    nonparametric one) the bands are the curve's own nonparametric mean bands
    (:func:`~showwork.statistics.tuning_curve_bands.mean_tuning_curve_bands`), so that no
    model-based number stands in a row the output calls nonparametric; past them, what follows.

    The point: the best of k under the empirical CDF below the threshold spliced with the fitted
    law's conditional tail above it (the fit is conditional on the tail), the mass past b put at
    b. (The fitted law alone describes the tail only; its own mean at small k would be meaningless.)

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
            cdf_low = 1.0 - shape_cdf_any(z_max, poly.gamma, poly.rho)
            cdf_up = 1.0 - shape_cdf_any(z_min, poly.gamma, poly.rho)
            g_low_left[beyond] = np.minimum(g_low_left[beyond], cdf_low)
            g_up_right[beyond] = np.maximum(g_up_right[beyond], cdf_up)
        f_low = np.where(beyond, np.maximum(low_at, g_low_left), low_at)
        f_up = np.where(beyond, np.minimum(up_below, g_up_right), up_below)
    widths = right - left
    top = (widths[None, :] * f_low[None, :] ** ks[:, None]).sum(axis=1)  # ∫ F^k at least this
    bottom = (widths[None, :] * f_up[None, :] ** ks[:, None]).sum(axis=1)  # and at most this
    lower_x, upper_x = b - bottom, b - top
    # The point: F_n below the threshold, then F_n(t⁻) + (1 - F_n(t⁻)) P(law <= x | law >= t), by the trapezoid rule.
    below_t = np.searchsorted(values, tail.threshold, side="left") / values.size
    g_t = float(law_x.cdf(tail.threshold))
    def spliced(x: NDArray[np.float64]) -> NDArray[np.float64]:
        empirical = np.searchsorted(values, x, side="right") / values.size
        conditional = np.clip((law_x.cdf(x) - g_t) / max(1.0 - g_t, 1e-300), 0.0, 1.0)
        return np.where(x < tail.threshold, empirical, below_t + (1.0 - below_t) * conditional)
    f_left, f_right = spliced(left), spliced(np.nextafter(right, -np.inf))
    middle = (widths[None, :] * (f_left[None, :] ** ks[:, None] + f_right[None, :] ** ks[:, None]) / 2.0).sum(axis=1)
    point_x = b - middle
    lower, point, upper = (-upper_x, -point_x, -lower_x) if curve.minimize else (lower_x, point_x, upper_x)
    lower[exact], upper[exact] = mean_tuning_curve_bands(band, ks[exact], curve.minimize)
    return lower, point, upper


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
