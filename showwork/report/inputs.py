"""What a report reads: one :class:`FamilyResults` per model family, from a search's ledger or a results file.

Two sources, one shape:

- :func:`from_ledger` — a search run by ``showwork search`` (its storage directory and name): every
  trial record, the resolved search space, the metric and its direction, and the environment the
  search recorded (hardware, packages, git commit);
- :func:`from_results_file` — any CSV / TSV / JSON-lines table (other tools' searches, the papers'
  released results): a score column, optionally a runtime and a test-score column, one family per
  file or one per value of a ``group`` column. Nothing else is known about such searches, and the
  report says so rather than guessing.

Trials keep their order (trial index for ledgers, row order for files). Failed trials stay in the
data with a NaN score and their status; the report's failure policy decides how they count.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from showwork.errors import InputError

__all__ = ["FamilyResults", "from_ledger", "from_results_file"]

FINISHED = "finished"


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

    def __post_init__(self) -> None:
        n = len(self.scores)
        if len(self.statuses) != n:
            raise ValueError(f"{self.name}: {len(self.statuses)} statuses for {n} scores.")
        for label, values in (("runtimes_s", self.runtimes_s), ("test_scores", self.test_scores)):
            if values is not None and len(values) != n:
                raise ValueError(f"{self.name}: {len(values)} {label} for {n} scores.")
        for label, values in (("params", self.params), ("trial_metrics", self.trial_metrics)):
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

    @property
    def mean_runtime_s(self) -> float | None:
        """Mean wall time of the trials whose runtime is known, or None."""
        if self.runtimes_s is None:
            return None
        known = self.runtimes_s[np.isfinite(self.runtimes_s)]
        return float(known.mean()) if known.size else None


def from_ledger(storage_dir: str | Path, name: str, label: str | None = None) -> FamilyResults:
    """Read the search ``name`` from its ledger under ``storage_dir`` (``showwork search --storage``).

    Raises
    ------
    InputError
        No such search, or a search without any trial record yet.
    """
    from showwork.ledger import Ledger

    ledger = Ledger(Path(storage_dir), name)
    if not ledger.exists():
        raise InputError(f"no search named {name!r} under {Path(storage_dir)} (see --storage).")
    records = ledger.records()
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
        meta={k: v for k, v in meta.items() if k != "spec"},
        trial_metrics=tuple(dict(r.metrics) for r in records),
    )


def from_results_file(
    path: str | Path,
    score: str,
    *,
    runtime: str | None = None,
    test: str | None = None,
    minimize: bool = False,
    group: str | None = None,
    label: str | None = None,
) -> list[FamilyResults]:
    """Read a results table (CSV, TSV or JSON lines; see :mod:`showwork.results_table`).

    Parameters
    ----------
    path : path
    score : str
        The column of validation scores. A missing or non-finite cell marks a failed trial.
    runtime, test : str, optional
        Columns of per-trial wall time (seconds) and test scores.
    minimize : bool, default False
        Lower scores are better.
    group : str, optional
        A column whose values name the families (one :class:`FamilyResults` per value, in order of
        first appearance); without it the whole file is one family named ``label`` or the file stem.

    Raises
    ------
    InputError
        Unreadable file, missing column, non-numeric cells (the message names file, line and column).
    """
    from showwork.results_table import read_results_table

    path = Path(path)
    table = read_results_table(path)
    scores = np.asarray(table.numeric_column(score), dtype=float)
    runtimes = np.asarray(table.numeric_column(runtime), dtype=float) if runtime else None
    tests = np.asarray(table.numeric_column(test), dtype=float) if test else None
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
            )
        )
    return families

