"""One call from scores to everything a tuning-curve figure or table needs.

:func:`tuning_curve` applies the failure policy, computes the point estimates (V, U, running
max, Dodge's std), the simultaneous CDF band, the q-quantile curve with its bands (the median
curve for q = 0.5), the mean-curve bands when the support is bounded, and the cost axis when
runtimes are known. The result, a :class:`TuningCurve`, is what the command line prints and what reports read.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from showwork.statistics.cdf_bands import BandSpec, CDFBand, band_spec, cdf_band
from showwork.statistics.cost import budget_cost, cost_per_trial
from showwork.statistics.errors import ArgumentError
from showwork.statistics.failures import FailureReport, apply_failure_policy
from showwork.statistics.point_estimates import best_of_k_std, budgets, running_max, u_statistic, v_statistic
from showwork.statistics.tuning_curve_bands import mean_tuning_curve_bands, quantile_tuning_curve

__all__ = ["TuningCurve", "tuning_curve"]


@dataclass(frozen=True)
class TuningCurve:
    r"""Point estimates and simultaneous bands of one tuning curve, at a list of budgets.

    Attributes
    ----------
    k : array of floats
        The budgets (numbers of trials).
    v, u, running_max, v_std : arrays of floats
        V-statistic (Dodge), U-statistic (Tang; NaN where k is not an integer <= n), naive running
        max in trial order, and Dodge's plug-in std of the best of k.
    quantile_curve, quantile_curve_lower, quantile_curve_upper : arrays of floats
        The q-quantile tuning curve (q = ``quantile``; 0.5 is the median) and its simultaneous
        bands. With :math:`p_k = q^{1/k}` (maximizing; :math:`1 - (1 - q)^{1/k}` minimizing), the
        curve is :math:`F_n^{-1}(p_k)` and its bands :math:`U^{-1}(p_k)` and :math:`L^{-1}(p_k)`
        for the CDF band :math:`L \le F \le U`. A band equals a or b (possibly infinite) where
        the data cannot bound it.
    median, median_lower, median_upper : arrays of floats
        Aliases of ``quantile_curve``, ``quantile_curve_lower`` and ``quantile_curve_upper``, kept
        for one release (removed in showwork 0.2.0): they hold the q-quantile curve for any q,
        the median only when q = 0.5.
    mean_lower, mean_upper : arrays of floats or None
        Conservative bands of the mean tuning curve; None unless a and b are finite.
    band : CDFBand
        The CDF band everything was read from (method, confidence, critical coverage, a, b).
    failures : FailureReport
    mean_runtime_s : float or None
        Expected runtime in seconds of one trial the curve counts, when runtimes were given
        (:func:`~showwork.statistics.cost.cost_per_trial`): the mean over all trials, failed ones
        included; where failures are excluded (the curve counts successful trials), the runtime of
        all trials over the successful ones, so that a successful trial carries the failed attempts it took.
    """

    name: str | None
    k: NDArray[np.float64]
    minimize: bool
    quantile: float
    v: NDArray[np.float64]
    u: NDArray[np.float64]
    running_max: NDArray[np.float64]
    v_std: NDArray[np.float64]
    quantile_curve: NDArray[np.float64]
    quantile_curve_lower: NDArray[np.float64]
    quantile_curve_upper: NDArray[np.float64]
    mean_lower: NDArray[np.float64] | None
    mean_upper: NDArray[np.float64] | None
    band: CDFBand = field(repr=False)
    failures: FailureReport
    mean_runtime_s: float | None = None

    @property
    def n(self) -> int:
        """Number of scores the curve was estimated from (after the failure policy)."""
        return self.band.n

    @property
    def bands(self) -> BandSpec:
        """The settings the bands were computed with (pass them on to :func:`informative_budget`)."""
        return BandSpec(self.band.confidence, self.band.method, self.quantile, self.band.a, self.band.b, self.band.looks)

    @property
    def median(self) -> NDArray[np.float64]:
        """Alias of :attr:`quantile_curve`, kept for one release (removed in showwork 0.2.0)."""
        return self.quantile_curve

    @property
    def median_lower(self) -> NDArray[np.float64]:
        """Alias of :attr:`quantile_curve_lower`, kept for one release (removed in showwork 0.2.0)."""
        return self.quantile_curve_lower

    @property
    def median_upper(self) -> NDArray[np.float64]:
        """Alias of :attr:`quantile_curve_upper`, kept for one release (removed in showwork 0.2.0)."""
        return self.quantile_curve_upper

    def at(self, k: ArrayLike) -> TuningCurve:
        """The same curve restricted to some of its budgets (no recomputation).

        Raises
        ------
        ValueError
            If a budget in ``k`` is not one of the curve's.

        Examples
        --------
        >>> curve = tuning_curve([0.71, 0.80, 0.76, 0.79, 0.62, 0.77], a=0.0, b=1.0)
        >>> curve.at([1, 3]).quantile_curve.tolist() == tuning_curve([0.71, 0.80, 0.76, 0.79, 0.62, 0.77], k=[1, 3], a=0.0, b=1.0).quantile_curve.tolist()
        True
        """
        if np.any(np.diff(self.k) < 0):
            raise ArgumentError("the curve's budgets are not sorted; restrict it with the budgets it was given.")
        ks = np.atleast_1d(np.asarray(k, dtype=float))
        index = np.searchsorted(self.k, ks)
        found = (index < self.k.size) & (self.k[np.minimum(index, self.k.size - 1)] == ks)
        if not found.all():
            raise ArgumentError(f"budget {ks[~found][0]:g} is not among the curve's budgets.")
        arrays = {
            key: getattr(self, key)[index]
            for key in ("k", "v", "u", "running_max", "v_std", *_QUANTILE_FIELDS)
        }
        for key in ("mean_lower", "mean_upper"):
            arrays[key] = None if getattr(self, key) is None else getattr(self, key)[index]
        return dataclasses.replace(self, **arrays)

    def cost(self, unit: str = "hours", gpus_per_trial: float = 1.0) -> NDArray[np.float64]:
        """The budgets as expected compute, ``k × mean_runtime_s`` (per trial the curve counts), in ``unit``."""
        if self.mean_runtime_s is None:
            raise ArgumentError("no runtimes were given, so the budget cannot be expressed as cost.")
        return budget_cost(self.k, self.mean_runtime_s, unit, gpus_per_trial)

    def to_dict(self, cost_unit: str = "hours", gpus_per_trial: float = 1.0) -> dict:
        """A JSON-ready dict; non-finite numbers (unbounded bands, undefined U) become None.

        ``cost`` (in ``cost_unit``) is present when runtimes were given, else None. The
        q-quantile curve is written twice, as ``quantile_curve``, ``quantile_curve_lower``,
        ``quantile_curve_upper`` and under the old keys ``median``, ``median_lower``,
        ``median_upper`` (kept for one release, removed in showwork 0.2.0).
        """
        out = {
            "name": self.name,
            "n": self.n,
            "n_trials": self.failures.n_trials,
            "n_failed": self.failures.n_failed,
            "failure_policy": self.failures.policy,
            "minimize": self.minimize,
            "quantile": self.quantile,
            "method": self.band.method,
            "confidence": self.band.confidence,
            "critical_coverage": self.band.critical_coverage,
            "critical_coverage_exact": self.band.critical_exact,
            "a": _finite_or_none(self.band.a),
            "b": _finite_or_none(self.band.b),
            "k": _json_list(self.k),
        }
        for key in ("v", "u", "running_max", "v_std", *_QUANTILE_FIELDS):
            out[key] = _json_list(getattr(self, key))
        for old, new in zip(_OLD_QUANTILE_KEYS, _QUANTILE_FIELDS):
            out[old] = out[new]
        out["mean_lower"] = None if self.mean_lower is None else _json_list(self.mean_lower)
        out["mean_upper"] = None if self.mean_upper is None else _json_list(self.mean_upper)
        out["mean_runtime_s"] = self.mean_runtime_s
        out["cost"] = None if self.mean_runtime_s is None else _json_list(self.cost(cost_unit, gpus_per_trial))
        out["cost_unit"] = None if self.mean_runtime_s is None else cost_unit
        return out


_QUANTILE_FIELDS = ("quantile_curve", "quantile_curve_lower", "quantile_curve_upper")
_OLD_QUANTILE_KEYS = ("median", "median_lower", "median_upper")  # the JSON keys before 0.1.x; removed in 0.2.0


def _finite_or_none(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def _json_list(values: NDArray[np.float64]) -> list:
    return [float(x) if math.isfinite(x) else None for x in np.asarray(values, dtype=float).tolist()]


def tuning_curve(
    scores: ArrayLike,
    k: ArrayLike | None = None,
    *,
    confidence: float | None = None,
    method: str | None = None,
    a: float | None = None,
    b: float | None = None,
    minimize: bool = False,
    quantile: float | None = None,
    runtimes: ArrayLike | None = None,
    failure_policy: str = "error",
    name: str | None = None,
    bands: BandSpec | None = None,
) -> TuningCurve:
    """Estimate a tuning curve with exact simultaneous confidence bands.

    Parameters
    ----------
    scores : 1-D array of floats
        One validation score per random-search trial, in the order the trials ran. NaN or
        infinite values mark failed trials and are handled by ``failure_policy``.
    k : positive float or array of floats, optional
        Budgets; default ``1..n``. Real values are allowed (e.g. budgets converted from cost).
    confidence : float strictly between 0 and 1, default 0.8
        Simultaneous coverage of the bands (over all budgets at once).
    method : {"ld-hd", "ld-et", "ks", "dkw"}, default "ld-hd"
        CDF band construction; see :func:`showwork.statistics.cdf_band`.
    a, b : floats, default unbounded
        Support bounds of the score (e.g. 0 and 1 for accuracy); required for mean-curve bands.
    minimize : bool, default False
        True for losses.
    quantile : float strictly between 0 and 1, default 0.5
        Which quantile tuning curve to band (0.5: the median).
    runtimes : 1-D array of floats, optional
        Runtime of each trial in seconds (failed trials included, same length as ``scores``), for
        the cost axis.
    failure_policy : {"error", "worst", "exclude"}, default "error"
        See :mod:`showwork.statistics.failures`.
    name : str, optional
        A label (model family), carried into reports.
    bands : BandSpec, optional
        confidence, method, quantile, a and b in one; give either it or the loose keywords.

    Returns
    -------
    TuningCurve

    References
    ----------
    Dodge et al. 2019, "Show Your Work: Improved Reporting of Experimental Results".
    Tang et al. 2020, "Showing Your Work Doesn't Always Work".
    Lourie, Cho & He 2024, "Show Your Work with Confidence: Confidence Bands for Tuning Curves".

    Examples
    --------
    >>> curve = tuning_curve([0.71, 0.80, 0.76, 0.79, 0.62, 0.77], k=[1, 3], a=0.0, b=1.0)
    >>> curve.quantile_curve.tolist(), curve.quantile_curve_upper.tolist()
    ([0.76, 0.79], [0.8, 1.0])
    >>> tuning_curve([0.71, 0.80, 0.76], bands=BandSpec(confidence=0.9, quantile=0.25)).bands
    BandSpec(confidence=0.9, method='ld-hd', quantile=0.25, a=-inf, b=inf)
    """
    spec = band_spec(bands, confidence=confidence, method=method, quantile=quantile, a=a, b=b)
    ys, failures = apply_failure_policy(scores, failure_policy, minimize, spec.a, spec.b)
    if runtimes is not None and np.shape(runtimes) != (failures.n_trials,):
        raise ArgumentError(
            f"runtimes must be a 1-D list with one value per trial: {failures.n_trials} scores but runtimes of shape {np.shape(runtimes)}."
        )
    band = cdf_band(ys, bands=spec)
    ks = budgets(k, ys.size)
    lower, point, upper = quantile_tuning_curve(band, ks, spec.quantile, minimize)
    mean_lower = mean_upper = None
    if math.isfinite(band.a) and math.isfinite(band.b):
        mean_lower, mean_upper = mean_tuning_curve_bands(band, ks, minimize)
    return TuningCurve(
        name=name,
        k=ks,
        minimize=minimize,
        quantile=spec.quantile,
        v=v_statistic(ys, ks, minimize),
        u=u_statistic(ys, ks, minimize),
        running_max=running_max(ys, ks, minimize),
        v_std=best_of_k_std(ys, ks, minimize),
        quantile_curve=point,
        quantile_curve_lower=lower,
        quantile_curve_upper=upper,
        mean_lower=mean_lower,
        mean_upper=mean_upper,
        band=band,
        failures=failures,
        mean_runtime_s=None if runtimes is None else cost_per_trial(runtimes, failures),
    )
