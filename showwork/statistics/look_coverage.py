"""Joint coverage of order-statistic intervals at pre-planned looks of one growing sample.

A sequential comparison looks at its scores after n_1 < n_2 < ... < n_L trials (the *schedule*,
fixed in advance; trials counted by index). The sample at look l is the first n_l draws, so the
samples are nested: the first n_1 draws are among the first n_2. The LD band at each look is
the n_l-sample band at one pointwise level c; this module computes

    P(c) = P(for every look l and every i <= n_l: lower^l_i <= U^l_(i) <= upper^l_i),

the probability that every look's band holds at once, where U^l_(i) is the i-th smallest of the
first n_l uniforms.

Exact method. The crossing recursion of :mod:`~showwork.statistics.critical_levels` (Moscovich
& Nadler 2017) extends to nested samples by giving each group of draws (n_{g-1}, n_g] its own
independent rate-m_g Poisson process on [0, 1] (m_g = n_g - n_{g-1}); conditioned on each
process having m_g points, they are the groups' uniforms, independent as the draws are. The state
at time t is the joint law of the cumulative counts C_1(t) <= ... <= C_L(t) (C_l counts the first
n_l draws): group g's points move every C_l with l >= g. Walking through the sorted end points of
all looks' intervals, each group's Poisson flow is applied (lazily: a flow is only needed before a
cut on a count it moves) and each end point cuts its look's count to the allowed window. At t = 1,
``P = P(C_l(1) = n_l for all l, constraints) / prod_g P(Poisson(m_g) = m_g)``. With one look it
is the fixed-n recursion. The state has one axis per look: the cost grows as the product of the
windows (about 6 sqrt(n_l) counts each), times the number of end points.

Bound for large schedules. Above a work budget the joint failure probability is bounded by the
Hunter–Worsley inequality over the chain of adjacent looks,

    P(some band fails) <= sum_l P(A_l^c) - sum_l P(A_l^c and A_{l+1}^c),

with every term exact (one- and two-look recursions). The level solved from it is conservative:
the joint coverage is at least the requested confidence (the slack is P(A_l^c, A_{l+2}^c, A_{l+1})
and the like, measured against the exact value where both run; see tests).
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from numpy.typing import ArrayLike
from scipy import ndimage, special

from showwork.statistics.critical_levels import order_statistics_coverage
from showwork.statistics.errors import ArgumentError

__all__ = [
    "EXACT_WORK_LIMIT",
    "LookSchedule",
    "nested_coverage",
    "nested_coverage_work",
    "joint_failure_bound",
]

_KERNEL_TAIL = 1e-18  # Poisson mass dropped per flow (of a total <= 1); the sum bounds the error
# In the Hunter-Worsley bound a pair's coverage computed low only loosens the bound (the pair term
# it subtracts shrinks): a looser cut there is safe, costs at most ~1e-8 of bound, and saves taps.
_BOUND_KERNEL_TAIL = 1e-12
_BOUND_THREADS = 4
EXACT_WORK_LIMIT = 3e8
"""Largest estimated work (cells x flow terms summed over the walk) computed exactly per evaluation."""


@dataclass(frozen=True)
class LookSchedule:
    """Trial counts at which a sequential comparison looks, fixed before the search.

    Attributes
    ----------
    looks : tuple of positive ints, strictly increasing
        ``looks[-1]`` is the largest sample; a single look is the fixed-n case.

    Examples
    --------
    >>> LookSchedule.parse("12, 24,48").looks
    (12, 24, 48)
    >>> LookSchedule((24, 12))
    Traceback (most recent call last):
    ...
    showwork.statistics.errors.ArgumentError: looks must be strictly increasing trial counts (got (24, 12)).
    """

    looks: tuple[int, ...]

    def __post_init__(self) -> None:
        looks = tuple(self.looks)
        if not looks or not all(isinstance(n, (int, np.integer)) and not isinstance(n, bool) for n in looks):
            raise ArgumentError(f"looks must be a non-empty list of whole trial counts (got {self.looks!r}).")
        if looks[0] < 1 or any(b <= a for a, b in zip(looks, looks[1:])):
            raise ArgumentError(f"looks must be strictly increasing trial counts (got {self.looks!r}).")
        object.__setattr__(self, "looks", tuple(int(n) for n in looks))

    @classmethod
    def parse(cls, text: str) -> LookSchedule:
        """Parse ``"12,24,48"`` (what ``--looks`` takes)."""
        parts = [p.strip() for p in str(text).split(",")]
        try:
            looks = tuple(int(p) for p in parts)
        except ValueError:
            raise ArgumentError(f"looks must be whole trial counts separated by commas, like 12,24,48 (got {text!r}).") from None
        return cls(looks)

    @property
    def last(self) -> int:
        return self.looks[-1]

    def __str__(self) -> str:
        return ",".join(str(n) for n in self.looks)


def _sorted_events(looks: Sequence[int], bounds: Sequence[tuple[np.ndarray, np.ndarray]]):
    times, kinds, index, which = [], [], [], []
    for look, (lower, upper) in enumerate(bounds):
        n = looks[look]
        lower, upper = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
        if lower.shape != (n,) or upper.shape != (n,):
            raise ArgumentError(f"look {look + 1} has {n} trials but bounds of shapes {lower.shape} and {upper.shape}.")
        if not (np.all(np.isfinite(lower)) and np.all(np.isfinite(upper))):
            raise ArgumentError("lower and upper must be finite numbers (they hold NaN or an infinity).")
        # Sorted order statistics: the same event with monotone bounds (see order_statistics_coverage).
        lower = np.maximum.accumulate(np.clip(lower, 0.0, 1.0))
        upper = np.minimum.accumulate(np.clip(upper, 0.0, 1.0)[::-1])[::-1]
        if np.any(lower > upper):
            return None
        times += [lower, upper]
        kinds += [np.zeros(n, dtype=np.int8), np.ones(n, dtype=np.int8)]
        index += [np.arange(1, n + 1)] * 2
        which += [np.full(n, look)] * 2
    times, kinds = np.concatenate(times), np.concatenate(kinds)
    index, which = np.concatenate(index), np.concatenate(which)
    order = np.argsort(times, kind="stable")  # ties commute: cuts at one time see the same state
    return times[order], kinds[order], index[order], which[order]


def _check_looks(looks: Sequence[int]) -> tuple[int, ...]:
    return LookSchedule(tuple(looks)).looks


def nested_coverage(looks: Sequence[int], lowers: Sequence[ArrayLike], uppers: Sequence[ArrayLike]) -> float:
    """Return the probability that every look's order statistics lie in their intervals at once.

    Parameters
    ----------
    looks : strictly increasing positive ints n_1 < ... < n_L
        The sample at look l is the first n_l of n_L i.i.d. Uniform(0, 1) draws.
    lowers, uppers : one 1-D array of length n_l per look
        Interval ends for the order statistics of look l's sample (clipped to [0, 1]; need not
        be monotone, as in :func:`~showwork.statistics.order_statistics_coverage`).

    Returns
    -------
    float in [0, 1]
        Exact up to rounding and a dropped Poisson tail below 1e-18 per step (no simulation).
        The cost grows with the product of the looks' windows: see :func:`nested_coverage_work`.

    Examples
    --------
    Two looks, at one draw and at two: U_1 <= 1/2, and the larger of U_1, U_2 is >= 1/2, so
    U_2 >= 1/2: probability 1/4.

    >>> round(nested_coverage([1, 2], [[0.0], [0.0, 0.5]], [[0.5], [0.5, 1.0]]), 12)
    0.25
    """
    return _nested_coverage(looks, lowers, uppers, _KERNEL_TAIL)


def _nested_coverage(looks, lowers, uppers, tail: float) -> float:
    """:func:`nested_coverage`, with the Poisson kernels cut where their tail is below ``tail``."""
    looks = _check_looks(looks)
    if len(lowers) != len(looks) or len(uppers) != len(looks):
        raise ArgumentError(f"give one lower and one upper array per look ({len(looks)} looks).")
    if len(looks) == 1:  # the one-sample recursion, without the bookkeeping of several looks
        _sorted_events(looks, list(zip(lowers, uppers)))  # the same checks of the bounds
        return order_statistics_coverage(lowers[0], uppers[0])
    events = _sorted_events(looks, list(zip(lowers, uppers)))
    if events is None:
        return 0.0
    events, half = _halved(events, lowers, uppers)
    return _walk(looks, *events, half=half, tail=tail)[0]


def _kernel_tables(means: np.ndarray, cut_below: float = _KERNEL_TAIL) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Poisson pmfs for the flows, each cut where its tail is below ``cut_below``.

    Returns the table (row s: the pmf of ``means[s]``), each row's number of kept terms, and the
    mass each cut drops.
    """
    top = float(means.max(initial=0.0))
    width = int(math.ceil(top + 12.0 * math.sqrt(top) + 30.0))
    counts = np.arange(width, dtype=float)
    positive = np.where(means > 0.0, means, 1.0)[:, None]
    table = np.exp(counts * np.log(positive) - positive - special.gammaln(counts + 1.0))
    table[means <= 0.0] = 0.0
    table[means <= 0.0, 0] = 1.0
    tail = np.cumsum(table[:, ::-1], axis=1)[:, ::-1]  # P(X >= j), summed from the small end
    keep = np.maximum(np.argmax(tail < cut_below, axis=1), 1)
    keep[~np.any(tail < cut_below, axis=1)] = width
    dropped = np.where(keep < width, tail[np.arange(len(means)), np.minimum(keep, width - 1)], 0.0)
    return table, keep, dropped


def _walk(
    looks, times, kinds, index, which, work_only: bool = False, work_limit: float = math.inf, half: bool = False,
    tail: float = _KERNEL_TAIL,
) -> tuple[float, float]:
    """The recursion of the module docstring; returns (probability, bound on its error) or (work, 0).

    With ``work_only`` the windows are walked without arithmetic, stopping once the work passes
    ``work_limit``. With ``half`` the events are those before t = 1/2 of mirror-symmetric bounds
    (``lower_i = 1 - upper_{n+1-i}`` at every look): the walk stops at 1/2 and meets its own
    mirror image there, since the reflection t -> 1 - t maps the Poisson processes and the
    constraints onto themselves (half the work)."""
    walk = _NestedWalk(looks, times, which, work_only, half, tail)
    for t, kind, i, look in zip(times.tolist(), kinds.tolist(), index.tolist(), which.tolist()):
        walk.advance(look + 1, t)  # the groups whose draws this look counts
        if walk.work > work_limit:
            return walk.work, 0.0
        if kind == 0:
            walk.cap[look] = i
        elif not walk.cut_below(look, i):
            return 0.0, 0.0
    if half:
        walk.advance(len(looks), 0.5)
    if work_only:
        return (2.0 * walk.work if half else walk.work), 0.0
    return walk.meet_mirror() if half else walk.finish()


class _NestedWalk:
    """The state of :func:`_walk`: the joint law of the looks' counts C_1 <= ... <= C_L at time t.

    ``state[j_1, ..., j_L]`` is P(C_l(t) = base_l + j_l for all l, every constraint so far) under
    the Poisson processes; group g's flow has been applied up to ``flushed[g]``.
    """

    def __init__(self, looks, times, which, work_only: bool, half: bool, tail: float = _KERNEL_TAIL) -> None:
        L = self.L = len(looks)
        self.looks = looks
        self.sizes = np.diff(np.concatenate([[0], looks])).astype(float)
        # Group g's flow is applied before every event of a look that counts it (look >= g): the
        # flows' means, and so their kernels, are known before the walk.
        self.tables = []
        for g in range(L):
            at = np.concatenate([times[which >= g], [0.5]]) if half else times[which >= g]
            self.tables.append(_kernel_tables(self.sizes[g] * np.diff(np.concatenate([[0.0], at])), tail))
        self.row = [0] * L
        self.flushed = [0.0] * L
        self.base = [0] * L  # lowest count each look may have now (index of the state's first row)
        self.cap = [0] * L  # highest count each look may reach before its next lower end
        self.state = np.ones((1,) * L)
        self.dropped = 0.0
        self.work = 0.0
        self.work_only = work_only

    def advance(self, groups: int, t: float) -> None:
        """Apply the flows of groups 0..groups-1 up to time t, on the windows of now."""
        # C_l <= C_{l+1}: a count may not exceed any later look's cap.
        target = tuple(max(min(self.cap[j:]) - self.base[j] + 1, 0) for j in range(self.L))
        for g in range(groups):
            self._flow(g, target)
            self.flushed[g] = t
        if not self.work_only and self.state.shape != target:  # no flow moved anything: grow to the windows
            grown = np.zeros(target)
            grown[tuple(slice(0, n) for n in self.state.shape)] = self.state
            self.state = grown

    def _flow(self, g: int, target: tuple[int, ...]) -> None:
        """Group g's Poisson flow: every count of looks g..L-1 moves up by the same k ~ Poisson."""
        table, keep, cut = self.tables[g]
        s = self.row[g]
        self.row[g] += 1
        terms = int(keep[s])
        if terms == 1 and table[s, 0] == 1.0:
            return
        if self.work_only:
            self.work += terms * math.prod(target)
            return
        self.dropped += float(cut[s])
        terms = min(terms, min(target[g:]))  # a larger jump leaves the windows (a killed path)
        kernel = table[s, :terms]
        if terms == 1:
            grown = np.zeros(target)
            grown[tuple(slice(0, n) for n in self.state.shape)] = self.state * kernel[0]
            self.state = grown
            return
        # Moving axes g..L-1 together by k is a shift by k * (the sum of their strides) in the
        # flat array, once those axes (but axis 0: past its end is past the array's) have room
        # for k - 1 more: then one 1-D convolution along rows of that length does the whole flow.
        padded = tuple(t + (terms - 1 if j >= max(g, 1) else 0) for j, t in enumerate(target))
        strides = [math.prod(padded[j + 1 :]) for j in range(self.L)]
        step = sum(strides[g:])
        size = math.prod(padded)
        flat = np.zeros(-(-size // step) * step)
        inner = tuple(slice(0, t) for t in target)
        flat[:size].reshape(padded)[tuple(slice(0, n) for n in self.state.shape)] = self.state  # grown to target
        self.state = _shift_convolve(flat, step, kernel)[:size].reshape(padded)[inner]

    def cut_below(self, look: int, i: int) -> bool:
        """Keep C_look >= i (and so C_j >= i for every later look); False once nothing can survive."""
        for j in range(look, self.L):
            if i > self.base[j]:
                if not self.work_only:
                    self.state = self.state[(slice(None),) * j + (slice(i - self.base[j], None),)]
                self.base[j] = i
        return all(min(self.cap[j:]) >= self.base[j] for j in range(self.L))

    def _norm(self) -> float:
        return math.prod(float(_poisson_pmf(np.array([m]), m)[0]) for m in self.sizes)

    def finish(self) -> tuple[float, float]:
        """Last stretch to t = 1: group g must bring C_g - C_{g-1} up to m_g exactly."""
        state, base, sizes = self.state, self.base, self.sizes
        counts = np.meshgrid(*[np.arange(base[j], base[j] + state.shape[j]) for j in range(self.L)], indexing="ij")
        weight = np.ones(state.shape)
        for g in range(self.L):
            previous = counts[g - 1] if g else 0
            weight *= _poisson_pmf(sizes[g] - (counts[g] - previous), sizes[g] * (1.0 - self.flushed[g]))
        norm = self._norm()
        return min(1.0, max(0.0, float(np.sum(state * weight)) / norm)), self.dropped / norm

    def meet_mirror(self) -> tuple[float, float]:
        """P(N(1) = n, constraints) = sum_c alpha(c) alpha(n - c), alpha the state at t = 1/2.

        The second half, read backwards from t = 1, is the first. With A[j] = alpha(base + j),
        alpha(n - c) at index j is A[s - j], s = n - 2 base: the flipped array shifted by W-1-s.
        """
        state, norm = self.state, self._norm()
        mine, mirrored = [], []
        for j in range(self.L):
            width = state.shape[j]
            offset = width - 1 - (self.looks[j] - 2 * self.base[j])
            first, last = max(0, -offset), min(width, width - offset)
            if first >= last:
                return 0.0, 2.0 * self.dropped / norm
            mine.append(slice(first, last))
            mirrored.append(slice(first + offset, last + offset))
        flipped = state[(slice(None, None, -1),) * self.L]
        value = float(np.sum(state[tuple(mine)] * flipped[tuple(mirrored)])) / norm
        return min(1.0, max(0.0, value)), 2.0 * self.dropped / norm


def _shift_convolve(flat: np.ndarray, step: int, kernel: np.ndarray) -> np.ndarray:
    """``out[i] = sum_k kernel[k] * flat[i - k * step]`` (zero before the start); len(flat) % step == 0.

    A plain 1-D convolution for step 1, else scipy.ndimage along the rows of length ``step``. (A
    banded Toeplitz product through BLAS was measured too: slower for small windows and erratic on
    a loaded machine, where BLAS threads contend.)
    """
    if step == 1:
        return np.convolve(flat, kernel)[: flat.size]
    rows = flat.size // step
    return ndimage.convolve1d(flat.reshape(rows, step), kernel, axis=0, mode="constant", origin=-(kernel.size // 2)).reshape(-1)


def _poisson_pmf(counts: np.ndarray, mean: float) -> np.ndarray:
    counts = np.asarray(counts, dtype=float)
    out = np.zeros(counts.shape)
    ok = counts >= 0
    if mean <= 0.0:
        out[ok & (counts == 0)] = 1.0
        return out
    out[ok] = np.exp(counts[ok] * math.log(mean) - mean - special.gammaln(counts[ok] + 1.0))
    return out


def nested_coverage_work(
    looks: Sequence[int], lowers: Sequence[ArrayLike], uppers: Sequence[ArrayLike], limit: float = math.inf
) -> float:
    """Estimated work of :func:`nested_coverage` (cells times flow terms, summed over the walk).

    Computed from the windows alone, without the arithmetic (about 1e9 a second on a 2-core machine,
    numpy and scipy.ndimage); the count stops soon after it passes ``limit``.
    """
    looks = _check_looks(looks)
    events = _sorted_events(looks, list(zip(lowers, uppers)))
    if events is None:
        return 0.0
    events, half = _halved(events, lowers, uppers)
    return _walk(looks, *events, work_only=True, work_limit=limit, half=half)[0]


_MIRROR_TOLERANCE = 1e-13


def _halved(events, lowers, uppers) -> tuple[tuple, bool]:
    """The events before t = 1/2 and ``half=True`` when every look's bounds mirror, else all events."""
    times, kinds, index, which = events
    symmetric = not np.any(np.abs(times - 0.5) <= _MIRROR_TOLERANCE) and all(
        np.allclose(np.asarray(lo, dtype=float), 1.0 - np.asarray(hi, dtype=float)[::-1], rtol=0.0, atol=_MIRROR_TOLERANCE)
        for lo, hi in zip(lowers, uppers)
    )
    if not symmetric:
        return events, False
    first = times < 0.5
    return (times[first], kinds[first], index[first], which[first]), True


def joint_failure_bound(looks: Sequence[int], lowers: Sequence[ArrayLike], uppers: Sequence[ArrayLike]) -> float:
    """Upper bound on ``1 - nested_coverage(...)`` from one- and two-look terms (Hunter–Worsley).

    ``P(union of A_l^c) <= sum_l P(A_l^c) - sum_l P(A_l^c and A_{l+1}^c)`` over the chain of
    adjacent looks (Hunter 1976, Worsley 1982); each term is exact. Exact for one or two looks. (For
    nested looks the chain is the maximum spanning tree of the pairwise terms in every case
    measured, the tree that makes the bound tightest.) The terms are independent computations
    and run on up to ``_BOUND_THREADS`` threads (numpy and scipy.ndimage release the GIL).
    """
    looks = _check_looks(looks)
    pairs = list(zip(lowers, uppers))
    tasks = [((n,), [lo], [hi]) for n, (lo, hi) in zip(looks, pairs)]
    tasks += [(looks[j : j + 2], [pairs[j][0], pairs[j + 1][0]], [pairs[j][1], pairs[j + 1][1]]) for j in range(len(looks) - 1)]
    tasks.sort(key=lambda task: -sum(task[0]) * len(task[0]))  # the longest first
    with ThreadPoolExecutor(max_workers=min(_BOUND_THREADS, os.cpu_count() or 1)) as pool:
        values = dict(zip((task[0] for task in tasks), pool.map(lambda task: _nested_coverage(*task, _BOUND_KERNEL_TAIL), tasks)))
    single = [values[(n,)] for n in looks]
    bound = sum(1.0 - p for p in single)
    for j in range(len(looks) - 1):
        # P(A_j^c and A_{j+1}^c) = 1 - P(A_j) - P(A_{j+1}) + P(A_j and A_{j+1})
        bound -= max(0.0, 1.0 - single[j] - single[j + 1] + values[looks[j : j + 2]])
    return min(1.0, max(0.0, bound))
