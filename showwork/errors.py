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
