"""Simulated races: how often, and where, the sequential rule stops, between two score distributions.

A race (:mod:`~showwork.statistics.sequential`) looks at the first n_l trials of each model at
every look of its schedule and stops at the first look where :func:`decide_at_look` names a
winner. This module runs many races between two *samplers* (``rng -> scores``: the trials of one
search in index order), with that one rule, and summarises them: the probability of stopping at
each look, the median number of trials per model a race runs, the mean, the trials saved against
running every race to the last look, and how often each model wins.

Uses: the evidence that the rule keeps its error bound (``experiments/sequential.py``: both
samplers one distribution, every winner false) and planning a race from pilot searches
(``showwork plan --looks ... --pilot A B``: the samplers resample the pilots).

Determinism. Replicate r draws A's scores and then B's from its own generator, the r-th child of
``numpy.random.SeedSequence(seed)``; the decisions are deterministic. The result does not depend
on ``processes`` (the decisions run in worker processes in chunks; the draws stay in the caller).

Cost. One decision costs about 2 ms (two tuning curves and their bands: beta_intervals' solve
is about 40 % of it), so 10,000 races of 3 looks take about a minute per core.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from showwork.statistics.cdf_bands import BandSpec
from showwork.statistics.errors import ArgumentError
from showwork.statistics.look_coverage import LookSchedule
from showwork.statistics.sequential import decide_at_look

__all__ = ["RaceSimulation", "race_stop", "simulate_races"]

Sampler = Callable[[np.random.Generator], "NDArray[np.float64]"]
"""Draws one search's scores in trial-index order: at least the schedule's last look of them."""


def race_stop(
    scores_a: NDArray[np.float64],
    scores_b: NDArray[np.float64],
    looks: Sequence[int],
    budgets: Sequence[float],
    bands: BandSpec,
    *,
    decide_by: str = "median",
    minimize: bool = False,
    names: tuple[str, str] = ("A", "B"),
    failure_policy: str = "worst",
) -> tuple[int, int]:
    """Run one race on given scores: ``(index of the look it stopped at or -1, winner: 0 none, 1 A, 2 B)``.

    ``looks`` are the looks taken, in order (``bands.looks`` for the sequential rule; with a
    BandSpec without looks, any schedule: the naive rule of fixed-n bands at every look). The
    race stops at the first look with a winner (:func:`decide_at_look`).
    """
    for index, look in enumerate(looks):
        decision = decide_at_look(scores_a, scores_b, int(look), budgets, bands, decide_by=decide_by,
                                  minimize=minimize, names=names, failure_policy=failure_policy)
        if decision.winner is not None:
            return index, 1 + names.index(decision.winner)
    return -1, 0


@dataclass(frozen=True, eq=False)  # holds arrays: compare their fields, not the objects
class RaceSimulation:
    """Many simulated races between two samplers, with one schedule and rule.

    Attributes
    ----------
    looks : tuple of ints
        The schedule n_1 < ... < n_L (trials per model).
    names : (str, str)
        The two models.
    stop_index : int array, one per race
        The look (index into ``looks``) at which each race stopped; -1: it never did (it ran to
        the last look undecided).
    winner : int array, one per race
        0: none (undecided), 1: the first model, 2: the second.
    scores_a, scores_b : float arrays, races x looks[-1]
        The scores each race drew, in trial-index order (for checks on the same draws, such as
        band coverage).
    seed : int
    """

    looks: tuple[int, ...]
    names: tuple[str, str]
    stop_index: NDArray[np.int64]
    winner: NDArray[np.int64]
    scores_a: NDArray[np.float64]
    scores_b: NDArray[np.float64]
    seed: int

    @property
    def races(self) -> int:
        return int(self.stop_index.size)

    @property
    def trials(self) -> NDArray[np.int64]:
        """Trials per model each race ran: its stopping look's n, or the last look's if it never stopped."""
        return np.where(self.stop_index >= 0, np.asarray(self.looks)[self.stop_index], self.looks[-1])

    def stop_counts(self) -> NDArray[np.int64]:
        """Races that stopped at each look (one count per look; the rest never stopped)."""
        return np.bincount(self.stop_index[self.stop_index >= 0], minlength=len(self.looks))

    def stop_probability(self) -> NDArray[np.float64]:
        """P(stop at look l), one per look."""
        return self.stop_counts() / self.races

    @property
    def stopped(self) -> float:
        """P(the race stops at some look): for equal models, the rate of ever declaring a (false) winner."""
        return float(np.mean(self.stop_index >= 0))

    @property
    def median_trials(self) -> float:
        """Median trials per model (races that never stop count the last look's n)."""
        return float(np.median(self.trials))

    @property
    def mean_trials(self) -> float:
        """Mean trials per model."""
        return float(np.mean(self.trials))

    @property
    def trials_saved(self) -> float:
        """Expected fraction of trials saved against running every race to the last look: ``1 - mean / n_L``."""
        return 1.0 - self.mean_trials / self.looks[-1]

    def win_rate(self, name: str | None) -> float:
        """The fraction of races ``name`` won (None: the undecided ones)."""
        code = 0 if name is None else 1 + self.names.index(name)
        return float(np.mean(self.winner == code))

    def summary(self) -> dict:
        """The numbers above as one JSON-ready dict."""
        return {
            "looks": list(self.looks),
            "races": self.races,
            "seed": self.seed,
            "stop_probability": {str(n): float(p) for n, p in zip(self.looks, self.stop_probability())},
            "stop_probability_any": self.stopped,
            "median_trials": self.median_trials,
            "mean_trials": self.mean_trials,
            "trials_saved": self.trials_saved,
            "wins": {name: self.win_rate(name) for name in self.names} | {"none": self.win_rate(None)},
        }


def simulate_races(
    sample_a: Sampler,
    sample_b: Sampler,
    bands: BandSpec,
    budgets: Sequence[float] | float,
    races: int,
    seed: int = 0,
    *,
    looks: Sequence[int] | None = None,
    decide_by: str = "median",
    minimize: bool = False,
    names: tuple[str, str] = ("A", "B"),
    failure_policy: str = "worst",
    processes: int = 1,
) -> RaceSimulation:
    """Simulate ``races`` races between two samplers with :func:`decide_at_look` at every look.

    Parameters
    ----------
    sample_a, sample_b : callables ``rng -> 1-D array of floats``
        One search's scores in trial-index order, at least the last look's number of them (only
        the first are used); NaN marks a failed trial (``failure_policy`` decides).
    bands : BandSpec
        The bands of the rule: with ``looks``, the sequential rule; without, fixed-n bands at
        every look (the naive rule, then ``looks`` must be given).
    budgets : float or sequence of floats >= 1
        The budgets K the race is decided at.
    races : int >= 1
    seed : int
        Race r draws from the r-th child of ``SeedSequence(seed)`` (A first, then B).
    looks : sequence of ints, optional
        The schedule; default ``bands.looks``. Given with a scheduled BandSpec, it must equal it.
    decide_by, minimize, names, failure_policy
        As in :func:`decide_at_look`.
    processes : int >= 1
        Worker processes for the decisions (the draws stay in this process: the result is the
        same for any number).

    Returns
    -------
    RaceSimulation

    Examples
    --------
    >>> spec = BandSpec(looks=(12, 24))
    >>> better = lambda rng: rng.normal(1.0, 0.1, 24)
    >>> worse = lambda rng: rng.normal(0.0, 0.1, 24)
    >>> simulation = simulate_races(better, worse, spec, 1.5, races=20, seed=0)
    >>> simulation.stop_probability().tolist(), simulation.win_rate("A")
    ([1.0, 0.0], 1.0)
    """
    schedule = _schedule(bands, looks)
    if not (isinstance(races, (int, np.integer)) and not isinstance(races, bool) and races >= 1):
        raise ArgumentError(f"races must be a positive whole number (got {races!r}).")
    if not (isinstance(processes, (int, np.integer)) and not isinstance(processes, bool) and processes >= 1):
        raise ArgumentError(f"processes must be a positive whole number (got {processes!r}).")
    ks = tuple(float(k) for k in np.atleast_1d(np.asarray(budgets, dtype=float)))
    draws_a, draws_b = _draw(sample_a, sample_b, int(races), schedule[-1], seed, names)
    options = {"decide_by": decide_by, "minimize": minimize, "names": tuple(names), "failure_policy": failure_policy}
    chunks = [(draws_a[i::processes], draws_b[i::processes], schedule, ks, bands, options) for i in range(min(processes, races))]
    if len(chunks) == 1:
        outcomes = [_decide_chunk(chunks[0])]
    else:
        with multiprocessing.get_context().Pool(len(chunks)) as pool:
            outcomes = pool.map(_decide_chunk, chunks)
    stop_index = np.empty(races, dtype=np.int64)
    winner = np.empty(races, dtype=np.int64)
    for i, (stops, winners) in enumerate(outcomes):  # chunk i holds races i, i + processes, ...
        stop_index[i::len(chunks)] = stops
        winner[i::len(chunks)] = winners
    return RaceSimulation(schedule, tuple(names), stop_index, winner, draws_a, draws_b, int(seed))


def _schedule(bands: BandSpec, looks: Sequence[int] | None) -> tuple[int, ...]:
    if not isinstance(bands, BandSpec):
        raise ArgumentError(f"bands must be a BandSpec (got {type(bands).__name__}).")
    if looks is None:
        if not bands.looks:
            raise ArgumentError("give looks= for bands without a schedule (the naive rule: fixed-n bands at every look).")
        return bands.looks
    schedule = LookSchedule(tuple(looks)).looks
    if bands.looks and schedule != bands.looks:
        raise ArgumentError(f"looks {schedule} differ from the bands' schedule {bands.looks}.")
    return schedule


def _draw(sample_a: Sampler, sample_b: Sampler, races: int, n: int, seed: int, names) -> tuple[np.ndarray, np.ndarray]:
    draws = np.empty((2, races, n))
    for r, child in enumerate(np.random.SeedSequence(seed).spawn(races)):
        rng = np.random.default_rng(child)
        for side, sample in enumerate((sample_a, sample_b)):
            scores = np.asarray(sample(rng), dtype=float).ravel()
            if scores.size < n:
                raise ArgumentError(f"the sampler of {names[side]} drew {scores.size} scores; the last look needs {n}.")
            draws[side, r] = scores[:n]
    return draws[0], draws[1]


def _decide_chunk(chunk) -> tuple[np.ndarray, np.ndarray]:
    draws_a, draws_b, looks, budgets, bands, options = chunk
    outcomes = [race_stop(a, b, looks, budgets, bands, **options) for a, b in zip(draws_a, draws_b)]
    if not outcomes:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    stops, winners = zip(*outcomes)
    return np.asarray(stops, dtype=np.int64), np.asarray(winners, dtype=np.int64)

