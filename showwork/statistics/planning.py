"""Sample-size planning: how many trials make the bands informative up to a budget.

The upper band of the q-quantile tuning curve at budget k is the quantile of the *lower* CDF
band at level ``q^(1/k)``. The lower CDF band never exceeds its value after the largest score,
``L_max`` (``l_n`` for LD bands, ``1 - ε`` for DKW/KS); once ``q^(1/k) > L_max`` the upper band
is the support bound b — the data say nothing. So the bands are informative for
``k <= log(q) / log(L_max)``. For the highest-density LD band ``L_max = (1 - c*)^(1/n)``.

Lourie, Cho & He (2024, §5) fit this budget against n for n in {6, 20, 34, 48} at 80 % and find
a line with 1/slope ≈ 6.2 (R² = 0.9995); the exact computation here reproduces that fit
(1/slope 6.20, R² 0.9995). The relation is not exactly linear: since c* creeps towards 1 as n
grows, n/k rises slowly — about 6.3 at n = 100, 6.9 at k = 50, 7.7 at n = 3,200 — so for large
budgets plan with :func:`trials_needed`, not with the rule of thumb.
When minimizing, the side that goes trivial is the lower band: the quantile of the *upper* CDF
band at ``1 - (1 - q)^(1/k)``, which is the support bound a once that level is at most the
band's value below the smallest score, ``U_0``; the bands are informative for
``k < log(1 - q) / log(1 - U_0)``. For the (symmetric) median this is the same budget.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from showwork.statistics._deprecation import renamed_keyword
from showwork.statistics._search import smallest_integer_reaching
from showwork.statistics.cdf_bands import BandSpec, band_ends, band_spec
from showwork.statistics.errors import ArgumentError

__all__ = ["BudgetOutOfReachError", "informative_budget", "trials_needed"]


@renamed_keyword("q", "quantile", removed_in="0.2.0")
def informative_budget(
    n: int,
    confidence: float | None = None,
    method: str | None = None,
    quantile: float | None = None,
    minimize: bool = False,
    *,
    bands: BandSpec | None = None,
) -> float:
    r"""Return the largest (real) budget up to which the q-quantile curve's bands are informative with n trials.

    With :math:`L_{\max}` the lower CDF band after the largest score and :math:`U_0` the upper
    band below the smallest,

    .. math:: k^* = \frac{\log q}{\log L_{\max}} \quad\text{(maximizing)}, \qquad
              k^* = \frac{\log(1 - q)}{\log(1 - U_0)} \quad\text{(minimizing)}.

    Parameters
    ----------
    n : positive int
        Number of trials.
    confidence : float strictly between 0 and 1, default 0.8
    method : {"ld-hd", "ld-et", "ks", "dkw"}, default "ld-hd"
    quantile : float strictly between 0 and 1, default 0.5
        The q of the q-quantile curve (0.5: the median), named as in :func:`tuning_curve`; ``q=``
        is its deprecated name (a DeprecationWarning; removed in showwork 0.2.0).
    minimize : bool
        Whether lower scores are better (then the lower band is the one that goes trivial).
    bands : BandSpec, optional
        confidence, method and quantile in one (its support bounds do not matter here); give
        either it or the loose keywords.

    Returns
    -------
    float
        :math:`k^*`; 0 if the band is trivial whatever the budget, ``inf`` if it never becomes trivial.
    """
    if not (isinstance(n, (int, np.integer)) and n >= 1):
        raise ArgumentError(f"n must be a positive integer (got {n!r}).")
    spec = band_spec(bands, confidence=confidence, method=method, quantile=quantile)
    return _informative_budget(int(n), spec.confidence, spec.method, spec.quantile, bool(minimize), spec.looks)


@functools.lru_cache(maxsize=1024)  # pure; a report asks the same n for every family
def _informative_budget(n: int, confidence: float, method: str, q: float, minimize: bool, looks: tuple[int, ...] = ()) -> float:
    first_upper, last_lower = band_ends(n, confidence, method, looks)  # not the whole band: n may be 10^6
    # Probability level the informative side can still resolve, and the matching quantile level.
    top, level = (1.0 - first_upper, 1.0 - q) if minimize else (last_lower, q)
    if top <= 0.0:
        return 0.0
    if top >= 1.0:
        return math.inf
    return math.log(level) / math.log(top)


class BudgetOutOfReachError(ArgumentError):
    """No number of trials up to the limit makes the bands informative up to the budget (a ``ValueError``:
    callers of :func:`trials_needed` that catch that keep working; the command line tells it from a bug)."""


@renamed_keyword("q", "quantile", removed_in="0.2.0")
def trials_needed(
    k: float,
    confidence: float | None = None,
    method: str | None = None,
    quantile: float | None = None,
    n_max: int = 10**6,
    minimize: bool = False,
    *,
    bands: BandSpec | None = None,
) -> int:
    r"""Return the smallest number of trials n whose bands are informative up to budget k.

    .. math:: n^* = \min\{n \ge 1 : k^*(n) \ge k\},

    with :math:`k^*(n)` the :func:`informative_budget` of n trials (non-decreasing in n).

    Parameters
    ----------
    k : float >= 1
        The largest budget the comparison must speak about.
    confidence, method, quantile, minimize, bands
        As in :func:`informative_budget` (``q=`` is the deprecated name of ``quantile``).
    n_max : int
        Give up above this many trials.

    Returns
    -------
    int

    Raises
    ------
    ValueError
        If k < 1; :class:`BudgetOutOfReachError` if no n up to ``n_max`` suffices (e.g. DKW at high confidence).

    Notes
    -----
    ``informative_budget`` increases with n and is nearly linear in it, so the search starts at
    the fitted guess ``k (5.6 + 0.8 log10 k)`` and interpolates (a handful of LD evaluations, each cached on
    disk), falling back to bisection whenever interpolation stalls.
    """
    if not (math.isfinite(k) and k >= 1):
        raise ArgumentError(f"budget k must be a finite number >= 1 (got {k!r}).")
    spec = band_spec(bands, confidence=confidence, method=method, quantile=quantile)
    if spec.looks:
        raise ArgumentError("trials_needed plans one fixed n; for a schedule of looks read informative_budget at each look.")

    def reach(n: int) -> float:
        return informative_budget(n, minimize=minimize, bands=spec)

    # Start from the fit of n/k for LD-HD bands at 80 % (5.6 at k = 5 to 7.7 at k = 500, see the
    # module docstring); for other settings it is only a starting point.
    n = smallest_integer_reaching(reach, k, guess=int(math.ceil(k * (5.6 + 0.8 * math.log10(k)))), limit=n_max)
    if n is None:
        raise BudgetOutOfReachError(f"no sample size up to {n_max} makes the {spec.method} bands informative up to k={k}.")
    return n
