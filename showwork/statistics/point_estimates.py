"""Point estimates of the tuning curve: the V- and U-statistics, the running max, Dodge's std.

The tuning curve at budget k is the expected best validation score after k i.i.d. random-search
trials. Given B recorded scores sorted so that the best is last, ``v_(1) <= ... <= v_(B)``
(reversed when minimizing), two plug-in estimators are linear in the order statistics:

- Dodge et al. (2019), Eq. 1: ``V_k = sum_j ((j/B)^k - ((j-1)/B)^k) v_(j)``, the expected best of k
  draws *with* replacement from the B scores. Consistent, biased low (Tang et al. 2020).
- Tang et al. (2020): ``U_k = sum_j C(j-1, k-1) / C(B, k) v_(j)``, the expected best of k draws
  *without* replacement. Unbiased for integer ``1 <= k <= B``; undefined otherwise (NaN here).

Weights are computed in log space so that B up to 10^6 neither overflows nor loses digits; weights
below ``exp(-_LOG_WEIGHT_CUTOFF)`` relative to the largest one are dropped (their total is below
1e-20 of the whole) which makes large k cheap.

Every finite input gives finite results, however large (``±1e308``): scores near the float limit
are divided by a power of two before the weighted sums, and Dodge's std works on the scores divided
by a power of two near their largest magnitude, so that no partial sum or square overflows (or
underflows); the results are scaled back exactly. Accuracy is
relative to that magnitude: the error is a few units in the last place of ``max |v|`` (weights carry
a relative error near 1e-14), so a curve whose value is tiny next to its largest score (``[1e308,
-1e308, 0.5, 0.6]``) has an absolute error near ``1e-14 * 1e308``. The mean (``V_1 = U_1``) is
summed exactly (``math.fsum``) and correctly rounded whatever the magnitudes.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike, NDArray

from showwork.statistics.errors import ArgumentError

__all__ = [
    "budgets",
    "sorted_for_tuning",
    "v_weights",
    "u_weights",
    "v_statistic",
    "u_statistic",
    "running_max",
    "best_of_k_std",
    "scale_exponent",
    "exact_mean",
]

# exp(-46) * 10^6 ~ 1e-14 of the largest weight in total: negligible against 1e-12 accuracy.
_LOG_WEIGHT_CUTOFF = 60.0
# Differences of scores below 2**1021, and weighted sums of them (weights >= 0 summing to 1), cannot
# overflow; only scores beyond that (|v| >= 2.2e307) are scaled down, by at most 8, which leaves every
# score short of 2**-1071 exact.
_SUM_HEADROOM = 1021
# Block length of the two-level prefix sum in `u_weights` (keeps the rounding of each prefix ~1e-14).
_BLOCK = 256


def budgets(k: ArrayLike | None, n: int) -> NDArray[np.float64]:
    """Return the budgets as a 1-D float array, defaulting to ``1, 2, ..., n``.

    Parameters
    ----------
    k : positive float or array of floats, or None
        Budgets (numbers of trials); real values are allowed. ``None`` means ``1..n``.
    n : int
        The number of recorded trials, used for the default.

    Raises
    ------
    ValueError
        If a budget is below 1 or not finite.
    """
    if k is None:
        return np.arange(1, n + 1, dtype=float)
    ks = np.atleast_1d(np.asarray(k, dtype=float))
    if ks.ndim != 1:
        raise ArgumentError(f"k must be a number or a 1-D list of numbers, not a {ks.ndim}-D array.")
    if not np.all(np.isfinite(ks)) or np.any(ks < 1):
        bad = float(ks[~(np.isfinite(ks) & (ks >= 1))][0])  # a plain float: its repr is what the user wrote
        raise ArgumentError(f"budgets k must be finite and at least 1 (got k={bad!r}).")
    return ks


def scale_exponent(values: ArrayLike) -> int:
    """The power of two ``e`` with ``|x| / 2**e < 1`` for every finite x: divide by it before summing.

    Dividing by a power of two is exact (short of the subnormal range), so weighted sums of the
    scaled values cannot overflow and, scaled back with ``np.ldexp``, equal the unscaled sums bit for
    bit wherever those did not overflow.

    Examples
    --------
    >>> scale_exponent([0.5, -3.0]), scale_exponent([1e308]), scale_exponent([0.0])
    (2, 1024, 0)
    """
    xs = np.asarray(values, dtype=float)
    finite = xs[np.isfinite(xs)]
    largest = float(np.max(np.abs(finite))) if finite.size else 0.0
    return math.frexp(largest)[1] if largest > 0 else 0


def exact_mean(values: ArrayLike) -> float:
    """The mean of finite floats, correctly rounded: an exact sum (``math.fsum``) divided by the count.

    No cancellation (``[1e308, -1e308, 0.5, 0.6]`` gives 0.275) and no overflow (``[1e308, 1e308]``
    gives 1e308): the sum is taken over the values divided by a power of two at least the count.

    Examples
    --------
    >>> exact_mean([1e308, -1e308, 0.5, 0.6]), exact_mean([1e308, 1e308, 1e308])
    (0.275, 1e+308)
    """
    xs = np.asarray(values, dtype=float).ravel()
    try:
        return math.fsum(xs.tolist()) / xs.size
    except OverflowError:  # the exact sum exceeds the float range: sum the values scaled by 2**-ceil(log2 n)
        shift = max(1, (xs.size - 1).bit_length())
        return math.ldexp(math.fsum(np.ldexp(xs, -shift).tolist()) / xs.size, shift)


def sorted_for_tuning(scores: ArrayLike, minimize: bool = False) -> NDArray[np.float64]:
    """Return the scores ordered from worst to best: ascending, or descending if ``minimize``.

    Raises
    ------
    ValueError
        If ``scores`` is empty, not 1-D, or holds NaN or infinite values (apply a failure policy
        from :mod:`showwork.statistics.failures` first).
    """
    ys = np.asarray(scores, dtype=float)
    if ys.ndim != 1 or ys.size == 0:
        raise ArgumentError("scores must be a non-empty 1-D array.")
    if not np.all(np.isfinite(ys)):
        raise ArgumentError(
            "scores hold NaN or infinite values; apply a failure policy"
            " (showwork.statistics.apply_failure_policy) first."
        )
    ys = np.sort(ys)
    return ys[::-1] if minimize else ys


def v_weights(n: int, k: float) -> tuple[int, NDArray[np.float64]]:
    """Return Dodge's weights ``(j/n)^k - ((j-1)/n)^k`` for ``j = start+1 .. n``.

    The weight of order statistic j is the probability that the best of k draws with replacement
    from n items is the j-th. It is written ``(j/n)^k * (1 - (1 - 1/j)^k)`` and evaluated with
    ``log1p``/``expm1`` so that no digits cancel; k may be any real number >= 1.

    Returns
    -------
    start : int
        The weights of ``j <= start`` are below ``exp(-60)`` of the largest and are omitted.
    weights : array of floats, length ``n - start``
        The weights of ``j = start+1, ..., n``.
    """
    # (j/n)^k >= exp(-cutoff)  <=>  j >= n exp(-cutoff / k)
    start = max(0, min(n - 1, int(math.floor(n * math.exp(-_LOG_WEIGHT_CUTOFF / k))) - 1))
    log_fraction, log_step = _v_log_terms(n)
    top = np.exp(k * log_fraction[start:])  # (j/n)^k
    step = -np.expm1(k * log_step[start:])  # 1 - (1 - 1/j)^k; equals 1 at j = 1
    return start, top * step


@lru_cache(maxsize=2)
def _v_log_terms(n: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``log(j/n)`` and ``log(1 - 1/j)`` for j = 1..n, shared by every budget (read-only)."""
    j = np.arange(1, n + 1, dtype=float)
    # log1p(-(n - j)/n) keeps k log(j/n) exact to ~k eps |log(j/n)|, which stays ~1e-14 where it matters.
    log_fraction = np.log1p(-(n - j) / n)
    with np.errstate(divide="ignore"):
        log_step = np.log1p(-1.0 / j)  # -inf at j = 1
    log_fraction.flags.writeable = False
    log_step.flags.writeable = False
    return log_fraction, log_step


def u_weights(n: int, k: int) -> tuple[int, NDArray[np.float64]]:
    """Return Tang's weights ``C(j-1, k-1) / C(n, k)`` for ``j = start+1 .. n``.

    The weight of order statistic j is the probability that the best of k draws *without*
    replacement from n items is the j-th. Written as a product from the top,
    ``w_n = k/n`` and ``w_j = w_{j+1} (1 - (k-1)/j)``, so that
    ``log w_j = log(k/n) + sum_{m=j}^{n-1} log1p(-(k-1)/m)``; the prefix sums are taken per block of
    256 terms and the block offsets are accumulated with compensated summation, which keeps each
    log-weight within ~1e-14 (absolute) for n up to 10^6 and beyond.

    Parameters
    ----------
    n : int
        Number of recorded trials.
    k : int from 1 to n inclusive
        The budget.
    """
    if k == 1:
        return 0, np.full(n, 1.0 / n)
    # log w_j <= -(k-1) log(n/j) + log(k/n): below the cutoff for j < n exp(-cutoff/(k-1)).
    start = max(k - 1, int(math.floor(n * math.exp(-_LOG_WEIGHT_CUTOFF / (k - 1)))) - 1)
    # Terms for m = n-1, n-2, ..., start+1 (descending), so that prefix sums run from the top.
    m = np.arange(n - 1, start, -1, dtype=float)
    terms = np.log1p(-(k - 1) / m)
    prefix = _compensated_prefix_sums(terms)  # prefix[i] = sum of terms[:i+1]
    # log w_j for j = n (empty sum) down to j = start+1
    log_w = math.log(k / n) + np.concatenate([[0.0], prefix])
    return start, np.exp(log_w[::-1])


def _compensated_prefix_sums(terms: NDArray[np.float64]) -> NDArray[np.float64]:
    """Prefix sums accurate to a few ulps of the result: blockwise cumsum plus Neumaier offsets."""
    size = terms.size
    if size == 0:
        return terms.copy()
    n_blocks = -(-size // _BLOCK)
    padded = np.zeros(n_blocks * _BLOCK)
    padded[:size] = terms
    blocks = padded.reshape(n_blocks, _BLOCK)
    within = np.cumsum(blocks, axis=1)
    totals = np.sum(blocks, axis=1)
    offsets = np.empty(n_blocks)
    running, compensation = 0.0, 0.0
    for i, total in enumerate(totals.tolist()):  # Neumaier summation of the block totals
        offsets[i] = running + compensation
        t = running + total
        if abs(running) >= abs(total):
            compensation += (running - t) + total
        else:
            compensation += (total - t) + running
        running = t
    return (within + offsets[:, None]).ravel()[:size]


def v_statistic(scores: ArrayLike, k: ArrayLike | None = None, minimize: bool = False) -> NDArray[np.float64]:
    """Return Dodge et al.'s V-statistic estimate of the expected best score after k trials.

    ``V_k = sum_{j=1}^{B} ((j/B)^k - ((j-1)/B)^k) v_(j)`` (Dodge et al. 2019, Eq. 1), the mean of the
    best of k draws with replacement from the B recorded scores: consistent but biased low for
    small B (Tang et al. 2020).

    Parameters
    ----------
    scores : 1-D array of finite floats
        One validation score per trial (order irrelevant).
    k : positive float or array of floats, optional
        Budgets (real values >= 1 allowed); default ``1..B``.
    minimize : bool
        If True the scores are losses and the curve tracks the expected *minimum*.

    Returns
    -------
    array of floats, one per budget.

    Examples
    --------
    >>> v_statistic([0.1, 0.5, 0.3], k=[1, 3]).round(4).tolist()
    [0.3, 0.4333]
    """
    ys = sorted_for_tuning(scores, minimize)
    ks = budgets(k, ys.size)
    best, below_best = _about_the_best(ys)
    out = np.empty(ks.size)
    for i, kk in enumerate(ks):
        if kk == 1:  # the mean: summed exactly
            out[i] = exact_mean(ys)
            continue
        start, w = v_weights(ys.size, float(kk))
        out[i] = best(np.dot(w, below_best[start:]))
    return _within_scores(out, ys)


def u_statistic(scores: ArrayLike, k: ArrayLike | None = None, minimize: bool = False) -> NDArray[np.float64]:
    """Return Tang et al.'s U-statistic: the unbiased estimate of the expected best after k trials.

    ``U_k = sum_{j=k}^{B} C(j-1, k-1) / C(B, k) v_(j)`` (Tang et al. 2020), the mean of the best of k
    draws *without* replacement. Defined for integer ``1 <= k <= B``; other budgets give NaN.

    Parameters
    ----------
    scores : 1-D array of finite floats
    k : positive int or array of ints, optional
        Default ``1..B``.
    minimize : bool

    Returns
    -------
    array of floats, one per budget (NaN where k is not an integer in ``1..B``).

    Examples
    --------
    >>> u_statistic([0.1, 0.5, 0.3], k=[1, 2, 3, 4]).round(4).tolist()
    [0.3, 0.4333, 0.5, nan]
    """
    ys = sorted_for_tuning(scores, minimize)
    ks = budgets(k, ys.size)
    best, below_best = _about_the_best(ys)
    out = np.full(ks.size, np.nan)
    for i, kk in enumerate(ks):
        if kk == 1:  # the mean: summed exactly
            out[i] = exact_mean(ys)
        elif kk == int(kk) and kk <= ys.size:
            start, w = u_weights(ys.size, int(kk))
            out[i] = best(np.dot(w, below_best[start:]))
    return _within_scores(out, ys)


def _about_the_best(ys: NDArray[np.float64]):
    """The scores (worst to best) as differences from the best, and the map from a weighted sum of those back.

    ``sum_j w_j v_j = v_best + sum_j w_j (v_j - v_best)`` when the weights sum to 1: equal scores give
    their value exactly, the rounding is relative to the spread of the scores rather than their
    magnitude, and near the float limit everything is divided by a power of two first (exact) so that
    no difference or partial sum overflows.
    """
    e = max(0, scale_exponent(ys) - _SUM_HEADROOM)
    scaled = np.ldexp(ys, -e)
    top = float(scaled[-1])
    below_best = scaled - top  # all <= 0 (>= 0 when minimizing); 0 for every copy of the best

    def best(weighted_sum) -> float:
        return math.ldexp(top + float(weighted_sum), e)

    return best, below_best


def _within_scores(values: NDArray[np.float64], ys: NDArray[np.float64]) -> NDArray[np.float64]:
    """Clip to ``[min, max]`` of the scores, where every mean of them lies (NaN stays NaN): removes rounding past them."""
    return np.clip(values, min(ys[0], ys[-1]), max(ys[0], ys[-1]))


def running_max(scores: ArrayLike, k: ArrayLike | None = None, minimize: bool = False) -> NDArray[np.float64]:
    """Return the naive tuning curve: the best score among the first k trials, in trial order.

    It depends on the order the trials happened to run in, which is why the V- and U-statistics
    exist. Budgets that are not integers in ``1..B`` give NaN.

    Examples
    --------
    >>> running_max([0.3, 0.1, 0.5], k=[1, 2, 3]).tolist()
    [0.3, 0.3, 0.5]
    """
    ys = np.asarray(scores, dtype=float)
    sorted_for_tuning(ys, minimize)  # validation only
    ks = budgets(k, ys.size)
    best = np.minimum.accumulate(ys) if minimize else np.maximum.accumulate(ys)
    out = np.full(ks.size, np.nan)
    ok = (ks == np.floor(ks)) & (ks <= ys.size)
    out[ok] = best[ks[ok].astype(int) - 1]
    return out


def best_of_k_std(scores: ArrayLike, k: ArrayLike | None = None, minimize: bool = False) -> NDArray[np.float64]:
    """Return Dodge et al.'s plug-in standard deviation of the best score after k trials.

    The standard deviation of the maximum of k draws with replacement from the recorded scores:
    ``sqrt(sum_j w_j (v_(j) - V_k)^2)`` with the V-statistic weights ``w_j``. It describes the spread
    of the best-of-k score, not the uncertainty of ``V_k`` (use the confidence bands for that).

    The deviations are taken about the best score (a shift that leaves the variance unchanged), so
    equal scores give exactly 0, and on the scores scaled by a power of two, so that no square
    overflows; the result never exceeds half the range of the scores (Popoviciu's bound).
    """
    ys = sorted_for_tuning(scores, minimize)
    ks = budgets(k, ys.size)
    e = scale_exponent(ys)
    shifted = np.ldexp(ys, -e) - math.ldexp(float(ys[-1]), -e)  # in [-2, 2]; 0 for every copy of the best
    half_range = abs(float(shifted[0])) / 2.0
    out = np.empty(ks.size)
    for i, kk in enumerate(ks):
        start, w = v_weights(ys.size, float(kk))
        top = shifted[start:]
        mean = np.dot(w, top)
        std = math.sqrt(max(0.0, float(np.dot(w, (top - mean) ** 2))))
        out[i] = math.ldexp(min(std, half_range), e)
    return out
