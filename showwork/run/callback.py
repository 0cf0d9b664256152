"""Ray Tune's trial hooks during a search: each trial's MLflow child run, a dead worker's record, the progress line."""

from __future__ import annotations

import queue
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone

from showwork.run.fail_fast import FailFast
from showwork.run.progress import Progress
from showwork.store import Ledger, LedgerWriteError, TrialRecord
from showwork.tracking.errors import TrackingUnavailableError
from showwork.tracking.tracker import Tracker
from showwork.trials.execution import REPORT_KEY, STORAGE_FAILURE_KEY, TRIAL_START_KEY

__all__ = ["LIVE_INTERVAL_S", "ProjectionCallback"]

LIVE_INTERVAL_S = 10.0
"""A running trial's new epochs go to MLflow at most this often (its first at once, the rest with its end)."""


@dataclass
class _Pending:
    """What the writer has of one trial attempt and has not written yet."""

    started: str
    rows: list[dict] = field(default_factory=list)
    record: TrialRecord | None = None
    written_at: float | None = None  # when its run last got epochs (None: it has no run yet)


class ProjectionCallback:
    """Ray Tune's trial hooks during a search: each trial's MLflow child run, and the progress line.

    Tune waits for its callbacks (a trial's report blocks until the driver handled it), so the
    hooks only update the display and queue what MLflow is to get; one writer thread writes it.
    The writer takes everything queued at once and writes each trial in as few units as it can
    (:meth:`showwork.tracking.tracker.Tracker.write_trial`, issue 23 item 14): a trial's run is created
    with its params and first epochs when its first report comes, its later epochs go at most
    every :data:`LIVE_INTERVAL_S` while it runs, and its end with the rest; a trial whose end is
    queued with its first report is written in one unit. The ledger stays the source of truth:
    whatever the writer misses, the replay after the run repairs; a trial whose write MLflow
    refused is left to that replay, which marks its run and says so once. A trial's MLflow run
    starts at its worker's start, which its first report (or its record) gives.

    A ledger write that fails (here, or in a worker, which reports it) sets ``storage_failure``;
    the run's stop condition then ends the search. Ray runs the hooks inside its own loop, so they
    never raise: an exception there ends in Ray's traceback. The hooks take Tune's arguments
    (``trial`` has ``config["index"]`` and ``num_failures``); the class needs no Ray:
    :meth:`showwork.trials.ray_executor.RayExecutor.run` hands the hooks to Tune.

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
        ``index -> (params, seed)`` of a trial: :meth:`showwork.trials.execution.SearchContext.trial`, the
        one place a trial's configuration is derived (a dead worker's record gets it from there).
    interrupted : callable
        True once a signal (or the fail-fast rule) stopped the search: a trial that Tune then stops
        without a record is left unrecorded (a resume runs it), not recorded as failed.
    fail_fast : FailFast, optional
        Told of each trial's record as the trial ends (:mod:`showwork.run.fail_fast`).
    """

    def __init__(
        self,
        tracker: Tracker,
        ledger: Ledger,
        parent_run_id: str,
        display: Progress,
        trial_of: Callable[[int], tuple[dict, int]],
        interrupted: Callable[[], bool] = lambda: False,
        fail_fast: FailFast | None = None,
    ) -> None:
        self.tracker, self.ledger, self.parent_run_id = tracker, ledger, parent_run_id
        self.display, self.trial_of, self.interrupted = display, trial_of, interrupted
        self.fail_fast = fail_fast
        self.storage_failure: str | None = None
        self.started: dict[int, str] = {}  # the worker's start of each running trial (from its reports)
        self._queue: queue.Queue | None = None
        self._writer: threading.Thread | None = None
        self._missed = 0

    def __getstate__(self) -> dict:  # Tune pickles callbacks with its experiment state; the writer stays here
        state = dict(self.__dict__)
        state["_queue"] = state["_writer"] = None
        return state

    # -- Tune's hooks

    def on_trial_start(self, iteration, trials, trial, **info) -> None:
        self.display.started(int(trial.config["index"]))

    def on_trial_result(self, iteration, trials, trial, result, **info) -> None:
        index = int(trial.config["index"])
        if result.get(STORAGE_FAILURE_KEY):  # the worker could not write into the ledger
            self._storage_failed(result[STORAGE_FAILURE_KEY])
            return
        rows, started = result.get(REPORT_KEY), result.get(TRIAL_START_KEY)
        if not isinstance(rows, list) or not isinstance(started, str):  # Tune's own result, not a report
            return
        self.started[index] = started
        rows = [_numbers(row) for row in rows]  # the epochs since the worker's last report (EpochReports)
        self.display.reported(index, rows)
        self._submit(("rows", index, started, rows))

    def on_trial_complete(self, iteration, trials, trial, **info) -> None:
        self._ended(trial, died=False)

    def on_trial_error(self, iteration, trials, trial, **info) -> None:
        self._ended(trial, died=True)

    # -- the driver's side

    def idle(self) -> None:
        """Wait until the writer has handled everything queued so far (a running trial's epochs it holds back for
        :data:`LIVE_INTERVAL_S` excepted)."""
        if self._writer is not None:
            self._queue.join()

    def close(self) -> None:
        """Wait until every queued MLflow call is done."""
        if self._writer is not None:
            self._queue.put(None)
            self._writer.join()
            self._writer = None

    def _ended(self, trial, died: bool) -> None:
        index = int(trial.config["index"])
        record = self.ledger.read(index)
        if record is None and (self.storage_failure is not None or self.interrupted()):
            # Stopped because the storage failed or a signal came: not the trial's fault, and left
            # unrecorded so that a resume runs it.
            self.display.dropped(index)
            return
        if record is None:  # the worker died before it could write (killed, segfault, OOM killer)
            record = self._worker_died(index, trial, died)
            try:
                self.ledger.write(record)
            except LedgerWriteError as error:
                self._storage_failed(error)
                self.display.dropped(index)
                return
        self.display.ended(record)
        if self.fail_fast is not None:
            self.fail_fast.ended(record)
        self._submit(("ended", index, record.started_at, record))

    def _worker_died(self, index: int, trial, died: bool) -> TrialRecord:
        """The driver's record of trial ``index``, whose worker ended without writing one."""
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

    def _submit(self, item: tuple) -> None:
        if self._writer is None:
            self._queue = queue.Queue()
            self._writer = threading.Thread(target=self._drain, name="showwork-mlflow", daemon=True)
            self._writer.start()
        self._queue.put(item)

    def _drain(self) -> None:
        """The writer: take what is queued, merge it by trial, write what is due; at the end, everything."""
        pending: dict[int, _Pending] = {}
        written_at: dict[tuple[int, str], float] = {}  # (index, start) -> when its run last got epochs
        self._missed = 0  # writes lost to the current outage: one warning when it starts, one when it ends
        refused: set[int] = set()  # trials whose write MLflow refused: the replay marks them
        closing = False
        while not closing:
            waiting = [p for p in pending.values() if p.record is None and p.rows]
            timeout = None if not waiting else max(0.0, min(
                (written_at.get((i, p.started), 0.0) + LIVE_INTERVAL_S for i, p in pending.items() if p in waiting)
            ) - time.monotonic())
            items = self._take(timeout)
            for item in items:
                if item is None:
                    closing = True
                    self._queue.task_done()
                    continue
                kind, index, started, payload = item
                current = pending.get(index)
                if current is None or current.started != started:  # a new attempt replaces an unwritten one
                    current = pending[index] = _Pending(started)
                if kind == "rows":
                    current.rows.extend(payload)
                else:
                    current.record = payload
            now = time.monotonic()
            for index, trial in list(pending.items()):
                due = closing or trial.record is not None or (index, trial.started) not in written_at or (
                    now - written_at[(index, trial.started)] >= LIVE_INTERVAL_S)
                if not due or index in refused:
                    if index in refused:
                        del pending[index]
                    continue
                del pending[index]
                if trial.rows or trial.record is not None:  # a run made before any epoch gets its first ones at once
                    written_at[(index, trial.started)] = now
                if not self._write(index, trial):
                    refused.add(index)
            for item in items:
                if item is not None:
                    self._queue.task_done()

    def _take(self, timeout: float | None) -> list:
        """Everything queued: the first item within ``timeout`` (None: however long), then what came meanwhile
        (one trial's epochs and end merge into one write)."""
        try:
            items = [self._queue.get(timeout=timeout)]
        except queue.Empty:
            items = []
        while True:
            try:
                items.append(self._queue.get_nowait())
            except queue.Empty:
                return items

    def _write(self, index: int, trial: _Pending) -> bool:
        """Write one trial's pending epochs (its run created first) or its end; False when MLflow refused it."""
        what = f"logging trial {index}" if trial.record is not None else f"logging the epochs of trial {index}"
        try:
            if trial.record is not None:
                run = self.tracker.write_trial(self.parent_run_id, index, trial.started, record=trial.record)
                if trial.record.mlflow_run_id != run:
                    self.ledger.set_mlflow_run_id(index, run)
            else:
                params, seed = self.trial_of(index)
                self.tracker.write_trial(self.parent_run_id, index, trial.started, trial.rows, params=params, seed=seed)
        except LedgerWriteError as error:  # adding a run id to a record: the disk, not MLflow
            self._storage_failed(error)
        except TrackingUnavailableError as error:
            if not self._missed:
                warnings.warn(f"MLflow: {what} failed ({error}); the ledger has the result, it will be"
                              " replayed. Until MLflow answers again, its failed writes are counted, not shown.")
            self._missed += 1
            return True
        except Exception:  # noqa: BLE001 - MLflow refused it: the replay after the run marks the run, says so once
            return False
        if self._missed and not self.tracker.down:  # a call got an answer
            warnings.warn(f"MLflow answers again; {self._missed} writes failed meanwhile and will be replayed.")
            self._missed = 0
        return True


def _numbers(row: dict) -> dict:
    """A reported row's epoch and its numbers (bools and text are not metrics)."""
    return {k: (int(v) if k == "epoch" else float(v)) for k, v in row.items()
            if k == "epoch" or (isinstance(v, (int, float)) and not isinstance(v, bool))}


def _seconds_since(timestamp: str | None) -> float:
    """Seconds from an ISO-8601 timestamp with offset until now (0 without one)."""
    if timestamp is None:
        return 0.0
    return max(0.0, (datetime.now(timezone.utc) - datetime.fromisoformat(timestamp)).total_seconds())
