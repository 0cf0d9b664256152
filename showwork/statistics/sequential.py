"""Deciding a comparison at pre-planned looks: the rule, one look at a time.

A sequential comparison (a *race*) of models A and B fixes a schedule of looks n_1 < ... < n_L
and a budget K (or several) before any trial. At look l it takes the first n_l trials of each
model, by trial index, never by completion order (runtime correlates with score: diverging runs
die early), estimates both tuning curves with the bands of the whole schedule
(``BandSpec(looks=...)``: each model's bands hold at every look at once with probability at least
c) and stops when the evidence at every budget K is *resolved* for one model
(:mod:`~showwork.statistics.comparison`: strong, within both informative budgets).

Guarantee. Where both models' bands hold at every look, strong evidence for a model that is not
better cannot occur at any look or budget; the models are searched independently, so both hold
with probability at least c². Hence the chance that the race *ever* declares a wrong winner (or
any winner between equal models) is at most ``1 - c²``, however many looks it takes — the bound
of one fixed-n comparison. Looking at fixed-n bands after every look has no such bound: each look
spends the error again (``experiments/sequential.py`` measures both).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from showwork.statistics.cdf_bands import BandSpec
from showwork.statistics.comparison import compare_curves
from showwork.statistics.errors import ArgumentError
from showwork.statistics.failures import worst_bound
from showwork.statistics.tuning_curves import tuning_curve

__all__ = ["DECIDE_BY", "LookDecision", "decide_at_look"]

DECIDE_BY = ("median", "mean")
"""Which tuning curve a race compares: the quantile curve of the bands' quantile, or the mean."""


@dataclass(frozen=True)
class LookDecision:
    """What a race saw at one look.

    Attributes
    ----------
    look : int
        Trials per model at this look (n_l): the first n_l by trial index.
    number : int
        The look's place in the schedule, counting from 1 (0: bands without a schedule, see
        :func:`decide_at_look`).
    budgets : tuple of floats
        The budgets K the decision is taken at.
    levels : tuple of str
        Evidence level at each budget (``EVIDENCE_LEVELS``).
    favoured : tuple of (str or None)
        The model the evidence favours at each budget (None where the level is "none").
    resolved : tuple of bool
        Whether the evidence at each budget is resolved (strong, within both informative budgets).
    winner : str or None
        The model resolved at every budget, if one is: the race stops here. None: it goes on.
    informative_k : float
        The pair's informative budget at this look (beyond it no budget can be resolved).
    """

    look: int
    number: int
    budgets: tuple[float, ...]
    levels: tuple[str, ...]
    favoured: tuple[str | None, ...]
    resolved: tuple[bool, ...]
    winner: str | None
    informative_k: float

    @property
    def decided(self) -> bool:
        return self.winner is not None

    def to_dict(self) -> dict:
        return {
            "look": self.look,
            "number": self.number,
            "budgets": list(self.budgets),
            "levels": list(self.levels),
            "favoured": list(self.favoured),
            "resolved": list(self.resolved),
            "winner": self.winner,
            "informative_k": self.informative_k if np.isfinite(self.informative_k) else None,
        }

    @classmethod
    def from_dict(cls, record: dict) -> LookDecision:
        informative = record.get("informative_k")
        return cls(
            look=int(record["look"]),
            number=int(record["number"]),
            budgets=tuple(float(k) for k in record["budgets"]),
            levels=tuple(str(x) for x in record["levels"]),
            favoured=tuple(None if x is None else str(x) for x in record["favoured"]),
            resolved=tuple(bool(x) for x in record["resolved"]),
            winner=None if record.get("winner") is None else str(record["winner"]),
            informative_k=float("inf") if informative is None else float(informative),
        )


def decide_at_look(
    scores_a: ArrayLike,
    scores_b: ArrayLike,
    look: int,
    budgets: ArrayLike,
    bands: BandSpec,
    *,
    decide_by: str = "median",
    minimize: bool = False,
    names: tuple[str, str] = ("A", "B"),
    failure_policy: str = "worst",
) -> LookDecision:
    """Take the race's decision at the look of ``look`` trials per model.

    Parameters
    ----------
    scores_a, scores_b : 1-D arrays of floats, in trial-index order
        Each model's scores, at least ``look`` of them; only the first ``look`` are read (NaN:
        a failed trial, handled by ``failure_policy``, see :mod:`~showwork.statistics.failures`).
    look : int
        One of ``bands.looks``. With bands without looks (a fixed-n band), any n: that is the
        rule for one pre-planned n, and applied at several looks it has no error bound (what
        ``experiments/sequential.py`` shows beside the sequential rule).
    budgets : float or 1-D array of floats >= 1
        The budgets K at which the race is decided (all of them must resolve for one model).
    bands : BandSpec
        With the race's schedule in ``looks``; the same for both models.
    decide_by : {"median", "mean"}
        Compare the quantile curves (median by default) or the mean curves (needs finite
        support bounds in ``bands``).
    minimize : bool
        Lower scores are better.
    names : (str, str)
        The two models' names, as the decision reports them.
    failure_policy : {"worst", "exclude", "error"}
        For failed trials among the first ``look``; "worst" (the default) keeps the count at
        ``look`` by scoring a failure as the support bound. With "worst" and a finite worst
        bound, a model none of whose first ``look`` trials finished scores that bound at each
        (it loses once the other is resolved better); where the bound is infinite it cannot be
        scored, and an :class:`ArgumentError` says so.

    Returns
    -------
    LookDecision

    Raises
    ------
    ArgumentError
        Bad arguments; no trial of either model finished among the first ``look`` (nothing to
        compare); a model without a finished trial and no finite worst bound to score it at.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> a, b = rng.normal(1.0, 0.1, 48), rng.normal(0.0, 0.1, 48)
    >>> decision = decide_at_look(a, b, 24, [1, 2], BandSpec(looks=(12, 24, 48)))
    >>> decision.winner, decision.levels, round(decision.informative_k, 2)
    ('A', ('strong', 'strong'), 3.49)
    """
    if not isinstance(bands, BandSpec):
        raise ArgumentError("bands must be a BandSpec with the race's looks (BandSpec(looks=(12, 24, 48), ...)).")
    if bands.looks and look not in bands.looks:
        raise ArgumentError(f"look {look!r} is not in the schedule {','.join(map(str, bands.looks))}.")
    if not (isinstance(look, (int, np.integer)) and look >= 1):
        raise ArgumentError(f"look must be a positive number of trials (got {look!r}).")
    if decide_by not in DECIDE_BY:
        raise ArgumentError(f"decide_by must be one of {', '.join(DECIDE_BY)} (got {decide_by!r}).")
    if len(names) != 2 or names[0] == names[1]:
        raise ArgumentError(f"names must be two different names (got {names!r}).")
    ks = np.atleast_1d(np.asarray(budgets, dtype=float))
    if ks.ndim != 1 or ks.size == 0 or not np.all(np.isfinite(ks)) or np.any(ks < 1):
        raise ArgumentError(f"budgets must be finite numbers >= 1 (got {budgets!r}).")
    samples = {}
    for name, scores in zip(names, (scores_a, scores_b)):
        values = np.asarray(scores, dtype=float)
        if values.ndim != 1 or values.size < look:
            raise ArgumentError(f"{name} has {values.size} scores; look {look} needs its first {look}.")
        samples[name] = values[:look]
    failed_all = [name for name, values in samples.items() if not np.isfinite(values).any()]
    if len(failed_all) == 2:
        raise ArgumentError(f"no trial of {names[0]} or {names[1]} finished among the first {look}: nothing to compare.")
    worst = worst_bound(minimize, bands.a, bands.b) if failure_policy == "worst" else None
    for name in failed_all:
        if worst is None:
            raise ArgumentError(f"none of the first {look} trials of {name} finished, and without a finite worst bound"
                                " (metric.bounds) a failure has no score to count as: nothing to compare.")
        samples[name] = np.full(look, worst)  # every trial failed: each is the worst score, as policy "worst" counts it
    curves = {name: tuning_curve(values, ks, bands=bands, minimize=minimize, failure_policy=failure_policy, name=name)
              for name, values in samples.items()}
    (pair,) = compare_curves(curves, statistic=decide_by)
    favoured = tuple(None if f == 0 else (names[0] if f > 0 else names[1]) for f in pair.favoured.tolist())
    resolved = tuple(bool(r) for r in pair.resolved)
    winner = favoured[0] if all(resolved) and len(set(favoured)) == 1 else None
    return LookDecision(
        look=int(look),
        number=bands.looks.index(look) + 1 if bands.looks else 0,
        budgets=tuple(float(k) for k in ks),
        levels=tuple(str(x) for x in pair.levels),
        favoured=favoured,
        resolved=resolved,
        winner=winner,
        informative_k=float(pair.informative_k),
    )
