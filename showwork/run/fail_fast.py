"""Fail fast: a run of a search whose first trials all fail with the same error stops there.

A search whose every trial fails the same way (the data folder missing, the hub unreachable, a
package not installed) would otherwise go on through all its trials, each failing after its own
set-up. The rule (:func:`fail_fast_trip`) looks at the first ``fail_fast_after`` trials to end in a
run of the search (this driver's: a resume starts counting again, so that the records of an earlier
run never stop a resume that fixed the cause) and trips when each of them failed with the same
:func:`error_kind`. A finished or timed-out trial among them, or two error kinds, and it never trips in
that run: a search that has shown it can train keeps its failures as results (``failure_policy``).

When it trips, the trials still running are stopped as on Ctrl-C (left without a record, run again on
resume), no further trial starts, and the search ends with :class:`SearchFailedFast` (exit 1: an
outage of the user's environment, not bad input), which names the error and a trial whose record holds
the full error. Every record is kept; ``showwork resume NAME`` continues the search.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from showwork.errors import UnavailableError
from showwork.store import TrialRecord

__all__ = ["FailFast", "FailFastTrip", "SearchFailedFast", "error_kind", "fail_fast_trip"]

_NUMBER = re.compile(r"0[xX][0-9a-fA-F]+|\b(?=[0-9a-fA-F]*\d)[0-9a-fA-F]{8,}\b|\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
"""A number in an error's first line: a hexadecimal literal, a hexadecimal id of 8 or more characters (an
object's or a Ray actor's), or decimal digits with an optional fraction and exponent."""


def error_kind(record: TrialRecord) -> str | None:
    """The error kind of a failed trial: the first line of its recorded error, each number in it replaced by ``#``.

    The recorded error (:attr:`showwork.store.TrialRecord.error`) begins with the exception's type and
    message (``DataUnavailable: data directory /data does not exist``), or says how the trial failed
    without one (``WorkerDied: the worker process died``, a missing score). Numbers are left out so that
    the same error of two trials with other values, paths or ids (``lr 0.3 diverged``, ``lr 0.07
    diverged``) is one kind; the message's words still tell two errors of one exception type apart.

    Returns
    -------
    str or None
        None for a trial that did not fail (``finished``, or ``timeout``: a trial over its time limit
        has a result of its own, the limit the search set).
    """
    if record.status != "failed":
        return None
    return _NUMBER.sub("#", _first_line(record))


@dataclass(frozen=True)
class FailFastTrip:
    """What stopped a search: its first ``count`` trials to end all failed with the error ``kind``
    (:func:`error_kind`); ``index`` is the lowest index among them and ``message`` its error's first line."""

    kind: str
    count: int
    index: int
    message: str


def fail_fast_trip(first_ended: Sequence[TrialRecord], limit: int) -> FailFastTrip | None:
    """Whether the first trials to end in a run stop it (see the module docstring).

    Parameters
    ----------
    first_ended : sequence of TrialRecord
        The records of the run's trials in the order they ended (at least its first ``limit``).
    limit : int
        ``fail_fast_after``, >= 0; 0 never stops.

    Returns
    -------
    FailFastTrip or None
        The trip when the first ``limit`` records all failed with one error kind; None otherwise,
        and while fewer than ``limit`` have ended.
    """
    first = list(first_ended[:limit]) if limit > 0 else []
    if not first or len(first) < limit:
        return None
    kinds = {error_kind(record) for record in first}
    if len(kinds) != 1 or None in kinds:
        return None
    named = min(first, key=lambda record: record.index)
    return FailFastTrip(kind=kinds.pop(), count=limit, index=named.index, message=_first_line(named))


class FailFast:
    """The rule of :func:`fail_fast_trip` as a run's trials end: :meth:`ended` with each record, in order;
    ``tripped`` is set once the rule trips (the run's stop condition reads it)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.tripped: FailFastTrip | None = None
        self._first: list[TrialRecord] = []

    def ended(self, record: TrialRecord) -> None:
        if self.tripped is not None or len(self._first) >= self.limit:  # decided: only the first `limit` count
            return
        self._first.append(record)
        self.tripped = fail_fast_trip(self._first, self.limit)


class SearchFailedFast(UnavailableError):
    """The search stopped because its first trials all failed with the same error (:mod:`showwork.run.fail_fast`).

    An outage of the environment the trials run in (exit 1); every record is kept and a resume
    continues the search once the cause is fixed. ``trip`` says what stopped it, ``record_path`` is the
    named trial's record (its field ``error`` holds the full error).
    """

    def __init__(self, name: str, trip: FailFastTrip, record_path: Path) -> None:
        message = trip.message if len(trip.message) <= 200 else trip.message[:200] + "..."
        super().__init__(
            f"search {name}: its first {trip.count} trials to end all failed with the same error, so it stopped:"
            f" {message} (trial {trip.index}; its full error: {record_path}, field \"error\"); the trials that were"
            " running were stopped and run again on resume (fail_fast_after: 0 turns this check off)"
        )
        self.name, self.trip, self.record_path = name, trip, Path(record_path)


def _first_line(record: TrialRecord) -> str:
    lines = (record.error or "").strip().splitlines()
    return lines[0] if lines else f"{record.status} without a reason"
