"""A trial's record: :class:`TrialRecord`, what each of its fields may hold, and its JSON form.

A record is one file of the ledger (:mod:`showwork.store.ledger`), ``trials/{index:06d}.json``,
written once by the worker that ran the trial. Its timestamps are ISO-8601 in UTC with an offset
(:func:`utc_now_iso`, the format of the ledger's lock too).

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

import json
import math
import re
from datetime import datetime, timezone
from typing import Annotated, Any, Literal, get_args

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

from showwork.constants import CUDA_OUT_OF_MEMORY, CUDA_OUT_OF_MEMORY_SIGNS, FAMILY_IMPORT_TIMEOUT, TRIAL_STATUSES
from showwork.store.encoding import NotJsonError, decode_nonfinite, encode_nonfinite, reject_constant, to_plain
from showwork.store.errors import InvalidRecordError
from showwork.values import is_integer

__all__ = ["STATUSES", "TrialRecord", "failure_kind", "trial_score", "utc_now_iso"]

STATUSES = TRIAL_STATUSES


def utc_now_iso() -> str:
    """Return the current time as an ISO-8601 UTC string with microseconds (``...+00:00``).

    The one format of showwork's timestamps (records, the lock, a trial's start sent to the driver)."""
    return datetime.now(timezone.utc).isoformat()


class _FieldProblem(ValueError):
    """What is wrong with a record's field, worded to follow ``field 'name' ``."""


# ---------------------------------------------------------------- the record's field types
#
# Each type states what its field may hold; pydantic checks it (strictly: no text for a number, no
# bool for an integer) and _record_problem words any failure as "field 'name' must be ..., not ...".


def _plain(value: Any, info: ValidationInfo) -> Any:
    """Numpy scalars and tuples as plain JSON values, before the type check (``np.int64(7)`` is the integer 7)."""
    return to_plain(value, info.field_name or "value")


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
    return to_plain(value, info.field_name or "value")


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
    history = to_plain(list(value), "history")
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
    def validated(cls, data: dict[str, Any], source: str) -> TrialRecord:
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
        return encode_nonfinite(data)

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
        return cls.validated({name: decode_nonfinite(value) if name in _DECODED else value for name, value in data.items()}, source)

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
            data = json.loads(text, parse_constant=reject_constant)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError, ValueError) as error:
            raise InvalidRecordError(f"{source}: not valid JSON ({error})") from None
        return cls.from_dict(data, source)


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
    if isinstance(cause, NotJsonError):
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


def trial_score(record: TrialRecord) -> float:
    """The score the statistics read from ``record``: its validation score when it finished, else NaN.

    A failed or timed-out trial still counts among a search's trials (its index is drawn like any
    other); the failure policy (:mod:`showwork.statistics.failures`) decides what its NaN becomes.
    The report (:func:`showwork.report.from_ledger`) and a race's looks read scores through this.
    """
    if record.status != "finished" or record.score is None:
        return math.nan
    return float(record.score)
