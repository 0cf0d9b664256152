"""The statistics' one error class: an argument out of its documented range."""

__all__ = ["ArgumentError"]


class ArgumentError(ValueError):
    """An argument outside its documented range (a confidence of 1, scores outside [a, b], a budget below 1, ...).

    A ``ValueError``, as callers of the library expect; its own class so that the command line can
    tell an argument it passed on from the user (one ``showwork: error:`` line, exit 2) from a
    ``ValueError`` raised by a bug in the computation (a traceback).
    """
