"""The Ray worker's side of a trial: import the family once (:func:`prepare_worker`), fork a process for
each trial, the next one while the current trial runs (:class:`TrialProcesses`), and supervise it
(:class:`TrialSupervisor`, :mod:`showwork.isolation`), and the Ray Tune function trainable that does
all three (:func:`ray_trial`). What the trial's process runs is :func:`showwork.trials.execution.run_trial`."""

from __future__ import annotations

import contextlib
import encodings.ascii  # noqa: F401 - a trial's record is encoded with it: imported once here, not by each trial's process
import functools
import os
import sys
import time
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from showwork.constants import FAMILY_IMPORT_TIMEOUT
from showwork.environment import worker_software
from showwork.isolation import FORK_SAFE_CUDA_CHECK, ChildProcess, cuda_initialised, exit_description, fork_ahead
from showwork.store import Ledger, LedgerConflictError, LedgerWriteError, TrialRecord, utc_now_iso
from showwork.trials.execution import (
    STORAGE_FAILURE_KEY,
    TRIAL_KILL_MARGIN_S,
    EpochReports,
    SearchContext,
    TrialClock,
    TrialStopped,
    WorkerPlace,
    end_process,
    family_function,
    note_family_modules,
    note_worker_modules,
    run_trial,
    search_ledger,
    stoppable,
)


def ray_trial(config: dict, context: SearchContext) -> None:
    """The Ray Tune function trainable: one trial per index, idempotent across retries.

    The worker imports the family (once: a warm worker has it) and runs the trial in a child process
    forked for it, while the trial before ran where it could (:class:`TrialProcesses`,
    :class:`TrialSupervisor`, :mod:`showwork.isolation`); where the family's import initialised CUDA
    here, in this process, as before (unisolated: the driver warns).
    """
    from ray import tune  # lazy: Ray loads when a search starts it, not when its input is checked

    index = int(config["index"])
    if Ledger(Path(context.storage_dir), context.name).read(index) is not None:
        return
    entered = TrialClock.start()
    place = WorkerPlace.here(context)
    isolated = prepare_worker(context, place)
    # Reports go under one key so the driver can tell them from Ray's own result fields.
    reports = EpochReports(tune.report, worker={"pid": os.getpid(), "node_id": place.node_id, "isolated": isolated})
    try:
        if isolated:
            failure = TrialSupervisor(context, index, place, reports, entered, processes=_TRIAL_PROCESSES).run()
        else:
            run_trial(context, index, sink=reports.add, on_timeout=end_process, place=place, entered=entered,
                      on_training=reports.start)
            failure = None
        # The epochs not sent yet are not sent: the record holds the trial's whole history, and the driver reads it
        # (one round trip to the driver less per trial; its MLflow run gets them with its end).
    except TrialStopped:  # the search stopped it (Ctrl-C): unrecorded, so a resume runs it again
        return
    except LedgerWriteError as error:
        failure = str(error)
    if failure is not None:
        # The storage failed, not the trial: told to the driver, which stops the search (no retry
        # into the same full disk); the trial stays unrecorded, so a resume runs it again.
        tune.report({STORAGE_FAILURE_KEY: failure})


_PREPARED: tuple[SearchContext, WorkerPlace, bool] | None = None
"""The search and place this worker last prepared for, its family imported, and whether it can fork its trials."""


def prepare_worker(context: SearchContext, place: WorkerPlace) -> bool:
    """The worker's set-up, before it forks a trial: import the family (a warm worker has it; a failing import
    is left to the trial's process, which records why), count the modules it imported as the family's, and
    fill the caches every trial's process reads (the installed distributions, which a cold process takes a
    few hundred milliseconds to list). Returns whether a forked process can run the trial: False where CUDA
    is initialised in this process. Done once per search and place: the worker runs no trial code that
    could change it (a failed import is tried again at the next trial)."""
    global _PREPARED
    if _PREPARED is not None and _PREPARED[:2] == (context, place):
        return _PREPARED[2]
    if context.gpus_per_trial > 0:
        os.environ.setdefault(*FORK_SAFE_CUDA_CHECK)  # torch.cuda.is_available() at import: without initialising CUDA
    imported = _import_family(context, place) is not None
    _fill_worker_caches()
    search_ledger(context).moved()  # checked once here: each trial's process inherits what it found
    note_worker_modules()
    isolated = not cuda_initialised()
    _PREPARED = (context, place, isolated) if imported else None
    return isolated


def _import_family(context: SearchContext, place: WorkerPlace) -> Any:
    """The family's train function (None where it fails: the trial's ``run_trial`` imports it again and records
    why), the modules its import added counted as the family's in this process."""
    before = set(sys.modules.copy())
    try:
        return family_function(context, place)
    except BaseException:  # noqa: BLE001 - the trial's own process imports it again and records the failure
        return None
    finally:
        note_family_modules(context, set(sys.modules.copy()) - before)


@functools.lru_cache(maxsize=1)
def _fill_worker_caches() -> None:
    """Once per worker process: fill what every trial's process forked from it would otherwise compute again."""
    worker_software(())  # the installed distributions and their top-level modules, cached by environment


def _trial_in_child(send: Any, context: SearchContext, place: WorkerPlace, *trial: Any) -> None:
    """What a trial's own process runs (:class:`~showwork.isolation.ChildProcess`): :func:`run_trial` of
    ``trial``, ``(index, entered)``, whose start, epochs and storage failure go to the worker as
    ``("training", started_at)``, ``("row", row)`` and ``("storage", message)``, and its end as ``("ended",
    recorded)``. Its own watchdog ends it at ``timeout_s``. Forked ahead (:class:`TrialProcesses`: no
    ``trial``), it looks the family's function up first (the worker imported it), then waits for its trial.

    The trainable is called only once the driver has the start (the worker answers ``"training"`` when its
    report returned, which is after the driver's hooks took it): from then on the driver counts ``timeout_s``,
    so a worker stopped right after the trainable's call is ended at ``timeout_s`` and its grace, not at
    ``setup_timeout_s`` (the driver would not have heard that the trainable was called)."""
    train = None
    if not trial:
        train = _import_family(context, place)
        try:
            trial = send.arguments()
        except EOFError:  # the worker killed it unused, or ended
            return
    index, entered = trial
    record = None
    try:
        record = run_trial(context, index, sink=lambda row, started_at: send(("row", row)), on_timeout=end_process,
                           place=place, entered=entered, on_training=lambda started_at: send.ask(("training", started_at)),
                           interruptible=False, train=train)
    except LedgerWriteError as error:
        send(("storage", str(error)))
    send(("ended", record is not None))  # the worker goes on now, while this process's memory is torn down


@dataclass(frozen=True)
class _ForkedFor:
    """What a process forked ahead started from: the search and place it was forked for, and the worker's
    environment and modules then. It may run a trial only where they are still the worker's."""

    context: SearchContext
    place: WorkerPlace
    environment: dict[str, str]
    modules: object  # the worker's loaded modules (note_worker_modules): the same object while unchanged

    @classmethod
    def now(cls, context: SearchContext, place: WorkerPlace) -> _ForkedFor:
        return cls(context, place, dict(os.environ), note_worker_modules())

    def still(self, context: SearchContext, place: WorkerPlace) -> bool:
        return (self.context == context and self.place == place and self.environment == os.environ
                and note_worker_modules() is self.modules)


class TrialProcesses:
    """Where a worker's trials get their processes (issue 35 item 9).

    Forking a process for a trial, and that process's first steps in the pages it shares with the worker,
    took about 10 ms between two trials. With ``ahead``, the next trial's process is forked while the current
    trial runs (:meth:`fork_next`, once its trainable is called), by a thread that lasts as long as the worker
    (:func:`~showwork.isolation.fork_ahead`), and looks the family's function up; the next trial starts it
    (:meth:`process_for`). It is used only where the worker is as it was when it forked it (the same search
    and place, environment and modules: :class:`_ForkedFor`), and alive; else it is killed and the trial gets
    a process forked for it. Either way the trial's process starts from the worker's state, never from a
    trial's. Without ``ahead``, each trial's process is forked when the trial starts.
    """

    def __init__(self, ahead: bool = True) -> None:
        self.ahead = ahead
        self._next: tuple[Future, _ForkedFor] | None = None  # the process forked ahead, and what the worker was then

    def process_for(self, context: SearchContext, place: WorkerPlace, index: int, entered: TrialClock) -> ChildProcess:
        """A process running trial ``index`` (forked ahead where it can be)."""
        spare, self._next = self._next, None
        if spare is not None:
            forked, forked_for = spare
            try:
                child = forked.result()
            except OSError:  # the fork failed (no memory): fork now, or fail as a fork now would
                child = None
            if child is not None:
                if forked_for.still(context, place) and child.alive():
                    child.start(index, entered)
                    return child
                child.kill()
        note_worker_modules()  # what the trial's process starts with (nothing to do when the worker imported nothing since)
        return ChildProcess(_trial_in_child, context, place, index, entered)

    def fork_next(self, context: SearchContext, place: WorkerPlace) -> None:
        """Fork the next trial's process in the background (with ``ahead``, unless one is waiting)."""
        if self.ahead and self._next is None:
            forked_for = _ForkedFor.now(context, place)  # before the fork: the worker's modules, noted for the child
            self._next = (fork_ahead(_trial_in_child, context, place), forked_for)

    def discard(self) -> None:
        """Kill the process forked ahead, if any."""
        spare, self._next = self._next, None
        if spare is not None:
            with contextlib.suppress(OSError):
                spare[0].result().kill()


_TRIAL_PROCESSES = TrialProcesses()
"""This worker's trial processes, the next one forked ahead (:func:`ray_trial`)."""


class TrialProcessDied(RuntimeError):
    """A trial's process ended without a record (``os._exit``, a crash, the OOM killer) and may run again:
    raised in the worker, so that Ray Tune runs the trial again (``max_retries``) in a fresh worker."""


class TrialSupervisor:
    """The worker's side of a trial run in a process of its own (:mod:`showwork.isolation`).

    It forks the trial's process from this warm worker, relays its start and epochs to the driver
    (``reports``), and ends it at its deadlines, which the trial's own watchdog cannot keep when its
    process is stopped or holds its GIL in C code:

    - set-up: ``setup_timeout_s`` after ``entered`` (the worker's import of the family included), the
      trainable must have been called, else the trial is recorded as ``timeout`` of kind
      :data:`~showwork.constants.FAMILY_IMPORT_TIMEOUT`;
    - the trainable: ``timeout_s`` after its start the watchdog in the trial's process records the
      timeout; :data:`TRIAL_KILL_MARGIN_S` later the worker kills the process and records it.

    Either way the worker stays: the next trial does not import the family again. A process that
    dies without a record is run again by Ray Tune (:class:`TrialProcessDied`), up to ``max_retries``;
    the last death is recorded here, with how the process ended.
    """

    def __init__(self, context: SearchContext, index: int, place: WorkerPlace, reports: EpochReports,
                 entered: TrialClock | None = None, processes: TrialProcesses | None = None) -> None:
        self.context, self.index, self.place, self.reports = context, index, place, reports
        self.entered = entered or TrialClock.start()  # when the worker took the trial (its set-up began)
        self.processes = processes or TrialProcesses(ahead=False)  # the worker's (ray_trial): forked ahead
        self.ledger = Ledger(Path(context.storage_dir), context.name)
        self.rows: list[dict] = []
        self.started_at: str | None = None  # the trainable's start, from the trial's process
        self.training_since: float | None = None  # ... on this worker's clock
        self.storage_failure: str | None = None
        self.recorded = False  # the trial's process said that the ledger has its record

    def run(self) -> str | None:
        """Run the trial to its record; return the storage failure that left it unrecorded, if any.

        Raises
        ------
        TrialProcessDied
            The trial's process died without a record, and ``max_retries`` allows another run.
        TrialStopped
            Ray Tune stopped the trial (its process is killed; nothing is recorded).
        """
        child = self.processes.process_for(self.context, self.place, self.index, self.entered)
        self.reports.worker["trial_pid"] = child.pid
        try:
            how_it_ended = self._relay(child)
        except BaseException:
            child.kill()
            raise
        if how_it_ended == "expired":
            return self.storage_failure
        if how_it_ended == "said" and (self.storage_failure is not None or self.recorded):
            child.wait_later()  # its exit need not hold up the next trial
            return self.storage_failure
        status = child.wait()
        if self.ledger.read(self.index) is not None or self.storage_failure is not None:
            return self.storage_failure
        how = f"the trial's process (pid {child.pid}) {exit_description(status)} without writing a record"
        if self.ledger.attempts_started(self.index) <= self.context.max_retries:
            raise TrialProcessDied(how)
        self._write(self._died(how))
        return self.storage_failure

    def _deadline(self) -> float | None:
        if self.training_since is None:
            return self.entered.origin + self.context.setup_timeout_s
        if self.context.timeout_s is None:
            return None
        return self.training_since + self.context.timeout_s + TRIAL_KILL_MARGIN_S

    def _relay(self, child) -> str:
        """Pass the child's messages on until it says it has ended (``"said"``), it is gone (``"gone"``: it
        ended without saying so), or its time is up (``"expired"``: killed, and recorded)."""
        while True:
            deadline = self._deadline()
            try:
                kind, value = child.receive(None if deadline is None else deadline - time.perf_counter())
            except TimeoutError:
                self._expired(child)
                return "expired"
            except EOFError:
                return "gone"
            if kind == "ended":
                self.recorded = bool(value)
                return "said"
            if kind == "training":
                self.started_at, self.training_since = value, time.perf_counter()
                stoppable(self.reports.start)(value)  # returns once the driver's hooks have the start
                child.reply(True)
                self.processes.fork_next(self.context, self.place)  # while the trainable runs
            elif kind == "row":
                self.rows.append(value)
                stoppable(lambda row: self.reports.add(row, self.started_at))(value)
            elif kind == "storage":
                self.storage_failure = value

    def _expired(self, child) -> None:
        """Kill the trial's process at its deadline and record the timeout, unless it recorded itself meanwhile."""
        peak = child.peak_rss_bytes()
        child.kill()
        if self.ledger.read(self.index) is not None:
            return
        params, seed = self.context.trial(self.index)
        now = time.perf_counter()
        if self.training_since is None:
            error = (f"{FAMILY_IMPORT_TIMEOUT}: the worker's set-up (importing the family {self.context.family!r}) did"
                     f" not end within setup_timeout_s = {self.context.setup_timeout_s:g} s; its process was killed")
            runtime, setup, started_at = now - self.entered.origin, None, self.started_at
        else:
            error = (f"timed out after {self.context.timeout_s:g} s\nthe trial's process did not end at its timeout"
                     f" (stopped, or in code that holds the GIL) and was killed {TRIAL_KILL_MARGIN_S:g} s later")
            runtime, setup, started_at = now - self.training_since, self.training_since - self.entered.origin, self.started_at
        record = TrialRecord(
            index=self.index, status="timeout", params=params, seed=seed, score=None, history=list(self.rows),
            runtime_s=max(0.0, runtime), setup_s=setup, error=error, node_id=self.place.node_id,
            hostname=self.place.hostname, pid=self.place.pid, peak_rss_bytes=peak, started_at=started_at or self.entered.started_at,
            finished_at=utc_now_iso(), attempts=max(1, self.ledger.attempts_started(self.index)),
            gpu_seconds=max(0.0, runtime) * self.context.gpus_per_trial if self.place.device == "cuda" else None,
        )
        self._write(record)

    def _died(self, how: str):
        params, seed = self.context.trial(self.index)
        runtime = 0.0 if self.training_since is None else time.perf_counter() - self.training_since
        return TrialRecord.failed_without_worker(
            self.index, params=params, seed=seed, reason=how, attempts=max(1, self.ledger.attempts_started(self.index)),
            started_at=self.started_at, runtime_s=runtime, node_id=self.place.node_id, hostname=self.place.hostname,
        )

    def _write(self, record) -> None:
        try:
            self.ledger.write(record)
        except LedgerConflictError:  # the trial's process or the driver recorded it first: that record stands
            pass
        except LedgerWriteError as error:
            self.storage_failure = str(error)
