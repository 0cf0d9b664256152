"""Distributions of a search space: what each hyperparameter is drawn from.

One small frozen dataclass per distribution. The constructor validates its arguments and the
message repeats the offending values; equality, hashing and a readable repr come from the
dataclass. Every distribution has

- ``sample(rng)``: one draw from a :class:`numpy.random.Generator`, as a plain Python value
  (``float``, ``int``, ``str``, ``bool`` or ``None``; never a numpy scalar);
- ``to_dict()`` and :func:`distribution_from_dict`: an exact JSON round trip, in the same form a
  search-space YAML file uses (``{"distribution": "uniform", "low": 0.0, "high": 1.0}``);
- ``describe()``: a one-line summary for reports, whose support is worded by ``bounds_text()``,
  the words of the space table (:meth:`showwork.space.SearchSpace.describe`, with ``kind_text()``);
- ``bounds()``: the support for the reproducibility checklist (Dodge et al. 2019: "the bounds
  for each hyperparameter"), as a JSON-ready dict.

A subclass with a ``kind`` registers itself under it in :data:`DISTRIBUTIONS`
(``Distribution.__init_subclass__``), and its dict form is its dataclass fields
(``arguments()``: those without a default required, the others optional and left out of
``to_dict()`` while they hold their default), as Optuna's ``distributions.py`` derives
serialisation from the class: a new distribution is one class, not a class and a table.

Continuous distributions are sampled by inverse CDF from a single ``rng.random()`` draw, so a
draw depends only on numpy's stable 53-bit uniform doubles. Numbers must be finite real numbers
(booleans are refused); bounds of integer distributions must lie within ±2**53, so that every
integer in range is exactly representable as a float and in JSON.

This module imports only the standard library; scipy is imported lazily, and only to sample a
normal distribution truncated more than ~37 standard deviations into one tail.
"""

from __future__ import annotations

import bisect
import decimal
import itertools
import json
import math
import sys
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, fields
from statistics import NormalDist
from typing import TYPE_CHECKING, Any, ClassVar, Union

from showwork.errors import InputError, did_you_mean, show_value
from showwork.values import scalar_text

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = [
    "DISTRIBUTIONS",
    "Categorical",
    "Constant",
    "Distribution",
    "DistributionError",
    "Condition",
    "DISTRIBUTION_ARGUMENTS",
    "IntNormal",
    "IntTruncatedExponential",
    "IntUniform",
    "LogIntUniform",
    "LogUniform",
    "Normal",
    "TruncatedExponential",
    "Uniform",
    "distribution_from_dict",
]

MAX_EXACT_INT = 2**53  # integer bounds beyond this are not exactly representable as floats
MAX_TRUNCATION_STDS = 1e6  # a truncated normal's interval may start at most this many std from its mean
WEIGHT_TOLERANCE = 1e-9  # categorical weights must sum to 1 within this

Scalar = Union[str, int, float, bool, None]


class DistributionError(InputError):
    """An invalid distribution: a bad argument, a missing or unknown key, an unknown name.

    Attributes
    ----------
    field : str or None
        The argument at fault (``"low"``, ``"weights"``, ...), or None when no single one is.
    reason : str
        The message without the field name, e.g. ``"must be positive for a log-uniform
        distribution (low=0)"``; ``str(error)`` is ``"`low` " + reason`` when a field is known.
    """

    def __init__(self, field: str | None, reason: str):
        self.field = field
        self.reason = reason
        super().__init__(f"`{field}` {reason}" if field else reason)


# --- validation helpers ------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """A numpy scalar (from a Python caller) as the equivalent Python value; anything else unchanged."""
    if type(value).__module__ == "numpy" and hasattr(value, "item") and getattr(value, "ndim", None) == 0:
        return value.item()
    return value


def _kind(value: Any) -> str:
    """``"text"``, ``"a list"``, ``"a mapping"`` or the type's name, for messages."""
    if isinstance(value, str):
        return "text"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, Mapping):
        return "a mapping"
    return type(value).__name__


def _number(field: str, value: Any) -> float:
    """Return ``value`` as a finite float; refuse booleans, text and numbers that overflow."""
    value = _plain(value)
    if isinstance(value, bool):
        raise DistributionError(field, f"must be a number, not a boolean ({field}={show_value(value)})")
    if not isinstance(value, (int, float)):
        raise DistributionError(field, f"must be a number, not {_kind(value)} ({field}={show_value(value)})")
    try:
        number = float(value)
    except OverflowError:
        raise DistributionError(field, f"is too large to be a float ({field}={show_value(value)})") from None
    if not math.isfinite(number):
        raise DistributionError(field, f"must be finite ({field}={show_value(value)})")
    return number


def _integer(field: str, value: Any) -> int:
    """Return ``value`` as an int within ±2**53; integral floats (``256.0``, ``1e7``) are accepted."""
    value = _plain(value)
    number = _number(field, value)
    if isinstance(value, float) and not number.is_integer():
        raise DistributionError(field, f"must be an integer ({field}={show_value(value)})")
    integer = int(value) if isinstance(value, int) else int(number)
    if abs(integer) > MAX_EXACT_INT:
        raise DistributionError(field, f"must lie within ±2**53 ({field}={show_value(value)})")
    return integer


def _check_order(low: float, high: float, shown_low: Any, shown_high: Any) -> None:
    """Refuse ``low >= high``; the message repeats the values as given."""
    if not low < high:
        hint = "; use `constant` for a fixed value" if low == high else ""
        raise DistributionError("low", f"must be smaller than `high` (low={show_value(shown_low)}, high={show_value(shown_high)}){hint}")


def _json_scalar(field: str, value: Any) -> Scalar:
    """Return ``value`` if it is a JSON scalar (text, finite number, boolean, null)."""
    value = _plain(value)
    if isinstance(value, str) and any("\ud800" <= c <= "\udfff" for c in value):
        raise DistributionError(field, f"must be Unicode text, without lone surrogates ({field}={ascii(value)})")
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, (int, float)):
        _number(field, value)  # finite, fits a float
        return value
    raise DistributionError(field, f"must be text, a number, true/false or null, not {_kind(value)} ({field}={show_value(value)})")


def _clamp(x: float, low: float, high: float) -> float:
    return min(max(x, low), high)


# --- steps: values on the grid ``origin + step * j`` ---------------------------------------------
#
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


def _grid_value(origin: float | int, step: float | int, j: int) -> float | int:
    """``origin + step * j``: exact for ints; for floats, the float nearest the decimal value."""
    if isinstance(origin, int) and isinstance(step, int):
        return origin + step * j
    return float(_EXACT.add(_decimal(origin), _EXACT.multiply(_decimal(step), decimal.Decimal(j))))


def _steps_below(origin: float | int, step: float | int, high: float | int) -> int:
    """The largest ``j`` with ``origin + step * j <= high`` (exactly, in decimal)."""
    quotient = _EXACT.divide(_EXACT.subtract(_decimal(high), _decimal(origin)), _decimal(step))
    return int(quotient.to_integral_value(rounding=decimal.ROUND_FLOOR))


def _check_step(field_value: Any, integer: bool) -> float | int:
    """A positive number (an integer >= 1 for the integer forms)."""
    step = _integer("step", field_value) if integer else _number("step", field_value)
    if step <= 0:
        raise DistributionError("step", f"must be positive (step={show_value(field_value)})")
    return step


def _grid_size(low: float | int, high: float | int, step: float | int, shown_step: Any) -> int:
    """``J`` of the grid ``low, low + step, ..., low + step * J <= high``; at least 1 (two values)."""
    last = _steps_below(low, step, high)
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


def _nearest_step(x: float, origin: float | int, step: float | int, first: int | None, last: int | None) -> int:
    """The ``j`` of the grid point nearest ``x`` (halves round up), clipped to ``[first, last]`` where given."""
    j = math.floor((x - origin) / step + 0.5)
    if first is not None:
        j = max(j, first)
    if last is not None:
        j = min(j, last)
    return j


def _step_text(step: float | int | None) -> str:
    return "" if step is None else f" step {step!r}"


# --- the distributions ---------------------------------------------------------------------

# Every distribution by its YAML name, in the order the classes are defined; filled in by
# ``Distribution.__init_subclass__``.
DISTRIBUTIONS: dict[str, type[Distribution]] = {}


@dataclass(frozen=True)
class Distribution:
    """Base class: the interface every distribution implements."""

    kind: ClassVar[str] = ""

    def sample(self, rng: np.random.Generator) -> Scalar:  # pragma: no cover - abstract
        """Draw one value from ``rng``, as a plain Python value."""
        raise NotImplementedError

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Register every distribution with a ``kind`` under that name (the YAML ``distribution:`` value)."""
        super().__init_subclass__(**kwargs)
        if cls.kind and DISTRIBUTIONS.get(cls.kind, cls) is not cls:
            raise TypeError(f"two distributions are named {cls.kind!r}: {DISTRIBUTIONS[cls.kind].__name__} and {cls.__name__}")
        if cls.kind:
            DISTRIBUTIONS[cls.kind] = cls

    @classmethod
    def arguments(cls) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The keys of the dict form besides ``distribution``: ``(required, optional)``, from the dataclass fields.

        A field without a default is required; one with a default is optional and left out of
        :meth:`to_dict` when it holds its default (``step`` 1 of an integer form, ``weights`` None).
        """
        given = fields(cls)
        return (
            tuple(f.name for f in given if f.default is MISSING),
            tuple(f.name for f in given if f.default is not MISSING),
        )

    def to_dict(self) -> dict[str, Any]:
        """The distribution as a JSON-ready dict; :func:`distribution_from_dict` inverts it exactly.

        Derived from the dataclass fields (the idea of Optuna's ``distributions.py``): every field
        in declaration order, tuples as lists, an optional field left out while it holds its default.
        """
        out: dict[str, Any] = {"distribution": self.kind}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.default is not MISSING and value == f.default and type(value) is type(f.default):
                continue
            out[f.name] = list(value) if isinstance(value, tuple) else value
        return out

    def describe(self) -> str:  # pragma: no cover - abstract
        """A one-line human summary, e.g. ``"log-uniform on [1e-05, 0.001)"``; its support is :meth:`bounds_text`."""
        raise NotImplementedError

    def kind_text(self) -> str:
        """The YAML name with the arguments that are not bounds, e.g. ``"normal (mean 0.5, std 0.1)"``."""
        return self.kind

    def bounds_text(self) -> str:
        """The support in words, e.g. ``"[1e-05, 0.001)"``: ``[`` includes, ``)`` excludes; integers as
        ``{16, ..., 64}``; ``step s`` after a stepped one, ``multiples of s`` for a stepped normal
        without ``low``. :class:`Categorical` and :class:`Constant` give their values.
        """
        bounds = self.bounds()
        low, high, step = bounds["low"], bounds["high"], bounds.get("step")
        if isinstance(low, int) and isinstance(high, int):
            return f"{{{low}, ..., {high}}}" + ("" if step in (None, 1) else f" step {step!r}")
        interval = _interval_text(bounds)
        if step is None:
            return interval
        if low is None:  # a stepped normal without low: multiples of step
            return f"{interval} multiples of {step!r}"
        return f"{interval} step {step!r}"

    def bounds(self) -> dict[str, Any]:  # pragma: no cover - abstract
        """The support, for the reproducibility checklist.

        Returns
        -------
        dict
            For numeric distributions ``{"low", "high", "low_included", "high_included"}``
            (``None`` and not included for an unbounded side); for :class:`Categorical`
            ``{"choices": [...]}``; for :class:`Constant` ``{"value": v}``.
        """
        raise NotImplementedError


def _interval(low: float | int | None, high: float | int | None, low_in: bool, high_in: bool) -> dict[str, Any]:
    return {"low": low, "high": high, "low_included": low_in, "high_included": high_in}


def _interval_text(b: Mapping[str, Any]) -> str:
    low = "-inf" if b["low"] is None else repr(b["low"])
    high = "inf" if b["high"] is None else repr(b["high"])
    return f"{'[' if b['low_included'] else '('}{low}, {high}{']' if b['high_included'] else ')'}"


class _SteppedRange:
    """A distribution with ``low``, ``high`` and an optional ``step``: its grid is ``low + step * j``, j = 0 .. J."""

    @property
    def last_step(self) -> int:
        """``J``: the largest value is ``low + step * J`` (stepped distributions only)."""
        assert self.step is not None
        return _steps_below(self.low, self.step, self.high)

    def _grid_draw(self, rng: np.random.Generator) -> float:
        """A stepped draw: this class's continuous draw on ``[low - step/2, last grid value + step/2)``, to the nearest grid value."""
        assert self.step is not None
        last = self.last_step
        cells = type(self)(self.low - self.step / 2, _grid_value(self.low, self.step, last) + self.step / 2)
        return _grid_value(self.low, self.step, _nearest_step(cells.sample(rng), self.low, self.step, 0, last))

    def _range_bounds(self, high_included: bool) -> dict[str, Any]:
        """:meth:`Distribution.bounds`: ``[low, high)`` or ``[low, high]``; a stepped one ``[low, last grid value]`` and its step."""
        if self.step is not None:
            return {**_interval(self.low, _grid_value(self.low, self.step, self.last_step), True, True), "step": self.step}
        return _interval(self.low, self.high, True, high_included)


@dataclass(frozen=True)
class Uniform(_SteppedRange, Distribution):
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
        low, high = _number("low", self.low), _number("high", self.high)
        _check_order(low, high, self.low, self.high)
        if not math.isfinite(high - low):
            raise DistributionError("high", f"minus `low` must be finite (low={show_value(self.low)}, high={show_value(self.high)})")
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)
        if self.step is not None:
            step = _check_step(self.step, integer=False)
            _grid_size(low, high, step, self.step)
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
class LogUniform(_SteppedRange, Distribution):
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
        low, high = _number("low", self.low), _number("high", self.high)
        if low <= 0:
            raise DistributionError("low", f"must be positive for a log-uniform distribution (low={show_value(self.low)})")
        _check_order(low, high, self.low, self.high)
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)
        if self.step is not None:
            step = _check_step(self.step, integer=False)
            if not step < 2 * low:
                raise DistributionError(
                    "step",
                    f"must be smaller than twice `low` for a stepped log-uniform distribution (low={show_value(self.low)},"
                    f" step={show_value(self.step)}): the cell of `low`, [low - step/2, low + step/2), must lie above 0",
                )
            _grid_size(low, high, step, self.step)
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
        low, high = _integer("low", self.low), _integer("high", self.high)
        _check_order(low, high, self.low, self.high)
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)

    def sample(self, rng: np.random.Generator) -> int:
        return int(rng.integers(self.low, self.high, endpoint=True))

    def describe(self) -> str:
        return f"integers uniform on {self.bounds_text()} (both ends included)"

    def bounds(self) -> dict[str, Any]:
        return _interval(self.low, self.high, True, True)


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
        low, high = _integer("low", self.low), _integer("high", self.high)
        if low < 1:
            raise DistributionError("low", f"must be at least 1 for a log-integer-uniform distribution (low={show_value(self.low)})")
        _check_order(low, high, self.low, self.high)
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
        return int(_clamp(math.floor(s + 0.5), self.low, self.high))

    def describe(self) -> str:
        return f"integers log-uniform on {self.bounds_text()} (both ends included)"

    def bounds(self) -> dict[str, Any]:
        return _interval(self.low, self.high, True, True)


@dataclass(frozen=True)
class TruncatedExponential(_SteppedRange, Distribution):
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
        read = _integer if self.integer else _number
        low, high, scale = read("low", self.low), read("high", self.high), _number("scale", self.scale)
        _check_order(low, high, self.low, self.high)
        if not math.isfinite(high - low):
            raise DistributionError("high", f"minus `low` must be finite (low={show_value(self.low)}, high={show_value(self.high)})")
        if scale <= 0:
            raise DistributionError("scale", f"must be positive (scale={show_value(self.scale)})")
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)
        object.__setattr__(self, "scale", scale)
        if self.step is not None:
            step = _check_step(self.step, self.integer)
            _grid_size(low, high, step, self.step)
            object.__setattr__(self, "step", step)

    @property
    def b(self) -> float:
        """Scipy's shape parameter ``(high - low) / scale`` (may be ``inf`` for a tiny scale)."""
        return (self.high - self.low) / self.scale

    def sample(self, rng: np.random.Generator) -> float | int:
        if self.step is None:
            return _truncated_exponential_draw(float(rng.random()), self.low, self.high, self.scale)
        last = self.last_step
        top = _grid_value(self.low, self.step, last)
        x = _truncated_exponential_draw(float(rng.random()), self.low - self.step / 2, top + self.step / 2, self.scale)
        return _grid_value(self.low, self.step, _nearest_step(x, self.low, self.step, 0, last))

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
        return _clamp(low + u * (high - low), low, high)
    return _clamp(low - scale * math.log1p(u * math.expm1(-b)), low, high)


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


@dataclass(frozen=True)
class Categorical(Distribution):
    """A choice among a finite list of values, uniformly or with given probabilities.

    Parameters
    ----------
    choices : sequence of JSON scalars
        Text, finite numbers, booleans or null; non-empty and unique (``1`` and ``1.0`` count as
        the same choice; ``1`` and ``true`` do not). Stored as a tuple.
    weights : sequence of floats, optional
        The probability of each choice, in the same order: finite, non-negative, summing to 1
        within 1e-9 (``math.fsum``). Weights are probabilities and are NOT normalised, so a
        typo such as ``[0.5, 0.4, 0.2]`` is an error rather than a silently different search.
        None (the default) means every choice is equally likely.

    Notes
    -----
    Sampling draws ``u`` uniform on [0, 1) and returns the first choice whose cumulative weight
    (divided by the exact total) exceeds ``u``; a choice of weight 0 is never returned.
    """

    kind: ClassVar[str] = "categorical"
    choices: tuple[Scalar, ...]
    weights: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        choices = self.choices
        if isinstance(choices, (str, bytes)) or not isinstance(choices, (list, tuple)):
            raise DistributionError("choices", f"must be a list of values (choices={show_value(choices)})")
        if not choices:
            raise DistributionError("choices", "must not be empty (choices=[])")
        seen: dict[Any, int] = {}
        plain = []
        for i, choice in enumerate(choices):
            choice = _json_scalar("choices", choice)
            plain.append(choice)
            key = (type(choice) is bool, choice)  # 1 and 1.0 are equal; True and 1 are not
            if key in seen:
                raise DistributionError(
                    "choices", f"must be unique ({scalar_text(choice)} appears at positions {seen[key]} and {i})"
                )
            seen[key] = i
        object.__setattr__(self, "choices", tuple(plain))
        if self.weights is None:
            return
        weights = self.weights
        if isinstance(weights, (str, bytes)) or not isinstance(weights, (list, tuple)):
            raise DistributionError("weights", f"must be a list of probabilities (weights={show_value(weights)})")
        if len(weights) != len(choices):
            raise DistributionError(
                "weights", f"must have one entry per choice ({len(weights)} weights for {len(choices)} choices)"
            )
        values = tuple(_number("weights", w) for w in weights)
        negative = [w for w in values if w < 0]
        if negative:
            raise DistributionError("weights", f"must be non-negative (weights={list(values)!r})")
        total = math.fsum(values)
        if abs(total - 1.0) > WEIGHT_TOLERANCE:
            raise DistributionError(
                "weights", f"must sum to 1 (weights={list(values)!r} sum to {total!r}); they are probabilities"
            )
        object.__setattr__(self, "weights", values)

    def probabilities(self) -> tuple[float, ...]:
        """The probability of each choice, in order (the weights, or ``1 / len(choices)`` each)."""
        if self.weights is None:
            return (1.0 / len(self.choices),) * len(self.choices)
        return self.weights

    def sample(self, rng: np.random.Generator) -> Scalar:
        if self.weights is None:
            return self.choices[int(rng.integers(len(self.choices)))]
        cumulative = list(itertools.accumulate(self.weights))
        total = cumulative[-1]
        cdf = [c / total for c in cumulative]  # the last entry is exactly 1.0
        index = bisect.bisect_right(cdf, float(rng.random()))
        return self.choices[min(index, len(self.choices) - 1)]

    def kind_text(self) -> str:
        return "categorical (weighted)" if self.weights is not None else self.kind

    def bounds_text(self) -> str:
        return self.choices_text()

    def choices_text(self) -> str:
        """``"16, 32, 64"``, or with weights ``"16 (p=0.25), 32 (p=0.5), 64 (p=0.25)"``."""
        if self.weights is None:
            return ", ".join(scalar_text(c) for c in self.choices)
        return ", ".join(f"{scalar_text(c)} (p={w!r})" for c, w in zip(self.choices, self.weights))

    def describe(self) -> str:
        how = "weighted choice" if self.weights is not None else "uniform choice"
        return f"{how} among {self.bounds_text()}"

    def bounds(self) -> dict[str, Any]:
        return {"choices": list(self.choices)}


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

        u = _clamp(u, 2.0**-54, 1.0 - 2.0**-53)  # ppf(0) is ``a``: -inf for a half-line (probability 2**-53)
        return _clamp(float(truncnorm.ppf(u, a, b)), a, b)
    p = _clamp(p_low + u * mass, math.ulp(0.0), 1.0 - 2.0**-53)
    return _clamp(_STANDARD_NORMAL.inv_cdf(p), a, b)


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
        read = _integer if self.integer else _number
        mean, std = _number("mean", self.mean), _number("std", self.std)
        if std <= 0:
            raise DistributionError("std", f"must be positive (std={show_value(self.std)})")
        if not math.isfinite(abs(mean) + 40.0 * std):
            raise DistributionError("std", f"is too large: draws would overflow (mean={show_value(self.mean)}, std={show_value(self.std)})")
        low = None if self.low is None else read("low", self.low)
        high = None if self.high is None else read("high", self.high)
        if low is not None and high is not None:
            _check_order(low, high, self.low, self.high)
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
            step = _check_step(self.step, self.integer)
            if low is not None and high is not None:
                _grid_size(low, high, step, self.step)
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
        last = None if self.high is None else _steps_below(self.origin, self.step, self.high)
        return first, last

    def _cells(self) -> Normal:
        """The continuous normal whose draws are rounded to the grid: truncated to the widened grid range."""
        assert self.step is not None
        first, last = self._grid_ends()
        low = None if first is None else self.origin - self.step / 2
        high = None if last is None else _grid_value(self.origin, self.step, last) + self.step / 2
        return Normal(self.mean, self.std, low, high)

    def sample(self, rng: np.random.Generator) -> float | int:
        if self.step is not None:
            first, last = self._grid_ends()
            x = self._cells().sample(rng)
            return _grid_value(self.origin, self.step, _nearest_step(x, self.origin, self.step, first, last))
        a = -math.inf if self.low is None else (self.low - self.mean) / self.std
        b = math.inf if self.high is None else (self.high - self.mean) / self.std
        z = _truncated_std_normal_ppf(float(rng.random()), a, b)
        x = self.mean + self.std * z
        return _clamp(x, -math.inf if self.low is None else self.low, math.inf if self.high is None else self.high)

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
            top = None if last is None else _grid_value(self.origin, self.step, last)
            return {**_interval(self.low, top, self.low is not None, top is not None), "step": self.step}
        return _interval(self.low, self.high, self.low is not None, self.high is not None)


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




@dataclass(frozen=True)
class Constant(Distribution):
    """A fixed value: every trial gets ``value``.

    Parameters
    ----------
    value : JSON scalar
        Text, a finite number, a boolean or null.
    """

    kind: ClassVar[str] = "constant"
    value: Scalar

    def __post_init__(self) -> None:
        object.__setattr__(self, "value", _json_scalar("value", self.value))

    def sample(self, rng: np.random.Generator) -> Scalar:
        return self.value

    def describe(self) -> str:
        return f"constant {self.bounds_text()}"

    def bounds_text(self) -> str:
        return json.dumps(self.value)

    def bounds(self) -> dict[str, Any]:
        return {"value": self.value}


# Every argument any distribution takes, and ``when`` (see :class:`Condition`): the keys that mark a
# mapping in a search space as a distribution (``low``...), even when its ``distribution`` key is misspelt.
DISTRIBUTION_ARGUMENTS: tuple[str, ...] = tuple(
    dict.fromkeys(key for cls in DISTRIBUTIONS.values() for group in cls.arguments() for key in group)
) + ("when",)


def distribution_from_dict(d: Mapping[str, Any]) -> Distribution:
    """Build a distribution from its dict form (the YAML/JSON form): the inverse of ``to_dict``.

    Parameters
    ----------
    d : mapping
        ``{"distribution": NAME, **arguments}``; NAME is one of ``uniform``, ``loguniform``,
        ``int_uniform``, ``log_int_uniform``, ``truncated_exponential``,
        ``int_truncated_exponential``, ``categorical``, ``normal``, ``int_normal``, ``constant``. ``choices`` and ``weights`` may be lists or tuples.

    Returns
    -------
    Distribution
        ``distribution_from_dict(json.loads(json.dumps(x.to_dict()))) == x`` for every ``x``.

    Raises
    ------
    DistributionError
        Unknown distribution name or key (with a "did you mean" suggestion), a missing key, or an
        invalid argument; ``field`` names the key at fault when there is one.

    Examples
    --------
    >>> distribution_from_dict({"distribution": "int_uniform", "low": 16, "high": 64})
    IntUniform(low=16, high=64)
    """
    if not isinstance(d, Mapping):
        raise DistributionError(None, f"a distribution must be a mapping with a `distribution` key, not {show_value(d)}")
    if "distribution" not in d:
        raise DistributionError(None, f"missing the `distribution` key (one of {', '.join(DISTRIBUTIONS)})")
    name = d["distribution"]
    if not isinstance(name, str) or name not in DISTRIBUTIONS:
        hint = did_you_mean(name, tuple(DISTRIBUTIONS)) if isinstance(name, str) else ""
        raise DistributionError(
            "distribution", f"is unknown ({show_value(name)}); choose one of {', '.join(DISTRIBUTIONS)}{hint}"
        )
    required, optional = DISTRIBUTIONS[name].arguments()
    for key in d:
        if key != "distribution" and key not in required + optional:
            allowed = required + optional
            raise DistributionError(
                key if isinstance(key, str) else None,
                f"is not an argument of a {name} distribution (its keys are {', '.join(allowed)})"
                + did_you_mean(str(key), allowed),
            )
    missing = [key for key in required if key not in d]
    if missing:
        raise DistributionError(
            None, f"a {name} distribution needs {', '.join(f'`{k}`' for k in missing)} (it takes {', '.join(required + optional)})"
        )
    arguments = {key: v for key, v in d.items() if key != "distribution"}
    return DISTRIBUTIONS[name](**arguments)


# --- conditions: when a parameter is drawn ---------------------------------------------------------


def _same_value(a: Scalar, b: Scalar) -> bool:
    """Equality as categorical choices count it: ``1`` equals ``1.0``; ``true`` equals neither ``1`` nor ``"true"``."""
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    return (type(a) is bool) == (type(b) is bool) and a == b


@dataclass(frozen=True)
class Condition:
    """When a conditional parameter is drawn: every test holds (``and``).

    The YAML form is a parameter's ``when`` key: ``when: {optimizer: sgd}`` (equality) or
    ``when: {optimizer: {in: [sgd, adam]}}`` (membership), several names meaning all of them.
    Names are dotted parameter names; :class:`~showwork.space.SearchSpace` checks that
    each is an earlier categorical or constant parameter and that each value can occur.

    Attributes
    ----------
    tests : tuple of (name, values)
        The parameter and the values it must take one of, in the order written; ``in`` is
        remembered so that ``to_dict`` gives back the form written.
    """

    tests: tuple[tuple[str, tuple[Scalar, ...], bool], ...]  # (name, values, written with `in`)

    def holds(self, config: Mapping[str, Any]) -> bool:
        """True when every named parameter is in ``config`` with one of its values (an absent one fails)."""
        return all(name in config and any(_same_value(config[name], v) for v in values) for name, values, _ in self.tests)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _, _ in self.tests)

    def to_dict(self) -> dict[str, Any]:
        return {name: {"in": list(values)} if listed else values[0] for name, values, listed in self.tests}

    def describe(self) -> str:
        """``optimizer = 'sgd' and layers in {1, 2}``."""
        return " and ".join(
            f"{name} in {{{', '.join(scalar_text(v) for v in values)}}}" if listed else f"{name} = {scalar_text(values[0])}"
            for name, values, listed in self.tests
        )

    @classmethod
    def from_dict(cls, d: Any) -> Condition:
        """Parse a ``when`` mapping; :class:`DistributionError` (field ``when``, or the name at fault) otherwise."""
        if not isinstance(d, Mapping) or not d:
            raise DistributionError(
                "when", f"must map earlier parameters to a value or {{in: [values]}}, e.g. {{optimizer: sgd}} (got {show_value(d)})"
            )
        tests = []
        for name, wanted in d.items():
            if not isinstance(name, str) or not name:
                raise DistributionError("when", f"names parameters with text (got {show_value(name)})")
            if isinstance(wanted, Mapping):
                if set(wanted) != {"in"}:
                    keys = ", ".join(str(k) for k in wanted)
                    hint = (
                        "; `in` is the only key there" if "in" in wanted
                        else did_you_mean(keys, ("in",)) or f"; name a nested parameter by its dotted name ({name}.{keys.split(', ')[0]}: ...)"
                    )
                    raise DistributionError(name, f"must be a value or {{in: [values]}} (got a mapping with {keys}){hint}")
                values = wanted["in"]
                if isinstance(values, (str, bytes)) or not isinstance(values, (list, tuple)) or not values:
                    raise DistributionError(name, f"`in` must be a non-empty list of values (got {show_value(values)})")
                tests.append((name, tuple(_json_scalar(name, v) for v in values), True))
            elif isinstance(wanted, (list, tuple)):
                raise DistributionError(name, f"is a list; for one of several values write {{in: {show_value(list(wanted))}}}")
            else:
                tests.append((name, (_json_scalar(name, wanted),), False))
        return cls(tuple(tests))
