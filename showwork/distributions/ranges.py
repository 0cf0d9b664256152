"""The numeric ranges: uniform, log-uniform and truncated exponential, continuous, stepped or on the integers.

Continuous distributions are sampled by inverse CDF from a single ``rng.random()`` draw, so a draw
depends only on numpy's stable 53-bit uniform doubles.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from showwork.distributions.base import (
    Distribution,
    DistributionError,
    check_order,
    clamp,
    exact_integer,
    finite_number,
    interval,
)
from showwork.distributions.grid import SteppedRange, check_step, grid_size, grid_value, nearest_step
from showwork.errors import show_value

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = ["IntTruncatedExponential", "IntUniform", "LogIntUniform", "LogUniform", "TruncatedExponential", "Uniform"]


@dataclass(frozen=True)
class Uniform(SteppedRange, Distribution):
    """Continuous uniform distribution on ``[low, high)``: ``low`` included, ``high`` excluded.

    Parameters
    ----------
    low, high : float
        Finite, ``low < high``, and ``high - low`` finite. Sampled as ``low + u (high - low)``
        with ``u`` uniform on [0, 1); a draw that rounds up to ``high`` is moved to the largest
        float below it, so ``high`` is never returned.
    step : float, optional
        Positive: the values are then ``low + step * j`` for ``j = 0, 1, ..., J``, the last one
        the largest not above ``high``, each equally likely. BOTH ends are then included: ``low``
        always, ``high`` exactly when ``high - low`` is a multiple of ``step`` (decimally: ``low 0,
        high 1, step 0.1`` gives the 11 values 0.0, 0.1, ..., 1.0). At least two values.
    """

    kind: ClassVar[str] = "uniform"
    low: float
    high: float
    step: float | None = None

    def __post_init__(self) -> None:
        low, high = finite_number("low", self.low), finite_number("high", self.high)
        check_order(low, high, self.low, self.high)
        if not math.isfinite(high - low):
            raise DistributionError("high", f"minus `low` must be finite (low={show_value(self.low)}, high={show_value(self.high)})")
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)
        if self.step is not None:
            step = check_step(self.step, integer=False)
            grid_size(low, high, step, self.step)
            object.__setattr__(self, "step", step)

    def sample(self, rng: np.random.Generator) -> float:
        if self.step is not None:  # each grid point owns [g - step/2, g + step/2): equally likely
            return self._grid_draw(rng)
        x = self.low + float(rng.random()) * (self.high - self.low)
        return min(max(x, self.low), math.nextafter(self.high, -math.inf))

    def describe(self) -> str:
        return f"uniform on {self.bounds_text()}"

    def bounds(self) -> dict[str, Any]:
        return self._range_bounds(high_included=False)


@dataclass(frozen=True)
class LogUniform(SteppedRange, Distribution):
    """Log-uniform (reciprocal) distribution on ``[low, high)``: ``log x`` is uniform on ``[log low, log high)``.

    Parameters
    ----------
    low, high : float
        Finite, ``0 < low < high``. ``low`` is included, ``high`` excluded.
    step : float, optional
        Positive and below ``2 * low``: the values are then ``low + step * j`` for ``j = 0, ...,
        J``, the last one the largest not above ``high`` (so BOTH ends are included, ``high`` when
        ``high - low`` is a multiple of ``step``). Value ``g`` has the log-uniform mass of
        ``[g - step/2, g + step/2)`` over ``[low - step/2, last + step/2)``, as
        :class:`LogIntUniform` does for integers; ``step < 2 * low`` keeps that range above 0.
    """

    kind: ClassVar[str] = "loguniform"
    low: float
    high: float
    step: float | None = None

    def __post_init__(self) -> None:
        low, high = finite_number("low", self.low), finite_number("high", self.high)
        if low <= 0:
            raise DistributionError("low", f"must be positive for a log-uniform distribution (low={show_value(self.low)})")
        check_order(low, high, self.low, self.high)
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)
        if self.step is not None:
            step = check_step(self.step, integer=False)
            if not step < 2 * low:
                raise DistributionError(
                    "step",
                    f"must be smaller than twice `low` for a stepped log-uniform distribution (low={show_value(self.low)},"
                    f" step={show_value(self.step)}): the cell of `low`, [low - step/2, low + step/2), must lie above 0",
                )
            grid_size(low, high, step, self.step)
            object.__setattr__(self, "step", step)

    def sample(self, rng: np.random.Generator) -> float:
        if self.step is not None:
            return self._grid_draw(rng)
        log_low, log_high = math.log(self.low), math.log(self.high)
        x = math.exp(log_low + float(rng.random()) * (log_high - log_low))
        return min(max(x, self.low), math.nextafter(self.high, -math.inf))

    def describe(self) -> str:
        return f"log-uniform on {self.bounds_text()}"

    def bounds(self) -> dict[str, Any]:
        return self._range_bounds(high_included=False)


@dataclass(frozen=True)
class IntUniform(Distribution):
    """Discrete uniform distribution on the integers ``low, low + 1, ..., high``: BOTH bounds included.

    Each of the ``high - low + 1`` integers has probability ``1 / (high - low + 1)``.

    Parameters
    ----------
    low, high : int
        ``low < high``, both within ±2**53. Integral floats (``256.0``, ``1e7``) are accepted and
        stored as ints; other floats are refused.
    """

    kind: ClassVar[str] = "int_uniform"
    low: int
    high: int

    def __post_init__(self) -> None:
        low, high = exact_integer("low", self.low), exact_integer("high", self.high)
        check_order(low, high, self.low, self.high)
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)

    def sample(self, rng: np.random.Generator) -> int:
        return int(rng.integers(self.low, self.high, endpoint=True))

    def describe(self) -> str:
        return f"integers uniform on {self.bounds_text()} (both ends included)"

    def bounds(self) -> dict[str, Any]:
        return interval(self.low, self.high, True, True)


@dataclass(frozen=True)
class LogIntUniform(Distribution):
    """Integers ``low, ..., high`` (BOTH included), uniform in log space.

    The scheme (Optuna's): draw ``s`` log-uniformly on ``[low - 1/2, high + 1/2)``, round to the
    nearest integer (``floor(s + 1/2)``) and clip to ``[low, high]``. Integer ``k`` thus has
    probability ``log((k + 1/2) / (k - 1/2)) / log((high + 1/2) / (low - 1/2))``: each integer owns
    the unit interval around it and the mass of that interval under the log-uniform density.

    Parameters
    ----------
    low, high : int
        ``1 <= low < high <= 2**53``.
    """

    kind: ClassVar[str] = "log_int_uniform"
    low: int
    high: int

    def __post_init__(self) -> None:
        low, high = exact_integer("low", self.low), exact_integer("high", self.high)
        if low < 1:
            raise DistributionError("low", f"must be at least 1 for a log-integer-uniform distribution (low={show_value(self.low)})")
        check_order(low, high, self.low, self.high)
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)

    def probability(self, k: int) -> float:
        """Probability of the integer ``k`` (0 outside ``[low, high]``)."""
        if not self.low <= k <= self.high:
            return 0.0
        total = math.log((self.high + 0.5) / (self.low - 0.5))
        return math.log((k + 0.5) / (k - 0.5)) / total

    def sample(self, rng: np.random.Generator) -> int:
        log_low, log_high = math.log(self.low - 0.5), math.log(self.high + 0.5)
        s = math.exp(log_low + float(rng.random()) * (log_high - log_low))
        return int(clamp(math.floor(s + 0.5), self.low, self.high))

    def describe(self) -> str:
        return f"integers log-uniform on {self.bounds_text()} (both ends included)"

    def bounds(self) -> dict[str, Any]:
        return interval(self.low, self.high, True, True)


@dataclass(frozen=True)
class TruncatedExponential(SteppedRange, Distribution):
    """Exponential distribution truncated to ``[low, high]`` (both ends in the support).

    Density ``exp(-(x - low) / scale) / (scale (1 - exp(-b)))`` on ``[low, high]`` with
    ``b = (high - low) / scale``: the same distribution as
    ``scipy.stats.truncexpon(b=(high - low) / scale, loc=low, scale=scale)``. Tang et al.'s
    TEXP[0.001, 0.099] learning rate (``truncexpon(b=0.099, loc=0.001, scale=1)``) is
    ``TruncatedExponential(low=0.001, high=0.1, scale=1)``.

    Sampled by inverse CDF: ``x = low - scale * log1p(u * expm1(-b))`` with ``u`` uniform on
    [0, 1), which keeps full precision whether ``b`` is tiny or huge.

    Parameters
    ----------
    low, high : float
        Finite, ``low < high``.
    scale : float
        Finite and positive; smaller values concentrate the mass near ``low``.
    step : float, optional
        Positive: the values are then ``low + step * j`` for ``j = 0, ..., J``, the last one the
        largest not above ``high`` (BOTH ends included; ``high`` when ``high - low`` is a multiple
        of ``step``). Value ``g`` has the mass of ``[g - step/2, g + step/2)`` under the same
        exponential truncated to ``[low - step/2, last + step/2)``, so ``P(g)`` is proportional to
        ``exp(-(g - low) / scale)`` at every grid point, the ends included (a truncated geometric).
    """

    kind: ClassVar[str] = "truncated_exponential"
    integer: ClassVar[bool] = False
    low: float
    high: float
    scale: float
    step: float | None = None

    def __post_init__(self) -> None:
        read = exact_integer if self.integer else finite_number
        low, high, scale = read("low", self.low), read("high", self.high), finite_number("scale", self.scale)
        check_order(low, high, self.low, self.high)
        if not math.isfinite(high - low):
            raise DistributionError("high", f"minus `low` must be finite (low={show_value(self.low)}, high={show_value(self.high)})")
        if scale <= 0:
            raise DistributionError("scale", f"must be positive (scale={show_value(self.scale)})")
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)
        object.__setattr__(self, "scale", scale)
        if self.step is not None:
            step = check_step(self.step, self.integer)
            grid_size(low, high, step, self.step)
            object.__setattr__(self, "step", step)

    @property
    def b(self) -> float:
        """Scipy's shape parameter ``(high - low) / scale`` (may be ``inf`` for a tiny scale)."""
        return (self.high - self.low) / self.scale

    def sample(self, rng: np.random.Generator) -> float | int:
        if self.step is None:
            return _truncated_exponential_draw(float(rng.random()), self.low, self.high, self.scale)
        last = self.last_step
        top = grid_value(self.low, self.step, last)
        x = _truncated_exponential_draw(float(rng.random()), self.low - self.step / 2, top + self.step / 2, self.scale)
        return grid_value(self.low, self.step, nearest_step(x, self.low, self.step, 0, last))

    def kind_text(self) -> str:
        return f"{self.kind} (scale {self.scale!r})"

    def describe(self) -> str:
        what = "integers truncated exponential" if self.integer else "truncated exponential"
        scipy = "" if self.step is not None else f" (scipy truncexpon(b={self.b!r}, loc={self.low!r}, scale={self.scale!r}))"
        return f"{what} on {self.bounds_text()}, scale {self.scale!r}{scipy}"

    def bounds(self) -> dict[str, Any]:
        return self._range_bounds(high_included=True)


def _truncated_exponential_draw(u: float, low: float, high: float, scale: float) -> float:
    """Inverse CDF at ``u`` of the exponential of ``scale`` truncated to ``[low, high]``."""
    b = (high - low) / scale
    if b < sys.float_info.min:  # b underflowed (range 1e-300, scale 1e308): uniform to double precision
        return clamp(low + u * (high - low), low, high)
    return clamp(low - scale * math.log1p(u * math.expm1(-b)), low, high)


@dataclass(frozen=True)
class IntTruncatedExponential(TruncatedExponential):
    """The integer form of :class:`TruncatedExponential`: integers ``low, low + step, ..., <= high``.

    ``low`` and ``high`` are integers (within ±2**53), ``step`` an integer >= 1 (default 1); BOTH
    ends included (``high`` when ``high - low`` is a multiple of ``step``). ``P(k)`` is proportional
    to ``exp(-(k - low) / scale)``: each integer owns ``[k - step/2, k + step/2)``, as in the stepped form.
    """

    kind: ClassVar[str] = "int_truncated_exponential"
    integer: ClassVar[bool] = True
    low: int
    high: int
    scale: float
    step: int = 1
