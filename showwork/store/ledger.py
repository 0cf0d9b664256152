"""The ledger of a search: one durable JSON file per finished trial, the source of truth.

Every Ray worker writes the record of its own trial when the trial ends (finished, failed or
timed out); the driver reads the ledger to resume a search, exports it, and projects it into
MLflow (:mod:`showwork.tracking.tracker`). Because each record is written atomically and only once, the
ledger survives a crashed driver, a crashed worker and an MLflow outage, and MLflow can be
rebuilt from it at any time.

Layout under ``storage_dir``::

    {name}/search.json            metadata of the search (spec, seed, MLflow ids, git, ...)
    {name}/driver.lock            held by the one driver running the search (``Ledger.lock``)
    {name}/trials/000007.json     the record of trial 7
    {name}/trials/corrupt/        unreadable records, moved aside (never deleted)
    {name}/trials/superseded/000007.1.json   trial 7's first record, superseded by a retry (``Ledger.supersede``)
    {name}/attempts/000007.2      a worker began attempt 2 at trial 7 (``Ledger.begin_attempt``)
    {name}/ray/                   Ray Tune's state and ``run-<time>.log``, its messages (``Ledger.ray_dir``)

Nothing in the folder is opened through a link, nor read unless it is a regular file (the opens
are :mod:`showwork.files`'s). The records are the files named as :meth:`Ledger.path` names them, of
the indices below ``search.json``'s ``num_trials``; a running search's ledger (``search_id``) never
writes into a folder that no longer holds that search (:meth:`Ledger.moved`).

Retried trials (``showwork resume NAME --retry-failed``)
-------------------------------------------------------
A trial has one *counted* record, ``trials/000007.json``: the one every reader sees (results, best,
report, statistics, races, MLflow replay). Retrying a failed or timed-out trial first moves its
counted record, unchanged, to ``trials/superseded/000007.N.json`` (:meth:`Ledger.supersede`; N = 1
for the trial's first record, 2 for its second, ...), then the trial runs again and its worker writes
a new counted record: the last attempt counts, every earlier one is kept (:meth:`Ledger.superseded`).
No record is ever overwritten: the move links the record at its new name before unlinking the old
one, so a crash between the two leaves both (the next :meth:`Ledger.supersede` finds the copy and
finishes), and a crash after them leaves the trial without a counted record, which a resume runs.

Timestamps, in the records and the lock, are ISO-8601 in UTC with an offset
(:func:`~showwork.store.records.utc_now_iso`); those in file names are :func:`utc_file_stamp`.

The records (:class:`~showwork.store.records.TrialRecord`, :mod:`showwork.store.records`) are
:class:`Ledger`'s; the rest of the folder (``search.json``, the lock, the attempts, ``ray/``) is its
base's, :class:`~showwork.store.folder.SearchFolder`.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import os
import re
import warnings
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

from showwork import faults
from showwork.errors import InputError
from showwork.files import NotAFileError, fsync_dir, own_folder, read_own_file, write_temp_file
from showwork.store.errors import InvalidRecordError, LedgerConflictError, LedgerWriteError
from showwork.store.folder import SearchFolder, refused_if_foreign
from showwork.store.records import TrialRecord
from showwork.values import is_integer

__all__ = ["EXPORT_COLUMNS", "Ledger", "missing_indices", "utc_file_stamp"]

EXPORT_COLUMNS = (
    "trial", "status", "score", "test_score", "runtime_s", "setup_s", "gpu_seconds", "seed", "node_id",
    "hostname", "attempts", "error", "mlflow_run_id",
)
"""The fixed columns of :meth:`Ledger.export_rows`, before one ``param.<name>`` per hyperparameter."""

_RECORD_NAME = re.compile(r"[0-9]{6,}\.json")  # fullmatch: ASCII digits only (\d takes any script's), no newline after
_LOOKS_LIKE_A_RECORD = re.compile(r"\d+\.json")  # digits of any script: a name someone may take for a record's
_NAMES_SHOWN = 5  # of the files left out of a ledger, the warning names this many
_SUPERSEDED_NAME = re.compile(r"([0-9]{6,})\.([1-9][0-9]*)\.json")  # trials/superseded/000007.1.json: trial 7, its first record


def utc_file_stamp() -> str:
    """Return the current UTC time for a file name: ``20261124T080000.123456Z`` (sorts as the time)."""
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")


def missing_indices(records: Iterable[TrialRecord], num_trials: int) -> list[int]:
    """The indices in ``0 .. num_trials - 1`` that no record of ``records`` has, ascending."""
    done = {record.index for record in records}
    return [index for index in range(num_trials) if index not in done]


def _record_index(name: str) -> int | None:
    """The trial index of a record's file name as :meth:`Ledger.path` writes it (``000007.json``: six ASCII
    digits, more only from index 1,000,000, never an extra leading zero); None for any other name."""
    if not _RECORD_NAME.fullmatch(name):
        return None
    index = int(name.removesuffix(".json"))
    return index if name == f"{index:06d}.json" else None


class Ledger(SearchFolder):
    """The durable record of one search: ``{storage_dir}/{name}/``.

    Workers call :meth:`write` (safe from any number of processes and nodes sharing the
    directory); the driver reads, exports, holds :meth:`lock` while it runs the search, and keeps
    metadata with :meth:`update_meta`. Nothing here deletes data: an unreadable record is moved
    to ``trials/corrupt/`` and the trial is treated as missing, so it runs again on resume.

    The folder holds (see the module docstring): ``search.json`` (:meth:`read_meta`,
    :meth:`update_meta`), ``driver.lock`` (:meth:`lock`), ``trials/`` (:meth:`write`,
    :meth:`read`, :meth:`records`; a retried trial's earlier records: :meth:`supersede`,
    :meth:`superseded`), ``attempts/`` (:meth:`begin_attempt`,
    :meth:`attempts_started`) and ``ray/``, Ray Tune's folder (:attr:`ray_dir`,
    :meth:`ray_logs`). Nothing else writes there.

    Parameters
    ----------
    storage_dir : Path
        The directory holding all searches; created on the first write.
    name : str
        The search's name: 1 to 200 letters, digits, ``.``, ``_`` or ``-``.
    search_id : str, optional
        The ``search_id`` of the running search (``search.json``), given by its driver and workers once the
        search is recorded. Then every write first checks that the folder still holds that search
        (:meth:`moved`), never creates the search's folder, and raises :class:`LedgerMovedError` when it is
        gone or replaced: records are never written into a new folder at the old path, splitting the ledger.
    """

    def __init__(self, storage_dir: str | os.PathLike, name: str, search_id: str | None = None) -> None:
        super().__init__(storage_dir, name, search_id)
        self._told_left_out: set[str] = set()  # the names _record_paths has warned about

    def __repr__(self) -> str:
        return f"Ledger({str(self.storage_dir)!r}, {self.name!r})"

    def path(self, index: int) -> Path:
        """Return the path of the record of trial ``index``."""
        if not is_integer(index) or index < 0:
            raise InputError(f"{self.root}: a trial index must be an integer >= 0, not {index!r}")
        return self.trials_dir / f"{index:06d}.json"

    # -- records

    def write(self, record: TrialRecord, replace: bool = False) -> bool:
        """Write the record of one trial atomically and durably.

        The record goes to a temp file in the trials directory, is flushed and fsynced, then
        linked (or, with ``replace``, renamed) into place, and the directory is fsynced. A reader
        sees either no record or the whole record, never a partial one.

        Parameters
        ----------
        record : TrialRecord
        replace : bool, default False
            Allow overwriting an existing, different record of the same index. The driver uses it
            only to add ``mlflow_run_id``; workers never do.

        Returns
        -------
        bool
            True if the file was written, False if an identical record was already there.

        Raises
        ------
        LedgerConflictError
            If a different record of the same index exists and ``replace`` is False.
        LedgerWriteError
            The folder refused the write; :class:`LedgerMovedError` when the folder no longer holds the
            search (:meth:`moved`).
        """
        if not isinstance(record, TrialRecord):
            raise TypeError(f"Ledger.write expects a TrialRecord, not {type(record).__name__}")
        record = TrialRecord.validated(dict(record), f"trial record {record.index!r}")  # again: fields are assignable
        path = self.path(record.index)
        text = record.to_json()
        self._check_not_moved()
        with LedgerWriteError.raised_for(self.trials_dir), refused_if_foreign():
            own_folder(self.trials_dir, parents=self.search_id is None)  # a running search's folder is never made anew
        existing = self._read_path(path)
        if existing is not None and existing.to_dict() == record.to_dict():
            return False
        if existing is not None and not replace:
            raise self._conflict(path, existing, record)
        with LedgerWriteError.raised_for(self.trials_dir):
            temp = write_temp_file(self.trials_dir, path.name, text)
            try:
                faults.point("driver-record-write" if replace else "worker-record-write")
                if replace:
                    os.replace(temp, path)
                    written = True
                else:
                    written = self._link_new(temp, path, record)
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(temp)
        if written:
            fsync_dir(self.trials_dir)
        return written

    def _link_new(self, temp: Path, path: Path, record: TrialRecord) -> bool:
        """Put ``temp`` at ``path`` only if no record is there (``link`` fails if one exists).

        Returns False if an identical record got there first (another writer of the same trial).
        """
        try:
            os.link(temp, path)
            return True
        except FileExistsError:
            pass
        except OSError as error:  # a file system without hard links: check, then rename
            if error.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
                raise
            if self._read_path(path) is None:
                os.replace(temp, path)
                return True
        # Another process wrote this index between our check and our link.
        existing = self._read_path(path)
        if existing is None:
            os.replace(temp, path)
            return True
        if existing.to_dict() != record.to_dict():
            raise self._conflict(path, existing, record)
        return False

    def set_mlflow_run_id(self, index: int, run_id: str) -> TrialRecord:
        """Store the MLflow child run id in the record of trial ``index``; return the new record.

        The only change the driver makes to a written record (``write(..., replace=True)``).

        Raises
        ------
        InputError
            If trial ``index`` has no (valid) record.
        LedgerMovedError
            The folder no longer holds the search (:meth:`moved`).
        """
        self._check_not_moved()
        record = self.read(index)
        if record is None:
            self._check_not_moved()  # moved meanwhile: that, not a missing record, is the news
            raise InputError(f"{self.path(index)}: no record of trial {index} to add the MLflow run id to")
        updated = record.model_copy(update={"mlflow_run_id": run_id})
        self.write(updated, replace=True)
        return updated

    @staticmethod
    def _conflict(path: Path, existing: TrialRecord, record: TrialRecord) -> LedgerConflictError:
        old, new = existing.to_dict(), record.to_dict()
        differ = [name for name in new if old.get(name) != new.get(name)]
        return LedgerConflictError(
            f"{path}: a different record of trial {record.index} is already in the ledger"
            f" (fields that differ: {', '.join(differ)}); records are written once"
        )

    def read(self, index: int) -> TrialRecord | None:
        """Return the record of trial ``index``, or None if it has none or it was unreadable.

        An unreadable or invalid file is moved to ``trials/corrupt/`` with a warning.
        """
        return self._read_path(self.path(index))

    def _read_path(self, path: Path) -> TrialRecord | None:
        try:
            raw = read_own_file(path)  # never through a link, never from a FIFO (which would block)
        except FileNotFoundError:
            return None
        except NotAFileError as error:
            self._move_aside(path, f"{error} (a record must be a file of its own)")
            return None
        except OSError as error:
            warnings.warn(f"{path}: cannot be read ({error.strerror}); trial treated as missing", stacklevel=3)
            return None
        try:
            record = TrialRecord.from_json(raw, source=str(path))
            expected = _record_index(path.name)
            if record.index != expected:
                raise InvalidRecordError(f"{path}: holds trial {record.index}, but its name says trial {expected}")
        except InvalidRecordError as error:
            self._move_aside(path, str(error))
            return None
        return record

    def _move_aside(self, path: Path, reason: str) -> None:
        with refused_if_foreign():
            own_folder(self.corrupt_dir)
        stamp = utc_file_stamp()
        target = self.corrupt_dir / f"{path.name}.{stamp}.{os.getpid()}"
        try:
            os.replace(path, target)
        except FileNotFoundError:  # another reader moved it first
            return
        fsync_dir(self.corrupt_dir)
        fsync_dir(path.parent)
        warnings.warn(
            f"{reason}; moved to {target} and the trial is treated as missing (it will run again)",
            stacklevel=4,
        )

    def owned_trials(self) -> int | None:
        """How many trials the search owns (indices ``0 .. n - 1``): its ``search.json``'s ``num_trials``, None when unknown."""
        try:
            count = self.read_meta().get("num_trials")
        except InputError:  # a damaged search.json: the commands that need it say so themselves
            return None
        return count if is_integer(count) and count >= 0 else None

    def _record_paths(self) -> list[tuple[int, Path]]:
        """The record files of the trials the search owns, by index: only the names the ledger writes
        (:meth:`path`), below :meth:`owned_trials`; the other names that look like records are left out,
        with one warning (a copy ``0000003.json``, other scripts' digits, a trial beyond the search's)."""
        try:
            entries = list(os.scandir(self.trials_dir))
        except FileNotFoundError:
            return []
        owned = self.owned_trials()
        found, left_out = [], []
        for entry in entries:
            index = _record_index(entry.name)
            if index is not None and (owned is None or index < owned):
                found.append((index, Path(entry.path)))
            elif index is not None or _LOOKS_LIKE_A_RECORD.fullmatch(entry.name):
                left_out.append(entry.name)
        self._tell_left_out(sorted(left_out), owned)
        return sorted(found)

    def _tell_left_out(self, names: list[str], owned: int | None) -> None:
        """One warning naming the files :meth:`_record_paths` left out, once per file for this ledger object."""
        new = [name for name in names if name not in self._told_left_out]
        if not new:
            return
        self._told_left_out.update(new)
        shown = ", ".join(new[:_NAMES_SHOWN]) + (f" and {len(new) - _NAMES_SHOWN} more" if len(new) > _NAMES_SHOWN else "")
        plan = f"000000.json to {owned - 1:06d}.json for its {owned} trials" if owned else "000000.json, 000001.json, ..."
        warnings.warn(
            f"{self.trials_dir}: {len(new)} file{'s' if len(new) > 1 else ''} left out, not record{'s' if len(new) > 1 else ''}"
            f" of this search: {shown} (its records are named by trial index in six ASCII digits, {plan})",
            stacklevel=4,
        )

    def records(self) -> list[TrialRecord]:
        """Return every valid record of the trials the search owns, sorted by index (corrupt files are moved
        aside, with a warning; files that are not its records are left out, with one: :meth:`_record_paths`)."""
        out = []
        for _, path in self._record_paths():
            record = self._read_path(path)
            if record is not None:
                out.append(record)
        return out

    def completed_indices(self) -> set[int]:
        """Return the indices of trials with a valid record (finished, failed or timed out)."""
        return {record.index for record in self.records()}

    def missing(self, num_trials: int) -> list[int]:
        """Return the indices in ``0 .. num_trials - 1`` without a valid record, ascending."""
        if not is_integer(num_trials) or num_trials < 0:
            raise InputError(f"{self.root}: num_trials must be an integer >= 0, not {num_trials!r}")
        return missing_indices(self.records(), num_trials)

    # -- retries: earlier records of a trial, kept beside the counted one

    @property
    def superseded_dir(self) -> Path:
        """``trials/superseded/``: the records that retries superseded (see the module docstring)."""
        return self.trials_dir / "superseded"

    def _superseded_paths(self, index: int | None = None) -> list[tuple[int, int, Path]]:
        """``(index, position, path)`` of the superseded records (of trial ``index``), in order; none through a
        link put in the folder's place (:meth:`supersede` refuses it, naming it)."""
        if self.superseded_dir.is_symlink():
            return []
        try:
            entries = list(os.scandir(self.superseded_dir))
        except (FileNotFoundError, NotADirectoryError):
            return []
        found = []
        for entry in entries:
            match = _SUPERSEDED_NAME.fullmatch(entry.name)
            if match is None or match.group(1) != f"{int(match.group(1)):06d}":
                continue
            trial = int(match.group(1))
            if index is None or trial == index:
                found.append((trial, int(match.group(2)), Path(entry.path)))
        return sorted(found)

    def supersede(self, index: int) -> TrialRecord | None:
        """Move the counted record of trial ``index``, unchanged, to ``trials/superseded/{index:06d}.{N}.json``
        (N: its position among the trial's records, from 1), so that the trial can run again; return it.

        Nothing is overwritten: the record is linked at its new name, then unlinked from the old one. A
        record already there with the same content (a crash between the two steps) is not copied again.
        None when the trial has no counted record (nothing to move).

        Raises
        ------
        LedgerWriteError
            The folder refused the move; :class:`LedgerMovedError` when it no longer holds the search.
        """
        self._check_not_moved()
        path = self.path(index)
        record = self._read_path(path)
        if record is None:
            return None
        with LedgerWriteError.raised_for(self.superseded_dir), refused_if_foreign():
            own_folder(self.superseded_dir)
        position, copied = self._position(record)
        with LedgerWriteError.raised_for(self.superseded_dir):
            if not copied:
                os.link(path, self.superseded_dir / f"{index:06d}.{position}.json")  # fails, never overwrites, if there
                fsync_dir(self.superseded_dir)
            os.unlink(path)
            fsync_dir(self.trials_dir)
        return record

    def position(self, index: int) -> int | None:
        """The position of trial ``index``'s counted record among the trial's records, from 1 (its attempt
        number: 1 when the trial was never retried); None when it has no counted record."""
        record = self.read(index)
        return None if record is None else self._position(record)[0]

    def _position(self, record: TrialRecord) -> tuple[int, bool]:
        """``(position, already copied)``: the position of the counted ``record`` among its trial's records, and
        whether ``trials/superseded/`` holds a copy already (a :meth:`supersede` cut short after its link)."""
        earlier = self._superseded_paths(record.index)
        for _, position, path in earlier:
            if _same(self._read_superseded(path), record):
                return position, True
        return max((n for _, n, _ in earlier), default=0) + 1, False

    def _read_superseded(self, path: Path) -> TrialRecord | None:
        try:
            return TrialRecord.from_json(read_own_file(path), source=str(path))
        except (OSError, InvalidRecordError) as error:
            warnings.warn(f"{path}: a superseded record that cannot be read ({error}); left as it is", stacklevel=3)
            return None

    def superseded(self) -> dict[int, list[TrialRecord]]:
        """The earlier records of the retried trials the search owns: trial index -> its superseded records, oldest
        first (the counted record, :meth:`read`, is the last attempt). Empty when no trial was retried."""
        owned = self.owned_trials()
        out: dict[int, list[TrialRecord]] = {}
        for index, _, path in self._superseded_paths():
            if owned is not None and index >= owned:
                continue
            record = self._read_superseded(path)
            if record is not None:
                out.setdefault(index, []).append(record)
        return out

    # -- export

    def export_rows(self, records: list[TrialRecord] | None = None) -> list[dict[str, Any]]:
        """Return one row per trial (by index): :data:`EXPORT_COLUMNS`, then ``param.<name>`` columns.

        ``records`` default to :meth:`records` (``showwork results`` passes them checked:
        :func:`showwork.recorded.recorded_records`). Hyperparameter columns are the union over all
        records, in order of first appearance (trials by index, parameters in record order). Missing
        values are None; errors are flattened to one line (lines joined with `` | ``).
        """
        records = self.records() if records is None else sorted(records, key=lambda r: r.index)
        names: dict[str, None] = {}
        for record in records:
            for name in record.params:
                names.setdefault(name, None)
        rows = []
        for record in records:
            row: dict[str, Any] = {
                "trial": record.index,
                "status": record.status,
                "score": record.score,
                "test_score": record.test_score,
                "runtime_s": record.runtime_s,
                "setup_s": record.setup_s,
                "gpu_seconds": record.gpu_seconds,
                "seed": record.seed,
                "node_id": record.node_id,
                "hostname": record.hostname,
                "attempts": record.attempts,
                "error": _one_line(record.error),
                "mlflow_run_id": record.mlflow_run_id,
            }
            for name in names:
                row[f"param.{name}"] = record.params.get(name)
            rows.append(row)
        return rows

    def export_csv(self, stream: IO[str], records: list[TrialRecord] | None = None) -> int:
        """Write :meth:`export_rows` (of ``records``) as CSV (header row first) to a text stream; return the row count.

        Missing values are empty cells; non-finite scores are written ``nan``, ``inf``, ``-inf``
        (which :func:`showwork.results_table.read_results_table` reads back, ``nan`` as missing).
        """
        rows = self.export_rows(records)
        columns = list(EXPORT_COLUMNS)
        for row in rows:
            for key in row:
                if key not in EXPORT_COLUMNS and key not in columns:
                    columns.append(key)
        writer = csv.writer(stream, lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow(["" if row.get(column) is None else row[column] for column in columns])
        return len(rows)


def _one_line(text: str | None) -> str | None:
    if text is None:
        return None
    return " | ".join(line.strip() for line in text.splitlines() if line.strip())


def _same(a: TrialRecord | None, b: TrialRecord) -> bool:
    """Whether two records hold the same data (compared as written: NaN equals NaN)."""
    return a is not None and a.to_dict() == b.to_dict()
