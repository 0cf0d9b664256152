"""The pointwise level at which the LD bands of every look of a schedule hold at once.

A sequential comparison looks at its scores after n_1 < ... < n_L trials; the band at each look
is the LD band of its n_l scores at one pointwise level c*, solved here so that all of them hold
jointly with the requested confidence (the joint coverage comes from
:mod:`~showwork.statistics.look_coverage`). Solved like the one-sample level of
:mod:`~showwork.statistics.critical_levels`, by a safeguarded secant on ``log(1 - c)``, and cached
in memory and on disk.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from showwork.cache import cache_directory
from showwork.files import write_atomic
from showwork.statistics.beta_intervals import KINDS, beta_intervals
from showwork.statistics.critical_levels import EXACT_MAX_N, ld_critical_coverage, safeguarded_secant
from showwork.statistics.errors import ArgumentError, check_probability
from showwork.statistics.look_coverage import (
    EXACT_WORK_LIMIT,
    LookSchedule,
    joint_failure_bound,
    nested_coverage,
    nested_coverage_work,
)

__all__ = ["JointLevel", "ld_joint_critical_coverage"]

_CACHE_VERSION = 1  # bump to invalidate cached joint levels if the algorithm changes

_JOINT_X_TOLERANCE = 1e-7  # on log(1 - c): 1e-7 relative on 1 - c* (~1e-10 on c*), far below any visible width
# The bound's level is conservative anyway: solved to 1e-5 (joint coverage within 3e-5 above the
# bound's), which saves an evaluation of the two-look recursions at large n.
_BOUND_X_TOLERANCE = 1e-5


@dataclass(frozen=True)
class JointLevel:
    """The pointwise level at which the LD bands of every look hold at once.

    Attributes
    ----------
    critical_coverage : float
        The pointwise coverage c* used by the band at every look of the schedule.
    exact : bool
        True: c* solves the exact joint coverage (the nested recursion of
        :mod:`~showwork.statistics.look_coverage`) to a tolerance, on the conservative side, so
        the joint coverage at c* is at least ``confidence`` and above it by a few 1e-8, not
        equal to it: the root is found to 1e-7 × max(1, |x|) in x = log(1 - c*), then x is moved
        down by that tolerance (a higher level). Measured: 2.4e-8 to 7.9e-8 above ``confidence``
        for the schedules (5, 10), (10, 50), (12, 24, 48), (20, 40) and (25, 50, 100) at
        confidence 0.8–0.95, equal-tailed and highest-density (the excess grows with |x|, so
        with n, and shrinks as the confidence nears 1). One look: the one-sample level of
        :func:`~showwork.statistics.ld_critical_coverage`, solved to 1e-14 in x (its coverage
        within about 1e-12 of ``confidence``, either side). False: the schedule was above the
        exact work limit and c* solves the Hunter–Worsley bound instead (to 1e-5 in x, on the
        conservative side); the joint coverage is then at least ``confidence`` (conservative).
    """

    critical_coverage: float
    exact: bool


def ld_joint_critical_coverage(looks, confidence: float, kind: str = "highest_density") -> JointLevel:
    """Return the pointwise level c* at which the LD bands at every look hold jointly with ``confidence``.

    The sample at look l is the first n_l trials of one search (nested samples); the band at
    look l is the n_l-trial LD band at pointwise coverage c*. Solved like
    :func:`ld_critical_coverage`, with :func:`~showwork.statistics.look_coverage.nested_coverage`
    in place of the one-sample coverage; cached in memory and on disk per (looks, confidence, kind).

    Parameters
    ----------
    looks : LookSchedule or strictly increasing ints, each at most ``EXACT_MAX_N``
    confidence : float strictly between 0 and 1
        The probability that every look's band holds at once.
    kind : {"equal_tailed", "highest_density"}

    Returns
    -------
    JointLevel
        One look gives :func:`ld_critical_coverage`'s level (exact). Its ``exact`` is False when
        the schedule's windows are beyond ``EXACT_WORK_LIMIT`` (see
        :mod:`~showwork.statistics.look_coverage`): then c* is conservative.

    Examples
    --------
    >>> level = ld_joint_critical_coverage((12, 24, 48), 0.8, "equal_tailed")
    >>> round(level.critical_coverage, 4), level.exact
    (0.9917, True)
    """
    schedule = looks if isinstance(looks, LookSchedule) else LookSchedule(tuple(looks))
    check_probability(confidence, "confidence")
    if kind not in KINDS:
        raise ArgumentError(f"kind must be one of {KINDS} (got {kind!r}).")
    if schedule.last > EXACT_MAX_N:
        raise ArgumentError(f"looks must be at most {EXACT_MAX_N} trials (got {schedule.last}).")
    return _joint_level_cached(schedule.looks, float(confidence), kind)


@lru_cache(maxsize=256)
def _joint_level_cached(looks: tuple[int, ...], confidence: float, kind: str) -> JointLevel:
    if len(looks) == 1:
        return JointLevel(ld_critical_coverage(looks[0], confidence, kind), True)
    path = cache_directory() / f"ld-joint-v{_CACHE_VERSION}" / f"{kind}-looks{'-'.join(map(str, looks))}-c{confidence!r}.json"
    try:
        record = json.loads(path.read_text())
        level = JointLevel(float(record["critical_coverage"]), bool(record["exact"]))
        if 0.0 < level.critical_coverage < 1.0:
            return level
    except (OSError, ValueError, KeyError, TypeError):
        pass
    level = _solve_joint_level(looks, confidence, kind)
    record = {"looks": list(looks), "confidence": confidence, "kind": kind, **dataclasses.asdict(level)}
    try:
        write_atomic(path, json.dumps(record))
    except OSError:
        pass  # a read-only or full disk only costs a recomputation next time
    return level


def _solve_joint_level(looks: tuple[int, ...], confidence: float, kind: str) -> JointLevel:
    # Bracket: at the last look's own level the joint coverage is at most P(A_L) = confidence; with
    # each of the sum(n_l) intervals excluding (1 - confidence) / sum(n_l), at least confidence
    # (the union bound over every interval of every look).
    x_hi = math.log1p(-ld_critical_coverage(looks[-1], confidence, kind))
    x_lo = math.log1p(-confidence) - math.log(sum(looks))
    # Start near the root: x_hi - x* grew like log(1 + s) (0.45 + 0.1 log n_L), s = sum_l<L
    # sqrt(n_l / n_L) (the earlier looks' weight), within ~0.1 for 2-6 looks, n_L = 48-1,024,
    # confidence 0.8-0.95 (measured); a close start saves evaluations of the joint coverage.
    s = sum(math.sqrt(n / looks[-1]) for n in looks[:-1])
    x0 = x_hi - math.log1p(s) * (0.45 + 0.1 * math.log(looks[-1]))
    x0 = min(max(x0, x_lo + 1e-3), x_hi - 1e-3)
    shares: dict[int, np.ndarray | None] = {n: None for n in looks}

    def bounds(x: float):
        lowers, uppers = [], []
        for n in looks:
            lower, upper, shares[n] = beta_intervals(n, math.exp(x), kind, initial_share=shares[n])
            lowers.append(lower)
            uppers.append(upper)
        return lowers, uppers

    exact = nested_coverage_work(looks, *bounds(x0), limit=EXACT_WORK_LIMIT) <= EXACT_WORK_LIMIT
    target = math.log(-math.log(confidence))

    def h(x: float) -> float:
        lowers, uppers = bounds(x)
        p = nested_coverage(looks, lowers, uppers) if exact else 1.0 - joint_failure_bound(looks, lowers, uppers)
        if p >= 1.0:
            return -math.inf
        if p <= 0.0:
            return math.inf
        return math.log(-math.log(p)) - target

    # h is nearly linear in x with slope 0.86-0.90 (measured for 2-6 looks): a Newton first step.
    tolerance = _JOINT_X_TOLERANCE if exact else _BOUND_X_TOLERANCE
    x = safeguarded_secant(h, x0, x_lo, x_hi, tolerance=tolerance, slope=0.88)
    # The root is known to the tolerance; take its lower side (higher level, conservative).
    return JointLevel(-math.expm1(x - tolerance * max(1.0, abs(x))), exact)
