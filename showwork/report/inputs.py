"""What a report reads: one :class:`FamilyResults` per model family, from a ledger, MLflow or a results file.

Three sources, one shape:

- :func:`from_ledger` — a search run by ``showwork search`` (its storage directory and name): every
  trial record, the resolved search space, the metric and its direction, and the environment the
  search recorded (hardware, packages, git commit);
- :func:`~showwork.report.sources_mlflow.from_mlflow` — an MLflow experiment or parent run on any tracking URI: a ``showwork
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

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from showwork.distributions import Distribution
from showwork.errors import InputError
from showwork.recorded import recorded_records, recorded_reruns
from showwork.redaction import Redactor
from showwork.results_table import read_results_table
from showwork.selection import TiedBest, tied_best
from showwork.store import Ledger, missing_indices, trial_score
from showwork.tracking.mlflow_format import MEASURED_METRICS

__all__ = ["SHOWWORK_SEARCH", "FamilyResults", "RecordedParam", "RecordedSpace", "SamplerInfo", "distribution_words", "from_ledger", "from_results_file", "iid_caveat", "iid_caveats",
           "said_random", "sharing_trials", "sampler_of", "unknown_sampler"]

FINISHED = "finished"


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


def distribution_words(distribution: Distribution) -> str:
    """A distribution and its bounds in the words of ``showwork validate``'s space table: ``log-uniform [0.1, 20)``."""
    return f"{distribution.kind_text()} {distribution.bounds_text()}"


@dataclass(frozen=True)
class RecordedParam:
    """One hyperparameter of a space another tool recorded (:class:`RecordedSpace`).

    Attributes
    ----------
    name : str
        Dotted, as the trials' parameters are named.
    distribution : Distribution or None
        The same distribution as showwork's, where the tool's draws exactly it; else None.
    words : str
        Where ``distribution`` is None: the tool's distribution in words and why it is not one of
        showwork's (or why it is not known).
    known : bool
        False where the tool did not record this parameter's distribution (a function).
    note : str
        What else to say (``in 7 of 12 trials``); empty when nothing.
    """

    name: str
    distribution: Distribution | None = None
    words: str = ""
    known: bool = True
    note: str = ""

    def describe(self) -> str:
        """``"name: log-uniform [0.1, 20)"``, in the words of :func:`distribution_words` where exact."""
        text = distribution_words(self.distribution) if self.distribution is not None else self.words
        return f"{self.name}: {text}" + (f" ({self.note})" if self.note else "")


@dataclass(frozen=True)
class RecordedSpace:
    """The search space a Ray Tune experiment or an Optuna study recorded (``meta["space"]``).

    Attributes
    ----------
    params : tuple of RecordedParam
        Every hyperparameter, in the tool's order; empty when the space was not recorded.
    evidence : str
        Where it was read from, or why it could not be.
    """

    params: tuple[RecordedParam, ...]
    evidence: str


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
        Why each trial did not finish (:func:`showwork.store.failure_kind`: ``CUDA out of
        memory``, ``timeout``, an exception's type, ...), None for a finished one; empty when the
        source records no errors (results files, other programs' runs).
    trial_names : tuple of str
        How the source names each trial in messages (a ledger: ``trial 4``, its index; a results
        file: ``row 5``); empty: by position, counting from 1 (:meth:`trial_name`).
    reruns : tuple of RerunSummary
        The configurations ``showwork rerun`` trained again under fresh seeds
        (:class:`showwork.selection.RerunSummary`, best first); kept apart from the trials, so no
        statistic of the search sees them. Ledgers only; empty otherwise.
    trial_attempts : tuple of int
        Which attempt of each trial is counted (``showwork resume --retry-failed`` runs failed trials again and
        the last attempt counts): 1 for a trial run once, 2 for a trial retried once, ...; empty when the
        source records no retries (anything but a ledger).
    origin : FamilyResults or None
        The family read from a source whose trials these are, when cut from it (:meth:`subset`);
        None for a family as read. With ``origin_rows`` (the trials' positions in it) it says which
        families share trials (:meth:`shares_trials`), so which comparisons are not independent.
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
    trial_names: tuple[str, ...] = ()
    trial_attempts: tuple[int, ...] = ()
    origin: FamilyResults | None = field(default=None, repr=False)
    origin_rows: tuple[int, ...] = field(default=(), repr=False)

    def __post_init__(self) -> None:
        n = len(self.scores)
        if len(self.statuses) != n:
            raise ValueError(f"{self.name}: {len(self.statuses)} statuses for {n} scores.")
        for label, values in (("runtimes_s", self.runtimes_s), ("test_scores", self.test_scores)):
            if values is not None and len(values) != n:
                raise ValueError(f"{self.name}: {len(values)} {label} for {n} scores.")
        for label, values in (("params", self.params), ("trial_metrics", self.trial_metrics), ("trial_worker", self.trial_worker),
                              ("failure_kinds", self.failure_kinds), ("trial_names", self.trial_names),
                              ("trial_attempts", self.trial_attempts)):
            if values and len(values) != n:
                raise ValueError(f"{self.name}: {len(values)} {label} for {n} scores.")
        if self.origin is not None and len(self.origin_rows) != n:
            raise ValueError(f"{self.name}: {len(self.origin_rows)} origin_rows for {n} scores.")

    def subset(self, rows: Sequence[int], name: str | None = None) -> FamilyResults:
        """The trials ``rows`` (positions, in order) as a family (named ``name``, default this one's).

        Every per-trial field follows; the re-runs are dropped (they are of the whole search's best
        configurations). The subset remembers the family as read and its trials' positions there
        (``origin``, ``origin_rows``; a subset of a subset: positions in the first one)."""
        idx = np.asarray(rows, dtype=int)
        root, positions = self.trials_read()

        def take(values):
            return tuple(values[i] for i in idx) if values else values

        return replace(
            self,
            name=self.name if name is None else name,
            scores=self.scores[idx],
            statuses=tuple(self.statuses[i] for i in idx),
            runtimes_s=None if self.runtimes_s is None else self.runtimes_s[idx],
            test_scores=None if self.test_scores is None else self.test_scores[idx],
            params=take(self.params),
            trial_metrics=take(self.trial_metrics),
            trial_worker=take(self.trial_worker),
            failure_kinds=take(self.failure_kinds),
            trial_names=take(self.trial_names),
            trial_attempts=take(self.trial_attempts),
            reruns=(),
            origin=root,
            origin_rows=tuple(positions[i] for i in idx.tolist()),
        )

    @property
    def n_retried(self) -> int:
        """How many of the trials were retried (their counted attempt is not their first)."""
        return sum(attempt > 1 for attempt in self.trial_attempts)

    def trials_read(self) -> tuple[FamilyResults, tuple[int, ...]]:
        """The family as read from its source, and the positions of this family's trials in it."""
        if self.origin is None:
            return self, tuple(range(self.n_trials))
        return self.origin, self.origin_rows

    def shares_trials(self, other: FamilyResults) -> bool:
        """Whether some trial is in both families: both were cut from one family as read, at a common position.

        Two families that share trials are not independent searches, so the bands of both hold with
        probability at least ``2c - 1`` (the union bound), not ``c²``
        (:func:`showwork.statistics.false_strong_bound`). Families cut from one search at disjoint
        positions (``report --by``) share none. Families read apart share none as far as this
        knows, even when they are two readings of one search.
        """
        root, rows = self.trials_read()
        other_root, other_rows = other.trials_read()
        return root is other_root and not set(rows).isdisjoint(other_rows)

    def first_trials(self, n: int) -> FamilyResults:
        """The same family with its first n trials only (:meth:`subset`)."""
        return self.subset(range(min(n, self.n_trials)))

    def trial_name(self, position: int) -> str:
        """The trial at ``position`` (0-based, in trial order) as its source names it."""
        if self.trial_names:
            return self.trial_names[position]
        return f"trial {position + 1}, counting from 1 in the order read"

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


def from_ledger(storage_dir: str | Path, name: str, label: str | None = None, sampler: str | None = None,
                first: int | None = None) -> FamilyResults:
    """Read the search ``name`` from its ledger under ``storage_dir`` (``showwork search --storage``).

    Its trials are i.i.d. random draws (:data:`SHOWWORK_SEARCH`); ``sampler`` (``--sampler``) may
    say ``random`` too, and anything else is refused. ``first``: only the trials of index below it,
    all of which must have a record (a race's sample at the look it stopped at: counted by index,
    never by completion); their re-runs alone.

    Raises
    ------
    InputError
        No such search, a search without any trial record yet, or a ledger that is not the search's own
        (:func:`showwork.recorded.recorded_records`: an edited spec, a record it did not draw); a trial
        below ``first`` without a record.
    """
    ledger = Ledger(Path(storage_dir), name)
    if not ledger.exists():
        raise InputError(f"no search named {name!r} under {Path(storage_dir)} (see --storage).")
    _, records = recorded_records(Path(storage_dir), name)  # the search's own: refused otherwise
    if not records:
        raise InputError(f"search {name!r} under {Path(storage_dir)} has no trial records yet.")
    if first is not None:
        missing = missing_indices(records, first)
        if missing:
            raise InputError(f"search {name!r} under {Path(storage_dir)}: {len(missing)} of its first {first} trials"
                             f" have no record (the first is trial {missing[0]}).")
        records = [r for r in records if r.index < first]
    meta = ledger.read_meta()
    superseded = ledger.superseded()  # the earlier attempts of retried trials: the counted one is in records
    spec = meta.get("spec") or {}
    metric = (spec.get("metric") or {}).get("name") or "score"
    minimize = (spec.get("metric") or {}).get("mode") == "min"

    def number(value: Any) -> float:
        return float(value) if value is not None else math.nan

    return FamilyResults(
        name=label or name,
        scores=np.array([trial_score(r) for r in records], dtype=float),
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
        trial_names=tuple(f"trial {r.index}" for r in records),
        trial_attempts=tuple(len(superseded.get(r.index, ())) + 1 for r in records),
        reruns=tuple(r for r in recorded_reruns(Path(storage_dir), name, "min" if minimize else "max", records)
                     if first is None or r.trial < first),
    )


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
                trial_names=tuple(f"row {i + 1}" for i in rows),
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


def sharing_trials(families: Sequence[FamilyResults]) -> set[frozenset[str]]:
    """The pairs of family names (each a frozenset of two) whose families share trials (:meth:`FamilyResults.shares_trials`).

    Only families cut from one family as read can share trials, so the pairs are looked for within
    each such group: linear in the families as read (a report of 10,000 searches has 50 million pairs).
    """
    groups: dict[int, list[FamilyResults]] = {}
    for family in families:
        groups.setdefault(id(family.trials_read()[0]), []).append(family)  # the roots live as long as the families
    return {frozenset((a.name, b.name)) for group in groups.values() if len(group) > 1
            for i, a in enumerate(group) for b in group[i + 1:] if a.shares_trials(b)}

