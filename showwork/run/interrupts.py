"""SIGINT and SIGTERM while a search runs: the first stops the trials, the second stops at once.

showwork, not Ray Tune, handles both signals during a search (Tune's own SIGINT handler, which ends
the run as if it had completed, is disabled in :class:`~showwork.trials.ray_executor.RayExecutor`, and Ray's
SIGTERM handlers are kept out while Ray starts). The first signal during the trials stops them (Tune
stops the running trials, and the driver kills those still running after
:data:`~showwork.constants.INTERRUPT_GRACE_S`; those left without a record run again on resume); a first one while Ray
starts waits until it has started (:meth:`Interrupts.deferred`), then stops at once, so that
Ray is shut down whole; a second one, or a first one at any other moment, stops at once
(``KeyboardInterrupt``); further ones are ignored while Ray shuts down.

An exception raised by a signal handler lands wherever the main thread is. Inside the ``fork`` hooks
of Python's ``logging`` (run each time a process is started), it is swallowed ("Exception ignored")
and leaves logging's lock held, so that the next thread to log waits forever: a SIGTERM while Ray
started its processes left the search hanging with Ray running (issue 23 item 10). There the
handler does not raise: it delivers the signal again a moment later.

A signal to the driver's whole process group (``timeout``, a terminal's Ctrl-C) is the same as one
to the driver alone: the local Ray's processes have a process group of their own
(:func:`~showwork.trials.ray_setup.ray_processes_in_their_own_group`), so the driver shuts them down in order.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Iterator

__all__ = ["Interrupts"]


class Interrupts:
    """SIGINT and SIGTERM while a search runs (see the module docstring), in the main thread only.

    ``graceful`` is True while Tune runs the trials: the first signal then only sets ``signum``
    (the run's stop condition reads it); within :meth:`deferred` it only sets ``signum`` too;
    otherwise, and for the second signal, the handler raises ``KeyboardInterrupt``; after that,
    signals are ignored so that the clean-up (the parent run, ``ray.shutdown``) is not cut short and
    leaves no process behind.
    """

    def __init__(self) -> None:
        self.signum: int | None = None
        self.graceful = False
        self._deferring = False
        self._raised = False
        self._previous: dict[int, object] = {}

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        """Within the block (Ray starting its processes), a first signal is only recorded; the block
        ends with ``KeyboardInterrupt`` if one came. A second signal still stops at once."""
        self._deferring = True
        try:
            yield
        finally:
            self._deferring = False
        if self.signum is not None and not self._raised:
            self._raised = True
            raise KeyboardInterrupt

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
        if _in_logging_lock(frame):  # raising here would be swallowed and leave logging's lock held
            threading.Timer(0.01, os.kill, (os.getpid(), signum)).start()
            return
        if self.signum is None:
            self.signum = signum
            if self.graceful:
                print("\nshowwork: stopping the running trials (press Ctrl-C again to stop at once)",
                      file=sys.stderr, flush=True)
                return
            if self._deferring:
                return
        self._raised = True
        raise KeyboardInterrupt


_LOGGING_LOCK_CODE = tuple(
    function.__code__ for function in (getattr(logging, "_acquireLock", None), getattr(logging, "_releaseLock", None))
    if function is not None
)


def _in_logging_lock(frame) -> bool:
    """Whether ``frame`` runs logging's module lock functions (also its ``fork`` hooks; Python 3.11 and 3.12)."""
    return frame is not None and frame.f_code in _LOGGING_LOCK_CODE
