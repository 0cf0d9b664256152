"""The driver's own clock on every running trial (issue 23 item 4): it ends a trial that its worker did not end.

A trial's own watchdog and its worker (:class:`showwork.trials.worker.TrialSupervisor`) end it at its
limits. A worker can be unable to: stopped by SIGSTOP, hung in the family's import, or stuck
before it reported anything. So the driver keeps a deadline per running trial, on its own clock:

- from Ray Tune's start of the trial (``on_trial_start``) until the worker reports that the
  trainable was called (:data:`~showwork.trials.execution.TRIAL_START_KEY`): ``setup_timeout_s`` plus
  :data:`~showwork.trials.execution.TIMEOUT_GRACE_S`;
- from that report: ``timeout_s`` plus the same grace (no deadline without ``timeout_s``).

At a deadline it records the trial as ``timeout`` (kind :data:`~showwork.constants.FAMILY_IMPORT_TIMEOUT`
for the set-up), unless a record is there already (the first record written stands: a trial is
recorded once), and kills the worker: SIGKILL to the worker's and the trial's pids where they run on
this node (the worker reported them), and ``ray.kill`` of its actor in any case (a stopped process
cannot answer Ray, which kills it a few seconds later). The trial's own process dies with its worker.
Ray Tune sees a failed trial; if it runs it again, the new worker finds the record and returns at once.

When a signal stops the search (:meth:`TrialDeadlines.end_all_after`), every trial still running a moment
later is killed the same way, without a record: it runs again on resume.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from showwork.constants import FAMILY_IMPORT_TIMEOUT
from showwork.store import Ledger, LedgerConflictError, LedgerWriteError, TrialRecord, utc_now_iso
from showwork.trials.execution import REPORT_KEY, TIMEOUT_GRACE_S, TRIAL_START_KEY, WORKER_KEY, SearchContext

__all__ = ["TrialDeadlines"]


@dataclass
class _Running:
    """What the driver knows of a running trial."""

    since: float  # the start of its current phase, on the driver's monotonic clock
    started_at: str  # ISO-8601: Tune's start of the trial, then the trainable's (from the worker)
    actor: Any = None  # Ray Tune's actor of the trial
    training: bool = False  # the worker reported that the trainable was called
    worker: dict = field(default_factory=dict)  # the worker's pid, node and its trial's pid (execution.WORKER_KEY)
    rows: list = field(default_factory=list)  # its epochs so far


class TrialDeadlines:
    """Ray Tune's trial hooks that keep each running trial's deadline, and a thread that acts on them.

    Parameters
    ----------
    ledger : Ledger
        The ledger of the trials (a search's, or its re-runs').
    context : SearchContext
        The trials' limits (``timeout_s``, ``setup_timeout_s``), family and configurations.
    grace_s : float
        How long after a limit the driver acts (:data:`~showwork.trials.execution.TIMEOUT_GRACE_S`).
    clock : callable
        The driver's monotonic clock (tests pass their own).
    """

    def __init__(self, ledger: Ledger, context: SearchContext, grace_s: float | None = None,
                 clock: Callable[[], float] = time.monotonic, tick_s: float = 0.5) -> None:
        self.ledger, self.context, self.clock, self.tick_s = ledger, context, clock, tick_s
        self.grace_s = TIMEOUT_GRACE_S if grace_s is None else grace_s
        self.storage_failure: str | None = None
        self.ended: list[int] = []  # the trials the driver ended, in order
        self._warned_unisolated = False
        self._running: dict[int, _Running] = {}
        self._end_all_at: float | None = None  # the search was stopped: when every trial still running is killed
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __getstate__(self) -> dict:  # Tune pickles callbacks with its experiment state: no thread, lock or actor
        state = dict(self.__dict__)
        state.update(_running={}, _end_all_at=None, _lock=None, _stop=None, _thread=None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock, self._stop = threading.Lock(), threading.Event()

    # -- Tune's hooks

    def on_trial_start(self, iteration, trials, trial, **info) -> None:
        actor = getattr(getattr(trial, "temporary_state", None), "ray_actor", None)
        with self._lock:
            self._running[int(trial.config["index"])] = _Running(since=self.clock(), started_at=utc_now_iso(), actor=actor)
        self._watch()

    def on_trial_result(self, iteration, trials, trial, result, **info) -> None:
        worker, started, rows = result.get(WORKER_KEY), result.get(TRIAL_START_KEY), result.get(REPORT_KEY)
        with self._lock:
            running = self._running.get(int(trial.config["index"]))
            if running is None:
                return
            if isinstance(worker, dict):
                running.worker = dict(worker)
            if isinstance(started, str) and not running.training:
                running.training, running.since, running.started_at = True, self.clock(), started
            if isinstance(rows, list):
                running.rows.extend(row for row in rows if isinstance(row, dict))
        if isinstance(worker, dict) and worker.get("isolated") is False:
            self._warn_unisolated()

    def on_trial_complete(self, iteration, trials, trial, **info) -> None:
        with self._lock:
            self._running.pop(int(trial.config["index"]), None)

    def on_trial_error(self, iteration, trials, trial, **info) -> None:
        self.on_trial_complete(iteration, trials, trial, **info)

    # -- the driver's side

    def deadline(self, running: _Running) -> float | None:
        """When the driver ends ``running`` (its clock), or None (a trainable without ``timeout_s``)."""
        limit = self.context.timeout_s if running.training else self.context.setup_timeout_s
        return None if limit is None else running.since + limit + self.grace_s

    def end_all_after(self, grace_s: float) -> None:
        """The search was stopped (a signal): kill every trial still running ``grace_s`` from now, recording nothing.

        Ray Tune asks each running trial's actor to stop, which it does at the trial's next report, and kills
        those still running 10 s later; a trial in the middle of a long epoch made the search take that long to
        end. Its worker is killed here as at a deadline; the trial has no record and runs again on resume.
        Called again, the first time stands."""
        with self._lock:
            if self._end_all_at is None:
                self._end_all_at = self.clock() + grace_s

    def check(self) -> list[int]:
        """End every running trial whose deadline has passed; return their indices. Once the search was stopped
        (:meth:`end_all_after`) and its grace has passed, kill every running trial without a record."""
        ended = []
        with self._lock:  # held while it kills: Tune cannot give the worker to another trial meanwhile
            now = self.clock()
            if self._end_all_at is not None and now >= self._end_all_at:
                for running in self._running.values():
                    self._kill(running)
                self._running.clear()
                return ended
            for index, running in list(self._running.items()):
                deadline = self.deadline(running)
                if deadline is not None and now >= deadline:
                    del self._running[index]
                    self._record(index, running, now)
                    self._kill(running)
                    ended.append(index)
        self.ended.extend(ended)
        return ended

    def close(self) -> None:
        """Stop watching (the trials have ended)."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None

    def _watch(self) -> None:
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="showwork-deadlines", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.tick_s):
            try:
                self.check()
            except Exception as error:  # noqa: BLE001 - the watch must go on; Tune's own failure handling still works
                warnings.warn(f"the driver could not end a trial at its deadline ({type(error).__name__}: {error})")

    def _record(self, index: int, running: _Running, now: float) -> None:
        """The driver's record of a trial it ends at its deadline, unless the trial has one already."""
        if self.ledger.read(index) is not None:
            return
        try:
            self.ledger.write(self._timeout_record(index, running, now))
        except LedgerConflictError:  # the worker recorded it meanwhile: the first record stands
            pass
        except LedgerWriteError as error:
            if self.storage_failure is None:
                self.storage_failure = str(error)

    def _timeout_record(self, index: int, running: _Running, now: float) -> TrialRecord:
        context, grace = self.context, self.grace_s
        if running.training:
            error = (f"timed out after {context.timeout_s:g} s\nthe worker did not end the trial at its timeout"
                     f" (stopped, or hung), and the driver killed it {grace:g} s later")
        else:
            error = (f"{FAMILY_IMPORT_TIMEOUT}: the worker's set-up (importing the family {context.family!r}) did not"
                     f" end within setup_timeout_s = {context.setup_timeout_s:g} s; the driver killed the worker"
                     f" {grace:g} s later")
        params, seed = context.trial(index)
        pid = running.worker.get("pid")  # the worker's, as in the records workers write
        return TrialRecord(
            index=index, status="timeout", params=params, seed=seed, score=None, history=list(running.rows),
            runtime_s=max(0.0, now - running.since), error=error, node_id=running.worker.get("node_id"),
            pid=pid if isinstance(pid, int) else None, started_at=running.started_at, finished_at=utc_now_iso(),
            attempts=max(1, self.ledger.attempts_started(index)),
        )

    def _kill(self, running: _Running) -> None:
        """SIGKILL the trial's worker (and its trial's process) where they run on this node; ``ray.kill`` its actor."""
        worker = running.worker
        if worker.get("node_id") is not None and worker.get("node_id") == _this_node():
            for pid in (worker.get("trial_pid"), worker.get("pid")):
                if isinstance(pid, int) and pid > 1 and pid != os.getpid():
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
        if running.actor is not None:
            import ray  # lazy: Ray loads when a search starts it, not when its input is checked

            with contextlib.suppress(Exception):  # already dead, or Ray shutting down
                ray.kill(running.actor)

    def _warn_unisolated(self) -> None:
        if not self._warned_unisolated:
            self._warned_unisolated = True
            warnings.warn(
                f"the family {self.context.family!r} initialised CUDA when the worker imported it, so its trials run in"
                " the worker itself, not in processes of their own: what one trial changes in its process (environment"
                " variables, limits, folder, sys.path, signal handlers, random state) the next trial of that worker sees."
                " Create CUDA tensors and models inside train(), not when the module is imported."
            )


def _this_node() -> str | None:
    """The driver's Ray node id (None where Ray does not say)."""
    try:
        import ray  # lazy: Ray loads when a search starts it, not when its input is checked

        return ray.get_runtime_context().get_node_id()
    except Exception:  # noqa: BLE001 - not connected
        return None
