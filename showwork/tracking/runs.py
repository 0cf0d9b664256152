"""The projection of a search's ledger into MLflow: one parent run per search, one child run per trial index.

MLflow is a *view* of the ledger (:mod:`showwork.store.ledger`), never the source of truth. Only the
driver writes to it, through :class:`Tracker`, which uses ``mlflow.tracking.MlflowClient``
explicitly (no global active run) through :class:`showwork.tracking.mlflow_client.RetryingClient` (retries,
the "MLflow is down" mode) and makes every write idempotent: a child run is found by its trial
index before one is created, metric points already logged are not logged again, and a run whose
projection is complete carries the tag ``showwork.logged=1``. So the projection can be replayed at
any time — after a driver crash or an MLflow outage — with :func:`sync_ledger`.

What goes where (tag and param names, a record's params, metrics and tags, start and end times) is
:mod:`showwork.tracking.mlflow_format`, which :mod:`showwork.report.inputs` reads back with. A trial index
has one child run, always: its start time is the worker's trial start and its end time that plus
the record's ``runtime_s``; a run left by an attempt that did not finish (a killed driver, an
interrupted search, a worker Ray restarted) is deleted when its trial runs again or the search is
resumed, so MLflow never shows a trial twice. Param and metric names go to MLflow under the
injective keys of :func:`showwork.tracking.mlflow_format.mlflow_keys`, recorded in the run's tags.

``mlflow`` is imported lazily, on first use, so that ``import showwork`` stays light.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from showwork import faults
from showwork.errors import InputError
from showwork.redaction import owner_only_folder
from showwork.store.ledger import Ledger, TrialRecord
from showwork.tracking.mlflow_client import (
    RetryingClient,
    TrackingUnavailableError,
    all_runs,
    check_run_id,
    entities,
    prepare_store,
    read_client,
    short_reason,
    sqlite_path,
)
from showwork.tracking.mlflow_format import (
    ACTIVE_METRIC,
    EXPERIMENT_KIND,
    EXPERIMENT_KIND_TAG,
    HISTORY_TAG,
    LOGGED_TAG,
    MAX_KEY_LENGTH,
    MAX_PARAM_LENGTH,
    METRIC_NAMES_TAG,
    NUM_TRIALS_METRIC,
    PARAM_NAMES_TAG,
    PARENT_TAG,
    PROJECTION_ERROR_TAG,
    RESERVED_PARAMS,
    ROLE_TAG,
    SEARCH_ID_TAG,
    SEARCH_TAG,
    TERMINAL_RUN_STATUSES,
    TRIAL_INDEX_TAG,
    KeyCollisionError,
    clamped,
    epoch_millis,
    epoch_points,
    key_names,
    key_names_tags,
    mlflow_keys,
    numeric_items,
    param_name,
    run_times,
    shown_name,
    stale_trial_runs,
    trial_params,
    trial_projection,
    trial_runs,
)
from showwork.values import is_integer

if TYPE_CHECKING:  # pragma: no cover
    from mlflow.entities import Run

__all__ = [
    "TrackingUnavailableError",
    "Tracker",
    "chosen_tracking_uri",
    "default_tracking_uri",
    "all_runs",
    "check_param_names",
    "environment_tags",
    "parent_payload",
    "prepare_store",
    "read_client",
    "recorded_tracking_uri",
    "space_markdown",
    "sync_ledger",
]

MAX_TAG_LENGTH = 8000  # mlflow.utils.validation.MAX_TAG_VAL_LENGTH
_KEY_CHARS = re.compile(r"[^A-Za-z0-9_\-. :/]")


def default_tracking_uri(workdir: str | os.PathLike) -> str:
    """Return ``sqlite:///<absolute path>/mlflow.db`` for a working directory (nothing is created)."""
    return f"sqlite:///{Path(workdir).expanduser().resolve() / 'mlflow.db'}"


def chosen_tracking_uri(given: str | None) -> str:
    """The MLflow store a command or :func:`showwork.search` uses: ``given``, else ``$MLFLOW_TRACKING_URI``, else
    :func:`default_tracking_uri` of the current directory (``sqlite:///<cwd>/mlflow.db``)."""
    if given:
        return given
    return os.environ.get("MLFLOW_TRACKING_URI") or default_tracking_uri(Path.cwd())


def recorded_tracking_uri(storage_dir: str | os.PathLike, name: str, given: str | None) -> str:
    """The MLflow store of a search that continues from its ledger (``resume``, ``rerun``): ``given``, else
    ``$MLFLOW_TRACKING_URI``, else the store the search recorded, else :func:`default_tracking_uri` of the
    current directory."""
    if given or os.environ.get("MLFLOW_TRACKING_URI"):
        return chosen_tracking_uri(given)
    return Ledger(Path(storage_dir), name).read_meta().get("tracking_uri") or chosen_tracking_uri(None)


def default_artifact_location(tracking_uri: str, experiment_name: str) -> str | None:
    """Where a new experiment keeps its artifacts: beside a SQLite database, else the server's choice (None).

    MLflow's own default is ``./mlruns`` under whatever the current directory is.
    """
    root = _artifact_root(tracking_uri)
    return None if root is None else (root / re.sub(r"[^A-Za-z0-9._-]", "_", experiment_name)).as_uri()


def _artifact_root(tracking_uri: str) -> Path | None:
    """``mlartifacts/`` beside a SQLite database, the folder of every default artifact location; None for a server."""
    database = sqlite_path(tracking_uri)
    return None if database is None else database.parent / "mlartifacts"


def _set_http_defaults(tracking_uri: str) -> None:
    """Short HTTP retries (the client retries itself; otherwise one unreachable call takes minutes), no run URLs printed."""
    if tracking_uri.startswith(("http://", "https://")):
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "30")
        # MLflow prints two "View run ... at URI" lines per ended run (an extra request each),
        # with the URI as given, password included; showwork prints its own summary.
        os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")


def _tag_key(name: str) -> str:
    """An MLflow-legal tag key for showwork's own tag names: other characters become ``_``; at most 250 characters.

    Params and metrics, whose names come from the user, go through :func:`showwork.tracking.mlflow_format.mlflow_keys`
    instead (injective, recorded on the run).
    """
    return _KEY_CHARS.sub("_", str(name))[:MAX_KEY_LENGTH] or "_"


def _renaming_warning(kind: str, keys: Mapping[str, str], tag: str) -> str | None:
    """One line naming the ``kind`` (param, metric) names that MLflow gets under another key, or None."""
    renamed = sorted((name, key) for name, key in keys.items() if name != key)
    if not renamed:
        return None
    shown = "; ".join(f"{shown_name(name)} as {shown_name(key)}" for name, key in renamed[:5])
    more = f"; and {len(renamed) - 5} more" if len(renamed) > 5 else ""
    return (
        f"MLflow keys are at most {MAX_KEY_LENGTH} letters, digits and _-. :/ characters, so these {kind} names are"
        f" logged under other keys (the run's tag {tag} maps them back; showwork report mlflow: reads the names):"
        f" {shown}{more}"
    )


def check_param_names(names: Iterable[str], where: str = "the search space") -> dict[str, str]:
    """Map hyperparameter names to the MLflow param keys of a search (``hp.`` prefix, ``space.`` on the parent).

    Call it before a search starts: it warns once about the names MLflow gets under another key and
    refuses names built so that no two distinct keys are left.

    Returns
    -------
    dict
        ``{name: key}`` of the child runs' params.

    Raises
    ------
    InputError
        Two names cannot be given distinct keys (the message names both).
    """
    names = list(names)
    child = {param_name(name): name for name in names}
    try:
        keys = mlflow_keys([*child, *RESERVED_PARAMS])
        parent_keys = mlflow_keys(f"space.{name}" for name in names)  # the parent's description of the space
    except KeyCollisionError as error:
        raise InputError(f"{where}: parameters {error}") from None
    message = _renaming_warning("parameter", {**parent_keys, **keys}, PARAM_NAMES_TAG)
    if message:
        warnings.warn(message, stacklevel=2)
    return {child[name]: key for name, key in keys.items() if name in child}


def _mlflow_keys(names: Iterable[Any], taken: Mapping[str, str]) -> dict[str, str]:
    """:func:`showwork.tracking.mlflow_format.mlflow_keys`, its refusal as an InputError (names built to collide)."""
    try:
        return mlflow_keys((str(name) for name in names), taken)
    except KeyCollisionError as error:
        raise InputError(f"MLflow: {error}") from None


def _truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _tags(tags: Mapping[str, Any]) -> list:
    """``RunTag`` entities under legal keys, values cut to MLflow's 8000 characters."""
    RunTag = entities()[2]  # noqa: N806

    return [RunTag(_tag_key(name), _truncate(str(value), MAX_TAG_LENGTH)) for name, value in tags.items()]


def _params(params: Mapping[str, Any], run_tags: Mapping[str, str]) -> tuple[list, dict[str, str]]:
    """Params under injective keys (those already recorded in ``run_tags`` kept): ``(entities, {name: key})``."""
    Param = entities()[1]  # noqa: N806

    keys = _mlflow_keys(params, key_names(run_tags, PARAM_NAMES_TAG))
    return [Param(keys[str(name)], _truncate(str(value), MAX_PARAM_LENGTH)) for name, value in params.items()], keys


def _describe(distribution: Any) -> str:
    """A distribution's readable description: its ``describe()`` if it has one, else ``str()``."""
    describe = getattr(distribution, "describe", None)
    return str(describe()) if callable(describe) else str(distribution)


def space_markdown(space: Mapping[str, Any], title: str = "Search space") -> str:
    """Return a Markdown table of the search space.

    ``space`` maps each hyperparameter name to a distribution (its ``describe()`` is used, e.g.
    a :class:`showwork.space.SearchSpace`) or directly to a description string.
    """
    lines = [f"# {title}", "", "| hyperparameter | distribution |", "| --- | --- |"]
    for name, description in _descriptions(space).items():
        cell = description.replace("|", "\\|").replace("\n", " ")
        lines.append(f"| `{name}` | {cell} |")
    return "\n".join(lines) + "\n"


def environment_tags(environment: Mapping[str, Any]) -> dict[str, str]:
    """Return run tags from :func:`showwork.environment.collect_environment` output.

    ``showwork.git_commit`` and ``mlflow.source.git.commit`` (the commit the MLflow UI shows),
    ``showwork.git_dirty``, ``showwork.cpu``, ``showwork.gpu``, ``showwork.gpu_count``,
    ``showwork.cuda``, ``showwork.nvidia_driver``, ``showwork.python`` and one
    ``showwork.package.<name>`` per installed package. Unknown values are left out.
    """
    tags: dict[str, str] = {}
    commit = environment.get("git_commit")
    if commit:
        tags["showwork.git_commit"] = str(commit)
        tags["mlflow.source.git.commit"] = str(commit)
    if environment.get("git_dirty") is not None:
        tags["showwork.git_dirty"] = str(bool(environment["git_dirty"])).lower()
    for tag, key in (
        ("showwork.cpu", "cpu_model"), ("showwork.gpu", "gpu_model"), ("showwork.gpu_count", "gpu_count"),
        ("showwork.cuda", "cuda_version"), ("showwork.nvidia_driver", "nvidia_driver"), ("showwork.python", "python"),
    ):
        if environment.get(key) is not None:
            tags[tag] = _truncate(str(environment[key]), MAX_TAG_LENGTH)
    for name, version in (environment.get("packages") or {}).items():
        if version:
            tags[f"showwork.package.{name}"] = str(version)
    return tags


def parent_payload(
    spec_yaml: str,
    seed: int,
    num_trials: int,
    space: Mapping[str, Any],
    environment: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], dict[str, str], dict[str, str]]:
    """Return ``(params, tags, artifacts)`` for :meth:`Tracker.start_parent` of a search.

    Parameters
    ----------
    spec_yaml : str
        The search's YAML file, as written (artifact ``search.yaml``).
    seed, num_trials : int
        Params ``seed`` and ``num_trials``.
    space : mapping
        Hyperparameter name → distribution (or its description): params ``space.<name>``
        (truncated to MLflow's 6000 characters) and the artifact ``space.md``.
    environment : mapping, optional
        :func:`showwork.environment.collect_environment` output: tags (:func:`environment_tags`)
        and the artifact ``environment.json``.
    """
    params: dict[str, Any] = {"seed": seed, "num_trials": num_trials}
    params.update(_space_params(space))
    artifacts = {"search.yaml": spec_yaml, "space.md": space_markdown(space)}
    tags: dict[str, str] = {}
    if environment is not None:
        tags.update(environment_tags(environment))
        artifacts["environment.json"] = _environment_json(environment)
    return params, tags, artifacts


def _descriptions(space: Mapping[str, Any]) -> dict[str, str]:
    """Each hyperparameter's description, with its condition when it is conditional (a SearchSpace's ``conditions``)."""
    conditions = getattr(space, "conditions", {})
    return {
        name: _describe(distribution) + (f" (only when {conditions[name].describe()})" if name in conditions else "")
        for name, distribution in space.items()
    }


def _space_params(space: Mapping[str, Any]) -> dict[str, str]:
    return {f"space.{name}": description for name, description in _descriptions(space).items()}


def _environment_json(environment: Mapping[str, Any]) -> str:
    return json.dumps(environment, indent=2, sort_keys=True, default=str) + "\n"


# ---------------------------------------------------------------- the runs of a search


class Tracker:
    """The runs of one search in one MLflow experiment: its parent run, a child run per trial, each record's projection.

    Nothing touches MLflow until first use: the constructor is instant and cannot fail on an
    unreachable server; call :meth:`check_reachable` before starting trials. Every call goes through
    :attr:`mlflow`, a :class:`~showwork.tracking.mlflow_client.RetryingClient`; a pickled tracker keeps
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
        Where a *new* experiment stores artifacts; default :func:`default_artifact_location`.
    attempts, backoff_s
        Tries per call and the first delay between them (:class:`~showwork.tracking.mlflow_client.RetryingClient`).
    child_tags, child_run_name
        Extra tags of each trial index's child run, and the runs' name before the index (:class:`TrialRuns`).
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
            root = _artifact_root(self.mlflow.tracking_uri)
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
        :func:`showwork.tracking.mlflow_format.mlflow_keys`, except ``num_trials``, which a resume may
        raise: it is the metric ``num_trials`` (:meth:`log_num_trials`). ``tags`` get
        ``showwork.search`` and ``showwork.role=parent``; ``artifacts`` maps file names to text.
        ``environment`` (:func:`showwork.environment.collect_environment`) adds the tags of
        :func:`environment_tags` and ``environment.json``; ``space`` adds params ``space.<name>``
        and ``space.md`` (see :func:`parent_payload`).
        """
        params, artifacts = dict(params), dict(artifacts)
        num_trials = params.pop("num_trials", None)
        all_tags: dict[str, Any] = {}
        if environment is not None:
            all_tags.update(environment_tags(environment))
            artifacts.setdefault("environment.json", _environment_json(environment))
        if space is not None:
            params.update({k: v for k, v in _space_params(space).items() if k not in params})
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
        param_entities, keys = _params(params, run.data.tags)
        new_params = [entity for entity in param_entities if entity.key not in run.data.params]
        all_tags.update(key_names_tags(keys, PARAM_NAMES_TAG))
        self.mlflow.call(
            "logging the parent's params and tags",
            lambda: self.mlflow.log_batch(run_id, params=new_params, tags=_tags(all_tags)),
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
        keys = _mlflow_keys((k for k, _ in summary), {})  # showwork's own names: each its own key
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

    # -- the trials' runs (TrialRuns)

    def children(self, parent_run_id: str) -> dict[int, Run]:
        """:meth:`TrialRuns.children`."""
        return self.trials.children(parent_run_id)

    def child_run(self, parent_run_id: str, index: int, start_time: str | None = None) -> str:
        """:meth:`TrialRuns.child_run`."""
        return self.trials.child_run(parent_run_id, index, start_time)

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
    batch, each one :meth:`~showwork.tracking.mlflow_client.RetryingClient.unit` (one COMMIT on SQLite).
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

    def _list(self, parent_run_id: str, index: int | None = None) -> list[Run]:
        check_run_id(parent_run_id)
        where = f"tags.`{PARENT_TAG}` = '{parent_run_id}'"
        where += f" and tags.`{TRIAL_INDEX_TAG}` = '{index}'" if index is not None else ""
        runs = all_runs(self.mlflow.client, self._experiment(), where)
        if index is None:  # all the parent's runs: the indices with a run this driver did not make
            others = [run for run in runs if run.info.run_id not in self._live]
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
                kept = [run for run in runs if run not in stale]
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

        Call it when resuming, after :func:`sync_ledger`, with ``ledger.completed_indices()``: each
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
        entities_, keys = _params(trial_params(index, params, seed), {})
        return entities_, _tags(key_names_tags(keys, PARAM_NAMES_TAG))

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
        tags = _tags({**trial.tags, HISTORY_TAG: "1", LOGGED_TAG: "1"})
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
        The run is read back first: this is the replay's way (:func:`sync_ledger`); one unit.
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
        param_entities, param_keys = _params(trial.params, tags_now)
        recorded = key_names_tags(param_keys, PARAM_NAMES_TAG)
        tags = _tags({tag: value for tag, value in recorded.items() if tags_now.get(tag) != value})
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
                              tags=[*tags, *map_tags, *_tags({**trial.tags, HISTORY_TAG: "1", LOGGED_TAG: "1"})])
        self.mlflow.client.set_terminated(run_id, trial.run_status, end_time=trial.end_ms)
        return keys

    def mark_refused(self, parent_run_id: str, record: TrialRecord, error: BaseException) -> str | None:
        """Tag trial ``record.index``'s run with why MLflow refused its projection and end it FAILED; its id, or None.

        Raises
        ------
        TrackingUnavailableError
            MLflow stayed unreachable (the record is replayed later).
        """
        reason = _truncate(" ".join(f"{type(error).__name__}: {short_reason(error)}".split()), MAX_TAG_LENGTH)
        self.refused[(parent_run_id, record.index)] = reason
        _, end_ms = run_times(record.started_at, record.runtime_s)
        try:
            run_id = self.child_run(parent_run_id, record.index, start_time=record.started_at)

            def mark() -> None:
                self.mlflow.log_batch(run_id, tags=_tags({PROJECTION_ERROR_TAG: reason}))
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
        keys = _mlflow_keys(names, known)
        new = {name: key for name, key in keys.items() if key != name and key not in known}
        if not new:
            return keys, []
        recorded = {**known, **{key: name for name, key in new.items()}}
        message = _renaming_warning("metric", {n: k for n, k in new.items() if n not in self._warned}, METRIC_NAMES_TAG)
        self._warned.update(new)
        if message:
            warnings.warn(f"{message} (in every trial that reports them)", stacklevel=5)
        return keys, _tags(key_names_tags({name: key for key, name in recorded.items()}, METRIC_NAMES_TAG))

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


# ---------------------------------------------------------------- replay


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
    record is logged with :meth:`Tracker.log_trial` and its run id written back into the ledger
    (``replace=True``, the only field that changes). A record whose run id points elsewhere (an
    MLflow database that was lost, another server) gets a new child run.

    A record whose projection MLflow refuses (issue 23 item 2: a value it cannot store, whatever
    the error) does not stop the others: its run is tagged ``showwork.projection_error`` with the
    reason and ended FAILED (:meth:`TrialRuns.mark_refused`), one warning line names the trial,
    and this tracker does not try it again (the next driver, a resume, does).

    Raises
    ------
    TrackingUnavailableError
        If MLflow becomes unreachable; the records logged so far keep their run ids.
    """
    children = tracker.children(parent_run_id)
    logged = 0
    for record in ledger.records() if records is None else records:
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
        f"MLflow refused trial {record.index}'s record ({_truncate(reason, 300)}); {where}. The ledger keeps the trial:"
        " a report of the search is complete, a report of its MLflow runs (mlflow:) lacks it; a resume tries again.",
        stacklevel=3,
    )
    return run_id
