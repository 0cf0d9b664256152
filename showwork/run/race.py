"""A race: two ordinary searches grown look by look, decided at each look, stopped at the first winner.

:func:`run_race` is what ``showwork race A.yaml B.yaml --looks 12,24,48 --decide-at K`` calls.
At each look n_l of the schedule, in order, it runs each search up to n_l trials
(:func:`~showwork.run.driver.run_search` with ``num_trials = n_l``: the first look starts the
search, the later ones resume it with more trials), so both reach the look together and no trial
of index n_l or above starts before the look's decision. It then reads the first n_l trials of each
search *by index* (failed and timed-out ones count, scored by the failure policy), decides
(:func:`showwork.statistics.decide_at_look`, with the bands of the whole schedule) and records the
look in the race's record (:mod:`showwork.store.races`). It stops at the first look with a winner;
after the last look without one the race is undecided.

A local Ray is started once for the whole race, when the first trial is to run (the drivers of the
searches find it started and leave it running: :class:`~showwork.trials.ray_executor.RayExecutor`),
not once per search and look; with a cluster (``address``), each search connects as ``showwork search`` does (each ships
its own family's folder).

The race holds both searches' locks (:meth:`~showwork.store.folder.SearchFolder.lock`, naming the
race) from its check to its end, and runs them under it: no other race or driver runs either meanwhile,
and each search records the race that began it, so that no other race adopts its trials. A new race
with ``adopt`` (``--adopt``) takes over searches that exist already and fit it (:func:`adopted_search`):
their recorded trials count toward the looks, none runs again, and each records the race as its own. Its record is
never believed: at resume (and at report) every decision in it is recomputed from the two ledgers
(:func:`verified_race`). A look that cannot be decided (no trial of either model finished; a model
without one and no ``metric.bounds``) ends the race ``undecidable``, its record saying why.

A signal stops the race as it stops a search: inside a search, that search's driver stops its
trials and raises :class:`~showwork.run.summary.SearchInterrupted`; between searches the race
raises it for the search about to run. The record keeps every look taken; the resumed race
(:func:`run_race` with ``resume=True``) takes the next one.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from showwork.errors import InputError, show_value
from showwork.recorded import recorded_records, recorded_spec, search_identity
from showwork.run.driver import run_search
from showwork.run.interrupts import Interrupts
from showwork.run.startup import check_inputs
from showwork.run.summary import SearchInterrupted
from showwork.statistics import DECIDE_BY, ArgumentError, BandSpec, LookDecision, LookSchedule, decide_at_look
from showwork.store import Ledger, LedgerLockedError, missing_indices, search_name_problem, trial_score
from showwork.store.races import (
    RaceRecord,
    RaceSearch,
    RaceSettings,
    first_difference,
    read_race_as_written,
    remove_race,
    write_race,
)
from showwork.trials.ray_executor import RayExecutor

__all__ = ["RACE_TAG", "RaceInterrupted", "RaceRequest", "adopted_search", "look_scores", "race_bands", "race_request",
           "race_settings", "run_race", "take_look", "verified_race"]

RACE_TAG = "showwork.race"
"""The MLflow tag of each race search's parent run: the race's name."""
RACE_METHODS = ("ld-hd", "ld-et")
"""The band methods a race takes: a joint level over looks is an LD level."""


class RaceInterrupted(Exception):
    """SIGINT or SIGTERM stopped a race; its record keeps the looks taken, the ledgers every finished trial.

    Attributes
    ----------
    race : str
    look : int
        The look being taken (trials per search).
    search : str or None
        The search whose trials were stopped (None: the race stopped between searches).
    signum : int
        The first signal received; the command exits ``128 + signum``.
    """

    def __init__(self, race: str, look: int, search: str | None, signum: int, stop: SearchInterrupted | None = None):
        where = f"search {search}: {stop}" if stop is not None else "between searches"
        super().__init__(f"race {race} interrupted at look n = {look} ({where})")
        self.race, self.look, self.search, self.signum = race, look, search, signum


@dataclass(frozen=True)
class RaceRequest:
    """A race as the command line asks for it: its name, the two specs and the settings fixed before any trial.

    ``adopt``: a new race adopts each of its searches that exists already (``--adopt``) instead of refusing it
    (:func:`adopted_search` says which fit).
    """

    name: str
    specs: tuple  # (SearchSpec, SearchSpec): model A's, model B's
    settings: RaceSettings
    adopt: bool = False

    def searches(self) -> tuple[RaceSearch, RaceSearch]:
        a, b = (RaceSearch(spec.name, search_identity(spec), str(Path(spec.source_path).resolve()) if spec.source_path else None)
                for spec in self.specs)
        return a, b


def race_request(specs: Sequence, name: str | None, looks: str | Sequence[int], budgets: Sequence[float],
                 decide_by: str = "median", confidence: float = 0.8, method: str = "ld-hd", adopt: bool = False) -> RaceRequest:
    """The race of the two ``specs`` as the command line and the Python API ask for it, checked.

    ``name`` defaults to ``A-vs-B`` from the searches' names; the settings as :func:`race_settings`;
    ``adopt`` as :class:`RaceRequest`'s.
    """
    settings = race_settings(specs, looks, budgets, decide_by, confidence, method)
    name = name or f"{specs[0].name}-vs-{specs[1].name}"
    problem = search_name_problem(name)
    if problem is not None:
        raise InputError(f"race name {name!r} (--name): {problem}")
    return RaceRequest(name, tuple(specs), settings, adopt)


def race_settings(specs: Sequence, looks: str | Sequence[int], budgets: Sequence[float], decide_by: str = "median",
                  confidence: float = 0.8, method: str = "ld-hd") -> RaceSettings:
    """The settings of a race of the two ``specs``, checked: one line of :class:`InputError` for each bad one.

    The direction and the support come from the specs' metrics (``metric.mode``, ``metric.bounds``),
    which must agree: the two curves are compared on one scale. A failed or timed-out trial counts
    as the worst score (``worst``: a look's sample keeps its n trials).
    """
    a, b = specs
    if a.name == b.name:
        raise InputError(f"both search spaces name their search {a.name!r}: a race runs two searches, each in its own"
                         " ledger (give one space another name:)")
    if search_identity(a) == search_identity(b):
        raise InputError(f"{a.source_path or a.name} and {b.source_path or b.name} draw the same configurations"
                         " (same family, seed, space, metric and data): a race compares two different spaces")
    if a.metric.mode != b.metric.mode:
        raise InputError(f"{a.name} maximizes its metric and {b.name} minimizes it (metric.mode): a race compares"
                         " one score on one scale")
    try:
        schedule = LookSchedule.parse(looks) if isinstance(looks, str) else LookSchedule(tuple(looks))
    except ArgumentError as error:
        raise InputError(f"--looks: {str(error).rstrip('.')}") from None
    if decide_by not in DECIDE_BY:
        raise InputError(f"--decide-by must be one of {', '.join(DECIDE_BY)} (got {decide_by!r})")
    if method not in RACE_METHODS:
        raise InputError(f"--method must be one of {', '.join(RACE_METHODS)} for a race (got {method!r}): the joint"
                         " confidence over looks is an LD band's")
    ks = tuple(float(k) for k in budgets)
    if not ks or any(not (math.isfinite(k) and k >= 1) for k in ks):
        raise InputError(f"--decide-at must be budgets K >= 1 (got {','.join(f'{k:g}' for k in ks) or 'none'})")
    bounds = [tuple(spec.metric.bounds) if spec.metric.bounds is not None else None for spec in specs]
    if bounds[0] != bounds[1]:
        raise InputError(f"{a.name} and {b.name} give their metric different bounds ({bounds[0]} and {bounds[1]}):"
                         " a race compares one score on one support (metric.bounds)")
    support = (-math.inf, math.inf) if bounds[0] is None else (float(bounds[0][0]), float(bounds[0][1]))
    if decide_by == "mean" and not all(map(math.isfinite, support)):
        raise InputError("--decide-by mean needs the score's bounds (metric.bounds in both spaces, e.g. [0, 1]):"
                         " the mean curve's band is bounded by them")
    settings = RaceSettings(looks=schedule.looks, budgets=tuple(sorted(set(ks))), decide_by=decide_by,
                            confidence=float(confidence), method=method, minimize=a.metric.mode == "min", support=support)
    race_bands(settings)  # the bands exist (a confidence the joint level cannot reach is refused here)
    return settings


def race_bands(settings: RaceSettings) -> BandSpec:
    """The bands of the race: each model's hold at every look of the schedule at once with probability >= c."""
    try:
        return BandSpec(confidence=settings.confidence, method=settings.method, a=settings.support[0],
                        b=settings.support[1], looks=settings.looks)
    except ArgumentError as error:
        raise InputError(str(error).rstrip(".")) from None


def look_scores(storage_dir: Path, name: str, n: int) -> np.ndarray:
    """The scores of trials 0..n-1 of search ``name``, by index (NaN where a trial failed or timed out).

    Raises
    ------
    InputError
        The ledger is not the search's own (:func:`~showwork.recorded.recorded_records`), or a trial
        below ``n`` has no record.
    """
    _, records = recorded_records(Path(storage_dir), name)
    missing = missing_indices(records, n)
    if missing:
        raise InputError(f"search {name!r} in {storage_dir}: {len(missing)} of its first {n} trials have no record"
                         f" (the first is trial {missing[0]}); resume the race to run them")
    return np.array([trial_score(r) for r in records if r.index < n], dtype=float)


def decide(storage_dir: Path, race: RaceRecord, n: int) -> LookDecision | str:
    """The race's decision at look ``n`` from the two ledgers (the same trials give the same decision), or why
    the look cannot be decided (no trial of either model finished; a model without one and no metric.bounds)."""
    s = race.settings
    a, b = race.names
    try:
        return decide_at_look(look_scores(storage_dir, a, n), look_scores(storage_dir, b, n), n, s.budgets,
                              race_bands(s), decide_by=s.decide_by, minimize=s.minimize, names=(a, b),
                              failure_policy=s.failure_policy)
    except ArgumentError as error:  # scores the bands cannot take: the race ends there, saying why
        return str(error).rstrip(".")


def take_look(storage_dir: Path, race: RaceRecord) -> RaceRecord:
    """The race after its next look, decided from the two ledgers (or ended ``undecidable`` at it)."""
    decision = decide(storage_dir, race, race.next_look)
    return race.ended_undecidable(decision) if isinstance(decision, str) else race.with_look(decision)


def verified_race(storage_dir: Path, name: str) -> RaceRecord | None:
    """The record of race ``name`` (None: it has none), after recomputing every decision it holds from the
    two searches' ledgers: the record is what the race decided, never what is believed.

    Raises
    ------
    InputError
        One line naming the first field where the record disagrees with the ledgers (its status, reason,
        winner, stopped_at, a look's decision or n), or where its settings are not what the searches'
        specs and the settings' own bounds give; a search whose ledger is not the race's (another spec,
        another race's); as :func:`~showwork.store.races.read_race_as_written` and :func:`look_scores`.
    """
    storage_dir = Path(storage_dir)
    found = read_race_as_written(storage_dir, name)
    if found is None:
        return None
    race, written, path = found
    _check_searches(storage_dir, race, path)
    _check_settings(storage_dir, race, path)
    if race.looks:  # every trial the recorded looks decided on is in the ledgers
        for search in race.searches:
            n = race.looks[-1].look
            missing = missing_indices(Ledger(storage_dir, search.name).records(), n)
            if missing:
                raise InputError(f"{path}: field 'looks' says look n = {n} was decided, but search {search.name!r} in"
                                 f" {storage_dir} has no record of trial {missing[0]}: the record is left as it is")
    expected = RaceRecord(race.name, race.settings, race.searches, created_at=race.created_at)
    while expected.next_look is not None and len(expected.looks) < len(race.looks):
        expected = take_look(storage_dir, expected)
    if expected.next_look is not None and race.status == "undecidable":  # the look it says could not be decided
        expected = take_look(storage_dir, expected)
    wanted = expected.to_dict()
    for key in ("status", "reason", "winner", "stopped_at", "looks"):
        field = first_difference(_comparable(written.get(key)), _comparable(wanted[key]), key)
        if field is not None:
            said, decided = _at(written, field), _at(wanted, field)
            s = race.settings
            raise InputError(f"{path}: field {field!r} says {_shown(said)} but the ledgers decide {_shown(decided)} (with the"
                             f" record's settings: confidence {s.confidence:g}, {s.method} bands, looks"
                             f" {','.join(map(str, s.looks))}); a race believes only its searches' ledgers: the record is"
                             " left as it is (restore it, or move it away and start the race again)")
    return race


def _check_searches(storage_dir: Path, race: RaceRecord, path: Path) -> None:
    """Each of the race's searches that has a ledger is the race's: the spec it records and no other race's."""
    for search in race.searches:
        meta = Ledger(storage_dir, search.name).read_meta()
        if not meta:
            continue
        if meta.get("identity") != search.identity:
            raise InputError(f"{path}: race {race.name!r}: the ledger of search {search.name!r} in {storage_dir} is not"
                             " the search the race ran (its spec's identity differs from the race's record)")
        owner = meta.get("race")
        # no owner: a search that the race adopted (it records itself there before its first trial) or that
        # a race of an earlier version began
        if owner != race.name and (owner is not None or not (race.looks or search.adopted_trials is not None)):
            whose = f"belongs to race {owner!r}" if isinstance(owner, str) else "was not begun by this race"
            raise InputError(f"{path}: search {search.name!r} in {storage_dir} {whose}: race {race.name!r} adopts no other"
                             " race's or search's trials (give the space another name:, or use another --storage)")


def _check_settings(storage_dir: Path, race: RaceRecord, path: Path) -> None:
    """The record's settings are within their bounds and what the searches' recorded specs give (direction,
    support); the decisions recomputed with them then show whether they are the ones the race decided with."""
    names = [search.name for search in race.searches if Ledger(storage_dir, search.name).read_meta().get("spec")]
    if len(names) < 2:  # a race stopped before both searches began: no look to recompute, and a resume gives its settings
        return
    s = race.settings
    try:
        derived = race_settings([recorded_spec(storage_dir, name) for name in names], s.looks, s.budgets, s.decide_by,
                                s.confidence, s.method)
    except InputError as error:
        raise InputError(f"{path}: its settings are not a race's ({error}); the record is left as it is") from None
    field = first_difference(s.to_dict(), derived.to_dict(), "settings")
    if field is not None:
        said, wanted = _at({"settings": s.to_dict()}, field), _at({"settings": derived.to_dict()}, field)
        raise InputError(f"{path}: field {field!r} says {_shown(said)} but the searches' specs give {_shown(wanted)}; the"
                         " record is left as it is")


def _comparable(value):
    """``value`` with its floats to 12 significant digits: a decision recomputed elsewhere may differ in the last bits."""
    if isinstance(value, float):
        return float(f"{value:.12g}")
    if isinstance(value, list):
        return [_comparable(v) for v in value]
    if isinstance(value, dict):
        return {k: _comparable(v) for k, v in value.items()}
    return value


def _at(data, field: str):
    """The value at the dotted path ``field`` (``looks[1].winner``) of ``data``, or None where there is none."""
    value = data
    for part in field.replace("[", ".[").split("."):
        if part.startswith("["):
            index = int(part[1:-1])
            value = value[index] if isinstance(value, list) and index < len(value) else None
        else:
            value = value.get(part) if isinstance(value, dict) else None
    return value


def _shown(value) -> str:
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return f"{len(value)} look{'s' if len(value) != 1 else ''}"
    return show_value(value)


def check_race(storage_dir: Path, request: RaceRequest, resume: bool, locked: bool = False) -> RaceRecord:
    """The race's record to go on with: a new one (nothing may exist yet) or, with ``resume``, the recorded
    one, after checking that the request gives it the same settings and searches and that its decisions
    are the ledgers' (:func:`verified_race`). ``locked``: the race holds both searches' locks (a search's
    lock then names this race, not another).

    Raises
    ------
    InputError
        A new race whose record exists, or one of whose searches exists and is not adopted (without
        ``request.adopt``, or one :func:`adopted_search` refuses); a resume of a race without a record;
        a resume that changes a setting or a search, or of a record the ledgers disagree with (the
        message names the field).
    """
    found = read_race_as_written(storage_dir, request.name)
    recorded = None if found is None else found[0]
    fresh = RaceRecord(request.name, request.settings, request.searches())
    if recorded is None:
        if resume:
            raise InputError(f"no race {request.name!r} in {storage_dir} to resume (drop --resume to start it)")
        searches = []
        for spec, search in zip(request.specs, fresh.searches):
            ledger = Ledger(Path(storage_dir), search.name)
            if ledger.exists():
                holder = None if locked else ledger.lock_holder()
                if holder is not None:  # another race (or driver) runs it now: say which, as its lock refuses
                    raise LedgerLockedError(holder)
                if not request.adopt:
                    raise InputError(f"search {search.name!r} already exists in {storage_dir}: a new race starts its two"
                                     " searches itself (add --adopt to race the trials it recorded, or give the space"
                                     " another name:, or another --storage)")
                search = adopted_search(Path(storage_dir), request, spec, search)
            searches.append(search)
        return replace(fresh, searches=tuple(searches))
    if not resume:
        raise InputError(f"race {request.name!r} already exists in {storage_dir}; add --resume to continue it"
                         " (or choose another --name).")
    mine = {"settings": fresh.settings.to_dict(), "searches": [_compared(s) for s in fresh.searches]}
    theirs = {"settings": recorded.settings.to_dict(), "searches": [_compared(s) for s in recorded.searches]}
    field = first_difference(theirs, mine)
    if field is not None:
        raise InputError(f"race {request.name!r} in {storage_dir} was started with another {field} than this command"
                         " gives; resume it with the arguments it was started with (its record: "
                         f"{storage_dir}/_races/{request.name}/race.json)")
    return verified_race(storage_dir, request.name)


def _compared(search: RaceSearch) -> dict:
    """What a resume must give a search as its record has it: its name and identity (where its YAML file
    was, and how many trials it held when adopted, are the start's)."""
    return {k: v for k, v in search.to_dict().items() if k not in ("spec_path", "adopted_trials")}


def adopted_search(storage_dir: Path, request: RaceRequest, spec, search: RaceSearch) -> RaceSearch:
    """``search``, a search of ``request`` that exists already, as the new race adopts it: its recorded trials
    count toward the looks, and trials are added only where a look needs them.

    It fits where it is a search that ran (its ``search.json`` records its spec), no other race's, with the
    identity the race's spec gives (:func:`~showwork.recorded.search_identity`: the same family, seed,
    space, metric and data, so the same configuration for each trial index), its records its own, and no
    trial missing below a look that its recorded number of trials passes (the race would have to run
    trials beyond that look: :func:`_grow`).

    Raises
    ------
    InputError
        One line naming the search and the first field that does not fit.
    """
    where = f"search {search.name!r} in {storage_dir}"
    meta = Ledger(storage_dir, search.name).read_meta()
    owner = meta.get("race")
    if owner is not None and owner != request.name:
        raise InputError(f"{where} belongs to race {owner!r}: a race adopts no other race's trials (resume race"
                         f" {owner!r}, or give the space another name:)")
    recorded = recorded_spec(storage_dir, search.name)  # a search.json that records no spec, or an edited one: refused
    field = first_difference(search_identity(recorded), search.identity)
    if field is not None:
        said, given = _at(search_identity(recorded), field), _at(search.identity, field)
        source = spec.source_path or "the race's space"
        raise InputError(f"{where} cannot be adopted: its {field} is {_shown(said)}, {source} gives {_shown(given)};"
                         " the race would count trials of other configurations than its space draws (race it with"
                         " the space it ran with, or give the space another name:)")
    _, records = recorded_records(storage_dir, search.name)
    num_trials = int(meta.get("num_trials") or 0)
    for n in request.settings.looks:
        missing = missing_indices(records, n)
        if n < num_trials and missing:
            raise InputError(_extended_beyond(search.name, storage_dir, num_trials, n, missing[0]))
    return replace(search, adopted_trials=len(records))


def _extended_beyond(name: str, storage_dir: Path, num_trials: int, n: int, missing: int) -> str:
    """Why a search planned for more trials than look ``n`` and missing trial ``missing`` below it is not run."""
    return (f"search {name!r} in {storage_dir} was extended to {num_trials} trials outside the race, and trial {missing}"
            f" of look {n} has no record: running it would run trials beyond the look; resume the search itself"
            f" (showwork resume {name}) first")


def run_race(
    request: RaceRequest,
    storage_dir: Path,
    tracking_uri: str,
    *,
    resume: bool = False,
    address: str | None = None,
    num_cpus: int | None = None,
    progress: bool = True,
    on_look: Callable[[RaceRecord, LookDecision], None] | None = None,
    on_start: Callable[[RaceRecord], None] | None = None,
    keep_ray: bool | None = None,
) -> RaceRecord:
    """Run (or resume) the race ``request``; see the module docstring. Return its record at the end.

    Parameters
    ----------
    on_look : callable, optional
        Called with the race's record and the decision after each look is recorded (None: the look
        could not be decided, and the race ended ``undecidable``; its ``reason`` says why).
    on_start : callable, optional
        Called with the race's record once its inputs are accepted (before Ray starts or any trial runs).
    keep_ray : bool, optional
        Start one local Ray for the whole race (default: where no cluster ``address`` or
        ``$RAY_ADDRESS`` is given); False: each search starts and stops its own.

    Raises
    ------
    InputError
        Refused settings, searches or race folder (:func:`check_race`); a spec the search refuses.
    LedgerLockedError
        Another race or driver runs one of the two searches (an outage: exit 1); the race holds both
        searches' locks from its first check to its end.
    RaceInterrupted
        SIGINT or SIGTERM stopped the race (the record keeps the looks taken).
    SearchStorageError, SearchFolderMovedError, LedgerWriteError, TrackingUnavailableError
        As :func:`~showwork.run.driver.run_search` raises them.
    """
    storage_dir = Path(storage_dir)
    race = check_race(storage_dir, request, resume)  # refused here, nothing is written (not even a lock)
    if race.next_look is None:  # it has ended: nothing runs, nothing is locked
        if on_start is not None:
            on_start(race)
        return race
    for spec in request.specs:
        check_inputs(spec, address)  # a family that cannot load is refused before Ray starts or anything is written
    with contextlib.ExitStack() as locks:
        for spec in request.specs:  # held from the check to the end: no other race or driver runs either search meanwhile
            locks.enter_context(Ledger(storage_dir, spec.name).lock(race=request.name))
        race = check_race(storage_dir, request, resume, locked=True)  # again, under the locks: what another race did meanwhile counts
        if on_start is not None:
            on_start(race)
        if race.next_look is None:
            return race
        if keep_ray is None:
            keep_ray = not (address or os.environ.get("RAY_ADDRESS"))
        fresh = not race.looks and not any(Ledger(storage_dir, name).exists() for name in race.names)
        write_race(storage_dir, race)
        for search in race.searches:  # an adopted search is the race's from now on: no other race adopts it
            ledger = Ledger(storage_dir, search.name)
            if search.adopted_trials is not None and ledger.read_meta().get("race") is None:
                ledger.update_meta(race=race.name)
        try:
            return _take_looks(request, race, storage_dir, tracking_uri, keep_ray, on_look, address=address,
                               num_cpus=num_cpus, progress=progress)
        except InputError:
            if fresh and not any(Ledger(storage_dir, name).exists() for name in race.names):
                remove_race(storage_dir, race.name)  # refused before any trial: as if the race had not begun
            raise


def _take_looks(request: RaceRequest, race: RaceRecord, storage_dir: Path, tracking_uri: str, keep_ray: bool,
                on_look, **options) -> RaceRecord:
    """The looks from the race's next one on, each recorded as it is taken; see :func:`run_race`.

    With ``keep_ray``, the local Ray starts when the first search has a trial to run (a resumed race
    whose trials are all recorded starts none) and stops when the race ends."""
    n = race.next_look
    search = None
    stack_holds_ray: list[bool] = []
    with Interrupts() as interrupts, contextlib.ExitStack() as stack:
        def start_ray() -> None:
            if keep_ray and not stack_holds_ray:
                with interrupts.deferred():
                    stack.enter_context(RayExecutor(None, options["num_cpus"]))
                interrupts.install()  # again: ray.init may have replaced the handlers
                stack_holds_ray.append(True)

        try:
            while race.next_look is not None:
                n = race.next_look
                for spec in request.specs:
                    search = spec.name
                    _grow(spec, n, storage_dir, tracking_uri, race.name, start_ray, **options)
                    search = None
                race = take_look(storage_dir, race)
                write_race(storage_dir, race)
                if on_look is not None:
                    on_look(race, race.looks[-1] if race.status != "undecidable" else None)
        except SearchInterrupted as stop:
            raise RaceInterrupted(race.name, n, search, stop.signum, stop) from None
        except KeyboardInterrupt:  # between two searches, or while Ray started
            raise RaceInterrupted(race.name, n, None, interrupts.signum or signal.SIGINT) from None
    return race


def _grow(spec, n: int, storage_dir: Path, tracking_uri: str, race: str, start_ray: Callable[[], None], **options) -> None:
    """Run search ``spec`` up to ``n`` trials (start it, or resume it with more); nothing runs beyond trial n-1.

    ``start_ray()`` is called first when a trial below ``n`` has no record. A search whose first ``n``
    trials are recorded is resumed without trials (its MLflow runs are brought up to date); one extended
    beyond ``n`` outside the race (``showwork resume --num-trials``) is only read, provided its first ``n``
    trials are recorded.
    """
    ledger = Ledger(storage_dir, spec.name)
    meta = ledger.read_meta()
    recorded = int(meta.get("num_trials") or 0) if meta else 0
    missing = missing_indices(ledger.records(), n) if meta else list(range(n))
    if recorded > n:
        if missing:
            raise InputError(_extended_beyond(spec.name, storage_dir, recorded, n, missing[0]))
        return
    if missing:
        start_ray()
    run_search(spec.model_copy(update={"num_trials": n}), storage_dir, tracking_uri, resume=bool(meta),
               parent_tags={RACE_TAG: race}, race=race, **options)
