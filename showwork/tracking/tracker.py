"""The projection of a search's ledger into MLflow: one parent run per search, one child run per trial index.

MLflow is a *view* of the ledger (:mod:`showwork.store.ledger`), never the source of truth. Only the
driver writes to it, through :class:`Tracker`, which uses ``mlflow.tracking.MlflowClient``
explicitly (no global active run) through :class:`showwork.tracking.client.RetryingClient` (retries,
the "MLflow is down" mode) and makes every write idempotent: a child run is found by its trial
index before one is created, metric points already logged are not logged again, and a run whose
projection is complete carries the tag ``showwork.logged=1``. So the projection can be replayed at
any time — after a driver crash or an MLflow outage — with :func:`~showwork.tracking.ledger_sync.sync_ledger`.

What goes where (tag and param names, a record's params, metrics and tags, start and end times) is
:mod:`showwork.tracking.mlflow_format`, which :mod:`showwork.report.inputs` reads back with. A trial index
has one child run, always: its start time is the worker's trial start and its end time that plus
the record's ``runtime_s``; a run left by an attempt that did not finish (a killed driver, an
interrupted search, a worker Ray restarted) is deleted when its trial runs again or the search is
resumed, so MLflow never shows a trial twice. Param and metric names go to MLflow under the
injective keys of :func:`showwork.tracking.mlflow_keys.mlflow_keys`, recorded in the run's tags.

``mlflow`` is imported lazily, on first use, so that ``import showwork`` stays light.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from showwork import faults
from showwork.errors import InputError
from showwork.redaction import owner_only_folder
from showwork.store import TrialRecord
from showwork.tracking.client import RetryingClient, all_runs
from showwork.tracking.mlflow_format import (
    ABANDONED_TAG,
    ACTIVE_METRIC,
    EXPERIMENT_KIND,
    EXPERIMENT_KIND_TAG,
    NUM_TRIALS_METRIC,
    ROLE_TAG,
    SEARCH_ID_TAG,
    SEARCH_TAG,
    TERMINAL_RUN_STATUSES,
    abandoned_runs,
    numeric_items,
)
from showwork.tracking.mlflow_import import entities
from showwork.tracking.mlflow_keys import PARAM_NAMES_TAG, key_names_tags
from showwork.tracking.parent_payload import environment_json, environment_tags, space_markdown, space_params
from showwork.tracking.run_entities import as_params, as_run_tags, checked_keys
from showwork.tracking.trial_runs import TrialRuns
from showwork.tracking.uris import artifact_root, default_artifact_location

if TYPE_CHECKING:  # pragma: no cover
    from mlflow.entities import Run

__all__ = ["Tracker"]


def _set_http_defaults(tracking_uri: str) -> None:
    """Short HTTP retries (the client retries itself; otherwise one unreachable call takes minutes), no run URLs printed."""
    if tracking_uri.startswith(("http://", "https://")):
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "30")
        # MLflow prints two "View run ... at URI" lines per ended run (an extra request each),
        # with the URI as given, password included; showwork prints its own summary.
        os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")


class Tracker:
    """The runs of one search in one MLflow experiment: its parent run, a child run per trial, each record's projection.

    Nothing touches MLflow until first use: the constructor is instant and cannot fail on an
    unreachable server; call :meth:`check_reachable` before starting trials. Every call goes through
    :attr:`mlflow`, a :class:`~showwork.tracking.client.RetryingClient`; a pickled tracker keeps
    neither its client nor a password.

    Parameters
    ----------
    tracking_uri : str
        ``sqlite:///...``, ``http(s)://...`` or any URI MLflow accepts.
    experiment_name : str
        The experiment, created if missing (the search's name), tagged
        ``mlflow.experimentKind=custom_model_development`` (a model-training experiment in MLflow 3's sidebar;
        its page still opens on the GenAI Overview: the links showwork prints go to the runs table,
        :func:`showwork.tracking.mlflow_format.runs_table_path`).
    artifact_location : str, optional
        Where a *new* experiment stores artifacts; default :func:`~showwork.tracking.uris.default_artifact_location`.
    attempts, backoff_s
        Tries per call and the first delay between them (:class:`~showwork.tracking.client.RetryingClient`).
    child_tags, child_run_name
        Extra tags of each trial index's child run, and the runs' name before the index
        (:class:`~showwork.tracking.trial_runs.TrialRuns`).
    """

    def __init__(
        self, tracking_uri: str, experiment_name: str, *, artifact_location: str | None = None,
        attempts: int = 5, backoff_s: float = 0.5, child_tags: Mapping[int, Mapping[str, str]] | None = None,
        child_run_name: str = "trial",
    ) -> None:
        if not isinstance(experiment_name, str) or not experiment_name.strip():
            raise InputError(f"MLflow experiment name must be a non-empty string, not {experiment_name!r}")
        self.mlflow = RetryingClient(tracking_uri, attempts=attempts, backoff_s=backoff_s)
        self.experiment_name = experiment_name
        self.artifact_location = artifact_location or default_artifact_location(self.mlflow.tracking_uri, experiment_name)
        _set_http_defaults(self.mlflow.tracking_uri)
        self._experiment_id: str | None = None
        self.active_before: dict[str, float] = {}  # parent run id -> its metric active_s when this driver re-opened it
        self.trials = TrialRuns(self.mlflow, self._experiment, experiment_name, child_tags, child_run_name)

    def __repr__(self) -> str:
        return f"Tracker({self.shown_uri!r}, {self.experiment_name!r})"

    tracking_uri = property(lambda self: self.mlflow.tracking_uri, doc="The tracking URI (a pickled copy: without password).")
    shown_uri = property(lambda self: self.mlflow.shown_uri, doc="The tracking URI for messages: no user or password.")
    client = property(lambda self: self.mlflow.client, doc="The ``MlflowClient`` (mlflow is imported on first access).")
    down = property(lambda self: self.mlflow.down, doc="Whether MLflow has not answered since a call failed every attempt.")
    known_experiment_id = property(lambda self: self._experiment_id,
                                   doc="The experiment's id if this tracker has got it already, else None (no MLflow call).")

    # -- the experiment

    @property
    def experiment_id(self) -> str:
        """The id of the experiment, created (or given its kind tag) on first access."""
        if self._experiment_id is None:
            self._experiment_id = self.mlflow.call("getting the experiment", self._get_or_create_experiment)
        return self._experiment_id

    def _experiment(self) -> str:
        return self.experiment_id

    def _get_or_create_experiment(self) -> str:
        experiment = self.client.get_experiment_by_name(self.experiment_name)
        if experiment is None:
            root = artifact_root(self.mlflow.tracking_uri)
            default = self.artifact_location == default_artifact_location(self.mlflow.tracking_uri, self.experiment_name)
            if root is not None and default and not root.exists():
                owner_only_folder(root)  # MLflow would make it 0755 at the first artifact; an existing one keeps its mode
            try:
                return self.client.create_experiment(
                    self.experiment_name, artifact_location=self.artifact_location,
                    tags={SEARCH_TAG: self.experiment_name, EXPERIMENT_KIND_TAG: EXPERIMENT_KIND},
                )
            except Exception as error:
                if "already exists" not in str(error).lower():  # created meanwhile by someone else
                    raise
                experiment = self.client.get_experiment_by_name(self.experiment_name)
                if experiment is None:
                    raise
        if experiment.lifecycle_stage != "active":
            raise InputError(
                f"MLflow at {self.shown_uri}: experiment {self.experiment_name!r} (id {experiment.experiment_id})"
                " is deleted; restore it (`mlflow experiments restore`), delete it for good"
                " (`mlflow gc`), or name the search differently"
            )
        if EXPERIMENT_KIND_TAG not in experiment.tags:  # made by an earlier showwork
            self.client.set_experiment_tag(experiment.experiment_id, EXPERIMENT_KIND_TAG, EXPERIMENT_KIND)
        return experiment.experiment_id

    def check_reachable(self, timeout_s: float = 5.0) -> None:
        """Make one cheap call (no retries, ``timeout_s`` per HTTP request), then get the experiment.

        Raises
        ------
        TrackingUnavailableError
            If the server or database cannot be reached or read; the message names the URI.
        InputError
            If the experiment exists but is deleted.
        """
        self.mlflow.probe(timeout_s)
        self.experiment_id  # noqa: B018  (creates the experiment now, not mid-search)

    def _find_runs(self, filter_string: str) -> list[Run]:
        return all_runs(self.client, self.experiment_id, filter_string)

    # -- the parent run

    def start_parent(
        self, run_name: str, params: Mapping[str, Any], tags: Mapping[str, Any], artifacts: Mapping[str, str], *,
        environment: Mapping[str, Any] | None = None, space: Mapping[str, Any] | None = None,
        search_id: str | None = None,
    ) -> str:
        """Create the parent run of a search; log its params, tags and text artifacts; return its run id.

        With ``search_id`` (the ledger's id of the search), the run is found or created by its tag
        ``showwork.search_id`` and the params already there are left as they are: a driver killed
        after creating the run, or a creation whose reply was lost, leaves no second parent.
        ``params`` are logged as text (at most 6000 characters) under the keys of
        :func:`showwork.tracking.mlflow_keys.mlflow_keys`, except ``num_trials``, which a resume may
        raise: it is the metric ``num_trials`` (:meth:`log_num_trials`). ``tags`` get
        ``showwork.search`` and ``showwork.role=parent``; ``artifacts`` maps file names to text.
        ``environment`` (:func:`showwork.environment.collect_environment`) adds the tags of
        :func:`~showwork.tracking.parent_payload.environment_tags` and ``environment.json``; ``space`` adds params
        ``space.<name>`` and ``space.md`` (see :func:`~showwork.tracking.parent_payload.parent_payload`).
        """
        params, artifacts = dict(params), dict(artifacts)
        num_trials = params.pop("num_trials", None)
        all_tags: dict[str, Any] = {}
        if environment is not None:
            all_tags.update(environment_tags(environment))
            artifacts.setdefault("environment.json", environment_json(environment))
        if space is not None:
            params.update({k: v for k, v in space_params(space).items() if k not in params})
            artifacts.setdefault("space.md", space_markdown(space))
        all_tags.update({SEARCH_TAG: self.experiment_name, ROLE_TAG: "parent", **tags})  # re-runs name their own role
        if search_id is not None:
            if not isinstance(search_id, str) or not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", search_id):
                raise InputError(f"start_parent: search_id must be 1 to 64 letters, digits, '_' or '-', not {search_id!r}")
            all_tags[SEARCH_ID_TAG] = search_id
        experiment_id = self.experiment_id

        def find_or_create() -> Run:  # one retried unit: a retry searches again before creating
            if search_id is not None:
                found = self._find_runs(f"tags.`{SEARCH_ID_TAG}` = '{search_id}'")
                if found:
                    return found[0]
            first_tags = {SEARCH_TAG: self.experiment_name, **({SEARCH_ID_TAG: search_id} if search_id else {})}
            return self.client.create_run(experiment_id, run_name=run_name, tags=first_tags)

        run = self.mlflow.call("creating the parent run", find_or_create)
        faults.point("parent-created")
        run_id = run.info.run_id
        param_entities, keys = as_params(params, run.data.tags)
        new_params = [entity for entity in param_entities if entity.key not in run.data.params]
        all_tags.update(key_names_tags(keys, PARAM_NAMES_TAG))
        self.mlflow.call(
            "logging the parent's params and tags",
            lambda: self.mlflow.log_batch(run_id, params=new_params, tags=as_run_tags(all_tags)),
        )
        for name, text in artifacts.items():
            self.mlflow.call(f"logging artifact {name}", lambda name=name, text=text: self.client.log_text(run_id, text, name))
        if num_trials is not None:
            self.log_num_trials(run_id, int(num_trials))
        return run_id

    def log_num_trials(self, run_id: str, num_trials: int) -> None:
        """Log the search's number of trials as the parent's metric ``num_trials``, a new step when it changed.

        A param cannot change in MLflow, and a resume with ``--num-trials`` extends a search
        (25 -> 30): the metric's last value is the current number, its history the earlier ones.
        """
        Metric = entities()[0]  # noqa: N806

        def log() -> None:  # one retried unit: read, then log only if the last value differs
            history = self.client.get_metric_history(run_id, NUM_TRIALS_METRIC)
            if not history or history[-1].value != num_trials:
                point = Metric(NUM_TRIALS_METRIC, float(num_trials), int(time.time() * 1000), len(history))
                self.mlflow.log_batch(run_id, metrics=[point])

        self.mlflow.call("logging the number of trials", log)

    def resume_parent(self, run_id: str, num_trials: int | None = None) -> None:
        """Set the parent run of a resumed search back to RUNNING (and log its ``num_trials``, if given).

        Raises
        ------
        InputError
            If the run does not exist, is deleted or belongs to another experiment.
        """
        run = self.mlflow.call("reading the parent run", lambda: self.mlflow.get_run(run_id))
        if run.info.experiment_id != self.experiment_id:
            raise InputError(
                f"MLflow at {self.shown_uri}: run {run_id} belongs to experiment {run.info.experiment_id},"
                f" not to {self.experiment_name!r} ({self.experiment_id})"
            )
        if run.info.lifecycle_stage != "active":
            raise InputError(f"MLflow at {self.shown_uri}: parent run {run_id} is deleted; restore it or start afresh")
        self.active_before[run_id] = float(run.data.metrics.get(ACTIVE_METRIC, 0.0))
        self.mlflow.call("resuming the parent run", lambda: self.client.update_run(run_id, status="RUNNING"))
        if num_trials is not None:
            self.log_num_trials(run_id, num_trials)

    def finish_parent(self, run_id: str, status: str = "FINISHED", summary_metrics: Mapping[str, Any] | None = None) -> None:
        """Log summary metrics (numbers only) on the parent and terminate it with ``status`` (FINISHED, FAILED, KILLED)."""
        if status not in TERMINAL_RUN_STATUSES:
            raise InputError(f"finish_parent: status must be one of {', '.join(TERMINAL_RUN_STATUSES)}, not {status!r}")
        Metric = entities()[0]  # noqa: N806

        now = int(time.time() * 1000)
        summary = numeric_items(summary_metrics or {})
        keys = checked_keys((k for k, _ in summary), {})  # showwork's own names: each its own key
        metrics = [Metric(keys[k], v, now, 0) for k, v in summary]
        self.mlflow.call("logging the summary metrics", lambda: self.mlflow.log_batch(run_id, metrics=metrics))
        faults.point("summary-logged")
        self.mlflow.call("terminating the parent run", lambda: self.client.set_terminated(run_id, status))

    def log_report(self, run_id: str, directory: str | os.PathLike, artifact_path: str = "report") -> None:
        """Log every file under ``directory`` (subfolders kept) as artifacts of a run, under ``artifact_path``.

        Works on a terminated run too. Files already there under the same names are replaced, so a
        retry or the same report again is harmless; ``""`` is the run's artifact root.

        Raises
        ------
        InputError
            ``directory`` is not a directory, or there is no run ``run_id``.
        TrackingUnavailableError
            MLflow stayed unreachable through every retry.
        """
        directory = Path(directory)
        if not directory.is_dir():
            raise InputError(f"log_report: {directory} is not a directory")

        def log() -> None:  # one retried unit; logging the same files again overwrites them
            self.mlflow.get_run(run_id)
            self.client.log_artifacts(run_id, str(directory), artifact_path or None)

        self.mlflow.call(f"logging the report {directory} on run {run_id}", log)

    def abandon_other_attempts(self, search_id: str, ledger: str) -> list[str]:
        """Tag ``showwork.abandoned=<search_id>`` on every run of the abandoned attempts of this search
        (:func:`~showwork.tracking.mlflow_format.abandoned_runs`: a ledger removed, the search begun again
        under the same name); return their ids. Runs already tagged are left as they are."""
        # most starts find nothing: the parents alone say so (an abandoned attempt's parent is tagged last)
        parents = self.mlflow.call("listing the searches' parent runs", lambda: self._find_runs(f"tags.`{ROLE_TAG}` = 'parent'"))
        if not abandoned_runs(parents, self.experiment_name, search_id, ledger):
            return []
        runs = self.mlflow.call("listing the experiment's runs", lambda: self._find_runs(""))
        found = abandoned_runs(runs, self.experiment_name, search_id, ledger)
        for run in found:
            self.mlflow.call(f"tagging run {run.info.run_id} abandoned",
                             lambda run=run: self.client.set_tag(run.info.run_id, ABANDONED_TAG, search_id))
        return [run.info.run_id for run in found]

    # -- the trials' runs (TrialRuns)

    def children(self, parent_run_id: str) -> dict[int, Run]:
        """:meth:`TrialRuns.children`."""
        return self.trials.children(parent_run_id)

    def child_run(self, parent_run_id: str, index: int, start_time: str | None = None) -> str:
        """:meth:`TrialRuns.child_run`."""
        return self.trials.child_run(parent_run_id, index, start_time)

    def supersede_child(self, parent_run_id: str, record: TrialRecord, position: int) -> str | None:
        """:meth:`TrialRuns.supersede`."""
        return self.trials.supersede(parent_run_id, record, position)

    def delete_stale_children(self, parent_run_id: str, completed: Iterable[int]) -> list[str]:
        """:meth:`TrialRuns.delete_stale`."""
        return self.trials.delete_stale(parent_run_id, completed)

    def log_epoch(self, run_id: str, metrics: Mapping[str, Any], step: int) -> None:
        """:meth:`TrialRuns.log_epoch`."""
        self.trials.log_epoch(run_id, metrics, step)

    def write_trial(self, parent_run_id: str, index: int, started_at: str | None, rows: Sequence[Mapping[str, Any]] = (),
                    *, params: Mapping[str, Any] | None = None, seed: int | None = None,
                    record: TrialRecord | None = None) -> str:
        """:meth:`TrialRuns.write_trial`."""
        run_id = self.trials.write_trial(parent_run_id, index, started_at, rows, params=params, seed=seed, record=record)
        if record is not None:
            self._trial_logged()
        return run_id

    def log_trial(self, parent_run_id: str, record: TrialRecord) -> str:
        """:meth:`TrialRuns.log_trial`."""
        run_id = self.trials.log_trial(parent_run_id, record)
        self._trial_logged()
        return run_id

    @staticmethod
    def _trial_logged() -> None:
        faults.point("trial-logged")
