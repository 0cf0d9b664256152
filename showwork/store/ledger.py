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
    {name}/attempts/000007.2      a worker began attempt 2 at trial 7 (``Ledger.begin_attempt``)
    {name}/ray/                   Ray Tune's state and ``run-<time>.log``, its messages (``Ledger.ray_dir``)

Nothing in the folder is opened through a link, nor read unless it is a regular file (the opens
are :mod:`showwork.files`'s). The records are the files named as :meth:`Ledger.path` names them, of
the indices below ``search.json``'s ``num_trials``; a running search's ledger (``search_id``) never
writes into a folder that no longer holds that search (:meth:`Ledger.moved`).

Timestamps, in the records and the lock, are ISO-8601 in UTC with an offset (:func:`utc_now_iso`);
those in file names are :func:`utc_file_stamp`.

Non-finite floats
-----------------
JSON has no NaN or infinity. A non-finite float is written as one of the *strings* ``"NaN"``,
``"Infinity"`` or ``"-Infinity"`` (the spellings of JavaScript and of Python's ``float()``), and
read back as the float, in the numeric fields (``score``, ``test_score``, ``runtime_s``,
``setup_s``, ``gpu_seconds``) and anywhere inside ``metrics`` and ``history``. Hyperparameters (``params``)
never hold a non-finite float — a sampled hyperparameter is always finite, so one that is not is
refused as a bug — which keeps every string parameter, even ``"NaN"``, exactly as written.
The files are strict JSON (``allow_nan=False``) that any reader (``jq``, JavaScript) accepts.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import fcntl
import json
import math
import os
import re
import socket
import stat
import warnings
from collections.abc import Iterable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Annotated, Any, Literal, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    ValidationError,
    ValidationInfo,
    model_validator,
)

from showwork import faults
from showwork.constants import CUDA_OUT_OF_MEMORY, CUDA_OUT_OF_MEMORY_SIGNS, FAMILY_IMPORT_TIMEOUT, TRIAL_STATUSES
from showwork.errors import InputError, UnavailableError
from showwork.files import (
    NotAFileError,
    create_own_file,
    fsync_dir,
    open_own_file,
    own_folder,
    read_own_file,
    write_atomic,
    write_temp_file,
)
from showwork.values import is_integer

__all__ = [
    "EXPORT_COLUMNS",
    "SEARCH_NAME_RULE",
    "STATUSES",
    "InvalidRecordError",
    "Ledger",
    "LedgerConflictError",
    "LedgerWriteError",
    "LedgerLockedError",
    "LedgerMovedError",
    "TrialRecord",
    "failure_kind",
    "list_searches",
    "missing_indices",
    "search_name_problem",
    "utc_file_stamp",
    "utc_now_iso",
]

STATUSES = TRIAL_STATUSES

EXPORT_COLUMNS = (
    "trial", "status", "score", "test_score", "runtime_s", "setup_s", "gpu_seconds", "seed", "node_id",
    "hostname", "attempts", "error", "mlflow_run_id",
)
"""The fixed columns of :meth:`Ledger.export_rows`, before one ``param.<name>`` per hyperparameter."""

_NONFINITE_TO_TEXT = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}
_TEXT_TO_NONFINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
_RECORD_NAME = re.compile(r"[0-9]{6,}\.json")  # fullmatch: ASCII digits only (\d takes any script's), no newline after
_LOOKS_LIKE_A_RECORD = re.compile(r"\d+\.json")  # digits of any script: a name someone may take for a record's
_NAMES_SHOWN = 5  # of the files left out of a ledger, the warning names this many
_SEARCH_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")  # used with fullmatch: no trailing newline
SEARCH_NAME_RULE = "1 to 200 letters, digits, '.', '_' or '-', starting with a letter or digit"
"""What a search name may be: it names a folder under the storage directory (so never ``.``, ``..``,
a hidden ``.name`` or an option-like ``-rf``) and the MLflow experiment. :func:`search_name_problem`
applies it; the search-space file, ``--name`` and the ledger all use that one check."""


class InvalidRecordError(InputError):
    """A trial record that does not validate; the message names the file (or source) and field."""


class LedgerConflictError(InputError):
    """A write that would overwrite a *different* record of the same trial index."""


class LedgerLockedError(UnavailableError):
    """Another driver holds the lock of this search; the message names its pid and host.

    Not bad input (exit 1, not 2): the command is right, the search is busy; it succeeds once
    that driver ends (or, if it was killed, once its lock is found stale)."""


class LedgerWriteError(UnavailableError):
    """The ledger's folder refused a write (a full disk, a folder that became read-only): an outage, not bad input.

    The message names the folder and the error: ``cannot write to .../trials: [Errno 28] No space left on device``.
    """

    def __init__(self, folder: Path, error: OSError) -> None:
        super().__init__(f"cannot write to {folder}: [Errno {error.errno}] {error.strerror or error}")
        self.folder = folder
        self.errno = error.errno

    @classmethod
    @contextlib.contextmanager
    def raised_for(cls, folder: Path) -> Iterator[None]:
        """Within the block, an ``OSError`` becomes a :class:`LedgerWriteError` naming ``folder``."""
        try:
            yield
        except OSError as error:
            raise cls(folder, error) from error


class LedgerMovedError(LedgerWriteError):
    """The search's folder is no longer the one the search started in: it was moved (renamed), deleted
    or replaced while the search ran (its ``search.json`` is gone, or another search's). An outage (exit 1):
    the records are wherever the folder went, and the search continues once it is put back."""

    def __init__(self, root: Path, found: str) -> None:
        UnavailableError.__init__(self, f"{root}: the search's folder was moved, deleted or replaced while the search"
                                        f" ran ({found})")
        self.folder = root
        self.errno = None


def utc_now_iso() -> str:
    """Return the current time as an ISO-8601 UTC string with microseconds (``...+00:00``).

    The one format of showwork's timestamps (records, the lock, a trial's start sent to the driver)."""
    return datetime.now(timezone.utc).isoformat()


def utc_file_stamp() -> str:
    """Return the current UTC time for a file name: ``20261124T080000.123456Z`` (sorts as the time)."""
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")


# ---------------------------------------------------------------- non-finite float encoding


def _encode(value: Any) -> Any:
    """Replace non-finite floats anywhere in a JSON-like value by their string spellings."""
    if isinstance(value, float) and not math.isfinite(value):
        return _NONFINITE_TO_TEXT[repr(value)]
    if isinstance(value, dict):
        return {key: _encode(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_encode(item) for item in value]
    return value


def _decode(value: Any) -> Any:
    """Inverse of :func:`_encode`: the strings ``NaN``, ``Infinity``, ``-Infinity`` become floats."""
    if isinstance(value, str) and value in _TEXT_TO_NONFINITE:
        return _TEXT_TO_NONFINITE[value]
    if isinstance(value, dict):
        return {key: _decode(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_decode(item) for item in value]
    return value


class _NotJsonError(ValueError):
    """A value JSON cannot hold; the message names where it is (``metrics.nested.obj``)."""


class _FieldProblem(ValueError):
    """What is wrong with a record's field, worded to follow ``field 'name' ``."""


def _to_plain(value: Any, where: str) -> Any:
    """Convert numpy scalars and tuples to plain JSON types; refuse (:class:`_NotJsonError`) anything JSON cannot hold."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise _NotJsonError(f"{where} has a key {key!r} that is not a string")
            out[key] = _to_plain(item, f"{where}.{key}")
        return out
    if isinstance(value, (list, tuple)):
        return [_to_plain(item, f"{where}[{i}]") for i, item in enumerate(value)]
    item = getattr(value, "item", None)  # numpy scalars (np.float32(0.5), np.int64(3), np.bool_)
    if callable(item) and getattr(value, "shape", None) == ():
        return _to_plain(item(), where)
    raise _NotJsonError(f"{where} holds {type(value).__name__} {str(value)[:60]!r}, which JSON cannot store")


# ---------------------------------------------------------------- the record's field types
#
# Each type states what its field may hold; pydantic checks it (strictly: no text for a number, no
# bool for an integer) and _record_problem words any failure as "field 'name' must be ..., not ...".


def _plain(value: Any, info: ValidationInfo) -> Any:
    """Numpy scalars and tuples as plain JSON values, before the type check (``np.int64(7)`` is the integer 7)."""
    return _to_plain(value, info.field_name or "value")


def _finite_nonnegative(value: float) -> float:
    if not (math.isfinite(value) and value >= 0):
        raise _FieldProblem(f"must be a finite number >= 0, not {value!r}")
    return value


def _aware_timestamp(value: str) -> str:
    """An ISO-8601 timestamp with a UTC offset (:func:`utc_now_iso`), kept as written."""
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise _FieldProblem(f"must be an ISO-8601 timestamp, not {value!r}") from None
    if moment.utcoffset() is None:
        raise _FieldProblem(f"must carry a UTC offset (e.g. '+00:00'), not {value!r}")
    return value


def _object(value: Any, info: ValidationInfo) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _FieldProblem(f"must be an object, not {type(value).__name__}")
    return _to_plain(value, info.field_name or "value")


def _hyperparameters(value: Any, info: ValidationInfo) -> dict[str, Any]:
    """Flat, finite JSON scalars (see the module docstring: a string ``"NaN"`` stays a string)."""
    params = _object(value, info)
    for name, item in params.items():
        if not name:
            raise _FieldProblem("has an empty hyperparameter name")
        if isinstance(item, (dict, list)):
            raise _FieldProblem(f"must be flat (dotted names); {name!r} holds a {type(item).__name__}")
        if isinstance(item, float) and not math.isfinite(item):
            raise _FieldProblem(f"holds the non-finite value {item!r} for {name!r}; hyperparameters must be finite")
    return params


def _epochs(value: Any) -> list[dict[str, Any]]:
    """Per-epoch reports: a list of objects, each with an integer ``"epoch"``."""
    if not isinstance(value, (list, tuple)):
        raise _FieldProblem(f"must be a list of objects, not {type(value).__name__}")
    history = _to_plain(list(value), "history")
    for position, entry in enumerate(history):
        if not isinstance(entry, dict):
            raise _FieldProblem(f"entry {position} must be an object, not {type(entry).__name__}")
        if not is_integer(entry.get("epoch")):
            raise _FieldProblem(f"entry {position} must have an integer 'epoch', not {entry.get('epoch')!r}")
    return history


def _versions(value: Any) -> dict[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise _FieldProblem(f"must be an object of distribution names to version strings, or null, not {value!r}")
    return dict(value)


_Integer = Annotated[int, BeforeValidator(_plain)]
_Count = Annotated[int, BeforeValidator(_plain), Field(ge=0)]
_Number = Annotated[float, BeforeValidator(_plain)]
_Seconds = Annotated[float, BeforeValidator(_plain), AfterValidator(_finite_nonnegative)]
_Timestamp = Annotated[str, AfterValidator(_aware_timestamp)]
_WRITTEN_WHEN_SET = ("gpu_energy_j",)
"""Record fields written only when they hold a value (see :meth:`TrialRecord.to_dict`)."""
_EXCEPTION_PREFIX = re.compile(r"([A-Za-z_][\w.]*): ")  # "ValueError: ..." names the exception's type
_ERROR_WORDS = {"int_type": "an integer", "float_type": "a number", "string_type": "a string"}
_DECODED = ("score", "test_score", "runtime_s", "setup_s", "gpu_seconds", "metrics", "history")
"""The fields whose JSON may spell a non-finite float as a string (see the module docstring)."""


# ---------------------------------------------------------------- the record


def failure_kind(status: str, error: str | None) -> str | None:
    """Why a trial did not finish, as a kind: None for a ``finished`` trial; ``timeout``, or
    :data:`~showwork.constants.FAMILY_IMPORT_TIMEOUT` for a timeout of the worker's set-up;
    :data:`~showwork.constants.CUDA_OUT_OF_MEMORY` where the error's first line says CUDA ran out of
    memory (whatever exception carried it); else the exception's type (``ValueError``,
    ``WorkerDied``), or the error's first line where it names none (a missing or non-finite score,
    ``sys.exit``).

    >>> failure_kind("failed", "OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
    'CUDA out of memory'
    >>> failure_kind("failed", "ValueError: lr must be positive\\n  File ..."), failure_kind("timeout", None)
    ('ValueError', 'timeout')
    """
    if status == "finished":
        return None
    if status == "timeout":  # the worker's set-up (the family's import), or the trainable's own time
        return FAMILY_IMPORT_TIMEOUT if (error or "").startswith(FAMILY_IMPORT_TIMEOUT) else "timeout"
    first = (error or f"{status} without a reason").strip().splitlines()[0]
    if any(sign in first for sign in CUDA_OUT_OF_MEMORY_SIGNS):
        return CUDA_OUT_OF_MEMORY
    match = _EXCEPTION_PREFIX.match(first)
    return match.group(1) if match else first


class TrialRecord(BaseModel):
    """The outcome of one trial, as written to ``trials/{index:06d}.json`` (keyword arguments only).

    A strict pydantic model: each field's type states what it may hold (no text for a number, no
    ``true`` for an integer; numpy scalars become plain numbers), and a record that breaks one is
    refused with one :class:`InvalidRecordError` naming the source and the field. Non-finite floats
    are handled by :meth:`to_dict` and :meth:`from_dict` (see the module docstring). Fields can be
    assigned; :meth:`Ledger.write` validates the record again before writing it.

    Attributes
    ----------
    index : int
        The trial's position in the search, from 0. The i-th configuration of a search is the same
        on every run (see :mod:`showwork.sampling`), so the index identifies the trial.
    status : {"finished", "failed", "timeout"}
    params : dict
        Flat mapping from dotted hyperparameter name (``optimizer.lr``) to a JSON scalar (str, int,
        finite float, bool or None).
    seed : int
        The training seed given to the trainable.
    score : float or None
        The validation metric the search optimizes (may be NaN or infinite for a diverged run);
        None when the trial reported none.
    test_score : float or None
        The test metric, if the trainable reported one.
    metrics : dict
        The final metrics returned by the trainable (any JSON values).
    history : list of dict
        Per-epoch reports in order, each with an integer ``"epoch"`` and metric values.
    runtime_s : float
        Wall-clock time of the trial in seconds, all attempts included, finite and >= 0: from
        ``started_at``, when the trainable is called, to its end.
    setup_s : float or None
        Seconds the worker spent before ``started_at`` on this trial (importing the family's module,
        building the configuration): large for a worker's first trial, near 0 after. Kept out of
        ``runtime_s`` so that the mean runtime of a report is the trials' own. None in records
        written before it was recorded, and in those the driver writes for a dead worker.
    gpu_seconds : float or None
        GPU time in seconds (number of GPUs times wall time), None without GPUs.
    error : str or None
        For failed and timed-out trials: exception type, message and a short traceback tail.
    node_id, hostname : str or None
        The Ray node id and host name the trial ran on.
    pid : int or None
        The worker's process id.
    python : str or None
        The worker's Python version.
    packages : dict of str to str, or None
        The installed distributions (name → version) of the modules the trainable imported, read
        in the worker at the trial's end (:func:`showwork.environment.worker_software`), plus
        showwork, Ray and MLflow. None in records written before it was recorded and in those the
        driver writes for a dead worker.
    peak_rss_bytes : int or None
        Peak resident memory of the worker process and its children during the trial
        (:class:`showwork.environment.PeakMemory`); None where it could not be measured.
    peak_gpu_allocated_bytes, peak_gpu_reserved_bytes : int or None
        Peak CUDA memory allocated by torch's tensors, and reserved by its caching allocator,
        during the trial, summed over the trial's GPUs; None unless the trainable imported torch
        and used CUDA.
    gpu_energy_j : float or None
        The trial's GPU energy in joules: NVML's total-energy counter of each of its devices over
        its wall time, times its share of the device (:data:`showwork.energy.SPLIT_RULE`); None
        without GPUs, NVML or an energy counter.
    started_at, finished_at : str
        ISO-8601 timestamps with a UTC offset (see :func:`utc_now_iso`).
    attempts : int
        How many times the trial was started (>= 1).
    mlflow_run_id : str or None
        The MLflow child run the record was projected into; filled in by the driver only.
    """

    model_config = ConfigDict(strict=True, extra="forbid")

    index: _Count
    status: Literal[TRIAL_STATUSES]  # type: ignore[valid-type]
    params: Annotated[dict[str, Any], BeforeValidator(_hyperparameters)]
    seed: _Integer
    score: _Number | None
    test_score: _Number | None = None
    metrics: Annotated[dict[str, Any], BeforeValidator(_object)] = Field(default_factory=dict)
    history: Annotated[list[dict[str, Any]], BeforeValidator(_epochs)] = Field(default_factory=list)
    runtime_s: _Seconds
    setup_s: _Seconds | None = None
    gpu_seconds: _Seconds | None = None
    error: str | None = None
    node_id: str | None = None
    hostname: str | None = None
    pid: _Integer | None = None
    python: str | None = None
    packages: Annotated[dict[str, str] | None, BeforeValidator(_versions)] = None
    peak_rss_bytes: _Count | None = None
    peak_gpu_allocated_bytes: _Count | None = None
    peak_gpu_reserved_bytes: _Count | None = None
    gpu_energy_j: _Seconds | None = None  # finite and >= 0, like a duration
    started_at: _Timestamp
    finished_at: _Timestamp
    attempts: Annotated[int, BeforeValidator(_plain), Field(ge=1)] = 1
    mlflow_run_id: str | None = None

    @model_validator(mode="wrap")
    @classmethod
    def _one_problem(cls, data: Any, handler: ModelWrapValidatorHandler[TrialRecord], info: ValidationInfo) -> TrialRecord:
        """Any problem becomes one :class:`InvalidRecordError` naming the source (the file) and the field.

        The source is the validation context's ``"source"`` (:meth:`from_dict`), else ``trial record <index>``.
        (Not a ``ValueError``, so pydantic lets it through as it is.)"""
        try:
            return handler(data)
        except ValidationError as error:
            index = data.get("index") if isinstance(data, dict) else None
            source = (info.context or {}).get("source") or f"trial record {index!r}"
            raise InvalidRecordError(_record_problem(error, source)) from None

    @property
    def failure_kind(self) -> str | None:
        """Why the trial did not finish, as a kind (:func:`failure_kind`); None for a finished trial."""
        return failure_kind(self.status, self.error)

    @classmethod
    def _validated(cls, data: dict[str, Any], source: str) -> TrialRecord:
        return cls.model_validate(data, context={"source": source})

    @classmethod
    def failed_without_worker(
        cls,
        index: int,
        *,
        params: dict[str, Any],
        seed: int,
        reason: str,
        attempts: int = 1,
        started_at: str | None = None,
        runtime_s: float = 0.0,
        node_id: str | None = None,
        hostname: str | None = None,
    ) -> TrialRecord:
        """The record the *driver* writes for a trial whose worker died without writing one.

        Status ``failed``, no score, ``error`` = ``"WorkerDied: <reason>"``; ``params`` and ``seed``
        are the trial's (deterministic from the spec and the index), so the failure is
        attributed to its configuration. ``finished_at`` is now; ``started_at`` defaults to now.
        """
        now = utc_now_iso()
        return cls(
            index=index, status="failed", params=params, seed=seed, score=None,
            runtime_s=runtime_s, error=f"WorkerDied: {reason}", node_id=node_id, hostname=hostname,
            started_at=started_at or now, finished_at=now, attempts=attempts,
        )

    # -- serialisation

    def to_dict(self) -> dict[str, Any]:
        """Return the record as strict-JSON-ready data (non-finite floats as strings).

        Fields added after records were first written (:data:`_WRITTEN_WHEN_SET`) are left out
        while None, so that a record written before them reads and writes back the same bytes.
        """
        data = self.model_dump()
        for name in _WRITTEN_WHEN_SET:
            if data[name] is None:
                del data[name]
        return _encode(data)

    def to_json(self) -> str:
        """Return the record as strict JSON text (keys in field order, two-space indent)."""
        return json.dumps(self.to_dict(), indent=2, allow_nan=False, ensure_ascii=False) + "\n"

    @classmethod
    def from_dict(cls, data: Any, source: str = "trial record") -> TrialRecord:
        """Build and validate a record from :meth:`to_dict` data.

        Raises
        ------
        InvalidRecordError
            If ``data`` is not an object, lacks a required field, has an unknown field or a
            field of the wrong type; the message names ``source`` and the field.
        """
        if not isinstance(data, dict):
            raise InvalidRecordError(f"{source}: a trial record must be a JSON object, not {type(data).__name__}")
        return cls._validated({name: _decode(value) if name in _DECODED else value for name, value in data.items()}, source)

    @classmethod
    def from_json(cls, text: str | bytes, source: str = "trial record") -> TrialRecord:
        """Parse and validate a record from :meth:`to_json` text.

        Raises
        ------
        InvalidRecordError
            If the text is not valid JSON or the record does not validate; the message names
            ``source`` (the file path, when read from the ledger).
        """
        try:
            data = json.loads(text, parse_constant=_reject_constant)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError, ValueError) as error:
            raise InvalidRecordError(f"{source}: not valid JSON ({error})") from None
        return cls.from_dict(data, source)


def _reject_constant(name: str) -> None:
    raise ValueError(f"bare {name} is not JSON; non-finite floats are written as strings")


_NULLABLE = frozenset(name for name, info in TrialRecord.model_fields.items() if type(None) in get_args(info.annotation))
"""The fields that may be null (their messages say ``must be ... or null``)."""


def _record_problem(error: ValidationError, source: str) -> str:
    """One line for the first problem pydantic found: unknown fields, else missing fields, else the first field's.

    ``{source}: field 'seed' must be an integer, not 1.5``; the words come from the error's type
    (:data:`_ERROR_WORDS`) or from the message of the field's own check (:class:`_FieldProblem`)."""
    problems = error.errors()
    for kind, words in (("extra_forbidden", "unknown"), ("missing", "missing")):
        names = [str(problem["loc"][0]) for problem in problems if problem["type"] == kind]
        if names:
            return f"{source}: {words} field(s) {', '.join(map(repr, sorted(names) if kind == 'extra_forbidden' else names))}"
    problem = problems[0]
    name, kind, value = problem["loc"][0], problem["type"], problem.get("input")
    cause = (problem.get("ctx") or {}).get("error")
    if isinstance(cause, _NotJsonError):
        return f"{source}: {cause}"
    if isinstance(cause, _FieldProblem):
        return f"{source}: field {name!r} {cause}"
    if kind == "literal_error":
        return f"{source}: field {name!r} must be one of {', '.join(TRIAL_STATUSES)}, not {value!r}"
    if kind == "greater_than_equal":
        return f"{source}: field {name!r} must be >= {problem['ctx']['ge']}, not {value}"
    if kind in _ERROR_WORDS:
        or_null = " or null" if name in _NULLABLE else ""
        return f"{source}: field {name!r} must be {_ERROR_WORDS[kind]}{or_null}, not {value!r}"
    raise error  # a check this function does not word: a bug here, not bad input


# ---------------------------------------------------------------- durable file operations


def missing_indices(records: Iterable[TrialRecord], num_trials: int) -> list[int]:
    """The indices in ``0 .. num_trials - 1`` that no record of ``records`` has, ascending."""
    done = {record.index for record in records}
    return [index for index in range(num_trials) if index not in done]


def search_name_problem(name: object) -> str | None:
    """Why ``name`` cannot name a search (``"must be ..."``), or None when it can; see :data:`SEARCH_NAME_RULE`."""
    if isinstance(name, str) and _SEARCH_NAME.fullmatch(name):
        return None
    return f"must be {SEARCH_NAME_RULE}"


@contextlib.contextmanager
def _refused_if_foreign() -> Iterator[None]:
    """Within the block, a :class:`~showwork.files.NotAFileError` (a link, a FIFO, ... where the ledger keeps
    one of its files or folders) becomes one :class:`InputError` that names it and says what to do."""
    try:
        yield
    except NotAFileError as error:
        raise InputError(
            f"{error}; showwork opens no link and nothing but its own files and folders inside a search's folder"
            f" (someone or something put this one there): move it away, then run the command again"
        ) from None


_WARNED_WRITABLE: set[Path] = set()  # the folders a warning has named, once per process


def _warn_if_others_can_write(storage_dir: Path, root: Path) -> None:
    """Warn once per folder when users other than the owner and the group can write to the search's folder
    ``root`` or, unless its sticky bit keeps them from renaming what is not theirs, to ``storage_dir``.

    A warning, not a refusal (ssh refuses): the shared volumes of clusters are often such folders
    that the job's user cannot change (an NFS provisioner makes them mode 0777), and no file is
    opened through a link there anyway (:mod:`showwork.files`). A folder the group can write is
    a shared group folder: no warning."""
    for folder, sticky_suffices in ((storage_dir, True), (root, False)):
        try:
            mode = os.stat(folder).st_mode
        except OSError:
            continue
        if not mode & stat.S_IWOTH or (sticky_suffices and mode & stat.S_ISVTX) or folder in _WARNED_WRITABLE:
            continue
        _WARNED_WRITABLE.add(folder)
        warnings.warn(
            f"{folder}: every user of this machine can write to this folder (mode {stat.S_IMODE(mode):04o}): they could"
            f" remove, replace or add records of the search{'es' if sticky_suffices else ''} in it. showwork opens no link"
            f" there and checks each record against its search, but keep ledgers in a folder only you (or your group)"
            f" can write: chmod o-w {folder}",
            stacklevel=3,
        )


def _record_index(name: str) -> int | None:
    """The trial index of a record's file name as :meth:`Ledger.path` writes it (``000007.json``: six ASCII
    digits, more only from index 1,000,000, never an extra leading zero); None for any other name."""
    if not _RECORD_NAME.fullmatch(name):
        return None
    index = int(name.removesuffix(".json"))
    return index if name == f"{index:06d}.json" else None


def _check_name(name: str) -> str:
    problem = search_name_problem(name)
    if problem is not None:
        raise InputError(f"search name {name!r} is not valid: it {problem}")
    return name


# ---------------------------------------------------------------- the ledger


class Ledger:
    """The durable record of one search: ``{storage_dir}/{name}/``.

    Workers call :meth:`write` (safe from any number of processes and nodes sharing the
    directory); the driver reads, exports, holds :meth:`lock` while it runs the search, and keeps
    metadata with :meth:`update_meta`. Nothing here deletes data: an unreadable record is moved
    to ``trials/corrupt/`` and the trial is treated as missing, so it runs again on resume.

    The folder holds (see the module docstring): ``search.json`` (:meth:`read_meta`,
    :meth:`update_meta`), ``driver.lock`` (:meth:`lock`), ``trials/`` (:meth:`write`,
    :meth:`read`, :meth:`records`), ``attempts/`` (:meth:`begin_attempt`,
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
        self.storage_dir = Path(storage_dir).expanduser().absolute()
        self.name = _check_name(name)
        self.search_id = search_id
        self.root = self.storage_dir / name
        self.trials_dir = self.root / "trials"
        self.corrupt_dir = self.trials_dir / "corrupt"
        self.meta_path = self.root / "search.json"
        self.lock_path = self.root / "driver.lock"
        self.attempts_dir = self.root / "attempts"
        self.ray_dir = self.root / "ray"  # Ray Tune's storage_path: its state and showwork's log of Ray's messages
        self._told_left_out: set[str] = set()  # the names _record_paths has warned about
        self._meta_seen: tuple | None = None  # stat of the search.json that moved() found to hold the search

    def __repr__(self) -> str:
        return f"Ledger({str(self.storage_dir)!r}, {self.name!r})"

    def moved(self) -> str | None:
        """What shows that the folder no longer holds the running search (``search.json`` gone, unreadable or
        another search's), or None while it does, or when no ``search_id`` was given."""
        if self.search_id is None:
            return None
        try:
            info = os.stat(self.meta_path)
        except FileNotFoundError:
            return f"no {self.meta_path.name} there"
        except OSError:
            return f"{self.meta_path.name} cannot be read"
        seen = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
        if seen == self._meta_seen:  # the file found to hold the search before (it is replaced, never edited, when updated)
            return None
        try:
            found = self.read_meta().get("search_id")
        except InputError:
            return f"{self.meta_path.name} cannot be read"
        if found == self.search_id:
            self._meta_seen = seen
            return None
        return f"no {self.meta_path.name} there" if found is None else f"{self.meta_path.name} there is another search's"

    def _check_not_moved(self) -> None:
        problem = self.moved()
        if problem is not None:
            raise LedgerMovedError(self.root, problem)

    def exists(self) -> bool:
        """Whether the search has metadata or any trial record on disk."""
        return self.meta_path.exists() or self.trials_dir.is_dir()

    def path(self, index: int) -> Path:
        """Return the path of the record of trial ``index``."""
        if not is_integer(index) or index < 0:
            raise InputError(f"{self.root}: a trial index must be an integer >= 0, not {index!r}")
        return self.trials_dir / f"{index:06d}.json"

    # -- attempts and Ray's folder

    def begin_attempt(self, index: int) -> int:
        """Mark a new attempt at trial ``index`` and return its number (1 for the first).

        One empty marker file per attempt (created exclusively, so concurrent workers get
        distinct numbers): the count survives worker deaths that leave no record.

        Raises
        ------
        LedgerWriteError
            The folder refused the marker.
        """
        self._check_not_moved()
        with LedgerWriteError.raised_for(self.attempts_dir), _refused_if_foreign():
            own_folder(self.attempts_dir, parents=self.search_id is None)  # a running search's folder is never made anew
            n = 1
            while True:
                try:
                    os.close(create_own_file(self.attempts_dir / f"{index:06d}.{n}"))
                    return n
                except FileExistsError:
                    n += 1

    def attempts_started(self, index: int) -> int:
        """How many attempts at trial ``index`` workers have begun (:meth:`begin_attempt`)."""
        return sum(1 for _ in self.attempts_dir.glob(f"{index:06d}.*"))

    def ray_folder(self) -> Path:
        """Ray Tune's folder (:attr:`ray_dir`), created if needed, which Ray writes into.

        Raises
        ------
        InputError
            Something other than a folder is there (a link to a folder elsewhere: Ray would write there).
        LedgerWriteError
            The folder could not be created.
        """
        with LedgerWriteError.raised_for(self.root), _refused_if_foreign():
            return own_folder(self.ray_dir, parents=True)

    def ray_logs(self) -> tuple[Path, ...]:
        """Ray's messages during each run of the search (``ray/run-<time>.log``), oldest first."""
        return tuple(sorted(self.ray_dir.glob("run-*.log")))

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
        record = TrialRecord._validated(dict(record), f"trial record {record.index!r}")  # again: fields are assignable
        path = self.path(record.index)
        text = record.to_json()
        self._check_not_moved()
        with LedgerWriteError.raised_for(self.trials_dir), _refused_if_foreign():
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
        with _refused_if_foreign():
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

    # -- metadata

    def read_meta(self) -> dict[str, Any]:
        """Return the search metadata from ``search.json`` ({} if there is none yet).

        Raises
        ------
        InputError
            If ``search.json`` is not a valid JSON object (it is written atomically, so this means
            it was edited or damaged by hand; it is left in place for you to repair).
        """
        try:
            with _refused_if_foreign():
                text = read_own_file(self.meta_path).decode("utf-8")
        except FileNotFoundError:
            return {}
        except (OSError, UnicodeDecodeError) as error:
            raise InputError(f"{self.meta_path}: cannot be read ({error})") from None
        try:
            data = json.loads(text, parse_constant=_reject_constant)
        except (json.JSONDecodeError, ValueError) as error:
            raise InputError(f"{self.meta_path}: not valid JSON ({error})") from None
        if not isinstance(data, dict):
            raise InputError(f"{self.meta_path}: must hold a JSON object, not {type(data).__name__}")
        return _decode(data)

    def update_meta(self, **fields_: Any) -> dict[str, Any]:
        """Merge ``fields_`` into ``search.json`` (top-level keys replaced) atomically; return the result.

        Read-modify-write happens under an exclusive lock on ``.meta.lock``, so concurrent updates
        from several processes are not lost. Values must be JSON data (non-finite floats allowed).
        """
        try:
            payload = {key: _to_plain(value, key) for key, value in fields_.items()}
        except _NotJsonError as error:
            raise InvalidRecordError(f"{self.meta_path}: {error}") from None
        self._check_not_moved()
        with _refused_if_foreign():
            own_folder(self.root, parents=True)
            handle = open_own_file(self.root / ".meta.lock")
        with handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                meta = self.read_meta()
                meta.update(payload)
                text = json.dumps(_encode(meta), indent=2, allow_nan=False, ensure_ascii=False) + "\n"
                with LedgerWriteError.raised_for(self.root):
                    write_atomic(self.meta_path, text, before_replace=lambda: faults.point("meta-write"))
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        return meta

    # -- the driver lock

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the driver lock of this search for the duration of a ``with`` block.

        The lock is an ``fcntl.flock`` on ``driver.lock``, taken without waiting; the kernel
        releases it when the process exits, however it exits, so a crashed driver never leaves a
        stale lock. The holder's pid, host and start time are written into the file for the error
        message of the next driver. Workers never take it. (``flock`` is per open file: a second
        ``lock()`` in the same process also fails.)

        Raises
        ------
        LedgerLockedError
            If another driver holds the lock; the message names the pid recorded in the file.
        """
        with LedgerWriteError.raised_for(self.root), _refused_if_foreign():
            own_folder(self.root, parents=True)
            handle = open_own_file(self.lock_path)  # never through a link: it is truncated below
        _warn_if_others_can_write(self.storage_dir, self.root)
        try:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as error:
                if error.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    raise
                raise LedgerLockedError(self._locked_message()) from None
            handle.seek(0)
            handle.truncate()
            holder = {"pid": os.getpid(), "hostname": socket.gethostname(), "since": utc_now_iso()}
            handle.write(json.dumps(holder) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
            try:
                yield
            finally:
                handle.seek(0)
                handle.truncate()
                handle.flush()
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        finally:
            handle.close()

    def _locked_message(self) -> str:
        try:
            holder = json.loads(read_own_file(self.lock_path).decode("utf-8"))
            pid, host, since = holder.get("pid"), holder.get("hostname"), holder.get("since")
        except (OSError, ValueError, AttributeError):  # NotAFileError and UnicodeDecodeError are ValueErrors
            pid = host = since = None
        who = f"pid {pid}" if pid is not None else "a process whose pid is not recorded"
        if host:
            who += f" on {host}"
        if pid == os.getpid() and host == socket.gethostname():
            who += " (this process)"
        if since:
            who += f", since {since}"
        return (
            f"{self.lock_path}: search {self.name!r} is already being run by {who}; wait for it"
            " to finish or stop it (the lock is released when that process exits)"
        )

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


def list_searches(storage_dir: str | os.PathLike) -> list[str]:
    """Return the names of the searches under ``storage_dir`` (those with metadata or trials), sorted."""
    root = Path(storage_dir).expanduser()
    try:
        entries = sorted(os.scandir(root), key=lambda entry: entry.name)
    except (FileNotFoundError, NotADirectoryError):
        return []
    names = []
    for entry in entries:
        if entry.is_dir() and search_name_problem(entry.name) is None:
            path = Path(entry.path)
            if (path / "search.json").is_file() or (path / "trials").is_dir():
                names.append(entry.name)
    return names
