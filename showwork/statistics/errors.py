"""The statistics' one error class: an argument out of its documented range."""

import numbers

__all__ = ["ArgumentError", "check_probability"]


class ArgumentError(ValueError):
    """An argument outside its documented range (a confidence of 1, scores outside [a, b], a budget below 1, ...).

    A ``ValueError``, as callers of the library expect; its own class so that the command line can
    tell an argument it passed on from the user (one ``showwork: error:`` line, exit 2) from a
    ``ValueError`` raised by a bug in the computation (a traceback).
    """


def check_probability(value: object, name: str) -> float:
    """``value`` as a float if it is a real number strictly between 0 and 1 (a confidence, a quantile, a level).

    The one check of such an argument, with one message, for the library and the command line (which
    passes the option's name, e.g. ``"--confidence"``). Bools, strings and NaN are refused.

    Raises
    ------
    ArgumentError
        ``"{name} must be strictly between 0 and 1 (got {value!r})."``
    """
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and 0.0 < float(value) < 1.0:
        return float(value)
    raise ArgumentError(f"{name} must be strictly between 0 and 1 (got {value!r}).")
