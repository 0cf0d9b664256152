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

import functools
import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from showwork.constants import BAND_METHODS
from showwork.statistics.beta_intervals import beta_intervals, last_lower_end
from showwork.statistics.critical_levels import ld_critical_coverage, ld_critical_coverage_is_exact
from showwork.statistics.errors import ArgumentError, check_probability
from showwork.statistics.joint_levels import ld_joint_critical_coverage
from showwork.statistics.look_coverage import LookSchedule

__all__ = ["METHODS", "BandSpec", "CDFBand", "band_ends", "band_spec", "cdf_band", "dkw_epsilon", "ks_epsilon"]

METHODS = BAND_METHODS
_LD_KIND = {"ld-hd": "highest_density", "ld-et": "equal_tailed"}


@dataclass(frozen=True, repr=False)
class BandSpec:
    r"""The settings of a tuning curve's simultaneous bands, checked once.

    A band holds the whole score CDF F at once,

    .. math:: P\big(L(y) \le F(y) \le U(y) \text{ for all } y\big) \ge \text{confidence},

    and the q-quantile tuning curve at budget k is read off it at the CDF level
    :math:`p = q^{1/k}` (maximizing; :math:`1 - (1 - q)^{1/k}` when minimizing): the curve is
    :math:`F_n^{-1}(p)`, its bands :math:`U^{-1}(p) \le \cdot \le L^{-1}(p)`, clipped to the
    support :math:`[a, b]`.

    :func:`cdf_band`, :func:`~showwork.statistics.tuning_curve`,
    :func:`~showwork.statistics.informative_budget` and :func:`~showwork.statistics.trials_needed`
    take one as ``bands=``; their loose keywords (``confidence=``, ``method=``, ``quantile=``,
    ``a=``, ``b=``) keep working and build one. A function uses the fields it needs: the CDF
    band ignores ``quantile``, the planning functions ignore ``a`` and ``b`` (the informative
    budget depends on n alone).

    Attributes
    ----------
    confidence : float strictly between 0 and 1, default 0.8
        Simultaneous coverage of the bands (over all budgets at once).
    method : {"ld-hd", "ld-et", "ks", "dkw"}, default "ld-hd"
        CDF band construction; see the module docstring.
    quantile : float strictly between 0 and 1, default 0.5
        The q of the q-quantile tuning curve (0.5: the median).
    a, b : floats, default unbounded
        Support bounds of the score (e.g. 0 and 1 for accuracy); finite bounds enable the
        mean-curve bands. Whether they contain the scores is checked by :func:`cdf_band`.
    looks : tuple of ints, default () (one look, at whatever n the scores have)
        A sequential comparison's schedule n_1 < ... < n_L, fixed before the search: the band at
        each look (a band is then only read at a look's n) uses the pointwise level at which the
        bands of *every* look hold at once with ``confidence``
        (:func:`~showwork.statistics.joint_levels.ld_joint_critical_coverage`). LD methods only.

    Raises
    ------
    ArgumentError
        On confidence or quantile outside (0, 1), an unknown method, a NaN bound, or looks that
        are not increasing whole trial counts (or with a DKW/KS method).

    Examples
    --------
    >>> BandSpec(confidence=0.9, a=0.0, b=1.0)
    BandSpec(confidence=0.9, method='ld-hd', quantile=0.5, a=0.0, b=1.0)
    >>> BandSpec(method="bootstrap")
    Traceback (most recent call last):
    ...
    showwork.statistics.errors.ArgumentError: method must be one of ld-hd, ld-et, ks, dkw (got 'bootstrap').
    >>> BandSpec(looks=(12, 24, 48))
    BandSpec(confidence=0.8, method='ld-hd', quantile=0.5, a=-inf, b=inf, looks=(12, 24, 48))
    """

    confidence: float = 0.8
    method: str = "ld-hd"
    quantile: float = 0.5
    a: float = -math.inf
    b: float = math.inf
    looks: tuple[int, ...] = field(default=())

    def __post_init__(self) -> None:
        _check_confidence(self.confidence)
        if self.method not in METHODS:
            raise ArgumentError(f"method must be one of {', '.join(METHODS)} (got {self.method!r}).")
        check_probability(self.quantile, "quantile")
        if not (_is_number(self.a) and _is_number(self.b)) or math.isnan(self.a) or math.isnan(self.b):
            raise ArgumentError("support bounds a and b must be numbers, not NaN.")
        for name in ("confidence", "quantile", "a", "b"):  # numpy scalars in, plain floats out (hashable, JSON-ready)
            object.__setattr__(self, name, float(getattr(self, name)))
        if isinstance(self.looks, LookSchedule):
            object.__setattr__(self, "looks", self.looks.looks)
        if self.looks != ():
            looks = LookSchedule(tuple(self.looks) if isinstance(self.looks, (tuple, list)) else self.looks).looks
            if self.method not in _LD_KIND:
                raise ArgumentError(f"looks need an LD method (ld-hd or ld-et), not {self.method!r}: the joint level is an LD level.")
            object.__setattr__(self, "looks", looks)

    def __repr__(self) -> str:
        looks = f", looks={self.looks!r}" if self.looks else ""
        return (f"BandSpec(confidence={self.confidence!r}, method={self.method!r}, quantile={self.quantile!r}, "
                f"a={self.a!r}, b={self.b!r}{looks})")

    def critical_level(self, n: int) -> tuple[float, bool]:
        """The LD pointwise level c* of the band for n scores and whether it is exact (LD methods).

        With ``looks``, n must be one of them and the level is the schedule's joint one.
        """
        kind = _LD_KIND[self.method]
        if not self.looks:
            return ld_critical_coverage(n, self.confidence, kind), ld_critical_coverage_is_exact(n)
        if n not in self.looks:
            raise ArgumentError(
                f"{n} scores is not one of the looks {','.join(map(str, self.looks))}: a sequential"
                " comparison's band is read at a look (the scores of its first n trials)."
            )
        level = ld_joint_critical_coverage(self.looks, self.confidence, kind)
        return level.critical_coverage, level.exact


def band_spec(
    bands: BandSpec | None = None,
    *,
    confidence: float | None = None,
    method: str | None = None,
    quantile: float | None = None,
    a: float | None = None,
    b: float | None = None,
) -> BandSpec:
    """``bands`` itself, or a :class:`BandSpec` of the loose keywords given (None: its default).

    For the functions that take both spellings. Giving ``bands`` and a loose keyword is an
    :class:`ArgumentError`: one of the two would be ignored silently.
    """
    loose = {"confidence": confidence, "method": method, "quantile": quantile, "a": a, "b": b}
    given = {name: value for name, value in loose.items() if value is not None}
    if bands is None:
        return BandSpec(**given)
    if not isinstance(bands, BandSpec):
        raise ArgumentError(f"bands must be a BandSpec (got {type(bands).__name__}).")
    if given:
        raise ArgumentError(f"give bands= or {'=, '.join(given)}=, not both (the loose keywords build a BandSpec).")
    return bands


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
        ``critical_levels.EXACT_MAX_N`` scores it is a conservative extrapolation, and for a
        schedule of looks beyond the exact work limit a conservative bound.
    looks : tuple of ints
        The schedule whose joint level the band uses (``()``: a fixed-n band).
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
    looks: tuple[int, ...] = ()

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
    confidence: float | None = None,
    method: str | None = None,
    a: float | None = None,
    b: float | None = None,
    *,
    bands: BandSpec | None = None,
) -> CDFBand:
    """Return a simultaneous confidence band for the CDF of the distribution of ``scores``.

    Parameters
    ----------
    scores : 1-D array of finite floats
        i.i.d. scores (one per random-search trial). Ties are allowed (the band is conservative).
    confidence : float strictly between 0 and 1, default 0.8
        Probability that the band contains the whole CDF.
    method : {"ld-hd", "ld-et", "ks", "dkw"}, default "ld-hd"
        See the module docstring. ``ld-hd`` gives the narrowest bands near the extremes, which is
        where tuning curves read the CDF.
    a, b : floats, default unbounded
        Known bounds of the support (e.g. 0 and 1 for accuracy). Needed for mean-curve bands.
    bands : BandSpec, optional
        The four settings above in one (its ``quantile`` is not used here); give either it or
        the loose keywords.

    Returns
    -------
    CDFBand

    Raises
    ------
    ArgumentError
        On empty or non-finite scores, a :class:`BandSpec` refused, or a bound that does not
        contain the scores.

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
    spec = band_spec(bands, confidence=confidence, method=method, a=a, b=b)
    confidence, method = spec.confidence, spec.method
    a, b = _check_support(values, spec.a, spec.b)
    n = values.size
    if method in ("dkw", "ks"):
        eps = dkw_epsilon(n, confidence) if method == "dkw" else ks_epsilon(n, confidence)
        ecdf = np.arange(n + 1) / n
        lower, upper = np.clip(ecdf - eps, 0.0, 1.0), np.clip(ecdf + eps, 0.0, 1.0)
        critical = None
    elif method in _LD_KIND:
        critical, exact = spec.critical_level(n)
        lo, hi = ld_interval_ends(n, critical, _LD_KIND[method])
        # On [y_(i), y_(i+1)): F >= l_i (F at y_(i)) and F <= h_{i+1} (F just below y_(i+1)).
        lower = np.concatenate([[0.0], lo])
        upper = np.concatenate([hi, [1.0]])
    else:  # BandSpec admits METHODS only
        raise AssertionError(f"no band construction for method {method!r}")
    if method not in _LD_KIND:
        exact = True
    return CDFBand(values, lower, upper, a, b, method, confidence, critical, exact, spec.looks)


_CACHED_INTERVALS_MAX_N = 10_000  # above, the arrays are large and rarely asked for twice


def ld_interval_ends(n: int, critical: float, kind: str) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The LD intervals' ends for n scores at pointwise level ``critical`` (read-only arrays).

    Remembered for small n: a simulation of many races, or a report of many families, asks for
    the same (n, level) again and again, and the Beta intervals are most of a band's cost.
    """
    if n > _CACHED_INTERVALS_MAX_N:
        lo, hi, _ = beta_intervals(n, 1.0 - critical, kind)
        return lo, hi
    return _cached_interval_ends(int(n), float(critical), kind)


@functools.lru_cache(maxsize=512)
def _cached_interval_ends(n: int, critical: float, kind: str) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    lo, hi, _ = beta_intervals(n, 1.0 - critical, kind)
    lo.flags.writeable = hi.flags.writeable = False  # shared by every caller
    return lo, hi


def band_ends(n: int, confidence: float = 0.8, method: str = "ld-hd", looks: tuple[int, ...] = ()) -> tuple[float, float]:
    """Return ``(upper[0], lower[n])`` of the band for n scores, without building the whole band.

    These are the band's value below the smallest score and after the largest one, which is all
    :func:`~showwork.statistics.informative_budget` needs; they depend on n only, not on the scores
    (and on the schedule of ``looks``, n one of them, for a sequential comparison's band).
    """
    _check_confidence(confidence)
    if method in ("dkw", "ks"):
        eps = dkw_epsilon(n, confidence) if method == "dkw" else ks_epsilon(n, confidence)
        return min(1.0, eps), max(0.0, 1.0 - eps)
    if method not in _LD_KIND:
        raise ArgumentError(f"method must be one of {', '.join(METHODS)} (got {method!r}).")
    kind = _LD_KIND[method]
    critical, _ = BandSpec(confidence=confidence, method=method, looks=looks).critical_level(n)
    top = last_lower_end(n, 1.0 - critical, kind)
    return 1.0 - top, top  # the first interval mirrors the last


def _check_count(n: int) -> None:
    if not (isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n >= 1):
        raise ArgumentError(f"n must be a positive integer (got n={n!r}).")


def _check_confidence(confidence: float) -> None:
    check_probability(confidence, "confidence")


def _is_number(x: object) -> bool:
    """A real number (Python or numpy), not a bool."""
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)


def _check_support(values: NDArray[np.float64], a: float, b: float) -> tuple[float, float]:
    """``a <= min(scores)`` and ``b >= max(scores)`` (a :class:`BandSpec` has checked they are numbers)."""
    if a > values[0]:
        raise ArgumentError(f"lower bound a={a!r} is greater than the smallest score {float(values[0])!r}.")
    if b < values[-1]:
        raise ArgumentError(f"upper bound b={b!r} is less than the largest score {float(values[-1])!r}.")
    return a, b
