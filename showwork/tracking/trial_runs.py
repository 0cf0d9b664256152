"""The child runs of a search's trials: one per trial index, found or created, and each record's projection."""

from __future__ import annotations

import math
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from showwork import faults
from showwork.errors import InputError
from showwork.store import TrialRecord
from showwork.tracking.client import RetryingClient, all_runs, check_run_id
from showwork.tracking.errors import TrackingUnavailableError, short_reason
from showwork.tracking.mlflow_format import (
    ATTEMPT_TAG,
    HISTORY_TAG,
    LOGGED_TAG,
    PARENT_TAG,
    PROJECTION_ERROR_TAG,
    ROLE_TAG,
    SEARCH_TAG,
    SUPERSEDED_TAG,
    TERMINAL_RUN_STATUSES,
    TRIAL_INDEX_TAG,
    clamped,
    counted_run,
    epoch_millis,
    epoch_points,
    run_times,
    stale_trial_runs,
    trial_params,
    trial_projection,
    trial_runs,
)
from showwork.tracking.mlflow_import import entities
from showwork.tracking.mlflow_keys import MAX_TAG_LENGTH, METRIC_NAMES_TAG, PARAM_NAMES_TAG, key_names, key_names_tags, truncated
from showwork.tracking.run_entities import as_params, as_run_tags, checked_keys, renaming_warning
from showwork.values import is_integer

if TYPE_CHECKING:  # pragma: no cover
    from mlflow.entities import Run

__all__ = ["TrialRuns"]


@dataclass
class _Live:
    """What this driver wrote into a run it created: enough to go on writing without reading the run back.

    ``rows`` are the reported rows logged, in order (a trial's record holds them as the start of its
    history); ``params_logged`` whether the run has its params; ``ended`` whether it is terminated.
    """

    rows: list[dict] = field(default_factory=list)
    params_logged: bool = False
    ended: bool = False


class TrialRuns:
    """The child runs of a search's trials: one per trial index, found or created, and each record's projection.

    A trial's run starts at the worker's trial start and ends that plus the record's ``runtime_s``
    (:func:`showwork.tracking.mlflow_format.trial_projection`). MLflow cannot move a run's start, so a run
    left by an earlier attempt of the trial (a killed driver, an interrupt, a worker Ray restarted)
    is deleted when the trial's new attempt gets its run, and by :meth:`delete_stale` on a resume.

    As trials run, the driver writes each with :meth:`write_trial` (issue 23 item 14): its run is
    created with its params and first epochs, later epochs go in batches, and its end (the rest of
    the history, the final metrics, the tags, ``showwork.logged=1``, its end time) in one more
    batch, each one :meth:`~showwork.tracking.client.RetryingClient.unit` (one COMMIT on SQLite).
    What this driver wrote is remembered, so nothing is read back; an index that the last listing
    of the parent's runs (:meth:`children`: every replay makes one) showed without a run gets its
    run without a search first. A run this driver did not make is read back first
    (:meth:`log_trial`), as a replay does.

    Parameters
    ----------
    mlflow : RetryingClient
    experiment : callable
        Returns the experiment's id (created on first use).
    search : str
        The search's name (tag ``showwork.search``).
    child_tags : mapping, optional
        Extra tags of the run of each trial index (re-runs: :func:`showwork.tracking.mlflow_format.rerun_child_tags`).
    child_run_name : str
        The runs' names: ``{child_run_name}-0007``.
    """

    def __init__(self, mlflow: RetryingClient, experiment: Callable[[], str], search: str,
                 child_tags: Mapping[int, Mapping[str, str]] | None = None, child_run_name: str = "trial") -> None:
        self.mlflow, self._experiment, self.search = mlflow, experiment, search
        self.child_tags = {int(index): dict(tags) for index, tags in (child_tags or {}).items()}
        self.child_run_name = child_run_name
        self._runs: dict[tuple[str, int], tuple[str, int | None]] = {}  # (parent, index) -> (run id, start ms)
        self._live: dict[str, _Live] = {}  # run id -> what this driver wrote into the run it made
        self._others: dict[str, set[int]] = {}  # parent -> indices that may have runs this driver did not make
        self._metric_names: dict[str, dict[str, str]] = {}  # run id -> {key: name} recorded on it
        self._warned: set[str] = set()  # metric names already reported as renamed
        self.refused: dict[tuple[str, int], str] = {}  # (parent, index) -> why MLflow refused the record's projection
        self.superseded: dict[str, set[str]] = {}  # parent -> its runs tagged superseded, at its last listing

    def _list(self, parent_run_id: str, index: int | None = None) -> list[Run]:
        check_run_id(parent_run_id)
        where = f"tags.`{PARENT_TAG}` = '{parent_run_id}'"
        where += f" and tags.`{TRIAL_INDEX_TAG}` = '{index}'" if index is not None else ""
        runs = all_runs(self.mlflow.client, self._experiment(), where)
        if index is None:  # all the parent's runs: the indices with a run this driver did not make
            others = [run for run in runs if run.info.run_id not in self._live]
            self.superseded[parent_run_id] = {run.info.run_id for run in runs if run.data.tags.get(SUPERSEDED_TAG) == "1"}
            self._others[parent_run_id] = set(trial_runs(others))
            counts = Counter(run.data.tags.get(TRIAL_INDEX_TAG) for run in runs)
            for index_, run in trial_runs(others).items():  # an index's only run: no search to find it again
                if counts[str(index_)] == 1:
                    self._runs.setdefault((parent_run_id, index_), (run.info.run_id, run.info.start_time))
        return runs

    def children(self, parent_run_id: str) -> dict[int, Run]:
        """The active child runs of a parent by trial index (:func:`showwork.tracking.mlflow_format.trial_runs`)."""
        return trial_runs(self.mlflow.call("listing the trial runs", lambda: self._list(parent_run_id)))

    def child_run(self, parent_run_id: str, index: int, start_time: str | None = None) -> str:
        """Return the run id of trial ``index``, creating its run (``trial-0007``) only if it has none.

        Parameters
        ----------
        start_time : str, optional
            ISO-8601 start of the trial's attempt (the worker's): the run's start time. An unlogged
            run of the index that started at another time is an earlier attempt's: it is deleted
            and a run is made for this one (:func:`showwork.tracking.mlflow_format.stale_trial_runs`).
        """
        return self._open(parent_run_id, index, start_time)[0]

    def _open(self, parent_run_id: str, index: int, start_time: str | None,
              first: Callable[[str], dict[str, str]] | None = None) -> tuple[str, bool]:
        """The run of trial ``index``'s attempt that started at ``start_time``: ``(run id, created now)``.

        A run created here gets ``first(run_id)`` in the same unit (its params and first epochs),
        which returns the metric keys it logged. Without a start, the index's first run is its run.
        """
        check_run_id(parent_run_id)
        if not is_integer(index) or index < 0:
            raise InputError(f"child_run: a trial index must be an integer >= 0, not {index!r}")
        start = epoch_millis(start_time)
        key = (parent_run_id, index)
        cached = self._runs.get(key)
        if cached is not None and (start is None or cached[1] == start):
            return cached[0], False
        # An earlier attempt's run that this driver made and did not end: deleted without a search.
        own_stale = [cached[0]] if cached is not None and cached[0] in self._live and not self._ended(cached[0]) else []
        others = self._others.get(parent_run_id)
        search = others is None or index in others  # another driver's runs, or none listed yet
        tries = 0

        def find_or_create() -> tuple[str, int | None, dict[str, str] | None]:  # a retry searches (a reply lost)
            nonlocal tries
            tries += 1
            for run_id in own_stale:
                self.mlflow.client.delete_run(run_id)
            if search or tries > 1:
                runs = self._list(parent_run_id, index)
                # without a start, the first run is the trial's; with one, the run that started then
                stale = stale_trial_runs(runs, {index} if start is None else (), {} if start is None else {index: start})
                for run in stale:
                    self.mlflow.client.delete_run(run.info.run_id)
                kept = [run for run in runs if run not in stale and counted_run(run)]  # never a superseded attempt's
                if kept:
                    return kept[0].info.run_id, kept[0].info.start_time, None
            tags = {PARENT_TAG: parent_run_id, TRIAL_INDEX_TAG: str(index), SEARCH_TAG: self.search, ROLE_TAG: "trial",
                    **self.child_tags.get(index, {})}
            run = self.mlflow.client.create_run(self._experiment(), start_time=start, tags=tags,
                                                run_name=f"{self.child_run_name}-{index:04d}")
            self._metric_names[run.info.run_id] = {}  # a new run has renamed no metric yet
            return run.info.run_id, run.info.start_time, (first(run.info.run_id) if first is not None else {})

        self._others.setdefault(parent_run_id, set()).add(index)  # until the unit succeeds: a failed try may have made one
        run_id, started, keys = self.mlflow.unit(f"finding or creating the run of trial {index}", find_or_create)
        if keys is not None:  # made here, every other run of the index deleted: no search for it again
            self._others[parent_run_id].discard(index)
        for stale_id in own_stale:
            self._live.pop(stale_id, None)
        self._runs[key] = (run_id, started)
        if keys is not None:
            self._live[run_id] = _Live()
            self._remember_keys(run_id, keys)
        return run_id, keys is not None

    def _ended(self, run_id: str) -> bool:
        live = self._live.get(run_id)
        return live is not None and live.ended

    def delete_stale(self, parent_run_id: str, completed: Iterable[int]) -> list[str]:
        """Delete the runs of attempts that did not finish: unlogged runs of trials without a record, duplicates.

        Call it when resuming, after :func:`~showwork.tracking.ledger_sync.sync_ledger`, with ``ledger.completed_indices()``: each
        trial keeps one run (MLflow showed 32 runs for 30 trials). MLflow's delete is soft: ``mlflow
        gc`` removes them for good. Returns the run ids deleted.
        """
        runs = self.mlflow.call("listing the trial runs", lambda: self._list(parent_run_id))
        deleted = []
        for run in stale_trial_runs(runs, completed):
            run_id = run.info.run_id

            def delete(run_id: str = run_id) -> None:  # idempotent: a deleted run is not deleted again
                if self.mlflow.client.get_run(run_id).info.lifecycle_stage == "active":
                    self.mlflow.client.delete_run(run_id)

            self.mlflow.call(f"deleting the stale run {run_id} of trial {run.data.tags[TRIAL_INDEX_TAG]}", delete)
            self._runs.pop((parent_run_id, int(run.data.tags[TRIAL_INDEX_TAG])), None)
            self._live.pop(run_id, None)
            deleted.append(run_id)
        kept = [run for run in runs if run.info.run_id not in deleted and run.info.run_id not in self._live]
        self._others[parent_run_id] = set(trial_runs(kept))
        return deleted

    def supersede(self, parent_run_id: str, record: TrialRecord, position: int) -> str | None:
        """Tag the run of trial ``record.index`` (the record's ``mlflow_run_id``, else the index's run under the
        parent) ``showwork.superseded=1`` and ``showwork.attempt=position`` before the trial runs again
        (``resume --retry-failed``): the run stays beside the retry's, out of the trial's runs
        (:func:`~showwork.tracking.mlflow_format.counted_run`). Returns its id; None when it has no run.

        Raises
        ------
        TrackingUnavailableError
            MLflow stayed unreachable: the driver stops before any trial runs (the trials whose records were
            superseded already have none, and the next resume runs them).
        """
        check_run_id(parent_run_id)

        def find() -> str | None:
            runs = self._list(parent_run_id, record.index)
            chosen = next((run for run in runs if run.info.run_id == record.mlflow_run_id and counted_run(run)),
                          trial_runs(runs).get(record.index))
            return None if chosen is None else chosen.info.run_id

        run_id = self.mlflow.call(f"finding the run of trial {record.index}", find)
        if run_id is not None:
            tags = as_run_tags({SUPERSEDED_TAG: "1", ATTEMPT_TAG: str(position)})
            self.mlflow.call(f"tagging the run of trial {record.index} superseded",
                             lambda: self.mlflow.log_batch(run_id, tags=tags))
            self._live.pop(run_id, None)
        self._runs.pop((parent_run_id, record.index), None)
        self.child_tags.setdefault(record.index, {})[ATTEMPT_TAG] = str(position + 1)  # the retry's run
        return run_id

    def restore(self, parent_run_id: str, index: int, run_id: str) -> None:
        """Remove ``showwork.superseded`` from ``run_id``: its record still counts in the ledger (a driver stopped
        between tagging the run and moving the record aside, :func:`showwork.run.driver.supersede_failed`)."""
        def restore() -> None:  # idempotent: a tag already removed (a reply lost) is not removed again
            if self.mlflow.client.get_run(run_id).data.tags.get(SUPERSEDED_TAG) == "1":
                self.mlflow.client.delete_tag(run_id, SUPERSEDED_TAG)

        self.mlflow.call(f"restoring run {run_id}", restore)
        self.superseded.get(parent_run_id, set()).discard(run_id)
        self._others.setdefault(parent_run_id, set()).add(index)  # the index has a run again: looked for, not made

    def log_epoch(self, run_id: str, metrics: Mapping[str, Any], step: int) -> None:
        """Log one epoch's numeric metrics (nested mappings flattened with dots) at ``step``."""
        self._log_rows(run_id, [{**metrics, "epoch": int(step)}])

    def _log_rows(self, run_id: str, rows: Sequence[Mapping[str, Any]]) -> None:
        """Log reported rows (``{"epoch": n, metric: value, ...}``) as metric points: one unit, with the key map."""
        points = epoch_points(rows)
        if not points:
            return
        now = int(time.time() * 1000)  # MLflow orders a metric's history by step, then by timestamp

        def log() -> dict[str, str]:
            keys, map_tags = self._metric_keys(run_id, points)
            self.mlflow.log_batch(run_id, metrics=_points(points, keys, now), tags=map_tags)
            return keys

        self._remember_keys(run_id, self.mlflow.unit(f"logging the epochs of run {run_id}", log))

    # -- a trial, as the driver gets it

    def write_trial(self, parent_run_id: str, index: int, started_at: str | None, rows: Sequence[Mapping[str, Any]] = (),
                    *, params: Mapping[str, Any] | None = None, seed: int | None = None,
                    record: TrialRecord | None = None) -> str:
        """Write what the driver got of a trial since the last call, in one unit; return its run's id.

        The first call of an attempt creates its run (``trial-0007``, starting at ``started_at``)
        with its params (the record's, else ``params`` and ``seed``) and the ``rows`` reported so
        far; later calls add the new ``rows``; the call with the trial's ``record`` adds the rest of
        its history (after the rows logged), its final metrics and tags, ``showwork.logged=1`` and
        its end. A run this driver did not make, or a record whose history does not start with the
        rows logged, is projected by :meth:`log_trial`, which reads the run back.

        Parameters
        ----------
        rows : sequence of mapping
            Reported rows ``{"epoch": n, metric: value, ...}`` not given before, in order.
        params, seed
            The trial's hyperparameters and seed (:meth:`showwork.trials.execution.SearchContext.trial`),
            for a run created before the record exists; without them, its params wait for the record.
        record : TrialRecord, optional
            The trial's record, once it has ended.
        """
        if record is not None:
            started_at, params, seed = record.started_at, record.params, record.seed
        rows = [dict(row) for row in rows]
        now = int(time.time() * 1000)

        def first(run_id: str) -> dict[str, str]:  # the new run's params and rows; its end too with the record
            if record is not None:
                return self._end(run_id, _Live(), record, now)
            points = epoch_points(rows)
            keys, map_tags = self._metric_keys(run_id, points, {})
            param_entities, param_tags = self._param_batch(index, params, seed)
            self.mlflow.log_batch(run_id, params=param_entities, metrics=_points(points, keys, now),
                                  tags=[*param_tags, *map_tags])
            return keys

        run_id, created = self._open(parent_run_id, index, started_at, first)
        live = self._live.get(run_id)
        if created:
            live.params_logged, live.rows, live.ended = params is not None, rows, record is not None
            if record is None:
                faults.point("child-params-logged")
            return run_id
        if live is None:  # a run this driver did not make (found by its tags): what is in it is read back
            if record is not None:
                return self.log_trial(parent_run_id, record)
            self._log_rows(run_id, rows)
            return run_id
        if live.ended:
            return run_id
        if record is None:
            self._log_rows(run_id, rows)
            live.rows.extend(rows)
            return run_id
        if record.history and not _starts_with(record.history, live.rows):  # not the rows logged: compare in MLflow
            return self.log_trial(parent_run_id, record)
        keys = self.mlflow.unit(f"logging trial {index}", lambda: self._end(run_id, live, record, now))
        self._remember_keys(run_id, keys)
        live.ended, live.rows = True, []
        return run_id

    def _param_batch(self, index: int, params: Mapping[str, Any] | None, seed: int | None) -> tuple[list, list]:
        """A new run's params and the tags that record their renamed keys (none without ``params``)."""
        if params is None:
            return [], []
        entities_, keys = as_params(trial_params(index, params, seed), {})
        return entities_, as_run_tags(key_names_tags(keys, PARAM_NAMES_TAG))

    def _end(self, run_id: str, live: _Live, record: TrialRecord, now: int) -> dict[str, str]:
        """Complete a run this driver made from its record, in one batch; it ends at the trial's end. Returns the metric keys.

        The history after the rows logged (none for a record without history: a worker that died),
        the final metrics, the params unless logged, the tags with ``showwork.logged=1``; then the
        run is terminated (closed only once tagged).
        """
        Metric = entities()[0]  # noqa: N806

        trial = trial_projection(record)
        history = epoch_points(record.history[len(live.rows):])
        keys, map_tags = self._metric_keys(run_id, [*history, *trial.final_metrics])
        param_entities, param_tags = ([], []) if live.params_logged else self._param_batch(record.index, record.params,
                                                                                            record.seed)
        finals = [Metric(keys[name], value, now, trial.final_step) for name, value in trial.final_metrics.items()]
        tags = as_run_tags({**trial.tags, HISTORY_TAG: "1", LOGGED_TAG: "1"})
        self.mlflow.log_batch(run_id, params=param_entities, metrics=[*_points(history, keys, now), *finals],
                              tags=[*param_tags, *map_tags, *tags])
        self.mlflow.client.set_terminated(run_id, trial.run_status, end_time=trial.end_ms)
        return keys

    def log_trial(self, parent_run_id: str, record: TrialRecord) -> str:
        """Project a ledger record into its child run, idempotently; return the child's run id.

        The run gets what :func:`showwork.tracking.mlflow_format.trial_projection` says: params, the
        history with ``step = epoch`` (points already there, e.g. from :meth:`log_epoch`, are not
        logged again), the final metrics, the tags; then ``showwork.logged=1``, and it ends
        FINISHED (finished trial) or FAILED at the trial's end. Calling it again changes nothing.
        A param already logged with another value (MLflow refuses changes) is kept, with a warning.
        The run is read back first: this is the replay's way (:func:`~showwork.tracking.ledger_sync.sync_ledger`); one unit.
        """
        if not isinstance(record, TrialRecord):
            raise TypeError(f"log_trial expects a TrialRecord, not {type(record).__name__}")
        run_id = self.child_run(parent_run_id, record.index, start_time=record.started_at)
        keys = self.mlflow.unit(f"logging trial {record.index}", lambda: self._project(run_id, record))
        self._remember_keys(run_id, keys)
        if run_id in self._live:
            self._live[run_id] = _Live(ended=True)
        return run_id

    def _project(self, run_id: str, record: TrialRecord) -> dict[str, str]:
        Metric = entities()[0]  # noqa: N806

        run = self.mlflow.get_run(run_id)
        tags_now = run.data.tags
        if tags_now.get(LOGGED_TAG) == "1" and run.info.status in TERMINAL_RUN_STATUSES:
            return {}
        trial = trial_projection(record)
        param_entities, param_keys = as_params(trial.params, tags_now)
        recorded = key_names_tags(param_keys, PARAM_NAMES_TAG)
        tags = as_run_tags({tag: value for tag, value in recorded.items() if tags_now.get(tag) != value})
        logged = run.data.params
        for entity in param_entities:
            if entity.key in logged and logged[entity.key] != entity.value:
                warnings.warn(
                    f"MLflow run {run_id} (trial {record.index}): param {entity.key!r} is already {logged[entity.key]!r};"
                    f" the ledger says {entity.value!r} (MLflow params cannot change)",
                    stacklevel=5,
                )
        now = int(time.time() * 1000)  # like the live epochs: MLflow orders a history by timestamp
        keys, map_tags = self._metric_keys(run_id, [*trial.history, *trial.final_metrics], tags_now)
        points = []
        if tags_now.get(HISTORY_TAG) != "1":
            for name, series in trial.history.items():
                present = []
                if keys[name] in run.data.metrics:
                    present = [(m.step, m.value) for m in self.mlflow.client.get_metric_history(run_id, keys[name])]
                points += [Metric(keys[name], value, now, step) for step, value in series
                           if not any(s == step and _same(v, clamped(value)) for s, v in present)]
        finals = [Metric(keys[name], value, now, trial.final_step) for name, value in trial.final_metrics.items()
                  if keys[name] not in run.data.metrics]
        self.mlflow.log_batch(run_id, params=[entity for entity in param_entities if entity.key not in logged],
                              metrics=[*points, *finals],
                              tags=[*tags, *map_tags, *as_run_tags({**trial.tags, HISTORY_TAG: "1", LOGGED_TAG: "1"})])
        self.mlflow.client.set_terminated(run_id, trial.run_status, end_time=trial.end_ms)
        return keys

    def mark_refused(self, parent_run_id: str, record: TrialRecord, error: BaseException) -> str | None:
        """Tag trial ``record.index``'s run with why MLflow refused its projection and end it FAILED; its id, or None.

        Raises
        ------
        TrackingUnavailableError
            MLflow stayed unreachable (the record is replayed later).
        """
        reason = truncated(" ".join(f"{type(error).__name__}: {short_reason(error)}".split()), MAX_TAG_LENGTH)
        self.refused[(parent_run_id, record.index)] = reason
        _, end_ms = run_times(record.started_at, record.runtime_s)
        try:
            run_id = self.child_run(parent_run_id, record.index, start_time=record.started_at)

            def mark() -> None:
                self.mlflow.log_batch(run_id, tags=as_run_tags({PROJECTION_ERROR_TAG: reason}))
                self.mlflow.client.set_terminated(run_id, "FAILED", end_time=end_ms)

            self.mlflow.unit(f"marking the run of trial {record.index}", mark)
        except TrackingUnavailableError:
            raise
        except Exception:  # noqa: BLE001 - MLflow refuses even the mark: the warning still says it
            return None
        self._live[run_id] = _Live(ended=True)
        return run_id

    def _metric_keys(self, run_id: str, names: Iterable[str],
                     run_tags: Mapping[str, str] | None = None) -> tuple[dict[str, str], list]:
        """``({name: key}, tags recording the run's new renamings)`` for a run's metrics; nothing is written.

        The map is kept per run (:meth:`_remember_keys` once written), so a run logged epoch by
        epoch, then replayed, uses one key per name. A renaming is warned of once per name.
        """
        known = self._metric_names.get(run_id)
        if known is None:
            tags = run_tags if run_tags is not None else self.mlflow.get_run(run_id).data.tags
            known = self._metric_names[run_id] = key_names(tags, METRIC_NAMES_TAG)
        keys = checked_keys(names, known)
        new = {name: key for name, key in keys.items() if key != name and key not in known}
        if not new:
            return keys, []
        recorded = {**known, **{key: name for name, key in new.items()}}
        message = renaming_warning("metric", {n: k for n, k in new.items() if n not in self._warned}, METRIC_NAMES_TAG)
        self._warned.update(new)
        if message:
            warnings.warn(f"{message} (in every trial that reports them)", stacklevel=5)
        return keys, as_run_tags(key_names_tags({name: key for key, name in recorded.items()}, METRIC_NAMES_TAG))

    def _remember_keys(self, run_id: str, keys: Mapping[str, str]) -> None:
        """Record that ``run_id`` holds ``keys``' renamings (its map tag was written)."""
        known = self._metric_names.setdefault(run_id, {})
        known.update({key: name for name, key in keys.items() if key != name})


def _points(points: Mapping[str, list[tuple[int, float]]], keys: Mapping[str, str], now: int) -> list:
    """``Metric`` entities of each name's ``(step, value)`` points under its key, timestamped ``now``."""
    Metric = entities()[0]  # noqa: N806

    return [Metric(keys[name], value, now, step) for name, series in points.items() for step, value in series]


def _starts_with(history: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a record's ``history`` begins with the ``rows`` logged (NaN equal to NaN)."""
    return len(history) >= len(rows) and all(
        row.keys() == entry.keys() and all(_same_value(row[k], entry[k]) for k in row)
        for row, entry in zip(rows, history)
    )


def _same_value(a: Any, b: Any) -> bool:
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))
