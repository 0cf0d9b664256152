"""The statistics of tuning curves: point estimates, exact simultaneous bands, comparisons.

Everything here is numpy/scipy only, deterministic (no seed except the bootstrap baseline) and
usable on any list of scores. Start with :func:`tuning_curve`.
"""

from showwork.statistics.beta_intervals import beta_intervals
from showwork.statistics.bootstrap import bootstrap_interval
from showwork.statistics.cdf_bands import METHODS, BandSpec, CDFBand, cdf_band, dkw_epsilon, ks_epsilon
from showwork.statistics.comparison import (
    EVIDENCE_LEVELS,
    RESOLVED_LEVELS,
    PairComparison,
    budget_to_reach,
    budgets_to_reach,
    compare_curves,
    evidence,
    false_strong_bound,
)
from showwork.statistics.cost import budget_cost, budget_for_cost, cost_per_trial, equal_cost_axis, mean_runtime
from showwork.statistics.critical_levels import cache_directory, ld_critical_coverage, order_statistics_coverage
from showwork.statistics.errors import ArgumentError
from showwork.statistics.extrapolation import Estimate, Extrapolation, ExtrapolationRefused, GoodnessOfFit, extrapolate
from showwork.statistics.failures import FAILURE_POLICIES, FailedTrialsError, FailureReport, apply_failure_policy
from showwork.statistics.joint_levels import JointLevel, ld_joint_critical_coverage
from showwork.statistics.look_coverage import LookSchedule, joint_failure_bound, nested_coverage
from showwork.statistics.planning import BudgetOutOfReachError, informative_budget, trials_needed
from showwork.statistics.point_estimates import best_of_k_std, running_max, u_statistic, v_statistic
from showwork.statistics.quadratic_laws import NoisyQuadratic
from showwork.statistics.race_simulation import RaceSimulation, simulate_races
from showwork.statistics.sequential import DECIDE_BY, LookDecision, decide_at_look
from showwork.statistics.tuning_curve_bands import mean_tuning_curve, quantile_tuning_curve
from showwork.statistics.tuning_curves import TuningCurve, tuning_curve

__all__ = [
    "ArgumentError",
    "DECIDE_BY",
    "JointLevel",
    "LookDecision",
    "LookSchedule",
    "decide_at_look",
    "RaceSimulation",
    "simulate_races",
    "joint_failure_bound",
    "ld_joint_critical_coverage",
    "nested_coverage",
    "BudgetOutOfReachError",
    "EVIDENCE_LEVELS",
    "Estimate",
    "Extrapolation",
    "ExtrapolationRefused",
    "GoodnessOfFit",
    "NoisyQuadratic",
    "extrapolate",
    "FAILURE_POLICIES",
    "METHODS",
    "BandSpec",
    "CDFBand",
    "FailedTrialsError",
    "FailureReport",
    "PairComparison",
    "RESOLVED_LEVELS",
    "TuningCurve",
    "apply_failure_policy",
    "best_of_k_std",
    "beta_intervals",
    "bootstrap_interval",
    "budget_cost",
    "cost_per_trial",
    "budget_for_cost",
    "equal_cost_axis",
    "budget_to_reach",
    "budgets_to_reach",
    "cache_directory",
    "cdf_band",
    "compare_curves",
    "dkw_epsilon",
    "evidence",
    "false_strong_bound",
    "informative_budget",
    "ks_epsilon",
    "ld_critical_coverage",
    "mean_runtime",
    "mean_tuning_curve",
    "order_statistics_coverage",
    "quantile_tuning_curve",
    "running_max",
    "trials_needed",
    "tuning_curve",
    "u_statistic",
    "v_statistic",
]
