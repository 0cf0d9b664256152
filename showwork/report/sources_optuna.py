"""Read an Optuna study (``showwork report optuna:STORAGE_URL --study NAME``) into :class:`FamilyResults`.

Optuna's own API reads the storage (``optuna.load_study``); nothing here parses its tables. One
row per trial in trial-number order: completed trials give their objective value, failed and
pruned trials stay as failures (NaN, status ``failed`` / ``pruned``) for the report's failure
policy, a trial still running counts as failed (read a study once it has ended), and trials
enqueued but never started (WAITING) are not trials yet and are left out. Durations are
``datetime_complete - datetime_start``.

The sampler. The bands assume i.i.d. random-search trials, which only ``RandomSampler`` draws.
Optuna's storages do not record which sampler a study used, so it is read from the traces
samplers leave (:func:`sampler_evidence`): trial system attributes (``fixed_params`` of
enqueued trials, ``grid_id`` of ``GridSampler``, ``cma:*`` of ``CmaEsSampler``,
``NSGAIISampler:generation`` of the genetic samplers, ``tpe:relative_params`` / ``gp:relative_params``)
and study system attributes (``qmc:*`` of ``QMCSampler``), or the study's user attribute
``sampler`` where the user recorded it (``study.set_user_attr("sampler", "RandomSampler")``).
``TPESampler`` and ``RandomSampler`` usually leave no trace: then the sampler is *unknown*, and
unknown is reported as not shown to be i.i.d. The user may assert it (``--sampler random``); an
assertion that contradicts a trace is refused.

The search space (:func:`recorded_space`, the checklist's "bounds of each hyperparameter"): each trial
records the distribution of every parameter it drew (``FrozenTrial.distributions``). They are converted
into showwork's distributions, which draw the same under ``RandomSampler`` (:func:`optuna_distribution`):
``FloatDistribution`` into ``uniform`` (with its ``step``) or ``loguniform``, ``IntDistribution`` into
``int_uniform`` or ``log_int_uniform`` (Optuna's scheme), ``CategoricalDistribution`` into
``categorical``; a stepped integer one is worded. Optuna's float ranges include ``high``, showwork's
exclude it: for a continuous draw the difference has probability 0. A parameter some trials did not
draw (a conditional one) says in how many it was drawn; trials that recorded different distributions
for one parameter (the objective changed between them) are listed by distribution.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from showwork.distributions import Categorical, Constant, DistributionError, IntUniform, LogIntUniform, LogUniform, Uniform
from showwork.environment import strip_credentials
from showwork.errors import InputError, UnavailableError
from showwork.report.inputs import FINISHED, FamilyResults, RecordedParam, RecordedSpace, SamplerInfo

__all__ = ["from_optuna", "optuna_distribution", "recorded_space", "sampler_evidence"]

RANDOM_SAMPLER = "RandomSampler"

# (trial system-attribute prefix, the sampler that writes it), from Optuna's samplers' source.
_TRIAL_TRACES = (
    ("fixed_params", "enqueued trials (study.enqueue_trial)"),
    ("grid_id", "GridSampler"),
    ("search_space", "GridSampler"),
    ("cma:", "CmaEsSampler"),
    ("sepcma:", "CmaEsSampler (separable)"),
    ("cmawm:", "CmaEsSampler (with margin)"),
    ("x_for_tell", "CmaEsSampler (with margin)"),
    ("tpe:relative_params", "TPESampler"),
    ("gp:relative_params", "GPSampler"),
)
_GA_TRACE = re.compile(r"([A-Za-z0-9_]+Sampler):(generation|parent:)")  # NSGAIISampler, NSGAIIISampler, ...
_STUDY_TRACES = (("qmc:", "QMCSampler"),)


@dataclass(frozen=True)
class _Trace:
    sampler: str
    where: str


def sampler_evidence(storage: Any, study: Any) -> _Trace | None:
    """The first trace a non-random sampler (or an enqueued trial) left in ``study`` (on ``storage``), or None."""
    # Study.system_attrs is gone in Optuna 5; the storage API still reads them.
    for key in storage.get_study_system_attrs(storage.get_study_id_from_name(study.study_name)):
        for prefix, sampler in _STUDY_TRACES:
            if key.startswith(prefix):
                return _Trace(sampler, f"study system attribute {key!r}")
    for trial in study.get_trials(deepcopy=False):
        for key in trial.system_attrs:
            match = _GA_TRACE.match(key)
            if match:
                return _Trace(match.group(1), f"trial {trial.number}'s system attribute {key!r}")
            for prefix, sampler in _TRIAL_TRACES:
                if key.startswith(prefix):
                    return _Trace(sampler, f"trial {trial.number}'s system attribute {key!r}")
    return None


def _sampler(storage: Any, study: Any, asserted: str | None, where: str) -> SamplerInfo:
    """What is known of the study's sampler: a trace, the user's record, the user's assertion, or unknown."""
    trace = sampler_evidence(storage, study)
    recorded = study.user_attrs.get("sampler")
    if asserted is not None:
        asserted = asserted.strip()
        said_random = asserted.lower() in ("random", RANDOM_SAMPLER.lower())
        if said_random and trace is not None:
            raise InputError(
                f"{where}: --sampler {asserted} contradicts the study: {trace.where} is written by {trace.sampler},"
                " not by a random sampler."
            )
        name = RANDOM_SAMPLER if said_random else asserted
        return SamplerInfo(name, said_random, "given with --sampler")
    if trace is not None:
        return SamplerInfo(trace.sampler, False, f"Optuna recorded {trace.where}")
    if isinstance(recorded, str) and recorded.strip():
        name = recorded.strip()
        return SamplerInfo(name, name in (RANDOM_SAMPLER, "random"), "the study's user attribute 'sampler'")
    return SamplerInfo(None, None, "Optuna does not record a study's sampler and this study carries no trace of one;"
                       " --sampler random asserts a RandomSampler")


def from_optuna(
    storage_url: str,
    study_name: str | None,
    *,
    score: str | None = None,
    test: str | None = None,
    sampler: str | None = None,
    minimize: bool | None = None,
    label: str | None = None,
) -> FamilyResults:
    """Read one Optuna study through ``optuna.load_study``.

    Parameters
    ----------
    storage_url : str
        An Optuna RDB storage URL (``sqlite:///path/optuna.db``, ``postgresql://...``). A SQLite
        file must exist: nothing is created.
    study_name : str, optional
        The study; may be left out when the storage holds exactly one.
    score : str, optional
        Multi-objective studies: the objective to report (one of the study's ``metric_names``, or
        its index). Single-objective studies: when given, it must name that objective (its metric
        name, ``value`` when the study has none, or 0).
    test : str, optional
        A trial user attribute holding each trial's test score.
    sampler : str, optional
        The sampler the user asserts the study used (``random`` makes the trials i.i.d. draws).
    minimize : bool, optional
        Lower scores are better; default (and checked against) the study's direction.
    label : str, optional
        The family's name; default the study's name.

    Raises
    ------
    InputError
        No such file or study (the message lists the studies), an objective not in the study, a
        ``--sampler random`` that a recorded trace contradicts, a study without trials.
    UnavailableError
        The database server cannot be reached.
    """
    try:
        import optuna  # lazy: an optional package (the [optuna] extra), for optuna: sources only
    except ImportError:
        raise InputError("optuna: sources need Optuna: pip install 'showwork-tuning[optuna]'") from None
    shown = strip_credentials(storage_url.strip())
    where = f"Optuna storage {shown}"
    storage = _storage(optuna, storage_url.strip(), where)
    names = [s.study_name for s in storage.get_all_studies()]
    if not study_name:
        if len(names) != 1:
            raise InputError(f"{where}: name the study with --study (studies: {', '.join(map(repr, names)) or 'none'}).")
        study_name = names[0]
    if study_name not in names:
        raise InputError(f"{where}: no study named {study_name!r} (studies: {', '.join(map(repr, names)) or 'none'}).")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.load_study(study_name=study_name, storage=storage)
    where += f", study {study_name!r}"
    objective, metric = _objective(study, score, where)
    study_minimizes = study.directions[objective] == optuna.study.StudyDirection.MINIMIZE
    if minimize is not None and minimize != study_minimizes:
        raise InputError(f"{where}: --min contradicts the study, which {'minimizes' if study_minimizes else 'maximizes'} {metric}.")
    trials = [t for t in study.get_trials(deepcopy=False) if t.state != optuna.trial.TrialState.WAITING]
    if not trials:
        raise InputError(f"{where}: no trials.")
    states = optuna.trial.TrialState
    status_of = {states.COMPLETE: FINISHED, states.PRUNED: "pruned", states.FAIL: "failed", states.RUNNING: "failed"}

    def value(trial: Any) -> float:
        values = trial.values
        if trial.state != states.COMPLETE or values is None or objective >= len(values):
            return math.nan
        return float(values[objective])

    scores = np.array([value(t) for t in trials], dtype=float)
    statuses = tuple(status_of[t.state] if t.state != states.COMPLETE or math.isfinite(s) else "failed" for t, s in zip(trials, scores))
    runtimes = np.array([t.duration.total_seconds() if t.duration is not None else math.nan for t in trials], dtype=float)
    tests = None if test is None else _user_attr_values(trials, test, where)
    return FamilyResults(
        name=label or study_name,
        scores=np.where([s == FINISHED for s in statuses], scores, math.nan),
        statuses=statuses,
        metric=metric,
        minimize=study_minimizes,
        source=where,
        runtimes_s=runtimes,
        test_scores=tests,
        params=tuple(dict(t.params) for t in trials),
        meta={"storage": shown, "study": study_name, "trial_numbers": tuple(t.number for t in trials),
              "sampler": _sampler(storage, study, sampler, where), "space": recorded_space(trials)},
        trial_metrics=tuple(
            {key: v for key, v in t.user_attrs.items() if isinstance(v, (int, float)) and not isinstance(v, bool)} for t in trials
        ),
    )


def optuna_distribution(name: str, distribution: Any) -> RecordedParam:
    """One of Optuna's distributions as a :class:`RecordedParam`: showwork's distribution where it draws the same."""
    kind = type(distribution).__name__
    low, high = getattr(distribution, "low", None), getattr(distribution, "high", None)
    try:
        if kind in ("FloatDistribution", "IntDistribution") and low == high:
            return RecordedParam(name, Constant(low))
        if kind == "FloatDistribution":
            if distribution.log:
                return RecordedParam(name, LogUniform(low, high))
            return RecordedParam(name, Uniform(low, high, distribution.step))
        if kind == "IntDistribution" and distribution.step == 1:
            return RecordedParam(name, (LogIntUniform if distribution.log else IntUniform)(low, high))
        if kind == "IntDistribution":
            return RecordedParam(name, words=f"Optuna integers {{{low}, {low + distribution.step}, ..., {high}}} step"
                                 f" {distribution.step} (showwork's integer distributions have no step)")
        if kind == "CategoricalDistribution":
            return RecordedParam(name, Categorical(tuple(distribution.choices)))
    except DistributionError as error:  # values showwork's distributions do not take
        return RecordedParam(name, words=f"Optuna {distribution!r} ({error})")
    return RecordedParam(name, words=f"Optuna {distribution!r} (not one of showwork's distributions)")


def recorded_space(trials: list) -> RecordedSpace:
    """The union over ``trials`` of the distributions they drew their parameters from (see the module's notes)."""
    drawn: dict[str, dict[Any, list[int]]] = {}
    for trial in trials:
        for name, distribution in trial.distributions.items():
            drawn.setdefault(name, {}).setdefault(distribution, []).append(trial.number)
    params = []
    for name, by_distribution in drawn.items():
        count = sum(len(numbers) for numbers in by_distribution.values())
        if len(by_distribution) == 1:
            param = optuna_distribution(name, next(iter(by_distribution)))
            params.append(param if count == len(trials) else dataclasses.replace(param, note=f"drawn in {count} of {len(trials)} trials"))
            continue
        parts = [f"{optuna_distribution(name, d).describe().removeprefix(name + ': ')} in {_numbers_text(numbers)}"
                 for d, numbers in by_distribution.items()]
        params.append(RecordedParam(name, words=f"the trials disagree: {'; '.join(parts)}"))
    evidence = "the trials' distributions in the Optuna study"
    return RecordedSpace(tuple(params), evidence if params else "no trial of the study recorded a distribution")


def _numbers_text(numbers: list[int]) -> str:
    """``trials 0, 1, 2 and 2 more``."""
    shown = ", ".join(map(str, numbers[:3]))
    return f"trial{'s' if len(numbers) > 1 else ''} {shown}" + (f" and {len(numbers) - 3} more" if len(numbers) > 3 else "")


def _storage(optuna: Any, url: str, where: str) -> Any:
    """An RDB storage on ``url``, refusing to create a SQLite file that is not there."""
    if url.startswith("sqlite:"):
        path = url.removeprefix("sqlite:").removeprefix("///")
        if not url.startswith("sqlite:///") or not path or path == ":memory:":
            raise InputError(f"{where}: give a SQLite file as sqlite:///PATH (an absolute path: sqlite:////PATH).")
        if not Path(path).is_file():
            raise InputError(f"{where}: no such file {path!r}.")
    elif "://" not in url:
        raise InputError(f"{where}: not a storage URL; Optuna's are like sqlite:///optuna.db or postgresql://host/db.")
    try:
        storage = optuna.storages.RDBStorage(url, skip_table_creation=True)
        storage.get_all_studies()  # reads the schema: a file that is not Optuna's fails here
        return storage
    except ImportError as error:  # a database driver that is not installed
        cause = f" ({error.__cause__})" if error.__cause__ else ""
        raise InputError(f"{where}: {str(error).strip()}{cause}") from None
    except Exception as error:
        name = type(error).__name__
        if name in ("OperationalError", "StorageInternalError") and not url.startswith("sqlite:"):
            reason = str(error.__cause__ or error).strip().splitlines()[0]
            raise UnavailableError(f"{where}: cannot reach the database ({reason}).") from None
        if name in ("OperationalError", "DatabaseError", "ArgumentError", "NoSuchModuleError", "RuntimeError",
                    "StorageInternalError"):
            reason = str(error.__cause__ or error).strip().splitlines()[0]
            raise InputError(f"{where}: not an Optuna storage ({reason}).") from None
        raise


def _objective(study: Any, score: str | None, where: str) -> tuple[int, str]:
    """The index and name of the objective to report."""
    names = study.metric_names or [f"objective {i}" if len(study.directions) > 1 else "value" for i in range(len(study.directions))]
    if score is None:
        if len(names) > 1:
            raise InputError(f"{where}: a study of {len(names)} objectives; choose one with --score ({', '.join(names)}, or an index).")
        return 0, names[0]
    if score in names:
        return names.index(score), score
    if score.isdigit() and int(score) < len(names):
        return int(score), names[int(score)]
    raise InputError(f"{where}: no objective {score!r} (objectives: {', '.join(names)}, or an index from 0).")


def _user_attr_values(trials: list, key: str, where: str) -> np.ndarray:
    if not any(key in t.user_attrs for t in trials):
        keys = sorted({k for t in trials for k in t.user_attrs})
        raise InputError(f"{where}: no trial has the user attribute {key!r} (user attributes: {', '.join(keys) or 'none'}).")

    def number(value: Any) -> float:
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan

    return np.array([number(t.user_attrs.get(key)) for t in trials], dtype=float)
