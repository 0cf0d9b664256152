"""The best configurations of a search, and their re-runs over fresh seeds, as pure functions.

``showwork best`` ranks the finished trials by validation score (:func:`ranked_trials`: the
metric's mode decides the direction, ties go to the lower trial index, failed and timed-out trials
and non-finite scores are never chosen) and writes a chosen configuration as a search-space YAML
whose parameters are all constants (:func:`best_configuration_yaml`), which ``showwork validate``
accepts and ``showwork search`` trains again.

``showwork rerun`` trains the selected configurations again under fresh training seeds. Its plan
(:class:`Rerun`, :func:`extend_plan`) lives in a ledger of its own inside the search's folder
(``{storage}/{name}/reruns/``, :data:`RERUN_LEDGER`), so the search's trials, and every tuning
curve made from them, never see a re-run. Re-run ``r`` of the plan re-trains trial ``trial`` with
the ``replicate``-th seed of :func:`showwork.sampling.fresh_training_seeds` (shared by every selected
configuration, so that they are compared on the same seeds). :func:`rerun_summaries` gives what the
report prints (:func:`showwork.report.tables.rerun_sentence` words it): each re-run configuration's
test (else validation) score over its seeds, mean ± sd (min–max).

The side effects (reading ledgers, running the trials on Ray, MLflow) are in
:func:`showwork.run.run_reruns` and :mod:`showwork.cli`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from showwork.errors import InputError
from showwork.space import SearchSpec, family_kind, resolved_yaml
from showwork.store import TrialRecord, search_name_problem
from showwork.values import is_integer

__all__ = [
    "RERUN_LEDGER",
    "Rerun",
    "RerunSummary",
    "Spread",
    "TiedBest",
    "best_configuration_yaml",
    "extend_plan",
    "plan_from_meta",
    "ranked_tie",
    "ranked_trials",
    "rerun_summaries",
    "spread",
    "tied_best",
]

RERUN_LEDGER = "reruns"
"""The name of the re-runs' ledger inside a search's folder: ``Ledger(storage / name, RERUN_LEDGER)``."""


def ranked_trials(records: Iterable[TrialRecord], mode: str) -> list[TrialRecord]:
    """The finished trials with a finite score, best first (``mode`` ``max`` or ``min``), ties by lower index.

    Failed and timed-out trials are never ranked, whatever score they carry.
    """
    if mode not in ("max", "min"):
        raise InputError(f"metric mode must be 'max' or 'min', not {mode!r}")
    scored = [r for r in records if r.status == "finished" and r.score is not None and math.isfinite(r.score)]
    sign = -1.0 if mode == "max" else 1.0
    return sorted(scored, key=lambda r: (sign * r.score, r.index))


@dataclass(frozen=True)
class TiedBest:
    """The trials that tie for the best validation score, and their test scores.

    Selection by validation score takes the lowest index among them; when several tie, that choice
    is arbitrary, so the test score over the tied set is reported beside the selected one.

    Attributes
    ----------
    count : int
        Trials whose validation score equals the best one (1: no tie).
    selected : int
        The position (trial index for ledgers) of the selected trial, the lowest among them.
    tests : tuple of float
        The finite test scores of the tied trials, in trial order (empty when none recorded).
    """

    count: int
    selected: int
    tests: tuple[float, ...]

    @property
    def test_low(self) -> float | None:
        return min(self.tests) if self.tests else None

    @property
    def test_high(self) -> float | None:
        return max(self.tests) if self.tests else None

    @property
    def test_mean(self) -> float | None:
        return math.fsum(self.tests) / len(self.tests) if self.tests else None


def tied_best(positions: Sequence[int], scores: Sequence[float], tests: Sequence[float | None] | None) -> TiedBest:
    """The tie for the best among ``positions`` (finished trials with finite scores, best first by :func:`ranked_trials`' rule).

    ``scores[i]`` / ``tests[i]`` belong to ``positions[i]``; ``positions[0]`` is the selected trial.
    Exact equality is a tie (scores are compared as recorded).
    """
    best = scores[0]
    tied = [i for i, score in enumerate(scores) if score == best]
    values = [] if tests is None else [tests[i] for i in tied]
    return TiedBest(len(tied), positions[0], tuple(float(t) for t in values if t is not None and math.isfinite(t)))


def ranked_tie(ranked: Sequence[TrialRecord]) -> TiedBest | None:
    """The tie for the best among ``ranked`` (:func:`ranked_trials`' output, best first), or None when it is empty."""
    if not ranked:
        return None
    return tied_best([r.index for r in ranked], [r.score for r in ranked], [r.test_score for r in ranked])


def _absolute_family(family: str, spec_dir: str | None) -> str:
    """A family file given relative to the search's YAML, made absolute so the new YAML works from any folder."""
    if spec_dir is None or family_kind(family) != "file":
        return family
    path, _, function = family.rpartition(":")
    if Path(path).is_absolute():
        return family
    return f"{Path(spec_dir) / path}:{function}"


def best_configuration_yaml(
    spec: Mapping[str, Any], record: TrialRecord, *, search: str, rank: int, finished: int, spec_dir: str | None,
) -> str:
    """A search-space YAML that trains trial ``record``'s configuration again, every parameter a constant.

    It keeps the search's family, data, metric, resources and limits, and is named
    ``{search}-best`` (``{search}-top{rank}`` below rank 1); ``num_trials: 1``, the search's seed (its
    trial 0 draws its own training seed: the header gives the original trial's). A family file
    given relative to the search's YAML becomes absolute. :func:`showwork.space.resolved_yaml`
    writes it, so it loads back to the same spec.

    Parameters
    ----------
    spec : mapping
        The search's recorded spec (``search.json``'s ``spec``: ``SearchSpec.model_dump(mode="json")``).
    record : TrialRecord
        The chosen trial (finished).
    search : str
        The search's name.
    rank : int
        1 for the best configuration.
    finished : int
        The number of ranked trials (for the header).
    spec_dir : str, optional
        The folder of the search's YAML (relative family files resolve from there).
    """
    suffix = "-best" if rank == 1 else f"-top{rank}"
    name = search[: 200 - len(suffix)] + suffix
    if search_name_problem(name) is not None:  # a name that was valid stays valid with a suffix; never expected
        raise InputError(f"cannot name the configuration's search {name!r}")
    fields = {key: value for key, value in spec.items() if key not in ("space", "name", "num_trials", "family")}
    space = {param: {"distribution": "constant", "value": value} for param, value in record.params.items()}
    if not space:
        raise InputError(f"trial {record.index} of search {search!r} has no parameters to write")
    built = SearchSpec.model_validate(
        {**fields, "name": name, "num_trials": 1, "family": _absolute_family(str(spec["family"]), spec_dir), "space": space}
    )
    metric = (spec.get("metric") or {}).get("name", "score")
    header = (
        f"# Configuration {rank} of search {search} by validation {metric}: trial {record.index},"
        f" {metric} = {record.score!r} (rank {rank} of {finished} finished trials; ties: the lower trial).\n"
        f"# Trial {record.index} trained with seed {record.seed}; this search draws its own training seed.\n"
        f"# Train it again: showwork search THIS_FILE (or showwork rerun {search} --seeds N for several seeds).\n"
    )
    return header + resolved_yaml(built)


# ---------------------------------------------------------------- re-runs


@dataclass(frozen=True)
class Rerun:
    """One planned re-run: index ``index`` of the re-runs' ledger re-trains trial ``trial`` with ``seed``.

    ``replicate`` is the seed's position among the fresh seeds (0 for the first); ``params`` the trial's
    configuration, as the search's record has it.
    """

    index: int
    trial: int
    replicate: int
    seed: int
    params: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "trial": self.trial, "replicate": self.replicate, "seed": self.seed,
                "params": dict(self.params)}


def plan_from_meta(meta: Mapping[str, Any], where: str) -> tuple[Rerun, ...]:
    """The plan recorded in the re-runs' ``search.json`` (``plan``: a list of :meth:`Rerun.to_dict`).

    Raises
    ------
    InputError
        The recorded plan is malformed (a hand-edited file); ``where`` names it.
    """
    entries = meta.get("plan", [])
    if not isinstance(entries, list):
        raise InputError(f"{where}: 'plan' must be a list")
    plan = []
    for position, entry in enumerate(entries):
        try:
            rerun = Rerun(index=entry["index"], trial=entry["trial"], replicate=entry["replicate"], seed=entry["seed"],
                          params=dict(entry["params"]))
        except (KeyError, TypeError, ValueError):
            raise InputError(f"{where}: plan entry {position} is not a re-run (index, trial, replicate, seed, params)") from None
        if any(not is_integer(v) or v < 0 for v in (rerun.index, rerun.trial, rerun.replicate, rerun.seed)):
            raise InputError(f"{where}: plan entry {position} has a field that is not an integer >= 0")
        if rerun.index != position:
            raise InputError(f"{where}: plan entry {position} has index {rerun.index}")
        plan.append(rerun)
    return tuple(plan)


def extend_plan(plan: Sequence[Rerun], selected: Sequence[TrialRecord], seeds: Sequence[int]) -> tuple[Rerun, ...]:
    """``plan`` plus a re-run of each ``selected`` trial under each of ``seeds`` that it lacks.

    Entries already planned keep their index and seed (a resumed or widened re-run never changes
    one); new entries get the next indices, configuration by configuration in ``selected`` order,
    then by seed.
    """
    planned = {(r.trial, r.replicate) for r in plan}
    extended = list(plan)
    for record in selected:
        for replicate, seed in enumerate(seeds):
            if (record.index, replicate) not in planned:
                extended.append(Rerun(len(extended), record.index, replicate, int(seed), dict(record.params)))
                planned.add((record.index, replicate))
    return tuple(extended)


@dataclass(frozen=True)
class Spread:
    """Scores over seeds: their number, mean, sample standard deviation (NaN for one), min and max."""

    n: int
    mean: float
    sd: float
    low: float
    high: float


def spread(values: Iterable[float | None]) -> Spread | None:
    """The :class:`Spread` of the finite ``values`` (None when there is none)."""
    finite = [float(v) for v in values if v is not None and math.isfinite(v)]
    if not finite:
        return None
    n = len(finite)
    mean = math.fsum(finite) / n
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in finite) / (n - 1)) if n > 1 else math.nan
    return Spread(n, mean, sd, min(finite), max(finite))


@dataclass(frozen=True)
class RerunSummary:
    """The re-runs of one configuration: trial ``trial`` of the search (``rank`` among its finished
    trials now, None if it no longer ranks), planned and ended re-runs, and the spreads of their
    validation and test scores over the finished ones."""

    trial: int
    rank: int | None
    params: dict[str, Any]
    planned: int
    finished: int
    failed: int
    validation: Spread | None
    test: Spread | None


def rerun_summaries(plan: Sequence[Rerun], records: Iterable[TrialRecord], ranked: Sequence[int]) -> tuple[RerunSummary, ...]:
    """One :class:`RerunSummary` per re-run configuration, in the order of ``ranked`` (the search's
    trial indices, best first), configurations that no longer rank last.

    Only recorded re-runs count: a planned re-run without a record (interrupted) is neither finished nor failed.
    """
    by_index = {record.index: record for record in records}
    trials: dict[int, list[Rerun]] = {}
    for rerun in plan:
        trials.setdefault(rerun.trial, []).append(rerun)
    rank_of = {trial: position + 1 for position, trial in enumerate(ranked)}
    summaries = []
    for trial, reruns in trials.items():
        ended = [by_index[r.index] for r in reruns if r.index in by_index]
        done = [r for r in ended if r.status == "finished"]
        summaries.append(RerunSummary(
            trial=trial,
            rank=rank_of.get(trial),
            params=dict(reruns[0].params),
            planned=len(reruns),
            finished=len(done),
            failed=len(ended) - len(done),
            validation=spread(r.score for r in done),
            test=spread(r.test_score for r in done),
        ))
    return tuple(sorted(summaries, key=lambda s: (s.rank is None, s.rank or 0, s.trial)))
