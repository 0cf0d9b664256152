"""Fault points for the driver-kill tests (tests/faults/test_driver_kills.py); test code, never installed.

Python imports ``sitecustomize`` at start-up from the first folder of ``PYTHONPATH`` that has
one, so a driver started with ``PYTHONPATH=tests/faults`` — and every Ray worker it starts, which
inherits its environment — loads this module. Nothing happens unless ``SHOWWORK_FAULT`` names a
fault point of :mod:`showwork.faults` as ``POINT@N``: the N-th time any process of the search
reaches POINT, that process writes ``reached.json`` (the point and its pid) into
``SHOWWORK_FAULT_DIR`` and stops itself with
SIGSTOP, frozen at exactly that moment (every thread), for the test to SIGKILL the driver. Hits
are counted across processes with one exclusively created file per hit.

The points and where they are: :mod:`showwork.faults` (this harness arms one by its name there).

A second harness, for issue 23 item 10: ``SHOWWORK_SIGNAL_IN_FORK=FUNCTION`` sends this process
SIGTERM from inside Python's ``fork`` hooks, the first time it starts a process from within a
function named FUNCTION (``start_raylet``: while ``ray.init`` starts the raylet), and notes it in
``SHOWWORK_FAULT_DIR/signalled``. Python runs the signal's handler right there, inside the hook, and
swallows whatever it raises: a signal whose handler raises at that moment is lost.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import traceback

_SPEC = os.environ.get("SHOWWORK_FAULT", "")
_FOLDER = os.environ.get("SHOWWORK_FAULT_DIR", "")


def _hit(point: str, nth: int) -> None:
    """Count one hit of ``point``; at the ``nth``, record it and stop this process."""
    n = 1
    while True:  # the number of this hit, unique across processes
        try:
            os.close(os.open(os.path.join(_FOLDER, f"{point}.{n}"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            break
        except FileExistsError:
            n += 1
    if n != nth:
        return
    temp = os.path.join(_FOLDER, "reached.json.tmp")
    with open(temp, "w") as handle:
        stack = [f"{f.filename}:{f.lineno} {f.name}" for f in traceback.extract_stack()[:-1]]
        json.dump({"point": point, "hit": n, "pid": os.getpid(), "argv": sys.argv[:3], "stack": stack[-8:]}, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temp, os.path.join(_FOLDER, "reached.json"))
    # To this thread: a process-directed SIGSTOP may be taken by another thread first, and this one
    # would run on past the point for a moment before the whole process stops.
    signal.pthread_kill(threading.get_ident(), signal.SIGSTOP)


def _install() -> None:
    from showwork import faults

    point, _, nth = _SPEC.partition("@")
    faults.arm(point, lambda: _hit(point, int(nth or 1)))  # an unknown point fails here, at start-up


if _SPEC and _FOLDER:
    _install()


def _signal_in_fork(function: str) -> None:
    sent = []

    def before_fork() -> None:
        if sent or not any(frame.name == function for frame in traceback.extract_stack()):
            return
        sent.append(True)
        with open(os.path.join(_FOLDER, "signalled"), "w") as note:
            note.write(f"{os.getpid()}\n")
        os.kill(os.getpid(), signal.SIGTERM)

    os.register_at_fork(before=before_fork)


if os.environ.get("SHOWWORK_SIGNAL_IN_FORK") and _FOLDER:
    _signal_in_fork(os.environ["SHOWWORK_SIGNAL_IN_FORK"])
