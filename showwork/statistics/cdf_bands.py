"""Simultaneous confidence bands for the CDF of the score distribution.

A band is a pair of step functions ``L <= F <= U`` that holds for the whole CDF F at once with
probability at least ``confidence``. Four constructions (Lourie, Cho & He 2024, §3):

- ``dkw``: ``F_n ± ε`` with the Dvoretzky–Kiefer–Wolfowitz–Massart ``ε = sqrt(log(2/α) / (2n))``.
  Valid for any F; conservative.
- ``ks``: ``F_n ± ε`` with ε the exact finite-n quantile of the two-sided Kolmogorov–Smirnov
  statistic (``scipy.stats.kstwo``). Exact for continuous F.
- ``ld-et`` / ``ld-hd``: Learned-Miller–DeStefano bands. ``F(y_(i))`` lies in an interval of
  Beta(i, n+1-i) — equal-tailed or highest-density — whose pointwise coverage c* is raised until
  all n hold together (:func:`~showwork.statistics.critical_levels.ld_critical_coverage`: exact up
  to n = 8,192, above that extrapolated conservatively, ``critical_exact`` says which).
  Between order statistics, ``l_i <= F(y) <= h_{i+1}`` for ``y_(i) <= y < y_(i+1)``.

Representation (as in opda): the band is stored at the points ``a, y_(1), ..., y_(n), b`` where
``[a, b]`` is the support (default the whole real line). For a point y in ``[a, b)``,
``L(y) = lower[c]`` and ``U(y) = upper[c]`` with ``c = #{i : y_(i) <= y}``; both are 1 at b.

Ties. Validity needs no continuity: write the scores as ``Y_(i) = F^{-1}(U_(i))`` with uniform
``U_(i)``. Then ``#{i : Y_(i) <= y} = #{i : U_(i) <= F(y)}``, so whenever every ``U_(i)`` lies in
its interval the band built from the Y's contains F. The coverage is therefore at least the
nominal level for any F — exact for continuous F, conservative with ties. A tied value gets the
band of its last copy, which is what the count rule above gives.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from showwork.constants import BAND_METHODS
from showwork.statistics.beta_intervals import beta_intervals, last_lower_end
from showwork.statistics.critical_levels import ld_critical_coverage, ld_critical_coverage_is_exact
from showwork.statistics.errors import ArgumentError

__all__ = ["METHODS", "CDFBand", "band_ends", "cdf_band", "dkw_epsilon", "ks_epsilon"]

METHODS = BAND_METHODS
_LD_KIND = {"ld-hd": "highest_density", "ld-et": "equal_tailed"}


@dataclass(frozen=True)
class CDFBand:
    """A simultaneous confidence band for the CDF of the scores.

    Attributes
    ----------
    values : array of floats, length n
        The scores, sorted ascending.
    lower, upper : arrays of floats in [0, 1], length n + 1
        ``lower[c]`` and ``upper[c]`` bound the CDF at any y in ``[a, b)`` with exactly c scores
        ``<= y`` (``c = 0`` is the stretch ``[a, y_(1))``).
    a, b : floats
        Support bounds of the score distribution (``-inf`` / ``inf`` when unknown).
    method : str
        One of ``METHODS``.
    confidence : float
        Simultaneous coverage.
    critical_coverage : float or None
        The LD pointwise coverage c*; None for DKW and KS.
    critical_exact : bool
        Whether ``critical_coverage`` is exact (True for DKW and KS, which have none); above
        ``critical_levels.EXACT_MAX_N`` scores it is a conservative extrapolation.
    """

    values: NDArray[np.float64]
    lower: NDArray[np.float64]
    upper: NDArray[np.float64]
    a: float
    b: float
    method: str
    confidence: float
    critical_coverage: float | None
    critical_exact: bool = True

    @property
    def n(self) -> int:
        return int(self.values.size)

    def counts(self, y: ArrayLike) -> NDArray[np.int64]:
        """``#{i : y_(i) <= y}`` for each y."""
        return np.searchsorted(self.values, np.asarray(y, dtype=float), side="right")

    def cdf(self, y: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """Return the lower bound, the empirical CDF and the upper bound at each y."""
        y = np.asarray(y, dtype=float)
        c = self.counts(y)
        below, above = y < self.a, y >= self.b
        lower = np.where(above, 1.0, np.where(below, 0.0, self.lower[c]))
        upper = np.where(above, 1.0, np.where(below, 0.0, self.upper[c]))
        return lower, c / self.n, upper


def dkw_epsilon(n: int, confidence: float) -> float:
    """Half-width of the DKW band: ``sqrt(log(2 / (1 - confidence)) / (2 n))`` (Massart 1990).

    Parameters
    ----------
    n : positive int
        Number of scores.
    confidence : float strictly between 0 and 1
        As everywhere in this API, 1 is refused rather than answered with ``inf`` (as opda
        does): the only band held with certainty is the trivial one, ``[0, 1]``, which needs no
        half-width.

    Raises
    ------
    ArgumentError
        If n is not a positive integer or confidence is not strictly between 0 and 1.
    """
    _check_count(n)
    _check_confidence(confidence)
    return math.sqrt(math.log(2.0 / (1.0 - confidence)) / (2.0 * n))


def ks_epsilon(n: int, confidence: float) -> float:
    """Half-width of the KS band: the ``confidence`` quantile of the exact two-sided KS statistic.

    Arguments and errors as in :func:`dkw_epsilon` (confidence 1 is refused, not ``inf``).
    """
    _check_count(n)
    _check_confidence(confidence)
    return float(stats.kstwo(n).ppf(confidence))


def cdf_band(
    scores: ArrayLike,
    confidence: float = 0.8,
    method: str = "ld-hd",
    a: float = -math.inf,
    b: float = math.inf,
) -> CDFBand:
    """Return a simultaneous confidence band for the CDF of the distribution of ``scores``.

    Parameters
    ----------
    scores : 1-D array of finite floats
        i.i.d. scores (one per random-search trial). Ties are allowed (the band is conservative).
    confidence : float strictly between 0 and 1
        Probability that the band contains the whole CDF.
    method : {"ld-hd", "ld-et", "ks", "dkw"}
        See the module docstring. ``ld-hd`` gives the narrowest bands near the extremes, which is
        where tuning curves read the CDF.
    a, b : floats
        Known bounds of the support (e.g. 0 and 1 for accuracy). Needed for mean-curve bands.

    Returns
    -------
    CDFBand

    Raises
    ------
    ValueError
        On empty or non-finite scores, confidence outside (0, 1), unknown method, or a bound that
        does not contain the scores.

    Examples
    --------
    >>> band = cdf_band([0.3, 0.1, 0.2], confidence=0.5, method="dkw")
    >>> band.lower.round(3).tolist(), band.upper.round(3).tolist()
    ([0.0, 0.0, 0.186, 0.519], [0.481, 0.814, 1.0, 1.0])
    """
    values = np.sort(np.asarray(scores, dtype=float))
    if values.ndim != 1 or values.size == 0:
        raise ArgumentError("scores must be a non-empty 1-D array.")
    if not np.all(np.isfinite(values)):
        raise ArgumentError("scores hold NaN or infinite values; apply a failure policy first.")
    _check_confidence(confidence)
    a, b = _check_support(values, a, b)
    n = values.size
    if method in ("dkw", "ks"):
        eps = dkw_epsilon(n, confidence) if method == "dkw" else ks_epsilon(n, confidence)
        ecdf = np.arange(n + 1) / n
        lower, upper = np.clip(ecdf - eps, 0.0, 1.0), np.clip(ecdf + eps, 0.0, 1.0)
        critical = None
    elif method in _LD_KIND:
        critical = ld_critical_coverage(n, confidence, _LD_KIND[method])
        lo, hi, _ = beta_intervals(n, 1.0 - critical, _LD_KIND[method])
        # On [y_(i), y_(i+1)): F >= l_i (F at y_(i)) and F <= h_{i+1} (F just below y_(i+1)).
        lower = np.concatenate([[0.0], lo])
        upper = np.concatenate([hi, [1.0]])
    else:
        raise ArgumentError(f"method must be one of {', '.join(METHODS)} (got {method!r}).")
    exact = method not in _LD_KIND or ld_critical_coverage_is_exact(n)
    return CDFBand(values, lower, upper, a, b, method, float(confidence), critical, exact)


def band_ends(n: int, confidence: float = 0.8, method: str = "ld-hd") -> tuple[float, float]:
    """Return ``(upper[0], lower[n])`` of the band for n scores, without building the whole band.

    These are the band's value below the smallest score and after the largest one, which is all
    :func:`~showwork.statistics.informative_budget` needs; they depend on n only, not on the scores.
    """
    _check_confidence(confidence)
    if method in ("dkw", "ks"):
        eps = dkw_epsilon(n, confidence) if method == "dkw" else ks_epsilon(n, confidence)
        return min(1.0, eps), max(0.0, 1.0 - eps)
    if method not in _LD_KIND:
        raise ArgumentError(f"method must be one of {', '.join(METHODS)} (got {method!r}).")
    kind = _LD_KIND[method]
    top = last_lower_end(n, 1.0 - ld_critical_coverage(n, confidence, kind), kind)
    return 1.0 - top, top  # the first interval mirrors the last


def _check_count(n: int) -> None:
    if not (isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n >= 1):
        raise ArgumentError(f"n must be a positive integer (got n={n!r}).")


def _check_confidence(confidence: float) -> None:
    if not (isinstance(confidence, (int, float, np.floating)) and not isinstance(confidence, bool) and 0.0 < confidence < 1.0):
        raise ArgumentError(f"confidence must be strictly between 0 and 1 (got {confidence!r}).")


def _check_support(values: NDArray[np.float64], a: float, b: float) -> tuple[float, float]:
    a, b = float(a), float(b)
    if math.isnan(a) or math.isnan(b):
        raise ArgumentError("support bounds a and b must be numbers, not NaN.")
    if a > values[0]:
        raise ArgumentError(f"lower bound a={a!r} is greater than the smallest score {float(values[0])!r}.")
    if b < values[-1]:
        raise ArgumentError(f"upper bound b={b!r} is less than the largest score {float(values[-1])!r}.")
    return a, b
