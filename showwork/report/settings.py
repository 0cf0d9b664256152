"""What a report computes: :class:`ReportSettings`, every option of a report, checked when made."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from showwork.errors import InputError
from showwork.statistics import ArgumentError, BandSpec
from showwork.statistics.cost import COST_UNITS
from showwork.statistics.failures import FAILURE_POLICIES

__all__ = ["ReportSettings"]


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
        The curves' budget grid; None: :func:`~showwork.report.analysis.budget_grid` of the largest n.
    table_budgets : tuple of int or None
        The budgets of the tables; None: :func:`~showwork.report.analysis.table_budgets` of the largest n.
    targets : tuple of float
        Scores for the "budget needed to reach" table.
    bound_k : float or None
        The budget the advice plans for; None: :func:`~showwork.report.analysis.next_round_budget`
        past the largest informative budget among the families.
    cost_unit : str, default "hours"
        Unit of the time axis and of the compute totals (see ``showwork.statistics.cost``).
    gpus_per_trial : float or None
        GPUs each trial held, for GPU-hours; None: the search's recorded resources (0 = CPU only).
    grid_intensity : float or None
        Carbon intensity of the electricity the GPUs used, in gCO₂e per kWh, given by the user (no
        look-up); with it the checklist turns the recorded GPU energy into gCO₂e.
    looks : tuple of int
        A race's schedule (``showwork report --race``): the bands are the schedule's joint ones
        (:class:`~showwork.statistics.BandSpec` ``looks``), each family read at one of its looks. Empty:
        the fixed-n bands of one look at whatever n a family has.
    cost : str or None
        Also compare the families at equal total cost (:class:`~showwork.report.contents.CostView`):
        ``"runtime"`` (each trial's runtime, shown in ``cost_unit``) or a per-trial value (epochs,
        FLOPs: a column of a results file, a hyperparameter or metric of each trial). None: trials only.
    extrapolate : int or None
        Also extrapolate each family's tuning curve to this budget (a whole number above the curves'
        budgets) by the noisy-quadratic law of its best trials
        (:func:`~showwork.statistics.extrapolation.extrapolate`); None: no extrapolation.
    tail_fraction : float or None
        With ``extrapolate``: the share of each family's trials, the best ones, the law is fitted to;
        None: ``showwork.constants.EXTRAPOLATION_TAIL_FRACTION``. Fixed before the scores are read.
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
    looks: tuple[int, ...] = ()
    extrapolate: int | None = None
    tail_fraction: float | None = None

    @functools.cached_property
    def bands(self) -> BandSpec:
        """``confidence``, ``method`` and ``quantile`` as a :class:`~showwork.statistics.BandSpec`
        (support unbounded: each family's curve gets it with its own ``a`` and ``b``, or its search's
        metric bounds). Built, and so checked, once when the settings are made; not a field, so
        not in the report's JSON settings. With ``looks``, the joint bands of a race's schedule."""
        try:
            return BandSpec(confidence=self.confidence, method=self.method, quantile=self.quantile, looks=tuple(self.looks))
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
        if self.extrapolate is not None and (isinstance(self.extrapolate, bool) or not isinstance(self.extrapolate, int)
                                             or self.extrapolate < 2):
            raise InputError(f"the budget to extrapolate to must be a whole number >= 2 (got {self.extrapolate!r}).")
        if self.tail_fraction is not None:
            if self.extrapolate is None:
                raise InputError("a tail fraction applies to an extrapolation: give the budget to extrapolate to too.")
            if not 0 < self.tail_fraction < 1:
                raise InputError(f"the tail fraction must be strictly between 0 and 1 (got {self.tail_fraction!r}).")
        if any(not math.isfinite(t) for t in self.targets):
            raise InputError(f"target scores must be finite (got {list(self.targets)!r}).")
