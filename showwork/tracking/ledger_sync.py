"""The replay: every ledger record not yet (completely) in MLflow projected into its trial's run."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable

from showwork.store import Ledger, TrialRecord
from showwork.tracking.errors import TrackingUnavailableError
from showwork.tracking.mlflow_format import LOGGED_TAG, PROJECTION_ERROR_TAG, TERMINAL_RUN_STATUSES
from showwork.tracking.mlflow_keys import truncated
from showwork.tracking.tracker import Tracker

__all__ = ["sync_ledger"]


def sync_ledger(
    tracker: Tracker,
    ledger: Ledger,
    parent_run_id: str,
    records: Iterable[TrialRecord] | None = None,
    written: Callable[[TrialRecord], None] | None = None,
) -> int:
    """Project into MLflow every ledger record not yet (completely) there; return how many.

    ``records`` are the ledger's records when the caller has just read them (default: read them
    here); ``written(record)`` is called with each record whose new run id was written back.

    A record is skipped when its ``mlflow_run_id`` is the child run of its trial under
    ``parent_run_id`` and that run is terminated and tagged ``showwork.logged=1``. Every other
    record is logged with :meth:`~showwork.tracking.tracker.Tracker.log_trial` and its run id written back into the ledger
    (``replace=True``, the only field that changes). A record whose run id points elsewhere (an
    MLflow database that was lost, another server) gets a new child run.

    A record whose run is tagged ``showwork.superseded`` while the ledger still counts it (a retry stopped
    between tagging the run and moving the record aside) gets the tag removed, and its run is its trial's again.

    A record whose projection MLflow refuses (issue 23 item 2: a value it cannot store, whatever
    the error) does not stop the others: its run is tagged ``showwork.projection_error`` with the
    reason and ended FAILED (:meth:`~showwork.tracking.trial_runs.TrialRuns.mark_refused`), one warning line names the trial,
    and this tracker does not try it again (the next driver, a resume, does).

    Raises
    ------
    TrackingUnavailableError
        If MLflow becomes unreachable; the records logged so far keep their run ids.
    """
    children = tracker.children(parent_run_id)
    logged = 0
    for record in ledger.records() if records is None else records:
        if record.mlflow_run_id in tracker.trials.superseded.get(parent_run_id, ()):
            # the ledger still counts this record: its run is the trial's again (a retry was cut short)
            tracker.trials.restore(parent_run_id, record.index, record.mlflow_run_id)
        child = children.get(record.index)
        if (
            child is not None
            and record.mlflow_run_id == child.info.run_id
            and child.info.status in TERMINAL_RUN_STATUSES
            and child.data.tags.get(LOGGED_TAG) == "1"
        ) or (parent_run_id, record.index) in tracker.trials.refused:
            continue
        try:
            run_id = tracker.log_trial(parent_run_id, record)
        except TrackingUnavailableError:
            raise
        except Exception as error:  # noqa: BLE001 - the ledger is the truth: one trial's projection never stops the rest
            run_id = _refused(tracker, parent_run_id, record, error)
            if run_id is None:
                continue
        if record.mlflow_run_id != run_id:
            updated = ledger.set_mlflow_run_id(record.index, run_id)
            if written is not None:
                written(updated)
        logged += 1
    return logged


def _refused(tracker: Tracker, parent_run_id: str, record: TrialRecord, error: BaseException) -> str | None:
    """Mark the run of a record MLflow refused and warn in one line; the run's id, or None when it has none."""
    run_id = tracker.trials.mark_refused(parent_run_id, record, error)
    reason = tracker.trials.refused[(parent_run_id, record.index)]
    where = (f"its run {run_id} is tagged {PROJECTION_ERROR_TAG} and ended FAILED" if run_id is not None
             else "it has no run")
    warnings.warn(
        f"MLflow refused trial {record.index}'s record ({truncated(reason, 300)}); {where}. The ledger keeps the trial:"
        " a report of the search is complete, a report of its MLflow runs (mlflow:) lacks it; a resume tries again.",
        stacklevel=3,
    )
    return run_id
