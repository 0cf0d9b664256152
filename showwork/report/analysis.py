"""The numbers of a report: one tuning curve per family, descriptive statistics, comparisons, advice.

:func:`analyze` turns :class:`~showwork.report.inputs.FamilyResults` into a
:class:`~showwork.report.contents.Report` (its settings: :mod:`showwork.report.settings`). Every
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

import math
import warnings
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace

import numpy as np

from showwork.errors import InputError
from showwork.report.contents import Advice, CostView, FamilyAnalysis, FamilySummary, PairAnalysis, Report
from showwork.report.equal_cost import trial_costs
from showwork.report.inputs import FamilyResults, sharing_trials
from showwork.report.settings import ReportSettings
from showwork.statistics import (
    ArgumentError,
    BudgetOutOfReachError,
    FailedTrialsError,
    FailureReport,
    PairComparison,
    TuningCurve,
    apply_failure_policy,
    budgets_to_reach,
    compare_curves,
    equal_cost_axis,
    informative_budget,
    trials_needed,
    tuning_curve,
)
from showwork.statistics.cost import budget_cost, cost_per_trial
from showwork.statistics.extrapolation import Extrapolation, ExtrapolationRefused, extrapolate
from showwork.statistics.point_estimates import best_of_k_std, exact_mean

__all__ = [
    "ALL_PAIRS_UP_TO",
    "analyze",
    "budget_grid",
    "family_curve",
    "family_extrapolation",
    "next_round_budget",
    "table_budgets",
]

GRID_DENSE = 200
"""Every integer budget up to this one is on the curves' grid."""
GRID_SPARSE_POINTS = 120
"""Geometrically spaced budgets between ``GRID_DENSE`` and the largest n."""
LARGEST_DRAWN = 1e300
"""The largest magnitude of a score (or support bound) a report takes: the figures' axes, margins and
summaries need the span of the values and a little more to be finite floats. ``showwork curve`` and
the statistics take every finite score."""
ALL_PAIRS_UP_TO = 6
"""Up to this many families every pair is compared (15 pairs); beyond, each family with the reference."""


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
    cost_axis, cost_budgets = (equal_cost_axis({n: m for n, (m, _, _) in means.items()}, {n: counted for n, (_, _, counted) in means.items()})
                               if means else (None, {}))
    analyses = [_analyze_family(f, settings, grid, tables, cost_budgets.get(f.name)) for f in families]
    # Unless told otherwise, plan for the next round budget past what the best-covered family reaches.
    reach = max(a.advice.informative_k for a in analyses)
    bound_k = settings.bound_k if settings.bound_k is not None else next_round_budget(reach)
    analyses = [_with_advice(a, settings, bound_k) for a in analyses]

    ranking_k, ranking = _ranking(analyses, grid, minimize)
    reference = ranking[0] if len(analyses) > ALL_PAIRS_UP_TO else None
    # Families that share trials (--tuning-risk: the trials at the default are among all the trials)
    # are not independent searches: their pairs state the union bound 2(1 - c), not 1 - c².
    dependent = sharing_trials(families)
    curves = {a.name: a.curve for a in analyses}
    pairs = tuple(PairAnalysis(c, c.informative_k) for c in _compare(curves, ranking, reference, dependent))
    cost = None
    if cost_axis is not None:
        unit = settings.cost_unit if settings.cost == "runtime" else str(settings.cost)
        cost_curves = {a.name: a.cost_curve for a in analyses}
        cost_pairs = tuple(PairAnalysis(c, c.informative_k) for c in _compare(cost_curves, ranking, reference, dependent, cost_axis, unit))
        per_success = tuple(a.name for a in analyses if a.curve.failures.policy == "exclude" and a.curve.failures.n_failed)
        cost = CostView(settings.cost or "", unit, {n: m for n, (m, _, _) in means.items()}, {n: k for n, (_, k, _) in means.items()},
                        cost_axis, cost_pairs, per_success)
    return Report(settings, tuple(analyses), pairs, grid, tables, minimize, ranking, ranking_k, reference, cost)


def _mean_costs(families: Sequence[FamilyResults], settings: ReportSettings) -> dict[str, tuple[float, int, int]]:
    """Each family's expected cost per trial of its curve (in the cost view's unit), how many trials recorded a
    cost, and how many trials its curve counts.

    The cost per trial is :func:`~showwork.statistics.cost.cost_per_trial` under the family's failure
    policy: the mean cost of all its trials where failures count as the worst score; the cost of all its
    trials over the successful ones where they are excluded (a successful trial took the failed attempts
    before it too). Times the trials counted, it is the family's total cost either way.
    """
    out = {}
    for f in families:
        costs = trial_costs(f, settings.cost or "")
        failures = _failures(f, settings)
        mean = cost_per_trial(costs, failures)
        if settings.cost == "runtime":  # seconds to the report's cost unit
            gpus = _gpus_per_trial(f, settings)
            if settings.cost_unit == "gpu-hours" and not gpus > 0:
                raise InputError(f"{f.name} ({f.source}): its trials held no GPUs, so its cost cannot be given in GPU-hours;"
                                 " use another cost unit or set the GPUs per trial")
            mean = float(budget_cost([1.0], mean, settings.cost_unit, gpus or 1.0)[0])
        if not mean > 0:
            raise InputError(f"{f.name} ({f.source}): its trials cost {settings.cost} 0 on average; equal cost needs a positive cost")
        out[f.name] = (mean, int(np.isfinite(costs).sum()), failures.n_counted)
    return out


def _compare(curves: dict[str, TuningCurve], ranking: tuple[str, ...], reference: str | None, dependent: set[frozenset[str]],
             axis: np.ndarray | None = None, unit: str = "k") -> list[PairComparison]:
    """The report's pairs: each family against the reference, in rank order, or every pair; at equal trials,
    or point by point along the cost ``axis``. ``dependent``: the pairs of names whose families share trials."""
    if reference is not None:
        return [compare_curves({reference: curves[reference], name: curves[name]}, statistic="median", axis=axis, axis_name=unit,
                               dependent={frozenset((reference, name))} & dependent)[0] for name in ranking[1:]]
    if len(curves) >= 2:
        return compare_curves(curves, statistic="median", axis=axis, axis_name=unit, dependent=dependent)
    return []


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
    with _as_input_error(results):
        return tuning_curve(results.scores, np.asarray(budgets, dtype=float), bands=replace(settings.bands, a=a, b=b),
                            minimize=results.minimize, runtimes=runtimes, failure_policy=_policy(results, settings),
                            name=results.name)


def _failures(results: FamilyResults, settings: ReportSettings) -> FailureReport:
    """What the family's failure policy does to its trials, as :func:`family_curve` applies it (which trials its curve counts)."""
    a, b = _support(results, settings)
    with _as_input_error(results):
        return apply_failure_policy(results.scores, _policy(results, settings), results.minimize, a, b)[1]


@contextmanager
def _as_input_error(results: FamilyResults) -> Iterator[None]:
    """The statistics' errors about a family's trials as the report's input errors; policy ``exclude``'s warning silenced
    (the report states it instead)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            yield
    except FailedTrialsError as error:  # named as the source names its trials (a ledger: by index, from 0)
        raise InputError(f"{results.name} ({results.source}): {error.what(results.trial_name(error.failed[0]))}") from None
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
    return FamilyAnalysis(results, curve, table_curve, _summary(results, settings), advice, targets, cost_curve,
                          family_extrapolation(results, settings, curve))


def family_extrapolation(results: FamilyResults, settings: ReportSettings,
                         curve: TuningCurve) -> Extrapolation | ExtrapolationRefused | None:
    """``curve`` (the family's, :func:`family_curve`) extrapolated to ``settings.extrapolate``, or why not; None unless asked."""
    if settings.extrapolate is None:
        return None
    if curve.k.size and settings.extrapolate <= curve.k[-1]:
        raise InputError(f"{results.name}: the budget to extrapolate to ({settings.extrapolate}) must be above the curve's"
                         f" budgets (up to k = {curve.k[-1]:g}); the curve up to there is observed.")
    with _as_input_error(results):
        return extrapolate(curve, settings.extrapolate, tail_fraction=settings.tail_fraction)


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
        try:  # a next search is planned for one fixed n: the fixed-n bands, also after a race's looks
            needed = trials_needed(bound_k, minimize=analysis.results.minimize, bands=replace(settings.bands, looks=()))
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
        n_retried=results.n_retried,
    )
