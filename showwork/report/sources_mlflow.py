"""A report's trials from an MLflow tracking store (:func:`from_mlflow`): two readers behind one entry point.

- :func:`_showwork_search` — a ``showwork search``'s parent run (tag ``showwork.role=parent``): its trial
  runs in trial order, with the statuses, measurements and spec the search recorded (the ledger's projection);
- :func:`_other_programs_runs` — any other program's runs (a plain ``mlflow.start_run`` loop, another tuner):
  one trial per run, in order of start time.

The MLflow format (tags, keys, how a record becomes a run) is :mod:`showwork.tracking.mlflow_format`'s.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import tempfile
import warnings
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from showwork.errors import InputError
from showwork.redaction import strip_credentials
from showwork.report.inputs import FINISHED, SHOWWORK_SEARCH, FamilyResults, sampler_of, unknown_sampler
from showwork.space import SpecError, load_search_spec
from showwork.store import failure_kind
from showwork.tracking.client import all_runs
from showwork.tracking.mlflow_format import (
    ABANDONED_TAG,
    MEASURED_METRICS,
    NUM_TRIALS_METRIC,
    PARENT_TAG,
    ROLE_TAG,
    SEARCH_TAG,
    SOURCE_COMMIT_TAG,
    SOURCE_NAME_TAG,
    SUPERSEDED_TAG,
    TERMINAL_RUN_STATUSES,
    TRIAL_INDEX_TAG,
    counted_run,
    param_value,
    run_metrics,
    run_params,
    trial_fields,
    trial_runs,
)
from showwork.tracking.store import read_client

__all__ = ["from_mlflow"]

_MLFLOW_RUN_ID = re.compile(r"[0-9a-fA-F]{32}")


def from_mlflow(
    tracking_uri: str,
    experiment_or_run: str,
    *,
    score: str | None = None,
    runtime: str | None = None,
    test: str | None = None,
    minimize: bool | None = None,
    label: str | None = None,
    sampler: str | None = None,
) -> FamilyResults:
    """Read one search from an MLflow tracking store.

    A ``showwork search`` logs one parent run (tag ``showwork.role=parent``) and one child run per
    trial (tag ``showwork.trial_index``); its trials are the terminated child runs, in trial order.
    Any other experiment (a plain ``mlflow.start_run`` loop, another tuner) is read as one trial per
    top-level run, or per child run of the parent run named, in order of start time.

    Parameters
    ----------
    tracking_uri : str
        Any URI MLflow accepts (``sqlite:///path/mlflow.db``, ``http://host:5000``, ...). A
        SQLite database must exist: nothing is created.
    experiment_or_run : str
        An experiment name, an experiment id, or the run id (32 hex digits) of a parent run.
    score : str, optional
        The metric holding each trial's validation score. showwork searches: default
        ``best_val_score`` (the search's ``metric``). Other experiments: required. MLflow keeps the
        last value logged under a key, so log the trial's final score under its own key.
    runtime : str, optional
        A metric of per-trial wall time in seconds. Default: ``runtime_s`` for showwork trials,
        otherwise the run's end time minus its start time (NaN while it has no end time).
    test : str, optional
        A metric of per-trial test scores. Default: ``test_score`` for showwork searches, none
        otherwise.
    minimize : bool, optional
        Lower scores are better. Default: the search's ``mode`` for showwork searches, else False.
    label : str, optional
        The family's name; default the search's (or experiment's) name.
    sampler : str, optional
        ``--sampler``: how another program's runs drew their configurations (``random``: i.i.d.
        draws); unknown otherwise. A showwork search is a random search (anything else is refused).

    Returns
    -------
    FamilyResults
        Failed trials keep a NaN score: showwork trials carry their recorded status (``finished``,
        ``failed`` or ``timeout``); other runs are ``finished`` when MLflow says FINISHED and the
        score is finite, ``failed`` otherwise (a run still RUNNING counts as failed, so read a
        search once it has ended). ``params`` are read back from MLflow's text (numbers, booleans,
        None, lists and dicts written by ``str``); ``meta`` has ``tracking_uri``, ``experiment``,
        ``experiment_id``, ``parent_run_id``, ``run_ids`` and ``score_key`` (the runs' metric holding
        the score), and for showwork searches ``seed``,
        ``num_trials``, ``family``, ``environment`` (artifact ``environment.json``) and
        ``spec_yaml``; ``spec`` is the artifact ``search.yaml`` (as validated by
        :func:`showwork.space.load_search_spec`, with the recorded seed and number of
        trials), None if absent.

    Raises
    ------
    InputError
        A missing SQLite file, an unreachable store (:class:`showwork.tracking.errors.TrackingUnavailableError`),
        no such experiment or run, a deleted one, a trial run given instead of its parent, several
        showwork searches in one experiment, no runs, ``score`` not given for a non-showwork
        experiment, or a named metric that no run has (the message lists the metrics there are).

    Notes
    -----
    MLflow is a view of a showwork search's ledger: trials that were never projected (MLflow
    down, not replayed since by ``showwork search --resume``) are missing here, and infinities come back from MLflow's
    clamp of +-1.797e308. Read the ledger (:func:`from_ledger`) when you have it. Deleted runs are
    ignored.
    """
    client = read_client(tracking_uri)
    tracking_uri = tracking_uri.strip()
    experiment, parent = _mlflow_search(client, tracking_uri, experiment_or_run)
    where = f"MLflow at {strip_credentials(tracking_uri)}, experiment {experiment.name!r}"  # the report's source: no password
    if parent is not None:
        where += f", parent run {parent.info.run_id}"
    meta: dict[str, Any] = {"tracking_uri": tracking_uri, "experiment": experiment.name,
                            "experiment_id": experiment.experiment_id,
                            "parent_run_id": parent.info.run_id if parent is not None else None}
    if parent is not None and parent.data.tags.get(ROLE_TAG) == "parent":
        fields = _showwork_search(client, experiment, parent, where, meta, score=score, runtime=runtime, test=test,
                                  minimize=minimize)
        recorded = SHOWWORK_SEARCH
    else:
        if parent is not None:
            runs = all_runs(client, experiment.experiment_id, f"tags.`{PARENT_TAG}` = '{parent.info.run_id}'")
        else:
            runs = [run for run in all_runs(client, experiment.experiment_id) if PARENT_TAG not in run.data.tags and counted_run(run)]
        fields = _other_programs_runs(runs, experiment, parent, where, meta, score=score, runtime=runtime, test=test,
                                      minimize=bool(minimize))
        recorded = unknown_sampler("another program's MLflow runs")
    meta["sampler"] = sampler_of(sampler, recorded, where)
    meta["score_key"] = score or "best_val_score"  # the runs' metric: the report's link orders their table by it
    name = fields.pop("name")
    return FamilyResults(name=label or name, source=where, meta=meta, **fields)


def _elapsed_s(runs: Sequence[Any]) -> np.ndarray:
    """Each run's end time minus its start time in seconds (NaN while it has no end time)."""
    return np.array([
        (run.info.end_time - run.info.start_time) / 1000 if run.info.end_time and run.info.start_time else math.nan
        for run in runs
    ])


def _showwork_search(client: Any, experiment: Any, parent: Any, where: str, meta: dict[str, Any], *,
                     score: str | None, runtime: str | None, test: str | None, minimize: bool | None) -> dict[str, Any]:
    """The :class:`FamilyResults` fields of a ``showwork search``'s parent run: its terminated trial runs in trial
    order, with the statuses, measurements and spec the search recorded (``meta`` gets ``run_ids`` and the
    parent's artifacts)."""
    every_run = all_runs(client, experiment.experiment_id, f"tags.`{PARENT_TAG}` = '{parent.info.run_id}'")
    children = trial_runs(every_run)
    superseded = Counter(run.data.tags.get(TRIAL_INDEX_TAG) for run in every_run if run.data.tags.get(SUPERSEDED_TAG) == "1")
    runs = [children[i] for i in sorted(children) if children[i].info.status in TERMINAL_RUN_STATUSES]
    if not runs:
        raise InputError(f"{where}: the search has no finished trial runs yet.")
    meta["run_ids"] = tuple(run.info.run_id for run in runs)
    # Names as the search had them: keys MLflow could not take as they were are mapped back (showwork.tracking.mlflow_format).
    metrics_of = [run_metrics(run) for run in runs]
    name = parent.data.tags.get(SEARCH_TAG) or experiment.name
    spec = _search_spec(client, parent, name, meta)
    search_params = parent.data.params
    spec_metric = (spec or {}).get("metric") or {}
    if minimize is None:
        minimize = (search_params.get("mode") or spec_metric.get("mode")) == "min"
    trials = [trial_fields(run) for run in runs]
    values = _metric_values(metrics_of, score or "best_val_score", "score", where, required=score is not None)
    statuses = tuple(trial.status for trial in trials)
    if runtime is None:
        recorded = np.array([trial.runtime_s for trial in trials], dtype=float)
        runtimes = np.where(np.isnan(recorded), _elapsed_s(runs), recorded)
    else:
        runtimes = _metric_values(metrics_of, runtime, "runtime", where)
    return {
        "name": name,
        "scores": np.where([status == FINISHED for status in statuses], values, math.nan),
        "statuses": statuses,
        "metric": score or search_params.get("metric") or spec_metric.get("name") or "best_val_score",
        "minimize": bool(minimize),
        "runtimes_s": runtimes,
        "test_scores": _metric_values(metrics_of, test or "test_score", "test", where, required=test is not None),
        "params": tuple(trial.params for trial in trials),
        "spec": spec,
        "trial_metrics": tuple(trial.trial_metrics for trial in trials),
        "trial_worker": tuple(
            {"python": trial.python, "packages": trial.packages,
             **{key: trial.measured.get(key) for key in MEASURED_METRICS}}
            for trial in trials
        ),
        "failure_kinds": tuple(failure_kind(trial.status, trial.error) for trial in trials),
        # a retried trial's earlier runs are tagged superseded (resume --retry-failed): its counted run is its last
        "trial_attempts": tuple(superseded[str(trial.index)] + 1 for trial in trials),
    }


def _other_programs_runs(runs: Sequence[Any], experiment: Any, parent: Any, where: str, meta: dict[str, Any], *,
                         score: str | None, runtime: str | None, test: str | None, minimize: bool) -> dict[str, Any]:
    """The :class:`FamilyResults` fields of any other program's runs (a plain ``mlflow.start_run`` loop, another
    tuner): one trial per run, in order of start time; finished where MLflow says FINISHED and the score is finite."""
    if not runs:
        raise InputError(f"{where}: no {'child ' if parent is not None else ''}runs.")
    meta["run_ids"] = tuple(run.info.run_id for run in runs)
    metrics_of = [run_metrics(run) for run in runs]
    if score is None:
        raise InputError(
            f"{where}: not a showwork search; name the score metric"
            f" (metrics: {', '.join(_metric_keys(metrics_of)) or 'none'})."
        )
    values = _metric_values(metrics_of, score, "score", where)
    statuses = tuple(
        FINISHED if run.info.status == "FINISHED" and math.isfinite(value) else "failed"
        for run, value in zip(runs, values)
    )
    # What MLflow itself records of the code: the script (mlflow.source.name) and its git commit.
    meta["run_sources"] = tuple(sorted({
        (run.data.tags.get(SOURCE_NAME_TAG), run.data.tags.get(SOURCE_COMMIT_TAG))
        for run in runs if run.data.tags.get(SOURCE_NAME_TAG) or run.data.tags.get(SOURCE_COMMIT_TAG)
    }, key=lambda source: (source[0] or "", source[1] or "")))
    return {
        "name": (parent.info.run_name if parent is not None else None) or experiment.name,
        "scores": np.where([status == FINISHED for status in statuses], values, math.nan),
        "statuses": statuses,
        "metric": score,
        "minimize": minimize,
        "runtimes_s": _elapsed_s(runs) if runtime is None else _metric_values(metrics_of, runtime, "runtime", where),
        "test_scores": None if test is None else _metric_values(metrics_of, test, "test", where),
        "params": tuple({k: param_value(v) for k, v in run_params(run).items()} for run in runs),
        "trial_metrics": tuple(metrics_of),
    }


def _mlflow_search(client: Any, tracking_uri: str, key: str) -> tuple[Any, Any]:
    """Resolve ``key`` to ``(experiment, parent run or None)``: a run id first, then a name, then an id.

    In an experiment (not a run), the parent is its showwork search's parent run, if it has one.
    """
    if not isinstance(key, str) or not key.strip():
        raise InputError(f"MLflow experiment or run must be a non-empty string, not {key!r}")
    key = key.strip()
    where = f"MLflow at {tracking_uri}"
    run = _mlflow_lookup(lambda: client.get_run(key)) if _MLFLOW_RUN_ID.fullmatch(key) else None
    if run is not None:
        if run.info.lifecycle_stage != "active":
            raise InputError(f"{where}: run {key} is deleted; restore it (`mlflow runs restore`).")
        if TRIAL_INDEX_TAG in run.data.tags or run.data.tags.get(ROLE_TAG) == "trial":
            raise InputError(
                f"{where}: run {key} is trial {run.data.tags.get(TRIAL_INDEX_TAG, '?')} of a search, not its parent;"
                f" pass the parent run {run.data.tags.get(PARENT_TAG, '?')} or the experiment."
            )
        if run.data.tags.get(ABANDONED_TAG):
            raise InputError(
                f"{where}: run {key} is of an abandoned attempt of search {run.data.tags.get(SEARCH_TAG, '?')!r}"
                f" (tag {ABANDONED_TAG}: its ledger was removed and the search begun again); pass the experiment,"
                " whose current attempt is read."
            )
        return client.get_experiment(run.info.experiment_id), run
    experiment = client.get_experiment_by_name(key)
    if experiment is None and key.isdigit():
        experiment = _mlflow_lookup(lambda: client.get_experiment(key))
        if experiment is not None and experiment.experiment_id != key:  # MLflow reads "007" as id 7
            experiment = None
    if experiment is None:
        looked_for = [f"no experiment named {key!r}"]
        if key.isdigit():
            looked_for.append("no experiment with that id")
        if _MLFLOW_RUN_ID.fullmatch(key):
            looked_for.append("no run with that id")
        names = [e.name for e in client.search_experiments(max_results=21)]
        shown = ", ".join(repr(n) for n in names[:20]) + (", ..." if len(names) > 20 else "")
        raise InputError(f"{where}: {' and '.join(looked_for)} (experiments: {shown or 'none'}).")
    if experiment.lifecycle_stage != "active":
        raise InputError(f"{where}: experiment {experiment.name!r} is deleted; restore it (`mlflow experiments restore`).")
    # the current attempt's: those of an attempt abandoned when its ledger was removed are left out
    parents = [run for run in all_runs(client, experiment.experiment_id, f"tags.`{ROLE_TAG}` = 'parent'") if counted_run(run)]
    if len(parents) > 1:
        ids = ", ".join(p.info.run_id for p in parents)
        raise InputError(
            f"{where}: experiment {experiment.name!r} holds {len(parents)} showwork searches; pass one parent run id ({ids})."
        )
    return experiment, (parents[0] if parents else None)


def _mlflow_lookup(get: Any) -> Any:
    """``get()``, or None where MLflow says the run or experiment does not exist."""
    try:
        return get()
    except Exception as error:
        if getattr(error, "error_code", None) == "RESOURCE_DOES_NOT_EXIST":
            return None
        raise


def _metric_keys(run_metrics: Sequence[Mapping[str, float]]) -> list[str]:
    return sorted({key for metrics in run_metrics for key in metrics})


def _metric_values(
    run_metrics: Sequence[Mapping[str, float]], key: str, role: str, where: str, required: bool = True
) -> np.ndarray:
    """Each run's last value of metric ``key`` (NaN where absent; read unclamped); a required key no run has is an error."""
    if required and not any(key in metrics for metrics in run_metrics):
        raise InputError(
            f"{where}: no run has the {role} metric {key!r} (metrics: {', '.join(_metric_keys(run_metrics)) or 'none'})."
        )
    return np.array([metrics.get(key, math.nan) for metrics in run_metrics], dtype=float)


# MLflow draws a tqdm "Downloading artifacts" bar on stderr for every download, read from this
# variable each time (mlflow/environment_variables.py; no API turns it off).
_MLFLOW_PROGRESS_BAR_VARIABLE = "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"


@contextlib.contextmanager
def _without_artifact_progress_bars() -> Iterator[None]:
    """MLflow's artifact progress bars off inside; the environment as it was after. A user's own setting wins."""
    if _MLFLOW_PROGRESS_BAR_VARIABLE in os.environ:
        yield
        return
    os.environ[_MLFLOW_PROGRESS_BAR_VARIABLE] = "false"
    try:
        yield
    finally:
        os.environ.pop(_MLFLOW_PROGRESS_BAR_VARIABLE, None)


def _search_spec(client: Any, parent: Any, name: str, meta: dict[str, Any]) -> dict | None:
    """Read a showwork search's parent artifacts into ``meta`` (environment, spec_yaml, seed, ...); return its spec.

    The artifacts are optional: an unreadable one is left out with a warning.
    """
    params = parent.data.params
    overrides = {}
    recorded = {"seed": param_value(params.get("seed", "")),
                # a metric since a resume may extend the search; a param in searches before it
                "num_trials": parent.data.metrics.get(NUM_TRIALS_METRIC, param_value(params.get("num_trials", "")))}
    for key, value in recorded.items():
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, int) and not isinstance(value, bool):
            meta[key] = overrides[key] = value
    if "family" in params:
        meta["family"] = params["family"]
    run_id = parent.info.run_id
    with tempfile.TemporaryDirectory(prefix="showwork-mlflow-") as scratch, _without_artifact_progress_bars():
        try:
            names = {info.path for info in client.list_artifacts(run_id)}
            if "environment.json" in names:
                path = client.download_artifacts(run_id, "environment.json", scratch)
                meta["environment"] = json.loads(Path(path).read_text(encoding="utf-8"))
            # The resolved file has the command line's overrides too (searches before it: the raw file).
            artifact = next((n for n in ("search.resolved.yaml", "search.yaml") if n in names), None)
            if artifact is None:
                return None
            path = Path(client.download_artifacts(run_id, artifact, scratch))
            meta["spec_yaml"] = path.read_text(encoding="utf-8")
        except Exception as error:  # the trials are what matters; the artifacts only add context
            warnings.warn(f"MLflow run {run_id}: could not read its artifacts ({error}); spec and environment left out.")
            return None
        try:
            spec = load_search_spec(path, overrides={"name": name, **overrides})
        except SpecError as error:  # e.g. written by another version of showwork
            warnings.warn(f"MLflow run {run_id}: search.yaml is not a valid search space ({error}); read as plain YAML.")
            try:
                data = yaml.safe_load(meta["spec_yaml"])
            except yaml.YAMLError:
                return None
            return data if isinstance(data, dict) else None
    return spec.model_dump(mode="json")
