"""The Python API: a search from a notebook or a script, run and read exactly as the command line does.

:func:`search` runs (or resumes) a search as ``showwork search SPACE`` does -- the same driver
(:func:`showwork.run.run_search`), ledger, MLflow projection, resume and interrupts -- and returns a
:class:`Search`; :func:`open_search` opens a recorded one (``showwork results NAME`` reads the same
ledger). A :class:`Search` gives its trial records, a pandas DataFrame (the columns of ``showwork
results --csv``), its best trials (``showwork best``), its tuning curve and its comparison with another
search as ``showwork report`` computes them, and the report itself.

Errors are exceptions: bad input raises :class:`~showwork.errors.InputError` with the message the
command line prints after ``showwork: error:``; an outage raises the command's
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
"""

from __future__ import annotations

import os
import signal
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from showwork.constants import DEFAULT_STORAGE
from showwork.errors import InputError
from showwork.recorded import recorded_records, recorded_spec
from showwork.run import SearchInterrupted, run_search
from showwork.selection import ranked_tie, ranked_trials
from showwork.space import SearchSpec, load_search_spec
from showwork.store import EXPORT_COLUMNS, Ledger, list_searches
from showwork.tracking.errors import TrackingUnavailableError
from showwork.tracking.uris import chosen_tracking_uri, recorded_tracking_uri
from showwork.trials.ray_setup import check_ray_options
from showwork.values import is_integer

if TYPE_CHECKING:  # annotations of what loads late (the report, pandas; see Search.curve)
    import pandas

    from showwork.report import FamilyResults, FigureStyle, ReportFiles
    from showwork.report.contents import PairAnalysis
    from showwork.run import SearchSummary
    from showwork.selection import TiedBest
    from showwork.statistics import TuningCurve
    from showwork.store import TrialRecord
    from showwork.store.races import RaceRecord

__all__ = ["DEFAULT_STORAGE", "RaceInterruptedError", "Search", "SearchInterruptedError", "open_search", "race", "search", "search_spec"]

PathLike = Union[str, "os.PathLike[str]"]


class SearchInterruptedError(KeyboardInterrupt):
    """Ctrl-C (SIGINT) or SIGTERM stopped a search run from Python; the ledger keeps every finished trial.

    A ``KeyboardInterrupt``, so that a notebook's or a script's interrupt stops the caller as usual.
    Continue the search with ``open_search(name, storage=...).resume()`` (or ``showwork resume NAME``).
    Its attributes are those of the driver's :class:`showwork.run.SearchInterrupted` (``name``,
    ``finished``, ``num_trials``, ``signum`` as a :class:`signal.Signals`, ``resumable``), with
    ``storage_dir`` as the caller gave it.
    """

    def __init__(self, stop: SearchInterrupted, storage_dir: Path):
        how = (f"; the ledger keeps every finished trial; continue with showwork.open_search({stop.name!r},"
               f" storage={str(storage_dir)!r}).resume()" if stop.resumable else "")
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


def search_spec(spec_or_path: PathLike | SearchSpec, *, name: str | None = None, num_trials: int | None = None,
                seed: int | None = None, max_concurrent: int | None = None, fail_fast_after: int | None = None) -> SearchSpec:
    """The spec ``showwork search SPACE [--name N] [--num-trials N] [--seed S] [--max-concurrent N] [--fail-fast-after N]`` runs.

    Parameters
    ----------
    spec_or_path : str, os.PathLike or SearchSpec
        A search-space YAML file, or a spec already loaded (:func:`showwork.space.load_search_spec`),
        which is taken as it is.
    name, num_trials, seed, max_concurrent, fail_fast_after : optional
        Overrides of the file's values (None: the file's), checked as the file's are.

    Raises
    ------
    InputError
        The file is refused (:class:`~showwork.space.SpecError`: one line naming file:line: key), or
        overrides were given with a loaded spec (load it with them instead).
    """

    overrides = {"name": name, "num_trials": num_trials, "seed": seed, "max_concurrent": max_concurrent,
                 "fail_fast_after": fail_fast_after}
    if isinstance(spec_or_path, SearchSpec):
        given = sorted(key for key, value in overrides.items() if value is not None)
        if given:
            raise InputError(f"{', '.join(given)}: overrides apply to a YAML file; a loaded spec runs as it is"
                             " (load it with them: showwork.space.load_search_spec(path, overrides))")
        return spec_or_path
    if not isinstance(spec_or_path, (str, os.PathLike)):
        raise TypeError(f"spec_or_path must be a path to a YAML file or a SearchSpec, not {type(spec_or_path).__name__}")
    return load_search_spec(spec_or_path, overrides)


def search(
    spec_or_path: PathLike | SearchSpec,
    *,
    name: str | None = None,
    num_trials: int | None = None,
    seed: int | None = None,
    max_concurrent: int | None = None,
    fail_fast_after: int | None = None,
    resume: bool = False,
    storage: PathLike = DEFAULT_STORAGE,
    tracking_uri: str | None = None,
    address: str | None = None,
    num_cpus: int | None = None,
    progress: bool = True,
) -> Search:
    """Run (or resume) a random search, as ``showwork search SPACE`` does; return it.

    Parameters
    ----------
    spec_or_path : str, os.PathLike or SearchSpec
        The search-space YAML file (or a loaded spec: :func:`search_spec`).
    name, num_trials, seed, max_concurrent, fail_fast_after : optional
        Override the file's values, as ``--name``, ``--num-trials``, ``--seed``, ``--max-concurrent``,
        ``--fail-fast-after``.
    resume : bool, default False
        Continue an existing search of the same space (``--resume``): run only the trials without a
        record; a larger ``num_trials`` extends it.
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
        A refused space or option; an existing search without ``resume``; a resume whose space differs.
    SearchInterruptedError
        Ctrl-C or SIGTERM stopped the search (a ``KeyboardInterrupt``); its records are kept.
    UnavailableError
        The MLflow store is unreachable; another driver runs the search; the ledger's folder refused a
        write (:class:`~showwork.run.SearchStorageError`) or was moved while the search ran; the first
        ``fail_fast_after`` trials to end all failed with the same error (:class:`~showwork.run.SearchFailedFast`:
        the search stopped, resumable).
    """

    spec = search_spec(spec_or_path, name=name, num_trials=num_trials, seed=seed, max_concurrent=max_concurrent,
                       fail_fast_after=fail_fast_after)
    return _run(spec, storage, chosen_tracking_uri(tracking_uri), resume=resume, address=address, num_cpus=num_cpus,
                progress=progress)


def race(
    space_a: PathLike | SearchSpec,
    space_b: PathLike | SearchSpec,
    *,
    looks: str | tuple[int, ...],
    decide_at: float | tuple[float, ...],
    decide_by: str = "median",
    confidence: float = 0.8,
    method: str = "ld-hd",
    name: str | None = None,
    resume: bool = False,
    storage: PathLike = DEFAULT_STORAGE,
    tracking_uri: str | None = None,
    address: str | None = None,
    num_cpus: int | None = None,
    progress: bool = True,
) -> RaceRecord:
    """Race two search spaces at pre-planned looks, as ``showwork race A B --looks --decide-at`` does; return its record.

    At each look n (trials per model, by index) both searches are grown to n trials and compared
    with the schedule's joint bands; the race stops at the first look where one model is resolved at
    every budget of ``decide_at`` (see :mod:`showwork.run.race` and docs/how-to/race.md).

    Parameters
    ----------
    space_a, space_b : str, os.PathLike or SearchSpec
        The two search spaces (YAML files or loaded specs); each is an ordinary search of its own.
    looks : "12,24,48" or tuple of ints
        The schedule, fixed before any trial.
    decide_at : float or tuple of floats >= 1
        The budgets K at which one model must be shown better, at all of them, to stop.
    decide_by, confidence, method, name, resume
        As ``--decide-by``, ``--confidence``, ``--method`` (ld-hd or ld-et), ``--name`` (default
        ``A-vs-B``) and ``--resume``.
    storage, tracking_uri, address, num_cpus, progress
        As for :func:`search`.

    Returns
    -------
    RaceRecord
        ``status`` ("decided" or "undecided"), ``winner``, ``stopped_at``, ``looks`` (one
        :class:`~showwork.statistics.LookDecision` per look taken), ``saved_trials()``.

    Raises
    ------
    InputError
        Refused settings or spaces (one message, as the command prints it); a race that exists
        without ``resume``; a resume that changes a setting.
    RaceInterruptedError
        Ctrl-C or SIGTERM stopped the race (a ``KeyboardInterrupt``); its record keeps the looks taken
        (``resume=True`` continues it).
    UnavailableError
        As for :func:`search`; another race (or driver) runs one of the two searches
        (:class:`~showwork.store.LedgerLockedError`, naming it).
    """
    # lazy: `showwork search` imports this module; a race loads the statistics (scipy) when it runs
    from showwork.run.race import RaceInterrupted, race_request, run_race

    budgets = (decide_at,) if isinstance(decide_at, (int, float)) else tuple(decide_at)
    request = race_request((search_spec(space_a), search_spec(space_b)), name, looks, budgets, decide_by, confidence, method)
    check_ray_options(num_cpus, address)
    try:
        return run_race(request, Path(storage), chosen_tracking_uri(tracking_uri), resume=resume, address=address,
                        num_cpus=num_cpus, progress=progress)
    except RaceInterrupted as stop:
        raise RaceInterruptedError(stop, Path(storage)) from None


def open_search(name: str, storage: PathLike = DEFAULT_STORAGE) -> Search:
    """The recorded search ``name`` of ``storage`` (what ``showwork results NAME --storage DIR`` reads).

    Raises
    ------
    InputError
        No such search (the message lists the searches there).
    """

    if not Ledger(Path(storage), name).exists():
        known = ", ".join(list_searches(Path(storage))) or "none"
        raise InputError(f"no search {name!r} in {storage} (searches there: {known})")
    return Search(name, storage)


def _run(spec: SearchSpec, storage: PathLike, uri: str, *, resume: bool, address: str | None, num_cpus: int | None,
         progress: bool, retry_failed: bool = False) -> Search:
    """:func:`showwork.run.run_search`, the one driver, with its interrupt turned into :class:`SearchInterruptedError`."""

    check_ray_options(num_cpus, address)
    try:
        summary = run_search(spec, Path(storage), uri, resume=resume, address=address, progress=progress,
                             num_cpus=num_cpus, retry_failed=retry_failed)
    except SearchInterrupted as stop:
        raise SearchInterruptedError(stop, Path(storage)) from None
    return Search(spec.name, storage, summary)


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
    """

    def __init__(self, name: str, storage: PathLike = DEFAULT_STORAGE, summary: SearchSummary | None = None) -> None:
        self.name = name
        self.storage = Path(storage)
        self.summary = summary

    def __repr__(self) -> str:
        return f"Search({self.name!r}, storage={str(self.storage)!r})"

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

    def family(self, label: str | None = None) -> FamilyResults:
        """The search as the report reads it (:func:`showwork.report.from_ledger`), named ``label`` (default its name)."""
        # lazy: `showwork search` imports this module; the report (scipy) and pandas load when a curve, a report or a DataFrame is asked for
        from showwork.report import from_ledger

        return from_ledger(self.storage, self.name, label)

    def curve(self, **settings: Any) -> TuningCurve:
        """The tuning curve ``showwork report NAME`` computes, with its bands.

        Parameters
        ----------
        **settings
            Fields of :class:`showwork.report.ReportSettings`, with the report's defaults:
            ``confidence`` (0.8), ``method`` ("ld-hd"), ``quantile`` (0.5), ``a``/``b`` (the score's
            support; default the search's metric bounds, else unbounded), ``failure_policy``
            (default the search's own), ``budgets`` (numbers of trials >= 1, sorted and each taken
            once, as the report does; default every k up to 200, then a geometric grid up to the
            number of trials).

        Raises
        ------
        InputError
            Bad settings; scores the failure policy refuses (``error`` with failed trials); no trial record.
        """
        # lazy: `showwork search` imports this module; the report (scipy) and pandas load when a curve, a report or a DataFrame is asked for
        import numpy as np

        from showwork.report import ReportSettings
        from showwork.report.analysis import budget_grid, family_curve

        chosen = ReportSettings(**settings)
        results = self.family()
        budgets = np.unique(np.asarray(chosen.budgets, dtype=float)) if chosen.budgets else budget_grid(results.n_trials)
        return family_curve(results, chosen, budgets)

    def compare(self, other: Search | FamilyResults, **settings: Any) -> PairAnalysis:
        """The comparison of this search's median tuning curve with ``other``'s that the report of both makes.

        ``other`` is a :class:`Search` or any :class:`~showwork.report.FamilyResults` (a results
        file, an MLflow experiment: :mod:`showwork.report`); give two searches of the same name
        distinct names with ``other.family(label=...)``. ``settings`` are the report's
        (:meth:`curve`). The result's ``comparison`` holds the evidence by budget, ``sentences()``
        the report's words.
        """
        # lazy: `showwork search` imports this module; the report (scipy) and pandas load when a curve, a report or a DataFrame is asked for
        from showwork.report import ReportSettings, analyze

        families = [self.family(), other.family() if isinstance(other, Search) else other]
        return analyze(families, ReportSettings(**settings)).pairs[0]

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

    def resume(self, *, num_trials: int | None = None, tracking_uri: str | None = None, address: str | None = None,
               num_cpus: int | None = None, progress: bool = True, retry_failed: bool = False) -> Search:
        """Continue the search from its ledger alone, as ``showwork resume NAME`` does: run the trials without a record.

        ``num_trials`` larger than recorded extends the search; ``tracking_uri`` defaults to
        ``$MLFLOW_TRACKING_URI``, else the store the search recorded. ``retry_failed`` (``--retry-failed``)
        runs the failed and timed-out trials again with their configurations and seeds: the ledger keeps
        every attempt, the last one counts (:meth:`~showwork.store.ledger.Ledger.supersede`). Returns a :class:`Search` with
        this run's ``summary``; raises as :func:`search` does.
        """

        if not isinstance(retry_failed, bool):
            raise InputError(f"Search.resume: retry_failed must be True or False, not {retry_failed!r}")

        spec = recorded_spec(self.storage, self.name, num_trials)
        return _run(spec, self.storage, recorded_tracking_uri(self.storage, self.name, tracking_uri), resume=True,
                    address=address, num_cpus=num_cpus, progress=progress, retry_failed=retry_failed)
