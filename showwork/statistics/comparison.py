"""Comparing tuning curves across budgets: evidence levels, crossovers, budgets to reach a target.

Evidence that curve A beats curve B at a budget, from their point estimates and simultaneous
bands (Lourie, Cho & He 2024, after Minka 2002):

- **strong**: the bands do not overlap (A's lower band is above B's upper band);
- **fair**: each point estimate lies outside the other's band;
- **weak**: one point estimate lies outside the other's band;
- **none**: otherwise — the data do not say which is better at that budget.

"Better" means higher, or lower when minimizing.

**Which evidence carries an error bound.** Each curve's band is read from a CDF band
``L <= F <= U`` that holds, for all scores at once, with probability at least c (its
confidence: :mod:`~showwork.statistics.cdf_bands`). Where it holds, every band read from it holds
at every budget at once, real budgets included: the quantile curve ``F^{-1}(q^{1/k})`` (minimizing:
``F^{-1}(1 - (1 - q)^{1/k})``) and the mean curve ``b - ∫ F^k`` (minimizing: ``a + ∫ (1 - F)^k``,
with every score truly in ``[a, b]``) are monotone in F, so they lie between the same functionals of
L and U. Call A's event "A's band holds". Then:

1. If both bands hold and the evidence at a budget k is strong for A, A's true curve is strictly
   better at k: maximizing, ``true_A(k) >= lower_A(k) > upper_B(k) >= true_B(k)``; minimizing, the
   same with the order reversed (``true_A(k) <= upper_A(k) < lower_B(k) <= true_B(k)``). So where
   both bands hold, strong evidence for a curve that is not better (worse or equal) cannot occur
   at any budget.
2. The two searches are independent (separate random draws), so both bands hold with probability
   at least c². Hence the chance of **any false "strong", over all budgets of the pair at once, is
   at most 1 - c²** (0.36 at c = 0.8, 0.19 at 0.9, 0.0975 at 0.95).
3. Without independence (e.g. two families that drew the same configurations from one seed, or
   that share trials: ``report --tuning-risk`` compares all the trials of a search with those at a
   parameter's default, a subset of them) the union bound gives at most ``2(1 - c)``: both bands
   hold with probability at least ``2c - 1``. :func:`compare_curves` marks such pairs
   (``dependent``) and each :class:`PairComparison` states the bound that applies to it.
   Disjoint subsets of one search's i.i.d. trials (``report --by``: the trials of each value)
   are independent given their sizes, so they keep ``1 - c²`` (derived in
   :mod:`showwork.report.by_param`).
   Over all pairs of m curves at once: at most ``1 - c^m`` (independent), ``m(1 - c)`` in any case.
   :func:`false_strong_bound` computes these.

The bound holds whatever budgets are compared, including each curve at its own budget on another
axis (equal compute): the bands hold for every k at once, so a data-dependent k is covered too.
Fair and weak evidence carry no such bound: a point estimate outside the other band is not an
event of the bands alone, and between two identical score distributions some budget shows fair
evidence in several per cent of replicates at c = 0.8 (``experiments/evidence_errors.py`` measures
the rates of each level; its table is in ``experiments/README.md``).

A budget is *resolved* when the evidence there is strong (``RESOLVED_LEVELS``) and the budget is
within the informative budget of both curves (:func:`~showwork.statistics.informative_budget`):
beyond it at least one band is the support bound, so no comparison there is settled. A false
resolved budget is a false strong one, so its chance is bounded as above. This is the one rule the
command line and the reports use; fair and weak evidence are reported as such, never as resolved.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Callable, Collection, Iterable, Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from showwork.statistics._search import smallest_integer_where
from showwork.statistics.errors import ArgumentError, check_probability
from showwork.statistics.planning import informative_budget
from showwork.statistics.point_estimates import u_statistic, v_statistic
from showwork.statistics.tuning_curve_bands import mean_tuning_curve, quantile_tuning_curve
from showwork.statistics.tuning_curves import TuningCurve

__all__ = [
    "EVIDENCE_LEVELS",
    "RESOLVED_LEVELS",
    "EvidenceRange",
    "false_strong_bound",
    "PairComparison",
    "evidence",
    "evidence_ranges",
    "compare_curves",
    "budget_to_reach",
    "budgets_to_reach",
]

EVIDENCE_LEVELS = ("none", "weak", "fair", "strong")
RESOLVED_LEVELS = ("strong",)
"""The evidence levels that settle a comparison at a budget within both informative budgets: only
strong evidence has a stated error bound (:func:`false_strong_bound`, the module docstring)."""


def false_strong_bound(confidence: float, curves: int = 2, independent: bool = True) -> float:
    """Upper bound on the chance of any false strong (so false resolved) evidence, over all budgets at once.

    Parameters
    ----------
    confidence : float in (0, 1)
        The simultaneous confidence c of each curve's band.
    curves : int >= 2
        How many curves are compared, every pair among them (2: one pair).
    independent : bool
        The curves come from independent searches: ``1 - c^curves``; otherwise the union bound
        ``curves * (1 - c)`` (capped at 1), which holds under any dependence.

    Returns
    -------
    float in [0, 1]
        The probability that strong evidence favours a curve that is not better at some budget of
        some pair is at most this (the module docstring derives it).

    Examples
    --------
    >>> round(false_strong_bound(0.8), 4), round(false_strong_bound(0.8, independent=False), 4)
    (0.36, 0.4)
    """
    check_probability(confidence, "confidence")
    if curves < 2:
        raise ArgumentError(f"a comparison has at least 2 curves (got {curves!r}).")
    if independent:
        return 1.0 - confidence**curves
    return min(1.0, curves * (1.0 - confidence))


def evidence(
    point_a: NDArray[np.float64],
    lower_a: NDArray[np.float64],
    upper_a: NDArray[np.float64],
    point_b: NDArray[np.float64],
    lower_b: NDArray[np.float64],
    upper_b: NDArray[np.float64],
    minimize: bool = False,
) -> tuple[NDArray[np.str_], NDArray[np.int8]]:
    """Return the evidence level and the favoured curve at each budget.

    Parameters
    ----------
    point_a, lower_a, upper_a, point_b, lower_b, upper_b : arrays of floats, same shape
        Point estimates and simultaneous bands of curves A and B at the same budgets.
    minimize : bool
        Lower is better.

    Returns
    -------
    levels : array of str from ``EVIDENCE_LEVELS``
    favoured : array of int8
        +1 where the evidence favours A, -1 where it favours B, 0 where the level is "none".

    Examples
    --------
    >>> levels, fav = evidence([0.9], [0.85], [0.95], [0.7], [0.6], [0.8])
    >>> levels.tolist(), fav.tolist()
    (['strong'], [1])
    """
    pa, la, ua, pb, lb, ub = (np.asarray(x, dtype=float) for x in (point_a, lower_a, upper_a, point_b, lower_b, upper_b))
    if minimize:  # negate: lower is better becomes higher is better; the bands swap ends
        pa, la, ua, pb, lb, ub = -pa, -ua, -la, -pb, -ub, -lb
    levels = np.full(pa.shape, "none", dtype=object)
    favoured = np.zeros(pa.shape, dtype=np.int8)
    for sign, (p1, l1, u1, p2, l2, u2) in ((1, (pa, la, ua, pb, lb, ub)), (-1, (pb, lb, ub, pa, la, ua))):
        outside_1 = p1 > u2  # 1's estimate is above 2's band
        outside_2 = p2 < l1  # 2's estimate is below 1's band
        level = np.where(
            l1 > u2, "strong", np.where(outside_1 & outside_2, "fair", np.where(outside_1 | outside_2, "weak", "none"))
        )
        mask = level != "none"
        levels[mask] = level[mask]
        favoured[mask] = sign
    return levels.astype(str), favoured


@dataclass(frozen=True)
class EvidenceRange:
    """A maximal run of consecutive budgets with the same evidence level, favoured curve and verdict.

    ``resolved``: the level is strong and the whole range lies within the pair's
    informative budget (a range never straddles it: the ranges are split there).
    """

    k_start: float
    k_end: float
    level: str
    favoured: str | None
    resolved: bool


@dataclass(frozen=True)
class PairComparison:
    """Evidence between two curves at every budget, its ranges, and the crossovers.

    ``k`` is the shared axis the pair is compared on: the budget in trials, or, when the curves
    were compared at their own budgets (``compare_curves(..., axis=...)``, e.g. equal compute),
    that axis (``k_a`` and ``k_b`` then hold each curve's budget in trials at each point).
    ``crossovers`` are the points of that axis at which the point estimates (of ``statistic``)
    change order: each is the first point after the change. ``informative_k`` is the last point
    of the axis within both curves' informative budgets (in trials: the smaller of the two);
    ``resolved`` says, per point, whether the comparison is settled there (see the module docstring);
    ``confidence`` is the bands' confidence c, from which :attr:`false_resolved_bound` follows;
    ``independent`` says whether the two curves come from independent searches (False when they
    share trials), so which of its bounds applies (:attr:`resolved_error_bound`).
    """

    a: str
    b: str
    statistic: str
    k: NDArray[np.float64]
    levels: NDArray[np.str_]
    favoured: NDArray[np.int8]
    ranges: tuple[EvidenceRange, ...]
    crossovers: tuple[float, ...]
    informative_k: float
    resolved: NDArray[np.bool_]
    k_a: NDArray[np.float64] | None = None  # each curve's budget in trials (set when compared on another axis)
    k_b: NDArray[np.float64] | None = None
    axis: str = "k"  # what ``k`` counts: "k" (trials), or the name the caller gave its axis (e.g. "hours")
    confidence: float = float("nan")  # of each curve's band
    independent: bool = True  # the curves come from independent searches (no trial in common)

    @property
    def false_resolved_bound(self) -> dict[str, float]:
        """The chance of any false resolved budget of this pair is at most ``independent`` (1 - c²) for
        independent searches, ``any`` (2(1 - c)) under any dependence (:func:`false_strong_bound`)."""
        return {
            "independent": false_strong_bound(self.confidence),
            "any": false_strong_bound(self.confidence, independent=False),
        }

    @property
    def resolved_error_bound(self) -> float:
        """The bound of :attr:`false_resolved_bound` that applies to this pair: 1 - c² if :attr:`independent`, else 2(1 - c)."""
        return false_strong_bound(self.confidence, independent=self.independent)

    def to_dict(self) -> dict:
        return {
            "a": self.a,
            "b": self.b,
            "statistic": self.statistic,
            "axis": self.axis,
            "informative_k": self.informative_k if np.isfinite(self.informative_k) else None,
            "ranges": [r.__dict__ for r in self.ranges],
            "crossovers": list(self.crossovers),
            "confidence": self.confidence,
            "resolved_levels": list(RESOLVED_LEVELS),
            "false_resolved_bound": self.false_resolved_bound,
            "independent": self.independent,
            "resolved_error_bound": self.resolved_error_bound,
        }


def resolved_budgets(k: NDArray[np.float64], levels: NDArray[np.str_], informative_k: float) -> NDArray[np.bool_]:
    """Per budget: strong evidence within the informative budget (the module docstring's rule)."""
    return np.isin(levels, RESOLVED_LEVELS) & (np.asarray(k, dtype=float) <= informative_k)


def pair_informative_budget(a: TuningCurve, b: TuningCurve) -> float:
    """The smaller informative budget of two curves: beyond it at least one of their bands is trivial."""
    return min(_informative(c) for c in (a, b))


def compare_curves(
    curves: Sequence[TuningCurve] | Mapping[str, TuningCurve],
    statistic: str = "median",
    axis: ArrayLike | None = None,
    axis_name: str = "k",
    dependent: Iterable[Collection[str]] = (),
) -> list[PairComparison]:
    """Compare every pair of curves at their (shared) budgets, or point by point along another axis.

    Parameters
    ----------
    curves : sequence of TuningCurve or mapping name -> TuningCurve
        Two or more curves estimated at the same budgets, same direction and confidence. Each is
        named after its input: its key in a mapping, else its ``name`` (for the command line, its
        results file), else its place in the sequence (``"curve 2"``, counting from 1). Two
        curves of the same name are refused (one would hide the other).
    statistic : {"median", "mean"}
        Compare the quantile curves with their bands, or the mean curves (V-statistic with the
        mean-curve bands; needs finite support bounds).
    axis : array of floats, optional
        Compare the curves point by point along this increasing axis instead of at shared budgets:
        each curve was estimated at its own budgets, one per point (``curve.k[i]`` trials at
        ``axis[i]``). Equal compute (Lourie et al. 2024, §2; Dodge et al. 2019's budgets in time)
        is ``curve.at(cost / mean_cost_per_trial)`` for each curve on one ``cost`` axis. Ranges and
        crossovers are then in the axis's units, and a point is resolved only where each curve's
        own budget is within its informative budget.
    axis_name : str
        What the axis counts (``"k"``: trials; e.g. ``"hours"``), kept in ``PairComparison.axis``.
    dependent : iterable of pairs of names
        The pairs of curves whose searches are not independent (e.g. they share trials): their
        comparison states the union bound 2(1 - c) on a false resolved budget, not 1 - c²
        (``PairComparison.independent``; the module docstring, point 3).

    Returns
    -------
    list of PairComparison, one per pair, in the given order; budgets beyond the pair's
    informative budget are marked unresolved (``resolved``, ``EvidenceRange.resolved``).
    """
    if isinstance(curves, Mapping):
        named = dict(curves)
    else:
        names = [c.name if c.name is not None else f"curve {i + 1}" for i, c in enumerate(curves)]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ArgumentError(f"two curves are named {repeated[0]!r}: give each curve its own name.")
        named = dict(zip(names, curves))
    if len(named) < 2:
        raise ArgumentError("compare at least two curves.")
    if statistic not in ("median", "mean"):
        raise ArgumentError(f"statistic must be 'median' or 'mean' (got {statistic!r}).")
    items = list(named.items())
    first = items[0][1]
    linked = {frozenset(pair) for pair in dependent}
    unknown = sorted(name for pair in linked for name in pair if name not in named)
    if unknown:
        raise ArgumentError(f"a dependent pair names {unknown[0]!r}, which is not among the curves compared.")
    if any(len(pair) != 2 for pair in linked):
        raise ArgumentError("each dependent pair names two different curves.")
    x = _axis(axis, items)
    for name, c in items[1:]:
        if x is None and (c.k.shape != first.k.shape or not np.array_equal(c.k, first.k)):
            raise ArgumentError(f"curve {name!r} was estimated at other budgets than {items[0][0]!r}.")
        if c.minimize != first.minimize:
            raise ArgumentError(f"curve {name!r} and {items[0][0]!r} disagree on minimize.")
        if (c.bands.method, c.bands.confidence, c.bands.quantile, c.bands.looks) != (
            first.bands.method, first.bands.confidence, first.bands.quantile, first.bands.looks
        ):
            raise ArgumentError(
                f"curve {name!r} and {items[0][0]!r} have different bands (method, confidence, quantile or looks);"
                " evidence levels compare bands of the same kind."
            )
    out = []
    for (name_a, ca), (name_b, cb) in itertools.combinations(items, 2):
        pa, la, ua = _series(ca, statistic, name_a)
        pb, lb, ub = _series(cb, statistic, name_b)
        levels, favoured = evidence(pa, la, ua, pb, lb, ub, ca.minimize)
        if x is None:
            points, informative_k = ca.k, pair_informative_budget(ca, cb)
            within = ca.k <= informative_k
        else:  # each curve within its own informative budget, at its own budget in trials
            points = x
            within = (ca.k <= _informative(ca)) & (cb.k <= _informative(cb))
            informative_k = float(x[within].max()) if within.any() else 0.0  # the last point within both
        resolved = np.isin(levels, RESOLVED_LEVELS) & within
        out.append(
            PairComparison(
                a=name_a,
                b=name_b,
                statistic=statistic,
                k=points,
                levels=levels,
                favoured=favoured,
                ranges=evidence_ranges(points, levels, favoured, within, resolved, name_a, name_b),
                crossovers=_crossovers(points, pa - pb),
                informative_k=informative_k,
                resolved=resolved,
                k_a=None if x is None else ca.k,
                k_b=None if x is None else cb.k,
                axis=axis_name if x is not None else "k",
                confidence=ca.bands.confidence,
                independent=frozenset((name_a, name_b)) not in linked,
            )
        )
    return out


def _informative(c: TuningCurve) -> float:
    return informative_budget(c.n, minimize=c.minimize, bands=c.bands)  # the bands' looks included


def _axis(axis: ArrayLike | None, items: list[tuple[str, TuningCurve]]) -> NDArray[np.float64] | None:
    """The shared axis of a comparison at each curve's own budgets, checked against the curves; None without one."""
    if axis is None:
        return None
    x = np.asarray(axis, dtype=float)
    if x.ndim != 1 or x.size == 0 or not np.all(np.isfinite(x)) or np.any(np.diff(x) <= 0):
        raise ArgumentError("the comparison's axis must be a non-empty, increasing list of finite numbers.")
    for name, c in items:
        if c.k.shape != x.shape:
            raise ArgumentError(f"curve {name!r} has {c.k.size} budgets for the {x.size} points of the comparison's axis.")
    return x


def _series(c: TuningCurve, statistic: str, name: str):
    if statistic == "median":  # the q-quantile curve: "median" names it for q = 0.5, the default
        return c.quantile_curve, c.quantile_curve_lower, c.quantile_curve_upper
    if c.mean_lower is None or c.mean_upper is None:
        raise ArgumentError(f"curve {name!r} has no mean-curve bands: give finite support bounds a and b.")
    return c.v, c.mean_lower, c.mean_upper


def evidence_ranges(k, levels, favoured, within, resolved, name_a, name_b) -> tuple[EvidenceRange, ...]:
    """Maximal runs of equal level and favoured curve (``favoured`` 1: ``name_a``, -1: ``name_b``, 0: neither), split
    at the informative budget (``within``, per budget); each run resolved as its first budget is (``resolved``)."""
    out: list[EvidenceRange] = []
    start = 0
    for i in range(1, k.size + 1):
        if i == k.size or (levels[i], favoured[i], within[i]) != (levels[start], favoured[start], within[start]):
            who = {1: name_a, -1: name_b}.get(int(favoured[start]))
            out.append(EvidenceRange(float(k[start]), float(k[i - 1]), str(levels[start]), who, bool(resolved[start])))
            start = i
    return tuple(out)


def _crossovers(k, difference) -> tuple[float, ...]:
    sign = np.sign(difference)
    out = []
    last = 0.0
    for kk, s in zip(k.tolist(), sign.tolist()):
        if s != 0:
            if last != 0 and s != last:
                out.append(kk)
            last = s
    return tuple(out)


def budget_to_reach(series: Callable[[float], float], target: float, minimize: bool = False, k_max: int = 10**9) -> int | None:
    """Return the smallest integer budget k in ``[1, k_max]`` at which a monotone curve reaches ``target``.

    ``series(k)`` must be non-decreasing in k when maximizing (non-increasing when minimizing), as
    every tuning curve and band is. "Reaches" means ``>= target`` (``<=`` when minimizing).
    Returns None if it does not reach the target by ``k_max``.
    """
    def reached(k: int) -> bool:
        value = series(float(k))
        return bool(value <= target) if minimize else bool(value >= target)

    return smallest_integer_where(reached, 1, k_max)


def budgets_to_reach(curve: TuningCurve, target: float) -> dict[str, int | None]:
    """Smallest budget at which each point estimate and each band of ``curve`` reaches ``target``.

    Keys: ``v``, ``u`` (at most n), ``median``, ``median_lower``, ``median_upper``, and
    ``mean_lower``/``mean_upper`` when the support is bounded. The lower band reaching the
    target (upper band when minimizing) means the data show, at the curve's confidence, that the
    budget suffices; the other band reaching it means the target is not ruled out.
    """
    ys = curve.band.values
    m = curve.minimize

    def quantile_part(i):
        return lambda k: quantile_tuning_curve(curve.band, [k], curve.quantile, m)[i][0]

    def mean_part(i):
        return lambda k: mean_tuning_curve(curve.band, [k], m)[i][0]

    out: dict[str, int | None] = {
        "v": budget_to_reach(lambda k: v_statistic(ys, [k], m)[0], target, m),
        "u": budget_to_reach(lambda k: u_statistic(ys, [k], m)[0], target, m, k_max=ys.size),
        "median": budget_to_reach(quantile_part(1), target, m),
        "median_lower": budget_to_reach(quantile_part(0), target, m),
        "median_upper": budget_to_reach(quantile_part(2), target, m),
    }
    if curve.mean_lower is not None:
        out["mean_lower"] = budget_to_reach(mean_part(0), target, m)
        out["mean_upper"] = budget_to_reach(mean_part(2), target, m)
    return out
