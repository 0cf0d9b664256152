"""A race's record: the one file that says what a two-model sequential comparison decided, look by look.

A race (``showwork race A.yaml B.yaml``) runs two ordinary searches, each with its own ledger, and
decides between them at pre-planned looks (:func:`showwork.statistics.decide_at_look`). What the
race adds to the two ledgers lives here, and only here: ``{storage}/_races/{RACE}/race.json``
(:class:`RaceRecord`), written atomically (:func:`showwork.files.write_atomic`) after each look.
It holds the settings fixed before any trial (the schedule, the budgets, what the curves compare,
the bands' confidence and method, the direction, the support and the failure policy), the two
searches' names and the identities of their specs (:func:`showwork.recorded.search_identity`: what
decides which configurations are drawn) and, for a search the race adopted, how many trials it held
then, every look taken (:meth:`LookDecision.to_dict`) and the
status: ``running`` (looks remain), ``decided`` (a winner at the last look taken), ``undecided``
(the schedule ran out without one) or ``undecidable`` (the next look could not be decided, e.g. no
trial of either model finished: ``reason`` says why, and the race ends there).

The record is what the race decided, never what a reader trusts: at resume and at report every
decision is recomputed from the two ledgers (:func:`showwork.run.race.verified_race`), and a record
that disagrees with them in any field is refused.

``_races`` cannot name a search (:data:`~showwork.store.names.SEARCH_NAME_RULE`: a name starts with
a letter or a digit), so no search folder and no race folder ever share a path, and
:func:`~showwork.store.names.list_searches` never lists it.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import stat
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from showwork.errors import InputError
from showwork.files import NotAFileError, read_own_file, write_atomic
from showwork.statistics import LookDecision
from showwork.store.names import SEARCH_NAME_RULE, search_name_problem
from showwork.store.records import utc_now_iso

__all__ = [
    "RACES_FOLDER",
    "RACE_FILE",
    "RACE_STATUSES",
    "RaceRecord",
    "RaceSearch",
    "RaceSettings",
    "first_difference",
    "race_folder",
    "read_race",
    "read_race_as_written",
    "remove_race",
    "write_race",
]

RACES_FOLDER = "_races"
"""The folder of the storage directory that holds one folder per race (no search can be named so)."""
RACE_FILE = "race.json"
RACE_STATUSES = ("running", "decided", "undecided", "undecidable")
_FORMAT = 1


@dataclass(frozen=True)
class RaceSettings:
    """What a race fixes before its first trial; a resume must give the same.

    Attributes
    ----------
    looks : tuple of int
        The schedule: trials per search at each look, strictly increasing.
    budgets : tuple of float
        The budgets K the race is decided at (every one must resolve for the same model).
    decide_by : {"median", "mean"}
        Which tuning curves are compared.
    confidence : float
        The joint confidence c of each model's bands over the whole schedule.
    method : {"ld-hd", "ld-et"}
        The LD band construction.
    minimize : bool
        Lower scores are better (the specs' metric mode).
    support : (float, float)
        The score's support bounds (the specs' metric bounds; infinite where none).
    failure_policy : str
        How a failed or timed-out trial among a look's first n is scored (``worst``).
    """

    looks: tuple[int, ...]
    budgets: tuple[float, ...]
    decide_by: str
    confidence: float
    method: str
    minimize: bool
    support: tuple[float, float]
    failure_policy: str = "worst"

    def to_dict(self) -> dict[str, Any]:
        return {
            "looks": list(self.looks),
            "budgets": list(self.budgets),
            "decide_by": self.decide_by,
            "confidence": self.confidence,
            "method": self.method,
            "minimize": self.minimize,
            "support": [None if not math.isfinite(x) else x for x in self.support],
            "failure_policy": self.failure_policy,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RaceSettings:
        low, high = data["support"]
        return cls(
            looks=tuple(int(n) for n in data["looks"]),
            budgets=tuple(float(k) for k in data["budgets"]),
            decide_by=str(data["decide_by"]),
            confidence=float(data["confidence"]),
            method=str(data["method"]),
            minimize=bool(data["minimize"]),
            support=(-math.inf if low is None else float(low), math.inf if high is None else float(high)),
            failure_policy=str(data["failure_policy"]),
        )


@dataclass(frozen=True)
class RaceSearch:
    """One of the race's two searches: its name (its ledger ``{storage}/{name}/``) and its spec's identity.

    ``adopted_trials``: None where the race began the search; else the search existed when the race
    adopted it (``showwork race --adopt``), holding that many trial records, which count toward the looks.
    """

    name: str
    identity: dict[str, Any]
    spec_path: str | None = None
    adopted_trials: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "identity": self.identity, "spec_path": self.spec_path,
                "adopted_trials": self.adopted_trials}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RaceSearch:
        if not isinstance(data["identity"], dict):
            raise TypeError("identity is not an object")
        adopted = data.get("adopted_trials")  # absent from the records of races before adoption
        if adopted is not None and (isinstance(adopted, bool) or not isinstance(adopted, int) or adopted < 0):
            raise TypeError(f"adopted_trials is not a number of trials (got {adopted!r})")
        return cls(str(data["name"]), dict(data["identity"]), None if data.get("spec_path") is None else str(data["spec_path"]),
                   adopted)


@dataclass(frozen=True)
class RaceRecord:
    """A race as ``race.json`` holds it (see the module docstring).

    Attributes
    ----------
    name : str
        The race's name (its folder ``{storage}/_races/{name}/``).
    settings : RaceSettings
    searches : (RaceSearch, RaceSearch)
        Model A's search, then model B's.
    looks : tuple of LookDecision
        Every look taken, in order.
    status : {"running", "decided", "undecided", "undecidable"}
    reason : str or None
        Why an ``undecidable`` race could not decide its next look (None for every other status).
    created_at, updated_at : str
        ISO-8601 UTC times of the race's start and of the last write.
    """

    name: str
    settings: RaceSettings
    searches: tuple[RaceSearch, RaceSearch]
    looks: tuple[LookDecision, ...] = ()
    status: str = "running"
    reason: str | None = None
    created_at: str = field(default_factory=utc_now_iso)
    updated_at: str = field(default_factory=utc_now_iso)

    @property
    def names(self) -> tuple[str, str]:
        return self.searches[0].name, self.searches[1].name

    @property
    def winner(self) -> str | None:
        return self.looks[-1].winner if self.looks else None

    @property
    def stopped_at(self) -> int | None:
        """Trials per search at the look the race stopped at (None while it runs)."""
        return self.looks[-1].look if self.looks and self.status != "running" else None

    @property
    def next_look(self) -> int | None:
        """The next look to take, or None when the race has ended."""
        if self.status != "running":
            return None
        taken = len(self.looks)
        return self.settings.looks[taken] if taken < len(self.settings.looks) else None

    def saved_trials(self) -> int:
        """Trials per search the race did not run against the last look (0 until it stops early)."""
        if self.status == "undecidable":  # its trials ran up to the look it could not decide
            return self.settings.looks[-1] - self.settings.looks[len(self.looks)]
        stopped = self.stopped_at
        return 0 if stopped is None else self.settings.looks[-1] - stopped

    def with_look(self, decision: LookDecision) -> RaceRecord:
        """This race after ``decision``: decided on a winner, undecided after the last look, else still running."""
        looks = (*self.looks, decision)
        status = "decided" if decision.decided else ("undecided" if len(looks) == len(self.settings.looks) else "running")
        return replace(self, looks=looks, status=status, updated_at=utc_now_iso())

    def ended_undecidable(self, reason: str) -> RaceRecord:
        """This race ended at its next look, which could not be decided, for ``reason``."""
        return replace(self, status="undecidable", reason=reason, updated_at=utc_now_iso())

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": _FORMAT,
            "race": self.name,
            "status": self.status,
            "reason": self.reason,
            "winner": self.winner,
            "stopped_at": self.stopped_at,
            "settings": self.settings.to_dict(),
            "searches": [s.to_dict() for s in self.searches],
            "looks": [look.to_dict() for look in self.looks],
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RaceRecord:
        a, b = (RaceSearch.from_dict(s) for s in data["searches"])
        record = cls(
            name=str(data["race"]),
            settings=RaceSettings.from_dict(data["settings"]),
            searches=(a, b),
            looks=tuple(LookDecision.from_dict(look) for look in data["looks"]),
            status=str(data["status"]),
            reason=None if data.get("reason") is None else str(data["reason"]),
            created_at=str(data["created_at"]),
            updated_at=str(data["updated_at"]),
        )
        if record.status not in RACE_STATUSES:
            raise ValueError(f"status {record.status!r} is not one of {', '.join(RACE_STATUSES)}")
        if [look.look for look in record.looks] != list(record.settings.looks[:len(record.looks)]):
            raise ValueError("its looks are not the schedule's first looks")
        if record.status == "undecidable" and (record.reason is None or len(record.looks) >= len(record.settings.looks)):
            raise ValueError("an undecidable race names the look it could not decide and why (a look left, a reason)")
        return record


def race_folder(storage_dir: str | os.PathLike, name: str) -> Path:
    """``{storage_dir}/_races/{name}``; the name is checked as a search's is (it names a folder).

    Raises
    ------
    InputError
        ``name`` cannot name a race.
    """
    if search_name_problem(name) is not None:
        raise InputError(f"race name {name!r}: must be {SEARCH_NAME_RULE}")
    return Path(storage_dir) / RACES_FOLDER / name


def _check_folders(storage_dir: str | os.PathLike, name: str) -> Path:
    """The race's folder, after checking that neither it nor ``_races`` is anything but a folder (or absent)."""
    folder = race_folder(storage_dir, name)
    for path in (folder.parent, folder):
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            break
        if not stat.S_ISDIR(mode):
            kind = "a symbolic link" if stat.S_ISLNK(mode) else "not a folder"
            raise InputError(f"{path}: is {kind}, where race {name!r} keeps its record; showwork follows no link and"
                             " writes nothing there: move it away, then run the command again")
    return folder


def read_race(storage_dir: str | os.PathLike, name: str) -> RaceRecord | None:
    """The race ``name`` of ``storage_dir``, or None when it has no record (raises as :func:`read_race_as_written`)."""
    found = read_race_as_written(storage_dir, name)
    return None if found is None else found[0]


def read_race_as_written(storage_dir: str | os.PathLike, name: str) -> tuple[RaceRecord, dict[str, Any], Path] | None:
    """The race ``name`` of ``storage_dir``, the JSON object its file holds (fields the record derives,
    such as ``winner``, as written) and the file's path; None when it has no record.

    Raises
    ------
    InputError
        The race's folder (or ``_races``) is a file or a link; ``race.json`` is not a regular file,
        or not a race's record (damaged or edited by hand: it is left in place).
    """
    path = _check_folders(storage_dir, name) / RACE_FILE
    try:
        text = read_own_file(path).decode("utf-8")
    except FileNotFoundError:
        return None
    except NotAFileError as error:
        raise InputError(f"{error}; move it away, then run the command again") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not a race's record (not UTF-8 text); it is left as it is") from None
    try:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise TypeError("not a JSON object")
        record = RaceRecord.from_dict(data)
    except KeyError as error:
        raise InputError(f"{path}: not a race's record (no field {error.args[0]!r}); it is left as it is: repair it or"
                         " move it away") from None
    except (ValueError, TypeError) as error:
        raise InputError(f"{path}: not a race's record ({error}); it is left as it is: repair it or move it away") from None
    if record.name != name:
        raise InputError(f"{path}: holds race {record.name!r}, not {name!r}; it is left as it is")
    return record, data, path


def write_race(storage_dir: str | os.PathLike, record: RaceRecord) -> Path:
    """Write ``record`` as its race's ``race.json``, atomically (readers see the old record or the new one)."""
    folder = _check_folders(storage_dir, record.name)
    folder.mkdir(parents=True, exist_ok=True)
    text = json.dumps(record.to_dict(), indent=2, sort_keys=False, allow_nan=False) + "\n"
    return write_atomic(folder / RACE_FILE, text)


def remove_race(storage_dir: str | os.PathLike, name: str) -> None:
    """Remove the record of a race refused before any trial, and its folder if that leaves it empty."""
    folder = _check_folders(storage_dir, name)
    with contextlib.suppress(FileNotFoundError):
        (folder / RACE_FILE).unlink()
    with contextlib.suppress(OSError):  # not empty (something else is there): left as it is
        folder.rmdir()


def first_difference(recorded: Any, given: Any, path: str = "") -> str | None:
    """The dotted path of the first field where two JSON-like values differ (``""`` at the top), or None.

    >>> first_difference({"a": {"b": 1, "c": 2}}, {"a": {"b": 1, "c": 3}})
    'a.c'
    """
    if isinstance(recorded, dict) and isinstance(given, dict):
        for key in [*recorded, *(k for k in given if k not in recorded)]:
            found = first_difference(recorded.get(key), given.get(key), f"{path}.{key}" if path else str(key))
            if found is not None:
                return found
        return None
    if isinstance(recorded, list) and isinstance(given, list) and len(recorded) == len(given):
        for i, (old, new) in enumerate(zip(recorded, given)):
            found = first_difference(old, new, f"{path}[{i}]")
            if found is not None:
                return found
        return None
    return None if type(recorded) is type(given) and recorded == given else path
