"""How the store writes values as strict JSON: non-finite floats as strings, numpy scalars as plain values.

JSON has no NaN or infinity: a non-finite float is written as one of the strings ``"NaN"``,
``"Infinity"`` or ``"-Infinity"`` (:func:`encode_nonfinite`) and read back as the float
(:func:`decode_nonfinite`); a bare ``NaN`` in a file is refused (:func:`reject_constant`). Which
fields of a trial record may hold them: :mod:`showwork.store.records`.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["NotJsonError", "decode_nonfinite", "encode_nonfinite", "reject_constant", "to_plain"]

_NONFINITE_TO_TEXT = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}
_TEXT_TO_NONFINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def encode_nonfinite(value: Any) -> Any:
    """Replace non-finite floats anywhere in a JSON-like value by their string spellings."""
    if isinstance(value, float) and not math.isfinite(value):
        return _NONFINITE_TO_TEXT[repr(value)]
    if isinstance(value, dict):
        return {key: encode_nonfinite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode_nonfinite(item) for item in value]
    return value


def decode_nonfinite(value: Any) -> Any:
    """Inverse of :func:`encode_nonfinite`: the strings ``NaN``, ``Infinity``, ``-Infinity`` become floats."""
    if isinstance(value, str) and value in _TEXT_TO_NONFINITE:
        return _TEXT_TO_NONFINITE[value]
    if isinstance(value, dict):
        return {key: decode_nonfinite(item) for key, item in value.items()}
    if isinstance(value, list):
        return [decode_nonfinite(item) for item in value]
    return value


class NotJsonError(ValueError):
    """A value JSON cannot hold; the message names where it is (``metrics.nested.obj``)."""


def to_plain(value: Any, where: str) -> Any:
    """Convert numpy scalars and tuples to plain JSON types; refuse (:class:`NotJsonError`) anything JSON cannot hold."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise NotJsonError(f"{where} has a key {key!r} that is not a string")
            out[key] = to_plain(item, f"{where}.{key}")
        return out
    if isinstance(value, (list, tuple)):
        return [to_plain(item, f"{where}[{i}]") for i, item in enumerate(value)]
    item = getattr(value, "item", None)  # numpy scalars (np.float32(0.5), np.int64(3), np.bool_)
    if callable(item) and getattr(value, "shape", None) == ():
        return to_plain(item(), where)
    raise NotJsonError(f"{where} holds {type(value).__name__} {str(value)[:60]!r}, which JSON cannot store")


def reject_constant(name: str) -> None:
    """The ``parse_constant`` of :func:`json.loads` for the store's files: a bare ``NaN`` or ``Infinity`` is refused."""
    raise ValueError(f"bare {name} is not JSON; non-finite floats are written as strings")
