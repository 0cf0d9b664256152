"""One reader for every kind of source a report takes (:func:`read_sources`).

A source is a search's name (its ledger under ``storage``), a results file, ``mlflow:EXPERIMENT``,
``ray:PATH`` or ``optuna:STORAGE_URL``; each kind has its reader (:func:`~showwork.report.from_ledger`,
:func:`~showwork.report.from_results_file`, :func:`~showwork.report.from_mlflow`,
:func:`~showwork.report.from_ray_tune`, :func:`~showwork.report.from_optuna`), and this module decides
which one reads a source, so the command line and the Python API read sources the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from showwork.errors import InputError
from showwork.report.inputs import FamilyResults, from_ledger, from_results_file
from showwork.report.sources_mlflow import from_mlflow
from showwork.report.sources_optuna import from_optuna
from showwork.report.sources_ray import from_ray_tune
from showwork.run.race import verified_race
from showwork.store import Ledger, list_searches
from showwork.store.races import RACES_FOLDER, RaceRecord

__all__ = ["from_race", "race_record", "read_sources"]


def read_sources(
    sources: Sequence[str],
    *,
    storage: str | Path = "showwork_runs",
    tracking_uri: str | None = None,
    score: str | None = None,
    runtime: str | None = None,
    test: str | None = None,
    params: Sequence[str] | None = None,
    group: str | None = None,
    minimize: bool = False,
    reduce: str = "last",
    study: str | None = None,
    sampler: str | None = None,
    labels: Sequence[str] | None = None,
) -> list[FamilyResults]:
    """Read every source into :class:`FamilyResults`, in order (a results file with ``group`` gives several).

    Parameters
    ----------
    sources : sequence of str
        A search name, a results file path, ``mlflow:EXPERIMENT``, ``ray:PATH`` or ``optuna:STORAGE_URL``.
    storage : path
        The ledger directory of search names.
    tracking_uri : str, optional
        The MLflow store of ``mlflow:`` sources (required when one is given).
    score, runtime, test, params, group, minimize :
        What a results file's columns are (``score`` also names the metric of plain MLflow runs,
        ``ray:`` sources and a multi-objective Optuna study's objective); see the readers.
    reduce : {"last", "best"}
        ``ray:`` sources: each trial's last or best value of ``score``.
    study : str, optional
        ``optuna:`` sources: the study's name.
    sampler : str, optional
        How the trials were drawn, where a source does not record it (``random``: i.i.d. draws).
    labels : sequence of str, optional
        The families' names, one per source.

    Raises
    ------
    InputError
        Labels that do not match the sources, ``study``/``reduce`` without a source they apply to, a
        results file without ``score``, a source of no known kind (the message lists the searches there).
    """
    labels = list(labels or [])
    if labels and len(labels) != len(sources):
        raise InputError(f"--label was given {len(labels)} times for {len(sources)} sources; give one per source")
    if labels and group:
        raise InputError("--label and --group exclude each other: --group names the families by its values")
    for option, value, prefix in (("study", study, "optuna:"), ("reduce", reduce, "ray:")):
        if value not in (None, "last") and not any(s.startswith(prefix) for s in sources):
            raise InputError(f"--{option} applies to {prefix} sources only, and none was given")
    families: list[FamilyResults] = []
    for i, source in enumerate(sources):
        label = labels[i] if labels else None
        if source.startswith("ray:"):
            families.append(from_ray_tune(source.removeprefix("ray:"), score, reduce=reduce, minimize=minimize,
                                          label=label, sampler=sampler))
        elif source.startswith("optuna:"):
            families.append(from_optuna(source.removeprefix("optuna:"), study, score=score, test=test,
                                        sampler=sampler, minimize=True if minimize else None, label=label))
        elif source.startswith("mlflow:"):
            if tracking_uri is None:
                raise InputError(f"{source}: an mlflow: source needs a tracking URI")
            families.append(from_mlflow(tracking_uri, source.removeprefix("mlflow:"), score=score, runtime=runtime,
                                        test=test, minimize=True if minimize else None, label=label, sampler=sampler))
        elif Path(source).exists() and not (Path(source).is_dir() and _plain_name(source)):
            # FIFOs, devices and folders given as paths too: the reader says what they are. A plain name
            # that is a folder here is more likely a search's name: the message below lists the searches.
            if not score:
                raise InputError(f"{source}: a results file needs --score COLUMN (the validation score)")
            families.extend(from_results_file(source, score, runtime=runtime, test=test, params=list(params) if params else None,
                                              minimize=minimize, group=group, label=label, sampler=sampler))
        elif _plain_name(source) and Ledger(Path(storage), source).exists():
            families.append(from_ledger(Path(storage), source, label, sampler=sampler))
        else:
            known = ", ".join(list_searches(Path(storage))) or "none"
            raise InputError(f"{source}: not a results file, nor a search in {storage} (searches there: {known}),"
                             " nor mlflow:EXPERIMENT, ray:PATH or optuna:STORAGE_URL")
    return families


def race_record(storage: str | Path, name: str) -> RaceRecord:
    """The record of race ``name`` (:mod:`showwork.store.races`), for its report.

    Raises
    ------
    InputError
        No such race (the message lists the races there); a race that has taken no look; a damaged record,
        or one whose decisions or settings are not what the two ledgers give
        (:func:`showwork.run.race.verified_race`: the report believes only the ledgers).
    """
    race = verified_race(Path(storage), name)
    if race is None:
        folder = Path(storage) / RACES_FOLDER
        known = ", ".join(sorted(p.name for p in folder.iterdir() if (p / "race.json").is_file())) if folder.is_dir() else ""
        raise InputError(f"no race {name!r} in {storage} (races there: {known or 'none'}; see --storage)")
    if not race.looks and race.status == "undecidable":
        raise InputError(f"race {name!r} in {storage} ended before deciding any look: {race.reason}; nothing to report")
    if not race.looks:
        raise InputError(f"race {name!r} in {storage} has taken no look yet: nothing to report (resume it first)")
    return race


def from_race(storage: str | Path, race: RaceRecord) -> list[FamilyResults]:
    """A race's two families: each search's first n trials by index, n the last look taken (where the race
    stopped, or got to), model A's first.

    ``race`` is :func:`race_record`'s: its searches' ledgers are the race's (checked there).

    Raises
    ------
    InputError
        A search whose ledger lacks a trial below n.
    """
    n = race.looks[-1].look
    return [from_ledger(Path(storage), search.name, first=n) for search in race.searches]


def _plain_name(text: str) -> bool:
    return bool(text) and "/" not in text and "\\" not in text and text not in (".", "..")
