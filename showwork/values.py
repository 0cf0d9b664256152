"""Plain values (numbers, text, nested mappings): the checks and conversions several modules share.

Import-light (standard library only), so the command line, the ledger, the statistics and the
model families can all use it.
"""

from __future__ import annotations

import json
import numbers
from collections.abc import Mapping
from typing import Any

__all__ = ["NameClashError", "flatten", "is_integer", "scalar_text", "value_text"]


def is_integer(value: object) -> bool:
    """Whether ``value`` is an integer: a Python ``int`` or a numpy integer, but not a ``bool``.

    ``bool`` is a subclass of ``int`` in Python, so ``isinstance(True, int)`` holds; an integer
    setting given ``true`` is a mistake to report, not the number 1.

    Examples
    --------
    >>> is_integer(3), is_integer(True), is_integer(3.0)
    (True, False, False)
    """
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


class NameClashError(ValueError):
    """Two paths of a nested mapping give the same dotted name (``{"a.b": 1, "a": {"b": 2}}``); ``name`` is it."""

    def __init__(self, name: str) -> None:
        super().__init__(f"{name!r} is given twice")
        self.name = name


def flatten(nested: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested mappings become dotted names, in order (empty mappings vanish).

    Raises
    ------
    ValueError
        A key that is not text; :class:`NameClashError` (a ``ValueError``) when two paths give the
        same dotted name.

    Examples
    --------
    >>> flatten({"optimizer": {"lr": 0.1}, "epochs": 3})
    {'optimizer.lr': 0.1, 'epochs': 3}
    """
    out: dict[str, Any] = {}
    for key, value in nested.items():
        if not isinstance(key, str):
            raise ValueError(f"keys must be text (got {key!r})")
        name = f"{prefix}{key}"
        items = flatten(value, name + ".") if isinstance(value, Mapping) else {name: value}
        for sub, leaf in items.items():
            if sub in out:
                raise NameClashError(sub)
            out[sub] = leaf
    return out


def scalar_text(value: object) -> str:
    """A value as it would be written in YAML or JSON: ``0.001``, ``64``, ``'relu'``, ``true``, ``null``.

    Examples
    --------
    >>> scalar_text(None), scalar_text(False), scalar_text(64), scalar_text("relu")
    ('null', 'false', '64', "'relu'")
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)


def value_text(value: object) -> str:
    """A hyperparameter or data value for a table cell or a sentence: floats to 6 significant digits, text as it is,
    the rest as JSON (``true``, ``null``, ``[1, 2]``).

    Examples
    --------
    >>> value_text(0.00123456789), value_text("relu"), value_text(True), value_text(None), value_text(64)
    ('0.00123457', 'relu', 'true', 'null', '64')
    """
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, str):
        return value
    return json.dumps(value)
