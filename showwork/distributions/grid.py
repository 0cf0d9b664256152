"""Stepped distributions: their values on the grid ``origin + step * j``, computed exactly in decimal."""

from __future__ import annotations

import decimal
import math
from typing import TYPE_CHECKING, Any

from showwork.distributions.base import MAX_EXACT_INT, DistributionError, exact_integer, finite_number, interval
from showwork.errors import show_value

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = ["SteppedRange", "check_step", "grid_size", "grid_value", "nearest_step", "steps_below"]

# A stepped distribution (``step`` given, or an integer form) draws from the same continuous
# distribution over its grid's range widened by half a step on each bounded side, then takes the
# nearest grid point: grid point ``g`` gets the continuous mass of its cell ``[g - step/2, g + step/2)``.
# This is Optuna's scheme for ``suggest_float(..., step=...)`` and ``suggest_int`` and the one
# :class:`LogIntUniform` uses, so every grid point of a stepped uniform is equally likely, and the
# ends get full cells, not half ones. Grid values are computed in decimal on the shortest reprs, so
# ``low 0.0, step 0.1`` gives ``0.3``, not ``0.30000000000000004``.

_EXACT = decimal.Context(prec=1000)  # enough digits for any difference of two doubles


def _decimal(x: float | int) -> decimal.Decimal:
    return decimal.Decimal(repr(x))


def grid_value(origin: float | int, step: float | int, j: int) -> float | int:
    """``origin + step * j``: exact for ints; for floats, the float nearest the decimal value."""
    if isinstance(origin, int) and isinstance(step, int):
        return origin + step * j
    return float(_EXACT.add(_decimal(origin), _EXACT.multiply(_decimal(step), decimal.Decimal(j))))


def steps_below(origin: float | int, step: float | int, high: float | int) -> int:
    """The largest ``j`` with ``origin + step * j <= high`` (exactly, in decimal)."""
    quotient = _EXACT.divide(_EXACT.subtract(_decimal(high), _decimal(origin)), _decimal(step))
    return int(quotient.to_integral_value(rounding=decimal.ROUND_FLOOR))


def check_step(field_value: Any, integer: bool) -> float | int:
    """A positive number (an integer >= 1 for the integer forms)."""
    step = exact_integer("step", field_value) if integer else finite_number("step", field_value)
    if step <= 0:
        raise DistributionError("step", f"must be positive (step={show_value(field_value)})")
    return step


def grid_size(low: float | int, high: float | int, step: float | int, shown_step: Any) -> int:
    """``J`` of the grid ``low, low + step, ..., low + step * J <= high``; at least 1 (two values)."""
    last = steps_below(low, step, high)
    if last > MAX_EXACT_INT:  # (x - low) / step must stay an exact, finite float for every draw x
        raise DistributionError(
            "step", f"is too small: more than 2**53 values (low={show_value(low)}, high={show_value(high)}, step={show_value(shown_step)}); leave out `step`"
        )
    if last < 1:
        raise DistributionError(
            "step",
            f"is larger than `high` minus `low`: `low` would be the only value (low={show_value(low)}, high={show_value(high)},"
            f" step={show_value(shown_step)}); use `constant` for a fixed value",
        )
    return last


def nearest_step(x: float, origin: float | int, step: float | int, first: int | None, last: int | None) -> int:
    """The ``j`` of the grid point nearest ``x`` (halves round up), clipped to ``[first, last]`` where given."""
    j = math.floor((x - origin) / step + 0.5)
    if first is not None:
        j = max(j, first)
    if last is not None:
        j = min(j, last)
    return j



class SteppedRange:
    """A distribution with ``low``, ``high`` and an optional ``step``: its grid is ``low + step * j``, j = 0 .. J."""

    @property
    def last_step(self) -> int:
        """``J``: the largest value is ``low + step * J`` (stepped distributions only)."""
        assert self.step is not None
        return steps_below(self.low, self.step, self.high)

    def _grid_draw(self, rng: np.random.Generator) -> float:
        """A stepped draw: this class's continuous draw on ``[low - step/2, last grid value + step/2)``, to the nearest grid value."""
        assert self.step is not None
        last = self.last_step
        cells = type(self)(self.low - self.step / 2, grid_value(self.low, self.step, last) + self.step / 2)
        return grid_value(self.low, self.step, nearest_step(cells.sample(rng), self.low, self.step, 0, last))

    def _range_bounds(self, high_included: bool) -> dict[str, Any]:
        """:meth:`Distribution.bounds`: ``[low, high)`` or ``[low, high]``; a stepped one ``[low, last grid value]`` and its step."""
        if self.step is not None:
            return {**interval(self.low, grid_value(self.low, self.step, self.last_step), True, True), "step": self.step}
        return interval(self.low, self.high, True, high_included)


