"""The normal family: a normal distribution, optionally truncated, stepped or on the integers, and its inverse CDF.

This module imports only the standard library; scipy is imported lazily, and only to sample a
normal distribution truncated more than ~37 standard deviations into one tail.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import TYPE_CHECKING, Any, ClassVar

from showwork.distributions.base import (
    MAX_EXACT_INT,
    Distribution,
    DistributionError,
    check_order,
    clamp,
    exact_integer,
    finite_number,
    interval,
)
from showwork.distributions.grid import check_step, grid_size, grid_value, nearest_step, steps_below
from showwork.errors import show_value

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = ["IntNormal", "Normal"]

MAX_TRUNCATION_STDS = 1e6  # a truncated normal's interval may start at most this many std from its mean


def _std_normal_cdf(z: float) -> float:
    return 0.5 * math.erfc(-z / math.sqrt(2.0))


_STANDARD_NORMAL = NormalDist()


def _truncated_std_normal_ppf(u: float, a: float, b: float) -> float:
    """Inverse CDF at ``u`` in [0, 1) of the standard normal truncated to ``[a, b]`` (``a < b``, maybe infinite).

    Works in the lower tail, where ``Phi(z) = erfc(-z / sqrt 2) / 2`` keeps full relative
    precision down to ~1e-308 (z ~ -37.5): an interval with ``a > 0`` is mirrored,
    ``F^{-1}(u; a, b) = -F^{-1}(1 - u; -b, -a)``. Only when both ends lie beyond ~37.5 standard
    deviations on the same side, where ``Phi`` underflows, is scipy's ``truncnorm`` used.
    """
    if a > 0:
        return -_truncated_std_normal_ppf(1.0 - u, -b, -a)
    p_low, p_high = _std_normal_cdf(a), _std_normal_cdf(b)
    mass = p_high - p_low
    if not (mass > 0 and p_high > 1e-300):
        from scipy.stats import truncnorm  # lazy: only for extreme tails

        u = clamp(u, 2.0**-54, 1.0 - 2.0**-53)  # ppf(0) is ``a``: -inf for a half-line (probability 2**-53)
        return clamp(float(truncnorm.ppf(u, a, b)), a, b)
    p = clamp(p_low + u * mass, math.ulp(0.0), 1.0 - 2.0**-53)
    return clamp(_STANDARD_NORMAL.inv_cdf(p), a, b)


@dataclass(frozen=True)
class Normal(Distribution):
    """Normal distribution, optionally truncated to ``[low, high]`` (given bounds are in the support).

    Parameters
    ----------
    mean : float
        Finite.
    std : float
        Finite and positive; ``|mean| + 40 std`` must be finite.
    low, high : float, optional
        Finite bounds; either may be omitted (None: unbounded on that side). With both,
        ``low < high``. The interval must come within ``MAX_TRUNCATION_STDS`` (1e6) standard
        deviations of the mean: farther out every draw is the bound to double precision, and the
        tail sampler (scipy's) loses accuracy and then returns infinities (beyond ~1e154). The
        density is the normal density restricted to the interval and
        renormalised, i.e. ``scipy.stats.truncnorm((low - mean) / std, (high - mean) / std,
        loc=mean, scale=std)``.

    step : float, optional
        Positive: the values are then on the grid ``low + step * j`` (``j = 0, 1, ...``), or
        ``step * j`` (any integer ``j``) when ``low`` is not given, and not above ``high`` when it is.
        Given bounds that are grid points are included. Value ``g`` has the mass of
        ``[g - step/2, g + step/2)`` under the same normal truncated to the grid's range widened
        by half a step on each bounded side (hyperopt's ``qnormal`` without ``low``/``high``).

    Notes
    -----
    Sampled by inverse CDF from one uniform draw (even when not truncated), through
    :func:`statistics.NormalDist.inv_cdf` and ``math.erfc``, numerically safe far in the tails.
    """

    kind: ClassVar[str] = "normal"
    integer: ClassVar[bool] = False
    mean: float
    std: float
    low: float | None = None
    high: float | None = None
    step: float | None = None

    def __post_init__(self) -> None:
        read = exact_integer if self.integer else finite_number
        mean, std = finite_number("mean", self.mean), finite_number("std", self.std)
        if std <= 0:
            raise DistributionError("std", f"must be positive (std={show_value(self.std)})")
        if not math.isfinite(abs(mean) + 40.0 * std):
            raise DistributionError("std", f"is too large: draws would overflow (mean={show_value(self.mean)}, std={show_value(self.std)})")
        low = None if self.low is None else read("low", self.low)
        high = None if self.high is None else read("high", self.high)
        if low is not None and high is not None:
            check_order(low, high, self.low, self.high)
        # The distance, in standard deviations, from the mean to the interval (0 when it holds the mean);
        # ``inf`` when that overflows (std 5e-324 with low 1).
        field, distance = (
            ("low", (low - mean) / std) if low is not None and low > mean
            else ("high", (mean - high) / std) if high is not None and high < mean
            else (None, 0.0)
        )
        if field is not None and not distance <= MAX_TRUNCATION_STDS:
            raise DistributionError(
                field,
                f"lies {distance:.3g} standard deviations from the mean (at most {MAX_TRUNCATION_STDS:g} allowed):"
                f" nearly every draw would be the bound itself (mean={show_value(self.mean)}, std={show_value(self.std)},"
                f" {field}={show_value(self.low if field == 'low' else self.high)}); use a constant, or a larger std",
            )
        object.__setattr__(self, "mean", mean)
        object.__setattr__(self, "std", std)
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)
        if self.step is not None:
            step = check_step(self.step, self.integer)
            if low is not None and high is not None:
                grid_size(low, high, step, self.step)
            # Where draws can land: the bounds, or 40 std from the mean (beyond any inverse-CDF draw) where none is given.
            reach_low = low if low is not None else mean - 40.0 * std
            reach_high = high if high is not None else mean + 40.0 * std
            if self.integer and max(abs(reach_low), abs(reach_high)) > MAX_EXACT_INT:
                raise DistributionError(
                    "std", f"is too large: integer values would pass ±2**53 (mean={show_value(self.mean)}, std={show_value(self.std)}); give `low` and `high`"
                )
            if not (reach_high - reach_low) / step <= MAX_EXACT_INT:
                raise DistributionError(
                    "step", f"is too small: more than 2**53 values within 40 std of the mean (std={show_value(self.std)}, step={show_value(self.step)})"
                )
            object.__setattr__(self, "step", step)
            self._cells()  # the widened truncation must itself be a valid normal (not too far from the mean)

    @property
    def origin(self) -> float | int:
        """Where the grid of a stepped normal starts: ``low``, else 0."""
        if self.low is not None:
            return self.low
        return 0 if self.integer else 0.0

    def _grid_ends(self) -> tuple[int | None, int | None]:
        """The first and last ``j`` of the grid ``origin + step * j`` (None: unbounded)."""
        assert self.step is not None
        first = 0 if self.low is not None else None
        last = None if self.high is None else steps_below(self.origin, self.step, self.high)
        return first, last

    def _cells(self) -> Normal:
        """The continuous normal whose draws are rounded to the grid: truncated to the widened grid range."""
        assert self.step is not None
        first, last = self._grid_ends()
        low = None if first is None else self.origin - self.step / 2
        high = None if last is None else grid_value(self.origin, self.step, last) + self.step / 2
        return Normal(self.mean, self.std, low, high)

    def sample(self, rng: np.random.Generator) -> float | int:
        if self.step is not None:
            first, last = self._grid_ends()
            x = self._cells().sample(rng)
            return grid_value(self.origin, self.step, nearest_step(x, self.origin, self.step, first, last))
        a = -math.inf if self.low is None else (self.low - self.mean) / self.std
        b = math.inf if self.high is None else (self.high - self.mean) / self.std
        z = _truncated_std_normal_ppf(float(rng.random()), a, b)
        x = self.mean + self.std * z
        return clamp(x, -math.inf if self.low is None else self.low, math.inf if self.high is None else self.high)

    def kind_text(self) -> str:
        return f"{self.kind} (mean {self.mean!r}, std {self.std!r})"

    def describe(self) -> str:
        text = f"{'integers normal' if self.integer else 'normal'} (mean {self.mean!r}, std {self.std!r})"
        if self.low is not None or self.high is not None:
            return f"{text} truncated to {self.bounds_text()}"
        return text + ("" if self.step is None or (self.integer and self.step == 1) else f" on multiples of {self.step!r}")

    def bounds(self) -> dict[str, Any]:
        if self.step is not None:
            first, last = self._grid_ends()
            top = None if last is None else grid_value(self.origin, self.step, last)
            return {**interval(self.low, top, self.low is not None, top is not None), "step": self.step}
        return interval(self.low, self.high, self.low is not None, self.high is not None)


@dataclass(frozen=True)
class IntNormal(Normal):
    """The integer form of :class:`Normal`: a normal draw rounded to the nearest integer (or multiple of ``step``).

    ``low`` and ``high``, optional, are integers (within ±2**53); ``step`` an integer >= 1 (default
    1). The values are ``low + step * j``, or multiples of ``step`` without ``low``; given bounds
    that are grid points are included. Integer ``k`` has the mass of ``[k - step/2, k + step/2)``
    under the normal truncated to the widened grid range.
    """

    kind: ClassVar[str] = "int_normal"
    integer: ClassVar[bool] = True
    mean: float
    std: float
    low: int | None = None
    high: int | None = None
    step: int = 1
