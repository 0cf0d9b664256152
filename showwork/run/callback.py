"""Ray Tune's trial hooks during a search: each trial's MLflow child run, a dead worker's record, the progress line."""

from __future__ import annotations

import queue
import threading
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the annotations only: the modules load when a search runs
    from showwork.ledger import Ledger, TrialRecord
    from showwork.run.progress import Progress
    from showwork.tracking import Tracker

__all__ = ["ProjectionCallback"]


class ProjectionCallback:
    """Ray Tune's trial hooks during a search: each trial's MLflow child run, and the progress line.

    Tune waits for its callbacks (a trial's report blocks until the driver handled it), so the
    hooks only update the display and queue MLflow work; one writer thread does the MLflow calls
    in order. The ledger stays the source of truth: whatever the writer misses, the replay after
    the run repairs. A trial's MLflow run starts at its worker's start, which its first report (or
    its record) gives.

    A ledger write that fails (here, or in a worker, which reports it) sets ``storage_failure``;
    the run's stop condition then ends the search. Ray runs the hooks inside its own loop, so they
    never raise: an exception there ends in Ray's traceback. The hooks take Tune's arguments
    (``trial`` has ``config["index"]`` and ``num_failures``); the class needs no Ray:
    :meth:`showwork.execution.RayExecutor.run` hands the hooks to Tune.

    Parameters
    ----------
    tracker : Tracker
        The search's MLflow writer.
    ledger : Ledger
        The search's ledger: the records the workers wrote, and the driver's record of a trial
        whose worker died.
    parent_run_id : str
        The search's MLflow parent run.
    display : Progress
        The progress line.
    trial_of : callable
        ``index -> (params, seed)`` of a trial: :meth:`showwork.execution.SearchContext.trial`, the
        one place a trial's configuration is derived (a dead worker's record gets it from there).
    interrupted : callable
        True once a signal stopped the search: a trial that Tune then stops without a record is
        left unrecorded (a resume runs it), not recorded as failed.
    """

    def __init__(
        self,
        tracker: Tracker,
        ledger: Ledger,
        parent_run_id: str,
        display: Progress,
        trial_of: Callable[[int], tuple[dict, int]],
        interrupted: Callable[[], bool] = lambda: False,
    ) -> None:
        self.tracker, self.ledger, self.parent_run_id = tracker, ledger, parent_run_id
        self.display, self.trial_of, self.interrupted = display, trial_of, interrupted
        self.storage_failure: str | None = None
        self.started: dict[int, str] = {}  # the worker's start of each running trial (from its reports)
        self._queue: queue.Queue | None = None
        self._writer: threading.Thread | None = None

    def __getstate__(self) -> dict:  # Tune pickles callbacks with its experiment state; the writer stays here
        state = dict(self.__dict__)
        state["_queue"] = state["_writer"] = None
        return state

    # -- Tune's hooks

    def on_trial_start(self, iteration, trials, trial, **info) -> None:
        self.display.started(int(trial.config["index"]))

    def on_trial_result(self, iteration, trials, trial, result, **info) -> None:
        from showwork.execution import REPORT_KEY, STORAGE_FAILURE_KEY, TRIAL_START_KEY

        index = int(trial.config["index"])
        if result.get(STORAGE_FAILURE_KEY):  # the worker could not write into the ledger
            self._storage_failed(result[STORAGE_FAILURE_KEY])
            return
        rows, started = result.get(REPORT_KEY), result.get(TRIAL_START_KEY)
        if not isinstance(rows, list) or not isinstance(started, str):  # Tune's own result, not a report
            return
        self.started[index] = started
        for row in rows:  # the epochs since the worker's last report (EpochReports)
            self._log_epoch(index, started, row)

    def _log_epoch(self, index: int, started: str, row: dict) -> None:
        metrics = {k: float(v) for k, v in row.items()
                   if k != "epoch" and isinstance(v, (int, float)) and not isinstance(v, bool)}
        if not metrics:
            return
        tracker, parent, epoch = self.tracker, self.parent_run_id, int(row.get("epoch", 0))

        def log() -> None:
            tracker.log_epoch(tracker.child_run(parent, index, start_time=started), metrics, epoch)

        self._submit(f"epoch of trial {index}", log)

    def on_trial_complete(self, iteration, trials, trial, **info) -> None:
        self._ended(trial, died=False)

    def on_trial_error(self, iteration, trials, trial, **info) -> None:
        self._ended(trial, died=True)

    # -- the driver's side

    def close(self) -> None:
        """Wait until every queued MLflow call is done."""
        if self._writer is not None:
            self._queue.put(None)
            self._writer.join()
            self._writer = None

    def _ended(self, trial, died: bool) -> None:
        from showwork.ledger import LedgerWriteError

        index = int(trial.config["index"])
        record = self.ledger.read(index)
        if record is None and (self.storage_failure is not None or self.interrupted()):
            # Stopped because the storage failed or a signal came: not the trial's fault, and left
            # unrecorded so that a resume runs it.
            self.display.running.discard(index)
            return
        if record is None:  # the worker died before it could write (killed, segfault, OOM killer)
            record = self._worker_died(index, trial, died)
            try:
                self.ledger.write(record)
            except LedgerWriteError as error:
                self._storage_failed(error)
                self.display.running.discard(index)
                return
        self.display.ended(record)
        tracker, ledger, parent = self.tracker, self.ledger, self.parent_run_id

        def log() -> None:
            run = tracker.log_trial(parent, record)
            if run and record.mlflow_run_id != run:
                ledger.set_mlflow_run_id(index, run)

        self._submit(f"logging trial {index}", log)

    def _worker_died(self, index: int, trial, died: bool) -> TrialRecord:
        """The driver's record of trial ``index``, whose worker ended without writing one."""
        from showwork.ledger import TrialRecord

        started = self.started.get(index)  # from its reports: its MLflow run started then
        params, seed = self.trial_of(index)
        return TrialRecord.failed_without_worker(
            index,
            started_at=started,
            runtime_s=_seconds_since(started),
            params=params,
            seed=seed,
            reason="the worker process died" if died else "the trial ended without a record",
            # Ray has already counted this failure in num_failures; a worker that died before
            # marking its attempt is counted by Ray alone.
            attempts=max(1, self.ledger.attempts_started(index), int(getattr(trial, "num_failures", 0))),
        )

    def _storage_failed(self, error) -> None:
        if self.storage_failure is None:  # the first failure is the one to name
            self.storage_failure = str(error)

    def _submit(self, what: str, call: Callable[[], None]) -> None:
        if self._writer is None:
            self._queue = queue.Queue()
            self._writer = threading.Thread(target=self._drain, name="showwork-mlflow", daemon=True)
            self._writer.start()
        self._queue.put((what, call))

    def _drain(self) -> None:
        from showwork.ledger import LedgerWriteError
        from showwork.tracking import TrackingUnavailableError

        missed = 0  # writes lost to the current outage: one warning when it starts, one when it ends
        while True:
            item = self._queue.get()
            if item is None:
                return
            what, call = item
            try:
                call()
            except LedgerWriteError as error:  # adding a run id to a record: the disk, not MLflow
                self._storage_failed(error)
                continue
            except TrackingUnavailableError as error:
                if not missed:
                    warnings.warn(f"MLflow: {what} failed ({error}); the ledger has the result, it will be"
                                  " replayed. Until MLflow answers again, its failed writes are counted, not shown.")
                missed += 1
                continue
            except Exception as error:  # noqa: BLE001 - never lose the search to a logging problem
                warnings.warn(f"MLflow: {what} failed ({type(error).__name__}: {error}); it will be replayed.")
            if missed and not self.tracker.down:  # a call got an answer (a write may also have had nothing to send)
                warnings.warn(f"MLflow answers again; {missed} writes failed meanwhile and will be replayed.")
                missed = 0


def _seconds_since(timestamp: str | None) -> float:
    """Seconds from an ISO-8601 timestamp with offset until now (0 without one)."""
    from datetime import datetime, timezone

    if timestamp is None:
        return 0.0
    return max(0.0, (datetime.now(timezone.utc) - datetime.fromisoformat(timestamp)).total_seconds())
