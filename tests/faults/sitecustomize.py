"""Fault points for the driver-kill tests (tests/test_driver_kills.py); test code, never installed.

Python imports ``sitecustomize`` at start-up from the first folder of ``PYTHONPATH`` that has
one, so a driver started with ``PYTHONPATH=tests/faults`` — and every Ray worker it starts, which
inherits its environment — loads this module. Nothing happens unless ``SHOWWORK_FAULT`` names a
point as ``POINT@N``: the N-th time any process of the search reaches POINT, that process writes
``reached.json`` (the point and its pid) into ``SHOWWORK_FAULT_DIR`` and stops itself with
SIGSTOP, frozen at exactly that moment (every thread), for the test to SIGKILL the driver. Hits
are counted across processes with one exclusively created file per hit.

The points (the process that reaches them in brackets):

``parent-created`` [driver]
    the parent MLflow run was just created; its params, tags and artifacts are not logged, and
    the ledger does not know its id yet.
``meta-write`` [driver]
    ``search.json`` is being replaced: its temp file is written and fsynced, not yet renamed.
``trial-reported`` [worker]
    a trial has just reported an epoch (the trial is running).
``worker-record-write`` [worker]
    a trial's record is written to its temp file, not yet linked into the ledger.
``child-params-logged`` [driver]
    a child run got its params; its metrics, tags and end are not logged.
``driver-record-write`` [driver]
    the driver is replacing a record to add its MLflow run id: temp file written, not renamed.
``trial-ended`` [driver]
    the driver has just seen a trial end (with one trial at a time: between two trials).
``trial-logged`` [driver]
    a trial was just projected into its child run (during a run, or replayed on resume).
``summary-logged`` [driver]
    every trial is done and the parent's summary metrics are logged; the parent is not ended.
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


def _hit(point: str) -> None:
    """Count one hit of ``point``; at the chosen one, record it and stop this process."""
    name, _, nth = _SPEC.partition("@")
    if name != point:
        return
    n = 1
    while True:  # the number of this hit, unique across processes
        try:
            os.close(os.open(os.path.join(_FOLDER, f"{point}.{n}"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            break
        except FileExistsError:
            n += 1
    if n != int(nth or 1):
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


def _after(function, point, when=lambda *args, **kwargs: True):
    """``function``, reaching ``point`` after each call for which ``when(*args, **kwargs)``."""

    def wrapped(*args, **kwargs):
        result = function(*args, **kwargs)
        if when(*args, **kwargs):
            _hit(point)
        return result

    wrapped.__wrapped__ = function
    return wrapped


def _install() -> None:
    from showwork import ledger, mlflow_client, search, trainable, tracking

    def trial_stem(directory, stem, text):
        return stem[:6].isdigit()

    def in_worker() -> bool:  # decided when a point is reached: sys.argv is not final at start-up
        return "default_worker" in (sys.argv[0] if sys.argv else "")

    # _write_temp is the first half of every durable ledger write (temp file, then rename or link).
    ledger._write_temp = _after(
        _after(
            _after(ledger._write_temp, "meta-write", lambda directory, stem, text: stem == "search.json"),
            "driver-record-write", lambda *args: trial_stem(*args) and not in_worker(),
        ),
        "worker-record-write", lambda *args: trial_stem(*args) and in_worker(),
    )
    trainable.Reporter.__call__ = _after(trainable.Reporter.__call__, "trial-reported")
    search._Progress.ended = _after(search._Progress.ended, "trial-ended")
    tracking.Tracker.log_trial = _after(tracking.Tracker.log_trial, "trial-logged")

    call = mlflow_client.RetryingClient.call

    def traced_call(self, what, function):
        result = call(self, what, function)
        if what == "creating the parent run":
            _hit("parent-created")
        elif what == "logging the summary metrics":
            _hit("summary-logged")
        return result

    mlflow_client.RetryingClient.call = traced_call
    log_batch = mlflow_client.RetryingClient.log_batch
    # A child's projection logs its params alone first (a parent logs params and tags together).
    mlflow_client.RetryingClient.log_batch = _after(
        log_batch, "child-params-logged",
        lambda self, run_id, metrics=(), params=(), tags=(): bool(params) and not tags and not metrics,
    )


if _SPEC and _FOLDER:
    _install()
