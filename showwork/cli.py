"""The ``showwork`` command line.

Only the standard library is imported at start-up so that ``showwork --help`` answers at once;
each command imports numpy/scipy and the statistics when it runs. Exit statuses: 0 done; 2 bad
input (a file, a column, an option value: one ``showwork: error: ...`` line on stderr); 1 an outage
(MLflow or the ledger's folder unavailable, the search busy in another driver: one line too), a
search in which no trial finished, or a bug (its traceback: ``main`` catches only
:class:`~showwork.errors.ShowworkError`); 130 (143) a search stopped by SIGINT (SIGTERM).
``showwork --debug COMMAND`` adds the traceback to the one line.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import sys
import traceback
import warnings
from typing import Any, Sequence

from showwork import __version__
from showwork.commands import COMMANDS
from showwork.errors import ShowworkError
from showwork.escaping import fitted_to_encoding, terminal_text
from showwork.redaction import RedactedStream, Redactor

EXIT_BAD_INPUT = 2  # = showwork.errors.EXIT_BAD_INPUT (kept here: the parser exits with it before any import)


EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a Ctrl-C


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (``showwork: error: ...``) and exit 2.

    No abbreviated options (``allow_abbrev=False``, for the parser and every command's, which are
    of this class): a shortened or misspelt option is an error, never silently read as another
    (``--cost`` taken for ``--cost-unit``).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        # The message quotes the user's words (an unknown option, a bad value): shown, never acted on.
        self.exit(EXIT_BAD_INPUT, terminal_text(f"showwork: error: {self.prog}: {message} (see '{self.prog} --help')") + "\n")


def run() -> None:
    """The ``showwork`` program (its console script and ``python -m showwork``): :func:`main`, then exit.

    Python's last garbage collection at exit, over what Ray, Ray Tune and MLflow leave loaded, took 3
    to 5 s on a busy 2-core machine after the command had ended (and said so): a search stopped by
    SIGTERM ended 7 to 9 s after the signal, close to the 10 s in which it must end
    (issue 35 item 4). Everything is frozen instead (``gc.freeze``): the exit handlers still run
    (logging, MLflow, Ray), objects are still released as their references go; only the search for
    unreachable cycles, whose memory the exit frees anyway, is skipped.
    """
    status = main()
    gc.freeze()
    sys.exit(status)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; return its exit status.

    A :class:`~showwork.errors.ShowworkError` becomes one ``showwork: error: ...`` line and its
    exit code (2 for bad input, 1 for an outage); with ``--debug``, its traceback comes first.
    Any other exception is a bug: Python's traceback, exit 1. What the command writes to stdout and
    stderr, from any thread, is redacted (:mod:`showwork.redaction`): no value of a secret-looking
    environment variable, no password of a URI; on a stream whose encoding lacks a character (an ASCII
    locale), that character is written in ASCII (:func:`~showwork.escaping.fitted_to_encoding`).
    """
    with fitted_to_encoding(sys.stdout), fitted_to_encoding(sys.stderr), _redacted_output():
        return _main(argv)


@contextlib.contextmanager
def _redacted_output():
    """Within the block, ``sys.stdout`` and ``sys.stderr`` pass their text on redacted."""
    redactor = Redactor.from_environment()
    streams = sys.stdout, sys.stderr
    wrapped = tuple(stream if stream is None else RedactedStream(stream, redactor) for stream in streams)
    sys.stdout, sys.stderr = wrapped
    try:
        yield
    finally:
        for stream in wrapped:
            with contextlib.suppress(AttributeError, OSError, ValueError):  # none, a closed pipe (`| head`), a closed stream
                stream.flush()
        sys.stdout, sys.stderr = streams


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "handler"):
        parser.print_help()
        return EXIT_BAD_INPUT
    try:
        # Each warning is printed when it happens (from any thread: the MLflow writer warns from its
        # own), not held until the command ends: a driver killed mid-search has already said it.
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.showwarning = _show_warning
            return args.handler(args)
    except ShowworkError as error:
        if args.debug:
            traceback.print_exc()
        print(terminal_text(f"showwork: error: {error}"), file=sys.stderr)  # it quotes file names, keys, values
        return error.exit_code
    except BrokenPipeError:  # e.g. `showwork curve ... | head`
        return 0
    except KeyboardInterrupt:  # Ctrl-C outside a search (a search reports its own interrupt)
        if args.debug:
            raise
        print("\nshowwork: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """``warnings.showwarning`` for the command line: one ``showwork: warning: ...`` line on stderr, at once."""
    if issubclass(category, DeprecationWarning):  # third-party deprecations are not the user's business
        return
    try:
        text = " ".join(part.strip() for part in str(message).splitlines() if part.strip())
        print(terminal_text(f"showwork: warning: {text}"), file=sys.stderr, flush=True)
    except (OSError, ValueError):  # stderr closed or gone: a warning must never end the command
        pass


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="showwork",
        description="Hyperparameter search and reporting that shows your work: tuning curves with exact confidence bands.",
    )
    parser.add_argument("--version", action="version", version=f"showwork {__version__}")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error, not only its one line")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", parser_class=_Parser)

    for command in COMMANDS:
        command.add_to(commands)
    return parser
