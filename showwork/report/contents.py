"""What a report holds before it is drawn or written: the :class:`Report` and its parts.

:func:`showwork.report.analysis.analyze` computes them; the tables, checklists and figures read them.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from showwork.report.inputs import FamilyResults
from showwork.report.settings import ReportSettings
from showwork.report.wording import budget_text, cost_text, shared_trials_text, verdict_text
from showwork.selection import TiedBest
from showwork.statistics import PairComparison, TuningCurve
from showwork.statistics.extrapolation import Extrapolation, ExtrapolationRefused
from showwork.store.races import RaceRecord

__all__ = ["Advice", "CostView", "FamilyAnalysis", "FamilySummary", "PairAnalysis", "Report"]


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
    n_retried: int = 0  # trials run again (``resume --retry-failed``), each counted by its last attempt


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
    # ReportSettings.extrapolate: the curve extrapolated to that budget, or why not (ExtrapolationRefused); None: not asked
    extrapolation: Extrapolation | ExtrapolationRefused | None = None

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
        """One plain sentence per budget range, then one about the uninformative budgets; for a pair whose
        families share trials, one that says why its bound is 2(1 − c)."""
        out = []
        for r in self.comparison.ranges:
            ks = _range_text(r.k_start, r.k_end, self.comparison.axis)
            if r.level == "none":
                out.append(f"{ks}: no evidence either way (unresolved).")
            else:
                loser = self.comparison.b if r.favoured == self.comparison.a else self.comparison.a
                status = verdict_text(r.resolved, r.level, self.comparison.confidence, self.comparison.independent)
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
        if not self.comparison.independent:  # --tuning-risk: the default's trials are among all the trials
            out.append(shared_trials_text(self.comparison.a, self.comparison.b, self.comparison.confidence))
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

@dataclass(frozen=True)
class CostView:
    """The families compared at equal total cost (Lourie, Cho & He 2024, §2; Dodge et al. 2019).

    At total cost c each family runs k = c / (its cost per trial) trials (k need not be an
    integer: the band is F^k); ``axis`` holds the costs, in ``unit``, and each family's
    ``FamilyAnalysis.cost_curve`` its curve at those budgets. ``mean_costs`` holds the expected
    cost of one trial of each family's curve (:func:`showwork.statistics.cost.cost_per_trial`).
    Failed trials cost too: where they count as the worst score they are trials of the curve and
    count in the mean; where they are excluded (``per_success``: the families with failed trials
    under ``--failed exclude``) the curve counts successful trials, and one costs the total cost
    over the successful trials, the failed attempts it took included. Trials that recorded no cost
    are left out of the mean (``known``).
    """

    cost: str
    unit: str
    mean_costs: dict[str, float]
    known: dict[str, int]
    axis: np.ndarray
    pairs: tuple[PairAnalysis, ...] = ()
    per_success: tuple[str, ...] = ()

    def note(self) -> str:
        """What the cost view is, in one sentence."""
        what = "runtime" if self.cost == "runtime" else f"{self.cost} per trial"
        means = "; ".join(f"{name} {cost_text(m)}{' per successful trial' if name in self.per_success else ''}"
                          for name, m in self.mean_costs.items())
        excluded = ""
        if self.per_success:
            excluded = (f"; where failed trials are excluded from the curve ({', '.join(self.per_success)}) k counts"
                        " successful trials, and a successful trial costs the failed attempts it took too: total cost /"
                        " successful trials")
        return (f"At equal cost ({what}, in {self.unit}): each family at k = c / its mean cost per trial ({means});"
                f" failed trials cost too and count in the mean{excluded}.")


@dataclass(frozen=True)
class Report:
    """Everything a report shows, before it is drawn or written.

    ``ranking`` orders the family names best first by their median (``settings.quantile``) curve
    at ``ranking_k``: the largest budget of the grid that every family's bands can speak about
    (the smallest informative budget, at least the first budget); ties keep the input order.
    ``reference`` is the best family when the pairs compare each family with it (more than
    ``showwork.report.analysis.ALL_PAIRS_UP_TO`` families), else None (every pair is compared).
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
    race: RaceRecord | None = None  # the race whose first n_stop trials per model these families are (report --race)

    @property
    def pairs_independent(self) -> bool:
        """No pair compared (at equal trials or equal cost) shares trials: every resolved budget's bound is 1 − c².

        False when some pair's families share trials (``report --tuning-risk``): that pair's bound is
        2(1 − c), so a legend or note that speaks for every pair states it
        (:func:`~showwork.report.wording.resolved_bound_text`)."""
        pairs = self.pairs + (self.cost.pairs if self.cost is not None else ())
        return all(p.comparison.independent for p in pairs)

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
