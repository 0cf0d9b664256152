"""What a search's run ends with: its summary, its failures by kind, and the two ways it stops early.

:class:`SearchSummary` is what :func:`showwork.run.run_search` returns; :class:`SearchInterrupted`
(a signal) and :class:`SearchStorageError` (the ledger's folder refused a write) are how it stops
before the end. :func:`trial_counts` is the one count of a search's records that the summary, the
progress line and the parent run's metrics share.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from showwork.errors import UnavailableError
from showwork.selection import ranked_trials

if TYPE_CHECKING:
    from showwork.store import Ledger, TrialRecord

__all__ = [
    "FailureKind", "SearchFolderMovedError", "SearchInterrupted", "SearchStorageError", "SearchSummary", "TrialCounts", "counts_with", "failure_kinds",
    "summarize", "trial_counts",
]


class SearchStorageError(UnavailableError):
    """The search stopped because the ledger's folder refused a write (a full disk, a read-only folder).

    An outage, not bad input (the command exits 1). The message names the folder and the error;
    every record written before it is kept, and ``--resume`` runs the unrecorded trials once the
    folder takes writes again.
    """


class SearchFolderMovedError(SearchStorageError):
    """The search stopped because its folder was moved, deleted or replaced while it ran
    (:class:`~showwork.store.ledger.LedgerMovedError`); ``folder`` is where it should be. Its records are
    wherever it went: put it back there, and ``resume`` continues the search."""

    def __init__(self, message: str, folder: Path) -> None:
        super().__init__(message)
        self.folder = Path(folder)


class SearchInterrupted(Exception):
    """The search was stopped by SIGINT (Ctrl-C) or SIGTERM; its records are kept.

    Attributes
    ----------
    name : str
    storage_dir : Path
    finished, num_trials : int
        Trials recorded as finished, and trials planned.
    signum : int
        The first signal received (``signal.SIGINT`` or ``signal.SIGTERM``); the command exits
        ``128 + signum``.
    resumable : bool
        Whether the ledger knows the search (False when it stopped before anything was recorded).
    """

    def __init__(self, name: str, storage_dir: Path, finished: int, num_trials: int, signum: int, resumable: bool):
        super().__init__(f"interrupted: {finished} of {num_trials} trials finished")
        self.name, self.storage_dir, self.finished, self.num_trials = name, Path(storage_dir), finished, num_trials
        self.signum, self.resumable = signum, resumable


@dataclass(frozen=True)
class FailureKind:
    """The trials that failed (or timed out) for one kind of reason.

    ``kind`` is :attr:`showwork.store.TrialRecord.failure_kind`: ``CUDA out of memory``, the
    exception's type for another raised error (``ValueError``, ``WorkerDied``), ``timeout`` for a
    trial over its time limit, else the reason's first line (a missing or non-finite score,
    ``sys.exit``); ``first_message`` is the first line of the error of the lowest trial index of
    the kind, ``first_index`` that index.
    """

    kind: str
    count: int
    first_index: int
    first_message: str


def failure_kinds(records) -> tuple[FailureKind, ...]:
    """The failed and timed-out ``records`` grouped by kind of reason (see :class:`FailureKind`), most frequent first."""
    groups: dict[str, list] = {}
    for record in sorted(records, key=lambda r: r.index):
        kind = record.failure_kind
        if kind is None:
            continue
        first = (record.error or f"{record.status} without a reason").strip().splitlines()[0]
        groups.setdefault(kind, []).append((record.index, first))
    kinds = [FailureKind(kind, len(items), items[0][0], items[0][1]) for kind, items in groups.items()]
    return tuple(sorted(kinds, key=lambda k: (-k.count, k.first_index)))


@dataclass(frozen=True)
class SearchSummary:
    """What :func:`showwork.run.run_search` reports: the counts of the trials up to ``num_trials``, the
    best finished one, the failures by kind, and where Ray's logs of this search are (``ray_logs``:
    their tracebacks of failed trials, beside the short ones in the records)."""

    name: str
    storage_dir: Path
    num_trials: int
    finished: int
    failed: int
    timeout: int
    best_score: float | None
    best_index: int | None
    parent_run_id: str | None
    tracking_uri: str
    elapsed_s: float
    failures: tuple[FailureKind, ...] = ()
    ray_logs: tuple[Path, ...] = ()
    experiment_id: str | None = None  # the search's MLflow experiment, when known (the link to its runs table)
    retried: int = 0  # trials run again (``--retry-failed``): their last attempt is counted above


@dataclass(frozen=True)
class TrialCounts:
    """The status counts of a search's trials and its best finished one.

    ``finished``, ``failed`` and ``timeout`` count the records by status; ``best_score`` is the best
    finite score of a finished trial (highest for ``mode="max"``, lowest for ``"min"``) and
    ``best_index`` its trial (the lowest index on ties); both None when no trial finished with one.
    """

    finished: int = 0
    failed: int = 0
    timeout: int = 0
    best_score: float | None = None
    best_index: int | None = None

    @property
    def unfinished(self) -> int:
        """Failed and timed-out trials."""
        return self.failed + self.timeout

    @property
    def ended(self) -> int:
        return self.finished + self.unfinished


def trial_counts(records: Iterable[TrialRecord], num_trials: int, mode: str) -> TrialCounts:
    """The :class:`TrialCounts` of the ``records`` of indices below ``num_trials`` (the summary, the
    progress line and the parent run's metrics all count with it)."""
    planned = sorted((r for r in records if r.index < num_trials), key=lambda r: r.index)
    best = next(iter(ranked_trials(planned, mode)), None)
    return TrialCounts(
        finished=sum(r.status == "finished" for r in planned),
        failed=sum(r.status == "failed" for r in planned),
        timeout=sum(r.status == "timeout" for r in planned),
        best_score=None if best is None else best.score,
        best_index=None if best is None else best.index,
    )


def counts_with(counts: TrialCounts, record: TrialRecord, best: TrialRecord | None, num_trials: int,
                mode: str) -> TrialCounts:
    """:func:`trial_counts` of some records (``counts``; ``best`` their best trial's record, None when
    ``counts`` has none) and one more ``record`` of an index not among them: the same rule in O(1), so
    that the progress line's count after each trial's end does not grow with the search."""
    if record.index >= num_trials:
        return counts
    new_best = next(iter(ranked_trials([r for r in (best, record) if r is not None], mode)), None)
    return dataclasses.replace(
        counts,
        finished=counts.finished + (record.status == "finished"),
        failed=counts.failed + (record.status == "failed"),
        timeout=counts.timeout + (record.status == "timeout"),
        best_score=None if new_best is None else new_best.score,
        best_index=None if new_best is None else new_best.index,
    )


def summarize(name: str, num_trials: int, mode: str, records, ledger: Ledger, storage_dir, parent: str | None,
              tracking_uri: str, elapsed: float) -> SearchSummary:
    """The :class:`SearchSummary` of a search's ``records`` (read by the caller, once)."""
    records = [r for r in records if r.index < num_trials]
    counts = trial_counts(records, num_trials, mode)
    return SearchSummary(
        name=name,
        storage_dir=Path(storage_dir),
        num_trials=num_trials,
        finished=counts.finished,
        failed=counts.failed,
        timeout=counts.timeout,
        best_score=counts.best_score,
        best_index=counts.best_index,
        parent_run_id=parent,
        tracking_uri=tracking_uri,
        elapsed_s=elapsed,
        failures=failure_kinds(records),
        ray_logs=ledger.ray_logs(),
        retried=sum(index < num_trials for index in ledger.superseded()),
    )
