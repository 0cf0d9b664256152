"""showwork's MLflow format, as pure functions: written by :mod:`showwork.tracking.trial_runs` and
:mod:`showwork.tracking.tracker`, read back by :mod:`showwork.report.sources_mlflow`.

The tag and param names, a ledger record's projection into a child run (:func:`trial_projection`:
params, per-epoch and final metrics, tags, status, start and end times), its reading back
(:func:`trial_fields`), MLflow's clamp of infinities and its inverse, and the parse of a param's
text. Names become MLflow keys as :mod:`showwork.tracking.mlflow_keys` says. Nothing here calls MLflow.
"""

from __future__ import annotations

import ast
import math
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from showwork.constants import TRIAL_STATUSES
from showwork.redaction import redact
from showwork.tracking.mlflow_keys import (
    MAX_PARAM_LENGTH,
    METRIC_NAMES_TAG,
    PARAM_NAMES_TAG,
    json_tags,
    key_names,
    original_names,
    read_json_tags,
    truncated,
)

if TYPE_CHECKING:  # pragma: no cover
    from showwork.store import TrialRecord

__all__ = [
    "PARENT_TAG",
    "SOURCE_NAME_TAG",
    "SOURCE_COMMIT_TAG",
    "TRIAL_INDEX_TAG",
    "SEARCH_TAG",
    "SEARCH_ID_TAG",
    "ROLE_TAG",
    "LOGGED_TAG",
    "SUPERSEDED_TAG",
    "ATTEMPT_TAG",
    "ABANDONED_TAG",
    "LEDGER_TAG",
    "abandoned_runs",
    "counted_run",
    "PROJECTION_ERROR_TAG",
    "HISTORY_TAG",
    "STATUS_TAG",
    "EXPERIMENT_KIND_TAG",
    "EXPERIMENT_KIND",
    "NUM_TRIALS_METRIC",
    "ACTIVE_METRIC",
    "runs_table_path",
    "TRIAL_STATUSES",
    "TERMINAL_RUN_STATUSES",
    "RUN_STATUS_OF",
    "FINAL_METRICS",
    "MEASURED_METRICS",
    "MEMORY_METRICS",
    "PYTHON_TAG",
    "PACKAGES_TAG",
    "RESERVED_PARAMS",
    "RERUN_OF_TRIAL_TAG",
    "RERUN_REPLICATE_TAG",
    "RERUN_OF_TAG",
    "RERUNS_ROLE",
    "RERUN_ROLE",
    "rerun_child_tags",
    "rerun_parent_tags",
    "TrialProjection",
    "TrialFields",
    "clamped",
    "unclamped",
    "epoch_millis",
    "numeric_items",
    "param_name",
    "param_value",
    "run_params",
    "run_metrics",
    "trial_status",
    "trial_params",
    "epoch_points",
    "trial_projection",
    "trial_fields",
    "trial_runs",
    "stale_trial_runs",
]


PARENT_TAG = "mlflow.parentRunId"  # MLflow's own: the UI nests a child run under its parent
SOURCE_NAME_TAG = "mlflow.source.name"  # MLflow's own: the script (or notebook) that started a run
SOURCE_COMMIT_TAG = "mlflow.source.git.commit"  # MLflow's own: that script's git commit
EXPERIMENT_KIND_TAG = "mlflow.experimentKind"  # MLflow 3's sidebar: a model-training experiment, not GenAI ...
EXPERIMENT_KIND = "custom_model_development"  # ... yet its page still opens on the GenAI Overview: see runs_table_path
TRIAL_INDEX_TAG = "showwork.trial_index"  # on each child run: its trial's index
SEARCH_TAG = "showwork.search"  # the search's name, on the experiment and every run
SEARCH_ID_TAG = "showwork.search_id"  # the ledger's id of a search, on its parent run
ROLE_TAG = "showwork.role"  # "parent" (the search) or "trial"
LOGGED_TAG = "showwork.logged"  # "1" once a child run holds its whole record
SUPERSEDED_TAG = "showwork.superseded"  # "1" on a trial's run whose record a retry superseded (resume --retry-failed)
ATTEMPT_TAG = "showwork.attempt"  # on a retried trial's runs: the record's position among the trial's records, from 1
ABANDONED_TAG = "showwork.abandoned"  # on every run of an abandoned attempt of a search: the current attempt's search_id
LEDGER_TAG = "showwork.ledger"  # on a search's parent run: its ledger's folder (which attempts of a name are the same search's)
PROJECTION_ERROR_TAG = "showwork.projection_error"  # why MLflow refused a record's projection (the run ends FAILED)
HISTORY_TAG = "showwork.history_logged"  # "1" once a child run holds its record's per-epoch history
STATUS_TAG = "showwork.status"  # the trial's status in the ledger (finished, failed, timeout)
ERROR_TAG = "showwork.error"
RERUN_OF_TRIAL_TAG = "showwork.rerun_of_trial"  # on a re-run's child run: the search's trial it trains again
RERUN_REPLICATE_TAG = "showwork.rerun_replicate"  # ... and the position of its fresh seed (0 for the first)
RERUN_OF_TAG = "showwork.rerun_of"  # on the re-runs' parent run: the search's parent run
RERUNS_ROLE, RERUN_ROLE = "reruns", "rerun"  # ROLE_TAG of the re-runs' parent run and of each re-run
NUM_TRIALS_METRIC = "num_trials"  # on the parent: a metric, since a resume may extend the search (params cannot change)
ACTIVE_METRIC = "active_s"  # on the parent: seconds its drivers ran, summed over its resumes (the run's duration spans the gaps)
TERMINAL_RUN_STATUSES = ("FINISHED", "FAILED", "KILLED")
RUN_STATUS_OF = {"finished": "FINISHED", "failed": "FAILED", "timeout": "FAILED"}
MEMORY_METRICS = ("peak_rss_bytes", "peak_gpu_allocated_bytes", "peak_gpu_reserved_bytes")  # the record's fields of the same names
MEASURED_METRICS = (*MEMORY_METRICS, "gpu_energy_j")  # what the worker measured of the trial: the record's fields of the same names
FINAL_METRICS = ("best_val_score", "test_score", "runtime_s", "setup_s", "gpu_seconds", *MEASURED_METRICS)  # one value per child run
PYTHON_TAG = "showwork.python"  # on each child run: the worker's Python version
PACKAGES_TAG = "showwork.packages"  # ... and the record's packages, {distribution: version} as JSON (continued in .2, .3, ...)
RESERVED_PARAMS = ("trial_index", "seed")  # logged on every child run; a hyperparameter so named is hp.<name>
ERROR_TAG_LENGTH = 5000
_RECORD_TAGS = ("node_id", "hostname", "pid", "started_at", "finished_at")
_MAX_FLOAT = sys.float_info.max


def runs_table_path(experiment_id: str, mode: str = "max", *, metric: str = "best_val_score",
                    parent_run_id: str | None = None) -> str:
    """The path of MLflow 3.17's UI that shows a search's runs, child runs listed, best first (``mode``: max or min).

    The experiment's own page (``#/experiments/ID``) opens on MLflow 3's GenAI Overview (traces,
    token usage) whatever the experiment's tags; ``#/experiments/ID/runs`` is its runs table, which
    folds child runs under their parent unless it is sorted by something other than the date:
    sorted by the trials' ``best_val_score`` (or another program's score, ``metric``), every trial
    is a row (issue 23 item 16). With ``parent_run_id`` the table is filtered (the UI's
    ``searchFilter``) to that run's child runs: the search's trials, without its re-runs.

    Examples
    --------
    >>> runs_table_path("3", "min", parent_run_id="ab12")
    '#/experiments/3/runs?orderByKey=metrics.%60best_val_score%60&orderByAsc=true&searchFilter=tags.%60mlflow.parentRunId%60%20%3D%20%27ab12%27'
    """
    order = "true" if mode == "min" else "false"
    path = f"#/experiments/{experiment_id}/runs?orderByKey={quote(f'metrics.`{metric}`', safe='.')}&orderByAsc={order}"
    if parent_run_id:
        path += "&searchFilter=" + quote(f"tags.`{PARENT_TAG}` = '{parent_run_id}'", safe=".")
    return path


def rerun_child_tags(trial: int, replicate: int) -> dict[str, str]:
    """The tags that mark a child run as a re-run (``showwork rerun``) of the search's trial ``trial``.

    A re-run's ``showwork.trial_index`` is its index among the re-runs (its parent is the re-runs'
    parent run, never the search's), so readers of the search's trials never meet it.
    """
    return {ROLE_TAG: RERUN_ROLE, RERUN_OF_TRIAL_TAG: str(int(trial)), RERUN_REPLICATE_TAG: str(int(replicate))}


def rerun_parent_tags(search_parent_run_id: str | None) -> dict[str, str]:
    """The tags of the re-runs' parent run: its role, and nested under the search's parent run when it has one.

    Its role is not ``parent``: an experiment still holds one showwork search for
    `showwork.report.sources_mlflow`, and the search's child runs are found by their trial index,
    which the re-runs' parent run lacks.
    """
    tags = {ROLE_TAG: RERUNS_ROLE}
    if search_parent_run_id:
        tags.update({PARENT_TAG: search_parent_run_id, RERUN_OF_TAG: search_parent_run_id})
    return tags


def clamped(value: float) -> float:
    """The value MLflow stores for ``value``: +-inf become +-1.7976931348623157e308 (NaN is kept)."""
    return math.copysign(_MAX_FLOAT, value) if math.isinf(value) else float(value)


def unclamped(value: float) -> float:
    """The inverse of :func:`clamped`: +-max float read from MLflow become +-inf again."""
    return math.copysign(math.inf, value) if abs(value) == _MAX_FLOAT else float(value)


def epoch_millis(timestamp: str | None) -> int | None:
    """Milliseconds since the epoch of an ISO-8601 timestamp with a UTC offset (MLflow's times); None if unreadable."""
    if not timestamp:
        return None
    try:
        moment = datetime.fromisoformat(timestamp)
    except ValueError:
        return None
    return None if moment.utcoffset() is None else round(moment.timestamp() * 1000)


def numeric_items(values: Mapping[str, Any], prefix: str = "") -> list[tuple[str, float]]:
    """Flatten nested mappings with dots and keep the numbers (bools and strings are skipped)."""
    out = []
    for name, value in values.items():
        key = f"{prefix}{name}"
        if isinstance(value, Mapping):
            out.extend(numeric_items(value, f"{key}."))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out.append((key, float(value)))
    return out


def param_name(name: str) -> str:
    """The param name of a hyperparameter on a child run: ``hp.<name>`` for the names showwork logs itself."""
    return f"hp.{name}" if name in RESERVED_PARAMS else name


def _hyperparameter_name(name: str) -> str:
    """The inverse of :func:`param_name`."""
    bare = name.removeprefix("hp.")
    return bare if name.startswith("hp.") and bare in RESERVED_PARAMS else name


def param_value(text: str) -> Any:
    """A param as it was before MLflow logged its ``str()``: a number, bool, None, list or dict, else the text."""
    if text in ("nan", "inf", "-inf"):
        return float(text)
    try:
        value = ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return text
    return value if isinstance(value, (int, float, list, dict, type(None))) else text


def _head_and_tail(text: str, limit: int) -> str:
    """Shorten a traceback to ``limit`` characters, keeping its start and its end."""
    if len(text) <= limit:
        return text
    half = (limit - 5) // 2
    return text[:half] + "\n...\n" + text[-half:]


@dataclass(frozen=True)
class TrialProjection:
    """What a child run holds of one ledger record, under showwork's names (the writer maps them to keys).

    Attributes
    ----------
    index : int
        The trial's index (tag ``showwork.trial_index``).
    params : dict of str to str
        The hyperparameters under their names (``hp.<name>`` for ``trial_index`` and ``seed``),
        plus ``trial_index`` and ``seed``; values as text, at most 6000 characters.
    history : dict of str to list of (int, float)
        Each per-epoch metric's points ``(epoch, value)``, values unclamped.
    final_metrics : dict of str to float
        ``best_val_score`` (the record's score), ``test_score``, ``runtime_s``, ``setup_s`` (the
        worker's set-up before the trial, not in ``runtime_s``), ``gpu_seconds``, ``peak_rss_bytes``,
        ``peak_gpu_allocated_bytes``, ``peak_gpu_reserved_bytes``, ``gpu_energy_j`` when known, and
        the record's numeric final metrics not in the history, logged at ``final_step``.
    final_step : int
        The last epoch (0 without history).
    tags : dict of str to str
        ``showwork.status``, ``showwork.attempts``, ``showwork.error`` (start and end of the
        traceback, at most 5000 characters), the worker's ``node_id``, ``hostname``, ``pid``,
        ``started_at``, ``finished_at`` under ``showwork.``, and when recorded ``showwork.python``
        and ``showwork.packages`` (JSON ``{distribution: version}``, in 8000-character parts).
    run_status : str
        FINISHED for a finished trial, FAILED for a failed or timed-out one.
    start_ms, end_ms : int or None
        The run's start and end times: the worker's trial start (``started_at``) and that plus
        ``runtime_s``, so that MLflow's duration is the ledger's runtime (to the millisecond).
    """

    index: int
    params: dict[str, str]
    history: dict[str, list[tuple[int, float]]]
    final_metrics: dict[str, float]
    final_step: int
    tags: dict[str, str]
    run_status: str
    start_ms: int | None
    end_ms: int | None


def run_times(started_at: str | None, runtime_s: float | None) -> tuple[int | None, int | None]:
    """A trial's run ``(start, end)`` in epoch milliseconds: its start, and its start plus its runtime."""
    start = epoch_millis(started_at)
    if start is None or runtime_s is None or not math.isfinite(runtime_s):
        return start, None
    return start, start + round(runtime_s * 1000)


def trial_params(index: int, params: Mapping[str, Any], seed: int | None) -> dict[str, str]:
    """A child run's params: the trial's hyperparameters (``hp.<name>`` for :data:`RESERVED_PARAMS`), its index and seed."""
    values = {param_name(str(name)): truncated(str(value), MAX_PARAM_LENGTH) for name, value in params.items()}
    values["trial_index"] = str(index)
    values["seed"] = str(seed)
    return values


def epoch_points(rows: Iterable[Mapping[str, Any]]) -> dict[str, list[tuple[int, float]]]:
    """Reported rows (``{"epoch": n, metric: value, ...}``) as each metric's points ``(epoch, value)``, in order."""
    history: dict[str, list[tuple[int, float]]] = {}
    for entry in rows:
        for name, value in numeric_items({k: v for k, v in entry.items() if k != "epoch"}):
            history.setdefault(name, []).append((int(entry["epoch"]), value))
    return history


def trial_projection(record: TrialRecord) -> TrialProjection:
    """The child run of a ledger record (see :class:`TrialProjection`)."""
    params = trial_params(record.index, record.params, record.seed)
    history = epoch_points(record.history)
    finals = {
        name: float(value)
        for name, value in zip(
            FINAL_METRICS,
            (record.score, record.test_score, record.runtime_s, record.setup_s, record.gpu_seconds,
             *(getattr(record, metric) for metric in MEASURED_METRICS)),
            strict=True,
        )
        if value is not None
    }
    for name, value in numeric_items(record.metrics):
        if name not in FINAL_METRICS and name not in history:
            finals[name] = value
    tags = {STATUS_TAG: record.status, "showwork.attempts": str(record.attempts)}
    for name in _RECORD_TAGS:
        if getattr(record, name) is not None:
            tags[f"showwork.{name}"] = str(getattr(record, name))
    if record.error:
        tags[ERROR_TAG] = _head_and_tail(redact(record.error), ERROR_TAG_LENGTH)  # this process's secrets too
    if record.python is not None:
        tags[PYTHON_TAG] = record.python
    if record.packages is not None:
        tags.update(json_tags(record.packages, PACKAGES_TAG))
    start, end = run_times(record.started_at, record.runtime_s)
    return TrialProjection(
        index=record.index,
        params=params,
        history=history,
        final_metrics=finals,
        final_step=max((int(entry["epoch"]) for entry in record.history), default=0),
        tags=tags,
        run_status=RUN_STATUS_OF[record.status],
        start_ms=start,
        end_ms=end,
    )


def counted_run(run: Any) -> bool:
    """Whether ``run`` counts among its search's runs: not tagged superseded (a retried trial's earlier run,
    :data:`SUPERSEDED_TAG`) nor abandoned (a run of an earlier attempt of the search, :data:`ABANDONED_TAG`)."""
    tags = run.data.tags
    return tags.get(SUPERSEDED_TAG) != "1" and not tags.get(ABANDONED_TAG)


def _trial_index(run: Any) -> int | None:
    """The trial index of a counted child run (:func:`counted_run`); None for any other run."""
    if not counted_run(run):
        return None
    index = run.data.tags.get(TRIAL_INDEX_TAG)
    return int(index) if isinstance(index, str) and index.isdigit() else None


def _logged(run: Any) -> bool:
    return run.data.tags.get(LOGGED_TAG) == "1"


def trial_runs(runs: Iterable[Any]) -> dict[int, Any]:
    """The child run of each trial index among a parent's ``runs`` (oldest first): its logged run, else its first."""
    found: dict[int, Any] = {}
    for run in runs:
        index = _trial_index(run)
        if index is not None and (index not in found or (_logged(run) and not _logged(found[index]))):
            found[index] = run
    return found


def abandoned_runs(runs: Iterable[Any], search: str, search_id: str, ledger: str) -> list[Any]:
    """The runs among ``runs`` (an experiment's) of abandoned attempts of search ``search``, not yet tagged so.

    An attempt is abandoned when its ledger is gone and a search of the same name began again from scratch
    in the same folder: a parent run of ``search`` (tag ``showwork.role=parent``) with another
    ``showwork.search_id`` than ``search_id`` (the current attempt's, read from the ledger) and the same
    ``showwork.ledger`` (or none: a search begun before that tag was written). Its runs are that parent
    and every run nested under it (its trials, its re-runs' parent and their runs). A search of the same
    name in another storage folder, or a parent run of another program, is never abandoned here. The
    attempts' own parent runs come last, so that a parent tagged says that its runs were tagged before it.
    """
    runs = list(runs)
    tags = [run.data.tags for run in runs]
    abandoned = {
        run.info.run_id for run, tag in zip(runs, tags)
        if tag.get(ROLE_TAG) == "parent" and tag.get(SEARCH_TAG) == search
        and tag.get(SEARCH_ID_TAG) not in (None, search_id) and tag.get(LEDGER_TAG) in (None, ledger)
    }
    grown = True
    while grown:  # every run nested under one of them, at any depth
        nested = {run.info.run_id for run, tag in zip(runs, tags) if tag.get(PARENT_TAG) in abandoned}
        grown = not nested <= abandoned
        abandoned |= nested
    found = [run for run, tag in zip(runs, tags) if run.info.run_id in abandoned and not tag.get(ABANDONED_TAG)]
    return sorted(found, key=lambda run: PARENT_TAG not in run.data.tags)  # the attempts' parents last: see Tracker


def stale_trial_runs(runs: Iterable[Any], completed: Iterable[int], start_ms: Mapping[int, int] | None = None) -> list[Any]:
    """The child runs among ``runs`` that are not their trial's run: left by attempts that did not finish.

    A trial index keeps one run: its logged run when it has one; else, when ``start_ms`` gives the
    start of the trial's attempt now running or recorded, the unlogged run that started then; else,
    for a trial in ``completed`` (its record is in the ledger, to be projected), its first run. Every
    other run without the ``showwork.logged`` mark is stale, so is an index's only run when the
    trial has no record (it will run again). Logged runs are never stale.
    """
    done, starts = set(completed), dict(start_ms or {})
    groups: dict[int, list[Any]] = {}
    for run in runs:
        index = _trial_index(run)
        if index is not None:
            groups.setdefault(index, []).append(run)
    stale = []
    for index, group in groups.items():
        logged = [run for run in group if _logged(run)]
        if logged:
            keep = logged[0]
        elif index in starts:
            keep = next((run for run in group if run.info.start_time == starts[index]), None)
        else:
            keep = group[0] if index in done else None
        stale.extend(run for run in group if run is not keep and not _logged(run))
    return stale


def run_params(run: Any) -> dict[str, str]:
    """A run's params (text) under the names they were logged with (``run.data.params``, keys mapped back)."""
    return original_names(run.data.params, key_names(run.data.tags, PARAM_NAMES_TAG))


def run_metrics(run: Any) -> dict[str, float]:
    """A run's last metric values under the names they were logged with, MLflow's clamp undone."""
    names = key_names(run.data.tags, METRIC_NAMES_TAG)
    return {name: unclamped(value) for name, value in original_names(run.data.metrics, names).items()}


def trial_status(run: Any) -> str:
    """A showwork trial's recorded status (tag ``showwork.status``), else finished for a FINISHED run, else failed."""
    status = run.data.tags.get(STATUS_TAG)
    if status in TRIAL_STATUSES:
        return status
    return "finished" if run.info.status == "FINISHED" else "failed"


@dataclass(frozen=True)
class TrialFields:
    """A showwork child run read back: the record's fields a report uses.

    ``params`` are the hyperparameters under their own names, parsed back from MLflow's text by
    :func:`param_value`; ``trial_metrics`` are the final metrics other than :data:`FINAL_METRICS`;
    ``metrics`` every last metric value. Numbers are unclamped; a missing one is NaN.
    ``python`` and ``packages`` are the worker's (None when not recorded); ``measured`` holds the
    :data:`MEASURED_METRICS` that were recorded (memory in bytes, as ints; energy in joules);
    ``error`` the start and end of the record's error (tag ``showwork.error``), None without.
    """

    index: int | None
    status: str
    seed: int | None
    params: dict[str, Any]
    score: float
    test_score: float
    runtime_s: float
    setup_s: float
    gpu_seconds: float
    metrics: dict[str, float]
    trial_metrics: dict[str, float]
    started_ms: int | None
    ended_ms: int | None
    python: str | None = None
    packages: dict[str, str] | None = None
    measured: dict[str, float] = field(default_factory=dict)
    error: str | None = None


def _packages_tag(tags: Mapping[str, str]) -> dict[str, str] | None:
    """The record's packages from :data:`PACKAGES_TAG`; None when absent or unreadable (never a partial list)."""
    value = read_json_tags(tags, PACKAGES_TAG)
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        return None
    return value


def trial_fields(run: Any) -> TrialFields:
    """Read a child run written from :func:`trial_projection` (an MLflow ``Run`` or anything shaped like one)."""
    metrics = run_metrics(run)
    logged = run_params(run)
    index = run.data.tags.get(TRIAL_INDEX_TAG, "")
    seed = param_value(logged.get("seed", ""))
    return TrialFields(
        index=int(index) if index.isdigit() else None,
        status=trial_status(run),
        seed=seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
        params={_hyperparameter_name(k): param_value(v) for k, v in logged.items() if k not in RESERVED_PARAMS},
        score=metrics.get("best_val_score", math.nan),
        test_score=metrics.get("test_score", math.nan),
        runtime_s=metrics.get("runtime_s", math.nan),
        setup_s=metrics.get("setup_s", math.nan),
        gpu_seconds=metrics.get("gpu_seconds", math.nan),
        metrics=metrics,
        trial_metrics={k: v for k, v in metrics.items() if k not in FINAL_METRICS},
        started_ms=run.info.start_time,
        ended_ms=run.info.end_time,
        python=run.data.tags.get(PYTHON_TAG),
        packages=_packages_tag(run.data.tags),
        measured={
            name: int(metrics[name]) if name in MEMORY_METRICS else metrics[name]
            for name in MEASURED_METRICS if math.isfinite(metrics.get(name, math.nan))
        },
        error=run.data.tags.get(ERROR_TAG),
    )
