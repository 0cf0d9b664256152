"""The errors that the command line turns into one ``showwork: error: ...`` line and an exit status.

``ShowworkError`` is the base, and deliberately not a ``ValueError``: ``showwork``'s command line
catches only it, so that a ``ValueError`` or ``TypeError`` from a bug (in showwork, numpy, ...)
shows its traceback instead of passing for bad input. ``showwork --debug COMMAND`` shows the
traceback of a ``ShowworkError`` too.

- :class:`InputError` (exit 2): bad input from the user (a file, a column, an option value).
- :class:`UnavailableError` (exit 1): an outage; the input was fine and the same command can
  succeed later. Its subclasses: ``TrackingUnavailableError`` (MLflow cannot be reached),
  ``LedgerLockedError`` (another driver runs this search: it holds the ledger's lock until it
  ends), ``LedgerWriteError`` (the ledger's folder refused a write: a full disk, a read-only
  folder) and ``SearchStorageError`` (a search stopped by such a write).
"""

import difflib
import json

__all__ = ["EXIT_BAD_INPUT", "EXIT_UNAVAILABLE", "InputError", "ShowworkError", "UnavailableError"]

EXIT_BAD_INPUT = 2
EXIT_UNAVAILABLE = 1


class ShowworkError(Exception):
    """An error the command line reports in one line and exits with ``exit_code``."""

    exit_code: int = 1


class InputError(ShowworkError):
    """Bad input from the user: a file, a column, an option value.

    The message names the offending file, column, row or option; the command
    line prints it on one line and exits with status 2.
    """

    exit_code = EXIT_BAD_INPUT


class UnavailableError(ShowworkError):
    """An outage (a service down, a full disk, a search busy in another driver): exit 1; retrying later can succeed."""

    exit_code = EXIT_UNAVAILABLE


# --- the wording of messages: one home for every module that reports bad input ---------------


def did_you_mean(word: str, options: "list[str] | tuple[str, ...]") -> str:
    """``"; did you mean 'low'?"`` for the option closest to ``word`` (difflib ratio >= 0.6), else ``""``."""
    close = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def show_value(value: object, as_yaml: bool = False) -> str:
    """A value for a message, shortened so that a 400-digit number or a long text does not flood it.

    Python's ``repr`` (``'relu'``, ``True``; at most 40 characters, a longer one cut with its length),
    or with ``as_yaml`` the YAML/JSON form a search-space file would hold (``"relu"``, ``true``; at
    most 60 characters; text with lone surrogates escaped; ``ascii()`` for what JSON cannot write).
    """
    if not as_yaml:
        text = repr(value)
        return text if len(text) <= 40 else f"{text[:20]}...{text[-8:]} ({len(text)} characters)"
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=True, default=repr)
        if any("\ud800" <= c <= "\udfff" for c in text):  # not printable as UTF-8: escape it
            text = json.dumps(value, ensure_ascii=True, allow_nan=True, default=repr)
    except (TypeError, ValueError, RecursionError):
        text = ascii(value)
    return text if len(text) <= 60 else f"{text[:40]}...{text[-10:]}"
