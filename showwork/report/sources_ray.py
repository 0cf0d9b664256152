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

The search algorithm (:func:`search_algorithm`). The bands assume i.i.d. random draws: Ray Tune's
default ``BasicVariantGenerator`` without ``tune.grid_search`` draws them; a ``Searcher``
(``OptunaSearch``/TPE, HyperOpt, BayesOpt, ...) chooses each configuration from earlier results, and
grid search enumerates. No Ray API exposes an experiment's search algorithm (``ExperimentAnalysis``
and ``ResultGrid`` do not; ``Tuner.restore`` needs the trainable and keeps its ``TuneConfig``
private), so it is read from what Ray wrote in the folder: the class ``TuneConfig.search_alg`` names
in ``tuner.pkl``, read as pickle opcodes (:mod:`pickletools`: nothing is unpickled or imported), and
failing that, which of the search algorithms' own state files (their ``CKPT_FILE_TMPL``) is there.
Neither there: unknown, reported as not known to be i.i.d. until ``--sampler random``.

The search space (:func:`recorded_space`, the checklist's "bounds of each hyperparameter"). No Ray API
returns an experiment's ``param_space`` (``tuner.pkl`` keeps only its flattened keys; ``Tuner.restore``
needs it given again). Ray's default search algorithm keeps it: ``BasicVariantGenerator.restore_from_dir``
(its public restore; it unpickles the ``basic-variant-state-*.json`` Ray wrote) and ``get_state()`` give
the unresolved spec's ``config``, whose ``Domain`` objects are converted into showwork's distributions
where they draw exactly the same (:func:`ray_domain`): ``tune.uniform``, ``loguniform``, ``randn``,
``randint`` (upper bound excluded: integers ``lower .. upper - 1``) and ``choice``. Others are worded
and said not to be showwork's: ``quniform``/``qloguniform`` (rounded to multiples of q: the end values
half as likely), ``lograndint`` (floored, not rounded), ``qrandint``; grid values are listed;
``tune.sample_from`` functions are not recorded (Ray keeps a placeholder). A searcher (Optuna, HyperOpt, ...)
keeps its space in its own form, and a grid too large for Ray to store its variants leaves no state: not recorded.
"""

from __future__ import annotations

import logging
import math
import pickletools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from showwork.distributions import Categorical, Constant, DistributionError, IntUniform, LogUniform, Normal, Uniform
from showwork.errors import InputError
from showwork.report.inputs import (
    FINISHED,
    FamilyResults,
    RecordedParam,
    RecordedSpace,
    SamplerInfo,
    sampler_of,
    unknown_sampler,
)
from showwork.sampling import flatten

__all__ = ["REDUCTIONS", "from_ray_tune", "ray_domain", "recorded_space", "search_algorithm"]

REDUCTIONS = ("last", "best")
_STATE_FILE = "experiment_state-*.json"  # Ray's TuneController.CKPT_FILE_TMPL, to point at the right folder
_TUNER_FILE = "tuner.pkl"  # ray.tune.impl.tuner_internal's _TUNER_PKL: the Tuner with its TuneConfig
_DEFAULT_SEARCH = "BasicVariantGenerator"  # TuneConfig(search_alg=None): Ray's default, random search (and grid search)
_WRAPPERS = ("ConcurrencyLimiter", "Repeater", "SearchGenerator")  # wrap the searcher that chooses configurations
_MAX_TUNER_BYTES = 64 * 2**20
_NOT_RECORDED = "not recorded"  # the checklist's word (showwork.report.checklist sits above this module)
_PLACEHOLDERS = ("__fn_ph", "__ref_ph")  # ray.tune.impl.placeholder: a tune.sample_from function, an object ref


def _pickle_values(data: bytes) -> list[tuple[str, object]]:
    """The opcodes of a pickle as ``(opcode, value)``, memo references resolved and memo writes left out.

    Only reads the opcodes (:func:`pickletools.genops`): nothing is unpickled, nothing imported.
    """
    memo: dict[int, object] = {}
    values: list[tuple[str, object]] = []
    for op, arg, _ in pickletools.genops(data):
        if op.name == "MEMOIZE":
            memo[len(memo)] = values[-1][1] if values else None
        elif op.name in ("PUT", "BINPUT", "LONG_BINPUT"):
            memo[int(arg)] = values[-1][1] if values else None
        elif op.name in ("GET", "BINGET", "LONG_BINGET"):
            values.append(("GET", memo.get(int(arg))))
        elif op.name != "FRAME":
            values.append((op.name, arg))
    return values


def _tuner_search_alg(path: Path) -> tuple[str, bool] | None:
    """(the class of ``TuneConfig.search_alg`` in ``tuner.pkl``, whether ``grid_search`` appears), or None if unreadable.

    Read from the pickle's opcodes: the string ``search_alg`` (the TuneConfig's field), then None
    (Ray's default) or the first class named after it that is not a wrapper.
    """
    try:
        if path.stat().st_size > _MAX_TUNER_BYTES:
            return None
        ops = _pickle_values(path.read_bytes())
    except (OSError, ValueError, EOFError, KeyError):  # a damaged or foreign file: the state files may still tell
        return None
    # tuner.pkl keeps the search space's flattened keys ("lr/grid_search"), not the space itself.
    grid = any(isinstance(value, str) and (value == "grid_search" or value.endswith("/grid_search")) for _, value in ops)
    start = next((i for i, (_, value) in enumerate(ops) if value == "search_alg"), None)
    if start is None or start + 1 >= len(ops):
        return None
    if ops[start + 1][0] == "NONE":
        return _DEFAULT_SEARCH, grid
    last_string = None
    for name, value in ops[start + 1:]:
        if isinstance(value, str):
            last_string = value
        if name == "STACK_GLOBAL" or name == "GLOBAL":
            cls = last_string if name == "STACK_GLOBAL" else str(value).split()[-1]
            if cls and cls not in _WRAPPERS:
                return cls, grid
    return None


def search_algorithm(folder: Path) -> SamplerInfo:
    """How the Ray Tune experiment in ``folder`` drew its configurations, as far as its files tell.

    Returns
    -------
    SamplerInfo
        ``BasicVariantGenerator``: i.i.d. random draws (not i.i.d. where ``tune.grid_search`` is in
        the search space); any other class: a searcher, not i.i.d.; unknown when Ray left no record.
    """
    # lazy: Ray (1.3 s to import) only for ray: sources; showwork report imports this module whatever its sources
    from ray.tune.search import BasicVariantGenerator, SearchGenerator

    found = _tuner_search_alg(folder / _TUNER_FILE)
    if found is not None:
        cls, grid = found
        evidence = f"Ray Tune recorded TuneConfig(search_alg={'None' if cls == _DEFAULT_SEARCH else cls}) in {_TUNER_FILE}"
    elif any(folder.glob(SearchGenerator.CKPT_FILE_TMPL.format("*"))):
        cls, grid = "a Ray Tune searcher", False
        evidence = f"{_TUNER_FILE} unreadable; the folder has the searcher state {SearchGenerator.CKPT_FILE_TMPL.format('*')}"
    elif BasicVariantGenerator().has_checkpoint(str(folder)):
        cls, grid = _DEFAULT_SEARCH, False
        evidence = (f"{_TUNER_FILE} unreadable; the folder has {BasicVariantGenerator.CKPT_FILE_TMPL.format('*')}"
                    " (a grid search would not be told apart)")
    else:
        return unknown_sampler(f"this Ray Tune experiment (no {_TUNER_FILE}, no search-algorithm state file)")
    if cls != _DEFAULT_SEARCH:
        return SamplerInfo(cls, False, f"{evidence}: a searcher chooses each configuration from earlier results")
    if grid:
        return SamplerInfo(f"{_DEFAULT_SEARCH} with tune.grid_search", False, f"{evidence}; the search space has a grid")
    return SamplerInfo(f"{_DEFAULT_SEARCH} (random search)", True, evidence)


def ray_domain(name: str, value: Any) -> RecordedParam:
    """One entry of a Ray Tune ``param_space`` as a :class:`RecordedParam`: showwork's distribution where exact."""
    # lazy: Ray only for ray: sources, as above
    from ray.tune.search.sample import Categorical as RayCategorical
    from ray.tune.search.sample import Float, Function, Integer, Quantized

    if isinstance(value, Mapping) and set(value) == {"grid_search"}:
        return RecordedParam(name, words=f"grid search over {list(value['grid_search'])!r} (every value, not drawn)")
    if (isinstance(value, tuple) and len(value) == 2 and value[0] in _PLACEHOLDERS) or isinstance(value, Function):
        return RecordedParam(name, words=f"{_NOT_RECORDED} (a tune.sample_from function: Ray keeps a placeholder)", known=False)
    sampler = getattr(value, "sampler", None)
    kind = type(sampler).__name__.lstrip("_")
    try:
        if isinstance(value, Float) and kind in ("Uniform", "LogUniform"):
            return RecordedParam(name, (Uniform if kind == "Uniform" else LogUniform)(value.lower, value.upper))
        if isinstance(value, Float) and kind == "Normal":
            return RecordedParam(name, Normal(sampler.mean, sampler.sd))
        if isinstance(value, Integer) and kind == "Uniform":  # numpy's integers(lower, upper): upper excluded
            return RecordedParam(name, IntUniform(value.lower, value.upper - 1) if value.upper - 1 > value.lower
                                 else Constant(value.lower))
        if isinstance(value, RayCategorical) and kind == "Uniform":
            return RecordedParam(name, Categorical(tuple(value.categories)))
    except DistributionError as error:  # values showwork's distributions do not take (a list among the choices, ...)
        return RecordedParam(name, words=f"Ray Tune {type(value).__name__.lower()} {value.domain_str} ({error})")
    if isinstance(sampler, Quantized):
        inner = type(sampler.get_sampler()).__name__.lstrip("_").lower()
        return RecordedParam(name, words=f"Ray Tune {inner} on [{value.lower!r}, {value.upper!r}) rounded to multiples of"
                             f" {sampler.q!r} (not one of showwork's distributions: the end values are drawn half as often)")
    if isinstance(value, Integer) and kind == "LogUniform":
        return RecordedParam(name, words=f"Ray Tune lograndint on [{value.lower!r}, {value.upper!r}) (integers, log-uniform"
                             " draws floored: not showwork's log_int_uniform, which rounds)")
    if hasattr(value, "domain_str"):
        return RecordedParam(name, words=f"Ray Tune {type(value).__name__} {value.domain_str} sampled by {kind}"
                             " (not one of showwork's distributions)")
    try:
        return RecordedParam(name, Constant(value))
    except DistributionError:
        return RecordedParam(name, words=f"the constant {value!r}")


def _space_entries(config: Mapping, prefix: str = "") -> list[tuple[str, Any]]:
    """The entries of a nested ``param_space`` with dotted names; a ``{"grid_search": [...]}`` is one entry."""
    entries = []
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value and set(value) != {"grid_search"}:
            entries.extend(_space_entries(value, f"{name}."))
        else:
            entries.append((name, value))
    return entries


def recorded_space(folder: Path, sampler: SamplerInfo) -> RecordedSpace:
    """The experiment's search space as Ray's default search algorithm recorded it (see the module's notes)."""
    # lazy: Ray only for ray: sources, as above
    from ray.tune.search import BasicVariantGenerator

    state_file = BasicVariantGenerator.CKPT_FILE_TMPL.format("*")
    if sampler.name is not None and not sampler.name.startswith(_DEFAULT_SEARCH):
        return RecordedSpace((), f"the searcher {sampler.name} keeps the search space in its own form, which showwork does not read")
    generator = BasicVariantGenerator()
    if not generator.has_checkpoint(str(folder)):
        return RecordedSpace((), f"the folder has no {state_file} (Ray writes none for a grid too large to store its variants)")
    try:
        generator.restore_from_dir(str(folder))
        state = generator.get_state()
        configs = [iterator.unresolved_spec.get("config") or {} for iterator in state["_iterators"]]
    except Exception as error:  # a damaged or foreign pickle may raise anything while it loads
        reason = str(error).splitlines()[0] if str(error) else ""
        return RecordedSpace((), f"Ray could not restore {state_file} ({type(error).__name__}: {reason})")
    if not configs:
        return RecordedSpace((), f"{state_file} holds no search space")
    params = [ray_domain(name, value) for name, value in _space_entries(configs[0])]
    if any(config != configs[0] for config in configs[1:]):  # Ray's Domain objects compare by identity: a rerun's copy differs
        texts = {tuple(ray_domain(n, v).describe() for n, v in _space_entries(c)) for c in configs}
        if len(texts) > 1:
            return RecordedSpace((), f"{state_file} holds {len(texts)} different search spaces (the experiment was run with each)")
    return RecordedSpace(tuple(params), f"Ray Tune's {state_file}, restored with BasicVariantGenerator.restore_from_dir")


def from_ray_tune(
    path: str | Path,
    score: str | None,
    *,
    reduce: str = "last",
    minimize: bool = False,
    label: str | None = None,
    sampler: str | None = None,
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
    sampler : str, optional
        ``--sampler``: how the trials were drawn, where the folder does not tell
        (:func:`search_algorithm`); refused when it contradicts what Ray recorded.

    Raises
    ------
    InputError
        No experiment there (the message lists experiments in its subfolders), ``score`` not
        given or reported by no trial (the message lists the metrics), an unknown ``reduce``, a ``sampler``
        that contradicts the recorded search algorithm, a
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
        from ray.tune import ExperimentAnalysis  # lazy: Ray only for ray: sources, as above
    except ImportError:
        raise InputError("ray: sources need Ray Tune: pip install 'ray[tune]'") from None
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
    recorded_sampler = search_algorithm(folder)
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
              "trial_statuses": tuple(t.status for t in trials), "reduce": reduce,
              "sampler": sampler_of(sampler, recorded_sampler, where), "space": recorded_space(folder, recorded_sampler)},
        trial_metrics=tuple(
            {key: v for key, v in (t.last_result or {}).items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
            for t in trials
        ),
    )
