"""Read a Ray Tune experiment folder (``showwork report ray:PATH``) into :class:`FamilyResults`.

A folder written by plain Ray Tune, ``Tuner(..., run_config=RunConfig(storage_path=S, name=N)).fit()``:
PATH is ``S/N``. It is read through Ray's own :class:`ray.tune.ExperimentAnalysis` (the trials'
states, configurations and metric summaries), never by parsing its files here. That needs no
Ray cluster: ``ray.init`` is not called (importing Ray takes about a second; loading a small
experiment, milliseconds).

One row per trial, in trial-id order (the order Ray created them). A trial's score is its
metric's last reported value (``reduce="last"``) or its best one (``reduce="best"``: the max, or
the min when lower is better), from Ray's ``Trial.metric_analysis``. Trials that raised
(status ``ERROR``) are failures; trials cut off while running or paused (an interrupted
experiment) are failures too; trials never started (``PENDING``) are not trials yet and are left
out. The runtime is Ray's ``time_total_s`` of the trial's last result; the configuration,
nested dicts flattened to dotted names (:func:`showwork.sampling.flatten`), is the parameters.

``ExperimentAnalysis`` does not expose the metric and mode the experiment's ``TuneConfig`` named
(only ``Tuner.restore(path, trainable)`` reads them, and it needs the original trainable), so the
metric is named with ``--score`` and a loss with ``--min``.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

import numpy as np

from showwork.errors import InputError
from showwork.report.inputs import FINISHED, FamilyResults

__all__ = ["REDUCTIONS", "from_ray_tune"]

REDUCTIONS = ("last", "best")
_STATE_FILE = "experiment_state-*.json"  # Ray's TuneController.CKPT_FILE_TMPL, to point at the right folder


def from_ray_tune(
    path: str | Path,
    score: str | None,
    *,
    reduce: str = "last",
    minimize: bool = False,
    label: str | None = None,
) -> FamilyResults:
    """Read the Ray Tune experiment in folder ``path`` (``storage_path/name``).

    Parameters
    ----------
    path : path
        The experiment's folder (the one holding ``experiment_state-*.json``).
    score : str
        The reported metric holding the validation score.
    reduce : {"last", "best"}, default "last"
        Each trial's last reported value of the metric, or its best one.
    minimize : bool, default False
        Lower scores are better (also decides what "best" is).
    label : str, optional
        The family's name; default the folder's name.

    Raises
    ------
    InputError
        No experiment there (the message lists experiments in its subfolders), ``score`` not
        given or reported by no trial (the message lists the metrics), an unknown ``reduce``, a
        configuration whose flattened names collide, Ray not installed.
    """
    if reduce not in REDUCTIONS:
        raise InputError(f"--reduce must be one of {', '.join(REDUCTIONS)} (got {reduce!r}).")
    folder = Path(path).expanduser()
    where = f"Ray Tune experiment {folder}"
    if not folder.is_dir():
        raise InputError(f"{where}: no such folder (give RunConfig's storage_path/name).")
    if not any(folder.glob(_STATE_FILE)):
        inside = sorted(p.parent.name for p in folder.glob(f"*/{_STATE_FILE}"))
        hint = f"; experiments in it: {', '.join(dict.fromkeys(inside))}" if inside else " (give RunConfig's storage_path/name)"
        raise InputError(f"{where}: not a Ray Tune experiment folder: no {_STATE_FILE}{hint}.")
    try:
        from ray.tune import ExperimentAnalysis
    except ImportError:
        raise InputError("ray: sources need Ray Tune: pip install 'ray[tune]'") from None
    from showwork.sampling import flatten

    # ExperimentAnalysis also loads each trial's result.json into a DataFrame, and logs a multi-line warning for
    # trial folders that are gone; showwork reads only the experiment state (statuses, configs, metric summaries).
    ray_log = logging.getLogger("ray.tune.analysis.experiment_analysis")
    level = ray_log.level
    ray_log.setLevel(logging.ERROR)
    try:
        analysis = ExperimentAnalysis(str(folder.resolve()))
    except (ValueError, OSError, KeyError, TypeError) as error:  # a damaged or foreign state file
        raise InputError(f"{where}: Ray could not read it ({type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}).") from None
    finally:
        ray_log.setLevel(level)
    trials = sorted((t for t in analysis.trials if t.status != "PENDING"), key=lambda t: t.trial_id)
    if not trials:
        raise InputError(f"{where}: no trial has started.")
    metrics = sorted({key for t in trials for key in (t.metric_analysis or {})})
    if not score:
        raise InputError(f"{where}: name the score metric with --score (Ray does not expose the experiment's metric;"
                         f" metrics reported: {', '.join(metrics) or 'none'}).")
    if score not in metrics:
        raise InputError(f"{where}: no trial reported the metric {score!r} (metrics reported: {', '.join(metrics) or 'none'}).")
    statistic = "last" if reduce == "last" else ("min" if minimize else "max")

    def value(trial: Any) -> float:
        summary = (trial.metric_analysis or {}).get(score) or {}
        number = summary.get(statistic)
        return float(number) if isinstance(number, (int, float)) and not isinstance(number, bool) else math.nan

    def runtime(trial: Any) -> float:
        seconds = (trial.last_result or {}).get("time_total_s")
        return float(seconds) if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) else math.nan

    scores = np.array([value(t) for t in trials], dtype=float)
    # ERROR: raised; RUNNING / PAUSED: cut off; TERMINATED without a finite score: never reported one.
    statuses = tuple(FINISHED if t.status == "TERMINATED" and math.isfinite(s) else "failed" for t, s in zip(trials, scores))
    params = []
    for trial in trials:
        try:
            params.append(flatten(trial.config or {}))
        except ValueError as error:
            raise InputError(f"{where}: trial {trial.trial_id}'s configuration: {error}.") from None
    return FamilyResults(
        name=label or folder.name,
        scores=np.where([s == FINISHED for s in statuses], scores, math.nan),
        statuses=statuses,
        metric=score if reduce == "last" else f"{score} (best)",
        minimize=minimize,
        source=f"{where} (each trial's {'last' if reduce == 'last' else 'best'} {score})",
        runtimes_s=np.array([runtime(t) for t in trials], dtype=float),
        params=tuple(params),
        meta={"experiment_path": str(folder), "trial_ids": tuple(t.trial_id for t in trials),
              "trial_statuses": tuple(t.status for t in trials), "reduce": reduce},
        trial_metrics=tuple(
            {key: v for key, v in (t.last_result or {}).items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
            for t in trials
        ),
    )
