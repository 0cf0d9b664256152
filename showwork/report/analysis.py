"""The numbers of a report: one tuning curve per family, descriptive statistics, comparisons, advice.

:func:`analyze` turns :class:`~showwork.report.inputs.FamilyResults` into a :class:`Report`. Every
number comes from :mod:`showwork.statistics` (one implementation of each formula); this module only
decides *which* numbers a report shows:

- the budget grid of the curves and figures (every k up to ``GRID_DENSE``, then a geometric grid up
  to the largest number of trials — evidence ranges are read on that grid);
- the budgets of the tables (1, 2, 5, 10, 20, 50, ... up to the largest n, unless given);
- the failure policy of each family: the one its search recorded, else ``worst`` (failures count as
  the worst value, which keeps i.i.d. sampling intact), unless the settings force one;
- the *informative budget* of each family (Lourie, Cho & He 2024, §5) and the advice derived from it;
- a verdict per pair of families: budget ranges by evidence level, and where the bands cannot
  resolve the comparison at all. Up to ``ALL_PAIRS_UP_TO`` families every pair is compared; with
  more, the families are ranked and each is compared with the best one (the *reference*): the
  question a reader of a 50- or 300-family report asks is which families the best one is shown to
  beat, and 44,850 pairwise verdicts (300 families) answer it in no readable way.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from showwork.errors import InputError
from showwork.report.equal_cost import trial_costs
from showwork.report.inputs import FamilyResults
from showwork.selection import TiedBest
from showwork.statistics import (
    ArgumentError,
    BandSpec,
    BudgetOutOfReachError,
    PairComparison,
    TuningCurve,
    budgets_to_reach,
    compare_curves,
    equal_cost_axis,
    false_strong_bound,
    informative_budget,
    trials_needed,
    tuning_curve,
)
from showwork.statistics.cost import COST_UNITS, budget_cost
from showwork.statistics.failures import FAILURE_POLICIES
from showwork.statistics.point_estimates import best_of_k_std, exact_mean

__all__ = [
    "Advice",
    "CostView",
    "FamilyAnalysis",
    "FamilySummary",
    "PairAnalysis",
    "Report",
    "ReportSettings",
    "analyze",
    "budget_grid",
    "budget_text",
    "cost_text",
    "evidence_text",
    "family_curve",
    "next_round_budget",
    "resolved_bound_text",
    "resolved_rule_text",
    "table_budgets",
    "verdict_text",
]

GRID_DENSE = 200
"""Every integer budget up to this one is on the curves' grid."""
GRID_SPARSE_POINTS = 120
"""Geometrically spaced budgets between ``GRID_DENSE`` and the largest n."""
LARGEST_DRAWN = 1e300
"""The largest magnitude of a score (or support bound) a report takes: the figures' axes, margins and
summaries need the span of the values and a little more to be finite floats. ``showwork curve`` and
the statistics take every finite score."""
def evidence_text(level: str) -> str:
    """An evidence level in words: "no evidence", "weak evidence", ... (never "none evidence")."""
    return "no evidence" if level == "none" else f"{level} evidence"


def resolved_bound_text(confidence: float) -> str:
    """The error bound of a resolved budget at band confidence c, short: "false-resolved chance ≤ 0.36"."""
    return f"false-resolved chance ≤ {false_strong_bound(confidence):.3g}"


def verdict_text(resolved: bool, level: str, confidence: float) -> str:
    """A budget range's verdict: "resolved; false-resolved chance ≤ 0.36", or why it is not resolved."""
    if resolved:
        return f"resolved; {resolved_bound_text(confidence)}"
    if level in ("weak", "fair"):
        return f"unresolved: {level} evidence has no error bound"
    return "unresolved"


def resolved_rule_text(confidence: float) -> str:
    """What "resolved" means and its bound, at band confidence c (the rule of :mod:`showwork.statistics.comparison`)."""
    independent = false_strong_bound(confidence)
    dependent = false_strong_bound(confidence, independent=False)
    return (
        f"Resolved means strong evidence (the two {confidence:.0%} bands exclude each other) within both informative"
        f" budgets. If each band holds with probability ≥ c = {confidence:g}, strong evidence for a curve that is not"
        f" better can only occur where a band fails, so the chance of any false resolved budget of a pair, over all"
        f" budgets at once, is at most 1 − c² = {independent:.3g} for independent searches (2(1 − c) ="
        f" {dependent:.3g} under any dependence). Fair and weak evidence carry no such bound and never count as"
        " resolved; their false rates are measured in experiments/README.md."
    )


ALL_PAIRS_UP_TO = 6
"""Up to this many families every pair is compared (15 pairs); beyond, each family with the reference."""


@dataclass(frozen=True)
class ReportSettings:
    """What a report computes; every field has the report's default.

    Attributes
    ----------
    confidence : float, default 0.8
        Simultaneous coverage of every band.
    method : {"ld-hd", "ld-et", "ks", "dkw"}, default "ld-hd"
        CDF band construction (Learned-Miller–DeStefano highest-density by default).
    quantile : float, default 0.5
        Which quantile tuning curve is banded (0.5: the median, exact).
    a, b : float or None
        Support bounds of the score (e.g. 0 and 1 for accuracy). They enable the mean-curve bands;
        None: the search's recorded metric bounds, else unbounded.
    failure_policy : {"error", "worst", "exclude"} or None
        Force a policy on every family; None: each search's own policy, else ``worst``.
    budgets : tuple of float or None
        The curves' budget grid; None: :func:`budget_grid` of the largest n.
    table_budgets : tuple of int or None
        The budgets of the tables; None: :func:`table_budgets` of the largest n.
    targets : tuple of float
        Scores for the "budget needed to reach" table.
    bound_k : float or None
        The budget the advice plans for; None: :func:`next_round_budget` past the largest
        informative budget among the families.
    cost_unit : str, default "hours"
        Unit of the time axis and of the compute totals (see ``showwork.statistics.cost``).
    gpus_per_trial : float or None
        GPUs each trial held, for GPU-hours; None: the search's recorded resources (0 = CPU only).
    grid_intensity : float or None
        Carbon intensity of the electricity the GPUs used, in gCO₂e per kWh, given by the user (no
        look-up); with it the checklist turns the recorded GPU energy into gCO₂e.
    cost : str or None
        Also compare the families at equal total cost (:class:`CostView`): ``"runtime"`` (each
        trial's runtime, shown in ``cost_unit``) or a per-trial value (epochs, FLOPs: a column of
        a results file, a hyperparameter or metric of each trial). None: trials only.
    """

    confidence: float = 0.8
    method: str = "ld-hd"
    quantile: float = 0.5
    a: float | None = None
    b: float | None = None
    failure_policy: str | None = None
    budgets: tuple[float, ...] | None = None
    table_budgets: tuple[int, ...] | None = None
    targets: tuple[float, ...] = ()
    bound_k: float | None = None
    cost_unit: str = "hours"
    gpus_per_trial: float | None = None
    grid_intensity: float | None = None
    cost: str | None = None

    @functools.cached_property
    def bands(self) -> BandSpec:
        """``confidence``, ``method`` and ``quantile`` as a :class:`~showwork.statistics.BandSpec`
        (support unbounded: each family's curve gets it with its own ``a`` and ``b``, or its search's
        metric bounds). Built, and so checked, once when the settings are made; not a field, so
        not in the report's JSON settings."""
        try:
            return BandSpec(confidence=self.confidence, method=self.method, quantile=self.quantile)
        except ArgumentError as error:  # the report's options: bad input
            raise InputError(str(error)) from None

    def __post_init__(self) -> None:
        self.bands  # checks the band settings now, before anything is computed
        if self.failure_policy is not None and self.failure_policy not in FAILURE_POLICIES:
            raise InputError(f"failure policy must be one of {', '.join(FAILURE_POLICIES)} (got {self.failure_policy!r}).")
        if self.cost_unit not in COST_UNITS:
            raise InputError(f"cost unit must be one of {', '.join(COST_UNITS)} (got {self.cost_unit!r}).")
        if self.a is not None and self.b is not None and not self.a <= self.b:  # a == b: a point mass, as the library takes
            raise InputError(f"support bounds need a <= b (got a={self.a!r}, b={self.b!r}).")
        if self.bound_k is not None and not (math.isfinite(self.bound_k) and self.bound_k >= 1):
            raise InputError(f"the budget to plan for must be a finite number >= 1 (got {self.bound_k!r}).")
        if self.gpus_per_trial is not None and not self.gpus_per_trial >= 0:
            raise InputError(f"gpus per trial must be >= 0 (got {self.gpus_per_trial!r}).")
        if self.grid_intensity is not None and not (math.isfinite(self.grid_intensity) and self.grid_intensity > 0):
            raise InputError(f"grid intensity must be a positive number of gCO2e per kWh (got {self.grid_intensity!r}).")
        for label, values in (("budgets", self.budgets), ("table budgets", self.table_budgets)):
            if values is not None and (not values or any(not (math.isfinite(k) and k >= 1) for k in values)):
                raise InputError(f"{label} must be finite numbers >= 1 (got {list(values)!r}).")
        if any(not math.isfinite(t) for t in self.targets):
            raise InputError(f"target scores must be finite (got {list(self.targets)!r}).")


def budget_grid(n_max: int, dense: int = GRID_DENSE, sparse_points: int = GRID_SPARSE_POINTS) -> np.ndarray:
    """Budgets for curves and figures: ``1..min(n_max, dense)``, then geometric up to ``n_max``.

    Examples
    --------
    >>> budget_grid(5).tolist()
    [1.0, 2.0, 3.0, 4.0, 5.0]
    >>> grid = budget_grid(1024)
    >>> grid[:2].tolist(), grid[199:201].tolist(), float(grid[-1])
    ([1.0, 2.0], [200.0, 203.0], 1024.0)
    """
    if n_max < 1:
        raise ValueError(f"n_max must be >= 1 (got {n_max!r}).")
    head = np.arange(1, min(n_max, dense) + 1, dtype=float)
    if n_max <= dense:
        return head
    tail = np.unique(np.round(np.geomspace(dense, n_max, sparse_points)))
    return np.unique(np.concatenate([head, tail]))


def next_round_budget(k: float) -> float:
    """The smallest 1-2-5 number strictly above k (at least 2): a budget worth planning for.

    Examples
    --------
    >>> next_round_budget(4.6), next_round_budget(140.1), next_round_budget(200.0)
    (5.0, 200.0, 500.0)
    """
    if not math.isfinite(k):
        return k
    scale = 1.0
    while True:
        for step in (1.0, 2.0, 5.0):
            if step * scale > max(k, 1.0):
                return step * scale
        scale *= 10.0


def table_budgets(n_max: int) -> tuple[int, ...]:
    """The 1-2-5 series up to ``n_max``, and ``n_max`` itself.

    Examples
    --------
    >>> table_budgets(145)
    (1, 2, 5, 10, 20, 50, 100, 145)
    """
    out = []
    scale = 1
    while scale <= n_max:
        out.extend(k for k in (scale, 2 * scale, 5 * scale) if k <= n_max)
        scale *= 10
    if out[-1] != n_max:
        out.append(n_max)
    return tuple(out)


@dataclass(frozen=True)
class FamilySummary:
    """Descriptive statistics of one family's trials (finished trials; failures counted apart).

    ``best_*`` describe the trial a user would select: the best validation score (first on ties);
    ``best_tie`` says how many trials tie for it and their test scores (:class:`showwork.selection.TiedBest`).
    ``gpu_hours`` is None unless the trials held GPUs; ``compute_hours`` is the summed wall time.
    """

    n_trials: int
    n_failed: int
    best_index: int | None
    best_score: float
    best_test_score: float | None
    best_params: dict
    mean: float
    median: float
    q25: float
    q75: float
    std: float
    mean_runtime_s: float | None
    compute_hours: float | None
    gpus_per_trial: float
    gpu_hours: float | None
    parameter_count: int | None
    best_tie: TiedBest | None = None


@dataclass(frozen=True)
class Advice:
    """How far the bands reach with the trials run, and how many trials a target budget needs.

    ``trials_needed`` is None when ``bound_k`` is already within reach (or could not be solved:
    then ``note`` says why).
    """

    n: int
    informative_k: float
    bound_k: float | None
    trials_needed: int | None
    note: str | None = None

    def text(self) -> str:
        head = f"With {self.n} trials the bands are informative up to k ≈ {budget_text(self.informative_k)}"
        if self.bound_k is None or self.bound_k <= self.informative_k:
            return head + "."
        if self.trials_needed is None:
            return f"{head}; {self.note or f'no number of trials bounds k = {budget_text(self.bound_k)}'}."
        return f"{head}; to bound k = {budget_text(self.bound_k)} you need n ≥ {self.trials_needed}."


def budget_text(k: float) -> str:
    """A budget as the report words it: "4.6", "140", "∞" (one decimal below 10, none above)."""
    if math.isinf(k):
        return "∞"
    return f"{k:.0f}" if k >= 10 else f"{k:.1f}".rstrip("0").rstrip(".")


@dataclass(frozen=True)
class FamilyAnalysis:
    """One family: its trials, its curve on the report's grid and at the table budgets, and more.

    ``targets`` maps each target score to :func:`showwork.statistics.budgets_to_reach`'s answer.
    """

    results: FamilyResults
    curve: TuningCurve
    table_curve: TuningCurve
    summary: FamilySummary
    advice: Advice
    targets: dict[float, dict[str, int | None]] = field(default_factory=dict)
    cost_curve: TuningCurve | None = None  # at the budgets k = c / mean cost of the report's CostView

    @property
    def name(self) -> str:
        return self.results.name


@dataclass(frozen=True)
class PairAnalysis:
    """Evidence between two families at every budget of the grid, and what it resolves.

    ``informative_k`` is the smaller of the two informative budgets: beyond it at least one band is
    trivial, so no comparison there is resolved, whatever the point estimates do (the rule of
    :mod:`showwork.statistics.comparison`, which marks each budget and range).
    """

    comparison: PairComparison
    informative_k: float

    def sentences(self) -> list[str]:
        """One plain sentence per budget range, then one about the uninformative budgets."""
        out = []
        for r in self.comparison.ranges:
            ks = _range_text(r.k_start, r.k_end, self.comparison.axis)
            if r.level == "none":
                out.append(f"{ks}: no evidence either way (unresolved).")
            else:
                loser = self.comparison.b if r.favoured == self.comparison.a else self.comparison.a
                status = verdict_text(r.resolved, r.level, self.comparison.confidence)
                out.append(f"{ks}: {r.level} evidence that {r.favoured} beats {loser} ({status}).")
        k_max = float(self.comparison.k[-1])
        if self.comparison.axis != "k" and self.comparison.crossovers:  # equal cost: where the medians change order
            out.append(f"The medians cross at {', '.join(cost_text(c) for c in self.comparison.crossovers)} {self.comparison.axis}.")
        if self.informative_k < float(self.comparison.k[0]):  # equal cost: e.g. the cheap family's k is past its reach everywhere
            out.append("At every point compared the bands of at least one family are uninformative: the comparison"
                       " is unresolved throughout; more trials would settle it.")
        elif self.informative_k < k_max:
            where = (f"k ≈ {budget_text(self.informative_k)}" if self.comparison.axis == "k"
                     else f"{cost_text(self.informative_k)} {self.comparison.axis}")
            out.append(
                f"Beyond {where} the bands of at least one family are"
                " uninformative: the comparison there is unresolved; more trials would settle it."
            )
        return out

    @property
    def resolved_budgets(self) -> np.ndarray:
        """The budgets (within both informative ranges) where the evidence is strong: resolved, with a bound."""
        c = self.comparison
        return c.k[c.resolved]

    def resolved_for(self, name: str) -> np.ndarray:
        """The resolved budgets (see :attr:`resolved_budgets`) at which the evidence favours family ``name``."""
        c = self.comparison
        side = 1 if name == c.a else -1 if name == c.b else 0
        return c.k[c.resolved & (c.favoured == side)]


def _range_text(start: float, end: float, axis: str = "k") -> str:
    if axis != "k":  # equal cost: the range in the cost's unit
        span = cost_text(start) if start == end else f"{cost_text(start)}–{cost_text(end)}"
        return f"at equal cost {span} {axis}"
    return f"k = {start:g}" if start == end else f"k = {start:g}–{end:g}"


def cost_text(c: float) -> str:
    """A total cost as the report words it: three significant digits ("0.0189", "12.5", "1.2e+04")."""
    return f"{c:.3g}"


@dataclass(frozen=True)
class CostView:
    """The families compared at equal total cost (Lourie, Cho & He 2024, §2; Dodge et al. 2019).

    At total cost c each family runs k = c / (its mean cost per trial) trials (k need not be an
    integer: the band is F^k); ``axis`` holds the costs, in ``unit``, and each family's
    ``FamilyAnalysis.cost_curve`` its curve at those budgets. Failed trials cost too: they count in
    the mean; trials that recorded no cost do not (``known``).
    """

    cost: str
    unit: str
    mean_costs: dict[str, float]
    known: dict[str, int]
    axis: np.ndarray
    pairs: tuple[PairAnalysis, ...] = ()

    def note(self) -> str:
        """What the cost view is, in one sentence."""
        what = "runtime" if self.cost == "runtime" else f"{self.cost} per trial"
        means = "; ".join(f"{name} {cost_text(m)}" for name, m in self.mean_costs.items())
        return (f"At equal cost ({what}, in {self.unit}): each family at k = c / its mean cost per trial ({means});"
                " failed trials cost too and count in the mean.")


@dataclass(frozen=True)
class Report:
    """Everything a report shows, before it is drawn or written.

    ``ranking`` orders the family names best first by their median (``settings.quantile``) curve
    at ``ranking_k``: the largest budget of the grid that every family's bands can speak about
    (the smallest informative budget, at least the first budget); ties keep the input order.
    ``reference`` is the best family when the pairs compare each family with it (more than
    ``ALL_PAIRS_UP_TO`` families), else None (every pair is compared).
    """

    settings: ReportSettings
    families: tuple[FamilyAnalysis, ...]
    pairs: tuple[PairAnalysis, ...]
    budgets: np.ndarray
    table_budgets: tuple[int, ...]
    minimize: bool
    ranking: tuple[str, ...] = ()
    ranking_k: float = 1.0
    reference: str | None = None
    cost: CostView | None = None
    notes: tuple[str, ...] = ()  # one line per trial set a --by or --tuning-risk report handled apart

    def family(self, name: str) -> FamilyAnalysis:
        """The family named ``name`` (KeyError if none)."""
        return self._by_name[name]

    def rank(self, name: str) -> int:
        """The rank of family ``name`` in :attr:`ranking`, counting from 1 (KeyError if none)."""
        return self._ranks[name]

    # Looked up once per family and per pair by the tables and figures: a scan of the families each
    # time made a report of 10,000 families quadratic (100 s in the tables alone).
    @functools.cached_property
    def _by_name(self) -> dict[str, FamilyAnalysis]:
        return {f.name: f for f in self.families}

    @functools.cached_property
    def _ranks(self) -> dict[str, int]:
        return {name: rank for rank, name in enumerate(self.ranking, start=1)}


def analyze(families: Sequence[FamilyResults], settings: ReportSettings | None = None) -> Report:
    """Compute every number of a report.

    Parameters
    ----------
    families : sequence of FamilyResults
        One per model family; distinct names; all maximizing or all minimizing.
    settings : ReportSettings, optional

    Returns
    -------
    Report

    Raises
    ------
    InputError
        No families, duplicate names, mixed score directions, or a family the failure policy
        refuses (e.g. policy ``error`` with failed trials; every trial failed).
    """
    settings = settings or ReportSettings()
    if not families:
        raise InputError("nothing to report: give at least one search or results file.")
    duplicates = sorted(name for name, count in Counter(f.name for f in families).items() if count > 1)
    if duplicates:
        raise InputError(f"two inputs are both named {duplicates[0]!r}; give them distinct labels.")
    directions = {f.minimize for f in families}
    if len(directions) > 1:
        lower = [f.name for f in families if f.minimize]
        raise InputError(f"{', '.join(lower)} minimize their score but the others maximize; report them separately.")
    minimize = directions.pop()
    n_max = max(f.n_trials for f in families)
    grid = np.asarray(settings.budgets, dtype=float) if settings.budgets else budget_grid(n_max)
    grid = np.unique(grid)
    tables = tuple(int(k) for k in settings.table_budgets) if settings.table_budgets else table_budgets(n_max)

    means = _mean_costs(families, settings) if settings.cost else {}
    cost_axis, cost_budgets = equal_cost_axis({n: m for n, (m, _) in means.items()}, {f.name: f.n_trials for f in families}) if means else (None, {})
    analyses = [_analyze_family(f, settings, grid, tables, cost_budgets.get(f.name)) for f in families]
    # Unless told otherwise, plan for the next round budget past what the best-covered family reaches.
    reach = max(a.advice.informative_k for a in analyses)
    bound_k = settings.bound_k if settings.bound_k is not None else next_round_budget(reach)
    analyses = [_with_advice(a, settings, bound_k) for a in analyses]

    ranking_k, ranking = _ranking(analyses, grid, minimize)
    reference = ranking[0] if len(analyses) > ALL_PAIRS_UP_TO else None
    pairs: tuple[PairAnalysis, ...] = ()
    curves = {a.name: a.curve for a in analyses}
    if reference is not None:  # each family against the best one, in rank order
        comparisons = [compare_curves({reference: curves[reference], name: curves[name]}, statistic="median")[0] for name in ranking[1:]]
    elif len(analyses) >= 2:
        comparisons = compare_curves(curves, statistic="median")
    else:
        comparisons = []
    pairs = tuple(PairAnalysis(c, c.informative_k) for c in comparisons)
    cost = None
    if cost_axis is not None:
        unit = settings.cost_unit if settings.cost == "runtime" else str(settings.cost)
        cost = CostView(settings.cost or "", unit, {n: m for n, (m, _) in means.items()}, {n: k for n, (_, k) in means.items()},
                        cost_axis, _cost_pairs(analyses, ranking, reference, cost_axis, unit))
    return Report(settings, tuple(analyses), pairs, grid, tables, minimize, ranking, ranking_k, reference, cost)


def _mean_costs(families: Sequence[FamilyResults], settings: ReportSettings) -> dict[str, tuple[float, int]]:
    """Each family's mean cost per trial (in the cost view's unit) and how many trials recorded one."""
    out = {}
    for f in families:
        costs = trial_costs(f, settings.cost or "")
        known = costs[np.isfinite(costs)]
        mean = exact_mean(known)
        if settings.cost == "runtime":  # seconds to the report's cost unit
            gpus = _gpus_per_trial(f, settings)
            if settings.cost_unit == "gpu-hours" and not gpus > 0:
                raise InputError(f"{f.name} ({f.source}): its trials held no GPUs, so its cost cannot be given in GPU-hours;"
                                 " use another cost unit or set the GPUs per trial")
            mean = float(budget_cost([1.0], mean, settings.cost_unit, gpus or 1.0)[0])
        if not mean > 0:
            raise InputError(f"{f.name} ({f.source}): its trials cost {settings.cost} 0 on average; equal cost needs a positive cost")
        out[f.name] = (mean, int(known.size))
    return out


def _cost_pairs(analyses, ranking, reference, axis: np.ndarray, unit: str) -> tuple[PairAnalysis, ...]:
    """The pairs of the trials view, compared point by point along the cost axis."""
    curves = {a.name: a.cost_curve for a in analyses}
    if reference is not None:
        comparisons = [compare_curves({reference: curves[reference], name: curves[name]}, axis=axis, axis_name=unit)[0]
                       for name in ranking[1:]]
    elif len(analyses) >= 2:
        comparisons = compare_curves(curves, axis=axis, axis_name=unit)
    else:
        comparisons = []
    return tuple(PairAnalysis(c, c.informative_k) for c in comparisons)


def _ranking(analyses: Sequence[FamilyAnalysis], grid: np.ndarray, minimize: bool) -> tuple[float, tuple[str, ...]]:
    """The ranking budget and the family names best first (see :class:`Report`)."""
    reach = min(a.advice.informative_k for a in analyses)
    i = max(int(np.searchsorted(grid, reach, side="right")) - 1, 0)
    k = float(grid[i])
    values = [float(a.curve.quantile_curve[i]) for a in analyses]
    # NaN (no estimate) ranks last; then the better value first.
    order = sorted(range(len(analyses)), key=lambda j: (math.isnan(values[j]), values[j] if minimize else -values[j]))
    return k, tuple(analyses[j].name for j in order)


def _support(results: FamilyResults, settings: ReportSettings) -> tuple[float, float]:
    bounds = ((results.spec or {}).get("metric") or {}).get("bounds") or (None, None)
    a = settings.a if settings.a is not None else bounds[0]
    b = settings.b if settings.b is not None else bounds[1]
    return (-math.inf if a is None else float(a), math.inf if b is None else float(b))


def _policy(results: FamilyResults, settings: ReportSettings) -> str:
    if settings.failure_policy is not None:
        return settings.failure_policy
    return (results.spec or {}).get("failure_policy") or "worst"


def _gpus_per_trial(results: FamilyResults, settings: ReportSettings) -> float:
    if settings.gpus_per_trial is not None:
        return float(settings.gpus_per_trial)
    return float(((results.spec or {}).get("resources") or {}).get("gpus") or 0.0)


def family_curve(results: FamilyResults, settings: ReportSettings, budgets) -> TuningCurve:
    """The tuning curve a report draws for ``results`` at ``budgets`` (trials, each >= 1).

    The report's bands (``settings``), the score's support (``settings.a``/``b``, else the search's
    recorded metric bounds, else unbounded), the failure policy (``settings.failure_policy``, else the
    search's own, else ``worst``) and the trials' runtimes (the cost axis, when any is known).

    Raises
    ------
    InputError
        Scores or bounds a report cannot draw; scores the failure policy refuses; bad settings.
    """
    a, b = _support(results, settings)
    _check_drawable(results, a, b)
    runtimes = results.runtimes_s
    if runtimes is not None and not np.isfinite(runtimes).any():
        runtimes = None
    try:
        with warnings.catch_warnings():  # policy "exclude" warns; the report states it instead
            warnings.simplefilter("ignore", UserWarning)
            return tuning_curve(results.scores, np.asarray(budgets, dtype=float), bands=replace(settings.bands, a=a, b=b),
                                minimize=results.minimize, runtimes=runtimes, failure_policy=_policy(results, settings),
                                name=results.name)
    except ArgumentError as error:  # the family's scores or the report's options: bad input, not a bug
        raise InputError(f"{results.name} ({results.source}): {error}") from None


def _analyze_family(
    results: FamilyResults, settings: ReportSettings, grid: np.ndarray, tables: tuple[int, ...], cost_k: np.ndarray | None = None
) -> FamilyAnalysis:
    # One estimate at every budget either view needs; the views share its CDF band.
    budgets = np.union1d(grid, np.asarray(tables, dtype=float))
    both = family_curve(results, settings, budgets if cost_k is None else np.union1d(budgets, cost_k))
    curve, table_curve = both.at(grid), both.at(tables)
    cost_curve = None if cost_k is None else both.at(cost_k)
    targets = {t: budgets_to_reach(curve, t) for t in settings.targets}
    informative = informative_budget(curve.n, minimize=results.minimize, bands=settings.bands)
    advice = Advice(curve.n, informative, None, None)
    return FamilyAnalysis(results, curve, table_curve, _summary(results, settings), advice, targets, cost_curve)


def _check_drawable(results: FamilyResults, a: float, b: float) -> None:
    """Refuse, before anything is written, scores or bounds a report cannot draw (see ``LARGEST_DRAWN``)."""
    for what, values in (("score", results.scores), ("support bound", [a, b])):  # test scores are only printed
        xs = np.asarray(values, dtype=float)
        beyond = xs[np.isfinite(xs) & (np.abs(xs) > LARGEST_DRAWN)]
        if beyond.size:
            raise InputError(
                f"{results.name} ({results.source}): the {what} {float(beyond[0])!r} is beyond ±{LARGEST_DRAWN:g},"
                " the largest magnitude a report can draw; `showwork curve` computes with any finite score"
            )


def _with_advice(analysis: FamilyAnalysis, settings: ReportSettings, bound_k: float) -> FamilyAnalysis:
    advice = analysis.advice
    needed = note = None
    if bound_k > advice.informative_k:
        try:
            needed = trials_needed(bound_k, minimize=analysis.results.minimize, bands=settings.bands)
        except BudgetOutOfReachError as error:
            note = str(error).rstrip(".")
    return replace(analysis, advice=Advice(advice.n, advice.informative_k, bound_k, needed, note))


def _summary(results: FamilyResults, settings: ReportSettings) -> FamilySummary:
    scores = results.finished_scores
    best = results.best_trial()
    if scores.size == 0 or best is None:
        raise InputError(f"{results.name} ({results.source}): no trial finished with a finite score.")
    q25, median, q75 = np.percentile(scores, [25, 50, 75])
    runtimes = results.runtimes_s
    known = runtimes[np.isfinite(runtimes)] if runtimes is not None else np.array([])
    compute_hours = float(known.sum()) / 3600.0 if known.size else None
    gpus = _gpus_per_trial(results, settings)
    test = None
    if results.test_scores is not None and math.isfinite(results.test_scores[best]):
        test = float(results.test_scores[best])
    parameters = (results.trial_metrics[best] if results.trial_metrics else {}).get("parameters")
    return FamilySummary(
        n_trials=results.n_trials,
        n_failed=results.n_failed,
        best_index=best,
        best_score=float(results.scores[best]),
        best_test_score=test,
        best_params=dict(results.params[best]) if results.params else {},
        mean=exact_mean(scores),
        median=float(median),
        q25=float(q25),
        q75=float(q75),
        # The sample std from the population std, which is computed without overflow (Dodge's std at k = 1).
        std=float(best_of_k_std(scores, [1])[0]) * math.sqrt(scores.size / (scores.size - 1)) if scores.size > 1 else math.nan,
        mean_runtime_s=results.mean_runtime_s,
        compute_hours=compute_hours,
        gpus_per_trial=gpus,
        gpu_hours=compute_hours * gpus if compute_hours is not None and gpus > 0 else None,
        parameter_count=int(parameters) if isinstance(parameters, (int, float)) and math.isfinite(parameters) else None,
        best_tie=results.best_tie(),
    )
