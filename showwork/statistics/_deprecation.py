"""Renamed keyword arguments: the old name keeps working for one release, with a DeprecationWarning."""

from __future__ import annotations

import functools
import warnings
from typing import Callable, TypeVar

from showwork.statistics.errors import ArgumentError

__all__ = ["renamed_keyword"]

F = TypeVar("F", bound=Callable)


def renamed_keyword(old: str, new: str, removed_in: str) -> Callable[[F], F]:
    """Accept ``old=`` as a deprecated spelling of ``new=`` until version ``removed_in``.

    Passing both is an :class:`ArgumentError`: one of them would be ignored silently.
    """

    def decorate(function: F) -> F:
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            if old in kwargs:
                if new in kwargs:
                    raise ArgumentError(f"give {new}= only ({old}= is its deprecated name).")
                warnings.warn(
                    f"{function.__name__}({old}=...) is deprecated and will be removed in showwork {removed_in};"
                    f" use {new}=... (the name used across the API).",
                    DeprecationWarning,
                    stacklevel=2,
                )
                kwargs[new] = kwargs.pop(old)
            return function(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate
