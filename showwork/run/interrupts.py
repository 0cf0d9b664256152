"""SIGINT and SIGTERM while a search runs: the first stops the trials, the second stops at once.

showwork, not Ray Tune, handles both signals during a search (Tune's own SIGINT handler, which ends
the run as if it had completed, is disabled in :class:`~showwork.execution.RayExecutor`). The first
signal during the trials stops them (Tune stops the running trials; those left without a record run
again on resume); a second one, or a first one at any other moment, stops at once
(``KeyboardInterrupt``); further ones are ignored while Ray shuts down.
"""

from __future__ import annotations

import signal
import sys
import threading

__all__ = ["Interrupts"]


class Interrupts:
    """SIGINT and SIGTERM while a search runs (see the module docstring), in the main thread only.

    ``graceful`` is True while Tune runs the trials: the first signal then only sets ``signum``
    (the run's stop condition reads it); otherwise, and for the second signal, the handler raises
    ``KeyboardInterrupt``; after that, signals are ignored so that the clean-up (the parent run,
    ``ray.shutdown``) is not cut short and leaves no process behind.
    """

    def __init__(self) -> None:
        self.signum: int | None = None
        self.graceful = False
        self._raised = False
        self._previous: dict[int, object] = {}

    def install(self) -> None:
        """Take both signals (again: ``ray.init`` installs its own SIGTERM handler)."""
        if threading.current_thread() is not threading.main_thread():
            return
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous = signal.signal(signum, self._handle)
            self._previous.setdefault(signum, previous)

    def __enter__(self) -> "Interrupts":
        self.install()
        return self

    def __exit__(self, *exc) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)

    def _handle(self, signum: int, frame) -> None:
        if self._raised:
            return
        if self.signum is None:
            self.signum = signum
            if self.graceful:
                print("\nshowwork: stopping the running trials (press Ctrl-C again to stop at once)",
                      file=sys.stderr, flush=True)
                return
        self._raised = True
        raise KeyboardInterrupt
