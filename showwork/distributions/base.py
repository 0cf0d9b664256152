"""What every distribution shares: the interface (:class:`Distribution`), the registry by YAML name
(:data:`DISTRIBUTIONS`), the checks of their arguments and the error those raise (:class:`DistributionError`).

Numbers must be finite real numbers (booleans are refused); bounds of integer distributions must lie
within ±2**53, so that every integer in range is exactly representable as a float and in JSON.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, fields
from typing import TYPE_CHECKING, Any, ClassVar, Union

from showwork.errors import InputError, show_value

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = [
    "DISTRIBUTIONS", "MAX_EXACT_INT", "Distribution", "DistributionError", "Scalar", "check_order", "clamp",
    "exact_integer", "finite_number", "interval", "json_scalar",
]

MAX_EXACT_INT = 2**53  # integer bounds beyond this are not exactly representable as floats

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


def finite_number(field: str, value: Any) -> float:
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


def exact_integer(field: str, value: Any) -> int:
    """Return ``value`` as an int within ±2**53; integral floats (``256.0``, ``1e7``) are accepted."""
    value = _plain(value)
    number = finite_number(field, value)
    if isinstance(value, float) and not number.is_integer():
        raise DistributionError(field, f"must be an integer ({field}={show_value(value)})")
    integer = int(value) if isinstance(value, int) else int(number)
    if abs(integer) > MAX_EXACT_INT:
        raise DistributionError(field, f"must lie within ±2**53 ({field}={show_value(value)})")
    return integer


def check_order(low: float, high: float, shown_low: Any, shown_high: Any) -> None:
    """Refuse ``low >= high``; the message repeats the values as given."""
    if not low < high:
        hint = "; use `constant` for a fixed value" if low == high else ""
        raise DistributionError("low", f"must be smaller than `high` (low={show_value(shown_low)}, high={show_value(shown_high)}){hint}")


def json_scalar(field: str, value: Any) -> Scalar:
    """Return ``value`` if it is a JSON scalar (text, finite number, boolean, null)."""
    value = _plain(value)
    if isinstance(value, str) and any("\ud800" <= c <= "\udfff" for c in value):
        raise DistributionError(field, f"must be Unicode text, without lone surrogates ({field}={ascii(value)})")
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, (int, float)):
        finite_number(field, value)  # finite, fits a float
        return value
    raise DistributionError(field, f"must be text, a number, true/false or null, not {_kind(value)} ({field}={show_value(value)})")


def clamp(x: float, low: float, high: float) -> float:
    """``x`` within ``[low, high]``."""
    return min(max(x, low), high)


# --- the interface and the registry -------------------------------------------------------

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


def interval(low: float | int | None, high: float | int | None, low_in: bool, high_in: bool) -> dict[str, Any]:
    """The :meth:`Distribution.bounds` of a numeric support: its ends (None: unbounded) and whether each is included."""
    return {"low": low, "high": high, "low_included": low_in, "high_included": high_in}


def _interval_text(b: Mapping[str, Any]) -> str:
    low = "-inf" if b["low"] is None else repr(b["low"])
    high = "inf" if b["high"] is None else repr(b["high"])
    return f"{'[' if b['low_included'] else '('}{low}, {high}{']' if b['high_included'] else ')'}"


