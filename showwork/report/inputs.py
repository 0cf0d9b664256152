"""What a report reads: one :class:`FamilyResults` per model family, from a ledger, MLflow or a results file.

Three sources, one shape:

- :func:`from_ledger` — a search run by ``showwork search`` (its storage directory and name): every
  trial record, the resolved search space, the metric and its direction, and the environment the
  search recorded (hardware, packages, git commit);
- :func:`from_mlflow` — an MLflow experiment or parent run on any tracking URI: a ``showwork
  search``'s projection (the same trials, less exactly than its ledger) or the runs any other
  tool logged, one run per trial;
- :func:`from_results_file` — any CSV / TSV / JSON-lines table (other tools' searches, the papers'
  released results): a score column, optionally a runtime and a test-score column, one family per
  file or one per value of a ``group`` column. Nothing else is known about such searches, and the
  report says so rather than guessing.

Trials keep their order (trial index for ledgers and showwork's MLflow runs, start time for other
MLflow runs, row order for files). Failed trials stay in the
data with a NaN score and their status; the report's failure policy decides how they count.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import tempfile
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from showwork.errors import InputError
from showwork.selection import TiedBest, tied_best

__all__ = ["SHOWWORK_SEARCH", "FamilyResults", "SamplerInfo", "from_ledger", "from_mlflow", "from_results_file", "iid_caveat", "iid_caveats",
           "said_random", "sampler_of", "unknown_sampler"]

FINISHED = "finished"
_MLFLOW_RUN_ID = re.compile(r"[0-9a-fA-F]{32}")


@dataclass(frozen=True)
class SamplerInfo:
    """How a search drew its configurations, as far as its source tells (``meta["sampler"]``).

    The bands assume i.i.d. random-search trials; a source that may hold others (an Optuna
    study: TPE, CMA-ES, ...) says which sampler it used, or that it is unknown.

    Attributes
    ----------
    name : str or None
        The sampler (``RandomSampler``, ``TPESampler``, ...); None when unknown.
    iid : bool or None
        True for i.i.d. random draws, False for any other sampler, None when unknown (reported
        as not shown to be i.i.d.).
    evidence : str
        How it is known: the trace the sampler left, the user's assertion, or why it is unknown.
    """

    name: str | None
    iid: bool | None
    evidence: str

    def describe(self) -> str:
        """E.g. ``"sampler TPESampler (Optuna recorded ...)"`` or ``"sampler unknown (...)"``."""
        return f"sampler {self.name or 'unknown'} ({self.evidence})"


# Names a user may give --sampler for i.i.d. random draws (Optuna's sampler, Ray Tune's default search algorithm).
_RANDOM_NAMES = ("random", "randomsampler", "random search", "basicvariantgenerator")

SHOWWORK_SEARCH = SamplerInfo("random search", True, "showwork search draws every configuration i.i.d. from the search space")


def said_random(name: str) -> bool:
    """Whether ``--sampler NAME`` asserts i.i.d. random draws (``random``, ``RandomSampler``, ...)."""
    return name.strip().lower() in _RANDOM_NAMES


def unknown_sampler(what: str) -> SamplerInfo:
    """The sampler of a source that does not record how it drew its configurations (``what``: e.g. "a results file")."""
    return SamplerInfo(None, None, f"{what} does not record how its configurations were drawn;"
                       " --sampler random asserts i.i.d. random draws")


def sampler_of(asserted: str | None, recorded: SamplerInfo, where: str) -> SamplerInfo:
    """What is known of a source's sampler: ``recorded`` (what the source says), or the user's ``--sampler``.

    The user's word fills in only what the source leaves unknown: it may confirm a recorded sampler,
    but an assertion of random draws against a recorded non-random sampler (a Ray Tune searcher,
    grid search), or of another sampler against a ``showwork search``, is refused.

    Raises
    ------
    InputError
        ``asserted`` contradicts ``recorded``.
    """
    if asserted is None or not asserted.strip():
        return recorded
    random = said_random(asserted)
    if recorded.iid is not None and random != recorded.iid:
        raise InputError(f"{where}: --sampler {asserted.strip()} contradicts the source: {recorded.describe()}.")
    if recorded.iid is not None:
        return recorded
    return SamplerInfo("random search" if random else asserted.strip(), random, "given with --sampler")


def iid_caveat(results: FamilyResults) -> str | None:
    """Why ``results``' trials are not known to be i.i.d. random draws, or None when they are.

    Every reader records a :class:`SamplerInfo` (``meta["sampler"]``): searches by ``showwork
    search`` are random searches; Optuna studies and Ray Tune experiments say what they can;
    results files and other programs' MLflow runs say nothing, so they are not known to be i.i.d.
    until ``--sampler random`` asserts it. A FamilyResults built by hand without one is taken as
    the caller's random search.
    """
    reason = _iid_reason(results)
    return None if reason is None else f"{results.name}: {reason}"


def iid_caveats(families: Sequence[FamilyResults], named: int = 4) -> list[str]:
    """The :func:`iid_caveat` of every family, one line per distinct reason (families in their order).

    Fifty results files that say nothing of their sampler are one line, not fifty: the families
    sharing a reason are named up to ``named`` of them, then counted.
    """
    groups: dict[str, list[str]] = {}
    for results in families:
        reason = _iid_reason(results)
        if reason is not None:
            groups.setdefault(reason, []).append(results.name)
    lines = []
    for reason, names in groups.items():
        who = ", ".join(names) if len(names) <= named else f"{len(names)} families ({', '.join(names[:named])}, …)"
        lines.append(f"{who}: {reason}")
    return lines


def _iid_reason(results: FamilyResults) -> str | None:
    sampler = results.meta.get("sampler")
    if not isinstance(sampler, SamplerInfo) or sampler.iid:
        return None
    if sampler.iid is False:
        return (f"{sampler.describe()}, not a random sampler: the bands assume i.i.d. random-search"
                " trials, so they do not hold for these trials as they stand.")
    return f"{sampler.describe()}: not known to be i.i.d. random draws; the bands hold only if they were."


@dataclass(frozen=True, eq=False)
class FamilyResults:
    """The trials of one model family's random search.

    Attributes
    ----------
    name : str
        The family's label in tables and figures.
    scores : ndarray of float
        The validation score of every trial, in trial order; NaN where the trial failed.
    statuses : tuple of str
        ``finished``, ``failed`` or ``timeout`` per trial (results files: ``finished``, or
        ``failed`` where the score is missing or not finite).
    metric : str
        The score's name (the search's metric, or the file's score column).
    minimize : bool
        Lower scores are better (losses).
    source : str
        Where the trials were read from.
    runtimes_s : ndarray of float or None
        Wall time of every trial in seconds (NaN where unknown); None when not recorded.
    test_scores : ndarray of float or None
        The test score of every trial (NaN where none); None when not recorded.
    params : tuple of dict
        The hyperparameters of every trial (empty dicts when not recorded).
    spec : dict or None
        The resolved search-space file of a ``showwork search`` (None for results files).
    meta : dict
        What the search recorded besides its trials: seed, environment, tracking URI, ...
    trial_metrics : tuple of dict
        The final metrics every trial returned (e.g. ``parameters``); empty dicts when not recorded.
    trial_worker : tuple of dict
        What the worker recorded about every trial besides its results (ledger records and
        showwork child runs): ``python`` and ``packages`` (the distributions its trainable
        imported, ``{name: version}``), ``peak_rss_bytes``, ``peak_gpu_allocated_bytes``,
        ``peak_gpu_reserved_bytes`` and ``gpu_energy_j``; each None where not recorded. Empty when the source records none.
    failure_kinds : tuple of (str or None)
        Why each trial did not finish (:func:`showwork.ledger.failure_kind`: ``CUDA out of
        memory``, ``timeout``, an exception's type, ...), None for a finished one; empty when the
        source records no errors (results files, other programs' runs).
    reruns : tuple of RerunSummary
        The configurations ``showwork rerun`` trained again under fresh seeds
        (:class:`showwork.selection.RerunSummary`, best first); kept apart from the trials, so no
        statistic of the search sees them. Ledgers only; empty otherwise.
    """

    name: str
    scores: np.ndarray
    statuses: tuple[str, ...]
    metric: str
    minimize: bool = False
    source: str = ""
    runtimes_s: np.ndarray | None = None
    test_scores: np.ndarray | None = None
    params: tuple[dict, ...] = ()
    spec: dict | None = None
    meta: dict = field(default_factory=dict)
    trial_metrics: tuple[dict, ...] = ()
    trial_worker: tuple[dict, ...] = ()
    failure_kinds: tuple[str | None, ...] = ()
    reruns: tuple = ()

    def __post_init__(self) -> None:
        n = len(self.scores)
        if len(self.statuses) != n:
            raise ValueError(f"{self.name}: {len(self.statuses)} statuses for {n} scores.")
        for label, values in (("runtimes_s", self.runtimes_s), ("test_scores", self.test_scores)):
            if values is not None and len(values) != n:
                raise ValueError(f"{self.name}: {len(values)} {label} for {n} scores.")
        for label, values in (("params", self.params), ("trial_metrics", self.trial_metrics), ("trial_worker", self.trial_worker),
                              ("failure_kinds", self.failure_kinds)):
            if values and len(values) != n:
                raise ValueError(f"{self.name}: {len(values)} {label} for {n} scores.")

    @property
    def n_trials(self) -> int:
        """All trials, failed ones included."""
        return len(self.scores)

    @property
    def n_failed(self) -> int:
        """Trials that did not finish with a finite score."""
        return sum(1 for status, score in zip(self.statuses, self.scores) if status != FINISHED or not math.isfinite(score))

    @property
    def finished_scores(self) -> np.ndarray:
        """The finite scores of the finished trials, in trial order."""
        keep = [i for i, (status, score) in enumerate(zip(self.statuses, self.scores)) if status == FINISHED and math.isfinite(score)]
        return self.scores[keep]

    def best_trial(self) -> int | None:
        """Position of the best finished trial (the first one on ties), or None if none finished."""
        candidates = [i for i, (status, score) in enumerate(zip(self.statuses, self.scores)) if status == FINISHED and math.isfinite(score)]
        if not candidates:
            return None
        sign = -1.0 if self.minimize else 1.0
        return max(candidates, key=lambda i: (sign * self.scores[i], -i))

    def best_tie(self) -> TiedBest | None:
        """The finished trials tying for the best score, and their test scores (:class:`showwork.selection.TiedBest`), or None if none finished."""
        candidates = [i for i, (status, score) in enumerate(zip(self.statuses, self.scores)) if status == FINISHED and math.isfinite(score)]
        if not candidates:
            return None
        sign = -1.0 if self.minimize else 1.0
        ranked = sorted(candidates, key=lambda i: (-sign * self.scores[i], i))
        tests = None if self.test_scores is None else [float(self.test_scores[i]) for i in ranked]
        return tied_best(ranked, [float(self.scores[i]) for i in ranked], tests)

    def failure_counts(self) -> dict[str, int]:
        """How many trials failed of each kind (:attr:`failure_kinds`), most frequent first; empty when not recorded.

        A kind is an error's first line where it names no exception (``sys.exit('...')``): it is
        redacted (:mod:`showwork.redaction`), for a ledger or MLflow run recorded before redaction.
        """
        from showwork.redaction import Redactor

        redactor = Redactor.from_environment()
        counts: dict[str, int] = {}
        for kind in self.failure_kinds:
            if kind is not None:
                counts[redactor(kind)] = counts.get(redactor(kind), 0) + 1
        return dict(sorted(counts.items(), key=lambda item: -item[1]))

    @property
    def mean_runtime_s(self) -> float | None:
        """Mean wall time of the trials whose runtime is known, or None."""
        if self.runtimes_s is None:
            return None
        known = self.runtimes_s[np.isfinite(self.runtimes_s)]
        return float(known.mean()) if known.size else None


def from_ledger(storage_dir: str | Path, name: str, label: str | None = None, sampler: str | None = None) -> FamilyResults:
    """Read the search ``name`` from its ledger under ``storage_dir`` (``showwork search --storage``).

    Its trials are i.i.d. random draws (:data:`SHOWWORK_SEARCH`); ``sampler`` (``--sampler``) may
    say ``random`` too, and anything else is refused.

    Raises
    ------
    InputError
        No such search, a search without any trial record yet, or a ledger that is not the search's own
        (:func:`showwork.recorded.recorded_records`: an edited spec, a record it did not draw).
    """
    from showwork.ledger import Ledger
    from showwork.mlflow_format import MEASURED_METRICS
    from showwork.recorded import recorded_records, recorded_reruns

    ledger = Ledger(Path(storage_dir), name)
    if not ledger.exists():
        raise InputError(f"no search named {name!r} under {Path(storage_dir)} (see --storage).")
    _, records = recorded_records(Path(storage_dir), name)  # the search's own: refused otherwise
    if not records:
        raise InputError(f"search {name!r} under {Path(storage_dir)} has no trial records yet.")
    meta = ledger.read_meta()
    spec = meta.get("spec") or {}
    metric = (spec.get("metric") or {}).get("name") or "score"
    minimize = (spec.get("metric") or {}).get("mode") == "min"

    def number(value: Any) -> float:
        return float(value) if value is not None else math.nan

    return FamilyResults(
        name=label or name,
        scores=np.array([number(r.score) if r.status == FINISHED else math.nan for r in records], dtype=float),
        statuses=tuple(r.status for r in records),
        metric=metric,
        minimize=minimize,
        source=str(ledger.root),
        runtimes_s=np.array([number(r.runtime_s) for r in records], dtype=float),
        test_scores=np.array([number(r.test_score) for r in records], dtype=float),
        params=tuple(dict(r.params) for r in records),
        spec=spec or None,
        meta={**{k: v for k, v in meta.items() if k != "spec"},
              "sampler": sampler_of(sampler, SHOWWORK_SEARCH, f"search {name!r}")},
        trial_metrics=tuple(dict(r.metrics) for r in records),
        trial_worker=tuple(
            {"python": r.python, "packages": r.packages, **{name: getattr(r, name) for name in MEASURED_METRICS}}
            for r in records
        ),
        failure_kinds=tuple(r.failure_kind for r in records),
        reruns=recorded_reruns(Path(storage_dir), name, "min" if minimize else "max", records),
    )


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
        ``experiment_id``, ``parent_run_id`` and ``run_ids``, and for showwork searches ``seed``,
        ``num_trials``, ``family``, ``environment`` (artifact ``environment.json``) and
        ``spec_yaml``; ``spec`` is the artifact ``search.yaml`` (as validated by
        :func:`showwork.search_space.load_search_spec`, with the recorded seed and number of
        trials), None if absent.

    Raises
    ------
    InputError
        A missing SQLite file, an unreachable store (:class:`showwork.tracking.TrackingUnavailableError`),
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
    from showwork.ledger import failure_kind
    from showwork.mlflow_client import all_runs, read_client
    from showwork.mlflow_format import (
        MEASURED_METRICS,
        PARENT_TAG,
        ROLE_TAG,
        SEARCH_TAG,
        SOURCE_COMMIT_TAG,
        SOURCE_NAME_TAG,
        TERMINAL_RUN_STATUSES,
        param_value,
        run_metrics,
        run_params,
        trial_fields,
        trial_runs,
    )

    client = read_client(tracking_uri)
    tracking_uri = tracking_uri.strip()
    experiment, parent = _mlflow_search(client, tracking_uri, experiment_or_run)
    where = f"MLflow at {tracking_uri}, experiment {experiment.name!r}"
    if parent is not None:
        where += f", parent run {parent.info.run_id}"
    meta: dict[str, Any] = {"tracking_uri": tracking_uri, "experiment": experiment.name,
                            "experiment_id": experiment.experiment_id,
                            "parent_run_id": parent.info.run_id if parent is not None else None}
    showwork_search = parent is not None and parent.data.tags.get(ROLE_TAG) == "parent"
    if showwork_search:
        children = trial_runs(all_runs(client, experiment.experiment_id, f"tags.`{PARENT_TAG}` = '{parent.info.run_id}'"))
        runs = [children[i] for i in sorted(children) if children[i].info.status in TERMINAL_RUN_STATUSES]
        if not runs:
            raise InputError(f"{where}: the search has no finished trial runs yet.")
    elif parent is not None:
        runs = all_runs(client, experiment.experiment_id, f"tags.`{PARENT_TAG}` = '{parent.info.run_id}'")
    else:
        runs = [run for run in all_runs(client, experiment.experiment_id) if PARENT_TAG not in run.data.tags]
    if not runs:
        raise InputError(f"{where}: no {'child ' if parent is not None else ''}runs.")
    meta["run_ids"] = tuple(run.info.run_id for run in runs)
    # Names as the search had them: keys MLflow could not take as they were are mapped back (showwork.mlflow_format).
    metrics_of = [run_metrics(run) for run in runs]
    elapsed_s = np.array([
        (run.info.end_time - run.info.start_time) / 1000 if run.info.end_time and run.info.start_time else math.nan
        for run in runs
    ])

    if showwork_search:
        name = parent.data.tags.get(SEARCH_TAG) or experiment.name
        spec = _search_spec(client, parent, name, meta)
        search_params = parent.data.params
        spec_metric = (spec or {}).get("metric") or {}
        metric = score or search_params.get("metric") or spec_metric.get("name") or "best_val_score"
        if minimize is None:
            minimize = (search_params.get("mode") or spec_metric.get("mode")) == "min"
        trials = [trial_fields(run) for run in runs]
        values = _metric_values(metrics_of, score or "best_val_score", "score", where, required=score is not None)
        statuses = tuple(trial.status for trial in trials)
        scores = np.where([status == FINISHED for status in statuses], values, math.nan)
        if runtime is None:
            recorded = np.array([trial.runtime_s for trial in trials], dtype=float)
            runtimes = np.where(np.isnan(recorded), elapsed_s, recorded)
        else:
            runtimes = _metric_values(metrics_of, runtime, "runtime", where)
        tests = _metric_values(metrics_of, test or "test_score", "test", where, required=test is not None)
        params = tuple(trial.params for trial in trials)
        trial_metrics = tuple(trial.trial_metrics for trial in trials)
        trial_worker = tuple(
            {"python": trial.python, "packages": trial.packages,
             **{name: trial.measured.get(name) for name in MEASURED_METRICS}}
            for trial in trials
        )
        failure_kinds = tuple(failure_kind(trial.status, trial.error) for trial in trials)
    else:
        if score is None:
            raise InputError(
                f"{where}: not a showwork search; name the score metric"
                f" (metrics: {', '.join(_metric_keys(metrics_of)) or 'none'})."
            )
        spec = None
        metric = score
        values = _metric_values(metrics_of, score, "score", where)
        statuses = tuple(
            FINISHED if run.info.status == "FINISHED" and math.isfinite(value) else "failed"
            for run, value in zip(runs, values)
        )
        scores = np.where([status == FINISHED for status in statuses], values, math.nan)
        runtimes = elapsed_s if runtime is None else _metric_values(metrics_of, runtime, "runtime", where)
        tests = None if test is None else _metric_values(metrics_of, test, "test", where)
        params = tuple({k: param_value(v) for k, v in run_params(run).items()} for run in runs)
        trial_metrics = tuple(metrics_of)
        trial_worker, failure_kinds = (), ()
        name = (parent.info.run_name if parent is not None else None) or experiment.name
        # What MLflow itself records of the code: the script (mlflow.source.name) and its git commit.
        meta["run_sources"] = tuple(sorted({
            (run.data.tags.get(SOURCE_NAME_TAG), run.data.tags.get(SOURCE_COMMIT_TAG))
            for run in runs if run.data.tags.get(SOURCE_NAME_TAG) or run.data.tags.get(SOURCE_COMMIT_TAG)
        }, key=lambda source: (source[0] or "", source[1] or "")))

    meta["sampler"] = sampler_of(sampler, SHOWWORK_SEARCH if showwork_search else unknown_sampler("another program's MLflow runs"), where)
    return FamilyResults(
        name=label or name,
        scores=scores,
        statuses=statuses,
        metric=metric,
        minimize=bool(minimize),
        source=where,
        runtimes_s=runtimes,
        test_scores=tests,
        params=params,
        spec=spec,
        meta=meta,
        trial_metrics=trial_metrics,
        trial_worker=trial_worker,
        failure_kinds=failure_kinds,
    )


def _mlflow_search(client: Any, tracking_uri: str, key: str) -> tuple[Any, Any]:
    """Resolve ``key`` to ``(experiment, parent run or None)``: a run id first, then a name, then an id.

    In an experiment (not a run), the parent is its showwork search's parent run, if it has one.
    """
    from showwork.mlflow_client import all_runs
    from showwork.mlflow_format import PARENT_TAG, ROLE_TAG, TRIAL_INDEX_TAG

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
    parents = all_runs(client, experiment.experiment_id, f"tags.`{ROLE_TAG}` = 'parent'")
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
    from showwork.mlflow_format import NUM_TRIALS_METRIC, param_value
    from showwork.search_space import SpecError, load_search_spec

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
            import yaml

            try:
                data = yaml.safe_load(meta["spec_yaml"])
            except yaml.YAMLError:
                return None
            return data if isinstance(data, dict) else None
    return spec.model_dump(mode="json")


def from_results_file(
    path: str | Path,
    score: str,
    *,
    runtime: str | None = None,
    test: str | None = None,
    params: Sequence[str] | None = None,
    minimize: bool = False,
    group: str | None = None,
    label: str | None = None,
    sampler: str | None = None,
) -> list[FamilyResults]:
    """Read a results table (CSV, TSV or JSON lines; see :mod:`showwork.results_table`).

    Parameters
    ----------
    path : path
    score : str
        The column of validation scores. A missing or non-finite cell marks a failed trial; so does a
        run that did not finish in a W&B export (see :meth:`ResultsTable.score_column`).
    runtime, test : str, optional
        Columns of per-trial wall time (seconds) and test scores.
    params : sequence of str, optional
        Columns holding each trial's hyperparameters (numbers where the cell is one, else text).
    minimize : bool, default False
        Lower scores are better.
    group : str, optional
        A column whose values name the families (one :class:`FamilyResults` per value, in order of
        first appearance); without it the whole file is one family named ``label`` or the file stem.
    sampler : str, optional
        ``--sampler``: how the trials were drawn (``random``: i.i.d. draws). A file does not say, so
        without it the trials are not known to be i.i.d. (:func:`iid_caveat`).

    Raises
    ------
    InputError
        Unreadable file, missing column, non-numeric cells (the message names file, line and column).
    """
    from showwork.results_table import read_results_table

    path = Path(path)
    table = read_results_table(path)
    scores = np.asarray(table.score_column(score), dtype=float)
    runtimes = np.asarray(table.runtime_column(runtime), dtype=float) if runtime else None
    tests = np.asarray(table.numeric_column(test), dtype=float) if test else None
    param_columns = {name: table.text_column(name) for name in params or ()}
    configs = [{name: _cell_value(values[i]) for name, values in param_columns.items()} for i in range(len(scores))]
    if group is None:
        groups: Sequence[tuple[str, np.ndarray]] = [(label or path.stem, np.arange(len(scores)))]
    else:
        values = table.text_column(group)
        names: dict[str, list[int]] = {}
        for i, value in enumerate(values):
            if value is None or value == "":
                raise InputError(f"{path}: row {i + 1} has no value in the group column {group!r}.")
            names.setdefault(value, []).append(i)
        groups = [(value, np.array(rows)) for value, rows in names.items()]
    drawn = sampler_of(sampler, unknown_sampler("a results file"), str(path))
    families = []
    for name, rows in groups:
        family_scores = scores[rows]
        families.append(
            FamilyResults(
                name=name,
                scores=np.where(np.isfinite(family_scores), family_scores, np.nan),
                statuses=tuple(FINISHED if math.isfinite(s) else "failed" for s in family_scores),
                metric=score,
                minimize=minimize,
                source=str(path),
                runtimes_s=None if runtimes is None else runtimes[rows],
                test_scores=None if tests is None else tests[rows],
                params=tuple(configs[i] for i in rows) if param_columns else (),
                meta={"sampler": drawn},
            )
        )
    return families



def _cell_value(text: str | None) -> Any:
    """A results-file cell as a hyperparameter value: int, float, bool or text (None if missing)."""
    if text is None:
        return None
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text
