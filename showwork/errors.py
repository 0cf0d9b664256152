"""Errors that the command line turns into a one-line message and exit code 2."""


class InputError(ValueError):
    """Bad input from the user: a file, a column, an option value.

    The message names the offending file, column, row or option; the command
    line prints it on one line and exits with status 2.
    """
