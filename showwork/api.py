"""The Python API: a search from a notebook or a script, run and read exactly as the command line does.

:func:`search` runs (or resumes) a search as ``showwork search SPACE`` does -- the same driver
(:func:`showwork.run.run_search`), ledger, MLflow projection, resume and interrupts -- and returns a
:class:`Search`; :func:`open_search` opens a recorded one (``showwork results NAME`` reads the same
ledger). A :class:`Search` gives its trial records, a pandas DataFrame (the columns of ``showwork
results --csv``), its best trials (``showwork best``), its tuning curve and its comparison with another
search as ``showwork report`` computes them, and the report itself.

Errors are exceptions: an argument of the wrong type raises a ``TypeError`` naming the parameter and
the type it takes (one table, :data:`_EXPECTED`, declares them for every function here); bad input
raises :class:`~showwork.errors.InputError` with the message the command line prints after ``showwork: error:``; an outage raises the command's
:class:`~showwork.errors.UnavailableError`; Ctrl-C (or SIGTERM) during a search raises
:class:`SearchInterruptedError`, a ``KeyboardInterrupt`` that says how far the search got, and the
search resumes from its ledger (:meth:`Search.resume`, or ``search(..., resume=True)``).

Example
-------
>>> import showwork                                                          # doctest: +SKIP
>>> s = showwork.search("space.yaml", num_trials=8, storage="runs")          # doctest: +SKIP
>>> s.to_dataframe().sort_values("score").tail(3)                            # doctest: +SKIP
>>> s.curve(a=0.0, b=1.0).quantile_curve                                     # doctest: +SKIP
>>> s.report("report/")                                                      # doctest: +SKIP

Why one module: it is the one door from Python, and every function and method here has its arguments checked
against the one table of parameter types (:data:`_EXPECTED`), as the commands share their options.
"""

from __future__ import annotations

import functools
import inspect
import logging
import numbers
import os
import signal
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, Union

from showwork.constants import DEFAULT_STORAGE
from showwork.errors import InputError
from showwork.families import check_function, function_spec
from showwork.race_results import Race
from showwork.recorded import needs_function, recorded_records, recorded_spec
from showwork.run import SearchInterrupted, SearchSummary, run_search
from showwork.selection import ranked_tie, ranked_trials
from showwork.space import SearchSpec, family_kind, load_search_spec
from showwork.store import EXPORT_COLUMNS, Ledger, list_searches
from showwork.tracking.errors import TrackingUnavailableError
from showwork.tracking.uris import chosen_tracking_uri, recorded_tracking_uri
from showwork.trials.ray_setup import check_ray_options
from showwork.values import is_integer

if TYPE_CHECKING:  # annotations of what loads late (the report, pandas; see Search.curve)
    import pandas

    from showwork.report import FamilyResults, FigureStyle, ReportFiles
    from showwork.report.notebook import SearchComparison, SearchCurve
    from showwork.selection import TiedBest
    from showwork.store import TrialRecord

__all__ = ["DEFAULT_STORAGE", "Race", "RaceInterruptedError", "Search", "SearchInterruptedError", "open_race", "open_search", "race",
           "search", "search_spec"]

PathLike = Union[str, "os.PathLike[str]"]

# In a notebook, importing Ray logs that ipywidgets is missing, once per module of Ray that declares a notebook
# repr (Ray's own objects, which the API never shows): set before any import of Ray, which this API makes.
logging.getLogger("ray.widgets.util").setLevel(logging.WARNING)


# The types each parameter of the API takes, declared once for every function that has it (as
# scikit-learn's _param_validation does): a wrong type is a TypeError that names the parameter and the
# type, before anything runs (num_cpus="2" was Ray's bare AssertionError, compare(123) an AttributeError
# on its .family()). Values within the type (num_trials=0, an unknown method) are checked where they
# are used, as on the command line, and raise InputError.
@dataclass(frozen=True)
class _Expected:
    what: str  # the type, as the TypeError names it
    accepts: Callable[[Any], bool]


def _is_path(value: Any) -> bool:
    return isinstance(value, (str, os.PathLike))


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _is_family(value: Any) -> bool:
    from showwork.report import FamilyResults  # lazy: the report loads scipy

    return isinstance(value, (Search, FamilyResults))


def _is_figure_style(value: Any) -> bool:
    from showwork.report import FigureStyle  # lazy: as above

    return isinstance(value, FigureStyle)


def _is_function_pair(value: Any) -> bool:
    return isinstance(value, tuple) and len(value) == 2 and callable(value[0]) and isinstance(value[1], Mapping)


def _is_tuple_of(item: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: isinstance(value, (tuple, list)) and all(item(v) for v in value)


_SPACE = _Expected("a path to a YAML file (str or os.PathLike), a SearchSpec or a trainable function",
                   lambda v: _is_path(v) or isinstance(v, SearchSpec) or callable(v))
_RACED = _Expected("a path to a YAML file (str or os.PathLike), a SearchSpec, a Search or a (function, settings mapping) pair",
                   lambda v: _is_path(v) or isinstance(v, (SearchSpec, Search)) or _is_function_pair(v))
_MAPPING = _Expected("a mapping (dict)", lambda v: isinstance(v, Mapping))
_INT = _Expected("an int", is_integer)
_BOOL = _Expected("a bool", lambda v: isinstance(v, bool))
_STR = _Expected("a str", lambda v: isinstance(v, str))
_PATH = _Expected("a path (str or os.PathLike)", _is_path)
_EXPECTED: dict[str, _Expected] = {
    "spec_or_path": _SPACE, "space_a": _RACED, "space_b": _RACED,
    "space": _MAPPING, "metric": _MAPPING, "data": _MAPPING, "resources": _MAPPING,
    "train": _Expected("a trainable function", callable),
    "name": _STR, "tracking_uri": _STR, "address": _STR, "decide_by": _STR, "method": _STR, "label": _STR,
    "failure_policy": _STR,
    "num_trials": _INT, "seed": _INT, "max_concurrent": _INT, "num_cpus": _INT, "top": _INT, "fail_fast_after": _INT,
    "max_retries": _INT,
    "timeout_s": _Expected("a number", _is_number), "setup_timeout_s": _Expected("a number", _is_number),
    "resume": _BOOL, "adopt": _BOOL, "progress": _BOOL, "mlflow": _BOOL, "log_x": _BOOL, "retry_failed": _BOOL,
    "allow_changed_code": _BOOL,
    "storage": _PATH, "out": _PATH,
    "looks": _Expected('a str such as "12,24,48" or a tuple of ints', lambda v: isinstance(v, str) or _is_tuple_of(is_integer)(v)),
    "decide_at": _Expected("a number or a tuple of numbers", lambda v: _is_number(v) or _is_tuple_of(_is_number)(v)),
    "confidence": _Expected("a float", _is_number),
    "other": _Expected("a Search or a showwork.report.FamilyResults", _is_family),
    "others": _Expected("a tuple of Search or showwork.report.FamilyResults", _is_tuple_of(_is_family)),
    "figure_formats": _Expected("a tuple of str", _is_tuple_of(lambda v: isinstance(v, str))),
    "figure_style": _Expected("a showwork.report.FigureStyle", _is_figure_style),
    "summary": _Expected("a showwork.run.SearchSummary", lambda v: isinstance(v, SearchSummary)),
}
_UNCHECKED = ("self", "settings")  # the object itself; **settings, which ReportSettings checks by name and type

_Function = TypeVar("_Function", bound=Callable[..., Any])


def _checked(function: _Function) -> _Function:
    """``function`` with its arguments' types checked against :data:`_EXPECTED` first (None is taken where it is
    the default). A parameter missing from the table stops the import: every parameter is declared."""
    signature = inspect.signature(function)
    missing = [name for name in signature.parameters if name not in _EXPECTED and name not in _UNCHECKED]
    if missing:
        raise TypeError(f"{function.__qualname__}: declare the types of {missing} in _EXPECTED")

    @functools.wraps(function)
    def checked(*args: Any, **kwargs: Any) -> Any:
        for name, value in signature.bind(*args, **kwargs).arguments.items():
            expected = _EXPECTED.get(name)
            optional = signature.parameters[name].default is None
            if expected is not None and not (value is None and optional) and not expected.accepts(value):
                shown = repr(value)
                shown = shown if len(shown) <= 60 else shown[:57] + "..."
                raise TypeError(f"{function.__qualname__}(): {name} must be {expected.what}{' or None' if optional else ''},"
                                f" not {type(value).__name__} ({shown})")
        return function(*args, **kwargs)

    return checked  # type: ignore[return-value]


class SearchInterruptedError(KeyboardInterrupt):
    """Ctrl-C (SIGINT) or SIGTERM stopped a search run from Python; the ledger keeps every finished trial.

    A ``KeyboardInterrupt``, so that a notebook's or a script's interrupt stops the caller as usual.
    Continue the search with ``open_search(name, storage=...).resume()`` (or ``showwork resume NAME``).
    Its attributes are those of the driver's :class:`showwork.run.SearchInterrupted` (``name``,
    ``finished``, ``num_trials``, ``signum`` as a :class:`signal.Signals`, ``resumable``), with
    ``storage_dir`` as the caller gave it.
    """

    def __init__(self, stop: SearchInterrupted, storage_dir: Path, function: bool = False):
        train = ", train=train" if function else ""  # a search of a Python function resumes with it
        how = (f"; the ledger keeps every finished trial; continue with showwork.open_search({stop.name!r},"
               f" storage={str(storage_dir)!r}{train}).resume()" if stop.resumable else "")
        super().__init__(f"interrupted: {stop.finished} of {stop.num_trials} trials finished{how}")
        self.name, self.storage_dir, self.finished, self.num_trials = stop.name, Path(storage_dir), stop.finished, stop.num_trials
        self.signum, self.resumable = signal.Signals(stop.signum), stop.resumable


class RaceInterruptedError(KeyboardInterrupt):
    """Ctrl-C (SIGINT) or SIGTERM stopped a race run from Python; its record keeps the looks taken, the ledgers every
    finished trial.

    A ``KeyboardInterrupt``, as :class:`SearchInterruptedError` is. Continue the race with the same call and
    ``resume=True`` (or ``showwork race ... --resume``). Its attributes are those of the driver's
    :class:`showwork.run.race.RaceInterrupted` (``race``, ``look``, ``search``, ``signum`` as a
    :class:`signal.Signals`), with ``storage_dir`` as the caller gave it.
    """

    def __init__(self, stop: Exception, storage_dir: Path):
        super().__init__(f"{stop}; the ledgers keep every finished trial and the race its looks; continue with the same"
                         " showwork.race(...) call and resume=True")
        self.race, self.look, self.search = stop.race, stop.look, stop.search
        self.signum, self.storage_dir = signal.Signals(stop.signum), Path(storage_dir)


@_checked
def search_spec(spec_or_path: PathLike | SearchSpec | Callable[..., Any], space: Mapping[str, Any] | None = None, *,
                name: str | None = None, num_trials: int | None = None, seed: int | None = None,
                max_concurrent: int | None = None, fail_fast_after: int | None = None,
                metric: Mapping[str, Any] | None = None, data: Mapping[str, Any] | None = None,
                resources: Mapping[str, Any] | None = None, timeout_s: float | None = None,
                setup_timeout_s: float | None = None, max_retries: int | None = None,
                failure_policy: str | None = None) -> SearchSpec:
    """The spec ``showwork search SPACE [--name N] [--num-trials N] [--seed S] [--max-concurrent N] [--fail-fast-after N]``
    runs, or the spec of a search of a Python function.

    Parameters
    ----------
    spec_or_path : str, os.PathLike, SearchSpec or function
        A search-space YAML file; a spec already loaded (:func:`showwork.space.load_search_spec`),
        which is taken as it is; or the trainable itself, ``def train(config, *, seed, device, reporter,
        data)`` (:mod:`showwork.trainable`), whose family is then ``<function NAME>``
        (:func:`showwork.families.function_spec`).
    space : mapping, optional
        With a function: the search space, as the ``space:`` mapping of a search file.
    name, num_trials, seed, max_concurrent, fail_fast_after : optional
        Overrides of the file's values (None: the file's), checked as the file's are; with a function, its
        values (``name``, ``num_trials`` required).
    metric, data, resources, timeout_s, setup_timeout_s, max_retries, failure_policy : optional
        With a function: the search file's keys of these names, in its forms (``metric={"name": "val_acc",
        "mode": "max"}``, ``resources={"cpus": 1}``); None leaves the file's default.

    Raises
    ------
    InputError
        The file or the settings are refused (:class:`~showwork.space.SpecError`: one line naming file:line: key,
        or ``showwork.search(): key``), overrides were given with a loaded spec (load it with them instead),
        or settings other than the overrides were given with a file or a spec (the file holds them).
    """

    overrides = {"name": name, "num_trials": num_trials, "seed": seed, "max_concurrent": max_concurrent,
                 "fail_fast_after": fail_fast_after}
    settings = {"space": space, "metric": metric, "data": data, "resources": resources, "timeout_s": timeout_s,
                "setup_timeout_s": setup_timeout_s, "max_retries": max_retries, "failure_policy": failure_policy}
    if callable(spec_or_path):
        fields = {key: value for key, value in {**overrides, **settings}.items() if value is not None}
        return function_spec(spec_or_path, fields, "showwork.search()")
    in_file = sorted(key for key, value in settings.items() if value is not None)
    if in_file:
        raise InputError(f"{', '.join(in_file)}: set in the search file; as keywords they go with a function:"
                         " showwork.search(train, space, name=..., metric=..., num_trials=...)")
    if isinstance(spec_or_path, SearchSpec):
        given = sorted(key for key, value in overrides.items() if value is not None)
        if given:
            raise InputError(f"{', '.join(given)}: overrides apply to a YAML file; a loaded spec runs as it is"
                             " (load it with them: showwork.space.load_search_spec(path, overrides))")
        return spec_or_path
    return load_search_spec(spec_or_path, overrides)


@_checked
def search(
    spec_or_path: PathLike | SearchSpec | Callable[..., Any],
    space: Mapping[str, Any] | None = None,
    *,
    name: str | None = None,
    num_trials: int | None = None,
    seed: int | None = None,
    max_concurrent: int | None = None,
    fail_fast_after: int | None = None,
    metric: Mapping[str, Any] | None = None,
    data: Mapping[str, Any] | None = None,
    resources: Mapping[str, Any] | None = None,
    timeout_s: float | None = None,
    setup_timeout_s: float | None = None,
    max_retries: int | None = None,
    failure_policy: str | None = None,
    resume: bool = False,
    allow_changed_code: bool = False,
    storage: PathLike = DEFAULT_STORAGE,
    tracking_uri: str | None = None,
    address: str | None = None,
    num_cpus: int | None = None,
    progress: bool = True,
) -> Search:
    """Run (or resume) a random search, as ``showwork search SPACE`` does; return it.

    Parameters
    ----------
    spec_or_path : str, os.PathLike, SearchSpec or function
        The search-space YAML file (or a loaded spec: :func:`search_spec`), or the trainable function itself,
        ``def train(config, *, seed, device, reporter, data)`` -- one defined in a notebook's cell too, with its
        closures and globals: it reaches Ray's workers pickled by value, as Ray Tune ships functions.
    space : mapping, optional
        With a function: the search space, in the form of a search file's ``space:`` mapping
        (``{"lr": {"distribution": "loguniform", "low": 1e-4, "high": 1e-1}, "epochs": 10}``).
    name, num_trials, seed, max_concurrent, fail_fast_after : optional
        Override the file's values, as ``--name``, ``--num-trials``, ``--seed``, ``--max-concurrent``,
        ``--fail-fast-after``; with a function, the search's values (``name`` and ``num_trials`` required).
    metric, data, resources, timeout_s, setup_timeout_s, max_retries, failure_policy : optional
        With a function: the other keys of a search file, in its forms (``metric={"name": "val_acc", "mode":
        "max"}``); checked, and refused in the same words, as in a file. The spec is recorded in the search's
        ``search.json`` as a file's is; the function's source and its SHA-256 beside it (``functions/``).
    resume : bool, default False
        Continue an existing search of the same space (``--resume``): run only the trials without a
        record; a larger ``num_trials`` extends it.
    allow_changed_code : bool, default False
        With a function and ``resume``: run it even though its code is not the code the search ran before
        (refused otherwise); ``search.json`` and the report's checklist record the change.
    storage : str or os.PathLike, default "showwork_runs"
        The ledger folder (``--storage``); the search is ``{storage}/{name}/``.
    tracking_uri : str, optional
        The MLflow store; default ``$MLFLOW_TRACKING_URI``, else ``sqlite:///<cwd>/mlflow.db``.
    address : str, optional
        A Ray cluster (default ``$RAY_ADDRESS``, else a local Ray on 127.0.0.1).
    num_cpus : int, optional
        CPUs the local Ray offers to trials (default: all of this machine's); not with a cluster.
    progress : bool, default True
        The live progress display on stderr.

    Returns
    -------
    Search
        With :attr:`Search.summary`, the driver's :class:`~showwork.run.SearchSummary` (counts of
        finished, failed and timed-out trials, the best score, elapsed seconds). A search in which no
        trial finished is returned too (the command exits 1 there): see ``summary.failures``.

    Raises
    ------
    InputError
        A refused space or option; an existing search without ``resume``; a resume whose space differs, or
        whose function's code differs without ``allow_changed_code``.
    SearchInterruptedError
        Ctrl-C or SIGTERM stopped the search (a ``KeyboardInterrupt``); its records are kept.
    UnavailableError
        The MLflow store is unreachable; another driver runs the search; the ledger's folder refused a
        write (:class:`~showwork.run.SearchStorageError`) or was moved while the search ran; the first
        ``fail_fast_after`` trials to end all failed with the same error (:class:`~showwork.run.SearchFailedFast`:
        the search stopped, resumable).
    """

    spec = search_spec(spec_or_path, space, name=name, num_trials=num_trials, seed=seed, max_concurrent=max_concurrent,
                       fail_fast_after=fail_fast_after, metric=metric, data=data, resources=resources,
                       timeout_s=timeout_s, setup_timeout_s=setup_timeout_s, max_retries=max_retries,
                       failure_policy=failure_policy)
    return _run(spec, storage, chosen_tracking_uri(tracking_uri), resume=resume, address=address, num_cpus=num_cpus,
                progress=progress, allow_changed_code=allow_changed_code)


@_checked
def race(
    space_a: PathLike | SearchSpec | Search | tuple[Callable[..., Any], Mapping[str, Any]],
    space_b: PathLike | SearchSpec | Search | tuple[Callable[..., Any], Mapping[str, Any]],
    *,
    looks: str | tuple[int, ...],
    decide_at: float | tuple[float, ...],
    decide_by: str = "median",
    confidence: float = 0.8,
    method: str = "ld-hd",
    name: str | None = None,
    resume: bool = False,
    adopt: bool = False,
    storage: PathLike = DEFAULT_STORAGE,
    tracking_uri: str | None = None,
    address: str | None = None,
    num_cpus: int | None = None,
    progress: bool = True,
) -> Race:
    """Race two search spaces at pre-planned looks, as ``showwork race A B --looks --decide-at`` does; return the race.

    At each look n (trials per model, by index) both searches are grown to n trials and compared
    with the schedule's joint bands; the race stops at the first look where one model is resolved at
    every budget of ``decide_at`` (see :mod:`showwork.run.race` and docs/how-to/race.md).

    Parameters
    ----------
    space_a, space_b : str, os.PathLike, SearchSpec, Search or (function, mapping)
        The two search spaces (YAML files, loaded specs, or a trainable function with the other keys of a
        search file as a mapping: ``(train, {"name": "a", "metric": {"name": "acc"}, "num_trials": 48, "space":
        {...}})``, as :func:`search` takes them); each is an ordinary search of its own. A
        :class:`Search` (``open_search(...)``; of a function: ``open_search(name, train=fn)``) is a search
        already run, in ``storage``: the race adopts it with the spec it recorded, as ``adopt=True`` does.
    looks : "12,24,48" or tuple of ints
        The schedule, fixed before any trial.
    decide_at : float or tuple of floats >= 1
        The budgets K at which one model must be shown better, at all of them, to stop.
    decide_by, confidence, method, name, resume
        As ``--decide-by``, ``--confidence``, ``--method`` (ld-hd or ld-et), ``--name`` (default
        ``A-vs-B``) and ``--resume``.
    adopt : bool, default False
        As ``--adopt``: a search that exists already and ran with the same family, seed, space, metric and
        data is adopted, not refused: its recorded trials count toward the looks; none runs again.
    storage, tracking_uri, address, num_cpus
        As for :func:`search`.
    progress : bool, default True
        Print the race's lines as ``showwork race`` does (its start, each look once, its end) on stdout,
        and show each search's live progress on stderr.

    Returns
    -------
    Race
        Its ``decision`` (winner or none, at which look, why), ``summary()``, ``sentences()``, ``record``.

    Raises
    ------
    InputError
        Refused settings or spaces (as the command prints it); a race that exists without ``resume``; a resume
        that changes a setting; a search that exists, without ``adopt``, or that does not fit (naming the field).
    RaceInterruptedError
        Ctrl-C or SIGTERM stopped the race (a ``KeyboardInterrupt``); ``resume=True`` continues it.
    UnavailableError
        As for :func:`search`; another race (or driver) runs one of the two searches (naming it).
    """
    # lazy: `showwork search` imports this module; a race loads the statistics (scipy) when it runs
    from showwork.run.race import RaceInterrupted, race_request, run_race
    from showwork.run.race_lines import RaceLines

    budgets = (decide_at,) if isinstance(decide_at, (int, float)) else tuple(decide_at)
    specs = (_raced_spec(space_a, storage, "space_a"), _raced_spec(space_b, storage, "space_b"))
    adopt = adopt or isinstance(space_a, Search) or isinstance(space_b, Search)
    request = race_request(specs, name, looks, budgets, decide_by, confidence, method, adopt=adopt)
    check_ray_options(num_cpus, address)
    lines = RaceLines(storage) if progress else None
    try:
        record = run_race(request, Path(storage), chosen_tracking_uri(tracking_uri), resume=resume, address=address,
                          num_cpus=num_cpus, progress=progress,
                          on_look=None if lines is None else lines.on_look, on_start=None if lines is None else lines.on_start)
    except RaceInterrupted as stop:
        raise RaceInterruptedError(stop, Path(storage)) from None
    if lines is not None:
        lines.end(record)
    return Race(record, storage)


def _raced_spec(space: PathLike | SearchSpec | Search | tuple[Callable[..., Any], Mapping[str, Any]], storage: PathLike,
                parameter: str) -> SearchSpec:
    """The spec a race runs for ``space``: a :class:`Search`'s recorded one (in the race's storage; a function's with
    its :attr:`Search.train`), a ``(function, settings)`` pair's :func:`~showwork.families.function_spec`, else
    :func:`search_spec`'s."""
    if isinstance(space, tuple):
        train, settings = space
        return function_spec(train, settings, f"showwork.race(): {parameter}")
    if not isinstance(space, Search):
        return search_spec(space)
    if space.storage.resolve() != Path(storage).resolve():
        raise InputError(f"{parameter}: search {space.name!r} is in {space.storage}, the race's storage is {storage}: a race"
                         " adopts searches of its own storage (pass storage=...)")
    spec = space.spec
    if spec.family_kind != "function":
        return spec
    if space.train is None:
        raise InputError(f"{parameter}: search {space.name!r} trains a Python function, which the race runs only when it is"
                         f" given: race showwork.open_search({space.name!r}, storage={str(space.storage)!r}, train=train)")
    return spec.model_copy(update={"function": space.train})


@_checked
def open_race(name: str, storage: PathLike = DEFAULT_STORAGE) -> Race:
    """The recorded race ``name`` of ``storage``, its decisions recomputed from the two ledgers: :meth:`Race.open`."""
    return Race.open(name, storage)


@_checked
def open_search(name: str, storage: PathLike = DEFAULT_STORAGE, *, train: Callable[..., Any] | None = None) -> Search:
    """The recorded search ``name`` of ``storage`` (what ``showwork results NAME --storage DIR`` reads).

    ``train``: for a search of a Python function (``showwork.search(train, space)``), the function that
    :meth:`Search.resume` runs (the results, curve and report need none). Its code must be the recorded code
    (``resume(allow_changed_code=True)`` runs other code, and records that it did).

    Raises
    ------
    InputError
        No such search (the message lists the searches there); ``train`` for a search whose trainable is not a
        function (it names its family), or not a trainable function.
    """

    if not Ledger(Path(storage), name).exists():
        known = ", ".join(list_searches(Path(storage))) or "none"
        raise InputError(f"no search {name!r} in {storage} (searches there: {known})")
    if train is not None:
        family = recorded_spec(Path(storage), name).family
        if family_kind(family) != "function":
            raise InputError(f"train: search {name!r} trains the family {family!r}, which its spec names; a function is"
                             " given only to a search of a function (showwork.search(train, space))")
        check_function(train)
    return Search(name, storage, train=train)


def _run(spec: SearchSpec, storage: PathLike, uri: str, *, resume: bool, address: str | None, num_cpus: int | None,
         progress: bool, retry_failed: bool = False, allow_changed_code: bool = False) -> Search:
    """:func:`showwork.run.run_search`, the one driver, with its interrupt turned into :class:`SearchInterruptedError`."""

    check_ray_options(num_cpus, address)
    try:
        summary = run_search(spec, Path(storage), uri, resume=resume, address=address, progress=progress,
                             num_cpus=num_cpus, retry_failed=retry_failed, allow_changed_code=allow_changed_code)
    except SearchInterrupted as stop:
        raise SearchInterruptedError(stop, Path(storage), function=spec.function is not None) from None
    return Search(spec.name, storage, summary, train=spec.function)


class Search:
    """A search recorded in a ledger: its trials, best configurations, tuning curve and report.

    Everything is read from the ledger when asked (a search another process extends is seen as it
    grows), through the functions the commands use.

    Attributes
    ----------
    name : str
    storage : Path
        The ledger folder; the search is ``storage / name``.
    summary : SearchSummary or None
        What the run that returned this object reported (None from :func:`open_search`).
    train : function or None
        A search of a Python function: the function :meth:`resume` runs (the one it was run with, or the
        one given to :func:`open_search`); None otherwise.
    """

    @_checked
    def __init__(self, name: str, storage: PathLike = DEFAULT_STORAGE, summary: SearchSummary | None = None, *,
                 train: Callable[..., Any] | None = None) -> None:
        self.name = name
        self.storage = Path(storage)
        self.summary = summary
        self.train = train

    def __repr__(self) -> str:  # one line: the counts of trials and the best score (or why there is none)
        from showwork.report.notebook import search_text  # lazy: the report (scipy) loads when a search is shown
        return search_text(self.storage, self.name)

    def _repr_html_(self) -> str:  # Jupyter's: the counts, the best trials, the tuning curve (from the ledger alone)
        from showwork.report.notebook import search_html  # lazy: as above
        return search_html(self.storage, self.name)

    @property
    def ledger(self) -> Ledger:
        """The search's :class:`~showwork.store.ledger.Ledger` (its folder ``storage / name``)."""

        return Ledger(self.storage, self.name)

    @property
    def spec(self) -> SearchSpec:
        """The spec the search was started (or last resumed) with, from its ledger (:func:`showwork.recorded.recorded_spec`)."""

        return recorded_spec(self.storage, self.name)

    def records(self) -> list[TrialRecord]:
        """The trial records, by index, checked to be the search's own (as ``showwork results`` reads them)."""

        return list(recorded_records(self.storage, self.name)[1])

    def to_dataframe(self) -> pandas.DataFrame:
        """One row per trial, indexed by ``trial`` (its index), with the columns of ``showwork results --csv``.

        ``status``, ``score`` (the validation metric), ``test_score``, ``runtime_s`` (seconds, all
        attempts), ``setup_s``, ``gpu_seconds``, ``seed`` (the training seed), ``node_id``,
        ``hostname``, ``attempts``, ``error`` (one line), ``mlflow_run_id``, then one
        ``param.<name>`` column per flattened hyperparameter (dotted names; a missing value, such as
        a conditional parameter left out of a trial, is NaN/None).
        """
        # lazy: `showwork search` imports this module; the report (scipy) and pandas load when a curve, a report or a DataFrame is asked for
        import pandas as pd


        rows = self.ledger.export_rows(self.records())
        frame = pd.DataFrame(rows) if rows else pd.DataFrame(columns=list(EXPORT_COLUMNS))
        return frame.set_index("trial")

    @_checked
    def best(self, top: int = 1) -> list[TrialRecord]:
        """The ``top`` best finished trials by validation score, best first (``showwork best --top``).

        The metric's mode decides the direction; ties go to the lower trial index (:meth:`tie` says
        how many tie); failed and timed-out trials and non-finite scores are never chosen. Empty
        when no trial finished with a finite score.
        """

        if not is_integer(top) or top < 1:
            raise InputError(f"top must be an integer >= 1 (got {top!r})")
        return ranked_trials(self.records(), self.spec.metric.mode)[:top]

    def tie(self) -> TiedBest | None:
        """The trials that tie for the best validation score and their test scores (``count`` 1: no tie);
        None when no trial finished with a finite score."""

        return ranked_tie(ranked_trials(self.records(), self.spec.metric.mode))

    @_checked
    def family(self, label: str | None = None) -> FamilyResults:
        """The search as the report reads it (:func:`showwork.report.from_ledger`), named ``label`` (default its name)."""
        # lazy: `showwork search` imports this module; the report (scipy) and pandas load when a curve, a report or a DataFrame is asked for
        from showwork.report import from_ledger

        return from_ledger(self.storage, self.name, label)

    @_checked
    def curve(self, **settings: Any) -> SearchCurve:
        """The tuning curve ``showwork report NAME`` computes, with its bands (a SearchCurve: shown in a notebook).

        Parameters
        ----------
        **settings
            Fields of :class:`showwork.report.ReportSettings`, with the report's defaults:
            ``confidence`` (0.8), ``method`` ("ld-hd"), ``quantile`` (0.5), ``a``/``b`` (the score's
            support; default the search's metric bounds, else unbounded), ``failure_policy``
            (default the search's own), ``budgets`` (numbers of trials >= 1, sorted and each taken
            once, as the report does; default every k up to 200, then a geometric grid up to the
            number of trials), ``extrapolate`` (a budget K above those: the curve's ``extrapolation``, to K, by
            the noisy-quadratic law of its best trials, model-based past the informative budget; or why it was
            refused) with ``tail_fraction`` (the share of the trials fitted; default 0.5).

        Raises
        ------
        InputError
            Bad settings; scores the failure policy refuses (``error`` with failed trials); no trial record.
        """
        # lazy: `showwork search` imports this module; the report (scipy) and pandas load when a curve, a report or a DataFrame is asked for
        from showwork.report import ReportSettings
        from showwork.report.notebook import SearchCurve

        return SearchCurve.of(ReportSettings(**settings), self.family())  # the settings checked first

    @_checked
    def compare(self, other: Search | FamilyResults, **settings: Any) -> SearchComparison:
        """The comparison of this search's median tuning curve with ``other``'s that the report of both makes.

        ``other`` is a :class:`Search` or any :class:`~showwork.report.FamilyResults` (a results
        file, an MLflow experiment: :mod:`showwork.report`); give two searches of the same name
        distinct names with ``other.family(label=...)``. ``settings`` are the report's
        (:meth:`curve`). The result's ``comparison`` holds the evidence by budget, ``sentences()``
        the report's words; it shows them in a notebook (:class:`~showwork.report.notebook.SearchComparison`).
        """
        # lazy: `showwork search` imports this module; the report (scipy) and pandas load when a curve, a report or a DataFrame is asked for
        from showwork.report import ReportSettings, analyze
        from showwork.report.notebook import SearchComparison

        families = [self.family(), other.family() if isinstance(other, Search) else other]
        return SearchComparison.of(analyze(families, ReportSettings(**settings)))

    @_checked
    def report(self, out: PathLike, *, others: tuple[Search | FamilyResults, ...] = (), label: str | None = None,
               figure_formats: tuple[str, ...] | None = None, log_x: bool | None = None, mlflow: bool = True,
               figure_style: FigureStyle | None = None, **settings: Any) -> ReportFiles:
        """Write the report ``showwork report NAME [OTHERS...] --out OUT`` writes; return its files.

        Parameters
        ----------
        out : str or os.PathLike
            The folder that receives the report (``--out``; all or nothing, see
            :func:`showwork.report.write_report`).
        others : tuple of Search or FamilyResults
            More families in the same report, compared with this one.
        label : str, optional
            This search's name in the report (``--label``).
        figure_formats : tuple of str, optional
            Among "png", "svg", "pdf", "pgf" (``--formats``; default the first three).
        log_x : bool, optional
            Logarithmic budget axis (``--log-x``/``--linear-x``); default: when the largest budget is over 100.
        mlflow : bool, default True
            Also log the report on each search's MLflow parent run (``--no-mlflow``: False); an
            unreachable store is a warning, as on the command line.
        figure_style : showwork.report.FigureStyle, optional
            The figures' title, size, font size, style file and score label (``--no-title``,
            ``--figsize``, ``--font-size``, ``--style``, ``--score-label``); default: as they always were.
        **settings
            :class:`showwork.report.ReportSettings` fields (see :meth:`curve`; also ``targets``,
            ``table_budgets``, ``bound_k``, ``cost_unit``, ``gpus_per_trial``, ``grid_intensity``, ``cost``).
        """
        # lazy: `showwork search` imports this module; the report (scipy) and pandas load when a curve, a report or a DataFrame is asked for
        from showwork.report import ReportSettings, analyze, log_report, write_report

        families = [self.family(label), *(o.family() if isinstance(o, Search) else o for o in others)]
        report = analyze(families, ReportSettings(**settings))
        formats = {} if figure_formats is None else {"figure_formats": tuple(figure_formats)}
        style = {} if figure_style is None else {"figure_style": figure_style}
        files = write_report(report, out, log_x=log_x, **formats, **style)
        if mlflow:
            try:
                log_report(report, files)
            except TrackingUnavailableError as error:  # the files are written; MLflow is a copy
                warnings.warn(f"the report was not logged to MLflow ({error})", stacklevel=2)
        return files

    @_checked
    def resume(self, *, num_trials: int | None = None, tracking_uri: str | None = None, address: str | None = None,
               num_cpus: int | None = None, progress: bool = True, retry_failed: bool = False,
               allow_changed_code: bool = False) -> Search:
        """Continue the search from its ledger alone, as ``showwork resume NAME`` does: run the trials without a record.

        ``num_trials`` larger than recorded extends the search; ``tracking_uri`` defaults to
        ``$MLFLOW_TRACKING_URI``, else the store the search recorded. ``retry_failed`` (``--retry-failed``)
        runs the failed and timed-out trials again with their configurations and seeds: the ledger keeps
        every attempt, the last one counts (:meth:`~showwork.store.ledger.Ledger.supersede`). A search of a
        Python function runs :attr:`train` (``open_search(name, train=fn)``), refused where its code is not the
        recorded code unless ``allow_changed_code`` (then recorded). Returns a :class:`Search` with this run's
        ``summary``; raises as :func:`search` does.
        """
        spec = recorded_spec(self.storage, self.name, num_trials)
        if spec.family_kind == "function":
            if self.train is None:
                raise InputError(needs_function(self.name, self.storage))
            spec = spec.model_copy(update={"function": self.train})
        return _run(spec, self.storage, recorded_tracking_uri(self.storage, self.name, tracking_uri), resume=True,
                    address=address, num_cpus=num_cpus, progress=progress, retry_failed=retry_failed,
                    allow_changed_code=allow_changed_code)

