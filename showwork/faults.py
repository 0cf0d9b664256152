"""Named fault points: the moments of a search at which the crash tests stop a process.

Each point is one call ``point("name")`` at its place in showwork. Nothing is armed in normal use,
and ``point`` then only compares a module global with None. A test harness (tests/faults/
sitecustomize.py, loaded at start-up by the driver and by every Ray worker it starts) arms one
point by name with :func:`arm`; the action runs each time a process reaches that point. The
harness used to patch private functions and recognise points by their log messages, so rewording a
message or renaming a function silently disarmed a point; names declared here cannot drift:
tests/faults/test_fault_points.py checks that each name in :data:`POINTS` is called exactly once in
showwork and armed by a case of tests/faults/test_driver_kills.py, and :func:`arm` refuses an unknown name.

The points (the process that reaches them in brackets):

``parent-created`` [driver]
    the parent MLflow run was just created; its params, tags and artifacts are not logged, and
    the ledger does not know its id yet.
``meta-write`` [driver]
    ``search.json`` is being replaced: its temp file is written and fsynced, not yet renamed.
``trial-reported`` [worker]
    a trial has just reported an epoch (the trial is running).
``worker-record-write`` [worker; the driver for a worker that died]
    a trial's record is written to its temp file, not yet linked into the ledger.
``child-params-logged`` [driver]
    a running trial's child run was just created with its params and first epochs; its final
    metrics, tags and end are not logged.
``driver-record-write`` [driver]
    the driver is replacing a record to add its MLflow run id: temp file written, not renamed.
``trial-ended`` [driver]
    the driver has just seen a trial end (with one trial at a time: between two trials).
``trial-logged`` [driver]
    a trial was just projected into its child run (during a run, or replayed on resume); the
    ledger's record does not have the run's id yet.
``summary-logged`` [driver]
    every trial is done and the parent's summary metrics are logged; the parent is not ended.
"""

from __future__ import annotations

from collections.abc import Callable

POINTS = frozenset({
    "parent-created", "meta-write", "trial-reported", "worker-record-write", "child-params-logged",
    "driver-record-write", "trial-ended", "trial-logged", "summary-logged",
})

_armed: tuple[str, Callable[[], None]] | None = None


def point(name: str) -> None:
    """Reach the fault point ``name``: run the armed action if it is this point's, else nothing."""
    if _armed is not None and _armed[0] == name:
        _armed[1]()


def arm(name: str, action: Callable[[], None]) -> None:
    """Run ``action`` in this process each time it reaches the point ``name`` (one of :data:`POINTS`)."""
    global _armed
    if name not in POINTS:
        raise LookupError(f"no fault point {name!r}; the points are {', '.join(sorted(POINTS))}")
    _armed = (name, action)


def disarm() -> None:
    """Arm no point again."""
    global _armed
    _armed = None
